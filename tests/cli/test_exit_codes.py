"""The exit codes every command shares: 0 clean, 1 findings, 2 usage or tool error, 3 internal
error (a bug: an exception that is not a GeneratorError), 130 interrupted."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from generator.cli.options import guarded
from generator.errors import FindingsError, GeneratorError, UsageError
from generator.findings import Finding, Location
from generator.render import stage, treeindex
from generator.render.charts import ChartError
from generator.toolchain.crdschemas import SchemaBuildError
from generator.toolchain.errors import Install, ToolFailed, ToolMissing
from tests.fixtures import cli, cli_streams, two_teams


def test_0_when_the_values_are_clean(tmp_path: Path) -> None:
    code, out = cli("check", "--values", str(two_teams(tmp_path)))
    assert (code, out.splitlines()[-1]) == (0, "check: 0 error(s), 1 warning(s)")


def test_1_for_findings(tmp_path: Path) -> None:
    values = two_teams(tmp_path)
    (values / "teams/ml-team.yaml").write_text("quota:\n  nvidia: many\n")
    code, out = cli("check", "--values", str(values))
    # the quota's error replaces the overcommit warning of a clean run
    assert (code, out.splitlines()[-1]) == (1, "check: 1 error(s), 0 warning(s)")


def test_2_for_a_usage_error(tmp_path: Path) -> None:
    code, _, err = cli_streams("diff", "--values", str(two_teams(tmp_path)))
    assert (code, err) == (2, "error: give two environments (diff staging prod) or --base REF\n")


def test_2_for_a_missing_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    values = two_teams(tmp_path)
    assert cli("render", "--values", str(values))[0] == 0
    monkeypatch.setenv("ACCEL_GITOPS_TOOLS_DIR", str(tmp_path / "no-tools"))
    code, _, err = cli_streams("validate", "--values", str(values), "--no-cache", "--quiet")
    assert code == 2
    assert err == (
        f"error: kustomize not found (looked in {tmp_path / 'no-tools' / 'bin'}, PATH (at "
        "v5.8.1)); "
        "install it with: accel-gitops tools install\n"
    )


def test_2_for_a_committed_file_removed_while_the_run_reads_the_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scan lists the committed files and reads them when first needed: one removed in
    between (another render, a checkout) is said, not a traceback."""
    values = two_teams(tmp_path)
    assert cli("render", "--values", str(values))[0] == 0
    gone = values.parent / "base/teams/ml-team/namespace-ml-team.yaml"
    assert gone.is_file()
    real = treeindex.scan

    def then_removed(
        root: Path, index: Path | None, walk: treeindex.Walk | None = None
    ) -> treeindex.Files:
        files = real(root, None, walk)  # no index: every file is read when asked for
        gone.unlink()
        return files

    monkeypatch.setattr(treeindex, "scan", then_removed)
    code, _, err = cli_streams("render", "--values", str(values), "--check")
    assert code == 2
    assert err == (
        f"error: cannot read {gone}, listed when this run began: No such file or directory; "
        "was it changed or removed meanwhile (another render, a checkout)? run again once "
        "nothing else writes there\n"
    )


def test_3_for_an_internal_error_with_its_traceback_under_debug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: object) -> None:
        raise KeyError("pools")

    monkeypatch.setattr(stage, "load_and_check", broken)
    values = str(two_teams(tmp_path))
    code, out, err = cli_streams("check", "--values", values)
    assert (code, out, err) == (3, "", "internal error: KeyError: 'pools' (rerun with --debug)\n")
    code, _, err = cli_streams("--debug", "check", "--values", values)
    assert code == 3
    assert err.startswith("Traceback (most recent call last):\n")
    assert err.endswith(
        "KeyError: 'pools'\ninternal error: KeyError: 'pools' (rerun with --debug)\n"
    )


# Every kind of failure the guard maps: (what the command raises, exit code, stderr).
RAISED: list[tuple[BaseException, int, str]] = [
    (
        FindingsError(
            [Finding("VAL001", "quota is not a number", Location("values/a.yaml", 2, 5))]
        ),
        1,
        "values/a.yaml:2:5: VAL001 quota is not a number\nboom: 1 error(s), 0 warning(s); "
        "nothing written\n",
    ),
    (UsageError("unknown environment 'qa'"), 2, "error: unknown environment 'qa'\n"),
    (GeneratorError("the branch moved"), 2, "error: the branch moved\n"),
    (
        ToolFailed(["helm", "template"], 1, b"", b"bad chart"),
        2,
        "error: helm template exited with 1: bad chart\n",
    ),
    (
        ToolMissing("kwok", Install("cluster"), ["/t/bin"]),
        2,
        "error: kwok not found (looked in /t/bin); install it with: accel-gitops tools install "
        "--only cluster\n",
    ),
    # a chart whose subchart the values leave on: the values must change (a usage error)
    (
        ChartError("chart lws needs its subchart x: set x.enabled to false"),
        2,
        "error: chart lws needs its subchart x: set x.enabled to false\n",
    ),
    # a pinned schema source that is unavailable: a tool error
    (
        SchemaBuildError("no schema for expected kinds: x/v1 Y"),
        2,
        "error: no schema for expected kinds: x/v1 Y\n",
    ),
    (
        AttributeError("'NoneType' object has no attribute 'pools'"),
        3,
        "internal error: AttributeError: 'NoneType' object has no attribute 'pools' (rerun with "
        "--debug)\n",
    ),
    (KeyboardInterrupt(), 130, ""),
]


@pytest.mark.parametrize(
    ("raised", "code", "stderr"), RAISED, ids=[type(r[0]).__name__ for r in RAISED]
)
def test_the_guard_maps_each_failure_to_its_exit_code(
    raised: BaseException, code: int, stderr: str
) -> None:
    @click.command()
    @guarded
    def boom() -> int:
        raise raised

    result = CliRunner().invoke(boom, [])
    assert (result.exit_code, result.stdout, result.stderr) == (code, "", stderr)


def test_chart_and_schema_build_errors_are_under_the_one_root() -> None:
    assert issubclass(ChartError, UsageError)
    assert issubclass(SchemaBuildError, GeneratorError)
