"""validate's report formats (generator/reporters/findings.py): JSON, GitHub annotations and step
summary, and JUnit with a case per unit and per finding."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from generator.builders.common import metadata
from tests.fixtures import ml_tree, render_committed, validate_committed


@pytest.fixture
def values(tmp_path: Path) -> Path:
    """A small tree (NVIDIA, 8 GPUs; team ml-team, 4 of them; staging and prod) under
    tmp_path/repo, rendered and committed there."""
    values = ml_tree(tmp_path)
    assert render_committed(values) == 0
    return values


def broken_quota(values: Path) -> None:
    """ml-team's quota as a word: VAL001 at values/teams/ml-team.yaml:2:11."""
    (values / "teams/ml-team.yaml").write_text("quota:\n  nvidia: many\n")


def test_json_report(values: Path) -> None:
    broken_quota(values)
    code, out = validate_committed(values, "--output", "json")
    doc = json.loads(out)
    assert code == 1 and doc["errors"] == 1
    assert doc["findings"][0] | {"message": "", "message_only": ""} == {
        "code": "VAL001",
        "severity": "error",
        "message": "",
        "message_only": "",
        "file": "values/teams/ml-team.yaml",
        "line": 2,
        "column": 11,
        "path": "$.quota.nvidia",
        "hint": "",
        "environments": [],
        "clusters": [],
        "unit": "",
    }


def test_github_report_annotates_and_writes_the_step_summary(values: Path, tmp_path: Path) -> None:
    broken_quota(values)
    summary = tmp_path / "summary.md"
    code, out = validate_committed(
        values, "--output", "github", env={"GITHUB_STEP_SUMMARY": str(summary)}
    )
    assert code == 1
    assert (
        "::error file=values/teams/ml-team.yaml,line=2,col=11,title=VAL001::'many' is not of "
        "type 'integer' (at $.quota.nvidia)"
    ) in out
    text = summary.read_text()
    assert "### validate: 1 error(s)" in text and "`values/teams/ml-team.yaml:2:11`" in text


def test_junit_report(values: Path) -> None:
    broken_quota(values)
    code, out = validate_committed(values, "--output", "junit")
    assert code == 1
    suite = ET.fromstring(out).find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    # The committed units are still checked (a passing case each); the values error fails one.
    case = next(c for c in suite.iter("testcase") if c.get("classname") == "VAL001")
    failure = case.find("failure")
    assert failure is not None and "values/teams/ml-team.yaml:2:11" in (failure.text or "")


@pytest.mark.usefixtures("committed")
def test_junit_report_when_clean_has_a_passing_case_per_unit(values_dir: Path) -> None:
    code, out = validate_committed(values_dir, "--output", "junit")
    assert code == 0
    suite = ET.fromstring(out).find("testsuite")
    assert suite is not None and suite.get("failures") == "0" and suite.get("tests") == "27"
    units = [c.get("name") for c in suite.iter("testcase") if c.get("classname") == "validate"]
    assert len(units) == 25 and "overlays/prod/main/team-ml-team" in units
    assert all(c.find("failure") is None for c in suite.iter("testcase"))
    # The warnings (two CAP001, one NODE003) are cases of their own, passing, text in system-out.
    cap = [c for c in suite.iter("testcase") if c.get("classname") == "CAP001"]
    assert [c.get("name") for c in cap] == ["values/teams/ml-team.yaml"]


def test_junit_unit_case_fails_with_the_findings_about_its_objects(
    values: Path, extra_objects: list[Any]
) -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata("broken", namespace="ml-team", sources=["values/teams/ml-team.yaml"]),
        "spec": {"nope": True},
    }
    extra_objects.append(("team-ml-team", obj))
    code, out = validate_committed(values, "--output", "junit", "--no-cache")
    assert code == 1
    suite = ET.fromstring(out).find("testsuite")
    assert suite is not None
    cases = {
        c.attrib["name"]: c for c in suite.iter("testcase") if c.get("classname") == "validate"
    }
    failed = sorted(n for n, c in cases.items() if c.find("failure") is not None)
    assert failed == ["overlays/prod/team-ml-team", "overlays/staging/team-ml-team"]
    assert suite.get("failures") == "2"
    assert "K8S001 ConfigMap ml-team/broken" in (cases[failed[0]].find("failure").text or "")  # type: ignore[union-attr]
    assert cases["overlays/prod/argocd"].find("system-out").text == "no finding"  # type: ignore[union-attr]
