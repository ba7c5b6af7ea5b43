"""Scheduling (issue 12, issue 8 items 7 and 8): queues before jobs, one accounting per backend,
the Volcano and kube-scheduler configurations, Kueue flavors, placement preferences and topology
refusals; each check fed a values tree that breaks it, with its code at file:line."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from generator.builders import scheduling
from generator.findings import Location
from generator.values import loader as values
from generator.values import quantity
from generator.values.model import FleetView
from tests.example import use_backend
from tests.fixtures import (
    AMD_MI250X,
    ASCEND_910B,
    DRA_NVIDIA,
    FLEET,
    INFERENCE,
    NVIDIA,
    OTHER_VENDORS,
    SHARED_NVIDIA,
    Obj,
    Write,
    assert_units_build_exactly,
    build_of,
    by_name,
    kustomize_build,
    plugins,
    render_into,
    team_objects,
    tool,
    tree,
    volcano_conf,
    workloads_of,
)

# Team ml: 8 NVIDIA devices and a batch Job of 4; with VOLCANO_JOB also a Volcano Job.
ML = """\
quota: {nvidia: 8}
jobs:
  cuda-training-job:
    vendor: nvidia
    devices: 4
    images: {nvidia: r/train:cuda}
"""
VOLCANO_JOB = """\
  mixed-training-job:
    kind: volcano
    images: {nvidia: r/train:cuda}
    tasks:
      nvidia-workers: {vendor: nvidia, devices: 1, replicas: 4}
"""


def sched_tree(root: Path, backend: str, files: dict[str, str], extra: str = "") -> Path:
    """A tree whose fleet runs `backend` (`extra`: more of fleet.yaml's `scheduling:`) and lets
    quotas overcommit, with `files` beside the defaults."""
    fleet = FLEET + f"capacity: {{allowOvercommit: true}}\nscheduling:\n  backend: {backend}\n"
    return tree(root, files, fleet=fleet + extra)


def _wave(obj: Obj) -> int:
    # Argo CD's own annotation: a key Argo CD does not read would order nothing.
    return int((obj["metadata"].get("annotations") or {}).get("argocd.argoproj.io/sync-wave", "0"))


# ---- issue 8 item 8: queues sync before the jobs that name them -------------------------------


@pytest.mark.parametrize("backend", ["volcano", "kueue"])
def test_queues_sync_a_wave_before_the_workloads_that_use_them(
    backend: str, tmp_path: Path
) -> None:
    # Kueue cannot account a Volcano Job (SCH002): the batch Job alone there.
    ml = ML + VOLCANO_JOB if backend == "volcano" else ML
    values_dir = sched_tree(tmp_path, backend, {"teams/ml.yaml": ml})
    docs = kustomize_build(render_into(values_dir, tmp_path / "out") / "overlays/prod/team-ml")
    queues = [d for d in docs if d["kind"] in ("Queue", "ClusterQueue", "LocalQueue")]
    workloads = [d for d in docs if d["kind"] in ("Job", "Deployment")]
    namespaces = [d for d in docs if d["kind"] == "Namespace"]
    assert queues and workloads
    assert max(_wave(q) for q in queues) < min(_wave(w) for w in workloads)
    # LocalQueues are namespaced: their namespace comes first.
    assert max(_wave(n) for n in namespaces) < min(_wave(q) for q in queues)
    if backend == "volcano":
        mixed = by_name(docs, "Job")["mixed-training-job"]
        assert mixed["spec"]["queue"] == "team-ml"
        assert _wave(by_name(docs, "Queue")["team-ml"]) < _wave(mixed)


# ---- issue 8 item 7: one accounting per backend -------------------------------------------------


@pytest.mark.parametrize(
    ("backend", "quota_line"),
    [("quota", "8"), ("volcano", "11"), ("kueue", "11")],
)
def test_one_accounting_per_backend(backend: str, quota_line: str, tmp_path: Path) -> None:
    # Team ml (8 NVIDIA, 3 more borrowed) and the migrating inference service; AMD for a
    # resource no quota names.
    files = {
        "vendors/ascend.yaml": ASCEND_910B,
        "vendors/amd.yaml": AMD_MI250X,
        "teams/ml.yaml": ML + "borrowing: {nvidia: 3}\n",
        "teams/inference.yaml": INFERENCE,
    }
    out = render_into(sched_tree(tmp_path, backend, files), tmp_path / "out")
    ml_docs = kustomize_build(out / "overlays/prod/team-ml")
    inf_docs = kustomize_build(out / "overlays/prod/team-inference")
    hard = by_name(ml_docs, "ResourceQuota")["accelerators"]["spec"]["hard"]
    # With a queue the quota is the queue's ceiling (8 own + 3 borrowed): it never refuses a
    # pod the queue admitted. Without one it is the team's quota.
    assert hard["requests.nvidia.com/gpu"] == quota_line
    deployment = by_name(inf_docs, "Deployment")["inference-service-nvidia"]
    template = deployment["spec"]["template"]
    queue_label = deployment["metadata"]["labels"].get("kueue.x-k8s.io/queue-name")
    annotations = template["metadata"].get("annotations") or {}
    if backend == "volcano":
        queue = by_name(ml_docs, "Queue")["team-ml"]["spec"]
        assert queue["capability"]["nvidia.com/gpu"] == 11
        assert queue["deserved"]["nvidia.com/gpu"] == 8
        assert queue["capability"]["amd.com/gpu"] == 0  # no quota: no devices
        # Inference is scheduled by Volcano in the team's queue, so the queue sees it too.
        assert template["spec"]["schedulerName"] == "volcano"
        assert annotations == {"scheduling.volcano.sh/queue-name": "team-inference"}
        assert queue_label is None
    elif backend == "kueue":
        cq = by_name(ml_docs, "ClusterQueue")["team-ml"]["spec"]
        groups = {g["coveredResources"][0]: g["flavors"] for g in cq["resourceGroups"]}
        assert groups["nvidia.com/gpu"] == [
            {
                "name": "nvidia-a100",
                "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8, "borrowingLimit": 3}],
            }
        ]
        # Deployment integration: Kueue admits inference pods against the team's queue.
        assert queue_label == "team-inference"
        assert "schedulerName" not in template["spec"]
        cuda = by_name(ml_docs, "Job")["cuda-training-job"]
        assert cuda["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-ml"
    else:
        assert queue_label is None and not annotations
        assert "schedulerName" not in template["spec"]
        assert not by_name(ml_docs, "Queue") and not by_name(ml_docs, "ClusterQueue")


def test_borrowing_and_nominal_quota_fill_the_pools_in_order(tmp_path: Path) -> None:
    files = {
        "vendors/nvidia.yaml": "pools:\n  - {name: h100, model: H100, devicesPerNode: 8, nodeCount: 1}\n"
        "  - {name: a100, model: A100, devicesPerNode: 4, nodeCount: 2}\n",
        "teams/ml.yaml": ML.replace("nvidia: 8", "nvidia: 10") + "borrowing: {nvidia: 9}\n",
    }
    view = values.load(sched_tree(tmp_path, "kueue", files)).envs["prod"]
    team = next(t for t in view.teams if t.name == "ml")
    cq = next(o for o in team_objects(view, team)[0] if o["kind"] == "ClusterQueue")
    [nvidia] = [
        g for g in cq["spec"]["resourceGroups"] if g["coveredResources"] == ["nvidia.com/gpu"]
    ]
    assert [
        (f["name"], f["resources"][0]["nominalQuota"], f["resources"][0]["borrowingLimit"])
        for f in nvidia["flavors"]
    ] == [("nvidia-h100", 8, 8), ("nvidia-a100", 2, 1)]


# ---- Kueue flavors and what Kueue must cover -----------------------------------------------------


def test_kueue_flavors_per_pool_and_cpu_memory_covered(tmp_path: Path) -> None:
    inference = INFERENCE.replace(
        "    vendorMounts: false\n",
        "    vendorMounts: false\n    resources: {requests: {cpu: 500m, memory: 1Gi}}\n",
    )
    files = {
        **OTHER_VENDORS,
        "teams/inference.yaml": inference,
        "environments/prod.yaml": "teams:\n  inference:\n    services:\n"
        "      inference-service: {phase: dual-run}\n",
    }
    out = render_into(sched_tree(tmp_path, "kueue", files), tmp_path / "out")
    flavors = by_name(kustomize_build(out / "overlays/prod/scheduling"), "ResourceFlavor")
    assert set(flavors) == {
        "nvidia-a100",
        "ascend-910b",
        "amd-mi250x",
        "hygon-z100l",
        "cambricon-mlu370",
        "general",
    }
    assert flavors["hygon-z100l"]["spec"] == {
        "nodeLabels": {
            "feature.node.kubernetes.io/accelerator": "hygon-dcu",
            "feature.node.kubernetes.io/dcu-model": "Z100L",
        },
        "nodeTaints": [
            {
                "key": "feature.node.kubernetes.io/accelerator",
                "value": "hygon-dcu",
                "effect": "NoSchedule",
            }
        ],
        "tolerations": [
            {
                "key": "feature.node.kubernetes.io/accelerator",
                "operator": "Equal",
                "value": "hygon-dcu",
                "effect": "NoSchedule",
            }
        ],
    }
    assert flavors["general"]["spec"] == {}
    inf_docs = kustomize_build(out / "overlays/prod/team-inference")
    cq = by_name(inf_docs, "ClusterQueue")["team-inference"]["spec"]
    # prod runs inference-service dual-run: 2 nvidia + 2 ascend replicas, each 500m and 1Gi.
    assert cq["resourceGroups"][-1] == {
        "coveredResources": ["cpu", "memory"],
        "flavors": [
            {
                "name": "general",
                "resources": [
                    {"name": "cpu", "nominalQuota": "2", "borrowingLimit": 0},
                    {"name": "memory", "nominalQuota": "4Gi", "borrowingLimit": 0},
                ],
            }
        ],
    }
    assert {ns["metadata"]["name"] for ns in by_name(inf_docs, "LocalQueue").values()} == {
        "team-inference"
    }


@pytest.mark.parametrize(
    ("text", "parsed", "shown"),
    [
        ("500m", "1/2", "500m"),
        ("2Gi", "2147483648", "2Gi"),
        ("1.5", "3/2", "1500m"),
        ("1e3", "1000", "1000"),
        (3, "3", "3"),
        ("12Mi", "12582912", "12Mi"),
    ],
)
def test_quantities(text: Any, parsed: str, shown: str) -> None:
    from fractions import Fraction

    value = quantity.parse_quantity(text)
    assert value == Fraction(parsed)
    assert quantity.format_quantity(value) == shown
    assert quantity.parse_quantity("12Qi") is None


# ---- the Volcano scheduler configuration ---------------------------------------------------------


def test_volcano_binpack_weights_per_vendor_resource(tmp_path: Path) -> None:
    files = {
        **OTHER_VENDORS,
        "vendors/nvidia.yaml": NVIDIA + "binpackWeight: 3\n",
        "vendors/amd.yaml": AMD_MI250X + "binpackWeight: 40\n",
    }
    values_dir = sched_tree(tmp_path, "volcano", files, "  volcano: {binpackWeight: 7}\n")
    conf = volcano_conf(render_into(values_dir, tmp_path / "out"))
    binpack = plugins(conf)["binpack"]["arguments"]
    assert binpack == {
        "binpack.weight": 7,
        "binpack.cpu": 1,
        "binpack.memory": 1,
        "binpack.resources": "amd.com/gpu, cambricon.com/mlu, huawei.com/Ascend910, nvidia.com/gpu",
        # AMD (40) and Hygon (catalog 10) share amd.com/gpu: the larger weight.
        "binpack.resources.amd.com/gpu": 40,
        "binpack.resources.cambricon.com/mlu": 10,
        "binpack.resources.huawei.com/Ascend910": 10,
        "binpack.resources.nvidia.com/gpu": 3,
    }
    assert all(isinstance(v, int) for k, v in binpack.items() if k != "binpack.resources")
    assert plugins(conf)["nodeorder"]["arguments"]["leastrequested.weight"] == 0
    assert conf["actions"] == "enqueue, allocate, backfill, reclaim"
    assert list(plugins(conf))[:2] == ["priority", "gang"]
    assert "capacity" in plugins(conf) and "proportion" not in plugins(conf)
    assert "resourcequota" in plugins(conf)


def test_volcano_proportion_policy_has_no_deserved_and_no_reclaim(tmp_path: Path) -> None:
    quota = "quota: {hygon: 8, nvidia: 4, ascend: 4}"
    files = {
        **OTHER_VENDORS,
        "teams/inference.yaml": INFERENCE.replace("quota: {nvidia: 4, ascend: 4}", quota),
    }
    values_dir = sched_tree(tmp_path, "volcano", files, "  volcano: {queuePolicy: proportion}\n")
    out = render_into(values_dir, tmp_path / "out")
    conf = volcano_conf(out)
    assert conf["actions"] == "enqueue, allocate, backfill"
    assert "proportion" in plugins(conf) and "capacity" not in plugins(conf)
    queue = by_name(kustomize_build(out / "overlays/prod/team-inference"), "Queue")[
        "team-inference"
    ]
    assert "deserved" not in queue["spec"]
    assert queue["spec"]["capability"] == {
        "amd.com/gpu": 8,  # hygon: 8
        "cambricon.com/mlu": 0,
        "huawei.com/Ascend910": 4,
        "nvidia.com/gpu": 4,
    }


# ---- kube-scheduler packing profile ---------------------------------------------------------------


# The profile for the control plane's own scheduler (runs: control-plane, rendered in unit
# `scheduling`), which needs its kubeconfig in the file (SCH010).
CONTROL_PLANE = (
    "  kubeScheduler: {packing: true, runs: control-plane, "
    "kubeconfig: /etc/kubernetes/scheduler.conf}\n"
)


def _kube_scheduler_config(out: Path, unit: str = "scheduling") -> tuple[Obj, str]:
    cms = by_name(kustomize_build(out / "overlays/prod" / unit), "ConfigMap")
    cm = cms["accel-kube-scheduler-config"]
    text = cm["data"]["kube-scheduler-config.yaml"]
    return yaml.safe_load(text), text


def schedcheck(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "kube-scheduler-config.yaml"
    path.write_text(text)
    return subprocess.run(
        [str(tool("schedcheck")), str(path)], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("backend", ["quota", "kueue"])
def test_kube_scheduler_packing_profile_is_what_kube_scheduler_accepts(
    backend: str, tmp_path: Path
) -> None:
    files = {**OTHER_VENDORS, "vendors/nvidia.yaml": NVIDIA + "binpackWeight: 100\n"}
    values_dir = sched_tree(tmp_path, backend, files, CONTROL_PLANE)
    out = render_into(values_dir, tmp_path / "out")
    config, text = _kube_scheduler_config(out)
    [profile] = config["profiles"]
    assert profile["schedulerName"] == "default-scheduler"
    args = {p["name"]: p["args"] for p in profile["pluginConfig"]}
    assert set(args) == {"NodeResourcesFit", "PodTopologySpread"}
    # Packing must outweigh what spreads: no system-default topology spread, no balancing score.
    assert args["PodTopologySpread"] == {"defaultingType": "List"}
    assert profile["plugins"] == {
        "score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}
    }
    strategy = args["NodeResourcesFit"]["scoringStrategy"]
    assert strategy["type"] == "MostAllocated"
    assert {r["name"]: r["weight"] for r in strategy["resources"]} == {
        "cpu": 1,
        "memory": 1,
        "amd.com/gpu": 10,
        "cambricon.com/mlu": 10,
        "huawei.com/Ascend910": 10,
        "nvidia.com/gpu": 100,
    }
    # The kube-scheduler's own decoding and validation (generator/toolchain/gotools/schedcheck) accept it ...
    ok = schedcheck(tmp_path, text)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # ... and refuse what kube-scheduler would refuse at startup.
    bad = schedcheck(tmp_path, text.replace("weight: 100", "weight: 101"))
    assert bad.returncode == 1
    assert "resource weight of nvidia.com/gpu not in valid range (0, 100]" in bad.stdout
    typo = schedcheck(tmp_path, text.replace("scoringStrategy", "scoringStrategies"))
    assert typo.returncode == 1 and 'unknown field "scoringStrategies"' in typo.stdout


def test_second_scheduler_profile_is_named_on_the_pods(tmp_path: Path) -> None:
    """The fleet's own packing scheduler (runs: fleet, the default) under the name values give:
    its profile, lease and the team's pods name it, in unit packing-scheduler; no kubeconfig
    (in a pod it uses its ServiceAccount)."""
    values_dir = sched_tree(
        tmp_path,
        "quota",
        {"teams/ml.yaml": ML},
        "  kubeScheduler: {packing: true, schedulerName: accel-packing}\n",
    )
    out = render_into(values_dir, tmp_path / "out")
    config, text = _kube_scheduler_config(out, "packing-scheduler")
    assert config["profiles"][0]["schedulerName"] == "accel-packing"
    assert config["leaderElection"]["resourceName"] == "accel-packing"
    assert "clientConnection" not in config
    assert schedcheck(tmp_path, text).returncode == 0
    ml = kustomize_build(out / "overlays/prod/team-ml")
    assert by_name(ml, "Job")["cuda-training-job"]["spec"]["template"]["spec"]["schedulerName"] == (
        "accel-packing"
    )
    assert not (out / "overlays/prod/scheduling").exists()


def test_no_packing_profile_by_default_nor_under_volcano(tmp_path: Path) -> None:
    view = values.load(tree(tmp_path / "default")).envs["prod"]
    assert scheduling.build(build_of(view)) == []
    values_dir = sched_tree(tmp_path, "volcano", {}, "  kubeScheduler: {packing: true}\n")
    view = values.load(values_dir).envs["prod"]
    assert [c.name for c in scheduling.build(build_of(view))] == ["scheduling/volcano"]


def test_a_kube_scheduler_section_without_packing_renders_no_profile(tmp_path: Path) -> None:
    """`kubeScheduler` set for its other keys (its namespace) does not turn packing on."""
    view = sched_view(tmp_path, "quota", "  kubeScheduler: {namespace: sched}\n")
    assert scheduling.packing(view) is False
    assert scheduling.build(build_of(view)) == []


def test_the_volcano_configuration_points_its_findings_at_scheduling(tmp_path: Path) -> None:
    """`scheduling:` in fleet.yaml (line 6 of the test tree) made the Volcano configuration."""
    [volcano] = scheduling.build(build_of(sched_view(tmp_path, "volcano")))
    assert (volcano.name, str(volcano.origin)) == ("scheduling/volcano", "values/fleet.yaml:6:1")
    assert [str(volcano.origin_of(o)) for o in volcano.objects] == ["values/fleet.yaml:6:1"]


@pytest.mark.parametrize("backend", ["quota", "volcano", "kueue"])
def test_example_fleet_renders_and_builds_under_each_backend(
    backend: str, values_dir: Path, write: Write, tmp_path: Path
) -> None:
    use_backend(values_dir, write, backend, "  kubeScheduler: {packing: true}\n")
    assert assert_units_build_exactly(tmp_path / "out", values_dir) >= 12


# ---- whole objects, built in process (mutation testing: each field a user reads) ----------------


def sched_view(
    root: Path, backend: str, extra: str = "", files: dict[str, str] | None = None
) -> FleetView:
    """The prod FleetView of sched_tree(root, backend, files or {}, extra)."""
    return values.load(sched_tree(root, backend, files or {}, extra)).envs["prod"]


MANAGED = {"app.kubernetes.io/managed-by": "accel-gitops"}
FLEET_SOURCE = {"accel-gitops.io/source": "values/fleet.yaml"}

# volcano_conf / volcano_configmap: the scheduler configuration docs/scheduling.md shows, for the
# default tree (one NVIDIA vendor, catalog binpackWeight 10) and `binpackWeight` unset (10).
VOLCANO_CONF_DEFAULT = {
    "actions": "enqueue, allocate, backfill, reclaim",
    "tiers": [
        {
            "plugins": [
                {"name": "priority"},
                {"name": "gang", "enablePreemptable": False},
                {"name": "conformance"},
            ]
        },
        {
            "plugins": [
                {"name": "drf", "enablePreemptable": False},
                {"name": "predicates"},
                {"name": "capacity"},
                {"name": "resourcequota"},
                {
                    "name": "nodeorder",
                    "arguments": {
                        "leastrequested.weight": 0,
                        "balancedresource.weight": 0,
                        "nodeaffinity.weight": 20,
                    },
                },
                {
                    "name": "binpack",
                    "arguments": {
                        "binpack.weight": 10,
                        "binpack.cpu": 1,
                        "binpack.memory": 1,
                        "binpack.resources": "nvidia.com/gpu",
                        "binpack.resources.nvidia.com/gpu": 10,
                    },
                },
            ]
        },
    ],
}


def test_volcano_configmap_is_the_charts_with_the_documented_configuration(tmp_path: Path) -> None:
    """Argo CD owns the ConfigMap the Volcano chart's scheduler reads: its name, key and content."""
    cm = scheduling.volcano_configmap(workloads_of(sched_view(tmp_path, "volcano")))
    conf = yaml.safe_load(cm["data"].pop("volcano-scheduler.conf"))
    assert cm == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "volcano-scheduler-configmap",
            "namespace": "volcano-system",
            "labels": MANAGED,
            "annotations": FLEET_SOURCE,
        },
        "data": {},
    }
    assert conf == VOLCANO_CONF_DEFAULT


def test_volcano_configmap_goes_where_the_values_say(tmp_path: Path) -> None:
    """A Volcano installed under another release name reads its own ConfigMap and namespace."""
    extra = "  volcano: {namespace: vc-system, configMap: vc-scheduler-configmap}\n"
    cm = scheduling.volcano_configmap(workloads_of(sched_view(tmp_path, "volcano", extra)))
    assert cm["metadata"]["name"] == "vc-scheduler-configmap"
    assert cm["metadata"]["namespace"] == "vc-system"
    assert list(cm["data"]) == ["volcano-scheduler.conf"]


# ---- kube_scheduler_config / kube_scheduler_configmap ---------------------------------------------

# KubeSchedulerConfiguration v1 as docs/scheduling.md shows it, for the default NVIDIA vendor.
PACKING_PROFILE = {
    "plugins": {"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}},
    "pluginConfig": [
        {
            "name": "NodeResourcesFit",
            "args": {
                "scoringStrategy": {
                    "type": "MostAllocated",
                    "resources": [
                        {"name": "cpu", "weight": 1},
                        {"name": "memory", "weight": 1},
                        {"name": "nvidia.com/gpu", "weight": 10},
                    ],
                }
            },
        },
        {"name": "PodTopologySpread", "args": {"defaultingType": "List"}},
    ],
}


def test_kube_scheduler_configmap_in_kube_system_with_the_packing_profile(tmp_path: Path) -> None:
    """The control plane's own scheduler's profile: no lease of its own, its kubeconfig, in
    kube-system."""
    cm = scheduling.kube_scheduler_configmap(sched_view(tmp_path, "quota", CONTROL_PLANE))
    config = yaml.safe_load(cm["data"].pop("kube-scheduler-config.yaml"))
    assert cm == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "accel-kube-scheduler-config",
            "namespace": "kube-system",
            "labels": MANAGED,
            "annotations": FLEET_SOURCE,
        },
        "data": {},
    }
    assert config == {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", **PACKING_PROFILE}],
        "clientConnection": {"kubeconfig": "/etc/kubernetes/scheduler.conf"},
    }


def test_kube_scheduler_configmap_goes_to_the_namespace_the_values_name(tmp_path: Path) -> None:
    """A second scheduler run in a namespace of its own mounts the ConfigMap from there."""
    extra = "  kubeScheduler: {packing: true, namespace: accel-scheduler}\n"
    cm = scheduling.kube_scheduler_configmap(sched_view(tmp_path, "kueue", extra))
    assert cm["metadata"]["namespace"] == "accel-scheduler"


def test_second_scheduler_takes_its_own_lease_in_kube_system(tmp_path: Path) -> None:
    """A named scheduler elects a leader on a lease of its own name, never the default's."""
    extra = (
        "  kubeScheduler: {packing: true, schedulerName: accel-packing, "
        "kubeconfig: /etc/kubernetes/scheduler.conf}\n"
    )
    config = scheduling.kube_scheduler_config(sched_view(tmp_path, "quota", extra))
    assert config == {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "accel-packing", **PACKING_PROFILE}],
        "clientConnection": {"kubeconfig": "/etc/kubernetes/scheduler.conf"},
        "leaderElection": {
            "leaderElect": True,
            "resourceName": "accel-packing",
            "resourceNamespace": "kube-system",
        },
    }


# ---- kueue_flavor -------------------------------------------------------------------------------


def test_kueue_flavor_names_its_vendor_and_pool(tmp_path: Path) -> None:
    """A flavor per pool, labelled with its vendor and tolerating the pool's own taints."""
    nvidia = (
        "pools:\n  - {name: h100, model: H100, devicesPerNode: 8, nodes: [n3],\n"
        "     taints: [{key: pool, value: h100, effect: NoSchedule}]}\n"
    )
    view = sched_view(tmp_path, "kueue", files={"vendors/nvidia.yaml": nvidia})
    [vendor] = view.vendors
    assert scheduling.kueue_flavor(view, vendor, vendor.pools[0]) == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {
            "name": "nvidia-h100",
            "labels": {**MANAGED, "accel-gitops.io/vendor": "nvidia"},
            "annotations": {"accel-gitops.io/source": "values/vendors/nvidia.yaml"},
        },
        "spec": {
            "nodeLabels": {
                "feature.node.kubernetes.io/accelerator": "nvidia-gpu",
                "feature.node.kubernetes.io/gpu-model": "H100",
            },
            "nodeTaints": [{"key": "pool", "value": "h100", "effect": "NoSchedule"}],
            "tolerations": [
                {"key": "pool", "operator": "Equal", "value": "h100", "effect": "NoSchedule"}
            ],
        },
    }


# ---- general_requests ---------------------------------------------------------------------------


def test_general_requests_count_limits_where_no_request_is_set(tmp_path: Path) -> None:
    """The API server defaults a missing request to the limit, so Kueue's cpu/memory quota must."""
    pods: list[tuple[Obj, int]] = [
        # limits only: cpu 500m is the request; the accelerator is not a general resource.
        ({"containers": [{"resources": {"limits": {"cpu": "500m", "nvidia.com/gpu": 1}}}]}, 1),
        # a request wins over its limit; memory 0 asks for nothing.
        (
            {
                "containers": [
                    {"resources": {"requests": {"cpu": "1", "memory": 0}, "limits": {"cpu": "2"}}}
                ]
            },
            2,
        ),
    ]
    # cpu: 500m + 2 x 1.
    view = sched_view(tmp_path, "kueue")
    assert scheduling.general_requests(view, pods, {"nvidia.com/gpu"}) == {"cpu": "2500m"}


def test_general_requests_keep_a_resource_below_one_unit(tmp_path: Path) -> None:
    """Half a cpu is still requested: the general flavor covers it."""
    pods: list[tuple[Obj, int]] = [
        ({"containers": [{"resources": {"requests": {"cpu": "500m"}}}]}, 1)
    ]
    view = sched_view(tmp_path, "kueue")
    assert scheduling.general_requests(view, pods, set()) == {"cpu": "500m"}


# ---- team_ceiling, binpack_weight -----------------------------------------------------------------


def test_no_borrowing_without_a_queue(tmp_path: Path) -> None:
    """Under `quota` nothing lends: the team's ceiling is its share, whatever `borrowing` says."""
    files = {"teams/ml.yaml": "quota: {nvidia: 4}\nborrowing: {nvidia: 3}\n"}
    view = sched_view(tmp_path, "quota", files=files)
    [team] = [t for t in view.teams if t.name == "ml"]
    [vendor] = view.vendors
    assert scheduling.team_ceiling(view, team, vendor) == 4


# A vendor outside the catalog: no binpackWeight of its own.
ACME = """\
resourceName: acme.example/npu
selectorLabel: accelerator
modelLabel: npu-model
nodeLabels: {accelerator: acme-npu}
taints: [{key: acme.example/npu, value: present, effect: NoSchedule}]
devicePlugin:
  name: acme-device-plugin
  image: registry.example.com/acme/device-plugin
  version: v1.2.3
  namespace: accelerator-plugins
  volumes:
    - {name: device-plugin, hostPath: {path: /var/lib/kubelet/device-plugins}}
  volumeMounts:
    - {name: device-plugin, mountPath: /var/lib/kubelet/device-plugins}
pools:
  - {name: p1, model: m1, devicesPerNode: 8, nodes: [node-02]}
"""


def test_a_vendor_outside_the_catalog_packs_with_the_default_weight(tmp_path: Path) -> None:
    """binpackWeight defaults to 10 (docs/scheduling.md) where neither catalog nor values set it."""
    view = sched_view(tmp_path, "quota", files={"vendors/acme.yaml": ACME})
    assert scheduling.resource_weights(view) == {"acme.example/npu": 10, "nvidia.com/gpu": 10}


def test_a_dra_vendor_has_no_packing_weight(tmp_path: Path) -> None:
    """Its pods claim devices instead of requesting an extended resource NodeResourcesFit could
    weigh; a shared vendor's shares are weighed like any resource."""
    files = {"vendors/nvidia-dra.yaml": DRA_NVIDIA, "vendors/nvidia-shared.yaml": SHARED_NVIDIA}
    view = sched_view(tmp_path, "quota", files=files)
    assert scheduling.resource_weights(view) == {"nvidia.com/gpu": 10, "nvidia.com/gpu.shared": 10}


# ---- build: components and where findings point ------------------------------------------------


def test_build_groups_kube_scheduler_and_kueue_flavors_with_their_origins(tmp_path: Path) -> None:
    """Each base has its own folder, and a finding on it names the values line that made it:
    `scheduling:` in fleet.yaml for the scheduler and the general flavor, the vendor's `pools:`
    for a pool's flavor."""
    nvidia = (
        "binpackWeight: 10\n"
        "pools:\n"
        "  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1]}\n"
        "  - {name: h100, model: H100, devicesPerNode: 8, nodes: [n2]}\n"
    )
    view = sched_view(tmp_path, "kueue", CONTROL_PLANE, files={"vendors/nvidia.yaml": nvidia})
    components = scheduling.build(build_of(view))
    # fleet.yaml: FLEET's four lines, `capacity:` on line 5, `scheduling:` on line 6.
    assert [(c.unit, c.name, str(c.origin)) for c in components] == [
        ("scheduling", "scheduling/kube-scheduler", "values/fleet.yaml:6:1"),
        ("scheduling", "scheduling/kueue-flavors", "values/fleet.yaml:6:1"),
    ]
    kube, flavors = components
    assert [(o["metadata"]["name"], str(kube.origin_of(o))) for o in kube.objects] == [
        ("accel-kube-scheduler-config", "values/fleet.yaml:6:1")
    ]
    assert [(o["metadata"]["name"], str(flavors.origin_of(o))) for o in flavors.objects] == [
        ("nvidia-a100", "values/vendors/nvidia.yaml:2:1"),
        ("nvidia-h100", "values/vendors/nvidia.yaml:2:1"),
        ("general", "values/fleet.yaml:6:1"),
    ]


# ---- the fleet's own packing scheduler (runs: fleet) ------------------------------------------


def _binding(kind: str, name: str, role_kind: str, role: str, ns: str | None = None) -> Obj:
    meta: Obj = {"name": name}
    if ns:
        meta["namespace"] = ns
    meta.update({"labels": MANAGED, "annotations": FLEET_SOURCE})
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "subjects": [
            {
                "kind": "ServiceAccount",
                "name": "accel-packing-scheduler",
                "namespace": "kube-system",
            }
        ],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
    }


def test_the_fleet_runs_its_packing_scheduler_as_the_kubernetes_documentation_deploys_one(
    tmp_path: Path,
) -> None:
    """ServiceAccount, the two ClusterRoleBindings and the authentication-reader RoleBinding of
    "Configure Multiple Schedulers", a lease Role of its own name, the profile's ConfigMap and a
    Deployment of the upstream image at the fleet's Kubernetes version; its own unit."""
    view = sched_view(tmp_path, "quota", "  kubeScheduler: {packing: true}\n")
    [comp] = scheduling.build(build_of(view))
    assert (comp.unit, comp.name, str(comp.origin)) == (
        "packing-scheduler",
        "packing-scheduler",
        "values/fleet.yaml:8:3",  # `kubeScheduler:` (sched_tree's fleet.yaml, line 8)
    )
    cm, account, *bindings, role, lease_binding, deployment = comp.objects
    assert cm == scheduling.kube_scheduler_configmap(view)
    config = yaml.safe_load(cm["data"]["kube-scheduler-config.yaml"])
    assert config["profiles"][0]["schedulerName"] == "accel-packing-scheduler"
    assert config["leaderElection"] == {
        "leaderElect": True,
        "resourceName": "accel-packing-scheduler",
        "resourceNamespace": "kube-system",
    }
    assert "clientConnection" not in config
    meta = {"labels": MANAGED, "annotations": FLEET_SOURCE}
    assert account == {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "accel-packing-scheduler", "namespace": "kube-system", **meta},
    }
    assert bindings == [
        _binding(
            "ClusterRoleBinding",
            "accel-packing-scheduler-as-kube-scheduler",
            "ClusterRole",
            "system:kube-scheduler",
        ),
        _binding(
            "ClusterRoleBinding",
            "accel-packing-scheduler-as-volume-scheduler",
            "ClusterRole",
            "system:volume-scheduler",
        ),
        _binding(
            "RoleBinding",
            "accel-packing-scheduler-extension-apiserver-authentication-reader",
            "Role",
            "extension-apiserver-authentication-reader",
            "kube-system",
        ),
    ]
    assert role == {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "accel-packing-scheduler-lease", "namespace": "kube-system", **meta},
        "rules": [
            {
                "apiGroups": ["coordination.k8s.io"],
                "resources": ["leases"],
                "resourceNames": ["accel-packing-scheduler"],
                "verbs": ["get", "list", "update", "watch"],
            }
        ],
    }
    assert lease_binding == _binding(
        "RoleBinding",
        "accel-packing-scheduler-lease",
        "Role",
        "accel-packing-scheduler-lease",
        "kube-system",
    )
    labels = {
        "app.kubernetes.io/name": "accel-packing-scheduler",
        "app.kubernetes.io/component": "scheduler",
    }
    probe = {"port": 10259, "scheme": "HTTPS"}
    assert deployment == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "accel-packing-scheduler",
            "namespace": "kube-system",
            "labels": {**MANAGED, **labels},
            "annotations": FLEET_SOURCE,
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app.kubernetes.io/name": "accel-packing-scheduler"}},
            "template": {
                "metadata": {"labels": {**labels, **MANAGED}},
                "spec": {
                    "serviceAccountName": "accel-packing-scheduler",
                    "priorityClassName": "system-cluster-critical",
                    "containers": [
                        {
                            "name": "kube-scheduler",
                            "image": "registry.k8s.io/kube-scheduler:v1.33.0",
                            "command": [
                                "kube-scheduler",
                                "--config=/etc/kubernetes/accel-packing-scheduler/"
                                "kube-scheduler-config.yaml",
                            ],
                            "livenessProbe": {
                                "httpGet": {"path": "/healthz", **probe},
                                "initialDelaySeconds": 15,
                            },
                            "readinessProbe": {
                                "httpGet": {"path": "/readyz", **probe},
                                "initialDelaySeconds": 15,
                            },
                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]},
                                "readOnlyRootFilesystem": True,
                                "runAsNonRoot": True,
                                "runAsUser": 65532,
                                "seccompProfile": {"type": "RuntimeDefault"},
                            },
                            "volumeMounts": [
                                {
                                    "name": "config",
                                    "mountPath": "/etc/kubernetes/accel-packing-scheduler",
                                    "readOnly": True,
                                }
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "config", "configMap": {"name": "accel-kube-scheduler-config"}}
                    ],
                },
            },
        },
    }


def test_packing_scheduler_image_and_version_from_values_or_the_fleets_kubernetes(
    tmp_path: Path,
) -> None:
    extra = "  kubeScheduler: {packing: true, image: mirror.example.com/ks, version: v1.33.7}\n"
    [comp] = scheduling.build(build_of(sched_view(tmp_path / "a", "quota", extra)))
    [deployment] = [o for o in comp.objects if o["kind"] == "Deployment"]
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == "mirror.example.com/ks:v1.33.7"
    patch = FLEET.replace('kubernetesVersion: "1.33"', 'kubernetesVersion: "1.33.4"')
    assert patch != FLEET
    view = values.load(tree(tmp_path / "b", fleet=patch)).envs["prod"]
    assert scheduling.packing_version(view) == "v1.33.4"


def test_who_runs_the_profile_decides_the_name_and_the_unit(tmp_path: Path) -> None:
    fleet_run = sched_view(tmp_path / "a", "quota", "  kubeScheduler: {packing: true}\n")
    assert scheduling.packing_runs(fleet_run) == "fleet"
    assert scheduling.scheduler_name(fleet_run) == "accel-packing-scheduler"
    own = sched_view(tmp_path / "b", "quota", CONTROL_PLANE)
    assert scheduling.scheduler_name(own) == "default-scheduler"
    assert [(c.unit, c.name) for c in scheduling.build(build_of(own))] == [
        ("scheduling", "scheduling/kube-scheduler")
    ]
    # Without packing, no scheduler of the fleet's: the pods keep the cluster's own.
    assert scheduling.scheduler_name(sched_view(tmp_path / "c", "quota")) == "default-scheduler"


def test_the_packing_scheduler_runs_in_the_namespace_values_name(tmp_path: Path) -> None:
    """Its ServiceAccount, ConfigMap and Deployment there (the bindings name that account); its
    lease and the authentication reader stay in kube-system, where those live."""
    extra = "  kubeScheduler: {packing: true, namespace: accel-scheduler}\n"
    [comp] = scheduling.build(build_of(sched_view(tmp_path, "quota", extra)))
    spaces = {(o["kind"], o["metadata"].get("namespace")) for o in comp.objects}
    assert spaces == {
        ("ConfigMap", "accel-scheduler"),
        ("ServiceAccount", "accel-scheduler"),
        ("ClusterRoleBinding", None),
        ("RoleBinding", "kube-system"),
        ("Role", "kube-system"),
        ("Deployment", "accel-scheduler"),
    }
    subjects = {s["namespace"] for o in comp.objects if "subjects" in o for s in o["subjects"]}
    assert subjects == {"accel-scheduler"}


# ---- issue 19: the Kueue chart's values -------------------------------------------------------

SERVICE_ONLY = """\
quota: {nvidia: 2}
services:
  serve:
    images: {nvidia: r/serve:cuda}
    tracks: {nvidia: {devicesPerReplica: 1, replicas: 1}}
"""


# Kueue's chart's controller manager configuration, copied from its source (charts/kueue/
# values.yaml managerConfig.controllerManagerConfigYaml, sigs.k8s.io/kueue v0.17.0; the chart
# replaces the whole document with the value the fleet gives, so each default must be kept).
KUEUE_CHART_CONFIG = yaml.safe_load("""\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health:
  healthProbeBindAddress: :8081
metrics:
  bindAddress: :8443
webhook:
  port: 9443
leaderElection:
  leaderElect: true
  resourceName: c1f6bfd2.kueue.x-k8s.io
controller:
  groupKindConcurrency:
    Job.batch: 5
    Pod: 5
    Workload.kueue.x-k8s.io: 5
    LocalQueue.kueue.x-k8s.io: 1
    ClusterQueue.kueue.x-k8s.io: 1
    ResourceFlavor.kueue.x-k8s.io: 1
clientConnection:
  qps: 50
  burst: 100
""")


@pytest.mark.parametrize(
    ("teams", "frameworks"),
    [
        ({"teams/ml.yaml": ML}, ["batch/job"]),
        # batch/job with every other: Kueue v0.17.0's Job webhook refuses every Job without it.
        ({"teams/serve.yaml": SERVICE_ONLY}, ["batch/job", "deployment"]),
        ({"teams/ml.yaml": ML, "teams/serve.yaml": SERVICE_ONLY}, ["batch/job", "deployment"]),
        ({"teams/ml.yaml": "quota: {nvidia: 2}\n"}, []),
        # A Volcano Job is no Kueue workload (SCH002 refuses it under kueue; no integration).
        ({"teams/ml.yaml": "quota: {nvidia: 8}\njobs:\n" + VOLCANO_JOB}, []),
    ],
)
def test_kueue_is_given_exactly_the_integrations_the_queued_workloads_need(
    tmp_path: Path, teams: dict[str, str], frameworks: list[str]
) -> None:
    view = values.load(
        tree(
            tmp_path,
            {**teams, "vendors/nvidia.yaml": NVIDIA},
            fleet=FLEET + "scheduling: {backend: kueue}\n",
            defaults=False,
        )
    ).envs["prod"]
    got = scheduling.kueue_chart_values(workloads_of(view))
    config = yaml.safe_load(got["managerConfig"]["controllerManagerConfigYaml"])
    # The chart's own configuration but the integrations.
    assert config == {**KUEUE_CHART_CONFIG, "integrations": {"frameworks": frameworks}}
    assert config["webhook"] == {"port": 9443}
    assert config["leaderElection"]["resourceName"] == "c1f6bfd2.kueue.x-k8s.io"
    # The released chart's image (hack/helm-chart-package.sh), not the module's staging one.
    assert got["controllerManager"] == {
        "manager": {
            "image": {
                "repository": "registry.k8s.io/kueue/kueue",
                "tag": "v0.17.0",
                "pullPolicy": "IfNotPresent",
            }
        }
    }


# ---- priority_class: the fleet's PriorityClasses, each field the values give -------------------


def test_priority_classes_carry_the_values_fields_and_only_those(tmp_path: Path) -> None:
    """`scheduling.priorityClasses` in fleet.yaml: value always; preemptionPolicy and description
    only where the values set them (the API server defaults the policy, PreemptLowerPriority)."""
    extra = (
        "  priorityClasses:\n"
        "    training: {value: 1000, preemptionPolicy: Never, description: training jobs}\n"
        "    batch: {value: 10}\n"
    )
    view = sched_view(tmp_path, "quota", extra)
    classes = {c.name: c for c in scheduling.build(build_of(view))}["scheduling/priority-classes"]
    # Findings on a class point at its own entry; on the component, at `scheduling:`.
    fleet = "values/fleet.yaml"
    assert classes.origin == Location(fleet, 6, 1)
    assert [classes.origin_of(o) for o in classes.objects] == [
        Location(fleet, 10, 5),
        Location(fleet, 9, 5),
    ]
    assert classes.objects == [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "batch", "labels": MANAGED, "annotations": FLEET_SOURCE},
            "value": 10,
        },
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "training", "labels": MANAGED, "annotations": FLEET_SOURCE},
            "value": 1000,
            "preemptionPolicy": "Never",
            "description": "training jobs",
        },
    ]


def test_lws_chart_values_pin_the_released_manager_image() -> None:
    assert scheduling.lws_chart_values(None) == {  # type: ignore[arg-type]
        "image": {
            "manager": {
                "repository": "registry.k8s.io/lws/lws",
                "tag": "v0.8.0",
                "pullPolicy": "IfNotPresent",
            }
        }
    }


def test_kueue_integrations_are_what_every_teams_workloads_need(tmp_path: Path) -> None:
    """Team a's JobSet, team b's service and the default team ml's batch Job together (the
    teams read after a have no JobSet): every integration they need, each once."""
    files = {
        "teams/a.yaml": "quota: {nvidia: 4}\njobs:\n  j:\n    kind: jobset\n"
        "    images: {nvidia: r/t:1}\n    tasks: {w: {vendor: nvidia}}\n",
        "teams/b.yaml": "quota: {nvidia: 4}\nservices:\n  s:\n    images: {nvidia: r/s:1}\n"
        "    tracks: {nvidia: {replicas: 1}}\n",
    }
    view = sched_view(tmp_path, "kueue", files=files)
    assert [t.name for t in view.teams] == ["a", "b", "ml"]
    assert scheduling.kueue_integrations(workloads_of(view)) == [
        "batch/job",
        "deployment",
        "jobset.x-k8s.io/jobset",
    ]


def test_named_runtimes_are_those_of_trainer_trainjobs_only() -> None:
    def trainjob(api: str, runtime: str | None) -> Obj:
        spec = {"runtimeRef": {"name": runtime}} if runtime else {}
        return {"apiVersion": api, "kind": "TrainJob", "spec": spec}

    objs = [
        trainjob("trainer.kubeflow.org/v1alpha1", "torch-distributed"),
        trainjob("trainer.kubeflow.org/v1alpha1", "jax-distributed"),
        trainjob("example.com/v1", "other"),  # another group's TrainJob
        {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime"},
    ]
    assert scheduling.named_runtimes(objs) == {"torch-distributed", "jax-distributed"}
    assert scheduling.named_runtimes([trainjob("trainer.kubeflow.org/v1alpha1", None)]) == {""}
    assert scheduling.named_runtimes([]) == set()
