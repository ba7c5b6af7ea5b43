"""`simulate` end to end on a real control plane, its report row by row.

tests/cluster/test_simchecks.py judges hand-written API objects with the pure verdict functions;
this file runs the thin functions that read the live cluster for them (`check_nodes`, `probe`,
`check_plugins`, `check_quotas`, `check_tracks`) on one small fleet, so a request that asks for
the wrong kind, namespace or object, or a probe namespace left behind, fails here. Every
expected row is written out by hand from the values below.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
import yaml

from generator.cluster.launcher import ControlPlane
from generator.cluster.simchecks import PROBE_NAMESPACE
from generator.cluster.simulate import simulate
from tests.fixtures import SIM_FLEET, tree

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
