"""Messages name the commands they tell the user to run as the user runs the program: the
console script `accel-gitops`, or `python render.py` in a clone. The command line hands the name
down; nothing holds it globally, so one process can run both."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from generator import Program
from generator.cli.main import main
from generator.cli.options import Invocation
from generator.validate.drift import drift_findings
from tests.fixtures import ROOT, cli, tree

CLONE = Program("python render.py")


def render_check(values: Path, out: Path, program: Program | None) -> tuple[int, str]:
    """`render --check` in this process, run as `program` (None: as the tests' CLI runs)."""
    args = ["render", "--values", str(values), "--out", str(out), "--check"]
    obj = Invocation(program) if program is not None else None
    result = CliRunner().invoke(main, args, obj=obj)
    return result.exit_code, result.output


def stale_output(tmp_path: Path) -> tuple[Path, Path]:
    values = tree(tmp_path)
    out = tmp_path / "out"
    assert cli("render", "--values", str(values), "--out", str(out))[0] == 0
    (out / "overlays" / "prod" / "team-ml" / "leftover.yaml").write_text("kind: ConfigMap\n")
    return values, out


def test_one_process_runs_as_either_program_and_each_names_its_own(tmp_path: Path) -> None:
    values, out = stale_output(tmp_path)
    tail = "render --check: 0 changed, 0 missing, 1 stale; run `{} render` and commit the result"
    code, output = render_check(values, out, CLONE)
    assert (code, output.splitlines()[-1]) == (1, tail.format("python render.py"))
    # the clone's name did not stay behind for the next run
    code, output = render_check(values, out, None)
    assert (code, output.splitlines()[-1]) == (1, tail.format("accel-gitops"))
    code, output = render_check(values, out, Program("accel-gitops"))
    assert (code, output.splitlines()[-1]) == (1, tail.format("accel-gitops"))


def test_render_py_names_itself(tmp_path: Path) -> None:
    values, out = stale_output(tmp_path)
    argv = [sys.executable, str(ROOT / "render.py"), "render", "--values", str(values)]
    proc = subprocess.run(
        [*argv, "--out", str(out), "--check"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[-1] == (
        "render --check: 0 changed, 0 missing, 1 stale; run `python render.py render` and "
        "commit the result"
    )


def test_a_missing_tool_names_the_install_command_as_the_user_runs_it(tmp_path: Path) -> None:
    values = tree(tmp_path)
    assert cli("render", "--values", str(values))[0] == 0
    empty = tmp_path / "no-tools"
    env = {"ACCEL_GITOPS_TOOLS_DIR": str(empty), "PATH": ""}
    args = ["validate", "--values", str(values), "--no-cache", "--quiet"]
    result = CliRunner().invoke(main, args, obj=Invocation(CLONE), env=env)
    assert (result.exit_code, result.stderr) == (
        2,
        f"error: kustomize not found (looked in {empty / 'bin'}, PATH (at v5.8.1)); install it "
        "with: python render.py tools install\n",
    )


def test_drift_findings_name_the_render_command_of_the_program() -> None:
    tree_ = {"base/a.yaml": "a: 1\n"}
    [finding] = drift_findings(tree_, {}, None, CLONE)
    assert finding.hint == "run `python render.py render` and commit the result"
    [finding] = drift_findings(tree_, {}, None, Program("accel-gitops"))
    assert finding.hint == "run `accel-gitops render` and commit the result"


def test_init_names_the_next_commands_as_the_user_runs_them(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["init", str(tmp_path / "acme")], obj=Invocation(CLONE))
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[2:4] == [
        "  python render.py render      # base/ and overlays/ from values/",
        "  python render.py validate    # every check (`python render.py tools install` first)",
    ]
