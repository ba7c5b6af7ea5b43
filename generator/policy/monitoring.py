"""Checks on the vendors' exporter facts (codes MON; docs/monitoring.md)."""

from __future__ import annotations

from collections.abc import Iterable

from generator.builders.monitoring.recording_rules import ordered_mappings
from generator.builders.monitoring.sources import MonitoringError, exporter, settings
from generator.findings import Finding, Severity
from generator.policy.checks import WARNING, Check
from generator.values.model import FleetView
from generator.values.yamlio import json_path


def exporter_facts(view: FleetView) -> Iterable[Finding]:
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


def no_exporter(view: FleetView) -> Iterable[Finding]:
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


CHECKS: tuple[Check, ...] = (
    Check(
        "MON001",
        "a vendor's exporter section cannot give the unified monitoring series",
        exporter_facts,
    ),
    Check(
        "MON002",
        "a vendor has no exporter: its devices are missing from the unified series",
        no_exporter,
        WARNING,
    ),
)
