"""Charts as inline SVG, drawn with Matplotlib's object API (no pyplot, no global state).

Why Matplotlib to SVG: the page then needs no script at all to show its charts (it works in a
mail client, a CI artifact viewer with scripts off, or printed), the SVG is a few kilobytes per
chart where an inlined plotly.js is several megabytes per page, and the bytes are the same on
every run (fixed hash salt, no date), so two reports can be compared.

Each data series is one artist (a PolyCollection of its bars or cells) whose SVG group has the id
``<chart>-series--<name>``, so a reader (and the browser test) can count the series a chart draws.
Every element id is prefixed with the chart's id, so charts on one page never share an id.
Layout is computed from the label lengths rather than by Matplotlib's constrained layout, which
draws each figure several times: a 300-team report stays within a few seconds.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, cast

import matplotlib
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.colors import Normalize, to_hex
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from generator.fleetreport.numbers import EnvReport

# The charts show this many teams or services at most (the largest first); the tables beside them
# list every one. A chart a person can read stops well before a thousand rows.
MAX_ROWS = 40

RC: dict[str, Any] = {
    "svg.fonttype": "none",  # real <text>: selectable, searchable, small; the viewer's own font
    "font.family": "sans-serif",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.axisbelow": True,
}
GREY, RED, BLUE, AMBER = "#9aa0a6", "#d93025", "#1a73e8", "#f9ab00"
# Qualitative palette (Matplotlib's tab10) given to vendors in fleet order, the same in every chart.
PALETTE = matplotlib.colormaps["tab10"]


def _style(extra: dict[str, Any] | None = None) -> AbstractContextManager[None]:
    return cast(
        AbstractContextManager[None], matplotlib.rc_context(cast(Any, {**RC, **(extra or {})}))
    )


@dataclass(frozen=True)
class Chart:
    id: str
    title: str
    series: tuple[str, ...]
    svg: str
    note: str = ""  # e.g. "the 40 largest of 300 teams"


def vendor_colors(vendors: Sequence[str]) -> dict[str, str]:
    return {v: to_hex(PALETTE(i % PALETTE.N)) for i, v in enumerate(vendors)}


_ID = re.compile(r'(\bid="|url\(#|xlink:href="#)([^")]+)')
CHAR_IN = 0.07  # width of one 9 pt character, in inches (for margins)


def _svg(fig: Figure, chart_id: str) -> str:
    buf = io.StringIO()
    with _style({"svg.hashsalt": chart_id}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    text = text[text.index("<svg") :]  # drop the XML prolog and doctype: it is inline in HTML
    return _ID.sub(lambda m: f"{m[1]}{chart_id}-{m[2]}", text)


def _figure(
    width: float, height: float, left: float, right: float, top: float = 0.3, bottom: float = 0.5
) -> tuple[Figure, Axes]:
    """A figure of width x height inches whose axes leave the given margins (inches)."""
    fig = Figure(figsize=(width + left + right, height + top + bottom))
    W, H = fig.get_size_inches()
    ax = fig.add_axes((left / W, bottom / H, width / W, height / H))
    return fig, ax


def _margin(labels: Sequence[str], extra: float = 0.35) -> float:
    return extra + CHAR_IN * max((len(s) for s in labels), default=0)


def _bars(
    ax: Axes,
    series: str,
    rects: Sequence[tuple[float, float, float, float]],
    colors: str | Sequence[str],
) -> PolyCollection:
    """One series of bars, (x, y, width, height) each, as one tagged artist."""
    polys = [[(x, y), (x + w, y), (x + w, y + h), (x, y + h)] for x, y, w, h in rects]
    coll = PolyCollection(polys, facecolors=colors, edgecolors="none", gid=f"series--{series}")
    ax.add_collection(coll)
    return coll


def _legend(ax: Axes, handles: Sequence[PolyCollection], labels: Sequence[str]) -> None:
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def capacity(env: EnvReport) -> Chart:
    """Per vendor: capacity, devices promised by quotas (red where over capacity, with the excess
    written above), and what the workloads need at once."""
    chart_id = f"capacity-{env.slug}"
    rows = env.vendors
    labels = ["capacity", "quotas (red: over)", "workloads need"]
    with _style():
        fig, ax = _figure(max(0.9 * len(rows) + 0.4, 4.4), 2.4, 0.6, 0.2, top=0.4)
        w = 0.27
        cap = _bars(
            ax, "capacity", [(i - 1.5 * w, 0, w, r.capacity) for i, r in enumerate(rows)], GREY
        )
        quota = _bars(
            ax,
            "quotas",
            [(i - 0.5 * w, 0, w, r.promised) for i, r in enumerate(rows)],
            [RED if r.overcommitted else BLUE for r in rows],
        )
        need = _bars(
            ax, "workloads", [(i + 0.5 * w, 0, w, r.needed or 0) for i, r in enumerate(rows)], AMBER
        )
        top = max((max(r.capacity, r.promised, r.needed or 0) for r in rows), default=0) or 1
        for i, r in enumerate(rows):
            if r.overcommitted:
                ax.text(
                    i,
                    r.promised + top * 0.02,
                    f"+{r.over_by}",
                    ha="center",
                    va="bottom",
                    color=RED,
                    fontweight="bold",
                )
        ax.set_xlim(-0.6, len(rows) - 0.4)
        ax.set_ylim(0, top * 1.12)
        ax.set_xticks(range(len(rows)), [r.vendor for r in rows])
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("devices")
        ax.grid(axis="y", color="#e8eaed")
        ax.legend(
            [cap, quota, need],
            labels,
            loc="lower left",
            bbox_to_anchor=(0.0, 1.0),
            ncols=3,
            frameon=False,
            borderaxespad=0.2,
        )
    return Chart(
        chart_id,
        "Capacity vs. quotas per vendor",
        ("capacity", "quotas", "workloads"),
        _svg(fig, chart_id),
    )


def _largest(env: EnvReport) -> tuple[list[str], str]:
    """The teams the charts show (largest cost-weighted allocation first, then by name)."""
    ranked = sorted(env.teams, key=lambda t: (-t.weighted, -t.total_devices, t.team))
    note = ""
    if len(env.teams) > MAX_ROWS:
        note = f"the {MAX_ROWS} teams of largest cost-weighted allocation, of {len(env.teams)}"
    return [t.team for t in ranked[:MAX_ROWS]], note


def heatmap(env: EnvReport) -> Chart:
    """Teams x vendors, devices promised; each vendor's column is one series."""
    chart_id = f"heatmap-{env.slug}"
    names, note = _largest(env)
    by_name = {t.team: t for t in env.teams}
    vendors = env.vendor_ids
    grid = [[by_name[n].devices.get(v, 0) for v in vendors] for n in names]
    top = max((c for row in grid for c in row), default=0) or 1
    norm = Normalize(0, top)
    cmap = matplotlib.colormaps["Blues"]
    with _style():
        fig, ax = _figure(
            0.8 * max(len(vendors), 1),
            0.24 * max(len(names), 1),
            _margin(names),
            0.3,
            top=0.45,
            bottom=0.15,
        )
        for j, v in enumerate(vendors):
            cells = [(j + 0.03, i + 0.03, 0.94, 0.94) for i in range(len(names))]
            _bars(ax, v, cells, [to_hex(cmap(0.08 + 0.92 * norm(row[j]))) for row in grid])
            for i, row in enumerate(grid):
                if row[j]:
                    ax.text(
                        j + 0.5,
                        i + 0.5,
                        str(row[j]),
                        ha="center",
                        va="center",
                        color="white" if row[j] > top * 0.55 else "black",
                    )
        ax.set_xlim(0, max(len(vendors), 1))
        ax.set_ylim(max(len(names), 1), 0)
        ax.set_xticks([j + 0.5 for j in range(len(vendors))], vendors)
        ax.xaxis.tick_top()
        ax.set_yticks([i + 0.5 for i in range(len(names))], names)
        for side in ("left", "bottom"):
            ax.spines[side].set_visible(False)
        ax.tick_params(length=0)
    return Chart(
        chart_id, "Devices promised per team and vendor", tuple(vendors), _svg(fig, chart_id), note
    )


def cost(env: EnvReport, colors: dict[str, str]) -> Chart:
    """Per team, devices weighted by their vendor's costWeight, stacked by vendor, with the cost of
    the same devices at the baseline vendor's weight as a black tick."""
    chart_id = f"cost-{env.slug}"
    names, note = _largest(env)
    by_name = {t.team: t for t in env.teams}
    vendors = [v for v in env.vendor_ids if any(by_name[n].devices.get(v) for n in names)]
    weights = {r.vendor: r.cost_weight for r in env.vendors}
    labels = [
        *(f"{v} (weight {weights[v]:g})" for v in vendors),
        f"all-{env.baseline_vendor} baseline",
    ]
    with _style():
        fig, ax = _figure(4.2, 0.26 * max(len(names), 1), _margin(names), _margin(labels, 0.6))
        left = [0.0] * len(names)
        handles = []
        for v in vendors:
            widths = [by_name[n].devices.get(v, 0) * weights[v] for n in names]
            rects = [
                (x, i - 0.3, w, 0.6) for i, (x, w) in enumerate(zip(left, widths, strict=True)) if w
            ]
            handles.append(_bars(ax, v, rects, colors[v]))
            left = [a + b for a, b in zip(left, widths, strict=True)]
        baselines = [by_name[n].baseline for n in names]
        right = max([*left, *baselines, 1.0])
        tick = right / 80  # the baseline mark's width, in data units
        rects = [(x - tick / 2, i - 0.42, tick, 0.84) for i, x in enumerate(baselines)]
        handles.append(_bars(ax, "baseline", rects, "black"))
        ax.set_xlim(0, right * 1.05)
        ax.set_ylim(max(len(names), 1) - 0.5, -0.5)
        ax.set_yticks(range(len(names)), names)
        ax.set_xlabel(f"cost-weighted devices ({env.baseline_vendor} = {env.baseline_weight:g})")
        ax.grid(axis="x", color="#e8eaed")
        _legend(ax, handles, labels)
    return Chart(
        chart_id,
        "Cost-weighted allocation per team",
        (*vendors, "baseline"),
        _svg(fig, chart_id),
        note,
    )


def traffic(env: EnvReport, colors: dict[str, str]) -> Chart:
    """Per dual-track service, the percent of traffic each track really carries as rendered
    (plan's traffic, not the phase's weights), stacked, with the track's replicas on its segment."""
    chart_id = f"traffic-{env.slug}"
    rows = env.migrations[:MAX_ROWS]
    note = ""
    if len(env.migrations) > MAX_ROWS:
        note = f"the first {MAX_ROWS} of {len(env.migrations)} services"
    labels = [f"{m.row.team}/{m.row.service}" for m in rows]
    # The environment's vendors first, then those of tracks in other clusters (a migration
    # across clusters), by name.
    named = {t.vendor for m in rows for t in m.row.tracks}
    vendors = [v for v in env.vendor_ids if v in named]
    vendors += sorted(named - set(vendors))
    with _style():
        fig, ax = _figure(4.2, 0.3 * max(len(rows), 1), _margin(labels), _margin(vendors, 0.6))
        left: list[float] = [0.0] * len(rows)
        handles = []
        for v in vendors:
            tracks = [next((t for t in m.row.tracks if t.vendor == v), None) for m in rows]
            widths = [t.traffic if t else 0 for t in tracks]
            rects = [
                (x, i - 0.3, w, 0.6) for i, (x, w) in enumerate(zip(left, widths, strict=True)) if w
            ]
            handles.append(_bars(ax, v, rects, colors[v]))
            for i, t in enumerate(tracks):
                if t is not None and t.traffic >= 15:
                    ax.text(
                        left[i] + t.traffic / 2,
                        i,
                        f"{t.traffic:g}% · {t.replicas} rep",
                        ha="center",
                        va="center",
                        color="white",
                    )
            left = [a + b for a, b in zip(left, widths, strict=True)]
        ax.set_xlim(0, 100)
        ax.set_ylim(max(len(rows), 1) - 0.5, -0.5)
        ax.set_yticks(range(len(rows)), labels)
        ax.set_xlabel("traffic per track (%)")
        _legend(ax, handles, vendors)
    return Chart(
        chart_id,
        "Traffic per track of each dual-track service",
        tuple(vendors),
        _svg(fig, chart_id),
        note,
    )
