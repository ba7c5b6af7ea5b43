"""Scrape configuration of the vendor exporters, in both forms: the Prometheus Operator's
PodMonitor spec and a plain Prometheus `scrape_configs` job, read from values trees made for
each behaviour. Expected configurations are written out here, from the upstream facts the
catalog cites (each exporter's port, path, pod labels and own label names).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from generator.builders.monitoring import scrape
from generator.builders.monitoring.sources import Exporter, exporters
from generator.values import loader as values
from tests.fixtures import (
    AMD_MI250X,
    HYGON_Z100L,
    NVIDIA,
    PROD_FLEET,
    operator_target_relabels,
    tree,
)

# A vendor no catalog knows, so its exporter section is exactly what a test writes; `exporter`
# is appended.
ACME = """\
resourceName: acme.com/xpu
pciVendor: "1e3e"
selectorLabel: accelerator
modelLabel: xpu-model
nodeLabels: {accelerator: acme-xpu, gpu-brand: acme-brand}
taints: [{key: acme.com/xpu, value: present, effect: NoSchedule}]
devicePlugin:
  name: acme-device-plugin
  image: r/acme-plugin
  version: v1.0.0
  namespace: accelerator-plugins
  volumes: [{name: dp, hostPath: {path: /var/lib/kubelet/device-plugins}}]
  volumeMounts: [{name: dp, mountPath: /var/lib/kubelet/device-plugins}]
pools:
  - {name: x1, model: X1, devicesPerNode: 4, nodes: [acme-1], pciDevices: ["0001"]}
"""


def exporter_of(tmp_path: Path, file: str, text: str) -> Exporter:
    """The one exporter of a prod-only tree holding vendors/<file> alone."""
    root = tree(tmp_path / "repo", {f"vendors/{file}": text}, fleet=PROD_FLEET, defaults=False)
    [exp] = exporters(values.load(root).envs["prod"])
    return exp


# The same, in Prometheus' own spelling (snake_case keys).
def prometheus_target_relabels(brand: str, vendor: str) -> list[dict[str, Any]]:
    return [
        {"action": "replace", "target_label": "gpu_brand", "replacement": brand},
        {"action": "replace", "target_label": "vendor", "replacement": vendor},
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
        {"action": "labeldrop", "regex": "pod|namespace|container"},
    ]


# ------------------------------------------------------------------------------- pod_monitor_spec


def test_pod_monitor_of_a_rendered_exporter_selects_its_daemonset_pods_by_port_name(
    tmp_path: Path,
) -> None:
    """dcgm-exporter as rendered: its own pods, by the port name upstream gives, node from Hostname."""
    exp = exporter_of(tmp_path, "nvidia.yaml", NVIDIA)
    assert scrape.pod_monitor_spec(exp) == {
        "namespaceSelector": {"matchNames": ["accelerator-exporters"]},
        "selector": {
            "matchLabels": {
                "accel-gitops.io/vendor": "nvidia",
                "app.kubernetes.io/name": "dcgm-exporter",
            }
        },
        "podMetricsEndpoints": [
            {
                # dcgm-exporter deployment/templates/daemonset.yaml: container port name metrics
                "port": "metrics",
                "path": "/metrics",
                "honorLabels": True,
                "relabelings": operator_target_relabels("nvidia", "nvidia"),
                # render_metrics.go: the GPU's node is in dcgm-exporter's own label Hostname
                "metricRelabelings": [
                    {
                        "action": "replace",
                        "sourceLabels": ["Hostname"],
                        "regex": "(.+)",
                        "targetLabel": "node",
                        "replacement": "$1",
                    }
                ],
            }
        ],
    }


def test_pod_monitor_of_an_exporter_installed_another_way_uses_the_port_number(
    tmp_path: Path,
) -> None:
    """AMD's chart names no port: select by number, in any namespace, by the chart's pod label,
    on the vendor's nodes only (a site's exporter may run on other vendors' nodes too)."""
    exp = exporter_of(tmp_path, "amd.yaml", AMD_MI250X + "exporter: {render: false}\n")
    assert scrape.pod_monitor_spec(exp) == {
        "namespaceSelector": {"any": True},
        # ROCm/device-metrics-exporter helm-charts: pod label app.kubernetes.io/name
        "selector": {"matchLabels": {"app.kubernetes.io/name": "metrics-exporter"}},
        "podMetricsEndpoints": [
            {
                "portNumber": 5000,  # helm-charts/values.yaml: port 5000 (unnamed)
                "path": "/metrics",
                "honorLabels": True,
                "relabelings": [
                    # The AMD pools' node label, as NFD puts it on the node, sanitised.
                    {
                        "action": "keep",
                        "sourceLabels": [
                            "__meta_kubernetes_node_label_feature_node_kubernetes_io_accelerator"
                        ],
                        "regex": "amd-gpu",
                    },
                    *operator_target_relabels("amd", "amd"),
                ],
                # exporterconfig.proto: the node is in the exporter's label hostname
                "metricRelabelings": [
                    {
                        "action": "replace",
                        "sourceLabels": ["hostname"],
                        "regex": "(.+)",
                        "targetLabel": "node",
                        "replacement": "$1",
                    }
                ],
            }
        ],
        # prometheus-operator v0.85.0 PodMonitorSpec.attachMetadata: the node's labels
        "attachMetadata": {"node": True},
    }


def test_pod_monitor_of_an_exporter_in_a_named_namespace_by_port_name(tmp_path: Path) -> None:
    """An exporter installed another way, with its namespace and port name given, is found there."""
    text = AMD_MI250X + "exporter: {render: false, namespace: rocm, portName: http}\n"
    exp = exporter_of(tmp_path, "amd.yaml", text)
    spec = scrape.pod_monitor_spec(exp)
    assert spec["namespaceSelector"] == {"matchNames": ["rocm"]}
    [endpoint] = spec["podMetricsEndpoints"]
    assert (endpoint["port"], "portNumber" in endpoint) == ("http", False)


def test_an_exporter_whose_node_label_is_node_needs_no_metric_relabeling(tmp_path: Path) -> None:
    """dcu-exporter names its node label `node` already: nothing to copy, in either form."""
    exp = exporter_of(tmp_path, "hygon.yaml", HYGON_Z100L)
    [endpoint] = scrape.pod_monitor_spec(exp)["podMetricsEndpoints"]
    assert endpoint == {
        "port": "metrics",  # dcu-exporter-v2.yaml: port metrics 16080
        "path": "/metrics",
        "honorLabels": True,
        "relabelings": operator_target_relabels("hygon", "hygon"),
    }
    assert "metric_relabel_configs" not in scrape.scrape_config(exp)


def test_an_exporter_without_a_node_label_keeps_the_pods_node(tmp_path: Path) -> None:
    """No exporter label for the node: `node` is the pod's node, no metric relabeling."""
    text = ACME + (
        "exporter:\n"
        "  daemonSet: {image: r/acme-exporter, version: v2}\n"
        "  labels: {device: xpu}\n"
        "  metrics:\n"
        "    utilization: {name: acme_util, unit: percent}\n"
        "    memoryUsed: {name: acme_used, unit: MiB}\n"
        "    memoryTotal: {name: acme_total, unit: GiB}\n"
    )
    exp = exporter_of(tmp_path, "acme.yaml", text)
    assert exp.labels == {"device": "xpu"}
    [endpoint] = scrape.pod_monitor_spec(exp)["podMetricsEndpoints"]
    assert endpoint == {
        "port": "metrics",
        "path": "/metrics",
        "honorLabels": True,
        # gpu_brand is the vendor's gpu-brand node label, vendor its values file name
        "relabelings": operator_target_relabels("acme-brand", "acme"),
    }
    assert "metric_relabel_configs" not in scrape.scrape_config(exp)


# ---------------------------------------------------------------------------------- scrape_config


def test_scrape_config_of_a_rendered_exporter(tmp_path: Path) -> None:
    """The plain job finds the same pods as the PodMonitor: its labels, its port, its namespace."""
    exp = exporter_of(tmp_path, "nvidia.yaml", NVIDIA)
    assert scrape.scrape_config(exp) == {
        "job_name": "accelerators/nvidia/dcgm-exporter",
        "honor_labels": True,
        "metrics_path": "/metrics",
        "kubernetes_sd_configs": [
            {"role": "pod", "namespaces": {"names": ["accelerator-exporters"]}}
        ],
        "relabel_configs": [
            {
                "action": "keep",
                "source_labels": ["__meta_kubernetes_pod_label_accel_gitops_io_vendor"],
                "regex": "nvidia",
            },
            {
                "action": "keep",
                "source_labels": ["__meta_kubernetes_pod_label_app_kubernetes_io_name"],
                "regex": "dcgm-exporter",
            },
            # dcgm-exporter.yaml: port 9400
            {
                "action": "keep",
                "source_labels": ["__meta_kubernetes_pod_container_port_number"],
                "regex": "9400",
            },
            *prometheus_target_relabels("nvidia", "nvidia"),
        ],
        "metric_relabel_configs": [
            {
                "action": "replace",
                "source_labels": ["Hostname"],
                "regex": "(.+)",
                "target_label": "node",
                "replacement": "$1",
            }
        ],
    }


def test_scrape_config_keeps_pods_by_label_names_and_values_as_prometheus_spells_them(
    tmp_path: Path,
) -> None:
    """Pod label names keep their case (only other characters become _); values match literally."""
    # A Helm release named gpu.metrics: the chart's pod label app is RELEASE-amdgpu-metrics-exporter.
    text = AMD_MI250X + (
        "exporter:\n"
        "  render: false\n"
        "  podLabels: {app: gpu.metrics-amdgpu-metrics-exporter, example.com/Tier: gpu}\n"
    )
    exp = exporter_of(tmp_path, "amd.yaml", text)
    job = scrape.scrape_config(exp)
    # any namespace; the nodes' labels attached, to keep the vendor's nodes only
    assert job["kubernetes_sd_configs"] == [{"role": "pod", "attach_metadata": {"node": True}}]
    # The vendor file's podLabels replace the catalog's (app.kubernetes.io/name:
    # metrics-exporter), which the site's pods need not carry.
    assert job["relabel_configs"][:4] == [
        {
            "action": "keep",
            "source_labels": ["__meta_kubernetes_pod_label_app"],
            "regex": r"gpu\.metrics-amdgpu-metrics-exporter",  # an unescaped . matches any char
        },
        {
            "action": "keep",
            "source_labels": ["__meta_kubernetes_pod_label_example_com_Tier"],
            "regex": "gpu",
        },
        {
            "action": "keep",
            "source_labels": ["__meta_kubernetes_pod_container_port_number"],
            "regex": "5000",
        },
        {
            "action": "keep",
            "source_labels": [
                "__meta_kubernetes_node_label_feature_node_kubernetes_io_accelerator"
            ],
            "regex": "amd-gpu",
        },
    ]


def test_scrape_configs_holds_one_job_per_exporter(tmp_path: Path) -> None:
    """The ConfigMap's fragment: a job per exporter, in the order given."""
    nvidia = exporter_of(tmp_path / "a", "nvidia.yaml", NVIDIA)
    hygon = exporter_of(tmp_path / "b", "hygon.yaml", HYGON_Z100L)
    jobs = scrape.scrape_configs([hygon, nvidia])["scrape_configs"]
    assert [j["job_name"] for j in jobs] == [
        "accelerators/hygon/dcu-exporter",
        "accelerators/nvidia/dcgm-exporter",
    ]
