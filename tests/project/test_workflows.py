"""The GitHub workflows: actionlint (pinned in generator/toolchain/gotools/actionlint) passes on
them, and they keep the properties CI relies on: least permissions, one run per branch,
content-keyed caches, third-party actions pinned by commit SHA, and the reusable workflow fleet
repositories call is the one `init` writes."""

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

from generator.delivery import fleetinit
from generator.toolchain import doctor, registry
from tests.fixtures import ROOT, actionlint, unpinned, workflow_uses

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yaml"))


def test_workflows_pass_actionlint() -> None:
    assert [p.name for p in WORKFLOWS] == [
        "accel-gitops.yaml",
        "mutation.yaml",
        "publish.yaml",
        "pull-request.yaml",
    ]
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
        "      - uses: ./.github/workflows/accel-gitops.yaml\n"
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
    # Every workflow reads only; a job may add the one write the diff comment needs.
    comment = {"contents": "read", "pull-requests": "write"}
    for path in WORKFLOWS:
        wf = _load(path.name)
        assert wf["permissions"] == {"contents": "read"}, path.name
        for name, job in wf["jobs"].items():
            assert job.get("permissions", comment) in (comment, {"contents": "read"}), name
        if path.name != "accel-gitops.yaml":  # called: its callers' concurrency applies
            group = wf["concurrency"]["group"]
            assert "github.ref" in group or "github.head_ref" in group, path.name
    assert _load("pull-request.yaml")["concurrency"]["cancel-in-progress"] is True
    assert _load("publish.yaml")["concurrency"]["cancel-in-progress"] is False  # never half way
    publish = _load("accel-gitops.yaml")["jobs"]["publish"]
    assert publish["permissions"] == {"contents": "read"}  # the push uses GITOPS_TOKEN
    assert publish["concurrency"]["cancel-in-progress"] is False


def test_third_party_actions_are_pinned_by_commit_sha() -> None:
    files = [*WORKFLOWS, ROOT / ".github/actions/setup/action.yaml"]
    assert len(workflow_uses(*files)) >= 15
    assert unpinned(*files) == []


def test_the_pin_check_refuses_tags_branches_and_short_shas(tmp_path: Path) -> None:
    wf = tmp_path / "w.yaml"
    refs = [
        "actions/checkout@v7",
        "actions/checkout@main",
        "actions/checkout@3d3c42e",
        "a/b@" + "0" * 40,
    ]
    steps = "".join(f"      - uses: {ref}\n" for ref in refs)
    wf.write_text(f"on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n{steps}")
    assert [u for _, u in unpinned(wf)] == refs[:3]


def test_the_reusable_workflow_is_the_one_init_writes() -> None:
    """Fleet repositories either call this repository's workflow or run the copy `init` wrote:
    one file, byte for byte."""
    spec = fleetinit.Scaffold(ROOT, "x", "https://git.example.com/x.git", "accel-gitops==0")
    ours = (ROOT / ".github/workflows/accel-gitops.yaml").read_text()
    assert fleetinit.files(spec)[".github/workflows/accel-gitops.yaml"] == ours


def test_render_check_and_validate_both_always_run_and_both_decide() -> None:
    """validate runs whatever render --check says, each is reported, and the job fails when
    either failed: a stale render never hides validate's findings."""
    steps = {
        s.get("id", s.get("name")): s for s in _load("accel-gitops.yaml")["jobs"]["check"]["steps"]
    }
    render, validate = steps["render"], steps["validate"]
    assert render["continue-on-error"] is True and validate["continue-on-error"] is True
    assert "render --check" in render["run"]
    assert "validate" in validate["run"] and "--output github" in validate["run"]
    assert "steps.render.outcome != 'skipped'" in validate["if"]  # not: == 'success'
    verdict = steps["verdict (render --check and validate must both pass)"]
    assert verdict["if"] == "${{ !cancelled() }}"
    # the step's own shell on each outcome: (render, validate, shards) -> passes
    for render_outcome, validate_outcome, shards, passes in [
        ("success", "success", "[]", True),
        ("failure", "success", "[]", False),
        ("success", "failure", "[]", False),
        ("success", "skipped", "[]", False),  # one runner, and validate did not run
        ("success", "skipped", "", False),  # --matrix failed
        ("success", "skipped", '["1/2", "2/2"]', True),  # the verdict job decides
        ("failure", "skipped", '["1/2", "2/2"]', False),
    ]:
        env = {"RENDER": render_outcome, "VALIDATE": validate_outcome, "SHARDS": shards}
        assert _bash(verdict["run"], env).returncode == (0 if passes else 1), env
    comment = steps["diff as a pull request comment"]
    assert "--max-bytes 60000" in steps["plan and diff in the job summary"]["run"]
    assert "gh api -X PATCH" in comment["run"] and comment["continue-on-error"] is True


def _bash(
    script: str, env: dict[str, str], path: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """A step's `run` under bash -e, with the step's env (and `path` first on PATH)."""
    search = f"{path}{os.pathsep}{os.environ['PATH']}" if path else os.environ["PATH"]
    return subprocess.run(
        ["bash", "-e", "-c", script],
        env={"PATH": search, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_large_fleet_validates_on_a_matrix_of_runners_and_the_verdict_merges() -> None:
    """The check job asks `validate --matrix` for the shards (auto unless the caller gives a
    number); with none it validates itself, else one job per shard writes its JSON report as an
    artifact and the verdict job merges them into the annotations; publish waits for it."""
    wf = _load("accel-gitops.yaml")
    runners = wf[True]["workflow_call"]["inputs"]["validate-runners"]
    assert runners["default"] == "auto" and runners["type"] == "string"
    check = wf["jobs"]["check"]
    steps = {s.get("id", s.get("name")): s for s in check["steps"]}
    assert check["outputs"] == {"shards": "${{ steps.shards.outputs.shards }}"}
    matrix = steps["shards"]
    assert matrix["env"] == {"RUNNERS": "${{ inputs.validate-runners }}"}
    assert 'accel-gitops validate --values "$VALUES" --matrix "$RUNNERS"' in matrix["run"]
    assert '>> "$GITHUB_OUTPUT"' in matrix["run"]
    assert list(steps).index("shards") < list(steps).index("validate")
    assert "steps.shards.outputs.shards == '[]'" in steps["validate"]["if"]

    shard_job = wf["jobs"]["validate"]
    assert shard_job["needs"] == "check"
    assert shard_job["strategy"] == {
        "fail-fast": False,
        "matrix": {"shard": "${{ fromJSON(needs.check.outputs.shards) }}"},
    }
    # after a failed render --check too, never with an empty matrix
    assert shard_job["if"] == (
        "${{ !cancelled() && needs.check.outputs.shards != '' "
        "&& needs.check.outputs.shards != '[]' }}"
    )
    run, upload = shard_job["steps"][-2], shard_job["steps"][-1]
    assert run["env"]["SHARD"] == "${{ matrix.shard }}"
    assert upload["uses"].startswith("actions/upload-artifact@")
    assert upload["with"]["name"] == "validate-shard-${{ strategy.job-index }}"
    report = "${{ runner.temp }}/shards/validate-${{ strategy.job-index }}.json"
    assert run["env"]["REPORT"] == report and upload["with"]["path"] == report
    assert upload["with"]["if-no-files-found"] == "error"
    assert upload["with"]["overwrite"] is True  # a re-run shard

    verdict = wf["jobs"]["verdict"]
    assert verdict["needs"] == ["check", "validate"]
    assert verdict["if"] == shard_job["if"]
    download = next(s for s in verdict["steps"] if "download-artifact" in s.get("uses", ""))
    assert download["with"] == {
        "pattern": "validate-shard-*",
        "merge-multiple": True,
        "path": "${{ runner.temp }}/shards",
    }
    merge = verdict["steps"][-1]["run"]
    assert merge.rstrip().endswith(
        'accel-gitops validate --merge --output github "$SHARDS"/validate-*.json'
    )
    publish = wf["jobs"]["publish"]
    assert publish["needs"] == ["check", "verdict"]
    assert "needs.check.result == 'success'" in publish["if"]
    assert (
        "(needs.verdict.result == 'success' || needs.verdict.result == 'skipped')" in publish["if"]
    )


def test_a_shard_job_passes_with_findings_and_fails_when_a_tool_did(tmp_path: Path) -> None:
    """The shard step under bash with a stand-in accel-gitops: findings (exit 1) are the
    verdict's to report, a tool error (exit 2) fails the job; the report is where the upload
    reads it, and --changed-since is given on a pull request only."""
    step = _load("accel-gitops.yaml")["jobs"]["validate"]["steps"][-2]
    fake = tmp_path / "bin" / "accel-gitops"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\necho "$@" >> "$ARGS"\necho \'{"report": 1}\'\nexit "$CODE"\n')
    fake.chmod(0o755)
    report = tmp_path / "shards" / "validate-2.json"
    for code, base_ref, passes in (("0", "", True), ("1", "main", True), ("2", "", False)):
        args = tmp_path / f"args-{code}"
        env = {
            "VALUES": "values",
            "SHARD": "3/4",
            "BASE_REF": base_ref,
            "REPORT": str(report),
            "ARGS": str(args),
            "CODE": code,
        }
        proc = _bash(step["run"], env, fake.parent)
        assert proc.returncode == (0 if passes else 1), proc.stderr
        assert report.read_text() == '{"report": 1}\n'
        want = "validate --values values --shard 3/4 --output json"
        if base_ref:
            want += " --changed-since origin/main"
        assert args.read_text() == want + "\n"


def test_pull_request_runs_tests_and_the_fleet_check_on_the_example() -> None:
    wf = _load("pull-request.yaml")
    assert wf[True] == {"pull_request": None}  # YAML 1.1 reads `on` as true
    # make test's parts as jobs of their own: lint, the tests without a control plane, the
    # tests on one; together what make test runs.
    runs = {
        name: _runs({"jobs": {name: job}}) for name, job in wf["jobs"].items() if "steps" in job
    }
    assert sorted(runs) == ["lint", "test", "test-cluster"]
    assert "make lint" in runs["lint"]
    assert "make test-fast" in runs["test"]
    assert "make test-cluster" in runs["test-cluster"]
    makefile = (ROOT / "Makefile").read_text()
    assert "\ntest: lint pytest\n" in makefile
    assert '-m "not control_plane"' in makefile and "-m control_plane" in makefile
    fleet = wf["jobs"]["fleet"]
    assert fleet["uses"] == "./.github/workflows/accel-gitops.yaml"
    assert fleet["with"] == {"requirements": ".github/accel-gitops.requirements.txt"}
    # the checkout itself, installed as a fleet repository installs the wheel
    lines = (ROOT / ".github/accel-gitops.requirements.txt").read_text().splitlines()
    assert [line for line in lines if not line.startswith("#")] == ["."]


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
    job = wf["jobs"]["publish"]
    assert job["uses"] == "./.github/workflows/accel-gitops.yaml"
    assert job["with"]["publish-repo"] == "${{ vars.GITOPS_REPO }}"
    steps = _load("accel-gitops.yaml")["jobs"]["publish"]["steps"]
    assert 'accel-gitops publish --values "$VALUES" --repo "$GITOPS_REPO"' in steps[-1]["run"]


def test_caches_are_keyed_on_content() -> None:
    setup = yaml.safe_load((ROOT / ".github" / "actions" / "setup" / "action.yaml").read_text())
    by_action = {s.get("uses", s.get("name")).split("@")[0]: s for s in setup["runs"]["steps"]}
    assert by_action["actions/setup-python"]["with"]["cache"] == "pip"
    assert (
        by_action["actions/setup-go"]["with"]["cache-dependency-path"]
        == "generator/toolchain/gotools/*/go.sum"
    )
    cache = by_action["actions/cache"]["with"]
    assert cache["path"] == ".tools"
    assert (
        "hashFiles('generator/toolchain/gotools/**', 'generator/toolchain/install.py'"
        in cache["key"]
    )
    assert by_action["make venv tools"]["run"] == "make venv tools"
    # the fleet workflow: the user cache and Go's, keyed on the pinned accel-gitops; then
    # validate's folder beside the values, restored from the last run that saved one (its
    # entries are keyed by content), saved under the commit; each shard its own
    jobs = _load("accel-gitops.yaml")["jobs"]
    for job, mine in (("check", ""), ("validate", "shard${{ strategy.job-index }}-")):
        steps = jobs[job]["steps"]
        tools, validate = [
            s["with"] for s in steps if s.get("uses", "").startswith("actions/cache@")
        ]
        assert "~/.cache/accel-gitops" in tools["path"]
        assert "hashFiles(inputs.requirements)" in tools["key"]
        where = next(s for s in steps if s.get("id") == "cache")
        assert where["run"] == 'echo "dir=$(dirname "$VALUES")/.cache/validate" >> "$GITHUB_OUTPUT"'
        assert validate == {
            "path": "${{ steps.cache.outputs.dir }}",
            "key": "accel-gitops-validate-${{ runner.os }}-" + mine + "${{ github.sha }}",
            "restore-keys": "accel-gitops-validate-${{ runner.os }}-" + mine,
        }
        # restored before anything reads it: the first accel-gitops command comes after
        first = next(i for i, s in enumerate(steps) if "accel-gitops validate" in s.get("run", ""))
        assert steps.index(where) < first


def test_a_restored_cache_with_old_file_times_is_not_rebuilt(tmp_path: Path) -> None:
    """What the cache key relies on: fresh.py judges by content, so a cache restored with other
    file times is used as it is, and a changed input rebuilds. The Makefile runs it as a script
    with the system Python (make venv), before anything is installed."""
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
        script = ROOT / "generator" / "toolchain" / "fresh.py"
        cmd = ["python3", "-I", str(script), str(stamp), str(out), "--", str(inputs), "--"]
        subprocess.run([*cmd, "bash", "-c", build], check=True, capture_output=True)
        return len(count.read_text().splitlines())

    assert fresh() == 1
    for path in (inputs / "go.mod", out, stamp):
        os.utime(path, (0, 0))  # as restored from a cache: 1970
    assert fresh() == 1
    (inputs / "go.mod").write_text("module x\n\ngo 1.24.0\n")
    assert fresh() == 2
    out.unlink()  # a missing output is built whatever the stamp says
    assert fresh() == 3


def test_actionlint_pin_matches_its_go_module() -> None:
    pinned = registry.TOOLS["actionlint"]
    gomod = (registry.GOTOOLS / "actionlint" / "go.mod").read_text()
    assert re.search(
        rf"^\s+{re.escape(str(pinned.go_module))} {re.escape(pinned.pinned)}\b", gomod, re.M
    )
    assert "tool github.com/rhysd/actionlint/cmd/actionlint" in gomod
    status = {s.name: s for s in doctor.doctor()}["actionlint"]
    assert status.ok and status.version == pinned.pinned
