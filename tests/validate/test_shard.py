"""validate --shard K/N and --merge: the merged report of the shards is the unsharded report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.fleet import ENVS, make_values
from tests.fixtures import cli

N = 3


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    """A rendered synthetic fleet of 9 teams, three of them hand-broken in the committed tree."""
    values = tmp_path / "repo" / "values"
    make_values(values, 9)
    assert cli("render", "--values", str(values))[0] == 0
    for team in ("team-0001", "team-0004", "team-0007"):
        ns = values.parent / f"base/teams/{team}/namespace-{team}.yaml"
        ns.write_text(ns.read_text() + "bogus: true\n")
    return values


def test_shards_split_the_units_and_merge_into_the_unsharded_report(
    fleet: Path, tmp_path: Path
) -> None:
    base = ["validate", "--values", str(fleet), "--no-cache"]
    code, whole_text = cli(*base)
    assert code == 1
    assert whole_text.count("K8S001") == 3 * len(ENVS)
    code, whole_json = cli(*base, "--output", "json")
    whole = json.loads(whole_json)

    reports = []
    for k in range(1, N + 1):
        code, text = cli(*base, "--shard", f"{k}/{N}", "--output", "json")
        assert code in (0, 1), text
        doc = json.loads(text)
        assert doc["stats"]["shard"]["index"] == k
        assert 0 < doc["stats"]["units"] < whole["stats"]["units"]
        # every environment of a unit is in the same shard
        assert doc["stats"]["units"] % len(ENVS) == 0
        reports.append(tmp_path / f"shard-{k}.json")
        reports[-1].write_text(text)
    tools_findings = [
        sum(f["code"] == "K8S001" for f in json.loads(r.read_text())["findings"]) for r in reports
    ]
    assert sum(tools_findings) == 3 * len(ENVS) and max(tools_findings) < 3 * len(ENVS)

    code, merged_text = cli("validate", "--merge", *map(str, reports))
    assert code == 1
    assert merged_text == whole_text
    code, merged_json = cli("validate", "--output", "json", "--merge", *map(str, reversed(reports)))
    merged = json.loads(merged_json)
    for doc in (merged, whole):
        doc["stats"].pop("timings")
    assert merged == whole


def test_merge_refuses_an_incomplete_or_mixed_set(fleet: Path, tmp_path: Path) -> None:
    base = ["validate", "--values", str(fleet), "--no-cache", "--output", "json"]
    paths = []
    for k in (1, 2):
        path = tmp_path / f"{k}.json"
        path.write_text(cli(*base, "--shard", f"{k}/{N}")[1])
        paths.append(str(path))
    code, out = cli("validate", "--merge", *paths)
    assert code == 2 and f"error: missing shard(s) 3/{N} of the run" in out
    code, out = cli("validate", "--merge", paths[0], paths[0])
    assert code == 2 and "are both shard 1" in out
    # shard 3 of another state of the repository
    ns = fleet.parent / "base/teams/team-0002/namespace-team-0002.yaml"
    ns.write_text(ns.read_text() + "# edited\n")
    other = tmp_path / "3.json"
    other.write_text(cli(*base, "--shard", f"3/{N}")[1])
    code, out = cli("validate", "--merge", *paths, str(other))
    assert code == 2 and "the reports are not shards of one run" in out
    unsharded = tmp_path / "whole.json"
    unsharded.write_text(cli(*base)[1])
    code, out = cli("validate", "--merge", str(unsharded))
    assert code == 2 and "is not a report of `validate --shard K/N --output json`" in out


@pytest.mark.parametrize("bad", ["0/3", "4/3", "3", "a/b", "1/0"])
def test_a_bad_shard_is_a_usage_error(fleet: Path, bad: str) -> None:
    code, out = cli("validate", "--values", str(fleet), "--shard", bad)
    assert code == 2 and f"--shard {bad!r}: expected K/N with 1 <= K <= N" in out


def test_a_fleet_of_clusters_shards_and_merges_into_the_unsharded_report(tmp_path: Path) -> None:
    """prod as three clusters (benchmarks/fleet.py --clusters 3), one team's namespace broken in
    the base every cluster patches: each shard reports the clusters it checks, and the merge
    equals the unsharded run."""
    values = tmp_path / "repo" / "values"
    make_values(values, 9, clusters=3)
    assert cli("render", "--values", str(values))[0] == 0
    ns = values.parent / "base/teams/team-0001/namespace-team-0001.yaml"
    ns.write_text(ns.read_text() + "bogus: true\n")
    base = ["validate", "--values", str(values), "--no-cache", "--output", "json"]
    code, whole_json = cli(*base)
    whole = json.loads(whole_json)
    broken = [f for f in whole["findings"] if f["code"] == "K8S001"]
    assert code == 1 and sorted(f["unit"] for f in broken) == [
        f"overlays/prod/c0{c}/team-team-0001" for c in range(3)
    ]
    reports = []
    for k in range(1, N + 1):
        code, text = cli(*base, "--shard", f"{k}/{N}")
        doc = json.loads(text)
        assert 0 < doc["stats"]["units"] < whole["stats"]["units"]
        reports.append(tmp_path / f"shard-{k}.json")
        reports[-1].write_text(text)
    # the one team's three clusters did not all land in one shard
    per_shard = [
        sum(f["code"] == "K8S001" for f in json.loads(r.read_text())["findings"]) for r in reports
    ]
    assert sum(per_shard) == 3 and max(per_shard) < 3
    code, merged_json = cli("validate", "--output", "json", "--merge", *map(str, reports))
    merged = json.loads(merged_json)
    for doc in (merged, whole):
        doc["stats"].pop("timings")
    assert merged == whole
