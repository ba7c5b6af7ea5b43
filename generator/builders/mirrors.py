"""Mirrors (values `mirrors`, docs/values.md "Mirrors"): the images and chart repositories the
fleet names, as a cluster that cannot reach their registries pulls them.

A registry mirror replaces the start of an image reference: `registry.k8s.io: mirror.example.cn/k8s`
turns registry.k8s.io/nfd/node-feature-discovery into
mirror.example.cn/k8s/nfd/node-feature-discovery. A key matches a reference that is the key or
starts with it and "/", as written (the catalogue and the chart data name every image with its
registry host); the longest key wins. It applies to every image the fleet names: the vendors'
node agents, the fleet's kube-scheduler, and each image the add-ons' charts' values name
(vocab/addons.py `Chart.images`), and to the add-on charts kept in OCI registries. A chart
mirror replaces an add-on's chart repository whole, and comes before the registry mirrors.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from generator.values.model import FleetView, Mirrors
from generator.vocab.addons import Chart, ChartImage

# How a chart repository names its scheme; an OCI registry path has none (vocab/addons.py).
SCHEME = "://"


def covers(prefix: str, ref: str) -> bool:
    return ref == prefix or ref.startswith(prefix + "/")


def image(mirrors: Mirrors, ref: str) -> str:
    """`ref` (an image without its tag) as the longest registry mirror that covers it names it."""
    found = [(k, v) for k, v in mirrors.registries if covers(k, ref)]
    if not found:
        return ref
    key, mirror = max(found, key=lambda kv: len(kv[0]))
    return mirror + ref[len(key) :]


def chart_repo(mirrors: Mirrors, chart: Chart) -> str:
    """The repository Argo CD installs `chart` from: its chart mirror, else (a chart in an OCI
    registry) its registry's mirror, else its own."""
    named = dict(mirrors.charts).get(chart.repo_url)
    if named is not None:
        return named
    if SCHEME in chart.repo_url:
        return chart.repo_url
    return image(mirrors, chart.repo_url)


@dataclass
class ChartImages:
    """The values that point a chart's images at their mirrors, and the fields two of its
    images would need to hold different mirrors in (one registry field shared by several
    images): (values path, the values they would need)."""

    values: dict[str, Any] = field(default_factory=dict)
    clashes: list[tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=list)


def _fields(img: ChartImage, ref: str) -> list[tuple[tuple[str, ...], str]]:
    """The chart's image fields that spell `ref`, as its templates join them with "/"."""
    parts = ref.split("/")
    out: list[tuple[tuple[str, ...], str]] = []
    if img.name:
        out.append((img.name, parts.pop()))
    if img.registry:
        out.append((img.registry, parts.pop(0)))
    out.append((img.repository, "/".join(parts)))
    return out


def chart_images(mirrors: Mirrors, chart: Chart) -> ChartImages:
    """The chart values that make each of its images (Chart.images) come from its mirror; none
    for an image no mirror covers."""
    out = ChartImages()
    given: dict[tuple[str, ...], set[str]] = {}
    for img in chart.images:
        ref = image(mirrors, img.default)
        if ref == img.default:
            continue
        for path, value in _fields(img, ref):
            given.setdefault(path, set()).add(value)
            _put(out.values, path, value)
    out.clashes = [(p, tuple(sorted(v))) for p, v in sorted(given.items()) if len(v) > 1]
    return out


def chart_values(view: FleetView, chart: Chart, values: dict[str, Any]) -> dict[str, Any]:
    """`values` (what the fleet gives the chart) with its images pointed at their mirrors."""
    mirrored = chart_images(view.fleet.mirrors, chart).values
    if not mirrored:
        return values
    return _merge(copy.deepcopy(values), mirrored)


def _put(tree: dict[str, Any], path: tuple[str, ...], value: str) -> None:
    """Set `path` in `tree` to `value` unless an earlier image set it (the first one, in the
    chart's order, wins; chart_images reports the clash)."""
    *parents, last = path
    node = tree
    for key in parents:
        node = node.setdefault(key, {})
    node.setdefault(last, value)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value
    return base
