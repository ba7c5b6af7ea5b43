"""The cross-vendor Grafana dashboard, built with grafana-foundation-sdk from the rules' names.

Every query reads only the recorded series of `rules` (tests prove it), so one panel shows all
vendors alike. The JSON is deterministic: sorted keys, fixed grid positions and uid.

In an environment of several clusters every recorded series carries `cluster`, and the dashboard
has a `cluster` variable (its values: `label_values(<series>, cluster)`, a Prometheus query
variable: grafana docs/sources/datasources/prometheus/template-variables/index.md v12.4) that
every query filters on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from grafana_foundation_sdk.builders import (
    bargauge,
    common,
    dashboard,
    prometheus,
    stat,
    timeseries,
)
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.common import LegendDisplayMode, LegendPlacement
from grafana_foundation_sdk.models.dashboard import DataSourceRef, GridPos

from generator.builders.monitoring.sources import Settings
from generator.vocab import series
from generator.vocab.series import CLUSTER_LABEL

UID = "accel-gitops-accelerators"
TITLE = "Accelerators: all vendors"
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str
    instant: bool = False


@dataclass(frozen=True)
class Panel:
    title: str
    kind: str  # stat | timeseries | bargauge
    unit: str
    queries: tuple[Query, ...]
    grid: tuple[int, int, int, int]  # x, y, w, h


CLUSTER_VARIABLE = "cluster"


def _series(settings: Settings, name: str) -> str:
    """A recorded series, filtered on the chosen clusters where series carry one."""
    if not settings.cluster:
        return name
    return f'{name}{{{CLUSTER_LABEL}=~"${CLUSTER_VARIABLE}"}}'


def panels(settings: Settings) -> list[Panel]:
    util, ratio, devices, used, hard, cost = (
        _series(settings, name)
        for name in (
            series.UTILIZATION,
            series.MEMORY_RATIO,
            series.DEVICES,
            series.QUOTA_USED,
            series.QUOTA_HARD,
            series.COST_DEVICES,
        )
    )
    return [
        Panel(
            "Devices by brand",
            "stat",
            "none",
            (Query(f"sum by (gpu_brand) ({devices})", "{{gpu_brand}}", instant=True),),
            (0, 0, 8, 6),
        ),
        Panel(
            "Average utilisation by brand",
            "timeseries",
            "percent",
            (Query(f"avg by (gpu_brand) ({util})", "{{gpu_brand}}"),),
            (8, 0, 16, 6),
        ),
        Panel(
            "Utilisation per node (all vendors)",
            "timeseries",
            "percent",
            (Query(f"avg by (node, gpu_brand) ({util})", "{{node}} ({{gpu_brand}})"),),
            (0, 6, 16, 9),
        ),
        Panel(
            "Top 10 nodes by utilisation",
            "bargauge",
            "percent",
            (
                Query(
                    f"topk(10, avg by (node, gpu_brand) ({util}))",
                    "{{node}} ({{gpu_brand}})",
                    instant=True,
                ),
            ),
            (16, 6, 8, 9),
        ),
        Panel(
            "Memory used ratio by brand",
            "timeseries",
            "percentunit",
            (Query(f"avg by (gpu_brand) ({ratio})", "{{gpu_brand}}"),),
            (0, 15, 12, 8),
        ),
        Panel(
            "Quota used / hard per team and vendor",
            "bargauge",
            "none",
            (
                Query(
                    f"sum by (team, vendor) ({used})",
                    "{{team}} / {{vendor}} used",
                    instant=True,
                ),
                Query(
                    f"sum by (team, vendor) ({hard})",
                    "{{team}} / {{vendor}} hard",
                    instant=True,
                ),
            ),
            (12, 15, 12, 8),
        ),
        Panel(
            f"Cost per team ({settings.cost_currency}, dashboard range)",
            "bargauge",
            "none",
            (
                # Average weighted devices held over the range x its hours = weighted device-hours.
                Query(
                    f"sum by (team) (avg_over_time({cost}[$__range])) * $__range_s / 3600",
                    "{{team}}",
                    instant=True,
                ),
            ),
            (0, 23, 24, 8),
        ),
    ]


def _panel(panel: Panel) -> Any:
    builder: Any
    last = common.ReduceDataOptions().calcs(["lastNotNull"])
    if panel.kind == "stat":
        builder = stat.Panel().reduce_options(last)
    elif panel.kind == "bargauge":
        builder = bargauge.Panel().reduce_options(last)
    else:
        legend = (
            common.VizLegendOptions()
            .show_legend(True)
            .display_mode(LegendDisplayMode.LIST)
            .placement(LegendPlacement.BOTTOM)
        )
        builder = timeseries.Panel().legend(legend)
    x, y, w, h = panel.grid
    builder = (
        builder.title(panel.title)
        .datasource(DATASOURCE)
        .unit(panel.unit)
        .grid_pos(GridPos(h=h, w=w, x=x, y=y))
    )
    for i, query in enumerate(panel.queries):
        target = (
            prometheus.Dataquery()
            .expr(query.expr)
            .legend_format(query.legend)
            .ref_id(chr(ord("A") + i))
            .datasource(DATASOURCE)
        )
        builder = builder.with_target(target.instant() if query.instant else target.range())
    return builder


def dashboard_json(settings: Settings) -> str:
    board = (
        dashboard.Dashboard(TITLE)
        .uid(UID)
        .tags(["accelerators", "accel-gitops"])
        .time("now-6h", "now")
        .refresh("1m")
        .with_variable(dashboard.DatasourceVariable("datasource").type("prometheus"))
    )
    if settings.cluster:
        board = board.with_variable(
            dashboard.QueryVariable(CLUSTER_VARIABLE)
            .label("cluster")
            .datasource(DATASOURCE)
            .query(f"label_values({series.DEVICES}, {CLUSTER_LABEL})")
            .multi(True)
            .include_all(True)
        )
    for panel in panels(settings):
        board = board.with_panel(_panel(panel))
    data: Any = json.loads(JSONEncoder().encode(board.build()))
    return json.dumps(data, sort_keys=True, indent=2) + "\n"


def queries(dashboard_text: str) -> list[str]:
    """Every PromQL expression of a rendered dashboard (for tests and docs)."""
    data: dict[str, Any] = json.loads(dashboard_text)
    return [t["expr"] for p in data.get("panels", []) for t in p.get("targets", []) if "expr" in t]
