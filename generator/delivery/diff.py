"""`render.py diff`: what a change does to the built manifests, object by object, with the risky
changes flagged.

Two comparisons:
- environment against environment (`diff staging prod`): both from a fresh render of the values;
- the working tree against a git ref (`diff --base main`): the ref's committed output (what Argo
  CD syncs from it) is read from git's object store and built with kustomize; a ref that commits
  no output is checked out in a temporary worktree and its values rendered by this generator.
  The working tree side is a fresh render of the values (what `render` would commit). Neither
  touches the working tree.

Units whose files are the same on both sides (by git blob id) are neither read nor built, so a
change to one team of thousands reads and builds a few units. Objects are compared as data,
without the provenance annotation (it names values files, not cluster state).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generator import kustomize
from generator.builders.common import same_but_source
from generator.delivery import git as gitutil
from generator.delivery import traffic
from generator.delivery.traffic import ROUTE_KINDS, Key
from generator.errors import FindingsError, GeneratorError
from generator.findings import Finding, layer_selected, split_layer
from generator.policy.placement import pod_templates
from generator.render import traffic as render_traffic
from generator.render.layout import Rendered, render_tree, unit_folder
from generator.render.stage import load_and_check
from generator.values import loader as values
from generator.values.model import require_env
from generator.values.quantity import parse_quantity
from generator.vocab.labels import SOURCE_ANNOTATION, SYNC_OPTIONS
from generator.vocab.objects import Obj, identity

Segment = str | int | tuple[str, str]  # map key, list index, or (identity, value) list entry


class _Absent:
    """The old value of an added field, the new value of a removed one."""

    def __repr__(self) -> str:
        return "(absent)"


ABSENT: Any = _Absent()
DEFAULT_REPLICAS = 1

ADDED, REMOVED, CHANGED = "added", "removed", "changed"

# Risky changes: code -> what it means (docs/gitops.md lists them; a test keeps them equal).
RISKS: dict[str, str] = {
    "namespace-deleted": "a Namespace is no longer rendered: Argo CD prunes it and everything in "
    "it, or, with Prune=false (team Namespaces), leaves it for a person to delete",
    "object-deleted": "an object is deleted (Argo CD prunes it when pruning is on)",
    "quota-down": "a quota goes down (ResourceQuota, Volcano Queue capability, Kueue "
    "nominalQuota): running workloads may no longer fit",
    "devices-down": "a workload asks for fewer accelerator devices in total (its pods x the "
    "devices each limits itself to or claims), or a DRA claim for fewer devices",
    "zero-replicas": "a Deployment (a service track) goes to 0 replicas",
    "traffic-moves": "traffic moves: a Service selector, a weighted route (HTTPRoute, "
    "VirtualService), or a global load balancer's split (traffic/<env>.json) changes",
    "taint-moves": "a NodeFeatureRule puts a taint on nodes or takes one off: pods without its "
    "toleration stop landing there, or any pod may",
    "plugin-image": "a DaemonSet's image changes (a device plugin or exporter): every node it "
    "runs on restarts it",
}


@dataclass(frozen=True)
class FieldChange:
    path: tuple[Segment, ...]
    old: Any
    new: Any

    @property
    def op(self) -> str:
        if self.old is ABSENT and self.new is not ABSENT:
            return "add"
        if self.new is ABSENT:
            return "remove"
        return "replace"

    @property
    def where(self) -> str:
        return format_path(self.path)


@dataclass(frozen=True)
class Risk:
    code: str
    message: str


@dataclass
class ObjectDiff:
    env: str
    unit: str
    key: Key
    status: str  # added, removed, changed
    changes: list[FieldChange] = field(default_factory=list)
    risks: list[Risk] = field(default_factory=list)
    obj: Obj | None = None  # the added or removed object

    @property
    def title(self) -> str:
        _, kind, ns, name = self.key
        return f"{kind} {ns + '/' if ns else ''}{name}"


@dataclass
class DiffResult:
    old: str  # what each side is, for people
    new: str
    objects: list[ObjectDiff]
    units: int  # units compared (on either side)
    findings: list[Finding] = field(default_factory=list)  # warnings of the values

    def count(self, status: str) -> int:
        return sum(1 for o in self.objects if o.status == status)

    @property
    def risks(self) -> list[tuple[ObjectDiff, Risk]]:
        return [(o, r) for o in self.objects for r in o.risks]

    @property
    def changed_units(self) -> list[tuple[str, str]]:
        return sorted({(o.env, o.unit) for o in self.objects})


# ---- field-level comparison --------------------------------------------------------------------

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def format_path(path: Iterable[Segment]) -> str:
    out = ""
    for seg in path:
        if isinstance(seg, tuple):
            out += f"[{seg[0]}={seg[1]}]"
        elif isinstance(seg, int):
            out += f"[{seg}]"
        elif _PLAIN_KEY.match(seg):
            out += f".{seg}" if out else seg
        else:
            out += f'["{seg}"]'
    return out


# How a list entry is told apart from its siblings, in order of preference: `name` (containers,
# env, ports, volumes, rule groups), a Prometheus rule's `record` or `alert`, an AppProject
# destination's server and namespace, an allowed kind's group and kind. A list is compared entry
# by entry when every entry has the same kind of identity and no two share one.
IDENTITIES: tuple[tuple[str, ...], ...] = (
    ("name",),
    ("record",),
    ("alert",),
    ("server", "namespace"),
    ("group", "kind"),
)


def _entry_id(item: Any) -> tuple[str, str] | None:
    """(what identifies it, its value) for a list entry; a scalar is its own identity."""
    if isinstance(item, str | int | float | bool):
        return ("value", str(item))
    if not isinstance(item, dict):
        return None
    for keys in IDENTITIES:
        if all(isinstance(item.get(k), str) for k in keys):
            return ("+".join(keys), ",".join(str(item[k]) for k in keys))
    return None


# Identities that may share one list: a rule group holds recording and alerting rules.
FAMILY = {"record": "rule", "alert": "rule"}


Entries = dict[tuple[str, str], Any]


def _family(entries: Entries) -> str:
    kind = next(iter(entries))[0]
    return FAMILY.get(kind, kind)


def _identities(items: list[Any]) -> Entries | None:
    """The entries by identity, when all have one of the same family and no two are the same."""
    known = {key: item for item in items if (key := _entry_id(item)) is not None}
    kinds = {FAMILY.get(k, k) for k, _ in known}
    if len(known) != len(items) or len(kinds) != 1:
        return None
    return known


def field_changes(old: Any, new: Any, path: tuple[Segment, ...] = ()) -> list[FieldChange]:
    """Changes from `old` to `new`: maps key by key; lists whose entries each have an identity
    (IDENTITIES; a scalar is its own) entry by entry, so that an added or removed entry is shown
    alone; other lists of one length item by item; the rest whole."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[FieldChange] = []
        for key in sorted(set(old) | set(new)):
            if key not in new:
                out.append(FieldChange((*path, key), old[key], ABSENT))
            elif key not in old:
                out.append(FieldChange((*path, key), ABSENT, new[key]))
            elif old[key] != new[key]:
                out += field_changes(old[key], new[key], (*path, key))
        return out
    if isinstance(old, list) and isinstance(new, list) and old != new:
        before, after = _identities(old), _identities(new)
        # A scalar list of one length (a container's args) is compared item by item: its order
        # means something, and a changed item is a replace, not a remove and an add.
        scalars = before and _family(before) == "value" and len(old) == len(new)
        if before and after and _family(before) == _family(after) and not scalars:
            out = []
            for key in sorted(set(before) | set(after)):
                out += field_changes(before.get(key, ABSENT), after.get(key, ABSENT), (*path, key))
            if not out:  # same entries, another order
                out.append(FieldChange(path, old, new))
            return out
        if len(old) == len(new):
            out = []
            for i, (a, b) in enumerate(zip(old, new, strict=True)):
                out += field_changes(a, b, (*path, i))
            return out
    if old == new:
        return []
    return [FieldChange(path, old, new)]


def _without_source(obj: Obj) -> Obj:
    notes = obj.get("metadata", {}).get("annotations") or {}
    if SOURCE_ANNOTATION not in notes:
        return obj
    meta = {k: v for k, v in obj["metadata"].items() if k != "annotations"}
    rest = {k: v for k, v in notes.items() if k != SOURCE_ANNOTATION}
    if rest:
        meta["annotations"] = rest
    return {**obj, "metadata": meta}


# ---- risky changes -----------------------------------------------------------------------------

# An Application with this finalizer is deleted with a cascade: Argo CD deletes its resources
# first (source: argoproj/argo-cd, docs/user-guide/app_deletion.md, "About The Deletion Finalizer").
CASCADE_FINALIZER = "resources-finalizer.argocd.argoproj.io"
QUOTA_KINDS = {"ResourceQuota", "Queue", "ClusterQueue"}


def quantity(value: Any) -> float | None:
    """A Kubernetes quantity as a number ('4', 8, '500m', '2Gi'), None if it is none."""
    parsed = parse_quantity(value)
    return float(parsed) if parsed is not None else None


def _pod_devices(spec: Mapping[str, Any]) -> dict[str, float]:
    """Extended resources (vendor devices: names with a '/') a pod limits itself to."""
    out: dict[str, float] = {}
    for container in spec.get("containers") or []:
        for name, value in ((container.get("resources") or {}).get("limits") or {}).items():
            n = quantity(value)
            if "/" in name and n is not None:
                out[name] = out.get(name, 0.0) + n
    return out


# DRA claims (kubernetes/api v0.36.3 resource/v1 types.go): a ResourceClaimTemplate's claim is
# spec.spec, a ResourceClaim's spec; each request `exactly` asks for `count` devices of
# deviceClassName (allocationMode ExactCount, the default, and count 1 when unset). A request
# for All matching devices, or for the first available of several, names no count: not counted.
CLAIM_KINDS = ("ResourceClaim", "ResourceClaimTemplate")
ClaimKey = tuple[str, str, str]  # namespace, kind, name
Claims = Mapping[ClaimKey, dict[str, float]]


def claim_devices(obj: Obj) -> dict[str, float]:
    """Devices one claim of a ResourceClaim or ResourceClaimTemplate asks for, by device class."""
    spec = obj.get("spec") or {}
    if obj.get("kind") == "ResourceClaimTemplate":
        spec = spec.get("spec") or {}
    out: dict[str, float] = {}
    for request in (spec.get("devices") or {}).get("requests") or []:
        exactly = request.get("exactly") or {}
        if not exactly or exactly.get("allocationMode", "ExactCount") != "ExactCount":
            continue
        name = f"DeviceClass {exactly.get('deviceClassName', '')}"
        out[name] = out.get(name, 0.0) + float(exactly.get("count") or 1)
    return out


def claims_of(objs: Iterable[Obj]) -> dict[ClaimKey, dict[str, float]]:
    """The devices of each claim and claim template among `objs` (one unit's)."""
    out: dict[ClaimKey, dict[str, float]] = {}
    for obj in objs:
        if obj.get("kind") in CLAIM_KINDS:
            meta = obj.get("metadata") or {}
            key = (str(meta.get("namespace", "")), str(obj["kind"]), str(meta.get("name", "")))
            out[key] = claim_devices(obj)
    return out


def _add(total: dict[str, float], more: Mapping[str, float], times: float = 1.0) -> None:
    for name, n in more.items():
        total[name] = total.get(name, 0.0) + times * n


def devices(obj: Obj, claims: Claims | None = None) -> dict[str, float]:
    """Devices a workload object asks for in total: for each of its pod templates, its pods (as
    policy/placement.py pod_templates counts them for every kind: Deployment, StatefulSet, Job,
    Volcano Job, JobSet, LeaderWorkerSet, TrainJob) x the devices each pod limits itself to and
    claims through a ResourceClaimTemplate (a claim each, core/v1 PodResourceClaim), plus the
    devices of the ResourceClaims its pods name (shared, counted once). Claims are looked up in
    `claims` (the unit's). A ResourceClaim or ResourceClaimTemplate: the devices of its claim."""
    if obj.get("kind") in CLAIM_KINDS:
        return claim_devices(obj)
    known = claims or {}
    ns = str((obj.get("metadata") or {}).get("namespace", ""))
    total: dict[str, float] = {}
    shared: set[str] = set()
    for tpl in pod_templates(obj):
        if tpl.pods is None:
            continue  # a DaemonSet's pods are its nodes'
        per_pod = _pod_devices(tpl.spec)
        for claim in tpl.spec.get("resourceClaims") or []:
            if claim.get("resourceClaimTemplateName"):
                key = (ns, "ResourceClaimTemplate", str(claim["resourceClaimTemplateName"]))
                _add(per_pod, known.get(key, {}))
            elif claim.get("resourceClaimName") and tpl.pods:
                shared.add(str(claim["resourceClaimName"]))
        _add(total, per_pod, tpl.pods)
    for name in sorted(shared):
        _add(total, known.get((ns, "ResourceClaim", name), {}))
    return total


# What a NodeFeatureRule's taints affect: nfd-master (run with -enable-taints, docs/node-config.md)
# keeps each rule's taints on the nodes whose features match the rule (sigs.k8s.io/
# node-feature-discovery v0.19.0 api/nfd/v1alpha1 types.go Rule.Taints). Those nodes are told
# here by the labels the same rule sets on them.
def _rule_taints(obj: Obj | None) -> dict[str, tuple[set[str], dict[str, str]]]:
    """Each rule's taints (key=value:effect) and labels, by rule name."""
    out: dict[str, tuple[set[str], dict[str, str]]] = {}
    if obj is None or obj.get("kind") != "NodeFeatureRule":
        return out
    for rule in (obj.get("spec") or {}).get("rules") or []:
        taints = {
            f"{t.get('key', '')}{'=' + str(t['value']) if t.get('value') else ''}:"
            f"{t.get('effect', '')}"
            for t in rule.get("taints") or []
        }
        out[str(rule.get("name", ""))] = (taints, dict(rule.get("labels") or {}))
    return out


def _nodes(labels: dict[str, str]) -> str:
    if not labels:
        return "the nodes it matches"
    return "nodes labelled " + ", ".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _taint_moves(old: Obj | None, new: Obj | None) -> list[Risk]:
    """A risk per taint a rule puts on its nodes (as the new rule names them) or takes off its
    nodes (as the old rule named them)."""
    before, after = _rule_taints(old), _rule_taints(new)
    out: list[Risk] = []
    for name in sorted(set(before) | set(after)):
        was, labels_was = before.get(name, (set(), {}))
        now, labels_now = after.get(name, (set(), {}))
        for taint in sorted(now - was):
            out.append(
                Risk(
                    "taint-moves",
                    f"rule {name}: taint {taint} put on {_nodes(labels_now)}: pods there without "
                    "its toleration no longer schedule (NoExecute: are evicted)",
                )
            )
        for taint in sorted(was - now):
            out.append(
                Risk(
                    "taint-moves",
                    f"rule {name}: taint {taint} taken off {_nodes(labels_was)}: pods that do "
                    "not tolerate it may land there",
                )
            )
    return out


def _num(value: float) -> str:
    return f"{value:g}"


def _short(value: Any) -> str:
    return "(none)" if value is ABSENT else str(value)


def _container_entry(path: tuple[Segment, ...]) -> bool:
    """A path to one named entry of a pod template's containers or initContainers."""
    return (
        len(path) >= 2
        and isinstance(path[-1], tuple)
        and path[-2] in ("containers", "initContainers")
    )


def _risks(
    d: ObjectDiff, old: Obj | None, new: Obj | None, claims: tuple[Claims, Claims]
) -> list[Risk]:
    kind = d.key[1]
    out: list[Risk] = _taint_moves(old, new)
    if d.status == REMOVED:
        meta = (old or {}).get("metadata", {})
        options = str((meta.get("annotations") or {}).get(SYNC_OPTIONS, "")).split(",")
        if "Prune=false" in options:
            # Argo CD leaves it in the cluster (argo-cd docs/user-guide/sync-options.md, "No
            # Prune Resources"; team Namespaces: docs/argocd.md): still worth a reviewer's eye.
            code = "namespace-deleted" if kind == "Namespace" else "object-deleted"
            out.append(
                Risk(code, "no longer rendered; Argo CD keeps it (Prune=false): delete it by hand")
            )
        elif kind == "Namespace":
            out.append(Risk("namespace-deleted", "deleted, with everything in it"))
        elif CASCADE_FINALIZER in (meta.get("finalizers") or []):
            out.append(Risk("object-deleted", "deleted, and with it everything it deployed"))
        else:
            out.append(Risk("object-deleted", "deleted"))
        if kind in ROUTE_KINDS:
            out.append(Risk("traffic-moves", "the route is deleted"))
        return out
    if d.status == ADDED:
        if kind in ROUTE_KINDS:
            out.append(Risk("traffic-moves", "a new route"))
        return out
    assert old is not None and new is not None
    for c in d.changes:
        if kind in QUOTA_KINDS:
            a, b = quantity(c.old), quantity(c.new)
            if a is not None and b is not None and b < a:
                out.append(Risk("quota-down", f"{c.where}: {_short(c.old)} -> {_short(c.new)}"))
        if kind == "Deployment" and c.path == ("spec", "replicas") and c.new == 0:
            # Unset replicas is 1 (source: kubernetes/kubernetes pkg/apis/apps/v1/defaults.go,
            # SetDefaults_Deployment, at 04791b4906602ffda5ccf9bc4c84d3329f1d7080).
            was = DEFAULT_REPLICAS if c.old is ABSENT else c.old
            out.append(Risk("zero-replicas", f"{d.title} goes from {was} to 0 replicas"))
        if kind == "Service" and c.path[:2] == ("spec", "selector"):
            out.append(Risk("traffic-moves", f"{c.where}: {_short(c.old)} -> {_short(c.new)}"))
        if kind in ROUTE_KINDS and c.path[:1] == ("spec",):
            out.append(Risk("traffic-moves", f"{c.where}: {_short(c.old)} -> {_short(c.new)}"))
        if kind == "DaemonSet" and c.path[-1:] == ("image",):
            out.append(Risk("plugin-image", f"{c.where}: {_short(c.old)} -> {_short(c.new)}"))
        if (
            kind == "DaemonSet"
            and _container_entry(c.path)
            and (c.old is ABSENT or c.new is ABSENT)
        ):
            # A whole container added or dropped (a rename is both): its image comes or goes.
            was, now = (
                v.get("image", ABSENT) if isinstance(v, dict) else ABSENT for v in (c.old, c.new)
            )
            out.append(Risk("plugin-image", f"{c.where}: {_short(was)} -> {_short(now)}"))
    before, after = devices(old, claims[0]), devices(new, claims[1])
    each = "per claim" if kind in CLAIM_KINDS else "in total"
    for name in sorted(before):
        if after.get(name, 0.0) < before[name]:
            out.append(
                Risk(
                    "devices-down",
                    f"{name}: {_num(before[name])} -> {_num(after.get(name, 0.0))} {each}",
                )
            )
    return out


def compare_objects(
    env: str, unit: str, old: Mapping[Key, Obj], new: Mapping[Key, Obj]
) -> list[ObjectDiff]:
    out: list[ObjectDiff] = []
    claims = (claims_of(old.values()), claims_of(new.values()))
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a is None:
            assert b is not None
            d = ObjectDiff(env, unit, key, ADDED, obj=b)
        elif b is None:
            d = ObjectDiff(env, unit, key, REMOVED, obj=a)
        elif a == b or same_but_source(a, b):
            continue
        else:
            d = ObjectDiff(
                env, unit, key, CHANGED, field_changes(_without_source(a), _without_source(b))
            )
        d.risks = _risks(d, a, b, claims)
        out.append(d)
    _say_traffic_moves(out, old, new)
    return out


def _say_traffic_moves(
    diffs: list[ObjectDiff], old: Mapping[Key, Obj], new: Mapping[Key, Obj]
) -> None:
    """A dual-track service whose split of requests changes: one risk in words on its Service
    (else its route, else a track's Deployment), instead of the selector and weight fields that
    moved it; a field change that moves nothing (say, equal weights scaled) is no risk."""
    if not diffs:
        return  # nothing changed in the unit: nothing moved
    before, after = traffic.splits(old), traffic.splits(new)
    moving = traffic.moves_between(before, after)
    for ns, service in sorted(before.keys() & after.keys()):
        mine = [
            d
            for d in diffs
            if d.key[2] == ns
            and (d.key[3] == service or d.key[3].startswith(f"{service}-"))
            and d.key[1] in ("Service", *ROUTE_KINDS, "Deployment")
        ]
        for d in mine:
            if d.key[3] == service:
                d.risks = [r for r in d.risks if r.code != "traffic-moves"]
        words = moving.get((ns, service))
        if words is None or not mine:
            continue
        rank = {"Service": 0, **dict.fromkeys(ROUTE_KINDS, 1), "Deployment": 2}
        target = min(mine, key=lambda d: (rank[d.key[1]], d.key[3] != service, d.key[3]))
        said = words if target.key[3] == service else f"service {service}: {words}"
        target.risks.append(Risk("traffic-moves", said))


def _by_key(objs: Iterable[Obj]) -> dict[Key, Obj]:
    return {identity(o): o for o in objs}


# An entry of a traffic file (render/traffic.py), compared as an object of the environment's
# `traffic` unit, keyed by (the file, this kind, namespace, service).
SPLIT_KIND = "LoadBalancerSplit"
TRAFFIC_UNIT = "traffic"


def _splits_in(rel: str, text: str | None) -> dict[Key, Obj]:
    if not text:
        return {}
    services = json.loads(text).get("services") or []
    return {(rel, SPLIT_KIND, str(s["namespace"]), str(s["service"])): s for s in services}


def traffic_diffs(
    old: Mapping[str, str], new: Mapping[str, str], env: str | None = None
) -> list[ObjectDiff]:
    """What changes in the environments' traffic files (`old` and `new`: files by path, any
    others ignored): each service's entry, a change of its split a traffic move."""
    out: list[ObjectDiff] = []
    files = {rel for rel in (*old, *new) if render_traffic.env_of(rel) is not None}
    for rel in sorted(files):
        home = str(render_traffic.env_of(rel))
        if env is not None and split_layer(env)[0] != home:
            continue
        out += _split_diffs(home, _splits_in(rel, old.get(rel)), _splits_in(rel, new.get(rel)))
    return out


def _split_diffs(label: str, a: dict[Key, Obj], b: dict[Key, Obj]) -> list[ObjectDiff]:
    """Each service's entry that `b` has other than `a` (by key: (file, kind, namespace,
    service)), a change of its split a traffic move."""
    out: list[ObjectDiff] = []
    for key in sorted(set(a) | set(b)):
        was, now = a.get(key), b.get(key)
        if was == now:
            continue
        if was is None:
            d = ObjectDiff(label, TRAFFIC_UNIT, key, ADDED, obj=now)
            d.risks = [Risk("traffic-moves", "a new split")]
        elif now is None:
            d = ObjectDiff(label, TRAFFIC_UNIT, key, REMOVED, obj=was)
            d.risks = [Risk("traffic-moves", "the split is deleted")]
        else:
            d = ObjectDiff(label, TRAFFIC_UNIT, key, CHANGED, field_changes(was, now))
            ns, service = key[2], key[3]
            said = traffic.moves_between(
                {(ns, service): traffic.file_split(was)},
                {(ns, service): traffic.file_split(now)},
            ).get((ns, service))
            if said is not None:
                d.risks = [Risk("traffic-moves", said)]
        out.append(d)
    return out


def _env_splits(tree: Mapping[str, str], env: str, pair: str) -> dict[Key, Obj]:
    """The entries of environment `env`'s traffic file, keyed as another environment's are:
    `pair` (both files' names) in the file's place."""
    rel = render_traffic.path_of(env)
    return {(pair, *key[1:]): obj for key, obj in _splits_in(rel, tree.get(rel)).items()}


# ---- the two comparisons -----------------------------------------------------------------------


def _fresh(values_dir: Path) -> tuple[Rendered, list[Finding], list[str]]:
    """The render, the values' warnings, and the layers an --env may name (environments and
    clusters)."""
    checked = load_and_check(values_dir)
    loaded = checked.values
    layers = [*loaded.base.fleet.environments, *loaded.envs]
    return render_tree(loaded, builds=checked.builds), checked.findings, layers


def between_envs(values_dir: Path, old_env: str, new_env: str) -> DiffResult:
    """Unit by unit (matched by name), what `new_env` has that `old_env` has not. Each side is
    an environment or one cluster (`env/cluster`); an environment of several clusters is
    compared cluster by cluster: with each of them when the other side is one cluster, by
    cluster name when both have clusters."""
    rendered, findings, envs = _fresh(values_dir)
    for env in (old_env, new_env):
        require_env(env, envs)
    layers = sorted({u.env for u in rendered.units})
    objects: list[ObjectDiff] = []
    units = 0
    for old_layer, new_layer in _pairs(
        _clusters_of(old_env, layers), _clusters_of(new_env, layers)
    ):
        sides = [
            {u.name: u for u in rendered.units if u.env == e} if e else {}
            for e in (old_layer, new_layer)
        ]
        label = f"{old_layer or old_env} -> {new_layer or new_env}"
        for name in sorted(set(sides[0]) | set(sides[1])):
            a, b = sides[0].get(name), sides[1].get(name)
            new = _by_key(b.objects if b else ())
            old = _renamed(
                _by_key(a.objects if a else ()), new, _dashed(old_layer), _dashed(new_layer)
            )
            objects += compare_objects(label, name, old, new)
        units += len(set(sides[0]) | set(sides[1]))
    # A split by a global load balancer is the environment's, in its traffic file (not in a
    # unit): compared when the sides are two environments' (two clusters of one share it).
    was, now = split_layer(old_env)[0], split_layer(new_env)[0]
    if was != now:
        pair = f"{render_traffic.path_of(was)} -> {render_traffic.path_of(now)}"
        objects += _split_diffs(
            f"{was} -> {now}",
            _env_splits(rendered.tree, was, pair),
            _env_splits(rendered.tree, now, pair),
        )
    return DiffResult(f"environment {old_env}", f"environment {new_env}", objects, units, findings)


def _clusters_of(env: str, layers: list[str]) -> list[str]:
    """The layers a side names: the environment itself, or its clusters (one, when `env` is
    `env/cluster`)."""
    if split_layer(env)[1]:
        return [env]
    return [lay for lay in layers if split_layer(lay)[0] == env and lay != env] or [env]


def _pairs(olds: list[str], news: list[str]) -> list[tuple[str, str]]:
    if len(olds) == 1 or len(news) == 1:
        return [(o, n) for o in olds for n in news]
    by_name = {split_layer(o)[1]: o for o in olds}
    out = [(by_name.pop(split_layer(n)[1], ""), n) for n in news]
    return out + [(o, "") for o in by_name.values()]


def _dashed(layer: str) -> str:
    """A layer as it appears in generated names (`<fleet>-<env>-<cluster>-<unit>`)."""
    return layer.replace("/", "-")


def _renamed(
    old: dict[Key, Obj], new: Mapping[Key, Obj], old_env: str, new_env: str
) -> dict[Key, Obj]:
    """Objects named after their environment (Argo CD Applications `<fleet>-<env>-<unit>`) are
    the same object in both: key the old one by its name in the new environment, so the diff
    shows a changed name and fields rather than one object removed and another added."""
    out: dict[Key, Obj] = {}
    for key, obj in old.items():
        api, kind, ns, name = key
        twin = (api, kind, ns.replace(old_env, new_env), name.replace(old_env, new_env))
        if key not in new and twin in new and twin not in old:
            key = twin
        out[key] = obj
    return out


def against_ref(values_dir: Path, ref: str, env: str | None = None) -> DiffResult:
    """The working tree's fresh render against what `ref` had (see the module's docstring)."""
    rendered, findings, envs = _fresh(values_dir)
    require_env(env, envs)
    values_dir = values_dir.resolve()
    repo = gitutil.toplevel(values_dir)
    commit = gitutil.resolve(repo, ref)
    rel = values_dir.relative_to(repo)
    out = rel.parent.as_posix()
    prefix = "" if out == "." else out + "/"
    # The committed output is read from git's object store (only the units whose files differ
    # are read and built); values without output beside them are rendered from a worktree.
    listing = gitutil.ls_tree(
        repo, commit, [f"{prefix}base", f"{prefix}overlays", f"{prefix}{render_traffic.FOLDER}"]
    )
    every = {path.removeprefix(prefix): blob for path, blob in listing.items()}
    ids = {p: blob for p, blob in every.items() if render_traffic.env_of(p) is None}
    if any(p.startswith("overlays/") for p in ids):
        how = "committed output"
        committed = gitutil.BlobTree(repo, every)
        try:
            objects = tree_diff(committed, rendered, env, ids).objects
            objects += traffic_diffs(committed, rendered.tree, env)
        finally:
            committed.close()
    else:
        how = "values rendered by this generator"
        with gitutil.worktree(repo, commit) as tree_root:
            before = _render_ref(tree_root / rel, ref)
            objects = _against_rendered(before, rendered, env)
            objects += traffic_diffs(before.tree if before else {}, rendered.tree, env)
    units = {u.path for u in rendered.units if env is None or layer_selected(u.env, env)}
    units |= {p for p in kustomize.unit_paths(ids) if _in_env(p, env)}
    old = f"{ref} ({commit[:12]}, {how})"
    return DiffResult(old, "working tree", objects, len(units), findings)


def _render_ref(values_dir: Path, ref: str) -> Rendered | None:
    if not values_dir.is_dir():
        return None  # the ref predates the fleet: everything is new
    try:
        return render_tree(values.load(values_dir))
    except FindingsError as exc:
        first = exc.findings[0].format()
        raise GeneratorError(
            f"the values at {ref} do not load ({len(exc.findings)} finding(s), first: {first})"
        ) from None


def _in_env(unit_path: str, env: str | None) -> bool:
    return env is None or layer_selected(_split(unit_path)[0], env)


def _split(unit_path: str) -> tuple[str, str]:
    """(layer, unit) of a unit's folder."""
    found = unit_folder(f"{unit_path}/kustomization.yaml")
    if found is None:
        raise ValueError(f"not a unit folder: {unit_path}")
    return found[0], found[1]


def _against_rendered(old: Rendered | None, new: Rendered, env: str | None) -> list[ObjectDiff]:
    before = {u.path: u for u in (old.units if old else []) if _in_env(u.path, env)}
    after = {u.path: u for u in new.units if _in_env(u.path, env)}
    out: list[ObjectDiff] = []
    for path in sorted(set(before) | set(after)):
        a, b = before.get(path), after.get(path)
        out += compare_objects(
            *_split(path), _by_key(a.objects if a else ()), _by_key(b.objects if b else ())
        )
    return out


@dataclass
class TreeDiff:
    """A committed tree against a fresh render, unit by unit."""

    objects: list[ObjectDiff]
    built_units: list[str]  # unit paths whose files differ: added, removed or changed
    old_counts: dict[str, int]  # objects each of those units had in the committed tree

    @property
    def changed_units(self) -> list[str]:
        """Units whose objects change (a new base can leave an overlay's objects as they were)."""
        return sorted({f"overlays/{o.env}/{o.unit}" for o in self.objects})


def tree_diff(
    committed: Mapping[str, str],
    new: Rendered,
    env: str | None = None,
    ids: Mapping[str, str] | None = None,
) -> TreeDiff:
    """Build (kustomize) only the committed units whose files differ from the fresh render's,
    and compare their objects with the render's. `ids`: the committed files' git blob ids, when
    known (then only the files of those units are read)."""
    after = {u.path: u for u in new.units if _in_env(u.path, env)}
    old_paths = [p for p in kustomize.unit_paths(committed) if _in_env(p, env)]
    old_inputs, new_inputs = kustomize.Inputs(committed, ids), kustomize.Inputs(new.tree)
    to_build = [
        p for p in old_paths if p not in after or old_inputs.digest(p) != new_inputs.digest(p)
    ]
    built = kustomize.build(committed, to_build)
    changed = sorted({*to_build, *(p for p in after if p not in old_paths)})
    out: list[ObjectDiff] = []
    counts: dict[str, int] = {}
    for path in changed:
        before = _by_key(kustomize.objects(built[path])) if path in built else {}
        counts[path] = len(before)
        unit = after.get(path)
        out += compare_objects(*_split(path), before, _by_key(unit.objects if unit else ()))
    return TreeDiff(out, changed, counts)
