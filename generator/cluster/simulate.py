"""`render.py simulate`: apply the fleet to a local control plane with simulated nodes and report
what the real kube-scheduler, controllers, admission and nfd-master make of it.

Per environment, on a control plane with no trace of the last one:

1. nodes: one per pool node, a general-purpose server and each CPU-only server type with a PCI
   inventory, registered cordoned, each publishing its PCI inventory as a NodeFeature;
2. units in Argo CD's wave order (generator/cluster/units.py): the argocd unit is dry-run only
   (no Argo CD runs here); node-config, then wait until nfd-master has run every rule on every
   node, then uncordon; a probe pod per node with no tolerations; device plugins, monitoring and
   scheduling units; then every team unit without its Jobs, until the services have settled;
3. then every Job at once into what the services leave (steady state); a Job that does not run
   is tried again alone, to tell "waits for the team's other jobs" from "never fits";
4. the report: node labels and taints against the pool's, DaemonSet pods per vendor, every job,
   task and service pod, the probe pods, quota used against hard, ready pods per track against
   `plan`. Any mismatch is an error finding at the values that caused it.

What cannot be simulated is said in the report and in docs/simulation.md: containers do not run
(KWOK marks scheduled pods Running), Volcano and Kueue do not run (a Volcano Job's task pods are
made here the way Volcano's job controller makes them and scheduled by kube-scheduler, without
gang scheduling; Kueue admits nothing, so Jobs run as if admitted at once).
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from ..builders.common import TEAM_LABEL, VENDOR_LABEL
from ..builders.scheduling import KUBE_SCHEDULER_CONF_KEY, KUBE_SCHEDULER_CONFIGMAP
from ..builders.workloads import NAME_LABEL, TRACK_LABEL, PodRef, team_objects
from ..errors import Finding, FindingsError, Location, Severity, sorted_findings
from ..model import FleetView, Values
from ..validate.rules import describe, origin
from ..workloads.model import team_workloads
from ..workloads.phases import plan_service
from .api import ApiClient, ApiError, UnknownKind
from .crds import needed_crds
from .dryrun import addon_namespaces, load, version_findings
from .fleetnodes import (
    SimNode,
    fleet_label_keys,
    fleet_taint_keys,
    node_feature,
    node_object,
    plan_nodes,
)
from .launcher import ControlPlane, metrics, node_ready, reset
from .units import ARGOCD_UNIT, BuiltUnit, build, object_wave

Obj = dict[str, Any]
SETTLE_TIMEOUT = 120.0
APPLY_WORKERS = 8
UNIT_WORKERS = 4
QUIET = 1.5
POLL = 0.25
PROBE_NAMESPACE = "accel-sim-probe"
VOLCANO_JOB = ("batch.volcano.sh/v1alpha1", "Job")
BATCH_JOB = ("batch/v1", "Job")
JOB_KINDS = (BATCH_JOB, VOLCANO_JOB)
SYSTEM_TAINT = re.compile(r"^node\.kubernetes\.io/|^node-role\.kubernetes\.io/")

HINTS = {
    "SIM001": "fix the pool's labels, or the NodeFeatureRule match (PCI class and device IDs)",
    "SIM002": "use a taint key NFD accepts (prefixed, e.g. feature.node.kubernetes.io/...)",
    "SIM003": "the DaemonSet must select exactly its vendor's nodes: fix its selector or the rules",
    "SIM004": "the scheduler's reason says what is missing: capacity, a label, or a toleration",
    "SIM005": "select the vendor's pools (and model) in the workload",
    "SIM006": "taint the pool's nodes (with a key nfd-master accepts)",
    "SIM007": "replicas per track must be what plan says: check capacity, quota and placement",
    "SIM008": "the API server's reason says what refused the pods: quota or Pod Security",
    "SIM009": "add a PCI inventory for the server type (generator/inventories)",
    "SIM010": "the job waits for the team's other jobs: fine for a queue, or raise the quota",
}


# --------------------------------------------------------------------------------------- report


@dataclass
class NodeResult:
    name: str
    what: str
    want_labels: dict[str, str]
    labels: dict[str, str]
    want_taints: list[str]
    taints: list[str]
    ok: bool


@dataclass
class PodResult:
    team: str
    workload: str
    pod: str
    vendor: str
    phase: str
    node: str
    reason: str
    ok: bool


@dataclass
class EnvReport:
    env: str
    nodes: list[NodeResult] = field(default_factory=list)
    plugins: list[dict[str, Any]] = field(default_factory=list)
    probes: list[dict[str, Any]] = field(default_factory=list)
    pods: list[PodResult] = field(default_factory=list)
    quotas: list[dict[str, Any]] = field(default_factory=list)
    tracks: list[dict[str, Any]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    objects: int = 0


@dataclass
class SimulationResult:
    envs: list[EnvReport]
    findings: list[Finding]
    started_in: float = 0.0

    @property
    def errors(self) -> int:
        return sum(f.severity is Severity.ERROR for f in self.findings)


# ------------------------------------------------------------------------------------ the run


def simulate(
    values_dir: Path,
    env: str | None,
    plane_factory: Callable[[], contextlib.AbstractContextManager[ControlPlane]],
) -> SimulationResult:
    try:
        loaded, envs, _ = load(values_dir, env)
    except FindingsError as exc:
        return SimulationResult([], exc.findings)
    findings = version_findings(loaded, None, "simulation")
    if findings:
        return SimulationResult([], findings)
    reports: list[EnvReport] = []
    with plane_factory() as plane:
        api = plane.client()
        for name in envs:
            reset(plane)  # no trace of the last environment (or run, on a shared plane)
            reports.append(_simulate_env(loaded, name, plane, api))
    everything = [f for r in reports for f in r.findings]
    return SimulationResult(reports, sorted_findings(everything), plane.started_in)


def _simulate_env(loaded: Values, env: str, plane: ControlPlane, api: ApiClient) -> EnvReport:
    view = loaded.envs[env]
    report = EnvReport(env)
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        report.timings[name] = round(now - clock, 3)
        clock = now

    built, build_findings = build(loaded, env)
    report.findings += build_findings
    plane.use_scheduler_config(scheduler_config(built))
    lap("scheduler")
    api.apply_crds(needed_crds([o for b in built for o in b.docs]))
    for ns in addon_namespaces(loaded, env):
        api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    lap("install")

    nodes = plan_nodes(view)
    for node in nodes:
        if node.inventory is None:
            report.findings.append(
                Finding(
                    "SIM009",
                    f"node {node.name} ({node.describe()}): no PCI inventory for its server type, "
                    "so nfd-master has nothing to match: its labels and taints are not simulated",
                    node.location() or Location("values"),
                    hint=HINTS["SIM009"],
                    severity=Severity.WARNING,
                )
            )

    def register(node: SimNode) -> None:
        # Features first, then the Node: nfd-master labels a node as soon as it sees both.
        api.apply(node_feature(node))
        api.create(node_object(node))

    _parallel(register, nodes)
    names = {n.name for n in nodes}

    def all_ready() -> bool:
        live = [n for n in api.list("v1", "Node") if n["metadata"]["name"] in names]
        return sum(node_ready(n) for n in live) == len(names)

    lap("nodes")

    waves = sorted({b.wave for b in built})
    team_jobs: list[tuple[BuiltUnit, Obj]] = []
    for wave in waves:
        units = [b for b in built if b.wave == wave]
        jobs = {
            b.unit.path: [o for o in b.docs if (o.get("apiVersion"), o.get("kind")) in JOB_KINDS]
            for b in units
        }
        team_jobs += [(b, o) for b in units for o in jobs[b.unit.path]]

        # No Argo CD runs here: its Applications are checked (dry-run), not acted on. Argo CD
        # syncs the Applications of one wave independently, at the same time.
        syncs = [
            (api, b, b.docs, True)
            if b.unit.name == ARGOCD_UNIT
            else (api, b, [o for o in b.docs if o not in jobs[b.unit.path]], False)
            for b in units
        ]
        for found, count in _parallel(_sync, syncs, workers=UNIT_WORKERS):
            report.findings += found
            report.objects += count
        node_config = [b for b in units if b.unit.name == "node-config"]
        for unit in node_config:
            _wait_node_config(plane, api, unit, nodes)
        if node_config:
            # nfd-master works on nodes that KWOK may not have made Ready yet: wait for both
            # only here, before the nodes take pods.
            _wait(all_ready, "nodes Ready")
            _check_nodes(plane, api, view, nodes, report)
            _parallel(
                lambda n: api.merge_patch(
                    "v1", "Node", "", n.name, {"spec": {"unschedulable": False}}
                ),
                nodes,
            )
            lap("node-config")
            _probe(api, nodes, report)
            lap("probes")
    _settle(api)
    lap("services")
    _check_plugins(api, view, nodes, built, report)

    refs = _pod_refs(view)
    node_info = {n.name: n for n in nodes}
    outcome = _run_jobs(api, team_jobs, report)
    lap("jobs")
    rows, failing = _check_pods(api, view, refs, node_info, outcome, env)
    report.pods = rows
    for key, fs in failing.items():
        if key[1] == "Deployment":
            report.findings += fs
    _check_quotas(api, view, report)
    _check_tracks(api, view, report)
    jobs_failing = {k: fs for k, fs in failing.items() if k[1] != "Deployment"}
    if jobs_failing:
        _retry_alone(api, view, team_jobs, refs, node_info, jobs_failing, report)
        lap("jobs alone")
    report.findings = sorted_findings(report.findings)
    return report


# ------------------------------------------------------------------------------------ helpers


def scheduler_config(built: list[BuiltUnit]) -> dict[str, Any] | None:
    """The KubeSchedulerConfiguration the fleet renders for its clusters' scheduler (packing),
    as the cluster would read it from the ConfigMap; None: kube-scheduler's defaults."""
    for unit in built:
        for obj in unit.docs:
            meta = obj.get("metadata", {})
            if obj.get("kind") == "ConfigMap" and meta.get("name") == KUBE_SCHEDULER_CONFIGMAP:
                text = (obj.get("data") or {}).get(KUBE_SCHEDULER_CONF_KEY, "")
                doc = yaml.safe_load(text) if text else None
                return doc if isinstance(doc, dict) else None
    return None


def _wait(ready: Callable[[], bool], what: str, timeout: float = SETTLE_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise ApiError(0, "Timeout", f"simulation: {what} not reached after {timeout:g} s")
        time.sleep(POLL)


def _apply_all(
    api: ApiClient, unit: BuiltUnit, docs: list[Obj], *, dry_run: bool = False
) -> tuple[list[Finding], int]:
    """Apply a unit's objects as Argo CD syncs them: wave by wave (sync-wave annotation), the
    objects of one wave at once, and the next wave only when this one is ready (gitops-engine
    runs a wave's tasks concurrently and waits for their health: sync_context.go, at 04c4b72).
    Returns the refusals and the number of objects applied."""
    out: list[Finding] = []
    waves: dict[int, list[Obj]] = {}
    for obj in docs:
        waves.setdefault(object_wave(obj), []).append(obj)
    for wave in sorted(waves):
        group = waves[wave]
        errors = _parallel(lambda o: _apply_one(api, o, dry_run), group)
        for obj, exc in zip(group, errors, strict=True):
            if exc is not None:
                out.append(
                    Finding(
                        "SIM012",
                        f"{describe(unit.unit, obj)}: the API server refuses it: {exc}",
                        origin(unit.unit, obj),
                        hint="validate --dry-run=server shows the details",
                    )
                )
        if not dry_run:
            _wait(_all_ready(api, group), f"wave {wave} of {unit.unit.path}")
    return out, len(docs)


def _sync(item: tuple[ApiClient, BuiltUnit, list[Obj], bool]) -> tuple[list[Finding], int]:
    api, unit, docs, dry_run = item
    return _apply_all(api, unit, docs, dry_run=dry_run)


T = TypeVar("T")
R = TypeVar("R")


def _parallel(fn: Callable[[T], R], items: list[T], workers: int = APPLY_WORKERS) -> list[R]:
    if len(items) <= 1:
        return [fn(i) for i in items]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, items))


def _apply_one(api: ApiClient, obj: Obj, dry_run: bool) -> Exception | None:
    try:
        api.apply(obj, dry_run=dry_run)
    except (ApiError, UnknownKind) as exc:
        return exc
    return None


def _all_ready(api: ApiClient, group: list[Obj]) -> Callable[[], bool]:
    return lambda: all(_ready(api, o) for o in group)


def _ready(api: ApiClient, obj: Obj) -> bool:
    """Whether what the next wave relies on is in place: a namespace with its default
    ServiceAccount (pod admission needs it), a quota the quota controller has counted (until
    then quota admission refuses pods: "status unknown for quota")."""
    meta = obj.get("metadata", {})
    kind = obj.get("kind")
    if kind == "Namespace" and obj.get("apiVersion") == "v1":
        return api.exists("v1", "ServiceAccount", meta["name"], "default")
    if kind == "ResourceQuota":
        live = api.get("v1", "ResourceQuota", meta.get("namespace", ""), meta["name"]) or {}
        return bool(live.get("status", {}).get("hard"))
    return True


def _fingerprint(api: ApiClient) -> tuple[Any, ...]:
    pods = tuple(
        sorted(
            (
                p["metadata"].get("namespace", ""),
                p["metadata"]["name"],
                p.get("status", {}).get("phase", ""),
                p.get("spec", {}).get("nodeName", ""),
                _scheduled(p),
            )
            for p in api.list("v1", "Pod")
        )
    )
    owners = tuple(
        sorted(
            (k, o["metadata"].get("namespace", ""), o["metadata"]["name"], str(o.get("status")))
            for k in (
                ("apps/v1", "Deployment"),
                ("apps/v1", "ReplicaSet"),
                ("apps/v1", "DaemonSet"),
                BATCH_JOB,
            )
            for o in api.list(*k)
        )
    )
    events = sum(1 for e in api.list("v1", "Event") if e.get("reason") == "FailedCreate")
    return pods, owners, events


def _scheduled(pod: Obj) -> str:
    for cond in pod.get("status", {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled":
            return f"{cond.get('status')}:{cond.get('reason', '')}"
    return ""


def _undecided(pod: Obj) -> bool:
    """A pod the scheduler has not looked at yet."""
    status = pod.get("status", {})
    return (
        status.get("phase") == "Pending"
        and not pod.get("spec", {}).get("nodeName")
        and not _scheduled(pod)
    )


def _settle(api: ApiClient, timeout: float = SETTLE_TIMEOUT) -> None:
    """Wait until nothing changes for QUIET seconds and the scheduler has seen every pod."""
    deadline = time.monotonic() + timeout
    last = None
    since = time.monotonic()
    while True:
        now = _fingerprint(api)
        undecided = any(_undecided(p) for p in api.list("v1", "Pod"))
        if now != last or undecided:
            last = now
            since = time.monotonic()
        elif time.monotonic() - since >= QUIET:
            return
        if time.monotonic() > deadline:
            raise ApiError(0, "Timeout", f"simulation did not settle after {timeout:g} s")
        time.sleep(POLL)


def _wait_node_config(
    plane: ControlPlane, api: ApiClient, unit: BuiltUnit, nodes: list[SimNode]
) -> None:
    """Until nfd-master has run every NodeFeatureRule on every node since they were applied,
    then until the nodes stop changing (its metric per rule and node: pkg/nfd-master/metrics.go,
    nodefeaturerule_processing_duration_seconds, v0.19.0)."""
    rules = [o["metadata"]["name"] for o in unit.docs if o.get("kind") == "NodeFeatureRule"]
    if rules and plane.nfd_metrics:
        name = "nfd_master_nodefeaturerule_processing_duration_seconds_count"

        def processed() -> bool:
            seen = metrics(plane.nfd_metrics)
            return all(
                seen.get(f'{name}{{name="{rule}",node="{node.name}"}}', 0) > 0
                for rule in rules
                for node in nodes
            )

        _wait(processed, "nfd-master processing every rule on every node")
    last = None
    since = time.monotonic()
    while True:
        state = [
            (n["metadata"].get("labels"), n.get("spec", {}).get("taints"))
            for n in api.list("v1", "Node")
        ]
        if state != last:
            last, since = state, time.monotonic()
        elif time.monotonic() - since >= QUIET:
            return
        time.sleep(POLL)


# -------------------------------------------------------------------------------- the checks


def _check_nodes(
    plane: ControlPlane, api: ApiClient, view: FleetView, nodes: list[SimNode], report: EnvReport
) -> None:
    keys = fleet_label_keys(view)
    taint_keys = fleet_taint_keys(view)
    for node in nodes:
        live = api.get_node(node.name) or {}
        labels = {
            k: v for k, v in (live.get("metadata", {}).get("labels") or {}).items() if k in keys
        }
        taints = sorted(
            _taint_text(t)
            for t in live.get("spec", {}).get("taints") or []
            if not SYSTEM_TAINT.match(str(t.get("key"))) or t.get("key") in taint_keys
        )
        want_taints = sorted(_taint_text(t) for t in node.taints)
        ok = labels == node.labels and taints == want_taints
        report.nodes.append(
            NodeResult(node.name, node.describe(), node.labels, labels, want_taints, taints, ok)
        )
        loc = node.location()
        if labels != node.labels:
            missing = {k: v for k, v in node.labels.items() if labels.get(k) != v}
            extra = {k: v for k, v in labels.items() if node.labels.get(k) != v}
            if loc is None:
                # A general or CPU-only server labelled as an accelerator node: the rule that
                # matched it is at fault (its vendor's file).
                vendor = _vendor_of_labels(view, extra)
                loc = vendor.doc.anchor(("pools",)) if vendor else Location("values")
            report.findings.append(
                Finding(
                    "SIM001",
                    f"node {node.name} ({node.describe()}) in environment {report.env!r}: "
                    f"nfd-master set labels {_fmt(labels)}, the pool wants {_fmt(node.labels)}"
                    + (f" (missing {_fmt(missing)})" if missing else "")
                    + (f" (not wanted {_fmt(extra)})" if extra else ""),
                    loc,
                    hint=HINTS["SIM001"],
                )
            )
        if taints != want_taints:
            vendor = node.vendor or _vendor_of_labels(view, labels)
            report.findings.append(
                Finding(
                    "SIM002",
                    f"node {node.name} ({node.describe()}) in environment {report.env!r}: taints "
                    f"{taints or 'none'}, the pool wants {want_taints or 'none'}"
                    + _rejected(plane, [t for t in node.taints if _taint_text(t) not in taints]),
                    loc or (vendor.doc.anchor(("pools",)) if vendor else Location("values")),
                    hint=HINTS["SIM002"],
                )
            )


_IGNORED_TAINT = re.compile(r'"ignoring taint" err="([^"]*)" taint=(\{[^}]*\})')


def _rejected(plane: ControlPlane, wanted: list[dict[str, str]]) -> str:
    """What nfd-master logged about the node's missing taints (pkg/nfd-master/nfd-master.go,
    filterTaints: 'ignoring taint' with the validation error)."""
    log = plane.workdir / "logs" / "nfd-master.log"
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    reasons: dict[str, str] = {}
    for err, raw in _IGNORED_TAINT.findall(text):
        try:
            taint = json.loads(raw)
        except ValueError:
            continue
        reasons[_taint_text(taint)] = err
    found = [f"{t}: {reasons[t]}" for t in (_taint_text(w) for w in wanted) if t in reasons]
    return f" (nfd-master logged 'ignoring taint' {'; '.join(found)})" if found else ""


def _vendor_of_labels(view: FleetView, labels: dict[str, str]) -> Any:
    for vendor in view.vendors:
        sel = view.fleet.node_selector(vendor.selector)
        if sel and all(labels.get(k) == v for k, v in sel.items()):
            return vendor
    return None


def _taint_text(t: dict[str, Any]) -> str:
    value = f"={t['value']}" if t.get("value") else ""
    return f"{t.get('key')}{value}:{t.get('effect')}"


def _fmt(labels: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) + "}" if labels else "{}"


def _probe(api: ApiClient, nodes: list[SimNode], report: EnvReport) -> None:
    """One pod per node, pinned by hostname, with no tolerations: the scheduler may put it on a
    general or CPU-only server and on no accelerator node (its taints must keep it off)."""
    api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PROBE_NAMESPACE}})
    _wait(lambda: api.exists("v1", "ServiceAccount", PROBE_NAMESPACE, "default"), "probe namespace")
    for node in nodes:
        api.apply(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"probe-{node.name}", "namespace": PROBE_NAMESPACE},
                "spec": {
                    "nodeSelector": {"kubernetes.io/hostname": node.name},
                    "containers": [
                        {
                            "name": "probe",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                        }
                    ],
                },
            }
        )
    _settle(api)
    for node in nodes:
        pod = api.get("v1", "Pod", PROBE_NAMESPACE, f"probe-{node.name}") or {}
        where = pod.get("spec", {}).get("nodeName", "")
        landed = bool(where)
        ok = landed != node.accelerator
        report.probes.append(
            {"node": node.name, "what": node.describe(), "landed": landed, "ok": ok}
        )
        if landed and node.accelerator:
            report.findings.append(
                Finding(
                    "SIM006",
                    f"a pod with no tolerations was scheduled on accelerator node {node.name} "
                    f"({node.describe()}) in environment {report.env!r}: the node is not tainted",
                    node.location() or Location("values"),
                    hint=HINTS["SIM006"],
                )
            )
    api.delete("v1", "Namespace", "", PROBE_NAMESPACE)


def _check_plugins(
    api: ApiClient, view: FleetView, nodes: list[SimNode], built: list[BuiltUnit], report: EnvReport
) -> None:
    """Every DaemonSet of a vendor (device plugin, exporter) runs on exactly its vendor's nodes."""
    by_vendor = {v.id: {n.name for n in nodes if n.vendor is v} for v in view.vendors}
    pods = api.list("v1", "Pod")
    for unit in built:
        for obj in unit.docs:
            vendor_id = (obj.get("metadata", {}).get("labels") or {}).get(VENDOR_LABEL)
            if obj.get("kind") != "DaemonSet" or vendor_id not in by_vendor:
                continue
            ns, name = obj["metadata"].get("namespace", ""), obj["metadata"]["name"]
            on = {
                p.get("spec", {}).get("nodeName", "")
                for p in pods
                if p["metadata"].get("namespace") == ns
                and any(
                    r.get("kind") == "DaemonSet" and r.get("name") == name
                    for r in p["metadata"].get("ownerReferences") or []
                )
            }
            on.discard("")
            want = by_vendor[vendor_id]
            ok = on == want
            report.plugins.append(
                {
                    "daemonset": f"{ns}/{name}",
                    "vendor": vendor_id,
                    "nodes": sorted(on),
                    "want": sorted(want),
                    "ok": ok,
                }
            )
            if not ok:
                extra, missing = sorted(on - want), sorted(want - on)
                parts = []
                if extra:
                    parts.append(
                        "runs on " + ", ".join(f"{n} ({_node_what(nodes, n)})" for n in extra)
                    )
                if missing:
                    parts.append("is missing on " + ", ".join(missing))
                report.findings.append(
                    Finding(
                        "SIM003",
                        f"{describe(unit.unit, obj)} in environment {report.env!r}: "
                        + "; ".join(parts)
                        + f" (the {vendor_id} nodes are {', '.join(sorted(want)) or 'none'})",
                        origin(unit.unit, obj),
                        hint=HINTS["SIM003"],
                    )
                )


def _node_what(nodes: list[SimNode], name: str) -> str:
    return next((n.describe() for n in nodes if n.name == name), "?")


# ----------------------------------------------------------------------------------- workloads


@dataclass
class JobOutcome:
    refused: dict[tuple[str, str], str] = field(default_factory=dict)
    """(namespace, workload) -> why pods were not created (quota, Pod Security)."""


def _pod_refs(view: FleetView) -> dict[tuple[str, str, str], PodRef]:
    """(namespace, kind, name) of every workload -> its pod template and values path."""
    out: dict[tuple[str, str, str], PodRef] = {}
    for team in view.teams:
        _, refs = team_objects(view, team)
        loaded = team_workloads(view, team)
        ns_of = {j.name: j.namespace for j in loaded.jobs}
        ns_of.update({s.name: s.namespace for s in loaded.services})
        for ref in refs:
            base = ref.name.split("/")[0]
            ns = ns_of.get(base) or next(
                (str(n) for svc, n in ns_of.items() if base.startswith(f"{svc}-")), ""
            )
            out[(str(ns), ref.kind, ref.name)] = ref
    return out


def _expand_volcano(api: ApiClient, obj: Obj, outcome: JobOutcome) -> None:
    """Make a Volcano Job's task pods as Volcano's job controller does: one pod per replica,
    named <job>-<task>-<index>, with the task's template and the job as controller (source:
    volcano-sh/volcano pkg/controllers/job/job_controller_util.go, createJobPod, at 00bac39).
    They keep the default scheduler: Volcano's scheduler does not run here."""
    live = api.get(*VOLCANO_JOB, obj["metadata"]["namespace"], obj["metadata"]["name"]) or obj
    ns, job = obj["metadata"]["namespace"], obj["metadata"]["name"]
    owner = {
        "apiVersion": VOLCANO_JOB[0],
        "kind": "Job",
        "name": job,
        "uid": live.get("metadata", {}).get("uid", ""),
        "controller": True,
    }
    for task in obj["spec"].get("tasks") or []:
        template = task.get("template") or {}
        for i in range(int(task.get("replicas", 1))):
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{job}-{task['name']}-{i}",
                    "namespace": ns,
                    "labels": {
                        **(template.get("metadata", {}).get("labels") or {}),
                        "volcano.sh/job-name": job,
                    },
                    "annotations": {
                        "volcano.sh/task-spec": task["name"],
                        "volcano.sh/job-name": job,
                    },
                    "ownerReferences": [owner] if owner["uid"] else [],
                },
                "spec": template.get("spec") or {},
            }
            try:
                api.create(pod)
            except ApiError as exc:
                outcome.refused.setdefault((ns, f"{job}/{task['name']}"), exc.message)


def _run_jobs(api: ApiClient, jobs: list[tuple[BuiltUnit, Obj]], report: EnvReport) -> JobOutcome:
    outcome = JobOutcome()

    def run(item: tuple[BuiltUnit, Obj]) -> list[Finding]:
        unit, obj = item
        found, _ = _apply_all(api, unit, [obj])
        if (obj.get("apiVersion"), obj.get("kind")) == VOLCANO_JOB:
            _expand_volcano(api, obj, outcome)
        return found

    for found in _parallel(run, jobs):
        report.findings += found
    report.objects += len(jobs)
    _settle(api)
    return outcome


def _failed_create(api: ApiClient) -> dict[tuple[str, str, str], str]:
    """(namespace, kind, name) of a controller -> its last FailedCreate message."""
    out: dict[tuple[str, str, str], str] = {}
    events = sorted(
        api.list("v1", "Event"),
        key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""),
    )
    for ev in events:
        if ev.get("reason") == "FailedCreate":
            inv = ev.get("involvedObject") or {}
            out[
                (str(inv.get("namespace", "")), str(inv.get("kind", "")), str(inv.get("name", "")))
            ] = str(ev.get("message", ""))
    return out


def _owner(pod: Obj, rs_owner: dict[tuple[str, str], str]) -> tuple[str, str]:
    """(kind, name) of the workload a pod belongs to: Job, Deployment, or Volcano task."""
    meta = pod["metadata"]
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") == "ReplicaSet":
            return "Deployment", rs_owner.get((meta.get("namespace", ""), ref["name"]), "")
        if ref.get("kind") == "Job" and ref.get("apiVersion", "").startswith("batch/"):
            return "Job", str(ref["name"])
    task = (meta.get("annotations") or {}).get("volcano.sh/task-spec")
    if task:
        return (
            "Job (volcano) task",
            f"{(meta.get('labels') or {}).get('volcano.sh/job-name')}/{task}",
        )
    return "", ""


def _check_pods(
    api: ApiClient,
    view: FleetView,
    refs: dict[tuple[str, str, str], PodRef],
    nodes: dict[str, SimNode],
    outcome: JobOutcome,
    env: str,
    *,
    only: tuple[str, str] | None = None,
) -> tuple[list[PodResult], dict[tuple[str, str, str], list[Finding]]]:
    """Every workload pod against its values: (one row per pod, findings per workload that is not
    fully running on the right vendor and model). ``only``: (namespace, job) of one job."""
    results: list[PodResult] = []
    found: dict[tuple[str, str, str], list[Finding]] = {}
    teams = {t.name for t in view.teams}
    rs_owner = {
        (rs["metadata"].get("namespace", ""), rs["metadata"]["name"]): str(ref.get("name"))
        for rs in api.list("apps/v1", "ReplicaSet")
        for ref in rs["metadata"].get("ownerReferences") or []
        if ref.get("kind") == "Deployment"
    }
    failed = _failed_create(api)
    deploy_rs = {}
    for (ns, rs), dep in rs_owner.items():
        deploy_rs[(ns, dep)] = rs
    pods_by: dict[tuple[str, str, str], list[Obj]] = {}
    for pod in api.list("v1", "Pod"):
        kind, name = _owner(pod, rs_owner)
        if kind and (pod["metadata"].get("labels") or {}).get(TEAM_LABEL) in teams:
            pods_by.setdefault((pod["metadata"]["namespace"], kind, name), []).append(pod)
    for key, ref in sorted(refs.items()):
        ns, kind, name = key
        if only is not None and (kind == "Deployment" or (ns, name.split("/")[0]) != only):
            continue
        loc = ref.team.doc.anchor(ref.path)
        path = "$." + ".".join(str(p) for p in ref.path)
        want = _wanted_pods(view, api, key, ref)
        pods = sorted(pods_by.get(key, []), key=lambda p: p["metadata"]["name"])
        vendor = str(
            (ref.spec.get("nodeSelector") and _pod_vendor(pods, ref)) or _pod_vendor(pods, ref)
        )
        model_key = _model_key(view, vendor)
        want_model = (ref.spec.get("nodeSelector") or {}).get(model_key, "") if model_key else ""
        if want == 0:
            continue
        mine = found.setdefault(key, [])
        for pod in pods:
            node_name = pod.get("spec", {}).get("nodeName", "")
            phase = pod.get("status", {}).get("phase", "")
            reason = ""
            ok = True
            if not node_name:
                ok = False
                reason = _unschedulable(pod)
                mine.append(
                    Finding(
                        "SIM004",
                        f"{ref.kind} {ns}/{name} in environment {env!r}: pod "
                        f"{pod['metadata']['name']} stays Pending: {reason}",
                        loc,
                        path,
                        HINTS["SIM004"],
                    )
                )
            else:
                node = nodes.get(node_name)
                got_vendor = node.vendor.id if node and node.vendor else ""
                got_model = node.pool.model if node and node.pool else ""
                if got_vendor != vendor or (want_model and got_model.lower() != want_model.lower()):
                    ok = False
                    reason = f"runs on {node_name} ({node.describe() if node else '?'})"
                    mine.append(
                        Finding(
                            "SIM005",
                            f"{ref.kind} {ns}/{name} in environment {env!r}: pod "
                            f"{pod['metadata']['name']} {reason}, not on a {vendor}"
                            + (f" {want_model}" if want_model else "")
                            + " node",
                            loc,
                            path,
                            HINTS["SIM005"],
                        )
                    )
            results.append(
                PodResult(
                    ref.team.name,
                    f"{ref.kind} {ns}/{name}",
                    pod["metadata"]["name"],
                    vendor,
                    phase,
                    node_name,
                    reason,
                    ok,
                )
            )
        if len(pods) < want:
            refusal = outcome.refused.get((ns, name)) or _refusal(failed, ns, kind, name, deploy_rs)
            why = refusal or "not created"
            code = "SIM008" if refusal else "SIM004"
            results.append(
                PodResult(
                    ref.team.name,
                    f"{ref.kind} {ns}/{name}",
                    f"{want - len(pods)} pod(s) not created",
                    vendor,
                    "",
                    "",
                    why,
                    False,
                )
            )
            mine.append(
                Finding(
                    code,
                    f"{ref.kind} {ns}/{name} in environment {env!r}: {want - len(pods)} of "
                    f"{want} pod(s) not created: {why}",
                    loc,
                    path,
                    HINTS[code],
                )
            )
        if not mine:
            del found[key]
    return results, found


def _refusal(
    failed: dict[tuple[str, str, str], str],
    ns: str,
    kind: str,
    name: str,
    deploy_rs: dict[tuple[str, str], str],
) -> str:
    if kind == "Deployment":
        return failed.get((ns, "ReplicaSet", deploy_rs.get((ns, name), "")), "")
    return failed.get((ns, "Job", name), "")


def _wanted_pods(view: FleetView, api: ApiClient, key: tuple[str, str, str], ref: PodRef) -> int:
    ns, kind, name = key
    if kind == "Deployment":
        obj = api.get("apps/v1", "Deployment", ns, name)
        return int((obj or {}).get("spec", {}).get("replicas", 0))
    if kind == "Job":
        obj = api.get(*BATCH_JOB, ns, name)
        if obj is None:
            return 0
        spec = obj.get("spec", {})
        return min(
            int(spec.get("parallelism", 1)),
            int(spec.get("completions") or spec.get("parallelism", 1)),
        )
    job, _, task = name.partition("/")
    obj = api.get(*VOLCANO_JOB, ns, job)
    for t in (obj or {}).get("spec", {}).get("tasks") or []:
        if t.get("name") == task:
            return int(t.get("replicas", 1))
    return 0


def _pod_vendor(pods: list[Obj], ref: PodRef) -> str:
    labels: dict[str, str] = {}
    for pod in pods:
        labels = pod["metadata"].get("labels") or {}
        break
    return labels.get(VENDOR_LABEL, "") or _template_vendor(ref)


def _template_vendor(ref: PodRef) -> str:
    return ref.name.rsplit("-", 1)[-1] if ref.kind == "Deployment" else ""


def _model_key(view: FleetView, vendor_id: str) -> str:
    vendor = view.vendor(vendor_id)
    return view.fleet.label_key(vendor.model_label) if vendor else ""


def _unschedulable(pod: Obj) -> str:
    """The scheduler's verdict, without its notes on preemption."""
    for cond in pod.get("status", {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            text = str(cond.get("message") or cond.get("reason") or "unschedulable")
            return text.split(" no new claims to deallocate")[0].split(" preemption:")[0]
    return "not scheduled"


def _check_quotas(api: ApiClient, view: FleetView, report: EnvReport) -> None:
    for team in view.teams:
        for ns in team.namespaces:
            for quota in api.list("v1", "ResourceQuota", ns):
                status = quota.get("status", {})
                report.quotas.append(
                    {
                        "team": team.name,
                        "namespace": ns,
                        "quota": quota["metadata"]["name"],
                        "hard": status.get("hard", {}),
                        "used": status.get("used", {}),
                    }
                )


def _pod_ready(pod: Obj) -> bool:
    if pod["metadata"].get("deletionTimestamp"):
        return False
    conditions = pod.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _check_tracks(api: ApiClient, view: FleetView, report: EnvReport) -> None:
    """Ready pods per track, counted on the pods (a Deployment's status lags behind them)."""
    for team in view.teams:
        for svc in team_workloads(view, team).services:
            for plan in plan_service(svc):
                selector = f"{NAME_LABEL}={svc.name},{TRACK_LABEL}={plan.vendor}"
                pods = api.list("v1", "Pod", svc.namespace, selector=selector)
                ready = sum(_pod_ready(p) for p in pods)
                ok = ready == plan.replicas
                report.tracks.append(
                    {
                        "team": team.name,
                        "service": f"{svc.namespace}/{svc.name}",
                        "track": plan.vendor,
                        "ready": ready,
                        "plan": plan.replicas,
                        "ok": ok,
                    }
                )
                if not ok:
                    report.findings.append(
                        Finding(
                            "SIM007",
                            f"service {svc.namespace}/{svc.name} in environment {report.env!r}: "
                            f"track {plan.vendor} has {ready} ready pod(s), "
                            f"plan says {plan.replicas}",
                            team.doc.anchor(plan.replicas_path, (*svc.path, "tracks", plan.vendor)),
                            "$." + ".".join(str(p) for p in plan.replicas_path),
                            HINTS["SIM007"],
                        )
                    )


def _delete_jobs(api: ApiClient, jobs: list[tuple[BuiltUnit, Obj]]) -> None:
    for _, obj in jobs:
        api_version, kind = obj["apiVersion"], obj["kind"]
        api.delete(api_version, kind, obj["metadata"]["namespace"], obj["metadata"]["name"])
    names = {(o["metadata"]["namespace"], o["metadata"]["name"]) for _, o in jobs}

    def gone() -> bool:
        for pod in api.list("v1", "Pod"):
            meta = pod["metadata"]
            job = (meta.get("labels") or {}).get("volcano.sh/job-name") or (
                meta.get("labels") or {}
            ).get("job-name")
            if (meta.get("namespace"), job) in names:
                if (meta.get("labels") or {}).get("volcano.sh/job-name"):
                    api.delete("v1", "Pod", meta["namespace"], meta["name"], grace=0)
                return False
        return True

    _wait(gone, "job pods deleted")


def _retry_alone(
    api: ApiClient,
    view: FleetView,
    jobs: list[tuple[BuiltUnit, Obj]],
    refs: dict[tuple[str, str, str], PodRef],
    nodes: dict[str, SimNode],
    failing: dict[tuple[str, str, str], list[Finding]],
    report: EnvReport,
) -> None:
    """A job that did not fully run beside all the others runs again alone beside the services.
    If it runs then, it only waits for the others (a warning); if not, the verdict of the run
    alone stands (its reason names what is missing with nothing else in the way)."""
    for unit, obj in jobs:
        ns, job = obj["metadata"]["namespace"], obj["metadata"]["name"]
        mine = [
            k for k in failing if k[0] == ns and k[1] != "Deployment" and k[2].split("/")[0] == job
        ]
        if not mine:
            continue
        _delete_jobs(api, jobs)
        outcome = _run_jobs(api, [(unit, obj)], report)
        _, alone = _check_pods(api, view, refs, nodes, outcome, report.env, only=(ns, job))
        if alone:
            for fs in alone.values():
                report.findings += [_alone(f) for f in fs]
            continue
        first = failing[mine[0]][0]
        report.findings.append(
            Finding(
                "SIM010",
                f"{first.message.split(':', 1)[0]} does not fully run beside the other jobs, "
                f"but does alone beside the services: it waits for them "
                f"({first.message.split(': ', 1)[-1]})",
                first.location,
                first.path,
                HINTS["SIM010"],
                Severity.WARNING,
            )
        )
    _delete_jobs(api, jobs)


def _alone(f: Finding) -> Finding:
    return Finding(
        f.code,
        f.message + " (even alone, with only the services beside it)",
        f.location,
        f.path,
        f.hint,
        f.severity,
    )
