"""Policy rules on the rendered objects, exactly as kustomize builds them for Argo CD.

Each rule has a code and a one-line summary, takes the environment's resolved values and one
unit's built objects, and yields findings located at the values that produced the object.
The pod placement rules catch what kubeconform cannot: a pod that can never schedule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..builders.common import identity
from ..errors import Finding, Location
from ..layout import Unit
from ..model import FleetView, Pool, Taint, Vendor

Obj = dict[str, Any]
RuleFn = Callable[[FleetView, Unit, list[Obj]], Iterable[Finding]]


@dataclass(frozen=True)
class ManifestRule:
    code: str
    summary: str
    fn: RuleFn


MANIFEST_RULES: dict[str, ManifestRule] = {}


def manifest_rule(code: str, summary: str) -> Callable[[RuleFn], RuleFn]:
    def register(fn: RuleFn) -> RuleFn:
        if code in MANIFEST_RULES:
            raise ValueError(f"rule code {code} registered twice")
        MANIFEST_RULES[code] = ManifestRule(code, summary, fn)
        return fn

    return register


def run_rules(view: FleetView, unit: Unit, objs: list[Obj]) -> list[Finding]:
    out: list[Finding] = []
    for rule in MANIFEST_RULES.values():
        out.extend(rule.fn(view, unit, objs))
    return out


def origin(unit: Unit, obj: Obj) -> Location:
    try:
        return unit.origins.get(identity(obj), Location(unit.path))
    except KeyError:
        return Location(unit.path)


def describe(unit: Unit, obj: Obj) -> str:
    meta = obj.get("metadata", {})
    ns = meta.get("namespace")
    name = f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))
    return f"{obj.get('kind')} {name} ({unit.path})"


# ---- pod templates ------------------------------------------------------------------------


@dataclass(frozen=True)
class PodTemplate:
    where: str  # JSON path of the template inside the object
    spec: dict[str, Any]


def pod_templates(obj: Obj) -> Iterator[PodTemplate]:
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if str(obj.get("apiVersion", "")).startswith("batch.volcano.sh/"):
        for i, task in enumerate(spec.get("tasks") or []):
            tpl = (task.get("template") or {}).get("spec") or {}
            yield PodTemplate(f"$.spec.tasks[{i}].template.spec", tpl)
    elif kind == "Pod":
        yield PodTemplate("$.spec", spec)
    elif kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
        yield PodTemplate("$.spec.template.spec", (spec.get("template") or {}).get("spec") or {})
    elif kind == "CronJob":
        tpl = ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}
        yield PodTemplate("$.spec.jobTemplate.spec.template.spec", tpl.get("spec") or {})


def _containers(spec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for field in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(field) or []):
            yield f"{field}[{i}]", c


def accelerator_requests(view: FleetView, spec: dict[str, Any]) -> dict[str, list[str]]:
    """{resource: [container paths]} for every vendor resource the pod asks for."""
    known = {v.resource_name for v in view.vendors}
    out: dict[str, list[str]] = {}
    for path, c in _containers(spec):
        res = c.get("resources") or {}
        for section in ("limits", "requests"):
            for name in res.get(section) or {}:
                if name in known and path not in out.get(name, []):
                    out.setdefault(name, []).append(path)
    return out


def _node_labels(view: FleetView, pool: Pool, node: str | None) -> dict[str, str]:
    labels = view.fleet.node_selector(pool.labels)
    if node:
        labels["kubernetes.io/hostname"] = node
    return labels


def _expr_matches(expr: dict[str, Any], labels: dict[str, str]) -> bool:
    key, op, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    return False  # Gt/Lt on accelerator labels: treat as not matching (conservative)


def selects(spec: dict[str, Any], labels: dict[str, str]) -> bool:
    """Whether a node with `labels` passes the pod's nodeSelector and required node affinity."""
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if terms:
        return any(
            all(_expr_matches(e, labels) for e in (t.get("matchExpressions") or [])) for t in terms
        )
    return True


def tolerates(spec: dict[str, Any], taint: Taint) -> bool:
    if taint.effect == "PreferNoSchedule":
        return True
    for tol in spec.get("tolerations") or []:
        effect_ok = not tol.get("effect") or tol.get("effect") == taint.effect
        op = tol.get("operator", "Equal")
        if op == "Exists":
            key_ok = not tol.get("key") or tol.get("key") == taint.key
            if key_ok and effect_ok:
                return True
        elif tol.get("key") == taint.key and tol.get("value", "") == taint.value and effect_ok:
            return True
    return False


def selected_pools(view: FleetView, spec: dict[str, Any]) -> list[tuple[Vendor, Pool]]:
    out = []
    for vendor in view.vendors:
        for pool in vendor.pools:
            nodes: tuple[str | None, ...] = pool.nodes or (None,)
            if any(selects(spec, _node_labels(view, pool, n)) for n in nodes):
                out.append((vendor, pool))
    return out


def _accelerator_pods(
    view: FleetView, objs: list[Obj]
) -> Iterator[tuple[Obj, PodTemplate, dict[str, list[str]]]]:
    for obj in objs:
        for tpl in pod_templates(obj):
            wanted = accelerator_requests(view, tpl.spec)
            if wanted:
                yield obj, tpl, wanted


@manifest_rule(
    "GPU001",
    "a pod asking for an accelerator selects no pool of a vendor that "
    "advertises it (it can never schedule)",
)
def unschedulable(view: FleetView, unit: Unit, objs: list[Obj]) -> Iterable[Finding]:
    for obj, tpl, wanted in _accelerator_pods(view, objs):
        pools = selected_pools(view, tpl.spec)
        for resource in sorted(wanted):
            ok = [(v, p) for v, p in pools if v.resource_name == resource]
            if not ok:
                vendors = ", ".join(v.id for v in view.vendors_for_resource(resource))
                yield Finding(
                    "GPU001",
                    f"{describe(unit, obj)} requests {resource} but its node selection matches "
                    f"no pool of {vendors}: it can never schedule",
                    origin(unit, obj),
                    tpl.where + ".nodeSelector",
                    "select the vendor's pools (e.g. by its accelerator label)",
                )


@manifest_rule("GPU002", "a pod asking for an accelerator does not tolerate its pool's taints")
def untolerated(view: FleetView, unit: Unit, objs: list[Obj]) -> Iterable[Finding]:
    for obj, tpl, wanted in _accelerator_pods(view, objs):
        for vendor, pool in selected_pools(view, tpl.spec):
            if vendor.resource_name not in wanted:
                continue
            missing = [t for t in pool.taints if not tolerates(tpl.spec, t)]
            if missing:
                t = missing[0]
                yield Finding(
                    "GPU002",
                    f"{describe(unit, obj)} selects pool {vendor.id}/{pool.name} but does not "
                    f"tolerate its taint {t.key}={t.value}:{t.effect}",
                    origin(unit, obj),
                    tpl.where + ".tolerations",
                    "add a toleration for the pool's taint",
                )


def _quantity(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


@manifest_rule(
    "GPU003", "accelerator requests must be whole devices, set in limits, and equal to the requests"
)
def whole_devices(view: FleetView, unit: Unit, objs: list[Obj]) -> Iterable[Finding]:
    known = {v.resource_name for v in view.vendors}
    for obj in objs:
        for tpl in pod_templates(obj):
            for path, c in _containers(tpl.spec):
                res = c.get("resources") or {}
                limits, requests = res.get("limits") or {}, res.get("requests") or {}
                for name in sorted((set(limits) | set(requests)) & known):
                    lim, req = limits.get(name), requests.get(name)
                    where = f"{tpl.where}.{path}.resources"
                    problem = ""
                    if lim is None:
                        problem = f"requests {name} without a limit"
                    elif _quantity(lim) is None:
                        problem = f"asks for {lim!r} {name}, not a whole number of devices"
                    elif req is not None and _quantity(req) != _quantity(lim):
                        problem = f"requests {req!r} but limits {lim!r} {name}"
                    if problem:
                        yield Finding(
                            "GPU003",
                            f"{describe(unit, obj)} {problem}",
                            origin(unit, obj),
                            where,
                            "set limits to a whole number and requests equal to it",
                        )


@manifest_rule("GPU004", "a pod asks for devices of two vendors at once")
def two_vendors(view: FleetView, unit: Unit, objs: list[Obj]) -> Iterable[Finding]:
    for obj, tpl, wanted in _accelerator_pods(view, objs):
        if len(wanted) > 1:
            yield Finding(
                "GPU004",
                f"{describe(unit, obj)} asks for {' and '.join(sorted(wanted))}: no node has both",
                origin(unit, obj),
                tpl.where,
                "split it into one workload per vendor",
            )


@manifest_rule(
    "GPU005",
    "a pod asks for a resource two vendors advertise and its selection matches pools of both",
)
def ambiguous_vendor(view: FleetView, unit: Unit, objs: list[Obj]) -> Iterable[Finding]:
    for obj, tpl, wanted in _accelerator_pods(view, objs):
        pools = selected_pools(view, tpl.spec)
        for resource in sorted(wanted):
            vendors = sorted({v.id for v, _ in pools if v.resource_name == resource})
            if len(vendors) > 1:
                yield Finding(
                    "GPU005",
                    f"{describe(unit, obj)} requests {resource}, which {' and '.join(vendors)} "
                    "both advertise, and its node selection matches both",
                    origin(unit, obj),
                    tpl.where + ".nodeSelector",
                    "select one vendor's pools by its accelerator label",
                )
