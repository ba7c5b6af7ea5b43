"""The simulation's plan, made before anything runs: what it expects of the workloads' pods is
what kustomize built, a values `patch` of the workload included (no control plane here)."""

from __future__ import annotations

from pathlib import Path

from generator.cluster.dryrun import load
from generator.cluster.units import build
from generator.simulate.plan import make_plan
from tests.fixtures import FLEET, tree

# A Job, a JobSet task and a Deployment, each patched to ask for a zone the builders never set.
TEAM = """\
quota: {nvidia: 8}
jobs:
  train:
    vendor: nvidia
    devices: 1
    images: {nvidia: r/train:1}
    patch:
      strategicMerge: {spec: {template: {spec: {nodeSelector: {zone: a}}}}}
  gang:
    kind: jobset
    images: {nvidia: r/train:1}
    tasks:
      gpu: {vendor: nvidia, devices: 1, replicas: 2}
    patch:
      json6902:
        - {op: add, path: /spec/replicatedJobs/0/template/spec/template/spec/nodeSelector/zone, value: b}
services:
  serve:
    images: {nvidia: r/serve:1}
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 1}
    patch:
      strategicMerge: {spec: {template: {spec: {nodeSelector: {zone: c}}}}}
"""


def test_the_plan_expects_the_pods_as_kustomize_built_them_patches_included(
    tmp_path: Path,
) -> None:
    fleet = FLEET + "platform: {jobset: {provided: site}}\n"
    values = tree(tmp_path, {"teams/ml.yaml": TEAM, "fleet.yaml": fleet})
    checked, _ = load(values, "prod")
    built, found = build(checked.values, "prod", builds=checked.builds)
    assert found == []
    plan = make_plan(checked.values, checked.builds["prod"], built, found)
    zones = {key: ref.spec["nodeSelector"].get("zone") for key, ref in plan.refs.items()}
    assert zones == {
        ("ml", "Job", "train"): "a",
        ("ml", "JobSet task", "gang/gpu"): "b",
        ("ml", "Deployment", "serve-nvidia"): "c",
    }
    # What the builders wrote is still there beside the patch.
    job = plan.refs[("ml", "Job", "train")].spec
    assert job["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1}
