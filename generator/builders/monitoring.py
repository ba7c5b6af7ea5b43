"""Monitoring unit (filled by the monitoring work): for now the namespace it will live in."""

from __future__ import annotations

from ..model import FleetView
from .common import SYNC_WAVE, Component, namespace

UNIT = "monitoring"
NAMESPACE = "accelerator-monitoring"


def build(view: FleetView) -> list[Component]:
    if not view.vendors:
        return []
    sources = sorted({s for v in view.vendors for s in v.doc.sources})
    ns = namespace(
        NAMESPACE, sources=sources, pod_security="baseline", annotations={SYNC_WAVE: "-1"}
    )
    return [Component(UNIT, f"{UNIT}/namespace", [ns])]
