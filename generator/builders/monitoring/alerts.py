"""Alerting rules for a mixed accelerator fleet (docs/alerts.md lists each, with its runbook).

Per vendor, from what its exporter really emits (catalog `exporter.health`, each entry cited):
a device reporting itself unhealthy, or an error series rising. Fleet-wide, from kube-state-
metrics and the scrape itself: an exporter target down, a device-plugin or exporter DaemonSet
short of ready pods, accelerator pods Pending for too long, a team's quota nearly used, and a
pool node advertising fewer devices than the pool declares.

Facts the rules rely on:
- A target's `up` carries the target labels the scrape adds (`vendor`, `node`: scrape.py), and is
  0 when the scrape failed (prometheus/prometheus scrape/scrape.go v0.316.0 "Health of the scrape
  target"). A pod without an IP has no target at all (discovery/kubernetes/pod.go v0.316.0), so a
  missing exporter pod is caught by its DaemonSet's numbers instead.
- kube-state-metrics v2.20.0: kube_daemonset_status_number_unavailable{namespace,daemonset}
  (internal/store/daemonset.go); kube_pod_status_phase{namespace,pod,phase} and
  kube_pod_container_resource_requests{namespace,pod,resource} (internal/store/pod.go);
  kube_node_status_allocatable{node,resource} (internal/store/node.go). Pod and node metrics spell
  a resource with every character outside [a-zA-Z0-9_] as "_" (internal/store/utils.go
  SanitizeLabelName): nvidia.com/gpu is nvidia_com_gpu.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from generator.builders.device_plugins import mps_daemon_name
from generator.builders.monitoring import rulefiles
from generator.builders.monitoring.rulefiles import RuleFile
from generator.builders.monitoring.sources import Exporter, HealthMetric
from generator.values.model import FleetView
from generator.vocab import series
from generator.vocab.addons import FLEET
from generator.vocab.series import CLUSTER_LABEL

GROUP_VENDOR = "accelerators.alerts.devices"
GROUP_FLEET = "accelerators.alerts.fleet"
RUNBOOK_DOC = "docs/alerts.md"  # of accel-gitops; each alert names its section

# Defaults of fleet.yaml `monitoring.alerts`.
DEFAULT_PENDING_MINUTES = 15
DEFAULT_QUOTA_RATIO = 0.9
DEFAULT_SEVERITY = {
    "device": "critical",
    "agent": "critical",
    "pending": "warning",
    "quota": "warning",
    "capacity": "warning",
}
# How long a condition must hold before each class of alert fires.
HOLD = {"device": "5m", "agent": "10m", "quota": "15m", "capacity": "10m"}
# The window an error count's rise is read over.
INCREASE_WINDOW = "10m"
# What the fleet-wide alerts read besides the exporters' own series and the recorded ones: the
# scrape's `up`, and kube-state-metrics (the module docstring cites each).
SCRAPE_METRICS = ("up",)
KSM_METRICS = (
    "kube_daemonset_status_number_unavailable",
    "kube_pod_container_resource_requests",
    "kube_pod_status_phase",
    "kube_node_status_allocatable",
)


@dataclass(frozen=True)
class AlertSettings:
    enabled: bool
    pending_minutes: int
    quota_ratio: float
    severity: dict[str, str]
    labels: dict[str, str]


def alert_settings(view: FleetView) -> AlertSettings:
    raw: dict[str, Any] = view.fleet.doc.get("monitoring", "alerts") or {}
    return AlertSettings(
        enabled=bool(raw.get("enabled", True)),
        pending_minutes=int(raw.get("pendingMinutes", DEFAULT_PENDING_MINUTES)),
        quota_ratio=float(raw.get("quotaUsedRatio", DEFAULT_QUOTA_RATIO)),
        severity={**DEFAULT_SEVERITY, **(raw.get("severity") or {})},
        # An alert of a cluster names it (its own labels may say otherwise).
        labels=dict(
            sorted(
                {
                    **({CLUSTER_LABEL: view.cluster.name} if view.cluster is not None else {}),
                    **(raw.get("labels") or {}),
                }.items()
            )
        ),
    )


def _q(text: str) -> str:
    return json.dumps(text)


def ksm_resource(resource: str) -> str:
    """An extended resource as kube-state-metrics' pod and node metrics spell it."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", resource)


def anchor(alert: str) -> str:
    """The alert's section in docs/alerts.md (GitHub's heading anchors: lower case)."""
    return alert.lower()


def _alert(
    name: str,
    expr: str,
    hold: str | None,
    severity: str,
    settings: AlertSettings,
    summary: str,
    description: str,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An alerting rule; `hold`: how long its condition must hold (None: it fires at once)."""
    rule: dict[str, Any] = {"alert": name, "expr": expr}
    if hold is not None:
        rule["for"] = hold
    rule["labels"] = {**settings.labels, **(labels or {}), "severity": severity}
    rule["annotations"] = {
        "summary": summary,
        "description": description,
        "runbook": f"accel-gitops {RUNBOOK_DOC}#{anchor(name)}",
    }
    return rule


HEALTH_EXPR = {
    "flag": "{m} == 0",
    "nonzero": "{m} > 0",
    "increase": "increase({m}[" + INCREASE_WINDOW + "]) > 0",
    "newvalue": "{m} > 0 and changes({m}[" + INCREASE_WINDOW + "]) > 0",
}
HEALTH_ALERT = {
    "flag": "AcceleratorUnhealthy",
    "nonzero": "AcceleratorDeviceFault",
    "increase": "AcceleratorErrorsRising",
    "newvalue": "AcceleratorDeviceFault",
}


def health_rule(exp: Exporter, health: HealthMetric, settings: AlertSettings) -> dict[str, Any]:
    metric = f"{health.metric}{{vendor={_q(exp.vendor)}}}"
    return _alert(
        HEALTH_ALERT[health.kind],
        HEALTH_EXPR[health.kind].format(m=metric),
        # A health flag must stay down a while; an error count's rise or a new fault code is
        # news at once.
        HOLD["device"] if health.kind == "flag" else None,
        settings.severity["device"],
        settings,
        f"{exp.vendor}: {health.what} on node {{{{ $labels.node }}}}",
        f"{health.metric} of the {exp.vendor} exporter on node {{{{ $labels.node }}}} says "
        f"{health.what} (value {{{{ $value }}}}).",
        {"vendor": exp.vendor, "signal": health.metric},
    )


def vendor_rules(exporters: list[Exporter], settings: AlertSettings) -> list[dict[str, Any]]:
    return [health_rule(exp, h, settings) for exp in exporters for h in exp.health]


def fleet_rules(
    view: FleetView, exporters: list[Exporter], settings: AlertSettings
) -> list[dict[str, Any]]:
    """The fleet-wide alerts, then each pool's."""
    return fleet_wide_rules(view, exporters, settings) + [r for _, r in pool_rules(view, settings)]


def fleet_wide_rules(
    view: FleetView, exporters: list[Exporter], settings: AlertSettings
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    agent = settings.severity["agent"]
    for exp in exporters:
        out.append(
            _alert(
                "AcceleratorExporterDown",
                f"up{{vendor={_q(exp.vendor)}}} == 0",
                HOLD["agent"],
                agent,
                settings,
                f"{exp.vendor} exporter on node {{{{ $labels.node }}}} cannot be scraped",
                f"Prometheus has failed to scrape the {exp.vendor} exporter ({exp.name}) on node "
                "{{ $labels.node }}: its devices' metrics and health are not seen.",
                # The series carries the vendor already (scrape.py); the rule names it too, so
                # each vendor's rule differs from the others in its labels, which promtool's
                # check requires of rules of one name ("duplicate rule(s) found").
                {"vendor": exp.vendor},
            )
        )
    daemonsets: list[tuple[str, str, str, str]] = []
    for v in view.vendors:
        # A DRA vendor has no device plugin (the site's DRA driver publishes its devices:
        # builders/device_plugins.py), and a plugin the vendor's operator or the site provides
        # is not the fleet's DaemonSet to watch: neither has an agent rule.
        if v.dra or v.plugin_provider != FLEET:
            continue
        dp = v.device_plugin
        daemonsets.append((v.id, "device plugin", dp.namespace, dp.name))
        # An MPS vendor's plugin hands out no share while its control daemon is down.
        mps = mps_daemon_name(v)
        if mps is not None:
            daemonsets.append((v.id, "MPS control daemon", dp.namespace, mps))
    daemonsets += [
        (e.vendor, "exporter", e.namespace, e.name)
        for e in exporters
        if e.agent is not None and e.namespace
    ]
    for vendor_id, what, ns, name in daemonsets:
        out.append(
            _alert(
                "AcceleratorAgentUnavailable",
                "kube_daemonset_status_number_unavailable"
                f"{{namespace={_q(ns)},daemonset={_q(name)}}} > 0",
                HOLD["agent"],
                agent,
                settings,
                f"{vendor_id} {what} is not running on {{{{ $value }}}} of its nodes",
                f"DaemonSet {ns}/{name} ({vendor_id} {what}) has {{{{ $value }}}} node(s) "
                "without a ready pod: "
                + (
                    "those nodes' devices are not watched."
                    if what == "exporter"
                    else "pods there cannot be given new devices."
                ),
                {"vendor": vendor_id, "agent": what.lower().replace(" ", "-")},
            )
        )
    # A DRA vendor's pods ask for no extended resource: they are not seen here (docs/allocation.md).
    resources = sorted({ksm_resource(v.resource_name) for v in view.vendors if not v.dra})
    if resources:
        regex = "|".join(resources)
        out.append(
            _alert(
                "AcceleratorPodsPending",
                "sum by (namespace, pod) (kube_pod_container_resource_requests"
                f"{{resource=~{_q(regex)}}}) > 0 and on (namespace, pod) "
                '(kube_pod_status_phase{phase="Pending"} == 1)',
                f"{settings.pending_minutes}m",
                settings.severity["pending"],
                settings,
                "pod {{ $labels.namespace }}/{{ $labels.pod }} has waited for accelerators for "
                f"{settings.pending_minutes} minutes",
                "The pod asks for accelerator devices and has been Pending for "
                f"{settings.pending_minutes} minutes: its pool is full, its queue has not "
                "admitted it, or no node matches it.",
            )
        )
    if view.teams:
        out.append(
            _alert(
                "TeamAcceleratorQuotaNearlyUsed",
                f"{series.QUOTA_RATIO} > {settings.quota_ratio!r}",
                HOLD["quota"],
                settings.severity["quota"],
                settings,
                "team {{ $labels.team }} uses {{ $value | humanizePercentage }} of its "
                "{{ $labels.resource }} quota",
                "Team {{ $labels.team }} has used more than "
                f"{settings.quota_ratio:.0%} of its {{{{ $labels.resource }}}} quota for "
                f"{HOLD['quota'].removesuffix('m')} minutes: its next job waits.",
            )
        )
    return out


def pool_rules(view: FleetView, settings: AlertSettings) -> list[tuple[str, dict[str, Any]]]:
    """(vendor/pool, its node-devices alert) per pool of nodes that advertise a resource."""
    out: list[tuple[str, dict[str, Any]]] = []
    for vendor in view.vendors:
        if vendor.dra:
            continue  # its nodes advertise no extended resource: their devices are in slices
        resource = ksm_resource(vendor.resource_name)
        for pool in vendor.pools:
            if not pool.nodes:
                continue
            nodes = "|".join(re.escape(n) for n in sorted(pool.nodes))
            # A shared vendor's node advertises each device `replicas` times.
            units = pool.units_per_node
            what = f"{units} {vendor.id} {vendor.units}"
            declared = f"{pool.devices_per_node} devices per node"
            cause = "a device failed, or the device plugin lost it."
            if vendor.sharing:
                declared += f", each {vendor.sharing.per_device}"
                # A MIG layout not applied yet looks the same (the mode says so).
                cause = vendor.sharing.mode.devices_missing_cause(vendor.sharing) or cause
            out.append(
                (
                    f"{vendor.id}/{pool.name}",
                    _alert(
                        "AcceleratorNodeDevicesMissing",
                        f"kube_node_status_allocatable{{resource={_q(resource)},node=~{_q(nodes)}}}"
                        f" < {units}",
                        HOLD["capacity"],
                        settings.severity["capacity"],
                        settings,
                        "node {{ $labels.node }} advertises {{ $value }} of its " + what,
                        f"Pool {vendor.id}/{pool.name} declares {declared}; node "
                        "{{ $labels.node }} has {{ $value }} allocatable: " + cause,
                        {"vendor": vendor.id, "pool": pool.name},
                    ),
                )
            )
    return out


def files(view: FleetView, exporters: list[Exporter], budget: int | None = None) -> list[RuleFile]:
    """The alerting rules as PrometheusRules: one while they fit the operator's limit
    (rulefiles.py); else the per-vendor and fleet-wide alerts in the main one and the pools'
    node-devices alerts (each lists its pool's nodes) spread over as many more as keep each
    under the budget."""
    settings = alert_settings(view)
    if not settings.enabled:
        return []
    devices = vendor_rules(exporters, settings)
    fleet = fleet_wide_rules(view, exporters, settings)
    pools = pool_rules(view, settings)
    main = [{"name": GROUP_VENDOR, "rules": devices}] if devices else []
    keyed = [(key, rule, rulefiles.size(rule)) for key, rule in pools]
    spread = rulefiles.shares(keyed, rulefiles.size(devices) + rulefiles.size(fleet), budget)
    if spread is None:
        every = [*fleet, *(rule for _, rule in pools)]
        main += [{"name": GROUP_FLEET, "rules": every}] if every else []
        return [RuleFile(None, main)] if main else []
    main += [{"name": GROUP_FLEET, "rules": fleet}] if fleet else []
    out = [RuleFile(None, main)] if main else []
    for part, rules in spread:
        name = rulefiles.part_name(GROUP_FLEET, "pools", *part)
        out.append(RuleFile(part, [{"name": name, "rules": rules}]))
    return out
