"""Exporter facts and monitoring settings, read from values trees made for each behaviour.

Vendor `acme` is in no catalog: its exporter section is exactly what each test writes, so every
default (name, port, path, namespace, pod labels) shows. Expected values are written out here.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from generator.builders.monitoring.sources import (
    Exporter,
    Metric,
    MonitoringError,
    Settings,
    exporter,
    exporter_namespace,
    exporters,
    settings,
)
from generator.values import loader as values
from generator.values.model import FleetView, NodeAgent, Vendor
from tests.fixtures import NVIDIA, PROD_FLEET, lines, tree

# A vendor no catalog knows, with everything a values file must give; `exporter` is appended.
ACME = """\
resourceName: acme.com/xpu
pciVendor: "1e3e"
selectorLabel: accelerator
modelLabel: xpu-model
nodeLabels: {accelerator: acme-xpu, gpu-brand: acme-brand}
taints: [{key: acme.com/xpu, value: present, effect: NoSchedule}]
costWeight: 2.5
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

# The smallest exporter section that renders: a DaemonSet image and version, the two metrics
# every vendor needs and a total.
RENDERED = """\
exporter:
  daemonSet: {image: r/acme-exporter, version: v2}
  labels: {node: host, device: xpu}
  metrics:
    utilization: {name: acme_util, unit: percent}
    memoryUsed: {name: acme_used, unit: MiB}
    memoryTotal: {name: acme_total, unit: GiB}
"""


def fleet_view(tmp_path: Path, files: dict[str, str | None], fleet: str = PROD_FLEET) -> FleetView:
    """Environment prod of a tree with only `files` beside fleet.yaml."""
    root = tree(tmp_path / "repo", files, fleet=fleet, defaults=False)
    return values.load(root).envs["prod"]


def acme_view(tmp_path: Path, exporter_section: str, fleet: str = PROD_FLEET) -> FleetView:
    return fleet_view(tmp_path, {"vendors/acme.yaml": ACME + exporter_section}, fleet)


def acme_vendor(tmp_path: Path, exporter_section: str = RENDERED) -> Vendor:
    [vendor] = acme_view(tmp_path, exporter_section).vendors
    return vendor


def mon001(tmp_path: Path, exporter_section: str) -> list[str]:
    root = tree(tmp_path / "repo", {"vendors/acme.yaml": ACME + exporter_section}, defaults=False)
    return [line for line in lines(root) if "MON001" in line]


# ---------------------------------------------------------------------------------------- settings


def test_settings_default_when_the_fleet_has_no_monitoring_section(tmp_path: Path) -> None:
    view = acme_view(tmp_path, RENDERED)
    assert settings(view) == Settings(
        namespace="accelerator-monitoring",
        exporter_namespace="accelerator-exporters",
        selector_labels={},
        grafana_folder=None,
        cost_currency="weighted device-hours",
    )
    assert exporter_namespace(view) == "accelerator-exporters"


def test_settings_default_when_the_monitoring_section_is_empty(tmp_path: Path) -> None:
    view = acme_view(tmp_path, RENDERED, fleet=PROD_FLEET + "monitoring: {}\n")
    assert settings(view) == Settings(
        namespace="accelerator-monitoring",
        exporter_namespace="accelerator-exporters",
        selector_labels={},
        grafana_folder=None,
        cost_currency="weighted device-hours",
    )


def test_settings_read_every_monitoring_key(tmp_path: Path) -> None:
    fleet = PROD_FLEET + (
        "monitoring:\n"
        "  namespace: gpu-monitoring\n"
        "  exporterNamespace: gpu-exporters\n"
        "  prometheusSelectorLabels: {release: kps, app: prometheus, zone: a}\n"
        "  grafanaFolder: Accelerators\n"
        "  costCurrency: EUR\n"
    )
    view = acme_view(tmp_path, RENDERED, fleet=fleet)
    got = settings(view)
    assert got == Settings(
        namespace="gpu-monitoring",
        exporter_namespace="gpu-exporters",
        selector_labels={"app": "prometheus", "release": "kps", "zone": "a"},
        grafana_folder="Accelerators",
        cost_currency="EUR",
    )
    # Sorted by key, whatever order the values give them in (the rendered labels are stable).
    assert list(got.selector_labels.items()) == [
        ("app", "prometheus"),
        ("release", "kps"),
        ("zone", "a"),
    ]
    assert exporter_namespace(view) == "gpu-exporters"


# ---------------------------------------------------------------------------- a rendered exporter


def test_a_rendered_exporter_runs_as_the_daemonset_the_values_describe(tmp_path: Path) -> None:
    [exp] = exporters(acme_view(tmp_path, RENDERED))
    assert exp == Exporter(
        vendor="acme",
        brand="acme-brand",
        name="acme-exporter",
        port=9400,
        port_name="metrics",
        path="/metrics",
        namespace="accelerator-exporters",
        pod_labels={"accel-gitops.io/vendor": "acme", "app.kubernetes.io/name": "acme-exporter"},
        labels={"device": "xpu", "node": "host"},
        utilization=Metric("acme_util", "percent"),
        memory_used=Metric("acme_used", "MiB"),
        memory_total=Metric("acme_total", "GiB"),
        memory_free=None,
        memory_reserved=None,
        cost_weight=2.5,
        resource="acme.com/xpu",
        quota_key="requests.acme.com/xpu",
        # A DaemonSet without priorityClassName gets none (not the device plugins' default).
        agent=NodeAgent(image="r/acme-exporter", version="v2", priority_class=""),
    )
    assert list(exp.pod_labels) == ["accel-gitops.io/vendor", "app.kubernetes.io/name"]
    assert list(exp.labels) == ["device", "node"]


def test_a_rendered_exporter_keeps_its_name_port_and_path(tmp_path: Path) -> None:
    section = RENDERED.replace(
        "exporter:\n",
        "exporter:\n  name: xpu-exporter\n  port: 9109\n  path: /stats\n  portName: web\n"
        "  namespace: elsewhere\n  podLabels: {app: upstream}\n",
    )
    [exp] = exporters(acme_view(tmp_path, section))
    assert (exp.name, exp.port, exp.path) == ("xpu-exporter", 9109, "/stats")
    # Rendered, the pods are the DaemonSet's: its own labels, namespace and named port, not the
    # upstream ones given for an exporter installed another way.
    assert exp.pod_labels == {
        "accel-gitops.io/vendor": "acme",
        "app.kubernetes.io/name": "xpu-exporter",
    }
    assert (exp.namespace, exp.port_name) == ("accelerator-exporters", "metrics")


def test_rendered_exporters_run_in_the_fleets_exporter_namespace(tmp_path: Path) -> None:
    view = acme_view(tmp_path, RENDERED, fleet=PROD_FLEET + "monitoring: {exporterNamespace: xe}\n")
    [exp] = exporters(view)
    assert exp.namespace == "xe"
    # Called alone, the exporter runs in the default exporter namespace.
    found = exporter(view.vendors[0])
    assert found is not None and found.namespace == "accelerator-exporters"
    assert exporter(view.vendors[0], "other-ns") == dataclasses.replace(found, namespace="other-ns")


def test_the_brand_is_the_vendor_id_without_a_gpu_brand_node_label(tmp_path: Path) -> None:
    text = ACME.replace(", gpu-brand: acme-brand", "") + RENDERED
    view = fleet_view(tmp_path, {"vendors/acme.yaml": text})
    [exp] = exporters(view)
    assert exp.brand == "acme"


def test_an_exporter_daemonset_needs_an_image(tmp_path: Path) -> None:
    section = RENDERED.replace("{image: r/acme-exporter, version: v2}", "{version: v2}")
    assert mon001(tmp_path, section) == [
        "values/vendors/acme.yaml:18:3: MON001 vendor acme: exporter.daemonSet.image is not set, "
        "so its exporter cannot be rendered; set it, or set exporter.render: false where the "
        "exporter is installed another way (at $.exporter.daemonSet.image); "
        "see docs/monitoring.md for the exporter keys"
    ]


def test_an_exporter_daemonset_needs_a_version(tmp_path: Path) -> None:
    section = RENDERED.replace("{image: r/acme-exporter, version: v2}", "{image: r/x}")
    assert mon001(tmp_path, section) == [
        "values/vendors/acme.yaml:18:3: MON001 vendor acme: exporter.daemonSet.version is not "
        "set, so its exporter cannot be rendered; set it, or set exporter.render: false where "
        "the exporter is installed another way (at $.exporter.daemonSet.version); "
        "see docs/monitoring.md for the exporter keys"
    ]


def test_an_exporter_without_a_daemonset_cannot_be_rendered(tmp_path: Path) -> None:
    section = RENDERED.replace("  daemonSet: {image: r/acme-exporter, version: v2}\n", "")
    with pytest.raises(MonitoringError) as err:
        exporter(acme_vendor(tmp_path, section))
    assert str(err.value).startswith("vendor acme: exporter.daemonSet.image is not set")
    assert err.value.path == ("exporter", "daemonSet", "image")


# -------------------------------------------------------------- an exporter installed another way


def test_an_exporter_installed_another_way_is_selected_by_its_upstream_labels(
    tmp_path: Path,
) -> None:
    section = RENDERED.replace(
        "  daemonSet: {image: r/acme-exporter, version: v2}\n",
        "  render: false\n  namespace: acme-system\n  portName: http\n"
        "  podLabels: {release: r1, app: acme}\n",
    )
    [exp] = exporters(acme_view(tmp_path, section))
    assert exp.agent is None
    assert (exp.namespace, exp.port_name, exp.port) == ("acme-system", "http", 9400)
    assert list(exp.pod_labels.items()) == [("app", "acme"), ("release", "r1")]
    assert (exp.name, exp.path) == ("acme-exporter", "/metrics")


def test_an_exporter_installed_another_way_may_run_anywhere_on_any_port(tmp_path: Path) -> None:
    section = RENDERED.replace(
        "  daemonSet: {image: r/acme-exporter, version: v2}\n",
        "  render: false\n  port: 9555\n  podLabels: {app: acme}\n",
    )
    [exp] = exporters(acme_view(tmp_path, section))
    # No namespace: any namespace; no port name: the port number selects.
    assert (exp.namespace, exp.port_name, exp.port) == (None, None, 9555)
    assert exp.pod_labels == {"app": "acme"}


def test_an_exporter_installed_another_way_needs_pod_labels(tmp_path: Path) -> None:
    section = RENDERED.replace(
        "  daemonSet: {image: r/acme-exporter, version: v2}\n", "  render: false\n"
    )
    assert mon001(tmp_path, section) == [
        "values/vendors/acme.yaml:17:1: MON001 vendor acme: exporter.podLabels is empty, so "
        "nothing selects the exporter pods installed another way; give their labels "
        "(at $.exporter.podLabels); see docs/monitoring.md for the exporter keys"
    ]


def test_a_catalog_exporter_installed_another_way_uses_the_catalogs_pod_labels(
    tmp_path: Path,
) -> None:
    view = fleet_view(tmp_path, {"vendors/nvidia.yaml": NVIDIA + "exporter: {render: false}\n"})
    [exp] = exporters(view)
    # NVIDIA/dcgm-exporter dcgm-exporter.yaml 4.5.3-4.8.2: pod label app.kubernetes.io/name
    # dcgm-exporter, container port `metrics` 9400.
    assert exp.pod_labels == {"app.kubernetes.io/name": "dcgm-exporter"}
    assert (exp.port_name, exp.port, exp.namespace, exp.agent) == ("metrics", 9400, None, None)


# ------------------------------------------------------------------------------------ the metrics


def test_a_total_wins_over_free_and_reserved_memory(tmp_path: Path) -> None:
    view = fleet_view(
        tmp_path,
        {
            "vendors/nvidia.yaml": NVIDIA
            + "exporter:\n  metrics:\n    memoryTotal: {name: DCGM_FI_DEV_FB_TOTAL, unit: MiB}\n"
        },
    )
    [exp] = exporters(view)
    assert exp.memory_total == Metric("DCGM_FI_DEV_FB_TOTAL", "MiB")
    assert (exp.memory_free, exp.memory_reserved) == (None, None)
    assert exp.metric_names == (
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_FB_TOTAL",
    )


def test_free_and_reserved_memory_stand_in_for_a_missing_total(tmp_path: Path) -> None:
    [exp] = exporters(fleet_view(tmp_path, {"vendors/nvidia.yaml": NVIDIA}))
    # NVIDIA/dcgm-exporter etc/default-counters.csv 4.5.3-4.8.2: no FB_TOTAL; FB_USED, FB_FREE,
    # FB_RESERVED in MiB, GPU_UTIL in %.
    assert exp.utilization == Metric("DCGM_FI_DEV_GPU_UTIL", "percent")
    assert exp.memory_used == Metric("DCGM_FI_DEV_FB_USED", "MiB")
    assert exp.memory_total is None
    assert exp.memory_free == Metric("DCGM_FI_DEV_FB_FREE", "MiB")
    assert exp.memory_reserved == Metric("DCGM_FI_DEV_FB_RESERVED", "MiB")
    assert exp.metric_names == (
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_FB_RESERVED",
    )


def test_free_memory_alone_stands_in_for_a_missing_total(tmp_path: Path) -> None:
    section = RENDERED.replace(
        "    memoryTotal: {name: acme_total, unit: GiB}\n",
        "    memoryFree: {name: acme_free, unit: KB}\n",
    )
    [exp] = exporters(acme_view(tmp_path, section))
    assert (exp.memory_total, exp.memory_reserved) == (None, None)
    assert exp.memory_free == Metric("acme_free", "KB")
    assert exp.metric_names == ("acme_util", "acme_used", "acme_free")


def test_utilisation_may_be_a_ratio_and_memory_any_byte_unit(tmp_path: Path) -> None:
    section = (
        "exporter:\n"
        "  daemonSet: {image: r/acme-exporter, version: v2}\n"
        "  metrics:\n"
        "    utilization: {name: u, unit: ratio}\n"
        "    memoryUsed: {name: m1, unit: bytes}\n"
        "    memoryFree: {name: m2, unit: KiB}\n"
        "    memoryReserved: {name: m3, unit: MB}\n"
    )
    [exp] = exporters(acme_view(tmp_path, section))
    assert exp.utilization == Metric("u", "ratio")
    assert exp.memory_used == Metric("m1", "bytes")
    assert exp.memory_free == Metric("m2", "KiB")
    assert exp.memory_reserved == Metric("m3", "MB")
    assert exp.labels == {}


def test_an_exporter_needs_a_memory_total_or_free_memory(tmp_path: Path) -> None:
    section = RENDERED.replace("    memoryTotal: {name: acme_total, unit: GiB}\n", "")
    assert mon001(tmp_path, section) == [
        "values/vendors/acme.yaml:20:3: MON001 vendor acme: exporter.metrics needs memoryTotal "
        "or memoryFree for the ratio (at $.exporter.metrics); "
        "see docs/monitoring.md for the exporter keys"
    ]


@pytest.mark.parametrize("missing", ["utilization", "memoryUsed"])
def test_an_exporter_needs_utilisation_and_memory_used(tmp_path: Path, missing: str) -> None:
    section = "\n".join(
        line for line in RENDERED.splitlines() if not line.startswith(f"    {missing}:")
    )
    assert mon001(tmp_path, section + "\n") == [
        "values/vendors/acme.yaml:20:3: MON001 vendor acme: exporter.metrics needs utilization "
        "and memoryUsed (at $.exporter.metrics); see docs/monitoring.md for the exporter keys"
    ]


def test_an_exporter_without_metrics_is_reported(tmp_path: Path) -> None:
    section = "exporter:\n  daemonSet: {image: r/acme-exporter, version: v2}\n"
    assert mon001(tmp_path, section) == [
        "values/vendors/acme.yaml:17:1: MON001 vendor acme: exporter.metrics needs utilization "
        "and memoryUsed (at $.exporter.metrics); see docs/monitoring.md for the exporter keys"
    ]


def test_a_memory_metric_in_a_utilisation_unit_is_reported(tmp_path: Path) -> None:
    section = RENDERED.replace("{name: acme_used, unit: MiB}", "{name: acme_used, unit: ratio}")
    assert mon001(tmp_path, section) == [
        "values/vendors/acme.yaml:22:35: MON001 vendor acme: exporter.metrics.memoryUsed unit "
        "'ratio' is not one of bytes, KiB, MiB, GiB, KB, MB, GB "
        "(at $.exporter.metrics.memoryUsed.unit); see docs/monitoring.md for the exporter keys"
    ]


def test_utilisation_in_a_memory_unit_is_reported(tmp_path: Path) -> None:
    section = RENDERED.replace("{name: acme_util, unit: percent}", "{name: acme_util, unit: MiB}")
    assert mon001(tmp_path, section) == [
        "values/vendors/acme.yaml:21:36: MON001 vendor acme: exporter.metrics.utilization unit "
        "'MiB' is not one of percent, ratio "
        "(at $.exporter.metrics.utilization.unit); see docs/monitoring.md for the exporter keys"
    ]


@pytest.mark.parametrize(
    ("key", "metric"),
    [
        ("memoryTotal", {"name": "acme_total"}),
        ("memoryTotal", {"unit": "MiB"}),
        ("memoryFree", {"name": "", "unit": "MiB"}),
        ("memoryReserved", {"name": "acme_reserved", "unit": ""}),
        ("utilization", "acme_util"),
    ],
)
def test_a_metric_needs_a_name_and_a_unit(tmp_path: Path, key: str, metric: Any) -> None:
    # Values the schema already refuses; the exporter facts refuse them too.
    vendor = acme_vendor(tmp_path)
    metrics: dict[str, Any] = {
        "utilization": {"name": "acme_util", "unit": "percent"},
        "memoryUsed": {"name": "acme_used", "unit": "MiB"},
    }
    if key != "memoryTotal":
        metrics["memoryFree"] = {"name": "acme_free", "unit": "MiB"}
    metrics[key] = metric
    broken = dataclasses.replace(vendor, exporter={**vendor.exporter, "metrics": metrics})
    with pytest.raises(MonitoringError) as err:
        exporter(broken)
    assert str(err.value) == f"vendor acme: exporter.metrics.{key} needs a name and unit"
    assert err.value.path == ("exporter", "metrics", key)


def test_only_unified_labels_are_mapped(tmp_path: Path) -> None:
    # Values the schema already refuses: a label the rules do not aggregate by.
    vendor = acme_vendor(tmp_path)
    raw = {**vendor.exporter, "labels": {"pod": "p", "uuid": "UUID", "model": "m", "node": "n"}}
    found = exporter(dataclasses.replace(vendor, exporter=raw))
    assert found is not None
    assert list(found.labels.items()) == [("model", "m"), ("node", "n"), ("pod", "p")]


# ------------------------------------------------------------------------------ vendors, in order


def test_exporters_follow_the_vendors_and_skip_those_without_one(tmp_path: Path) -> None:
    no_exporter = ACME.replace("acme", "zeta") + RENDERED
    view = fleet_view(
        tmp_path,
        {
            "vendors/nvidia.yaml": NVIDIA,
            "vendors/acme.yaml": ACME,  # no exporter section
            "vendors/zeta.yaml": no_exporter,
        },
    )
    assert [v.id for v in view.vendors] == ["acme", "nvidia", "zeta"]
    assert exporter(view.vendors[0]) is None
    assert [(e.vendor, e.name) for e in exporters(view)] == [
        ("nvidia", "dcgm-exporter"),
        ("zeta", "zeta-exporter"),
    ]


def test_monitoring_error_points_at_the_exporter_section_by_default() -> None:
    err = MonitoringError("vendor x: wrong")
    assert str(err) == "vendor x: wrong"
    assert err.path == ("exporter",)
    assert MonitoringError("m", ("exporter", "labels")).path == ("exporter", "labels")
