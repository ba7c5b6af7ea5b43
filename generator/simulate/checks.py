"""What the cluster made of the fleet against what the values say: node labels and taints
against the pool's (as nfd-master set them), DaemonSet pods per vendor, a probe pod per node,
quota used against hard, ready pods per track against `plan`.

Each check is pure: it judges what the API server served (the objects as it lists them, taken by
drive.py) against the values, and returns the report's rows and findings; judge.py puts them
into the report."""

from __future__ import annotations

import json
import re
from typing import Any

from generator.cluster.units import BuiltUnit
from generator.controlplane.api import Obj
from generator.findings import Finding, Location
from generator.policy.manifest import describe, origin
from generator.policy.placement import tolerates
from generator.simulate.nodes import SimNode, fleet_label_keys, fleet_taint_keys
from generator.simulate.result import HINTS, NodeResult
from generator.simulate.sitestack import SiteDaemon
from generator.values.model import FleetView
from generator.values.yamlio import json_path
from generator.vocab.api import CORE
from generator.vocab.kube import HOSTNAME_LABEL, LWS_GROUP_INDEX_LABEL
from generator.vocab.labels import NAME_LABEL, TRACK_LABEL, VENDOR_LABEL
from generator.workloads.model import Service, Workloads
from generator.workloads.phases import TrackPlan, local_plans

PROBE_NAMESPACE = "accel-sim-probe"
SYSTEM_TAINT = re.compile(r"^node\.kubernetes\.io/|^node-role\.kubernetes\.io/")


def node_verdicts(
    view: FleetView, nodes: list[SimNode], live_nodes: list[Obj], ignored: list[str]
) -> tuple[list[NodeResult], list[Finding]]:
    """Each node's labels and taints as nfd-master set them (`live_nodes`: the Node objects the
    API server lists) against its pool's: a row each, SIM001 and SIM002 at the values to fix (for
    a dropped taint, with what nfd-master logged about it: `ignored`, its log lines that say
    'ignoring taint')."""
    rows: list[NodeResult] = []
    findings: list[Finding] = []
    keys = fleet_label_keys(view)
    taint_keys = fleet_taint_keys(view)
    by_name = {n["metadata"]["name"]: n for n in live_nodes}
    for node in nodes:
        live = by_name.get(node.name, {})
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
        rows.append(
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
            findings.append(
                Finding(
                    "SIM001",
                    f"node {node.name} ({node.describe()}): "
                    f"nfd-master set labels {_fmt(labels)}, the pool wants {_fmt(node.labels)}"
                    + (f" (missing {_fmt(missing)})" if missing else "")
                    + (f" (not wanted {_fmt(extra)})" if extra else ""),
                    loc,
                    hint=HINTS["SIM001"],
                )
            )
        if taints != want_taints:
            vendor = node.vendor or _vendor_of_labels(view, labels)
            findings.append(
                Finding(
                    "SIM002",
                    f"node {node.name} ({node.describe()}): taints "
                    f"{taints or 'none'}, the pool wants {want_taints or 'none'}"
                    + _rejected(ignored, [t for t in node.taints if _taint_text(t) not in taints]),
                    loc or (vendor.doc.anchor(("pools",)) if vendor else Location("values")),
                    hint=HINTS["SIM002"],
                )
            )
    return rows, findings


IGNORED_TAINT = re.compile(r'"ignoring taint" err="([^"]*)" taint=(\{[^}]*\})')


def _rejected(ignored: list[str], wanted: list[dict[str, str]]) -> str:
    """What nfd-master logged about the node's missing taints (pkg/nfd-master/nfd-master.go,
    filterTaints: 'ignoring taint' with the validation error): `ignored`, its log lines."""
    reasons: dict[str, str] = {}
    for err, raw in IGNORED_TAINT.findall("\n".join(ignored)):
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


def probe_objects(nodes: list[SimNode]) -> list[Obj]:
    """The probe's namespace, then its pod for each node (in the order of `nodes`): one pod per
    node, pinned by hostname, with no tolerations: the scheduler may put it on a general or
    CPU-only server and on no accelerator node (its taints must keep it off)."""
    objs: list[Obj] = [
        {"apiVersion": CORE, "kind": "Namespace", "metadata": {"name": PROBE_NAMESPACE}}
    ]
    for node in nodes:
        objs.append(
            {
                "apiVersion": CORE,
                "kind": "Pod",
                "metadata": {"name": f"probe-{node.name}", "namespace": PROBE_NAMESPACE},
                "spec": {
                    "nodeSelector": {HOSTNAME_LABEL: node.name},
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
    return objs


def probe_verdicts(
    nodes: list[SimNode], pods: list[Obj]
) -> tuple[list[dict[str, Any]], list[Finding]]:
    """Where the scheduler put each node's probe pod (`pods`: the probe namespace's pods as the
    API server lists them): a row each, SIM006 for one on an accelerator node."""
    rows: list[dict[str, Any]] = []
    findings: list[Finding] = []
    by_name = {p["metadata"]["name"]: p for p in pods}
    for node in nodes:
        pod = by_name.get(f"probe-{node.name}", {})
        where = pod.get("spec", {}).get("nodeName", "")
        landed = bool(where)
        ok = landed != node.accelerator
        rows.append({"node": node.name, "what": node.describe(), "landed": landed, "ok": ok})
        if landed and node.accelerator:
            findings.append(
                Finding(
                    "SIM006",
                    f"a pod with no tolerations was scheduled on accelerator node {node.name} "
                    f"({node.describe()}): the node is not tainted",
                    node.location() or Location("values"),
                    hint=HINTS["SIM006"],
                )
            )
    return rows, findings


def nfd_workers(applied: list[Obj]) -> list[Obj]:
    """The nfd-worker DaemonSets of the fleet's NFD chart (`applied`: the chart's objects the
    simulation applied; none when the site runs NFD): each must run on every node."""
    return [o for o in applied if o.get("kind") == "DaemonSet" and _runs_nfd_worker(o)]


def _runs_nfd_worker(obj: Obj) -> bool:
    containers = ((obj.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers")
    return any((c.get("command") or [None])[0] == "nfd-worker" for c in containers or [])


def worker_verdicts(
    view: FleetView, nodes: list[SimNode], workers: list[Obj], pods: list[Obj]
) -> tuple[list[dict[str, Any]], list[Finding]]:
    """A row per nfd-worker DaemonSet: the nodes it has pods on against every simulated node;
    SIM014 naming the nodes it does not reach (nothing there publishes the devices the rules
    match, so on a cluster such a node never joins its pool)."""
    rows: list[dict[str, Any]] = []
    findings: list[Finding] = []
    want = {n.name for n in nodes}
    for obj in workers:
        ns, name = obj["metadata"].get("namespace", ""), obj["metadata"]["name"]
        on = _daemon_nodes(pods, ns, name) & want
        missing = sorted(want - on)
        rows.append(
            {
                "daemonset": f"{ns}/{name}",
                "vendor": "every node",
                "nodes": sorted(on),
                "want": sorted(want),
                "ok": not missing,
            }
        )
        if missing:
            findings.append(
                Finding(
                    "SIM014",
                    f"nfd-worker ({ns}/{name}) of the fleet's NFD chart does not run on "
                    + ", ".join(f"{n} ({_node_what(nodes, n)})" for n in missing)
                    + " once its taints are there: when nfd-worker starts again (an upgrade, a "
                    "reboot), nothing there publishes the devices the NodeFeatureRules match",
                    view.fleet.doc.anchor(("platform", "nfd"), ("nodeConfig", "method")),
                    hint=HINTS["SIM014"],
                )
            )
    return rows, findings


def plugin_verdicts(
    view: FleetView,
    nodes: list[SimNode],
    built: list[BuiltUnit],
    pods: list[Obj],
) -> tuple[list[dict[str, Any]], list[Finding]]:
    """The nodes each vendor DaemonSet of `built` has pods on (`pods`: every pod, as the API
    server lists them) against its vendor's nodes: a row each, SIM003 at the DaemonSet's values."""
    rows: list[dict[str, Any]] = []
    findings: list[Finding] = []
    by_vendor = {v.id: {n.name for n in nodes if n.vendor is v} for v in view.vendors}
    for unit in built:
        for obj in unit.docs:
            vendor_id = (obj.get("metadata", {}).get("labels") or {}).get(VENDOR_LABEL)
            if obj.get("kind") != "DaemonSet" or vendor_id not in by_vendor:
                continue
            ns, name = obj["metadata"].get("namespace", ""), obj["metadata"]["name"]
            on = _daemon_nodes(pods, ns, name)
            want = by_vendor[vendor_id]
            ok = on == want
            rows.append(
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
                findings.append(
                    Finding(
                        "SIM003",
                        f"{describe(unit.unit, obj)}: "
                        + "; ".join(parts)
                        + f" (the {vendor_id} nodes are {', '.join(sorted(want)) or 'none'})",
                        origin(unit.unit, obj),
                        hint=HINTS["SIM003"],
                    )
                )
    return rows, findings


def _daemon_nodes(pods: list[Obj], namespace: str, name: str) -> set[str]:
    """The nodes the DaemonSet `namespace/name` has pods on."""
    on = {
        str(p.get("spec", {}).get("nodeName", ""))
        for p in pods
        if p["metadata"].get("namespace") == namespace
        and any(
            r.get("kind") == "DaemonSet" and r.get("name") == name
            for r in p["metadata"].get("ownerReferences") or []
        )
    }
    on.discard("")
    return on


def site_daemon_verdicts(
    nodes: list[SimNode], daemons: list[SiteDaemon], pods: list[Obj]
) -> tuple[list[dict[str, Any]], list[Finding]]:
    """A row per stand-in of a component the fleet relies on (sitestack.py): the nodes its pods
    reached against its vendors' nodes; SIM003 at the values that declare the component, naming
    the nodes it misses and the taints there it does not tolerate."""
    rows: list[dict[str, Any]] = []
    findings: list[Finding] = []
    for daemon in daemons:
        meta = daemon.obj["metadata"]
        on = _daemon_nodes(pods, meta["namespace"], meta["name"])
        ids = {v.id for v in daemon.vendors}
        want = {n.name for n in nodes if n.vendor is not None and n.vendor.id in ids}
        rows.append(
            {
                "daemonset": daemon.key,
                "vendor": ", ".join(sorted(ids)),
                "nodes": sorted(on),
                "want": sorted(want),
                "ok": on == want,
            }
        )
        missing = sorted(want - on)
        if not missing:
            continue
        spec = daemon.obj["spec"]["template"]["spec"]
        untolerated = sorted(
            {
                f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"
                for n in nodes
                if n.name in missing and n.pool is not None
                for t in n.pool.taints
                if not tolerates(spec, t)
            }
        )
        why = f": it does not tolerate {', '.join(untolerated)}" if untolerated else ""
        findings.append(
            Finding(
                "SIM003",
                f"{daemon.what} (stand-in {daemon.key}) is missing on "
                + ", ".join(f"{n} ({_node_what(nodes, n)})" for n in missing)
                + why
                + "; on the cluster its pods stay off these nodes once they carry the fleet's "
                "taints and labels",
                daemon.location,
                hint="give it the tolerations of the fleet's taints (the chart's values: GPU "
                "Operator daemonsets.tolerations, declared in values as "
                "platform.gpuOperator.tolerations when the site installs it) and node "
                "selection that matches the pools; docs/brownfield.md",
            )
        )
    return rows, findings


def _node_what(nodes: list[SimNode], name: str) -> str:
    return next((n.describe() for n in nodes if n.name == name), "?")


def quota_rows(view: FleetView, quotas: list[Obj]) -> list[dict[str, Any]]:
    """Hard and used of each quota in a team's namespaces (`quotas`: every ResourceQuota, as the
    API server lists them), team by team, namespace by namespace."""
    rows: list[dict[str, Any]] = []
    for team in view.teams:
        for ns in team.namespaces:
            for quota in (q for q in quotas if q["metadata"].get("namespace") == ns):
                status = quota.get("status", {})
                rows.append(
                    {
                        "team": team.name,
                        "namespace": ns,
                        "quota": quota["metadata"]["name"],
                        "hard": status.get("hard", {}),
                        "used": status.get("used", {}),
                    }
                )
    return rows


def _pod_ready(pod: Obj) -> bool:
    if pod["metadata"].get("deletionTimestamp"):
        return False
    conditions = pod.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _ready_replicas(pods: list[Obj], group_size: int) -> int:
    """A track's ready replicas: its ready pods; for a multi-host track (`group_size` > 1), its
    groups whose every pod is ready (a group serves only whole)."""
    if group_size <= 1:
        return sum(_pod_ready(p) for p in pods)
    ready: dict[str, int] = {}
    for pod in pods:
        group = str((pod["metadata"].get("labels") or {}).get(LWS_GROUP_INDEX_LABEL, ""))
        ready[group] = ready.get(group, 0) + _pod_ready(pod)
    return sum(count == group_size for group, count in ready.items() if group)


def _placed(pods: list[Obj], nodes: dict[str, SimNode]) -> dict[str, int]:
    """Where a track's pods are: pods per pool (`vendor/pool`, or the node's kind of server),
    and those no node took yet under "not scheduled"; a pod being deleted is left out."""
    out: dict[str, int] = {}
    for pod in pods:
        if pod["metadata"].get("deletionTimestamp"):
            continue  # on its way out: it holds no place in the track
        name = str(pod.get("spec", {}).get("nodeName") or "")
        node = nodes.get(name)
        where = (
            "not scheduled"
            if not name
            else f"{node.vendor.id}/{node.pool.name}"
            if node is not None and node.vendor is not None and node.pool is not None
            else node.describe()
            if node is not None
            else name
        )
        out[where] = out.get(where, 0) + 1
    return dict(sorted(out.items()))


def track_pods(svc: Service, vendor: str, pods: list[Obj]) -> list[Obj]:
    """A track's pods: in the service's namespace, with its name and track labels."""
    want = {NAME_LABEL: svc.name, TRACK_LABEL: vendor}
    return [
        p
        for p in pods
        if p["metadata"].get("namespace") == svc.namespace
        and all((p["metadata"].get("labels") or {}).get(k) == v for k, v in want.items())
    ]


def track_row(
    view: FleetView, svc: Service, plan: TrackPlan, pods: list[Obj], nodes: dict[str, SimNode]
) -> tuple[dict[str, Any], str]:
    """The row of one track of `svc` in the view's cluster (`pods`: every pod), and the words of
    a finding when its ready pods are not what `plan` says ("" when they are)."""
    size = next((t.group_size for t in svc.tracks if t.vendor == plan.vendor), 1)
    mine = track_pods(svc, plan.vendor, pods)
    ready = _ready_replicas(mine, size)
    unit = "pod(s)" if size <= 1 else f"group(s) of {size} pods"
    cluster = plan.cluster or (view.cluster.name if view.cluster else "")
    row = {
        "team": svc.team,
        "service": f"{svc.namespace}/{svc.name}",
        "track": plan.vendor,
        "cluster": cluster,
        "weight": plan.weight,
        "ready": ready,
        "plan": plan.replicas,
        "placed": _placed(mine, nodes),
        "ok": ready == plan.replicas,
    }
    # A service across clusters names the cluster: its other tracks are judged in theirs.
    where = f" in cluster {cluster}" if svc.cross is not None else ""
    words = f"track {plan.vendor}{where} has {ready} ready {unit}, plan says {plan.replicas}"
    return row, "" if row["ok"] else words


def track_verdicts(
    workloads: Workloads, pods: list[Obj], nodes: dict[str, SimNode]
) -> tuple[list[dict[str, Any]], list[Finding]]:
    """Ready pods of each service's track in this cluster, counted on the pods (a Deployment's
    status lags behind them; `pods`: every pod, as the API server lists them) against `plan`: a
    row each (with the track's cluster, weight and the pools its pods landed on), SIM007 at the
    values that decided the replicas. A service across clusters is judged track by track, each
    in the simulation of its own cluster (local_plans): its other tracks are not here."""
    rows: list[dict[str, Any]] = []
    findings: list[Finding] = []
    view = workloads.view
    for team in view.teams:
        for svc in workloads.of(team).services:
            for plan in local_plans(svc):
                row, words = track_row(view, svc, plan, pods, nodes)
                rows.append(row)
                if words:
                    findings.append(
                        Finding(
                            "SIM007",
                            f"service {svc.namespace}/{svc.name}: {words}",
                            team.doc.anchor(plan.replicas_path, (*svc.path, "tracks", plan.vendor)),
                            json_path(plan.replicas_path),
                            HINTS["SIM007"],
                        )
                    )
    return rows, findings
