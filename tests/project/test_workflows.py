"""The GitHub workflows: actionlint (pinned in generator/toolchain/gotools/actionlint) passes on them, and they keep the
properties CI relies on: least permissions, one run per branch, content-keyed caches."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from generator import toolchain
from tests.fixtures import ROOT, tool

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yaml"))


def actionlint(*files: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    # shellcheck and pyflakes are not pinned tools: their integrations stay off so that the
    # verdict does not depend on what else a machine has installed.
    return subprocess.run(
        [
            str(tool("actionlint")),
            "-no-color",
            "-oneline",
            "-shellcheck=",
            "-pyflakes=",
            *map(str, files),
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_workflows_pass_actionlint() -> None:
    assert [p.name for p in WORKFLOWS] == ["mutation.yaml", "publish.yaml", "pull-request.yaml"]
    proc = actionlint(*WORKFLOWS)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_catches_what_is_wrong(tmp_path: Path) -> None:
    """The check can fail: an unknown input of the local setup action or of a pinned action, a
    bad expression."""
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    shutil.copytree(ROOT / ".github" / "actions", tmp_path / ".github" / "actions")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)  # actionlint's project root
    bad = tmp_path / ".github" / "workflows" / "bad.yaml"
    bad.write_text(
        "on: push\n"
        "jobs:\n"
        "  x:\n"
        "    runs-on: ubuntu-latest\n"
        "    steps:\n"
        "      - uses: ./.github/actions/setup\n"
        "        with: {python: '3.12'}\n"
        "      - uses: actions/setup-go@v6\n"
        "        with: {go-versio: '1.26.8'}\n"
        "      - run: echo ${{ github.evnt.ref }}\n"
    )
    proc = actionlint(bad, cwd=tmp_path)
    assert proc.returncode == 1
    assert 'input "python" is not defined in action "set up accel-gitops"' in proc.stdout
    assert 'input "go-versio" is not defined in action "actions/setup-go@v6"' in proc.stdout
    assert 'property "evnt" is not defined' in proc.stdout


def _load(name: str) -> dict[Any, Any]:
    data: dict[Any, Any] = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())
    return data


def _runs(workflow: dict[Any, Any]) -> str:
    return "\n".join(
        str(step.get("run", "")) for job in workflow["jobs"].values() for step in job["steps"]
    )


def test_least_permissions_and_one_run_per_branch() -> None:
    for path in WORKFLOWS:
        wf = _load(path.name)
        assert wf["permissions"] == {"contents": "read"}, path.name
        assert all("permissions" not in job for job in wf["jobs"].values()), path.name
        group = wf["concurrency"]["group"]
        assert "github.ref" in group or "github.head_ref" in group, path.name
    assert _load("pull-request.yaml")["concurrency"]["cancel-in-progress"] is True
    assert _load("publish.yaml")["concurrency"]["cancel-in-progress"] is False  # never half way


def test_pull_request_runs_tests_checks_plan_and_diff() -> None:
    wf = _load("pull-request.yaml")
    assert wf[True] == {"pull_request": None}  # YAML 1.1 reads `on` as true
    runs = _runs(wf)
    for command in (
        "make test",
        "render.py render --check",
        "render.py validate --output github",
        "render.py plan",
        'render.py diff --base "origin/${BASE_REF}" --output markdown >> "$GITHUB_STEP_SUMMARY"',
    ):
        assert command in runs, command


def test_mutation_testing_runs_on_a_schedule_and_on_demand_only() -> None:
    """Tens of minutes: never on a pull request; it fails below a floor (make mutation's exit)."""
    wf = _load("mutation.yaml")
    assert set(wf[True]) == {"schedule", "workflow_dispatch"}
    assert 'make mutation SHARDS="$SHARD"' in _runs(wf)
    assert wf["concurrency"]["cancel-in-progress"] is False


def test_mutation_testing_runs_one_job_per_shard() -> None:
    """The shards come from tools/mutation.py (shards.toml), one matrix job each, none cancelling
    the others; the job list is the tool's own answer, not a copy of the shard names."""
    wf = _load("mutation.yaml")
    assert "python3 tools/mutation.py list --json $SHARDS" in _runs(wf)
    job = wf["jobs"]["mutation"]
    assert job["needs"] == "shards"
    assert job["strategy"] == {
        "fail-fast": False,
        "matrix": {"shard": "${{ fromJSON(needs.shards.outputs.shards) }}"},
    }
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "mutation.py"), "list", "--json", "render", "diff"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(proc.stdout) == ["render", "diff"]


def test_push_to_main_publishes() -> None:
    wf = _load("publish.yaml")
    assert wf[True] == {"push": {"branches": ["main"]}}
    assert 'render.py publish --repo "$GITOPS_REPO" --branch "$GITOPS_BRANCH"' in _runs(wf)


def test_caches_are_keyed_on_content() -> None:
    setup = yaml.safe_load((ROOT / ".github" / "actions" / "setup" / "action.yaml").read_text())
    steps = {s.get("uses", s.get("name")): s for s in setup["runs"]["steps"]}
    assert steps["actions/setup-python@v6"]["with"]["cache"] == "pip"
    assert (
        steps["actions/setup-go@v6"]["with"]["cache-dependency-path"]
        == "generator/toolchain/gotools/*/go.sum"
    )
    cache = steps["actions/cache@v4"]["with"]
    assert cache["path"] == ".tools"
    assert "hashFiles('tools/**', 'pyproject.toml')" in cache["key"]
    assert steps["make venv tools"]["run"] == "make venv tools"


def test_a_restored_cache_with_old_file_times_is_not_rebuilt(tmp_path: Path) -> None:
    """What the cache key relies on: tools/fresh judges by content, so a cache restored with
    other file times is used as it is, and a changed input rebuilds."""
    inputs = tmp_path / "module"
    inputs.mkdir()
    (inputs / "go.mod").write_text("module x\n")
    out, stamp, count = (
        tmp_path / "bin" / "tool",
        tmp_path / "bin" / ".tool.sha256",
        tmp_path / "runs",
    )
    build = f"mkdir -p {out.parent} && echo built > {out} && echo x >> {count}"

    def fresh() -> int:
        cmd = [
            str(ROOT / "tools" / "fresh"),
            str(stamp),
            str(out),
            "--",
            str(inputs),
            "--",
            "bash",
            "-c",
            build,
        ]
        subprocess.run(cmd, check=True, capture_output=True)
        return len(count.read_text().splitlines())

    assert fresh() == 1
    for path in (inputs / "go.mod", out, stamp):
        os.utime(path, (0, 0))  # as restored from a cache: 1970
    assert fresh() == 1
    (inputs / "go.mod").write_text("module x\n\ngo 1.24.0\n")
    assert fresh() == 2


def test_actionlint_pin_matches_its_go_module() -> None:
    pinned = toolchain.TOOLS["actionlint"]
    gomod = (ROOT / "tools" / "actionlint" / "go.mod").read_text()
    assert re.search(
        rf"^\s+{re.escape(str(pinned.go_module))} {re.escape(pinned.pinned)}\b", gomod, re.M
    )
    assert "tool github.com/rhysd/actionlint/cmd/actionlint" in gomod
    status = {s.name: s for s in toolchain.doctor()}["actionlint"]
    assert status.ok and status.version == pinned.pinned
