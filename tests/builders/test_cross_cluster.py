"""A dual-track service across clusters (docs/multi-cluster.md, "Moving a service across
clusters"): each cluster renders its own track and exports its Service; the ingress cluster
routes between the tracks' ServiceImports with the phase's weights (Gateway API v1.6.3
geps/gep-1748); no cluster renders a Service over both tracks.

The objects are written out by hand and compared as JSON text, as tests/builders/
test_workloads_services.py does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from generator.values import loader
from tests.fixtures import CAMBRICON_MLU370, CROSS_EXTERNAL, Obj, cross_clusters, team_objects

SOURCE = "accel-gitops.io/source"


def objects(values_dir: Path) -> dict[str, list[Obj]]:
    """Team inference's objects by cluster view (prod/main, prod/domestic, ...)."""
    out = {}
    for key, view in sorted(loader.load(values_dir).envs.items()):
        [team] = [t for t in view.teams if t.name == "inference"]
        out[key] = team_objects(view, team)[0]
    return out


def kinds(objs: list[Obj]) -> list[str]:
    return [f"{o['kind']} {o['metadata']['name']}" for o in objs]


def text(obj: Obj) -> str:
    meta = {k: v for k, v in obj["metadata"].items() if k != "annotations"}
    annotations = {k: v for k, v in (obj["metadata"].get("annotations") or {}).items()}
    annotations.pop(SOURCE, None)
    if annotations:
        meta["annotations"] = annotations
    return json.dumps({**obj, "metadata": meta})


LABELS = (
    '{"app.kubernetes.io/managed-by": "accel-gitops", "accel-gitops.io/team": "inference", '
    '"app.kubernetes.io/name": "chat"'
)


def test_each_cluster_renders_its_track_and_exports_it_the_ingress_routes_over_imports(
    tmp_path: Path,
) -> None:
    got = objects(cross_clusters(tmp_path, phase="shift-30"))
    assert sorted(got) == ["prod/domestic", "prod/main"]
    assert kinds(got["prod/main"]) == [
        "Deployment chat-nvidia",
        "Service chat-nvidia",
        "ServiceExport chat-nvidia",
        "PodDisruptionBudget chat-nvidia",
        "HTTPRoute chat",
    ]
    assert kinds(got["prod/domestic"]) == [
        "Deployment chat-ascend",
        "Service chat-ascend",
        "ServiceExport chat-ascend",
        "PodDisruptionBudget chat-ascend",
    ]
    route = got["prod/main"][-1]
    assert text(route) == (
        '{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": '
        '{"name": "chat", "namespace": "inference", "labels": ' + LABELS + "}}, "
        '"spec": {"parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", '
        '"name": "gw", "namespace": "gw"}], "hostnames": ["chat.example.com"], "rules": '
        '[{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "backendRefs": ['
        '{"group": "multicluster.x-k8s.io", "kind": "ServiceImport", "name": "chat-nvidia", '
        '"port": 8000, "weight": 70}, '
        '{"group": "multicluster.x-k8s.io", "kind": "ServiceImport", "name": "chat-ascend", '
        '"port": 8000, "weight": 30}]}]}}'
    )
    export = got["prod/domestic"][2]
    assert text(export) == (
        '{"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceExport", "metadata": '
        '{"name": "chat-ascend", "namespace": "inference", "labels": ' + LABELS + ", "
        '"accel-gitops.io/track": "ascend", "accel-gitops.io/vendor": "ascend"}}}'
    )


@pytest.mark.parametrize(
    ("phase", "replicas", "weights"),
    [
        ("validate", {"prod/main": 2, "prod/domestic": 1}, [100, 0]),
        ("dual-run", {"prod/main": 2, "prod/domestic": 2}, [100, 0]),
        ("shift-10", {"prod/main": 2, "prod/domestic": 2}, [90, 10]),
        ("primary-new", {"prod/main": 2, "prod/domestic": 2}, [0, 100]),
        ("fallback", {"prod/main": 1, "prod/domestic": 2}, [0, 100]),
    ],
)
def test_each_phase_gives_each_cluster_its_track_s_replicas_and_the_route_its_weights(
    tmp_path: Path, phase: str, replicas: dict[str, int], weights: list[int]
) -> None:
    got = objects(cross_clusters(tmp_path, phase=phase))
    assert {
        key: [o["spec"]["replicas"] for o in objs if o["kind"] == "Deployment"]
        for key, objs in got.items()
    } == {key: [n] for key, n in replicas.items()}
    [route] = [o for o in got["prod/main"] if o["kind"] == "HTTPRoute"]
    assert [r["weight"] for r in route["spec"]["rules"][0]["backendRefs"]] == weights


def test_an_ingress_cluster_without_a_track_holds_the_route_alone(tmp_path: Path) -> None:
    # Cluster edge holds Cambricon, which chat does not use.
    edge = "  edge:\n    destination: {name: edge}\n    pools: [cambricon]\n"
    cross = CROSS_EXTERNAL.replace(
        "routing: external\n      hostname: chat.example.com",
        "routing: gateway\n      ingressCluster: edge\n"
        "      gateway: {parentRefs: [{name: gw, namespace: gw}]}",
    )
    got = objects(
        cross_clusters(
            tmp_path, cross=cross, clusters=edge, files={"vendors/cambricon.yaml": CAMBRICON_MLU370}
        )
    )
    assert kinds(got["prod/edge"]) == ["HTTPRoute chat"]
    assert "HTTPRoute chat" not in kinds(got["prod/main"])


def test_routing_external_renders_the_tracks_and_no_route(tmp_path: Path) -> None:
    got = objects(cross_clusters(tmp_path, cross=CROSS_EXTERNAL))
    assert kinds(got["prod/main"]) == [
        "Deployment chat-nvidia",
        "Service chat-nvidia",
        "ServiceExport chat-nvidia",
        "PodDisruptionBudget chat-nvidia",
    ]
    assert kinds(got["prod/domestic"])[0] == "Deployment chat-ascend"


def test_the_base_layer_without_clusters_splits_inside_one_cluster(tmp_path: Path) -> None:
    """crossCluster is used only where the tracks are in different clusters: the base layer
    (one cluster) routes by the in-cluster gateway over the tracks' Services."""
    view = loader.load(cross_clusters(tmp_path)).base
    [team] = view.teams
    objs = team_objects(view, team)[0]
    assert "Service chat" in kinds(objs) and "ServiceExport chat-nvidia" not in kinds(objs)
    [route] = [o for o in objs if o["kind"] == "HTTPRoute"]
    assert [(r["kind"], r["name"]) for r in route["spec"]["rules"][0]["backendRefs"]] == [
        ("Service", "chat-nvidia"),
        ("Service", "chat-ascend"),
    ]
