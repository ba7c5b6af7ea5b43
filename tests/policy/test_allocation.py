"""Checks on how devices reach pods (generator/policy/allocation.py; docs/allocation.md)."""

from __future__ import annotations

from pathlib import Path

from tests.fixtures import (
    DRA_NVIDIA,
    MIG_NVIDIA,
    MPS_NVIDIA,
    PROD_FLEET,
    SHARED_NVIDIA,
    VNPU_ASCEND,
    lines,
    tree,
)

# Team ml asks for shares of the shared A100 (SHARED_NVIDIA: 1 GPU shared 4 ways).
SHARES_TEAM = """\
quota: {nvidia: 4, nvidia-shared: 4}
jobs:
  two-shares:
    vendor: nvidia-shared
    devices: 2
    images: {nvidia-shared: r/train:cuda}
  one-share:
    vendor: nvidia-shared
    devices: 1
    images: {nvidia-shared: r/train:cuda}
  whole:
    vendor: nvidia
    devices: 2
    images: {nvidia: r/train:cuda}
services:
  serve:
    images: {nvidia-shared: r/serve:cuda}
    tracks:
      nvidia-shared: {devicesPerReplica: 3, replicas: 1}
"""


def of_code(values_dir: Path, code: str) -> list[str]:
    return [g for g in lines(values_dir) if f": {code} " in g]


def test_more_than_one_share_per_pod_is_refused_at_its_line(tmp_path: Path) -> None:
    """A job and a service track asking for 2 and 3 shares; one share, and two whole GPUs of
    the whole vendor, are fine. SCH004 (devices per node) stays quiet: one GPU per node would
    hold neither, but the share count is what is wrong."""
    values_dir = tree(
        tmp_path,
        {"vendors/nvidia-shared.yaml": SHARED_NVIDIA, "teams/ml.yaml": SHARES_TEAM},
    )
    hint = (
        "ask for 1 (a nvidia-shared share is 1/4 of a device), or use a vendor whose units are "
        "bigger, or whole devices"
    )
    assert of_code(values_dir, "ALC002") == [
        f"values/teams/ml.yaml:{line}: ALC002 {what} asks for {n} nvidia.com/gpu.shared per "
        "pod, but nvidia-shared's device plugin gives a pod one share at most "
        "(failRequestsGreaterThanOne, as the fleet configures it): the pod would fail admission "
        f"on its node (at {path}); {hint}"
        for line, what, n, path in (
            ("5:14", "Job 'two-shares'", 2, "$.jobs['two-shares'].devices"),
            (
                "19:42",
                "Deployment 'serve-nvidia-shared'",
                3,
                "$.services.serve.tracks['nvidia-shared'].devicesPerReplica",
            ),
        )
    ]
    assert of_code(values_dir, "SCH004") == []


def test_more_than_one_mps_share_per_pod_is_refused_at_its_line(tmp_path: Path) -> None:
    """MPS_NVIDIA: the plugin forces failRequestsGreaterThanOne under MPS, so a job asking for 2
    shares is refused as under time-slicing; one share is fine."""
    team = (
        "quota: {nvidia-mps: 4}\njobs:\n"
        "  two: {vendor: nvidia-mps, devices: 2, images: {nvidia-mps: r/t:1}}\n"
        "  one: {vendor: nvidia-mps, devices: 1, images: {nvidia-mps: r/t:1}}\n"
    )
    values_dir = tree(tmp_path, {"vendors/nvidia-mps.yaml": MPS_NVIDIA, "teams/ml.yaml": team})
    assert of_code(values_dir, "ALC002") == [
        "values/teams/ml.yaml:3:38: ALC002 Job 'two' asks for 2 nvidia.com/gpu.shared per pod, "
        "but nvidia-mps's device plugin gives a pod one share at most "
        "(failRequestsGreaterThanOne, which MPS forces): the pod would fail admission on its "
        "node (at $.jobs.two.devices); ask for 1 (a nvidia-mps share is 1/4 of a device), or "
        "use a vendor whose units are bigger, or whole devices"
    ]


def test_more_than_one_vnpu_per_pod_is_refused_at_its_line(tmp_path: Path) -> None:
    """Ascend's plugin allocates one virtual device per container request: a job asking for 2
    vNPUs is ALC002, in vNPUs; one asking for 1 is fine."""
    team = (
        "quota: {ascend-vnpu: 4}\njobs:\n"
        "  two: {vendor: ascend-vnpu, devices: 2, images: {ascend-vnpu: r/t:1}}\n"
        "  one: {vendor: ascend-vnpu, devices: 1, images: {ascend-vnpu: r/t:1}}\n"
    )
    values_dir = tree(tmp_path, {"vendors/ascend-vnpu.yaml": VNPU_ASCEND, "teams/ml.yaml": team})
    assert of_code(values_dir, "ALC002") == [
        "values/teams/ml.yaml:3:39: ALC002 Job 'two' asks for 2 huawei.com/Ascend910-6c.1cpu.16g "
        "per pod, but ascend-vnpu's device plugin gives a pod one vNPU at most (one virtual "
        "device per container request): the pod would fail admission on its node (at "
        "$.jobs.two.devices); ask for 1 (a ascend-vnpu vNPU is 1/4 of a device), or use a "
        "vendor whose units are bigger, or whole devices"
    ]


def test_a_pod_may_ask_for_several_mig_instances_up_to_its_nodes(tmp_path: Path) -> None:
    """MIG_NVIDIA: a node holds 4 instances (2 GPUs, two 3g.40gb each). A job asking for 3 is
    fine (a pod may hold several instances; ALC002 is time-slicing's), one asking for 5 is more
    than any node has (SCH004, in instances)."""
    team = (
        "quota: {nvidia-mig: 8}\njobs:\n"
        "  three: {vendor: nvidia-mig, devices: 3, images: {nvidia-mig: r/t:1}}\n"
        "  five: {vendor: nvidia-mig, devices: 5, images: {nvidia-mig: r/t:1}}\n"
    )
    values_dir = tree(tmp_path, {"vendors/nvidia-mig.yaml": MIG_NVIDIA, "teams/ml.yaml": team})
    assert of_code(values_dir, "ALC002") == []
    assert of_code(values_dir, "SCH004") == [
        "values/teams/ml.yaml:4:39: SCH004 Job 'five' asks for 5 nvidia-mig instances per pod, "
        "but a node of pool 'a100-mig' has 4 (at $.jobs.five.devices); ask for at most 4 "
        "instances per pod (more pods for more instances), or pick a model whose nodes have "
        "enough"
    ]


def test_quota_and_capacity_findings_count_a_shared_vendor_in_shares(tmp_path: Path) -> None:
    """SHARED_NVIDIA holds 4 shares (1 GPU, 4 ways): a quota of 8 is over them (CAP003), and
    the workloads' 5 are over the pools and the quota of 4 (MIG005, MIG004), all in shares;
    nvidia's whole GPUs are still devices (CAP003: ml's 9 of 8; the sum, ml's alone, is not
    said again as CAP001)."""
    team = SHARES_TEAM.replace("nvidia: 4, nvidia-shared: 4", "nvidia: 9, nvidia-shared: 4")
    other = "quota: {nvidia-shared: 8}\n"
    values_dir = tree(
        tmp_path,
        {
            "vendors/nvidia-shared.yaml": SHARED_NVIDIA,
            "teams/ml.yaml": team,
            "teams/web.yaml": other,
        },
    )
    found = [g.split(" (at ")[0] for g in lines(values_dir)]
    assert [g for g in found if " CAP00" in g or " MIG00" in g] == [
        "values/teams/ml.yaml:1:17: CAP003 team ml: quota of 9 nvidia devices per namespace, but "
        "the vendor's pools hold 8",
        "values/teams/ml.yaml:19:55: MIG004 team 'ml' needs 5 nvidia-shared shares in namespace "
        "'ml' (service serve 1x3=3, job two-shares=2 (the largest of its jobs)) but its quota "
        "is 4",
        "values/teams/ml.yaml:19:55: MIG005 workloads need 5 nvidia-shared shares (3 for "
        "services, 2 for the largest job) but its pools hold 4",
        "values/teams/web.yaml:1:24: CAP001 quotas for nvidia-shared (nvidia.com/gpu.shared) add "
        "up to 12 shares (ml 4, web 8) but its pools hold 4",
        "values/teams/web.yaml:1:24: CAP003 team web: quota of 8 nvidia-shared shares per "
        "namespace, but the vendor's pools hold 4",
    ]


# ---- devices claimed through a DRA driver --------------------------------------------------------

# Team ml claims H100s of DRA_NVIDIA (8 on one node): 4 of a model no pool has (A100), and 9 of
# any model, more than a node holds.
CLAIMS_TEAM = """\
quota: {nvidia-dra: 8}
jobs:
  a100:
    vendor: nvidia-dra
    devices: 4
    model: A100
    images: {nvidia-dra: r/t:cuda}
  nine:
    vendor: nvidia-dra
    devices: 9
    images: {nvidia-dra: r/t:cuda}
"""
DRA_FLEET = PROD_FLEET.replace('"1.33"', '"1.36"')


def claims_tree(root: Path, fleet: str = DRA_FLEET) -> Path:
    files = {"vendors/nvidia-dra.yaml": DRA_NVIDIA, "teams/ml.yaml": CLAIMS_TEAM}
    return tree(root, files, fleet=fleet)


def test_a_claim_no_pool_can_meet_is_found_as_a_request_would_be(tmp_path: Path) -> None:
    """The claim's model selects no pool (POD003, at the model), and 9 devices exceed a node's
    8 (SCH004): the placement and scheduling checks read a DRA claim's count."""
    found = [g.split(" (at ")[0] for g in lines(claims_tree(tmp_path))]
    assert [g for g in found if " POD003 " in g or " SCH004 " in g] == [
        "values/teams/ml.yaml:6:12: POD003 Job 'a100': container 'a100' requests "
        "nvidia-dra.deviceclass.resource.k8s.io/devices but its nodeSelector "
        "{feature.node.kubernetes.io/accelerator=nvidia-gpu-dra, "
        "feature.node.kubernetes.io/gpu-model=A100} picks no pool of nvidia-dra",
        "values/teams/ml.yaml:10:14: SCH004 Job 'nine' asks for 9 nvidia-dra devices per pod, but "
        "a node of pool 'h100-dra' has 8",
    ]


def test_claims_under_a_queue_backend_are_refused_at_the_workload(tmp_path: Path) -> None:
    """Kueue's DRA accounting is alpha and off: it admits the claims uncounted, and the quota
    bounds them (a warning). The fleet's Volcano would not place them (an error). With no queue
    backend the ResourceQuota counts them, and nothing is said."""
    for backend, severity, reason in (
        (
            "kueue",
            " warning:",
            "Kueue counts DRA devices only with its alpha feature gate DynamicResourceAllocation "
            "(off by default) and deviceClassMappings, which the fleet does not render; the "
            "namespace's ResourceQuota still bounds the claims",
        ),
        (
            "volcano",
            "",
            "Volcano's scheduler allocates claims only when installed with its "
            "DynamicResourceAllocation feature gate, which the fleet does not set",
        ),
    ):
        fleet = DRA_FLEET + f"scheduling: {{backend: {backend}}}\n"
        assert of_code(claims_tree(tmp_path / backend, fleet), "ALC004") == [
            f"values/teams/ml.yaml:{line}: ALC004{severity} Job {job!r} claims nvidia-dra devices "
            f"by DRA under scheduling.backend {backend}, which does not count them: "
            f"{reason} (at $.jobs.{job}.devices); run DRA vendors' workloads without a queue "
            "backend (the ResourceQuota counts their claims), or use a vendor with a device "
            "plugin"
            # (a100 lands on no pool: POD003 says so, not this)
            for line, job in (("10:14", "nine"),)
        ]
    assert of_code(claims_tree(tmp_path / "none"), "ALC004") == []


def test_a_queues_dra_claims_are_found_after_a_whole_vendors_job(tmp_path: Path) -> None:
    """Team ml's job `base`, first of its pods, takes whole nvidia GPUs, which Kueue counts:
    nothing is said of it, and the DRA job after it is still found."""
    team = CLAIMS_TEAM.replace("quota: {nvidia-dra: 8}", "quota: {nvidia-dra: 8, nvidia: 4}")
    team = team.replace(
        "jobs:\n",
        "jobs:\n  base:\n    vendor: nvidia\n    devices: 2\n    images: {nvidia: r/t:cuda}\n",
    )
    files = {"vendors/nvidia-dra.yaml": DRA_NVIDIA, "teams/ml.yaml": team}
    fleet = DRA_FLEET + "scheduling: {backend: kueue}\n"
    assert of_code(tree(tmp_path, files, fleet=fleet), "ALC004") == [
        "values/teams/ml.yaml:14:14: ALC004 warning: Job 'nine' claims nvidia-dra devices by DRA "
        "under scheduling.backend kueue, which does not count them: Kueue counts DRA devices "
        "only with its alpha feature gate DynamicResourceAllocation (off by default) and "
        "deviceClassMappings, which the fleet does not render; the namespace's ResourceQuota "
        "still bounds the claims (at $.jobs.nine.devices); run DRA vendors' workloads without a "
        "queue backend (the ResourceQuota counts their claims), or use a vendor with a device "
        "plugin"
    ]


# ---- ALC005: one workload over several models -----------------------------------------------------

# NVIDIA pools of two models, the H100s listed first: ALC005 names them sorted.
TWO_MODELS = (
    "pools:\n  - {name: h100, model: H100, devicesPerNode: 8, nodes: [n2]}\n"
    "  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1]}\n"
)
VOLCANO_FLEET = PROD_FLEET + "scheduling: {backend: volcano}\n"
# A Volcano gang of two workers and a service of two replicas, neither naming a model.
SPAN_TEAM = """\
quota: {nvidia: 12}
jobs:
  gang:
    kind: volcano
    images: {nvidia: r/t:1}
    tasks:
      workers: {vendor: nvidia, devices: 1, replicas: 2}
services:
  web:
    images: {nvidia: r/w:1}
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 2}
"""
SPAN_HINT = "set model (one of A100, H100) on it, or a model and a fallbackModel if either will do"


def alc005(root: Path, vendor: str, team: str) -> list[str]:
    """ALC005's lines for team ml over one NVIDIA vendor file, under Volcano (for its gangs)."""
    files = {"vendors/nvidia.yaml": vendor, "teams/ml.yaml": team}
    return of_code(tree(root, files, fleet=VOLCANO_FLEET), "ALC005")


def spans(line: str, what: str, path: str, count: int = 2) -> str:
    """ALC005's line for a workload of `count` pods over the A100 and H100 pools."""
    return (
        f"values/teams/ml.yaml:{line}: ALC005 warning: {what}: its {count} pods name no model "
        "and may land on nvidia pools of 2 models (A100, H100), so one workload may run on "
        f"several (at {path}); {SPAN_HINT}"
    )


def test_pods_of_one_workload_that_may_land_on_two_models_are_named(tmp_path: Path) -> None:
    """A gang's task and a service's track, two pods each: each is named at its own line, with
    the models sorted and counted, and a warning's severity."""
    assert alc005(tmp_path, TWO_MODELS, SPAN_TEAM) == [
        spans("7:16", "Job (volcano) task 'gang/workers'", "$.jobs.gang.tasks.workers"),
        spans("12:15", "Deployment 'web-nvidia'", "$.services.web.tracks.nvidia"),
    ]


def test_the_pod_count_and_every_model_of_the_pools_are_named(tmp_path: Path) -> None:
    """Three replicas over pools of three models listed unsorted: the message counts both, and
    the message and the hint list the models sorted."""
    vendor = TWO_MODELS + "  - {name: h200, model: H200, devicesPerNode: 8, nodes: [n3]}\n"
    team = "quota: {nvidia: 12}\nservices:\n  web:\n    images: {nvidia: r/w:1}\n"
    team += "    tracks:\n      nvidia: {devicesPerReplica: 1, replicas: 3}\n"
    assert alc005(tmp_path, vendor, team) == [
        "values/teams/ml.yaml:6:15: ALC005 warning: Deployment 'web-nvidia': its 3 pods name no "
        "model and may land on nvidia pools of 3 models (A100, H100, H200), so one workload may "
        "run on several (at $.services.web.tracks.nvidia); set model (one of A100, H100, H200) on "
        "it, or a model and a fallbackModel if either will do"
    ]


def test_a_workload_of_one_pod_cannot_span_models(tmp_path: Path) -> None:
    """A Job of one pod and a service of one replica land on one node each: nothing to say of
    them, and the service of two replicas checked after them is still named."""
    team = """\
quota: {nvidia: 12}
jobs:
  single:
    vendor: nvidia
    devices: 1
    images: {nvidia: r/t:1}
services:
  one:
    images: {nvidia: r/w:1}
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 1}
  two:
    images: {nvidia: r/w:1}
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 2}
"""
    assert alc005(tmp_path, TWO_MODELS, team) == [
        spans("15:15", "Deployment 'two-nvidia'", "$.services.two.tracks.nvidia")
    ]


def test_pools_of_one_model_give_nothing_to_span(tmp_path: Path) -> None:
    """Two pools, both of A100s: the gang and the service land on one model whatever the pool."""
    vendor = TWO_MODELS.replace("{name: h100, model: H100", "{name: a100-b, model: A100")
    assert alc005(tmp_path, vendor, SPAN_TEAM) == []


def test_a_workload_that_names_a_model_chose_it(tmp_path: Path) -> None:
    """model: H100 pins the gang's workers and the service's track to the H100 pool."""
    team = SPAN_TEAM.replace("replicas: 2}", "replicas: 2, model: H100}")
    assert alc005(tmp_path, TWO_MODELS, team) == []


def test_a_model_and_a_fallback_model_chose_both(tmp_path: Path) -> None:
    """model and fallbackModel give the pods node affinity for either model, which they chose."""
    team = SPAN_TEAM.replace("replicas: 2}", "replicas: 2, model: H100, fallbackModel: A100}")
    assert alc005(tmp_path, TWO_MODELS, team) == []


def test_the_workloads_own_node_affinity_on_the_model_label_silences_it(
    tmp_path: Path,
) -> None:
    """A service's own node affinity on the model label, required or only preferred, is its
    choice of models; one on a zone chose none, and pod anti-affinity chooses no nodes: those
    services, checked after the ones that chose, are named."""
    team = """\
quota: {nvidia: 24}
services:
  affine:
    images: {nvidia: r/w:1}
    affinity:
      nodeAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 1
            preference:
              matchExpressions:
                - {key: feature.node.kubernetes.io/gpu-model, operator: In, values: [H100]}
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 2}
  required:
    images: {nvidia: r/w:1}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
            - matchExpressions:
                - {key: feature.node.kubernetes.io/gpu-model, operator: In, values: [A100]}
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 2}
  zoned:
    images: {nvidia: r/w:1}
    affinity:
      nodeAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 1
            preference: {matchExpressions: [{key: zone, operator: In, values: [a]}]}
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 2}
  spread:
    images: {nvidia: r/w:1}
    affinity:
      podAntiAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 1
            podAffinityTerm:
              topologyKey: kubernetes.io/hostname
              labelSelector: {matchLabels: {app: spread}}
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 2}
"""
    assert alc005(tmp_path, TWO_MODELS, team) == [
        spans("32:15", "Deployment 'zoned-nvidia'", "$.services.zoned.tracks.nvidia"),
        spans("43:15", "Deployment 'spread-nvidia'", "$.services.spread.tracks.nvidia"),
    ]


def test_models_that_differ_only_in_case_are_one(tmp_path: Path) -> None:
    """Pools of A100 and a100 are one model (as the catalog matches them): nothing to span."""
    vendor = TWO_MODELS.replace("{name: h100, model: H100", "{name: a100-b, model: a100")
    assert alc005(tmp_path, vendor, SPAN_TEAM) == []


# Pools of two models whose nodes carry one model label value: the A800s' nodes are labelled as
# A100s, so a nodeSelector on that value still selects both pools.
ONE_LABEL = (
    "pools:\n  - {name: a800, model: A800, devicesPerNode: 8, nodes: [n2], labels: {gpu-model: A100}}\n"
    "  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1]}\n"
)


def test_a_node_selector_on_the_model_label_silences_it(tmp_path: Path) -> None:
    """The service `chosen` selects gpu-model A100 itself (team nodeSelector): it chose what that
    label means, though both pools carry it; the service `roaming` checked after it, on the same
    pools, is named."""
    team = """\
quota: {nvidia: 12}
services:
  chosen:
    images: {nvidia: r/w:1}
    nodeSelector: {gpu-model: A100}
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 2}
  roaming:
    images: {nvidia: r/w:1}
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 2}
"""
    assert alc005(tmp_path, ONE_LABEL, team) == [
        "values/teams/ml.yaml:11:15: ALC005 warning: Deployment 'roaming-nvidia': its 2 pods name "
        "no model and may land on nvidia pools of 2 models (A100, A800), so one workload may run "
        "on several (at $.services.roaming.tracks.nvidia); set model (one of A100, A800) on it, or a "
        "model and a fallbackModel if either will do"
    ]
