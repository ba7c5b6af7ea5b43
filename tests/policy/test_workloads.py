"""Workload checks (issue 5, generator/policy/workloads.py): each check fed a values tree that
breaks it, with its code at file:line. The phase table is in tests/workloads/test_phases.py, the
workloads as rendered in tests/builders/test_workloads.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.policy.registry import CHECKS as REGISTRY
from generator.values import loader as values
from tests.fixtures import (
    AMD_MI250X,
    ASCEND_910B,
    CAMBRICON_MLU370,
    FLEET,
    HYGON_Z100L,
    INFERENCE,
    lines,
    migration,
    tree,
)

# An Ascend vendor with the driver mounted into workloads as a hostPath (what a
# site without the Ascend Docker Runtime would write; the catalog mounts nothing).
ASCEND_WITH_DRIVER_MOUNT = """\
pools:
  - {name: 910b, model: 910b, devicesPerNode: 8, nodes: [npu-1, npu-2]}
workloadMounts:
  - {name: ascend-driver, path: /usr/local/Ascend/driver, readOnly: true}
"""

DEMO_JOB = "quota: {nvidia: 4}\njobs:\n  j:\n    vendor: nvidia\n"
HINT_POD = "; fix nodeSelector or resources of the workload"
# The migrating inference service (two replicas a track, phase validate) and its Ascend vendor,
# beside the default NVIDIA vendor (8 GPUs) and team ml (4 of them).
MIGRATING = {"vendors/ascend.yaml": ASCEND_910B, "teams/inference.yaml": INFERENCE}

# code -> (files of the tree beside the default NVIDIA vendor and team ml, the start of the line
# it must give)
CASES: dict[str, tuple[dict[str, str], str]] = {
    "WKL001": (
        {"teams/demo.yaml": "quota: {nvidia: 4}\njobs:\n  j:\n    vendor: kunlun\n"},
        "values/teams/demo.yaml:4:13: WKL001 vendor 'kunlun' has no enabled "
        "values/vendors/kunlun.yaml (at $.jobs.j.vendor); known vendors: nvidia",
    ),
    "WKL002": (
        {"teams/demo.yaml": DEMO_JOB + "    images: {ascend: x:1}\n"},
        "values/teams/demo.yaml:5:13: WKL002 no image for vendor 'nvidia' (at $.jobs.j.images)",
    ),
    "WKL003": (
        {"teams/demo.yaml": DEMO_JOB + "    namespace: ml\n    images: {nvidia: x:1}\n"},
        "values/teams/demo.yaml:5:16: WKL003 namespace 'ml' is not a namespace of team "
        "'demo' (at $.jobs.j.namespace); known: demo",
    ),
    "WKL004": (
        {
            "teams/demo.yaml": "quota: {ascend: 8}\njobs:\n  j:\n    vendor: ascend\n"
            "    devices: 8\n    images: {ascend: x:1}\n",
            # A site without the Ascend Docker Runtime mounts the driver itself.
            "vendors/ascend.yaml": ASCEND_WITH_DRIVER_MOUNT,
        },
        "values/teams/demo.yaml:4:5: WKL004 pods mount /usr/local/Ascend/driver "
        "(workloadMounts of ascend) as hostPath, which Pod Security 'baseline' refuses "
        "(at $.jobs.j)",
    ),
    "WKL005": (
        {
            "teams/demo.yaml": "quota: {nvidia: 4, ascend: 4}\nservices:\n  s:\n"
            "    images: {nvidia: x:1, ascend: x:2}\n"
            "    tracks:\n      nvidia: {replicas: 1}\n      ascend: {replicas: 1}\n",
            "vendors/ascend.yaml": ASCEND_910B,
        },
        "values/teams/demo.yaml:4:5: WKL005 service 's' has 2 tracks but no migration "
        "(from, to) and no weights (at $.services.s)",
    ),
    "MIG001": (
        {
            **MIGRATING,
            "environments/staging.yaml": "teams:\n  inference:\n    services:\n"
            "      inference-service:\n        weights: {nvidia: 60, ascend: 30}\n",
        },
        "values/environments/staging.yaml:5:18: MIG001 service 'inference-service' weights sum "
        "to 90 (ascend 30, nvidia 60), not 100 in environment 'staging' "
        "(at $.services['inference-service'].weights)",
    ),
    "MIG002": (
        {
            **MIGRATING,
            "environments/staging.yaml": "teams:\n  inference:\n    services:\n"
            "      inference-service:\n        replicas: {ascend: 0}\n"
            "        weights: {nvidia: 50, ascend: 50}\n",
        },
        "values/environments/staging.yaml:6:39: MIG002 service 'inference-service' sends weight "
        "50 to track 'ascend', which has 0 replicas in environment 'staging' "
        "(at $.services['inference-service'].weights.ascend)",
    ),
    "MIG003": (
        {
            **MIGRATING,
            "environments/staging.yaml": "teams:\n  inference:\n    services:\n"
            "      inference-service:\n        phase: shift-50\n        replicas: {ascend: 0}\n",
        },
        "values/environments/staging.yaml:6:28: MIG003 service 'inference-service' track "
        "'ascend' has 0 replicas but carries 50% of the traffic in phase 'shift-50' in "
        "environment 'staging' (at $.services['inference-service'].replicas.ascend)",
    ),
    "MIG004": (
        {
            **MIGRATING,
            "environments/prod.yaml": "teams:\n  inference:\n    services:\n"
            "      inference-service:\n        replicas: {nvidia: 5}\n",
        },
        "values/environments/prod.yaml:5:28: MIG004 team 'inference' needs 5 nvidia devices in "
        "namespace 'inference' (service inference-service 5x1=5) but its quota is 4 in "
        "environment 'prod' (at $.services['inference-service'].replicas.nvidia)",
    ),
    "MIG005": (
        {
            **MIGRATING,
            # Quotas may overcommit; the pods may not: 5 for the service and ml's 4-GPU job.
            "fleet.yaml": FLEET + "capacity: {allowOvercommit: true}\n",
            "teams/ml.yaml": "quota: {nvidia: 4}\njobs:\n  train:\n    vendor: nvidia\n"
            "    devices: 4\n    images: {nvidia: x:1}\n",
            "environments/prod.yaml": "teams:\n  inference:\n    quota: {nvidia: 8}\n"
            "    services:\n      inference-service:\n        replicas: {nvidia: 5}\n",
        },
        "values/environments/prod.yaml:6:28: MIG005 workloads need 9 nvidia devices (5 for "
        "services, 4 for the largest job) but its pools hold 8 in environment 'prod' "
        "(at $.services['inference-service'].replicas.nvidia)",
    ),
    "MIG006": (
        {
            **MIGRATING,
            "environments/prod.yaml": "teams:\n  inference:\n    services:\n"
            "      inference-service: {phase: shift-25}\n",
        },
        "values/environments/prod.yaml:4:34: MIG006 warning: service 'inference-service' uses "
        "routing: service, so track 'nvidia' gets 50% of the traffic (2 of 4 ready pods), not "
        "the 75% of phase 'shift-25' in environment 'prod' "
        "(at $.services['inference-service'].phase)",
    ),
    "POD001": (
        {
            "teams/demo.yaml": DEMO_JOB + "    devices: 0\n    images: {nvidia: x:1}\n"
            "    resources:\n      requests: {nvidia.com/gpu: 2}\n"
            "      limits: {nvidia.com/gpu: 1}\n"
        },
        "values/teams/demo.yaml:8:7: POD001 Job 'j': container 'j' requests nvidia.com/gpu: "
        "requests 2, limits 1; devices are whole numbers in limits, with equal requests "
        "(at $.jobs.j.resources)" + HINT_POD,
    ),
    "POD002": (
        {
            "teams/demo.yaml": DEMO_JOB + "    images: {nvidia: x:1}\n"
            "    resources:\n      limits: {cambricon.com/mlu: 1}\n",
            "vendors/cambricon.yaml": CAMBRICON_MLU370,
        },
        "values/teams/demo.yaml:7:7: POD002 Job 'j': container 'j' requests cambricon.com/mlu "
        "and nvidia.com/gpu at once (at $.jobs.j.resources)" + HINT_POD,
    ),
    "POD003": (
        {"teams/demo.yaml": DEMO_JOB + "    model: H100\n    images: {nvidia: x:1}\n"},
        "values/teams/demo.yaml:5:12: POD003 Job 'j': container 'j' requests nvidia.com/gpu but "
        "its nodeSelector {feature.node.kubernetes.io/accelerator=nvidia-gpu, "
        "feature.node.kubernetes.io/gpu-model=H100} picks no pool of nvidia (at $.jobs.j.model)",
    ),
    "POD004": (
        {
            "teams/demo.yaml": "quota: {hygon: 4}\njobs:\n  j:\n    vendor: hygon\n"
            "    images: {hygon: x:1}\n    nodeSelector: {accelerator: amd-gpu}\n",
            "vendors/amd.yaml": AMD_MI250X,
            "vendors/hygon.yaml": HYGON_Z100L,
        },
        "values/teams/demo.yaml:6:19: POD004 Job 'j': container 'j' does not tolerate taint "
        "feature.node.kubernetes.io/accelerator=amd-gpu:NoSchedule of pool 'mi250x' (at "
        "$.jobs.j.nodeSelector)",
    ),
    "POD005": (
        {
            "teams/demo.yaml": "quota: {hygon: 4}\njobs:\n  j:\n    vendor: hygon\n"
            "    images: {hygon: x:1}\n",
            # Hygon's selector no longer tells it from AMD (RES001 reports the vendor side).
            "vendors/hygon.yaml": "resourceName: amd.com/gpu\nnodeLabels: {accelerator: amd-gpu}\n"
            "devicePlugin: {image: r/dcu, version: v1}\n"
            "pools:\n  - {name: z100l, model: Z100L, devicesPerNode: 8, nodes: [dcu-1]}\n",
            "vendors/amd.yaml": AMD_MI250X,
        },
        "values/teams/demo.yaml:4:5: POD005 Job 'j': container 'j' requests amd.com/gpu, which "
        "amd and hygon both advertise, and its nodeSelector "
        "{feature.node.kubernetes.io/accelerator=amd-gpu} picks pools of both (at $.jobs.j)",
    ),
}


def test_every_workload_check_has_a_case() -> None:
    mine = {c for c in REGISTRY if c.startswith(("WKL", "MIG", "POD"))}
    assert mine <= set(CASES)


@pytest.mark.parametrize("code", sorted(CASES))
def test_workload_check_reports_its_code_at_the_right_place(code: str, tmp_path: Path) -> None:
    files, expected = CASES[code]
    got = lines(tree(tmp_path, files))
    assert any(g.startswith(expected) for g in got), "\n".join(got)


def test_example_fleet_has_no_workload_errors(values_dir: Path) -> None:
    got = [g for g in lines(values_dir) if any(f" {p}" in g for p in ("WKL", "MIG", "POD"))]
    assert got == []


# The migrating inference service with a third track, on Hygon DCUs, that the weights
# leave out: routing: service still sends it traffic once two tracks serve.
THIRD_TRACK = """\
owners: [inference-oncall@example.com]
podSecurity: restricted
quota: {hygon: 8, nvidia: 4, ascend: 4}
services:
  inference-service:
    images: {nvidia: 'r/s:cuda', ascend: 'r/s:ascend', hygon: 'r/s:dcu'}
    vendorMounts: false
    migration: {from: nvidia, to: ascend}
    phase: shift-25
    replicas: {nvidia: 3, ascend: 1}
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 3}
      ascend: {devicesPerReplica: 1, replicas: 1, model: 910b}
      hygon: {devicesPerReplica: 1, replicas: %d}
"""


def _third_track(root: Path, hygon_replicas: int) -> Path:
    """Staging runs the service in phase shift-50, prod in dual-run."""
    env = "teams:\n  inference:\n    services:\n      inference-service: {phase: %s}\n"
    files = {
        "vendors/ascend.yaml": ASCEND_910B,
        "vendors/hygon.yaml": HYGON_Z100L,
        "teams/inference.yaml": THIRD_TRACK % hygon_replicas,
        "environments/staging.yaml": env % "shift-50",
        "environments/prod.yaml": env % "dual-run",
    }
    return tree(root, files)


def test_a_track_of_weight_0_that_the_service_selects_gets_traffic(tmp_path: Path) -> None:
    # nvidia 3 and ascend 1 are the 75/25 of shift-25 exactly; only the hygon pod is off (prod's
    # dual-run serves from nvidia alone, so its Service selects only nvidia: no finding there).
    values_dir = _third_track(tmp_path, 1)
    got = [g for g in lines(values_dir) if "MIG006" in g]
    assert got, lines(values_dir)
    assert all(
        g.startswith(
            "values/teams/inference.yaml:14:47: MIG006 warning: service 'inference-service' uses "
            "routing: service, so track 'hygon' gets 20% of the traffic (1 of 5 ready pods), "
            "not the 0% of phase"
        )
        for g in got
    ), got
    # Without the hygon pod there is nothing to say of it (staging's 3:1 against shift-50's
    # 50/50 is another matter).
    _third_track(tmp_path, 0)
    got = [g for g in lines(values_dir) if "MIG006" in g]
    assert got and not any("track 'hygon'" in g for g in got), got


def test_gateway_routing_needs_a_gateway(tmp_path: Path) -> None:
    values_dir = migration(
        tmp_path,
        "teams:\n  inference:\n    services:\n      inference-service: {routing: gateway}\n",
    )
    assert (
        "values/environments/prod.yaml:4:36: WKL005 service 'inference-service' routes through a "
        "gateway but names none in environment 'prod' "
        "(at $.services['inference-service'].routing)"
    ) in "\n".join(lines(values_dir))


def test_vendor_driver_mounts_render_read_only_and_are_refused_under_baseline(
    tmp_path: Path,
) -> None:
    from generator.builders.workloads import team_objects

    ml = (
        "quota: {nvidia: 4, ascend: 8}\njobs:\n  npu-training-job:\n    vendor: ascend\n"
        "    devices: 8\n    model: 910b\n    images: {ascend: x:1}\n    vendorMounts: true\n"
    )
    files = {"teams/ml.yaml": ml, "vendors/ascend.yaml": ASCEND_WITH_DRIVER_MOUNT}
    values_dir = tree(tmp_path, files)
    prod = values.load(values_dir).envs["prod"]
    team = next(t for t in prod.teams if t.name == "ml")
    objs, _ = team_objects(prod, team)
    npu = next(o for o in objs if o["metadata"]["name"] == "npu-training-job")
    pod = npu["spec"]["template"]["spec"]
    assert pod["containers"][0]["volumeMounts"] == [
        {"name": "ascend-driver", "mountPath": "/usr/local/Ascend/driver", "readOnly": True}
    ]
    assert pod["volumes"][0]["hostPath"]["path"] == "/usr/local/Ascend/driver"
    assert any(" WKL004 pods mount /usr/local/Ascend/driver" in g for g in lines(values_dir))
