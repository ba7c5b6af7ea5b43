"""Scheduling checks on the values (issue 12, issue 8 item 7): placement preferences and their
fallback, accelerator topology refusals, and what each queue backend cannot do; each check fed a
values tree that breaks it, with its code at file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.builders.workloads import team_objects
from generator.values import loader as values
from tests.fixtures import FLEET, findings, lines, tree


def coded(values_dir: Path, code: str) -> list[str]:
    """The formatted findings with one code."""
    return [g for g in lines(values_dir) if f" {code} " in g]


def demo(root: Path, team: str, **vendors: str) -> Path:
    """A values tree whose one team is `demo` (teams/demo.yaml: `team`), beside the default
    NVIDIA vendor and the vendors given (vendors/<id>.yaml: text)."""
    files = {f"vendors/{v}.yaml": text for v, text in vendors.items()}
    return tree(root, {"teams/ml.yaml": None, "teams/demo.yaml": team, **files})


# ---- placement preferences ---------------------------------------------------------------------

H100 = """\
pools:
  - {name: h100, model: H100, devicesPerNode: 8, nodes: [gpu-h1]}
  - {name: a100, model: A100, devicesPerNode: 4, nodes: [nvidia-node-01, nvidia-node-02]}
"""
PREFER = """\
quota: {nvidia: 8}
jobs:
  train:
    vendor: nvidia
    devices: 4
    model: H100
    fallbackModel: A100
    images: {nvidia: x:1}
"""


def test_preferred_pool_with_a_fallback_is_preferred_node_affinity(tmp_path: Path) -> None:
    values_dir = demo(tmp_path, PREFER, nvidia=H100)
    view = values.load(values_dir).envs["prod"]
    team = next(t for t in view.teams if t.name == "demo")
    [job] = [o for o in team_objects(view, team)[0] if o["kind"] == "Job"]
    pod = job["spec"]["template"]["spec"]
    key = "feature.node.kubernetes.io/gpu-model"
    assert pod["nodeSelector"] == {"feature.node.kubernetes.io/accelerator": "nvidia-gpu"}
    assert pod["affinity"] == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": key, "operator": "In", "values": ["H100", "A100"]}
                        ]
                    }
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "preference": {
                        "matchExpressions": [{"key": key, "operator": "In", "values": ["H100"]}]
                    },
                }
            ],
        }
    }
    assert lines(values_dir) == []


def test_fallback_pool_counts_in_the_worst_case_capacity(tmp_path: Path) -> None:
    # 4 pods x 4 devices may all land on the A100 pool (8 devices) in the worst case.
    values_dir = demo(
        tmp_path,
        PREFER.replace("quota: {nvidia: 8}", "quota: {nvidia: 16}").replace(
            "    devices: 4\n", "    devices: 4\n    parallelism: 4\n"
        ),
        nvidia=H100,
    )
    got = coded(values_dir, "SCH006")
    assert (
        "values/teams/demo.yaml:8:20: SCH006 workloads that may run on nvidia A100 need 16 "
        "devices (0 for services, 16 for the largest job; a workload with a fallback model "
        "counts for both) but its pools hold 8 "
        "(at $.jobs.train.fallbackModel); add A100 nodes, or give job train a fallback model "
        "with room"
    ) in got
    # The preferred pool (8 devices) does not hold it either; with 2 pods both do.
    demo(tmp_path, PREFER, nvidia=H100)
    assert not coded(values_dir, "SCH006")


@pytest.mark.parametrize(
    ("job", "want"),
    [
        ("    fallbackModel: A100\n", "train': fallbackModel 'A100' needs a different `model`"),
        (
            "    model: H100\n    fallbackModel: V100\n",
            "fallbackModel 'V100' names no pool of nvidia (models: A100, H100)",
        ),
    ],
)
def test_fallback_model_must_be_another_model_of_the_vendor(
    job: str, want: str, tmp_path: Path
) -> None:
    values_dir = demo(
        tmp_path,
        "quota: {nvidia: 8}\njobs:\n  train:\n    vendor: nvidia\n    images: {nvidia: x:1}\n"
        + job,
        nvidia=H100,
    )
    [got] = coded(values_dir, "SCH005")
    assert got.startswith(f"values/teams/demo.yaml:{5 + job.count(chr(10))}:")
    assert want in got and "(at $.jobs.train.fallbackModel)" in got


# ---- topology ------------------------------------------------------------------------------------

ASCEND_910 = """\
pools:
  - name: a910
    model: '910'
    devicesPerNode: 8
    nodes: [ascend-node-01]
    labels: {accelerator-type: module}
  - name: 910b
    model: 910b
    devicesPerNode: 8
    nodes: [ascend-node-02]
    labels: {accelerator-type: module-910b-8}
"""


def _ascend_job(devices: int, model: str) -> str:
    return (
        "quota: {ascend: 8}\njobs:\n  train:\n    vendor: ascend\n"
        f"    devices: {devices}\n    model: '{model}'\n    vendorMounts: false\n"
        "    images: {ascend: x:1}\n"
    )


@pytest.mark.parametrize(
    ("devices", "model", "refused"),
    [
        (3, "910", True),
        (6, "910", True),
        (4, "910", False),
        (8, "910", False),
        (3, "910b", False),
        (6, "910b", False),
    ],
)
def test_ascend_topology_refuses_what_its_allocator_refuses(
    devices: int, model: str, refused: bool, tmp_path: Path
) -> None:
    values_dir = demo(tmp_path, _ascend_job(devices, model), ascend=ASCEND_910)
    got = coded(values_dir, "SCH003")
    if not refused:
        assert got == []
        return
    assert got[0] == (
        f"values/teams/demo.yaml:5:14: SCH003 Job 'train' asks for {devices} ascend devices per "
        "pod, which pool 'a910' (module: Atlas 800 training server, 8 Ascend 910 in two HCCS "
        "rings of 4; 1, 2 or 4 within a ring, 8 the whole node) cannot give one pod: allowed "
        "1, 2, 4, 8 (at $.jobs.train.devices); ask for one of 1, 2, 4, 8 devices per pod, and "
        "more pods for more devices (source: Ascend/mind-cluster v7.3.0 "
        "component/ascend-for-volcano/internal/npu/ascend910/ascend910old/module910x8/frame.go "
        "(New, invalid 3, 5, 6, 7) and task.go (judgeNodeAndTaskNPU))"
    )


def test_a_pod_larger_than_any_node_of_its_pool_is_refused(tmp_path: Path) -> None:
    # The default NVIDIA vendor: pool a100, 4 devices a node.
    values_dir = demo(
        tmp_path,
        "quota: {nvidia: 8}\nservices:\n  s:\n    images: {nvidia: x:1}\n"
        "    tracks:\n      nvidia: {devicesPerReplica: 6, replicas: 1}\n",
    )
    [got] = coded(values_dir, "SCH004")
    assert got == (
        "values/teams/demo.yaml:6:35: SCH004 Deployment 's-nvidia' asks for 6 nvidia devices "
        "per pod, but a node of pool 'a100' has 4 (at $.services.s.tracks.nvidia.devicesPerReplica)"
        "; ask for at most 4 devices per pod (more pods for more devices), or pick a model "
        "whose nodes have enough"
    )


# ---- backend checks ------------------------------------------------------------------------------


# Team ml with a Volcano job: its `kind: volcano` is on line 4, column 11.
VOLCANO_JOB = """\
quota: {nvidia: 4}
jobs:
  mixed-job:
    kind: volcano
    images: {nvidia: x:1}
    tasks:
      workers: {vendor: nvidia, devices: 1, replicas: 2}
"""


def test_volcano_job_under_kueue_is_refused(tmp_path: Path) -> None:
    values_dir = tree(
        tmp_path,
        {"teams/ml.yaml": VOLCANO_JOB},
        fleet=FLEET + "scheduling:\n  backend: kueue\n",
    )
    got = coded(values_dir, "SCH002")
    assert got[0].startswith(
        "values/teams/ml.yaml:4:11: SCH002 job 'mixed-job' is a Volcano Job, but the backend is "
        "kueue"
    )
    assert got[0].endswith(
        "(at $.jobs['mixed-job'].kind); use scheduling.backend: volcano in "
        "values/fleet.yaml, or write the job as batch/v1 Jobs (vendor, devices, parallelism)"
    )


def test_borrowing_without_a_queue_backend_is_a_warning(tmp_path: Path) -> None:
    # The default backend (quota); the borrowed 2 is on line 2, column 21.
    values_dir = tree(tmp_path, {"teams/ml.yaml": "quota: {nvidia: 4}\nborrowing: {nvidia: 2}\n"})
    [got] = [f for f in findings(values_dir) if f.code == "SCH007"]
    assert got.severity.value == "warning"
    assert got.format().startswith(
        "values/teams/ml.yaml:2:21: SCH007 warning: team 'ml' may borrow 2 nvidia "
        "devices, but backend 'quota' has no queue that lends"
    )
