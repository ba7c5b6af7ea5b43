"""validate --shard K/N and --merge: the merged report of the shards is the unsharded report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.fleet import ENVS, make_values
from generator.validate import shard
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


def test_findings_of_every_kind_merge_into_the_unsharded_verdict(tmp_path: Path) -> None:
    """Values checks (CAP001, reported by every shard), drift of a team's values edited after
    the render (global too), and the tools' verdicts on hand-broken units that land in
    different shards: the merge gives the unsharded text, JSON, JUnit, GitHub annotations and
    exit code."""
    values = tmp_path / "repo" / "values"
    make_values(values, 9)
    assert cli("render", "--values", str(values))[0] == 0
    team = values / "teams/team-0004.yaml"
    assert "        replicas: 1\n" in team.read_text()
    team.write_text(team.read_text().replace("        replicas: 1\n", "        replicas: 2\n", 1))
    for name in ("team-0001", "team-0006", "team-0008"):  # in shards 3, 2 and 1 of 3
        ns = values.parent / f"base/teams/{name}/namespace-{name}.yaml"
        ns.write_text(ns.read_text() + "bogus: true\n")
    base = ["validate", "--values", str(values), "--no-cache"]
    reports = []
    for k in range(1, N + 1):
        code, text = cli(*base, "--shard", f"{k}/{N}", "--output", "json")
        assert code == 1, text
        reports.append(tmp_path / f"shard-{k}.json")
        reports[-1].write_text(text)
    shards = [json.loads(r.read_text())["findings"] for r in reports]
    # every shard repeats the global findings; the units' findings are split between shards
    for found in shards:
        assert {"CAP001", "DRIFT001"} <= {f["code"] for f in found}
    broken = [sorted({f["unit"] for f in found if f["code"] == "K8S001"}) for found in shards]
    assert sorted(u for units in broken for u in units) == sorted(
        f"overlays/{env}/team-team-{team}" for team in ("0001", "0006", "0008") for env in ENVS
    )
    assert [len(units) for units in broken] == [len(ENVS)] * N  # a team's units in each shard
    for output in ("text", "json", "junit", "github"):
        code, whole = cli(*base, "--output", output)
        assert code == 1
        merged_code, merged = cli("validate", "--merge", "--output", output, *map(str, reports))
        assert merged_code == 1
        if output == "json":
            whole_doc, merged_doc = json.loads(whole), json.loads(merged)
            for doc in (whole_doc, merged_doc):
                doc["stats"].pop("timings")
            assert merged_doc == whole_doc
            codes = {f["code"] for f in whole_doc["findings"]}
            assert {"CAP001", "DRIFT001", "K8S001"} <= codes
        else:
            assert merged == whole, output


def test_merge_says_which_shard_is_missing_or_doubled(tmp_path: Path) -> None:
    """A shard whose runner failed leaves no report: the merge names it, as it names a shard
    given twice (two runners that ran the same K), and exits 2."""
    values = tmp_path / "repo" / "values"
    make_values(values, 5)
    assert cli("render", "--values", str(values))[0] == 0
    base = ["validate", "--values", str(values), "--no-cache", "--output", "json"]
    paths = []
    for k in range(1, 5):
        paths.append(tmp_path / f"validate-{k}.json")
        paths[-1].write_text(cli(*base, "--shard", f"{k}/4")[1])
    code, out = cli("validate", "--merge", *map(str, (paths[0], paths[2])))
    assert code == 2
    assert out == "error: missing shard(s) 2/4, 4/4 of the run\n"
    twice = tmp_path / "copy-of-3.json"
    twice.write_text(paths[2].read_text())
    code, out = cli("validate", "--merge", *map(str, paths), str(twice))
    assert code == 2
    assert out == f"error: {twice} and {paths[2]} are both shard 3\n"
    code, _ = cli("validate", "--merge", *map(str, paths))
    assert code == 0


# ---- --matrix: how many runners a CI run uses ----------------------------------------------------
def _units(home: Path, layer: str, count: int) -> None:
    """`count` committed units in overlays/<layer>/, as render lays them out (names only)."""
    for i in range(count):
        unit = home / "overlays" / layer / f"team-{i:05d}"
        unit.mkdir(parents=True)
        (unit / "kustomization.yaml").write_text("")


@pytest.mark.parametrize(
    ("units", "want"),
    [
        (1, "[]"),
        (5000, "[]"),
        (5001, '["1/2", "2/2"]'),
        (15001, '["1/4", "2/4", "3/4", "4/4"]'),
    ],
)
def test_matrix_auto_takes_a_runner_per_5000_units(tmp_path: Path, units: int, want: str) -> None:
    _units(tmp_path, "prod", units)
    code, out = cli("validate", "--values", str(tmp_path / "values"), "--matrix", "auto")
    assert (code, out) == (0, want + "\n")


def test_matrix_auto_takes_at_most_8_runners() -> None:
    assert shard.runners("auto", 40000) == 8
    assert shard.runners("auto", 40001) == 8
    assert shard.runners("auto", 35001) == 8
    assert shard.runners("auto", 35000) == 7
    assert shard.runners("auto", 0) == 1


def test_matrix_counts_the_units_env_selects_and_only_units(tmp_path: Path) -> None:
    """Every cluster's and environment's units count; `--env` counts its own; a unit's patches/
    and the bases are not units."""
    _units(tmp_path, "prod/c00", 3000)
    _units(tmp_path, "prod/c01", 3000)
    _units(tmp_path, "staging", 4900)
    (tmp_path / "overlays/staging/team-00000/patches").mkdir()
    (tmp_path / "overlays/staging/team-00000/patches/kustomization.yaml").write_text("")
    (tmp_path / "base/teams/x").mkdir(parents=True)
    (tmp_path / "base/teams/x/kustomization.yaml").write_text("")
    base = ["validate", "--values", str(tmp_path / "values"), "--matrix", "auto"]
    assert cli(*base) == (0, '["1/3", "2/3", "3/3"]\n')  # 10,900 units
    assert cli(*base, "--env", "prod") == (0, '["1/2", "2/2"]\n')  # 6,000
    assert cli(*base, "--env", "prod/c00") == (0, "[]\n")  # 3,000
    assert cli(*base, "--env", "staging") == (0, "[]\n")  # 4,900, the patches not a unit
    # --committed says where the tree is, as for validate itself
    other = tmp_path / "elsewhere"
    _units(other, "prod", 5001)
    assert cli(*base, "--committed", str(other)) == (0, '["1/2", "2/2"]\n')


def test_matrix_of_a_number_of_runners_whatever_the_fleet(fleet: Path) -> None:
    base = ["validate", "--values", str(fleet)]
    assert cli(*base, "--matrix", "3") == (0, '["1/3", "2/3", "3/3"]\n')
    assert cli(*base, "--matrix", "1") == (0, "[]\n")
    assert cli(*base, "--matrix", "auto") == (0, "[]\n")  # 27 units


@pytest.mark.parametrize("bad", ["0", "201", "-1", "two", "1/2", "²"])
def test_a_bad_matrix_is_a_usage_error(tmp_path: Path, bad: str) -> None:
    code, out = cli("validate", "--values", str(tmp_path / "values"), "--matrix", bad)
    assert code == 2
    assert out == (
        f"error: --matrix {bad!r}: expected 'auto' or a number of runners from 1 to 200\n"
    )


def test_matrix_does_not_mix_with_a_shard_or_a_merge(fleet: Path, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    report.write_text("{}")
    for extra in (["--shard", "1/2"], ["--merge", str(report)]):
        code, out = cli("validate", "--values", str(fleet), "--matrix", "2", *extra)
        assert code == 2
        assert out == "error: --matrix plans the shards: it takes no --shard, --merge or reports\n"


def test_the_example_sharded_merges_into_its_unsharded_verdict(values_dir: Path) -> None:
    """The example fleet (several environments, prod of two clusters, its deliberate warnings):
    two shards merged are the one-runner report."""
    assert cli("render", "--values", str(values_dir))[0] == 0
    base = ["validate", "--values", str(values_dir), "--no-cache", "--output", "json"]
    code, whole_text = cli(*base)
    whole = json.loads(whole_text)
    assert whole["findings"]  # its warnings
    reports = []
    for k in (1, 2):
        shard_code, text = cli(*base, "--shard", f"{k}/2")
        assert shard_code == code
        reports.append(values_dir.parent / f"validate-{k}.json")
        reports[-1].write_text(text)
        assert 0 < json.loads(text)["stats"]["units"] < whole["stats"]["units"]
    merged_code, merged_text = cli("validate", "--output", "json", "--merge", *map(str, reports))
    merged = json.loads(merged_text)
    for doc in (merged, whole):
        doc["stats"].pop("timings")
    assert (merged_code, merged) == (code, whole)
