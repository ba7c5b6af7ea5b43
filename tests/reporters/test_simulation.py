"""The simulation's report: its text names what it simulated (an environment, or one cluster of
it); every findings format reads a recorded run, no control plane needed."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET

import pytest

from generator.findings import Finding, Location
from generator.reporters.simulation import env_text, write
from generator.simulate.result import EnvReport, NodeResult, SimulationResult


def test_the_report_names_the_environment_and_its_cluster() -> None:
    assert env_text(EnvReport("prod/domestic")).splitlines()[0] == (
        "environment prod, cluster domestic"
    )
    assert env_text(EnvReport("staging")).splitlines()[0] == "environment staging"
    on = EnvReport("prod/domestic", kubernetes="v1.34.4")
    assert env_text(on).splitlines()[0] == (
        "environment prod, cluster domestic, on Kubernetes v1.34.4"
    )


def recorded() -> SimulationResult:
    """One environment's run as the driver records it: a node nfd-master left unlabelled."""
    node = NodeResult(
        "mlu-0", "cambricon mlu370", {}, {"vendor.example/mlu": "true"}, [], [], False
    )
    rep = EnvReport("prod/domestic", nodes=[node], objects=3, timings={"apply": 1.5})
    finding = Finding(
        "SIM001",
        "node mlu-0 lacks label vendor.example/mlu=true",
        Location("values/vendors/cambricon.yaml", 4, 3),
        hint="fix the pool's labels",
    )
    return SimulationResult([rep], [finding], 2.0)


TABLES = [
    "environment prod, cluster domestic",
    " nodes: labels and taints as nfd-master set them, against the pool's",
    "  node   what              labels    taints",
    "  mlu-0  cambricon mlu370  mlu=true  -       MISMATCH",
    " 3 objects applied; apply 1.5 s",
]
SUMMARY = "simulate: 1 error(s), 0 warning(s) (environments 1)"


def test_text_is_the_tables_then_the_findings() -> None:
    out = io.StringIO()
    write(recorded(), "text", out)
    assert out.getvalue().splitlines() == [
        *TABLES,
        "values/vendors/cambricon.yaml:4:3: SIM001 node mlu-0 lacks label "
        "vendor.example/mlu=true; fix the pool's labels",
        SUMMARY,
    ]


def test_github_is_the_tables_then_the_annotations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    out = io.StringIO()
    write(recorded(), "github", out)
    assert out.getvalue().splitlines() == [
        *TABLES,
        "::error file=values/vendors/cambricon.yaml,line=4,col=3,title=SIM001::node mlu-0 lacks "
        "label vendor.example/mlu=true; fix the pool's labels",
        SUMMARY,
    ]


def test_junit_holds_the_findings_alone() -> None:
    out = io.StringIO()
    write(recorded(), "junit", out)
    suite = ET.fromstring(out.getvalue()).find("testsuite")
    assert suite is not None
    assert (suite.get("name"), suite.get("tests"), suite.get("failures")) == ("simulate", "1", "1")
    [case] = suite.findall("testcase")
    assert (case.get("classname"), case.get("name")) == ("SIM001", "values/vendors/cambricon.yaml")


def test_json_carries_every_row() -> None:
    out = io.StringIO()
    write(recorded(), "json", out)
    doc = json.loads(out.getvalue())
    assert (doc["command"], doc["errors"], doc["warnings"]) == ("simulate", 1, 0)
    assert doc["stats"]["control_plane_started_in"] == 2.0
    [env] = doc["stats"]["environments"]
    assert env["env"] == "prod/domestic" and env["timings"] == {"apply": 1.5}
    assert env["nodes"] == [
        {
            "name": "mlu-0",
            "what": "cambricon mlu370",
            "want_labels": {},
            "labels": {"vendor.example/mlu": "true"},
            "want_taints": [],
            "taints": [],
            "ok": False,
        }
    ]
    assert [f["code"] for f in doc["findings"]] == ["SIM001"]


def test_the_phase_walk_says_what_it_did_not_run() -> None:
    """simulate --phases: the jobs are gone during the walk, and a phase is applied at once (no
    surge pod): the table's heading says both."""
    row = {
        "service": "inference/chat",
        "phase": "dual-run",
        "track": "ascend",
        "cluster": "domestic",
        "weight": 0,
        "ready": 2,
        "plan": 2,
        "placed": {"ascend-pool": 2},
        "ok": True,
    }
    lines = env_text(EnvReport("prod/domestic", phases=[row])).splitlines()
    heading = lines.index(
        " each migrating service walked through its phases (--phases), beside the other services "
        "and no job; each phase applied at once, not as a rolling update (a surge pod's room is "
        "not counted)"
    )
    assert lines[heading + 2].split() == [
        "inference/chat", "dual-run", "ascend", "domestic", "0", "2", "2", "ascend-pool", "x2", "ok"
    ]  # fmt: skip
