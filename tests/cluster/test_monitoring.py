"""simulate's monitoring step on the real control plane with the real kube-state-metrics v2.20.0,
Prometheus Operator v0.85.0 and Prometheus (simulate/monitoring.py): every quota series the
dashboard and alerts read has the value the cluster's ResourceQuotas hold; the pending-pods and
quota alerts become active in their scenario; a PodMonitor that selects no exporter pod is a
finding. The judge's verdicts line by line are tests/simulate/test_monitoring.py's."""

from __future__ import annotations

import contextlib
import copy
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from generator.builders.monitoring import rulefiles, scrape, sources
from generator.builders.monitoring.sources import Exporter
from generator.controlplane.launcher import ControlPlane
from generator.findings import Finding, Severity
from generator.simulate.run import SimulationResult, simulate
from tests.fixtures import SIM_FLEET, build_unit, render_into
from tests.simulate.cases import TEAM, small_tree

pytestmark = pytest.mark.xdist_group("control-plane")

# The site's Prometheus as kube-prometheus-stack makes it for a release named "kps".
PROMETHEUS = {
    "namespace": "monitoring",
    "podMonitorSelector": {"matchLabels": {"release": "kps"}},
    "podMonitorNamespaceSelector": {},
    "ruleSelector": {"matchLabels": {"release": "kps"}},
    "ruleNamespaceSelector": {},
}
FLEET = {
    **SIM_FLEET,
    "monitoring": {"prometheusSelectorLabels": {"release": "kps"}, "prometheus": PROMETHEUS},
}


def sim(values: Path, plane: ControlPlane, env: str | None = None) -> SimulationResult:
    return simulate(
        values, env, lambda _minor: contextlib.nullcontext(plane), argocd=False, watch_metrics=True
    )


def errors(findings: list[Finding]) -> list[str]:
    return [f"{f.code} {f.message}" for f in findings if f.severity is Severity.ERROR]


def series_rows(result: SimulationResult) -> dict[str, list[tuple[str, str, str, Any, Any]]]:
    return {
        e.env: [
            (m["team"], m["vendor"], m["series"], m["want"], m["got"])
            for m in e.metrics
            if "series" in m
        ]
        for e in result.envs
    }


def alert_rows(result: SimulationResult) -> dict[str, list[tuple[str, int, int]]]:
    return {
        e.env: [(m["alert"], m["want"], m["active"]) for m in e.metrics if "alert" in m]
        for e in result.envs
    }


def job(devices: int) -> dict[str, Any]:
    return {**copy.deepcopy(TEAM["jobs"]["train"]), "devices": devices}


def test_a_full_quota_and_a_pod_short_of_devices_make_their_alerts_active(
    tmp_path: Path, cluster: ControlPlane
) -> None:
    """Team ml holds all 8 GPUs of two 4-GPU nodes as quota and runs jobs of 3, 3 and 2 GPUs:
    the quota admits all three (8 of 8 used), the 3-GPU pods take a node each, and the 2-GPU pod
    finds 1 free GPU on each node: it stays Pending for want of devices."""
    pool = {"name": "a100", "model": "A100", "devicesPerNode": 4, "nodes": ["gpu-1", "gpu-2"]}
    team = {**TEAM, "quota": {"nvidia": 8}, "jobs": {"a": job(3), "b": job(3), "c": job(2)}}
    values = small_tree(tmp_path, FLEET, {"nvidia": {"pools": [pool]}}, {"ml": team})
    result = sim(values, cluster)
    assert series_rows(result) == {
        "dev": [
            ("ml", "nvidia", "team_vendor:gpu_quota_hard:devices", 8, 8),
            ("ml", "nvidia", "team_vendor:gpu_quota_used:devices", 8, 8),
            ("ml", "nvidia", "team_vendor:gpu_cost_weighted_devices:sum", 8, 8),
            ("ml", "nvidia", "team_vendor:gpu_quota_used:ratio", 1, 1),
        ]
    }
    assert alert_rows(result) == {
        "dev": [
            ("AcceleratorAgentUnavailable", 0, 0),
            # The exporter's pods on gpu-1 and gpu-2 are found and answer no scrape here.
            ("AcceleratorExporterDown", 2, 2),
            ("AcceleratorPodsPending", 1, 1),
            ("TeamAcceleratorQuotaNearlyUsed", 1, 1),
        ]
    }
    assert [m for m in errors(result.findings) if m.startswith("SIM02")] == []


def test_rules_spread_over_several_prometheusrules_all_load_and_have_data(
    tmp_path: Path, cluster: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a budget small enough (rulefiles.py) that every team's rules and every pool's
    node alert take an object of their own, the operator loads all of them into Prometheus and
    every quota series has its value: ml holds its 4 GPUs (its quota series, joined in the main
    object with the teams' data in theirs, give a ratio of 1 and the quota alert active), cv
    holds none of its 2."""
    monkeypatch.setattr(rulefiles, "BUDGET", 300)
    pools = [
        {"name": "p1", "model": "A100", "devicesPerNode": 4, "nodes": ["gpu-1"]},
        {"name": "p2", "model": "A100", "devicesPerNode": 4, "nodes": ["gpu-2"]},
    ]
    teams = {
        "ml": TEAM,
        "cv": {**TEAM, "owners": ["cv@example.com"], "quota": {"nvidia": 2}, "jobs": {}},
    }
    values = small_tree(tmp_path, FLEET, {"nvidia": {"pools": pools}}, teams)
    out = render_into(values, tmp_path / "out")
    names = sorted(
        o["metadata"]["name"]
        for o in build_unit(out, "dev", "monitoring")
        if o["kind"] == "PrometheusRule"
    )
    # Each team's rules (267 of estimate: its namespace and its weight) fit the budget, the two
    # together do not: crc32 % 2 and % 4 put cv and ml together, % 8 parts them (cv 2, ml 6).
    # Each pool's alert is over it alone: % 4 puts nvidia/p1 in 2, p2 in 0.
    assert names == [
        "accelerators-alerts",
        "accelerators-alerts-pools-1-of-4",
        "accelerators-alerts-pools-3-of-4",
        "accelerators-unified",
        "accelerators-unified-teams-3-of-8",
        "accelerators-unified-teams-7-of-8",
    ]
    result = sim(values, cluster)
    assert [m for m in errors(result.findings) if m.startswith("SIM02")] == []
    assert series_rows(result) == {
        "dev": [
            ("cv", "nvidia", "team_vendor:gpu_quota_hard:devices", 2, 2),
            ("cv", "nvidia", "team_vendor:gpu_quota_used:devices", 0, 0),
            ("cv", "nvidia", "team_vendor:gpu_cost_weighted_devices:sum", 0, 0),
            ("cv", "nvidia", "team_vendor:gpu_quota_used:ratio", 0, 0),
            ("ml", "nvidia", "team_vendor:gpu_quota_hard:devices", 4, 4),
            ("ml", "nvidia", "team_vendor:gpu_quota_used:devices", 4, 4),
            ("ml", "nvidia", "team_vendor:gpu_cost_weighted_devices:sum", 4, 4),
            ("ml", "nvidia", "team_vendor:gpu_quota_used:ratio", 1, 1),
        ]
    }
    assert ("TeamAcceleratorQuotaNearlyUsed", 1, 1) in alert_rows(result)["dev"]


def test_a_podmonitor_that_selects_no_exporter_pod_is_a_finding(
    tmp_path: Path, cluster: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rendered PodMonitor selects other labels than the exporter's pods carry (as a
    PodMonitor for the GPU Operator's exporter did, whose pods carry only
    `app: nvidia-dcgm-exporter`): the exporter DaemonSet runs on the node, and Prometheus finds
    none of its pods."""
    real = scrape.pod_monitor_spec

    def astray(exp: Exporter) -> dict[str, Any]:
        return {**real(exp), "selector": {"matchLabels": {"app": "nvidia-dcgm-exporter"}}}

    monkeypatch.setattr(scrape, "pod_monitor_spec", astray)
    values = small_tree(tmp_path, FLEET)
    result = sim(values, cluster)
    [sim024] = [f for f in result.findings if f.code == "SIM024"]
    assert sim024.message == (
        "the PodMonitor of nvidia's exporter dcgm-exporter finds none of its 1 pod(s) (it selects "
        "{'accel-gitops.io/vendor': 'nvidia', 'app.kubernetes.io/name': 'dcgm-exporter'} in "
        "accelerator-exporters): nothing of nvidia is scraped"
    )
    assert (sim024.location.file, sim024.location.line) == (
        "values/vendors/nvidia.yaml",
        1,
    )


def panel(result: SimulationResult, title: str) -> dict[str, list[str]]:
    """The values each environment's dashboard panel `title` showed, query by query."""
    return {e.env: [m["values"] for m in e.metrics if m.get("panel") == title] for e in result.envs}


def test_the_example_fleets_dashboard_and_alerts_have_data_in_every_cluster(
    values_dir: Path, cluster: ControlPlane
) -> None:
    """Every quota series of every team and vendor equals its ResourceQuota, including the H100
    pool allocated by DRA (ml-team's h100-pretrain-job holds its 8); the quota panel and the cost
    panel show them; the quota alert is active where a team uses its whole quota, the pending
    alert for staging's two jobs that wait. The exporters' panels have no data here (SIM011)."""
    result = sim(values_dir, cluster)
    assert [m for m in errors(result.findings) if m.startswith("SIM02")] == []
    used = panel(result, "Quota used / hard per team and vendor")
    # In the order of the series' labels (team, then vendor).
    assert used["prod/main"] == [
        "inference / amd used=0, inference / ascend used=2, inference / nvidia used=2, "
        "inference / nvidia-dra used=0, inference / nvidia-shared used=4, ml-team / amd used=0, "
        "ml-team / ascend used=8, ml-team / nvidia used=6, ml-team / nvidia-dra used=8, "
        "ml-team / nvidia-shared used=0",
        "inference / amd hard=0, inference / ascend hard=4, inference / nvidia hard=4, "
        "inference / nvidia-dra hard=0, inference / nvidia-shared hard=4, ml-team / amd hard=0, "
        "ml-team / ascend hard=16, ml-team / nvidia hard=8, ml-team / nvidia-dra hard=8, "
        "ml-team / nvidia-shared hard=0",
    ]
    assert used["prod/domestic"] == [
        "inference / cambricon used=0, inference / hygon used=2, ml-team / cambricon used=2, "
        "ml-team / hygon used=0",
        "inference / cambricon hard=0, inference / hygon hard=8, ml-team / cambricon hard=2, "
        "ml-team / hygon hard=0",
    ]
    # Weighted devices held x 5 minutes: ml-team 6 x 1.0 + 8 x 1.6 + 8 x 0.6 = 23.6 in main.
    assert panel(result, "Cost per team (weighted device-hours, dashboard range)") == {
        "prod/domestic": ["inference=0.0833333, ml-team=0.1"],
        "prod/main": ["inference=0.35, ml-team=1.96667"],
        "staging": ["inference=0.433333, ml-team=1.9"],
    }
    assert panel(result, "Devices by brand") == {e: [""] for e in used}
    # Each exporter pod is a target whose scrape fails (its container runs nothing here), one per
    # pool node: domestic's Hygon and Cambricon nodes (Hygon's exporter on the host's network),
    # main's seven NVIDIA, AMD and Ascend nodes, staging's nine.
    assert alert_rows(result) == {
        "prod/domestic": [
            ("AcceleratorAgentUnavailable", 0, 0),
            ("AcceleratorExporterDown", 2, 2),
            ("AcceleratorPodsPending", 0, 0),
            ("TeamAcceleratorQuotaNearlyUsed", 1, 1),
        ],
        "prod/main": [
            ("AcceleratorAgentUnavailable", 0, 0),
            ("AcceleratorExporterDown", 7, 7),
            ("AcceleratorPodsPending", 0, 0),
            # with inference's nvidia-shared quota in use, 4 of 4 (embedding's 3 shares, chat's 1)
            ("TeamAcceleratorQuotaNearlyUsed", 2, 2),
        ],
        "staging": [
            ("AcceleratorAgentUnavailable", 0, 0),
            ("AcceleratorExporterDown", 9, 9),
            ("AcceleratorPodsPending", 2, 2),
            ("TeamAcceleratorQuotaNearlyUsed", 4, 4),
        ],
    }


def test_the_dra_matcher_bug_is_named_at_the_dra_vendor_file(
    values_dir: Path, cluster: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rules built as they were: `requests.` before every vendor's resource, a key no
    ResourceQuota has for a DeviceClass's devices."""
    real = sources.exporter

    def as_before(*args: Any, **kwargs: Any) -> Exporter | None:
        exp = real(*args, **kwargs)
        return None if exp is None else replace(exp, quota_key=f"requests.{exp.resource}")

    monkeypatch.setattr(sources, "exporter", as_before)
    result = sim(values_dir, cluster, "prod")
    sim023 = {
        (f.location.file, f.message.split(" of team")[0])
        for f in result.findings
        if f.code == "SIM023" and "ml-team" in f.message
    }
    assert sim023 == {
        ("values/vendors/nvidia-dra.yaml", "team_vendor:gpu_quota_hard:devices"),
        ("values/vendors/nvidia-dra.yaml", "team_vendor:gpu_quota_used:devices"),
        ("values/vendors/nvidia-dra.yaml", "team_vendor:gpu_quota_used:ratio"),
        ("values/vendors/nvidia-dra.yaml", "team_vendor:gpu_cost_weighted_devices:sum"),
    }
