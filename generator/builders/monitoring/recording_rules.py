"""Recording rules that give every vendor the same series and the same labels.

Per vendor (one rule each, told apart by the rule's `gpu_brand`/`vendor` labels):
  gpu:utilization:percent, gpu:memory_used:bytes, gpu:memory_total:bytes
labelled node, device, partition, model, namespace, pod (exporter labels renamed with
label_replace; partition only on the series of a device's parts, such as MIG instances).
Fleet-wide: gpu:memory_used:ratio, gpu:devices:count, and per team x vendor the quota use from
kube-state-metrics and a cost-weighted device-hours series: each team's rules are data (its
namespaces, its cost weight per resource), joined by rules written once per resource. See
docs/monitoring.md, "How the per-team rules work".
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from generator.builders.monitoring import rulefiles
from generator.builders.monitoring.rulefiles import RuleFile
from generator.builders.monitoring.sources import Exporter, Metric, MonitoringError
from generator.values.model import FleetView, Team, Vendor, unit_cost
from generator.vocab.names import QUOTA_NAME
from generator.vocab.series import (
    BRAND_LABEL,
    BYTES_PER_UNIT,
    CLUSTER_LABEL,
    COST_DEVICES,
    COST_HOURS,
    COST_WEIGHT,
    DEVICES,
    GROUP,
    KSM_QUOTA,
    MEMORY_RATIO,
    MEMORY_TOTAL,
    MEMORY_USED,
    PERCENT_PER_UNIT,
    QUOTA_HARD,
    QUOTA_RATIO,
    QUOTA_USED,
    TEAM_INFO,
    UNIFIED_LABELS,
    UTILIZATION,
    VENDOR_LABEL,
)

Rule = dict[str, Any]


@functools.lru_cache(maxsize=65536)
def _q(text: str) -> str:
    """A PromQL string literal (remembered: every view's rules quote the same names, resources
    and constants again; when each team had its own quota selectors, 430,000 times at
    20 clusters x 500 teams, 40 % of building the rules)."""
    return json.dumps(text)


def _number(value: float) -> str:
    return repr(int(value)) if float(value).is_integer() else repr(float(value))


def ordered_mappings(exp: Exporter) -> list[tuple[str, str]]:
    """(unified, exporter label) pairs to rename, ordered so that no label is overwritten
    before another mapping has read it (label_replace nests: the first applies innermost)."""
    pending = [(u, exp.labels[u]) for u in UNIFIED_LABELS if exp.labels.get(u, u) != u]
    out: list[tuple[str, str]] = []
    while pending:
        ready = [m for m in pending if not any(o is not m and o[1] == m[0] for o in pending)]
        if not ready:
            raise MonitoringError(
                f"vendor {exp.vendor}: exporter.labels swap labels in a cycle: "
                + ", ".join(f"{u}<-{s}" for u, s in pending),
                ("exporter", "labels"),
            )
        out.append(ready[0])
        pending.remove(ready[0])
    return out


class _Exprs:
    """PromQL for one vendor's exporter metrics."""

    def __init__(self, exp: Exporter, shared_names: set[str]) -> None:
        self.exp = exp
        self.shared = shared_names

    def select(self, metric: Metric) -> str:
        # Two vendors whose exporters emit the same name (a DCU behind a ROCm exporter) are
        # told apart by the `vendor` label the scrape configuration adds.
        if metric.name in self.shared:
            return f"{metric.name}{{{VENDOR_LABEL}={_q(self.exp.vendor)}}}"
        return metric.name

    def unified(self, metric: Metric) -> str:
        expr = self.select(metric)
        for dst, src in ordered_mappings(self.exp):
            expr = f'label_replace({expr}, {_q(dst)}, "$1", {_q(src)}, "(.+)")'
        return f"max by ({', '.join(UNIFIED_LABELS)}) ({expr})"

    def scaled(self, metric: Metric, factors: dict[str, int]) -> str:
        factor = factors[metric.unit]
        expr = self.unified(metric)
        return expr if factor == 1 else f"{expr} * {factor}"

    def memory_total(self) -> str:
        if self.exp.memory_total is not None:
            return self.scaled(self.exp.memory_total, BYTES_PER_UNIT)
        assert self.exp.memory_free is not None  # sources.exporter guarantees one of them
        parts = [self.exp.memory_used, self.exp.memory_free]
        if self.exp.memory_reserved is not None:
            # Memory the driver reserves is neither used nor free (DCGM: FB_USED_PERCENT is
            # used / (total - reserved)), so the device's size is all three.
            parts.append(self.exp.memory_reserved)
        return " + ".join(f"({self.scaled(m, BYTES_PER_UNIT)})" for m in parts)


def vendor_rules(exporters: list[Exporter]) -> list[Rule]:
    counts = Counter(name for exp in exporters for name in set(exp.metric_names))
    shared = {name for name, n in counts.items() if n > 1}
    out: list[Rule] = []
    for exp in exporters:
        exprs = _Exprs(exp, shared)
        labels = {BRAND_LABEL: exp.brand, VENDOR_LABEL: exp.vendor}
        out += [
            {
                "record": UTILIZATION,
                "expr": exprs.scaled(exp.utilization, PERCENT_PER_UNIT),
                "labels": dict(labels),
            },
            {
                "record": MEMORY_USED,
                "expr": exprs.scaled(exp.memory_used, BYTES_PER_UNIT),
                "labels": dict(labels),
            },
            {"record": MEMORY_TOTAL, "expr": exprs.memory_total(), "labels": dict(labels)},
        ]
    return out


def fleet_rules() -> list[Rule]:
    return [
        {"record": MEMORY_RATIO, "expr": f"{MEMORY_USED} / ({MEMORY_TOTAL} > 0)"},
        {
            "record": DEVICES,
            "expr": f"count by ({BRAND_LABEL}, {VENDOR_LABEL}) "
            f"(count by ({BRAND_LABEL}, {VENDOR_LABEL}, node, device) ({UTILIZATION}))",
        },
    ]


@dataclass(frozen=True)
class Prices:
    """What one unit of each vendor of a view costs, by vendor id: made once per view, since
    the rules price every team of every view."""

    vendors: dict[str, Vendor]
    dearest: dict[str, float]  # its costWeight, or a model's that costs more

    @classmethod
    def of(cls, view: FleetView, exporters: list[Exporter]) -> Prices:
        vendors = {v.id: v for v in view.vendors}
        dearest = {}
        for exp in exporters:
            vendor = vendors.get(exp.vendor)
            models = list(vendor.model_cost_weights.values()) if vendor else []
            dearest[exp.vendor] = max([exp.cost_weight, *models])
        return cls(vendors, dearest)

    def unit(self, team: Team, exp: Exporter) -> float:
        """One of the team's units: values' unit_cost where the team quotas the vendor per
        model, else the vendor's weight."""
        vendor = self.vendors.get(exp.vendor)
        return unit_cost(team, vendor) if vendor and exp.vendor in team.models else exp.cost_weight


def _attribution(
    team: Team, exporters: list[Exporter], prices: Prices
) -> tuple[list[Exporter], float]:
    """Which vendors a team's use of one resource counts against, and their cost weight.

    Vendors that share a resource name (amd.com/gpu on AMD and Hygon nodes), and the models of
    one vendor, cannot be told apart by kube-state-metrics: the use is attributed to the vendors
    (and models) the team has quota for there, weighted by that quota (all of them, at the
    highest weight, when it has none)."""
    given = [e for e in exporters if team.quota.get(e.vendor, 0) > 0]
    if not given:
        return exporters, max(prices.dearest[e.vendor] for e in exporters)
    total = sum(team.quota[e.vendor] for e in given)
    weight = sum(team.quota[e.vendor] * prices.unit(team, e) for e in given) / total
    return given, round(weight, 6)


@dataclass(frozen=True)
class TeamRules:
    """One team's data for the shared quota and cost rules: which namespaces are its, and its
    cost weight per resource with the vendors its use counts against (the labels its quota and
    cost series get). Data, not arithmetic: at 500 teams a cluster, per-team arithmetic was
    7,500 selectors an evaluation and 2.5 MB of rules to build, check and load."""

    team: Team
    rules: list[Rule]


def _by_resource(exporters: list[Exporter]) -> list[tuple[str, list[Exporter]]]:
    by_resource: dict[str, list[Exporter]] = {}
    for exp in exporters:
        by_resource.setdefault(exp.resource, []).append(exp)
    return sorted(by_resource.items())


def team_parts(view: FleetView, exporters: list[Exporter]) -> list[TeamRules]:
    resources = _by_resource(exporters)
    if not resources:
        return []
    prices = Prices.of(view, exporters)
    out: list[TeamRules] = []
    for team in view.teams:
        data: list[Rule] = [
            {
                "record": TEAM_INFO,
                "expr": "vector(1)",
                "labels": {"namespace": ns, "team": team.name},
            }
            for ns in team.namespaces
        ]
        for resource, group in resources:
            counted, weight = _attribution(team, group, prices)
            labels = {
                "team": team.name,
                "resource": resource,
                VENDOR_LABEL: "+".join(e.vendor for e in counted),
                BRAND_LABEL: "+".join(sorted({e.brand for e in counted})),
            }
            data.append(
                {"record": COST_WEIGHT, "expr": f"vector({_number(weight)})", "labels": labels}
            )
        out.append(TeamRules(team, data))
    return out


# The labels a team's quota and cost series have besides `team` (and the rule's own `cluster`).
_ATTRIBUTION = ("resource", VENDOR_LABEL, BRAND_LABEL)


def quota_rules(exporters: list[Exporter]) -> list[Rule]:
    """Per resource, every team's quota use and hard quota as one join each: the quota's series
    summed by the team its namespace is of, labelled from the team's weight series.

    Labels of a binary operation's result (prometheus v0.316.0 promql/engine.go
    `resultMetric`): the left side's, without the metric name; a one-to-one match `on (...)`
    keeps only the `on` labels; then each label `group_left (...)` names is copied from the
    right ("one") side. So each quota series gets its namespace's `team`, the sum by team keeps
    `team` alone, and the second `group_left` adds the team's `resource`, `vendor` and
    `gpu_brand` from its one weight series (`group by` makes its value 1); the rule's own
    `labels` are set after that. Two series on the "one" side for one match fail the whole
    rule, for every team ("many-to-many matching not allowed", engine.go): two teams claiming
    one namespace is NAME004 (policy/fleet.py `namespace_twice`), an error render stops at, and
    the values schema refuses a team listing a namespace twice."""
    out: list[Rule] = []
    attribution = ", ".join(_ATTRIBUTION)
    for resource, group in _by_resource(exporters):
        weight = f"{COST_WEIGHT}{{resource={_q(resource)}}}"
        for record, kind in ((QUOTA_USED, "used"), (QUOTA_HARD, "hard")):
            matchers = ", ".join(
                [
                    f"resourcequota={_q(QUOTA_NAME)}",
                    f"resource={_q(group[0].quota_key)}",
                    f"type={_q(kind)}",
                ]
            )
            out.append(
                {
                    "record": record,
                    "expr": f"sum by (team) ({KSM_QUOTA}{{{matchers}}} * on (namespace) "
                    f"group_left (team) {TEAM_INFO}) * on (team) group_left ({attribution}) "
                    f"group by (team, {attribution}) ({weight})",
                    # Rules of one name need labels apart: promtool's duplicate-rules lint
                    # (validate's --lint=all) compares a rule's name and labels only.
                    "labels": {"resource": resource},
                }
            )
    return out


def derived_rules() -> list[Rule]:
    """What every team's quota records feed: the share of its quota used, its cost-weighted
    devices (one rule over every resource) and their device-hours."""
    return [
        {"record": QUOTA_RATIO, "expr": f"{QUOTA_USED} / ({QUOTA_HARD} > 0)"},
        # One-to-one `on (...)`: the result keeps the `on` labels only (engine.go
        # `resultMetric`, quota_rules), which are the attribution the two sides share.
        {
            "record": COST_DEVICES,
            "expr": f"{QUOTA_USED} * on (team, {', '.join(_ATTRIBUTION)}) {COST_WEIGHT}",
        },
        # The average number of weighted devices held over the last hour is the weighted
        # device-hours of that hour.
        {"record": COST_HOURS, "expr": f"avg_over_time({COST_DEVICES}[1h])"},
    ]


def _shared_team_rules(exporters: list[Exporter]) -> list[Rule]:
    """The rules over every team's data, in the order they read each other: the quota joins,
    then what reads them."""
    return [*quota_rules(exporters), *derived_rules()]


def team_rules(view: FleetView, exporters: list[Exporter]) -> list[Rule]:
    """Every team's data, then the rules that join it, in one group."""
    parts = team_parts(view, exporters)
    if not parts:
        return []
    return [*(r for p in parts for r in p.rules), *_shared_team_rules(exporters)]


def _team_sources(teams: Sequence[Team]) -> tuple[str, ...]:
    return tuple(sorted({s for t in teams for s in t.doc.sources}))


def files(view: FleetView, exporters: list[Exporter], budget: int | None = None) -> list[RuleFile]:
    """The unified recording rules as PrometheusRules: one, while they fit the operator's limit
    (rulefiles.py); else the vendor and fleet rules and the rules over every team's data in the
    main one, and the teams' data spread over as many more as keep each under the budget.
    Prometheus evaluates groups independently: a join or a cost reading another group's data
    lags it by one evaluation at most."""
    shared = vendor_rules(exporters)
    if shared:
        shared += fleet_rules()
    parts = team_parts(view, exporters)
    joins = _shared_team_rules(exporters) if parts else []
    if view.cluster is not None:
        # Every series recorded in a cluster names it, aggregations included (their `by`
        # drops the scraped labels): a Prometheus or Grafana over several clusters tells them
        # apart.
        for rule in [*shared, *(r for p in parts for r in p.rules), *joins]:
            rule["labels"] = {**rule.get("labels", {}), CLUSTER_LABEL: view.cluster.name}
    keyed = [(p.team.name, p, rulefiles.size(p.rules)) for p in parts]
    spread = rulefiles.shares(keyed, rulefiles.size(shared) + rulefiles.size(joins), budget)
    if spread is None:
        rules = [*shared, *(r for p in parts for r in p.rules), *joins]
        if not rules:
            return []
        return [RuleFile(None, [{"name": GROUP, "rules": rules}], _team_sources(view.teams))]
    # The main object's rules are made from the vendors alone: no team's file is its source.
    out = [RuleFile(None, [{"name": GROUP, "rules": shared + joins}])]
    for part, held in spread:
        name = rulefiles.part_name(GROUP, "teams", *part)
        rules = [r for p in held for r in p.rules]
        teams = [p.team for p in held]
        out.append(RuleFile(part, [{"name": name, "rules": rules}], _team_sources(teams)))
    return out


def groups(view: FleetView, exporters: list[Exporter]) -> list[dict[str, Any]]:
    """Every rule group of the unified rules, in order (all of them, whichever object holds
    each)."""
    return [g for f in files(view, exporters) for g in f.groups]
