"""The unified recording rules, rule by rule, from exporter facts written out here.

Each expected PromQL expression is written by hand; promtool then evaluates rules built from
exporters in every unit the values allow (input series and expected values also by hand), so a
wrong factor, a mapping applied in the wrong order or a mis-weighted cost shows as a number.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from generator.builders.monitoring import recording_rules as rules
from generator.builders.monitoring.sources import Exporter, Metric, MonitoringError, exporters
from generator.values import loader as values
from generator.values import yamlio
from generator.values.merge import Doc
from generator.values.model import FleetView, Team
from tests.fixtures import PROD_FLEET, TWO_CLUSTERS, promtool_rule_tests, tree

BY = "max by (node, device, partition, model, namespace, pod)"
UTIL, USED, TOTAL = Metric("u", "percent"), Metric("used", "bytes"), Metric("total", "bytes")


def xp(
    vendor: str,
    *,
    brand: str | None = None,
    labels: dict[str, str] | None = None,
    utilization: Metric = UTIL,
    used: Metric = USED,
    total: Metric | None = TOTAL,
    free: Metric | None = None,
    reserved: Metric | None = None,
    weight: float = 1.0,
    resource: str = "example.com/xpu",
    quota_key: str | None = None,
) -> Exporter:
    return Exporter(
        vendor=vendor,
        brand=brand or vendor,
        name=f"{vendor}-exporter",
        port=9400,
        port_name="metrics",
        path="/metrics",
        namespace="accelerator-exporters",
        pod_labels={"app": vendor},
        labels=labels or {},
        utilization=utilization,
        memory_used=used,
        memory_total=total,
        memory_free=free,
        memory_reserved=reserved,
        cost_weight=weight,
        resource=resource,
        quota_key=quota_key or f"requests.{resource}",
    )


def team(name: str, quota: dict[str, int], namespaces: tuple[str, ...] = ()) -> Team:
    return Team(name, namespaces or (name,), (), "baseline", quota, Doc({}))


@pytest.fixture
def view(tmp_path: Path) -> FleetView:
    """A fleet of one environment; tests give it the teams they need."""
    return values.load(tree(tmp_path / "repo", fleet=PROD_FLEET)).envs["prod"]


def with_teams(view: FleetView, *teams: Team) -> FleetView:
    return dataclasses.replace(view, teams=teams)


# ------------------------------------------------------------------------------- label mappings


def test_mappings_skip_labels_already_unified_and_follow_the_unified_order() -> None:
    exp = xp("a", labels={"pod": "pod_name", "node": "node", "model": "name", "device": "id"})
    assert rules.ordered_mappings(exp) == [("device", "id"), ("model", "name"), ("pod", "pod_name")]
    assert rules.ordered_mappings(xp("a", labels={"node": "node"})) == []


def test_a_label_another_mapping_reads_is_overwritten_only_after_it_is_read() -> None:
    # node <- device <- model <- x: each label is copied away before it is overwritten.
    exp = xp("a", labels={"node": "device", "device": "model", "model": "x"})
    assert rules.ordered_mappings(exp) == [("node", "device"), ("device", "model"), ("model", "x")]
    exp = xp("a", labels={"namespace": "ns", "pod": "namespace", "node": "pod"})
    assert rules.ordered_mappings(exp) == [
        ("node", "pod"),
        ("pod", "namespace"),
        ("namespace", "ns"),
    ]


def test_labels_that_swap_in_a_cycle_are_an_error() -> None:
    exp = xp("acme", labels={"node": "device", "device": "node", "model": "m"})
    with pytest.raises(MonitoringError) as err:
        rules.ordered_mappings(exp)
    assert str(err.value) == (
        "vendor acme: exporter.labels swap labels in a cycle: node<-device, device<-node"
    )
    assert err.value.path == ("exporter", "labels")


def test_label_replace_nests_the_first_mapping_innermost() -> None:
    exp = xp("a", labels={"node": "gpu", "device": "node"}, total=Metric("t", "bytes"))
    [util, *_] = rules.vendor_rules([exp])
    assert util["expr"] == (
        f"{BY} (label_replace(label_replace(u, "
        '"device", "$1", "node", "(.+)"), "node", "$1", "gpu", "(.+)"))'
    )


# ------------------------------------------------------------------------------ per-vendor rules


def test_each_vendor_records_utilisation_memory_used_and_total_with_its_labels() -> None:
    exp = xp(
        "acme",
        brand="acme-brand",
        labels={"node": "host", "device": "xpu"},
        utilization=Metric("acme_util", "percent"),
        used=Metric("acme_used", "bytes"),
        total=Metric("acme_total", "bytes"),
    )
    inner = 'label_replace(label_replace({}, "node", "$1", "host", "(.+)"), "device", "$1", "xpu", "(.+)")'
    labels = {"gpu_brand": "acme-brand", "vendor": "acme"}
    assert rules.vendor_rules([exp]) == [
        {
            "record": "gpu:utilization:percent",
            "expr": f"{BY} ({inner.format('acme_util')})",
            "labels": labels,
        },
        {
            "record": "gpu:memory_used:bytes",
            "expr": f"{BY} ({inner.format('acme_used')})",
            "labels": labels,
        },
        {
            "record": "gpu:memory_total:bytes",
            "expr": f"{BY} ({inner.format('acme_total')})",
            "labels": labels,
        },
    ]


@pytest.mark.parametrize(
    ("unit", "factor"),
    [
        ("KiB", " * 1024"),
        ("MiB", " * 1048576"),
        ("GiB", " * 1073741824"),
        ("KB", " * 1000"),
        ("MB", " * 1000000"),
        ("GB", " * 1000000000"),
        ("bytes", ""),
    ],
)
def test_memory_is_scaled_to_bytes(unit: str, factor: str) -> None:
    exp = xp("a", used=Metric("m_used", unit), total=Metric("m_total", unit))
    _, used, total = rules.vendor_rules([exp])
    assert used["expr"] == f"{BY} (m_used){factor}"
    assert total["expr"] == f"{BY} (m_total){factor}"


def test_utilisation_is_scaled_to_percent() -> None:
    [ratio, *_] = rules.vendor_rules([xp("a", utilization=Metric("r", "ratio"))])
    assert ratio["expr"] == f"{BY} (r) * 100"
    [percent, *_] = rules.vendor_rules([xp("a", utilization=Metric("p", "percent"))])
    assert percent["expr"] == f"{BY} (p)"


def test_without_a_total_the_device_holds_used_plus_free_memory() -> None:
    exp = xp("a", used=Metric("used", "MiB"), total=None, free=Metric("free", "GiB"))
    _, _, total = rules.vendor_rules([exp])
    assert total == {
        "record": "gpu:memory_total:bytes",
        "expr": f"({BY} (used) * 1048576) + ({BY} (free) * 1073741824)",
        "labels": {"gpu_brand": "a", "vendor": "a"},
    }


def test_reserved_memory_adds_to_used_and_free() -> None:
    exp = xp(
        "a",
        labels={"device": "gpu"},
        used=Metric("used", "bytes"),
        total=None,
        free=Metric("free", "KB"),
        reserved=Metric("reserved", "MiB"),
    )
    _, _, total = rules.vendor_rules([exp])
    lr = 'label_replace({}, "device", "$1", "gpu", "(.+)")'
    assert total["expr"] == (
        f"({BY} ({lr.format('used')})) + ({BY} ({lr.format('free')}) * 1000) + "
        f"({BY} ({lr.format('reserved')}) * 1048576)"
    )


def test_a_metric_name_two_vendors_emit_is_told_apart_by_vendor() -> None:
    use, used = Metric("rocm_use", "percent"), Metric("rocm_used", "bytes")  # both emit these
    amd = xp("amd", utilization=use, used=used, total=Metric("amd_total", "bytes"))
    dcu = xp("hygon", utilization=use, used=used, total=Metric("dcu_total", "bytes"))
    got = [r["expr"] for r in rules.vendor_rules([amd, dcu])]
    assert got == [
        f'{BY} (rocm_use{{vendor="amd"}})',
        f'{BY} (rocm_used{{vendor="amd"}})',
        f"{BY} (amd_total)",
        f'{BY} (rocm_use{{vendor="hygon"}})',
        f'{BY} (rocm_used{{vendor="hygon"}})',
        f"{BY} (dcu_total)",
    ]


def test_a_name_one_vendor_uses_twice_is_not_shared() -> None:
    # One exporter whose used and total memory are one metric (a site's odd values) reads it bare.
    exp = xp("a", used=Metric("mem", "bytes"), total=Metric("mem", "bytes"))
    got = [r["expr"] for r in rules.vendor_rules([exp])]
    assert got == [f"{BY} (u)", f"{BY} (mem)", f"{BY} (mem)"]


def test_rules_carry_no_yaml_aliases(view: FleetView) -> None:
    """Each rule has labels of its own: shared objects would dump as YAML anchors and aliases,
    which the values loader itself refuses as unsafe."""
    got = rules.groups(with_teams(view, team("ml", {"a": 1})), [xp("a"), xp("b")])
    text = yamlio.dump({"groups": got})
    assert "&id" not in text and "*id" not in text, text


# ------------------------------------------------------------------------------ fleet-wide rules


def test_fleet_rules_record_the_memory_ratio_and_device_count() -> None:
    assert rules.fleet_rules() == [
        {
            "record": "gpu:memory_used:ratio",
            "expr": "gpu:memory_used:bytes / (gpu:memory_total:bytes > 0)",
        },
        {
            "record": "gpu:devices:count",
            "expr": "count by (gpu_brand, vendor) "
            "(count by (gpu_brand, vendor, node, device) (gpu:utilization:percent))",
        },
    ]


# ---------------------------------------------------------------------------- quota and cost rules


def join(kind: str, quota_key: str, resource: str) -> str:
    """The quota join of one resource, as written in docs/monitoring.md."""
    return (
        f'sum by (team) (kube_resourcequota{{resourcequota="accelerators", resource="{quota_key}", '
        f'type="{kind}"}} * on (namespace) group_left (team) namespace:accelerator_team:info) '
        "* on (team) group_left (resource, vendor, gpu_brand) "
        "group by (team, resource, vendor, gpu_brand) "
        f'(team_vendor:gpu_cost_weight:factor{{resource="{resource}"}})'
    )


def test_team_rules_per_resource_with_quota_ratio_and_cost(view: FleetView) -> None:
    """A team's rules are data (its namespace, its weight per resource); the arithmetic is one
    join per resource and kind, and one cost rule, whatever the number of teams."""
    exps = [
        xp("beta", resource="b.com/xpu", weight=2.0),
        xp("alpha", resource="a.com/xpu", weight=0.5),
    ]
    got = rules.team_rules(with_teams(view, team("ml", {"alpha": 4, "beta": 2})), exps)
    alpha = {"team": "ml", "resource": "a.com/xpu", "vendor": "alpha", "gpu_brand": "alpha"}
    beta = {"team": "ml", "resource": "b.com/xpu", "vendor": "beta", "gpu_brand": "beta"}
    assert got == [
        {
            "record": "namespace:accelerator_team:info",
            "expr": "vector(1)",
            "labels": {"namespace": "ml", "team": "ml"},
        },
        {"record": "team_vendor:gpu_cost_weight:factor", "expr": "vector(0.5)", "labels": alpha},
        {"record": "team_vendor:gpu_cost_weight:factor", "expr": "vector(2)", "labels": beta},
        {
            "record": "team_vendor:gpu_quota_used:devices",
            "expr": join("used", "requests.a.com/xpu", "a.com/xpu"),
            "labels": {"resource": "a.com/xpu"},
        },
        {
            "record": "team_vendor:gpu_quota_hard:devices",
            "expr": join("hard", "requests.a.com/xpu", "a.com/xpu"),
            "labels": {"resource": "a.com/xpu"},
        },
        {
            "record": "team_vendor:gpu_quota_used:devices",
            "expr": join("used", "requests.b.com/xpu", "b.com/xpu"),
            "labels": {"resource": "b.com/xpu"},
        },
        {
            "record": "team_vendor:gpu_quota_hard:devices",
            "expr": join("hard", "requests.b.com/xpu", "b.com/xpu"),
            "labels": {"resource": "b.com/xpu"},
        },
        {
            "record": "team_vendor:gpu_quota_used:ratio",
            "expr": "team_vendor:gpu_quota_used:devices / (team_vendor:gpu_quota_hard:devices > 0)",
        },
        {
            "record": "team_vendor:gpu_cost_weighted_devices:sum",
            "expr": "team_vendor:gpu_quota_used:devices * on (team, resource, vendor, gpu_brand) "
            "team_vendor:gpu_cost_weight:factor",
        },
        {
            "record": "team_vendor:gpu_cost_weighted_device_hours:1h",
            "expr": "avg_over_time(team_vendor:gpu_cost_weighted_devices:sum[1h])",
        },
    ]


def test_the_shared_rules_do_not_grow_with_the_teams(view: FleetView) -> None:
    """Three teams add three namespaces and three weights; the joins stay one per resource."""
    teams = [team(n, {"a": 1}) for n in ("ml", "cv", "nlp")]
    got = rules.team_rules(with_teams(view, *teams), [xp("a")])
    assert [(r["record"], r.get("labels", {}).get("team")) for r in got] == [
        ("namespace:accelerator_team:info", "ml"),
        ("team_vendor:gpu_cost_weight:factor", "ml"),
        ("namespace:accelerator_team:info", "cv"),
        ("team_vendor:gpu_cost_weight:factor", "cv"),
        ("namespace:accelerator_team:info", "nlp"),
        ("team_vendor:gpu_cost_weight:factor", "nlp"),
        ("team_vendor:gpu_quota_used:devices", None),
        ("team_vendor:gpu_quota_hard:devices", None),
        ("team_vendor:gpu_quota_used:ratio", None),
        ("team_vendor:gpu_cost_weighted_devices:sum", None),
        ("team_vendor:gpu_cost_weighted_device_hours:1h", None),
    ]


def weights(got: list[dict[str, Any]]) -> dict[str, str]:
    """Each team's cost weight rule's expression, by team (one resource)."""
    return {
        r["labels"]["team"]: r["expr"]
        for r in got
        if r["record"] == "team_vendor:gpu_cost_weight:factor"
    }


def test_cost_weights_per_model_price_a_teams_use_by_its_quota_per_model(tmp_path: Path) -> None:
    """One NVIDIA vendor file, costWeight 1 and H100 at 3 (costWeights): kube-state-metrics
    counts nvidia.com/gpu whatever the model, so a team's use is priced by its quota per model,
    (1 x 3 + 3 x 1) / 4 = 1.5; a quota per vendor at costWeight, 1; no quota at the dearest, 3."""
    nvidia = """\
costWeight: 1
costWeights: {h100: 3}
pools:
  - {name: a100, model: A100, devicesPerNode: 8, nodes: [g1]}
  - {name: h100, model: H100, devicesPerNode: 8, nodes: [g2]}
"""
    files = {
        "vendors/nvidia.yaml": nvidia,
        "teams/ml.yaml": "quota: {nvidia: {H100: 1, A100: 3}}\n",
        "teams/web.yaml": "quota: {nvidia: 2}\n",
        "teams/lab.yaml": "quota: {}\n",
    }
    fleet = PROD_FLEET + "scheduling: {backend: kueue}\n"
    loaded = values.load(tree(tmp_path, files, fleet=fleet, defaults=False)).envs["prod"]
    got = rules.team_rules(loaded, exporters(loaded))
    assert weights(got) == {"lab": "vector(3)", "ml": "vector(1.5)", "web": "vector(1)"}
    inputs = [ksm(t, "requests.nvidia.com/gpu", "used", n) for t, n in (("ml", 4), ("web", 2))]
    inputs.append(ksm("lab", "requests.nvidia.com/gpu", "used", 1))
    cost = "team_vendor:gpu_cost_weighted_devices:sum"
    nv = {"resource": "nvidia.com/gpu", "vendor": "nvidia", "gpu_brand": "nvidia"}
    promtool_test(
        tmp_path,
        rules.groups(loaded, exporters(loaded)),
        {
            "interval": "1m",
            "input_series": inputs,
            "promql_expr_test": [
                check(
                    cost,
                    sample({"__name__": cost, "team": "lab", **nv}, 3),  # 1 x 3
                    sample({"__name__": cost, "team": "ml", **nv}, 6),  # 4 x 1.5
                    sample({"__name__": cost, "team": "web", **nv}, 2),  # 2 x 1
                )
            ],
        },
    )


def test_a_team_with_several_namespaces_has_each_recorded_as_its(view: FleetView) -> None:
    research = team("research", {"a": 1}, namespaces=("r-train", "r-serve"))
    got = rules.team_rules(with_teams(view, research), [xp("a")])
    assert [r["labels"] for r in got if r["record"] == "namespace:accelerator_team:info"] == [
        {"namespace": "r-train", "team": "research"},
        {"namespace": "r-serve", "team": "research"},
    ]
    assert all(r["expr"] == "vector(1)" for r in got[:2])


def shared(view: FleetView, *quota: tuple[str, int]) -> dict[str, Any]:
    """The cost weight rule of one team whose vendors amd (brand zz-amd, weight 0.8) and hygon
    (brand hygon, weight 0.5) both advertise amd.com/gpu."""
    exps = [
        xp("amd", brand="zz-amd", weight=0.8, resource="amd.com/gpu"),
        xp("hygon", weight=0.5, resource="amd.com/gpu"),
    ]
    got = rules.team_rules(with_teams(view, team("t", dict(quota))), exps)
    [weight] = [r for r in got if r["record"] == "team_vendor:gpu_cost_weight:factor"]
    return weight


def test_a_shared_resource_counts_against_the_vendors_the_team_has_quota_for(
    view: FleetView,
) -> None:
    got = shared(view, ("hygon", 8), ("nvidia", 4))
    assert got["labels"] == {
        "team": "t",
        "resource": "amd.com/gpu",
        "vendor": "hygon",
        "gpu_brand": "hygon",
    }
    assert got["expr"] == "vector(0.5)"


def test_a_shared_resource_without_quota_counts_against_all_at_the_highest_weight(
    view: FleetView,
) -> None:
    for quota in ((), (("amd", 0), ("hygon", 0))):
        got = shared(view, *quota)
        assert got["labels"] == {
            "team": "t",
            "resource": "amd.com/gpu",
            "vendor": "amd+hygon",
            "gpu_brand": "hygon+zz-amd",  # brands sorted, vendors in vendor order
        }
        assert got["expr"] == "vector(0.8)"


def test_a_shared_resource_is_weighted_by_the_teams_quota(view: FleetView) -> None:
    # (3 x 0.8 + 1 x 0.5) / 4 = 0.725
    got = shared(view, ("amd", 3), ("hygon", 1))
    assert got["labels"]["vendor"] == "amd+hygon"
    assert got["expr"] == "vector(0.725)"
    # (1 x 0.8 + 2 x 0.5) / 3 = 0.6 exactly; (2 x 0.8 + 1 x 0.5) / 3 = 0.7
    assert shared(view, ("amd", 1), ("hygon", 2))["expr"] == "vector(0.6)"
    assert shared(view, ("amd", 2), ("hygon", 1))["expr"] == "vector(0.7)"


def test_a_weight_is_rounded_to_six_decimals(view: FleetView) -> None:
    # (1 x 0.8 + 8 x 0.5) / 9 = 0.5333...; (2 x 0.8 + 7 x 0.5) / 9 = 0.5666...
    assert shared(view, ("amd", 1), ("hygon", 8))["expr"] == "vector(0.533333)"
    assert shared(view, ("amd", 2), ("hygon", 7))["expr"] == "vector(0.566667)"


def test_no_team_no_quota_rules(view: FleetView) -> None:
    assert rules.team_rules(with_teams(view), [xp("a")]) == []


# ------------------------------------------------------------------------------------ the group


def test_one_group_holds_vendor_fleet_and_team_rules_in_order(view: FleetView) -> None:
    got = rules.groups(with_teams(view, team("ml", {"a": 1})), [xp("a")])
    assert [g["name"] for g in got] == ["accelerators.unified"]
    assert set(got[0]) == {"name", "rules"}
    assert [r["record"] for r in got[0]["rules"]] == [
        "gpu:utilization:percent",
        "gpu:memory_used:bytes",
        "gpu:memory_total:bytes",
        "gpu:memory_used:ratio",
        "gpu:devices:count",
        "namespace:accelerator_team:info",
        "team_vendor:gpu_cost_weight:factor",
        "team_vendor:gpu_quota_used:devices",
        "team_vendor:gpu_quota_hard:devices",
        "team_vendor:gpu_quota_used:ratio",
        "team_vendor:gpu_cost_weighted_devices:sum",
        "team_vendor:gpu_cost_weighted_device_hours:1h",
    ]


def test_no_exporter_no_group(view: FleetView) -> None:
    assert rules.groups(with_teams(view, team("ml", {"a": 1})), []) == []
    assert rules.groups(with_teams(view), []) == []


def test_exporters_without_teams_give_the_vendor_and_fleet_rules(view: FleetView) -> None:
    [group] = rules.groups(with_teams(view), [xp("a")])
    assert group["rules"] == [*rules.vendor_rules([xp("a")]), *rules.fleet_rules()]
    assert len(group["rules"]) == 5


# ------------------------------------------------------------------------- promtool: the numbers

MiB, GiB = 2**20, 2**30


def promtool_test(tmp_path: Path, groups: list[dict[str, Any]], test: dict[str, Any]) -> None:
    promtool_rule_tests(tmp_path, groups, [test])


def series(name: str, values: float, **labels: str) -> dict[str, str]:
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return {"series": f"{name}{{{inner}}}", "values": f"{values}+0x90"}


def sample(labels: dict[str, str], value: float) -> dict[str, Any]:
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return {"labels": f"{{{inner}}}", "value": value}


def check(expr: str, *samples: dict[str, Any], at: str = "10m") -> dict[str, Any]:
    return {"expr": expr, "eval_time": at, "exp_samples": list(samples)}


def ksm(ns: str, key: str, kind: str, value: int) -> dict[str, str]:
    """kube-state-metrics' series of the fleet's quota in namespace `ns`."""
    return series(
        "kube_resourcequota",
        value,
        namespace=ns,
        resourcequota="accelerators",
        resource=key,
        type=kind,
        job="kube-state-metrics",
    )


def test_units_mappings_and_shared_names_give_exact_unified_values(
    view: FleetView, tmp_path: Path
) -> None:
    acme = xp(
        "acme",
        labels={"node": "host", "device": "node"},  # device from `node`, node from `host`
        utilization=Metric("acme_util", "ratio"),
        used=Metric("acme_used", "GiB"),
        total=None,
        free=Metric("acme_free", "KiB"),
        reserved=Metric("acme_reserved", "MiB"),
    )
    beta = xp(
        "beta",
        brand="b-brand",
        labels={"device": "card", "pod": "pod_name"},
        utilization=Metric("xpu_util", "percent"),
        used=Metric("beta_used", "GB"),
        total=Metric("beta_total", "MB"),
    )
    gamma = xp(
        "gamma",
        utilization=Metric("xpu_util", "ratio"),
        used=Metric("gamma_used", "KB"),
        total=None,
        free=Metric("gamma_free", "bytes"),
    )
    groups = rules.groups(with_teams(view), [acme, beta, gamma])
    noise = {"instance": "10.0.0.1:1", "job": "x"}
    a = {"host": "acme-1", "node": "3", "vendor": "acme", **noise}
    b = {"node": "beta-1", "card": "7", "pod_name": "p-0", "vendor": "beta", **noise}
    g = {"node": "gamma-1", "device": "0", "model": "G1", "vendor": "gamma", **noise}
    inputs = [
        series("acme_util", 0.42, **a),
        series("acme_used", 3, **a),  # 3 GiB
        series("acme_free", 524288, **a),  # 0.5 GiB
        series("acme_reserved", 512, **a),  # 0.5 GiB: the device holds 4 GiB
        series("xpu_util", 7, **b),
        series("beta_used", 2, **b),  # 2e9 bytes
        series("beta_total", 8000, **b),  # 8e9 bytes
        series("xpu_util", 1, **g),  # a ratio: 100 %
        series("gamma_used", 1500, **g),  # 1.5e6 bytes
        series("gamma_free", 4500000, **g),
    ]
    ua = {"node": "acme-1", "device": "3", "gpu_brand": "acme", "vendor": "acme"}
    ub = {"node": "beta-1", "device": "7", "pod": "p-0", "gpu_brand": "b-brand", "vendor": "beta"}
    ug = {"node": "gamma-1", "device": "0", "model": "G1", "gpu_brand": "gamma", "vendor": "gamma"}

    def per_vendor(record: str, want: tuple[float, float, float]) -> dict[str, Any]:
        samples = [
            sample({"__name__": record, **u}, v) for u, v in zip((ua, ub, ug), want, strict=True)
        ]
        return check(record, *samples)

    tests = [
        per_vendor("gpu:utilization:percent", (42, 7, 100)),
        per_vendor("gpu:memory_used:bytes", (3 * GiB, 2e9, 1.5e6)),
        per_vendor("gpu:memory_total:bytes", (4 * GiB, 8e9, 6e6)),
        per_vendor("gpu:memory_used:ratio", (0.75, 0.25, 0.25)),
        check(
            "gpu:devices:count",
            sample({"__name__": "gpu:devices:count", "gpu_brand": "acme", "vendor": "acme"}, 1),
            sample({"__name__": "gpu:devices:count", "gpu_brand": "b-brand", "vendor": "beta"}, 1),
            sample({"__name__": "gpu:devices:count", "gpu_brand": "gamma", "vendor": "gamma"}, 1),
        ),
    ]
    promtool_test(
        tmp_path,
        groups,
        {"interval": "1m", "input_series": inputs, "promql_expr_test": tests},
    )


def test_quota_use_and_weighted_cost_of_a_team_with_two_namespaces(
    view: FleetView, tmp_path: Path
) -> None:
    exps = [
        xp("amd", weight=0.8, resource="amd.com/gpu"),
        xp("hygon", weight=0.5, resource="amd.com/gpu"),
        xp("nvidia", weight=1.0, resource="nvidia.com/gpu"),
    ]
    teams = (
        team("research", {"amd": 1, "hygon": 3}, namespaces=("r1", "r2")),
        team("ml", {"nvidia": 2}),
    )
    groups = rules.groups(with_teams(view, *teams), exps)

    inputs = [
        ksm("r1", "requests.amd.com/gpu", "used", 2),
        ksm("r1", "requests.amd.com/gpu", "hard", 4),
        ksm("r2", "requests.amd.com/gpu", "used", 2),
        ksm("r2", "requests.amd.com/gpu", "hard", 4),
        ksm("r3", "requests.amd.com/gpu", "used", 50),  # not the team's
        ksm("ml", "requests.nvidia.com/gpu", "used", 1),
        ksm("ml", "requests.nvidia.com/gpu", "hard", 2),
        # Another ResourceQuota in the team's namespace is not the accelerators quota.
        series(
            "kube_resourcequota",
            9,
            namespace="ml",
            resourcequota="other",
            resource="requests.nvidia.com/gpu",
            type="used",
        ),
    ]
    r = {"team": "research", "resource": "amd.com/gpu", "vendor": "amd+hygon"}
    r["gpu_brand"] = "amd+hygon"
    m = {"team": "ml", "resource": "nvidia.com/gpu", "vendor": "nvidia", "gpu_brand": "nvidia"}

    def team_check(record: str, research: float, ml: float, at: str = "10m") -> dict[str, Any]:
        return check(
            f'{record}{{team=~"research|ml", resource=~"amd.com/gpu|nvidia.com/gpu"}}',
            sample({"__name__": record, **r}, research),
            sample({"__name__": record, **m}, ml),
            at=at,
        )

    tests = [
        team_check("team_vendor:gpu_quota_used:devices", 4, 1),
        team_check("team_vendor:gpu_quota_hard:devices", 8, 2),
        team_check("team_vendor:gpu_quota_used:ratio", 0.5, 0.5),
        # research: weight (1 x 0.8 + 3 x 0.5) / 4 = 0.575, x 4 devices = 2.3
        team_check("team_vendor:gpu_cost_weighted_devices:sum", 2.3, 1),
        team_check("team_vendor:gpu_cost_weighted_device_hours:1h", 2.3, 1, at="80m"),
    ]
    promtool_test(
        tmp_path,
        groups,
        {"interval": "1m", "input_series": inputs, "promql_expr_test": tests},
    )


def test_a_dra_vendors_quota_is_read_under_its_claims_per_class_key(
    view: FleetView, tmp_path: Path
) -> None:
    """kube-state-metrics reports a ResourceQuota's keys verbatim (v2.20.0
    internal/store/resourcequota.go: resource=<ResourceName>, type=hard|used); the key that counts
    a DeviceClass's claimed devices has no `requests.` prefix (kubernetes core/v1
    ResourceClaimsPerClass). The series below are written as kube-state-metrics emits them for
    the fleet's quota of a DRA vendor."""
    key = "nvidia-dra.deviceclass.resource.k8s.io/devices"
    exps = [xp("nvidia-dra", brand="nvidia", resource=key, quota_key=key, weight=2.0)]
    groups = rules.groups(with_teams(view, team("ml", {"nvidia-dra": 4})), exps)
    inputs = [
        series(
            "kube_resourcequota",
            value,
            namespace="ml",
            resourcequota="accelerators",
            resource=key,
            type=kind,
            job="kube-state-metrics",
        )
        for kind, value in (("used", 2), ("hard", 4))
    ]
    labels = {"team": "ml", "resource": key, "vendor": "nvidia-dra", "gpu_brand": "nvidia"}

    def one(record: str, value: float) -> dict[str, Any]:
        return check(record, sample({"__name__": record, **labels}, value))

    promtool_test(
        tmp_path,
        groups,
        {
            "interval": "1m",
            "input_series": inputs,
            "promql_expr_test": [
                one("team_vendor:gpu_quota_used:devices", 2),
                one("team_vendor:gpu_quota_hard:devices", 4),
                one("team_vendor:gpu_quota_used:ratio", 0.5),
                one("team_vendor:gpu_cost_weighted_devices:sum", 4),
            ],
        },
    )


def test_a_shared_resource_by_quota_and_without_over_several_objects_of_a_cluster(
    tmp_path: Path,
) -> None:
    """amd.com/gpu on amd (0.8) and hygon (0.5) nodes; team hq has quota for hygon only, team
    none for neither (both vendors, at 0.8), in cluster domestic of TWO_CLUSTERS, the rules
    spread over several objects: the joins in the main one read the teams' data in others."""
    domestic = values.load(tree(tmp_path / "repo", TWO_CLUSTERS, fleet=PROD_FLEET))
    view = with_teams(
        domestic.envs["prod/domestic"], team("hq", {"hygon": 8}), team("none", {}), team("x", {})
    )
    exps = [
        xp("amd", brand="zz-amd", weight=0.8, resource="amd.com/gpu"),
        xp("hygon", weight=0.5, resource="amd.com/gpu"),
    ]
    files = rules.files(view, exps, budget=600)
    # crc32 % 4: none and x both 3; % 8: hq 2, x 3, none 7
    assert [f.part for f in files] == [None, (2, 8), (3, 8), (7, 8)]
    key = "requests.amd.com/gpu"
    inputs = [
        ksm("hq", key, "used", 4),
        ksm("hq", key, "hard", 8),
        ksm("none", key, "used", 2),
        ksm("none", key, "hard", 5),
    ]
    where = {"cluster": "domestic", "resource": "amd.com/gpu"}
    hq = {"team": "hq", "vendor": "hygon", "gpu_brand": "hygon", **where}
    none = {"team": "none", "vendor": "amd+hygon", "gpu_brand": "hygon+zz-amd", **where}

    def both(record: str, at_hq: float, at_none: float) -> dict[str, Any]:
        return check(
            record,
            sample({"__name__": record, **hq}, at_hq),
            sample({"__name__": record, **none}, at_none),
        )

    promtool_test(
        tmp_path,
        [g for f in files for g in f.groups],
        {
            "interval": "1m",
            "input_series": inputs,
            "promql_expr_test": [
                both("team_vendor:gpu_quota_used:devices", 4, 2),
                both("team_vendor:gpu_quota_hard:devices", 8, 5),
                both("team_vendor:gpu_quota_used:ratio", 0.5, 0.4),
                both("team_vendor:gpu_cost_weighted_devices:sum", 2, 1.6),  # 4 x 0.5, 2 x 0.8
            ],
        },
    )
