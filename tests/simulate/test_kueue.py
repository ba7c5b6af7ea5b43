"""What the simulation takes from Kueue's chart and reads back from Kueue
(generator/simulate/kueue.py), on hand-written objects. Kueue running on the control plane:
tests/simulate/test_run.py."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from generator.simulate.kueue import (
    admission,
    admission_verdicts,
    integrations,
    kueue_setup,
    pending,
)
from generator.simulate.plan import pod_refs
from generator.simulate.result import PodResult
from tests.fixtures import KUEUE_CHART_CONFIG, build_of, built_units


def test_the_setup_keeps_the_config_and_all_but_what_the_process_stands_in_for() -> None:
    objs = [
        # Only a ConfigMap is the manager's configuration.
        {"kind": "Secret", "data": {"controller_manager_config.yaml": "kind: Other\n"}},
        {"kind": "ConfigMap", "data": {"controller_manager_config.yaml": KUEUE_CHART_CONFIG}},
        {"kind": "Deployment", "metadata": {"name": "m"}},
        {"kind": "APIService", "metadata": {"name": "v"}},
        {"kind": "Service", "metadata": {"name": "s"}},
        {"kind": "ValidatingWebhookConfiguration", "metadata": {"name": "w"}},
    ]
    setup = kueue_setup(objs)
    assert setup is not None
    assert (setup.service, setup.namespace, setup.config) == (
        "kueue",
        "kueue-system",
        KUEUE_CHART_CONFIG,
    )
    assert setup.args == ("--feature-gates=VisibilityOnDemand=false",)
    assert [d["kind"] for d in setup.docs()] == [
        "Secret",
        "Service",
        "ValidatingWebhookConfiguration",
    ]
    assert integrations(setup) == ["batch/job"]
    assert kueue_setup([objs[0], *objs[2:]]) is None


def workload(
    conditions: list[dict[str, str]], adm: Mapping[str, object] | None = None
) -> dict[str, object]:
    status: dict[str, object] = {"conditions": conditions}
    if adm is not None:
        status["admission"] = adm
    return {"status": status}


ADMITTED = {"type": "Admitted", "status": "True"}
SHORT = {
    "type": "QuotaReserved",
    "status": "False",
    "reason": "Pending",
    "message": "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu",
}


def test_an_admitted_workload_names_its_queue_and_flavors() -> None:
    adm = {
        "clusterQueue": "team-ml",
        "podSetAssignments": [
            {"flavors": {"nvidia.com/gpu": "nvidia-a100", "cpu": "general"}},
            {"flavors": {"nvidia.com/gpu": "nvidia-a100"}},
        ],
    }
    assert admission(workload([ADMITTED], adm)) == "team-ml (general, nvidia-a100)"
    assert admission(workload([ADMITTED], {"clusterQueue": "team-ml"})) == "team-ml"
    assert pending(workload([ADMITTED, SHORT], adm)) == ""


def test_a_workload_kueue_tried_and_did_not_admit_gives_kueues_reason() -> None:
    assert pending(workload([SHORT])) == SHORT["message"]
    assert admission(workload([SHORT])) == ""
    assert admission(workload([{**ADMITTED, "status": "False"}], {"clusterQueue": "q"})) == ""
    # Not tried yet, or reserved: no reason.
    assert pending(workload([])) == ""
    assert pending(workload([{**SHORT, "status": "True"}])) == ""
    assert pending(workload([{**SHORT, "message": ""}])) == ""


# A Kueue fleet: team ml with a batch Job (line 3 of its file) and a service (its track, line 10).
KUEUE_FLEET = """\
name: t
kubernetesVersion: "1.36"
environments: [dev]
git: {repoURL: https://git.example.com/t.git, targetRevision: main}
scheduling: {backend: kueue}
"""
NVIDIA = "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, nodes: [g1]}\n"
TEAM = """\
quota: {nvidia: 4}
jobs:
  train:
    vendor: nvidia
    devices: 1
    images: {nvidia: r/t:1}
services:
  serve:
    images: {nvidia: r/s:1}
    tracks: {nvidia: {devicesPerReplica: 1, replicas: 2}}
"""
A100 = {
    "clusterQueue": "team-ml",
    "podSetAssignments": [{"flavors": {"nvidia.com/gpu": "nvidia-a100"}}],
}


def queued(
    conditions: list[dict[str, str]], adm: Mapping[str, object] | None = None
) -> dict[str, object]:
    return {**workload(conditions, adm), "spec": {"queueName": "team-ml"}}


def test_one_admission_row_per_queued_workload_at_its_values_line(tmp_path: Path) -> None:
    view, _, _ = built_units(
        tmp_path, {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": TEAM}, KUEUE_FLEET
    )
    refs = pod_refs(build_of(view))
    deployment = "Deployment ml/serve-nvidia"
    rows = [
        PodResult("ml", deployment, "serve-a", "nvidia", "Running", "g1", "", True),
        PodResult("ml", deployment, "serve-b", "nvidia", "Pending", "", "", False),
        PodResult("ml", "Job ml/train", "train-x", "nvidia", "Running", "g1", "", True),
    ]
    workloads = {
        ("ml", "Pod", "serve-a"): queued([ADMITTED], A100),
        ("ml", "Pod", "serve-b"): queued([SHORT]),
        ("ml", "Job", "train"): queued([ADMITTED], A100),
        # Another namespace's workload of the same name is not this one's.
        ("other", "Job", "train"): queued([SHORT]),
    }
    assert admission_verdicts(workloads, refs, rows) == [
        {
            "workload": "Deployment ml/serve-nvidia",
            "values": "values/teams/ml.yaml:10:14",
            "queue": "team-ml",
            "admission": "1 of 2 admitted: team-ml (nvidia-a100); pending: " + SHORT["message"],
            "ok": False,
        },
        {
            "workload": "Job ml/train",
            "values": "values/teams/ml.yaml:3:3",
            "queue": "team-ml",
            "admission": "1 of 1 admitted: team-ml (nvidia-a100)",
            "ok": True,
        },
    ]


def test_no_admission_rows_without_workloads(tmp_path: Path) -> None:
    view, _, _ = built_units(
        tmp_path, {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": TEAM}, KUEUE_FLEET
    )
    rows = [PodResult("ml", "Job ml/train", "train-x", "nvidia", "Running", "g1", "", True)]
    assert admission_verdicts({}, pod_refs(build_of(view)), rows) == []
    # A workload that Kueue has not made a Workload for (yet) has no row either.
    other = {("ml", "Job", "other"): queued([ADMITTED], A100)}
    assert admission_verdicts(other, pod_refs(build_of(view)), rows) == []


def test_a_leaderworkerset_has_a_row_over_its_groups_workloads(tmp_path: Path) -> None:
    """Kueue makes one Workload per group, owned by the LeaderWorkerSet: the row counts them."""
    team = TEAM.split("jobs:")[0] + "services:" + TEAM.split("services:")[1]
    team = team.replace("replicas: 2}}", "replicas: 2, groupSize: 2}}")
    fleet = KUEUE_FLEET + "platform:\n  lws: {provided: site}\n"
    view, _, _ = built_units(
        tmp_path, {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": team}, fleet
    )
    groups = {
        ("ml", "serve-nvidia"): [queued([ADMITTED], A100), queued([SHORT])],
        ("other", "serve-nvidia"): [queued([SHORT])],
    }
    assert admission_verdicts({}, pod_refs(build_of(view)), [], groups) == [
        {
            "workload": "LeaderWorkerSet ml/serve-nvidia",
            "values": "values/teams/ml.yaml:5:14",
            "queue": "team-ml",
            "admission": "1 of 2 admitted: team-ml (nvidia-a100); pending: " + SHORT["message"],
            "ok": False,
        }
    ]
