"""Checks on how devices reach pods (generator/policy/allocation.py; docs/allocation.md)."""

from __future__ import annotations

from pathlib import Path

from tests.fixtures import DRA_NVIDIA, PROD_FLEET, SHARED_NVIDIA, lines, tree

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
        "ask for 1 (a nvidia-shared share is a 1/4 slice of a device; more shares give no more "
        "of it), or use a vendor that hands out whole devices"
    )
    assert of_code(values_dir, "ALC002") == [
        f"values/teams/ml.yaml:{line}: ALC002 {what} asks for {n} nvidia.com/gpu.shared per "
        "pod, but nvidia-shared's device plugin refuses more than one share of a device shared "
        f"4 ways: the pod would fail admission on its node (at {path}); {hint}"
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


def test_quota_and_capacity_findings_count_a_shared_vendor_in_shares(tmp_path: Path) -> None:
    """SHARED_NVIDIA holds 4 shares (1 GPU, 4 ways): a quota of 8 is over them (CAP003), and
    the workloads' 5 are over the pools and the quota of 4 (MIG005, MIG004), all in shares;
    nvidia's whole GPUs are still devices (CAP001)."""
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
        "values/teams/ml.yaml:1:17: CAP001 quotas for nvidia (nvidia.com/gpu) add up to 9 "
        "devices (ml 9) but its pools hold 8",
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

# NVIDIA pools of two models; a Volcano gang and a service name no model, a pinned gang does, a
# job of one pod cannot span, and a service with a fallback model chose both.
TWO_MODELS = (
    "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1]}\n"
    "  - {name: h100, model: H100, devicesPerNode: 8, nodes: [n2]}\n"
)
SPAN_TEAM = """\
quota: {nvidia: 12}
jobs:
  gang:
    kind: volcano
    images: {nvidia: r/t:1}
    tasks:
      workers: {vendor: nvidia, devices: 1, replicas: 2}
  pinned:
    kind: volcano
    images: {nvidia: r/t:1}
    tasks:
      workers: {vendor: nvidia, devices: 1, replicas: 2, model: H100}
  single:
    vendor: nvidia
    devices: 1
    images: {nvidia: r/t:1}
services:
  web:
    images: {nvidia: r/w:1}
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 2}
  either:
    images: {nvidia: r/w:1}
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 2, model: H100, fallbackModel: A100}
"""


def test_pods_of_one_workload_that_may_land_on_two_models_are_named(tmp_path: Path) -> None:
    fleet = PROD_FLEET + "scheduling: {backend: volcano}\n"
    values_dir = tree(
        tmp_path, {"vendors/nvidia.yaml": TWO_MODELS, "teams/ml.yaml": SPAN_TEAM}, fleet=fleet
    )
    hint = "set model (one of A100, H100) on it, or a model and a fallbackModel if either will do"
    assert of_code(values_dir, "ALC005") == [
        f"values/teams/ml.yaml:{line}: ALC005 warning: {what}: its 2 pods name no model and may "
        "land on nvidia pools of 2 models (A100, H100), so one workload may run on several "
        f"(at {path}); {hint}"
        for line, what, path in (
            ("7:16", "Job (volcano) task 'gang/workers'", "$.jobs.gang.tasks.workers"),
            ("21:15", "Deployment 'web-nvidia'", "$.services.web.tracks.nvidia"),
        )
    ]
    # One model in the cluster: nothing to span.
    one = tree(tmp_path / "one", {"teams/ml.yaml": SPAN_TEAM}, fleet=fleet)
    assert of_code(one, "ALC005") == []
