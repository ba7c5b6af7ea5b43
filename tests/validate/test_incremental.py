"""Incremental render and validate equal a full run: after any edit, through any kind of input
(a team, a vendor, a catalog entry, the environment, a cluster, a tool's version, the
generator's code), the tree a warm render writes is byte for byte the tree a fresh render writes
in an empty folder without caches, and validate's findings with its caches and stat index are a
cold validate's.

The fleet is benchmarks/fleet.py's generator at its smallest with clusters: prod as two
clusters, four teams, each team in both with its workloads in one.
"""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.fleet import make_values
from generator.errors import FindingsError
from generator.findings import Finding
from generator.policy import memo
from generator.render import treeindex
from generator.render.stage import RenderOptions, render
from generator.render.writer import read_tree
from generator.toolchain import gobuild
from generator.validate.run import ValidateOptions, ValidateResult, validate
from generator.values import filecache, loader
from generator.values.model import FleetView
from generator.values.yamlio import dump

CLUSTERS = ("c00", "c01")
TEAMS = 4
VENDORS = ("nvidia", "amd", "ascend", "hygon", "cambricon")


def read(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def write(path: Path, data: Any) -> None:
    path.write_text(dump(data), encoding="utf-8")


# The edits: each changes the values (or what the run reads besides them) through one kind of
# input, drawing what it changes from `rng`.


def edit_team(values: Path, rng: random.Random) -> str:
    path = values / "teams" / f"team-{rng.randrange(TEAMS):04d}.yaml"
    raw = read(path)
    vendor = rng.choice(sorted(raw["quota"]))
    shares = raw["quota"][vendor]
    cluster = rng.choice(CLUSTERS)
    shares[cluster] = shares[cluster] % 4 + 1  # never the same
    write(path, raw)
    return f"team {path.stem}: {vendor} quota"


def edit_vendor(values: Path, rng: random.Random) -> str:
    vendor = rng.choice(VENDORS)
    path = values / "vendors" / f"{vendor}.yaml"
    raw = read(path)
    pool = rng.choice(raw["pools"])
    pool["nodes"].append(f"{vendor}-{pool['name']}-extra{len(pool['nodes'])}")
    write(path, raw)
    return f"vendor {vendor}: a node in pool {pool['name']}"


def edit_environment(values: Path, rng: random.Random) -> str:
    path = values / "environments" / "prod.yaml"
    raw = read(path)
    team = f"team-{rng.randrange(TEAMS):04d}"
    cluster = rng.choice(CLUSTERS)
    raw.setdefault("teams", {})[team] = {"quota": {"nvidia": {cluster: rng.randint(1, 3)}}}
    write(path, raw)
    return f"environment prod: {team}'s nvidia quota in {cluster}"


def edit_cluster(values: Path, rng: random.Random) -> str:
    path = values / "environments" / "prod.yaml"
    raw = read(path)
    cluster = rng.choice(CLUSTERS)
    raw["clusters"][cluster]["labels"] = {"region": rng.choice(["east", "west", "north"])}
    write(path, raw)
    return f"cluster {cluster}: its region label"


def break_team(values: Path, rng: random.Random) -> str:
    """An edit the checks refuse: both runs must report the same findings."""
    path = values / "teams" / f"team-{rng.randrange(TEAMS):04d}.yaml"
    raw = read(path)
    raw["quota"]["nvidia"][rng.choice(CLUSTERS)] = 10_000
    write(path, raw)
    return f"team {path.stem}: a quota no pool holds"


class Process:
    """What a run reads besides the values, moved as a new release or a site's tools would:
    the catalog's NVIDIA entry, the kubeconform version pinned, the generator's code."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.catalog_note = ""
        self.kubeconform = ""
        self.code = ""
        built_in = loader.catalog()
        real_digest = filecache.code_digest()
        real_version = gobuild.version

        def catalog() -> dict[str, Any]:
            if not self.catalog_note:
                return built_in
            data, where = built_in["nvidia"]
            nvidia = {
                **data,
                "nodeLabels": {**data.get("nodeLabels", {}), "note": self.catalog_note},
            }
            return {**built_in, "nvidia": (nvidia, where)}

        def version(tool: str) -> str:
            found = real_version(tool)
            return found + self.kubeconform if tool == "kubeconform" else found

        monkeypatch.setattr(loader, "catalog", catalog)
        monkeypatch.setattr(filecache, "code_digest", lambda: real_digest + self.code)
        monkeypatch.setattr(memo, "code_digest", lambda: real_digest + self.code)
        monkeypatch.setattr(gobuild, "version", version)
        memo.salt.cache_clear()

    def edit_catalog(self, values: Path, rng: random.Random) -> str:
        self.catalog_note = f"n{rng.randrange(1000)}"
        return "catalog entry nvidia: a node label"

    def edit_tool(self, values: Path, rng: random.Random) -> str:
        self.kubeconform = f"+{rng.randrange(1000)}"
        memo.salt.cache_clear()
        return "kubeconform's version"

    def edit_generator(self, values: Path, rng: random.Random) -> str:
        self.code = f"+{rng.randrange(1000)}"
        memo.salt.cache_clear()
        return "the generator's code"


Row = tuple[Any, ...]


def rows(findings: list[Finding]) -> list[Row]:
    return [
        (f.code, f.severity.value, f.message, f.location.file, f.location.line, f.path)
        for f in findings
    ]


def outcome(values: Path, out: Path, cache: Path | None) -> tuple[Any, list[Row], ValidateResult]:
    """(the tree render wrote, or the findings it refused the values with; validate's findings;
    validate's result)."""
    try:
        render(RenderOptions(values, out, cache_dir=cache))
        written: Any = read_tree(out)
    except FindingsError as exc:
        written = rows(exc.findings)
    result = validate(ValidateOptions(values, cache_dir=cache, committed=out))
    return written, rows(result.findings), result


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Process]]:
    values = tmp_path / "values"
    make_values(values, TEAMS, clusters=len(CLUSTERS))
    # The files a render writes are trusted by their stat only 2 s later: move the scans' clock
    # on, so that the incremental runs take the index's path as a user's next edit would.
    monkeypatch.setattr(treeindex, "now_ns", lambda: time.time_ns() + 10**10)
    yield values, Process(monkeypatch)


class Runs:
    def __init__(self, values: Path, work: Path) -> None:
        self.values, self.work, self.n = values, work, 0
        self.out, self.cache = work / "out", work / "cache"

    def step(self) -> ValidateResult:
        """The warm run and a full one on the values as they are: equal."""
        warm, warm_found, result = outcome(self.values, self.out, self.cache)
        self.n += 1
        fresh = self.work / f"fresh-{self.n}"
        full, full_found, _ = outcome(self.values, fresh, None)
        shutil.rmtree(fresh, ignore_errors=True)  # a refused render wrote nothing
        assert warm == full
        assert warm_found == full_found
        return result


Edit = Callable[[Path, random.Random], str]


def edits(process: Process) -> dict[str, Edit]:
    return {
        "team": edit_team,
        "vendor": edit_vendor,
        "catalog": process.edit_catalog,
        "environment": edit_environment,
        "cluster": edit_cluster,
        "tool": process.edit_tool,
        "generator": process.edit_generator,
        "broken": break_team,
    }


KINDS = ["team", "vendor", "catalog", "environment", "cluster", "tool", "generator", "broken"]


@settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=3,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 2**16)), min_size=3, max_size=4))
def test_incremental_runs_equal_a_full_run_after_any_sequence_of_edits(
    fleet: tuple[Path, Process], tmp_path_factory: pytest.TempPathFactory, steps: list[Any]
) -> None:
    values, process = fleet
    work = tmp_path_factory.mktemp("seq")
    seq = work / "values"
    shutil.copytree(values, seq)
    runs = Runs(seq, work)
    runs.step()
    for kind, seed in steps:
        edits(process)[kind](seq, random.Random(seed))
        runs.step()


def test_kinds_cover_every_edit(fleet: tuple[Path, Process]) -> None:
    assert sorted(edits(fleet[1])) == sorted(KINDS)


def one_edit(fleet: tuple[Path, Process], tmp_path: Path, kind: str) -> ValidateResult:
    values, process = fleet
    runs = Runs(values, tmp_path / "runs")
    first = runs.step()
    assert first.cached_units == 0
    runs.step()  # warm: nothing changed
    edits(process)[kind](values, random.Random(7))
    return runs.step()


def test_a_team_edit_rebuilds_only_that_teams_units(
    fleet: tuple[Path, Process], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[list[str]] = []
    real = memo.RuleMemo.save

    def save(self: memo.RuleMemo, views: Iterable[FleetView] = ()) -> None:
        if self.entries.folder is not None:  # the warm runs': the full ones keep nothing
            ran.append(sorted(self.ran))  # cached units first, while the tools build the others
        real(self, views)

    monkeypatch.setattr(memo.RuleMemo, "save", save)
    result = one_edit(fleet, tmp_path, "team")
    # The rules: on every unit first, on none warm, then on the units of the views the edit
    # changed but the other teams' (kept by their team: policy/memo.RuleMemo). The team's file
    # is in its share in c00 too, so its unit there is checked again though its objects are
    # the same.
    c01 = [f"overlays/prod/c01/{u}" for u in ("argocd", "device-plugins", "monitoring")]
    assert ran[1:] == [
        [],
        [
            "overlays/prod/argocd",
            "overlays/prod/c00/team-team-0002",
            *c01,
            "overlays/prod/c01/node-config",
            "overlays/prod/c01/team-team-0002",
        ],
    ]
    assert len(ran[0]) == 17
    # random.Random(7) picks team-0002's Ascend quota in c01 (4 -> 1): its ResourceQuota in
    # c01 and that cluster's per-team recording rules change (its team and monitoring units):
    # the other 15 units' verdicts are the cache's.
    assert (result.units, result.cached_units) == (17, 15)


def test_a_vendor_edit_equals_a_full_run(fleet: tuple[Path, Process], tmp_path: Path) -> None:
    one_edit(fleet, tmp_path, "vendor")


def test_a_catalog_entry_edit_equals_a_full_run(
    fleet: tuple[Path, Process], tmp_path: Path
) -> None:
    result = one_edit(fleet, tmp_path, "catalog")
    assert result.cached_units < result.units  # the node label is in every cluster's units


def test_an_environment_edit_equals_a_full_run(fleet: tuple[Path, Process], tmp_path: Path) -> None:
    one_edit(fleet, tmp_path, "environment")


def test_a_cluster_edit_equals_a_full_run(fleet: tuple[Path, Process], tmp_path: Path) -> None:
    one_edit(fleet, tmp_path, "cluster")


def test_a_tool_version_change_checks_every_unit_again(
    fleet: tuple[Path, Process], tmp_path: Path
) -> None:
    assert one_edit(fleet, tmp_path, "tool").cached_units == 0


def test_a_generator_change_checks_every_unit_and_view_again(
    fleet: tuple[Path, Process], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[list[str]] = []
    real = memo.CheckMemo.save

    def save(self: memo.CheckMemo) -> None:
        if self.entries.folder is not None:  # the warm runs': the full ones keep nothing
            checked.append(list(self.checked))
        real(self)

    monkeypatch.setattr(memo.CheckMemo, "save", save)
    result = one_edit(fleet, tmp_path, "generator")
    assert result.cached_units == 0
    views = ["", "prod/c00", "prod/c01"]  # the base layer and the two clusters
    # render then validate, three times: the first render checks every view, the second and
    # validates none (remembered), the render after the change every view again.
    assert checked == [views, [], [], [], views, []]


def test_a_values_error_is_reported_alike(fleet: tuple[Path, Process], tmp_path: Path) -> None:
    one_edit(fleet, tmp_path, "broken")
