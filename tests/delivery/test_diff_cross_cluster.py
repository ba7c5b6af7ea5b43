"""`diff`'s traffic-moves flag for a service across clusters (docs/gitops.md, "Risky changes"): a
weight change in the ingress cluster's HTTPRoute over ServiceImports, and in the environment's
traffic file (routing external), is a traffic move said in words."""

from __future__ import annotations

import json
from pathlib import Path

from generator.delivery.diff import (
    Risk,
    against_ref,
    between_envs,
    compare_objects,
    traffic_diffs,
)
from generator.render.layout import render_tree
from generator.values import loader
from tests import repos
from tests.fixtures import (
    CROSS_EXTERNAL,
    CROSS_FLEET,
    Obj,
    cli_streams,
    cross_clusters,
    team_objects,
)


def _unit(values_dir: Path, layer: str) -> dict[tuple[str, str, str, str], Obj]:
    view = loader.load(values_dir).envs[layer]
    [team] = [t for t in view.teams if t.name == "inference"]
    objs = team_objects(view, team)[0]
    return {
        (o["apiVersion"], o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
        for o in objs
    }


def test_a_weight_change_of_the_route_over_imports_moves_traffic(tmp_path: Path) -> None:
    """The ingress cluster (main) runs one of the two tracks: the move is said over both."""
    old = _unit(cross_clusters(tmp_path / "a", phase="shift-10"), "prod/main")
    new = _unit(cross_clusters(tmp_path / "b", phase="shift-30"), "prod/main")
    [route] = compare_objects("prod/main", "team-inference", old, new)
    assert route.title == "HTTPRoute inference/chat"
    assert route.risks == [
        Risk(
            "traffic-moves",
            "ascend track: 10% -> 30% of traffic; nvidia track: 90% -> 70% of traffic",
        )
    ]


def test_the_route_of_an_ingress_cluster_without_a_track(tmp_path: Path) -> None:
    edge = "  edge:\n    destination: {name: edge}\n    pools: [cambricon]\n"
    cross = (
        "    crossCluster:\n      routing: gateway\n      ingressCluster: edge\n"
        "      gateway: {parentRefs: [{name: gw, namespace: gw}]}\n"
    )
    files = {
        "vendors/cambricon.yaml": "pools:\n  - {name: m, model: MLU370, devicesPerNode: 8, "
        "nodes: [m1]}\ndevicePlugin: {image: r/p, version: v1}\n"
        "exporter: {daemonSet: {image: r/e}}\n"
    }
    old, new = (
        _unit(
            cross_clusters(tmp_path / d, phase=p, cross=cross, clusters=edge, files=files),
            "prod/edge",
        )
        for d, p in (("a", "primary-new"), ("b", "fallback"))
    )
    assert compare_objects("prod/edge", "team-inference", old, new) == []
    old = _unit(
        cross_clusters(tmp_path / "c", phase="dual-run", cross=cross, clusters=edge, files=files),
        "prod/edge",
    )
    [route] = compare_objects("prod/edge", "team-inference", old, new)
    assert route.risks == [
        Risk(
            "traffic-moves",
            "ascend track: 0% -> 100% of traffic; nvidia track: 100% -> 0% of traffic",
        )
    ]


def test_a_weight_change_in_the_traffic_file_moves_traffic(tmp_path: Path) -> None:
    old, new = (
        render_tree(loader.load(cross_clusters(tmp_path / d, phase=p, cross=CROSS_EXTERNAL))).tree
        for d, p in (("a", "validate"), ("b", "shift-10"))
    )
    [d] = traffic_diffs(old, new)
    assert (d.env, d.unit, d.title, d.key[0], d.status) == (
        "prod",
        "traffic",
        "LoadBalancerSplit inference/chat",
        "traffic/prod.json",
        "changed",
    )
    assert d.risks == [
        Risk(
            "traffic-moves",
            "ascend track: 0% -> 10% of traffic (1 -> 2 replicas); nvidia track: 100% -> 90% of "
            "traffic",
        )
    ]
    assert traffic_diffs(old, new, "staging") == []
    key = ("traffic/prod.json", "LoadBalancerSplit", "inference", "chat")
    entry = json.loads(new["traffic/prod.json"])["services"][0]
    [added] = traffic_diffs({}, new, "prod/main")
    assert (added.env, added.unit, added.key, added.status, added.obj, added.risks) == (
        "prod", "traffic", key, "added", entry, [Risk("traffic-moves", "a new split")]
    )  # fmt: skip
    [gone] = traffic_diffs(new, {})
    assert (gone.env, gone.unit, gone.key, gone.status, gone.obj, gone.risks) == (
        "prod", "traffic", key, "removed", entry, [Risk("traffic-moves", "the split is deleted")]
    )  # fmt: skip
    # Two services, the first the same on both sides: the second's change is still said.
    first = {**entry, "service": "a-first"}
    two_old = {"traffic/prod.json": json.dumps({"services": [first, entry]})}
    two_new = {"traffic/prod.json": json.dumps({"services": [first, {**entry, "phase": "x"}]})}
    [changed] = traffic_diffs(two_old, two_new)
    assert (changed.key, changed.status) == (key, "changed")
    # Two environments' files: each said; --env picks its environment's, whichever comes first.
    both_old = {**two_old, "traffic/staging.json": two_old["traffic/prod.json"]}
    both_new = {**two_new, "traffic/staging.json": two_new["traffic/prod.json"]}
    assert [(x.env, x.key[0]) for x in traffic_diffs(both_old, both_new)] == [
        ("prod", "traffic/prod.json"),
        ("staging", "traffic/staging.json"),
    ]
    assert [x.env for x in traffic_diffs(both_old, both_new, "staging")] == ["staging"]


def test_against_ref_reads_the_committed_traffic_file(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    values_dir = cross_clusters(repo / "fleet", phase="validate", cross=CROSS_EXTERNAL)
    assert cli_streams("render", "--values", str(values_dir))[0] == 0
    assert (repo / "fleet/traffic/prod.json").is_file()
    repos.init(repo)
    repos.commit_all(repo, "fleet")
    team = values_dir / "teams/inference.yaml"
    team.write_text(team.read_text().replace("phase: validate", "phase: shift-10"))
    got = against_ref(values_dir, "main", "prod")
    moves = [(d.unit, d.title, r.message) for d in got.objects for r in d.risks]
    assert (
        "traffic",
        "LoadBalancerSplit inference/chat",
        "ascend track: 0% -> 10% of traffic (1 -> 2 replicas); nvidia track: 100% -> 90% of "
        "traffic",
    ) in moves


# Staging as two clusters too, its own destinations, the service a phase ahead of prod's.
STAGED_FLEET = CROSS_FLEET.replace("environments: [prod]", "environments: [staging, prod]")
STAGING = """\
clusters:
  main:
    destination: {server: https://main-staging.example.com:6443}
    pools: [nvidia]
  domestic:
    destination: {name: domestic-staging}
    pools: [ascend]
teams:
  inference:
    services:
      chat: {phase: shift-30}
"""
MOVE = "ascend track: 30% -> 0% of traffic (2 -> 1 replicas); nvidia track: 70% -> 100% of traffic"


def test_diff_between_environments_compares_their_traffic_files(tmp_path: Path) -> None:
    """`diff staging prod`: the global load balancer's split is each environment's (its
    traffic file, in no unit), compared entry by entry as a traffic move; two clusters of one
    environment share the file, so `diff prod/main prod/domestic` says nothing of it."""
    values_dir = cross_clusters(
        tmp_path,
        phase="validate",
        cross=CROSS_EXTERNAL,
        fleet=STAGED_FLEET,
        files={"environments/staging.yaml": STAGING},
    )
    got = between_envs(values_dir, "staging", "prod")
    # cluster by cluster (5 units each side, by name), then the environments' traffic files
    assert got.units == 10
    [chat] = [o for o in got.objects if o.title == "Deployment inference/chat-ascend"]
    assert chat.env == "staging/domestic -> prod/domestic"
    [d] = [o for o in got.objects if o.unit == "traffic"]
    assert (d.env, d.title, d.key[0], d.status) == (
        "staging -> prod",
        "LoadBalancerSplit inference/chat",
        "traffic/staging.json -> traffic/prod.json",
        "changed",
    )
    assert d.risks == [Risk("traffic-moves", MOVE)]
    assert [c.where for c in d.changes] == [
        "phase",
        "tracks[0].destination.server",
        "tracks[0].weight",
        "tracks[1].destination.name",
        "tracks[1].replicas",
        "tracks[1].weight",
    ]
    # One cluster against the other environment: the environments' files still.
    [one] = [
        o for o in between_envs(values_dir, "staging/main", "prod").objects if o.unit == "traffic"
    ]
    assert (one.env, one.risks) == ("staging -> prod", [Risk("traffic-moves", MOVE)])
    assert [o for o in between_envs(values_dir, "prod/main", "prod/domestic").objects
            if o.unit == "traffic"] == []  # fmt: skip
    # The same phase on both sides: the files differ only by the clusters' destinations.
    (values_dir / "environments/staging.yaml").write_text(STAGING.replace("shift-30", "validate"))
    [same] = [o for o in between_envs(values_dir, "staging", "prod").objects if o.unit == "traffic"]
    assert same.risks == []
    code, text = cli_streams("diff", "--values", str(values_dir), "prod", "staging")[:2]
    assert code == 0
    assert "traffic-moves: prod -> staging/traffic LoadBalancerSplit inference/chat" not in text
    (values_dir / "environments/staging.yaml").write_text(STAGING)
    code, text = cli_streams("diff", "--values", str(values_dir), "staging", "prod")[:2]
    assert code == 0
    assert (
        f"traffic-moves: staging -> prod/traffic LoadBalancerSplit inference/chat: {MOVE}\n" in text
    )
