"""The unit results validate keeps stay bounded (generator/validate/cache.py `settle`): an entry
stays while one of the last two runs of its scope used it; a shard's runs leave the other
shards' entries; entries of another format are removed."""

from __future__ import annotations

import json
import marshal
from pathlib import Path
from typing import Any

import pytest

from generator.validate.cache import settle
from generator.validate.run import ValidateOptions, validate
from tests.fixtures import cli, ml_tree, validate_committed


@pytest.fixture
def values(tmp_path: Path) -> Path:
    """A small tree (NVIDIA, 8 GPUs; teams ml-team and inference; staging and prod)."""
    return ml_tree(tmp_path, {"teams/inference.yaml": "quota:\n  nvidia: 1\n"})


def set_quota(values: Path, gpus: int) -> None:
    (values / "teams/inference.yaml").write_text(f"quota:\n  nvidia: {gpus}\n")


def entries(cache: Path) -> set[str]:
    """The unit results in the cache folder: every file of its two-hex-digit folders."""
    return {
        f"{folder.name}/{entry.name}"
        for folder in cache.iterdir()
        if len(folder.name) == 2 and folder.is_dir()
        for entry in folder.iterdir()
    }


def stats(values: Path, cache: Path, *args: str) -> dict[str, Any]:
    code, out = validate_committed(values, "--cache-dir", str(cache), "--output", "json", *args)
    assert code == 0, out
    return dict(json.loads(out)["stats"])


def test_repeated_edits_keep_the_entries_of_the_last_two_runs(values: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = stats(values, cache)
    assert first["cached units"] == 0
    start = entries(cache)
    # 12 units, of which a unit in staging and prod that neither patches shares its key
    assert (first["units"], len(start)) == (12, 7)
    counts = []
    for gpus in (2, 3, 4):
        set_quota(values, gpus)
        assert stats(values, cache)["cached units"] == first["units"] - 2
        counts.append(len(entries(cache)))
    # each edit changes team-inference in staging and prod (one key): the run before keeps its
    assert counts == [8, 8, 8]
    # the entries of a quota two edits back are gone, those of the last run stay
    set_quota(values, 3)
    assert stats(values, cache)["cached units"] == first["units"]
    set_quota(values, 2)
    assert stats(values, cache)["cached units"] == first["units"] - 2


def test_an_entry_every_run_uses_survives_any_number_of_runs(values: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = stats(values, cache)
    kept = entries(cache)
    for gpus in (2, 3, 4):
        set_quota(values, gpus)
        stats(values, cache)
    # the units the edits do not touch were read each run and never built again
    assert len(kept & entries(cache)) == 6
    set_quota(values, 1)
    assert stats(values, cache)["cached units"] == first["units"] - 2


def test_a_shard_s_runs_keep_what_the_other_shard_reads(values: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    one = stats(values, cache, "--shard", "1/2")
    two = stats(values, cache, "--shard", "2/2")
    assert (one["units"], two["units"]) == (8, 4)
    assert one["cached units"] == 0
    # shard 1 runs again and again (each run of its own scope drops its runs before the last
    # two), edited each time: shard 2's entries are not its to drop
    for gpus in (2, 3, 4, 2):
        set_quota(values, gpus)
        stats(values, cache, "--shard", "1/2")
    set_quota(values, 1)
    assert stats(values, cache, "--shard", "2/2")["cached units"] == 4
    # a whole run, once, drops nothing the shards' runs still use
    stats(values, cache)
    reports = []
    for k, units in ((1, 8), (2, 4)):
        code, text = validate_committed(
            values, "--cache-dir", str(cache), "--shard", f"{k}/2", "--output", "json"
        )
        assert json.loads(text)["stats"]["cached units"] == units
        reports.append(tmp_path / f"shard-{k}.json")
        reports[-1].write_text(text)
    # what --merge reads, the shards' reports, is one runner's verdict
    code, merged = cli("validate", "--merge", *map(str, reports))
    assert (code, merged) == validate_committed(values, "--cache-dir", str(cache))


def test_entries_of_another_format_are_removed(values: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    stats(values, cache)
    kept = entries(cache)
    old = {
        # a JSON entry of format 8, and a marshal entry no run of this folder recorded
        "ab/" + "ab" * 32 + ".json": b"{}",
        "cd/" + "cd" * 32 + ".marshal": marshal.dumps({"build": {}}),
        # a temporary file a killed run left
        "ef/tmpx1y2z3": b"",
    }
    for rel, data in old.items():
        (cache / rel).parent.mkdir(exist_ok=True)
        (cache / rel).write_bytes(data)
    stats(values, cache)
    assert entries(cache) == kept


def test_a_record_of_another_format_is_started_afresh(values: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    stats(values, cache)
    set_quota(values, 2)
    stats(values, cache)
    assert len(entries(cache)) == 8
    # an unreadable record keeps only this run's entries: what the last run used is not known
    (cache / "unit-uses.marshal").write_bytes(marshal.dumps({"format": "unit-uses-0"}))
    set_quota(values, 3)
    stats(values, cache)
    assert len(entries(cache)) == 7


def put(cache: Path, key: str) -> None:
    """An entry as a run writes it."""
    (cache / key[:2]).mkdir(exist_ok=True)
    (cache / key[:2] / f"{key}.marshal").write_bytes(b"")


def test_a_scope_that_has_not_run_in_the_last_16_runs_is_forgotten(tmp_path: Path) -> None:
    old, new = "ab" * 32, "cd" * 32
    put(tmp_path, old)
    settle(tmp_path, "env=* shard=1/2", [old])
    put(tmp_path, new)
    for _ in range(15):
        settle(tmp_path, "env=* shard=2/2", [new])
    assert entries(tmp_path) == {f"ab/{old}.marshal", f"cd/{new}.marshal"}
    settle(tmp_path, "env=* shard=2/2", [new])
    assert entries(tmp_path) == {f"cd/{new}.marshal"}


def test_shards_taking_turns_in_one_folder_keep_theirs_past_16_runs(tmp_path: Path) -> None:
    keys = [f"{k:02x}" * 32 for k in range(1, 11)]
    for k, key in enumerate(keys, 1):
        put(tmp_path, key)
        settle(tmp_path, f"shard={k}/10", [key], shards=10)
    for key in [*keys[1:], keys[1]]:
        settle(tmp_path, "shard=other/10", [key], shards=10)
    # shard 1's run is the 20th last: within twice the shard count
    assert len(entries(tmp_path)) == 10
    settle(tmp_path, "shard=other/10", [keys[1]], shards=10)
    assert len(entries(tmp_path)) == 9


def test_a_partial_run_keeps_the_rules_findings_of_the_units_it_did_not_check(
    values: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The manifest rules' memo (policy/memo.RuleMemo): a shard's run, or one environment's,
    leaves the findings of the other units of each view, and the entries of the other views."""
    from generator.policy import registry

    ran: list[str] = []
    run_rules = registry.run_rules

    def spy(ctx: Any, unit: Any, objs: Any) -> Any:
        ran.append(unit.path)
        return run_rules(ctx, unit, objs)

    monkeypatch.setattr(registry, "run_rules", spy)
    cache = tmp_path / "cache"

    def rules_ran(*args: str) -> int:
        ran.clear()
        stats(values, cache, *args)
        return len(ran)

    assert rules_ran("--shard", "1/2") == 8
    assert rules_ran("--shard", "2/2") == 4
    assert rules_ran("--shard", "1/2") == 0
    assert rules_ran("--shard", "2/2") == 0
    assert rules_ran("--env", "staging") == 0
    assert rules_ran() == 0


@pytest.mark.parametrize(
    "partial", [["--env", "staging"], ["--skip", "promtool"]], ids=["env", "skip"]
)
def test_runs_of_another_scope_leave_a_whole_run_s_entries(
    values: Path, tmp_path: Path, partial: list[str]
) -> None:
    cache = tmp_path / "cache"
    whole = stats(values, cache)
    for gpus in (2, 3, 4):
        set_quota(values, gpus)
        stats(values, cache, *partial)
    set_quota(values, 1)
    assert stats(values, cache)["cached units"] == whole["units"]


def test_runs_of_another_engine_leave_a_whole_run_s_entries(values: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    whole = stats(values, cache)
    # the reference engine (a kustomize process per unit), which only the library offers
    options = ValidateOptions(values, cache_dir=cache, drift=False, engine="processes")
    assert [validate(options).cached_units for _ in range(3)] == [0, 12, 12]
    assert stats(values, cache)["cached units"] == whole["units"]


FOLDERS = ["values", "checks", "rules", "components", "layouts", "dump-cache"]


def test_a_killed_run_s_temporary_files_are_removed_from_every_folder(
    values: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    stats(values, cache)
    for name in FOLDERS:
        (cache / name).mkdir(exist_ok=True)
        # as write_atomically names them: tempfile.mkstemp's in the entry's folder
        (cache / name / "tmpk1ll3d").write_bytes(b"half an entry")
    set_quota(values, 2)
    stats(values, cache)  # render, then validate
    assert [name for name in FOLDERS if (cache / name / "tmpk1ll3d").exists()] == []
