"""Clusters of other Kubernetes minors than the default control plane's: each cluster is
dry-run and simulated on a control plane of its own minor (gotools/controlplane-<minor>, built
on first use and cached), beside a cluster of the default minor on the session's plane.

One test per minor the CI proves: the oldest and the newest the project has a plane for. Each
starts a plane of that minor for the dry-run (without nfd-master) and one for the simulation.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
import yaml

from generator.cluster import dryrun
from generator.cluster import plane as fleet_plane
from generator.controlplane.launcher import ControlPlane
from generator.findings import Severity
from generator.simulate.run import simulate
from generator.toolchain import install, registry
from tests.fixtures import SIM_FLEET, tree

pytestmark = pytest.mark.xdist_group("control-plane")

# One NVIDIA vendor with a pool in each cluster: old (the minor under test) holds a100 on gpu-1,
# new (the fleet's 1.36) holds h100 on gpu-2; team ml runs a 4-GPU job in each.
VENDOR = {
    "pools": [
        {"name": "a100", "model": "A100", "devicesPerNode": 4, "nodes": ["gpu-1"]},
        {"name": "h100", "model": "H100", "devicesPerNode": 4, "nodes": ["gpu-2"]},
    ]
}


def job(cluster: str, model: str) -> dict[str, object]:
    return {
        "vendor": "nvidia",
        "devices": 4,
        "model": model,
        "cluster": cluster,
        "images": {"nvidia": "registry.example.com/train:cuda"},
        "command": ["python", "train.py"],
    }


def minors_tree(root: Path, minor: str) -> Path:
    env = {
        "clusters": {
            "old": {
                "destination": {"name": "old"},
                "kubernetesVersion": minor,
                "pools": ["nvidia/a100"],
            },
            "new": {"destination": {"name": "new"}, "pools": ["nvidia/h100"]},
        }
    }
    team = {
        "owners": ["ml@example.com"],
        "quota": {"nvidia": {"old": 4, "new": 4}},
        "jobs": {"train": job("old", "A100"), "tune": job("new", "H100")},
    }
    docs = {
        "fleet.yaml": SIM_FLEET,
        "environments/dev.yaml": env,
        "vendors/nvidia.yaml": VENDOR,
        "teams/ml.yaml": team,
    }
    files = {rel: yaml.safe_dump(doc, sort_keys=False) for rel, doc in docs.items()}
    return tree(root, files, defaults=False)


@pytest.mark.parametrize(
    ("minor", "version"),
    [("1.34", "v1.34.4"), ("1.37", "v1.37.2")],
)
def test_a_cluster_of_another_minor_is_dry_run_and_simulated_on_a_plane_of_its_minor(
    tmp_path: Path, cluster: ControlPlane, minor: str, version: str
) -> None:
    values = minors_tree(tmp_path, minor)
    # What the command's first use does: build that minor's plane when it is missing.
    install.build_missing(registry.control_plane_tools(minor))

    dry = dryrun.dry_run(values, None, plane=cluster)
    errors = [f.format() for f in dry.findings if f.severity is Severity.ERROR]
    assert errors == []
    # The session's plane (1.36) for new; one of the cluster's own minor started for old.
    assert dry.versions == {"dev/new": "v1.36.3", "dev/old": version}

    asked: list[str] = []

    def planes(wanted: str) -> contextlib.AbstractContextManager[ControlPlane]:
        asked.append(wanted)
        if wanted == cluster.minor:
            return contextlib.nullcontext(cluster)
        return fleet_plane.control_plane(minor=wanted)

    result = simulate(values, None, planes, argocd=False, watch_metrics=False)
    assert sorted(asked) == sorted([minor, "1.36"]) and len(asked) == 2  # one plane per minor
    assert result.errors == 0, [f.format() for f in result.findings]
    ran = {e.env: (e.kubernetes, [(p.workload, p.ok) for p in e.pods]) for e in result.envs}
    assert ran == {
        "dev/old": (version, [("Job ml/train", True)]),
        "dev/new": ("v1.36.3", [("Job ml/tune", True)]),
    }
