"""Workload checks (issue 5, generator/policy/workloads.py): each check fed a values tree that
breaks it, with its code at file:line. The phase table is in tests/workloads/test_phases.py, the
workloads as rendered in tests/builders/test_workloads.py."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from generator.builders.fleet import Build
from generator.findings import Finding, Severity
from generator.policy import workloads
from generator.policy.registry import CHECKS as REGISTRY
from generator.values import loader as values
from generator.values.model import FleetView, Values
from generator.workloads.usage import fleet_needs, vendor_usage
from tests.fixtures import (
    AMD_MI250X,
    ASCEND_910B,
    CAMBRICON_MLU370,
    FLEET,
    HYGON_Z100L,
    INFERENCE,
    PROD_FLEET,
    context,
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
    # a typo of a known vendor: the vendor it likely meant
    "WKL001-typo": (
        {"teams/demo.yaml": "quota: {nvidia: 4}\njobs:\n  j:\n    vendor: nvdia\n"},
        "values/teams/demo.yaml:4:13: WKL001 vendor 'nvdia' has no enabled "
        "values/vendors/nvdia.yaml (at $.jobs.j.vendor); did you mean 'nvidia'? known vendors: "
        "nvidia",
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
    # a hostPath volume of the workload's own: refused by both team Pod Security levels
    "WKL004-volume": (
        {
            "teams/demo.yaml": DEMO_JOB + "    images: {nvidia: x:1}\n    volumes:\n"
            "      - {name: data, hostPath: {path: /mnt/data}}\n"
        },
        "values/teams/demo.yaml:7:9: WKL004 volume 0 mounts the node's '/mnt/data' (hostPath), "
        "which Pod Security 'baseline' refuses (at $.jobs.j.volumes[0])",
    ),
    # a TrainJob's pods cannot carry a priority class: at its key
    "WKL010": (
        {
            "teams/demo.yaml": DEMO_JOB + "    kind: trainjob\n    images: {nvidia: x:1}\n"
            "    priorityClassName: high\n    numNodes: 2\n"
        },
        "values/teams/demo.yaml:7:5: WKL010 job 'j' is a TrainJob: a runtime patch has no "
        "priorityClassName (PodSpecPatch) (at $.jobs.j.priorityClassName); remove "
        "priorityClassName",
    ),
    # nor a vendor's RuntimeClass: at its vendor
    "WKL010-runtime-class": (
        {
            "teams/demo.yaml": DEMO_JOB + "    kind: trainjob\n    images: {nvidia: x:1}\n",
            "vendors/nvidia.yaml": "runtimeClass: nvidia-rt\n"
            "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1, n2]}\n",
        },
        "values/teams/demo.yaml:4:13: WKL010 job 'j' is a TrainJob: vendor 'nvidia' needs "
        "RuntimeClass 'nvidia-rt' on its pods, and a runtime patch has no runtimeClassName "
        "(PodSpecPatch) (at $.jobs.j.vendor); make the vendor's container runtime",
    ),
    # nor the fleet's scheduler: at its kind
    "WKL010-scheduler": (
        {
            "fleet.yaml": FLEET + "scheduling: {backend: volcano}\n",
            "teams/demo.yaml": DEMO_JOB + "    kind: trainjob\n    images: {nvidia: x:1}\n",
        },
        "values/teams/demo.yaml:5:11: WKL010 job 'j' is a TrainJob: the fleet's pods ask for "
        "scheduler 'volcano', and a runtime patch has no schedulerName (PodSpecPatch): the "
        "TrainJob's pods would bypass it (at $.jobs.j.kind); use kind: volcano or jobset",
    ),
    # a Kubernetes field misspelt: at its key, with the field it likely meant
    "WKL006": (
        {
            "teams/demo.yaml": DEMO_JOB + "    images: {nvidia: x:1}\n    volumes:\n"
            "      - name: data\n        persistentVolumeClaim: {claimNmae: imagenet}\n"
        },
        "values/teams/demo.yaml:8:33: WKL006 'claimNmae' is not a field of a Kubernetes Volume "
        "here (at $.jobs.j.volumes[0].persistentVolumeClaim.claimNmae); did you mean "
        "'claimName'?",
    ),
    # a mount of a volume the workload does not have
    "WKL006-mount": (
        {
            "teams/demo.yaml": DEMO_JOB + "    images: {nvidia: x:1}\n    volumes:\n"
            "      - {name: dataset, emptyDir: {}}\n"
            "    volumeMounts:\n      - {name: datset, mountPath: /data}\n"
        },
        "values/teams/demo.yaml:9:16: WKL006 volume mount names 'datset', which is not one of "
        "the workload's volumes (at $.jobs.j.volumeMounts[0].name); did you mean 'dataset'?",
    ),
    # an empty key with Exists tolerates every taint: another vendor's pool too
    "WKL007": (
        {
            "teams/demo.yaml": DEMO_JOB + "    images: {nvidia: x:1}\n"
            "    tolerations: [{operator: Exists}]\n",
            "vendors/ascend.yaml": ASCEND_910B,
        },
        "values/teams/demo.yaml:6:19: WKL007 toleration 0 tolerates ascend's pool taint "
        "feature.node.kubernetes.io/accelerator=huawei-npu:NoSchedule, so the workload's pods "
        "may land on ascend nodes it does not use (at $.jobs.j.tolerations[0])",
    ),
    # a Secret the pods use that the team does not declare: the one it likely meant
    "WKL008": (
        {
            "teams/demo.yaml": "quota: {nvidia: 4}\nexternal:\n  secrets: [registry-creds]\n"
            "jobs:\n  j:\n    vendor: nvidia\n    images: {nvidia: x:1}\n"
            "    imagePullSecrets: [{name: registry-cred}]\n"
        },
        "values/teams/demo.yaml:8:31: WKL008 the pods use Secret 'registry-cred', which the "
        "fleet does not render and the team does not declare (at "
        "$.jobs.j.imagePullSecrets[0].name); did you mean 'registry-creds'? add it to "
        "external.secrets in the team's file",
    ),
    # a priority class the fleet does not render
    "WKL008-priority": (
        {"teams/demo.yaml": DEMO_JOB + "    images: {nvidia: x:1}\n    priorityClassName: high\n"},
        "values/teams/demo.yaml:6:24: WKL008 the pods use PriorityClass 'high', which the fleet "
        "does not render and the team does not declare (at $.jobs.j.priorityClassName); add it "
        "to scheduling.priorityClasses in fleet.yaml",
    ),
    # a pod annotation the fleet does not let teams set
    "WKL009": (
        {
            "teams/demo.yaml": DEMO_JOB + "    images: {nvidia: x:1}\n"
            "    podAnnotations: {sidecar.istio.io/inject: 'false'}\n"
        },
        "values/teams/demo.yaml:6:22: WKL009 pod annotation 'sidecar.istio.io/inject' is not "
        "one the fleet lets teams set (at $.jobs.j.podAnnotations['sidecar.istio.io/inject']); "
        "the platform team adds it to teamPodAnnotations in fleet.yaml",
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
    # a JobSet is made of tasks, one replicated job each
    "WKL005-jobset": (
        {"teams/demo.yaml": "quota: {nvidia: 4}\njobs:\n  j:\n    kind: jobset\n"},
        "values/teams/demo.yaml:4:5: WKL005 JobSet 'j' has no tasks (at $.jobs.j); add tasks",
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
    "MIG007": (
        {
            # Team ml's 4-GPU job (quota 4) and team b's two (quota 8): 12 of the 8 GPUs at once.
            "fleet.yaml": FLEET + "capacity: {allowOvercommit: true}\n",
            "teams/ml.yaml": "quota: {nvidia: 4}\njobs:\n  t:\n    vendor: nvidia\n"
            "    devices: 4\n    images: {nvidia: x:1}\n",
            "teams/b.yaml": "quota: {nvidia: 8}\njobs:\n  u:\n    vendor: nvidia\n"
            "    devices: 4\n    images: {nvidia: x:1}\n  v:\n    vendor: nvidia\n"
            "    devices: 4\n    images: {nvidia: x:1}\n",
        },
        "values/teams/b.yaml:4:5: MIG007 warning: with every team's jobs running up to its quota, "
        "workloads hold 12 nvidia devices at once (0 for services, 12 for jobs; b 8, ml 4) but its "
        "pools hold 8: teams' jobs wait for each other (at $.jobs.u)",
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
    # in a production environment the same split is an error
    "MIG006-production": (
        {
            **MIGRATING,
            "fleet.yaml": FLEET + "productionEnvironments: [prod]\n",
            "environments/prod.yaml": "teams:\n  inference:\n    services:\n"
            "      inference-service: {phase: shift-25}\n",
        },
        "values/environments/prod.yaml:4:34: MIG006 service 'inference-service' uses "
        "routing: service, so track 'nvidia' gets 50% of the traffic (2 of 4 ready pods), not "
        "the 75% of phase 'shift-25' in environment 'prod' "
        "(at $.services['inference-service'].phase); environment 'prod' is in "
        "productionEnvironments: set replicasFollowWeights: true (plan shows the replicas it "
        "gives), or use routing: gateway or istio for weighted traffic",
    ),
    # replicas that follow the weights as closely as whole pods allow: what is left is said
    "MIG006-follow": (
        {
            **MIGRATING,
            "fleet.yaml": FLEET + "productionEnvironments: [prod]\n",
            "environments/prod.yaml": "teams:\n  inference:\n    services:\n"
            "      inference-service: {phase: shift-33, replicasFollowWeights: true}\n",
        },
        "values/environments/prod.yaml:4:34: MIG006 warning: service 'inference-service' uses "
        "routing: service, so track 'nvidia' gets 75% of the traffic (3 of 4 ready pods), not "
        "the 67% of phase 'shift-33' in environment 'prod' "
        "(at $.services['inference-service'].phase); the replicas follow the weights as "
        "closely as whole pods allow",
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
            "    images: {hygon: x:1}\n    nodeSelector: {accelerator: dcu-or-gpu}\n",
            # The vendors' selectors tell them apart (no RES001): the job's own nodeSelector,
            # on a label pools of both carry, is what picks both.
            "vendors/hygon.yaml": HYGON_Z100L.replace(
                "devicesPerNode: 8", "devicesPerNode: 8\n    labels: {accelerator: dcu-or-gpu}"
            ),
            "vendors/amd.yaml": AMD_MI250X.replace(
                "nodes: [amd-1]", "nodes: [amd-1], labels: {accelerator: dcu-or-gpu}"
            ),
        },
        "values/teams/demo.yaml:6:19: POD005 Job 'j': container 'j' requests amd.com/gpu, which "
        "amd and hygon both advertise, and its nodeSelector "
        "{feature.node.kubernetes.io/accelerator=dcu-or-gpu} picks pools of both "
        "(at $.jobs.j.nodeSelector)",
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
    from tests.fixtures import team_objects

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


# ---- each check's whole findings, in-process -------------------------------------------------
# Each check function runs on environment prod of a tree made for it, and every finding it gives
# is written out whole (file:line:column, message, JSON path, hint): a finding that moves, changes
# a word or goes missing, and one that should not be there, fail alike.


def _prod(root: Path, files: dict[str, str | None]) -> FleetView:
    return values.load(tree(root, files)).envs["prod"]


def _format(found: Iterable[Finding]) -> list[str]:
    return [f.format() for f in found]


# One service of team web (tracks nvidia and ascend, NVIDIA to Ascend): `extra` holds its own
# keys (phase, weights, replicas, routing), one per `;`.
SERVICE = """\
  {name}:
    images: {{nvidia: r/x:cuda, ascend: r/x:cann, hygon: r/x:dcu}}
    vendorMounts: false
    migration: {{from: nvidia, to: ascend}}
{extra}    tracks:
      nvidia: {{replicas: {nvidia}}}
      ascend: {{replicas: {ascend}}}
"""


def _service(name: str, nvidia: int, ascend: int, extra: str = "") -> str:
    keys = "".join(f"    {key}\n" for key in extra.split(";") if key)
    return SERVICE.format(name=name, nvidia=nvidia, ascend=ascend, extra=keys)


def _web(*services: str) -> dict[str, str | None]:
    """Team web with `services`, in that order, beside Ascend and Hygon."""
    web = "quota: {nvidia: 8, ascend: 8, hygon: 8}\nservices:\n" + "".join(services)
    return {
        "teams/web.yaml": web,
        "vendors/ascend.yaml": ASCEND_910B,
        "vendors/hygon.yaml": HYGON_Z100L,
    }


# MIG001, MIG002, MIG003: a service without weights first, then weights naming a track it lacks
# and not summing to 100, weight 1 and weight 0 to tracks of 0 replicas, phase shift-1 with the
# new track at 0 replicas, and dual-run with the idle new track at 0 replicas.
WEIGHTS = (
    _service("a-plain", 1, 1, "phase: dual-run"),
    _service("b-unknown", 1, 1, "weights: {nvidia: 50, ascend: 30, hygon: 10}"),
    _service("c-one", 1, 1, "weights: {nvidia: 99, ascend: 1};replicas: {ascend: 0}"),
    _service("d-zero", 1, 1, "weights: {nvidia: 100, ascend: 0};replicas: {ascend: 0}"),
    _service("e-shift", 1, 1, "phase: shift-1;replicas: {ascend: 0}"),
    _service("f-idle", 1, 1, "phase: dual-run;replicas: {ascend: 0}"),
)


@pytest.fixture(scope="module")
def weights_view(tmp_path_factory: pytest.TempPathFactory) -> FleetView:
    return _prod(tmp_path_factory.mktemp("weights"), _web(*WEIGHTS))


def test_weights_that_name_no_track_or_miss_100_are_reported(weights_view: FleetView) -> None:
    """MIG001: the unknown track at its key, the sum (its parts sorted) at `weights:`; services
    without weights, or whose weights sum to 100, give nothing."""
    assert _format(workloads.weights_sum(context(weights_view))) == [
        "values/teams/web.yaml:15:39: MIG001 service 'b-unknown' weights name 'hygon', which is "
        "not one of its tracks (at $.services['b-unknown'].weights.hygon); known tracks: "
        "nvidia, ascend",
        "values/teams/web.yaml:15:14: MIG001 service 'b-unknown' weights sum to 90 (ascend 30, "
        "hygon 10, nvidia 50), not 100 (at $.services['b-unknown'].weights); weights are "
        "percentages of the traffic: make them add up to 100",
    ]


def test_a_weight_sent_to_a_track_without_replicas_is_reported(weights_view: FleetView) -> None:
    """MIG002: weight 1 to a track of 0 replicas, at that weight; weight 0 to one, phase weights,
    and weights to tracks that run give nothing."""
    assert _format(workloads.weight_to_empty(context(weights_view))) == [
        "values/teams/web.yaml:23:35: MIG002 service 'c-one' sends weight 1 to track 'ascend', "
        "which has 0 replicas (at $.services['c-one'].weights.ascend); set its weight to 0, or "
        "give the track replicas"
    ]


def test_a_phase_that_routes_traffic_to_a_track_without_replicas_is_reported(
    weights_view: FleetView,
) -> None:
    """MIG003: shift-1 sends 1% to the new track at 0 replicas, reported at those replicas;
    dual-run sends it nothing, and explicit weights are MIG002's."""
    assert _format(workloads.empty_with_traffic(context(weights_view))) == [
        "values/teams/web.yaml:42:24: MIG003 service 'e-shift' track 'ascend' has 0 replicas but "
        "carries 1% of the traffic in phase 'shift-1' (at $.services['e-shift'].replicas.ascend); "
        "keep the track running until the phase moves its traffic away"
    ]


# MIG006: a gateway first (its pods need not match the weights), then one serving track, pods in
# step with the phase, weights 70/30 on 1:1 pods, shift-50 on 1:3 pods, a third track of weight
# 0 whose pods the Service selects, and weight 1 to a track of 0 replicas.
GATEWAY = "phase: shift-50;routing: gateway;gateway: {parentRefs: [{name: gw, namespace: gw}]}"
ROUTING = (
    _service("a-gateway", 3, 1, GATEWAY),
    _service("b-one-serving", 2, 2, "phase: dual-run"),
    _service("c-in-step", 3, 1, "phase: shift-25"),
    _service("d-weights", 1, 1, "weights: {nvidia: 70, ascend: 30}"),
    _service("e-phase", 1, 3, "phase: shift-50"),
    _service("f-third", 1, 1, "weights: {nvidia: 50, ascend: 50, hygon: 0}")
    + "      hygon: {replicas: 2}\n",
    _service("g-weight-one", 1, 0, "weights: {nvidia: 99, ascend: 1}"),
)
HINT_MIG006 = (
    "; use routing: gateway or istio for weighted traffic, or set replicasFollowWeights: true"
)


def test_routing_service_splits_by_ready_pods_not_by_weights(tmp_path: Path) -> None:
    """MIG006 names the track of weight 0 first, else the first track that is off; it points at
    the phase the service sets, else at the service, and at a weight-0 track's replicas."""
    view = _prod(tmp_path, _web(*ROUTING))
    assert _format(workloads.pod_split(context(view))) == [
        "values/teams/web.yaml:30:5: MIG006 warning: service 'd-weights' uses routing: service, "
        "so track 'nvidia' gets 50% of the traffic (1 of 2 ready pods), not the 70% of phase "
        "'validate' (at $.services['d-weights'])" + HINT_MIG006,
        "values/teams/web.yaml:41:12: MIG006 warning: service 'e-phase' uses routing: service, so "
        "track 'nvidia' gets 25% of the traffic (1 of 4 ready pods), not the 50% of phase "
        "'shift-50' (at $.services['e-phase'].phase)" + HINT_MIG006,
        "values/teams/web.yaml:53:25: MIG006 warning: service 'f-third' uses routing: service, so "
        "track 'hygon' gets 50% of the traffic (2 of 4 ready pods), not the 0% of phase "
        "'validate' (at $.services['f-third'].tracks.hygon.replicas)" + HINT_MIG006,
        "values/teams/web.yaml:55:5: MIG006 warning: service 'g-weight-one' uses routing: "
        "service, so track 'nvidia' gets 100% of the traffic (1 of 1 ready pods), not the 99% "
        "of phase 'validate' (at $.services['g-weight-one'])" + HINT_MIG006,
    ]


# WKL004: Ascend mounts two driver paths into workloads. Team lab (Pod Security restricted) has a
# job that turns the mounts off, one without devices, one that mounts them, a CUDA job (NVIDIA
# mounts nothing), and a service whose Ascend track mounts them.
ASCEND_TWO_MOUNTS = (
    ASCEND_910B
    + """\
workloadMounts:
  - {name: ascend-driver, path: /usr/local/Ascend/driver, readOnly: true}
  - {name: ascend-tools, path: /usr/local/dcmi, readOnly: true}
"""
)
LAB = """\
podSecurity: restricted
quota: {nvidia: 4, ascend: 8}
jobs:
  a-no-mounts:
    vendor: ascend
    devices: 2
    images: {ascend: r/t:cann}
    vendorMounts: false
  b-no-devices:
    vendor: ascend
    devices: 0
    images: {ascend: r/t:cann}
  c-mounts:
    vendor: ascend
    devices: 2
    images: {ascend: r/t:cann}
  d-cuda:
    vendor: nvidia
    devices: 1
    images: {nvidia: r/t:cuda}
services:
  s:
    images: {nvidia: r/s:cuda, ascend: r/s:cann}
    migration: {from: nvidia, to: ascend}
    phase: dual-run
    tracks:
      nvidia: {replicas: 1}
      ascend: {replicas: 1}
"""
HINT_WKL004 = (
    "; rely on the vendor's container runtime to inject the driver (Ascend Docker Runtime) and "
    "set vendorMounts: false on the workload"
)


def test_host_path_mounts_are_reported_for_each_pod_that_mounts_them(tmp_path: Path) -> None:
    """WKL004 for the job and the service track that mount Ascend's paths (at the job, at the
    track), naming the team's own Pod Security level."""
    view = _prod(tmp_path, {"teams/lab.yaml": LAB, "vendors/ascend.yaml": ASCEND_TWO_MOUNTS})
    mounts = "pods mount /usr/local/Ascend/driver, /usr/local/dcmi (workloadMounts of ascend)"
    assert _format(workloads.host_paths(context(view))) == [
        f"values/teams/lab.yaml:14:5: WKL004 {mounts} as hostPath, which Pod Security "
        "'restricted' refuses (at $.jobs['c-mounts'])" + HINT_WKL004,
        f"values/teams/lab.yaml:28:15: WKL004 {mounts} as hostPath, which Pod Security "
        "'restricted' refuses (at $.services.s.tracks.ascend)" + HINT_WKL004,
    ]


# MIG004 and MIG005 (quotas may overcommit): team a needs 4 NVIDIA GPUs on a quota of 3 and
# exactly its 8 NPUs; team b needs exactly its quota. The fleet needs 9 of the 8 NVIDIA GPUs (team
# b's job is the largest part) and exactly the 8 NPUs.
TEAM_A = """\
quota: {nvidia: 3, ascend: 8}
jobs:
  small:
    vendor: nvidia
    devices: 1
    images: {nvidia: r/t:cuda}
  npu:
    vendor: ascend
    devices: 4
    images: {ascend: r/t:cann}
services:
  s:
    images: {nvidia: r/s:cuda}
    tracks:
      nvidia: {replicas: 3}
  t:
    images: {ascend: r/t:cann}
    tracks:
      ascend: {replicas: 4}
"""
TEAM_B = """\
quota: {nvidia: 6}
jobs:
  train:
    vendor: nvidia
    devices: 6
    images: {nvidia: r/t:cuda}
"""


@pytest.fixture(scope="module")
def usage(tmp_path_factory: pytest.TempPathFactory) -> Values:
    files = {
        "fleet.yaml": FLEET + "capacity: {allowOvercommit: true}\n",
        "teams/ml.yaml": None,
        "teams/a.yaml": TEAM_A,
        "teams/b.yaml": TEAM_B,
        "vendors/ascend.yaml": ASCEND_910B,
    }
    return values.load(tree(tmp_path_factory.mktemp("usage"), files))


def test_a_team_over_its_quota_is_reported(usage: Values) -> None:
    """MIG004 for team a's GPUs at the largest part of them; needing exactly the quota is fine;
    the base layer has no quotas to check (they are per environment)."""
    assert _format(workloads.fits_quota(context(usage.envs["prod"]))) == [
        "values/teams/a.yaml:15:26: MIG004 team 'a' needs 4 nvidia devices in namespace 'a' "
        "(service s 3x1=3, job small=1) but its quota is 3 (at "
        "$.services.s.tracks.nvidia.replicas); raise quota.nvidia, or lower the replicas or the "
        "phase"
    ]
    assert list(workloads.fits_quota(context(usage.base))) == []


def test_a_fleet_over_a_vendors_capacity_is_reported_at_the_largest_use(usage: Values) -> None:
    """MIG005 for NVIDIA at team b's job, the largest use; Ascend, needed exactly, is fine; the
    base layer is not checked."""
    assert _format(workloads.fits_capacity(context(usage.envs["prod"]))) == [
        "values/teams/b.yaml:4:5: MIG005 workloads need 9 nvidia devices (3 for services, 6 for "
        "the largest job) but its pools hold 8 (at $.jobs.train); add nodes to nvidia's pools, "
        "or lower replicas or phases"
    ]
    assert list(workloads.fits_capacity(context(usage.base))) == []
    # Team a's services, the other part of the sum, and the pool.
    [found] = workloads.fits_capacity(context(usage.envs["prod"]))
    assert [(str(p.location), p.path, p.last_line) for p in found.also] == [
        ("values/teams/a.yaml:15:26", "$.services.s.tracks.nvidia.replicas", 15),
        ("values/vendors/nvidia.yaml:2:5", "$.pools[0]", 2),
    ]


def job_team(quota: int, *sizes: int) -> str:
    """A team with `quota` GPUs and a job of each size."""
    jobs = "".join(
        f"  j{i}:\n    vendor: nvidia\n    devices: {n}\n    images: {{nvidia: r/t}}\n"
        for i, n in enumerate(sizes)
    )
    return f"quota: {{nvidia: {quota}}}\njobs:\n{jobs}"


def test_jobs_of_different_teams_run_side_by_side(tmp_path: Path) -> None:
    """8 GPUs. Teams a and b each run a 4-GPU job on a quota of 4: they fit together. A third
    such team's job waits for one of them: one team's jobs never wait for another's quota, so
    12 are held at once (MIG007, a warning; the largest job alone, 4, fits: no MIG005)."""
    teams = {"teams/ml.yaml": None, "teams/a.yaml": job_team(4, 4), "teams/b.yaml": job_team(4, 4)}
    fleet = PROD_FLEET + "capacity: {allowOvercommit: true}\n"
    two = values.load(tree(tmp_path / "two", teams, fleet=fleet))
    assert list(workloads.jobs_queue(context(two.envs["prod"]))) == []
    teams["teams/c.yaml"] = job_team(4, 4)
    three = values.load(tree(tmp_path / "three", teams, fleet=fleet))
    assert list(workloads.fits_capacity(context(three.envs["prod"]))) == []
    [finding] = workloads.jobs_queue(context(three.envs["prod"]))
    assert (finding.code, finding.severity, str(finding.location)) == (
        "MIG007",
        Severity.WARNING,
        "values/teams/c.yaml:4:5",
    )
    assert finding.message == (
        "with every team's jobs running up to its quota, workloads hold 12 nvidia devices at "
        "once (0 for services, 12 for jobs; a 4, b 4, c 4) but its pools hold 8: teams' jobs "
        "wait for each other"
    )
    assert finding.hint == (
        "if the jobs must run side by side, add nodes to nvidia's pools or lower the quotas "
        "that let them; a queue backend (docs/scheduling.md) orders the wait"
    )
    # The largest job exactly fills the pools (no MIG005): two such teams' jobs wait.
    full = {"teams/ml.yaml": None, "teams/a.yaml": job_team(8, 8), "teams/b.yaml": job_team(8, 8)}
    edge = values.load(tree(tmp_path / "edge", full, fleet=fleet)).envs["prod"]
    assert list(workloads.fits_capacity(context(edge))) == []
    assert [f.code for f in workloads.jobs_queue(context(edge))] == ["MIG007"]
    assert [(str(p.location), p.path, p.last_line) for p in finding.also] == [
        ("values/teams/a.yaml:4:5", "$.jobs.j0", 6),
        ("values/teams/b.yaml:4:5", "$.jobs.j0", 6),
        ("values/vendors/nvidia.yaml:2:5", "$.pools[0]", 2),
    ]


def test_a_team_s_jobs_run_at_once_only_as_far_as_its_quota(tmp_path: Path) -> None:
    """Team a: 2 GPUs of services, quota 6, jobs of 3, 3 and 1: 4 of job devices fit beside the
    services at once (not all 7, not only the largest 3). A quota below the largest job still
    counts that job whole (MIG004 reports the quota)."""
    team = job_team(6, 3, 3, 1) + "services:\n  s:\n    images: {nvidia: r/s}\n"
    team += "    tracks:\n      nvidia: {replicas: 2}\n"
    loaded = values.load(tree(tmp_path, {"teams/ml.yaml": team}, fleet=PROD_FLEET))
    view = loaded.envs["prod"]
    [use] = vendor_usage(Build(view), view.teams[0])
    assert (use.services, use.largest_job, use.jobs_total, use.jobs_at_once, use.at_once) == (
        2,
        3,
        7,
        4,
        6,
    )
    small = values.load(tree(tmp_path / "small", {"teams/ml.yaml": job_team(2, 3, 1)}))
    view = small.envs["prod"]
    [use] = vendor_usage(Build(view), view.teams[0])
    assert (use.jobs_at_once, use.needed, use.quota) == (3, 3, 2)


def test_a_team_s_usage_names_its_largest_job_and_points_at_its_largest_part(
    tmp_path: Path,
) -> None:
    """Team ml: a service of 2 GPUs and jobs of 3 and 1: the detail shows the service and the
    largest job, says it is the largest of the jobs, and blames the job (3 > 2). Team one: a job
    of 1 and a service of 2: no "largest" remark for a single job, the service blamed. A vendor
    the quota does not name counts as a quota of 0. Team pair: two services of 1, the first
    blamed. The fleet's needs are per vendor: 6 GPUs of services, the largest job 3."""
    ml = job_team(6, 3, 1) + "services:\n  s:\n    images: {nvidia: r/s}\n"
    ml += "    tracks:\n      nvidia: {replicas: 2}\n"
    one = "quota: {ascend: 4}\njobs:\n  j0:\n    vendor: nvidia\n    devices: 1\n"
    one += "    images: {nvidia: r/t}\nservices:\n  s:\n    images: {nvidia: r/s}\n"
    one += "    tracks:\n      nvidia: {replicas: 2}\n"
    # Team pair: two services of 1 GPU each: the first (in the values' order) is blamed.
    pair = "quota: {nvidia: 4}\nservices:\n"
    for name in ("a", "b"):
        pair += (
            f"  {name}:\n    images: {{nvidia: r/s}}\n    tracks:\n      nvidia: {{replicas: 1}}\n"
        )
    files = {"teams/ml.yaml": ml, "teams/one.yaml": one, "teams/pair.yaml": pair}
    loaded = values.load(tree(tmp_path, files, fleet=PROD_FLEET))
    view = loaded.envs["prod"]
    build = Build(view)
    ml_team, one_team, pair_team = sorted(view.teams, key=lambda t: t.name)
    [use] = vendor_usage(build, pair_team)
    assert (use.detail, use.blame) == (
        "service a 1x1=1, service b 1x1=1",
        ("services", "a", "tracks", "nvidia", "replicas"),
    )
    [use] = vendor_usage(build, ml_team)
    assert (use.vendor, use.namespace, use.quota, use.detail, use.blame) == (
        "nvidia",
        "ml",
        6,
        "service s 2x1=2, job j0=3 (the largest of its jobs)",
        ("jobs", "j0"),
    )
    [use] = vendor_usage(build, one_team)
    assert (use.vendor, use.quota, use.detail, use.blame) == (
        "nvidia",
        0,
        "service s 2x1=2, job j0=1",
        ("services", "s", "tracks", "nvidia", "replicas"),
    )
    needs = fleet_needs(build)
    assert {v: (n.vendor, n.services, n.largest_job) for v, n in needs.items()} == {
        "nvidia": ("nvidia", 6, 3)
    }


def test_the_parts_of_a_team_pinned_to_pool_models(tmp_path: Path) -> None:
    """SCH006 sums per model what is pinned to it: a job's devices (all its pods) and a
    service track's (its phase's replicas), each with the models it accepts."""
    team = "quota: {nvidia: 8}\njobs:\n  j:\n    vendor: nvidia\n    devices: 2\n"
    team += "    model: h100\n    images: {nvidia: r/t}\nservices:\n  s:\n"
    team += "    images: {nvidia: r/s}\n    tracks:\n"
    team += "      nvidia: {replicas: 3, model: a100, fallbackModel: h100}\n"
    loaded = values.load(tree(tmp_path, {"teams/ml.yaml": team}, fleet=PROD_FLEET))
    view = loaded.envs["prod"]
    pinned = Build(view).team(view.teams[0]).pinned
    assert [
        (p.team.name, p.vendor, p.models, p.devices, p.is_job, p.path, p.label) for p in pinned
    ] == [
        ("ml", "nvidia", ("h100",), 2, True, ("jobs", "j"), "job j"),
        (
            "ml",
            "nvidia",
            ("a100", "h100"),
            3,
            False,
            ("services", "s", "tracks", "nvidia"),
            "service s/nvidia",
        ),
    ]


# POD001 and POD003 from the rendered pod templates: team p1's job asks for a model no pool has,
# team p2's job requests more GPUs than its limits.
TEAM_P1 = "quota: {nvidia: 4}\njobs:\n  j:\n    vendor: nvidia\n    model: H100\n    images: {nvidia: x:1}\n"
TEAM_P2 = (
    "quota: {nvidia: 4}\njobs:\n  k:\n    vendor: nvidia\n    devices: 0\n    images: {nvidia: x:1}\n"
    "    resources:\n      requests: {nvidia.com/gpu: 2}\n      limits: {nvidia.com/gpu: 1}\n"
)
HINT_POD_WHOLE = (
    "; fix nodeSelector or resources of the workload; the vendor's selector, model and taints "
    "come from values/vendors/"
)


def test_each_pod_check_reports_its_own_code_for_each_team(tmp_path: Path) -> None:
    """A POD check made for one code reports that code's problems only, each team's pods at the
    key the workload set, with the whole hint."""
    view = _prod(
        tmp_path, {"teams/ml.yaml": None, "teams/p1.yaml": TEAM_P1, "teams/p2.yaml": TEAM_P2}
    )
    assert _format(workloads._pod_check("POD003")(context(view))) == [
        "values/teams/p1.yaml:5:12: POD003 Job 'j': container 'j' requests nvidia.com/gpu but "
        "its nodeSelector {feature.node.kubernetes.io/accelerator=nvidia-gpu, "
        "feature.node.kubernetes.io/gpu-model=H100} picks no pool of nvidia (at $.jobs.j.model)"
        + HINT_POD_WHOLE
    ]
    assert _format(workloads._pod_check("POD001")(context(view))) == [
        "values/teams/p2.yaml:8:7: POD001 Job 'k': container 'k' requests nvidia.com/gpu: "
        "requests 2, limits 1; devices are whole numbers in limits, with equal requests (at "
        "$.jobs.k.resources)" + HINT_POD_WHOLE
    ]
    assert list(workloads._pod_check("POD002")(context(view))) == []


def test_every_setting_a_trainjob_cannot_carry_is_reported_and_only_on_a_trainjob(
    tmp_path: Path,
) -> None:
    settings = {
        "priorityClassName": "high",
        "topologySpreadConstraints": "[]",
        "envFrom": "[]",
        "ttlSecondsAfterFinished": "60",
        "parallelism": "2",
        "completions": "2",
        "backoffLimit": "1",
        "minAvailable": "1",
        "successPolicy": "{operator: All}",
        "failurePolicy": "{maxRestarts: 1}",
    }
    assert sorted(settings) == sorted(workloads.TRAINJOB_REFUSED)
    body = "".join(f"    {k}: {v}\n" for k, v in settings.items())
    for kind, want in (("trainjob", sorted(settings)), ("job", [])):
        team = DEMO_JOB + f"    kind: {kind}\n    images: {{nvidia: x:1}}\n" + body
        view = values.load(tree(tmp_path / kind, {"teams/demo.yaml": team})).envs["staging"]
        found = list(workloads.trainjob_limits(context(view)))
        assert sorted(f.path.rpartition(".")[2] for f in found) == want
        assert all(f.code == "WKL010" for f in found)
