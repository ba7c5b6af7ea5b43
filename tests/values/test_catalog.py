"""Every fact group of the built-in catalog names the upstream file it was read from, pinned, and
docs/vendors.md lists each of those sources (issue #8)."""

from __future__ import annotations

import re
from importlib import resources
from typing import Any

import pytest
import yaml

from generator.values.schemakit import SOURCE
from tests.fixtures import ROOT

CATALOG = resources.files("generator.values") / "catalog"
ENTRIES = sorted(
    p.name.removesuffix(".yaml") for p in CATALOG.iterdir() if p.name.endswith(".yaml")
)
# Fact groups this project reads from upstream: the resource name (top level), the device plugin
# and the exporter (its DaemonSet, pod labels, port, metric names, labels and units).
GROUPS: tuple[tuple[str, ...], ...] = ((), ("devicePlugin",), ("exporter",))
UNPINNED = {"main", "master", "head", "latest", "develop", "trunk"}


def entry(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((CATALOG / f"{name}.yaml").read_text())
    return data


def all_sources(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [s for s in node.get("sources", []) if isinstance(s, str)]
        return own + [s for k, v in node.items() if k != "sources" for s in all_sources(v)]
    if isinstance(node, list):
        return [s for item in node for s in all_sources(item)]
    return []


@pytest.mark.parametrize("name", ENTRIES)
def test_every_fact_group_has_pinned_sources(name: str) -> None:
    data = entry(name)
    for path in GROUPS:
        node: Any = data
        for key in path:
            node = node[key]
        found = node.get("sources")
        assert found, f"{name}: {'.'.join(path) or 'top level'} has no sources"
        for line in found:
            assert re.match(SOURCE, line), line
            version = line.split(" ")[2].rstrip(":").lower()
            assert version not in UNPINNED, f"{name}: {line!r} is not pinned to a version"


def test_docs_vendors_lists_every_catalog_source() -> None:
    text = (ROOT / "docs" / "vendors.md").read_text()
    missing = [s for n in ENTRIES for s in all_sources(entry(n)) if s.split(": ")[0] not in text]
    assert not missing, "docs/vendors.md lacks:\n" + "\n".join(missing)


def test_the_source_pattern_refuses_an_unpinned_or_partial_line() -> None:
    assert re.match(SOURCE, "NVIDIA/dcgm-exporter etc/default-counters.csv 4.5.3-4.8.2: units")
    assert not re.match(SOURCE, "dcgm-exporter etc/default-counters.csv 4.5.3-4.8.2")
    assert not re.match(SOURCE, "NVIDIA/dcgm-exporter etc/default-counters.csv")
