"""Rendered security posture and team boundaries (SEC, TEAM rules): each rule on a failing and a
passing object, and through the real validate command on a values tree made for it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from generator.findings import Location
from generator.policy.registry import run_rules
from generator.render.layout import render_tree
from generator.values import loader as values
from generator.values.model import FleetView
from generator.vocab.objects import identity
from generator.vocab.units import Unit
from tests.fixtures import FLEET, NVIDIA, SHARED_NVIDIA, cli, context, snapshot, tree

DIGEST = "sha256:" + "0123456789abcdef" * 4
ORIGIN = Location("values/teams/ml.yaml", 2, 3)


@pytest.fixture(scope="module")
def prod(tmp_path_factory: pytest.TempPathFactory) -> FleetView:
    fleet = FLEET + "productionEnvironments: [prod]\n"
    root = tree(tmp_path_factory.mktemp("sec"), {"fleet.yaml": fleet})
    return values.load(root).envs["prod"]


def found(view: FleetView, unit_name: str, *objs: dict[str, Any]) -> list[tuple[str, str]]:
    unit = Unit(
        "prod",
        unit_name,
        f"overlays/prod/{unit_name}",
        objs,
        {identity(o): ORIGIN for o in objs},
    )
    out = [
        f for f in run_rules(context(view), unit, list(objs)) if f.code.startswith(("SEC", "TEAM"))
    ]
    assert all(f.location == ORIGIN for f in out)
    return [(f.code, f.path) for f in out]


def ns(name: str, level: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"pod-security.kubernetes.io/enforce": level}},
    }


def deployment(spec: dict[str, Any], namespace: str = "ml", **meta: Any) -> dict[str, Any]:
    pod = {"containers": [{"name": "c", "image": f"r.example.com/x:1@{DIGEST}"}], **spec}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": namespace, **meta},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod},
        },
    }


def plugin(namespace: str) -> dict[str, Any]:
    ds = deployment({}, namespace, labels={"app.kubernetes.io/component": "device-plugin"})
    return ds | {"kind": "DaemonSet"}


def role(*rules: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "plugin"},
        "rules": list(rules),
    }


GOOD_RULE = {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]}

# code: (unit, failing objects, the paths it must name, passing objects)
CASES: dict[str, tuple[str, list[dict[str, Any]], list[str], list[dict[str, Any]]]] = {
    "SEC001": (
        "device-plugins",
        [
            ns("accelerator-plugins", "baseline"),
            plugin("accelerator-plugins"),
            plugin("kube-system"),
        ],
        ["$.metadata.namespace", "$.metadata.namespace"],
        [ns("accelerator-plugins", "privileged"), plugin("accelerator-plugins")],
    ),
    "SEC002": (
        "team-ml",
        [ns("ml", "privileged"), {**ns("ml-2", ""), "metadata": {"name": "ml-2"}}],
        ["$.metadata.labels['pod-security.kubernetes.io/enforce']"] * 2,
        [ns("ml", "restricted")],
    ),
    "SEC003": (
        "team-ml",
        [
            deployment({"hostNetwork": True, "hostPID": True}),
            deployment({"volumes": [{"name": "d", "hostPath": {"path": "/dev"}}]}),
            deployment(
                {
                    "containers": [
                        {"name": "c", "image": "i", "securityContext": {"privileged": True}},
                        {
                            "name": "d",
                            "image": "i",
                            "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}},
                        },
                    ]
                }
            ),
        ],
        [
            "$.spec.template.spec.hostNetwork",
            "$.spec.template.spec.hostPID",
            "$.spec.template.spec.volumes[0]",
            "$.spec.template.spec.containers[0].securityContext",
            "$.spec.template.spec.containers[1].securityContext",
        ],
        [deployment({"volumes": [{"name": "d", "emptyDir": {}}]})],
    ),
    "SEC004": (
        "device-plugins",
        [
            role({"apiGroups": ["*"], "resources": ["nodes"], "verbs": ["get"]}),
            role(GOOD_RULE, {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}),
            role({"apiGroups": [""], "resources": ["pods/*"], "verbs": ["escalate"]}),
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "plugin"},
                "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"},
            },
        ],
        ["$.rules[0]", "$.rules[1]", "$.rules[0]", "$.rules[0]", "$.roleRef.name"],
        [role(GOOD_RULE)],
    ),
    "SEC005": (
        "team-ml",
        [deployment({"containers": [{"name": "c", "image": "r.example.com/x:1"}]})],
        ["$.spec.template.spec.containers[0].image"],
        [deployment({})],
    ),
    "SEC006": (
        "team-ml",
        [
            deployment({}, annotations={"argocd.argoproj.io/sync-options": "Prune=false"}),
            {
                **deployment({}),
                "spec": {
                    "template": {
                        "metadata": {
                            "annotations": {"nginx.ingress.kubernetes.io/server-snippet": "x"}
                        },
                        "spec": deployment({})["spec"]["template"]["spec"],
                    }
                },
            },
        ],
        [
            "$.metadata.annotations['argocd.argoproj.io/sync-options']",
            "$.spec.template.metadata.annotations['nginx.ingress.kubernetes.io/server-snippet']",
        ],
        [deployment({}, annotations={"accel-gitops.io/source": "values/teams/ml.yaml"})],
    ),
    # Team ml is granted no security profile: every capability it adds is one too many (the
    # four SEC003 refuses are SEC003's alone).
    "SEC007": (
        "team-ml",
        [
            deployment(
                {
                    "containers": [
                        {"name": "c", "image": "x", "securityContext": {"capabilities": {}}},
                        {
                            "name": "d",
                            "image": "x",
                            "securityContext": {"capabilities": {"add": ["IPC_LOCK", "SYS_ADMIN"]}},
                        },
                    ]
                }
            ),
            deployment(
                {"initContainers": [{"securityContext": {"capabilities": {"add": ["CHOWN"]}}}]}
            ),
        ],
        [
            "$.spec.template.spec.containers[1].securityContext.capabilities.add",
            "$.spec.template.spec.initContainers[0].securityContext.capabilities.add",
        ],
        [
            deployment(
                {
                    "containers": [
                        {
                            "name": "c",
                            "image": f"r.example.com/x:1@{DIGEST}",
                            "securityContext": {"capabilities": {"drop": ["ALL"]}},
                        }
                    ]
                }
            )
        ],
    ),
    "TEAM001": (
        "team-ml",
        [
            deployment({}, namespace="other-team"),
            role(GOOD_RULE),
            ns("kube-system", "baseline"),
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": "team-other"},
            },
        ],
        ["$.metadata.namespace", "$.metadata", "$.metadata", "$.metadata"],
        [
            deployment({}),
            ns("ml", "baseline"),
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": "team-ml"},
            },
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": "team-ml"},
            },
        ],
    ),
}


@pytest.mark.parametrize("code", sorted(CASES))
def test_rule_fires_on_each_failing_object_and_passes_the_good_ones(
    code: str, prod: FleetView
) -> None:
    unit, bad, paths, good = CASES[code]
    assert [f for f in found(prod, unit, *bad) if f[0] == code] == [(code, p) for p in paths]
    assert found(prod, unit, *good) == []


def test_every_security_and_team_rule_has_a_case() -> None:
    from generator.policy.registry import MANIFEST_RULES

    assert {c for c in MANIFEST_RULES if c.startswith(("SEC", "TEAM"))} == set(CASES)


def test_digests_are_required_only_where_the_fleet_marks_production(prod: FleetView) -> None:
    staging = copy.copy(prod)
    object.__setattr__(staging, "env", "staging")
    bad = deployment({"containers": [{"name": "c", "image": "r.example.com/x:1"}]})
    assert found(staging, "team-ml", bad) == []


def test_the_example_fleet_passes_every_security_rule_in_every_unit() -> None:
    from tests.example import EXAMPLE_VALUES

    loaded = values.load(EXAMPLE_VALUES)
    for unit in render_tree(loaded).units:
        view = loaded.of_layer(unit.env)
        assert [f.format() for f in run_rules(context(view), unit, list(unit.objects))] == [], (
            unit.path
        )


# ---- through the real validate command ------------------------------------------------------

PINNED_PLUGIN = (
    f"devicePlugin: {{version: 'v0.17.1@{DIGEST}'}}\n"
    f"exporter: {{daemonSet: {{version: '4.5.3-4.8.2-distroless@{DIGEST}'}}}}\n"
)
JOBS = f"""\
quota: {{nvidia: 4}}
jobs:
  first:
    vendor: nvidia
    images: {{nvidia: 'registry.example.com/train:1@{DIGEST}'}}
  second:
    vendor: nvidia
    images: {{nvidia: registry.example.com/train:1}}
"""


def test_an_unpinned_image_in_production_is_found_at_its_workloads_line(tmp_path: Path) -> None:
    """The finding is on the second object of the team's workloads: it names that workload's
    line, not the unit's first object's."""
    fleet = FLEET + "productionEnvironments: [prod]\n"
    values_dir = tree(
        tmp_path,
        {
            "fleet.yaml": fleet,
            "vendors/nvidia.yaml": PINNED_PLUGIN + NVIDIA,
            "teams/ml.yaml": JOBS,
        },
    )
    assert cli("render", "--values", str(values_dir))[0] == 0  # validate checks what is committed
    before = snapshot(tmp_path)
    code, out = cli("validate", "--values", str(values_dir), "--no-drift", "--no-cache")
    assert code == 1, out
    assert [line for line in out.splitlines() if line.startswith("values/")] == [
        "values/teams/ml.yaml:6:3: SEC005 Job ml/second (overlays/prod/team-ml): image "
        "'registry.example.com/train:1' is not pinned by digest, and environment 'prod' is in "
        "productionEnvironments (at $.spec.template.spec.containers[0].image); pin it: "
        "<image>:<tag>@sha256:<digest> (for a vendor's agents: devicePlugin.version or "
        "exporter.daemonSet.version <tag>@sha256:<digest>; for a workload: its images)"
    ]
    assert snapshot(tmp_path) == before  # validate writes nothing

    pinned = f"images: {{nvidia: 'registry.example.com/train:1@{DIGEST}'}}"
    text = JOBS.replace("images: {nvidia: registry.example.com/train:1}", pinned)
    (values_dir / "teams/ml.yaml").write_text(text)
    assert cli("render", "--values", str(values_dir))[0] == 0
    code, out = cli("validate", "--values", str(values_dir), "--no-drift", "--no-cache")
    assert code == 0, out


def test_the_packing_schedulers_image_is_found_at_its_version_or_its_settings(
    tmp_path: Path,
) -> None:
    """The packing kube-scheduler's image comes from fleet.yaml's scheduling.kubeScheduler: the
    finding is at its `version` line when set, else at the block (its tag is then
    v<kubernetesVersion>), never at `scheduling:`."""
    fleet = FLEET + "productionEnvironments: [prod]\nscheduling:\n  kubeScheduler:\n"
    files = {"vendors/nvidia.yaml": PINNED_PLUGIN + NVIDIA, "teams/ml.yaml": "quota: {nvidia: 4}\n"}
    tail = (
        "SEC005 Deployment kube-system/accel-packing-scheduler (overlays/prod/packing-scheduler): "
        "image 'registry.k8s.io/kube-scheduler:{tag}' is not pinned by digest, and environment "
        "'prod' is in productionEnvironments{why} (at $.spec.template.spec.containers[0].image); "
        "pin it: scheduling.kubeScheduler.version: <tag>@sha256:<digest>"
    )
    for settings, where, tag, why in (
        (
            "    packing: true\n    version: v1.33.4\n",
            "values/fleet.yaml:9:14",
            "v1.33.4",
            "",
        ),
        (
            "    packing: true\n",
            "values/fleet.yaml:7:3",
            "v1.33.0",
            " (its tag is v<kubernetesVersion> unless scheduling.kubeScheduler.version says "
            "another)",
        ),
    ):
        values_dir = tree(tmp_path / tag, {**files, "fleet.yaml": fleet + settings})
        assert cli("render", "--values", str(values_dir))[0] == 0
        code, out = cli("validate", "--values", str(values_dir), "--no-drift", "--no-cache")
        got = [line for line in out.splitlines() if "packing-scheduler" in line]
        assert (code, got) == (1, [f"{where}: " + tail.format(tag=tag, why=why)])


def test_an_agent_image_is_found_where_the_values_set_it_or_at_the_production_entry(
    tmp_path: Path,
) -> None:
    """A vendor agent's image is set by its version in a vendor file (found at that line), or by
    the built-in catalog, which no finding points into: then at the productionEnvironments entry
    that asks for digests, naming the file and key that pin it; never line 1 of a vendor file
    that does not set it."""
    fleet = FLEET + "productionEnvironments: [prod]\n"
    exporter = f"exporter: {{daemonSet: {{version: '4.5.3-4.8.2-distroless@{DIGEST}'}}}}\n"
    shared = SHARED_NVIDIA.replace(
        "devicePlugin: {name: nvidia-device-plugin-shared}",
        "devicePlugin: {name: nvidia-device-plugin-shared, version: v0.17.1}",
    ).replace(
        "exporter: {name: dcgm-exporter-shared}",
        "exporter: {name: dcgm-exporter-shared, "
        f"daemonSet: {{version: '4.5.3-4.8.2-distroless@{DIGEST}'}}}}",
    )
    values_dir = tree(
        tmp_path,
        {
            "fleet.yaml": fleet,
            "vendors/nvidia.yaml": exporter + NVIDIA,
            "vendors/nvidia-shared.yaml": shared,
            "teams/ml.yaml": "quota: {nvidia: 4, nvidia-shared: 4}\n",
        },
    )
    assert cli("render", "--values", str(values_dir))[0] == 0
    code, out = cli("validate", "--values", str(values_dir), "--no-drift", "--no-cache")
    assert code == 1, out
    assert [line for line in out.splitlines() if line.startswith("values/")] == [
        "values/fleet.yaml:5:26: SEC005 DaemonSet accelerator-plugins/nvidia-device-plugin "
        "(overlays/prod/device-plugins): image 'nvcr.io/nvidia/k8s-device-plugin:v0.17.1' is not "
        "pinned by digest, and environment 'prod' is in productionEnvironments; the built-in "
        "catalog sets it (vendor nvidia sets neither devicePlugin.image nor devicePlugin.version) "
        "(at $.spec.template.spec.containers[0].image); pin it: devicePlugin.version: "
        "<tag>@sha256:<digest> in values/vendors/nvidia.yaml (the catalog names the tag its "
        "upstream manifest ships: the digest is the one of the image your registry serves)",
        "values/vendors/nvidia-shared.yaml:5:60: SEC005 DaemonSet "
        "accelerator-plugins/nvidia-device-plugin-shared (overlays/prod/device-plugins): image "
        "'nvcr.io/nvidia/k8s-device-plugin:v0.17.1' is not pinned by digest, and environment "
        "'prod' is in productionEnvironments (at $.spec.template.spec.containers[0].image); pin "
        "it: devicePlugin.version: <tag>@sha256:<digest>",
    ]


def test_a_production_environment_must_be_one_of_the_fleets(tmp_path: Path) -> None:
    from tests.fixtures import render_refused

    output = render_refused(
        tree(tmp_path, {"fleet.yaml": FLEET + "productionEnvironments: [prd]\n"})
    )
    assert (
        "values/fleet.yaml:5:26: REF002 production environment 'prd' is not one of environments "
        "(at $.productionEnvironments[0]); did you mean 'prod'? known environments: staging, prod"
    ) in output.splitlines()


def test_validate_reports_a_privileged_team_object_at_its_workloads_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Values cannot ask for host access; a generator change (here: a builder that adds it)
    or a hand edit can. validate finds it in the built unit, at the workload's values line."""
    from generator.builders import fleet as builders
    from generator.vocab.units import Component

    team = "quota: {nvidia: 4}\njobs:\n  train:\n    vendor: nvidia\n"
    team += "    images: {nvidia: registry.example.com/t:1}\n"
    values_dir = tree(tmp_path, {"teams/ml.yaml": team})

    def host_network(view: FleetView) -> list[Component]:
        ml = view.teams[0]
        bad = deployment({"hostNetwork": True})
        return [Component("team-ml", "extra/ml", [bad], origin=ml.doc.anchor(("jobs", "train")))]

    monkeypatch.setattr(builders, "BUILDERS", (*builders.BUILDERS, builders.of_view(host_network)))
    assert cli("render", "--values", str(values_dir))[0] == 0  # validate checks what is committed
    code, out = cli("validate", "--values", str(values_dir), "--no-drift", "--no-cache")
    assert code == 1, out
    assert [line for line in out.splitlines() if line.startswith("values/")] == [
        f"values/teams/ml.yaml:3:3: SEC003 Deployment ml/web (overlays/{env}/team-ml): hostNetwork: "
        "true: a team workload gets no access to its node (at $.spec.template.spec.hostNetwork); "
        "drop it; vendor drivers reach pods through the device plugin and the container runtime "
        "(vendorMounts: false)"
        for env in ("prod", "staging")
    ]


# ---- each rule's findings whole, on objects made for each branch --------------------------------


def whole(
    view: FleetView, rule: Any, unit_name: str, *objs: dict[str, Any]
) -> list[tuple[str, str]]:
    """(message, path) of each finding of one rule on one unit's objects; every finding carries
    the rule's code and hint and names the values line that made its object."""
    unit = Unit(
        "prod", unit_name, f"overlays/prod/{unit_name}", objs, {identity(o): ORIGIN for o in objs}
    )
    found = list(rule.fn(context(view), unit, list(objs)))
    assert {(f.code, f.hint, f.location) for f in found} <= {(rule.code, HINTS[rule.code], ORIGIN)}
    return [(f.message, f.path) for f in found]


HINTS = {
    "SEC001": "run device plugins in a namespace of their own that the device-plugins unit "
    "creates (devicePlugin.namespace)",
    "SEC002": "set podSecurity: baseline or restricted in the team's values",
    "SEC003": "drop it; vendor drivers reach pods through the device plugin and the container "
    "runtime (vendorMounts: false)",
    "SEC005": "pin it: <image>:<tag>@sha256:<digest> (for a vendor's agents: devicePlugin.version "
    "or exporter.daemonSet.version <tag>@sha256:<digest>; for a workload: its images)",
    "SEC006": "allowed: accel-gitops.io/owners, accel-gitops.io/phase, accel-gitops.io/source, "
    "argocd.argoproj.io/sync-wave, scheduling.volcano.sh/queue-name, and on Namespaces "
    "argocd.argoproj.io/sync-options: Prune=false,Delete=false; on pods, what fleet.yaml's "
    "teamPodAnnotations lists",
}


def rule_of(code: str) -> Any:
    from generator.policy.registry import MANIFEST_RULES

    return MANIFEST_RULES[code]


# SEC001


def test_sec001_a_plugin_outside_a_privileged_namespace_of_its_unit(prod: FleetView) -> None:
    """Only a Namespace of the unit labelled privileged counts; a plugin is a DaemonSet of the
    device-plugins unit, or one labelled as a device plugin in any unit."""
    lookalike = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "fake",
            "namespace": "fake",
            "labels": {"pod-security.kubernetes.io/enforce": "privileged"},
        },
    }
    unlabelled = {**ns("bare", "privileged"), "metadata": {"name": "bare", "labels": None}}
    cluster_wide = plugin("x")
    del cluster_wide["metadata"]["namespace"]
    objs = [
        ns("accelerator-plugins", "privileged"),
        lookalike,
        unlabelled,
        plugin("accelerator-plugins"),
        plugin("fake"),
        deployment({}, "kube-system"),  # a Deployment: no plugin
        deployment({}, "kube-system") | {"kind": "DaemonSet"},  # the device-plugins unit's
        plugin("bare"),
        cluster_wide,
    ]
    tail = (
        " is not a namespace of this unit labelled pod-security.kubernetes.io/enforce=privileged: "
        "Pod Security would refuse the plugin's host paths, or grant them to every pod there"
    )
    assert whole(prod, rule_of("SEC001"), "device-plugins", *objs) == [
        (f"DaemonSet fake/web (overlays/prod/device-plugins): namespace 'fake'{tail}", P_NS),
        (
            f"DaemonSet kube-system/web (overlays/prod/device-plugins): namespace 'kube-system'"
            f"{tail}",
            P_NS,
        ),
        (f"DaemonSet bare/web (overlays/prod/device-plugins): namespace 'bare'{tail}", P_NS),
        (f"DaemonSet web (overlays/prod/device-plugins): namespace ''{tail}", P_NS),
    ]
    # In another unit only the DaemonSets labelled as device plugins are plugins.
    agent = deployment({}, "kube-system") | {"kind": "DaemonSet"}
    agent["metadata"]["name"] = "agent"
    other = [agent, plugin("kube-system")]
    assert whole(prod, rule_of("SEC001"), "monitoring", *other) == [
        (
            f"DaemonSet kube-system/web (overlays/prod/monitoring): namespace 'kube-system'{tail}",
            P_NS,
        )
    ]


P_NS = "$.metadata.namespace"


# SEC002


def test_sec002_team_namespaces_enforce_baseline_or_restricted(prod: FleetView) -> None:
    """Every Namespace of a team's unit, whatever comes before it; other units' are not checked."""
    objs = [
        deployment({}),
        ns("ml", "baseline"),
        ns("ml-a", "restricted"),
        ns("ml-b", "privileged"),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml-c", "labels": None}},
        ns("ml-d", "Baseline"),
    ]
    path = "$.metadata.labels['pod-security.kubernetes.io/enforce']"
    tail = "; team namespaces enforce baseline or restricted"
    assert whole(prod, rule_of("SEC002"), "team-ml", *objs) == [
        (
            "Namespace ml-b (overlays/prod/team-ml): pod-security.kubernetes.io/enforce is "
            f"'privileged'{tail}",
            path,
        ),
        (
            f"Namespace ml-c (overlays/prod/team-ml): pod-security.kubernetes.io/enforce is None{tail}",
            path,
        ),
        (
            "Namespace ml-d (overlays/prod/team-ml): pod-security.kubernetes.io/enforce is "
            f"'Baseline'{tail}",
            path,
        ),
    ]
    assert whole(prod, rule_of("SEC002"), "device-plugins", ns("p", "privileged")) == []
    assert whole(prod, rule_of("SEC002"), "teams-ml", ns("p", "privileged")) == []


# SEC003


def test_sec003_every_kind_of_node_access_in_a_team_workload(prod: FleetView) -> None:
    spec = {
        "hostNetwork": True,
        "hostPID": True,
        "hostIPC": True,
        "volumes": [
            {"name": "scratch", "emptyDir": {}},
            {"name": "dev", "hostPath": {"path": "/dev"}},
            {"name": "odd", "hostPath": None},
        ],
        "initContainers": [
            {"name": "init", "image": "i", "securityContext": {"privileged": True}},
        ],
        "containers": [
            {"name": "c", "image": "i", "securityContext": {"privileged": False}},
            {
                "name": "d",
                "image": "i",
                "securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE", "NET_ADMIN"]}},
            },
            {"name": "e", "image": "i", "securityContext": {"capabilities": {"add": ["ALL"]}}},
            {
                "name": "f",
                "image": "i",
                "securityContext": {"capabilities": {"add": ["SYS_PTRACE"]}},
            },
            {
                "name": "g",
                "image": "i",
                "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}},
            },
            {"name": "h", "image": "i", "securityContext": {"capabilities": {"add": ["CHOWN"]}}},
            {"name": "k", "image": "i", "securityContext": {"capabilities": None}},
            {"name": "m", "image": "i", "securityContext": None},
        ],
        "ephemeralContainers": [
            {"name": "debug", "image": "i", "securityContext": {"privileged": True}},
        ],
    }
    quiet = {"hostNetwork": False, "hostPID": False, "hostIPC": False}
    at = "$.spec.template.spec."
    what = "Deployment ml/web (overlays/prod/team-ml): "
    tail = ": a team workload gets no access to its node"
    assert whole(prod, rule_of("SEC003"), "team-ml", deployment(spec), deployment(quiet)) == [
        (f"{what}hostNetwork: true{tail}", f"{at}hostNetwork"),
        (f"{what}hostPID: true{tail}", f"{at}hostPID"),
        (f"{what}hostIPC: true{tail}", f"{at}hostIPC"),
        (f"{what}hostPath volume '/dev'{tail}", f"{at}volumes[1]"),
        (f"{what}hostPath volume None{tail}", f"{at}volumes[2]"),
        (f"{what}privileged container 'init'{tail}", f"{at}initContainers[0].securityContext"),
        (
            f"{what}capabilities added: NET_ADMIN, NET_BIND_SERVICE{tail}",
            f"{at}containers[1].securityContext",
        ),
        (f"{what}capabilities added: ALL{tail}", f"{at}containers[2].securityContext"),
        (f"{what}capabilities added: SYS_PTRACE{tail}", f"{at}containers[3].securityContext"),
        (f"{what}capabilities added: SYS_ADMIN{tail}", f"{at}containers[4].securityContext"),
        (
            f"{what}privileged container 'debug'{tail}",
            f"{at}ephemeralContainers[0].securityContext",
        ),
    ]
    # Device plugins need their node: only team units are checked.
    assert whole(prod, rule_of("SEC003"), "device-plugins", deployment(spec)) == []
    assert whole(prod, rule_of("SEC003"), "teams-ml", deployment(spec)) == []


def test_sec003_each_volcano_task_at_its_own_path(prod: FleetView) -> None:
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {
            "tasks": [
                {"name": "a", "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
                {"name": "b", "template": {"spec": {"hostNetwork": True}}},
            ]
        },
    }
    assert whole(prod, rule_of("SEC003"), "team-ml", job) == [
        (
            "Job ml/train (overlays/prod/team-ml): hostNetwork: true: a team workload gets no "
            "access to its node",
            "$.spec.tasks[1].template.spec.hostNetwork",
        )
    ]


# SEC004

GRANT = "grant only the resources and verbs the component needs (devicePlugin.rbac in the vendor's values)"
BIND = "bind a role that lists what the component needs"
AGGREGATE = "list the rules the component needs"


def sec004(view: FleetView, *objs: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(message, path, hint) of each SEC004 finding in the device-plugins unit."""
    unit = Unit(
        "prod",
        "device-plugins",
        "overlays/prod/device-plugins",
        objs,
        {identity(o): ORIGIN for o in objs},
    )
    found = list(rule_of("SEC004").fn(context(view), unit, list(objs)))
    assert {(f.code, f.location) for f in found} <= {("SEC004", ORIGIN)}
    return [(f.message, f.path, f.hint) for f in found]


def binding(kind: str, role_name: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": "b", "namespace": "p"} if kind == "RoleBinding" else {"name": "b"},
    }
    if role_name is not None:
        out["roleRef"] = {"kind": "ClusterRole", "name": role_name}
    return out


def test_sec004_what_each_rule_of_a_role_grants(prod: FleetView) -> None:
    """Wildcards ('*', or 'x/*') in any of the four lists, secrets (or a subresource of them),
    and escalate, bind, impersonate (named, sorted; a '*' verb is reported as a wildcard)."""
    wide = {
        "apiGroups": ["*"],
        "resources": ["pods/*"],
        "verbs": ["*", "impersonate", "bind", "get", "escalate"],
        "nonResourceURLs": ["/metrics/*"],
    }
    rules: list[dict[str, Any]] = [
        GOOD_RULE,
        wide,
        {"apiGroups": ["apps"], "resources": ["secrets/status"], "verbs": ["get"]},
        {"nonResourceURLs": ["*"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["*"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["*"]},
        {"apiGroups": ["x/*"], "resources": ["nodes"], "verbs": ["get"]},
        {"apiGroups": None, "resources": None, "verbs": None},
    ]
    cluster_role = role(*rules)
    namespaced = role({"apiGroups": [""], "resources": ["secrets"], "verbs": ["bind"]})
    namespaced |= {"kind": "Role", "metadata": {"name": "r", "namespace": "p"}}
    what = "ClusterRole plugin (overlays/prod/device-plugins): "
    assert sec004(prod, cluster_role, namespaced) == [
        (f"{what}rule 1 grants a wildcard in apiGroups", "$.rules[1]", GRANT),
        (f"{what}rule 1 grants a wildcard in resources", "$.rules[1]", GRANT),
        (f"{what}rule 1 grants a wildcard in verbs", "$.rules[1]", GRANT),
        (f"{what}rule 1 grants a wildcard in nonResourceURLs", "$.rules[1]", GRANT),
        (f"{what}rule 1 grants the verbs bind, escalate, impersonate", "$.rules[1]", GRANT),
        (f"{what}rule 2 grants access to secrets", "$.rules[2]", GRANT),
        (f"{what}rule 3 grants a wildcard in nonResourceURLs", "$.rules[3]", GRANT),
        (f"{what}rule 4 grants a wildcard in resources", "$.rules[4]", GRANT),
        (f"{what}rule 5 grants a wildcard in verbs", "$.rules[5]", GRANT),
        (f"{what}rule 6 grants a wildcard in apiGroups", "$.rules[6]", GRANT),
        (
            "Role p/r (overlays/prod/device-plugins): rule 0 grants access to secrets",
            "$.rules[0]",
            GRANT,
        ),
        (
            "Role p/r (overlays/prod/device-plugins): rule 0 grants the verbs bind",
            "$.rules[0]",
            GRANT,
        ),
    ]


def test_sec004_aggregated_roles_and_bindings_of_built_in_roles(prod: FleetView) -> None:
    aggregated = role() | {"aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {}}]}}
    not_aggregated = role(GOOD_RULE) | {"aggregationRule": None, "metadata": {"name": "n"}}
    no_rules = role() | {"rules": None, "metadata": {"name": "none"}}
    objs = [
        aggregated,
        not_aggregated,
        no_rules,
        binding("ClusterRoleBinding", "cluster-admin"),
        binding("RoleBinding", "admin"),
        binding("ClusterRoleBinding", "edit"),
        binding("ClusterRoleBinding", "view"),
        binding("ClusterRoleBinding", None),
        # Not RBAC: a Deployment's rules or roleRef are nobody's grant.
        deployment({}) | {"rules": [{"verbs": ["*"]}], "roleRef": {"name": "admin"}},
    ]
    assert sec004(prod, *objs) == [
        (
            "ClusterRole plugin (overlays/prod/device-plugins): an aggregated role grants "
            "whatever other roles add to it",
            "$.aggregationRule",
            AGGREGATE,
        ),
        (
            "ClusterRoleBinding b (overlays/prod/device-plugins): binds the built-in role "
            "'cluster-admin'",
            "$.roleRef.name",
            BIND,
        ),
        (
            "RoleBinding p/b (overlays/prod/device-plugins): binds the built-in role 'admin'",
            "$.roleRef.name",
            BIND,
        ),
        (
            "ClusterRoleBinding b (overlays/prod/device-plugins): binds the built-in role 'edit'",
            "$.roleRef.name",
            BIND,
        ),
    ]


# SEC005


def test_sec005_images_pinned_by_a_whole_sha256_digest(prod: FleetView) -> None:
    pinned = f"r.example.com/x:1@{DIGEST}"
    spec = {
        "initContainers": [{"name": "init", "image": "r.example.com/init:1"}],
        "containers": [
            {"name": "a", "image": pinned},
            {"name": "b", "image": f"r.example.com/x:1@{DIGEST.upper()}"},
            {"name": "c", "image": f"r.example.com/x:1@{DIGEST[:-1]}"},
            {"name": "d", "image": f"@{DIGEST}"},
            {"name": "e"},
        ],
        # Ephemeral containers are added by hand for debugging, never rendered.
        "ephemeralContainers": [{"name": "debug", "image": "busybox"}],
    }
    what = "Deployment ml/web (overlays/prod/device-plugins): image "
    tail = " is not pinned by digest, and environment 'prod' is in productionEnvironments"
    at = "$.spec.template.spec."
    assert whole(prod, rule_of("SEC005"), "device-plugins", deployment(spec)) == [
        (f"{what}'r.example.com/init:1'{tail}", f"{at}initContainers[0].image"),
        (f"{what}'r.example.com/x:1@{DIGEST.upper()}'{tail}", f"{at}containers[1].image"),
        (f"{what}'r.example.com/x:1@{DIGEST[:-1]}'{tail}", f"{at}containers[2].image"),
        (f"{what}'@{DIGEST}'{tail}", f"{at}containers[3].image"),
        (f"{what}''{tail}", f"{at}containers[4].image"),
    ]


@pytest.mark.parametrize(
    ("production", "env", "checked"),
    [
        ("productionEnvironments: [prod]\n", "prod", True),
        ("productionEnvironments: [prod]\n", "staging", False),
        ("productionEnvironments: [staging, prod]\n", "staging", True),
        ("productionEnvironments: []\n", "prod", False),
        ("", "prod", False),
    ],
)
def test_sec005_only_in_the_environments_the_fleet_marks_production(
    production: str, env: str, checked: bool, tmp_path: Path
) -> None:
    view = values.load(tree(tmp_path, {"fleet.yaml": FLEET + production})).envs[env]
    bad = deployment({"containers": [{"name": "c", "image": "r.example.com/x:1"}]})
    unit = Unit(env, "team-ml", f"overlays/{env}/team-ml", (bad,), {identity(bad): ORIGIN})
    assert [f.message for f in rule_of("SEC005").fn(context(view), unit, [bad])] == (
        [
            f"Deployment ml/web (overlays/{env}/team-ml): image 'r.example.com/x:1' is not pinned "
            f"by digest, and environment {env!r} is in productionEnvironments"
        ]
        if checked
        else []
    )


# SEC006


def test_sec006_annotations_outside_the_allow_list(prod: FleetView) -> None:
    """The generator's own annotations pass with any value; Namespaces alone may carry Argo CD's
    sync options, and only the generator's exact value; keys are reported sorted, at the object's
    metadata and at each pod template's."""
    allowed = {
        "accel-gitops.io/source": "values/teams/ml.yaml",
        "accel-gitops.io/owners": "ml@example.com",
        "argocd.argoproj.io/sync-wave": "-1",
        "scheduling.volcano.sh/queue-name": "team-ml",
    }
    own_ns = ns("ml", "baseline")
    own_ns["metadata"]["annotations"] = {
        "argocd.argoproj.io/sync-options": "Prune=false,Delete=false"
    }
    other_ns = ns("ml-b", "baseline")
    other_ns["metadata"]["annotations"] = {"argocd.argoproj.io/sync-options": "Prune=false"}
    dep = deployment({}, annotations={**allowed, "z.example.com/b": "1", "a.example.com/a": "2"})
    dep["spec"]["template"]["metadata"]["annotations"] = {
        "argocd.argoproj.io/sync-options": "Prune=false,Delete=false"
    }
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml", "annotations": None},
        "spec": {
            "tasks": [
                {"name": "a", "template": {"metadata": {"annotations": allowed}}},
                {"name": "b", "template": {"metadata": {"annotations": {"x.io/y": "z"}}}},
            ]
        },
    }
    bare = deployment({})
    del bare["spec"]["template"]  # a template that is not there has no annotations
    tail = (
        " is not one a team's objects may carry (Argo CD sync options, ingress snippets and the "
        "like change what the cluster does)"
    )
    assert whole(prod, rule_of("SEC006"), "team-ml", own_ns, other_ns, dep, job, bare) == [
        (
            f"Namespace ml-b (overlays/prod/team-ml): annotation 'argocd.argoproj.io/sync-options'"
            f"{tail}",
            "$.metadata.annotations['argocd.argoproj.io/sync-options']",
        ),
        (
            f"Deployment ml/web (overlays/prod/team-ml): annotation 'a.example.com/a'{tail}",
            "$.metadata.annotations['a.example.com/a']",
        ),
        (
            f"Deployment ml/web (overlays/prod/team-ml): annotation 'z.example.com/b'{tail}",
            "$.metadata.annotations['z.example.com/b']",
        ),
        (
            "Deployment ml/web (overlays/prod/team-ml): annotation "
            f"'argocd.argoproj.io/sync-options'{tail}",
            "$.spec.template.metadata.annotations['argocd.argoproj.io/sync-options']",
        ),
        (
            f"Job ml/train (overlays/prod/team-ml): annotation 'x.io/y'{tail}",
            "$.spec.tasks[1].template.metadata.annotations['x.io/y']",
        ),
    ]
    # The platform's units carry what their components need.
    assert whole(prod, rule_of("SEC006"), "device-plugins", dep) == []
    assert whole(prod, rule_of("SEC006"), "teams-ml", dep) == []


def test_sec006_pods_may_carry_what_the_fleet_lets_teams_set(tmp_path: Path) -> None:
    """teamPodAnnotations: an exact key, or every key of a prefix ('example.com/*'), on pod
    templates only: the workload object itself keeps the generator's allow-list."""
    fleet = FLEET + "teamPodAnnotations: [example.com/*, sidecar.istio.io/inject]\n"
    view = values.load(tree(tmp_path, {"fleet.yaml": fleet})).envs["prod"]
    notes = {
        "example.com/owner": "vision",
        "sidecar.istio.io/inject": "false",
        "sidecar.istio.io/status": "x",  # not the listed key
        "example.org/owner": "x",  # not the listed prefix
    }
    dep = deployment({}, annotations={"example.com/owner": "vision"})
    dep["spec"]["template"]["metadata"]["annotations"] = notes
    got = [path for _, path in whole(view, rule_of("SEC006"), "team-ml", dep)]
    assert got == [
        "$.metadata.annotations['example.com/owner']",
        "$.spec.template.metadata.annotations['example.org/owner']",
        "$.spec.template.metadata.annotations['sidecar.istio.io/status']",
    ]


# TEAM001


@pytest.fixture(scope="module")
def two_namespaces(tmp_path_factory: pytest.TempPathFactory) -> FleetView:
    """Team ml with namespaces ml and ml-batch; team ops."""
    files = {
        "teams/ml.yaml": "quota: {nvidia: 4}\nnamespaces: [ml, ml-batch]\n",
        "teams/ops.yaml": "quota: {nvidia: 2}\n",
    }
    return values.load(tree(tmp_path_factory.mktemp("team"), files)).envs["prod"]


OUTSIDE = "a team's objects live in its own namespaces"
CLUSTER = "cluster-wide objects belong to the platform's units (values/fleet.yaml, values/vendors/)"


def team001(view: FleetView, unit_name: str, *objs: dict[str, Any]) -> list[tuple[str, str, str]]:
    unit = Unit(
        "prod", unit_name, f"overlays/prod/{unit_name}", objs, {identity(o): ORIGIN for o in objs}
    )
    found = list(rule_of("TEAM001").fn(context(view), unit, list(objs)))
    assert {(f.code, f.location) for f in found} <= {("TEAM001", ORIGIN)}
    return [(f.message, f.path, f.hint) for f in found]


def cluster_object(api: str, kind: str, name: str) -> dict[str, Any]:
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name}}


def test_team001_what_a_teams_unit_may_hold(two_namespaces: FleetView) -> None:
    kueue, volcano = "kueue.x-k8s.io/v1beta2", "scheduling.volcano.sh/v1beta1"
    objs = [
        ns("ml", "baseline"),
        ns("ml-batch", "baseline"),
        deployment({}, "ml"),
        deployment({}, "ml-batch"),
        cluster_object(kueue, "ClusterQueue", "team-ml"),
        cluster_object(volcano, "Queue", "team-ml"),
        deployment({}, "ops"),
        ns("ops", "baseline"),
        ns("team-ml", "baseline"),  # the queue's name is no namespace of the team
        cluster_object(kueue, "ClusterQueue", "team-ops"),
        cluster_object("rbac.authorization.k8s.io/v1", "ClusterRole", "team-ml"),
    ]
    where = "(overlays/prod/team-ml)"
    tail = (
        "in team 'ml''s unit; a team's unit holds its namespaces, its queue 'team-ml' and objects "
        "inside its namespaces"
    )
    assert team001(two_namespaces, "team-ml", *objs) == [
        (
            f"Deployment ops/web {where}: namespace 'ops' is not one of team 'ml''s namespaces "
            "(ml, ml-batch)",
            "$.metadata.namespace",
            OUTSIDE,
        ),
        (f"Namespace ops {where}: a cluster-scoped Namespace {tail}", "$.metadata", CLUSTER),
        (f"Namespace team-ml {where}: a cluster-scoped Namespace {tail}", "$.metadata", CLUSTER),
        (
            f"ClusterQueue team-ops {where}: a cluster-scoped ClusterQueue {tail}",
            "$.metadata",
            CLUSTER,
        ),
        (
            f"ClusterRole team-ml {where}: a cluster-scoped ClusterRole {tail}",
            "$.metadata",
            CLUSTER,
        ),
    ]


def test_team001_each_team_unit_is_checked_against_its_own_team(two_namespaces: FleetView) -> None:
    """The unit team-ops belongs to team ops; a unit of no team (or no team unit) is not checked."""
    assert team001(two_namespaces, "team-ops", deployment({}, "ops"), deployment({}, "ml")) == [
        (
            "Deployment ml/web (overlays/prod/team-ops): namespace 'ml' is not one of team 'ops''s "
            "namespaces (ops)",
            "$.metadata.namespace",
            OUTSIDE,
        )
    ]
    assert team001(two_namespaces, "team-ml", deployment({}, "ops")) != []
    assert team001(two_namespaces, "team-nobody", deployment({}, "ops")) == []
    assert team001(two_namespaces, "ml", deployment({}, "ops")) == []
    assert team001(two_namespaces, "device-plugins", ns("kube-system", "privileged")) == []
