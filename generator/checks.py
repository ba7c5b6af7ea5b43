"""Fleet policy checks on resolved values: one registry, each check with a code and a line.

Checks run on the base layer and on every environment; a finding seen in several layers is
reported once. Other modules add checks with the `check` decorator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .capacity import quota_totals
from .errors import Finding, Severity
from .model import FleetView, Team, Values, Vendor
from .yamlio import json_path

CheckFn = Callable[[FleetView], Iterable[Finding]]


@dataclass(frozen=True)
class Check:
    code: str
    summary: str
    fn: CheckFn


REGISTRY: dict[str, Check] = {}


def check(code: str, summary: str) -> Callable[[CheckFn], CheckFn]:
    def register(fn: CheckFn) -> CheckFn:
        if code in REGISTRY:
            raise ValueError(f"check code {code} registered twice")
        REGISTRY[code] = Check(code, summary, fn)
        return fn

    return register


def run_checks(values: Values) -> list[Finding]:
    out: dict[tuple[object, ...], Finding] = {}
    for view in (values.base, *values.envs.values()):
        for chk in REGISTRY.values():
            for finding in chk.fn(view):
                # The same finding at the same place in several layers is reported once.
                out.setdefault((finding.code, finding.location, finding.path), finding)
    return list(out.values())


def where(view: FleetView) -> str:
    """' in environment 'prod'' for an environment's view, '' for the base layer."""
    return f" in environment {view.env!r}" if view.env else ""


@check("REF001", "a team's quota names a vendor that the fleet does not have")
def unknown_vendor(view: FleetView) -> Iterable[Finding]:
    known = {v.id for v in view.vendors}
    for team in view.teams:
        for vendor_id in team.quota:
            if vendor_id not in known:
                path = ("quota", vendor_id)
                yield Finding(
                    "REF001",
                    f"quota names vendor {vendor_id!r}, which has no enabled "
                    f"values/vendors/{vendor_id}.yaml{where(view)}",
                    team.doc.locate(path, key=True),
                    json_path(path),
                    "known vendors: " + (", ".join(sorted(known)) or "none"),
                )


@check("CAP001", "team quotas for a vendor add up to more devices than its pools hold")
def quota_capacity(view: FleetView) -> Iterable[Finding]:
    for totals in quota_totals(view):
        vendor, parts, total = totals.vendor, totals.parts, totals.total
        if not totals.overcommitted:
            continue
        team, _ = max(parts, key=lambda p: (p[1], p[0].name))
        detail = ", ".join(f"{t.name} {n}" for t, n in parts)
        path = ("quota", vendor.id)
        message = (
            f"quotas for {vendor.id} ({vendor.resource_name}) add up to {total} devices "
            f"({detail}) but its pools hold {vendor.capacity}{where(view)}"
        )
        if view.fleet.allow_overcommit:
            yield Finding(
                "CAP001",
                message + " (overcommit allowed by capacity.allowOvercommit)",
                team.doc.locate(path),
                json_path(path),
                severity=Severity.WARNING,
            )
            continue
        yield Finding(
            "CAP001",
            message,
            team.doc.locate(path),
            json_path(path),
            "lower the quotas, add nodes to the vendor's pools, or set "
            "capacity.allowOvercommit: true in values/fleet.yaml",
        )


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


@check("RES001", "two vendors advertise one resource name and selectors cannot tell them apart")
def shared_resource(view: FleetView) -> Iterable[Finding]:
    for vendor in view.vendors:
        for other in view.vendors_for_resource(vendor.resource_name):
            if other.id == vendor.id:
                continue
            clash = [p for p in other.pools if _selects(vendor.selector, p.labels)]
            if clash:
                key, value = next(iter(vendor.selector.items()))
                yield Finding(
                    "RES001",
                    f"{vendor.id} and {other.id} both advertise {vendor.resource_name}, and "
                    f"{vendor.id}'s selector {key}={value} also matches {other.id}'s pool "
                    f"{clash[0].name!r}{where(view)}",
                    vendor.doc.locate(("nodeLabels", key)),
                    json_path(("nodeLabels", key)),
                    f"give the two vendors different {key} values in nodeLabels",
                )


@check("RES002", "a team has quota for two vendors that share one resource name")
def shared_quota(view: FleetView) -> Iterable[Finding]:
    for team in view.teams:
        by_resource: dict[str, list[Vendor]] = {}
        for vendor in view.vendors:
            if team.quota.get(vendor.id):
                by_resource.setdefault(vendor.resource_name, []).append(vendor)
        for resource, vendors in sorted(by_resource.items()):
            if len(vendors) > 1:
                ids = [v.id for v in vendors]
                path = ("quota", ids[-1])
                yield Finding(
                    "RES002",
                    f"quota for {' and '.join(ids)}, which both advertise {resource}: a "
                    f"ResourceQuota cannot tell them apart{where(view)}",
                    team.doc.locate(path, key=True),
                    json_path(path),
                    "quota one of them, or give one vendor its own resourceName",
                )


@check("NAME003", "a node is listed in two pools")
def node_twice(view: FleetView) -> Iterable[Finding]:
    seen: dict[str, str] = {}
    for vendor in view.vendors:
        for pool in vendor.pools:
            for i, node in enumerate(pool.nodes):
                where = f"{vendor.id}/{pool.name}"
                if node in seen and seen[node] != where:
                    path = ("pools", pool.index, "nodes", i)
                    yield Finding(
                        "NAME003",
                        f"node {node!r} is in pool {where} and in {seen[node]}",
                        vendor.doc.locate(path),
                        json_path(path),
                        "a node belongs to one pool",
                    )
                seen.setdefault(node, where)


@check("NAME004", "two teams claim the same namespace, or a team claims a plugin namespace")
def namespace_twice(view: FleetView) -> Iterable[Finding]:
    from .monitoring.sources import exporter_namespace  # the monitoring package imports this

    plugin_ns = {v.device_plugin.namespace for v in view.vendors} | {exporter_namespace(view)}
    claims: dict[str, list[tuple[Team, int]]] = {}
    for team in view.teams:
        for i, ns in enumerate(team.namespaces):
            claims.setdefault(ns, []).append((team, i))
    for ns, owners in sorted(claims.items()):
        # Point at a team that wrote the namespace out; a default (the team name) has no line.
        explicit = [(t, i) for t, i in owners if t.doc.get("namespaces") is not None]
        team, i = (explicit or owners)[-1]
        path = ("namespaces", i)
        if ns in plugin_ns:
            yield Finding(
                "NAME004",
                f"namespace {ns!r} is a device-plugin or exporter namespace",
                team.doc.locate(path),
                json_path(path),
                "pick another namespace",
            )
        elif len(owners) > 1:
            others = ", ".join(repr(t.name) for t, _ in owners if t is not team)
            yield Finding(
                "NAME004",
                f"namespace {ns!r} is already used by team {others}",
                team.doc.locate(path),
                json_path(path),
                "pick another namespace",
            )


@check("NODE001", "node-patch needs node names, and NFD rules must tell a vendor's pools apart")
def node_config(view: FleetView) -> Iterable[Finding]:
    method = view.fleet.node_config_method
    for vendor in view.vendors:
        unnamed = [p for p in vendor.pools if not p.nodes]
        for pool in unnamed:
            path = ("pools", pool.index)
            if method == "node-patch":
                yield Finding(
                    "NODE001",
                    f"pool {pool.name!r} lists no nodes, so node-patch cannot label "
                    f"it{where(view)}",
                    vendor.doc.locate(path),
                    json_path(path),
                    "list the pool's nodes, or use nodeConfig.method: nfd",
                )
            elif not pool.pci_devices and len(vendor.pools) > 1:
                yield Finding(
                    "NODE001",
                    f"pool {pool.name!r} has neither nodes nor pciDevices, so its NFD "
                    f"rule matches every {vendor.id} node{where(view)}",
                    vendor.doc.locate(path),
                    json_path(path),
                    "list the pool's nodes or its PCI device IDs",
                )


@check("CAP002", "a pool has no nodes and no nodeCount, so it adds no capacity")
def empty_pool(view: FleetView) -> Iterable[Finding]:
    for vendor in view.vendors:
        for pool in vendor.pools:
            if pool.node_count == 0:
                path = ("pools", pool.index)
                yield Finding(
                    "CAP002",
                    f"pool {pool.name!r} has no nodes and no nodeCount, so it adds no "
                    f"capacity{where(view)}",
                    vendor.doc.locate(path),
                    json_path(path),
                    "list its nodes or set nodeCount",
                    Severity.WARNING,
                )


@check("NAME005", "a generated Argo CD Application name is longer than 63 characters")
def app_name_length(view: FleetView) -> Iterable[Finding]:
    if not view.env:
        return
    for team in view.teams:
        name = f"{view.fleet.name}-{view.env}-team-{team.name}"
        if len(name) > 63:
            yield Finding(
                "NAME005",
                f"Application name {name!r} is {len(name)} characters; Argo CD's "
                "tracking label allows 63",
                view.fleet.doc.locate(("name",)),
                "$.name",
                "shorten the fleet, environment or team name",
            )
