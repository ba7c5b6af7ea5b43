"""A validate stage is a plug-in: a module in generator/validate/stages/ with a STAGE, listed in
stages/registry.py, is run on every committed unit, cached with it, reported, and its codes are
listed by `render.py rules`, with nothing else changed anywhere."""

from __future__ import annotations

import ast
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from generator.validate.stages import registry
from tests.fixtures import ROOT, cli, tree

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
    """A stage module in a folder of its own, added to the registry's list (in this process
    only: other test workers never see it)."""
    path = tmp_path / "zz_probe.py"
    path.write_text(PROBE, encoding="utf-8")
    name = "generator.validate.stages.zz_probe"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    monkeypatch.setattr(registry, "STAGES", (*registry.STAGES, module.STAGE))
    yield name
    sys.modules.pop(name, None)


def test_every_stage_module_is_listed_in_its_order() -> None:
    """A module of the folder with a STAGE that the registry forgot would never run."""
    folder = ROOT / "generator" / "validate" / "stages"
    with_stage = sorted(
        path.stem
        for path in folder.glob("*.py")
        if any(
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "STAGE" for t in node.targets)
            for node in ast.parse(path.read_text(encoding="utf-8")).body
        )
    )
    listed = sorted(type(s).__module__.rsplit(".", 1)[1] for s in registry.STAGES)
    assert listed == with_stage
    assert [s.name for s in registry.STAGES] == [
        "build",
        "promtool",
        "charts",
        "nfd",
        "kueue",
        "workloads",
        "schedcheck",
    ]
    orders = [s.order for s in registry.STAGES]
    assert orders == sorted(orders)


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
    [paths] = module.RUNS
    assert "overlays/prod/team-ml" in paths
    # Run once per distinct unit (twins share a build), reported for each of the 10 units.
    assert "(units 10," in out
    assert "overlays/prod/team-ml: PRB001 warning: overlays/prod/team-ml has " in out
    assert out.count(": PRB001 warning: ") == 10
    # A warm run replays the stage's verdicts from the cache: the stage does not run again.
    code, again = cli("validate", "--values", str(values))
    assert code == 0
    assert [paths] == module.RUNS
    assert again.count(": PRB001 warning: ") == 10
