"""The monitoring unit: its objects as Kubernetes receives them (built in-process from small
values trees, written out here by hand), and proven with the real tools:

- kustomize builds `overlays/<env>/monitoring` of a render;
- promtool checks (with lint) the rule groups of every rendered PrometheusRule, and the plain
  `scrape_configs` fragment as a Prometheus configuration;
- promtool unit-tests the recording rules with synthetic series in each vendor's real metric and
  label names and units (written here from each exporter's source at the version the catalog pins,
  never read from the catalog under test), asserting exact unified values and labels;
- every dashboard query is valid PromQL and reads only series the rules record.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from generator.builders.monitoring import component as builder
from generator.builders.monitoring import recording_rules as unified
from generator.builders.monitoring.dashboard import queries
from generator.builders.monitoring.sources import Exporter, exporters
from generator.values import loader as values
from generator.values.merge import merge_data
from generator.vocab.units import Component
from tests.fixtures import (
    FLEET,
    HYGON_Z100L,
    MIG_NVIDIA,
    NVIDIA,
    OTHER_VENDORS,
    PROD_FLEET,
    TWO_CLUSTERS,
    kustomize_build,
    lines,
    operator_target_relabels,
    render_into,
    tool,
    tree,
)

MiB = 2**20

# A small, fixed fleet: five vendors (cost weights: nvidia 1.0, hygon 0.5), teams whose quotas
# the expectations below rely on.
TEAMS = {
    "ml-team": "quota: {nvidia: 8, ascend: 8}\n",
    "inference": "quota: {hygon: 8, nvidia: 4}\n",
}


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    files: dict[str, str | None] = {
        **OTHER_VENDORS,
        "vendors/nvidia.yaml": NVIDIA + "costWeight: 1.0\n",
        "vendors/hygon.yaml": HYGON_Z100L + "costWeight: 0.5\n",
        "teams/ml.yaml": None,
        **{f"teams/{team}.yaml": text for team, text in TEAMS.items()},
        "environments/staging.yaml": "fleet: {git: {targetRevision: staging}}\n",
    }
    # The quotas overcommit NVIDIA and Ascend.
    return tree(tmp_path / "repo", files, fleet=FLEET + "capacity: {allowOvercommit: true}\n")


def promtool(*args: str, cwd: Path) -> str:
    proc = subprocess.run(
        [str(tool("promtool")), *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"promtool {' '.join(args)} failed:\n{out}"
    return out


def monitoring_objects(out: Path, env: str) -> list[dict[str, Any]]:
    return kustomize_build(out / "overlays" / env / "monitoring")


def rule_groups(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [g for o in objs if o["kind"] == "PrometheusRule" for g in o["spec"]["groups"]]


def write_rules(objs: list[dict[str, Any]], path: Path) -> Path:
    groups = rule_groups(objs)
    assert groups, "no PrometheusRule rendered"
    path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    return path


def configmap(objs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    found = [o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == name]
    assert len(found) == 1, f"ConfigMap {name}: {len(found)} rendered"
    return found[0]


def envs(values_dir: Path) -> list[str]:
    return sorted(values.load(values_dir).envs)


# --------------------------------------------------------------- build: the objects, in-process

# Two vendors (vendors sort by id: hygon first). NVIDIA's file names no exporter section: its
# exporter is the catalog entry's, included by `catalog:` on line 2 (pools start on line 3).
# Hygon's exporter section is on line 9 (tests.fixtures.HYGON_Z100L). The fleet's monitoring
# section is on line 5.
MONITORED_FLEET = PROD_FLEET + (
    "monitoring:\n  prometheusSelectorLabels: {release: kps}\n  grafanaFolder: GPUs\n"
)
MONITORED = {
    "vendors/nvidia.yaml": "costWeight: 1.0\ncatalog: nvidia\n" + NVIDIA,
    "vendors/hygon.yaml": HYGON_Z100L,
    "teams/ml.yaml": "quota: {nvidia: 4}\n",
}
MANAGED = {"app.kubernetes.io/managed-by": "accel-gitops"}
SOURCE = "accel-gitops.io/source"

# The series the recording rules record, by name: what dashboards and users' own queries read, so
# a renamed series fails the tests that evaluate it.
UTILIZATION = "gpu:utilization:percent"
MEMORY_USED = "gpu:memory_used:bytes"
MEMORY_RATIO = "gpu:memory_used:ratio"
DEVICES = "gpu:devices:count"
QUOTA_USED = "team_vendor:gpu_quota_used:devices"
QUOTA_HARD = "team_vendor:gpu_quota_hard:devices"
QUOTA_RATIO = "team_vendor:gpu_quota_used:ratio"
COST_DEVICES = "team_vendor:gpu_cost_weighted_devices:sum"
COST_HOURS = "team_vendor:gpu_cost_weighted_device_hours:1h"
# The ConfigMaps Prometheus's scrape configs and Grafana's dashboard are read from, and their keys.
SCRAPE_CONFIGMAP, SCRAPE_KEY = "accelerator-scrape-configs", "scrape-configs.yaml"
DASHBOARD_CONFIGMAP, DASHBOARD_KEY = "accelerator-dashboard", "accelerators.json"
# kube-state-metrics' series the rules may read (the quota recording rules and the fleet alerts).
KSM_SERIES = {
    "kube_resourcequota",
    "kube_daemonset_status_number_unavailable",
    "kube_pod_container_resource_requests",
    "kube_pod_status_phase",
    "kube_node_status_allocatable",
}


def built(
    tmp_path: Path, files: Mapping[str, str | None] | None = None, fleet: str = MONITORED_FLEET
) -> list[Component]:
    """The monitoring components of environment prod of a tree with only `files` (MONITORED)."""
    root = tree(tmp_path / "repo", files or MONITORED, fleet=fleet, defaults=False)
    return builder.build(values.load(root).envs["prod"])


def component(comps: list[Component], name: str) -> Component:
    [found] = [c for c in comps if c.name == name]
    return found


def obj(comps: list[Component], name: str, kind: str) -> dict[str, Any]:
    """The one object of `kind` in component `name`."""
    [found] = [o for o in component(comps, name).objects if o["kind"] == kind]
    return found


def test_monitoring_components_their_objects_and_where_findings_point(tmp_path: Path) -> None:
    """Each base holds its objects; a finding about one names the values line a user edits."""
    comps = built(tmp_path)
    got = [
        (
            c.unit,
            c.name,
            str(c.origin),
            [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in c.objects],
        )
        for c in comps
    ]
    fleet = "values/fleet.yaml:5:1"  # the fleet's monitoring section
    ns, exporters_ns = "accelerator-monitoring", "accelerator-exporters"
    assert got == [
        ("monitoring", "monitoring/namespace", fleet, [("Namespace", None, ns)]),
        (
            "monitoring",
            "monitoring/exporters/namespace",
            fleet,
            [("Namespace", None, exporters_ns)],
        ),
        (
            "monitoring",
            "monitoring/exporters/hygon",
            "values/vendors/hygon.yaml:9:1",  # its exporter section
            [
                ("ServiceAccount", exporters_ns, "dcu-exporter"),
                ("ClusterRole", None, "dcu-exporter"),
                ("ClusterRoleBinding", None, "dcu-exporter"),
                ("DaemonSet", exporters_ns, "dcu-exporter"),
            ],
        ),
        (
            "monitoring",
            "monitoring/exporters/nvidia",
            "values/vendors/nvidia.yaml:2:1",  # where the catalog's exporter is included
            [("DaemonSet", exporters_ns, "dcgm-exporter")],
        ),
        (
            "monitoring",
            "monitoring/scrape",
            fleet,
            [
                ("PodMonitor", ns, "dcu-exporter"),
                ("PodMonitor", ns, "dcgm-exporter"),
                ("ConfigMap", ns, "accelerator-scrape-configs"),
            ],
        ),
        ("monitoring", "monitoring/rules", fleet, [("PrometheusRule", ns, "accelerators-unified")]),
        ("monitoring", "monitoring/alerts", fleet, [("PrometheusRule", ns, "accelerators-alerts")]),
        ("monitoring", "monitoring/dashboard", fleet, [("ConfigMap", ns, "accelerator-dashboard")]),
    ]


def test_the_monitoring_namespace_enforces_baseline_and_syncs_first(tmp_path: Path) -> None:
    """Prometheus-side objects need no host access: baseline, warned and audited at restricted."""
    ns = obj(built(tmp_path), "monitoring/namespace", "Namespace")
    assert ns == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "accelerator-monitoring",
            "labels": {
                **MANAGED,
                "pod-security.kubernetes.io/enforce": "baseline",
                "pod-security.kubernetes.io/audit": "restricted",
                "pod-security.kubernetes.io/warn": "restricted",
            },
            "annotations": {
                SOURCE: "values/fleet.yaml, values/vendors/hygon.yaml, values/vendors/nvidia.yaml",
                "argocd.argoproj.io/sync-wave": "-1",  # before the objects that live in it
            },
        },
    }


def test_the_exporter_namespace_admits_privileged_pods(tmp_path: Path) -> None:
    """Exporters mount host paths (dcgm-exporter: pod-resources; dcu-exporter: /dev/kfd): only
    Pod Security 'privileged' admits them, so they get a namespace of their own."""
    ns = obj(built(tmp_path), "monitoring/exporters/namespace", "Namespace")
    assert ns == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "accelerator-exporters",
            "labels": {
                **MANAGED,
                "pod-security.kubernetes.io/enforce": "privileged",
                "pod-security.kubernetes.io/audit": "privileged",
                "pod-security.kubernetes.io/warn": "privileged",
            },
            # the vendors whose exporters run in it, not the fleet file
            "annotations": {
                SOURCE: "values/vendors/hygon.yaml, values/vendors/nvidia.yaml",
                "argocd.argoproj.io/sync-wave": "-1",
            },
        },
    }


def test_an_exporter_installed_another_way_gets_no_daemonset(tmp_path: Path) -> None:
    """`exporter.render: false`: no DaemonSet, and the exporter namespace names only the others."""
    files = {**MONITORED, "vendors/nvidia.yaml": NVIDIA + "exporter: {render: false}\n"}
    comps = built(tmp_path, files)
    assert [c.name for c in comps if c.name.startswith("monitoring/exporters/")] == [
        "monitoring/exporters/namespace",
        "monitoring/exporters/hygon",
    ]
    ns = obj(comps, "monitoring/exporters/namespace", "Namespace")
    assert ns["metadata"]["annotations"][SOURCE] == "values/vendors/hygon.yaml"


def test_the_dcgm_exporter_daemonset_as_kubernetes_receives_it(tmp_path: Path) -> None:
    """dcgm-exporter as upstream ships it (catalog: NVIDIA/dcgm-exporter dcgm-exporter.yaml
    4.5.3-4.8.2), on the NVIDIA nodes, its port named so the PodMonitor finds it."""
    labels = {
        "app.kubernetes.io/name": "dcgm-exporter",
        "app.kubernetes.io/component": "exporter",
        "accel-gitops.io/vendor": "nvidia",
    }
    accelerator = "feature.node.kubernetes.io/accelerator"
    assert obj(built(tmp_path), "monitoring/exporters/nvidia", "DaemonSet") == {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": "dcgm-exporter",
            "namespace": "accelerator-exporters",
            "labels": {**MANAGED, **labels},
            "annotations": {SOURCE: "values/vendors/nvidia.yaml"},
        },
        "spec": {
            "selector": {
                "matchLabels": {
                    "accel-gitops.io/vendor": "nvidia",
                    "app.kubernetes.io/name": "dcgm-exporter",
                }
            },
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeSelector": {accelerator: "nvidia-gpu"},
                    "tolerations": [
                        {"key": "CriticalAddonsOnly", "operator": "Exists"},
                        {
                            "key": accelerator,
                            "operator": "Equal",
                            "value": "nvidia-gpu",
                            "effect": "NoSchedule",
                        },
                    ],
                    "automountServiceAccountToken": False,  # no RBAC upstream
                    "containers": [
                        {
                            "name": "dcgm-exporter",
                            "image": "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-distroless",
                            "imagePullPolicy": "IfNotPresent",
                            "env": [
                                {"name": "DCGM_EXPORTER_LISTEN", "value": ":9400"},
                                {"name": "DCGM_EXPORTER_KUBERNETES", "value": "true"},
                                {
                                    "name": "NODE_NAME",
                                    "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}},
                                },
                            ],
                            # upstream: port name metrics 9400
                            "ports": [
                                {"name": "metrics", "containerPort": 9400, "protocol": "TCP"}
                            ],
                            "resources": {
                                "requests": {"cpu": "100m", "memory": "128Mi"},
                                "limits": {"cpu": "200m", "memory": "256Mi"},
                            },
                            "securityContext": {
                                "runAsNonRoot": False,
                                "runAsUser": 0,
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"add": ["SYS_ADMIN"], "drop": ["ALL"]},
                            },
                            "volumeMounts": [
                                {
                                    "name": "pod-gpu-resources",
                                    "mountPath": "/var/lib/kubelet/pod-resources",
                                    "readOnly": True,
                                }
                            ],
                        }
                    ],
                    "volumes": [
                        {
                            "name": "pod-gpu-resources",
                            "hostPath": {"path": "/var/lib/kubelet/pod-resources"},
                        }
                    ],
                },
            },
        },
    }


def test_a_host_network_exporter_declares_its_host_port_and_runs_as_its_service_account(
    tmp_path: Path,
) -> None:
    """dcu-exporter (catalog: fossabot/dcu-exporter dcu-exporter-v2.yaml) uses the host network
    and lists pods: its port is also the host's, its ServiceAccount is in its namespace."""
    comps = built(tmp_path)
    labels = {
        **MANAGED,
        "app.kubernetes.io/name": "dcu-exporter",
        "app.kubernetes.io/component": "exporter",
        "accel-gitops.io/vendor": "hygon",
    }
    assert obj(comps, "monitoring/exporters/hygon", "ServiceAccount") == {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": "dcu-exporter",
            "namespace": "accelerator-exporters",
            "labels": labels,
            "annotations": {SOURCE: "values/vendors/hygon.yaml"},
        },
    }
    binding = obj(comps, "monitoring/exporters/hygon", "ClusterRoleBinding")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "dcu-exporter", "namespace": "accelerator-exporters"}
    ]
    ds = obj(comps, "monitoring/exporters/hygon", "DaemonSet")
    assert ds["metadata"]["namespace"] == "accelerator-exporters"
    pod = ds["spec"]["template"]["spec"]
    assert (pod["hostNetwork"], pod["serviceAccountName"]) == (True, "dcu-exporter")
    # The API server defaults hostPort to containerPort on the host network: said here, so what
    # Argo CD compares is what the cluster holds. Upstream: port metrics 16080.
    [container] = pod["containers"]
    assert container["ports"] == [
        {"name": "metrics", "containerPort": 16080, "protocol": "TCP", "hostPort": 16080}
    ]


def test_the_pod_monitor_as_kubernetes_receives_it(tmp_path: Path) -> None:
    """In the monitoring namespace, with the labels the fleet's Prometheus selects by."""
    scrape = component(built(tmp_path), "monitoring/scrape").objects
    assert scrape[1] == {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {
            "name": "dcgm-exporter",
            "namespace": "accelerator-monitoring",
            "labels": {
                **MANAGED,
                "release": "kps",  # monitoring.prometheusSelectorLabels
                "app.kubernetes.io/component": "scrape",
                "accel-gitops.io/vendor": "nvidia",
            },
            "annotations": {SOURCE: "values/vendors/nvidia.yaml"},
        },
        "spec": {
            "namespaceSelector": {"matchNames": ["accelerator-exporters"]},
            "selector": {
                "matchLabels": {
                    "accel-gitops.io/vendor": "nvidia",
                    "app.kubernetes.io/name": "dcgm-exporter",
                }
            },
            "podMetricsEndpoints": [
                {
                    "port": "metrics",
                    "path": "/metrics",
                    "honorLabels": True,
                    "relabelings": operator_target_relabels("nvidia", "nvidia"),
                    "metricRelabelings": [
                        {
                            "action": "replace",
                            "sourceLabels": ["Hostname"],
                            "regex": "(.+)",
                            "targetLabel": "node",
                            "replacement": "$1",
                        }
                    ],
                }
            ],
        },
    }


def test_the_scrape_configs_configmap_as_kubernetes_receives_it(tmp_path: Path) -> None:
    """The plain Prometheus jobs, one per exporter, in a ConfigMap a hand-run Prometheus mounts."""
    cm = obj(built(tmp_path), "monitoring/scrape", "ConfigMap")
    assert {k: v for k, v in cm.items() if k != "data"} == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "accelerator-scrape-configs",
            "namespace": "accelerator-monitoring",
            # no Prometheus selector labels: no operator reads it
            "labels": {**MANAGED, "app.kubernetes.io/component": "scrape"},
            "annotations": {
                SOURCE: "values/fleet.yaml, values/vendors/hygon.yaml, values/vendors/nvidia.yaml"
            },
        },
    }
    [key] = cm["data"]
    jobs = yaml.safe_load(cm["data"][key])["scrape_configs"]
    assert (key, [j["job_name"] for j in jobs]) == (
        "scrape-configs.yaml",
        ["accelerators/hygon/dcu-exporter", "accelerators/nvidia/dcgm-exporter"],
    )


def test_the_prometheus_rule_as_kubernetes_receives_it(tmp_path: Path) -> None:
    """Selected by the fleet's Prometheus; its quota rules come from the team files too."""
    rule = obj(built(tmp_path), "monitoring/rules", "PrometheusRule")
    assert (rule["apiVersion"], rule["kind"], list(rule["spec"])) == (
        "monitoring.coreos.com/v1",
        "PrometheusRule",
        ["groups"],
    )
    assert rule["metadata"] == {
        "name": "accelerators-unified",
        "namespace": "accelerator-monitoring",
        "labels": {**MANAGED, "release": "kps", "app.kubernetes.io/component": "recording-rules"},
        "annotations": {
            SOURCE: "values/fleet.yaml, values/teams/ml.yaml, values/vendors/hygon.yaml, "
            "values/vendors/nvidia.yaml"
        },
    }


def test_the_dashboard_configmap_as_the_grafana_sidecar_reads_it(tmp_path: Path) -> None:
    """The sidecar loads ConfigMaps labelled grafana_dashboard into the folder annotated."""
    cm = obj(built(tmp_path), "monitoring/dashboard", "ConfigMap")
    assert (cm["apiVersion"], cm["kind"], list(cm["data"])) == (
        "v1",
        "ConfigMap",
        ["accelerators.json"],
    )
    assert cm["metadata"] == {
        "name": "accelerator-dashboard",
        "namespace": "accelerator-monitoring",
        "labels": {**MANAGED, "grafana_dashboard": "1", "app.kubernetes.io/component": "dashboard"},
        "annotations": {
            SOURCE: "values/fleet.yaml, values/vendors/hygon.yaml, values/vendors/nvidia.yaml",
            "grafana_folder": "GPUs",
        },
    }


def test_without_a_monitoring_section_the_fleet_file_is_no_source_and_no_folder_is_named(
    tmp_path: Path,
) -> None:
    """Defaults only: the objects name the vendor files alone, the dashboard no Grafana folder."""
    comps = built(tmp_path, fleet=PROD_FLEET)
    vendors = "values/vendors/hygon.yaml, values/vendors/nvidia.yaml"
    ns = obj(comps, "monitoring/namespace", "Namespace")
    assert ns["metadata"]["annotations"][SOURCE] == vendors
    board = obj(comps, "monitoring/dashboard", "ConfigMap")
    assert board["metadata"]["annotations"] == {SOURCE: vendors}


# ------------------------------------------------------------------------ kustomize, promtool check


def test_monitoring_unit_builds_with_kustomize_in_every_environment(
    fleet: Path, tmp_path: Path
) -> None:
    out = render_into(fleet, tmp_path / "out")
    loaded = values.load(fleet)
    for env in envs(fleet):
        objs = monitoring_objects(out, env)
        kinds = sorted(o["kind"] for o in objs)
        vendors = loaded.envs[env].vendors
        assert kinds.count("PodMonitor") == len(vendors)
        assert kinds.count("PrometheusRule") == 2  # recording and alerting rules
        monitors = {
            o["metadata"]["labels"]["accel-gitops.io/vendor"]: o
            for o in objs
            if o["kind"] == "PodMonitor"
        }
        nvidia = monitors["nvidia"]["spec"]
        assert nvidia["selector"] == {
            "matchLabels": {
                "accel-gitops.io/vendor": "nvidia",
                "app.kubernetes.io/name": "dcgm-exporter",
            }
        }
        assert nvidia["namespaceSelector"] == {"matchNames": ["accelerator-exporters"]}
        endpoint = nvidia["podMetricsEndpoints"][0]
        assert endpoint["port"] == "metrics" and "portNumber" not in endpoint
        assert {"action": "replace", "replacement": "nvidia", "targetLabel": "gpu_brand"} in (
            endpoint["relabelings"]
        )
        assert endpoint["metricRelabelings"][0]["sourceLabels"] == ["Hostname"]
        assert endpoint["metricRelabelings"][0]["targetLabel"] == "node"
        board = configmap(objs, DASHBOARD_CONFIGMAP)
        assert board["metadata"]["labels"]["grafana_dashboard"] == "1"
        scrape = yaml.safe_load(configmap(objs, SCRAPE_CONFIGMAP)["data"][SCRAPE_KEY])
        jobs = {c["job_name"]: c for c in scrape["scrape_configs"]}
        assert len(jobs) == len(vendors)
        dcgm = jobs["accelerators/nvidia/dcgm-exporter"]
        assert dcgm["kubernetes_sd_configs"] == [
            {"role": "pod", "namespaces": {"names": ["accelerator-exporters"]}}
        ]
        assert {
            "action": "keep",
            "source_labels": ["__meta_kubernetes_pod_label_app_kubernetes_io_name"],
            "regex": "dcgm-exporter",
        } in dcgm["relabel_configs"]


def test_rendered_rules_pass_promtool_check_with_lint(fleet: Path, tmp_path: Path) -> None:
    out = render_into(fleet, tmp_path / "out")
    for env in envs(fleet):
        rules_file = write_rules(
            monitoring_objects(out, env), tmp_path / f"{env.replace('/', '-')}.rules.yaml"
        )
        report = promtool(
            "check", "rules", "--lint=all", "--lint-fatal", rules_file.name, cwd=tmp_path
        )
        assert "SUCCESS" in report


def test_example_fleet_rules_pass_promtool_check(values_dir: Path, tmp_path: Path) -> None:
    """The committed example values, whatever they hold today, give valid rules too."""
    out = render_into(values_dir, tmp_path / "out")
    for env in envs(values_dir):
        rules_file = write_rules(
            monitoring_objects(out, env), tmp_path / f"{env.replace('/', '-')}.rules.yaml"
        )
        promtool("check", "rules", "--lint=all", "--lint-fatal", rules_file.name, cwd=tmp_path)


def test_scrape_configs_fragment_is_a_valid_prometheus_configuration(
    fleet: Path, tmp_path: Path
) -> None:
    out = render_into(fleet, tmp_path / "out")
    objs = monitoring_objects(out, "prod")
    text = configmap(objs, SCRAPE_CONFIGMAP)["data"][SCRAPE_KEY]
    (tmp_path / "prometheus.yml").write_text(text)
    promtool("check", "config", "prometheus.yml", cwd=tmp_path)


# --------------------------------------------------------------------------- promtool test rules


@dataclass(frozen=True)
class Case:
    """One device of a vendor: raw exporter values in the exporter's units, and what the
    unified series must say."""

    node: str
    model: str
    utilization: float
    used: float
    other: float  # memoryTotal, or memoryFree where the exporter ships no total
    bytes_used: float
    ratio: float
    pod: str = "train-0"
    namespace: str = "ml-team"
    reserved: float = 0  # memoryReserved, where the exporter has one


# Raw numbers in each exporter's own unit (catalog: dcgm MiB, AMD and npu-exporter MiB, DCU and
# MLU bytes); expected values computed by hand.
CASES: dict[str, Case] = {
    # 30,000 MiB used + 49,000 MiB free + 1,000 MiB reserved (DCGM_FI_DEV_FB_RESERVED): the
    # device holds 80,000 MiB, ratio 0.375 (not 30/79), and 30000 * 2^20 bytes used.
    "nvidia": Case(
        "nvidia-node-01",
        "NVIDIA A100-SXM4-80GB",
        87,
        30000,
        49000,
        30000 * MiB,
        0.375,
        reserved=1000,
    ),
    # npu-exporter's "MB" is MiB: 24,576 of 65,536 (a 64 GiB 910B) is 24576 * 2^20 bytes.
    "ascend": Case("ascend-node-01", "Ascend910B", 55, 24576, 65536, 24576 * MiB, 0.375),
    # AMD's "MB" is MiB (bytes / 1024 / 1024): 32,768 of 131,072 is 32 GiB used.
    "amd": Case("amd-node-01", "MI250X", 40, 32768, 131072, 32 * 2**30, 0.25),
    # DCU bytes: 16 GiB of 64 GiB.
    "hygon": Case("dcu-node-01", "Z100L", 70, 16 * 2**30, 64 * 2**30, 16 * 2**30, 0.25),
    # MLU bytes: 12e9 of 48e9.
    "cambricon": Case("mlu-node-01", "MLU370-X8", 12, 12e9, 48e9, 12e9, 0.25),
}
UNIFIED = "device", "gpu_brand", "model", "namespace", "node", "pod", "vendor"


def series(name: str, labels: dict[str, str]) -> str:
    inner = ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(labels.items()))
    return f"{name}{{{inner}}}"


def exporter_labels(exp: Exporter, case: Case, device: str) -> dict[str, str]:
    """Labels in the names `exp` says its exporter writes (plus our scrape relabelling): for
    values that override the catalog's names. The catalog's own names are checked against
    `real_inputs`, which never reads them."""
    mapped = {"node": case.node, "device": device, "model": case.model}
    if "pod" in exp.labels:
        mapped["pod"] = case.pod
    if "namespace" in exp.labels:
        mapped["namespace"] = case.namespace
    labels = {exp.labels.get(k, k): v for k, v in mapped.items()}
    # What the scrape configuration adds, and noise the rules must drop.
    labels.update(
        {"gpu_brand": exp.brand, "vendor": exp.vendor, "instance": "10.0.0.1:1", "job": "x"}
    )
    return labels


def vendor_inputs(exp: Exporter, case: Case) -> list[dict[str, str]]:
    labels = exporter_labels(exp, case, "0")
    other = exp.memory_total or exp.memory_free
    assert other is not None
    out = [
        {"series": series(exp.utilization.name, labels), "values": f"{case.utilization}+0x30"},
        {"series": series(exp.memory_used.name, labels), "values": f"{case.used}+0x30"},
        {"series": series(other.name, labels), "values": f"{case.other}+0x30"},
    ]
    if exp.memory_reserved is not None:
        out.append(
            {"series": series(exp.memory_reserved.name, labels), "values": f"{case.reserved}+0x30"}
        )
    return out


def scraped(brand: str, vendor: str) -> dict[str, str]:
    """What our scrape configuration adds to every series (scrape.py: gpu_brand and vendor), and
    noise the rules must drop."""
    return {"gpu_brand": brand, "vendor": vendor, "instance": "10.0.0.1:1", "job": "x"}


def emitted(labels: dict[str, str], values: dict[str, float]) -> list[dict[str, str]]:
    """Input series: each metric name with its value, all with the same labels."""
    return [{"series": series(name, labels), "values": f"{v}+0x30"} for name, v in values.items()]


def real_inputs() -> list[dict[str, str]]:
    """Device 0 of every vendor as its exporter really emits it at the version the catalog pins:
    metric and label names copied from the exporter's source, never read from the catalog under
    test (a wrong name there fails the rule tests). Label values are made up; empty ones (which
    Prometheus drops) are left out."""
    nv, npu, amd, dcu, mlu = (CASES[v] for v in ("nvidia", "ascend", "amd", "hygon", "cambricon"))
    return [
        # NVIDIA/dcgm-exporter, tag 4.5.3-4.8.2: names and units in etc/default-counters.csv
        # (DCGM_FI_DEV_GPU_UTIL %, DCGM_FI_DEV_FB_USED, _FREE, _RESERVED MiB); labels from
        # internal/pkg/rendermetrics/render_metrics.go (gpuMetricsFormat: gpu, UUID, pci_bus_id,
        # device, modelName, Hostname) and internal/pkg/transformation/kubernetes.go + const.go
        # (pod, namespace, container, pod_uid). The scrape's own `node` is left out so that the
        # rules' Hostname -> node is what gives it (the PodMonitor copies it the same way).
        *emitted(
            {
                "gpu": "0",
                "UUID": "GPU-8a3c1e52-0d47-4b9e-9f21-5c6d7e8f9a0b",
                "pci_bus_id": "00000000:07:00.0",
                "device": "nvidia0",
                "modelName": nv.model,
                "Hostname": nv.node,
                "container": "trainer",
                "namespace": nv.namespace,
                "pod": nv.pod,
                "pod_uid": "3f2b9c1e-7a64-4d0b-8e15-2c9a6b7d4e01",
                **scraped("nvidia", "nvidia"),
            },
            {
                "DCGM_FI_DEV_GPU_UTIL": nv.utilization,
                "DCGM_FI_DEV_FB_USED": nv.used,
                "DCGM_FI_DEV_FB_FREE": nv.other,
                "DCGM_FI_DEV_FB_RESERVED": nv.reserved,
            },
        ),
        # Ascend/mind-cluster, tag v26.0.0, component/npu-exporter/collector/: names in
        # metrics/collector_for_npu.go (npu_chip_info_utilization) and metrics/collector_for_hbm.go
        # (npu_chip_info_hbm_used_memory, npu_chip_info_hbm_total_memory); labels CardLabel in
        # common/metrics_collector.go, named in common/constants.go (id, model_name, vdie_id,
        # pcie_bus_info, namespace, pod_name, container_name). No node label: `node` is the
        # scrape's (scrape.py, from __meta_kubernetes_pod_node_name).
        *emitted(
            {
                "id": "0",
                "model_name": npu.model,
                "vdie_id": "3A5F0B21-60C8D4E7-1B9F2A43-7C6E5D80-11223344",
                "pcie_bus_info": "0000:C1:00.0",
                "namespace": npu.namespace,
                "pod_name": npu.pod,
                "container_name": "trainer",
                "node": npu.node,
                **scraped("huawei", "ascend"),
            },
            {
                "npu_chip_info_utilization": npu.utilization,
                "npu_chip_info_hbm_used_memory": npu.used,
                "npu_chip_info_hbm_total_memory": npu.other,
            },
        ),
        # ROCm/device-metrics-exporter, tag v1.5.1: names in
        # pkg/amdgpu/gpuagent/gpuagent_gpu_metrics.go (gpu_gfx_activity, gpu_used_vram,
        # gpu_total_vram; no prefix by default); labels its gpuMandatoryLables, lower-cased, named
        # in pkg/exporter/proto/exporterconfig.proto (MetricLabel, GPUMetricLabel). Its job_*
        # labels are empty off Slurm. The scrape's `node` is left out (hostname -> node, as NVIDIA).
        *emitted(
            {
                "gpu_id": "0",
                "card_model": amd.model,
                "serial_number": "PCB045678-0012",
                "gpu_partition_id": "0",
                "gpu_compute_partition_type": "spx",
                "gpu_memory_partition_type": "nps1",
                "deployment_mode": "baremetal",
                "pod": amd.pod,
                "namespace": amd.namespace,
                "container": "trainer",
                "hostname": amd.node,
                **scraped("amd", "amd"),
            },
            {
                "gpu_gfx_activity": amd.utilization,
                "gpu_used_vram": amd.used,
                "gpu_total_vram": amd.other,
            },
        ),
        # fossabot/dcu-exporter, commit 30408d074cd420729f5698710d54fb30abefb0b1 (the catalog's
        # pin, DCU-Exporter v2.0.0.240718), main.go: dcu_utilizationrate, dcu_usedmemory_bytes,
        # dcu_memorycap_bytes, labels dcuLabels (device_id, minor_number, name, node,
        # pcieBus_number, dcu_pod_namespace, dcu_pod_name, container).
        *emitted(
            {
                "device_id": "T8R1380013061601",
                "minor_number": "0",
                "name": dcu.model,
                "node": dcu.node,
                "pcieBus_number": "0000:f6:00.0",
                "dcu_pod_namespace": dcu.namespace,
                "dcu_pod_name": dcu.pod,
                "container": "trainer",
                **scraped("hygon", "hygon"),
            },
            {
                "dcu_utilizationrate": dcu.utilization,
                "dcu_usedmemory_bytes": dcu.used,
                "dcu_memorycap_bytes": dcu.other,
            },
        ),
        # Cambricon/mlu-exporter, tag v2.0.22: examples/metrics.yaml (what the image carries,
        # Dockerfile) names utilization, memory_used, memory_total, each labelled driver, mcu,
        # mlu, model, node, node_ip, sn, type, uuid (utilization also vf, empty on a whole
        # device); pkg/metrics/metrics.go prefixes "mlu_" (--metrics-prefix=mlu);
        # pkg/collector/cndev.go gives memory in bytes. No pod or namespace label.
        *emitted(
            {
                "driver": "v5.10.22",
                "mcu": "v1.1.4",
                "mlu": "0",
                "model": mlu.model,
                "node": mlu.node,
                "node_ip": "10.0.0.5",
                "sn": "SN/1234567890",
                "type": "mlu370",
                "uuid": "MLU-20001012-1916-0000-0000-000000000000",
                **scraped("cambricon", "cambricon"),
            },
            {
                "mlu_utilization": mlu.utilization,
                "mlu_memory_used": mlu.used,
                "mlu_memory_total": mlu.other,
            },
        ),
    ]


# The unified labels each vendor's series must carry (Cambricon's metrics have no pod).
WANT_LABELS: dict[str, dict[str, str]] = {
    "nvidia": {
        "gpu_brand": "nvidia",
        "vendor": "nvidia",
        "node": "nvidia-node-01",
        "device": "0",
        "model": "NVIDIA A100-SXM4-80GB",
        "pod": "train-0",
        "namespace": "ml-team",
    },
    "ascend": {
        "gpu_brand": "huawei",
        "vendor": "ascend",
        "node": "ascend-node-01",
        "device": "0",
        "model": "Ascend910B",
        "pod": "train-0",
        "namespace": "ml-team",
    },
    "amd": {
        "gpu_brand": "amd",
        "vendor": "amd",
        "node": "amd-node-01",
        "device": "0",
        "model": "MI250X",
        "pod": "train-0",
        "namespace": "ml-team",
    },
    "hygon": {
        "gpu_brand": "hygon",
        "vendor": "hygon",
        "node": "dcu-node-01",
        "device": "0",
        "model": "Z100L",
        "pod": "train-0",
        "namespace": "ml-team",
    },
    "cambricon": {
        "gpu_brand": "cambricon",
        "vendor": "cambricon",
        "node": "mlu-node-01",
        "device": "0",
        "model": "MLU370-X8",
    },
}


def unified_labels(exp: Exporter, case: Case) -> dict[str, str]:
    out = {
        "gpu_brand": exp.brand,
        "vendor": exp.vendor,
        "node": case.node,
        "device": "0",
        "model": case.model,
    }
    if "pod" in exp.labels:
        out["pod"] = case.pod
    if "namespace" in exp.labels:
        out["namespace"] = case.namespace
    return out


def sample(name: str, labels: dict[str, str], value: float) -> dict[str, Any]:
    return {"labels": series(name, labels), "value": value}


def vendor_tests(wants: dict[str, dict[str, str]], cases: dict[str, Case]) -> list[dict[str, Any]]:
    """Each vendor's unified series: `wants` the labels by vendor, `cases` the values."""
    out = []
    for vendor, want in wants.items():
        case = cases[vendor]
        sel = f'{{vendor="{vendor}"}}'
        out += [
            {
                "expr": UTILIZATION + sel,
                "eval_time": "5m",
                "exp_samples": [sample(UTILIZATION, want, case.utilization)],
            },
            {
                "expr": MEMORY_USED + sel,
                "eval_time": "5m",
                "exp_samples": [sample(MEMORY_USED, want, case.bytes_used)],
            },
            {
                "expr": MEMORY_RATIO + sel,
                "eval_time": "5m",
                "exp_samples": [sample(MEMORY_RATIO, want, case.ratio)],
            },
            {
                "expr": DEVICES + sel,
                "eval_time": "5m",
                "exp_samples": [
                    sample(DEVICES, {"gpu_brand": want["gpu_brand"], "vendor": vendor}, 1)
                ],
            },
        ]
    return out


def quota_inputs() -> list[dict[str, str]]:
    def ksm(ns: str, resource: str, kind: str, value: int) -> dict[str, str]:
        labels = {
            "namespace": ns,
            "resourcequota": "accelerators",
            "resource": f"requests.{resource}",
            "type": kind,
            "job": "kube-state-metrics",
        }
        return {"series": series("kube_resourcequota", labels), "values": f"{value}+0x90"}

    return [
        ksm("ml-team", "nvidia.com/gpu", "used", 6),
        ksm("ml-team", "nvidia.com/gpu", "hard", 8),
        ksm("inference", "amd.com/gpu", "used", 4),
        ksm("inference", "amd.com/gpu", "hard", 8),
        ksm("other-namespace", "amd.com/gpu", "used", 99),  # not a team's: ignored
    ]


def quota_tests() -> list[dict[str, Any]]:
    ml = {
        "team": "ml-team",
        "resource": "nvidia.com/gpu",
        "vendor": "nvidia",
        "gpu_brand": "nvidia",
    }
    # amd.com/gpu is advertised by AMD and Hygon; the inference team has quota for Hygon only.
    inf = {"team": "inference", "resource": "amd.com/gpu", "vendor": "hygon", "gpu_brand": "hygon"}

    def check(
        name: str, want: list[tuple[dict[str, str], float]], at: str = "10m"
    ) -> dict[str, Any]:
        return {
            "expr": f'{name}{{team=~"ml-team|inference", resource=~"nvidia.com/gpu|amd.com/gpu"}}',
            "eval_time": at,
            "exp_samples": [sample(name, labels, value) for labels, value in want],
        }

    return [
        check(QUOTA_USED, [(ml, 6), (inf, 4)]),
        check(QUOTA_HARD, [(ml, 8), (inf, 8)]),
        check(QUOTA_RATIO, [(ml, 0.75), (inf, 0.5)]),
        # cost weights: nvidia 1.0, hygon 0.5
        check(COST_DEVICES, [(ml, 6), (inf, 2)]),
        check(COST_HOURS, [(ml, 6), (inf, 2)], at="80m"),
    ]


def run_rule_tests(
    objs: list[dict[str, Any]],
    tmp_path: Path,
    inputs: list[dict[str, str]],
    expr_tests: list[dict[str, Any]],
) -> str:
    write_rules(objs, tmp_path / "rules.yaml")
    test = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "name": "every vendor gives the same unified series",
                "interval": "1m",
                "input_series": inputs,
                "promql_expr_test": expr_tests,
            },
            {
                "name": "quota use and cost per team and vendor",
                "interval": "1m",
                "input_series": quota_inputs(),
                "promql_expr_test": quota_tests(),
            },
        ],
    }
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(test, sort_keys=False))
    return promtool("test", "rules", "test.yaml", cwd=tmp_path)


def test_unified_series_from_every_vendors_real_metric_names(fleet: Path, tmp_path: Path) -> None:
    out = render_into(fleet, tmp_path / "out")
    exps = exporters(values.load(fleet).envs["prod"])
    assert sorted(e.vendor for e in exps) == sorted(CASES)
    names = {e.vendor: e.metric_names for e in exps}
    assert names["nvidia"] == (
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_FB_RESERVED",
    )
    assert names["ascend"][0] == "npu_chip_info_utilization"
    assert names["hygon"][1] == "dcu_usedmemory_bytes"
    # Inputs and expectations are both written in this file: nothing here reads the catalog's
    # metric or label names, so the rules must have them right to give these series.
    assert sorted(WANT_LABELS) == sorted(CASES)
    report = run_rule_tests(
        monitoring_objects(out, "prod"), tmp_path, real_inputs(), vendor_tests(WANT_LABELS, CASES)
    )
    assert "SUCCESS" in report


def test_mig_instances_of_one_gpu_keep_their_own_series(tmp_path: Path) -> None:
    """dcgm-exporter reports each MIG instance with GPU_I_PROFILE and GPU_I_ID (tag 4.5.3-4.8.2,
    internal/pkg/rendermetrics/render_metrics.go; names written here, not read from the catalog).
    Two idle instances of GPU 0 on n5: each keeps its series under `partition` (without it, the
    rules' max would fold them into one), and the fleet still counts one GPU."""
    files = {"vendors/nvidia.yaml": NVIDIA, "vendors/nvidia-mig.yaml": MIG_NVIDIA}
    out = render_into(tree(tmp_path / "repo", files, fleet=PROD_FLEET), tmp_path / "out")
    model = "NVIDIA A100-SXM4-80GB"
    inputs = [
        row
        for gi, used in (("1", 1000), ("2", 3000))
        for row in emitted(
            {
                "gpu": "0",
                "UUID": "GPU-8a3c1e52-0d47-4b9e-9f21-5c6d7e8f9a0b",
                "device": "nvidia0",
                "modelName": model,
                "GPU_I_PROFILE": "3g.40gb",
                "GPU_I_ID": gi,
                "Hostname": "n5",
                **scraped("nvidia", "nvidia-mig"),
            },
            {
                "DCGM_FI_DEV_GPU_UTIL": 0,
                "DCGM_FI_DEV_FB_USED": used,
                "DCGM_FI_DEV_FB_FREE": 40000 - used,
                "DCGM_FI_DEV_FB_RESERVED": 0,
            },
        )
    ]
    base = {"device": "0", "gpu_brand": "nvidia", "model": model, "node": "n5"}
    labels = {**base, "vendor": "nvidia-mig"}
    expr_tests = [
        {
            "expr": MEMORY_USED + '{vendor="nvidia-mig"}',
            "eval_time": "5m",
            "exp_samples": [
                sample(MEMORY_USED, {**labels, "partition": gi}, used * MiB)
                for gi, used in (("1", 1000), ("2", 3000))
            ],
        },
        {
            "expr": DEVICES + '{vendor="nvidia-mig"}',
            "eval_time": "5m",
            "exp_samples": [sample(DEVICES, {"gpu_brand": "nvidia", "vendor": "nvidia-mig"}, 1)],
        },
    ]
    write_rules(monitoring_objects(out, "prod"), tmp_path / "rules.yaml")
    test = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "name": "MIG instances",
                "interval": "1m",
                "input_series": inputs,
                "promql_expr_test": expr_tests,
            }
        ],
    }
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(test, sort_keys=False))
    assert "SUCCESS" in promtool("test", "rules", "test.yaml", cwd=tmp_path)


SEED_NAMES = {
    # The seed documents' names: a site whose exporters emit these says so in values.
    "nvidia.yaml": """
exporter:
  metrics:
    memoryTotal: {name: DCGM_FI_DEV_FB_TOTAL, unit: MiB}
""",
    "ascend.yaml": """
exporter:
  metrics:
    utilization: {name: container_npu_utilization, unit: percent}
""",
    "amd.yaml": """
exporter:
  metrics:
    utilization: {name: rocm_gpu_use_percent, unit: percent}
    memoryUsed: {name: rocm_gpu_memory_vram_used_bytes, unit: bytes}
    memoryTotal: {name: rocm_gpu_memory_vram_total_bytes, unit: bytes}
""",
    # A DCU behind a ROCm-compatible exporter: the same names as AMD, told apart by `vendor`.
    "hygon.yaml": """
exporter:
  labels: {node: hostname, device: gpu_id, model: card_model}
  metrics:
    utilization: {name: rocm_gpu_use_percent, unit: percent}
    memoryUsed: {name: rocm_gpu_memory_vram_used_bytes, unit: bytes}
    memoryTotal: {name: rocm_gpu_memory_vram_total_bytes, unit: bytes}
""",
}


def test_values_can_name_the_metrics_a_site_really_has(fleet: Path, tmp_path: Path) -> None:
    for file, text in SEED_NAMES.items():
        path = fleet / "vendors" / file
        merged = merge_data(yaml.safe_load(path.read_text()), yaml.safe_load(text))
        path.write_text(yaml.safe_dump(merged, sort_keys=False))
    out = render_into(fleet, tmp_path / "out")
    exps = exporters(values.load(fleet).envs["prod"])
    by_id = {e.vendor: e for e in exps}
    total = by_id["nvidia"].memory_total
    assert total is not None and total.name == "DCGM_FI_DEV_FB_TOTAL"
    assert by_id["nvidia"].memory_free is None
    assert by_id["ascend"].utilization.name == "container_npu_utilization"
    objs = monitoring_objects(out, "prod")
    exprs = [r["expr"] for g in rule_groups(objs) for r in g["rules"]]
    assert any('rocm_gpu_use_percent{vendor="hygon"}' in e for e in exprs)
    assert any('rocm_gpu_use_percent{vendor="amd"}' in e for e in exprs)
    # Same raw facts, now in the seed's names and units: NVIDIA's total is 80,000 MiB.
    nvidia, amd = CASES["nvidia"], CASES["amd"]
    assert by_id["nvidia"].memory_reserved is None  # a total makes reserved memory moot
    seed = {
        **CASES,
        "nvidia": Case(nvidia.node, nvidia.model, 87, 30000, 80000, 30000 * MiB, 0.375),
        "amd": Case(amd.node, amd.model, 40, 32e9, 128e9, 32e9, 0.25),
    }
    # The names under test here are the values' overrides, so the inputs use them.
    inputs = [i for exp in exps for i in vendor_inputs(exp, seed[exp.vendor])]
    wants = {exp.vendor: unified_labels(exp, seed[exp.vendor]) for exp in exps}
    report = run_rule_tests(objs, tmp_path, inputs, vendor_tests(wants, seed))
    assert "SUCCESS" in report


# ------------------------------------------------------------------------------------ dashboard

PROMQL_WORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
    "unless", "offset", "inf", "nan",
}  # fmt: skip


def metric_names(expr: str) -> set[str]:
    """Metric names a PromQL expression reads: identifiers that are not functions, keywords,
    label names (in {...} or by/without/on/ignoring lists), strings or durations."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", "", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    text = re.sub(r"\[[^\]]*\]", "", text)
    names = set()
    for match in re.finditer(r"(?<![\w:.])([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\()?", text):
        word, call = match.group(1), match.group(2)
        if call or word.lower() in PROMQL_WORDS:
            continue
        names.add(word)
    return names


def grafana_free(expr: str) -> str:
    return expr.replace("$__range_s", "3600").replace("$__range", "1h")


def test_dashboard_queries_read_only_recorded_series(fleet: Path, tmp_path: Path) -> None:
    out = render_into(fleet, tmp_path / "out")
    objs = monitoring_objects(out, "prod")
    board_text = configmap(objs, DASHBOARD_CONFIGMAP)["data"][DASHBOARD_KEY]
    exprs = queries(board_text)
    assert len(exprs) >= 7
    recorded = {r["record"] for g in rule_groups(objs) for r in g["rules"] if "record" in r}
    exps = exporters(values.load(fleet).envs["prod"])
    emitted = {n for e in exps for n in e.metric_names} | KSM_SERIES
    # the alerting rules read the exporters' health series, the scrape's `up`, and
    # kube-state-metrics
    emitted |= {h.metric for e in exps for h in e.health} | {"up"}
    for expr in exprs:
        used = metric_names(grafana_free(expr))
        assert used, expr
        assert used <= recorded, f"{expr} reads {sorted(used - recorded)}, not recorded"
    # ... and the rules themselves read only what exporters, kube-state-metrics or rules give.
    for group in rule_groups(objs):
        for rule in group["rules"]:
            used = metric_names(rule["expr"])
            assert used <= recorded | emitted, f"{rule['expr']} reads {used - recorded - emitted}"
    # Every query parses: promtool checks them as recording rules.
    check = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"dashboard:query{i}:check", "expr": grafana_free(e)}
                    for i, e in enumerate(exprs)
                ],
            }
        ]
    }
    (tmp_path / "dashboard.rules.yaml").write_text(yaml.safe_dump(check))
    promtool("check", "rules", "dashboard.rules.yaml", cwd=tmp_path)


def test_metric_name_parser() -> None:
    assert metric_names('sum by (gpu_brand) (rate(foo_total{job="a:b"}[5m])) / on(x) bar:baz') == {
        "foo_total",
        "bar:baz",
    }
    assert metric_names('label_replace(m, "node", "$1", "Hostname", "(.+)") * 1e6') == {"m"}


def test_dashboard_json_is_deterministic_and_lists_every_panel(fleet: Path, tmp_path: Path) -> None:
    first = render_into(fleet, tmp_path / "a")
    second = render_into(fleet, tmp_path / "b")
    rel = Path("base/monitoring/dashboard")
    files = sorted(p.name for p in (first / rel).iterdir())
    for name in files:
        assert (first / rel / name).read_text() == (second / rel / name).read_text()
    board_cm = configmap(monitoring_objects(first, "prod"), DASHBOARD_CONFIGMAP)
    text = board_cm["data"][DASHBOARD_KEY]
    data = json.loads(text)
    assert text == json.dumps(data, sort_keys=True, indent=2) + "\n"
    titles = [p["title"] for p in data["panels"]]
    for word in (
        "Devices by brand",
        "utilisation by brand",
        "per node",
        "Top 10",
        "Memory",
        "Quota",
        "Cost",
    ):
        assert any(word in t for t in titles), word
    assert all(t["refId"] for p in data["panels"] for t in p["targets"])
    assert all(p["options"] for p in data["panels"]), "a panel without options"


def test_fleet_monitoring_settings(fleet: Path, tmp_path: Path) -> None:
    fleet_file = fleet / "fleet.yaml"
    fleet_file.write_text(
        fleet_file.read_text()
        + "monitoring:\n  namespace: gpu-monitoring\n"
        + "  prometheusSelectorLabels: {release: kube-prometheus-stack}\n"
        + "  grafanaFolder: Accelerators\n"
    )
    out = render_into(fleet, tmp_path / "out")
    objs = monitoring_objects(out, "prod")
    exporters_ns = "accelerator-exporters"
    agents = [
        o
        for o in objs
        if o["metadata"]["labels"].get("app.kubernetes.io/component") == "exporter"
        or o["metadata"]["name"] == exporters_ns
    ]
    assert {o["metadata"].get("namespace", exporters_ns) for o in agents} == {exporters_ns}
    assert {
        o["metadata"].get("namespace", o["metadata"]["name"]) for o in objs if o not in agents
    } == {"gpu-monitoring"}
    for obj in objs:
        if obj["kind"] in ("PodMonitor", "PrometheusRule"):
            assert obj["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    board = configmap(objs, DASHBOARD_CONFIGMAP)
    assert board["metadata"]["annotations"]["grafana_folder"] == "Accelerators"


# ----------------------------------------------------------------------------------------- checks


def test_exporter_labels_that_swap_in_a_cycle_are_reported(fleet: Path) -> None:
    path = fleet / "vendors" / "nvidia.yaml"
    path.write_text(path.read_text() + "exporter:\n  labels: {node: device, device: node}\n")
    found = [line for line in lines(fleet) if "MON001" in line]
    assert found and found[0].startswith("values/vendors/nvidia.yaml:"), found


def test_a_vendor_without_exporter_is_a_warning_and_gets_no_scrape_config(
    fleet: Path, tmp_path: Path
) -> None:
    (fleet / "vendors/iluvatar.yaml").write_text(
        """
resourceName: iluvatar.ai/gpu
pciVendor: "1e3e"
selectorLabel: accelerator
modelLabel: gpu-model
nodeLabels: {accelerator: iluvatar-gpu, gpu-brand: iluvatar}
taints: [{key: iluvatar.ai/gpu, value: present, effect: NoSchedule}]
devicePlugin:
  name: iluvatar-device-plugin
  image: registry.example.com/iluvatar/device-plugin
  version: v1.0.0
  namespace: accelerator-plugins
  volumes: [{name: dp, hostPath: {path: /var/lib/kubelet/device-plugins}}]
  volumeMounts: [{name: dp, mountPath: /var/lib/kubelet/device-plugins}]
pools:
  - {name: bi150, model: BI-V150, devicesPerNode: 8, nodes: [iluvatar-node-01],
     pciDevices: ["0001"]}
""",
    )
    found = [line for line in lines(fleet) if "MON002" in line]
    assert found and found[0].startswith("values/vendors/iluvatar.yaml:"), found
    out = render_into(fleet, tmp_path / "out")
    objs = monitoring_objects(out, "prod")
    assert len([o for o in objs if o["kind"] == "PodMonitor"]) == len(CASES)


def test_a_label_is_read_before_another_mapping_overwrites_it(fleet: Path) -> None:
    path = fleet / "vendors" / "nvidia.yaml"
    path.write_text(path.read_text() + "exporter:\n  labels: {node: gpu, device: node}\n")
    exp = next(e for e in exporters(values.load(fleet).envs["prod"]) if e.vendor == "nvidia")
    # `device` copies the exporter's `node` label before `node` is overwritten from `gpu`.
    assert unified.ordered_mappings(exp) == [
        ("device", "node"),
        ("node", "gpu"),
        ("partition", "GPU_I_ID"),
        ("model", "modelName"),
    ]


def test_every_rule_of_a_cluster_names_it_and_passes_promtool(tmp_path: Path) -> None:
    """TWO_CLUSTERS: each cluster's recorded series and alerts carry `cluster` (aggregations
    too, whose `by` drops the scraped labels); an environment without clusters adds none."""
    values_dir = tree(tmp_path / "two", TWO_CLUSTERS, fleet=PROD_FLEET)
    out = render_into(values_dir, tmp_path / "two-out")
    for cluster in ("main", "domestic"):
        objs = monitoring_objects(out, f"prod/{cluster}")
        rules = [r for g in rule_groups(objs) for r in g["rules"]]
        assert {r.get("record") for r in rules} >= {DEVICES, QUOTA_USED}
        assert any("alert" in r for r in rules)
        assert {r["labels"]["cluster"] for r in rules} == {cluster}
        rules_file = write_rules(objs, tmp_path / f"{cluster}.rules.yaml")
        assert "SUCCESS" in promtool(
            "check", "rules", "--lint=all", "--lint-fatal", rules_file.name, cwd=tmp_path
        )
    one = render_into(tree(tmp_path / "one", fleet=PROD_FLEET), tmp_path / "one-out")
    rules = [r for g in rule_groups(monitoring_objects(one, "prod")) for r in g["rules"]]
    assert rules and not [r for r in rules if "cluster" in r.get("labels", {})]
