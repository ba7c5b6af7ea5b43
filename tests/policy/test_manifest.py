"""The pod placement rules on built objects, one failing and one passing case each."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from generator.findings import Finding, Location
from generator.policy import context as policy_context
from generator.policy import manifest
from generator.policy.manifest import describe, origin
from generator.policy.placement import Pools, pod_problems, selects, tolerates
from generator.policy.registry import MANIFEST_RULES, run_rules
from generator.values import loader as values
from generator.values.model import FleetView
from generator.vocab.objects import identity
from generator.vocab.units import Unit
from tests.example import EXAMPLE_VALUES
from tests.fixtures import AMD_MI250X, ASCEND_910B, HYGON_Z100L, context, tree

ACCEL = "feature.node.kubernetes.io/accelerator"


@pytest.fixture(scope="module")
def prod(tmp_path_factory: pytest.TempPathFactory) -> FleetView:
    """NVIDIA (nodes n1, n2), Ascend, and AMD and Hygon on amd.com/gpu; team ml."""
    vendors = {"ascend": ASCEND_910B, "amd": AMD_MI250X, "hygon": HYGON_Z100L}
    files = {f"vendors/{v}.yaml": text for v, text in vendors.items()}
    return values.load(tree(tmp_path_factory.mktemp("placement"), files)).envs["prod"]


def pod(
    resources: dict[str, Any],
    selector: dict[str, str] | None = None,
    tolerate: Sequence[str] = (),
    kind: str = "Deployment",
) -> dict[str, Any]:
    spec = {
        "nodeSelector": selector or {},
        "tolerations": [
            {
                "key": "feature.node.kubernetes.io/accelerator",
                "operator": "Equal",
                "value": v,
                "effect": "NoSchedule",
            }
            for v in tolerate
        ],
        "containers": [{"name": "c", "image": "i", "resources": resources}],
    }
    obj: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": "w", "namespace": "ml"},
    }
    if kind == "VolcanoJob":
        obj.update(
            apiVersion="batch.volcano.sh/v1alpha1",
            kind="Job",
            spec={"tasks": [{"name": "t", "template": {"spec": spec}}]},
        )
    else:
        obj["spec"] = {"template": {"spec": spec}}
    return obj


def codes(view: FleetView, obj: dict[str, Any]) -> list[str]:
    origin = Location("values/teams/ml.yaml", 1, 1)
    unit = Unit("prod", "team-ml", "overlays/prod/team-ml", (obj,), {identity(obj): origin})
    found = run_rules(context(view), unit, [obj])
    assert all(f.location.file.startswith("values/") for f in found)
    return sorted(f.code for f in found)


GPU = {"limits": {"nvidia.com/gpu": 2}}
CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    # code: (failing object, passing object)
    "POD003": (
        pod(GPU, {ACCEL: "huawei-npu"}, ["huawei-npu"]),
        pod(GPU, {ACCEL: "nvidia-gpu"}, ["nvidia-gpu"]),
    ),
    "POD004": (pod(GPU, {ACCEL: "nvidia-gpu"}), pod(GPU, {ACCEL: "nvidia-gpu"}, ["nvidia-gpu"])),
    "POD001": (
        pod({"limits": {"nvidia.com/gpu": "500m"}}, {ACCEL: "nvidia-gpu"}, ["nvidia-gpu"]),
        pod(
            {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": 1}},
            {ACCEL: "nvidia-gpu"},
            ["nvidia-gpu"],
        ),
    ),
    "POD002": (
        pod({"limits": {"nvidia.com/gpu": 1, "huawei.com/Ascend910": 1}}),
        pod({"limits": {"huawei.com/Ascend910": 1}}, {ACCEL: "huawei-npu"}, ["huawei-npu"]),
    ),
    "POD005": (
        pod({"limits": {"amd.com/gpu": 1}}, {}, ["amd-gpu", "hygon-dcu"]),
        pod({"limits": {"amd.com/gpu": 1}}, {ACCEL: "hygon-dcu"}, ["hygon-dcu"]),
    ),
}


def test_every_manifest_rule_has_a_case() -> None:
    # NAME006: its own test below; SCH001: tests/policy/test_manifest_scheduling.py; security and
    # team rules: tests/policy/test_manifest_security.py; PATCH001: tests/policy/test_patches.py
    placement = {c for c in MANIFEST_RULES if not c.startswith(("SEC", "TEAM"))}
    assert placement - {"NAME006", "SCH001", "PATCH001"} == set(CASES)


@pytest.mark.parametrize("code", sorted(CASES))
def test_rule_fires_on_the_failing_object_only(code: str, prod: FleetView) -> None:
    bad, good = CASES[code]
    assert code in codes(prod, bad)
    assert codes(prod, good) == []


def test_requests_without_limits_are_whole_device_errors(prod: FleetView) -> None:
    obj = pod({"requests": {"nvidia.com/gpu": 1}}, {ACCEL: "nvidia-gpu"}, ["nvidia-gpu"])
    assert codes(prod, obj) == ["POD001"]


def test_volcano_tasks_are_checked_one_by_one(prod: FleetView) -> None:
    assert codes(prod, pod(GPU, {ACCEL: "amd-gpu"}, ["amd-gpu"], kind="VolcanoJob")) == ["POD003"]


def test_selection_by_node_affinity_and_hostname(prod: FleetView) -> None:
    obj = pod(GPU, None, ["nvidia-gpu"])
    obj["spec"]["template"]["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "kubernetes.io/hostname",
                                "operator": "In",
                                "values": ["n2"],
                            }
                        ]
                    }
                ]
            }
        }
    }
    assert codes(prod, obj) == []


def test_selector_and_toleration_semantics() -> None:
    from generator.values.model import Taint

    assert selects({"nodeSelector": {"a": "1"}}, {"a": "1", "b": "2"})
    assert not selects({"nodeSelector": {"a": "1"}}, {"a": "2"})
    taint = Taint("accelerator", "NoSchedule", "nvidia-gpu")
    assert tolerates({"tolerations": [{"operator": "Exists"}]}, taint)
    assert tolerates({"tolerations": [{"key": "accelerator", "operator": "Exists"}]}, taint)
    assert not tolerates({"tolerations": [{"key": "accelerator", "value": "x"}]}, taint)
    assert tolerates({}, Taint("k", "PreferNoSchedule"))


def test_example_prod_units_pass_every_rule(prod: FleetView, tmp_path: Path) -> None:
    from generator.render.layout import render_tree

    loaded = values.load(EXAMPLE_VALUES)
    for unit in render_tree(loaded).units:
        assert run_rules(context(loaded.of_layer(unit.env)), unit, list(unit.objects)) == [], (
            unit.path
        )


def test_names_and_labels_the_api_server_would_refuse(prod: FleetView) -> None:
    long = "inference-service-with-a-name-that-is-much-too-long-for-a-service"
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": long, "namespace": "ml", "labels": {"team": "x" * 64}},
    }
    dep = pod(GPU, {ACCEL: "nvidia-gpu"}, ["nvidia-gpu"])
    dep["metadata"]["name"] = "Upper_Case"
    dep["spec"]["template"]["metadata"] = {"labels": {"bad key!": "v"}}
    unit = Unit("prod", "team-ml", "overlays/prod/team-ml", (svc, dep), {})
    found = [
        (f.code, f.path, f.message.split(": ", 1)[1])
        for f in run_rules(context(prod), unit, [svc, dep])
    ]
    assert found == [
        (
            "NAME006",
            "$.metadata.name",
            f"name {long!r} is not a valid DNS-1035 label (lower-case, '-', at most 63)",
        ),
        (
            "NAME006",
            "$.metadata.labels['team']",
            f"label team={'x' * 64!r}: not a valid label value (at most 63 characters)",
        ),
        ("NAME006", "$.metadata.name", "name 'Upper_Case' is not a valid DNS-1123 subdomain"),
        (
            "NAME006",
            "$.spec.template.metadata.labels['bad key!']",
            "label key 'bad key!' is not valid",
        ),
    ]


# ---- what every finding says: the object (describe) and its values line (origin) -------------

UNIT = "overlays/prod/team-ml"
AT_VALUES = Location("values/teams/ml.yaml", 7, 3)


def unit_of(*objs: dict[str, Any], origins: bool = True) -> Unit:
    """Unit team-ml of prod holding objs, each made at AT_VALUES (or at no values line)."""
    return Unit("prod", "team-ml", UNIT, objs, {identity(o): AT_VALUES for o in objs if origins})


def test_describe_names_the_kind_namespace_name_and_unit() -> None:
    unit = unit_of()
    namespaced = {"kind": "Deployment", "metadata": {"name": "w", "namespace": "ml"}}
    assert describe(unit, namespaced) == f"Deployment ml/w ({UNIT})"
    assert describe(unit, {"kind": "Namespace", "metadata": {"name": "ml"}}) == (
        f"Namespace ml ({UNIT})"
    )
    assert describe(unit, {"kind": "List"}) == f"List None ({UNIT})"


def test_origin_is_the_values_line_that_made_the_object_else_the_unit() -> None:
    made = pod(GPU)
    other = pod(GPU) | {"metadata": {"name": "other", "namespace": "ml"}}
    unit = unit_of(made)
    assert origin(unit, made) == AT_VALUES
    assert origin(unit, other) == Location(UNIT)


# ---- POD001..POD005 on built objects: the whole finding --------------------------------------

# code: the message after "Deployment ml/w (overlays/prod/team-ml): ", the path, the hint
PLACEMENT_FINDINGS = {
    "POD001": (
        "container 'c' requests nvidia.com/gpu: requests None, limits '500m'; devices are whole "
        "numbers in limits, with equal requests",
        "$.spec.template.spec.containers[0].resources",
        "set limits to a whole number of devices and requests equal to it",
    ),
    "POD002": (
        "container 'c' requests huawei.com/Ascend910 and nvidia.com/gpu at once",
        "$.spec.template.spec.containers[0].resources",
        "split it into one workload per vendor",
    ),
    "POD003": (
        "container 'c' requests nvidia.com/gpu but its nodeSelector "
        "{feature.node.kubernetes.io/accelerator=huawei-npu} picks no pool of nvidia",
        "$.spec.template.spec.nodeSelector",
        "select the vendor's pools by its accelerator label (and an existing model)",
    ),
    "POD004": (
        "container 'c' does not tolerate taint "
        "feature.node.kubernetes.io/accelerator=nvidia-gpu:NoSchedule of pool 'a100'",
        "$.spec.template.spec.tolerations",
        "add a toleration for the pool's taint",
    ),
    "POD005": (
        "container 'c' requests amd.com/gpu, which amd and hygon both advertise, and its "
        "nodeSelector {} picks pools of both",
        "$.spec.template.spec.nodeSelector",
        "select one vendor's pools by its accelerator label",
    ),
}


@pytest.mark.parametrize("code", sorted(PLACEMENT_FINDINGS))
def test_placement_rule_reports_its_own_problem_whole(code: str, prod: FleetView) -> None:
    """Each rule (made here, as the registry makes them) reports its code's problem, with the
    object, the values line that made it, the pod spec's field and the hint; the other four
    rules report nothing for it."""
    bad = copy.deepcopy(CASES[code][0])
    message, path, hint = PLACEMENT_FINDINGS[code]
    want = Finding(code, f"Deployment ml/w ({UNIT}): {message}", AT_VALUES, path, hint)
    for other in PLACEMENT_FINDINGS:
        got = list(manifest._placement_rule(other)(context(prod), unit_of(bad), [bad]))
        assert got == ([want] if other == code else []), other
    # an object no values line made is reported at its unit
    got = list(manifest._placement_rule(code)(context(prod), unit_of(bad, origins=False), [bad]))
    assert [f.location for f in got] == [Location(UNIT)]


def test_placement_problems_are_worked_out_again_for_another_units_objects(
    prod: FleetView,
) -> None:
    """The problems of one unit's objects are kept for the next rule on the same list only: a
    second unit's objects are checked themselves."""
    rule = manifest._placement_rule("POD004")
    bad, good = CASES["POD004"]
    ctx = context(prod)  # one view's context: what it keeps is per list of objects
    assert [f.code for f in rule(ctx, unit_of(bad), [bad])] == ["POD004"]
    assert list(rule(ctx, unit_of(good), [good])) == []
    assert [f.code for f in rule(ctx, unit_of(bad), [bad])] == ["POD004"]


def test_the_five_rules_work_out_a_units_problems_once(
    prod: FleetView, monkeypatch: pytest.MonkeyPatch
) -> None:
    """run_rules hands the five placement rules the same objects: their pod templates' problems
    are worked out for the first rule and kept for the other four."""
    specs: list[dict[str, Any]] = []

    def counted(pools: Pools, spec: dict[str, Any]) -> list[Any]:
        specs.append(spec)
        return pod_problems(pools, spec)

    monkeypatch.setattr(policy_context, "pod_problems", counted)
    bad = CASES["POD004"][0]
    objs = [bad]
    assert [
        f.code for f in run_rules(context(prod), unit_of(bad), objs) if f.code.startswith("POD")
    ] == ["POD004"]
    assert specs == [bad["spec"]["template"]["spec"]]


# ---- NAME006: names and labels the API server accepts ------------------------------------------


@pytest.fixture(autouse=True)
def _fresh_label_verdicts() -> None:
    """Label verdicts are cached per (key, value) for the whole process: start each test with an
    empty cache, so it sees what the code says now (not what an earlier test's run cached)."""
    manifest._label_problem_str.cache_clear()


# A DNS-1123 subdomain of exactly 253 characters (four labels), and one of 254.
SUBDOMAIN_253 = "a" * 63 + "." + "b" * 63 + "." + "c" * 63 + "." + "d" * 61
SUBDOMAIN_254 = SUBDOMAIN_253 + "d"


def obj(kind: str, name: str, labels: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ml"}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": kind, "metadata": meta}


def name_problems(view: FleetView, *objs: dict[str, Any]) -> list[tuple[str, str]]:
    """(path, what is wrong) of each NAME006 finding, the object's description cut off."""
    unit = unit_of(*objs)
    found = list(manifest.names_and_labels(context(view), unit, list(objs)))
    assert {(f.code, f.location, f.hint) for f in found} <= {
        ("NAME006", AT_VALUES, "shorten or rename it in values")
    }
    return [(f.path, f.message.split(": ", 1)[1]) for f in found]


def test_names_at_their_length_limits(prod: FleetView) -> None:
    label_64 = "a" * 64
    assert name_problems(
        prod,
        obj("Namespace", "a" * 63),
        obj("Namespace", label_64),
        obj("ConfigMap", SUBDOMAIN_253),
        obj("ConfigMap", SUBDOMAIN_254),
    ) == [
        (
            "$.metadata.name",
            f"name {label_64!r} is not a valid DNS-1123 label (lower-case, '-', at most 63)",
        ),
        ("$.metadata.name", f"name {SUBDOMAIN_254!r} is not a valid DNS-1123 subdomain"),
    ]


def test_names_by_kind(prod: FleetView) -> None:
    """Namespaces, Jobs and CronJobs take DNS-1123 labels, Services DNS-1035 labels (no leading
    digit), every other kind a DNS-1123 subdomain (dots allowed)."""
    assert name_problems(
        prod,
        obj("Namespace", "1st"),
        obj("Service", "1st"),
        obj("Service", "web-1"),
        obj("Job", "a.b"),
        obj("CronJob", "Nightly"),
        obj("ConfigMap", "a.b"),
        obj("ConfigMap", "Bad_Name"),
    ) == [
        (
            "$.metadata.name",
            "name '1st' is not a valid DNS-1035 label (lower-case, '-', at most 63)",
        ),
        (
            "$.metadata.name",
            "name 'a.b' is not a valid DNS-1123 label (lower-case, '-', at most 63)",
        ),
        (
            "$.metadata.name",
            "name 'Nightly' is not a valid DNS-1123 label (lower-case, '-', at most 63)",
        ),
        ("$.metadata.name", "name 'Bad_Name' is not a valid DNS-1123 subdomain"),
    ]


def test_a_control_character_in_a_name_is_named(prod: FleetView) -> None:
    assert name_problems(prod, obj("Namespace", "ml\n"), obj("ConfigMap", "a\u202eb")) == [
        (
            "$.metadata.name",
            "name 'ml\\n' is not a valid DNS-1123 label (lower-case, '-', at most 63) "
            "(it contains the control character U+000A)",
        ),
        (
            "$.metadata.name",
            "name 'a\\u202eb' is not a valid DNS-1123 subdomain "
            "(it contains the control character U+202E)",
        ),
    ]


def test_label_keys(prod: FleetView) -> None:
    """A key is an optional DNS-1123 subdomain prefix (at most 253) and '/', then a name of at
    most 63 alphanumerics, '-', '_', '.' that starts and ends alphanumeric."""
    labels = {
        "app": "web",
        "example.com/team": "ml",
        f"{SUBDOMAIN_253}/a": "v",
        f"{SUBDOMAIN_254}/a": "v",
        "Example.com/a": "v",
        "n" * 63: "v",
        "n" * 64: "v",
        "bad key!": "v",
        "a/b/c": "v",
        "tab\there": "v",
    }
    assert name_problems(prod, obj("ConfigMap", "cm", labels)) == [
        (f"$.metadata.labels[{k!r}]", f"label key {k!r} is not valid{extra}")
        for k, extra in sorted(
            {
                f"{SUBDOMAIN_254}/a": "",
                "Example.com/a": "",
                "n" * 64: "",
                "bad key!": "",
                "a/b/c": "",
                "tab\there": " (it contains the control character U+0009)",
            }.items()
        )
    ]


def test_label_values(prod: FleetView) -> None:
    """A value is empty, or at most 63 alphanumerics, '-', '_', '.' that start and end
    alphanumeric; a number or null in the YAML is not a string and never valid."""
    labels = {
        "empty": "",
        "at-63": "v" * 63,
        "at-64": "v" * 64,
        "spaced": "bad value",
        "count": 5,
        "unset": None,
        "newline": "x\ny",
    }
    assert name_problems(prod, obj("ConfigMap", "cm", labels)) == [
        (
            "$.metadata.labels['at-64']",
            f"label at-64={'v' * 64!r}: not a valid label value (at most 63 characters)",
        ),
        (
            "$.metadata.labels['count']",
            "label count=5: not a valid label value (at most 63 characters)",
        ),
        (
            "$.metadata.labels['newline']",
            "label newline='x\\ny': not a valid label value (at most 63 characters) "
            "(it contains the control character U+000A)",
        ),
        (
            "$.metadata.labels['spaced']",
            "label spaced='bad value': not a valid label value (at most 63 characters)",
        ),
        (
            "$.metadata.labels['unset']",
            "label unset=None: not a valid label value (at most 63 characters)",
        ),
    ]


def test_pod_template_labels_are_checked_where_they_are(prod: FleetView) -> None:
    """The labels of each pod template, at its own path (a Deployment's, a CronJob's, each
    Volcano task's), beside the object's own; an object without labels has none to check."""
    deploy = pod(GPU)
    deploy["metadata"]["labels"] = None
    deploy["spec"]["template"]["metadata"] = {"labels": {"app": "web", "tier": "a b"}}
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "ml", "labels": {"a": "-x"}},
        "spec": {"jobTemplate": {"spec": {"template": {"metadata": {"labels": {"b": "y-"}}}}}},
    }
    job = pod(GPU, kind="VolcanoJob")
    job["spec"]["tasks"].append({"name": "u", "template": {"metadata": {"labels": {"c": "_"}}}})
    assert name_problems(prod, deploy, cron, job) == [
        (
            "$.spec.template.metadata.labels['tier']",
            "label tier='a b': not a valid label value (at most 63 characters)",
        ),
        (
            "$.metadata.labels['a']",
            "label a='-x': not a valid label value (at most 63 characters)",
        ),
        (
            "$.spec.jobTemplate.spec.template.metadata.labels['b']",
            "label b='y-': not a valid label value (at most 63 characters)",
        ),
        (
            "$.spec.tasks[1].template.metadata.labels['c']",
            "label c='_': not a valid label value (at most 63 characters)",
        ),
    ]


def test_a_name_finding_whole(prod: FleetView) -> None:
    svc = obj("Service", "1st", {"app": "x" * 64})
    assert list(manifest.names_and_labels(context(prod), unit_of(svc), [svc])) == [
        Finding(
            "NAME006",
            f"Service ml/1st ({UNIT}): name '1st' is not a valid DNS-1035 label (lower-case, '-', "
            "at most 63)",
            AT_VALUES,
            "$.metadata.name",
            "shorten or rename it in values",
        ),
        Finding(
            "NAME006",
            f"Service ml/1st ({UNIT}): label app={'x' * 64!r}: not a valid label value (at most 63 "
            "characters)",
            AT_VALUES,
            "$.metadata.labels['app']",
            "shorten or rename it in values",
        ),
    ]
