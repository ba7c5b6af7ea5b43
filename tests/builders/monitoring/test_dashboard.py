"""The cross-vendor Grafana dashboard, as the JSON Grafana loads.

Each expected value is written out by hand from what a Grafana user sees: the panel type, title,
unit, legend, place on the grid, the datasource and every query with its refId and legend. The
keys the foundation SDK fills with its own defaults are left out of the comparison; every key
`dashboard.py` sets is compared whole.
"""

from __future__ import annotations

import json
import re
from typing import Any

from generator.builders.monitoring.dashboard import dashboard_json, queries
from generator.builders.monitoring.sources import Settings

# The variable every panel and query reads its datasource from.
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
# Grafana's reducer id for "Last *" (non-null): the value a stat or bar gauge shows.
LAST = {"calcs": ["lastNotNull"]}
# The legend of every time series: shown, as a list, below the graph.
LEGEND = {"calcs": [], "displayMode": "list", "placement": "bottom", "showLegend": True}


def settings(currency: str = "EUR", cluster: str = "") -> Settings:
    return Settings(
        namespace="monitoring",
        exporter_namespace="accelerator-exporters",
        selector_labels={},
        grafana_folder=None,
        cost_currency=currency,
        cluster=cluster,
    )


def board(currency: str = "EUR") -> dict[str, Any]:
    data: dict[str, Any] = json.loads(dashboard_json(settings(currency)))
    return data


def target(expr: str, legend: str, ref: str = "A", *, instant: bool) -> dict[str, Any]:
    """A Prometheus query as Grafana stores it: an instant query or a range query, never both."""
    return {
        "datasource": DATASOURCE,
        "expr": expr,
        "instant": instant,
        "legendFormat": legend,
        "range": not instant,
        "refId": ref,
    }


def grid(x: int, y: int, w: int, h: int) -> dict[str, int]:
    return {"h": h, "w": w, "x": x, "y": y}


def shown(panel: dict[str, Any]) -> dict[str, Any]:
    """What the dashboard sets on a panel (the SDK's own defaults left out)."""
    options = panel["options"]
    return {
        "type": panel["type"],
        "title": panel["title"],
        "datasource": panel["datasource"],
        "unit": panel["fieldConfig"]["defaults"]["unit"],
        "gridPos": panel["gridPos"],
        "legend": options.get("legend"),
        "reduceOptions": options.get("reduceOptions"),
        "targets": panel["targets"],
    }


# ---------------------------------------------------------------------------- panels and _panel


def test_panels_show_each_vendor_metric_with_its_type_unit_place_and_queries() -> None:
    """The seven panels, each with the visualisation, unit, place and queries a user reads."""
    util = "gpu:utilization:percent"
    assert [shown(p) for p in board()["panels"]] == [
        {
            "type": "stat",
            "title": "Devices by brand",
            "datasource": DATASOURCE,
            "unit": "none",
            "gridPos": grid(0, 0, 8, 6),
            "legend": None,
            "reduceOptions": LAST,
            "targets": [
                target("sum by (gpu_brand) (gpu:devices:count)", "{{gpu_brand}}", instant=True)
            ],
        },
        {
            "type": "timeseries",
            "title": "Average utilisation by brand",
            "datasource": DATASOURCE,
            "unit": "percent",
            "gridPos": grid(8, 0, 16, 6),
            "legend": LEGEND,
            "reduceOptions": None,
            "targets": [target(f"avg by (gpu_brand) ({util})", "{{gpu_brand}}", instant=False)],
        },
        {
            "type": "timeseries",
            "title": "Utilisation per node (all vendors)",
            "datasource": DATASOURCE,
            "unit": "percent",
            "gridPos": grid(0, 6, 16, 9),
            "legend": LEGEND,
            "reduceOptions": None,
            "targets": [
                target(
                    f"avg by (node, gpu_brand) ({util})", "{{node}} ({{gpu_brand}})", instant=False
                )
            ],
        },
        {
            "type": "bargauge",
            "title": "Top 10 nodes by utilisation",
            "datasource": DATASOURCE,
            "unit": "percent",
            "gridPos": grid(16, 6, 8, 9),
            "legend": None,
            "reduceOptions": LAST,
            "targets": [
                target(
                    f"topk(10, avg by (node, gpu_brand) ({util}))",
                    "{{node}} ({{gpu_brand}})",
                    instant=True,
                )
            ],
        },
        {
            "type": "timeseries",
            "title": "Memory used ratio by brand",
            "datasource": DATASOURCE,
            "unit": "percentunit",
            "gridPos": grid(0, 15, 12, 8),
            "legend": LEGEND,
            "reduceOptions": None,
            "targets": [
                target("avg by (gpu_brand) (gpu:memory_used:ratio)", "{{gpu_brand}}", instant=False)
            ],
        },
        {
            "type": "bargauge",
            "title": "Quota used / hard per team and vendor",
            "datasource": DATASOURCE,
            "unit": "none",
            "gridPos": grid(12, 15, 12, 8),
            "legend": None,
            "reduceOptions": LAST,
            "targets": [
                target(
                    "sum by (team, vendor) (team_vendor:gpu_quota_used:devices)",
                    "{{team}} / {{vendor}} used",
                    "A",
                    instant=True,
                ),
                target(
                    "sum by (team, vendor) (team_vendor:gpu_quota_hard:devices)",
                    "{{team}} / {{vendor}} hard",
                    "B",
                    instant=True,
                ),
            ],
        },
        {
            "type": "bargauge",
            "title": "Cost per team (EUR, dashboard range)",
            "datasource": DATASOURCE,
            "unit": "none",
            "gridPos": grid(0, 23, 24, 8),
            "legend": None,
            "reduceOptions": LAST,
            "targets": [
                target(
                    "sum by (team) (avg_over_time(team_vendor:gpu_cost_weighted_devices:sum"
                    "[$__range])) * $__range_s / 3600",
                    "{{team}}",
                    instant=True,
                )
            ],
        },
    ]


def test_cost_panel_title_names_the_configured_currency() -> None:
    """The cost panel's title says what its numbers are in: the fleet's costCurrency."""
    titles = [p["title"] for p in board("weighted device-hours")["panels"]]
    assert titles[-1] == "Cost per team (weighted device-hours, dashboard range)"


def test_panels_tile_the_24_column_grid_without_overlap() -> None:
    """Grafana places panels by gridPos: no two overlap and no row passes 24 columns."""
    cells: set[tuple[int, int]] = set()
    for panel in board()["panels"]:
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24, panel["title"]
        mine = {(pos["x"] + dx, pos["y"] + dy) for dx in range(pos["w"]) for dy in range(pos["h"])}
        assert not mine & cells, panel["title"]
        cells |= mine
    # 6 + 9 + 8 + 8 rows, all 24 columns filled.
    assert len(cells) == 24 * 31


# --------------------------------------------------------------------------------- dashboard_json


def test_dashboard_identity_time_range_and_datasource_variable() -> None:
    """Grafana finds the board by uid, lists it by title and tags, and asks for a datasource."""
    data = board()
    assert {k: data[k] for k in ("title", "uid", "tags", "time", "refresh")} == {
        "title": "Accelerators: all vendors",
        "uid": "accel-gitops-accelerators",
        "tags": ["accelerators", "accel-gitops"],
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "1m",
    }
    [variable] = data["templating"]["list"]
    assert {k: variable[k] for k in ("type", "name", "query")} == {
        "type": "datasource",
        "name": "datasource",
        "query": "prometheus",
    }


def test_dashboard_json_is_sorted_indented_and_ends_with_a_newline() -> None:
    """The same values give byte-identical JSON, so a render diffs cleanly in git."""
    text = dashboard_json(settings())
    assert text == json.dumps(json.loads(text), sort_keys=True, indent=2) + "\n"


# ---------------------------------------------------------------------------------------- queries


def test_queries_lists_every_expression_in_panel_and_target_order() -> None:
    """Every PromQL expression, skipping rows without targets and targets without expr."""
    text = json.dumps(
        {
            "panels": [
                {"type": "row", "title": "a row has no targets"},
                {"targets": [{"expr": "a", "refId": "A"}, {"refId": "B"}, {"expr": "b"}]},
                {"targets": [{"expr": "c"}]},
            ]
        }
    )
    assert queries(text) == ["a", "b", "c"]


def test_queries_of_a_dashboard_without_panels_is_empty() -> None:
    """An empty dashboard has no queries (rather than an error)."""
    assert queries('{"title": "empty"}') == []


def test_queries_of_the_rendered_dashboard() -> None:
    """The seven panels give eight queries (the quota panel has used and hard)."""
    exprs = queries(dashboard_json(settings()))
    assert len(exprs) == 8
    assert exprs[5:7] == [
        "sum by (team, vendor) (team_vendor:gpu_quota_used:devices)",
        "sum by (team, vendor) (team_vendor:gpu_quota_hard:devices)",
    ]


def test_a_cluster_s_dashboard_filters_every_query_on_the_chosen_clusters() -> None:
    """In an environment of several clusters: a `cluster` variable over the recorded series'
    label, and every query reads the series of the chosen clusters only."""
    data = json.loads(dashboard_json(settings(cluster="domestic")))
    datasource, cluster = data["templating"]["list"]
    assert datasource["name"] == "datasource"
    assert {k: cluster[k] for k in ("type", "name", "label", "query", "multi", "includeAll")} == {
        "type": "query",
        "name": "cluster",
        "label": "cluster",
        "query": "label_values(gpu:devices:count, cluster)",
        "multi": True,
        "includeAll": True,
    }
    assert cluster["datasource"] == DATASOURCE
    exprs = queries(dashboard_json(settings(cluster="domestic")))
    plain = queries(dashboard_json(settings()))
    assert len(exprs) == len(plain) == 8
    for filtered, one in zip(exprs, plain, strict=True):
        assert filtered != one and 'cluster=~"$cluster"' in filtered
        assert re.sub(r'\{cluster=~"\$cluster"\}', "", filtered) == one
