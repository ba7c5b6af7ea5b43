"""The judge (generator/simulate/judge.py) on runs recorded on a real control plane
(tests/simulate/recorded.py, snapshots/): each case's values tree made for one behaviour, planned
as `simulate` plans it, judged on what the driver took when it ran there. Every expected row,
code, location and message is written here by hand from the values.

What needs the processes themselves (a scheduler that places, quota admission, nfd-master that
labels, Kueue that admits, a controller that makes pods) runs once per behaviour in
tests/simulate/test_run.py and tests/cluster/test_cluster.py; these cases judge what those
processes did, without them.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from generator.builders import argocd, common, node_config
from generator.builders import workloads as workload_builder
from generator.findings import Finding, Severity
from generator.policy import registry
from generator.reporters import simulation as simreport
from generator.values.model import FleetView
from generator.workloads.model import Workloads
from tests.example import use_backend
from tests.fixtures import MIG_NVIDIA, SIM_FLEET, VNPU_ASCEND, Write, tree
from tests.simulate.cases import (
    KUEUE_NVIDIA,
    MPS_POOL,
    NVIDIA,
    SERVERS_SORTED,
    SHARE_TEAM,
    TEAM,
    gang_tree,
    line_of,
    one_too_many,
    placed_but_one,
    shared_pool_checked,
    small_tree,
    walk_tree,
)
from tests.simulate.recorded import recorded


def codes(findings: list[Finding], severity: Severity = Severity.ERROR) -> set[str]:
    return {f.code for f in findings if f.severity is severity}


def where(findings: list[Finding], code: str) -> set[str]:
    return {f"{f.location.file}:{f.location.line}" for f in findings if f.code == code}


# ---- nodes: what nfd-master set ---------------------------------------------------------------


def test_a_taint_nfd_master_drops_lets_a_pod_without_tolerations_on_the_node(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    vendor = {
        "pools": [
            {
                **NVIDIA["pools"][0],
                "taints": [{"key": "accelerator", "value": "nvidia-gpu", "effect": "NoSchedule"}],
            }
        ]
    }
    values = small_tree(tmp_path, vendors={"nvidia": vendor})
    result = recorded(request, "dropped-taint", values)
    (env,) = result.envs
    node = next(n for n in env.nodes if n.name == "gpu-1")
    assert node.want_taints == ["accelerator=nvidia-gpu:NoSchedule"] and node.taints == []
    assert {p["node"] for p in env.probes if p["landed"]} >= {"gpu-1", "general-purpose-01"}
    pool_line = f"values/vendors/nvidia.yaml:{line_of(values / 'vendors/nvidia.yaml', 'taints:')}"
    assert where(result.findings, "SIM002") == {pool_line}
    assert where(result.findings, "SIM006") == {pool_line}
    dropped = next(f for f in result.findings if f.code == "SIM002")
    assert "ignoring taint" in dropped.message and "unprefixed" in dropped.message


def test_a_rule_on_the_pci_vendor_alone_labels_a_cpu_only_server(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rules match PCI class and device IDs; put back the match on the vendor alone (the
    defect issue #8 found) and nfd-master labels the CPU-only Hygon server, whose root complex
    and bridges carry the vendor ID 1d94, as a DCU node: the DCU plugin runs there."""
    real = node_config._node_feature_rule

    def vendor_alone(view: FleetView, vendor: Any, handover: dict[str, str]) -> dict[str, Any]:
        rule = real(view, vendor, handover)
        for r in rule["spec"]["rules"]:
            for match in r["matchFeatures"]:
                if match["feature"] == "pci.device":
                    match["matchExpressions"] = {"vendor": match["matchExpressions"]["vendor"]}
        return rule

    monkeypatch.setattr(node_config, "_node_feature_rule", vendor_alone)
    hygon = {
        "resourceName": "amd.com/gpu",
        "devicePlugin": {"image": "registry.example.com/hygon/dcu-device-plugin", "version": "v1"},
        "exporter": {"daemonSet": {"image": "registry.example.com/hygon/dcu-exporter"}},
        "pools": [{"name": "z100l", "model": "Z100L", "devicesPerNode": 8, "nodes": ["dcu-1"]}],
    }
    values = small_tree(
        tmp_path,
        vendors={"hygon": hygon},
        teams={"ml": {"owners": ["a@b.c"], "quota": {"hygon": 8}}},
    )
    result = recorded(request, "pci-vendor-alone", values)
    (env,) = result.envs
    cpu = next(n for n in env.nodes if n.name == "cpu-hygon-cpu-01")
    assert cpu.labels.get("feature.node.kubernetes.io/accelerator") == "hygon-dcu", cpu
    plugin = next(p for p in env.plugins if p["vendor"] == "hygon")
    assert plugin["nodes"] == ["cpu-hygon-cpu-01", "dcu-1"]
    assert {"SIM001", "SIM003"} <= codes(result.findings)
    assert any("cpu-hygon-cpu-01" in f.message for f in result.findings if f.code == "SIM003")


# ---- workload pods ------------------------------------------------------------------------------


def test_a_toleration_that_does_not_match_the_taint_keeps_the_pod_pending(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tolerations are made from the same values as taints, so values cannot make them differ;
    a generator bug can (here: a wrong toleration value). With the static placement check
    (POD004) removed, the real scheduler still keeps the job Pending, reported at its line."""
    vendor = {
        "pools": [
            {
                **NVIDIA["pools"][0],
                "taints": [
                    {
                        "key": "feature.node.kubernetes.io/nvidia-gpu",
                        "value": "true",
                        "effect": "NoSchedule",
                    }
                ],
            }
        ]
    }
    values = small_tree(tmp_path, vendors={"nvidia": vendor})
    real = common.toleration  # what workloads.py imports as toleration

    def wrong(taint: Any) -> dict[str, str]:
        return {**real(taint), "operator": "Equal", "value": "false"}

    monkeypatch.setattr(workload_builder, "toleration", wrong)
    monkeypatch.delitem(registry.CHECKS, "POD004")
    result = recorded(request, "wrong-toleration", values)
    job_line = f"values/teams/ml.yaml:{line_of(values / 'teams/ml.yaml', 'train:')}"
    pending = [f for f in result.findings if f.code == "SIM004"]
    assert pending and {f"{f.location.file}:{f.location.line}" for f in pending} == {job_line}
    assert "untolerated taint" in pending[0].message
    assert "even alone" in pending[0].message
    (env,) = result.envs
    assert next(n for n in env.nodes if n.name == "gpu-1").ok  # the taint itself is fine


# ---- nfd-worker from the fleet's NFD chart (issue 19) ------------------------------------------


def test_nfd_worker_that_does_not_tolerate_a_pool_taint_is_missing_there(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fleet's NFD chart's nfd-worker DaemonSet is applied as the chart renders it: without
    the tolerations the fleet's values give it, its pods stay off the tainted GPU node."""
    fleet = {**SIM_FLEET, "platform": {"nfd": {"provided": "fleet"}}}
    files = {
        "fleet.yaml": yaml.safe_dump(fleet, sort_keys=False),
        "vendors/nvidia.yaml": yaml.safe_dump(KUEUE_NVIDIA),
        "teams/ml.yaml": "quota: {nvidia: 2}\n",
    }
    values = tree(tmp_path, files, defaults=False)
    values_of = argocd.CHART_VALUES["nfd"]

    def intolerant(workloads: Workloads) -> dict[str, Any]:
        got = values_of(workloads)
        assert got["worker"]["tolerations"]  # what the fleet gives, taken away here
        return {**got, "worker": {k: v for k, v in got["worker"].items() if k != "tolerations"}}

    monkeypatch.setitem(argocd.CHART_VALUES, "nfd", intolerant)
    result = recorded(request, "nfd-worker-intolerant", values)
    (env,) = result.envs
    (row,) = [p for p in env.plugins if p["vendor"] == "every node"]
    assert row["daemonset"] == "node-feature-discovery/nfd-node-feature-discovery-worker"
    assert (row["nodes"], row["ok"]) == (SERVERS_SORTED, False)
    (finding,) = [f for f in result.findings if f.severity is Severity.ERROR]
    assert finding.code == "SIM014"
    assert finding.message == (
        "nfd-worker (node-feature-discovery/nfd-node-feature-discovery-worker) of the fleet's "
        "NFD chart does not run on g1 (pool nvidia/a100) once its taints are there: when "
        "nfd-worker starts again (an upgrade, a reboot), nothing there publishes the devices the "
        "NodeFeatureRules match"
    )
    assert str(finding.location) == "values/fleet.yaml:12:3"  # platform.nfd


# ---- Kueue (issue 19) ---------------------------------------------------------------------------


def test_kueue_admits_a_job_pinned_to_the_second_model_of_a_vendor(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Issue 19's case: an H100 pool beside the A100 pool and a 4-GPU job pinned to H100. The
    team's quota of 8 is split over the vendor's flavors so that the pinned job can be admitted
    (poured into the pools in order, the 8 A100s took it all and nvidia-h100 got 0); Kueue's own
    controller admits it on nvidia-h100 and the 1-GPU job beside it on nvidia-a100."""
    fleet = {
        **SIM_FLEET,
        "scheduling": {"backend": "kueue"},
        "platform": {"kueue": {"provided": "fleet"}},
    }
    nvidia = {
        "pools": [
            # 8 A100s: the team's whole quota would fit the first pool.
            {"name": "a100", "model": "A100", "devicesPerNode": 4, "nodes": ["a1", "a2"]},
            {"name": "h100", "model": "H100", "devicesPerNode": 4, "nodes": ["h1"]},
        ]
    }
    team = """\
quota: {nvidia: 8}
jobs:
  small:
    vendor: nvidia
    devices: 1
    model: A100
    images: {nvidia: r/t:1}
  big:
    vendor: nvidia
    devices: 4
    model: H100
    images: {nvidia: r/t:1}
"""
    files = {
        "fleet.yaml": yaml.safe_dump(fleet, sort_keys=False),
        "vendors/nvidia.yaml": yaml.safe_dump(nvidia),
        "teams/ml.yaml": team,
    }
    values = tree(tmp_path, files, defaults=False)
    result = recorded(request, "kueue-second-model", values)
    (env,) = result.envs
    assert [f.format() for f in result.findings if f.severity is Severity.ERROR] == []
    rows = {a["workload"]: (a["admission"], a["ok"]) for a in env.admissions}
    assert rows == {
        # cpu and memory on the fleet's general flavor, the GPUs on the pinned model's.
        "Job ml/big": ("1 of 1 admitted: team-ml (general, nvidia-h100)", True),
        "Job ml/small": ("1 of 1 admitted: team-ml (general, nvidia-a100)", True),
    }, env.admissions
    nodes = {p.workload: p.node for p in env.pods}
    assert nodes["Job ml/big"] == "h1" and nodes["Job ml/small"] in ("a1", "a2"), nodes


# ---- shared GPUs, MIG, vNPUs (issue 23, docs/allocation.md) ------------------------------------


def test_mps_shared_pods_pack_four_to_a_gpu_and_a_fifth_waits(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As test_run.py's time-sliced pool, shared by MPS: the plugin's MPS control daemon lands
    beside the plugin."""
    values = one_too_many(tmp_path, monkeypatch, ("nvidia-shared", MPS_POOL), SHARE_TEAM, (4, 1))
    result = recorded(request, "shared-mps", values)
    # Which of the five pods waits is the scheduler's race; that one does, for want of a share.
    env = placed_but_one(result, "nvidia-shared", "g1", "nvidia.com/gpu.shared", 4)
    shared_pool_checked(env, MPS_POOL)
    assert {f.code for f in result.findings} == {"SIM004", "SIM007", "SIM011"}


# One 80GB A100 on node m1 partitioned into two 3g.40gb instances (MIG_NVIDIA's form): 2
# nvidia.com/mig-3g.40gb. Team ml runs 2 replicas of one instance each, team web 1 more: MIG005
# (3 of 2) is taken out as above, and the real scheduler must place two and leave one Pending.
MIG_POOL = MIG_NVIDIA.replace("devicesPerNode: 2, nodes: [n5]", "devicesPerNode: 1, nodes: [m1]")
MIG_TEAM = """\
quota: {{nvidia-mig: {n}}}
services:
  serve:
    images: {{nvidia-mig: r/serve:cuda}}
    tracks:
      nvidia-mig: {{devicesPerReplica: 1, replicas: {n}}}
"""


def test_mig_instances_are_allocated_two_to_a_gpu_and_a_third_waits(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = one_too_many(tmp_path, monkeypatch, ("nvidia-mig", MIG_POOL), MIG_TEAM, (2, 1))
    result = recorded(request, "mig", values)
    env = placed_but_one(result, "nvidia-mig", "m1", "nvidia.com/mig-3g.40gb", 2)
    (m1,) = [n for n in env.nodes if n.name == "m1"]
    # NFD set the layout label from the pool's rule, as it would for the site's MIG manager.
    assert m1.ok and m1.labels["nvidia.com/mig.config"] == "all-3g.40gb"
    (stood_in,) = [f for f in result.findings if "MIG manager" in f.message]
    assert stood_in.code == "SIM011"


# One 910B on node v1 split by the site into two vir06_1c_16g vNPUs (VNPU_ASCEND's form): 2 of
# huawei.com/Ascend910-6c.1cpu.16g. Teams ml (2 pods) and web (1 pod), one vNPU each: MIG005
# (3 of 2) taken out as above; the real scheduler places two and leaves one Pending.
VNPU_POOL = VNPU_ASCEND.replace(
    "vnpu: {template: vir06_1c_16g, perDevice: 4}", "vnpu: {template: vir06_1c_16g, perDevice: 2}"
).replace("devicesPerNode: 2, nodes: [npu-v1]", "devicesPerNode: 1, nodes: [v1]")
VNPU_TEAM = """\
quota: {{ascend-vnpu: {n}}}
services:
  serve:
    images: {{ascend-vnpu: r/serve:cann}}
    vendorMounts: false
    tracks:
      ascend-vnpu: {{devicesPerReplica: 1, replicas: {n}}}
"""


def test_vnpus_are_allocated_one_to_a_pod_and_a_third_waits(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = one_too_many(tmp_path, monkeypatch, ("ascend-vnpu", VNPU_POOL), VNPU_TEAM, (2, 1))
    result = recorded(request, "vnpu", values)
    env = placed_but_one(result, "ascend-vnpu", "v1", "huawei.com/Ascend910-6c.1cpu.16g", 2)
    (v1,) = [n for n in env.nodes if n.name == "v1"]
    assert v1.ok and v1.labels["feature.node.kubernetes.io/accelerator"] == "huawei-npu-vnpu"
    (stood_in,) = [f for f in result.findings if "npu-smi" in f.message]
    assert stood_in.code == "SIM011"


# ---- a migration across clusters, walked through its phases (simulate --phases) ----------------


def test_each_phase_of_a_migration_across_clusters_places_each_track_in_its_cluster(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """cases.py walk_tree: chat's NVIDIA track in main, its Ascend track in domestic (one node of
    2 NPUs, a team quota of 2), walked from validate to fallback. Each cluster judges its own
    track at each phase; from dual-run the quota refuses Ascend's third pod: one SIM007, at the
    track, naming the phases, the cluster and the API server's refusal."""
    result = recorded(request, "cross-cluster-walk", walk_tree(tmp_path), "prod", phases=True)
    envs = {e.env: e for e in result.envs}
    main, domestic = envs["prod/main"], envs["prod/domestic"]
    assert [
        (t["phase"], t["track"], t["cluster"], t["weight"], t["ready"], t["plan"], t["placed"])
        for t in main.phases
    ] == [
        ("validate", "nvidia", "main", 100, 2, 2, {"nvidia/a100": 2}),
        ("dual-run", "nvidia", "main", 100, 2, 2, {"nvidia/a100": 2}),
        ("shift-10", "nvidia", "main", 90, 2, 2, {"nvidia/a100": 2}),
        ("shift-50", "nvidia", "main", 50, 2, 2, {"nvidia/a100": 2}),
        ("shift-90", "nvidia", "main", 10, 2, 2, {"nvidia/a100": 2}),
        ("primary-new", "nvidia", "main", 0, 2, 2, {"nvidia/a100": 2}),
        ("fallback", "nvidia", "main", 0, 1, 1, {"nvidia/a100": 1}),
    ]
    short = {"ascend/910b": 2}
    assert [
        (t["phase"], t["track"], t["cluster"], t["weight"], t["ready"], t["plan"], t["placed"])
        for t in domestic.phases
    ] == [
        ("validate", "ascend", "domestic", 0, 1, 1, {"ascend/910b": 1}),
        ("dual-run", "ascend", "domestic", 0, 2, 3, short),
        ("shift-10", "ascend", "domestic", 10, 2, 3, short),
        ("shift-50", "ascend", "domestic", 50, 2, 3, short),
        ("shift-90", "ascend", "domestic", 90, 2, 3, short),
        ("primary-new", "ascend", "domestic", 100, 2, 3, short),
        ("fallback", "ascend", "domestic", 100, 2, 3, short),
    ]
    (error,) = [f for f in result.findings if f.severity is Severity.ERROR]
    assert (error.code, error.envs, error.path, error.hint) == (
        "SIM007",
        ("prod/domestic",),
        "$.services.chat.tracks.ascend",
        "replicas per track must be what plan says: check capacity, quota and placement",
    )
    assert (error.location.file, error.location.line) == ("values/teams/inference.yaml", 11)
    assert re.fullmatch(
        r"service inference/chat at phase dual-run \(and shift-10, shift-50, shift-90, "
        r"primary-new, fallback\): track ascend in cluster domestic has 2 ready pod\(s\), plan "
        r"says 3: 1 of 3 pod\(s\) not created: (\(combined from similar events\): )?"
        r'Error creating: pods "chat-ascend-[a-z0-9]+-'
        r'[a-z0-9]{5}" is forbidden: exceeded quota: accelerators, requested: '
        r"requests\.huawei\.com/Ascend910=1, used: requests\.huawei\.com/Ascend910=2, "
        r"limited: requests\.huawei\.com/Ascend910=2",
        error.message,
    ), error.message
    # The text: each cluster's walk, then both clusters' tracks together at each phase.
    out = io.StringIO()
    simreport.write(result, "text", out)
    text = out.getvalue()
    gathered = text[text.index("environment prod: services across clusters") :]
    assert gathered.splitlines()[1:5] == [
        "  service         phase        track   cluster   weight  ready  plan  placed",
        "  inference/chat  validate     ascend  domestic  0       1      1     ascend/910b x1  ok",
        "  inference/chat  validate     nvidia  main      100     2      2     nvidia/a100 x2  ok",
        "  inference/chat  dual-run     ascend  domestic  0       2      3     ascend/910b x2  "
        "MISMATCH",
    ]


# ---- the example fleet --------------------------------------------------------------------------


def test_without_packing_the_example_jobs_fragment(
    values_dir: Path, request: pytest.FixtureRequest
) -> None:
    """The example fleet on kube-scheduler's default profile: the inference replicas spread one
    per node, so the 4-GPU and 8-NPU jobs fit on no node although the capacity adds up; the
    findings point at the jobs' values lines."""
    prod = values_dir / "environments" / "prod.yaml"
    assert "packing: true" in prod.read_text()
    prod.write_text(prod.read_text().replace("packing: true", "packing: false"))
    result = recorded(request, "example-without-packing", values_dir, "prod/main")
    errors = [f for f in result.findings if f.severity is Severity.ERROR]
    assert {(f.code, f.message.split(":")[0], f.envs) for f in errors} == {
        ("SIM004", "Job ml-team/cuda-training-job", ("prod/main",)),
        ("SIM004", "Job ml-team/npu-training-job", ("prod/main",)),
    }, [f.format() for f in errors]
    assert all("Insufficient" in f.message and "even alone" in f.message for f in errors)
    assert {f.location.file for f in errors} == {"values/teams/ml-team.yaml"}
    # The rows of those jobs are the mismatches the errors are about.
    (env,) = result.envs
    assert "MISMATCH" in simreport.env_text(env)
    assert {p.workload for p in env.pods if not p.ok and not p.waits} == {
        "Job ml-team/cuda-training-job",
        "Job ml-team/npu-training-job",
    }
    # The DRA driver the fleet installs (platform.nvidiaDraDriver, issue 41): its kubelet
    # plugin's stand-in lands on the H100 node, whose taint and label its values name, and the
    # job that claims the 8 H100s runs there.
    [driver] = [p for p in env.plugins if p["daemonset"].startswith("nvidia-dra-driver-gpu/")]
    assert (driver["nodes"], driver["want"], driver["ok"]) == (
        ["nvidia-node-04"],
        ["nvidia-node-04"],
        True,
    )
    [h100] = [p for p in env.pods if p.workload == "Job ml-team/h100-pretrain-job"]
    assert (h100.node, h100.ok) == ("nvidia-node-04", True)


def test_example_fleet_under_kueue_is_admitted_by_kueues_own_controller(
    values_dir: Path, write: Write, request: pytest.FixtureRequest
) -> None:
    """The example under `backend: kueue`, with the fleet's Kueue chart: Kueue's controller
    admits every job and every service pod through the team's ClusterQueue, on the flavor of
    the pool it lands on, in every environment; the only warning says what of Kueue did not run."""
    use_backend(values_dir, write, "kueue")
    fleet = (values_dir / "fleet.yaml").read_text()
    assert "  nfd:\n    provided: fleet\n" in fleet
    write("fleet.yaml", fleet.replace("  nfd:\n", "  kueue:\n    provided: fleet\n  nfd:\n", 1))
    result = recorded(request, "example-kueue", values_dir)
    assert [f.format() for f in result.findings if f.severity is Severity.ERROR] == []
    # What did not run, per cluster: Kueue's and JobSet's chart Deployments (their controllers
    # ran; prod's domestic runs both too, from the fleet's add-ons), and the contents of
    # ml-team's declared objects (stand-ins) where its workloads use them (not in domestic).
    said = sorted((f.message.split(":")[0], f.envs) for f in result.findings if f.code == "SIM011")
    jobset = (
        "JobSet's controller manager (sigs.k8s.io/jobset v0.11.1) ran with the configuration, "
        "CRDs, webhooks and certificate rotation of the fleet's JobSet chart, as a process with "
        "the control plane's admin credentials reached through an EndpointSlice the simulation "
        "wrote"
    )
    kueue = (
        "Kueue's controller manager (sigs.k8s.io/kueue v0.17.0) ran with the configuration, "
        "CRDs, webhooks and certificate rotation of the fleet's Kueue chart, as a process with "
        "the control plane's admin credentials reached through an EndpointSlice the simulation "
        "wrote"
    )
    external = "team 'ml-team' declares objects of its own (external) that its workloads use"
    # and the device plugin of the time-sliced A100s and the DRA driver of the H100s, where
    # they are (not in domestic)
    shared = "vendor nvidia-shared shares its devices by timeSlicing"
    dra = "vendor nvidia-dra is allocated by DRA"
    # and the DRA driver the fleet installs there, whose chart does not run: its kubelet
    # plugin's stand-in
    driver = "the NVIDIA DRA driver's kubelet plugin does not run here"
    # and what routes between prod's clusters: no MCS implementation, no Gateway controller
    cross = (
        "service inference/chat runs across clusters (nvidia-shared in main, hygon in domestic; "
        "routing gateway)"
    )
    layers = ("prod/domestic", "prod/main", "staging")
    assert said == sorted(
        [(jobset, (e,)) for e in layers]
        + [(kueue, (e,)) for e in layers]
        + [(external, ("prod/main",)), (external, ("staging",))]
        + [(shared, ("prod/main",)), (shared, ("staging",))]
        + [(dra, ("prod/main",)), (dra, ("staging",))]
        + [(driver, ("prod/main",)), (driver, ("staging",))]
        + [(cross, ("prod/domestic",)), (cross, ("prod/main",))]
    ), said
    assert codes(result.findings, Severity.WARNING) == {"SIM010", "SIM011"}
    # In staging ml-team's NVIDIA quota is 4: its 4-GPU and 2-GPU jobs take turns (a queue does
    # that), which SIM010 says; in prod's main (8) they run side by side.
    waits = [f for f in result.findings if f.code == "SIM010"]
    assert waits and {f.envs for f in waits} == {("staging",)}, [f.format() for f in waits]
    services = {
        "Deployment inference/embedding-service-nvidia-shared": (True, "team-inference"),
        "Deployment inference/inference-service-ascend": (True, "team-inference"),
        "Deployment inference/inference-service-nvidia": (True, "team-inference"),
    }
    gpu_npu = {
        "Job ml-team/cuda-training-job": (True, "team-ml-team"),
        "Job ml-team/npu-training-job": (True, "team-ml-team"),
    }
    mlu = {"Job ml-team/mlu-finetune-job": (True, "team-ml-team")}
    # chat's tracks: each in its own cluster in prod, both in staging's one
    chat_old = {"Deployment inference/chat-nvidia-shared": (True, "team-inference")}
    chat_new = {"Deployment inference/chat-hygon": (True, "team-inference")}
    expected = {
        "prod/domestic": {**mlu, **chat_new},
        "prod/main": {
            **services,
            **chat_old,
            **gpu_npu,
            "Job ml-team/finetune-job": (True, "team-ml-team"),
        },
        "staging": {
            **services,
            **chat_old,
            **chat_new,
            **gpu_npu,
            **mlu,
            # behind the 4-GPU job in its 4-GPU quota (SIM010 above)
            "Job ml-team/finetune-job": (False, "team-ml-team"),
            # the JobSet, after the Jobs, beside the services
            "JobSet ml-team/pretrain-jobset": (True, "team-ml-team"),
        },
    }
    assert [e.env for e in result.envs] == list(expected)
    for env in result.envs:
        admitted = {a["workload"]: (a["ok"], a["queue"]) for a in env.admissions}
        assert admitted == expected[env.env], env.admissions
        assert all(p.ok or p.waits for p in env.pods), env.pods
    # The JobSet's pods, made by JobSet's controller's child Jobs once Kueue admitted it.
    staging = result.envs[-1]
    assert any(
        p.workload.startswith("JobSet task ml-team/pretrain-jobset/") and p.ok for p in staging.pods
    ), staging.pods


# ---- the jobs: quota admission, a Volcano gang -------------------------------------------------


def test_a_quota_lower_than_a_job_needs_refuses_its_pods_even_alone(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MIG004 (quota below a job's devices) removed: the quota admission plugin refuses the
    job's pod beside the other jobs and alone (SIM008, with the API server's words, at the job's
    line); its row says how many pods were not created, and the quota counts none."""
    values = small_tree(tmp_path, teams={"ml": {**TEAM, "quota": {"nvidia": 2}}})
    monkeypatch.delitem(registry.CHECKS, "MIG004")
    result = recorded(request, "quota-refuses", values)
    (env,) = result.envs
    refusal = (
        r'Error creating: pods "train-[a-z0-9]{5}" is forbidden: exceeded quota: accelerators, '
        r"requested: requests\.nvidia\.com/gpu=4, used: requests\.nvidia\.com/gpu=0, "
        r"limited: requests\.nvidia\.com/gpu=2"
    )
    (row,) = env.pods
    assert (row.team, row.workload, row.pod, row.phase, row.node, row.ok, row.waits) == (
        "ml",
        "Job ml/train",
        "1 pod(s) not created",
        "",
        "",
        False,
        False,
    )
    assert re.fullmatch(refusal, row.reason), row.reason
    assert env.quotas == [
        {
            "team": "ml",
            "namespace": "ml",
            "quota": "accelerators",
            "hard": {"requests.nvidia.com/gpu": "2"},
            "used": {"requests.nvidia.com/gpu": "0"},
        }
    ]
    (refused,) = [f for f in result.findings if f.severity is Severity.ERROR]
    assert (refused.code, str(refused.location), refused.path, refused.envs) == (
        "SIM008",
        "values/teams/ml.yaml:6:3",
        "$.jobs.train",
        ("dev",),
    )
    assert (
        refused.hint == "the API server's reason says what refused the pods: quota or Pod Security"
    )
    assert re.fullmatch(
        f"Job ml/train: 1 of 1 pod\\(s\\) not created: {refusal} "
        r"\(even alone, with only the services beside it\)",
        refused.message,
    ), refused.message
    assert codes(result.findings, Severity.WARNING) == {"SIM011"}  # nfd-master is the site's


def test_a_volcano_gang_held_back_waits_for_the_other_jobs(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """tests/cluster/test_cluster.py's gang, judged: the gang's rows read Pending with the gang's
    reason and `waits`; the jobs before and after it run, one a node; alone, the gang runs: it
    waits for the others (SIM010, at its task's line), no error."""
    values = gang_tree(tmp_path)
    result = recorded(request, "volcano-gang", values)
    (env,) = result.envs
    reason = (
        "gang: only 2 of the 3 pods it needs at once (minAvailable) could be placed, so Volcano "
        "places none"
    )
    rows = [(p.workload, p.pod, p.phase, p.node, p.reason, p.ok, p.waits) for p in env.pods]
    gang = "Job (volcano) task b/beta/workers"
    assert rows[1:4] == [
        (gang, f"beta-workers-{i}", "Pending", "", reason, False, True) for i in range(3)
    ]
    ran = [(p.workload, p.phase, p.ok, p.waits) for p in (env.pods[0], env.pods[4])]
    assert ran == [("Job a/alpha", "Running", True, False), ("Job c/gamma", "Running", True, False)]
    assert {env.pods[0].node, env.pods[4].node} == {"g1", "g2"}
    (waits,) = [f for f in result.findings if f.code == "SIM010"]
    assert waits.message == (
        f"{gang} does not fully run beside the other jobs, but does alone beside the services: "
        f"it waits for them (pod beta-workers-0 stays Pending: {reason})"
    )
    assert (str(waits.location), waits.path, waits.severity) == (
        "values/teams/b.yaml:14:7",
        "$.jobs.beta.tasks.workers",
        Severity.WARNING,
    )
    assert (
        waits.hint
        == "the job waits for the team's other jobs: fine for a queue, or raise the quota"
    )
    assert result.errors == 0
    assert "MISMATCH" not in simreport.env_text(env)


# ---- the site's vendor stack (issue 41) ---------------------------------------------------------

# Two NVIDIA vendor files whose plugin and exporter the site's GPU Operator runs. Its operands
# tolerate what values say the site's install gives them: the chart's own toleration and the
# A100 pool's taint, not the H100 pool's.
SITE_OPERATOR_FLEET = {
    **SIM_FLEET,
    "platform": {
        "gpuOperator": {
            "provided": "site",
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {
                    "key": "feature.node.kubernetes.io/accelerator",
                    "operator": "Equal",
                    "value": "nvidia-gpu",
                    "effect": "NoSchedule",
                },
            ],
        }
    },
}
BY_OPERATOR = "devicePlugin: {provided: operator}\nexporter: {provided: operator}\n"
H100_BY_OPERATOR = (
    "catalog: nvidia\n"
    "nodeLabels: {accelerator: nvidia-h100}\n"
    "taints: [{key: feature.node.kubernetes.io/accelerator, value: nvidia-h100, "
    "effect: NoSchedule}]\n"
    "devicePlugin: {provided: operator}\n"
    # its own PodMonitor name beside nvidia's (NAME008)
    "exporter: {provided: operator, name: dcgm-exporter-h100}\n"
    "pools:\n"
    "  - {name: h100, model: H100, devicesPerNode: 8, nodes: [g2]}\n"
)


def test_the_operators_operands_are_modelled_and_miss_a_pool_whose_taint_they_do_not_tolerate(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The GPU Operator is the site's: its device plugin and exporter run, per vendor file, as
    stand-in DaemonSets with its pod labels and the tolerations values declare for the site's
    install. On the A100 node they land; on the H100 node, whose taint they do not tolerate,
    they do not, and each says so at its `provided` line."""
    files = {
        "fleet.yaml": yaml.safe_dump(SITE_OPERATOR_FLEET, sort_keys=False),
        "vendors/nvidia.yaml": yaml.safe_dump(KUEUE_NVIDIA) + BY_OPERATOR,
        "vendors/nvidia-h100.yaml": H100_BY_OPERATOR,
        "teams/ml.yaml": "quota: {nvidia: 2}\n",
    }
    values = tree(tmp_path, files, defaults=False)
    result = recorded(request, "site-operator", values)
    (env,) = result.envs
    rows = {p["daemonset"]: (p["nodes"], p["want"], p["ok"]) for p in env.plugins}
    assert {k: v for k, v in rows.items() if k.startswith("gpu-operator/")} == {
        "gpu-operator/nvidia-device-plugin-daemonset-nvidia": (["g1"], ["g1"], True),
        "gpu-operator/nvidia-dcgm-exporter-nvidia": (["g1"], ["g1"], True),
        "gpu-operator/nvidia-device-plugin-daemonset-nvidia-h100": ([], ["g2"], False),
        "gpu-operator/nvidia-dcgm-exporter-nvidia-h100": ([], ["g2"], False),
    }
    errors = sorted(
        (f.code, str(f.location), f.message)
        for f in result.findings
        if f.severity is Severity.ERROR
    )
    tail = (
        " is missing on g2 (pool nvidia-h100/h100): it does not tolerate "
        "feature.node.kubernetes.io/accelerator=nvidia-h100:NoSchedule; on the cluster its pods "
        "stay off these nodes once they carry the fleet's taints and labels"
    )
    assert errors == [
        (
            "SIM003",
            "values/vendors/nvidia-h100.yaml:4:26",
            "the NVIDIA GPU Operator's devicePlugin of vendor nvidia-h100 (stand-in "
            "gpu-operator/nvidia-device-plugin-daemonset-nvidia-h100)" + tail,
        ),
        (
            "SIM003",
            "values/vendors/nvidia-h100.yaml:5:22",
            "the NVIDIA GPU Operator's exporter of vendor nvidia-h100 (stand-in "
            "gpu-operator/nvidia-dcgm-exporter-nvidia-h100)" + tail,
        ),
    ]
    # Neither vendor file renders a plugin or exporter of its own.
    assert not [d for d in rows if d.startswith("accelerator-")]


# ---- the site's hardware (issue 44) ------------------------------------------------------------

# A site's HGX H100 server: three of its functions as lspci -nn lists them (an ASPEED BMC, a
# ConnectX-7 and one H100 SXM5), and its shape: 192 CPUs, 900Gi, 8 InfiniBand ports.
HGX_H100 = """\
description: our HGX H100 8-GPU
accelerator: {vendor: nvidia, model: H100, count: 8}
sources: ["lspci -nn of gpu-node-17"]
devices:
  - {class: "0300", vendor: "1a03", device: "2000", subsystem_vendor: "1a03", subsystem_device: "2000"}
  - {class: "0207", vendor: "15b3", device: "1021", subsystem_vendor: "15b3", subsystem_device: "1021"}
  - {class: "0302", vendor: "10de", device: "2330", subsystem_vendor: "10de", subsystem_device: "16c1"}
node:
  cpu: 192
  memory: 900Gi
  resources: {rdma/ib: 8}
"""


def test_a_pool_on_the_sites_own_server_type_and_shape_takes_a_job_that_needs_all_of_it(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The 8xH100 worker of values/inventories/hgx-h100.yaml: nfd-master labels it from its
    inventory, and a job asking for its 8 GPUs, 800Gi and 8 rdma/ib is placed on it; nothing
    says an inventory is missing or a resource is short."""
    nvidia = {
        "pools": [
            {
                "name": "h100",
                "model": "H100",
                "devicesPerNode": 8,
                "nodes": ["h1"],
                "serverType": "hgx-h100",
            }
        ]
    }
    train = {
        **TEAM["jobs"]["train"],
        "devices": 8,
        "resources": {
            "requests": {"cpu": "96", "memory": "800Gi", "rdma/ib": 8},
            "limits": {"rdma/ib": 8},
        },
    }
    team = {**TEAM, "quota": {"nvidia": 8}, "jobs": {"train": train}}
    values = small_tree(tmp_path, vendors={"nvidia": nvidia}, teams={"ml": team})
    (values / "inventories").mkdir()
    (values / "inventories/hgx-h100.yaml").write_text(HGX_H100)
    result = recorded(request, "site-hardware", values)
    (env,) = result.envs
    (h1,) = [n for n in env.nodes if n.name == "h1"]
    assert (h1.ok, h1.labels["feature.node.kubernetes.io/gpu-model"]) == (True, "H100")
    assert [(p.workload, p.node, p.phase, p.ok) for p in env.pods] == [
        ("Job ml/train", "h1", "Running", True)
    ]
    assert codes(result.findings) == set()
    assert [f.code for f in result.findings if f.code in ("SIM004", "SIM009")] == []


def test_a_pool_without_an_inventory_is_one_warning_at_the_pool_and_no_cascade(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """H200s with no inventory anywhere: their nodes carry the pool's labels and taints as
    declared, the plugin runs there, the probe stays off, the job runs; one SIM009 at the pool
    says where to declare the inventory, and no SIM001-SIM007 follows."""
    nvidia = {"pools": [{"name": "h200", "model": "H200", "devicesPerNode": 4, "nodes": ["x1"]}]}
    values = small_tree(tmp_path, vendors={"nvidia": nvidia})
    result = recorded(request, "no-inventory", values)
    (env,) = result.envs
    (x1,) = [n for n in env.nodes if n.name == "x1"]
    assert (x1.ok, x1.labels["feature.node.kubernetes.io/gpu-model"], x1.taints) == (
        True,
        "H200",
        ["feature.node.kubernetes.io/accelerator=nvidia-gpu:NoSchedule"],
    )
    assert [p["landed"] for p in env.probes if p["node"] == "x1"] == [False]
    assert [(p["daemonset"], p["nodes"], p["ok"]) for p in env.plugins if p["vendor"]] == [
        ("accelerator-plugins/nvidia-device-plugin", ["x1"], True),
        ("accelerator-exporters/dcgm-exporter", ["x1"], True),
    ]
    assert [(p.workload, p.node, p.ok) for p in env.pods] == [("Job ml/train", "x1", True)]
    (said,) = [f for f in result.findings if f.code == "SIM009"]
    assert (str(said.location), said.path, said.severity) == (
        "values/vendors/nvidia.yaml:2:3",
        "$.pools[0]",
        Severity.WARNING,
    )
    assert said.hint == (
        "declare the server's PCI functions in values/inventories/<server type>.yaml "
        "(accelerator: the vendor and this model) and name it in the pool's serverType "
        "(docs/node-config.md)"
    )
    assert codes(result.findings) == set()
    assert codes(result.findings, Severity.WARNING) == {"SIM009", "SIM011"}


def test_the_quotas_are_read_again_while_the_jobsets_run(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Team llm's JobSet runs its 4-GPU pod (JobSet's controller makes its child Job) after the
    Jobs: its quota, read again while it runs, counts its 4 GPUs as used; read while the Jobs
    ran (none here), it counts none. The report has a table for each, each saying when."""
    pretrain = {
        "kind": "jobset",
        "images": {"nvidia": "registry.example.com/train:cuda"},
        "tasks": {"gpu": {"vendor": "nvidia", "devices": 4, "replicas": 1}},
    }
    team = {"owners": ["llm@example.com"], "quota": {"nvidia": 4}, "jobs": {"pretrain": pretrain}}
    fleet = {**SIM_FLEET, "platform": {"jobset": {"provided": "fleet"}}}
    values = small_tree(tmp_path, fleet=fleet, teams={"llm": team})
    result = recorded(request, "jobset-quota", values)
    (env,) = result.envs
    assert [(p.workload, p.node, p.phase) for p in env.pods] == [
        ("JobSet task llm/pretrain/gpu", "gpu-1", "Running")
    ]
    row = {"team": "llm", "namespace": "llm", "quota": "accelerators"}
    hard = {"requests.nvidia.com/gpu": "4"}
    assert env.quotas == [{**row, "hard": hard, "used": {"requests.nvidia.com/gpu": "0"}}]
    assert env.jobset_quotas == [{**row, "hard": hard, "used": {"requests.nvidia.com/gpu": "4"}}]
    text = simreport.env_text(env)
    assert (
        " quota used / hard per team, while the services and Jobs ran\n"
        "  team  namespace  resource                 used  hard\n"
        "  llm   llm        requests.nvidia.com/gpu  0     4\n"
        " quota used / hard per team, while the services and JobSets ran\n"
        "  team  namespace  resource                 used  hard\n"
        "  llm   llm        requests.nvidia.com/gpu  4     4\n"
    ) in text
