"""Team units: namespaces and quotas (issue #8 item 9)."""

from __future__ import annotations

from pathlib import Path

from generator.builders import teams
from generator.findings import Location
from generator.values import loader as values
from generator.values.model import FleetView
from tests.fixtures import PROD_FLEET, Obj, build_unit, find, render_into, tree

POOL = (
    "pools:\n  - {name: p1, model: m1, pciDevices: ['abcd'], devicesPerNode: 8, nodes: [node-01]}\n"
)
TEAM = "quota: {nvidia: 4}\n"


def test_team_quota_counts_extended_resources_under_requests_only(tmp_path: Path) -> None:
    """kubernetes pkg/quota/v1/evaluator/core/pods.go (v1.36.3) counts an extended resource only
    as requests.<name>: a limits.<name> line would be accepted and never enforced."""
    amd = POOL.replace("node-01", "node-02")
    values_dir = tree(
        tmp_path,
        {"vendors/nvidia.yaml": POOL, "vendors/amd.yaml": amd, "teams/ml.yaml": TEAM},
        fleet=PROD_FLEET,
        defaults=False,
    )
    quota = find(
        build_unit(render_into(values_dir, tmp_path / "out"), "prod", "team-ml"), "ResourceQuota"
    )
    assert quota["spec"]["hard"] == {"requests.amd.com/gpu": "0", "requests.nvidia.com/gpu": "4"}


# ---- teams.build on small values trees: every object written out --------------------------------

SOURCE = "accel-gitops.io/source"
MANAGED = {"app.kubernetes.io/managed-by": "accel-gitops"}
WAVE = "argocd.argoproj.io/sync-wave"
SYNC = "argocd.argoproj.io/sync-options"
VENDOR_POOLS = {
    "vendors/nvidia.yaml": "pools:\n  - {name: a100, model: A100, devicesPerNode: 8, nodes: [g1]}\n",
    "vendors/ascend.yaml": "pools:\n  - {name: 910b, model: 910b, devicesPerNode: 8, nodes: [n1]}\n",
    "vendors/amd.yaml": "pools:\n  - {name: mi, model: MI250X, devicesPerNode: 8, nodes: [a1]}\n",
}
HYGON = """\
resourceName: amd.com/gpu
devicePlugin: {image: r/dcu, version: v1}
pools:
  - {name: z, model: Z100L, devicesPerNode: 8, nodes: [d1]}
"""


def view_of(tmp_path: Path, files: dict[str, str], fleet: str = PROD_FLEET) -> FleetView:
    """The prod view of a tree holding fleet.yaml (`fleet`) and `files` alone."""
    return values.load(tree(tmp_path, files, fleet=fleet, defaults=False)).envs["prod"]


def ns_object(
    name: str,
    team: str,
    *,
    enforce: str = "baseline",
    source: str,
    owners: str | None = None,
) -> Obj:
    notes = {SOURCE: source, WAVE: "-2", SYNC: "Prune=false,Delete=false"}
    if owners is not None:
        notes["accel-gitops.io/owners"] = owners
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": {
                **MANAGED,
                "pod-security.kubernetes.io/enforce": enforce,
                "pod-security.kubernetes.io/audit": "restricted",
                "pod-security.kubernetes.io/warn": "restricted",
                "accel-gitops.io/team": team,
            },
            "annotations": notes,
        },
    }


def quota_object(namespace: str, team: str, hard: dict[str, str], *, source: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {
            "name": "accelerators",
            "namespace": namespace,
            "labels": {**MANAGED, "accel-gitops.io/team": team},
            "annotations": {SOURCE: source, WAVE: "-1"},
        },
        "spec": {"hard": hard},
    }


def test_team_with_two_namespaces_and_quotas_on_two_vendors(tmp_path: Path) -> None:
    """Per namespace, in the order the team lists them: its Namespace (restricted, owners, wave -2,
    never pruned nor deleted) then its ResourceQuota (wave -1) with a requests.<resource> line
    per vendor of the fleet, sorted by resource: 4 NVIDIA GPUs, 2 Ascend NPUs, 0 AMD GPUs."""
    team = """\
namespaces: [ml-train, ml-serve]
owners: [alice@example.com, bob@example.com]
podSecurity: restricted
quota: {nvidia: 4, ascend: 2}
"""
    view = view_of(tmp_path, {**VENDOR_POOLS, "teams/ml.yaml": team})
    [component] = teams.build(view)
    assert (component.unit, component.name) == ("team-ml", "teams/ml")
    # Findings on the team's objects point at its quota: line 4 of its file.
    assert component.origin == Location("values/teams/ml.yaml", 4, 1)
    source = "values/teams/ml.yaml"
    owners = "alice@example.com, bob@example.com"
    hard = {"requests.amd.com/gpu": "0", "requests.huawei.com/Ascend910": "2"}
    hard["requests.nvidia.com/gpu"] = "4"
    assert component.objects == [
        ns_object("ml-train", "ml", enforce="restricted", source=source, owners=owners),
        quota_object("ml-train", "ml", hard, source=source),
        ns_object("ml-serve", "ml", enforce="restricted", source=source, owners=owners),
        quota_object("ml-serve", "ml", hard, source=source),
    ]
    assert list(component.objects[1]["spec"]["hard"]) == [
        "requests.amd.com/gpu",
        "requests.huawei.com/Ascend910",
        "requests.nvidia.com/gpu",
    ]


def test_team_defaults_one_namespace_of_its_name_at_baseline_without_owners(
    tmp_path: Path,
) -> None:
    """No namespaces: one named after the team; no podSecurity: baseline; no owners: no owners
    annotation; no quota: 0 of every vendor resource, so the team cannot use any."""
    team = "podSecurity: baseline\nnamespaces: [infer]\n"
    files = {**VENDOR_POOLS, "teams/infer.yaml": team, "teams/solo.yaml": "owners: []\n"}
    components = teams.build(view_of(tmp_path, files))
    assert [(c.unit, c.name) for c in components] == [
        ("team-infer", "teams/infer"),
        ("team-solo", "teams/solo"),
    ]
    # Neither quota nor namespaces: findings point at the top of the team's file.
    assert components[1].origin == Location("values/teams/solo.yaml", 1, 1)
    zero = {
        "requests.amd.com/gpu": "0",
        "requests.huawei.com/Ascend910": "0",
        "requests.nvidia.com/gpu": "0",
    }
    assert components[1].objects == [
        ns_object("solo", "solo", source="values/teams/solo.yaml"),
        quota_object("solo", "solo", zero, source="values/teams/solo.yaml"),
    ]
    assert components[0].objects == [
        ns_object("infer", "infer", source="values/teams/infer.yaml"),
        quota_object("infer", "infer", zero, source="values/teams/infer.yaml"),
    ]


def test_vendors_sharing_a_resource_name_share_one_quota_line(tmp_path: Path) -> None:
    """AMD and a Hygon DCU that advertises amd.com/gpu: the team's AMD and Hygon quotas add up
    on the one resource the API server counts."""
    files = {**VENDOR_POOLS, "vendors/hygon.yaml": HYGON}
    files["teams/ml.yaml"] = "quota: {amd: 2, hygon: 3, ascend: 1}\n"
    view = view_of(tmp_path, files)
    [team] = view.teams
    assert teams.quota_hard(view, team) == {
        "requests.amd.com/gpu": "5",
        "requests.huawei.com/Ascend910": "1",
        "requests.nvidia.com/gpu": "0",
    }
    files["teams/ml.yaml"] = "quota: {hygon: 3}\n"
    view = view_of(tmp_path / "hygon-only", files)
    assert teams.quota_hard(view, view.teams[0]) == {
        "requests.amd.com/gpu": "3",
        "requests.huawei.com/Ascend910": "0",
        "requests.nvidia.com/gpu": "0",
    }


def test_queue_backends_size_the_quota_to_the_queues_ceiling(tmp_path: Path) -> None:
    """Under Volcano or Kueue the team's queue limits it: each namespace's quota is the queue's
    ceiling, the team's quota times its namespaces plus what it may borrow (3 * 2 + 2 = 8
    NVIDIA, 1 * 2 = 2 Ascend). The team unit holds Namespaces and ResourceQuotas only: the queues
    are built with the workloads."""
    team = """\
namespaces: [a, b]
quota: {nvidia: 3, ascend: 1}
borrowing: {nvidia: 2}
"""
    hard = {"requests.huawei.com/Ascend910": "2", "requests.nvidia.com/gpu": "8"}
    source = "values/teams/ml.yaml"
    vendors = {k: v for k, v in VENDOR_POOLS.items() if "amd" not in k}
    for backend in ("volcano", "kueue"):
        fleet = (
            PROD_FLEET
            + f"capacity: {{allowOvercommit: true}}\nscheduling: {{backend: {backend}}}\n"
        )
        view = view_of(tmp_path / backend, {**vendors, "teams/ml.yaml": team}, fleet)
        [component] = teams.build(view)
        assert component.objects == [
            ns_object("a", "ml", source=source),
            quota_object("a", "ml", hard, source=source),
            ns_object("b", "ml", source=source),
            quota_object("b", "ml", hard, source=source),
        ], backend
    # The quota backend: the quota per namespace, borrowing ignored.
    view = view_of(tmp_path / "quota", {**vendors, "teams/ml.yaml": team})
    assert teams.quota_hard(view, view.teams[0]) == {
        "requests.huawei.com/Ascend910": "1",
        "requests.nvidia.com/gpu": "3",
    }


def test_a_quota_per_model_is_the_vendors_sum_in_the_resource_quota(tmp_path: Path) -> None:
    """The ResourceQuota counts nvidia.com/gpu whatever the model: a quota of H100 3 and A100 5
    is 8 there, times the two namespaces under Kueue (the ClusterQueue holds the models apart)
    plus the borrowing, 2: 18. Two vendor files of one resource name add up on it as well
    (nvidia-h100's 1 x 2)."""
    nvidia = """\
pools:
  - {name: a100, model: A100, devicesPerNode: 8, nodes: [g1]}
  - {name: h100, model: H100, devicesPerNode: 8, nodes: [g2]}
"""
    h100 = """\
catalog: nvidia
pools:
  - {name: h, model: H100, devicesPerNode: 8, nodes: [g3]}
nodeLabels: {accelerator: nvidia-h100}
"""
    team = """\
namespaces: [a, b]
quota: {nvidia: {H100: 3, A100: 5}, nvidia-h100: 1}
borrowing: {nvidia: 2}
"""
    fleet = PROD_FLEET + "scheduling: {backend: kueue}\n"
    files = {"vendors/nvidia.yaml": nvidia, "vendors/nvidia-h100.yaml": h100}
    view = view_of(tmp_path, {**files, "teams/ml.yaml": team}, fleet)
    assert teams.quota_hard(view, view.teams[0]) == {"requests.nvidia.com/gpu": "20"}


def test_no_vendor_no_resource_quota(tmp_path: Path) -> None:
    """A fleet without vendors has no resource to cap: the Namespace alone."""
    view = view_of(tmp_path, {"teams/ml.yaml": "namespaces: [ml]\n"})
    [component] = teams.build(view)
    assert component.objects == [ns_object("ml", "ml", source="values/teams/ml.yaml")]


def test_environment_override_of_a_teams_quota(tmp_path: Path) -> None:
    """prod lowers the team's NVIDIA quota and adds an owner: the objects carry prod's values and
    name both files they come from."""
    files = {
        **VENDOR_POOLS,
        "teams/ml.yaml": "quota: {nvidia: 4, amd: 1}\n",
        "environments/prod.yaml": "teams:\n  ml:\n    quota: {nvidia: 1}\n    owners: [ops@example.com]\n",
    }
    [component] = teams.build(view_of(tmp_path, files))
    source = "values/teams/ml.yaml, values/environments/prod.yaml"
    hard = {
        "requests.amd.com/gpu": "1",
        "requests.huawei.com/Ascend910": "0",
        "requests.nvidia.com/gpu": "1",
    }
    assert component.objects == [
        ns_object("ml", "ml", source=source, owners="ops@example.com"),
        quota_object("ml", "ml", hard, source=source),
    ]


def test_unit_name() -> None:
    assert teams.unit_name("ml") == "team-ml"


# ---- build: where findings on a team's objects point -------------------------------------------


def test_findings_of_a_team_without_quota_point_at_its_namespaces(tmp_path: Path) -> None:
    """No quota line to edit: a finding on the team's objects names the `namespaces` key (line 3
    of its file), where the user declared the namespaces the objects are for."""
    team = "owners: [ops@example.com]\npodSecurity: restricted\nnamespaces: [ml-a, ml-b]\n"
    [component] = teams.build(view_of(tmp_path, {**VENDOR_POOLS, "teams/ml.yaml": team}))
    assert component.origin == Location("values/teams/ml.yaml", 3, 1)
