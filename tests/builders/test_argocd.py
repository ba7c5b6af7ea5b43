"""Argo CD delivery: the AppProject the Applications name, what it allows, what is never pruned,
and where the root Application lives (issue #8 item 6; docs/argocd.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fixtures import PROD_FLEET, build_unit, find, render_into, tree

POOL = (
    "pools:\n  - {name: p1, model: m1, pciDevices: ['abcd'], devicesPerNode: 8, nodes: [node-01]}\n"
)
TEAM = "quota: {nvidia: 4}\n"


def everything(out: Path, env: str) -> dict[str, list[dict[str, Any]]]:
    """What Argo CD applies, per unit (kustomize build of every overlay of `env`)."""
    return {
        p.name: build_unit(out, env, p.name) for p in sorted((out / "overlays" / env).iterdir())
    }


def group_kind(obj: dict[str, Any]) -> tuple[str, str]:
    return obj["apiVersion"].rpartition("/")[0], obj["kind"]


def test_the_app_project_allows_exactly_what_the_fleet_deploys(tmp_path: Path) -> None:
    fleet = PROD_FLEET + "nodeConfig: {method: node-patch}\nscheduling: {backend: kueue}\n"
    amd = POOL.replace("node-01", "node-02")
    values_dir = tree(
        tmp_path,
        {"vendors/nvidia.yaml": POOL, "vendors/amd.yaml": amd, "teams/ml.yaml": TEAM},
        fleet=fleet,
        defaults=False,
    )
    units = everything(render_into(values_dir, tmp_path / "out"), "prod")
    project = find(units["argocd"], "AppProject")
    apps = [o for o in units["argocd"] if o["kind"] == "Application"]
    assert {a["spec"]["project"] for a in apps} == {project["metadata"]["name"]}
    assert project["metadata"]["namespace"] == "argocd"
    spec = project["spec"]
    assert spec["sourceRepos"] == ["https://git.example.com/mini.git"]
    objs = [o for unit in units.values() for o in unit]
    emitted = {group_kind(o) for o in objs if "namespace" not in o["metadata"]}
    allowed = {(w["group"], w["kind"]) for w in spec["clusterResourceWhitelist"]}
    assert allowed == emitted
    # Cluster-scoped as their definitions say: Node, Namespace and RBAC (the AMD exporter's) in
    # Kubernetes; Kueue's
    # ClusterQueue and ResourceFlavor (config/components/crd/bases, scope: Cluster, v0.17.0).
    assert allowed == {
        ("", "Namespace"),
        ("", "Node"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("kueue.x-k8s.io", "ClusterQueue"),
        ("kueue.x-k8s.io", "ResourceFlavor"),
    }
    destinations = {(d["server"], d["namespace"]) for d in spec["destinations"]}
    server = "https://kubernetes.default.svc"
    assert destinations == {
        (server, o["metadata"]["namespace"]) for o in objs if "namespace" in o["metadata"]
    }
    for app in apps:
        dest = app["spec"]["destination"]
        assert (dest["server"], dest["namespace"]) in destinations


def test_a_volcano_fleet_allows_its_queues(tmp_path: Path) -> None:
    fleet = PROD_FLEET + "scheduling: {backend: volcano}\n"
    values_dir = tree(
        tmp_path, {"vendors/nvidia.yaml": POOL, "teams/ml.yaml": TEAM}, fleet=fleet, defaults=False
    )
    argocd = build_unit(render_into(values_dir, tmp_path / "out"), "prod", "argocd")
    allowed = {
        (w["group"], w["kind"])
        for w in find(argocd, "AppProject")["spec"]["clusterResourceWhitelist"]
    }
    # scheduling.volcano.sh Queue: +kubebuilder:resource scope=Cluster (volcano.sh/apis v1.14.0).
    assert ("scheduling.volcano.sh", "Queue") in allowed
    assert ("kueue.x-k8s.io", "ClusterQueue") not in allowed


def test_team_namespaces_are_never_pruned_or_cascade_deleted(tmp_path: Path) -> None:
    values_dir = tree(
        tmp_path,
        {"vendors/nvidia.yaml": POOL, "teams/ml.yaml": TEAM},
        fleet=PROD_FLEET,
        defaults=False,
    )
    objs = build_unit(render_into(values_dir, tmp_path / "out"), "prod", "team-ml")
    ns = find(objs, "Namespace", "ml")
    options = ns["metadata"]["annotations"]["argocd.argoproj.io/sync-options"].split(",")
    assert "Prune=false" in options and "Delete=false" in options
    # What the team's Application owns besides is deleted with it: only the Namespace opts out.
    quota = find(objs, "ResourceQuota")
    assert "argocd.argoproj.io/sync-options" not in quota["metadata"]["annotations"]


def test_destination_server_moves_the_units_not_the_root_application(tmp_path: Path) -> None:
    remote = "https://gpu-cluster.example.com:6443"
    fleet = PROD_FLEET + f"argocd: {{destinationServer: '{remote}'}}\n"
    values_dir = tree(tmp_path, {"vendors/nvidia.yaml": POOL}, fleet=fleet, defaults=False)
    argocd = build_unit(render_into(values_dir, tmp_path / "out"), "prod", "argocd")
    apps = {
        a["metadata"]["name"]: a["spec"]["destination"]
        for a in argocd
        if a["kind"] == "Application"
    }
    assert apps.pop("mini-prod-root") == {
        "server": "https://kubernetes.default.svc",
        "namespace": "argocd",
    }
    assert apps and {d["server"] for d in apps.values()} == {remote}
    destinations = find(argocd, "AppProject")["spec"]["destinations"]
    assert {"server": "https://kubernetes.default.svc", "namespace": "argocd"} in destinations
    assert {"server": remote, "namespace": "accelerator-plugins"} in destinations


def test_the_project_syncs_before_the_applications_that_name_it(tmp_path: Path) -> None:
    values_dir = tree(tmp_path, {"vendors/nvidia.yaml": POOL}, fleet=PROD_FLEET, defaults=False)
    argocd = build_unit(render_into(values_dir, tmp_path / "out"), "prod", "argocd")
    wave = {
        o["kind"] + "/" + o["metadata"]["name"]: int(
            o["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]
        )
        for o in argocd
    }
    project = wave.pop("AppProject/mini")
    assert all(project < w for w in wave.values())
