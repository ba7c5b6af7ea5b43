"""Exporter facts per vendor, read from the merged catalog + values, and the monitoring settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model import FleetView, Vendor

# Bytes per unit of each memory unit the values schema allows.
BYTES_PER_UNIT: dict[str, int] = {
    "bytes": 1,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
}
# Percent per unit of each utilisation unit.
PERCENT_PER_UNIT: dict[str, int] = {"percent": 1, "ratio": 100}

# The unified labels, in the order rules aggregate by them.
UNIFIED_LABELS = ("node", "device", "model", "namespace", "pod")
BRAND_LABEL = "gpu_brand"
VENDOR_LABEL = "vendor"
BRAND_NODE_LABEL = "gpu-brand"

DEFAULT_NAMESPACE = "accelerator-monitoring"
QUOTA_NAME = "accelerators"  # the ResourceQuota every team namespace gets (builders/teams.py)


class MonitoringError(ValueError):
    """Exporter facts that cannot give the unified series (a catalog or values mistake).

    `path` is where in the vendor's values it is (checks turn it into a file and line)."""

    def __init__(self, message: str, path: tuple[str, ...] = ("exporter",)) -> None:
        super().__init__(message)
        self.path = path


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str


@dataclass(frozen=True)
class Exporter:
    vendor: str  # vendor id (values file name)
    brand: str  # the vendor's gpu-brand node label value
    name: str
    port: int
    path: str
    namespace: str | None  # where the exporter pods run; None: any namespace
    pod_labels: dict[str, str]
    labels: dict[str, str]  # unified label -> exporter label
    utilization: Metric
    memory_used: Metric
    memory_total: Metric | None
    memory_free: Metric | None
    cost_weight: float
    resource: str  # the extended resource the vendor's device plugin advertises

    @property
    def metric_names(self) -> tuple[str, ...]:
        metrics = (self.utilization, self.memory_used, self.memory_total, self.memory_free)
        return tuple(m.name for m in metrics if m is not None)


@dataclass(frozen=True)
class Settings:
    namespace: str
    selector_labels: dict[str, str]
    grafana_folder: str | None
    cost_currency: str


def settings(view: FleetView) -> Settings:
    raw: dict[str, Any] = view.fleet.doc.get("monitoring", default={}) or {}
    return Settings(
        namespace=raw.get("namespace", DEFAULT_NAMESPACE),
        selector_labels=dict(sorted((raw.get("prometheusSelectorLabels") or {}).items())),
        grafana_folder=raw.get("grafanaFolder"),
        cost_currency=raw.get("costCurrency", "weighted device-hours"),
    )


def _metric(vendor: Vendor, raw: Any, key: str, units: dict[str, int]) -> Metric:
    if not isinstance(raw, dict) or not raw.get("name") or not raw.get("unit"):
        raise MonitoringError(
            f"vendor {vendor.id}: exporter.metrics.{key} needs a name and unit",
            ("exporter", "metrics", key),
        )
    if raw["unit"] not in units:
        raise MonitoringError(
            f"vendor {vendor.id}: exporter.metrics.{key} unit {raw['unit']!r} is not one of "
            + ", ".join(units),
            ("exporter", "metrics", key, "unit"),
        )
    return Metric(str(raw["name"]), str(raw["unit"]))


def exporter(vendor: Vendor) -> Exporter | None:
    """The vendor's exporter, or None when the vendor has no `exporter` section."""
    raw = vendor.exporter
    if not raw:
        return None
    metrics = raw.get("metrics") or {}
    if "utilization" not in metrics or "memoryUsed" not in metrics:
        raise MonitoringError(
            f"vendor {vendor.id}: exporter.metrics needs utilization and memoryUsed",
            ("exporter", "metrics"),
        )
    total = metrics.get("memoryTotal")
    free = metrics.get("memoryFree")
    if total is None and free is None:
        raise MonitoringError(
            f"vendor {vendor.id}: exporter.metrics needs memoryTotal or memoryFree for the ratio",
            ("exporter", "metrics"),
        )
    labels = {k: v for k, v in (raw.get("labels") or {}).items() if k in UNIFIED_LABELS}
    return Exporter(
        vendor=vendor.id,
        brand=vendor.node_labels.get(BRAND_NODE_LABEL, vendor.id),
        name=str(raw.get("name", f"{vendor.id}-exporter")),
        port=int(raw.get("port", 9400)),
        path=str(raw.get("path", "/metrics")),
        namespace=raw.get("namespace"),
        pod_labels=dict(sorted((raw.get("podLabels") or {}).items())),
        labels=dict(sorted(labels.items())),
        utilization=_metric(vendor, metrics["utilization"], "utilization", PERCENT_PER_UNIT),
        memory_used=_metric(vendor, metrics["memoryUsed"], "memoryUsed", BYTES_PER_UNIT),
        # With both given, the total wins: it is what the exporter reports as capacity.
        memory_total=_metric(vendor, total, "memoryTotal", BYTES_PER_UNIT) if total else None,
        memory_free=None if total else _metric(vendor, free, "memoryFree", BYTES_PER_UNIT),
        cost_weight=vendor.cost_weight,
        resource=vendor.resource_name,
    )


def exporters(view: FleetView) -> list[Exporter]:
    out = []
    for vendor in view.vendors:
        exp = exporter(vendor)
        if exp is not None:
            out.append(exp)
    return out
