"""A validate stage is a plug-in: a module in generator/validate/stages/ with a STAGE is run on
every committed unit, cached with it, reported, and its codes are listed by `render.py rules`,
with nothing else changed anywhere."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from generator.validate import stages
from tests.fixtures import cli, tree

PROBE = """
from generator.findings import CodeInfo, Finding, Location, Severity

RUNS = []


class Probe:
    name = "probe"
    order = 90
    codes = (CodeInfo("PRB001", "manifests (probe)", "warning", "a unit a probe stage counted"),)

    def salt(self, engine):
        return "probe-1"

    def run(self, batch):
        RUNS.append(list(batch.paths))
        return {path: {"objects": len(batch.built[path]["docs"])} for path in batch.ok()}

    def findings(self, unit, result):
        return [
            Finding(
                "PRB001",
                f"{unit.unit.path} has {result['objects']} object(s)",
                Location(unit.unit.path),
                severity=Severity.WARNING,
                unit=unit.unit.path,
            )
        ]


STAGE = Probe()
"""


@pytest.fixture
def probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A stage module in a folder of its own, added to the stages package's search path (in
    this process only: other test workers never see it)."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "zz_probe.py").write_text(PROBE, encoding="utf-8")
    monkeypatch.setattr(stages, "__path__", [*stages.__path__, str(folder)])
    yield "generator.validate.stages.zz_probe"
    sys.modules.pop("generator.validate.stages.zz_probe", None)


def test_a_new_stage_module_is_discovered_in_order(probe: str) -> None:
    names = [s.name for s in stages.discover()]
    assert names == [
        "build",
        "promtool",
        "charts",
        "nfd",
        "kueue",
        "workloads",
        "schedcheck",
        "probe",
    ]


def test_its_codes_are_listed_by_rules(probe: str) -> None:
    code, out = cli("rules")
    assert code == 0, out
    assert "| PRB001 | manifests (probe) | warning | a unit a probe stage counted |" in out


def test_validate_runs_it_on_every_unit_caches_and_reports_it(tmp_path: Path, probe: str) -> None:
    values = tree(tmp_path)
    assert cli("render", "--values", str(values))[0] == 0
    code, out = cli("validate", "--values", str(values))
    assert code == 0, out
    module = sys.modules[probe]
    [paths] = module.RUNS  # type: ignore[attr-defined]
    assert "overlays/prod/team-ml" in paths
    # Run once per distinct unit (twins share a build), reported for each of the 10 units.
    assert "(units 10," in out
    assert "overlays/prod/team-ml: PRB001 warning: overlays/prod/team-ml has " in out
    assert out.count(": PRB001 warning: ") == 10
    # A warm run replays the stage's verdicts from the cache: the stage does not run again.
    code, again = cli("validate", "--values", str(values))
    assert code == 0
    assert [paths] == module.RUNS  # type: ignore[attr-defined]
    assert again.count(": PRB001 warning: ") == 10
