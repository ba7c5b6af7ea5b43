"""`validate --skip STAGE`: a stage left out reports nothing, the report says it did not run, its
tools need not be built (what `make demo` relies on), and the build stage cannot be left out."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from generator.builders.common import metadata
from generator.toolchain import install
from generator.toolchain import registry as tool_registry
from tests.fixtures import ROOT, ml_tree, render_committed, validate_committed

ML = """\
quota:
  nvidia: 4
"""
# Where findings on the objects `extra_objects` adds to ml-team's units point: its quota key.
QUOTA_AT = "values/teams/ml-team.yaml:1:1"

BAD_RULE = {
    "apiVersion": "monitoring.coreos.com/v1",
    "kind": "PrometheusRule",
    "metadata": metadata("bad", namespace="ml-team", sources=["values/teams/ml-team.yaml"]),
    "spec": {
        "groups": [
            {
                "name": "g",
                "rules": [{"record": "team:gpu:sum", "expr": "sum(rate(x[5m]) by (node)"}],
            }
        ]
    },
}


@pytest.fixture
def values(tmp_path: Path) -> Path:
    values = ml_tree(tmp_path, {"teams/ml-team.yaml": ML})
    assert render_committed(values) == 0
    return values


def test_a_skipped_stage_finds_nothing_and_the_report_says_it_did_not_run(
    values: Path, extra_objects: list[Any]
) -> None:
    extra_objects.append(("team-ml-team", BAD_RULE))
    code, out = validate_committed(values, "--no-cache", "--env", "prod")
    assert code == 1
    assert f"{QUOTA_AT}: PROM001 PrometheusRule ml-team/bad (overlays/prod/team-ml-team)" in out
    assert "not run" not in out

    code, out = validate_committed(values, "--no-cache", "--env", "prod", "--skip", "promtool")
    assert code == 0, out
    assert "PROM001" not in out
    assert out.splitlines()[-1].startswith("validate: 0 error(s)")
    assert out.splitlines()[-1].endswith(", not run the promtool stage (--skip))")


def test_stages_are_skipped_by_repeating_the_option_or_by_a_comma_list(values: Path) -> None:
    code, out = validate_committed(
        values, "--no-cache", "--skip", "workloads,charts", "--skip", "kueue", "--output", "json"
    )
    assert code == 0, out
    # In the order the stages run, whatever the order given.
    assert '"not run": "the charts, kueue, workloads stages (--skip)"' in out


@pytest.mark.parametrize(
    ("skip", "message"),
    [
        (
            "promtools",
            "--skip: no stage named promtools; the stages: "
            "promtool, charts, nfd, kueue, workloads, schedcheck",
        ),
        ("build", "--skip: the build stage always runs (every other reads its objects)"),
    ],
)
def test_an_unknown_stage_or_the_build_is_a_usage_error(
    values: Path, skip: str, message: str
) -> None:
    code, out = validate_committed(values, "--no-cache", "--skip", skip)
    assert code == 2
    assert message in out


def test_the_skipped_stages_tools_need_not_be_built(
    values: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `make demo` does: only the demo set built, validate runs with the Makefile's
    DEMO_SKIP, and every other stage runs."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    found = re.search(r"^DEMO_SKIP = (\S+)$", makefile, re.M)
    assert found is not None and found.group(1) == "charts,kueue,workloads"
    built = tool_registry.tools_dir()
    only = tmp_path / "tools"
    (only / "bin").mkdir(parents=True)
    (only / "schemas").symlink_to(built / "schemas")
    demo = [
        "kustomize",
        "kubeconform",
        "kbuild",
        "promtool",
        "promrulecheck",
        "nfd-rulecheck",
        "schedcheck",
    ]
    assert install.resolve(["demo"]) == [*demo, "schemas-crds", "schemas-k8s"]
    for name in demo:
        (only / "bin" / name).symlink_to(built / "bin" / name)
        (only / "bin" / f".{name}.sha256").symlink_to(built / "bin" / f".{name}.sha256")
    monkeypatch.setenv(tool_registry.ENV_TOOLS_DIR, str(only))

    code, out = validate_committed(values, "--no-cache", "--skip", found.group(1))
    assert code == 0, out
    assert out.splitlines()[-1].endswith(", not run the charts, kueue, workloads stages (--skip))")

    code, out = validate_committed(values, "--no-cache")
    assert code == 2
    assert "helm not found" in out
