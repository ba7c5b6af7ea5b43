"""The migration phase table (generator/workloads/phases.py): the replicas and traffic weights
each phase gives a service's tracks, and explicit values over the phase; on a values tree made
for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.values import loader as values
from generator.workloads.model import team_workloads
from generator.workloads.phases import plan_service
from tests.fixtures import migration


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
    [svc] = team_workloads(view, team).services
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
    [svc] = team_workloads(view, team).services
    got = {p.vendor: (p.replicas, p.weight) for p in plan_service(svc)}
    assert got == {"nvidia": (3, 90), "ascend": (1, 10)}
