"""`simulate` end to end on a real control plane, its report row by row.

tests/simulate/test_checks.py judges hand-written API objects with the pure verdict functions,
tests/simulate/test_judge.py judges runs recorded on a control plane; this file drives the real
one, so that a snapshot that takes the wrong kind, namespace or object, or a probe namespace left
behind, fails here. Every
expected row is written out by hand from the values below.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from generator.builders import argocd
from generator.cluster import dryrun
from generator.controlplane.launcher import ControlPlane
from generator.findings import Severity
from generator.render import stage
from generator.simulate.checks import PROBE_NAMESPACE
from generator.simulate.result import EnvReport
from generator.simulate.run import SimulationResult, simulate
from generator.values.loader import load as load_values
from generator.values.model import FleetView
from tests.fixtures import (
    CAMBRICON_MLU370,
    DATASET_FLEET,
    DATASET_TEAM,
    DRA_NVIDIA,
    JOBSET_FLEET,
    JOBSET_TEAM,
    LWS_TEAM,
    MIG_NVIDIA,
    SHARED_NVIDIA,
    SIM_FLEET,
    TRAINJOB_FLEET,
    TRAINJOB_TEAM,
    VNPU_ASCEND,
    tree,
)

pytestmark = pytest.mark.xdist_group("control-plane")

# Two pools: a100 as the defaults taint it; h100 with a taint key nfd-master refuses (unprefixed),
# so its node ends up untainted (SIM002, with nfd-master's logged reason) and the probe pod with
# no tolerations lands on it (SIM006).
NVIDIA = {
    "pools": [
        {"name": "a100", "model": "A100", "devicesPerNode": 4, "nodes": ["gpu-1"]},
        {
            "name": "h100",
            "model": "H100",
            "devicesPerNode": 4,
            "nodes": ["gpu-2"],
            "taints": [{"key": "accelerator", "value": "nvidia-gpu", "effect": "NoSchedule"}],
        },
    ]
}
TEAM = {
    "owners": ["ml@example.com"],
    "quota": {"nvidia": 4},
    "services": {
        "serve": {
            "images": {"nvidia": "registry.example.com/serve:cuda"},
            "tracks": {"nvidia": {"devicesPerReplica": 1, "replicas": 2}},
        }
    },
}
A100_LABELS = {
    "feature.node.kubernetes.io/accelerator": "nvidia-gpu",
    "feature.node.kubernetes.io/gpu-brand": "nvidia",
    "feature.node.kubernetes.io/gpu-model": "A100",
}
# The simulation adds a general server and a CPU-only server per CPU family to every fleet.
SERVERS = ["general-purpose-01", "cpu-hygon-cpu-01", "cpu-kunpeng-cpu-01"]
SERVERS_SORTED = sorted(SERVERS)


def test_the_report_has_a_row_for_every_node_daemonset_probe_quota_and_track(
    tmp_path: Path, cluster: ControlPlane
) -> None:
    files = {
        "fleet.yaml": SIM_FLEET,
        "vendors/nvidia.yaml": NVIDIA,
        "teams/ml.yaml": TEAM,
    }
    values = tree(
        tmp_path, {k: yaml.safe_dump(v, sort_keys=False) for k, v in files.items()}, defaults=False
    )
    result = simulate(values, None, lambda: contextlib.nullcontext(cluster))
    (env,) = result.envs

    rows = {n.name: (n.labels, n.taints, n.ok) for n in env.nodes}
    assert rows == {
        "gpu-1": (
            A100_LABELS,
            ["feature.node.kubernetes.io/accelerator=nvidia-gpu:NoSchedule"],
            True,
        ),
        "gpu-2": ({**A100_LABELS, "feature.node.kubernetes.io/gpu-model": "H100"}, [], False),
        **{name: ({}, [], True) for name in SERVERS},
    }
    (dropped,) = [f for f in result.findings if f.code == "SIM002"]
    assert dropped.message.startswith("node gpu-2 (pool nvidia/h100): taints none, the pool wants")
    # What nfd-master logged, read from the control plane's own log folder.
    assert "(nfd-master logged 'ignoring taint' accelerator=nvidia-gpu:NoSchedule:" in (
        dropped.message
    )

    landed = {p["node"]: (p["landed"], p["ok"]) for p in env.probes}
    assert landed == {
        "gpu-1": (False, True),
        "gpu-2": (True, False),
        **{name: (True, True) for name in SERVERS},
    }
    assert [f.message.split(":")[0] for f in result.findings if f.code == "SIM006"] == [
        "a pod with no tolerations was scheduled on accelerator node gpu-2 (pool nvidia/h100)"
    ]
    # The probe cleans up after itself: its namespace is gone or on its way out.
    leftover = cluster.client().get("v1", "Namespace", "", PROBE_NAMESPACE)
    assert leftover is None or leftover["metadata"].get("deletionTimestamp")

    plugins = {p["daemonset"]: (p["vendor"], p["nodes"], p["ok"]) for p in env.plugins}
    assert plugins == {
        "accelerator-plugins/nvidia-device-plugin": ("nvidia", ["gpu-1", "gpu-2"], True),
        "accelerator-exporters/dcgm-exporter": ("nvidia", ["gpu-1", "gpu-2"], True),
    }

    assert env.quotas == [
        {
            "team": "ml",
            "namespace": "ml",
            "quota": "accelerators",
            "hard": {"requests.nvidia.com/gpu": "4"},
            "used": {"requests.nvidia.com/gpu": "2"},
        }
    ]
    assert env.tracks == [
        {"team": "ml", "service": "ml/serve", "track": "nvidia", "ready": 2, "plan": 2, "ok": True}
    ]
    # SIM011: nfd-master is the site's here (platform.nfd is not the fleet's): its flags assumed
    assert {f.code for f in result.findings} == {"SIM002", "SIM006", "SIM011"}, [
        f.format() for f in result.findings
    ]


# ---- Kueue's own controller (issue 19) ---------------------------------------------------------

# One A100 node of 4 GPUs; team ml may use 2 of them. `fits` asks for 1 GPU; `toobig` for 4, which
# its ClusterQueue can never admit (nominal quota 2, no borrowing).
KUEUE_TEAM = """\
quota: {nvidia: 2}
jobs:
  fits:
    vendor: nvidia
    devices: 1
    images: {nvidia: r/train:cuda}
  toobig:
    vendor: nvidia
    devices: 4
    images: {nvidia: r/train:cuda}
"""
KUEUE_NVIDIA = {"pools": [{"name": "a100", "model": "A100", "devicesPerNode": 4, "nodes": ["g1"]}]}
# What render refuses the tree for: Kueue's admission rule as the generator reads it (SCH009)
# and the quota the job's devices exceed (MIG004). Without them, Kueue itself must refuse.
RENDER_RULES = {"SCH009", "MIG004"}


def test_kueue_admits_what_its_cluster_queue_holds_and_says_why_not_at_the_values_line(
    tmp_path: Path, cluster: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = {
        **SIM_FLEET,
        "scheduling": {"backend": "kueue"},
        "platform": {"kueue": {"provided": "fleet"}},
    }
    files = {
        "fleet.yaml": yaml.safe_dump(fleet, sort_keys=False),
        "vendors/nvidia.yaml": yaml.safe_dump(KUEUE_NVIDIA),
        "teams/ml.yaml": KUEUE_TEAM,
    }
    values = tree(tmp_path, files, defaults=False)
    refused = [
        f.code for f in stage.policy.run_checks(load_values(values)) if f.severity.name == "ERROR"
    ]
    assert sorted(set(refused)) == sorted(RENDER_RULES)
    checks = stage.policy.run_checks
    monkeypatch.setattr(
        stage.policy,
        "run_checks",
        lambda loaded, memo=None: [f for f in checks(loaded, memo) if f.code not in RENDER_RULES],
    )

    result = simulate(values, None, lambda: contextlib.nullcontext(cluster))
    (env,) = result.envs

    rows = {a["workload"]: a for a in env.admissions}
    assert sorted(rows) == ["Job ml/fits", "Job ml/toobig"]
    fits, toobig = rows["Job ml/fits"], rows["Job ml/toobig"]
    assert (fits["values"], fits["queue"], fits["ok"]) == (
        "values/teams/ml.yaml:3:3",
        "team-ml",
        True,
    )
    assert fits["admission"].startswith("1 of 1 admitted: team-ml (")
    assert "nvidia-a100" in fits["admission"]
    assert (toobig["values"], toobig["ok"]) == ("values/teams/ml.yaml:7:3", False)
    assert toobig["admission"].startswith("0 of 1 admitted; pending: ")
    # Kueue's own words: the flavor and the resource it is short of.
    assert "nvidia-a100" in toobig["admission"] and "nvidia.com/gpu" in toobig["admission"]

    (fit_pod,) = [p for p in env.pods if p.workload == "Job ml/fits"]
    assert (fit_pod.node, fit_pod.ok) == ("g1", True)
    (missing,) = [p for p in env.pods if p.workload == "Job ml/toobig"]
    assert (missing.pod, missing.ok) == ("1 pod(s) not created", False)
    assert missing.reason.startswith("not admitted by Kueue: ")

    (finding,) = [f for f in result.findings if f.severity is Severity.ERROR]
    assert finding.code == "SIM013"
    assert str(finding.location) == "values/teams/ml.yaml:7:3"
    assert finding.message.startswith(
        "Job ml/toobig: 1 of 1 pod(s) not created: not admitted by Kueue: "
    )
    # Tried again alone, beside nothing but the services: Kueue still does not admit it.
    assert finding.message.endswith("(even alone, with only the services beside it)")
    assert {f.code for f in result.findings} == {"SIM011", "SIM013"}, [
        f.format() for f in result.findings
    ]


# ---- nfd-worker from the fleet's NFD chart (issue 19) -----------------------------------------


def test_nfd_worker_that_does_not_tolerate_a_pool_taint_is_missing_there(
    tmp_path: Path, cluster: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fleet's NFD chart's nfd-worker DaemonSet is applied as the chart renders it: without
    the tolerations the fleet's values give it, its pods stay off the tainted GPU node."""
    fleet = {**SIM_FLEET, "platform": {"nfd": {"provided": "fleet"}}}
    files = {
        "fleet.yaml": yaml.safe_dump(fleet, sort_keys=False),
        "vendors/nvidia.yaml": yaml.safe_dump(KUEUE_NVIDIA),
        "teams/ml.yaml": "quota: {nvidia: 2}\n",
    }
    values = tree(tmp_path, files, defaults=False)
    values_of = argocd.CHART_VALUES["nfd"]

    def intolerant(view: FleetView) -> dict[str, Any]:
        got = values_of(view)
        assert got["worker"]["tolerations"]  # what the fleet gives, taken away here
        return {**got, "worker": {k: v for k, v in got["worker"].items() if k != "tolerations"}}

    monkeypatch.setitem(argocd.CHART_VALUES, "nfd", intolerant)
    result = simulate(values, None, lambda: contextlib.nullcontext(cluster))
    (env,) = result.envs
    (row,) = [p for p in env.plugins if p["vendor"] == "every node"]
    assert row["daemonset"] == "node-feature-discovery/nfd-node-feature-discovery-worker"
    assert (row["nodes"], row["ok"]) == (SERVERS_SORTED, False)
    (finding,) = [f for f in result.findings if f.severity is Severity.ERROR]
    assert finding.code == "SIM014"
    assert finding.message == (
        "nfd-worker (node-feature-discovery/nfd-node-feature-discovery-worker) of the fleet's "
        "NFD chart does not run on g1 (pool nvidia/a100) once its taints are there: when "
        "nfd-worker starts again (an upgrade, a reboot), nothing there publishes the devices the "
        "NodeFeatureRules match"
    )
    assert str(finding.location) == "values/fleet.yaml:12:3"  # platform.nfd


def test_kueue_admits_a_job_pinned_to_the_second_model_of_a_vendor(
    tmp_path: Path, cluster: ControlPlane
) -> None:
    """Issue 19's case: an H100 pool beside the A100 pool and a 4-GPU job pinned to H100. The
    team's quota of 8 is split over the vendor's flavors so that the pinned job can be admitted
    (poured into the pools in order, the 8 A100s took it all and nvidia-h100 got 0); Kueue's own
    controller admits it on nvidia-h100 and the 1-GPU job beside it on nvidia-a100."""
    fleet = {
        **SIM_FLEET,
        "scheduling": {"backend": "kueue"},
        "platform": {"kueue": {"provided": "fleet"}},
    }
    nvidia = {
        "pools": [
            # 8 A100s: the team's whole quota would fit the first pool.
            {"name": "a100", "model": "A100", "devicesPerNode": 4, "nodes": ["a1", "a2"]},
            {"name": "h100", "model": "H100", "devicesPerNode": 4, "nodes": ["h1"]},
        ]
    }
    team = """\
quota: {nvidia: 8}
jobs:
  small:
    vendor: nvidia
    devices: 1
    model: A100
    images: {nvidia: r/t:1}
  big:
    vendor: nvidia
    devices: 4
    model: H100
    images: {nvidia: r/t:1}
"""
    files = {
        "fleet.yaml": yaml.safe_dump(fleet, sort_keys=False),
        "vendors/nvidia.yaml": yaml.safe_dump(nvidia),
        "teams/ml.yaml": team,
    }
    values = tree(tmp_path, files, defaults=False)
    result = simulate(values, None, lambda: contextlib.nullcontext(cluster))
    (env,) = result.envs
    assert [f.format() for f in result.findings if f.severity is Severity.ERROR] == []
    rows = {a["workload"]: (a["admission"], a["ok"]) for a in env.admissions}
    assert rows == {
        # cpu and memory on the fleet's general flavor, the GPUs on the pinned model's.
        "Job ml/big": ("1 of 1 admitted: team-ml (general, nvidia-h100)", True),
        "Job ml/small": ("1 of 1 admitted: team-ml (general, nvidia-a100)", True),
    }, env.admissions
    nodes = {p.workload: p.node for p in env.pods}
    assert nodes["Job ml/big"] == "h1" and nodes["Job ml/small"] in ("a1", "a2"), nodes


def test_a_job_with_a_dataset_volume_runs_on_stand_ins_and_says_so(
    tmp_path: Path, cluster: ControlPlane
) -> None:
    """The job with the pod fields teams ask for (a dataset PVC, /dev/shm, a pull secret, a
    token, a service account, a priority class): the API server takes it as rendered (dry-run),
    and the simulation runs it on empty stand-ins for what the team declares as its own, bound
    and created before it, and says that it did."""
    fleet = {**SIM_FLEET, **DATASET_FLEET}
    nvidia = {"pools": [{"name": "a100", "model": "A100", "devicesPerNode": 4, "nodes": ["g1"]}]}
    files = {
        "fleet.yaml": yaml.safe_dump(fleet, sort_keys=False),
        "vendors/nvidia.yaml": yaml.safe_dump(nvidia),
        "teams/vision.yaml": DATASET_TEAM,
    }
    values = tree(tmp_path, files, defaults=False)
    assert dryrun.dry_run(values, None, plane=cluster).findings == []
    result = simulate(values, None, lambda: contextlib.nullcontext(cluster))
    (env,) = result.envs
    (pod,) = env.pods
    assert (pod.workload, pod.node, pod.phase, pod.ok) == (
        "Job vision/train",
        "g1",
        "Running",
        True,
    )
    assert [f for f in result.findings if f.severity is Severity.ERROR] == []
    (stand_in,) = [f for f in result.findings if "stand-ins" in f.message]
    assert stand_in.code == "SIM011" and stand_in.severity is Severity.WARNING
    assert stand_in.message.startswith(
        "team 'vision' declares objects of its own (external) that its workloads use: the "
        "simulation created empty stand-ins for them (PersistentVolumeClaim vision/imagenet, "
        "Secret vision/hf, Secret vision/registry-creds, ServiceAccount vision/trainer)"
    )
    assert str(stand_in.location) == "values/teams/vision.yaml:4:3"  # external


# ---- JobSet under Kueue (issue 21) -----------------------------------------------------------


def test_kueue_admits_a_jobset_whole_and_one_larger_than_the_queue_waits(
    tmp_path: Path, cluster: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kueue's jobset integration makes one Workload per JobSet and admits it on a flavor per
    task's resource; JobSet's controller makes the admitted JobSet's child Jobs, whose pods land
    on each task's pool; a JobSet over the team's ClusterQueue waits, said at its values line
    (SIM013), and no pod of it is made. What of the controller did not run is said (SIM011)."""
    fleet = {**SIM_FLEET, **JOBSET_FLEET}
    nvidia = {
        "pools": [{"name": "a100", "model": "A100", "devicesPerNode": 8, "nodes": ["g1", "g2"]}]
    }
    toobig = (
        "  toobig:\n    kind: jobset\n    images: {nvidia: r/train:cuda}\n"
        "    tasks:\n      gpu: {vendor: nvidia, devices: 8, replicas: 4}\n"
    )
    files = {
        "fleet.yaml": yaml.safe_dump(fleet, sort_keys=False),
        "vendors/nvidia.yaml": yaml.safe_dump(nvidia),
        "vendors/cambricon.yaml": CAMBRICON_MLU370,
        "teams/llm.yaml": JOBSET_TEAM + toobig,
    }
    values = tree(tmp_path, files, defaults=False)
    checks = stage.policy.run_checks
    monkeypatch.setattr(
        stage.policy,
        "run_checks",
        lambda loaded, memo=None: [
            f for f in checks(loaded, memo) if f.code not in RENDER_RULES | {"MIG005"}
        ],
    )
    result = simulate(values, None, lambda: contextlib.nullcontext(cluster))
    (env,) = result.envs
    rows = {a["workload"]: a for a in env.admissions}
    assert sorted(rows) == ["JobSet llm/pretrain", "JobSet llm/toobig"]
    fits, big = rows["JobSet llm/pretrain"], rows["JobSet llm/toobig"]
    assert (fits["values"], fits["queue"], fits["ok"]) == (
        "values/teams/llm.yaml:3:3",
        "team-llm",
        True,
    )
    # one flavor per task's resource: the NVIDIA pool's and the Cambricon pool's
    assert "cambricon-mlu370" in fits["admission"] and "nvidia-a100" in fits["admission"]
    assert (big["values"], big["ok"]) == ("values/teams/llm.yaml:11:3", False)
    assert big["admission"].startswith("pending: ") and "nvidia.com/gpu" in big["admission"]
    (finding,) = [f for f in result.findings if f.severity is Severity.ERROR]
    assert (finding.code, str(finding.location)) == ("SIM013", "values/teams/llm.yaml:11:3")
    assert finding.message.startswith("JobSet llm/toobig: not admitted by Kueue: ")
    (ran,) = [f for f in result.findings if "JobSet's controller manager" in f.message]
    assert ran.code == "SIM011" and "success and failure policies" in ran.message
    # The admitted JobSet's pods, made by its controller's child Jobs, on each task's pool.
    rows = sorted((p.workload, p.vendor, p.node[:1], p.phase, p.ok) for p in env.pods)
    assert rows == [
        ("JobSet task llm/pretrain/gpu", "nvidia", "g", "Running", True),
        ("JobSet task llm/pretrain/gpu", "nvidia", "g", "Running", True),
        ("JobSet task llm/pretrain/mlu", "cambricon", "m", "Running", True),
        ("JobSet task llm/pretrain/mlu", "cambricon", "m", "Running", True),
    ]
    # Two 8-GPU pods on two 8-GPU nodes: one each.
    assert len({p.node for p in env.pods if p.vendor == "nvidia"}) == 2


# ---- Kubeflow Trainer TrainJobs under Kueue (issue 21) ----------------------------------------


def test_trainers_controller_runs_an_admitted_trainjob_as_a_jobset_on_its_pool(
    tmp_path: Path, cluster: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kueue's trainjob integration admits a TrainJob whole; Trainer's controller makes its
    JobSet from the ClusterTrainingRuntime the fleet's Trainer chart installs, and JobSet's
    controller its Jobs, whose pods land on the pool (rows of the TrainJob, at its values line).
    A TrainJob over the team's queue waits (SIM013) and no pod of it is made. JobSet's and
    Trainer's managers, whose rotators both insist on one certificate folder, run at once."""
    fleet = {**SIM_FLEET, **TRAINJOB_FLEET}
    nvidia = {
        "pools": [{"name": "a100", "model": "A100", "devicesPerNode": 8, "nodes": ["g1", "g2"]}]
    }
    toobig = (
        "  toobig:\n    kind: trainjob\n    vendor: nvidia\n    devices: 8\n"
        "    numNodes: 3\n    images: {nvidia: r/train:cuda}\n"
    )
    files = {
        "fleet.yaml": yaml.safe_dump(fleet, sort_keys=False),
        "vendors/nvidia.yaml": yaml.safe_dump(nvidia),
        "teams/llm.yaml": TRAINJOB_TEAM + toobig,
    }
    values = tree(tmp_path, files, defaults=False)
    checks = stage.policy.run_checks
    monkeypatch.setattr(
        stage.policy,
        "run_checks",
        lambda loaded, memo=None: [
            f for f in checks(loaded, memo) if f.code not in RENDER_RULES | {"MIG005"}
        ],
    )
    result = simulate(values, None, lambda: contextlib.nullcontext(cluster))
    (env,) = result.envs
    rows = {a["workload"]: a for a in env.admissions}
    assert sorted(rows) == ["TrainJob llm/finetune", "TrainJob llm/toobig"]
    fits, big = rows["TrainJob llm/finetune"], rows["TrainJob llm/toobig"]
    assert (fits["values"], fits["queue"], fits["ok"]) == (
        "values/teams/llm.yaml:3:3",
        "team-llm",
        True,
    )
    assert "nvidia-a100" in fits["admission"]
    assert (big["values"], big["ok"]) == ("values/teams/llm.yaml:11:3", False)
    (finding,) = [f for f in result.findings if f.severity is Severity.ERROR]
    assert (finding.code, str(finding.location)) == ("SIM013", "values/teams/llm.yaml:11:3")
    assert finding.message.startswith("TrainJob llm/toobig: not admitted by Kueue: ")
    (ran,) = [f for f in result.findings if "Kubeflow Trainer's controller manager" in f.message]
    assert ran.code == "SIM011" and "no training process ran" in ran.message
    # The admitted TrainJob's two nodes, one 8-GPU pod on each 8-GPU node.
    rows = sorted((p.workload, p.vendor, p.node[:1], p.phase, p.ok) for p in env.pods)
    assert rows == [("TrainJob llm/finetune", "nvidia", "g", "Running", True)] * 2
    assert len({p.node for p in env.pods}) == 2


# ---- LeaderWorkerSet under Kueue (issue 21) --------------------------------------------------


def test_a_leaderworkerset_group_is_made_by_its_controller_and_lands_on_its_pool(
    tmp_path: Path, cluster: ControlPlane
) -> None:
    """LeaderWorkerSet's controller makes the Ascend track's group of 2 pods x 8 NPUs (a leader
    StatefulSet, a worker StatefulSet per group), Kueue admits it on the Ascend flavor, and
    kube-scheduler puts one pod on each 8-NPU node; the NVIDIA track's Deployment beside it."""
    fleet = {
        **SIM_FLEET,
        "scheduling": {"backend": "kueue"},
        "platform": {"kueue": {"provided": "fleet"}, "lws": {"provided": "fleet"}},
    }
    ascend = {
        "pools": [{"name": "910b", "model": "910b", "devicesPerNode": 8, "nodes": ["n1", "n2"]}]
    }
    nvidia = {"pools": [{"name": "a100", "model": "A100", "devicesPerNode": 8, "nodes": ["g1"]}]}
    files = {
        "fleet.yaml": yaml.safe_dump(fleet, sort_keys=False),
        "vendors/nvidia.yaml": yaml.safe_dump(nvidia),
        "vendors/ascend.yaml": yaml.safe_dump(ascend),
        "teams/llm.yaml": LWS_TEAM,
    }
    values = tree(tmp_path, files, defaults=False)
    result = simulate(values, None, lambda: contextlib.nullcontext(cluster))
    (env,) = result.envs
    assert [f for f in result.findings if f.severity is Severity.ERROR] == []
    group = sorted((p.node, p.phase, p.ok) for p in env.pods if p.workload.startswith("Leader"))
    assert group == [("n1", "Running", True), ("n2", "Running", True)]
    assert {p.workload for p in env.pods} == {
        "LeaderWorkerSet llm/llm-ascend",
        "Deployment llm/llm-nvidia",
    }
    # Kueue admitted the group (one Workload per group) on the Ascend pool's flavor.
    rows = {a["workload"]: a for a in env.admissions}
    group_row = rows["LeaderWorkerSet llm/llm-ascend"]
    assert group_row["ok"] and "1 of 1 admitted" in group_row["admission"]
    assert "ascend-910b" in group_row["admission"]
    # plan's one replica of the track is one whole ready group.
    assert [(t["track"], t["ready"], t["ok"]) for t in env.tracks] == [
        ("nvidia", 1, True),
        ("ascend", 1, True),
    ]
    (ran,) = [f for f in result.findings if "LeaderWorkerSet's controller manager" in f.message]
    assert ran.code == "SIM011" and "rolling updates were not exercised" in ran.message


# ---- shared GPUs (issue 23, docs/allocation.md) ------------------------------------------------

# One A100 on node g1 shared 4 ways (SHARED_NVIDIA's form): 4 nvidia.com/gpu.shared. Team ml
# runs 4 replicas of one share each, team web 1 more: quotas add up to 5 shares (within
# overcommitRatio 1.5, a warning), and MIG005 says the workloads need 5 of 4, which render
# refuses; taken out here, the real scheduler must leave the fifth pod Pending.
SHARED_POOL = SHARED_NVIDIA.replace("nodes: [n3]", "nodes: [g1]")
SHARE_TEAM = """\
quota: {{nvidia-shared: {n}}}
services:
  serve:
    images: {{nvidia-shared: r/serve:cuda}}
    tracks:
      nvidia-shared: {{devicesPerReplica: 1, replicas: {n}}}
"""


def simulate_one_too_many(
    tmp_path: Path,
    cluster: ControlPlane,
    monkeypatch: pytest.MonkeyPatch,
    vendor: tuple[str, str],
    team: str,
    pods: tuple[int, int],
) -> SimulationResult:
    """Simulate a pool (`vendor`: file name, text) and teams ml and web running `pods` one-unit
    replicas of `team`, one more than the pool holds: quotas within overcommitRatio 1.5, and
    MIG005 (the workloads need more than the pools) the one error, which render would refuse;
    taken out here, so that the real scheduler must leave the pod too many Pending."""
    fleet = {**SIM_FLEET, "capacity": {"overcommitRatio": 1.5}}
    files = {
        "fleet.yaml": yaml.safe_dump(fleet, sort_keys=False),
        f"vendors/{vendor[0]}.yaml": vendor[1],
        "teams/ml.yaml": team.format(n=pods[0]),
        "teams/web.yaml": team.format(n=pods[1]),
    }
    values = tree(tmp_path, files, defaults=False)
    checks = stage.policy.run_checks
    assert [f.code for f in checks(load_values(values)) if f.severity.name == "ERROR"] == ["MIG005"]
    monkeypatch.setattr(
        stage.policy,
        "run_checks",
        lambda loaded, memo=None: [f for f in checks(loaded, memo) if f.code != "MIG005"],
    )
    return simulate(values, None, lambda: contextlib.nullcontext(cluster))


def placed_but_one(
    result: SimulationResult, vendor: str, node: str, resource: str, placed: int
) -> EnvReport:
    """The environment of simulate_one_too_many's run, checked: `placed` of the vendor's pods on
    `node`, one Pending for want of `resource`, and the quotas of ml (placed) and web (one)
    counting their pods' units, the Pending one's too."""
    (env,) = result.envs
    pods = sorted((p.node, p.ok) for p in env.pods if p.vendor == vendor)
    assert pods == [("", False)] + [(node, True)] * placed
    (waiting,) = [p for p in env.pods if not p.node]
    assert f"1 Insufficient {resource}" in waiting.reason
    assert [(q["team"], q["used"]) for q in env.quotas] == [
        ("ml", {f"requests.{resource}": str(placed)}),
        ("web", {f"requests.{resource}": "1"}),
    ]
    return env


# The same pool shared by MPS: the plugin's MPS control daemon lands beside the plugin.
MPS_POOL = SHARED_POOL.replace("timeSlicing: {replicas: 4}", "mps: {replicas: 4}")


@pytest.mark.parametrize("pool", [SHARED_POOL, MPS_POOL], ids=["time-slicing", "mps"])
def test_shared_pods_pack_four_to_a_gpu_and_a_fifth_waits(
    pool: str, tmp_path: Path, cluster: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = simulate_one_too_many(
        tmp_path, cluster, monkeypatch, ("nvidia-shared", pool), SHARE_TEAM, (4, 1)
    )
    # Which of the five pods waits is the scheduler's race; that one does, for want of a share.
    env = placed_but_one(result, "nvidia-shared", "g1", "nvidia.com/gpu.shared", 4)
    (g1,) = [n for n in env.nodes if n.name == "g1"]
    assert g1.ok and g1.labels["feature.node.kubernetes.io/accelerator"] == "nvidia-gpu-shared"
    plugins = {p["daemonset"]: (p["vendor"], p["nodes"], p["ok"]) for p in env.plugins}
    assert plugins["accelerator-plugins/nvidia-device-plugin-shared"] == (
        "nvidia-shared",
        ["g1"],
        True,
    )
    daemon = plugins.get("accelerator-plugins/nvidia-device-plugin-shared-mps-control-daemon")
    assert daemon == (("nvidia-shared", ["g1"], True) if pool is MPS_POOL else None)
    assert {f.code for f in result.findings} == {"SIM004", "SIM007", "SIM011"}


# ---- MIG partitions (issue 23, docs/allocation.md) ---------------------------------------------

# One 80GB A100 on node m1 partitioned into two 3g.40gb instances (MIG_NVIDIA's form): 2
# nvidia.com/mig-3g.40gb. Team ml runs 2 replicas of one instance each, team web 1 more: MIG005
# (3 of 2) is taken out as above, and the real scheduler must place two and leave one Pending.
MIG_POOL = MIG_NVIDIA.replace("devicesPerNode: 2, nodes: [n5]", "devicesPerNode: 1, nodes: [m1]")
MIG_TEAM = """\
quota: {{nvidia-mig: {n}}}
services:
  serve:
    images: {{nvidia-mig: r/serve:cuda}}
    tracks:
      nvidia-mig: {{devicesPerReplica: 1, replicas: {n}}}
"""


def test_mig_instances_are_allocated_two_to_a_gpu_and_a_third_waits(
    tmp_path: Path, cluster: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = simulate_one_too_many(
        tmp_path, cluster, monkeypatch, ("nvidia-mig", MIG_POOL), MIG_TEAM, (2, 1)
    )
    env = placed_but_one(result, "nvidia-mig", "m1", "nvidia.com/mig-3g.40gb", 2)
    (m1,) = [n for n in env.nodes if n.name == "m1"]
    # NFD set the layout label from the pool's rule, as it would for the site's MIG manager.
    assert m1.ok and m1.labels["nvidia.com/mig.config"] == "all-3g.40gb"
    (stood_in,) = [f for f in result.findings if "MIG manager" in f.message]
    assert stood_in.code == "SIM011"


# ---- Ascend static vNPUs (issue 23, docs/allocation.md) ----------------------------------------

# One 910B on node v1 split by the site into two vir06_1c_16g vNPUs (VNPU_ASCEND's form): 2 of
# huawei.com/Ascend910-6c.1cpu.16g. Teams ml (2 pods) and web (1 pod), one vNPU each: MIG005
# (3 of 2) taken out as above; the real scheduler places two and leaves one Pending.
VNPU_POOL = VNPU_ASCEND.replace(
    "vnpu: {template: vir06_1c_16g, perDevice: 4}", "vnpu: {template: vir06_1c_16g, perDevice: 2}"
).replace("devicesPerNode: 2, nodes: [npu-v1]", "devicesPerNode: 1, nodes: [v1]")
VNPU_TEAM = """\
quota: {{ascend-vnpu: {n}}}
services:
  serve:
    images: {{ascend-vnpu: r/serve:cann}}
    vendorMounts: false
    tracks:
      ascend-vnpu: {{devicesPerReplica: 1, replicas: {n}}}
"""


def test_vnpus_are_allocated_one_to_a_pod_and_a_third_waits(
    tmp_path: Path, cluster: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = simulate_one_too_many(
        tmp_path, cluster, monkeypatch, ("ascend-vnpu", VNPU_POOL), VNPU_TEAM, (2, 1)
    )
    env = placed_but_one(result, "ascend-vnpu", "v1", "huawei.com/Ascend910-6c.1cpu.16g", 2)
    (v1,) = [n for n in env.nodes if n.name == "v1"]
    assert v1.ok and v1.labels["feature.node.kubernetes.io/accelerator"] == "huawei-npu-vnpu"
    (stood_in,) = [f for f in result.findings if "npu-smi" in f.message]
    assert stood_in.code == "SIM011"


# ---- Dynamic Resource Allocation (issue 23, docs/allocation.md) --------------------------------

# Two DRA pools of NVIDIA GPUs claimed through NVIDIA's DRA driver: 8 H100s on d1, 4 A100s on d2.
# Team ml's job asks for 4 H100s by claim; its service for one GPU of any model, two replicas.
DRA_POOLS = DRA_NVIDIA.replace(
    "  - {name: h100-dra, model: H100, devicesPerNode: 8, nodes: [n4]}\n",
    "  - {name: h100-dra, model: H100, devicesPerNode: 8, nodes: [d1]}\n"
    "  - {name: a100-dra, model: A100, devicesPerNode: 4, nodes: [d2]}\n",
)
DRA_TEAM = """\
quota: {nvidia-dra: 8}
jobs:
  train:
    vendor: nvidia-dra
    devices: 4
    model: H100
    images: {nvidia-dra: r/t:cuda}
services:
  chat:
    images: {nvidia-dra: r/chat:cuda}
    tracks:
      nvidia-dra: {devicesPerReplica: 1, replicas: 2, model: A100}
"""


def test_the_real_scheduler_allocates_dra_claims_on_the_selected_model(
    tmp_path: Path, cluster: ControlPlane
) -> None:
    files = {
        "fleet.yaml": yaml.safe_dump(SIM_FLEET, sort_keys=False),
        "vendors/nvidia-dra.yaml": DRA_POOLS,
        "teams/ml.yaml": DRA_TEAM,
    }
    values = tree(tmp_path, files, defaults=False)
    result = simulate(values, None, lambda: contextlib.nullcontext(cluster))
    (env,) = result.envs
    pods = sorted(
        (p.workload, p.node, p.ok, p.devices.count("/"))
        for p in env.pods
        if p.vendor == "nvidia-dra"
    )
    assert pods == [
        ("Deployment ml/chat-nvidia-dra", "d2", True, 1),
        ("Deployment ml/chat-nvidia-dra", "d2", True, 1),
        ("Job ml/train", "d1", True, 4),
    ]
    # Each pod's row names the devices its claim was given, from its node's pool.
    (train,) = [p for p in env.pods if p.workload == "Job ml/train"]
    devices = train.devices.split(", ")
    assert len(set(devices)) == 4 and all(re.fullmatch(r"d1/gpu-[0-7]", d) for d in devices)
    assert [(q["team"], q["used"]) for q in env.quotas] == [
        ("ml", {"nvidia-dra.deviceclass.resource.k8s.io/devices": "6"})
    ]
    # The scheduler's allocations: the claims made from the templates, each with its devices
    # from the node's pool (the ResourceSlice the simulation published for the driver).
    claims = cluster.client().list("resource.k8s.io/v1", "ResourceClaim", "ml")
    allocated = sorted(
        (r["pool"], len(c["status"]["allocation"]["devices"]["results"]))
        for c in claims
        for r in c["status"]["allocation"]["devices"]["results"][:1]
    )
    assert allocated == [("d1", 4), ("d2", 1), ("d2", 1)]
    assert {f.code for f in result.findings} == {"SIM011"}
