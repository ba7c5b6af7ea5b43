"""Each view's unit findings kept by the units' keys (generator/validate/findmemo.py): a unit
whose key and view did not change is answered from the memo, and a run's report equals one
that works out every unit's findings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from generator.findings import Finding, Location
from generator.validate import findmemo
from tests.fixtures import ml_tree, render_committed, validate_committed


def test_the_mark_is_of_the_view_the_stages_and_the_program() -> None:
    marks = {
        findmemo.mark("view-a", ["build", "promtool"], "accel-gitops"),
        findmemo.mark("view-b", ["build", "promtool"], "accel-gitops"),
        findmemo.mark("view-a", ["build"], "accel-gitops"),  # --skip promtool
        findmemo.mark("view-a", ["build", "promtool"], "python render.py"),
    }
    assert len(marks) == 4


def test_an_entry_is_read_back_only_with_its_mark(tmp_path: Path) -> None:
    found = Finding("K8S001", "bad", Location("values/teams/a.yaml", 3, 5), "$.quota", "fix it")
    memo = findmemo.FindingsMemo(tmp_path, write=True)
    memo.put("prod", "m1", {"overlays/prod/a": ("key-a", ([found], 4))})
    memo.save([])
    again = findmemo.FindingsMemo(tmp_path, write=True)
    assert again.get("prod", "m2") == {}
    assert again.get("staging", "m1") == {}
    ((path, (key, rows, count)),) = again.get("prod", "m1").items()
    assert (path, key, count) == ("overlays/prod/a", "key-a", 4)
    assert findmemo.done_of(rows, count) == ([found], 4)
    # A run that reads no entry keeps those of the layers the values have now, and drops others.
    findmemo.FindingsMemo(tmp_path, write=True).save(["prod"])
    assert findmemo.FindingsMemo(tmp_path, write=False).get("prod", "m1") != {}
    findmemo.FindingsMemo(tmp_path, write=True).save(["staging"])
    assert findmemo.FindingsMemo(tmp_path, write=False).get("prod", "m1") == {}
    assert not findmemo.FindingsMemo(None, write=True).enabled


@pytest.fixture
def worked_out(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The units whose findings a run works out (not answered from the memo)."""
    from generator.validate import run

    units: list[str] = []
    real = run._unit_findings

    def spy(unit: Any, *args: Any) -> Any:
        units.append(unit.path)
        return real(unit, *args)

    monkeypatch.setattr(run, "_unit_findings", spy)
    return units


def test_only_the_units_whose_key_or_view_changed_are_worked_out_again(
    tmp_path: Path, worked_out: list[str]
) -> None:
    values = ml_tree(tmp_path, {"teams/inference.yaml": "quota:\n  nvidia: 2\n"})
    assert render_committed(values) == 0
    args = ["--cache-dir", str(tmp_path / "cache"), "--output", "json"]

    def report(*extra: str) -> tuple[int, list[Any], dict[str, Any]]:
        code, out = validate_committed(values, *extra, drift=True)
        doc = json.loads(out)
        stats = {k: v for k, v in doc["stats"].items() if k in ("units", "objects")}
        return code, doc["findings"], stats

    first = report(*args)
    assert first[0] == 0 and len(worked_out) == first[2]["units"] == 12
    worked_out.clear()
    assert report(*args) == first
    assert worked_out == []  # nothing changed: every unit from the memo

    # A hand edit of one committed unit: its key changes, no view does.
    unit = values.parent / "overlays/prod/team-inference"
    (unit / "configmap-hotfix.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hotfix\n  namespace: inference\n"
        "data:\n  a: b\nextra: 1\n"
    )
    kust = unit / "kustomization.yaml"
    kust.write_text(
        kust.read_text().replace("resources:\n", "resources:\n- configmap-hotfix.yaml\n")
    )
    worked_out.clear()
    edited = report(*args)
    assert worked_out == ["overlays/prod/team-inference"]
    assert edited[0] == 1 and any(f["code"] == "K8S001" for f in edited[1])
    worked_out.clear()
    assert report("--no-cache", "--output", "json") == edited  # as a run without any memo
    worked_out.clear()
    # Another program names other commands in its hints: nothing is taken from the memo.
    from generator import Program
    from generator.validate.run import ValidateOptions, validate

    result = validate(
        ValidateOptions(
            values,
            cache_dir=tmp_path / "cache",
            committed=values.parent,
            program=Program("python render.py"),
        )
    )
    assert len(worked_out) == 12
    # the same errors: K8S001, and the drift of the new file and of the kustomization
    assert (
        sorted(f.code for f in result.findings if f.severity.value == "error")
        == sorted(f["code"] for f in edited[1] if f["severity"] == "error")
        == ["DRIFT001", "DRIFT001", "K8S001"]
    )
