"""Pod placement on a mixed fleet: can a pod template that asks for accelerators ever schedule?

One implementation, used twice: at render time on the pod templates the builders make (the POD
checks, located at the workload's values) and by validate on the objects exactly as kustomize
builds them (after overlays and patches), for every kind that carries a pod template.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from generator.builders.claims import claimed
from generator.builders.workloads import TRAINER_STEP
from generator.values.model import FleetView, Pool, Taint, Vendor
from generator.vocab import api
from generator.vocab.kube import HOSTNAME_LABEL
from generator.workloads import podspec

SUMMARIES = {
    "POD001": "a pod template requests devices that are not whole, or requests != limits",
    "POD002": "a pod template requests two vendors' devices at once",
    "POD003": "a pod template requests a device but selects no pool of a vendor advertising it",
    "POD004": "a pod template does not tolerate the taints of the pools it selects",
    "POD005": "a pod template requests a shared resource name and selects more than one vendor",
}


@dataclass(frozen=True)
class Problem:
    code: str
    message: str
    where: str  # path inside the pod spec, e.g. "containers[0].resources"
    vendors: tuple[str, ...] = ()  # POD005: the vendors whose pools it picks, sorted


@dataclass(frozen=True)
class Clash:
    """Two vendors that advertise one resource name, where `vendor`'s selector also matches a
    pool of `other`'s: a pod asking for the resource by the vendor's selector may land on
    either."""

    vendor: Vendor
    other: Vendor
    pool: Pool


def selector_clashes(view: FleetView) -> list[Clash]:
    """One clash per pair of vendors that selectors cannot tell apart (RES001), said by the
    vendor later in id order whose selector matches: a clone of a catalog entry sorts after
    it, and with both selectors matching (the clone kept the label) the pair is one mistake."""
    out: list[Clash] = []
    said: set[frozenset[str]] = set()
    for vendor in reversed(view.vendors):
        for other in view.vendors_for_resource(vendor.resource_name):
            pair = frozenset((vendor.id, other.id))
            if other.id == vendor.id or pair in said:
                continue
            pool = next((p for p in other.pools if _selects(vendor.selector, p.labels)), None)
            if pool is not None:
                said.add(pair)
                out.append(Clash(vendor, other, pool))
    return out


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


@dataclass(frozen=True)
class PodTemplate:
    where: str  # JSON path of the pod spec inside its object
    spec: dict[str, Any]
    labels: dict[str, Any]  # the pod template's labels ({} for a bare Pod: see its metadata)
    # How many pods the object runs from this template at once, as its own fields say (with the
    # API's defaults); None when they do not say (a DaemonSet's: one per node it selects).
    pods: int | None = None


def _template(where: str, template: dict[str, Any] | None, pods: int | None) -> PodTemplate:
    template = template or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    return PodTemplate(f"{where}.spec", template.get("spec") or {}, labels, pods)


def _int(value: Any, default: int) -> int:
    """A count field as the API server defaults it when unset (null included)."""
    return default if value is None else int(value)


def pod_templates(obj: dict[str, Any]) -> Iterator[PodTemplate]:
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    group = api.group(str(obj.get("apiVersion", "")))
    if group == api.VOLCANO_BATCH_GROUP:
        # volcano.sh/apis v1.14.0 batch/v1alpha1 job.go TaskSpec.Replicas, the task's pods; the
        # type gives no default, and unset is counted as one, as diff's devices-down always has.
        for i, task in enumerate(spec.get("tasks") or []):
            pods = _int(task.get("replicas"), 1)
            yield _template(f"$.spec.tasks[{i}].template", task.get("template"), pods)
    elif group == api.JOBSET_GROUP and kind == "JobSet":
        # sigs.k8s.io/jobset v0.11.1 api/jobset/v1alpha2: replicatedJobs[].template is a
        # batch/v1 JobTemplateSpec; replicas (default 1) Jobs are made from it, each running
        # parallelism (default 1) pods.
        for i, rjob in enumerate(spec.get("replicatedJobs") or []):
            job = ((rjob or {}).get("template") or {}).get("spec") or {}
            pods = _int((rjob or {}).get("replicas"), 1) * _int(job.get("parallelism"), 1)
            yield _template(
                f"$.spec.replicatedJobs[{i}].template.spec.template", job.get("template"), pods
            )
    elif group == api.LWS_GROUP:
        # sigs.k8s.io/lws v0.8.0 api/leaderworkerset/v1: a group's leader and worker templates
        # (the leader's optional: without it, the leader is made from the worker template);
        # replicas groups (default 1) of size pods each, the leader included (default 1).
        lws = spec.get("leaderWorkerTemplate") or {}
        where = "$.spec.leaderWorkerTemplate"
        groups, size = _int(spec.get("replicas"), 1), _int(lws.get("size"), 1)
        if lws.get("leaderTemplate") is not None:
            yield _template(f"{where}.leaderTemplate", lws.get("leaderTemplate"), groups)
            size -= 1
        yield _template(f"{where}.workerTemplate", lws.get("workerTemplate"), groups * size)
    elif group == api.TRAINER_GROUP and kind == "TrainJob":
        yield from _trainjob_templates(spec)
    elif kind == "Pod":
        yield PodTemplate("$.spec", spec, {}, 1)
    elif kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        # Unset replicas is 1 (kubernetes pkg/apis/apps/v1/defaults.go).
        pods = _int(spec.get("replicas"), 1)
        yield _template("$.spec.template", spec.get("template"), pods)
    elif kind == "Job":
        pods = _int(spec.get("parallelism"), 1)  # batch/v1 defaults.go: parallelism 1
        yield _template("$.spec.template", spec.get("template"), pods)
    elif kind == "DaemonSet":
        yield _template("$.spec.template", spec.get("template"), None)
    elif kind == "CronJob":
        job = (spec.get("jobTemplate") or {}).get("spec") or {}
        pods = _int(job.get("parallelism"), 1)
        yield _template("$.spec.jobTemplate.spec.template", job.get("template"), pods)


def _trainjob_templates(spec: dict[str, Any]) -> Iterator[PodTemplate]:
    """A TrainJob's pod templates as far as the TrainJob gives them: each replicated job's pod
    template in its runtime patches (github.com/kubeflow/trainer/v2 v2.2.0 trainjob_types.go
    RuntimePatch), with the trainer's image and resources on the trainer container "node",
    where Trainer puts them (pkg/runtime/framework/plugins/jobset/builder.go Trainer). The rest
    is the runtime's, which is not read here: so is how many pods a step other than the
    trainer's runs; the trainer's runs trainer.numNodes (trainjob_types.go Trainer.NumNodes,
    the runtime's when unset)."""
    trainer = spec.get("trainer") or {}
    nodes = trainer.get("numNodes")
    for i, patch in enumerate(spec.get("runtimePatches") or []):
        template = ((patch or {}).get("trainingRuntimeSpec") or {}).get("template") or {}
        for j, rjob in enumerate((template.get("spec") or {}).get("replicatedJobs") or []):
            pod = (((rjob or {}).get("template") or {}).get("spec") or {}).get("template") or {}
            where = (
                f"$.spec.runtimePatches[{i}].trainingRuntimeSpec.template.spec"
                f".replicatedJobs[{j}].template.spec.template"
            )
            step = (rjob or {}).get("name") == TRAINER_STEP
            found = _template(where, pod, int(nodes) if step and nodes is not None else None)
            containers = [
                {**c, "image": trainer.get("image"), "resources": trainer.get("resourcesPerNode")}
                if c.get("name") == TRAINER_STEP and trainer
                else c
                for c in found.spec.get("containers") or []
            ]
            spec_ = {**found.spec, "containers": containers}
            yield PodTemplate(found.where, spec_, found.labels, found.pods)


def expr_matches(expr: dict[str, Any], labels: dict[str, str]) -> bool:
    """A node selector requirement as Kubernetes evaluates it (source: kubernetes/apimachinery
    pkg/labels/selector.go, Requirement.Matches: Gt and Lt compare the label and the one value
    as integers, and match nothing when either is not one)."""
    key, op, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt") and len(values) == 1 and key in labels:
        try:
            have, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def selector_matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector as Kubernetes evaluates it: every matchLabels pair and every
    matchExpressions requirement; an empty selector matches everything (kubernetes/apimachinery
    pkg/apis/meta/v1/helpers.go, LabelSelectorAsSelector)."""
    pairs = selector.get("matchLabels") or {}
    exprs = selector.get("matchExpressions") or []
    return all(labels.get(k) == v for k, v in pairs.items()) and all(
        expr_matches(e, labels) for e in exprs
    )


def _required_terms(spec: dict[str, Any]) -> list[dict[str, Any]]:
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    return list(required.get("nodeSelectorTerms") or [])


def affinity_keys(spec: dict[str, Any]) -> set[str]:
    """The node label keys a pod's node affinity reads, required or preferred (matchFields name
    the node, not a label)."""
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    preferred = affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    terms = _required_terms(spec) + [p.get("preference") or {} for p in preferred]
    return {str(e.get("key")) for term in terms for e in term.get("matchExpressions") or []}


def _term_matches(term: dict[str, Any], labels: dict[str, str]) -> bool:
    """One nodeSelectorTerm: its requirements ANDed; an empty term matches no node (source:
    kubernetes/api core/v1 types.go, NodeSelectorTerm). matchFields can only name the node
    (metadata.name): it is read from the hostname label, which Pools.picked sets to each named
    node's name, so a pool whose nodes are not named never matches a term that names nodes."""
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False
    name = {"metadata.name": labels[HOSTNAME_LABEL]} if HOSTNAME_LABEL in labels else {}
    return all(expr_matches(e, labels) for e in exprs) and all(
        expr_matches(f, name) for f in fields
    )


def selects(spec: dict[str, Any], labels: dict[str, str]) -> bool:
    """Whether a node with `labels` passes the pod's nodeSelector and required node affinity."""
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    terms = _required_terms(spec)
    if terms:
        return any(_term_matches(t, labels) for t in terms)
    return True


def unselected(spec: dict[str, Any], labels: dict[str, str]) -> list[str]:
    """What keeps a pod off a node with `labels` (nothing when `selects`): each nodeSelector pair
    the node lacks, and when no required node affinity term matches, each term's requirements
    that fail, the terms joined by "or" as Kubernetes ORs them."""
    out = [
        f"nodeSelector {k}={v}"
        for k, v in (spec.get("nodeSelector") or {}).items()
        if labels.get(k) != v
    ]
    terms = _required_terms(spec)
    if terms and not any(_term_matches(t, labels) for t in terms):
        name = {"metadata.name": labels[HOSTNAME_LABEL]} if HOSTNAME_LABEL in labels else {}
        wants = [
            " and ".join(
                [
                    _requirement(e)
                    for e in t.get("matchExpressions") or []
                    if not expr_matches(e, labels)
                ]
                + [_requirement(f) for f in t.get("matchFields") or [] if not expr_matches(f, name)]
            )
            or "an empty term"
            for t in terms
        ]
        out.append("node affinity " + " or ".join(wants))
    return out


def _requirement(expr: dict[str, Any]) -> str:
    key, op, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
    return f"{key} {op} ({', '.join(map(str, values))})" if values else f"{key} {op}"


def tolerates(spec: dict[str, Any], taint: Taint) -> bool:
    """Whether a pod spec may land on a node with `taint` (PreferNoSchedule only prefers)."""
    if taint.effect == "PreferNoSchedule":
        return True
    return any(podspec.tolerates(tol, taint) for tol in spec.get("tolerations") or [])


class Pools:
    """A view's pools with the node labels they land with, and the pools each pod selection
    picks, worked out once per view and once per distinct selection: a view of 500 teams asks
    the same few selections thousands of times (an edit's checks made 300,000 node selectors
    for 3,000 pod templates before). What a pick reads of a pod spec is its nodeSelector and
    its affinity, nothing else (`selects`, and the hostname test below), so two specs whose
    two fields have one repr (builtin data: equal reprs are equal data) pick the same pools."""

    def __init__(self, view: FleetView) -> None:
        self.view = view
        self._labelled = [
            (vendor, pool, view.fleet.node_selector(pool.labels))
            for vendor in view.vendors
            for pool in vendor.pools
        ]
        self._picked: dict[str, list[tuple[Vendor, Pool]]] = {}

    def picked(self, spec: dict[str, Any]) -> Sequence[tuple[Vendor, Pool]]:
        """The (vendor, pool) pairs a pod with `spec` may land on, in view order."""
        key = repr((spec.get("nodeSelector"), spec.get("affinity")))
        found = self._picked.get(key)
        if found is None:
            found = self._picked[key] = self._pick(spec)
        return found

    def _pick(self, spec: dict[str, Any]) -> list[tuple[Vendor, Pool]]:
        # Node by node only when the pod names nodes: pools can hold hundreds of them.
        affinity = str(spec.get("affinity") or "")
        per_node = (
            HOSTNAME_LABEL in (spec.get("nodeSelector") or {})
            or HOSTNAME_LABEL in affinity
            or "matchFields" in affinity
        )
        out = []
        for vendor, pool, labels in self._labelled:
            nodes: tuple[str, ...] = pool.nodes if per_node and pool.nodes else ()
            if nodes:
                hit = any(selects(spec, {**labels, HOSTNAME_LABEL: n}) for n in nodes)
            else:
                hit = selects(spec, labels)
            if hit:
                out.append((vendor, pool))
        return out


def _whole(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, str) and value.isdigit()
    )


def _selection(spec: dict[str, Any]) -> str:
    selector = spec.get("nodeSelector") or {}
    shown = "nodeSelector {" + ", ".join(f"{k}={v}" for k, v in selector.items()) + "}"
    return shown + (" and node affinity" if _required_terms(spec) else "")


def _containers(spec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for field in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(field) or []):
            yield f"{field}[{i}]", c


def pod_problems(pools: Pools, spec: dict[str, Any]) -> list[Problem]:
    """Every placement problem of one pod spec, container by container, on `pools`' view."""
    view = pools.view
    accel = {v.resource_name for v in view.vendors if not v.dra}
    # Devices claimed through a DRA vendor's DeviceClass count as that vendor's resource.
    dra = claimed(view, spec)
    out: list[Problem] = []
    picked: Sequence[tuple[Vendor, Pool]] | None = None
    for where, c in _containers(spec):
        name = c.get("name", "?")
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        extended = sorted(r for r in {*req, *lim} if r in accel)
        by_claim = {
            dra[n][0].resource_name
            for cl in res.get("claims") or []
            if (n := cl.get("name")) in dra
        }
        wanted = sorted({*extended, *by_claim})
        for r in extended:
            if not _whole(lim.get(r)) or (r in req and str(req[r]) != str(lim.get(r))):
                out.append(
                    Problem(
                        "POD001",
                        f"container {name!r} requests {r}: requests {req.get(r)!r}, limits "
                        f"{lim.get(r)!r}; devices are whole numbers in limits, with equal requests",
                        f"{where}.resources",
                    )
                )
        if len(wanted) > 1:
            out.append(
                Problem(
                    "POD002",
                    f"container {name!r} requests {' and '.join(wanted)} at once",
                    f"{where}.resources",
                )
            )
            continue
        if not wanted:
            continue
        if picked is None:
            picked = pools.picked(spec)
        r = wanted[0]
        matched = [(v, p) for v, p in picked if v.resource_name == r]
        vendors = sorted({v.id for v, _ in matched})
        if not matched:
            out.append(
                Problem(
                    "POD003",
                    f"container {name!r} requests {r} but its {_selection(spec)} picks no pool of "
                    + " or ".join(v.id for v in view.vendors_for_resource(r)),
                    "nodeSelector",
                )
            )
        elif len(vendors) > 1:
            out.append(
                Problem(
                    "POD005",
                    f"container {name!r} requests {r}, which {' and '.join(vendors)} both "
                    f"advertise, and its {_selection(spec)} picks pools of both",
                    "nodeSelector",
                    tuple(vendors),
                )
            )
        else:
            for _, pool in matched:
                for taint in pool.taints:
                    if not tolerates(spec, taint):
                        out.append(
                            Problem(
                                "POD004",
                                f"container {name!r} does not tolerate taint "
                                f"{taint.key}={taint.value}:{taint.effect} of pool {pool.name!r}",
                                "tolerations",
                            )
                        )
    return out
