"""pytest fixtures: the example values tree copied into tmp_path, and a real control plane
(generator/controlplane). Plain helpers are in tests/fixtures.py, the example's facts in
tests/example.py."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from generator.controlplane.launcher import ControlPlane
    from generator.values.model import FleetView

from tests.example import EXAMPLE_VALUES
from tests.fixtures import render_committed


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="Re-render the committed example output (base/, overlays/, schemas/).",
    )
    parser.addoption(
        "--record-snapshots",
        action="store_true",
        help="Simulate each case of tests/simulate/test_judge.py on a control plane and record "
        "what the driver took (tests/simulate/snapshots/); run with -p no:xdist.",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that start the control plane run last. Under `make mutation` (mutmut sets
    MUTANT_UNDER_TEST and runs each mutant's tests with -x, in an order of its own), the fastest
    tests also run first, by the durations its stats run recorded (mutmut-stats.json in the
    folder it runs from): the first failing test ends the run, so a mutant a quick test kills
    costs that test, not the seconds of the slow ones before it."""
    for item in items:
        # `-m control_plane` / `-m "not control_plane"`: CI runs the two halves as jobs of their
        # own (make test-cluster, make test-fast); `make test` runs both.
        if "control_plane" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.control_plane)
    durations: dict[str, float] = {}
    stats = Path("mutmut-stats.json")
    if os.environ.get("MUTANT_UNDER_TEST") and stats.is_file():
        durations = json.loads(stats.read_text(encoding="utf-8")).get("duration_by_test", {})
    items.sort(
        key=lambda item: (
            "control_plane" in getattr(item, "fixturenames", ()),
            durations.get(item.nodeid, 0.0),
        )
    )


@pytest.fixture(autouse=True, scope="session")
def _no_leftovers_under_mutmut(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """mutmut ends each mutant's process without pytest's exit handlers, so pytest's own cleanup
    never sees its tmp_path folders as unused: thousands of mutants filled the disk. Under
    mutmut each run removes its own folders when it ends."""
    yield
    if os.environ.get("MUTANT_UNDER_TEST"):
        shutil.rmtree(tmp_path_factory.getbasetemp(), ignore_errors=True)


@pytest.fixture(autouse=True)
def _checks_held_to_their_scopes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every view's values checks, in every test, held to the scope each declares first
    (tests/scope.py): a check that reads more than it says is a test failure wherever it
    fires."""
    from generator.policy import checks
    from tests.scope import Verified

    monkeypatch.setattr(checks, "_Layer", Verified)


@pytest.fixture(autouse=True)
def _recalled_digests_verified(monkeypatch: pytest.MonkeyPatch) -> None:
    """In every test, each digest of a team or of a view without its teams that a load recalls
    (policy/memo.py: by the values' fingerprint, or by their sources) is compared with the one
    made afresh: a part made of more than loader.Loaded's sources cover (another team's file)
    fails the test where it is recalled. With the functions as they were before the test
    patched any: its spies see nothing of it."""
    from generator.policy import memo

    # Digests' methods as they are before the test runs
    real = {name: value for name, value in vars(memo.Digests).items() if callable(value)}

    def verified(digests: memo.Digests, *args: Any) -> None:
        real["recall"](digests, *args)
        spied = {name: vars(memo.Digests)[name] for name in real}
        for name, function in real.items():
            setattr(memo.Digests, name, function)
        try:
            fresh = memo.Digests()
            for team, kept in digests.teams.values():
                if fresh.team(team) != kept:
                    raise AssertionError(f"team {team.name!r}: a stale digest recalled")
            for view, kept in digests.rests.values():
                if fresh.rest(view) != kept:
                    raise AssertionError(f"view {view.key!r} without teams: a stale digest")
        finally:
            for name, function in spied.items():
                setattr(memo.Digests, name, function)

    monkeypatch.setattr(memo.Digests, "recall", verified)


@pytest.fixture(autouse=True)
def _kept_unit_keys_verified(monkeypatch: pytest.MonkeyPatch) -> None:
    """In every test, each unit key validate takes from its memo (validate/planmemo.py) is
    compared with the one worked out afresh from the tree: a unit that reads a path the memo
    does not watch fails the test where its key is kept."""
    from generator.validate import cache, planmemo

    real = planmemo.unit_keys

    def verified(
        cache_dir: Path | None,
        tree: Any,
        digest_of: Any,
        salts: Any,
        reads: planmemo.Reads,
        previous: dict[str, str] | None = None,
    ) -> dict[str, str]:
        keys = real(cache_dir, tree, digest_of, salts, reads, previous)
        walk = cache.UnitInputs(tree, digest_of)
        for unit, salt in salts.items():
            if keys[unit] != cache.unit_key(digest_of, unit, salt, walk(unit)):
                raise AssertionError(f"unit {unit!r}: a stale key kept")
        return keys

    monkeypatch.setattr(planmemo, "unit_keys", verified)


@pytest.fixture
def values_dir(tmp_path: Path) -> Path:
    """A private copy of the example fleet's values, free to edit."""
    dest = tmp_path / "repo" / "values"
    shutil.copytree(EXAMPLE_VALUES, dest)
    return dest


@pytest.fixture
def write(values_dir: Path) -> Callable[[str, str], Path]:
    """Write (or overwrite) a file in the values copy: write("teams/x.yaml", text)."""

    def _write(rel: str, text: str) -> Path:
        path = values_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    return _write


@pytest.fixture
def committed(values_dir: Path) -> None:
    """The test starts from a committed render of its values copy, as a repository does."""
    assert render_committed(values_dir) == 0


@pytest.fixture
def extra_objects(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """Objects (unit, object) added to every environment as if a builder made them from the
    ml-team values: the way to feed validate a broken manifest the values cannot express."""
    from generator.builders import fleet as builders
    from generator.vocab.units import Component

    added: list[tuple[str, dict[str, Any]]] = []

    def extra(view: FleetView) -> list[Component]:
        team = next(t for t in view.teams if t.name == "ml-team")
        return [
            Component(unit, f"extra/{i}", [obj], origin=team.doc.anchor(("quota",)))
            for i, (unit, obj) in enumerate(added)
        ]

    monkeypatch.setattr(builders, "BUILDERS", (*builders.BUILDERS, builders.of_view(extra)))
    yield added


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """A real control plane (etcd, kube-apiserver, KCM, scheduler, KWOK, nfd-master) for the
    whole session; tests that use it are in one xdist group, so a parallel run starts one."""
    from generator.cluster.plane import control_plane as fleet_control_plane

    with fleet_control_plane() as plane:
        yield plane


@pytest.fixture
def cluster(control_plane: ControlPlane) -> Iterator[ControlPlane]:
    """The session's control plane, brought back to how it started after the test."""
    from generator.cluster.plane import reset

    yield control_plane
    reset(control_plane)
