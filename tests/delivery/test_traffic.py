"""How a dual-track service's requests split, read from manifests made for each case, and a
change of the split said once, in words, where the reviewer looks."""

from __future__ import annotations

from typing import Any

from generator.delivery import traffic
from generator.delivery.diff import Risk, compare_objects
from generator.vocab.labels import NAME_LABEL, TRACK_LABEL
from generator.vocab.objects import identity

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


def test_objects_that_are_no_track_of_a_service_are_left_out() -> None:
    stray = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "v", "namespace": "serving"},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "x", "namespace": "serving"},
            "spec": {},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "y", "namespace": "serving"},
            "spec": {"template": {}},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "z", "namespace": "serving"},
            "spec": {"template": {"metadata": {}}},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "w", "namespace": "serving"},
            "spec": {"template": {"metadata": {"labels": {NAME_LABEL: "chat"}}}},
        },
    ]
    assert traffic.splits(unit(*stray)) == {}
    assert split(deployment("nvidia", 1), *stray, svc(ALL)) == {"nvidia": 100.0}


def test_route_weights_add_up_over_rules_and_skip_what_names_no_track() -> None:
    objs = (deployment("nvidia", 1), deployment("ascend", 1))
    two_rules = http_route({"nvidia": 1, "ascend": 1})
    two_rules["spec"]["rules"].append({"backendRefs": [{"name": "chat-ascend", "weight": 2}]})
    two_rules["spec"]["rules"].append({"matches": []})  # no backends
    assert split(*objs, two_rules) == {"nvidia": 25.0, "ascend": 75.0}
    vs = virtual_service({"nvidia": 1, "ascend": 1})
    vs["spec"]["http"] += [{"route": [{"weight": 5}]}, {"match": []}]  # no destination; no route
    assert split(*objs, vs) == {"nvidia": 50.0, "ascend": 50.0}
    for empty in ({**http_route({}), "spec": {}}, {**virtual_service({}), "spec": {}}):
        assert split(*objs, {k: v for k, v in empty.items() if k != "spec"}) == {
            "nvidia": 0.0,
            "ascend": 0.0,
        }


def test_a_track_on_one_side_only_moves_from_or_to_nothing() -> None:
    old = unit(deployment("nvidia", 3), deployment("ascend", 1), svc(ALL))
    new = unit(deployment("nvidia", 3), deployment("ascend", 1), deployment("hygon", 1), svc(ALL))
    assert traffic.moves(old, new) == {
        ("serving", "chat"): "ascend track: 25% -> 20% of traffic; hygon track: 0% -> 20% of "
        "traffic (0 -> 1 replicas); nvidia track: 75% -> 60% of traffic"
    }
    assert traffic.moves(new, old)[("serving", "chat")].startswith(
        "ascend track: 20% -> 25% of traffic; hygon track: 20% -> 0% of traffic (1 -> 0 replicas)"
    )


def test_an_unchanged_track_does_not_hide_the_ones_after_it() -> None:
    old = unit(deployment("a", 2), deployment("b", 1), deployment("c", 1), svc(ALL))
    new = unit(deployment("a", 2), deployment("b", 2), deployment("c", 0), svc(ALL))
    assert traffic.moves(old, new) == {
        ("serving", "chat"): "b track: 25% -> 50% of traffic (1 -> 2 replicas); c track: 25% -> "
        "0% of traffic (1 -> 0 replicas)"
    }


def test_the_move_goes_on_the_services_own_service_and_nothing_else_loses_its_risks() -> None:
    base = (deployment("nvidia", 2), deployment("ascend", 2))
    track_svc = svc({**ALL, TRACK_LABEL: "nvidia"}, name="chat-nvidia")
    other_ns = {**svc({"app": "a"}, name="chat"), "metadata": {"name": "chat", "namespace": "x"}}
    note = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "chat", "namespace": "serving"},
    }
    old = unit(*base, svc(ALL), track_svc, other_ns, {**note, "data": {"a": "1"}})
    new_other = {**other_ns, "spec": {"selector": {"app": "b"}}}
    new_track = {**track_svc, "spec": {"selector": {**ALL, TRACK_LABEL: "nvidia"}, "x": 1}}
    new = unit(
        *base,
        svc({**ALL, TRACK_LABEL: "ascend"}),
        new_track,
        new_other,
        {**note, "data": {"a": "2"}},
    )
    diffs = {(d.key[1], d.key[2], d.key[3]): d for d in compare_objects("prod", "u", old, new)}
    assert diffs[("Service", "serving", "chat")].risks == [
        Risk(
            "traffic-moves",
            "ascend track: 50% -> 100% of traffic; nvidia track: 50% -> 0% of traffic",
        )
    ]
    assert diffs[("Service", "serving", "chat-nvidia")].risks == []
    assert diffs[("ConfigMap", "serving", "chat")].risks == []
    assert diffs[("Service", "x", "chat")].risks == [
        Risk("traffic-moves", "spec.selector.app: a -> b")
    ]


def test_a_service_that_does_not_move_keeps_no_move_and_the_next_one_still_does() -> None:
    a = (deployment("nvidia", 1, "a"), deployment("ascend", 1, "a"))
    b = (deployment("nvidia", 1, "b"), deployment("ascend", 1, "b"))
    old = unit(*a, svc({NAME_LABEL: "a"}, "a"), *b, svc({NAME_LABEL: "b"}, "b"))
    scaled = (deployment("nvidia", 2, "a"), deployment("ascend", 2, "a"))
    new = unit(
        *scaled, svc({NAME_LABEL: "a"}, "a"), *b, svc({NAME_LABEL: "b", TRACK_LABEL: "nvidia"}, "b")
    )
    risks = {d.key[3]: d.risks for d in compare_objects("prod", "u", old, new)}
    assert risks["a-nvidia"] == [] and risks["a-ascend"] == []
    assert risks["b"] == [
        Risk(
            "traffic-moves",
            "ascend track: 50% -> 0% of traffic; nvidia track: 50% -> 100% of traffic",
        )
    ]


def test_a_new_service_keeps_the_risk_of_its_new_route() -> None:
    new = unit(deployment("nvidia", 1), svc(ALL), http_route({"nvidia": 1}))
    diffs = {d.key[1]: d for d in compare_objects("prod", "u", unit(), new)}
    assert diffs["HTTPRoute"].risks == [Risk("traffic-moves", "a new route")]


def test_percent_has_one_decimal() -> None:
    assert split(deployment("nvidia", 1), deployment("ascend", 2), svc(ALL)) == {
        "nvidia": 33.3,
        "ascend": 66.7,
    }
