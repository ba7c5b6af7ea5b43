"""Exporter facts per vendor, read from the merged catalog + values, and the monitoring settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from generator.errors import GeneratorError
from generator.values.model import EXPORTER, FleetView, NodeAgent, Vendor, node_agent
from generator.vocab.addons import FLEET, OPERATOR
from generator.vocab.labels import BRAND_NODE_LABEL, NAME_LABEL
from generator.vocab.labels import VENDOR_LABEL as VENDOR_POD_LABEL
from generator.vocab.series import BYTES_PER_UNIT, PERCENT_PER_UNIT, UNIFIED_LABELS

DEFAULT_NAMESPACE = "accelerator-monitoring"
# Where rendered exporters run: they mount host paths, which only Pod Security 'privileged' admits,
# so they get a namespace of their own rather than the monitoring namespace.
DEFAULT_EXPORTER_NAMESPACE = "accelerator-exporters"
RENDERED_PORT_NAME = "metrics"


class MonitoringError(GeneratorError):
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
class HealthMetric:
    """A device health or error series (catalog `exporter.health`): alerts.py watches it."""

    metric: str
    kind: str  # flag | nonzero | increase | newvalue
    what: str


@dataclass(frozen=True)
class Exporter:
    vendor: str  # vendor id (values file name)
    brand: str  # the vendor's gpu-brand node label value
    name: str
    port: int
    port_name: str | None  # the container port's name; None: select by number (portNumber)
    path: str
    namespace: str | None  # where the exporter pods run; None: any namespace
    pod_labels: dict[str, str]  # exactly what selects the exporter's pods
    labels: dict[str, str]  # unified label -> exporter label
    utilization: Metric
    memory_used: Metric
    memory_total: Metric | None
    memory_free: Metric | None
    memory_reserved: Metric | None  # added to used + free where there is no total
    cost_weight: float
    resource: str  # the extended resource the vendor's device plugin advertises
    # The vendor's line in the fleet's ResourceQuota as kube-state-metrics reports it (verbatim):
    # `requests.<resource>` for an extended resource; for a vendor allocated by DRA the devices
    # claimed through its DeviceClass, with no `requests.` prefix (Vendor.quota_key).
    quota_key: str
    agent: NodeAgent | None = None  # the DaemonSet to render; None: installed another way
    health: tuple[HealthMetric, ...] = ()
    # The node label (as it is on the nodes) and value of the vendor's pools, when its exporter
    # is not the fleet's: an operator's or a site's exporter runs on other vendors' nodes too
    # (one GPU Operator, two NVIDIA vendor files), so the scrape keeps only this vendor's nodes.
    node_filter: tuple[tuple[str, str], ...] = ()

    @property
    def metric_names(self) -> tuple[str, ...]:
        metrics = (
            self.utilization,
            self.memory_used,
            self.memory_total,
            self.memory_free,
            self.memory_reserved,
        )
        return tuple(m.name for m in metrics if m is not None)


@dataclass(frozen=True)
class Settings:
    namespace: str
    exporter_namespace: str
    selector_labels: dict[str, str]
    grafana_folder: str | None
    cost_currency: str
    cluster: str = ""  # the cluster's name in an environment that declares clusters, else ""


def settings(view: FleetView) -> Settings:
    raw: dict[str, Any] = view.fleet.doc.get("monitoring", default={}) or {}
    return Settings(
        namespace=raw.get("namespace", DEFAULT_NAMESPACE),
        exporter_namespace=raw.get("exporterNamespace", DEFAULT_EXPORTER_NAMESPACE),
        selector_labels=dict(sorted((raw.get("prometheusSelectorLabels") or {}).items())),
        grafana_folder=raw.get("grafanaFolder"),
        cost_currency=raw.get("costCurrency", "weighted device-hours"),
        cluster=view.cluster.name if view.cluster is not None else "",
    )


def exporter_namespace(view: FleetView) -> str:
    """The namespace of rendered exporters (Pod Security 'privileged')."""
    return settings(view).exporter_namespace


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


def exporter(
    vendor: Vendor,
    exporter_namespace: str = DEFAULT_EXPORTER_NAMESPACE,
    node_filter: dict[str, str] | None = None,
) -> Exporter | None:
    """The vendor's exporter, or None when the vendor has no `exporter` section.

    Rendered (the default), its pods are the DaemonSet's: selected by that DaemonSet's own labels
    in `exporter_namespace`, by a named port. Installed another way (`render: false`), they are
    selected by the upstream pod labels in `podLabels`, by `portName` or else the port number;
    run by the vendor's operator (`provided: operator`), by the labels and port its contract
    gives. Either of the last two is scraped on the nodes `node_filter` selects only.
    Pod labels are taken as given, never merged with the catalog's."""
    raw = vendor.exporter
    node_filter = node_filter or {}
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
    reserved = metrics.get("memoryReserved")
    if total is None and free is None:
        raise MonitoringError(
            f"vendor {vendor.id}: exporter.metrics needs memoryTotal or memoryFree for the ratio",
            ("exporter", "metrics"),
        )
    name = str(raw.get("name", f"{vendor.id}-exporter"))
    port = int(raw.get("port", 9400))
    agent: NodeAgent | None = None
    if vendor.exporter_provider == FLEET:
        agent = node_agent(raw.get("daemonSet") or {}, priority_class="")
        for key in ("image", "version"):
            if not getattr(agent, key):
                raise MonitoringError(
                    f"vendor {vendor.id}: exporter.daemonSet.{key} is not set, so its exporter "
                    "cannot be rendered; set it, or set exporter.render: false where the "
                    "exporter is installed another way",
                    ("exporter", "daemonSet", key),
                )
        pod_labels = {NAME_LABEL: name, VENDOR_POD_LABEL: vendor.id}
        namespace: str | None = exporter_namespace
        port_name: str | None = RENDERED_PORT_NAME
    elif vendor.exporter_provider == OPERATOR:
        part = vendor.operator.parts.get(EXPORTER) if vendor.operator else None
        if part is None:
            raise MonitoringError(
                f"vendor {vendor.id}: exporter.provided is operator, but the vendor's catalog "
                "entry names no operator that runs an exporter",
                ("exporter", "provided"),
            )
        # Exactly the operand's labels: the catalog's podLabels describe the fleet's own
        # manifest, which these pods do not carry.
        pod_labels = dict(part.pod_labels)
        namespace = None  # the operator's release namespace, whichever the site chose
        port_name = part.port_name or None
        port = part.port or port
    else:
        pod_labels = dict(raw.get("podLabels") or {})
        if not pod_labels:
            raise MonitoringError(
                f"vendor {vendor.id}: exporter.podLabels is empty, so nothing selects the "
                "exporter pods installed another way; give their labels",
                ("exporter", "podLabels"),
            )
        namespace = raw.get("namespace")
        port_name = raw.get("portName")
    labels = {k: v for k, v in (raw.get("labels") or {}).items() if k in UNIFIED_LABELS}
    health = tuple(
        HealthMetric(str(h["metric"]), str(h["kind"]), str(h["what"]))
        for h in raw.get("health") or []
    )
    return Exporter(
        health=health,
        vendor=vendor.id,
        brand=vendor.node_labels.get(BRAND_NODE_LABEL, vendor.id),
        name=name,
        port=port,
        port_name=port_name,
        path=str(raw.get("path", "/metrics")),
        namespace=namespace,
        pod_labels=dict(sorted(pod_labels.items())),
        labels=dict(sorted(labels.items())),
        utilization=_metric(vendor, metrics["utilization"], "utilization", PERCENT_PER_UNIT),
        memory_used=_metric(vendor, metrics["memoryUsed"], "memoryUsed", BYTES_PER_UNIT),
        # With both given, the total wins: it is what the exporter reports as capacity.
        memory_total=_metric(vendor, total, "memoryTotal", BYTES_PER_UNIT) if total else None,
        memory_free=None if total else _metric(vendor, free, "memoryFree", BYTES_PER_UNIT),
        memory_reserved=(
            _metric(vendor, reserved, "memoryReserved", BYTES_PER_UNIT)
            if reserved and not total
            else None
        ),
        cost_weight=vendor.cost_weight,
        resource=vendor.resource_name,
        quota_key=vendor.quota_key,
        agent=agent,
        node_filter=tuple(sorted(node_filter.items())) if agent is None else (),
    )


def exporters(view: FleetView) -> list[Exporter]:
    conf = settings(view)
    out = []
    for vendor in view.vendors:
        exp = exporter(vendor, conf.exporter_namespace, view.fleet.node_selector(vendor.selector))
        if exp is not None:
            out.append(exp)
    return out
