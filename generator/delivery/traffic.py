"""How a dual-track service's requests split over its tracks, read from a unit's objects, and a
change of that split said in words ("ascend track: 0% -> 50% of traffic").

Read from the manifests alone, as Kubernetes routes requests: a weighted route (HTTPRoute or
VirtualService named after the service) splits by its backends' weights; otherwise the Service
named after the service balances over the ready pods its selector matches, so each selected
track gets its share of the replicas (the same reading as `plan`'s traffic column).

A service across clusters: the ingress cluster's HTTPRoute splits over the tracks'
ServiceImports, whose Deployments run in other clusters' units (the route's unit may hold one
of them, or none); routed by an external load balancer, the split is an entry of the
environment's traffic file (render/traffic.py), read by `file_split`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from generator.vocab.labels import NAME_LABEL, TRACK_LABEL
from generator.vocab.objects import Obj

Key = tuple[str, str, str, str]  # apiVersion, kind, namespace, name
ServiceKey = tuple[str, str]  # namespace, service name
ROUTE_KINDS = ("HTTPRoute", "VirtualService")


@dataclass(frozen=True)
class Split:
    replicas: Mapping[str, int]
    """Track -> replicas of its Deployment."""
    percent: Mapping[str, float]
    """Track -> percent of the service's requests it gets."""


def _tracks(objects: Mapping[Key, Obj]) -> dict[ServiceKey, dict[str, int]]:
    found: dict[ServiceKey, dict[str, int]] = {}
    for (_, kind, ns, _), obj in objects.items():
        if kind != "Deployment":
            continue
        labels = obj.get("spec", {}).get("template", {}).get("metadata", {}).get("labels", {})
        if NAME_LABEL in labels and TRACK_LABEL in labels:
            # Unset replicas is 1 (kubernetes pkg/apis/apps/v1/defaults.go SetDefaults_Deployment)
            replicas = int(obj["spec"].get("replicas", 1))
            service = (ns, str(labels[NAME_LABEL]))
            found.setdefault(service, {})[str(labels[TRACK_LABEL])] = replicas
    return found


def _route_weights(route: Obj, service: str, tracks: Mapping[str, int]) -> dict[str, float]:
    """Each track's weight in the route: its backend `<service>-<track>`. Both kinds split by
    weight / sum of weights. An HTTPRoute backend without a weight has 1 (source:
    kubernetes-sigs/gateway-api config/crd/standard/gateway.networking.k8s.io_httproutes.yaml
    v1.6.3, backendRefs.weight `default: 1`); Istio's CRD says only "the relative proportion"
    (istio/api kubernetes/customresourcedefinitions.gen.yaml v1.32.0), so a destination without
    one counts 0 here (the generator writes every weight)."""
    spec: dict[str, Any] = route.get("spec", {})
    if route["kind"] == "HTTPRoute":
        backends = [
            (b.get("name"), b.get("weight", 1))
            for rule in spec.get("rules", [])
            for b in rule.get("backendRefs", [])
        ]
    else:
        backends = [
            (d.get("destination", {}).get("host"), d.get("weight", 0))
            for rule in spec.get("http", [])
            for d in rule.get("route", [])
        ]
    weights = {t: 0.0 for t in tracks}
    for name, weight in backends:
        # Every backend `<service>-<track>`: across clusters, a track whose Deployment is in
        # another cluster's unit still takes its weight.
        if str(name).startswith(f"{service}-"):
            track = str(name).removeprefix(f"{service}-")
            weights[track] = weights.get(track, 0.0) + float(weight)
    return weights


def _named(objects: Mapping[Key, Obj], kinds: tuple[str, ...], ns: str, name: str) -> Obj | None:
    return next(
        (o for (_, k, n, m), o in objects.items() if k in kinds and (n, m) == (ns, name)), None
    )


def splits(objects: Mapping[Key, Obj]) -> dict[ServiceKey, Split]:
    """Every dual-track service of a unit and how its requests split."""
    out: dict[ServiceKey, Split] = {}
    found = _tracks(objects)
    for (_, kind, ns, name), obj in objects.items():
        if kind == "HTTPRoute" and _imports(obj):
            found.setdefault((ns, name), {})  # an ingress cluster that runs no track
    for (ns, service), replicas in found.items():
        route = _named(objects, ROUTE_KINDS, ns, service)
        if route is not None:
            shares = _route_weights(route, service, replicas)
        else:
            svc = _named(objects, ("Service",), ns, service)
            selector = (svc or {}).get("spec", {}).get("selector") or {}
            chosen = selector.get(TRACK_LABEL)
            shares = {
                t: float(r) if svc is not None and chosen in (None, t) else 0.0
                for t, r in replicas.items()
            }
        total = sum(shares.values())
        percent = {t: round(100 * s / total, 1) if total else 0.0 for t, s in shares.items()}
        out[(ns, service)] = Split(dict(replicas), percent)
    return out


def _imports(route: Obj) -> bool:
    """Whether an HTTPRoute's backends are ServiceImports (a service across clusters)."""
    return any(
        b.get("kind") == "ServiceImport"
        for rule in route.get("spec", {}).get("rules", [])
        for b in rule.get("backendRefs", [])
    )


def file_split(entry: Mapping[str, Any]) -> Split:
    """The split of a service in a traffic file (render/traffic.py: its tracks' replicas and
    weights, which the global load balancer applies as weight / sum of weights)."""
    tracks = entry.get("tracks") or []
    total = sum(int(t["weight"]) for t in tracks)
    return Split(
        {str(t["vendor"]): int(t["replicas"]) for t in tracks},
        {
            str(t["vendor"]): round(100 * int(t["weight"]) / total, 1) if total else 0.0
            for t in tracks
        },
    )


def _pct(value: float) -> str:
    return f"{value:g}%"


def moves(old: Mapping[Key, Obj], new: Mapping[Key, Obj]) -> dict[ServiceKey, str]:
    """Services whose split changes between two units' objects, each with the change in words."""
    return moves_between(splits(old), splits(new))


def moves_between(
    before: Mapping[ServiceKey, Split], after: Mapping[ServiceKey, Split]
) -> dict[ServiceKey, str]:
    """Services whose split changes, each with the change in words (tracks in name order)."""
    out: dict[ServiceKey, str] = {}
    for key in sorted(set(before) & set(after)):
        a, b = before[key], after[key]
        parts = []
        for track in sorted(set(a.percent) | set(b.percent)):
            was, now = a.percent.get(track, 0.0), b.percent.get(track, 0.0)
            if was == now:
                continue
            said = f"{track} track: {_pct(was)} -> {_pct(now)} of traffic"
            ra, rb = a.replicas.get(track, 0), b.replicas.get(track, 0)
            if ra != rb:
                said += f" ({ra} -> {rb} replicas)"
            parts.append(said)
        if parts:
            out[key] = "; ".join(parts)
    return out
