"""Rendered security posture and team boundaries (SEC, TEAM rules): each rule on a failing and a
passing object, and through the real validate command on a values tree made for it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from generator.builders.common import Unit, identity
from generator.findings import Location
from generator.policy.registry import run_rules
from generator.render.layout import render_tree
from generator.values import loader as values
from generator.values.model import FleetView
from tests.fixtures import FLEET, NVIDIA, cli, snapshot, tree

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
    out = [f for f in run_rules(view, unit, list(objs)) if f.code.startswith(("SEC", "TEAM"))]
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
        view = loaded.envs[unit.env]
        assert [f.format() for f in run_rules(view, unit, list(unit.objects))] == [], unit.path


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


def test_a_production_environment_must_be_one_of_the_fleets(tmp_path: Path) -> None:
    from tests.fixtures import render_refused

    output = render_refused(
        tree(tmp_path, {"fleet.yaml": FLEET + "productionEnvironments: [prd]\n"})
    )
    assert (
        "values/fleet.yaml:5:26: REF002 production environment 'prd' is not one of environments "
        "(at $.productionEnvironments[0]); known environments: staging, prod"
    ) in output.splitlines()


def test_validate_reports_a_privileged_team_object_at_its_workloads_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Values cannot ask for host access; a generator change (here: a builder that adds it)
    or a hand edit can. validate finds it in the built unit, at the workload's values line."""
    from generator.builders import fleet as builders
    from generator.builders.common import Component

    team = "quota: {nvidia: 4}\njobs:\n  train:\n    vendor: nvidia\n"
    team += "    images: {nvidia: registry.example.com/t:1}\n"
    values_dir = tree(tmp_path, {"teams/ml.yaml": team})

    def host_network(view: FleetView) -> list[Component]:
        ml = view.teams[0]
        bad = deployment({"hostNetwork": True})
        return [Component("team-ml", "extra/ml", [bad], origin=ml.doc.anchor(("jobs", "train")))]

    monkeypatch.setattr(builders, "BUILDERS", (*builders.BUILDERS, host_network))
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
