"""Small things a user expects of the CLI: --version, `schema` as valid JSON, `check`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from generator import __version__
from tests.fixtures import ROOT, cli, two_teams

# The kinds of values file a platform team writes, and the traffic file render writes
# (docs/multi-cluster.md); each one's schema is the one committed in schemas/
# (tests/cli/test_render.py holds those equal to the code).
KINDS = ["environment", "fleet", "inventory", "team", "traffic", "vendor"]


def committed(kind: str) -> object:
    return json.loads((ROOT / "schemas" / f"{kind}.schema.json").read_text())


def test_version() -> None:
    code, out = cli("--version")
    assert code == 0 and out.endswith(f" {__version__}\n")


def test_schema_without_kind_is_one_json_object_keyed_by_kind() -> None:
    code, out = cli("schema")
    assert code == 0
    data = json.loads(out)
    assert sorted(data) == KINDS
    assert data["team"] == committed("team")


def test_schema_out_writes_one_file_per_kind(tmp_path: Path) -> None:
    code, _ = cli("schema", "--out", str(tmp_path))
    assert code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{k}.schema.json" for k in KINDS]
    for kind in KINDS:
        assert json.loads((tmp_path / f"{kind}.schema.json").read_text()) == committed(kind)


def test_check_reports_values_findings_without_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCEL_GITOPS_TOOLS_DIR", str(tmp_path / "no-tools"))
    values_dir = two_teams(tmp_path)
    code, out = cli("check", "--values", str(values_dir))
    # One warning: NVIDIA quotas (12) over its 8 GPUs in prod, overcommit allowed (CAP001).
    assert code == 0 and out.endswith("check: 0 error(s), 1 warning(s)\n")
    (values_dir / "teams/ml-team.yaml").write_text("quota:\n  nvidia: many\n")
    (values_dir / "teams/inference.yaml").write_text("quota: {nvidia: 1}\nbogus: 1\n")
    code, out = cli("check", "--values", str(values_dir), "--output", "json")
    assert code == 1
    found = {(f["file"], f["code"]) for f in json.loads(out)["findings"]}
    assert ("values/teams/ml-team.yaml", "VAL001") in found
    assert ("values/teams/inference.yaml", "VAL001") in found  # all findings of a run together


def test_check_shares_validate_s_cache_and_says_what_a_cold_run_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCEL_GITOPS_TOOLS_DIR", str(tmp_path / "no-tools"))
    values_dir = two_teams(tmp_path / "warm")
    assert cli("check", "--values", str(values_dir))[0] == 0
    cache = values_dir.parent / ".cache" / "validate"
    # the parsed values, each view's findings and components (render/buildmemo.py), its digest
    # (policy/memo.py recall: render after check reads it) and its teams' builds (teammemo.py)
    parts = {"values", "checks", "components", "views", "teams"}
    assert {p.name for p in cache.iterdir()} == parts
    assert all(any((cache / name).iterdir()) for name in parts)
    # An edit that makes one team's quota larger than the cluster (an error): the warm run reads
    # the other files and views from the cache and says what a run on a copy without it says.
    team = values_dir / "teams/inference.yaml"
    team.write_text(team.read_text().replace("{nvidia: 4, ascend: 4}", "{nvidia: 9, ascend: 4}"))
    warm = cli("check", "--values", str(values_dir), "--output", "json")
    cold_dir = tmp_path / "cold" / "values"
    shutil.copytree(values_dir, cold_dir)
    cold = cli("check", "--values", str(cold_dir), "--output", "json")
    assert warm[0] == cold[0] == 1
    found = json.loads(warm[1])["findings"]
    assert found == json.loads(cold[1])["findings"]
    assert any(
        f["severity"] == "error" and f["file"] == "values/teams/inference.yaml" for f in found
    )


def test_shell_completion_of_the_console_script() -> None:
    """docs/gitops.md: click's completion, driven by _ACCEL_GITOPS_COMPLETE."""
    script = Path(sys.executable).parent / "accel-gitops"
    env = {**os.environ, "_ACCEL_GITOPS_COMPLETE": "bash_source"}
    source = subprocess.run([str(script)], env=env, capture_output=True, text=True, check=True)
    assert "_accel_gitops_completion()" in source.stdout
    env = {
        **os.environ,
        "_ACCEL_GITOPS_COMPLETE": "bash_complete",
        "COMP_WORDS": "accel-gitops pu",
        "COMP_CWORD": "1",
    }
    words = subprocess.run([str(script)], env=env, capture_output=True, text=True, check=True)
    assert words.stdout.split() == ["plain,publish"]
