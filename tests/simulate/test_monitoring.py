"""simulate's monitoring step without a control plane: the judge (simulate/monitoring.py) on what
an observer would have read of Prometheus and the plane, written here by hand for a values tree
made for it (an NVIDIA pool by device plugin, an H100 pool by DRA, team ml with quota on both).
What the real kube-state-metrics, Prometheus Operator and Prometheus make of the example is
tests/cluster/test_monitoring.py's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from generator.cluster.dryrun import load
from generator.cluster.units import build
from generator.findings import Finding, Severity
from generator.simulate import monitoring
from generator.simulate.monitoring import MonRun
from generator.simulate.plan import SimPlan, make_plan
from tests.fixtures import DRA_NVIDIA, SIM_FLEET
from tests.simulate.cases import line_of, small_tree

DRA_KEY = "nvidia-dra.deviceclass.resource.k8s.io/devices"
HARD = {"requests.nvidia.com/gpu": "4", DRA_KEY: "8"}
PROMETHEUS = {
    "namespace": "monitoring",
    "podMonitorSelector": {},
    "podMonitorNamespaceSelector": {},
    "ruleSelector": {},
    "ruleNamespaceSelector": {},
}


@pytest.fixture
def values(tmp_path: Path) -> Path:
    dra = yaml.safe_load(DRA_NVIDIA)
    dra["pools"][0]["nodes"] = ["h100-1"]
    team = {"owners": ["ml@example.com"], "quota": {"nvidia": 4, "nvidia-dra": 8}}
    return small_tree(
        tmp_path,
        fleet={**SIM_FLEET, "monitoring": {"prometheus": PROMETHEUS}},
        vendors={
            "nvidia": {
                "pools": [
                    {"name": "a100", "model": "A100", "devicesPerNode": 4, "nodes": ["gpu-1"]}
                ]
            },
            "nvidia-dra": dra,
        },
        teams={"ml": team},
    )


def plan_of(values: Path) -> SimPlan:
    checked, envs = load(values, None)
    built, found = build(checked.values, envs[0], builds=checked.builds)
    return make_plan(checked.values, checked.builds[envs[0]], built, found)


def quota(used: dict[str, str]) -> dict[str, Any]:
    """Team ml's ResourceQuota as the API server lists it."""
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "accelerators", "namespace": "ml"},
        "spec": {"hard": HARD},
        "status": {"hard": HARD, "used": used},
    }


def team_series(gpu_used: float, dra: bool = True) -> dict[str, list[tuple[dict[str, str], float]]]:
    """What the recording rules give for team ml, written by hand: 4 A100s of quota, `gpu_used`
    of them used, at cost weight 1.0; 8 H100s by DRA, none used."""

    def s(resource: str, value: float) -> tuple[dict[str, str], float]:
        return ({"team": "ml", "resource": resource}, value)

    out = {
        "team_vendor:gpu_quota_hard:devices": [s("nvidia.com/gpu", 4)],
        "team_vendor:gpu_quota_used:devices": [s("nvidia.com/gpu", gpu_used)],
        "team_vendor:gpu_quota_used:ratio": [s("nvidia.com/gpu", gpu_used / 4)],
        "team_vendor:gpu_cost_weighted_devices:sum": [s("nvidia.com/gpu", gpu_used)],
    }
    if dra:
        out["team_vendor:gpu_quota_hard:devices"].append(s(DRA_KEY, 8))
        out["team_vendor:gpu_quota_used:devices"].append(s(DRA_KEY, 0))
        out["team_vendor:gpu_quota_used:ratio"].append(s(DRA_KEY, 0))
        out["team_vendor:gpu_cost_weighted_devices:sum"].append(s(DRA_KEY, 0))
    return out


def exporter_pod(name: str, node: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "accelerator-exporters", "labels": labels},
        "spec": {"nodeName": node, "containers": [{"name": "c"}]},
        "status": {"phase": "Running", "podIP": "10.0.0.9"},
    }


NVIDIA_EXPORTER = {"accel-gitops.io/vendor": "nvidia", "app.kubernetes.io/name": "dcgm-exporter"}


def alert(name: str, *active: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "type": "alerting", "health": "ok", "error": "", "active": list(active)}


def run_of(**changes: Any) -> MonRun:
    """A run where everything is as it should be: the series match the quota (3 A100s used), the
    NVIDIA exporter's pod is a target on its node, no alert is called for or active."""
    base: dict[str, Any] = {
        "series": team_series(3),
        "targets": [
            {"pool": "podMonitor/x/nvidia/0", "vendor": "nvidia", "node": "gpu-1", "health": "down"}
        ],
        "rules": [
            alert("AcceleratorPodsPending"),
            alert("TeamAcceleratorQuotaNearlyUsed"),
            alert("AcceleratorAgentUnavailable"),
        ],
        "quotas": [quota({"requests.nvidia.com/gpu": "3", DRA_KEY: "0"})],
        "pods": [exporter_pod("dcgm-1", "gpu-1", NVIDIA_EXPORTER)],
        "daemonsets": [],
    }
    return MonRun(**{**base, **changes})


def errors(findings: list[Finding]) -> list[str]:
    return [f"{f.code} {f.message}" for f in findings if f.severity is Severity.ERROR]


def test_series_that_match_the_quota_are_rows_without_findings(values: Path) -> None:
    rows, findings = monitoring.judge(plan_of(values), run_of())
    assert errors(findings) == []
    series = [(r["vendor"], r["series"], r["want"], r["got"]) for r in rows if "series" in r]
    assert series == [
        ("nvidia-dra", "team_vendor:gpu_quota_hard:devices", 8, 8),
        ("nvidia-dra", "team_vendor:gpu_quota_used:devices", 0, 0),
        ("nvidia-dra", "team_vendor:gpu_cost_weighted_devices:sum", 0, 0),
        ("nvidia-dra", "team_vendor:gpu_quota_used:ratio", 0, 0),
        ("nvidia", "team_vendor:gpu_quota_hard:devices", 4, 4),
        ("nvidia", "team_vendor:gpu_quota_used:devices", 3, 3),
        ("nvidia", "team_vendor:gpu_cost_weighted_devices:sum", 3, 3),
        ("nvidia", "team_vendor:gpu_quota_used:ratio", 0.75, 0.75),
    ]
    assert [(r["alert"], r["want"], r["active"], r["ok"]) for r in rows if "alert" in r] == [
        ("AcceleratorAgentUnavailable", 0, 0, True),
        ("AcceleratorPodsPending", 0, 0, True),
        ("TeamAcceleratorQuotaNearlyUsed", 0, 0, True),
    ]


def test_a_dra_pool_the_rules_do_not_read_is_named_at_its_vendor_file(values: Path) -> None:
    """As with the matcher `requests.<class>.deviceclass...`: Prometheus has no series for the
    H100 pool, while its ResourceQuota holds 8."""
    _, findings = monitoring.judge(plan_of(values), run_of(series=team_series(3, dra=False)))
    sim023 = [f for f in findings if f.code == "SIM023"]
    assert [f.message for f in sim023] == [
        f"team_vendor:gpu_quota_hard:devices of team ml for {DRA_KEY} (nvidia-dra) has no series "
        "in Prometheus, while the team's ResourceQuota says 8: the dashboard's quota and cost "
        "panels and the quota alert miss it",
        f"team_vendor:gpu_quota_used:devices of team ml for {DRA_KEY} (nvidia-dra) has no series "
        "in Prometheus, while the team's ResourceQuota says 0: the dashboard's quota and cost "
        "panels and the quota alert miss it",
        f"team_vendor:gpu_cost_weighted_devices:sum of team ml for {DRA_KEY} (nvidia-dra) has no "
        "series in Prometheus, while the team's ResourceQuota says 0: the dashboard's quota and "
        "cost panels and the quota alert miss it",
        f"team_vendor:gpu_quota_used:ratio of team ml for {DRA_KEY} (nvidia-dra) has no series "
        "in Prometheus, while the team's ResourceQuota says 0: the dashboard's quota and cost "
        "panels and the quota alert miss it",
    ]
    vendor_file = values / "vendors" / "nvidia-dra.yaml"
    assert {(f.location.file, f.location.line) for f in sim023} == {
        ("values/vendors/nvidia-dra.yaml", line_of(vendor_file, "allocation: dra"))
    }


def test_a_value_that_differs_from_the_quota_is_a_finding(values: Path) -> None:
    _, findings = monitoring.judge(plan_of(values), run_of(series=team_series(2)))
    assert [m for m in errors(findings) if "quota_used:devices" in m] == [
        "SIM023 team_vendor:gpu_quota_used:devices of team ml for nvidia.com/gpu (nvidia) has 2 in "
        "Prometheus, while the team's ResourceQuota says 3: the dashboard's quota and cost panels "
        "and the quota alert miss it"
    ]


def test_an_exporter_whose_pods_no_target_finds_is_a_finding(values: Path) -> None:
    _, findings = monitoring.judge(plan_of(values), run_of(targets=[]))
    assert errors(findings) == [
        "SIM024 the PodMonitor of nvidia's exporter dcgm-exporter finds none of its 1 pod(s) "
        "(it selects {'accel-gitops.io/vendor': 'nvidia', 'app.kubernetes.io/name': "
        "'dcgm-exporter'} in accelerator-exporters): nothing of nvidia is scraped"
    ]


def test_an_exporter_without_pods_needs_no_target(values: Path) -> None:
    _, findings = monitoring.judge(plan_of(values), run_of(targets=[], pods=[]))
    assert errors(findings) == []


def test_a_target_on_another_vendors_node_is_a_finding(values: Path) -> None:
    stray = {"pool": "podMonitor/x/nvidia/0", "vendor": "nvidia", "node": "h100-1", "health": "up"}
    _, findings = monitoring.judge(plan_of(values), run_of(targets=[*run_of().targets, stray]))
    assert errors(findings) == [
        "SIM024 the PodMonitor of nvidia's exporter dcgm-exporter scrapes node(s) h100-1, which "
        "are not nvidia's: their series are labelled vendor=nvidia"
    ]


def pending_pod(name: str, resource: str) -> dict[str, Any]:
    requests = {"requests": {resource: "1"}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"containers": [{"name": "c", "resources": requests}]},
        "status": {"phase": "Pending"},
    }


def test_a_pod_pending_for_devices_must_have_its_alert_active(values: Path) -> None:
    pods = [
        *run_of().pods,
        pending_pod("waits", "nvidia.com/gpu"),
        pending_pod("cpu-only", "cpu"),  # asks for no accelerator: no alert
    ]
    _, silent = monitoring.judge(plan_of(values), run_of(pods=pods))
    assert errors(silent) == [
        "SIM025 alert AcceleratorPodsPending does not fire for namespace=ml, pod=waits: the "
        "cluster says it should"
    ]
    rules = [
        alert("AcceleratorPodsPending", {"namespace": "ml", "pod": "waits", "severity": "warning"}),
        *run_of().rules[1:],
    ]
    rows, fired = monitoring.judge(plan_of(values), run_of(pods=pods, rules=rules))
    assert errors(fired) == []
    assert ("AcceleratorPodsPending", 1, 1) in [
        (r["alert"], r["want"], r["active"]) for r in rows if "alert" in r
    ]


def test_an_alert_active_where_nothing_calls_for_it_is_a_finding(values: Path) -> None:
    rules = [
        *run_of().rules[:1],
        alert("TeamAcceleratorQuotaNearlyUsed", {"team": "ml", "resource": "nvidia.com/gpu"}),
        *run_of().rules[2:],
    ]
    _, findings = monitoring.judge(plan_of(values), run_of(rules=rules))
    assert errors(findings) == [
        "SIM025 alert TeamAcceleratorQuotaNearlyUsed fires for resource=nvidia.com/gpu, "
        "team=ml: nothing in the cluster calls for it"
    ]


def test_a_team_above_the_ratio_must_have_the_quota_alert_active(values: Path) -> None:
    """4 of 4 A100s used: 1.0 > 0.9 (the default ratio, docs/alerts.md)."""
    full = run_of(
        series=team_series(4), quotas=[quota({"requests.nvidia.com/gpu": "4", DRA_KEY: "0"})]
    )
    _, findings = monitoring.judge(plan_of(values), full)
    assert errors(findings) == [
        "SIM025 alert TeamAcceleratorQuotaNearlyUsed does not fire for resource=nvidia.com/gpu, "
        "team=ml: the cluster says it should"
    ]


def test_a_daemonset_short_of_a_ready_pod_must_have_its_alert_active(values: Path) -> None:
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "nvidia-device-plugin", "namespace": "accelerator-plugins"},
        "status": {"numberUnavailable": 1},
    }
    _, findings = monitoring.judge(plan_of(values), run_of(daemonsets=[ds]))
    assert errors(findings) == [
        "SIM025 alert AcceleratorAgentUnavailable does not fire for daemonset=nvidia-device-plugin"
        ", namespace=accelerator-plugins: the cluster says it should"
    ]


def test_a_rule_that_fails_to_evaluate_is_a_finding(values: Path) -> None:
    broken = {
        "name": "team_vendor:gpu_quota_used:ratio",
        "type": "recording",
        "health": "err",
        "error": "vector contains metrics with the same labelset after applying rule labels",
        "active": [],
    }
    _, findings = monitoring.judge(plan_of(values), run_of(rules=[*run_of().rules, broken]))
    assert errors(findings) == [
        "SIM025 rule team_vendor:gpu_quota_used:ratio fails to evaluate in Prometheus: vector "
        "contains metrics with the same labelset after applying rule labels"
    ]


def test_what_the_step_cannot_prove_here_is_said(values: Path) -> None:
    _, findings = monitoring.judge(plan_of(values), run_of())
    [said] = [f for f in findings if f.code == "SIM011"]
    assert said.severity is Severity.WARNING
    assert said.message == (
        "the vendors' exporters do not run here (they need the devices): the series read from "
        "them (nvidia, nvidia-dra: utilisation, memory, device counts and health) are proven by "
        "promtool's tests on series written as each exporter emits them, not by this simulation; "
        "each alert fired after its condition held 2s, not its rendered `for:` (5 to 15 minutes)"
    )


def test_without_a_named_prometheus_the_step_says_it_did_not_run(tmp_path: Path) -> None:
    plan = plan_of(small_tree(tmp_path))
    said = monitoring.not_run(plan, "no monitoring.prometheus")
    assert (said.code, said.severity) == ("SIM011", Severity.WARNING)
    assert said.message.startswith("the monitoring did not run (no monitoring.prometheus)")


def test_each_exporter_target_whose_scrape_fails_must_fire_exporter_down(values: Path) -> None:
    """The target on gpu-1 is down (its pod runs no exporter here); one on another node is up."""
    up = {"pool": "podMonitor/x/nvidia/0", "vendor": "nvidia", "node": "gpu-2", "health": "up"}
    targets = [*run_of().targets, up]
    silent = run_of(targets=targets, rules=[*run_of().rules, alert("AcceleratorExporterDown")])
    _, findings = monitoring.judge(plan_of(values), silent)
    assert errors(findings) == [
        "SIM024 the PodMonitor of nvidia's exporter dcgm-exporter scrapes node(s) gpu-2, which are "
        "not nvidia's: their series are labelled vendor=nvidia",
        "SIM025 alert AcceleratorExporterDown does not fire for node=gpu-1, vendor=nvidia: the "
        "cluster says it should",
    ]
    firing = alert("AcceleratorExporterDown", {"vendor": "nvidia", "node": "gpu-1", "job": "j"})
    rows, fired = monitoring.judge(plan_of(values), run_of(rules=[*run_of().rules, firing]))
    assert errors(fired) == []
    assert ("AcceleratorExporterDown", 1, 1) in [
        (r["alert"], r["want"], r["active"]) for r in rows if "alert" in r
    ]
