"""What the driver hands the judge (generator/simulate/snapshot.py): a snapshot answers the judge's
reads as the API client does, keeps of each object what the judge reads, and a run round-trips
through JSON unchanged."""

from __future__ import annotations

import json
from typing import Any

import pytest

from generator.controlplane.api import UnknownKind
from generator.simulate.snapshot import EnvRun, JobOutcome, JobsRun, Refusal, Snapshot, slim

Obj = dict[str, Any]


def pod(ns: str, name: str, labels: dict[str, str] | None = None) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
    }


STATE = Snapshot(
    {
        "v1/Pod": [
            pod("ml", "a", {"app": "x", "track": "nvidia"}),
            pod("ml", "b", {"app": "x", "track": "ascend"}),
            pod("web", "a", {"app": "x", "track": "nvidia"}),
        ],
        "v1/Node": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "g1"}}],
    }
)


def test_a_snapshot_lists_by_namespace_and_selector_as_the_api_server_does() -> None:
    names = [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in STATE.list("v1", "Pod")]
    assert names == [("ml", "a"), ("ml", "b"), ("web", "a")]
    assert [p["metadata"]["name"] for p in STATE.list("v1", "Pod", "ml")] == ["a", "b"]
    picked = STATE.list("v1", "Pod", selector="app=x,track=nvidia")
    assert [p["metadata"]["namespace"] for p in picked] == ["ml", "web"]
    assert STATE.list("v1", "Pod", "ml", selector="track=ascend") == [STATE.list("v1", "Pod")[1]]


def test_a_snapshot_gets_one_object_by_namespace_and_name() -> None:
    assert STATE.get("v1", "Pod", "web", "a") == pod("web", "a", {"app": "x", "track": "nvidia"})
    assert STATE.get("v1", "Pod", "other", "a") is None
    assert STATE.get("v1", "Node", "", "g1") == STATE.list("v1", "Node")[0]


def test_a_kind_not_taken_is_not_served() -> None:
    assert STATE.serves("v1", "Pod") and not STATE.serves("batch/v1", "Job")
    with pytest.raises(UnknownKind):
        STATE.list("batch/v1", "Job")
    with pytest.raises(UnknownKind):
        STATE.get("batch/v1", "Job", "ml", "train")


def test_a_snapshot_keeps_what_the_judge_reads_of_an_object() -> None:
    served = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "a",
            "namespace": "ml",
            "uid": "7d2f",
            "resourceVersion": "2301",
            "creationTimestamp": "2025-05-05T10:12:00Z",
            "managedFields": [{"manager": "kube-scheduler"}],
            "labels": {"app": "x"},
            "annotations": {"volcano.sh/task-spec": "workers"},
            "ownerReferences": [{"kind": "Job", "name": "train"}],
        },
        "spec": {
            "nodeName": "g1",
            "schedulerName": "default-scheduler",
            "schedulingGates": [{"name": "g"}],
            "containers": [{"name": "main", "image": "r/x:1"}],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "main"}],
            "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "a-gpu"}],
        },
    }
    assert slim(served) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "a",
            "namespace": "ml",
            "labels": {"app": "x"},
            "annotations": {"volcano.sh/task-spec": "workers"},
            "ownerReferences": [{"kind": "Job", "name": "train"}],
        },
        "spec": {
            "nodeName": "g1",
            "schedulerName": "default-scheduler",
            "schedulingGates": [{"name": "g"}],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "a-gpu"}],
        },
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train"},
        "spec": {"parallelism": 2, "completions": 4, "template": {"spec": {}}},
    }
    assert slim(job)["spec"] == {"parallelism": 2, "completions": 4}
    workload = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "w"},
        "spec": {"queueName": "team-ml", "podSets": [{"name": "main"}]},
    }
    assert slim(workload)["spec"] == {"queueName": "team-ml"}
    # A kind the judge reads whole (a JobSet's replicated jobs) is kept whole.
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "spec": {"a": 1}}
    assert slim(jobset) == jobset


def test_a_run_round_trips_through_json() -> None:
    outcome = JobOutcome(
        refused={("ml", "train"): "exceeded quota"},
        gang={("ml", "beta"): "gang: only 2 of 3"},
        queued={("ml", "big"): "insufficient quota"},
    )
    run = EnvRun(
        "prod/main",
        objects=42,
        refusals=[Refusal("overlays/prod/main/team-ml", "batch/v1", "Job", "ml", "x", "403")],
        timings={"scheduler": 1.5, "jobs": 3.25},
        nodes=STATE.list("v1", "Node"),
        ignored_taints=['"ignoring taint" err="unprefixed keys are not allowed"'],
        probes=STATE.list("v1", "Pod", "web"),
        services=STATE,
        jobs=JobsRun(outcome, STATE),
        alone=[JobsRun(JobOutcome(), Snapshot({"v1/Pod": []}), ("ml", "train"))],
        jobset_workloads=None,
        jobsets=Snapshot({}),
    )
    text = json.dumps(run.as_json())
    assert EnvRun.from_json(json.loads(text)) == run
