"""The fleet report opened in a real headless Chromium (Debian's, through Debian's chromedriver):
a screenshot, the charts drawn with the series the numbers call for, no request, no console error.

`make test` installs the browser first (`make browser`); without it these tests fail, they are
never skipped.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver

from generator.fleetreport.report import ReportOptions, report
from tests import browser
from tests.example import EXAMPLE_VALUES
from tests.fixtures import MIG_NVIDIA, REPORT_TREE, VNPU_ASCEND, tree

# For each chart: its id, the series it declares, the series groups drawn in its SVG, how many
# shapes each group paints, and its size on screen.
CHARTS_JS = """
return Array.from(document.querySelectorAll('figure.chart')).map(f => {
  const svg = f.querySelector('svg');
  const groups = Array.from(svg.querySelectorAll('g[id*="-series--"]'));
  const box = svg.getBoundingClientRect();
  return {
    id: f.id,
    declared: f.dataset.series.split(','),
    drawn: groups.map(g => g.id.split('-series--')[1]),
    shapes: groups.map(g => g.querySelectorAll('path').length),
    width: box.width,
    height: box.height,
  };
});
"""


@pytest.fixture(scope="module")
def driver() -> Iterator[webdriver.Chrome]:
    if why := browser.missing():
        pytest.fail(why)
    with browser.chromium(1280, 900) as d:
        yield d


def open_report(driver: webdriver.Chrome, values: Path, out: Path) -> browser.Visit:
    report(ReportOptions(values, out=out))
    return browser.visit(driver, out, CHARTS_JS)


def assert_clean(seen: browser.Visit) -> None:
    assert seen.requests == [seen.url], seen.requests  # the page itself, nothing else
    assert seen.errors == [], seen.errors
    assert seen.console == [], seen.console  # not even a warning


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def charts(seen: browser.Visit) -> dict[str, dict[str, Any]]:
    found: list[dict[str, Any]] = seen.result
    return {c["id"]: c for c in found}


def test_example_fleet_in_chromium(driver: webdriver.Chrome, tmp_path: Path) -> None:
    seen = open_report(driver, EXAMPLE_VALUES, tmp_path / "example.html")
    assert_clean(seen)
    drawn = charts(seen)
    # staging is one cluster with every vendor; prod is two (docs/multi-cluster.md): main has
    # AMD, Ascend, NVIDIA, the time-sliced A100s (nvidia-shared) and the H100s claimed by DRA
    # (nvidia-dra), domestic the Cambricon and Hygon pools. No team has AMD quota.
    clusters = {
        "staging": ["amd", "ascend", "cambricon", "hygon", "nvidia", "nvidia-dra", "nvidia-shared"],
        "prod-main": ["amd", "ascend", "nvidia", "nvidia-dra", "nvidia-shared"],
        "prod-domestic": ["cambricon", "hygon"],
    }
    expected = {}
    for key, vendors in clusters.items():
        expected[f"chart-capacity-{key}"] = ["capacity", "quotas", "workloads"]
        expected[f"chart-heatmap-{key}"] = vendors
        expected[f"chart-cost-{key}"] = [v for v in vendors if v != "amd"] + ["baseline"]
    # inference-service's tracks (in main in prod) and chat's (nvidia-shared -> hygon): in
    # staging's one cluster; in prod across main and domestic, each cluster's chart showing
    # both of chat's tracks, its own first
    expected["chart-traffic-staging"] = ["ascend", "hygon", "nvidia", "nvidia-shared"]
    expected["chart-traffic-prod-main"] = ["ascend", "nvidia", "nvidia-shared", "hygon"]
    expected["chart-traffic-prod-domestic"] = ["hygon", "nvidia-shared"]
    assert {k: v["drawn"] for k, v in drawn.items()} == expected
    for chart in drawn.values():
        assert chart["declared"] == chart["drawn"]
        assert chart["width"] > 200 and chart["height"] > 50, chart
    # a bar per vendor in each series of the capacity chart, a cell per team in the heatmap, a bar
    # per team and vendor with quota, a tick per team for the baseline
    assert drawn["chart-capacity-staging"]["shapes"] == [7, 7, 7]
    assert drawn["chart-capacity-prod-main"]["shapes"] == [5, 5, 5]
    assert drawn["chart-heatmap-prod-main"]["shapes"] == [2] * 5
    # nvidia-dra: ml-team's alone; nvidia-shared: inference's alone
    assert drawn["chart-cost-staging"]["shapes"] == [2, 1, 1, 2, 1, 1, 2]
    # in domestic, Cambricon is ml-team's and Hygon inference's: one bar each, two ticks
    assert drawn["chart-cost-prod-domestic"]["shapes"] == [1, 1, 2]
    # staging shifts half of inference-service's traffic (two segments) and half of chat's (two
    # more); prod's dual-run sends none to Ascend, chat's shift-10 some to hygon from main
    assert drawn["chart-traffic-staging"]["shapes"] == [1, 1, 1, 1]
    assert drawn["chart-traffic-prod-main"]["shapes"] == [0, 1, 1, 1]
    assert drawn["chart-traffic-prod-domestic"]["shapes"] == [1, 1]
    shot = browser.screenshot(driver, tmp_path / "example.png")
    width, height = png_size(shot)
    assert width == 1280 and height > 2000  # the whole page, not the window
    assert len(shot) > 50_000  # drawn, not blank


def test_small_fleet_series_follow_its_values(driver: webdriver.Chrome, tmp_path: Path) -> None:
    values = tree(tmp_path / "repo", REPORT_TREE, defaults=False)
    seen = open_report(driver, values, tmp_path / "small.html")
    assert_clean(seen)
    drawn = {k: v["drawn"] for k, v in charts(seen).items()}
    assert drawn["chart-heatmap-dev"] == ["ascend", "nvidia"]
    assert drawn["chart-cost-prod"] == ["ascend", "nvidia", "baseline"]
    assert drawn["chart-traffic-prod"] == ["ascend", "nvidia"]
    assert len(drawn) == 8
    png_size(browser.screenshot(driver, tmp_path / "small.png"))


# Every table cell that reaches past its table's container, or whose content is cut (wider than
# the cell shows), and each table's scrolled-away width.
CLIPPED_JS = """
return Array.from(document.querySelectorAll('table')).map(t => {
  const edge = t.parentElement.getBoundingClientRect().right;
  const cells = Array.from(t.querySelectorAll('th, td'));
  return {
    hidden: t.scrollWidth - t.clientWidth,
    cut: cells
      .filter(c => c.getBoundingClientRect().right > edge + 0.5 || c.scrollWidth > c.clientWidth)
      .map(c => c.textContent),
    resources: Array.from(t.querySelectorAll('td code')).map(c => c.textContent),
  };
});
"""


@pytest.mark.parametrize("width", [1280, 800])
def test_no_table_column_is_cut_at_long_resource_names(
    driver: webdriver.Chrome, tmp_path: Path, width: int
) -> None:
    """A vNPU template and a MIG profile make long resource names: the capacity table wraps them
    inside its 40rem aside (it showed 96 px of its last two columns only after a scroll)."""
    files = {
        **REPORT_TREE,
        "vendors/ascend-vnpu.yaml": VNPU_ASCEND,
        "vendors/nvidia-mig.yaml": MIG_NVIDIA,
        "teams/c.yaml": "quota: {ascend-vnpu: 4, nvidia-mig: 2}\n",
    }
    values = tree(tmp_path / "repo", files, defaults=False)
    out = tmp_path / "long.html"
    report(ReportOptions(values, out=out))
    driver.set_window_size(width, 900)
    try:
        seen = browser.visit(driver, out, CLIPPED_JS)
    finally:
        driver.set_window_size(1280, 900)
    assert_clean(seen)
    tables: list[dict[str, Any]] = seen.result
    assert [(t["hidden"], t["cut"]) for t in tables] == [(0, [])] * len(tables)
    # dev's and prod's capacity tables, each resource name whole, in vendor order
    whole = [
        "huawei.com/Ascend910",
        "huawei.com/Ascend910-6c.1cpu.16g",
        "nvidia.com/gpu",
        "nvidia.com/mig-3g.40gb",
    ]
    capacity = [t["resources"] for t in tables if "nvidia.com/mig-3g.40gb" in t["resources"]]
    assert capacity == [whole, whole]


def test_the_harness_sees_requests_and_console_errors(
    driver: webdriver.Chrome, tmp_path: Path
) -> None:
    """The two clean-page assertions can fail: a page that fetches an image (from a closed port on
    this machine) shows the request and the console error."""
    page = tmp_path / "fetches.html"
    page.write_text(
        '<!doctype html><title>x</title><img src="http://127.0.0.1:9/none.png">'
        "<script>console.error('boom')</script>",
        encoding="utf-8",
    )
    seen = browser.visit(driver, page)
    assert "http://127.0.0.1:9/none.png" in seen.network
    messages = " ".join(e["message"] for e in seen.errors)
    assert "boom" in messages and "none.png" in messages
