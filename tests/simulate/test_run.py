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

import pytest
import yaml

from generator.builders.fleet import build_values
from generator.cluster import dryrun
from generator.controlplane.launcher import ControlPlane
from generator.findings import Severity
from generator.policy import registry as policy  # as render/stage.py calls the checks
from generator.simulate.checks import PROBE_NAMESPACE
from generator.simulate.run import simulate
from generator.values.loader import load as load_values
from tests.fixtures import (
    CAMBRICON_MLU370,
    DATASET_FLEET,
    DATASET_TEAM,
    DRA_NVIDIA,
    JOBSET_FLEET,
    JOBSET_TEAM,
    LWS_TEAM,
    SIM_FLEET,
    TRAINJOB_FLEET,
    TRAINJOB_TEAM,
    tree,
)
from tests.simulate.cases import (
    KUEUE_NVIDIA,
    RENDER_RULES,
    SERVERS,
    SHARE_TEAM,
    SHARED_POOL,
    one_too_many,
    placed_but_one,
    shared_pool_checked,
    walk_tree,
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
    result = simulate(
        values,
        None,
        lambda _minor: contextlib.nullcontext(cluster),
        argocd=False,
        watch_metrics=False,
    )
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
    # Either A100 or the untainted H100 node may take the pods: where is not this test's.
    (row,) = env.tracks
    assert sum(row.pop("placed").values()) == 2
    assert row == {
        "team": "ml",
        "service": "ml/serve",
        "track": "nvidia",
        "cluster": "",
        "weight": 100,
        "ready": 2,
        "plan": 2,
        "ok": True,
    }
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
    loaded = load_values(values)
    refused = [
        f.code
        for f in policy.run_checks(loaded, build_values(loaded))
        if f.severity.name == "ERROR"
    ]
    assert sorted(set(refused)) == sorted(RENDER_RULES)
    checks = policy.run_checks
    monkeypatch.setattr(
        policy,
        "run_checks",
        lambda loaded, builds, memo=None: [
            f for f in checks(loaded, builds, memo) if f.code not in RENDER_RULES
        ],
    )

    result = simulate(
        values,
        None,
        lambda _minor: contextlib.nullcontext(cluster),
        argocd=False,
        watch_metrics=False,
    )
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
    result = simulate(
        values,
        None,
        lambda _minor: contextlib.nullcontext(cluster),
        argocd=False,
        watch_metrics=False,
    )
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
    checks = policy.run_checks
    monkeypatch.setattr(
        policy,
        "run_checks",
        lambda loaded, builds, memo=None: [
            f for f in checks(loaded, builds, memo) if f.code not in RENDER_RULES | {"MIG005"}
        ],
    )
    result = simulate(
        values,
        None,
        lambda _minor: contextlib.nullcontext(cluster),
        argocd=False,
        watch_metrics=False,
    )
    (env,) = result.envs
    admissions = {a["workload"]: a for a in env.admissions}
    assert sorted(admissions) == ["JobSet llm/pretrain", "JobSet llm/toobig"]
    fits, big = admissions["JobSet llm/pretrain"], admissions["JobSet llm/toobig"]
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
    checks = policy.run_checks
    monkeypatch.setattr(
        policy,
        "run_checks",
        lambda loaded, builds, memo=None: [
            f for f in checks(loaded, builds, memo) if f.code not in RENDER_RULES | {"MIG005"}
        ],
    )
    result = simulate(
        values,
        None,
        lambda _minor: contextlib.nullcontext(cluster),
        argocd=False,
        watch_metrics=False,
    )
    (env,) = result.envs
    admissions = {a["workload"]: a for a in env.admissions}
    assert sorted(admissions) == ["TrainJob llm/finetune", "TrainJob llm/toobig"]
    fits, big = admissions["TrainJob llm/finetune"], admissions["TrainJob llm/toobig"]
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
    result = simulate(
        values,
        None,
        lambda _minor: contextlib.nullcontext(cluster),
        argocd=False,
        watch_metrics=False,
    )
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
# The scheduler placing pods by a node's capacity of a shared resource, and the quota counting
# them; the same for MPS, MIG instances and vNPUs is judged on recorded runs (test_judge.py).


def test_shared_pods_pack_four_to_a_gpu_and_a_fifth_waits(
    tmp_path: Path, cluster: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = one_too_many(tmp_path, monkeypatch, ("nvidia-shared", SHARED_POOL), SHARE_TEAM, (4, 1))
    result = simulate(
        values,
        None,
        lambda _minor: contextlib.nullcontext(cluster),
        argocd=False,
        watch_metrics=False,
    )
    # Which of the five pods waits is the scheduler's race; that one does, for want of a share.
    env = placed_but_one(result, "nvidia-shared", "g1", "nvidia.com/gpu.shared", 4)
    shared_pool_checked(env, SHARED_POOL)
    assert {f.code for f in result.findings} == {"SIM004", "SIM007", "SIM011"}


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
    result = simulate(
        values,
        None,
        lambda _minor: contextlib.nullcontext(cluster),
        argocd=False,
        watch_metrics=False,
    )
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


# ---- a migration across clusters, walked through its phases (issue 45) -------------------------


def test_a_migration_across_clusters_places_each_track_in_its_cluster_at_each_phase(
    tmp_path: Path, cluster: ControlPlane
) -> None:
    """tests/simulate/cases.py walk_tree: the Ascend track fits domestic at validate only."""
    values = walk_tree(tmp_path)
    result = simulate(
        values,
        "prod",
        lambda _minor: contextlib.nullcontext(cluster),
        argocd=False,
        watch_metrics=False,
        phases=True,
    )
    envs = {e.env: e for e in result.envs}
    assert sorted(envs) == ["prod/domestic", "prod/main"]
    main, domestic = envs["prod/main"], envs["prod/domestic"]

    # The steady state at validate: each cluster counts its own track only.
    assert [
        (t["track"], t["cluster"], t["weight"], t["ready"], t["plan"]) for t in main.tracks
    ] == [("nvidia", "main", 100, 2, 2)]
    assert [
        (t["track"], t["cluster"], t["weight"], t["ready"], t["plan"]) for t in domestic.tracks
    ] == [("ascend", "domestic", 0, 1, 1)]

    # Each phase: NVIDIA in main always fits (2, then 1 kept warm at fallback) ...
    assert [
        (t["phase"], t["track"], t["cluster"], t["weight"], t["ready"], t["plan"], t["placed"])
        for t in main.phases
    ] == [
        ("validate", "nvidia", "main", 100, 2, 2, {"nvidia/a100": 2}),
        ("dual-run", "nvidia", "main", 100, 2, 2, {"nvidia/a100": 2}),
        ("shift-10", "nvidia", "main", 90, 2, 2, {"nvidia/a100": 2}),
        ("shift-50", "nvidia", "main", 50, 2, 2, {"nvidia/a100": 2}),
        ("shift-90", "nvidia", "main", 10, 2, 2, {"nvidia/a100": 2}),
        ("primary-new", "nvidia", "main", 0, 2, 2, {"nvidia/a100": 2}),
        ("fallback", "nvidia", "main", 0, 1, 1, {"nvidia/a100": 1}),
    ]
    # ... Ascend in domestic fits at validate, then 2 of its 3 pods run and the quota refuses
    # the third.
    short = {"ascend/910b": 2}
    assert [
        (t["phase"], t["track"], t["cluster"], t["weight"], t["ready"], t["plan"], t["placed"])
        for t in domestic.phases
    ] == [
        ("validate", "ascend", "domestic", 0, 1, 1, {"ascend/910b": 1}),
        ("dual-run", "ascend", "domestic", 0, 2, 3, short),
        ("shift-10", "ascend", "domestic", 10, 2, 3, short),
        ("shift-50", "ascend", "domestic", 50, 2, 3, short),
        ("shift-90", "ascend", "domestic", 90, 2, 3, short),
        ("primary-new", "ascend", "domestic", 100, 2, 3, short),
        ("fallback", "ascend", "domestic", 100, 2, 3, short),
    ]
    # One finding for the one cause, at the first phase it shows in, in domestic's run.
    errors = [f for f in result.findings if f.severity is Severity.ERROR]
    assert [(f.code, f.envs, f.path) for f in errors] == [
        ("SIM007", ("prod/domestic",), "$.services.chat.tracks.ascend")
    ]
    assert re.fullmatch(
        r"service inference/chat at phase dual-run \(and shift-10, shift-50, shift-90, "
        r"primary-new, fallback\): track ascend in cluster domestic has 2 ready pod\(s\), plan "
        r"says 3: 1 of 3 pod\(s\) not created: .*exceeded quota: accelerators.*",
        errors[0].message,
    ), errors[0].message
    # What did not run is said in each cluster's run: no MCS, no Gateway controller.
    said = [f for f in result.findings if f.code == "SIM011" and "across clusters" in f.message]
    assert sorted(f.envs for f in said) == [("prod/domestic",), ("prod/main",)]
    assert "no Multi-Cluster Services implementation and no Gateway controller" in said[0].message
