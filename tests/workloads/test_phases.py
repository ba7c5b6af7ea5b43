"""The migration phase table (generator/workloads/phases.py): the replicas and traffic weights
each phase gives a service's tracks, and explicit values over the phase; on a values tree made
for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.values import loader as values
from generator.workloads.phases import ladder, plan_service
from tests.fixtures import AMD_MI250X, ASCEND_910B, INFERENCE, migration, tree, workloads_of


@pytest.mark.parametrize(
    ("phase", "nvidia", "ascend"),
    [
        ("validate", (2, 100), (1, 0)),
        ("dual-run", (2, 100), (2, 0)),
        ("shift-25", (2, 75), (2, 25)),
        ("primary-new", (2, 0), (2, 100)),
        ("fallback", (1, 0), (2, 100)),
    ],
)
def test_phase_gives_replicas_and_weights(
    phase: str, nvidia: tuple[int, int], ascend: tuple[int, int], tmp_path: Path
) -> None:
    values_dir = migration(
        tmp_path,
        f"teams:\n  inference:\n    services:\n      inference-service: {{phase: {phase}}}\n",
    )
    view = values.load(values_dir).envs["prod"]
    team = next(t for t in view.teams if t.name == "inference")
    [svc] = workloads_of(view).of(team).services
    got = {p.vendor: (p.replicas, p.weight) for p in plan_service(svc)}
    assert got == {"nvidia": nvidia, "ascend": ascend}


def test_explicit_replicas_and_weights_override_the_phase(tmp_path: Path) -> None:
    values_dir = migration(
        tmp_path,
        "teams:\n  inference:\n    services:\n      inference-service:\n"
        "        replicas: {nvidia: 3, ascend: 1}\n        weights: {nvidia: 90, ascend: 10}\n",
    )
    view = values.load(values_dir).envs["prod"]
    team = next(t for t in view.teams if t.name == "inference")
    [svc] = workloads_of(view).of(team).services
    got = {p.vendor: (p.replicas, p.weight) for p in plan_service(svc)}
    assert got == {"nvidia": (3, 90), "ascend": (1, 10)}


# ---- every field of a track's plan, on trees made for each rule --------------------------------

SVC = ("services", "inference-service")


def plans(values_dir: Path) -> list[tuple[object, ...]]:
    """prod's inference-service: (vendor, replicas, weight, devices, replicas_path,
    weight_explicit) of each track, in the order plan_service gives them."""
    view = values.load(values_dir).envs["prod"]
    team = next(t for t in view.teams if t.name == "inference")
    [svc] = workloads_of(view).of(team).services
    return [
        (p.vendor, p.replicas, p.weight, p.devices, p.replicas_path, p.weight_explicit)
        for p in plan_service(svc)
    ]


def test_validate_and_fallback_say_the_phase_decided_the_smaller_track(tmp_path: Path) -> None:
    """The track a phase shrinks (validate: the new one to 1, fallback: the old one to
    fallbackReplicas) has its replica count from `phase`; the other from its own `replicas`."""
    validate = migration(tmp_path / "v", "{}\n")
    assert plans(validate) == [
        ("nvidia", 2, 100, 2, (*SVC, "tracks", "nvidia", "replicas"), False),
        ("ascend", 1, 0, 1, (*SVC, "phase"), False),
    ]
    fallback = migration(
        tmp_path / "f",
        "teams:\n  inference:\n    services:\n      inference-service: {phase: fallback}\n",
    )
    assert plans(fallback) == [
        ("nvidia", 1, 0, 1, (*SVC, "phase"), False),
        ("ascend", 2, 100, 2, (*SVC, "tracks", "ascend", "replicas"), False),
    ]


def test_shift_keeps_both_tracks_full_and_their_own_replica_counts(tmp_path: Path) -> None:
    values_dir = migration(
        tmp_path,
        "teams:\n  inference:\n    services:\n      inference-service: {phase: shift-30}\n",
    )
    assert plans(values_dir) == [
        ("nvidia", 2, 70, 2, (*SVC, "tracks", "nvidia", "replicas"), False),
        ("ascend", 2, 30, 2, (*SVC, "tracks", "ascend", "replicas"), False),
    ]


def test_explicit_weights_give_unnamed_tracks_0(tmp_path: Path) -> None:
    """weights: {nvidia: 100} in phase shift-25: Ascend's 25 from the phase is dropped, not kept,
    and both tracks' weights count as explicit."""
    values_dir = migration(
        tmp_path,
        "teams:\n  inference:\n    services:\n      inference-service:\n"
        "        phase: shift-25\n        weights: {nvidia: 100}\n",
    )
    assert plans(values_dir) == [
        ("nvidia", 2, 100, 2, (*SVC, "tracks", "nvidia", "replicas"), True),
        ("ascend", 2, 0, 2, (*SVC, "tracks", "ascend", "replicas"), True),
    ]


def test_explicit_replicas_point_at_the_replicas_key(tmp_path: Path) -> None:
    values_dir = migration(
        tmp_path,
        "teams:\n  inference:\n    services:\n      inference-service:\n"
        "        phase: fallback\n        replicas: {nvidia: 3}\n",
    )
    assert plans(values_dir) == [
        ("nvidia", 3, 0, 3, (*SVC, "replicas", "nvidia"), False),
        ("ascend", 2, 100, 2, (*SVC, "tracks", "ascend", "replicas"), False),
    ]


# A third track beside the migration's two: AMD, 3 replicas of 2 GPUs.
THREE_TRACKS = (
    INFERENCE.replace(
        "images: {nvidia: r/s:cuda, ascend: r/s:ascend}",
        "images: {nvidia: r/s:cuda, ascend: r/s:ascend, amd: r/s:rocm}",
    )
    + "      amd: {devicesPerReplica: 2, replicas: 3}\n"
)


def test_a_track_outside_the_migration_runs_full_with_weight_0(tmp_path: Path) -> None:
    """shift-25 splits 75 / 25 between migration.from and migration.to; AMD, in neither, runs
    its 3 replicas with weight 0 and comes last, though `amd` sorts first by name."""
    values_dir = tree(
        tmp_path,
        {
            "vendors/ascend.yaml": ASCEND_910B,
            "vendors/amd.yaml": AMD_MI250X,
            "teams/inference.yaml": THREE_TRACKS,
            "environments/prod.yaml": "teams:\n  inference:\n    services:\n"
            "      inference-service: {phase: shift-25}\n",
        },
    )
    assert plans(values_dir) == [
        ("nvidia", 2, 75, 2, (*SVC, "tracks", "nvidia", "replicas"), False),
        ("ascend", 2, 25, 2, (*SVC, "tracks", "ascend", "replicas"), False),
        ("amd", 3, 0, 6, (*SVC, "tracks", "amd", "replicas"), False),
    ]


def test_a_one_track_service_takes_all_traffic_whatever_the_phase(tmp_path: Path) -> None:
    """No migration and one track: weight 100, where a track outside the migration of a service
    with more tracks gets 0 whatever the phase."""
    one_track = (
        "quota: {nvidia: 4}\n"
        "services:\n"
        "  inference-service:\n"
        "    images: {nvidia: r/s:cuda}\n"
        "    phase: primary-new\n"
        "    tracks:\n"
        "      nvidia: {devicesPerReplica: 1, replicas: 3}\n"
    )
    values_dir = tree(tmp_path, {"teams/inference.yaml": one_track})
    assert plans(values_dir) == [
        ("nvidia", 3, 100, 3, (*SVC, "tracks", "nvidia", "replicas"), False),
    ]


# ---- replicasFollowWeights: replicas in proportion to the weights (routing: service) ----------


def follow(tmp_path: Path, settings: str) -> dict[str, tuple[int, int, int, object]]:
    """prod's inference-service (2 replicas a track, 1 device each) with `settings` added:
    (replicas, weight, devices, replicas_path) per track."""
    values_dir = migration(
        tmp_path,
        "teams:\n  inference:\n    services:\n      inference-service:\n"
        f"        replicasFollowWeights: true\n{settings}",
    )
    view = values.load(values_dir).envs["prod"]
    team = next(t for t in view.teams if t.name == "inference")
    [svc] = workloads_of(view).of(team).services
    return {p.vendor: (p.replicas, p.weight, p.devices, p.replicas_path) for p in plan_service(svc)}


FOLLOW = (*SVC, "replicasFollowWeights")


@pytest.mark.parametrize(
    ("phase", "nvidia", "ascend"),
    [
        # 90 %: both tracks' needs (2 and 1) at the least total where 1 pod is 10 %: 10
        ("shift-10", 9, 1),
        # exact at 4 pods
        ("shift-25", 3, 1),
        # 4 pods give 2.68 and 1.32: the larger remainder takes the fourth (25 %, not 33 %)
        ("shift-33", 3, 1),
        # each needs 1 of its 2 for half the load
        ("shift-50", 1, 1),
        ("shift-90", 1, 9),
    ],
)
def test_replicas_follow_the_weights_of_a_shift(
    phase: str, nvidia: int, ascend: int, tmp_path: Path
) -> None:
    got = follow(tmp_path, f"        phase: {phase}\n")
    weight = int(phase.removeprefix("shift-"))
    assert got == {
        "nvidia": (nvidia, 100 - weight, nvidia, FOLLOW),
        "ascend": (ascend, weight, ascend, FOLLOW),
    }


def test_replicas_follow_weights_only_where_two_tracks_carry_traffic(tmp_path: Path) -> None:
    # One serving track (validate): the phase's replicas as they are.
    assert follow(tmp_path / "a", "        phase: validate\n") == {
        "nvidia": (2, 100, 2, (*SVC, "tracks", "nvidia", "replicas")),
        "ascend": (1, 0, 1, (*SVC, "phase")),
    }
    # A track whose replicas the values set keeps them, and the other is left alone too.
    assert follow(tmp_path / "b", "        phase: shift-10\n        replicas: {ascend: 2}\n") == {
        "nvidia": (2, 90, 2, (*SVC, "tracks", "nvidia", "replicas")),
        "ascend": (2, 10, 2, (*SVC, "replicas", "ascend")),
    }
    # Weighted routing gives the weights itself: the replicas stay full.
    gateway = (
        "        phase: shift-10\n        routing: gateway\n"
        "        gateway: {parentRefs: [{name: gw}]}\n"
    )
    assert {v: r[0] for v, r in follow(tmp_path / "c", gateway).items()} == {
        "nvidia": 2,
        "ascend": 2,
    }


def test_replicas_follow_weights_by_each_tracks_need_and_the_largest_remainder(
    tmp_path: Path,
) -> None:
    """3 replicas a track of 2 devices, shift-33: the old track needs ceil(3 x 67 / 100) = 3
    (2.01 rounds up), the new one 1; 5 pods are the least that give the old track its 3 (5 x 0.67
    = 3.35); the fifth goes to the larger remainder, the new track's 0.65: 3 and 2 (60 / 40)."""
    big = (
        "        phase: shift-33\n        tracks:\n"
        "          nvidia: {devicesPerReplica: 2, replicas: 3}\n"
        "          ascend: {devicesPerReplica: 2, replicas: 3}\n"
    )
    assert follow(tmp_path, big) == {
        "nvidia": (3, 67, 6, FOLLOW),
        "ascend": (2, 33, 4, FOLLOW),
    }


def test_a_weight_of_1_percent_takes_100_pods_to_give_exactly(tmp_path: Path) -> None:
    assert {v: r[0] for v, r in follow(tmp_path, "        phase: shift-1\n").items()} == {
        "nvidia": 99,
        "ascend": 1,
    }


def test_a_track_of_weight_0_keeps_its_replicas_when_the_others_follow_weights(
    tmp_path: Path,
) -> None:
    values_dir = tree(
        tmp_path,
        {
            "vendors/ascend.yaml": ASCEND_910B,
            "vendors/amd.yaml": AMD_MI250X,
            "teams/inference.yaml": THREE_TRACKS,
            "environments/prod.yaml": "teams:\n  inference:\n    services:\n"
            "      inference-service: {phase: shift-50, replicasFollowWeights: true}\n",
        },
    )
    assert plans(values_dir) == [
        ("nvidia", 1, 50, 1, FOLLOW, False),
        ("ascend", 1, 50, 1, FOLLOW, False),
        ("amd", 3, 0, 6, (*SVC, "tracks", "amd", "replicas"), False),
    ]


@pytest.mark.parametrize(
    ("phase", "steps"),
    [
        (
            "dual-run",
            ["validate", "dual-run", "shift-10", "shift-50", "shift-90", "primary-new", "fallback"],
        ),
        (
            "shift-25",
            [
                "validate",
                "dual-run",
                "shift-10",
                "shift-25",
                "shift-50",
                "shift-90",
                "primary-new",
                "fallback",
            ],
        ),
        (
            "shift-50",
            ["validate", "dual-run", "shift-10", "shift-50", "shift-90", "primary-new", "fallback"],
        ),
    ],
)
def test_the_ladder_a_migration_climbs_takes_the_services_own_shift(
    phase: str, steps: list[str], tmp_path: Path
) -> None:
    """simulate --phases walks these (docs/workloads.md, "Phase order and rollback")."""
    values_dir = migration(
        tmp_path,
        f"teams:\n  inference:\n    services:\n      inference-service: {{phase: {phase}}}\n",
    )
    view = values.load(values_dir).envs["prod"]
    team = next(t for t in view.teams if t.name == "inference")
    [svc] = workloads_of(view).of(team).services
    assert ladder(svc) == steps


def test_a_service_that_does_not_migrate_has_no_ladder(tmp_path: Path) -> None:
    """One track, or two split by explicit weights without migration: nothing to climb."""
    team = """\
quota: {nvidia: 4}
services:
  one:
    images: {nvidia: r/one:cuda}
    tracks:
      nvidia: {devicesPerReplica: 1}
  split:
    images: {nvidia: r/s:cuda, ascend: r/s:ascend}
    weights: {nvidia: 60, ascend: 40}
    tracks:
      nvidia: {devicesPerReplica: 1}
      ascend: {devicesPerReplica: 1, model: 910b}
"""
    values_dir = tree(tmp_path, {"vendors/ascend.yaml": ASCEND_910B, "teams/web.yaml": team})
    view = values.load(values_dir).envs["prod"]
    [web] = [t for t in view.teams if t.name == "web"]
    services = workloads_of(view).of(web).services
    assert [(s.name, ladder(s)) for s in services] == [("one", []), ("split", [])]
