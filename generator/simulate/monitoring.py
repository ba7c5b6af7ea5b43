"""Whether the fleet's monitoring works on what the simulation built: the Prometheus Operator
turns the fleet's PodMonitors and PrometheusRules into a Prometheus's configuration, Prometheus
scrapes kube-state-metrics and discovers the exporter pods, and evaluates the rendered rules
(controlplane/monitoring.py runs the three).

observe() reads what Prometheus made of it, once it has evaluated every rule group on what it
scraped, as data (MonRun); judge() (pure) holds that to what the simulation's own state implies:
- every recorded quota series the dashboard and TeamAcceleratorQuotaNearlyUsed read, per team and
  vendor, with the team's ResourceQuota's hard and used as the API server has them (SIM023, at
  the vendor's values file: the rules build their matchers from it);
- every exporter with pods has scrape targets, all on its own vendor's nodes (SIM024);
- every rule evaluates without error, and each fleet-wide alert fires for exactly what the
  plane's state says it should (SIM025). Prometheus here holds each alert ALERT_HOLD, not its
  rendered `for:` (controlplane/monitoring.py), and the run says so (SIM011).

What cannot run here is said (SIM011): the vendors' exporters need their devices, so the series
read from them (utilisation, memory, device counts, device health) are proven by promtool's tests
(tests/builders/monitoring) on series written as each exporter emits them, not here.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from typing import Any

from generator.builders.monitoring import dashboard
from generator.builders.monitoring.alerts import alert_settings, ksm_resource
from generator.builders.monitoring.recording_rules import Prices, _attribution
from generator.builders.monitoring.sources import Exporter, exporters, settings
from generator.controlplane.api import ApiClient, Obj
from generator.controlplane.launcher import ControlPlane, ControlPlaneError
from generator.controlplane.monitoring import (
    ALERT_HOLD,
    ALERT_HOLD_SECONDS,
    KSM_JOB,
    Monitoring,
    running,
)
from generator.findings import CodeInfo, Finding, Severity
from generator.simulate.plan import SimPlan
from generator.values.model import FleetView
from generator.values.quantity import parse_quantity
from generator.vocab.api import APPS, CORE
from generator.vocab.names import QUOTA_NAME
from generator.vocab.series import COST_DEVICES, QUOTA_HARD, QUOTA_RATIO, QUOTA_USED

CODES = (
    CodeInfo(
        "SIM023",
        "simulate (monitoring)",
        "error",
        "a recorded series the dashboard or an alert reads is empty or differs from the cluster",
    ),
    CodeInfo(
        "SIM024",
        "simulate (monitoring)",
        "error",
        "a PodMonitor finds no exporter pod, or one on another vendor's node",
    ),
    CodeInfo(
        "SIM025",
        "simulate (monitoring)",
        "error",
        "a rule fails to evaluate, or an alert does not fire exactly where the cluster says",
    ),
)
HINTS = {
    "SIM023": "the rule's matchers come from the vendor file: its resource and allocation",
    "SIM024": "the PodMonitor's selector must match the exporter's pod labels (exporter.podLabels)",
    "SIM025": "read the rule's expression against the series kube-state-metrics emits",
}
# The series the dashboard's quota and cost panels and the quota alert read, per team x vendor.
TEAM_SERIES = (QUOTA_HARD, QUOTA_USED, QUOTA_RATIO, COST_DEVICES)
# The fleet-wide alerts this module knows the truth of.
PENDING, QUOTA, AGENT, EXPORTER_DOWN = (
    "AcceleratorPodsPending",
    "TeamAcceleratorQuotaNearlyUsed",
    "AcceleratorAgentUnavailable",
    "AcceleratorExporterDown",
)
# At most how long Prometheus may take to scrape kube-state-metrics and evaluate its rules on
# that (a few seconds on a quiet machine); past it the run stops with a tool error, since an
# unevaluated rule proves nothing either way.
SETTLE_TIMEOUT = 180.0
# Seconds (evaluation intervals) every group must have been evaluated after kube-state-metrics'
# first scrape before reading: the recording group, then the alert group reading what it recorded.
EVALUATIONS = 3.0
# How long after that discovery may still take to find the exporter pods there are: one that
# has not by then is a finding (SIM024).
DISCOVERY_GRACE = 30.0

Samples = list[tuple[dict[str, str], float]]
# An alert instance: the labels that tell it apart, sorted.
Instance = tuple[tuple[str, str], ...]
STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$")


@dataclass
class MonRun:
    """What Prometheus made of the environment, and the plane's state it is judged against."""

    series: dict[str, Samples] = field(default_factory=dict)
    """Each recorded series the judge reads -> its samples."""
    targets: list[dict[str, str]] = field(default_factory=list)
    """Every active target: its scrape pool, vendor, node and health."""
    rules: list[dict[str, Any]] = field(default_factory=list)
    """Every rule: name, type, health, lastError; the labels of an alert's firing instances."""
    quotas: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    daemonsets: list[Obj] = field(default_factory=list)
    panels: list[dict[str, Any]] = field(default_factory=list)
    """Each dashboard query as Grafana would send it: panel title, legend, the samples."""
    seconds: float = 0.0


def _samples(mon: Monitoring, query: str) -> Samples:
    data = mon.get("query", query=query)
    return [(dict(r["metric"]), float(r["value"][1])) for r in data.get("result", [])]


def observe(mon: Monitoring, api: ApiClient, plan: SimPlan) -> MonRun:
    """Wait until Prometheus has evaluated every group on kube-state-metrics' series (at most
    SETTLE_TIMEOUT) and found the exporter pods there are (at most DISCOVERY_GRACE more), then
    read it and the plane."""
    started = time.monotonic()
    deadline = started + SETTLE_TIMEOUT
    pods = api.list(CORE, "Pod")
    wanted = {e.vendor for e in exporters(plan.view) if _exporter_pods(e, pods)}
    up_at: float | None = None
    evaluated_at: float | None = None
    while True:
        targets = mon.get("targets", state="active")["activeTargets"]
        if up_at is None and any(
            t["labels"].get("job") == KSM_JOB and t["health"] == "up" for t in targets
        ):
            up_at = time.time()
        if evaluated_at is None and up_at is not None:
            groups = mon.get("rules")["groups"]
            if all(_epoch(g.get("lastEvaluation", "")) > up_at + EVALUATIONS for g in groups):
                evaluated_at = time.monotonic()
        now = time.monotonic()
        if evaluated_at is None and now > deadline:
            raise ControlPlaneError(
                f"prometheus did not scrape kube-state-metrics and evaluate its rules within "
                f"{SETTLE_TIMEOUT:g} s (logs in {mon.logs})"
            )
        found = {t["labels"].get("vendor") for t in targets}
        # An alert whose condition held at that evaluation fires ALERT_HOLD later, and its
        # firing is seen at the next evaluation.
        held = evaluated_at is not None and now > evaluated_at + ALERT_HOLD_SECONDS + EVALUATIONS
        if held and (wanted <= found or now > (evaluated_at or now) + DISCOVERY_GRACE):
            break
        time.sleep(0.5)
    run = MonRun(
        series={name: _samples(mon, name) for name in TEAM_SERIES},
        targets=[
            {
                "pool": t["scrapePool"],
                "vendor": t["labels"].get("vendor", ""),
                "node": t["labels"].get("node", ""),
                "health": t["health"],
            }
            for t in mon.get("targets", state="active")["activeTargets"]
        ],
        rules=[
            {
                "name": r["name"],
                "type": r["type"],
                "health": r.get("health", ""),
                "error": r.get("lastError", ""),
                "active": [a["labels"] for a in r.get("alerts", []) if a.get("state") == "firing"],
            }
            for g in mon.get("rules")["groups"]
            for r in g["rules"]
        ],
        quotas=api.list(CORE, "ResourceQuota"),
        pods=api.list(CORE, "Pod"),
        daemonsets=api.list(APPS, "DaemonSet"),
        panels=[
            {"panel": panel.title, "legend": q.legend, "samples": _samples(mon, grafana(q.expr))}
            for panel in dashboard.panels(settings(plan.view))
            for q in panel.queries
        ],
    )
    run.seconds = round(time.monotonic() - started, 1)
    return run


# How the dashboard's variables are filled when its queries are run here: every cluster, and a
# range of five minutes (Grafana's $__range and $__range_s).
GRAFANA_VARIABLES = {
    f"${dashboard.CLUSTER_VARIABLE}": ".*",
    "$__range_s": "300",
    "$__range": "5m",
}


def grafana(expr: str) -> str:
    """A dashboard query with its variables filled as Grafana fills them (GRAFANA_VARIABLES)."""
    for name, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(name, value)
    return expr


def _epoch(stamp: str) -> float:
    """An RFC 3339 time Prometheus reports -> seconds since the epoch (0 for none). Prometheus
    writes nanoseconds; Python's parser takes at most microseconds."""
    found = STAMP.match(stamp or "")
    if found is None or stamp.startswith("0001-"):
        return 0.0
    head, frac, zone = found.groups()
    text = f"{head}.{(frac or '0')[:6]}{'+00:00' if zone == 'Z' else zone}"
    return datetime.fromisoformat(text).timestamp()


def _exporter_pods(exp: Exporter, pods: list[Obj]) -> list[Obj]:
    """The pods an exporter's PodMonitor selects that Prometheus can discover: with an IP
    (discovery/kubernetes/pod.go v0.316.0 makes no target of a pod without one)."""
    return [
        p
        for p in pods
        if (exp.namespace is None or p["metadata"].get("namespace") == exp.namespace)
        and all((p["metadata"].get("labels") or {}).get(k) == v for k, v in exp.pod_labels.items())
        and p.get("status", {}).get("podIP")
    ]


def _number(value: Any) -> float:
    parsed = parse_quantity(value)
    return float(parsed if parsed is not None else Fraction(0))


def expected_team_series(
    view: FleetView, quotas: list[Obj]
) -> dict[tuple[str, str], dict[str, Any]]:
    """(team, resource) -> the vendors it counts against and the values its recorded series must
    have, from the team's ResourceQuotas as the API server has them: only where one holds the
    vendor's key (a team without quota for a vendor has no series for it)."""
    built = exporters(view)
    by_resource: dict[str, list[Exporter]] = {}
    for exp in built:
        by_resource.setdefault(exp.resource, []).append(exp)
    quota_keys = {v.id: v.quota_key for v in view.vendors}
    prices = Prices.of(view, built)
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for team in view.teams:
        mine = [
            q
            for q in quotas
            if q["metadata"].get("namespace") in team.namespaces
            and q["metadata"]["name"] == QUOTA_NAME
        ]
        for resource, group in sorted(by_resource.items()):
            # The key the fleet's ResourceQuota has (the values' vendor), not the one the rules
            # were built with: what is judged must not decide what it is judged against.
            key = quota_keys[group[0].vendor]
            holding = [q for q in mine if key in (q.get("status", {}).get("hard") or {})]
            if not holding:
                continue
            hard = sum(_number(q["status"]["hard"][key]) for q in holding)
            used = sum(_number((q["status"].get("used") or {}).get(key, 0)) for q in holding)
            vendors, weight = _attribution(team, group, prices)
            want = {QUOTA_HARD: hard, QUOTA_USED: used, COST_DEVICES: round(used * weight, 6)}
            if hard > 0:
                want[QUOTA_RATIO] = used / hard
            out[(team.name, resource)] = {"vendors": [e.vendor for e in vendors], "want": want}
    return out


def _team_rows(plan: SimPlan, run: MonRun) -> tuple[list[dict[str, Any]], list[Finding]]:
    view = plan.view
    vendors = {v.id: v for v in view.vendors}
    rows: list[dict[str, Any]] = []
    findings: list[Finding] = []
    for (team, resource), exp in sorted(expected_team_series(view, run.quotas).items()):
        for record, want in exp["want"].items():
            got = [
                v
                for labels, v in run.series.get(record, [])
                if labels.get("team") == team and labels.get("resource") == resource
            ]
            value = got[0] if len(got) == 1 else None
            ok = value is not None and abs(value - want) < 1e-6
            rows.append(
                {
                    "team": team,
                    "vendor": "+".join(exp["vendors"]),
                    "series": record,
                    "want": want,
                    "got": value,
                    "ok": ok,
                }
            )
            if ok:
                continue
            vendor = vendors[exp["vendors"][0]]
            said = "no series" if value is None else f"{value:g}"
            findings.append(
                Finding(
                    "SIM023",
                    f"{record} of team {team} for {resource} ({', '.join(exp['vendors'])}) "
                    f"has {said} in Prometheus, while the team's ResourceQuota says {want:g}: "
                    "the dashboard's quota and cost panels and the quota alert miss it",
                    vendor.doc.anchor(("allocation",), ("resourceName",)),
                    hint=HINTS["SIM023"],
                )
            )
    return rows, findings


def _target_findings(plan: SimPlan, run: MonRun) -> list[Finding]:
    view = plan.view
    vendors = {v.id: v for v in view.vendors}
    node_vendor = {n.name: (n.vendor.id if n.vendor else "") for n in plan.nodes}
    findings: list[Finding] = []
    for exp in exporters(view):
        if not exp.pod_labels:
            continue
        pods = _exporter_pods(exp, run.pods)
        mine = [t for t in run.targets if t["vendor"] == exp.vendor]
        where = vendors[exp.vendor].doc.anchor(("exporter", "podLabels"), ("exporter",))
        if pods and not mine:
            findings.append(
                Finding(
                    "SIM024",
                    f"the PodMonitor of {exp.vendor}'s exporter {exp.name} finds none of its "
                    f"{len(pods)} pod(s) (it selects {exp.pod_labels} in "
                    f"{exp.namespace or 'any namespace'}): nothing of {exp.vendor} is scraped",
                    where,
                    hint=HINTS["SIM024"],
                )
            )
        strays = sorted({t["node"] for t in mine if node_vendor.get(t["node"]) != exp.vendor})
        if strays:
            findings.append(
                Finding(
                    "SIM024",
                    f"the PodMonitor of {exp.vendor}'s exporter {exp.name} scrapes node(s) "
                    f"{', '.join(strays)}, which are not {exp.vendor}'s: their series are "
                    f"labelled vendor={exp.vendor}",
                    where,
                    hint=HINTS["SIM024"],
                )
            )
    return findings


def expected_alerts(plan: SimPlan, run: MonRun) -> dict[str, set[Instance]]:
    """Alert name -> the label sets it must fire for, as the plane's state says: pods Pending that
    ask for a device plugin's devices; teams above the quota ratio; the fleet's DaemonSets with a
    node short of a ready pod; exporter targets whose scrape fails. Each instance is named by the
    labels that tell them apart (namespace and pod; team and resource; namespace and daemonset;
    vendor and node)."""
    view = plan.view
    resources = {ksm_resource(v.resource_name): v.resource_name for v in view.vendors if not v.dra}
    pending: set[Instance] = set()
    for pod in run.pods:
        if pod.get("status", {}).get("phase") != "Pending":
            continue
        asks = {
            k
            for c in pod.get("spec", {}).get("containers", [])
            for k in (c.get("resources", {}).get("requests") or {})
        }
        if asks & set(resources.values()):
            meta = pod["metadata"]
            pending.add((("namespace", meta["namespace"]), ("pod", meta["name"])))
    ratio = alert_settings(view).quota_ratio
    quota: set[Instance] = {
        (("resource", resource), ("team", team))
        for (team, resource), exp in expected_team_series(view, run.quotas).items()
        if exp["want"].get(QUOTA_RATIO, 0) > ratio
    }
    agent: set[Instance] = {
        (("daemonset", d["metadata"]["name"]), ("namespace", d["metadata"]["namespace"]))
        for d in run.daemonsets
        if (d.get("status", {}).get("numberUnavailable") or 0) > 0
    }
    # Every exporter target whose scrape fails (here: all of them, since the exporters' pods run
    # no exporter): each must fire, with the vendor and node the scrape gives it.
    down: set[Instance] = {
        (("node", t["node"]), ("vendor", t["vendor"]))
        for t in run.targets
        if t["vendor"] and t["health"] == "down"
    }
    return {PENDING: pending, QUOTA: quota, AGENT: agent, EXPORTER_DOWN: down}


def _alert_findings(plan: SimPlan, run: MonRun) -> tuple[list[dict[str, Any]], list[Finding]]:
    where = plan.view.fleet.doc.anchor(("monitoring", "alerts"), ("monitoring",))
    rows: list[dict[str, Any]] = []
    findings: list[Finding] = []
    for rule in run.rules:
        if rule["health"] == "err":
            findings.append(
                Finding(
                    "SIM025",
                    f"rule {rule['name']} fails to evaluate in Prometheus: {rule['error']}",
                    where,
                    hint=HINTS["SIM025"],
                )
            )
    want = expected_alerts(plan, run)
    active: dict[str, set[Instance]] = {name: set() for name in want}
    for rule in run.rules:
        if rule["type"] == "alerting" and rule["name"] in want:
            keys = _keys(rule["name"])
            for labels in rule["active"]:
                active[rule["name"]].add(tuple(sorted((k, labels.get(k, "")) for k in keys)))
    present = {r["name"] for r in run.rules if r["type"] == "alerting"}
    for name in sorted(want):
        if name not in present:
            continue  # the fleet renders no such alert here (alerts off, no teams)
        missing, extra = want[name] - active[name], active[name] - want[name]
        rows.append(
            {
                "alert": name,
                "want": len(want[name]),
                "active": len(active[name]),
                "ok": not (missing or extra),
            }
        )
        for inst, verb in [
            *((m, "does not fire") for m in missing),
            *((e, "fires") for e in extra),
        ]:
            said = ", ".join(f"{k}={v}" for k, v in inst)
            truth = (
                "the cluster says it should"
                if verb == "does not fire"
                else "nothing in the cluster calls for it"
            )
            findings.append(
                Finding(
                    "SIM025",
                    f"alert {name} {verb} for {said}: {truth}",
                    where,
                    hint=HINTS["SIM025"],
                )
            )
    return rows, findings


def _legend(template: str, labels: dict[str, str]) -> str:
    """A legend as Grafana writes it: each {{label}} replaced by the series' value."""
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), template)


def _keys(name: str) -> set[str]:
    return {
        PENDING: {"namespace", "pod"},
        QUOTA: {"team", "resource"},
        AGENT: {"namespace", "daemonset"},
        EXPORTER_DOWN: {"vendor", "node"},
    }[name]


def judge(plan: SimPlan, run: MonRun) -> tuple[list[dict[str, Any]], list[Finding]]:
    """Rows (team series, then alerts) and findings SIM023-SIM025, plus the SIM011 saying what
    this could not prove here."""
    rows, findings = _team_rows(plan, run)
    rows += [
        {
            "panel": p["panel"],
            "legend": p["legend"],
            # In the order of their labels, as Prometheus sorts a range query's series
            # (v0.316.0 promql/engine.go `sortMatrixResult`, value.go `Matrix.Less`): an
            # instant query's come in the order the rules first recorded them, which says
            # nothing about the fleet.
            "values": ", ".join(
                f"{_legend(p['legend'], labels)}={value:g}"
                for labels, value in sorted(p["samples"], key=lambda s: sorted(s[0].items()))
            ),
        }
        for p in run.panels
    ]
    findings += _target_findings(plan, run)
    alert_rows, alert_found = _alert_findings(plan, run)
    findings += alert_found
    names = sorted({e.vendor for e in exporters(plan.view)})
    unrun = (
        "the vendors' exporters do not run here (they need the devices): the series read from "
        f"them ({', '.join(names)}: utilisation, memory, device counts and health) are proven by "
        "promtool's tests on series written as each exporter emits them, not by this "
        "simulation; "
        if names
        else ""
    )
    findings.append(
        Finding(
            "SIM011",
            f"{unrun}each alert fired after its condition held {ALERT_HOLD}, not its rendered "
            "`for:` (5 to 15 minutes)",
            plan.view.fleet.doc.anchor(("monitoring",)),
            hint="docs/simulation.md says what the monitoring step proves",
            severity=Severity.WARNING,
        )
    )
    return [*rows, *alert_rows], findings


SELECTORS = (
    "podMonitorSelector",
    "podMonitorNamespaceSelector",
    "ruleSelector",
    "ruleNamespaceSelector",
)


def drive(plane: ControlPlane, plan: SimPlan) -> MonRun | None:
    """The site's monitoring run on the plane as the drive left it, and what it made of it; None
    when values name no Prometheus (then nothing says which objects a site's would load)."""
    prom = plan.view.fleet.doc.get("monitoring", "prometheus")
    if not isinstance(prom, dict):
        return None
    selectors = {k: prom[k] for k in SELECTORS if k in prom}
    with running(plane, str(prom.get("namespace", "monitoring")), selectors) as mon:
        return observe(mon, plane.client(), plan)


def not_run(plan: SimPlan, why: str) -> Finding:
    """SIM011: the monitoring step did not run (`why`): nothing of this run says whether the
    fleet's series have data."""
    return Finding(
        "SIM011",
        f"the monitoring did not run ({why}): whether the series the dashboard and alerts read "
        "have data was not exercised",
        plan.view.fleet.doc.anchor(("monitoring", "prometheus"), ("monitoring",)),
        hint="name the site's Prometheus in monitoring.prometheus, and run simulate without "
        "--no-monitoring (docs/simulation.md)",
        severity=Severity.WARNING,
    )
