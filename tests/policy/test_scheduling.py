"""Scheduling checks on the values (issue 12, issue 8 item 7): placement preferences and their
fallback, accelerator topology refusals, and what each queue backend cannot do; each check fed a
values tree that breaks it, with its code at file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.findings import Finding, Location, Severity
from generator.policy.scheduling import (
    borrowing_needs_queue,
    fallback_models,
    kueue_admission,
    network_topology_honoured,
    packing_runner,
    pod_fits_node,
    pool_capacity,
    queue_problems,
    resource_groups_limit,
    topology_refusals,
    volcano_under_kueue,
)
from generator.values import loader as values
from generator.values.model import FleetView, Team
from tests.fixtures import (
    ASCEND_910B,
    FLEET,
    KUEUE_PROD_FLEET,
    Obj,
    context,
    findings,
    lines,
    many_resources,
    team_objects,
    tree,
)


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


# ---- helpers for the checks called on one environment's view -----------------------------------


def prod(values_dir: Path) -> FleetView:
    """The prod view of a values tree (the checks run once per environment)."""
    return values.load(values_dir).envs["prod"]


def team_of(view: FleetView, name: str) -> Team:
    return next(t for t in view.teams if t.name == name)


def at(team: str, line: int, column: int) -> Location:
    return Location(f"values/teams/{team}.yaml", line, column)


# ---- SCH001's comparison: queue_problems on queues written out by hand ---------------------------

QUEUE_TEAM = "quota: {nvidia: 4}\nborrowing: {nvidia: 2}\n"


def queue_view(root: Path, scheduling: str, team: str = QUEUE_TEAM) -> FleetView:
    """Team ml (`team`) beside NVIDIA and Ascend (no Ascend quota: the team's quota gives 0),
    under fleet.yaml's `scheduling:` block."""
    files = {"vendors/ascend.yaml": ASCEND_910B, "teams/ml.yaml": team}
    return prod(tree(root, files, fleet=FLEET + "scheduling:\n" + scheduling))


def cluster_queue(*groups: list[list[Obj]]) -> Obj:
    """A Kueue ClusterQueue whose resource groups hold these flavors' resource lists."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "spec": {
            "resourceGroups": [
                {"flavors": [{"name": f"f{i}", "resources": res} for i, res in enumerate(group)]}
                for group in groups
            ]
        },
    }


def test_cluster_queue_sums_flavors_and_adds_borrowing_limits(tmp_path: Path) -> None:
    """Nominal quota is summed over every flavor of a resource, the ceiling adds each flavor's
    borrowingLimit (unset: 0); resources the team has no quota entry for are passed over, not the
    end of the flavor."""
    view = queue_view(tmp_path, "  backend: kueue\n")
    queue = cluster_queue(
        [
            [
                {"name": "cpu", "nominalQuota": 10},
                {"name": "nvidia.com/gpu", "nominalQuota": 3, "borrowingLimit": 1},
            ],
            [{"name": "nvidia.com/gpu", "nominalQuota": 1, "borrowingLimit": 1}],
        ],
        [[{"name": "huawei.com/Ascend910", "nominalQuota": 0}]],
    )
    assert queue_problems(view, team_of(view, "ml"), queue) == []
    # One flavor less: both sums fall short, and each says what the team's quota gives.
    del queue["spec"]["resourceGroups"][0]["flavors"][1]
    assert queue_problems(view, team_of(view, "ml"), queue) == [
        "nominal quota of nvidia.com/gpu is 3, the team's quota gives 4",
        "nominal quota + borrowing limit of nvidia.com/gpu is 4, the team's quota gives 6",
    ]


def test_cluster_queue_with_a_fraction_in_one_flavor_never_matches(tmp_path: Path) -> None:
    """500m in one flavor and 5 in another is no whole quota of 4 (nor are they -1 + 5)."""
    view = queue_view(tmp_path, "  backend: kueue\n", "quota: {nvidia: 4}\n")
    queue = cluster_queue(
        [
            [{"name": "nvidia.com/gpu", "nominalQuota": "500m"}],
            [{"name": "nvidia.com/gpu", "nominalQuota": 5}],
        ],
        [[{"name": "huawei.com/Ascend910", "nominalQuota": 0}]],
    )
    assert queue_problems(view, team_of(view, "ml"), queue) == [
        "nominal quota of nvidia.com/gpu is nan, the team's quota gives 4",
        "nominal quota + borrowing limit of nvidia.com/gpu is nan, the team's quota gives 4",
    ]


def test_volcano_queue_under_capacity_checks_capability_and_deserved(tmp_path: Path) -> None:
    view = queue_view(tmp_path, "  backend: volcano\n")
    queue = {
        "kind": "Queue",
        "spec": {
            "capability": {"nvidia.com/gpu": 6, "huawei.com/Ascend910": 0},
            "deserved": {"nvidia.com/gpu": 3},
        },
    }
    assert queue_problems(view, team_of(view, "ml"), queue) == [
        "deserved of huawei.com/Ascend910 is None, the team's quota gives 0",
        "deserved of nvidia.com/gpu is 3, the team's quota gives 4",
    ]
    # Under the proportion policy Volcano shares by weight: `deserved` is not the quota's.
    view = queue_view(tmp_path, "  backend: volcano\n  volcano: {queuePolicy: proportion}\n")
    assert queue_problems(view, team_of(view, "ml"), queue) == []


def test_volcano_capability_that_is_no_whole_number_never_matches(tmp_path: Path) -> None:
    """'lots' is no quantity and 500m no whole device: neither is taken for 1 or 0 devices."""
    view = queue_view(
        tmp_path,
        "  backend: volcano\n  volcano: {queuePolicy: proportion}\n",
        "quota: {nvidia: 1}\n",
    )
    queue = {
        "kind": "Queue",
        "spec": {"capability": {"nvidia.com/gpu": "lots", "huawei.com/Ascend910": "500m"}},
    }
    assert queue_problems(view, team_of(view, "ml"), queue) == [
        "capability of huawei.com/Ascend910 is '500m', the team's quota gives 0",
        "capability of nvidia.com/gpu is 'lots', the team's quota gives 1",
    ]


# ---- SCH002: volcano_under_kueue ----------------------------------------------------------------

# A batch Job first (by name), then a Volcano Job known by its tasks alone (no `kind`; its value
# starts on line 7, column 5), then one that says `kind: volcano` (line 11, column 11).
KUEUE_JOBS = """\
quota: {nvidia: 4}
jobs:
  a-batch:
    vendor: nvidia
    images: {nvidia: x:1}
  b-inferred:
    images: {nvidia: x:1}
    tasks:
      w: {vendor: nvidia}
  c-volcano:
    kind: volcano
    images: {nvidia: x:1}
    tasks:
      w: {vendor: nvidia}
"""
SCH002_HINT = (
    "use scheduling.backend: volcano in values/fleet.yaml, or write the job as batch/v1 Jobs "
    "(vendor, devices, parallelism)"
)


def sch002(name: str) -> str:
    return (
        f"job {name!r} is a Volcano Job, but the backend is kueue: Kueue has no Volcano "
        "integration, so its devices would escape the team's ClusterQueue and its pods could "
        "take the quota of jobs Kueue admitted"
    )


def test_every_volcano_job_under_kueue_is_found_at_its_kind_or_its_job(tmp_path: Path) -> None:
    fleet = FLEET + "scheduling:\n  backend: kueue\n"
    view = prod(tree(tmp_path, {"teams/ml.yaml": KUEUE_JOBS}, fleet=fleet))
    assert list(volcano_under_kueue(context(view))) == [
        Finding(
            "SCH002", sch002("b-inferred"), at("ml", 7, 5), "$.jobs['b-inferred']", SCH002_HINT
        ),
        Finding(
            "SCH002", sch002("c-volcano"), at("ml", 11, 11), "$.jobs['c-volcano'].kind", SCH002_HINT
        ),
    ]


@pytest.mark.parametrize("backend", ["volcano", "quota"])
def test_volcano_jobs_under_another_backend_are_not_sch002(backend: str, tmp_path: Path) -> None:
    fleet = FLEET + f"scheduling:\n  backend: {backend}\n"
    view = prod(tree(tmp_path, {"teams/ml.yaml": KUEUE_JOBS}, fleet=fleet))
    assert list(volcano_under_kueue(context(view))) == []


# ---- SCH003 and SCH004: the pools each pod may land on (landings, topology_shape) ---------------

# Five NVIDIA pools a pod of the vendor may land on, by their topology label: `full` gives any
# count up to 4, `ring` 2 or 4 (written unsorted), `pair` 2 (with a description and a source),
# p-none has no label and p-empty an empty value, which names no shape (not even the shape "").
TOPOLOGY_VENDOR = """\
topology:
  label: example.com/topo
  shapes:
    full: {podDevices: [1, 2, 3, 4]}
    ring: {podDevices: [4, 2]}
    "": {podDevices: [4]}
    pair: {podDevices: [2], description: two chips on one bridge, source: maker manual p. 7}
pools:
  - {name: p-full, model: A100, devicesPerNode: 4, nodes: [n1], labels: {example.com/topo: full}}
  - {name: p-ring, model: A100, devicesPerNode: 4, nodes: [n2], labels: {example.com/topo: ring}}
  - {name: p-none, model: A100, devicesPerNode: 4, nodes: [n3]}
  - {name: p-empty, model: A100, devicesPerNode: 4, nodes: [n4], labels: {example.com/topo: ""}}
  - {name: p-pair, model: A100, devicesPerNode: 4, nodes: [n5], labels: {example.com/topo: pair}}
"""
# Team ml: a Volcano task of 1 device (no `devices` key: its task's value is on line 7, column
# 10), a batch Job of 3 (line 10, column 14), and two jobs that ask for no whole device: 0, and
# 0 with a limit of 1.5 GPUs of their own.
TOPOLOGY_ML = """\
quota: {nvidia: 8}
jobs:
  gang:
    kind: volcano
    images: {nvidia: x:1}
    tasks:
      w: {vendor: nvidia}
  three:
    vendor: nvidia
    devices: 3
    images: {nvidia: x:1}
  zero:
    vendor: nvidia
    devices: 0
    images: {nvidia: x:1}
  half:
    vendor: nvidia
    devices: 0
    resources: {limits: {nvidia.com/gpu: "1.5"}}
    images: {nvidia: x:1}
"""
# Team web: a service of 3 devices a replica (line 6, column 35).
TOPOLOGY_WEB = """\
quota: {nvidia: 4}
services:
  s:
    images: {nvidia: x:1}
    tracks:
      nvidia: {devicesPerReplica: 3, replicas: 1}
"""
RING = "(ring: ) cannot give one pod: allowed 2, 4"
RING_HINT = (
    "ask for one of 2, 4 devices per pod, and more pods for more devices "
    "(source: the vendor catalog)"
)
PAIR = "(pair: two chips on one bridge) cannot give one pod: allowed 2"
PAIR_HINT = (
    "ask for one of 2 devices per pod, and more pods for more devices (source: maker manual p. 7)"
)


def test_each_pool_whose_topology_refuses_the_pods_count_is_one_finding(tmp_path: Path) -> None:
    """Pool by pool, pod by pod, team by team: a pool that gives the count, or has no topology
    (no label, an empty label value), is passed over; the finding points at the pod's devices
    (its task when it sets none) and says the allowed counts, sorted, and the shape's source."""
    files = {
        "vendors/nvidia.yaml": TOPOLOGY_VENDOR,
        "teams/ml.yaml": TOPOLOGY_ML,
        "teams/web.yaml": TOPOLOGY_WEB,
    }
    view = prod(tree(tmp_path, files))
    gang = "Job (volcano) task 'gang/w' asks for 1 nvidia devices per pod, which pool"
    three = "Job 'three' asks for 3 nvidia devices per pod, which pool"
    web = "Deployment 's-nvidia' asks for 3 nvidia devices per pod, which pool"
    web_at, web_path = at("web", 6, 35), "$.services.s.tracks.nvidia.devicesPerReplica"
    assert list(topology_refusals(context(view))) == [
        Finding(
            "SCH003", f"{gang} 'p-ring' {RING}", at("ml", 7, 10), "$.jobs.gang.tasks.w", RING_HINT
        ),
        Finding(
            "SCH003", f"{gang} 'p-pair' {PAIR}", at("ml", 7, 10), "$.jobs.gang.tasks.w", PAIR_HINT
        ),
        Finding(
            "SCH003",
            f"{three} 'p-ring' {RING}",
            at("ml", 10, 14),
            "$.jobs.three.devices",
            RING_HINT,
        ),
        Finding(
            "SCH003",
            f"{three} 'p-pair' {PAIR}",
            at("ml", 10, 14),
            "$.jobs.three.devices",
            PAIR_HINT,
        ),
        Finding("SCH003", f"{web} 'p-ring' {RING}", web_at, web_path, RING_HINT),
        Finding("SCH003", f"{web} 'p-pair' {PAIR}", web_at, web_path, PAIR_HINT),
    ]
    # Every pod fits a node of 4.
    assert list(pod_fits_node(context(view))) == []


# A second vendor with NVIDIA's catalog entry (its selector and resource), one pool of the ring
# topology.
NVIDIA_B = """\
catalog: nvidia
topology:
  label: example.com/topo
  shapes:
    ring: {podDevices: [2, 4]}
pools:
  - {name: b-ring, model: B100, devicesPerNode: 4, nodes: [m1], labels: {example.com/topo: ring}}
"""


def test_a_pod_that_may_land_on_two_vendors_pools_is_judged_per_vendor(tmp_path: Path) -> None:
    """The job's pods select the pools of both vendors: each refusal names the vendor whose
    pool refuses."""
    team = "quota: {nvidia: 4}\njobs:\n  three:\n    vendor: nvidia\n    devices: 3\n"
    team += "    images: {nvidia: x:1}\n"
    files = {
        "vendors/nvidia.yaml": TOPOLOGY_VENDOR,
        "vendors/nvidia-b.yaml": NVIDIA_B,
        "teams/ml.yaml": team,
    }
    view = prod(tree(tmp_path, files))
    three = "Job 'three' asks for 3 {} devices per pod, which pool"
    where, path = at("ml", 5, 14), "$.jobs.three.devices"
    assert list(topology_refusals(context(view))) == [
        Finding("SCH003", f"{three.format('nvidia')} 'p-ring' {RING}", where, path, RING_HINT),
        Finding("SCH003", f"{three.format('nvidia')} 'p-pair' {PAIR}", where, path, PAIR_HINT),
        Finding("SCH003", f"{three.format('nvidia-b')} 'b-ring' {RING}", where, path, RING_HINT),
    ]


# Two pools of 8 and 4 devices a node; a job of 8 devices a pod (line 5, column 14), and a
# service of 4 a replica, which fits both exactly.
FITS_VENDOR = """\
pools:
  - {name: big, model: H100, devicesPerNode: 8, nodes: [n1]}
  - {name: small, model: A100, devicesPerNode: 4, nodes: [n2]}
"""
FITS_ML = """\
quota: {nvidia: 12}
jobs:
  train:
    vendor: nvidia
    devices: 8
    images: {nvidia: x:1}
services:
  s:
    images: {nvidia: x:1}
    tracks:
      nvidia: {devicesPerReplica: 4, replicas: 1}
"""


def test_a_pod_is_refused_by_each_pool_whose_node_is_smaller_only(tmp_path: Path) -> None:
    view = prod(tree(tmp_path, {"vendors/nvidia.yaml": FITS_VENDOR, "teams/ml.yaml": FITS_ML}))
    assert list(pod_fits_node(context(view))) == [
        Finding(
            "SCH004",
            "Job 'train' asks for 8 nvidia devices per pod, but a node of pool 'small' has 4",
            at("ml", 5, 14),
            "$.jobs.train.devices",
            "ask for at most 4 devices per pod (more pods for more devices), or pick a model "
            "whose nodes have enough",
        )
    ]
    assert list(topology_refusals(context(view))) == []


# ---- SCH005: fallback_models ----------------------------------------------------------------------

# Pools H100 and A100 (H100 above). A batch Job falls back to a model no pool has (line 6); a
# Volcano Job sets fallbackModel A100 for its tasks (line 10): t1 prefers A100 itself, t2 sets its
# own fallback to a model no pool has (line 14, column 56), t3 prefers H100 (fine); a service's
# track falls back without a model to prefer (line 20, column 31).
FALLBACKS = """\
quota: {nvidia: 8}
jobs:
  batch:
    vendor: nvidia
    model: A100
    fallbackModel: V100
    images: {nvidia: x:1}
  gang:
    kind: volcano
    fallbackModel: A100
    images: {nvidia: x:1}
    tasks:
      t1: {vendor: nvidia, model: A100}
      t2: {vendor: nvidia, model: H100, fallbackModel: B200}
      t3: {vendor: nvidia, model: H100}
services:
  s:
    images: {nvidia: x:1}
    tracks:
      nvidia: {fallbackModel: A100}
"""
SCH005_HINT = (
    "set model to the preferred pool model and fallbackModel to another model of the same vendor"
)


def test_each_fallback_model_that_is_no_other_pool_model_is_found_where_it_is_set(
    tmp_path: Path,
) -> None:
    view = prod(tree(tmp_path, {"vendors/nvidia.yaml": H100, "teams/ml.yaml": FALLBACKS}))
    no_pool = "names no pool of nvidia (models: A100, H100)"
    same = "needs a different `model` to prefer"
    assert list(fallback_models(context(view))) == [
        Finding(
            "SCH005",
            f"job 'batch': fallbackModel 'V100' {no_pool}",
            at("ml", 6, 20),
            "$.jobs.batch.fallbackModel",
            SCH005_HINT,
        ),
        Finding(
            "SCH005",
            f"job 'gang' task 't1': fallbackModel 'A100' {same}",
            at("ml", 10, 20),
            "$.jobs.gang.fallbackModel",
            SCH005_HINT,
        ),
        Finding(
            "SCH005",
            f"job 'gang' task 't2': fallbackModel 'B200' {no_pool}",
            at("ml", 14, 56),
            "$.jobs.gang.tasks.t2.fallbackModel",
            SCH005_HINT,
        ),
        Finding(
            "SCH005",
            f"service 's' track 'nvidia': fallbackModel 'A100' {same}",
            at("ml", 20, 31),
            "$.services.s.tracks.nvidia.fallbackModel",
            SCH005_HINT,
        ),
    ]


# ---- SCH006: pool_capacity (_pinned) --------------------------------------------------------------

# H100: one node of 8 (8 devices); A100: one node of 4 (4 devices).
CAPACITY_VENDOR = """\
pools:
  - {name: h100, model: H100, devicesPerNode: 8, nodes: [h1]}
  - {name: a100, model: A100, devicesPerNode: 4, nodes: [a1]}
"""
SCH006 = (
    "workloads that may run on nvidia {model} need {need} devices ({services} for services, "
    "{job} for the largest job; a workload with a fallback model counts for both) but its pools "
    "hold {hold}"
)
# A batch Job of 7 on H100 alone; a Volcano Job of 3 pods x 2 devices that prefers H100 and
# falls back to A100 (its fallbackModel on line 13, column 79); a service of 3 replicas x 1
# device on H100 alone.
PINNED = """\
quota: {nvidia: 16}
jobs:
  big:
    vendor: nvidia
    devices: 7
    model: H100
    images: {nvidia: x:1}
  gang:
    kind: volcano
    images: {nvidia: x:1}
    tasks:
      w:
        {vendor: nvidia, devices: 2, replicas: 3, model: H100, fallbackModel: A100}
services:
  s:
    images: {nvidia: x:1}
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 3, model: H100}
"""


def test_each_model_holds_its_services_and_largest_job_and_blames_a_fallback(
    tmp_path: Path,
) -> None:
    """A100: the Volcano Job's 6 devices (pods x devices) do not fit 4. H100: 3 for the service
    plus 7 for the largest job do not fit 8. Both name the workload with a fallback model, even
    where a workload without one asks for more, at its fallbackModel."""
    values_dir = tree(tmp_path, {"vendors/nvidia.yaml": CAPACITY_VENDOR, "teams/ml.yaml": PINNED})
    loaded = values.load(values_dir)
    where, path = at("ml", 13, 79), "$.jobs.gang.tasks.w.fallbackModel"
    assert list(pool_capacity(context(loaded.envs["prod"]))) == [
        Finding(
            "SCH006",
            SCH006.format(model="A100", need=6, services=0, job=6, hold=4),
            where,
            path,
            "add A100 nodes, or give job gang/w a fallback model with room",
        ),
        Finding(
            "SCH006",
            SCH006.format(model="H100", need=10, services=3, job=7, hold=8),
            where,
            path,
            "add H100 nodes, or give job gang/w a fallback model with room",
        ),
    ]
    # The base layer is no environment: nothing runs there.
    assert list(pool_capacity(context(loaded.base))) == []


# Parts with a model and no devices count for nothing (not even as the culprit); a service of
# 5 x 1 on A100 alone (its model on line 23, column 58); a batch Job of 3 pods x 4 on H100 alone
# (its model on line 13, column 12).
UNPINNED = """\
quota: {nvidia: 16}
jobs:
  idle:
    vendor: nvidia
    devices: 0
    model: A100
    fallbackModel: H100
    images: {nvidia: x:1}
  wide:
    vendor: nvidia
    devices: 4
    parallelism: 3
    model: H100
    images: {nvidia: x:1}
services:
  idle-svc:
    images: {nvidia: x:1}
    tracks:
      nvidia: {devicesPerReplica: 0, model: A100, fallbackModel: H100}
  s:
    images: {nvidia: x:1}
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 5, model: A100}
"""


def test_without_a_fallback_the_largest_part_is_blamed_at_its_model(tmp_path: Path) -> None:
    values_dir = tree(tmp_path, {"vendors/nvidia.yaml": CAPACITY_VENDOR, "teams/ml.yaml": UNPINNED})
    assert list(pool_capacity(context(prod(values_dir)))) == [
        Finding(
            "SCH006",
            SCH006.format(model="A100", need=5, services=5, job=0, hold=4),
            at("ml", 23, 58),
            "$.services.s.tracks.nvidia.model",
            "add A100 nodes, or give service s/nvidia a fallback model with room",
        ),
        Finding(
            "SCH006",
            SCH006.format(model="H100", need=12, services=0, job=12, hold=8),
            at("ml", 13, 12),
            "$.jobs.wide.model",
            "add H100 nodes, or give job wide a fallback model with room",
        ),
    ]


def test_a_model_filled_exactly_fits_and_the_next_model_is_still_checked(tmp_path: Path) -> None:
    """A100: a job of 4 fills its 4 devices. H100: 8 for a service (its model on line 16,
    column 58) and 1 for a job do not fit 8; the service, the larger part, is blamed."""
    team = """\
quota: {nvidia: 13}
jobs:
  fit:
    vendor: nvidia
    devices: 4
    model: A100
    images: {nvidia: x:1}
  over:
    vendor: nvidia
    model: H100
    images: {nvidia: x:1}
services:
  s:
    images: {nvidia: x:1}
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 8, model: H100}
"""
    values_dir = tree(tmp_path, {"vendors/nvidia.yaml": CAPACITY_VENDOR, "teams/ml.yaml": team})
    assert list(pool_capacity(context(prod(values_dir)))) == [
        Finding(
            "SCH006",
            SCH006.format(model="H100", need=9, services=8, job=1, hold=8),
            at("ml", 16, 58),
            "$.services.s.tracks.nvidia.model",
            "add H100 nodes, or give service s/nvidia a fallback model with room",
        )
    ]


def test_a_volcano_task_that_inherits_its_model_is_blamed_at_the_task(tmp_path: Path) -> None:
    """The model is the job's (line 4); the task that asks for 2 x 4 devices (its value on line
    8, column 10) sets neither model nor fallbackModel, so the finding points at the task."""
    team = """\
quota: {nvidia: 8}
jobs:
  gang:
    model: A100
    kind: volcano
    images: {nvidia: x:1}
    tasks:
      w: {vendor: nvidia, devices: 4, replicas: 2}
"""
    values_dir = tree(tmp_path, {"vendors/nvidia.yaml": CAPACITY_VENDOR, "teams/ml.yaml": team})
    assert list(pool_capacity(context(prod(values_dir)))) == [
        Finding(
            "SCH006",
            SCH006.format(model="A100", need=8, services=0, job=8, hold=4),
            at("ml", 8, 10),
            "$.jobs.gang.tasks.w",
            "add A100 nodes, or give job gang/w a fallback model with room",
        )
    ]


# ---- SCH007: borrowing_needs_queue ----------------------------------------------------------------


def test_borrowing_is_a_warning_per_team_that_borrows_without_a_queue(tmp_path: Path) -> None:
    """Team ml borrows 2 (line 2, column 21); team web's 0 borrows nothing."""
    files = {
        "teams/ml.yaml": "quota: {nvidia: 4}\nborrowing: {nvidia: 2}\n",
        "teams/web.yaml": "quota: {nvidia: 4}\nborrowing: {nvidia: 0}\n",
    }
    assert list(borrowing_needs_queue(context(prod(tree(tmp_path, files))))) == [
        Finding(
            "SCH007",
            "team 'ml' may borrow 2 nvidia devices, but backend 'quota' has no queue that lends",
            at("ml", 2, 21),
            "$.borrowing.nvidia",
            "set scheduling.backend: volcano or kueue, or remove borrowing",
            Severity.WARNING,
        )
    ]
    for backend in ("volcano", "kueue"):
        fleet = FLEET + f"scheduling:\n  backend: {backend}\n"
        view = prod(tree(tmp_path / backend, files, fleet=fleet))
        assert list(borrowing_needs_queue(context(view))) == []


# ---- SCH008: network_topology_honoured (_topology_problem) ----------------------------------------

# A Volcano Job without networkTopology first; then a batch Job with one (its key on line 11,
# column 5), both tiers (highestTierName's value on line 15, column 63), hard mode without a tier
# (line 21, column 5), soft mode without one and hard mode with a tier by name (fine), a tier in
# the default mode (hard: fine), and no mode nor tier (hard mode without a tier: line 45).
NETWORK = """\
quota: {nvidia: 8}
jobs:
  a-plain:
    kind: volcano
    images: {nvidia: x:1}
    tasks:
      w: {vendor: nvidia}
  b-batch:
    vendor: nvidia
    images: {nvidia: x:1}
    networkTopology: {mode: hard, highestTierAllowed: 1}
  c-both:
    kind: volcano
    images: {nvidia: x:1}
    networkTopology: {highestTierAllowed: 1, highestTierName: rack}
    tasks:
      w: {vendor: nvidia}
  d-hard:
    kind: volcano
    images: {nvidia: x:1}
    networkTopology: {mode: hard}
    tasks:
      w: {vendor: nvidia}
  e-soft:
    kind: volcano
    images: {nvidia: x:1}
    networkTopology: {mode: soft}
    tasks:
      w: {vendor: nvidia}
  f-named:
    kind: volcano
    images: {nvidia: x:1}
    networkTopology: {mode: hard, highestTierName: rack}
    tasks:
      w: {vendor: nvidia}
  g-tier:
    kind: volcano
    images: {nvidia: x:1}
    networkTopology: {highestTierAllowed: 2}
    tasks:
      w: {vendor: nvidia}
  h-empty:
    kind: volcano
    images: {nvidia: x:1}
    networkTopology: {}
    tasks:
      w: {vendor: nvidia}
"""
BATCH_TOPOLOGY = Finding(
    "SCH008",
    "job 'b-batch' is a batch/v1 Job: only a Volcano Job carries networkTopology",
    at("ml", 11, 5),
    "$.jobs['b-batch'].networkTopology",
    "set kind: volcano (with tasks), or remove networkTopology (docs/scheduling.md)",
)


def test_network_topology_volcano_would_refuse_or_ignore_is_found(tmp_path: Path) -> None:
    """Under the volcano backend: a batch Job's topology, both tiers (at highestTierName's
    value) and hard mode without a tier (at the networkTopology key)."""
    fleet = FLEET + "scheduling:\n  backend: volcano\n"
    view = prod(tree(tmp_path, {"teams/ml.yaml": NETWORK}, fleet=fleet))
    assert list(network_topology_honoured(context(view))) == [
        BATCH_TOPOLOGY,
        Finding(
            "SCH008",
            "job 'c-both' sets both highestTierAllowed and highestTierName, which Volcano's "
            "admission webhook refuses",
            at("ml", 15, 63),
            "$.jobs['c-both'].networkTopology.highestTierName",
            "keep one of highestTierAllowed and highestTierName (docs/scheduling.md)",
        ),
        Finding(
            "SCH008",
            "job 'd-hard' is in hard mode without highestTierAllowed or highestTierName, which "
            "Volcano treats as no constraint",
            at("ml", 21, 5),
            "$.jobs['d-hard'].networkTopology",
            "set highestTierAllowed: <tier> (or highestTierName), or mode: soft "
            "(docs/scheduling.md)",
        ),
        Finding(
            "SCH008",
            "job 'h-empty' is in hard mode without highestTierAllowed or highestTierName, which "
            "Volcano treats as no constraint",
            at("ml", 45, 5),
            "$.jobs['h-empty'].networkTopology",
            "set highestTierAllowed: <tier> (or highestTierName), or mode: soft "
            "(docs/scheduling.md)",
        ),
    ]


def test_network_topology_without_the_volcano_backend_is_honoured_by_nothing(
    tmp_path: Path,
) -> None:
    view = prod(tree(tmp_path, {"teams/ml.yaml": NETWORK}))
    no_plugin = (
        "asks for a network topology, but backend 'quota' renders no Volcano scheduler "
        "configuration, so nothing enables the network-topology-aware plugin that honours it"
    )
    hint = (
        "set scheduling.backend: volcano in values/fleet.yaml (or the environment's fleet:), or "
        "remove networkTopology (docs/scheduling.md)"
    )
    lines_of = {
        "c-both": 15,
        "d-hard": 21,
        "e-soft": 27,
        "f-named": 33,
        "g-tier": 39,
        "h-empty": 45,
    }
    assert list(network_topology_honoured(context(view))) == [
        BATCH_TOPOLOGY,
        *(
            Finding(
                "SCH008",
                f"job {job!r} {no_plugin}",
                at("ml", line, 5),
                f"$.jobs[{job!r}].networkTopology",
                hint,
            )
            for job, line in lines_of.items()
        ),
    ]


# ---- SCH009 and the flavor split: a Kueue flavor that can admit each workload ------------------

# The case: an H100 pool beside the A100 pool (listed second), and ml's 4-GPU job pinned
# to the H100 (line 5, column 14: `devices: 4`), beside a 4-GPU job pinned to the A100.
A100_THEN_H100 = """\
pools:
  - {name: a100, model: A100, devicesPerNode: 4, nodes: [a1, a2]}
  - {name: h100, model: H100, devicesPerNode: 8, nodes: [h1]}
"""
PINNED_JOBS = """\
quota: {nvidia: 8}
jobs:
  on-h100:
    vendor: nvidia
    devices: 4
    model: H100
    images: {nvidia: x:1}
  on-a100:
    vendor: nvidia
    devices: 4
    model: A100
    images: {nvidia: x:1}
"""
KUEUE = FLEET + "scheduling: {backend: kueue}\n"


def kueue_tree(root: Path, team: str) -> Path:
    return tree(root, {"teams/ml.yaml": team, "vendors/nvidia.yaml": A100_THEN_H100}, fleet=KUEUE)


def nominal(view: FleetView) -> dict[str, tuple[int, int]]:
    objs, _ = team_objects(view, team_of(view, "ml"))
    [cq] = [o for o in objs if o["kind"] == "ClusterQueue"]
    return {
        f["name"]: (r["nominalQuota"], r["borrowingLimit"])
        for g in cq["spec"]["resourceGroups"]
        for f in g["flavors"]
        for r in f["resources"]
        if r["name"] == "nvidia.com/gpu"
    }


def test_each_pinned_model_gets_its_largest_workload_first(tmp_path: Path) -> None:
    """Filled in pool order alone, the A100 flavor took all 8 and the H100 flavor 0: Kueue could
    never admit `on-h100`. Each pinned model now gets what its largest workload needs first."""
    view = prod(kueue_tree(tmp_path, PINNED_JOBS))
    assert nominal(view) == {"nvidia-a100": (4, 0), "nvidia-h100": (4, 0)}
    assert list(kueue_admission(context(view))) == []


def test_the_rest_of_the_share_fills_the_pools_in_order(tmp_path: Path) -> None:
    """Share 16 (2 namespaces x 8) with needs 4 + 4: the rest (8) fills the A100 pool up to its
    capacity (8, so 4 more), then the H100 pool, the last, takes what remains (4)."""
    team = "namespaces: [ml, ml-b]\n" + PINNED_JOBS
    view = prod(kueue_tree(tmp_path, team))
    assert nominal(view) == {"nvidia-a100": (8, 0), "nvidia-h100": (8, 0)}


def test_a_pool_of_the_model_large_enough_is_chosen_over_the_first(tmp_path: Path) -> None:
    pools = (
        A100_THEN_H100 + "  - {name: h100-big, model: H100, devicesPerNode: 8, nodes: [h2, h3]}\n"
    )
    team = PINNED_JOBS.replace(
        "devices: 4\n    model: H100", "devices: 8\n    parallelism: 2\n    model: H100"
    )
    files = {"teams/ml.yaml": team.replace("nvidia: 8", "nvidia: 20"), "vendors/nvidia.yaml": pools}
    view = prod(tree(tmp_path, files, fleet=KUEUE))
    got = nominal(view)
    assert got["nvidia-h100-big"][0] >= 16 and got["nvidia-h100"][0] < 16
    assert list(kueue_admission(context(view))) == []


def test_a_share_too_small_for_every_pinned_model_is_reported_at_the_job(tmp_path: Path) -> None:
    """Quota 4: the A100 (first by model name) gets its 4, the H100 nothing; the finding is at
    the H100 job's devices with what each of its flavors allows."""
    view = prod(kueue_tree(tmp_path, PINNED_JOBS.replace("nvidia: 8", "nvidia: 4")))
    assert nominal(view) == {"nvidia-a100": (4, 0), "nvidia-h100": (0, 0)}
    assert list(kueue_admission(context(view))) == [
        Finding(
            "SCH009",
            "Job 'on-h100' needs 4 nvidia.com/gpu admitted at once on one Kueue flavor, but the "
            "flavors its pods may use allow at most: nvidia-h100 0 (nominal quota + borrowing "
            "limit in ClusterQueue team-ml): Kueue never admits it",
            Location("values/teams/ml.yaml", 5, 14),
            "$.jobs['on-h100'].devices",
            "raise the team's nvidia quota (or borrowing) so that each pinned model's pool gets "
            "enough, or ask for fewer devices (docs/scheduling.md)",
            Severity.ERROR,
        )
    ]


def test_borrowing_goes_where_the_share_fell_short_and_services_count_per_pod(
    tmp_path: Path,
) -> None:
    """Quota 4 (the A100 job's, first by model name) and borrowing 8: the H100 job's 4 are
    borrowed on the H100 flavor, the rest in pool order. The service pinned to the H100 needs 1
    device a pod (Kueue admits its pods one by one), so it is not what sizes the H100 flavor."""
    team = PINNED_JOBS.replace("nvidia: 8", "nvidia: 4").replace(
        "jobs:",
        "borrowing: {nvidia: 8}\nservices:\n  s:\n    images: {nvidia: x:1}\n"
        "    tracks:\n      nvidia: {devicesPerReplica: 1, replicas: 4, model: H100}\njobs:",
    )
    view = prod(kueue_tree(tmp_path, team))
    assert nominal(view) == {"nvidia-a100": (4, 4), "nvidia-h100": (0, 4)}
    assert list(kueue_admission(context(view))) == []


def test_under_another_backend_nothing_is_checked(tmp_path: Path) -> None:
    files = {
        "teams/ml.yaml": PINNED_JOBS.replace("nvidia: 8", "nvidia: 4"),
        "vendors/nvidia.yaml": A100_THEN_H100,
    }
    view = prod(tree(tmp_path, files))
    assert list(kueue_admission(context(view))) == []


# ---- SCH010: who runs the packing profile ---------------------------------------------------------


def packing_view(root: Path, kube_scheduler: str) -> FleetView:
    """Prod of the default tree with fleet.yaml's `scheduling.kubeScheduler` (line 6) set."""
    fleet = FLEET + "scheduling:\n  kubeScheduler: " + kube_scheduler + "\n"
    return prod(tree(root, fleet=fleet))


SCH010_CASES = {
    "control plane without its kubeconfig": (
        "{packing: true, runs: control-plane}",
        "the packing profile is for the control plane's own kube-scheduler (runs: "
        "control-plane), which is started with --config and then ignores --kubeconfig "
        "(k8s.io/kubernetes v1.36.3 cmd/kube-scheduler/app/options/deprecated.go): without "
        "clientConnection.kubeconfig in the profile it has no API server to talk to",
        Location("values/fleet.yaml", 6, 34),
        "$.scheduling.kubeScheduler.runs",
        "set kubeScheduler.kubeconfig to the scheduler's kubeconfig on the control-plane nodes "
        "(kubeadm: /etc/kubernetes/scheduler.conf), or runs: fleet (docs/scheduling.md)",
    ),
    "the fleet's scheduler with a kubeconfig": (
        "{packing: true, kubeconfig: /etc/kubernetes/scheduler.conf}",
        "the fleet runs the packing scheduler in a pod, which has no kubeconfig file: it "
        "connects with its ServiceAccount",
        Location("values/fleet.yaml", 6, 34),
        "$.scheduling.kubeScheduler.kubeconfig",
        "drop kubeScheduler.kubeconfig, or runs: control-plane where the control plane runs the "
        "profile (docs/scheduling.md)",
    ),
    "the fleet's scheduler under the default name": (
        "{packing: true, schedulerName: default-scheduler}",
        "the fleet's packing scheduler would run as default-scheduler beside the cluster's own: "
        "two schedulers would take the same pods",
        Location("values/fleet.yaml", 6, 34),
        "$.scheduling.kubeScheduler.schedulerName",
        "give it a name of its own (default accel-packing-scheduler), or runs: control-plane "
        "(docs/scheduling.md)",
    ),
}


@pytest.mark.parametrize("case", sorted(SCH010_CASES))
def test_a_packing_profile_nothing_can_run_is_refused(case: str, tmp_path: Path) -> None:
    section, message, location, path, hint = SCH010_CASES[case]
    view = packing_view(tmp_path, section)
    assert list(packing_runner(context(view))) == [
        Finding("SCH010", message, location, path, hint, Severity.ERROR)
    ]


@pytest.mark.parametrize(
    "section",
    [
        "{packing: true}",
        "{packing: true, runs: control-plane, kubeconfig: /etc/kubernetes/scheduler.conf}",
        "{packing: false, kubeconfig: /etc/kubernetes/scheduler.conf}",
        "{packing: false, runs: control-plane}",
    ],
)
def test_a_packing_profile_something_runs_or_none_is_fine(section: str, tmp_path: Path) -> None:
    assert list(packing_runner(context(packing_view(tmp_path, section)))) == []


def test_sch009_counts_a_jobs_pods_together_and_a_services_one_by_one(tmp_path: Path) -> None:
    """Quota 4 on two A100 nodes (8) split 4 and 0 over the A100 and H100 flavors: a Job of
    2 x 3 devices needs 6 at once and is refused; a service of 4 x 1 device needs 1 a pod and is
    not. Unpinned, the Job may use either flavor: both are named, each with what it allows."""
    team = """\
quota: {nvidia: 4}
jobs:
  wide: {vendor: nvidia, devices: 3, parallelism: 2, images: {nvidia: x:1}}
services:
  s:
    images: {nvidia: x:1}
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 4}
"""
    view = prod(kueue_tree(tmp_path, team))
    assert nominal(view) == {"nvidia-a100": (4, 0), "nvidia-h100": (0, 0)}
    assert [f.message for f in kueue_admission(context(view))] == [
        "Job 'wide' needs 6 nvidia.com/gpu admitted at once on one Kueue flavor, but the "
        "flavors its pods may use allow at most: nvidia-a100 4, nvidia-h100 0 (nominal quota "
        "+ borrowing limit in ClusterQueue team-ml): Kueue never admits it"
    ]


# A JobSet first (its task is not SCH009's to judge), then a TrainJob of 2 nodes x 4 GPUs
# (`devices` on line 11), an unpinned service of 6 GPUs a pod (line 20, column 35) and one of
# 3 pods x 2 GPUs.
KUEUE_KINDS = """\
quota: {nvidia: 4}
jobs:
  gang:
    kind: jobset
    images: {nvidia: r/t:1}
    tasks:
      workers: {vendor: nvidia, devices: 1, replicas: 1}
  tune:
    kind: trainjob
    vendor: nvidia
    devices: 4
    numNodes: 2
    runtime: torch-distributed
    images: {nvidia: r/t:1}
    command: [torchrun, train.py]
services:
  web:
    images: {nvidia: x:1}
    tracks:
      nvidia: {devicesPerReplica: 6, replicas: 1}
  api:
    images: {nvidia: x:1}
    tracks:
      nvidia: {devicesPerReplica: 2, replicas: 3}
"""


def test_sch009_judges_a_trainjob_whole_and_a_deployment_per_pod_after_other_kinds(
    tmp_path: Path,
) -> None:
    """Quota 4, all on the A100 flavor: the TrainJob needs its 8 at once (numNodes x devices),
    the Deployment 6 for one pod; both refused. The other Deployment's pods are admitted one by
    one (2 each, not 3 x 2). The JobSet listed before them does not end the check."""
    view = prod(kueue_tree(tmp_path, KUEUE_KINDS))
    assert nominal(view) == {"nvidia-a100": (4, 0), "nvidia-h100": (0, 0)}
    allowed = (
        "admitted at once on one Kueue flavor, but the flavors its pods may use allow at most: "
        "nvidia-a100 4, nvidia-h100 0 (nominal quota + borrowing limit in ClusterQueue "
        "team-ml): Kueue never admits it"
    )
    hint = (
        "raise the team's nvidia quota (or borrowing) so that each pinned model's pool gets "
        "enough, or ask for fewer devices (docs/scheduling.md)"
    )
    assert list(kueue_admission(context(view))) == [
        Finding(
            "SCH009",
            f"TrainJob 'tune' needs 8 nvidia.com/gpu {allowed}",
            at("ml", 11, 14),
            "$.jobs.tune.devices",
            hint,
            Severity.ERROR,
        ),
        Finding(
            "SCH009",
            f"Deployment 'web-nvidia' needs 6 nvidia.com/gpu {allowed}",
            at("ml", 20, 35),
            "$.services.web.tracks.nvidia.devicesPerReplica",
            hint,
            Severity.ERROR,
        ),
    ]


# ---- SCH011: a ClusterQueue holds at most 16 resource groups ------------------------------------

SCH011_HINT_TAIL = (
    "Move vendors to another cluster (docs/multi-cluster.md), let vendors share a resourceName, "
    "or use scheduling.backend volcano or quota (kueue v0.17.0 "
    "apis/kueue/v1beta2/clusterqueue_types.go: resourceGroups MaxItems=16)"
)


def cluster_queue_groups(view: FleetView) -> int:
    (cq,) = [o for o in team_objects(view, view.teams[0])[0] if o["kind"] == "ClusterQueue"]
    return len(cq["spec"]["resourceGroups"])


def test_sixteen_accelerator_resources_are_sixteen_groups_kueue_takes(tmp_path: Path) -> None:
    view = prod(tree(tmp_path, many_resources(16), fleet=KUEUE_PROD_FLEET, defaults=False))
    assert cluster_queue_groups(view) == 16
    assert list(resource_groups_limit(context(view))) == []


def test_a_seventeenth_accelerator_resource_is_refused_at_its_vendors_resource_name(
    tmp_path: Path,
) -> None:
    """Kueue's CRD refuses a ClusterQueue of 17 resource groups (kueue v0.17.0
    clusterqueue_types.go MaxItems=16); validate's kubeconform says so at the team file's first
    line, render now at the vendor whose resource is the 17th (acc17, by name)."""
    view = prod(tree(tmp_path, many_resources(17), fleet=KUEUE_PROD_FLEET, defaults=False))
    assert cluster_queue_groups(view) == 17
    assert list(resource_groups_limit(context(view))) == [
        Finding(
            "SCH011",
            "ClusterQueue team-ml would hold 17 resource groups; Kueue allows 16: one per "
            "accelerator resource of this environment's vendors (17)",
            Location("values/vendors/acc17.yaml", 2, 1),
            "$.resourceName",
            "advertise 1 accelerator resource fewer here: example.com/acc-17 (vendor acc17) and "
            "those after it by name are past the limit. " + SCH011_HINT_TAIL,
            Severity.ERROR,
        )
    ]


def test_the_group_for_cpu_and_memory_counts_toward_the_sixteen(tmp_path: Path) -> None:
    """16 accelerator resources fit until a team's job requests cpu and memory: its queue's
    `general` group is the 17th, and acc16 the resource past the limit. Render refuses it."""
    files = many_resources(16)
    files["teams/ml.yaml"] += (
        "jobs:\n  train:\n    vendor: acc01\n    devices: 2\n    images: {acc01: r/train:1}\n"
    )
    values_dir = tree(tmp_path, files, fleet=KUEUE_PROD_FLEET, defaults=False)
    assert cluster_queue_groups(prod(values_dir)) == 17
    assert lines(values_dir) == [
        "values/vendors/acc16.yaml:2:1: SCH011 ClusterQueue team-ml would hold 17 resource "
        "groups; Kueue allows 16: one per accelerator resource of this environment's vendors "
        "(16), and one for the cpu and memory the team's workloads request (at $.resourceName); "
        "advertise 1 accelerator resource fewer here: example.com/acc-16 (vendor acc16) and "
        "those after it by name are past the limit. " + SCH011_HINT_TAIL
    ]


def test_two_resources_past_the_limit_point_at_the_first_of_them(tmp_path: Path) -> None:
    view = prod(tree(tmp_path, many_resources(18), fleet=KUEUE_PROD_FLEET, defaults=False))
    (found,) = resource_groups_limit(context(view))
    assert (found.location, found.message, found.hint) == (
        Location("values/vendors/acc17.yaml", 2, 1),
        "ClusterQueue team-ml would hold 18 resource groups; Kueue allows 16: one per "
        "accelerator resource of this environment's vendors (18)",
        "advertise 2 accelerator resources fewer here: example.com/acc-17 (vendor acc17) and "
        "those after it by name are past the limit. " + SCH011_HINT_TAIL,
    )
