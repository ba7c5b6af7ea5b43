"""How a dual-track service's requests split, read from manifests made for each case, and a
change of the split said once, in words, where the reviewer looks."""

from __future__ import annotations

from typing import Any

from generator.builders.common import identity
from generator.builders.workloads import NAME_LABEL, TRACK_LABEL
from generator.delivery import traffic
from generator.delivery.diff import Risk, compare_objects

Obj = dict[str, Any]


def deployment(track: str, replicas: int | None, service: str = "chat") -> Obj:
    spec: Obj = {
        "selector": {"matchLabels": {NAME_LABEL: service, TRACK_LABEL: track}},
        "template": {"metadata": {"labels": {NAME_LABEL: service, TRACK_LABEL: track}}},
    }
    if replicas is not None:
        spec["replicas"] = replicas
    meta = {"name": f"{service}-{track}", "namespace": "serving"}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec}


def svc(selector: dict[str, str], name: str = "chat") -> Obj:
    meta = {"name": name, "namespace": "serving"}
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": {"selector": selector}}


def http_route(weights: dict[str, int | None]) -> Obj:
    refs = [
        {"name": f"chat-{t}", **({} if w is None else {"weight": w})} for t, w in weights.items()
    ]
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "chat", "namespace": "serving"},
        "spec": {"rules": [{"backendRefs": refs}]},
    }


def virtual_service(weights: dict[str, int | None]) -> Obj:
    route = [
        {"destination": {"host": f"chat-{t}"}, **({} if w is None else {"weight": w})}
        for t, w in weights.items()
    ]
    return {
        "apiVersion": "networking.istio.io/v1",
        "kind": "VirtualService",
        "metadata": {"name": "chat", "namespace": "serving"},
        "spec": {"http": [{"route": route}]},
    }


def unit(*objs: Obj) -> dict[tuple[str, str, str, str], Obj]:
    return {identity(o): o for o in objs}


def split(*objs: Obj) -> dict[str, float]:
    return dict(traffic.splits(unit(*objs))[("serving", "chat")].percent)


ALL = {NAME_LABEL: "chat"}


def test_a_service_over_both_tracks_splits_by_replicas() -> None:
    assert split(deployment("nvidia", 3), deployment("ascend", 1), svc(ALL)) == {
        "nvidia": 75.0,
        "ascend": 25.0,
    }
    # unset replicas is 1, as Kubernetes defaults it
    assert split(deployment("nvidia", 3), deployment("ascend", None), svc(ALL))["ascend"] == 25.0


def test_a_service_pinned_to_a_track_sends_it_everything() -> None:
    pinned = svc({**ALL, TRACK_LABEL: "ascend"})
    assert split(deployment("nvidia", 3), deployment("ascend", 1), pinned) == {
        "nvidia": 0.0,
        "ascend": 100.0,
    }


def test_no_service_no_traffic() -> None:
    other = svc(ALL, name="chat-nvidia")
    assert split(deployment("nvidia", 3), deployment("ascend", 1), other) == {
        "nvidia": 0.0,
        "ascend": 0.0,
    }


def test_a_weighted_route_splits_by_weight_whatever_the_replicas() -> None:
    objs = (deployment("nvidia", 3), deployment("ascend", 1), svc(ALL))
    assert split(*objs, http_route({"nvidia": 9, "ascend": 1})) == {"nvidia": 90.0, "ascend": 10.0}
    # an HTTPRoute backend without a weight has 1 (Gateway API's default)
    assert split(*objs, http_route({"nvidia": 3, "ascend": None})) == {
        "nvidia": 75.0,
        "ascend": 25.0,
    }
    assert split(*objs, virtual_service({"nvidia": 30, "ascend": 70})) == {
        "nvidia": 30.0,
        "ascend": 70.0,
    }
    assert split(*objs, virtual_service({"nvidia": 30, "ascend": None})) == {
        "nvidia": 100.0,
        "ascend": 0.0,
    }
    assert split(*objs, http_route({"nvidia": 0, "ascend": 0})) == {"nvidia": 0.0, "ascend": 0.0}


def test_moves_are_said_in_words_with_the_replicas_that_moved_them() -> None:
    old = unit(deployment("nvidia", 2), deployment("ascend", 2), svc(ALL))
    new = unit(deployment("nvidia", 2), deployment("ascend", 6), svc(ALL))
    assert traffic.moves(old, new) == {
        ("serving", "chat"): "ascend track: 50% -> 75% of traffic (2 -> 6 replicas); "
        "nvidia track: 50% -> 25% of traffic"
    }
    # scaled alike: nothing moves
    same = unit(deployment("nvidia", 4), deployment("ascend", 4), svc(ALL))
    assert traffic.moves(old, same) == {}
    # a service on one side only is not a move (it is added or removed)
    assert traffic.moves(unit(), new) == {} and traffic.moves(new, unit()) == {}


def test_the_diff_says_a_move_once_on_the_service_and_no_move_where_none_is() -> None:
    base = (deployment("nvidia", 2), deployment("ascend", 2))
    old = unit(*base, svc(ALL), http_route({"nvidia": 90, "ascend": 10}))
    scaled = unit(*base, svc(ALL), http_route({"nvidia": 9, "ascend": 1}))
    [route] = compare_objects("prod", "team-x", old, scaled)
    assert route.key[1] == "HTTPRoute" and route.risks == []  # weights scaled: nothing moves
    moved = unit(*base, svc(ALL), http_route({"nvidia": 50, "ascend": 50}))
    [route] = compare_objects("prod", "team-x", old, moved)
    assert route.risks == [
        Risk(
            "traffic-moves",
            "ascend track: 10% -> 50% of traffic; nvidia track: 90% -> 50% of traffic",
        )
    ]


def test_a_replica_change_that_moves_traffic_is_said_on_the_deployment() -> None:
    old = unit(deployment("nvidia", 2), deployment("ascend", 2), svc(ALL))
    new = unit(deployment("nvidia", 2), deployment("ascend", 0), svc(ALL))
    [dep] = compare_objects("prod", "team-x", old, new)
    assert dep.key[3] == "chat-ascend"
    assert [r.code for r in dep.risks] == ["zero-replicas", "traffic-moves"]
    assert dep.risks[1].message == (
        "service chat: ascend track: 50% -> 0% of traffic (2 -> 0 replicas); nvidia track: "
        "50% -> 100% of traffic"
    )


def test_a_selector_change_of_a_service_that_is_no_dual_track_one_keeps_its_field_risk() -> None:
    old = unit(svc({"app": "a"}, name="web"))
    new = unit(svc({"app": "b"}, name="web"))
    [d] = compare_objects("prod", "team-x", old, new)
    assert d.risks == [Risk("traffic-moves", "spec.selector.app: a -> b")]
