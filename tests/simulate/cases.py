"""Values trees of the simulation's behaviours, shared by the runs on a real control plane
(test_run.py) and the judging of recorded runs (test_judge.py)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from generator.builders.fleet import build_values
from generator.policy import registry as policy  # as render/stage.py calls the checks
from generator.simulate.result import EnvReport
from generator.simulate.run import SimulationResult
from generator.values.loader import load as load_values
from tests.fixtures import CROSS_FLEET, SHARED_NVIDIA, SIM_FLEET, cross_clusters, tree

# The simulation adds a general server and a CPU-only server per CPU family to every fleet.
SERVERS = ["general-purpose-01", "cpu-hygon-cpu-01", "cpu-kunpeng-cpu-01"]
SERVERS_SORTED = sorted(SERVERS)
KUEUE_NVIDIA = {"pools": [{"name": "a100", "model": "A100", "devicesPerNode": 4, "nodes": ["g1"]}]}
# What render refuses the tree for: Kueue's admission rule as the generator reads it (SCH009)
# and the quota the job's devices exceed (MIG004). Without them, Kueue itself must refuse.
RENDER_RULES = {"SCH009", "MIG004"}

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
# The same pool shared by MPS: the plugin's MPS control daemon lands beside the plugin.
MPS_POOL = SHARED_POOL.replace("timeSlicing: {replicas: 4}", "mps: {replicas: 4}")


def one_too_many(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    vendor: tuple[str, str],
    team: str,
    pods: tuple[int, int],
) -> Path:
    """A pool (`vendor`: file name, text) and teams ml and web running `pods` one-unit replicas
    of `team`, one more than the pool holds: quotas within overcommitRatio 1.5, and MIG005 (the
    workloads need more than the pools) the one error, which render would refuse; taken out
    here, so that the real scheduler must leave the pod too many Pending."""
    fleet = {**SIM_FLEET, "capacity": {"overcommitRatio": 1.5}}
    files = {
        "fleet.yaml": yaml.safe_dump(fleet, sort_keys=False),
        f"vendors/{vendor[0]}.yaml": vendor[1],
        "teams/ml.yaml": team.format(n=pods[0]),
        "teams/web.yaml": team.format(n=pods[1]),
    }
    values = tree(tmp_path, files, defaults=False)
    checks = policy.run_checks
    loaded = load_values(values)
    refused = [f.code for f in checks(loaded, build_values(loaded)) if f.severity.name == "ERROR"]
    assert refused == ["MIG005"]
    monkeypatch.setattr(
        policy,
        "run_checks",
        lambda loaded, builds, memo=None: [
            f for f in checks(loaded, builds, memo) if f.code != "MIG005"
        ],
    )
    return values


def placed_but_one(
    result: SimulationResult, vendor: str, node: str, resource: str, placed: int
) -> EnvReport:
    """The environment of a one_too_many run, checked: `placed` of the vendor's pods on `node`,
    one Pending for want of `resource`, and the quotas of ml (placed) and web (one) counting
    their pods' units, the Pending one's too."""
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


def shared_pool_checked(env: EnvReport, pool: str) -> None:
    """The shared pool's node and plugins of a one_too_many run on SHARED_POOL or MPS_POOL."""
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


# Small trees of tests/cluster/test_cluster.py's form: one NVIDIA pool with one node and a team
# with one 4-GPU job unless told otherwise.
NVIDIA = {"pools": [{"name": "a100", "model": "A100", "devicesPerNode": 4, "nodes": ["gpu-1"]}]}
TEAM: dict[str, Any] = {
    "owners": ["ml@example.com"],
    "quota": {"nvidia": 4},
    "jobs": {
        "train": {
            "vendor": "nvidia",
            "devices": 4,
            "images": {"nvidia": "registry.example.com/train:cuda"},
            "command": ["python", "train.py"],
        }
    },
}


def small_tree(
    root: Path,
    fleet: Mapping[str, object] | None = None,
    vendors: Mapping[str, object] | None = None,
    teams: Mapping[str, object] | None = None,
) -> Path:
    """A small values tree: SIM_FLEET, vendors (default: NVIDIA) and teams (default: ml, TEAM)."""
    docs: dict[str, object] = {"fleet.yaml": fleet or SIM_FLEET}
    docs.update({f"vendors/{k}.yaml": v for k, v in (vendors or {"nvidia": NVIDIA}).items()})
    docs.update({f"teams/{k}.yaml": v for k, v in (teams or {"ml": TEAM}).items()})
    files = {rel: yaml.safe_dump(doc, sort_keys=False) for rel, doc in docs.items()}
    return tree(root, files, defaults=False)


def line_of(path: Path, text: str) -> int:
    """1-based line of the first line of ``path`` that contains ``text``."""
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)


def gang_tree(root: Path) -> Path:
    """Two nodes of 4 GPUs; team a's Job `alpha` (4 GPUs), team b's Volcano job `beta` (three
    2-GPU workers, a gang), team c's Job `gamma` (4 GPUs), started in that order. (Each job is
    its own team's so that no ResourceQuota stands in the gang's way: one team's quota of all 14
    GPUs would be more than the 8 there are, CAP003.)"""
    nvidia = {
        "pools": [{"name": "a100", "model": "A100", "devicesPerNode": 4, "nodes": ["g1", "g2"]}]
    }
    beta = {
        "kind": "volcano",
        "images": {"nvidia": "registry.example.com/train:cuda"},
        "command": ["python", "train.py"],
        "tasks": {"workers": {"vendor": "nvidia", "devices": 2, "replicas": 3}},
    }
    alpha, gamma = (copy.deepcopy(TEAM["jobs"]["train"]) for _ in range(2))
    fleet = {
        **SIM_FLEET,
        "capacity": {"allowOvercommit": True},
        "platform": {"volcano": {"provided": "site"}},
    }
    teams: dict[str, object] = {
        name: {"owners": [f"{name}@example.com"], "quota": {"nvidia": n}, "jobs": {job: raw}}
        for name, n, job, raw in (
            ("a", 4, "alpha", alpha),
            ("b", 6, "beta", beta),
            ("c", 4, "gamma", gamma),
        )
    }
    return small_tree(root, fleet, {"nvidia": nvidia}, teams)


# prod as two clusters (tests/fixtures.py CROSS_PROD): NVIDIA a100 (nodes n1, n2 of 4 GPUs) in
# `main`, Ascend 910b in `domestic` with one node of 2 NPUs. Team inference's chat moves from
# NVIDIA (2 replicas) to Ascend (3 replicas), routed by main's HTTPRoute over the tracks'
# ServiceImports; the environment is at validate (1 Ascend replica: it fits), but from dual-run on
# the new track's 3 replicas do not fit domestic's 2 NPUs, nor the team's Ascend quota of 2 (a
# quota cannot exceed what the pools hold: CAP003), which refuses the third pod.
WALK_ASCEND = "pools:\n  - {name: 910b, model: 910b, devicesPerNode: 2, nodes: [npu-1]}\n"
WALK_TEAM = """\
quota: {nvidia: 4, ascend: 2}
services:
  chat:
    images: {nvidia: r/chat:cuda, ascend: r/chat:cann}
    vendorMounts: false
    migration: {from: nvidia, to: ascend}
    phase: validate
    port: 8000
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 2}
      ascend: {devicesPerReplica: 1, replicas: 3}
    crossCluster:
      routing: gateway
      gateway: {parentRefs: [{name: gw, namespace: gw}], hostnames: [chat.example.com]}
"""


def walk_tree(root: Path) -> Path:
    """WALK_TEAM and WALK_ASCEND over the two clusters of tests/fixtures.py CROSS_PROD, on a
    Kubernetes minor the project has a control plane for."""
    fleet = CROSS_FLEET.replace('kubernetesVersion: "1.33"', 'kubernetesVersion: "1.36"')
    files = {"vendors/ascend.yaml": WALK_ASCEND, "teams/inference.yaml": WALK_TEAM}
    return cross_clusters(root, fleet=fleet, files=files)
