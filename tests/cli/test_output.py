"""One `--output` for formats across the commands that report findings (text, json, github,
junit), `--out` for paths; `report --format` is --output's deprecated name."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import click
import pytest

from generator.cli.main import COMMANDS, Commands
from generator.toolchain import registry as tool_registry
from tests.fixtures import cli_streams, invoke, two_teams

FINDINGS_FORMATS = ["github", "json", "junit", "text"]


@pytest.mark.parametrize("name", ["check", "validate", "plan", "simulate", "preflight"])
def test_every_command_that_reports_findings_takes_the_findings_formats(name: str) -> None:
    command = Commands().get_command(click.Context(click.Group()), name)
    assert command is not None
    [output] = [p for p in command.params if p.name == "output_format"]
    assert output.opts == ["--output"]
    assert isinstance(output.type, click.Choice)
    assert list(output.type.choices) == FINDINGS_FORMATS
    assert output.default == "text"


def test_no_command_takes_a_format_flag_in_its_help() -> None:
    for name in COMMANDS:
        code, out, _ = cli_streams(name, "--help")
        assert code == 0 and "--format" not in out, name


@pytest.fixture
def broken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Values whose quota is not a number: simulate and preflight report it without starting
    or reading a cluster (their tools taken as built)."""
    monkeypatch.setattr(tool_registry, "missing", lambda names: [])
    values = two_teams(tmp_path)
    (values / "teams/ml-team.yaml").write_text("quota:\n  nvidia: many\n")
    return values


ANNOTATION = (
    "::error file=values/teams/ml-team.yaml,line=2,col=11,title=VAL001::'many' is not of type "
    "'integer' (at $.quota.nvidia)"
)
LINE = "values/teams/ml-team.yaml:2:11: VAL001 'many' is not of type 'integer' (at $.quota.nvidia)"


@pytest.mark.parametrize(
    ("args", "summary"),
    [
        (["simulate"], "simulate: 1 error(s), 0 warning(s) (environments 0)"),
        (
            ["preflight", "--kubeconfig", "kubeconfig"],
            "preflight: 1 error(s), 0 warning(s) (environment , server )",
        ),
    ],
    ids=["simulate", "preflight"],
)
def test_simulate_and_preflight_write_github_annotations_and_junit(
    broken: Path, tmp_path: Path, args: list[str], summary: str
) -> None:
    step_summary = tmp_path / "summary.md"
    env = {"GITHUB_STEP_SUMMARY": str(step_summary)}
    result = invoke(*args, "--values", str(broken), "--output", "github", env=env)
    assert (result.exit_code, result.stdout) == (1, f"{ANNOTATION}\n{summary}\n")
    assert step_summary.read_text().startswith(
        f"### {args[0]}: 1 error(s), 0 warning(s)\n\n| | code | where | message |\n"
    )
    result = invoke(*args, "--values", str(broken), "--output", "junit")
    assert result.exit_code == 1
    suite = ET.fromstring(result.stdout).find("testsuite")
    assert suite is not None
    assert (suite.get("name"), suite.get("tests"), suite.get("failures")) == (args[0], "1", "1")
    [case] = suite.findall("testcase")
    assert (case.get("classname"), case.get("name")) == ("VAL001", "values/teams/ml-team.yaml")
    failure = case.find("failure")
    assert failure is not None and failure.text == LINE


def test_plan_writes_its_tables_then_github_annotations_and_junit(tmp_path: Path) -> None:
    values = two_teams(tmp_path)
    (values / "environments/prod.yaml").write_text(
        "teams:\n  inference:\n    services:\n      inference-service:\n"
        "        replicas: {nvidia: 5}\n",
    )
    args = ["plan", "--values", str(values), "--env", "prod", "--output"]
    code, out, err = cli_streams(*args, "github")
    assert (code, err) == (1, "")
    lines = out.splitlines()
    assert lines[0] == "environment prod"
    assert lines[-4:] == [
        "plan does NOT fit",
        "::error file=values/environments/prod.yaml,line=5,col=28,title=MIG004::team "
        "'inference' needs 5 nvidia devices in namespace 'inference' (service "
        "inference-service 5x1=5) but its quota is 4 in environment 'prod' (at "
        "$.services['inference-service'].replicas.nvidia); raise quota.nvidia, or lower the "
        "replicas or the phase",
        "::error file=values/environments/prod.yaml,line=5,col=28,title=MIG005::workloads need "
        "9 nvidia devices (5 for services, 4 for the largest job) but its pools hold 8 in "
        "environment 'prod' (at $.services['inference-service'].replicas.nvidia); add nodes to "
        "nvidia's pools, or lower replicas or phases",
        "plan: 2 error(s), 0 warning(s) (environments 1, fits no)",
    ]
    code, out, err = cli_streams(*args, "junit")
    assert (code, err) == (1, "")
    suite = ET.fromstring(out).find("testsuite")
    assert suite is not None
    assert (suite.get("name"), suite.get("tests"), suite.get("failures")) == ("plan", "2", "2")
    cases = [(c.get("classname"), c.get("name")) for c in suite.findall("testcase")]
    assert cases == [
        ("MIG004", "values/environments/prod.yaml"),
        ("MIG005", "values/environments/prod.yaml"),
    ]


REPORT_HEAD = "# Fleet report: "


def test_report_takes_output_and_its_old_format_flag_with_a_warning(tmp_path: Path) -> None:
    values = str(two_teams(tmp_path))
    code, out, err = cli_streams("report", "--values", values, "--output", "markdown")
    assert (code, err) == (0, "")
    assert out.startswith(REPORT_HEAD)
    code, old, err = cli_streams("report", "--values", values, "--format", "markdown")
    assert (code, old) == (0, out)
    assert err == "report: --format is deprecated; use --output (the same formats)\n"
    code, _, err = cli_streams(
        "report", "--values", values, "--format", "markdown", "--output", "html"
    )
    assert code == 2
    assert err.endswith("error: --format is the old name of --output: give one of them\n")


def test_report_out_is_the_path_and_output_the_format(tmp_path: Path) -> None:
    values = str(two_teams(tmp_path))
    page = tmp_path / "report.txt"
    code, out, err = cli_streams(
        "report", "--values", values, "--out", str(page), "--output", "markdown"
    )
    assert (code, out) == (0, "")
    assert err == f"wrote {page} (0 error(s), 1 warning(s))\n"
    assert page.read_text().startswith(REPORT_HEAD)
