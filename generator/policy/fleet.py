"""Fleet checks on resolved values: references, capacity, names, node configuration, versions.

Each is a `Check` (policy/checks.py) listed in CHECKS below and in policy/registry.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from generator.builders import argocd, scheduling
from generator.builders.monitoring.sources import MonitoringError
from generator.builders.node_config import device_twins
from generator.findings import Finding, Location, Severity
from generator.policy.capacity import VendorQuota, pool_lines, quota_line, quota_totals
from generator.policy.checks import EITHER, NO_TEAM, PER_TEAM, WARNING, Check
from generator.policy.context import Context
from generator.toolchain import schemas
from generator.values import clusters
from generator.values.loader import missing_vendor_hint
from generator.values.model import FleetView, Pool, Team, Vendor
from generator.values.quantity import format_quantity, parse_quantity
from generator.values.yamlio import json_path
from generator.vocab.labels import VENDOR_LABEL
from generator.vocab.objects import identity


def unknown_vendor(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    known = {v.id for v in view.vendors}
    for team in view.teams:
        for vendor_id in team.quota:
            # A vendor whose values were refused has its own findings (FleetView.refused).
            if vendor_id not in known and vendor_id not in view.refused:
                path = ("quota", vendor_id)
                yield Finding(
                    "REF001",
                    f"quota names vendor {vendor_id!r}, which has no enabled "
                    f"values/vendors/{vendor_id}.yaml",
                    team.doc.locate(path, key=True),
                    json_path(path),
                    missing_vendor_hint(vendor_id, known),
                )


def quota_capacity(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    for totals in quota_totals(view):
        vendor, parts, total = totals.vendor, totals.parts, totals.total
        if not totals.overcommitted or _only_too_large(totals):
            continue
        team, _ = max(parts, key=lambda p: (p[1], p[0].name))
        detail = ", ".join(f"{t.name} {n}" for t, n in parts)
        others = [quota_line(view, t, vendor.id) for t, n in parts if n and t is not team]
        message = (
            f"quotas for {vendor.id} ({vendor.resource_name}) add up to {total} {vendor.units} "
            f"({detail}) but its pools hold {vendor.capacity}"
        )
        suffix, hint, severity = _overcommit_verdict(view, vendor.capacity, total)
        also = (*others, *pool_lines(vendor))
        yield Finding.at(
            "CAP001",
            message + suffix,
            quota_line(view, team, vendor.id),
            hint,
            severity=severity,
            also=also,
        )


def _only_too_large(totals: VendorQuota) -> bool:
    """Whether the sum is over the pools only by quotas that are each over them alone: CAP003
    asks for each of those to be lowered to the pools, and then the sum fits, so CAP001 would
    be the same mistake said twice."""
    capacity = totals.capacity
    if not capacity:
        return False  # CAP003 says nothing of a vendor without nodes yet
    capped = sum(
        min(team.quota.get(totals.vendor.id, 0), capacity) * len(team.namespaces)
        for team, _ in totals.parts
    )
    return capped <= capacity


def _overcommit_verdict(view: FleetView, capacity: int, total: int) -> tuple[str, str, Severity]:
    """(message suffix, hint, severity) of quotas that add up to `total` on `capacity` devices:
    a warning within capacity.overcommitRatio (or with allowOvercommit), else an error."""
    ratio = view.fleet.overcommit_ratio
    if ratio is not None:
        bound = int(ratio * capacity)
        if total <= bound:
            return (
                f" (within capacity.overcommitRatio {ratio:g}: up to {bound})",
                "",
                Severity.WARNING,
            )
        return (
            f", more than capacity.overcommitRatio {ratio:g} allows ({bound})",
            "lower the quotas, add nodes to the vendor's pools, or raise capacity.overcommitRatio",
            Severity.ERROR,
        )
    if view.fleet.allow_overcommit:
        return " (overcommit allowed by capacity.allowOvercommit)", "", Severity.WARNING
    return (
        "",
        "lower the quotas, add nodes to the vendor's pools, or allow a bounded overcommit "
        "with capacity.overcommitRatio (e.g. 1.5) in values/fleet.yaml",
        Severity.ERROR,
    )


def team_quota_capacity(ctx: Context) -> Iterable[Finding]:
    """One team's quota above what its cluster's pools hold can never be used whole: a typo, or
    a quota placed in the wrong cluster. No overcommit setting allows it."""
    view = ctx.view
    for vendor in view.vendors:
        if not vendor.capacity:
            continue  # a pool without nodes yet: CAP002 says so
        for team in view.teams:
            if team.models.get(vendor.id):
                yield from _model_capacity(view, team, vendor)
                continue
            quota = team.quota.get(vendor.id, 0)
            if quota <= vendor.capacity:
                continue
            yield Finding.at(
                "CAP003",
                # The cluster is the finding's layer, named by its text (Finding.text).
                f"team {team.name}: quota of {quota} {vendor.id} {vendor.units} per namespace, but "
                f"the vendor's pools hold {vendor.capacity}",
                quota_line(view, team, vendor.id),
                f"lower it to at most {vendor.capacity}, or add nodes to {vendor.id}'s pools",
                also=pool_lines(vendor),
            )


def _model_capacity(view: FleetView, team: Team, vendor: Vendor) -> Iterable[Finding]:
    """CAP003 of a quota per model: each model against its own pools (a model no pool has is
    RES003's). Within each model, the vendor's sum is within the vendor's pools too."""
    for model, quota in team.models[vendor.id].items():
        pools = [p for p in vendor.pools if p.model.casefold() == model.casefold()]
        held = sum(p.capacity for p in pools)
        if not pools or quota <= held:
            continue
        yield Finding.at(
            "CAP003",
            f"team {team.name}: quota of {quota} {vendor.id} {pools[0].model} {vendor.units} per "
            # The cluster is the finding's layer, named by its text (Finding.text).
            f"namespace, but the vendor's {pools[0].model} pools hold {held}",
            team.doc.place(("quota", vendor.id, model)),
            f"lower it to at most {held}, or add nodes to {vendor.id}'s {pools[0].model} pools",
            also=tuple(vendor.doc.place(("pools", p.index)) for p in pools),
        )


def shared_resource(ctx: Context) -> Iterable[Finding]:
    for clash in ctx.clashes():
        vendor, other = clash.vendor, clash.other
        key, value = next(iter(vendor.selector.items()))
        yield Finding(
            "RES001",
            f"{vendor.id} and {other.id} both advertise {vendor.resource_name}, and "
            f"{vendor.id}'s selector {key}={value} also matches {other.id}'s pool "
            f"{clash.pool.name!r}",
            vendor.doc.locate(("nodeLabels", key)),
            json_path(("nodeLabels", key)),
            f"give the two vendors different {key} values in nodeLabels",
        )


# Kueue tells vendors of one resource name apart, and the models of one vendor: a flavor per
# pool whose nodeLabels carry the vendor's selector and the pool's model (builders/scheduling.py
# kueue_flavor), and a workload goes only to a flavor whose nodeLabels its pods' nodeSelector and
# required node affinity match (kueue v0.17.0 pkg/scheduler/flavorassigner/flavorassigner.go,
# checkFlavorForPodSets and flavorSelector), each flavor counted against its own nominal quota.
# A ResourceQuota (backend quota) and a Volcano Queue count the resource name alone.
MODEL_BACKENDS = ("kueue",)


def shared_quota(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    if scheduling.backend(view) in MODEL_BACKENDS:
        return  # the ClusterQueue counts each vendor's flavors apart
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
                    f"ResourceQuota cannot tell them apart",
                    team.doc.locate(path, key=True),
                    json_path(path),
                    "quota one of them, give one vendor its own resourceName, or use "
                    "scheduling.backend kueue, whose flavors tell them apart",
                )


def quota_models(ctx: Context) -> Iterable[Finding]:
    """A team's quota per model names only models of the vendor's pools. (In an environment
    with clusters, a model no cluster has is CLU004 at load: a cluster's view never holds one.)"""
    view = ctx.view
    for team in view.teams:
        for vendor_id, models in team.models.items():
            vendor = view.vendor(vendor_id)
            if vendor is None:
                continue  # REF001 names the vendor
            for model in models:
                if vendor.pool_model(model):
                    continue
                path = ("quota", vendor_id, model)
                known = ", ".join(vendor.models) or "none"
                yield Finding(
                    "RES003",
                    f"team {team.name}: quota for {vendor_id} names model {model!r}, which no "
                    f"pool of {vendor_id} has",
                    team.doc.locate(path, key=True),
                    json_path(path),
                    f"models of {vendor_id}'s pools: {known}; a quota split by cluster needs "
                    "the clusters declared in the environment's file",
                )


def model_weights(ctx: Context) -> Iterable[Finding]:
    """A vendor's costWeights name only models of its pools: another would price nothing."""
    for vendor in ctx.view.vendors:
        for model in vendor.model_cost_weights:
            if vendor.pool_model(model):
                continue
            path = ("costWeights", model)
            yield Finding(
                "RES004",
                f"vendor {vendor.id}: costWeights names model {model!r}, which no pool of "
                f"{vendor.id} has",
                vendor.doc.locate(path, key=True),
                json_path(path),
                f"models of {vendor.id}'s pools: {', '.join(vendor.models) or 'none'}",
            )


def model_quota_backend(ctx: Context) -> Iterable[Finding]:
    """A quota per model only where the backend counts each model apart (MODEL_BACKENDS)."""
    view = ctx.view
    kind = scheduling.backend(view)
    if kind in MODEL_BACKENDS:
        return
    for team in view.teams:
        for vendor_id in team.models:
            vendor = view.vendor(vendor_id)
            if vendor is None:
                continue
            path = ("quota", vendor_id)
            yield Finding(
                "RES005",
                f"team {team.name}: quota for {vendor_id} is per model, and scheduling.backend "
                f"{kind} counts {vendor.resource_name} whatever the model",
                team.doc.locate(path, key=True),
                json_path(path),
                f"give one number (quota: {{{vendor_id}: {team.quota.get(vendor_id, 0)}}}), or "
                "use scheduling.backend kueue, whose flavors count each model apart",
            )


def node_twice(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
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


def namespace_twice(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    claims: dict[str, list[tuple[Team, int]]] = {}
    for team in view.teams:
        for i, ns in enumerate(team.namespaces):
            claims.setdefault(ns, []).append((team, i))
    for ns, owners in sorted(claims.items()):
        if len(owners) < 2 or ns in ctx.reserved_namespaces():
            continue  # a reserved namespace is NAME007's, once per team
        team, i = _claim(owners)
        others = ", ".join(repr(t.name) for t, _ in owners if t is not team)
        yield Finding(
            "NAME004",
            f"namespace {ns!r} is already used by team {others}",
            _namespace_at(team, i),
            json_path(("namespaces", i)),
            "pick another namespace",
        )


def _claim(owners: list[tuple[Team, int]]) -> tuple[Team, int]:
    # Point at a team that wrote the namespace out; a default (the team name) has no line.
    explicit = [(t, i) for t, i in owners if t.doc.get("namespaces") is not None]
    return (explicit or owners)[-1]


def _namespace_at(team: Team, i: int) -> Location:
    if team.doc.get("namespaces") is not None:
        return team.doc.locate(("namespaces", i))
    return team.doc.anchor()  # the default namespace is the file's name


# Argo CD would own a reserved namespace with the team's Pod Security level (kube-system pods
# could no longer start under `baseline`), and pruning the team's unit would delete it.
def reserved_namespace(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    reserved = ctx.reserved_namespaces()
    for team in view.teams:
        for i, ns in enumerate(team.namespaces):
            if ns in reserved:
                default = team.doc.get("namespaces") is None
                yield Finding(
                    "NAME007",
                    f"team {team.name!r} claims namespace {ns!r}"
                    + (" (its file name, the default namespace)" if default else "")
                    + f", which belongs to {reserved[ns]}",
                    _namespace_at(team, i),
                    json_path(("namespaces", i)),
                    "give the team its own namespace"
                    + (" in namespaces:, or rename the file" if default else ""),
                )


def node_config(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    method = view.fleet.node_config_method
    for vendor in view.vendors:
        for pool in vendor.pools:
            if pool.nodes:
                continue
            path = ("pools", pool.index)
            if method == "node-patch":
                yield Finding(
                    "NODE001",
                    f"pool {pool.name!r} lists no nodes, so node-patch cannot label it",
                    vendor.doc.locate(path),
                    json_path(path),
                    "list the pool's nodes, or use nodeConfig.method: nfd",
                )
                continue
            twins = [
                p.name if v is vendor else f"{v.id}/{p.name}"
                for v, p in device_twins(view, vendor, pool)
            ]
            if twins:
                yield Finding(
                    "NODE001",
                    f"pool {pool.name!r} matches the same PCI devices as pool "
                    f"{', '.join(repr(t) for t in twins)} and lists no nodes, so NFD labels "
                    f"every such {vendor.id} node as both",
                    vendor.doc.locate(path),
                    json_path(path),
                    "list the pool's nodes, or give the pools different pciDevices",
                )


def unknown_pci_model(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    if view.fleet.node_config_method != "nfd":
        return
    for vendor in view.vendors:
        if not vendor.pci_vendor:
            yield Finding(
                "NODE002",
                f"vendor {vendor.id} has no pciVendor, so no NFD rule can find its nodes",
                vendor.doc.anchor(("pciVendor",)),
                "$.pciVendor",
                "set pciVendor to the vendor's PCI vendor ID (lspci -nn shows [vendor:device]), "
                "with pciDevices on each pool",
            )
            continue
        for pool in vendor.pools:
            if pool.pci_devices:
                continue
            path = ("pools", pool.index, "model")
            known = ", ".join(sorted(vendor.pci_models)) or "none"
            yield Finding(
                "NODE002",
                f"pool {pool.name!r}: model {pool.model!r} has no known PCI device IDs for "
                f"{vendor.id}, so no NFD rule can find its nodes (a rule on the "
                f"vendor ID {vendor.pci_vendor or '(none)'} alone would also match the vendor's "
                "other functions, such as CPU bridges or a BMC's VGA)",
                vendor.doc.locate(path),
                json_path(path),
                f"set pciDevices on the pool to the device IDs its nodes show as "
                f"[{vendor.pci_vendor}:<device>] in `lspci -nn`, or use a model the catalog "
                f"knows: {known}",
            )


def unprefixed_pool_label(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    if view.fleet.node_config_method != "nfd":
        return
    for vendor in view.vendors:
        for pool in vendor.pools:
            own = vendor.doc.get("pools", pool.index, "labels", default={}) or {}
            topology = vendor.doc.get("topology", default=None) or {}
            for key in sorted(k for k in own if "/" not in k):
                path = ("pools", pool.index, "labels", key)
                # The catalog cites what reads a vendor's topology label on its nodes.
                reader = topology.get("readBy") if topology.get("label") == key else None
                yield Finding(
                    "NODE003",
                    f"pool {pool.name!r} label {key!r} has no prefix: nfd-master sets it as "
                    f"{view.fleet.label_key(key)!r}. The selectors rendered here use "
                    f"that key, but anything that reads {key!r} itself will not find it"
                    + (f" ({reader['name']} reads {key}: {reader['source']})" if reader else ""),
                    vendor.doc.locate(path, key=True),
                    json_path(path),
                    "label those nodes another way (kubelet --node-labels, or nodeConfig.method: "
                    "node-patch), or drop the label if nothing outside reads it",
                    Severity.WARNING,
                )


def duplicate_taints(ctx: Context) -> Iterable[Finding]:
    # Kubernetes refuses a Node whose taints repeat a <key, effect> pair, so nfd-master's or
    # node-patch's update of that node fails and none of its taints land (kubernetes v1.36.3
    # pkg/apis/core/validation/validation.go validateNodeTaints: "taints must be unique by key
    # and effect pair").
    view = ctx.view
    for vendor in view.vendors:
        reported = False  # inherited vendor taints: one finding, not one per pool
        for pool in vendor.pools:
            own = vendor.doc.get("pools", pool.index, "taints", default=None) is not None
            if not own and (reported or vendor.doc.get("taints", default=None) is None):
                continue  # the catalog's taints, or the vendor's already reported
            seen: dict[tuple[str, str], int] = {}
            for i, taint in enumerate(pool.taints):
                first = seen.setdefault((taint.key, taint.effect), i)
                if first == i:
                    continue
                path: tuple[str | int, ...] = (
                    ("pools", pool.index, "taints", i) if own else ("taints", i)
                )
                whose = f"pool {pool.name!r}" if own else f"vendor {vendor.id}"
                reported = reported or not own
                yield Finding(
                    "NODE004",
                    f"{whose} taints repeat {taint.key}:{taint.effect} (first at taints[{first}]); "
                    f"the API server refuses such a Node, so none of its taints would be "
                    f"set",
                    vendor.doc.locate(path),
                    json_path(path),
                    "keep one taint per key and effect",
                )


def empty_pool(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    for vendor in view.vendors:
        for pool in vendor.pools:
            if pool.node_count == 0:
                path = ("pools", pool.index)
                yield Finding(
                    "CAP002",
                    f"pool {pool.name!r} has no nodes and no nodeCount, so it adds no capacity",
                    vendor.doc.locate(path),
                    json_path(path),
                    "list its nodes or set nodeCount",
                    Severity.WARNING,
                )


def runtime_class_handler(ctx: Context) -> Iterable[Finding]:
    """A RuntimeClass needs the runtime's handler: the catalog names it for the vendors whose
    devices need a runtime of their own (NVIDIA, Ascend), a vendor file may set it."""
    view = ctx.view
    for vendor in view.vendors:
        if vendor.runtime_class and not vendor.runtime_handler:
            yield Finding(
                "NODE005",
                f"runtimeClass {vendor.runtime_class!r}: vendor {vendor.id!r} names no container "
                "runtime of its own (runtime.handler), so a RuntimeClass would have no handler",
                vendor.doc.locate(("runtimeClass",)),
                json_path(("runtimeClass",)),
                "drop runtimeClass (the vendor's devices need no runtime of their own), or set "
                "runtime.handler to the runtime's name in containerd's configuration",
            )


def pod_requests(spec: dict[str, Any]) -> dict[str, Fraction]:
    """What the pod's app containers request together, each request defaulting to its limit
    (kubernetes v1.36.3 pkg/apis/core/v1/defaults.go, SetDefaults_Pod): a lower bound of what
    kube-scheduler holds a node to, which adds the init containers and the overhead
    (k8s.io/component-helpers v0.36.3 resource/helpers.go, PodRequests)."""
    out: dict[str, Fraction] = {}
    for container in spec.get("containers") or []:
        res = container.get("resources") or {}
        for name, value in {**(res.get("limits") or {}), **(res.get("requests") or {})}.items():
            quantity = parse_quantity(value)
            if quantity is not None:
                out[name] = out.get(name, Fraction(0)) + quantity
    return out


def _shortfall(need: dict[str, Fraction], pool: Pool) -> list[tuple[str, str]]:
    """Each resource the pool's declared node shape has less of than `need`, with what it
    declares (what it does not declare is not known to be short)."""
    out = []
    for name, have in sorted(pool.node.capacity().items()):
        declared = parse_quantity(have)
        if declared is not None and need.get(name, Fraction(0)) > declared:
            out.append((name, have))
    return out


def node_shape(ctx: Context) -> Iterable[Finding]:
    """A pod that asks for more CPU, memory or another resource than the node shape of every
    pool it may land on declares (values `node`, or its server type's): no node of them can
    take it, whatever else runs there."""
    for team in ctx.view.teams:
        for land in ctx.landings(team):
            need = pod_requests(land.ref.spec)
            short = [(pool, _shortfall(need, pool)) for pool in land.pools]
            if not short or not all(lacks for _, lacks in short):
                continue
            ref = land.ref
            at = (*ref.path, "resources")
            path = at if team.doc.get(*at) is not None else ref.path
            names = sorted({name for _, lacks in short for name, _ in lacks})
            asked = ", ".join(f"{name} {format_quantity(need[name])}" for name in names)
            pools = "; ".join(
                f"pool {land.vendor.id}/{pool.name}: "
                + ", ".join(f"{name} {have}" for name, have in lacks)
                for pool, lacks in short
            )
            yield Finding(
                "NODE006",
                f"{ref.kind} {ref.name!r}: its pod asks for {asked}, more than the nodes it may "
                f"land on declare ({pools}): it can never be scheduled",
                team.doc.locate(path),
                json_path(path),
                "ask for less, or declare the pool's node shape as its nodes are (the pool's "
                "`node`, or its server type's in values/inventories/: docs/values.md)",
            )


def app_name_length(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    if not view.env:
        return
    for team in view.teams:
        name = argocd.app_name(view, f"team-{team.name}")
        if len(name) > 63:
            yield Finding(
                "NAME005",
                f"Application name {name!r} is {len(name)} characters; Argo CD's "
                "tracking label allows 63",
                view.fleet.doc.locate(("name",)),
                "$.name",
                "shorten the fleet, environment, cluster or team name",
            )


# The vendor values that name what a vendor emits in each unit.
_VENDOR_NAME_KEYS = {
    "device-plugins": ("devicePlugin", "name"),
    "monitoring": ("exporter", "name"),
    "node-config": ("pools",),
}


def same_object(ctx: Context) -> Iterable[Finding]:
    """Two objects with one identity in one cluster: Argo CD applies one over the other (or, in
    two Applications, flips between them), and the layout writes one file over the other."""
    view = ctx.view
    try:
        components = ctx.build.components
    except MonitoringError:
        return  # MON001 names the exporter settings that cannot be built
    seen: dict[tuple[str, str, str, str], tuple[str, Location]] = {}
    # A namespace two teams claim (NAME004) or a reserved one (NAME007) makes every object of
    # those teams twice: the claim is the one mistake, reported once at its line.
    claims: dict[str, int] = {}
    for team in view.teams:
        for ns in team.namespaces:
            claims[ns] = claims.get(ns, 0) + 1
    claimed = {ns for ns, n in claims.items() if n > 1} | set(ctx.reserved_namespaces())
    for comp in components:
        team_component = comp.name.startswith("teams/")
        team_unit = comp.unit.startswith("team-")
        for obj in comp.objects:
            api, kind, ns, name = identity(obj)
            key = (api.rpartition("/")[0], kind, ns, name)  # one object whatever its version
            vendor_id = ((obj.get("metadata") or {}).get("labels") or {}).get(VENDOR_LABEL)
            # A vendor's own objects point at the vendor file; a team's at its workload.
            vendor = view.vendor(vendor_id) if vendor_id and not team_unit else None
            if vendor is not None:
                path = _VENDOR_NAME_KEYS.get(comp.unit, ("catalog",))
                where_from = f"vendor {vendor.id!r}"
                loc = vendor.doc.anchor(path)
            else:
                where_from = comp.name
                loc = comp.origin_of(obj) or Location("values")
            if key not in seen:
                seen[key] = (where_from, loc)
                continue
            if team_component and (kind == "Namespace" or ns in claimed):
                continue  # a team's namespace claim: NAME004 and NAME007 name its line
            first, first_loc = seen[key]
            shown = f"{kind} {ns}/{name}" if ns else f"{kind} {name}"
            by = (
                f"by {where_from}"
                if (first, first_loc) == (where_from, loc)
                else f"by {first} ({first_loc}) and by {where_from}"
            )
            yield Finding(
                "NAME008",
                f"{shown} would be emitted twice, {by}: Argo CD would apply one over the other",
                loc,
                "",
                _same_object_hint(vendor is not None, team_unit),
            )


def _same_object_hint(of_vendor: bool, of_team: bool) -> str:
    """The fix in the values that made the object: a vendor's names, a team's workloads."""
    if of_vendor:
        return (
            "give one of them a name of its own (devicePlugin.name, exporter.name), or drop "
            "the duplicate"
        )
    if of_team:
        return "rename one of the two workloads, or drop the duplicate"
    return "give one of them a name or namespace of its own, or drop the duplicate"


# Without this, kubeconform would report every object of every unit against a schema set that
# does not exist. (Whether a control plane of that minor can be started is another matter.)
def kubernetes_version(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    versions = schemas.k8s_schema_versions()
    if not versions:
        return  # no schemas laid out: validate stops with the install command (exit 2)
    wanted = view.fleet.kubernetes_version
    if schemas.kubeconform_kubernetes_version(wanted) in versions:
        return
    lo, hi = (v.removesuffix(".0") for v in (versions[0], versions[-1]))
    loc, path = clusters.version_location(view)
    yield Finding(
        "VER001",
        f"kubernetesVersion {wanted!r} is outside the versions the pinned schemas cover "
        f"({lo} to {hi})",
        loc,
        path,
        f"set a version from {lo} to {hi} (the Kubernetes versions this accel-gitops has "
        "schemas for)",
    )


CHECKS: tuple[Check, ...] = (
    Check(
        "REF001",
        "a team's quota names a vendor that the fleet does not have",
        unknown_vendor,
        scope=PER_TEAM,
    ),
    Check(
        "CAP001",
        "team quotas for a vendor add up to more devices than its pools hold",
        quota_capacity,
        EITHER,
    ),
    Check(
        "CAP003",
        "one team's quota for a vendor (or a model of it) is more than those pools hold in its "
        "cluster",
        team_quota_capacity,
        scope=PER_TEAM,
    ),
    Check(
        "RES001",
        "two vendors advertise one resource name and selectors cannot tell them apart",
        shared_resource,
        scope=NO_TEAM,
    ),
    Check(
        "RES002",
        "a team has quota for two vendors that share one resource name, and the backend "
        "cannot tell them apart",
        shared_quota,
        scope=PER_TEAM,
    ),
    Check(
        "RES003",
        "a team's quota per model names a model that no pool of the vendor has",
        quota_models,
        scope=PER_TEAM,
    ),
    Check(
        "RES004",
        "a vendor's costWeights names a model that none of its pools has",
        model_weights,
        scope=NO_TEAM,
    ),
    Check(
        "RES005",
        "a team's quota is per model, and the scheduling backend cannot count models apart",
        model_quota_backend,
        scope=PER_TEAM,
    ),
    Check("NAME003", "a node is listed in two pools", node_twice, scope=NO_TEAM),
    Check("NAME004", "two teams claim the same namespace", namespace_twice),
    Check(
        "NAME007",
        "a team claims a reserved namespace (system, Argo CD, plugin or monitoring)",
        reserved_namespace,
        scope=PER_TEAM,
    ),
    Check(
        "NODE001",
        "node-patch needs node names, and NFD rules must tell a vendor's pools apart",
        node_config,
        scope=NO_TEAM,
    ),
    Check(
        "NODE002",
        "NFD cannot tell a pool's nodes: its model has no known PCI device IDs",
        unknown_pci_model,
        scope=NO_TEAM,
    ),
    Check(
        "NODE003",
        "an unprefixed pool label lands under feature.node.kubernetes.io/ with NFD",
        unprefixed_pool_label,
        WARNING,
        scope=NO_TEAM,
    ),
    Check(
        "NODE004",
        "a pool's taints repeat a key and effect, which the API server refuses",
        duplicate_taints,
        scope=NO_TEAM,
    ),
    Check(
        "CAP002",
        "a pool has no nodes and no nodeCount, so it adds no capacity",
        empty_pool,
        WARNING,
        scope=NO_TEAM,
    ),
    Check(
        "NODE005",
        "a vendor's runtimeClass has no runtime handler to name",
        runtime_class_handler,
        scope=NO_TEAM,
    ),
    Check(
        "NODE006",
        "a pod asks for more CPU, memory or another resource than its pools' node shape declares",
        node_shape,
        scope=PER_TEAM,
    ),
    Check(
        "NAME005",
        "a generated Argo CD Application name is longer than 63 characters",
        app_name_length,
        scope=PER_TEAM,
    ),
    Check(
        "NAME008",
        "two parts of the fleet would emit the same object (kind, namespace, name)",
        same_object,
    ),
    Check(
        "VER001",
        "kubernetesVersion is outside the Kubernetes versions the pinned schemas cover",
        kubernetes_version,
        scope=NO_TEAM,
    ),
)
