"""Checks by scope (policy/checks.py): the memo runs a check of each team on its own on a team
whose values changed, and only there; a check of no team not at all on a team's edit; a check
of the whole view on each view that changed. A check that reads more than its scope is refused
wherever a test runs it (tests/scope.py).

TWO_CLUSTERS: the base layer holds teams inference and ml; prod/main both (NVIDIA, Ascend),
prod/domestic ml alone (Cambricon).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from generator.builders.fleet import build_values
from generator.findings import Finding, Location
from generator.policy import checks, registry
from generator.policy.checks import NO_TEAM, PER_TEAM, WHOLE, Check, run_checks
from generator.policy.context import Context
from generator.policy.memo import CheckMemo, Digests
from generator.values import loader
from tests.fixtures import PROD_FLEET, TWO_CLUSTERS, spied_team_digests, tree
from tests.scope import ScopeError, Verified


@pytest.fixture
def values_dir(tmp_path: Path) -> Path:
    return tree(tmp_path / "repo", TWO_CLUSTERS, fleet=PROD_FLEET)


def _at(team: str) -> Finding:
    return Finding("XX001", f"team {team}", Location(f"values/teams/{team}.yaml", 1, 1), "", "")


class Spy:
    """A check's function that records the teams of each view it reads and finds one finding
    per team."""

    def __init__(self) -> None:
        self.read: list[tuple[str, tuple[str, ...]]] = []

    def __call__(self, ctx: Context) -> Iterable[Finding]:
        names = tuple(t.name for t in ctx.view.teams)
        self.read.append((ctx.view.key, names))
        return [_at(name) for name in names]


@pytest.fixture
def unverified(monkeypatch: pytest.MonkeyPatch) -> None:
    """The views' check runner as it is: the spies below count what the memo runs, not what
    tests/scope.py runs to hold them to their scopes."""
    monkeypatch.setattr(checks, "_Layer", Verified.__base__)


def run(values_dir: Path, memo: Path, *chosen: Check) -> tuple[CheckMemo, list[Finding]]:
    """The checks' memo in `memo` as render runs it: the views' digests recalled from and kept
    beside it."""
    found = loader.load_all(values_dir)
    digests = Digests()
    digests.recall(found, memo.parent / "views", True)
    kept = CheckMemo(memo, write=True, digests=digests)
    findings = run_checks(found.values, build_values(found.values), chosen, kept)
    digests.keep()
    return kept, findings


def test_the_tests_hold_every_check_to_its_scope() -> None:
    assert checks._Layer is Verified


def test_a_check_of_each_team_that_compares_teams_is_refused(values_dir: Path) -> None:
    def crowded(ctx: Context) -> list[Finding]:
        return [_at("all")] if len(ctx.view.teams) > 1 else []

    loaded = loader.load(values_dir)
    with pytest.raises(ScopeError, match="XX001 is scoped 'each team on its own' but finds on"):
        run_checks(loaded, build_values(loaded), [Check("XX001", "s", crowded, scope=PER_TEAM)])


def test_a_check_of_no_team_that_reads_a_team_is_refused(values_dir: Path) -> None:
    loaded = loader.load(values_dir)
    with pytest.raises(ScopeError, match="XX001 is scoped 'no team' but finds on view ''"):
        run_checks(loaded, build_values(loaded), [Check("XX001", "s", Spy(), scope=NO_TEAM)])


def test_a_check_of_each_team_cannot_read_the_components(values_dir: Path) -> None:
    def built(ctx: Context) -> list[Finding]:
        return [_at(str(len(ctx.build.components)))]

    loaded = loader.load(values_dir)
    with pytest.raises(TypeError, match="a check of each team on its own reads no component"):
        run_checks(loaded, build_values(loaded), [Check("XX001", "s", built, scope=PER_TEAM)])


@pytest.mark.usefixtures("unverified")
def test_a_teams_edit_runs_its_checks_on_that_team_alone(values_dir: Path, tmp_path: Path) -> None:
    """ml's edit changes the base layer and prod/domestic (its job's cluster): the checks of
    each team run on ml in those two views only; those of no team nowhere; those of the whole
    view on both; and the findings are a cold run's."""
    memo = tmp_path / "memo"
    each, none, whole = Spy(), Spy(), Spy()
    chosen = (
        Check("XX001", "s", each, scope=PER_TEAM),
        Check("XX002", "s", none, scope=NO_TEAM),
        Check("XX003", "s", whole, scope=WHOLE),
    )
    first, found = run(values_dir, memo, *chosen)
    assert first.teams_checked == 5  # base: 2, prod/main: 2, prod/domestic: 1
    ml = values_dir / "teams" / "ml.yaml"
    ml.write_text(ml.read_text().replace("devices: 2", "devices: 1"))
    for spy in (each, none, whole):
        spy.read.clear()
    again, after = run(values_dir, memo, *chosen)
    assert each.read == [("", ("ml",)), ("prod/domestic", ("ml",))]
    assert none.read == []
    assert whole.read == [("", ("inference", "ml")), ("prod/domestic", ("ml",))]
    assert again.teams_checked == 2
    assert again.checked == ["", "prod/domestic"]
    assert after == found  # the spies' findings name the teams, not the job
    loaded = loader.load(values_dir)
    assert after == run_checks(loaded, build_values(loaded), chosen)


@pytest.mark.usefixtures("unverified")
def test_a_vendors_edit_runs_every_teams_checks_of_its_views(
    values_dir: Path, tmp_path: Path
) -> None:
    """Cambricon's pools are in the base layer and prod/domestic: both views' data but teams
    changed, so every team's checks run there again, and prod/main is answered whole."""
    memo = tmp_path / "memo"
    each, none = Spy(), Spy()
    chosen = (Check("XX001", "s", each, scope=PER_TEAM), Check("XX002", "s", none, scope=NO_TEAM))
    run(values_dir, memo, *chosen)
    vendor = values_dir / "vendors" / "cambricon.yaml"
    vendor.write_text(vendor.read_text() + "costWeight: 2\n")
    each.read.clear()
    none.read.clear()
    again, _ = run(values_dir, memo, *chosen)
    assert each.read == [("", ("inference",)), ("", ("ml",)), ("prod/domestic", ("ml",))]
    assert none.read == [("", ()), ("prod/domestic", ())]
    assert again.teams_checked == 3


def test_the_checks_memo_keeps_by_team_the_checks_that_read_one_team() -> None:
    """The registry's scopes, which the memo's speed on one team's edit rests on; each is held
    to what it says wherever a test runs it."""
    scopes = {code: chk.scope for code, chk in registry.CHECKS.items()}
    assert sorted(c for c, s in scopes.items() if s == WHOLE) == [
        "CAP001", "MIG005", "MIG007", "MON003", "NAME004", "NAME008", "SCH006",
    ]  # fmt: skip
    assert sorted(c for c, s in scopes.items() if s == NO_TEAM) == [
        "CAP002", "KVER003", "MIR001", "MIR002", "MIR003", "MIR004", "MON001", "MON002",
        "NAME003", "NODE001", "NODE002", "NODE003", "NODE004", "NODE005", "PRV001", "PRV002",
        "PRV003", "PRV004", "RES001", "RES004", "SCH010", "VER001",
    ]  # fmt: skip
    assert len([c for c, s in scopes.items() if s == PER_TEAM]) == 39


def test_a_view_that_did_not_change_digests_none_of_its_teams(
    values_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A view whose digest is its entry's is answered whole; after ml's edit only ml's digests
    are made (inference's are kept by their sources), in every view that holds ml: the edit
    changes the base layer and prod/domestic, not prod/main."""
    memo = tmp_path / "memo"
    chosen = list(registry.CHECKS.values())
    run(values_dir, memo, *chosen)
    digested = spied_team_digests(monkeypatch)
    again, _ = run(values_dir, memo, *chosen)
    assert (again.checked, digested) == ([], [])
    ml = values_dir / "teams" / "ml.yaml"
    ml.write_text(ml.read_text().replace("devices: 2", "devices: 1"))
    edited, _ = run(values_dir, memo, *chosen)
    assert edited.checked == ["", "prod/domestic"]
    assert digested == ["ml", "ml", "ml"]


@pytest.mark.usefixtures("unverified")
def test_the_findings_of_no_team_are_kept_through_a_teams_edit(
    values_dir: Path, tmp_path: Path
) -> None:
    """A check of no team that finds something: found once per view, then read back, through
    ml's edit too (which changes two views, not their data but teams); and without a folder,
    every team of every view is checked."""
    memo = tmp_path / "memo"
    fleet_finding = Finding("XX002", "the fleet", Location("values/fleet.yaml", 1, 1), "", "")
    ran: list[str] = []

    def fleet_wide(ctx: Context) -> list[Finding]:
        ran.append(ctx.view.key)
        return [fleet_finding]

    chosen = (
        Check("XX002", "s", fleet_wide, scope=NO_TEAM),
        Check("XX001", "s", Spy(), scope=PER_TEAM),
    )
    _, found = run(values_dir, memo, *chosen)
    assert ran == ["", "prod/main", "prod/domestic"]
    assert [f for f in found if f.code == "XX002"] == [fleet_finding]
    ml = values_dir / "teams" / "ml.yaml"
    ml.write_text(ml.read_text().replace("devices: 2", "devices: 1"))
    _, after = run(values_dir, memo, *chosen)
    assert (ran, after) == (["", "prod/main", "prod/domestic"], found)
    cold = CheckMemo(None, write=False)
    loaded = loader.load(values_dir)
    assert run_checks(loaded, build_values(loaded), chosen, cold) == found
    assert cold.teams_checked == 5  # base: 2, prod/main: 2, prod/domestic: 1
