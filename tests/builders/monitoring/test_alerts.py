"""Alerting rules (generator/builders/monitoring/alerts.py): every alert fires on synthetic series
of a fault and stays silent on healthy ones, run by promtool's own rule unit tests on the rules
as rendered for a fleet of all five vendors; and what values change in them. Series are written
here by hand, as the exporters and kube-state-metrics spell them (docs/alerts.md's sources)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from generator.builders.monitoring import alerts
from generator.values import loader as values
from tests.fixtures import (
    AMD_MI250X,
    ASCEND_910B,
    CAMBRICON_MLU370,
    DRA_NVIDIA,
    FLEET,
    HYGON_Z100L,
    MIG_NVIDIA,
    MPS_NVIDIA,
    NVIDIA,
    PROD_FLEET,
    SHARED_NVIDIA,
    TWO_CLUSTERS,
    build_unit,
    promtool_rule_tests,
    render_into,
    tree,
)

TEAM = "quota: {nvidia: 4}\n"


def alert_groups(tmp_path: Path, fleet_extra: str = "") -> list[dict[str, Any]]:
    files = {
        "fleet.yaml": FLEET + fleet_extra,
        "vendors/amd.yaml": AMD_MI250X,
        "vendors/ascend.yaml": ASCEND_910B,
        "vendors/cambricon.yaml": CAMBRICON_MLU370,
        "vendors/hygon.yaml": HYGON_Z100L,
        "teams/ml.yaml": TEAM,
    }
    out = render_into(tree(tmp_path, files), tmp_path / "out")
    (rule,) = [
        o
        for o in build_unit(out, "prod", "monitoring")
        if o["kind"] == "PrometheusRule" and o["metadata"]["name"] == "accelerators-alerts"
    ]
    groups: list[dict[str, Any]] = rule["spec"]["groups"]
    return groups


# Rendered for each test, not once per module: mutation testing (docs/testing.md) credits the
# code a fixture runs to the first test that asked for it, so a module-wide render left the
# annotations that only the promtool tests compare unchecked by the tests mutmut ran.
@pytest.fixture
def groups(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return alert_groups(tmp_path_factory.mktemp("alerts"))


def s(name: str, values: str, **labels: str) -> dict[str, str]:
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return {"series": f"{name}{{{inner}}}", "values": values}


promtool = promtool_rule_tests


def case(
    series: list[dict[str, str]],
    at: str,
    alert: str,
    fired: list[dict[str, str]],
    notes: dict[str, str] | None = None,
) -> Any:
    return {
        "interval": "1m",
        "input_series": series,
        "alert_rule_test": [
            {
                "eval_time": at,
                "alertname": alert,
                "exp_alerts": [{"exp_labels": f, "exp_annotations": notes or {}} for f in fired],
            }
        ],
    }


def notes(alert: str, summary: str, description: str) -> dict[str, str]:
    return {
        "summary": summary,
        "description": description,
        "runbook": f"accel-gitops docs/alerts.md#{alert.lower()}",
    }


# The words each firing alert says, on the fault series of CASES.
ANNOTATIONS = {
    "AcceleratorUnhealthy": (
        "ascend: the NPU reports itself unhealthy on node gpu-01",
        "npu_chip_info_health_status of the ascend exporter on node gpu-01 says the NPU reports "
        "itself unhealthy (value 0).",
    ),
    "AcceleratorErrorsRising": (
        "amd: uncorrectable ECC errors on node gpu-01",
        "gpu_ecc_uncorrect_total of the amd exporter on node gpu-01 says uncorrectable ECC "
        "errors (value 2).",
    ),
    "AcceleratorDeviceFault": (
        "nvidia: an XID error (the value is the last XID) on node gpu-01",
        "DCGM_FI_DEV_XID_ERRORS of the nvidia exporter on node gpu-01 says an XID error (the "
        "value is the last XID) (value 79).",
    ),
    "AcceleratorExporterDown": (
        "nvidia exporter on node gpu-01 cannot be scraped",
        "Prometheus has failed to scrape the nvidia exporter (dcgm-exporter) on node gpu-01: its "
        "devices' metrics and health are not seen.",
    ),
    "AcceleratorAgentUnavailable": (
        "nvidia device plugin is not running on 1 of its nodes",
        "DaemonSet accelerator-plugins/nvidia-device-plugin (nvidia device plugin) has 1 node(s) "
        "without a ready pod: pods there cannot be given new devices.",
    ),
    "AcceleratorPodsPending": (
        "pod ml/train-0 has waited for accelerators for 15 minutes",
        "The pod asks for accelerator devices and has been Pending for 15 minutes: its pool is "
        "full, its queue has not admitted it, or no node matches it.",
    ),
    "TeamAcceleratorQuotaNearlyUsed": (
        "team ml uses 95% of its nvidia.com/gpu quota",
        "Team ml has used more than 90% of its nvidia.com/gpu quota for 15 minutes: its next "
        "job waits.",
    ),
    "AcceleratorNodeDevicesMissing": (
        "node n1 advertises 3 of its 4 nvidia devices",
        "Pool nvidia/a100 declares 4 devices per node; node n1 has 3 allocatable: a device "
        "failed, or the device plugin lost it.",
    ),
}


NODE = {"node": "gpu-01"}
# alert -> (fault series, healthy series, when, the firing alert's labels)
CASES: dict[str, tuple[list[dict[str, str]], list[dict[str, str]], str, dict[str, str]]] = {
    # Ascend reports its chip unhealthy (1 healthy, 0 not) for more than 5 minutes.
    "AcceleratorUnhealthy": (
        [s("npu_chip_info_health_status", "1 0x10", vendor="ascend", id="3", **NODE)],
        [s("npu_chip_info_health_status", "1x10", vendor="ascend", id="3", **NODE)],
        "10m",
        {
            "vendor": "ascend",
            "id": "3",
            **NODE,
            "severity": "critical",
            "signal": "npu_chip_info_health_status",
        },
    ),
    # AMD's running total of uncorrectable ECC errors rises.
    "AcceleratorErrorsRising": (
        [s("gpu_ecc_uncorrect_total", "0 0 0 2 2 2", vendor="amd", gpu_id="1", **NODE)],
        [s("gpu_ecc_uncorrect_total", "5x5", vendor="amd", gpu_id="1", **NODE)],
        "5m",
        {
            "vendor": "amd",
            "gpu_id": "1",
            **NODE,
            "severity": "critical",
            "signal": "gpu_ecc_uncorrect_total",
        },
    ),
    # A new XID on an NVIDIA GPU (the gauge holds the last XID).
    "AcceleratorDeviceFault": (
        [s("DCGM_FI_DEV_XID_ERRORS", "0 0 0 79 79 79", vendor="nvidia", gpu="0", **NODE)],
        [s("DCGM_FI_DEV_XID_ERRORS", "0x5", vendor="nvidia", gpu="0", **NODE)],
        "5m",
        {
            "vendor": "nvidia",
            "gpu": "0",
            **NODE,
            "severity": "critical",
            "signal": "DCGM_FI_DEV_XID_ERRORS",
        },
    ),
    # The scrape of an exporter fails for 10 minutes.
    "AcceleratorExporterDown": (
        [s("up", "1 0x15", vendor="nvidia", job="accelerator-monitoring/dcgm-exporter", **NODE)],
        [s("up", "1x15", vendor="nvidia", job="accelerator-monitoring/dcgm-exporter", **NODE)],
        "15m",
        {
            "vendor": "nvidia",
            "job": "accelerator-monitoring/dcgm-exporter",
            **NODE,
            "severity": "critical",
        },
    ),
    # NVIDIA's device plugin DaemonSet has a node without a ready pod.
    "AcceleratorAgentUnavailable": (
        [
            s(
                "kube_daemonset_status_number_unavailable",
                "0 1x15",
                namespace="accelerator-plugins",
                daemonset="nvidia-device-plugin",
            )
        ],
        [
            s(
                "kube_daemonset_status_number_unavailable",
                "0x15",
                namespace="accelerator-plugins",
                daemonset="nvidia-device-plugin",
            ),
            # someone else's DaemonSet is none of these alerts' business
            s("kube_daemonset_status_number_unavailable", "1x15", namespace="x", daemonset="y"),
        ],
        "15m",
        {
            "namespace": "accelerator-plugins",
            "daemonset": "nvidia-device-plugin",
            "vendor": "nvidia",
            "agent": "device-plugin",
            "severity": "critical",
        },
    ),
    # A pod asking for an NVIDIA GPU has been Pending for 15 minutes.
    "AcceleratorPodsPending": (
        [
            s(
                "kube_pod_container_resource_requests",
                "1x30",
                namespace="ml",
                pod="train-0",
                container="c",
                resource="nvidia_com_gpu",
                unit="integer",
            ),
            s("kube_pod_status_phase", "1x30", namespace="ml", pod="train-0", phase="Pending"),
        ],
        [
            # Pending, but asks for no accelerator
            s(
                "kube_pod_container_resource_requests",
                "1x30",
                namespace="ml",
                pod="web-0",
                container="c",
                resource="cpu",
                unit="core",
            ),
            s("kube_pod_status_phase", "1x30", namespace="ml", pod="web-0", phase="Pending"),
            # asks for one, and runs
            s(
                "kube_pod_container_resource_requests",
                "1x30",
                namespace="ml",
                pod="train-1",
                container="c",
                resource="nvidia_com_gpu",
                unit="integer",
            ),
            s("kube_pod_status_phase", "0x30", namespace="ml", pod="train-1", phase="Pending"),
        ],
        "20m",
        {"namespace": "ml", "pod": "train-0", "severity": "warning"},
    ),
    # Team ml has used 95 % of its NVIDIA quota for 15 minutes.
    "TeamAcceleratorQuotaNearlyUsed": (
        [s("team_vendor:gpu_quota_used:ratio", "0.95x20", team="ml", resource="nvidia.com/gpu")],
        [s("team_vendor:gpu_quota_used:ratio", "0.9x20", team="ml", resource="nvidia.com/gpu")],
        "20m",
        {"team": "ml", "resource": "nvidia.com/gpu", "severity": "warning"},
    ),
    # A node of the NVIDIA pool (4 a node) advertises 3.
    "AcceleratorNodeDevicesMissing": (
        [
            s(
                "kube_node_status_allocatable",
                "3x15",
                node="n1",
                resource="nvidia_com_gpu",
                unit="integer",
            )
        ],
        [
            s(
                "kube_node_status_allocatable",
                "4x15",
                node="n1",
                resource="nvidia_com_gpu",
                unit="integer",
            ),
            # a node no pool names
            s(
                "kube_node_status_allocatable",
                "2x15",
                node="other",
                resource="nvidia_com_gpu",
                unit="integer",
            ),
        ],
        "15m",
        {
            "node": "n1",
            "resource": "nvidia_com_gpu",
            "unit": "integer",
            "vendor": "nvidia",
            "pool": "a100",
            "severity": "warning",
        },
    ),
}


def test_every_alert_has_a_case(groups: list[dict[str, Any]]) -> None:
    names = {r["alert"] for g in groups for r in g["rules"]}
    assert names == set(CASES)


@pytest.mark.parametrize("alert", sorted(CASES))
def test_each_alert_fires_on_a_fault_and_stays_silent_on_healthy_series(
    alert: str, groups: list[dict[str, Any]], tmp_path: Path
) -> None:
    fault, healthy, at, labels = CASES[alert]
    said = notes(alert, *ANNOTATIONS[alert])
    promtool(
        tmp_path, groups, [case(fault, at, alert, [labels], said), case(healthy, at, alert, [])]
    )


def test_a_condition_shorter_than_its_hold_does_not_fire(
    groups: list[dict[str, Any]], tmp_path: Path
) -> None:
    # unhealthy for 3 minutes, then healthy again: below the 5 minutes it must hold
    flap = [s("npu_chip_info_health_status", "1 0 0 0 1x10", vendor="ascend", id="3", **NODE)]
    # an XID seen long ago is not a new fault: silent once the window has passed
    old_xid = [s("DCGM_FI_DEV_XID_ERRORS", "0 79x30", vendor="nvidia", gpu="0", **NODE)]
    promtool(
        tmp_path,
        groups,
        [
            case(flap, "3m", "AcceleratorUnhealthy", []),  # unhealthy now, not yet for 5m
            case(flap, "10m", "AcceleratorUnhealthy", []),
            case(old_xid, "25m", "AcceleratorDeviceFault", []),
        ],
    )


def test_every_vendors_health_series_has_an_alert(groups: list[dict[str, Any]]) -> None:
    by_vendor: dict[str, list[str]] = {}
    for rule in groups[0]["rules"]:
        by_vendor.setdefault(rule["labels"]["vendor"], []).append(rule["labels"]["signal"])
    assert by_vendor == {
        "amd": ["gpu_health", "gpu_ecc_uncorrect_total"],
        "ascend": [
            "npu_chip_info_health_status",
            "npu_chip_info_network_status",
            "npu_chip_info_hbm_ecc_double_bit_error_cnt",
        ],
        "cambricon": ["mlu_health", "mlu_ecc_uncorrected_error_total"],
        "hygon": ["dcu_ue_count"],
        "nvidia": [
            "DCGM_FI_DEV_XID_ERRORS",
            "DCGM_FI_DEV_ROW_REMAP_FAILURE",
            "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        ],
    }


def test_values_set_thresholds_severities_and_routing_labels(tmp_path: Path) -> None:
    extra = (
        "monitoring:\n  alerts:\n    pendingMinutes: 30\n    quotaUsedRatio: 0.5\n"
        "    severity: {pending: critical}\n    labels: {team: platform}\n"
    )
    rules = {r["alert"]: r for g in alert_groups(tmp_path, extra) for r in g["rules"]}
    pending = rules["AcceleratorPodsPending"]
    assert (pending["for"], pending["labels"]) == (
        "30m",
        {"team": "platform", "severity": "critical"},
    )
    assert rules["TeamAcceleratorQuotaNearlyUsed"]["expr"].endswith(" > 0.5")
    assert all(r["labels"]["team"] == "platform" for r in rules.values())
    # off: no alerting rules at all
    off = alert_groups_or_none(tmp_path / "off", "monitoring:\n  alerts: {enabled: false}\n")
    assert off is None


def alert_groups_or_none(tmp_path: Path, extra: str) -> list[dict[str, Any]] | None:
    try:
        return alert_groups(tmp_path, extra)
    except ValueError:
        return None


def test_a_resource_name_as_kube_state_metrics_spells_it() -> None:
    assert alerts.ksm_resource("nvidia.com/gpu") == "nvidia_com_gpu"
    assert alerts.ksm_resource("huawei.com/Ascend910") == "huawei_com_Ascend910"


def test_each_alert_waits_as_long_as_its_class_says(groups: list[dict[str, Any]]) -> None:
    """A health flag, an agent, a quota or a capacity alert must hold a while before it pages;
    an error count's rise or a new fault code is news at once (no `for`)."""
    holds = {(r["alert"], r.get("for")) for g in groups for r in g["rules"]}
    assert holds == {
        ("AcceleratorUnhealthy", "5m"),
        ("AcceleratorErrorsRising", None),
        ("AcceleratorDeviceFault", None),
        ("AcceleratorExporterDown", "10m"),
        ("AcceleratorAgentUnavailable", "10m"),
        ("AcceleratorPodsPending", "15m"),
        ("TeamAcceleratorQuotaNearlyUsed", "15m"),
        ("AcceleratorNodeDevicesMissing", "10m"),
    }


def agents(groups: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (r["labels"]["vendor"], r["labels"]["agent"]): r
        for g in groups
        for r in g["rules"]
        if r["alert"] == "AcceleratorAgentUnavailable"
    }


def test_an_exporters_daemonset_short_of_pods_says_its_devices_are_not_watched(
    groups: list[dict[str, Any]],
) -> None:
    found = agents(groups)
    vendors = ["amd", "ascend", "cambricon", "hygon", "nvidia"]
    assert sorted(found) == sorted((v, a) for v in vendors for a in ("device-plugin", "exporter"))
    exporter = found[("nvidia", "exporter")]
    assert exporter["expr"] == (
        'kube_daemonset_status_number_unavailable{namespace="accelerator-exporters",'
        'daemonset="dcgm-exporter"} > 0'
    )
    assert exporter["annotations"]["summary"] == (
        "nvidia exporter is not running on {{ $value }} of its nodes"
    )
    assert exporter["annotations"]["description"] == (
        "DaemonSet accelerator-exporters/dcgm-exporter (nvidia exporter) has {{ $value }} node(s) "
        "without a ready pod: those nodes' devices are not watched."
    )


def test_an_exporter_installed_another_way_has_no_daemonset_alert_but_is_scraped(
    tmp_path: Path,
) -> None:
    """exporter.render: false: the fleet renders no DaemonSet for it, so none is watched; its
    scrape is."""
    site_exporter = (
        "exporter:\n  render: false\n  namespace: gpu-operator\n"
        "  podLabels: {app: nvidia-dcgm-exporter}\n"
    )
    files = {
        "fleet.yaml": FLEET,
        "vendors/nvidia.yaml": "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, "
        "nodes: [n1, n2]}\n" + site_exporter,
        "teams/ml.yaml": TEAM,
    }
    out = render_into(tree(tmp_path, files, defaults=False), tmp_path / "out")
    (rule,) = [
        o
        for o in build_unit(out, "prod", "monitoring")
        if o["kind"] == "PrometheusRule" and o["metadata"]["name"] == "accelerators-alerts"
    ]
    groups = rule["spec"]["groups"]
    assert sorted(agents(groups)) == [("nvidia", "device-plugin")]
    assert "AcceleratorExporterDown" in {r["alert"] for g in groups for r in g["rules"]}


def test_a_pool_without_nodes_has_no_capacity_alert_and_the_pools_after_it_do(
    tmp_path: Path,
) -> None:
    pools = (
        "pools:\n  - {name: a100, model: A100, devicesPerNode: 4}\n"
        "  - {name: h100, model: H100, devicesPerNode: 8, nodes: [h1]}\n"
    )
    files = {"fleet.yaml": FLEET, "vendors/nvidia.yaml": pools, "teams/ml.yaml": TEAM}
    out = render_into(tree(tmp_path, files, defaults=False), tmp_path / "out")
    (rule,) = [
        o
        for o in build_unit(out, "prod", "monitoring")
        if o["kind"] == "PrometheusRule" and o["metadata"]["name"] == "accelerators-alerts"
    ]
    missing = [
        r["labels"]["pool"]
        for g in rule["spec"]["groups"]
        for r in g["rules"]
        if r["alert"] == "AcceleratorNodeDevicesMissing"
    ]
    assert missing == ["h100"]


def test_no_two_rules_share_a_name_and_labels(groups: list[dict[str, Any]]) -> None:
    """promtool's check refuses rules of one name whose labels are the same ("duplicate
    rule(s) found"): each vendor's and each pool's rule carries its own labels."""
    seen = [(r["alert"], tuple(sorted(r["labels"].items()))) for g in groups for r in g["rules"]]
    assert len(seen) == len(set(seen))


def test_a_shared_pools_missing_devices_alert_counts_its_shares(tmp_path: Path) -> None:
    """n3's 2 GPUs shared 4 ways advertise 8 nvidia.com/gpu.shared: fewer is a lost device
    (kube-state-metrics spells the resource nvidia_com_gpu_shared). nvidia's pool is unchanged."""
    shared = SHARED_NVIDIA.replace("devicesPerNode: 1", "devicesPerNode: 2")
    view = values.load(
        tree(tmp_path, {"vendors/nvidia.yaml": NVIDIA, "vendors/nvidia-shared.yaml": shared})
    ).envs["prod"]
    rules = alerts.fleet_rules(view, [], alerts.alert_settings(view))
    missing = {
        r["labels"]["vendor"]: (
            r["expr"],
            r["annotations"]["summary"],
            r["annotations"]["description"],
        )
        for r in rules
        if r["alert"] == "AcceleratorNodeDevicesMissing"
    }
    assert missing == {
        "nvidia": (
            'kube_node_status_allocatable{resource="nvidia_com_gpu",node=~"n1|n2"} < 4',
            "node {{ $labels.node }} advertises {{ $value }} of its 4 nvidia devices",
            "Pool nvidia/a100 declares 4 devices per node; node {{ $labels.node }} has "
            "{{ $value }} allocatable: a device failed, or the device plugin lost it.",
        ),
        "nvidia-shared": (
            'kube_node_status_allocatable{resource="nvidia_com_gpu_shared",node=~"n3"} < 8',
            "node {{ $labels.node }} advertises {{ $value }} of its 8 nvidia-shared shares",
            "Pool nvidia-shared/a100-shared declares 2 devices per node, each shared 4 ways; "
            "node {{ $labels.node }} has {{ $value }} allocatable: a device failed, or the "
            "device plugin lost it.",
        ),
    }


def test_a_mig_pools_missing_devices_alert_counts_its_instances(tmp_path: Path) -> None:
    """n5's 2 GPUs, each two 3g.40gb instances, advertise 4 nvidia.com/mig-3g.40gb; fewer may
    also be a layout the MIG manager has not applied."""
    view = values.load(tree(tmp_path, {"vendors/nvidia-mig.yaml": MIG_NVIDIA})).envs["prod"]
    rules = alerts.fleet_rules(view, [], alerts.alert_settings(view))
    (missing,) = [
        r
        for r in rules
        if r["alert"] == "AcceleratorNodeDevicesMissing" and r["labels"]["vendor"] == "nvidia-mig"
    ]
    assert (
        missing["expr"],
        missing["annotations"]["summary"],
        missing["annotations"]["description"],
    ) == (
        'kube_node_status_allocatable{resource="nvidia_com_mig_3g_40gb",node=~"n5"} < 4',
        "node {{ $labels.node }} advertises {{ $value }} of its 4 nvidia-mig instances",
        "Pool nvidia-mig/a100-mig declares 2 devices per node, each partitioned into 2 MIG "
        "3g.40gb instances; node {{ $labels.node }} has {{ $value }} allocatable: a device "
        "failed, the device plugin lost it, or the MIG manager has not applied the layout "
        "all-3g.40gb (nvidia.com/mig.config).",
    )


def test_a_dra_vendor_has_no_extended_resource_alerts(tmp_path: Path) -> None:
    """Its nodes advertise no extended resource and its pods request none: the node and pending
    alerts, which read kube-state-metrics' extended resources, leave it out (docs/allocation.md)."""
    view = values.load(
        tree(tmp_path, {"vendors/nvidia.yaml": NVIDIA, "vendors/nvidia-dra.yaml": DRA_NVIDIA})
    ).envs["prod"]
    rules = {r["alert"]: r for r in alerts.fleet_rules(view, [], alerts.alert_settings(view))}
    missing = [
        r["labels"]["vendor"]
        for r in alerts.fleet_rules(view, [], alerts.alert_settings(view))
        if r["alert"] == "AcceleratorNodeDevicesMissing"
    ]
    assert missing == ["nvidia"]
    assert 'resource=~"nvidia_com_gpu"' in rules["AcceleratorPodsPending"]["expr"]


def test_a_clusters_alerts_name_it(tmp_path: Path) -> None:
    """TWO_CLUSTERS: each cluster's alerts carry `cluster` with its name (an environment without
    clusters adds none: test_values_set_thresholds_severities_and_routing_labels)."""
    loaded = values.load(tree(tmp_path, TWO_CLUSTERS, fleet=PROD_FLEET))
    assert alerts.alert_settings(loaded.envs["prod/domestic"]).labels == {"cluster": "domestic"}


def test_a_cluster_label_of_the_values_wins_over_the_clusters_name(tmp_path: Path) -> None:
    extra = "monitoring:\n  alerts:\n    labels: {team: platform, cluster: site}\n"
    loaded = values.load(tree(tmp_path, TWO_CLUSTERS, fleet=PROD_FLEET + extra))
    assert alerts.alert_settings(loaded.envs["prod/main"]).labels == {
        "cluster": "site",
        "team": "platform",
    }


def test_the_vendors_after_a_dra_vendor_keep_their_missing_devices_alerts(tmp_path: Path) -> None:
    """nvidia-dra sorts before nvidia-shared: leaving the DRA vendor out leaves nvidia-shared's
    pool n3 (1 GPU shared 4 ways) its alert."""
    view = values.load(
        tree(
            tmp_path,
            {"vendors/nvidia-dra.yaml": DRA_NVIDIA, "vendors/nvidia-shared.yaml": SHARED_NVIDIA},
            defaults=False,
        )
    ).envs["prod"]
    rules = alerts.fleet_rules(view, [], alerts.alert_settings(view))
    assert [
        (r["labels"]["vendor"], r["expr"])
        for r in rules
        if r["alert"] == "AcceleratorNodeDevicesMissing"
    ] == [
        (
            "nvidia-shared",
            'kube_node_status_allocatable{resource="nvidia_com_gpu_shared",node=~"n3"} < 4',
        )
    ]


def test_only_the_agents_the_fleet_runs_are_watched_and_an_mps_vendors_daemon_is_one(
    tmp_path: Path,
) -> None:
    """nvidia (whole GPUs): its plugin. nvidia-dra: no plugin of its own (the site's DRA driver),
    so none, not NVIDIA's whole-GPU plugin again. nvidia-mps: its plugin and the MPS control
    daemon beside it, without which the plugin hands out no share. amd, whose plugin AMD's
    operator runs (devicePlugin.provided: operator): none."""
    files = {
        "vendors/nvidia.yaml": NVIDIA,
        "vendors/nvidia-dra.yaml": DRA_NVIDIA,
        "vendors/nvidia-mps.yaml": MPS_NVIDIA,
        "vendors/amd.yaml": AMD_MI250X + "devicePlugin: {provided: operator}\n",
    }
    view = values.load(tree(tmp_path, files)).envs["prod"]
    rules = alerts.fleet_rules(view, [], alerts.alert_settings(view))
    found = {
        (r["labels"]["vendor"], r["labels"]["agent"]): (
            r["expr"],
            r["annotations"]["summary"],
            r["annotations"]["description"],
        )
        for r in rules
        if r["alert"] == "AcceleratorAgentUnavailable"
    }
    assert found == {
        ("nvidia", "device-plugin"): (
            'kube_daemonset_status_number_unavailable{namespace="accelerator-plugins",'
            'daemonset="nvidia-device-plugin"} > 0',
            "nvidia device plugin is not running on {{ $value }} of its nodes",
            "DaemonSet accelerator-plugins/nvidia-device-plugin (nvidia device plugin) has "
            "{{ $value }} node(s) without a ready pod: pods there cannot be given new devices.",
        ),
        ("nvidia-mps", "device-plugin"): (
            'kube_daemonset_status_number_unavailable{namespace="accelerator-plugins",'
            'daemonset="nvidia-device-plugin-mps"} > 0',
            "nvidia-mps device plugin is not running on {{ $value }} of its nodes",
            "DaemonSet accelerator-plugins/nvidia-device-plugin-mps (nvidia-mps device plugin) "
            "has {{ $value }} node(s) without a ready pod: pods there cannot be given new "
            "devices.",
        ),
        ("nvidia-mps", "mps-control-daemon"): (
            'kube_daemonset_status_number_unavailable{namespace="accelerator-plugins",'
            'daemonset="nvidia-device-plugin-mps-mps-control-daemon"} > 0',
            "nvidia-mps MPS control daemon is not running on {{ $value }} of its nodes",
            "DaemonSet accelerator-plugins/nvidia-device-plugin-mps-mps-control-daemon "
            "(nvidia-mps MPS control daemon) has {{ $value }} node(s) without a ready pod: pods "
            "there cannot be given new devices.",
        ),
    }
