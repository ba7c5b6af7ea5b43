"""The layers of ARCHITECTURE.md hold, checked by import-linter (`lint-imports`) against every
import of the package: the contract in pyproject.toml, the list in ARCHITECTURE.md, and the two
equal. And no package `__init__` imports its own submodules: a package that re-exports its submodules,
which import the package back, is an import cycle that only the order of first use resolves.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.fixtures import ROOT

PACKAGE = ROOT / "generator"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def contract_layers() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    [contract] = [c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "layers"]
    layers: list[str] = contract["layers"]
    return layers


def documented_layers() -> list[str]:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = text.split("```layers\n", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip()]


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter on the package under `root`, with the project's contracts."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_documented_layers_are_the_contract() -> None:
    assert documented_layers() == contract_layers()
    assert documented_layers()[0] == "cli : __main__"
    assert documented_layers()[-1] == "findings"


def test_every_import_keeps_the_contracts() -> None:
    proc = lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Contracts: 3 kept, 0 broken." in proc.stdout


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """The package copied, for a wrong import added on purpose."""
    shutil.copytree(PACKAGE, tmp_path / "generator", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_an_import_against_the_layers_is_caught(copy: Path) -> None:
    api = copy / "generator" / "vocab" / "api.py"
    api.write_text(
        api.read_text(encoding="utf-8") + "\nfrom generator.builders import common\n",
        encoding="utf-8",
    )
    proc = lint_imports(copy)
    assert proc.returncode == 1
    assert "Layers, top to bottom BROKEN" in proc.stdout
    assert "generator.vocab.api -> generator.builders.common" in proc.stdout


def test_two_independent_siblings_importing_each_other_is_caught(copy: Path) -> None:
    plan = copy / "generator" / "plan.py"
    plan.write_text(
        plan.read_text(encoding="utf-8") + "\nfrom generator.validate import drift\n",
        encoding="utf-8",
    )
    proc = lint_imports(copy)
    assert proc.returncode == 1
    assert "generator.plan -> generator.validate.drift" in proc.stdout


def test_the_simulation_importing_validate_is_caught(copy: Path) -> None:
    judge = copy / "generator" / "simulate" / "judge.py"
    judge.write_text(
        judge.read_text(encoding="utf-8") + "\nfrom generator.validate import drift\n",
        encoding="utf-8",
    )
    proc = lint_imports(copy)
    assert proc.returncode == 1
    assert "import nothing of each other BROKEN" in proc.stdout
    assert "generator.simulate.judge -> generator.validate.drift" in proc.stdout


def test_the_control_plane_reading_the_fleet_is_caught(copy: Path) -> None:
    """A value or a fleet label in the processes: the layers refuse the one, the control
    plane's own contract the other."""
    launcher = copy / "generator" / "controlplane" / "launcher.py"
    launcher.write_text(
        launcher.read_text(encoding="utf-8")
        + "\nfrom generator.values import model\nfrom generator.vocab import labels\n",
        encoding="utf-8",
    )
    proc = lint_imports(copy)
    assert proc.returncode == 1
    assert "generator.controlplane.launcher -> generator.values.model" in proc.stdout
    assert "the control plane knows nothing of the fleet BROKEN" in proc.stdout
    assert "generator.controlplane.launcher -> generator.vocab.labels" in proc.stdout


def test_a_package_outside_every_layer_is_caught(copy: Path) -> None:
    (copy / "generator" / "extra").mkdir()
    (copy / "generator" / "extra" / "__init__.py").write_text('"""New."""\n', encoding="utf-8")
    proc = lint_imports(copy)
    assert proc.returncode == 1
    assert "generator.extra" in proc.stdout


def own_imports(package: str, source: str) -> list[int]:
    """The lines where a package's __init__ imports one of its own submodules (or a name from
    one): a re-export, which its submodules importing the package turn into a cycle."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        if any(n.startswith(package + ".") for n in names):
            found.append(node.lineno)
    return found


def re_exports(root: Path) -> list[str]:
    """file:line of every package __init__ under root/generator that imports its own
    submodules."""
    return [
        f"{path.relative_to(root).as_posix()}:{line}"
        for path in sorted((root / "generator").rglob("__init__.py"))
        for line in own_imports(
            ".".join(path.parent.relative_to(root).parts), path.read_text(encoding="utf-8")
        )
    ]


def test_no_package_init_re_exports_its_submodules() -> None:
    assert re_exports(ROOT) == []


def test_an_init_cycle_added_on_purpose_is_caught(copy: Path) -> None:
    """validate/__init__ re-exporting run.validate: run imports `generator.validate.stages`,
    whose import runs validate/__init__ first, a cycle that only the order of first use
    resolves."""
    init = copy / "generator" / "validate" / "__init__.py"
    init.write_text(
        init.read_text(encoding="utf-8") + "\nfrom generator.validate.run import validate\n",
        encoding="utf-8",
    )
    line = len(init.read_text(encoding="utf-8").splitlines())
    assert re_exports(copy) == [f"generator/validate/__init__.py:{line}"]


@pytest.mark.parametrize(
    ("source", "lines"),
    [
        ('"""Docs only."""\n\nfrom __future__ import annotations\n', []),
        ('"""Re-exports."""\nfrom generator.validate.run import validate\n', [2]),
        ('"""Its submodule."""\nfrom generator.validate import run\n', [2]),
        ('"""Its own code."""\nimport json\nfrom generator.findings import Finding\n', []),
        ('"""A sibling\'s."""\nfrom generator.validated import x\n', []),
    ],
)
def test_the_init_rule_sees_a_re_export(source: str, lines: list[int]) -> None:
    assert own_imports("generator.validate", source) == lines
