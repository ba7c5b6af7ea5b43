"""Checks on the vendors' exporter facts (codes MON; docs/monitoring.md)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from generator.builders.monitoring.recording_rules import ordered_mappings
from generator.builders.monitoring.sources import MonitoringError, exporter, settings
from generator.findings import Finding, Severity
from generator.policy.checks import NO_TEAM, WARNING, Check
from generator.policy.context import Context
from generator.policy.placement import selector_matches
from generator.values.yamlio import json_path
from generator.vocab.labels import NAMESPACE_NAME_LABEL
from generator.vocab.objects import Obj


def exporter_facts(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    for vendor in view.vendors:
        try:
            exp = exporter(vendor, settings(view).exporter_namespace)
            if exp is not None:
                ordered_mappings(exp)
        except MonitoringError as err:
            yield Finding(
                "MON001",
                str(err),
                vendor.doc.anchor(err.path),  # under `exporter`: anchor tries its parents
                json_path(err.path),
                "see docs/monitoring.md for the exporter keys",
            )


def no_exporter(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    for vendor in view.vendors:
        if not vendor.exporter:
            yield Finding(
                "MON002",
                f"vendor {vendor.id} has no exporter section: no scrape config or rules for it",
                vendor.doc.anchor(("exporter",)),
                "$.exporter",
                "name its exporter (port, podLabels, labels, metrics); docs/monitoring.md",
                Severity.WARNING,
            )


# ---- MON003: the named Prometheus selects what the fleet renders for it ---------------------

# Each kind the Prometheus Operator loads, and the two selectors of a Prometheus that pick it
# (prometheus-operator v0.85.0 Documentation/api-reference/api.md, PrometheusSpec: an empty
# selector matches all objects, a null one none; a null namespace selector means the
# Prometheus's own namespace only, an empty one every namespace).
SELECTORS = {
    "PodMonitor": ("podMonitorSelector", "podMonitorNamespaceSelector"),
    "ServiceMonitor": ("serviceMonitorSelector", "serviceMonitorNamespaceSelector"),
    "PrometheusRule": ("ruleSelector", "ruleNamespaceSelector"),
}
MON003_HINT = (
    "label the fleet's monitoring objects with what the Prometheus selects "
    "(monitoring.prometheusSelectorLabels), or copy its selectors as they are into "
    "monitoring.prometheus; docs/monitoring.md"
)


def _shown(selector: dict[str, Any]) -> str:
    return json.dumps(selector, sort_keys=True, separators=(", ", ": "))


def prometheus_misses(prom: dict[str, Any], obj: Obj, ns_labels: dict[str, str]) -> list[str]:
    """Why the Prometheus `prom` (its spec's selectors) does not load `obj`; [] when it does."""
    kind = str(obj["kind"])
    select, select_ns = SELECTORS[kind]
    labels = obj["metadata"].get("labels") or {}
    out = []
    selector = prom.get(select)
    if selector is None:
        out.append(f"its {select} is unset, which selects no {kind}")
    elif not selector_matches(selector, labels):
        out.append(f"its {select} {_shown(selector)} does not match the {kind}'s labels")
    namespace = obj["metadata"].get("namespace", "")
    ns_selector = prom.get(select_ns)
    if ns_selector is None:
        if namespace != prom.get("namespace"):
            out.append(
                f"its {select_ns} is unset, which means its own namespace "
                f"{prom.get('namespace')!r} only, and the {kind} is in {namespace!r}"
            )
    elif not selector_matches(ns_selector, {**ns_labels, NAMESPACE_NAME_LABEL: namespace}):
        out.append(f"its {select_ns} {_shown(ns_selector)} does not match namespace {namespace!r}")
    return out


def unloaded(prom: dict[str, Any], objs: list[Obj]) -> list[tuple[Obj, list[str]]]:
    """(object, why) for each PodMonitor, ServiceMonitor and PrometheusRule among `objs` (one
    unit's) that the Prometheus `prom` (its spec's selectors and `namespace`) does not load;
    namespace selectors see the labels the same objects give their Namespaces."""
    ns_labels = {
        o["metadata"]["name"]: o["metadata"].get("labels") or {}
        for o in objs
        if o.get("kind") == "Namespace"
    }
    out = []
    for obj in objs:
        if obj.get("kind") not in SELECTORS:
            continue
        namespace = obj["metadata"].get("namespace", "")
        misses = prometheus_misses(prom, obj, ns_labels.get(namespace, {}))
        if misses:
            out.append((obj, misses))
    return out


def prometheus_selects(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    try:
        comps = [c for c in ctx.build.components if c.unit == "monitoring"]
    except MonitoringError:
        return  # exporter facts that cannot be built: MON001 says which
    objs = [o for c in comps for o in c.objects]
    loaded = [o for o in objs if o.get("kind") in SELECTORS]
    if not loaded:
        return
    doc = view.fleet.doc
    prom = doc.get("monitoring", "prometheus")
    if prom is None:
        return  # no Prometheus named: nothing to prove against (docs/monitoring.md says so)
    # At the labels the fleet gives its objects when set, else at the Prometheus named.
    labelled = doc.get("monitoring", "prometheusSelectorLabels") is not None
    where = doc.locate(
        ("monitoring", "prometheusSelectorLabels" if labelled else "prometheus"), key=True
    )
    for obj, misses in unloaded(prom, objs):
        meta = obj["metadata"]
        yield Finding(
            "MON003",
            f"the Prometheus in {prom.get('namespace')!r} (monitoring.prometheus) does not "
            f"load {obj['kind']} {meta.get('namespace')}/{meta['name']}: " + "; ".join(misses),
            where,
            "$.monitoring.prometheus",
            MON003_HINT,
        )


CHECKS: tuple[Check, ...] = (
    Check(
        "MON001",
        "a vendor's exporter section cannot give the unified monitoring series",
        exporter_facts,
        scope=NO_TEAM,
    ),
    Check(
        "MON002",
        "a vendor has no exporter: its devices are missing from the unified series",
        no_exporter,
        WARNING,
        scope=NO_TEAM,
    ),
    Check(
        "MON003",
        "the Prometheus named in values does not load a PodMonitor or rule the fleet renders",
        prometheus_selects,
    ),
)
