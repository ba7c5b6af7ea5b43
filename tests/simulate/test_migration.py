"""simulate --phases without a control plane: the plan of each migrating service's walk (its
objects at each phase, rendered by the services' builder) and the judge of what the driver took
at each phase (generator/simulate/migration.py), on the two-cluster values tree of
tests/fixtures.py (CROSS_TEAM: chat moves from NVIDIA in `main` to Ascend in `domestic`, routed by
main's HTTPRoute over the tracks' ServiceImports). Each phase's cluster is written here as
kube-apiserver lists it; every row, code, location and message is written out by hand.

The walk on a real control plane: tests/simulate/test_run.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from generator.cluster.dryrun import load
from generator.cluster.units import build
from generator.findings import Finding, Location, Severity
from generator.reporters.simulation import across_text
from generator.simulate.judge import judge
from generator.simulate.plan import SimPlan, make_plan
from generator.simulate.result import EnvReport, SimulationResult
from generator.simulate.snapshot import EnvRun, JobOutcome, JobsRun, PhaseRun, Snapshot
from tests.fixtures import ASCEND_910B, CROSS_EXTERNAL, INFERENCE, cross_clusters, migration, tree

Obj = dict[str, Any]
SIM007_HINT = "replicas per track must be what plan says: check capacity, quota and placement"
SIM011_HINT = "check what was not simulated on a cluster that runs it (docs/simulation.md)"
WALK = ["validate", "dual-run", "shift-10", "shift-30", "shift-50", "shift-90", "primary-new"]
WALK += ["fallback"]
TEAM = "accel-gitops.io/team"


def planned(values: Path, key: str, phases: bool = True) -> SimPlan:
    """The plan simulate makes of cluster view `key` of environment prod."""
    checked, _ = load(values, "prod")
    built, found = build(checked.values, key, builds=checked.builds)
    return make_plan(checked.values, checked.builds[key], built, found, phases=phases)


def replicas(objs: list[Obj], kind: str = "Deployment") -> dict[str, int]:
    return {o["metadata"]["name"]: o["spec"]["replicas"] for o in objs if o["kind"] == kind}


def test_each_phase_of_the_walk_is_rendered_for_the_tracks_and_the_route_of_its_cluster(
    tmp_path: Path,
) -> None:
    """chat at shift-30: the walk takes its own shift-30 among the shift steps. domestic holds
    the Ascend track only; main the NVIDIA track and the route over both tracks' imports."""
    values = cross_clusters(tmp_path)
    (walk,) = planned(values, "prod/domestic").walks
    assert [s.phase for s in walk.steps] == WALK
    assert [replicas(s.objects) for s in walk.steps] == [
        {"chat-ascend": 1},
        *[{"chat-ascend": 2}] * 7,
    ]
    # Put back at the environment's phase afterwards.
    assert replicas(walk.back) == {"chat-ascend": 2}

    (walk,) = planned(values, "prod/main").walks
    assert [replicas(s.objects) for s in walk.steps] == [{"chat-nvidia": 2}] * 7 + [
        {"chat-nvidia": 1}
    ]
    routes = [
        [
            (ref["name"], ref["weight"])
            for o in s.objects
            if o["kind"] == "HTTPRoute"
            for ref in o["spec"]["rules"][0]["backendRefs"]
        ]
        for s in walk.steps
    ]
    assert routes == [
        [("chat-nvidia", 100), ("chat-ascend", 0)],
        [("chat-nvidia", 100), ("chat-ascend", 0)],
        [("chat-nvidia", 90), ("chat-ascend", 10)],
        [("chat-nvidia", 70), ("chat-ascend", 30)],
        [("chat-nvidia", 50), ("chat-ascend", 50)],
        [("chat-nvidia", 10), ("chat-ascend", 90)],
        [("chat-nvidia", 0), ("chat-ascend", 100)],
        [("chat-nvidia", 0), ("chat-ascend", 100)],
    ]
    # Without --phases, nothing is walked.
    assert planned(values, "prod/main", phases=False).walks == []


def test_in_one_cluster_each_phase_moves_the_services_selector_and_its_tracks_replicas(
    tmp_path: Path,
) -> None:
    """inference-service (tests/fixtures.py INFERENCE: NVIDIA 2, Ascend 2 in one cluster, routing
    service) at dual-run in prod: the Service over the tracks selects the one track that carries
    all the traffic, both while some is shifted, with the phase annotated."""
    prod = "teams:\n  inference:\n    services:\n      inference-service: {phase: dual-run}\n"
    (walk,) = planned(migration(tmp_path, prod), "prod").walks
    assert [s.phase for s in walk.steps] == [w for w in WALK if w != "shift-30"]
    assert [replicas(s.objects) for s in walk.steps] == [
        {"inference-service-nvidia": 2, "inference-service-ascend": 1},
        *[{"inference-service-nvidia": 2, "inference-service-ascend": 2}] * 5,
        {"inference-service-nvidia": 1, "inference-service-ascend": 2},
    ]
    services = [
        [
            (
                o["spec"]["selector"].get("accel-gitops.io/track", "both"),
                o["metadata"]["annotations"]["accel-gitops.io/phase"],
            )
            for o in s.objects
            if o["kind"] == "Service" and o["metadata"]["name"] == "inference-service"
        ]
        for s in walk.steps
    ]
    assert services == [
        [("nvidia", "validate")],
        [("nvidia", "dual-run")],
        [("both", "shift-10")],
        [("both", "shift-50")],
        [("both", "shift-90")],
        [("ascend", "primary-new")],
        [("ascend", "fallback")],
    ]


def test_each_phase_keeps_the_values_patch_of_the_tracks(tmp_path: Path) -> None:
    """The cluster gets a track's Deployment as kustomize built it: the service's `patch`
    stays at every phase, only the replicas move."""
    team = INFERENCE + (
        "    patch:\n      strategicMerge:\n        spec: {template: {spec: "
        "{priorityClassName: serving}}}\n"
    )
    values = tree(
        tmp_path,
        {"vendors/ascend.yaml": ASCEND_910B, "teams/inference.yaml": team},
    )
    (walk,) = planned(values, "prod").walks
    priority = {
        (s.phase, o["metadata"]["name"]): o["spec"]["template"]["spec"].get("priorityClassName")
        for s in walk.steps
        for o in s.objects
        if o["kind"] == "Deployment"
    }
    assert set(priority.values()) == {"serving"} and len(priority) == 14


def pod(name: str, node: str = "", reason: str = "") -> Obj:
    """A pod of chat's Ascend track as kube-apiserver lists it: Running and Ready on `node`, or
    Pending with the scheduler's `reason`."""
    labels = {"app.kubernetes.io/name": "chat", "accel-gitops.io/track": "ascend"}
    status: Obj = (
        {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        if node
        else {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": reason,
                },
            ],
        }
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "inference",
            "labels": {**labels, TEAM: "inference", "accel-gitops.io/vendor": "ascend"},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "chat-ascend-7c9d4"}
            ],
        },
        "spec": {"nodeName": node} if node else {},
        "status": status,
    }


NO_ROOM = (
    "0/3 nodes are available: 1 Insufficient huawei.com/Ascend910, 2 node(s) didn't match "
    "Pod's node affinity/selector."
)


def cluster_at(want: int, running: int) -> Snapshot:
    """domestic with chat-ascend asking for `want` pods, `running` of them on npu-1 and the
    rest Pending for want of NPUs."""
    pods = [pod(f"chat-ascend-7c9d4-{i}", "npu-1") for i in range(running)]
    pods += [pod(f"chat-ascend-7c9d4-{i}", reason=NO_ROOM) for i in range(running, want)]
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "chat-ascend", "namespace": "inference"},
        "spec": {"replicas": want},
    }
    replica_set = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": "chat-ascend-7c9d4",
            "namespace": "inference",
            "ownerReferences": [{"kind": "Deployment", "name": "chat-ascend"}],
        },
        "spec": {"replicas": want},
    }
    return Snapshot(
        {
            "v1/Pod": pods,
            "v1/Event": [],
            "v1/ResourceQuota": [],
            "apps/v1/Deployment": [deployment],
            "apps/v1/ReplicaSet": [replica_set],
        }
    )


def domestic_run(plan: SimPlan, running: dict[str, int], steady: int = 2) -> EnvRun:
    """What the driver took of domestic: the steady state at the environment's phase (2 pods,
    `steady` of them running), and each phase walked with `running` pods of the phase's
    replicas (all, for a phase not named)."""
    run = EnvRun("prod/domestic", jobs=JobsRun(JobOutcome(), cluster_at(2, steady)))
    (walk,) = plan.walks
    for step in walk.steps:
        want = replicas(step.objects)["chat-ascend"]
        state = cluster_at(want, min(want, running.get(step.phase, want)))
        run.phases.append(PhaseRun("inference", "chat", step.phase, state))
    return run


def test_a_track_short_at_several_phases_is_one_finding_at_the_first_naming_the_rest(
    tmp_path: Path,
) -> None:
    """The Ascend track fits at validate (1 pod); from dual-run its 2 pods find one NPU
    (a pool of 1 would do that): one cause, said once, at the track, naming its cluster and
    the scheduler's reason. Each phase is a row with the track's cluster, weight and pools."""
    plan = planned(cross_clusters(tmp_path), "prod/domestic")
    report = judge(plan, domestic_run(plan, {p: 1 for p in WALK if p != "shift-30"}))
    short = {"ascend/910b": 1, "not scheduled": 1}
    assert [
        (t["phase"], t["track"], t["cluster"], t["weight"], t["ready"], t["plan"], t["placed"])
        for t in report.phases
    ] == [
        ("validate", "ascend", "domestic", 0, 1, 1, {"ascend/910b": 1}),
        ("dual-run", "ascend", "domestic", 0, 1, 2, short),
        ("shift-10", "ascend", "domestic", 10, 1, 2, short),
        ("shift-30", "ascend", "domestic", 30, 2, 2, {"ascend/910b": 2}),
        ("shift-50", "ascend", "domestic", 50, 1, 2, short),
        ("shift-90", "ascend", "domestic", 90, 1, 2, short),
        ("primary-new", "ascend", "domestic", 100, 1, 2, short),
        ("fallback", "ascend", "domestic", 100, 1, 2, short),
    ]
    errors = [f for f in report.findings if f.severity is Severity.ERROR]
    # The environment's own phase (shift-30) fits, as in the steady state.
    assert errors == [
        Finding(
            "SIM007",
            "service inference/chat at phase dual-run (and shift-10, shift-50, shift-90, "
            "primary-new, fallback): track ascend in cluster domestic has 1 ready pod(s), "
            "plan says 2: pod chat-ascend-7c9d4-1 stays Pending: " + NO_ROOM,
            Location("values/teams/inference.yaml", 13, 38),
            "$.services.chat.tracks.ascend",
            SIM007_HINT,
            envs=("prod/domestic",),
        )
    ]


def test_a_shortfall_the_environments_own_phase_has_is_the_steady_states_to_say(
    tmp_path: Path,
) -> None:
    """shift-30 is the environment's phase: 1 of 2 Ascend pods there and at every phase from
    dual-run is one cause, said once, by the steady state (its SIM007 and the pod's SIM004)."""
    plan = planned(cross_clusters(tmp_path), "prod/domestic")
    report = judge(plan, domestic_run(plan, {p: 1 for p in WALK}, steady=1))
    errors = [(f.code, f.message) for f in report.findings if f.severity is Severity.ERROR]
    assert errors == [
        (
            "SIM004",
            "Deployment inference/chat-ascend: pod chat-ascend-7c9d4-1 stays Pending: " + NO_ROOM,
        ),
        (
            "SIM007",
            "service inference/chat: track ascend in cluster domestic has 1 ready pod(s), "
            "plan says 2",
        ),
    ]


def test_two_shortfalls_of_a_track_are_two_findings_and_a_walk_that_fits_none(
    tmp_path: Path,
) -> None:
    plan = planned(cross_clusters(tmp_path), "prod/domestic")
    report = judge(plan, domestic_run(plan, {"validate": 0, "primary-new": 1, "fallback": 0}))
    errors = [f.message for f in report.findings if f.severity is Severity.ERROR]
    # Sorted as every report's findings are: by location, then message.
    assert [e.split(":")[0] for e in errors] == [
        "service inference/chat at phase fallback",
        "service inference/chat at phase primary-new",
        "service inference/chat at phase validate",
    ]
    assert "track ascend in cluster domestic has 0 ready pod(s), plan says 2" in errors[0]
    assert "track ascend in cluster domestic has 1 ready pod(s), plan says 2" in errors[1]
    assert "track ascend in cluster domestic has 0 ready pod(s), plan says 1" in errors[2]
    report = judge(plan, domestic_run(plan, {}))
    assert [f for f in report.findings if f.severity is Severity.ERROR] == []
    assert all(t["ok"] for t in report.phases) and len(report.phases) == 8


def test_what_routes_across_the_clusters_is_said_not_run(tmp_path: Path) -> None:
    plan = planned(cross_clusters(tmp_path), "prod/main")
    (said,) = [f for f in plan.findings if f.code == "SIM011" and "across" in f.message]
    assert said == Finding(
        "SIM011",
        "service inference/chat runs across clusters (nvidia in main, ascend in domestic; "
        "routing gateway): each cluster's tracks ran on a control plane of their own, in that "
        "cluster's simulation; no Multi-Cluster Services implementation and no Gateway "
        "controller run here: the tracks' ServiceExports and cluster main's HTTPRoute over "
        "their ServiceImports were applied and checked by the API server, but no ServiceImport "
        "was made and no request routed, so the weights are rendered and checked, not served",
        Location("values/teams/inference.yaml", 14, 5),
        hint=SIM011_HINT,
        severity=Severity.WARNING,
    )
    plan = planned(cross_clusters(tmp_path / "x", cross=CROSS_EXTERNAL), "prod/main")
    (said,) = [f for f in plan.findings if f.code == "SIM011" and "across" in f.message]
    assert said.message.endswith(
        "routing external): each cluster's tracks ran on a control plane of their own, in that "
        "cluster's simulation; the global load balancer that splits its traffic reads "
        "traffic/<env>.json, which nothing here reads: the weights are rendered, not routed"
    )


def test_the_text_gathers_each_phase_of_a_service_across_clusters_from_both_clusters(
    tmp_path: Path,
) -> None:
    plan = planned(cross_clusters(tmp_path), "prod/domestic")
    domestic = judge(plan, domestic_run(plan, {}))
    row = {"team": "inference", "service": "inference/chat", "track": "nvidia"}
    main = EnvReport("prod/main")
    main.phases = [
        {
            "phase": "validate",
            **row,
            "cluster": "main",
            "weight": 100,
            "ready": 2,
            "plan": 2,
            "placed": {"nvidia/a100": 2},
            "ok": True,
        },
        {
            "phase": "dual-run",
            **row,
            "cluster": "main",
            "weight": 100,
            "ready": 2,
            "plan": 2,
            "placed": {"nvidia/a100": 2},
            "ok": True,
        },
    ]
    domestic.phases = domestic.phases[:2]
    text = across_text(SimulationResult([domestic, main], []))
    assert text == (
        "environment prod: services across clusters, each track in its cluster\n"
        "  service         phase     track   cluster   weight  ready  plan  placed\n"
        "  inference/chat  validate  ascend  domestic  0       1      1     ascend/910b x1  ok\n"
        "  inference/chat  validate  nvidia  main      100     2      2     nvidia/a100 x2  ok\n"
        "  inference/chat  dual-run  ascend  domestic  0       2      2     ascend/910b x2  ok\n"
        "  inference/chat  dual-run  nvidia  main      100     2      2     nvidia/a100 x2  ok\n"
    )
