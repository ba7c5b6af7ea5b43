"""Monitoring unit: unified cross-vendor accelerator monitoring (docs/monitoring.md).

Components:
- monitoring/exporters: each vendor's exporter DaemonSet as upstream ships it (catalog), in a
  namespace of their own that Pod Security admits them in ('privileged': they mount host paths);
  a vendor whose exporter is installed another way (`exporter.render: false`) has none;
- monitoring/namespace
- monitoring/scrape: a PodMonitor per vendor exporter and the same jobs as a plain Prometheus
  `scrape_configs` fragment in a ConfigMap;
- monitoring/rules: the PrometheusRule whose recording rules give every vendor the same series
  (several when they are over the Prometheus Operator's limit: recording_rules.files);
- monitoring/dashboard: the Grafana dashboard, in a ConfigMap the Grafana sidecar picks up.
"""

from __future__ import annotations

from typing import Any

from generator.builders.agents import daemonset, rbac_objects
from generator.builders.common import metadata, namespace
from generator.builders.monitoring import alerts, dashboard, recording_rules, rulefiles, scrape
from generator.builders.monitoring.rulefiles import RuleFile
from generator.builders.monitoring.sources import Exporter, Settings, exporters, settings
from generator.values import yamlio
from generator.values.model import FleetView
from generator.vocab.api import CORE, MONITORING
from generator.vocab.labels import COMPONENT_LABEL, NAME_LABEL, SYNC_WAVE, VENDOR_LABEL
from generator.vocab.objects import Obj
from generator.vocab.units import MONITORING_UNIT, Component

NAMESPACE = "accelerator-monitoring"  # default of fleet `monitoring.namespace`
SCRAPE_CONFIGMAP = "accelerator-scrape-configs"
SCRAPE_KEY = "scrape-configs.yaml"
RULE_NAME = "accelerators-unified"
ALERT_RULE_NAME = "accelerators-alerts"
DASHBOARD_CONFIGMAP = "accelerator-dashboard"
DASHBOARD_KEY = "accelerators.json"
GRAFANA_LABEL = "grafana_dashboard"
GRAFANA_FOLDER_ANNOTATION = "grafana_folder"


def _sources(view: FleetView) -> list[str]:
    found = {s for v in view.vendors for s in v.doc.sources}
    if view.fleet.doc.get("monitoring") is not None:
        found.update(view.fleet.doc.sources)
    return sorted(found)


def _prometheus_rule(
    conf: Settings, name: str, sources: list[str], role: str, groups: list[dict[str, Any]]
) -> Obj:
    """A PrometheusRule of the monitoring namespace, labelled for the Prometheus that loads it."""
    return {
        "apiVersion": MONITORING,
        "kind": "PrometheusRule",
        "metadata": metadata(
            name,
            namespace=conf.namespace,
            sources=sources,
            labels={**conf.selector_labels, COMPONENT_LABEL: role},
        ),
        "spec": {"groups": groups},
    }


def _rule_objects(
    conf: Settings, name: str, role: str, what: str, sources: list[str], files: list[RuleFile]
) -> list[Obj]:
    """The PrometheusRules of one role: the main one, and each share of the keyed rules
    (teams', pools') named after it."""
    return [
        _prometheus_rule(
            conf,
            name if f.part is None else rulefiles.part_name(name, what, *f.part),
            sorted({*sources, *f.sources}),
            role,
            f.groups,
        )
        for f in files
    ]


def build(view: FleetView) -> list[Component]:
    if not view.vendors:
        return []
    conf = settings(view)
    sources = _sources(view)
    # Findings about these objects point at the fleet's monitoring settings.
    origin = view.fleet.doc.anchor(("monitoring",))
    ns = namespace(
        conf.namespace, sources=sources, pod_security="baseline", annotations={SYNC_WAVE: "-1"}
    )
    out = [Component(MONITORING_UNIT, f"{MONITORING_UNIT}/namespace", [ns], origin=origin)]
    exps = exporters(view)
    if not exps:
        return out
    out += _exporter_components(view, conf, exps)
    out.append(
        Component(
            MONITORING_UNIT,
            f"{MONITORING_UNIT}/scrape",
            _scrape_objects(view, conf, exps),
            origin=origin,
        )
    )
    rules = _rule_objects(
        conf, RULE_NAME, "recording-rules", "teams", sources, recording_rules.files(view, exps)
    )
    if rules:
        out.append(Component(MONITORING_UNIT, f"{MONITORING_UNIT}/rules", rules, origin=origin))
    alert_rules = _rule_objects(
        conf, ALERT_RULE_NAME, "alerting-rules", "pools", sources, alerts.files(view, exps)
    )
    if alert_rules:
        where = view.fleet.doc.anchor(("monitoring", "alerts"), ("monitoring",))
        out.append(
            Component(MONITORING_UNIT, f"{MONITORING_UNIT}/alerts", alert_rules, origin=where)
        )
    notes = {GRAFANA_FOLDER_ANNOTATION: conf.grafana_folder} if conf.grafana_folder else {}
    board: Obj = {
        "apiVersion": CORE,
        "kind": "ConfigMap",
        "metadata": metadata(
            DASHBOARD_CONFIGMAP,
            namespace=conf.namespace,
            sources=sources,
            labels={GRAFANA_LABEL: "1", COMPONENT_LABEL: "dashboard"},
            annotations=notes,
        ),
        "data": {DASHBOARD_KEY: dashboard.dashboard_json(conf)},
    }
    out.append(Component(MONITORING_UNIT, f"{MONITORING_UNIT}/dashboard", [board], origin=origin))
    return out


def _scrape_objects(view: FleetView, conf: Settings, exps: list[Exporter]) -> list[Obj]:
    objs: list[Obj] = []
    for exp in exps:
        vendor = view.vendor(exp.vendor)
        objs.append(
            {
                "apiVersion": MONITORING,
                "kind": "PodMonitor",
                "metadata": metadata(
                    exp.name,
                    namespace=conf.namespace,
                    sources=vendor.doc.sources if vendor else [],
                    labels={
                        **conf.selector_labels,
                        COMPONENT_LABEL: "scrape",
                        VENDOR_LABEL: exp.vendor,
                    },
                ),
                "spec": scrape.pod_monitor_spec(exp),
            }
        )
    objs.append(
        {
            "apiVersion": CORE,
            "kind": "ConfigMap",
            "metadata": metadata(
                SCRAPE_CONFIGMAP,
                namespace=conf.namespace,
                sources=_sources(view),
                labels={COMPONENT_LABEL: "scrape"},
            ),
            "data": {SCRAPE_KEY: yamlio.dump(scrape.scrape_configs(exps))},
        }
    )
    return objs


def _exporter_components(view: FleetView, conf: Settings, exps: list[Exporter]) -> list[Component]:
    rendered = [e for e in exps if e.agent is not None]
    if not rendered:
        return []
    sources = sorted({s for e in rendered if (v := view.vendor(e.vendor)) for s in v.doc.sources})
    ns = namespace(
        conf.exporter_namespace,
        sources=sources,
        pod_security="privileged",
        annotations={SYNC_WAVE: "-1"},
    )
    origin = view.fleet.doc.anchor(("monitoring",))
    out = [
        Component(MONITORING_UNIT, f"{MONITORING_UNIT}/exporters/namespace", [ns], origin=origin)
    ]
    for exp in rendered:
        vendor = view.vendor(exp.vendor)
        assert vendor is not None and exp.agent is not None and exp.namespace is not None
        labels = {
            NAME_LABEL: exp.name,
            COMPONENT_LABEL: "exporter",
            VENDOR_LABEL: vendor.id,
        }
        objs = rbac_objects(exp.name, exp.namespace, exp.agent, vendor.doc.sources, labels)
        port: dict[str, object] = {
            "name": exp.port_name,
            "containerPort": exp.port,
            "protocol": "TCP",
        }
        if exp.agent.host_network:
            port["hostPort"] = exp.port  # what the API server defaults for host-network pods
        objs.append(
            daemonset(
                view,
                vendor,
                exp.agent,
                name=exp.name,
                namespace=exp.namespace,
                labels=labels,
                match=dict(exp.pod_labels),
                ports=[port],
            )
        )
        comp_origin = vendor.doc.anchor(("exporter",))
        out.append(
            Component(
                MONITORING_UNIT,
                f"{MONITORING_UNIT}/exporters/{vendor.id}",
                objs,
                origin=comp_origin,
            )
        )
    return out
