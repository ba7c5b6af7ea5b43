"""Scheduling (issue 12, issue 8 items 7 and 8): queues before jobs, one accounting per backend,
the Volcano and kube-scheduler configurations, Kueue flavors, placement preferences and topology
refusals; each check fed a values tree that breaks it, with its code at file:line."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from generator.builders import scheduling
from generator.builders.common import SYNC_WAVE
from generator.builders.workloads import team_objects
from generator.errors import Location
from generator.policy.manifest import run_rules
from generator.render.layout import Unit
from generator.values import loader as values
from tests.example import use_backend
from tests.fixtures import (
    assert_units_build_exactly,
    by_name,
    findings,
    kustomize_build,
    lines,
    plugins,
    render_into,
    tool,
    volcano_conf,
)

Write = Callable[[str, str], Path]
Obj = dict[str, Any]


def coded(values_dir: Path, code: str) -> list[str]:
    """The formatted findings with one code."""
    return [g for g in lines(values_dir) if f" {code} " in g]


def _wave(obj: Obj) -> int:
    return int((obj["metadata"].get("annotations") or {}).get(SYNC_WAVE, "0"))


# ---- issue 8 item 8: queues sync before the jobs that name them -------------------------------


@pytest.mark.parametrize("backend", ["volcano", "kueue"])
def test_queues_sync_a_wave_before_the_workloads_that_use_them(
    backend: str, values_dir: Path, write: Write, tmp_path: Path
) -> None:
    use_backend(values_dir, write, backend)
    docs = kustomize_build(render_into(values_dir, tmp_path / "out") / "overlays/prod/team-ml-team")
    queues = [d for d in docs if d["kind"] in ("Queue", "ClusterQueue", "LocalQueue")]
    workloads = [d for d in docs if d["kind"] in ("Job", "Deployment")]
    namespaces = [d for d in docs if d["kind"] == "Namespace"]
    assert queues and workloads
    assert max(_wave(q) for q in queues) < min(_wave(w) for w in workloads)
    # LocalQueues are namespaced: their namespace comes first.
    assert max(_wave(n) for n in namespaces) < min(_wave(q) for q in queues)
    if backend == "volcano":
        mixed = by_name(docs, "Job")["mixed-training-job"]
        assert mixed["spec"]["queue"] == "team-ml-team"
        assert _wave(by_name(docs, "Queue")["team-ml-team"]) < _wave(mixed)


# ---- issue 8 item 7: one accounting per backend -------------------------------------------------


@pytest.mark.parametrize(
    ("backend", "quota_line"),
    [("quota", "8"), ("volcano", "11"), ("kueue", "11")],
)
def test_one_accounting_per_backend(
    backend: str, quota_line: str, values_dir: Path, write: Write, tmp_path: Path
) -> None:
    use_backend(values_dir, write, backend)
    ml = (values_dir / "teams/ml-team.yaml").read_text()
    write("teams/ml-team.yaml", ml + "borrowing: {nvidia: 3}\n")
    out = render_into(values_dir, tmp_path / "out")
    ml_docs = kustomize_build(out / "overlays/prod/team-ml-team")
    inf_docs = kustomize_build(out / "overlays/prod/team-inference")
    hard = by_name(ml_docs, "ResourceQuota")["accelerators"]["spec"]["hard"]
    # With a queue the quota is the queue's ceiling (8 own + 3 borrowed): it never refuses a
    # pod the queue admitted. Without one it is the team's quota.
    assert hard["requests.nvidia.com/gpu"] == quota_line
    deployment = by_name(inf_docs, "Deployment")["inference-service-nvidia"]
    template = deployment["spec"]["template"]
    queue_label = deployment["metadata"]["labels"].get("kueue.x-k8s.io/queue-name")
    annotations = template["metadata"].get("annotations") or {}
    if backend == "volcano":
        queue = by_name(ml_docs, "Queue")["team-ml-team"]["spec"]
        assert queue["capability"]["nvidia.com/gpu"] == 11
        assert queue["deserved"]["nvidia.com/gpu"] == 8
        assert queue["capability"]["amd.com/gpu"] == 0  # no quota: no devices
        # Inference is scheduled by Volcano in the team's queue, so the queue sees it too.
        assert template["spec"]["schedulerName"] == "volcano"
        assert annotations == {"scheduling.volcano.sh/queue-name": "team-inference"}
        assert queue_label is None
    elif backend == "kueue":
        cq = by_name(ml_docs, "ClusterQueue")["team-ml-team"]["spec"]
        groups = {g["coveredResources"][0]: g["flavors"] for g in cq["resourceGroups"]}
        assert groups["nvidia.com/gpu"] == [
            {
                "name": "nvidia-a100",
                "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8, "borrowingLimit": 3}],
            }
        ]
        # Deployment integration: Kueue admits inference pods against the team's queue.
        assert queue_label == "team-inference"
        assert "schedulerName" not in template["spec"]
        cuda = by_name(ml_docs, "Job")["cuda-training-job"]
        assert cuda["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-ml-team"
    else:
        assert queue_label is None and not annotations
        assert "schedulerName" not in template["spec"]
        assert not by_name(ml_docs, "Queue") and not by_name(ml_docs, "ClusterQueue")


def test_borrowing_and_nominal_quota_fill_the_pools_in_order(
    values_dir: Path, write: Write
) -> None:
    use_backend(values_dir, write, "kueue")
    write(
        "vendors/nvidia.yaml",
        "pools:\n  - {name: h100, model: H100, devicesPerNode: 8, nodeCount: 1}\n"
        "  - {name: a100, model: A100, devicesPerNode: 4, nodeCount: 2}\n",
    )
    ml = (values_dir / "teams/ml-team.yaml").read_text()
    write("teams/ml-team.yaml", ml.replace("nvidia: 8", "nvidia: 10") + "borrowing: {nvidia: 9}\n")
    view = values.load(values_dir).envs["prod"]
    team = next(t for t in view.teams if t.name == "ml-team")
    cq = next(o for o in team_objects(view, team)[0] if o["kind"] == "ClusterQueue")
    [nvidia] = [
        g for g in cq["spec"]["resourceGroups"] if g["coveredResources"] == ["nvidia.com/gpu"]
    ]
    assert [
        (f["name"], f["resources"][0]["nominalQuota"], f["resources"][0]["borrowingLimit"])
        for f in nvidia["flavors"]
    ] == [("nvidia-h100", 8, 8), ("nvidia-a100", 2, 1)]


# ---- Kueue flavors and what Kueue must cover -----------------------------------------------------


def test_kueue_flavors_per_pool_and_cpu_memory_covered(
    values_dir: Path, write: Write, tmp_path: Path
) -> None:
    use_backend(values_dir, write, "kueue")
    inf = (values_dir / "teams/inference.yaml").read_text()
    write(
        "teams/inference.yaml",
        inf.replace(
            "    vendorMounts: false\n",
            "    vendorMounts: false\n    resources: {requests: {cpu: 500m, memory: 1Gi}}\n",
        ),
    )
    out = render_into(values_dir, tmp_path / "out")
    flavors = by_name(kustomize_build(out / "overlays/prod/scheduling"), "ResourceFlavor")
    assert set(flavors) == {
        "nvidia-a100",
        "ascend-910b",
        "amd-mi250x",
        "hygon-z100l",
        "cambricon-mlu370",
        "general",
    }
    assert flavors["hygon-z100l"]["spec"] == {
        "nodeLabels": {
            "feature.node.kubernetes.io/accelerator": "hygon-dcu",
            "feature.node.kubernetes.io/dcu-model": "Z100L",
        },
        "nodeTaints": [
            {
                "key": "feature.node.kubernetes.io/accelerator",
                "value": "hygon-dcu",
                "effect": "NoSchedule",
            }
        ],
        "tolerations": [
            {
                "key": "feature.node.kubernetes.io/accelerator",
                "operator": "Equal",
                "value": "hygon-dcu",
                "effect": "NoSchedule",
            }
        ],
    }
    assert flavors["general"]["spec"] == {}
    inf_docs = kustomize_build(out / "overlays/prod/team-inference")
    cq = by_name(inf_docs, "ClusterQueue")["team-inference"]["spec"]
    # prod runs inference-service dual-run: 2 nvidia + 2 ascend replicas, each 500m and 1Gi.
    assert cq["resourceGroups"][-1] == {
        "coveredResources": ["cpu", "memory"],
        "flavors": [
            {
                "name": "general",
                "resources": [
                    {"name": "cpu", "nominalQuota": "2", "borrowingLimit": 0},
                    {"name": "memory", "nominalQuota": "4Gi", "borrowingLimit": 0},
                ],
            }
        ],
    }
    assert {ns["metadata"]["name"] for ns in by_name(inf_docs, "LocalQueue").values()} == {
        "team-inference"
    }


@pytest.mark.parametrize(
    ("text", "parsed", "shown"),
    [
        ("500m", "1/2", "500m"),
        ("2Gi", "2147483648", "2Gi"),
        ("1.5", "3/2", "1500m"),
        ("1e3", "1000", "1000"),
        (3, "3", "3"),
        ("12Mi", "12582912", "12Mi"),
    ],
)
def test_quantities(text: Any, parsed: str, shown: str) -> None:
    from fractions import Fraction

    value = scheduling.parse_quantity(text)
    assert value == Fraction(parsed)
    assert scheduling.format_quantity(value) == shown
    assert scheduling.parse_quantity("12Qi") is None


# ---- the Volcano scheduler configuration ---------------------------------------------------------


def test_volcano_binpack_weights_per_vendor_resource(
    values_dir: Path, write: Write, tmp_path: Path
) -> None:
    use_backend(values_dir, write, "volcano", "  volcano: {binpackWeight: 7}\n")
    nvidia = (values_dir / "vendors/nvidia.yaml").read_text()
    write("vendors/nvidia.yaml", nvidia + "binpackWeight: 3\n")
    amd = (values_dir / "vendors/amd.yaml").read_text()
    write("vendors/amd.yaml", amd + "binpackWeight: 40\n")
    conf = volcano_conf(render_into(values_dir, tmp_path / "out"))
    binpack = plugins(conf)["binpack"]["arguments"]
    assert binpack == {
        "binpack.weight": 7,
        "binpack.cpu": 1,
        "binpack.memory": 1,
        "binpack.resources": "amd.com/gpu, cambricon.com/mlu, huawei.com/Ascend910, nvidia.com/gpu",
        # AMD (40) and Hygon (catalog 10) share amd.com/gpu: the larger weight.
        "binpack.resources.amd.com/gpu": 40,
        "binpack.resources.cambricon.com/mlu": 10,
        "binpack.resources.huawei.com/Ascend910": 10,
        "binpack.resources.nvidia.com/gpu": 3,
    }
    assert all(isinstance(v, int) for k, v in binpack.items() if k != "binpack.resources")
    assert plugins(conf)["nodeorder"]["arguments"]["leastrequested.weight"] == 0
    assert conf["actions"] == "enqueue, allocate, backfill, reclaim"
    assert list(plugins(conf))[:2] == ["priority", "gang"]
    assert "capacity" in plugins(conf) and "proportion" not in plugins(conf)
    assert "resourcequota" in plugins(conf)


def test_volcano_proportion_policy_has_no_deserved_and_no_reclaim(
    values_dir: Path, write: Write, tmp_path: Path
) -> None:
    use_backend(values_dir, write, "volcano", "  volcano: {queuePolicy: proportion}\n")
    out = render_into(values_dir, tmp_path / "out")
    conf = volcano_conf(out)
    assert conf["actions"] == "enqueue, allocate, backfill"
    assert "proportion" in plugins(conf) and "capacity" not in plugins(conf)
    queue = by_name(kustomize_build(out / "overlays/prod/team-inference"), "Queue")[
        "team-inference"
    ]
    assert "deserved" not in queue["spec"]
    assert queue["spec"]["capability"] == {
        "amd.com/gpu": 8,  # hygon: 8
        "cambricon.com/mlu": 0,
        "huawei.com/Ascend910": 4,
        "nvidia.com/gpu": 4,
    }


# ---- SCH001: queues as built carry the team's quota ----------------------------------------------


@pytest.mark.parametrize("backend", ["volcano", "kueue"])
def test_queue_that_does_not_carry_the_quota_is_found(
    backend: str, values_dir: Path, write: Write
) -> None:
    use_backend(values_dir, write, backend)
    view = values.load(values_dir).envs["prod"]
    team = next(t for t in view.teams if t.name == "ml-team")
    objs = [o for o in team_objects(view, team)[0] if o["kind"] in ("Queue", "ClusterQueue")]
    unit = Unit("prod", "team-ml-team", "overlays/prod/team-ml-team", tuple(objs), {})
    assert [f.code for f in run_rules(view, unit, objs) if f.code == "SCH001"] == []
    [queue] = objs
    if backend == "volcano":
        queue["spec"]["capability"]["nvidia.com/gpu"] = 80
        want = "capability of nvidia.com/gpu is 80, the team's quota gives 8"
    else:
        [group] = [
            g
            for g in queue["spec"]["resourceGroups"]
            if g["coveredResources"] == ["nvidia.com/gpu"]
        ]
        group["flavors"][0]["resources"][0]["nominalQuota"] = 80
        want = "nominal quota of nvidia.com/gpu is 80, the team's quota gives 8"
    found = [f for f in run_rules(view, unit, objs) if f.code == "SCH001"]
    assert found and want in found[0].message
    assert {f.location for f in found} == {Location("values/teams/ml-team.yaml", 4, 1)}


# ---- kube-scheduler packing profile ---------------------------------------------------------------


def _kube_scheduler_config(out: Path) -> tuple[Obj, str]:
    [cm] = by_name(kustomize_build(out / "overlays/prod/scheduling"), "ConfigMap").values()
    text = cm["data"]["kube-scheduler-config.yaml"]
    return yaml.safe_load(text), text


def schedcheck(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "kube-scheduler-config.yaml"
    path.write_text(text)
    return subprocess.run(
        [str(tool("schedcheck")), str(path)], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("backend", ["quota", "kueue"])
def test_kube_scheduler_packing_profile_is_what_kube_scheduler_accepts(
    backend: str, values_dir: Path, write: Write, tmp_path: Path
) -> None:
    use_backend(values_dir, write, backend, "  kubeScheduler: {packing: true}\n")
    write(
        "vendors/nvidia.yaml",
        (values_dir / "vendors/nvidia.yaml").read_text() + "binpackWeight: 100\n",
    )
    out = render_into(values_dir, tmp_path / "out")
    config, text = _kube_scheduler_config(out)
    [profile] = config["profiles"]
    assert profile["schedulerName"] == "default-scheduler"
    args = {p["name"]: p["args"] for p in profile["pluginConfig"]}
    assert set(args) == {"NodeResourcesFit", "PodTopologySpread"}
    # Packing must outweigh what spreads: no system-default topology spread, no balancing score.
    assert args["PodTopologySpread"] == {"defaultingType": "List"}
    assert profile["plugins"] == {
        "score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}
    }
    strategy = args["NodeResourcesFit"]["scoringStrategy"]
    assert strategy["type"] == "MostAllocated"
    assert {r["name"]: r["weight"] for r in strategy["resources"]} == {
        "cpu": 1,
        "memory": 1,
        "amd.com/gpu": 10,
        "cambricon.com/mlu": 10,
        "huawei.com/Ascend910": 10,
        "nvidia.com/gpu": 100,
    }
    # The kube-scheduler's own decoding and validation (tools/schedcheck) accept it ...
    ok = schedcheck(tmp_path, text)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # ... and refuse what kube-scheduler would refuse at startup.
    bad = schedcheck(tmp_path, text.replace("weight: 100", "weight: 101"))
    assert bad.returncode == 1
    assert "resource weight of nvidia.com/gpu not in valid range (0, 100]" in bad.stdout
    typo = schedcheck(tmp_path, text.replace("scoringStrategy", "scoringStrategies"))
    assert typo.returncode == 1 and 'unknown field "scoringStrategies"' in typo.stdout


def test_second_scheduler_profile_is_named_on_the_pods(
    values_dir: Path, write: Write, tmp_path: Path
) -> None:
    use_backend(
        values_dir,
        write,
        "quota",
        "  kubeScheduler: {packing: true, schedulerName: accel-packing, "
        "kubeconfig: /etc/kubernetes/scheduler.conf}\n",
    )
    out = render_into(values_dir, tmp_path / "out")
    config, text = _kube_scheduler_config(out)
    assert config["profiles"][0]["schedulerName"] == "accel-packing"
    assert config["leaderElection"]["resourceName"] == "accel-packing"
    assert config["clientConnection"] == {"kubeconfig": "/etc/kubernetes/scheduler.conf"}
    assert schedcheck(tmp_path, text).returncode == 0
    ml = kustomize_build(out / "overlays/prod/team-ml-team")
    assert by_name(ml, "Job")["cuda-training-job"]["spec"]["template"]["spec"]["schedulerName"] == (
        "accel-packing"
    )


def test_no_packing_profile_by_default_nor_under_volcano(
    values_dir: Path, write: Write, tmp_path: Path
) -> None:
    for env in ("prod", "staging"):  # the example's environments turn packing on
        text = (values_dir / f"environments/{env}.yaml").read_text()
        write(f"environments/{env}.yaml", text.replace("packing: true", "packing: false"))
    view = values.load(values_dir).envs["prod"]
    assert scheduling.build(view) == []
    use_backend(values_dir, write, "volcano", "  kubeScheduler: {packing: true}\n")
    view = values.load(values_dir).envs["prod"]
    assert [c.name for c in scheduling.build(view)] == ["scheduling/volcano"]


@pytest.mark.parametrize("backend", ["quota", "volcano", "kueue"])
def test_example_fleet_renders_and_builds_under_each_backend(
    backend: str, values_dir: Path, write: Write, tmp_path: Path
) -> None:
    use_backend(values_dir, write, backend, "  kubeScheduler: {packing: true}\n")
    assert assert_units_build_exactly(tmp_path / "out", values_dir) >= 12


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


def test_preferred_pool_with_a_fallback_is_preferred_node_affinity(
    values_dir: Path, write: Write
) -> None:
    write("vendors/nvidia.yaml", H100)
    write("teams/demo.yaml", PREFER)
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
    # Only the seed's deliberate warnings (overcommit, Ascend's unprefixed label).
    assert [g for g in lines(values_dir) if "CAP001" not in g and "NODE003" not in g] == []


def test_fallback_pool_counts_in_the_worst_case_capacity(values_dir: Path, write: Write) -> None:
    write("vendors/nvidia.yaml", H100)
    # 4 pods x 4 devices may all land on the A100 pool (8 devices) in the worst case.
    write(
        "teams/demo.yaml",
        PREFER.replace("quota: {nvidia: 8}", "quota: {nvidia: 16}").replace(
            "    devices: 4\n", "    devices: 4\n    parallelism: 4\n"
        ),
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
    write("teams/demo.yaml", PREFER)
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
    job: str, want: str, values_dir: Path, write: Write
) -> None:
    write("vendors/nvidia.yaml", H100)
    write(
        "teams/demo.yaml",
        "quota: {nvidia: 8}\njobs:\n  train:\n    vendor: nvidia\n    images: {nvidia: x:1}\n"
        + job,
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
    devices: int, model: str, refused: bool, values_dir: Path, write: Write
) -> None:
    write("vendors/ascend.yaml", ASCEND_910)
    write("teams/demo.yaml", _ascend_job(devices, model))
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


def test_a_pod_larger_than_any_node_of_its_pool_is_refused(values_dir: Path, write: Write) -> None:
    write(
        "teams/demo.yaml",
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


def test_volcano_job_under_kueue_is_refused(values_dir: Path, write: Write) -> None:
    fleet = (values_dir / "fleet.yaml").read_text()
    write("fleet.yaml", fleet + "scheduling:\n  backend: kueue\n")
    got = coded(values_dir, "SCH002")
    assert got[0].startswith(
        "values/teams/ml-team.yaml:28:11: SCH002 job 'mixed-training-job' is a Volcano Job, "
        "but the backend is kueue"
    )
    assert got[0].endswith(
        "(at $.jobs['mixed-training-job'].kind); use scheduling.backend: volcano in "
        "values/fleet.yaml, or write the job as batch/v1 Jobs (vendor, devices, parallelism)"
    )


def test_borrowing_without_a_queue_backend_is_a_warning(values_dir: Path, write: Write) -> None:
    ml = (values_dir / "teams/ml-team.yaml").read_text()
    write("teams/ml-team.yaml", ml + "borrowing: {nvidia: 2}\n")
    [got] = [f for f in findings(values_dir) if f.code == "SCH007"]
    assert got.severity.value == "warning"
    assert got.format().startswith(
        "values/teams/ml-team.yaml:42:21: SCH007 warning: team 'ml-team' may borrow 2 nvidia "
        "devices, but backend 'quota' has no queue that lends"
    )
