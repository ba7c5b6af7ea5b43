"""ADM001 (issue 21): JobSet's and LeaderWorkerSet's own admission webhooks (sigs.k8s.io/jobset
v0.11.1, sigs.k8s.io/lws v0.8.0 pkg/webhooks, run by generator/toolchain/gotools/workloads) on
the JobSets and LeaderWorkerSets as kustomize builds them, each refusal at the values line behind
it. The tool is the real one; nothing here copies their rules."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from generator.builders import scheduling
from generator.findings import Location
from generator.validate.stages import workloads
from generator.values import loader as values
from generator.vocab.units import Unit
from tests.fixtures import (
    ASCEND_910B,
    CAMBRICON_MLU370,
    JOBSET_FLEET,
    JOBSET_TEAM,
    LWS_TEAM,
    PROD_FLEET,
    TRAINJOB_FLEET,
    TRAINJOB_TEAM,
    build_of,
    invoke,
    kustomize_build,
    tool,
    tree,
)

# ADM001's hints, written out: a changed hint fails the tests.
TASKS_HINT = (
    "a shorter job or task name: the names of a JobSet's Jobs and pods "
    "(<job>-<task>-<index>...) must fit in 63 characters"
)
SUCCESS_POLICY_HINT = "targetReplicatedJobs names tasks of this job"
GROUP_SIZE_HINT = "set the track's groupSize to what LeaderWorkerSet accepts"
ENV_HINT = (
    "leave out what the runtime sets itself (torchrun's PET_* variables: Trainer sets "
    "them from numNodes and numProcPerNode)"
)
RUNTIME_HINT = "name a runtime the fleet's Kubeflow Trainer installs (docs/workloads.md)"
OTHER_HINT = "fix the values that render this object"

# ---- the tool on hand-written objects -----------------------------------------------------------

JOBSET = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, namespace: ml}
spec:
  %(policy)s
  replicatedJobs:
    - name: w
      replicas: 1
      template:
        spec:
          template:
            spec:
              containers: [{name: c, image: i}]
"""
LWS = """\
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: l, namespace: ml}
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: %(size)s
    workerTemplate:
      spec:
        containers: [{name: c, image: i}]
"""


def workloadcheck(tmp_path: Path, *docs: str, crds: bool = True) -> list[dict[str, Any]]:
    path = tmp_path / "objects.yaml"
    path.write_text("---\n".join(docs), encoding="utf-8")
    folder = workloads.crd_folder()
    assert folder is not None  # `tools install` lays out the pinned CRDs
    args = [str(tool("workloadcheck")), *([f"-crds={folder}"] if crds else []), str(path)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def messages(result: dict[str, Any]) -> list[str]:
    return [e["message"] for e in result["errors"]]


def test_the_webhooks_accept_what_jobset_and_leaderworkerset_accept(tmp_path: Path) -> None:
    policy = "failurePolicy: {maxRestarts: 3, rules: [{name: r, action: FailJobSet}]}"
    other = "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: Other\nmetadata: {name: o}\n"
    namespace = "apiVersion: v1\nkind: Namespace\nmetadata: {name: ml}\n"
    out = workloadcheck(tmp_path, JOBSET % {"policy": policy}, LWS % {"size": 2}, other, namespace)
    assert [(r["kind"], r.get("webhook", ""), r["checked"], r["allowed"]) for r in out] == [
        ("JobSet", "JobSetWebhook", True, True),
        ("LeaderWorkerSet", "LeaderWorkerSetWebhook", True, True),
        ("Other", "", False, True),  # no webhook decides it; a Namespace is not listed
    ]
    assert [(r["module"], r["version"]) for r in out[:2]] == [
        ("sigs.k8s.io/jobset", "v0.11.1"),
        ("sigs.k8s.io/lws", "v0.8.0"),
    ]


def test_the_crds_defaults_apply_before_the_webhook_as_the_api_server_applies_them(
    tmp_path: Path,
) -> None:
    # A replicated job's groupName defaults to "default" in the CRD's schema; JobSet's webhook
    # refuses an empty one. Without the CRD the object would be refused for what the API server
    # fills in.
    doc = JOBSET % {"policy": ""}
    (defaulted,) = workloadcheck(tmp_path, doc)
    assert defaulted["allowed"]
    (as_written,) = workloadcheck(tmp_path, doc, crds=False)
    assert [e["field"] for e in as_written["errors"]] == ["spec.replicatedJobs[0].groupName"]


def test_a_failure_policy_and_a_group_size_the_webhooks_refuse(tmp_path: Path) -> None:
    policy = (
        "failurePolicy: {rules: [{name: r, action: FailJobSet, "
        "onJobFailureReasons: [BackoffLimitExceded], targetReplicatedJobs: [nope]}]}"
    )
    js, group = workloadcheck(tmp_path, JOBSET % {"policy": policy}, LWS % {"size": 0})
    assert messages(js) == [
        "invalid replicatedJob name 'nope' in failure policy does not appear in "
        ".spec.ReplicatedJobs",
        "invalid job failure reason 'BackoffLimitExceded' in failure policy is not a "
        "recognized job failure reason",
    ]
    assert not js["allowed"]
    assert messages(group) == [
        "spec.leaderWorkerTemplate.size: Invalid value: 0: size must be equal or greater than 1"
    ]


def test_unreadable_input_is_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("kind: [\n", encoding="utf-8")
    proc = subprocess.run([str(tool("workloadcheck")), str(path)], capture_output=True, text=True)
    assert proc.returncode == 2 and "bad.yaml" in proc.stderr
    assert subprocess.run([str(tool("workloadcheck"))], capture_output=True).returncode == 2


# ---- validate: ADM001 at the values line --------------------------------------------------------


def validate_json(values_dir: Path) -> tuple[int, dict[str, Any]]:
    assert invoke("render", "--values", str(values_dir)).exit_code == 0
    args = ["validate", "--values", str(values_dir), "--no-drift", "--output", "json"]
    res = invoke(*args, "--no-cache")
    return res.exit_code, json.loads(res.output)


def coded(doc: dict[str, Any], code: str) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["code"] == code]


def workload_tree(tmp_path: Path, team: str) -> Path:
    """Team llm (`team`) on NVIDIA, Cambricon and Ascend, with Kueue, JobSet and
    LeaderWorkerSet installed by the fleet; prod alone."""
    fleet = {
        **yaml.safe_load(PROD_FLEET),
        **JOBSET_FLEET,
        "platform": {**JOBSET_FLEET["platform"], "lws": {"provided": "fleet"}},
    }
    nvidia = {
        "pools": [{"name": "a100", "model": "A100", "devicesPerNode": 8, "nodes": ["g1", "g2"]}]
    }
    files = {
        "vendors/nvidia.yaml": yaml.safe_dump(nvidia),
        "vendors/cambricon.yaml": CAMBRICON_MLU370,
        "vendors/ascend.yaml": ASCEND_910B.replace("nodes: [npu-1]", "nodes: [npu-1, npu-2]"),
        "teams/llm.yaml": team,
    }
    fleet_text = yaml.safe_dump(fleet, sort_keys=False)
    return tree(tmp_path / "repo", files, fleet=fleet_text, defaults=False)


def test_a_jobset_and_a_group_the_values_give_pass_their_webhooks(tmp_path: Path) -> None:
    for name, team in (("jobset", JOBSET_TEAM), ("lws", LWS_TEAM)):
        values_dir = workload_tree(tmp_path / name, team)
        code, doc = validate_json(values_dir)
        assert (code, coded(doc, "ADM001")) == (0, []), doc["findings"]
        built = kustomize_build(values_dir.parent / "overlays" / "prod" / "team-llm")
        docs = workloads.workload_docs(built)
        # ... and the webhook had something to check.
        assert [d["kind"] for d in docs] == ["JobSet" if name == "jobset" else "LeaderWorkerSet"]


def test_a_failure_reason_jobset_refuses_is_reported_at_the_failure_policy(
    tmp_path: Path,
) -> None:
    team = JOBSET_TEAM.replace(
        "failurePolicy: {maxRestarts: 3}",
        "failurePolicy:\n      maxRestarts: 3\n      rules:\n"
        "        - {name: oom, action: FailJobSet, onJobFailureReasons: [BackoffLimitExceded]}",
    )
    values_dir = workload_tree(tmp_path, team)
    code, doc = validate_json(values_dir)
    assert code == 1
    (found,) = coded(doc, "ADM001")
    assert (found["file"], found["line"], found["path"]) == (
        "values/teams/llm.yaml",
        10,
        "$.jobs.pretrain.failurePolicy",
    )
    assert found["message"] == (
        "JobSet llm/pretrain: JobSet v0.11.1's admission webhook would refuse it: invalid job "
        "failure reason 'BackoffLimitExceded' in failure policy is not a recognized job failure "
        "reason"
    )
    assert "BackoffLimitExceeded" in found["hint"]


def test_names_too_long_and_a_success_target_that_is_no_task_at_their_lines(
    tmp_path: Path,
) -> None:
    """Refusals the values can reach: the names of the Jobs and pods JobSet makes from a long job
    and task name (at the task), and a success policy naming no task (at successPolicy)."""
    job = "pretrain-a-very-long-name-for-a-training-job"
    task = "gpu-workers-of-the-pretrain"
    team = (
        JOBSET_TEAM.replace("pretrain:", f"{job}:")
        .replace("targetReplicatedJobs: [gpu]", "targetReplicatedJobs: [gpus]")
        .replace("gpu: {vendor", f"{task}: {{vendor")
    )
    code, doc = validate_json(workload_tree(tmp_path, team))
    assert code == 1
    got = sorted(
        (f["line"], f["path"], f["message"].split(": ", 2)[-1]) for f in coded(doc, "ADM001")
    )
    at_task = f"$.jobs['{job}'].tasks['{task}']"
    too_long = (
        f'spec.replicatedJobs[0].name: Invalid value: "{job}-{task}-0": JobSet name is too long, '
    )
    assert got == [
        (7, at_task, too_long + "job names generated for this JobSet will exceed 63 characters"),
        (7, at_task, too_long + "pod names generated for this JobSet will exceed 63 characters"),
        (
            9,
            f"$.jobs['{job}'].successPolicy",
            "invalid replicatedJob name 'gpus' does not appear in .spec.ReplicatedJobs",
        ),
    ]
    hints = {f["path"]: f["hint"] for f in coded(doc, "ADM001")}
    assert hints[at_task] == TASKS_HINT
    assert hints[f"$.jobs['{job}'].successPolicy"] == SUCCESS_POLICY_HINT


def refused(kind: str, name: str, *errors: tuple[str, str]) -> dict[str, Any]:
    """workloadcheck's line for an object its webhook refuses (`errors`: field, message)."""
    api = "leaderworkerset.x-k8s.io/v1" if kind == "LeaderWorkerSet" else "jobset.x-k8s.io/v1alpha2"
    return {
        "apiVersion": api,
        "kind": kind,
        "name": name,
        "namespace": "llm",
        "version": "v0.8.0",
        "errors": [{"field": f, "message": m} for f, m in errors],
    }


def test_a_group_size_refusal_is_at_the_tracks_group_size_and_without_values_at_the_file(
    tmp_path: Path,
) -> None:
    values_dir = workload_tree(tmp_path, LWS_TEAM)
    assert invoke("render", "--values", str(values_dir)).exit_code == 0
    view = values.load(values_dir).envs["prod"]
    unit = Unit("prod", "team-llm", "overlays/prod/team-llm", (), {})
    docs = workloads.workload_docs(kustomize_build(values_dir.parent / "overlays/prod/team-llm"))
    size = ("spec.leaderWorkerTemplate.size", "size must be equal or greater than 1")
    other = ("spec.rolloutStrategy", "something else")
    result = {"refused": [refused("LeaderWorkerSet", "llm-ascend", size, other)]}

    def committed(kind: str, name: str) -> Location:
        return Location(f"overlays/prod/team-llm/{kind}-{name}.yaml")

    found = workloads.findings(build_of(view), unit, docs, result, committed)
    assert [(f.location.line, f.path, f.hint) for f in found] == [
        (10, "$.services.llm.tracks.ascend.groupSize", GROUP_SIZE_HINT),
        (10, "$.services.llm.tracks.ascend", OTHER_HINT),
    ]
    assert found[0].message == (
        "LeaderWorkerSet llm/llm-ascend: LeaderWorkerSet v0.8.0's admission webhook would refuse "
        "it: size must be equal or greater than 1"
    )
    # Values that do not render: at the committed file.
    (no_values,) = workloads.findings(
        None, unit, docs, {"refused": [refused("LeaderWorkerSet", "llm-ascend", size)]}, committed
    )
    assert (str(no_values.location), no_values.path) == (
        "overlays/prod/team-llm/LeaderWorkerSet-llm-ascend.yaml",
        "",
    )
    # An object no job or service of the values gives: at its unit's origin for it.
    (stray,) = workloads.findings(
        build_of(view), unit, [], {"refused": [refused("JobSet", "stray", size)]}, committed
    )
    assert (stray.location, stray.path, stray.hint) == (Location(unit.path), "", OTHER_HINT)


# ---- TrainJobs: Kubeflow Trainer's check (trainjobcheck) ----------------------------------------

TRAINJOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: tune, namespace: llm}
spec:
  runtimeRef: {name: %(runtime)s, apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime}
  trainer:
    image: r/t
    env: [{name: %(env)s, value: "1"}]
"""


def trainjobcheck(tmp_path: Path, *docs: str) -> list[dict[str, Any]]:
    path = tmp_path / "objects.yaml"
    path.write_text("---\n".join(docs), encoding="utf-8")
    runtimes = tmp_path / "runtimes.yaml"
    runtimes.write_text(workloads.trainer_runtimes({"torch-distributed"}, "1.36"))
    args = [str(tool("trainjobcheck")), f"-runtimes={runtimes}", str(path)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_trainers_check_runs_the_runtimes_plugins_against_the_runtime_named(
    tmp_path: Path,
) -> None:
    fine = TRAINJOB % {"runtime": "torch-distributed", "env": "EPOCHS"}
    reserved = TRAINJOB % {"runtime": "torch-distributed", "env": "PET_NNODES"}
    missing = TRAINJOB % {"runtime": "jax-distributed", "env": "EPOCHS"}
    js = JOBSET % {"policy": ""}  # another group's object: not listed
    out = trainjobcheck(tmp_path, fine, reserved, missing, js)
    assert [(r["kind"], r["checked"], r["allowed"], r["version"]) for r in out] == [
        ("TrainJob", True, True, "v2.2.0"),
        ("TrainJob", True, False, "v2.2.0"),
        ("TrainJob", True, False, "v2.2.0"),
    ]
    # torch's plugin: env torchrun reserves
    assert [e["field"] for e in out[1]["errors"]] == ["spec.trainer.env"]
    assert "PET_NNODES" in out[1]["errors"][0]["detail"]
    # the runtime the chart was not asked to install is not there
    assert [e["field"] for e in out[2]["errors"]] == ["spec.RuntimeRef"]
    assert "must be created before the TrainJob" in out[2]["errors"][0]["detail"]


def test_only_the_runtimes_named_are_installed_for_the_check() -> None:
    assert scheduling.named_runtimes(
        [yaml.safe_load(TRAINJOB % {"runtime": "jax-distributed", "env": "E"}), {"kind": "Job"}]
    ) == {"jax-distributed"}
    text = workloads.trainer_runtimes({"jax-distributed", "nope"}, "1.36")
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(text)] == ["jax-distributed"]


def test_a_trainjob_env_torchrun_reserves_is_refused_at_the_jobs_env(tmp_path: Path) -> None:
    fleet = {**yaml.safe_load(PROD_FLEET), **TRAINJOB_FLEET}
    nvidia = {
        "pools": [{"name": "a100", "model": "A100", "devicesPerNode": 8, "nodes": ["g1", "g2"]}]
    }
    files = {"vendors/nvidia.yaml": yaml.safe_dump(nvidia), "teams/llm.yaml": TRAINJOB_TEAM}
    fleet_text = yaml.safe_dump(fleet, sort_keys=False)
    clean = tree(tmp_path / "clean", files, fleet=fleet_text, defaults=False)
    code, doc = validate_json(clean)
    assert (code, coded(doc, "ADM001")) == (0, []), doc["findings"]
    files["teams/llm.yaml"] = TRAINJOB_TEAM + "    env: {PET_NPROC_PER_NODE: '4'}\n"
    code, doc = validate_json(tree(tmp_path / "env", files, fleet=fleet_text, defaults=False))
    (finding,) = coded(doc, "ADM001")
    assert code == 1
    assert (finding["file"], finding["line"], finding["path"]) == (
        "values/teams/llm.yaml",
        11,
        "$.jobs.finetune.env",
    )
    assert finding["message"].startswith(
        "TrainJob llm/finetune: Kubeflow Trainer v2.2.0's admission webhook would refuse it: "
        "spec.trainer.env: Invalid value: "
    )
    assert finding["hint"] == ENV_HINT


def test_a_trainjob_refusal_lands_at_the_field_it_names(tmp_path: Path) -> None:
    fleet = {**yaml.safe_load(PROD_FLEET), **TRAINJOB_FLEET}
    nvidia = {"pools": [{"name": "a100", "model": "A100", "devicesPerNode": 8, "nodes": ["g1"]}]}
    files = {"vendors/nvidia.yaml": yaml.safe_dump(nvidia), "teams/llm.yaml": TRAINJOB_TEAM}
    values_dir = tree(tmp_path, files, fleet=yaml.safe_dump(fleet), defaults=False)
    view = values.load(values_dir).envs["prod"]
    unit = Unit("prod", "team-llm", "overlays/prod/team-llm", (), {})
    api = "trainer.kubeflow.org/v1alpha1"

    def line(*errors: tuple[str, str]) -> dict[str, Any]:
        item = refused("TrainJob", "finetune", *errors)
        return {**item, "apiVersion": api, "version": "v2.2.0"}

    errors = [
        ("spec.RuntimeRef", "not found"),
        ("", "unsupported runtime: trainer.kubeflow.org/Other"),
        ("spec.trainer.numNodes", "x"),
        ("spec.trainer.numProcPerNode", "x"),
        ("spec.somethingElse", "x"),
    ]
    found = workloads.findings(
        build_of(view), unit, [], {"refused": [line(*errors)]}, lambda k, n: Location("")
    )
    assert [(f.path, f.hint) for f in found] == [
        ("$.jobs.finetune.runtime", RUNTIME_HINT),
        ("$.jobs.finetune.runtime", RUNTIME_HINT),
        ("$.jobs.finetune.numNodes", OTHER_HINT),
        ("$.jobs.finetune.numProcPerNode", OTHER_HINT),
        ("$.jobs.finetune", OTHER_HINT),
    ]
    assert found[0].message.startswith("TrainJob llm/finetune: Kubeflow Trainer v2.2.0's")
