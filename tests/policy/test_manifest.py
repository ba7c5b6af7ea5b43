"""The pod placement rules on built objects, one failing and one passing case each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from generator.builders.common import Unit, identity
from generator.findings import Location
from generator.policy.placement import selects, tolerates
from generator.policy.registry import MANIFEST_RULES, run_rules
from generator.values import loader as values
from generator.values.model import FleetView
from tests.example import EXAMPLE_VALUES
from tests.fixtures import AMD_MI250X, ASCEND_910B, HYGON_Z100L, tree

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
    tolerate: list[str] = (),
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
    found = run_rules(view, unit, [obj])
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
    # team rules: tests/policy/test_manifest_security.py
    placement = {c for c in MANIFEST_RULES if not c.startswith(("SEC", "TEAM"))}
    assert placement - {"NAME006", "SCH001"} == set(CASES)


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
        assert run_rules(loaded.envs[unit.env], unit, list(unit.objects)) == [], unit.path


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
        (f.code, f.path, f.message.split(": ", 1)[1]) for f in run_rules(prod, unit, [svc, dep])
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
