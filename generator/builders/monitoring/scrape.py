"""Scrape configuration for every vendor exporter, in both forms users run.

- a Prometheus Operator `PodMonitor` per exporter;
- a plain `scrape_configs` fragment (Kubernetes pod discovery) for a hand-run Prometheus.

Both add `gpu_brand` and `vendor`, set `node` from the pod's node (and from the exporter's own
node label when it has one), and honour the exporter's `pod`/`namespace` labels: those name the
workload using the device, so the exporter pod's own name moves to `exporter_pod`/
`exporter_namespace` instead of shadowing them.
"""

from __future__ import annotations

import re
from typing import Any

from generator.builders.monitoring.sources import Exporter
from generator.vocab.series import BRAND_LABEL, VENDOR_LABEL

Relabel = dict[str, Any]  # Prometheus' own spelling (source_labels, target_label, ...)

_OPERATOR_KEYS = {
    "source_labels": "sourceLabels",
    "target_label": "targetLabel",
}


def _regex_literal(text: str) -> str:
    """`text` as an RE2 regex matching only itself (label values rarely need any escaping)."""
    return re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", text)


def _sanitize(label: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_]", "_", label)


def _target_relabels(exp: Exporter) -> list[Relabel]:
    return [
        {"action": "replace", "target_label": BRAND_LABEL, "replacement": exp.brand},
        {"action": "replace", "target_label": VENDOR_LABEL, "replacement": exp.vendor},
        {
            "action": "replace",
            "source_labels": ["__meta_kubernetes_pod_node_name"],
            "target_label": "node",
        },
        {
            "action": "replace",
            "source_labels": ["__meta_kubernetes_pod_name"],
            "target_label": "exporter_pod",
        },
        {
            "action": "replace",
            "source_labels": ["__meta_kubernetes_namespace"],
            "target_label": "exporter_namespace",
        },
        # The Operator sets these to the exporter pod's; honorLabels lets the exporter's win,
        # and where it has none, "no pod" is the truth, not the exporter's own pod.
        {"action": "labeldrop", "regex": "pod|namespace|container"},
    ]


def _node_keep(exp: Exporter) -> list[Relabel]:
    """Keep only targets on the vendor's nodes, by the node's labels that discovery attaches
    with `attach_metadata: {node: true}` as __meta_kubernetes_node_label_<name> (prometheus
    v3 discovery/kubernetes/pod.go; the name sanitised, non-alphanumerics as `_`)."""
    return [
        {
            "action": "keep",
            "source_labels": [f"__meta_kubernetes_node_label_{_sanitize(key)}"],
            "regex": _regex_literal(value),
        }
        for key, value in exp.node_filter
    ]


def _metric_relabels(exp: Exporter) -> list[Relabel]:
    node = exp.labels.get("node", "node")
    if node == "node":
        return []
    return [
        {
            "action": "replace",
            "source_labels": [node],
            "regex": "(.+)",
            "target_label": "node",
            "replacement": "$1",
        }
    ]


def _operator(relabels: list[Relabel]) -> list[Relabel]:
    return [{_OPERATOR_KEYS.get(k, k): v for k, v in r.items()} for r in relabels]


def pod_monitor_spec(exp: Exporter) -> dict[str, Any]:
    # A named port works with every Prometheus Operator; `portNumber` needs v0.79.0 or later
    # (prometheus-operator pkg/apis/monitoring/v1/podmonitor_types.go: absent at v0.78.2).
    port: dict[str, Any] = {"port": exp.port_name} if exp.port_name else {"portNumber": exp.port}
    endpoint: dict[str, Any] = {
        **port,
        "path": exp.path,
        "honorLabels": True,
        "relabelings": _operator(_node_keep(exp) + _target_relabels(exp)),
    }
    metric_relabels = _metric_relabels(exp)
    if metric_relabels:
        endpoint["metricRelabelings"] = _operator(metric_relabels)
    ns_selector: dict[str, Any] = (
        {"matchNames": [exp.namespace]} if exp.namespace else {"any": True}
    )
    spec: dict[str, Any] = {
        "namespaceSelector": ns_selector,
        "selector": {"matchLabels": dict(exp.pod_labels)},
        "podMetricsEndpoints": [endpoint],
    }
    if exp.node_filter:
        # The Operator turns this into the scrape config's attach_metadata (PodMonitorSpec
        # AttachMetadata, prometheus-operator v0.85.0 pkg/apis/monitoring/v1/podmonitor_types.go).
        spec["attachMetadata"] = {"node": True}
    return spec


def job_name(exp: Exporter) -> str:
    return f"accelerators/{exp.vendor}/{exp.name}"


def scrape_config(exp: Exporter) -> dict[str, Any]:
    sd: dict[str, Any] = {"role": "pod"}
    if exp.namespace:
        sd["namespaces"] = {"names": [exp.namespace]}
    if exp.node_filter:
        sd["attach_metadata"] = {"node": True}
    keep: list[Relabel] = [
        {
            "action": "keep",
            "source_labels": [f"__meta_kubernetes_pod_label_{_sanitize(key)}"],
            "regex": _regex_literal(value),
        }
        for key, value in exp.pod_labels.items()
    ]
    keep.append(
        {
            "action": "keep",
            "source_labels": ["__meta_kubernetes_pod_container_port_number"],
            "regex": str(exp.port),
        }
    )
    out: dict[str, Any] = {
        "job_name": job_name(exp),
        "honor_labels": True,
        "metrics_path": exp.path,
        "kubernetes_sd_configs": [sd],
        "relabel_configs": keep + _node_keep(exp) + _target_relabels(exp),
    }
    metric_relabels = _metric_relabels(exp)
    if metric_relabels:
        out["metric_relabel_configs"] = metric_relabels
    return out


def scrape_configs(exporters: list[Exporter]) -> dict[str, Any]:
    return {"scrape_configs": [scrape_config(e) for e in exporters]}
