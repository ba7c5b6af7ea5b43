"""generator/controlplane runs processes and knows nothing of the fleet: its modules import, of the
package, only each other and what sits below every stage (the toolchain, findings and errors).
The layer test allows it the layers below it; this one holds the stricter rule, so that a value,
a builder or a label of the fleet never finds its way into the processes."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.fixtures import ROOT

PACKAGE = ROOT / "generator" / "controlplane"
ALLOWED = (
    "generator.controlplane",
    "generator.toolchain",
    "generator.findings",
    "generator.errors",
)


def generator_imports(path: Path) -> list[tuple[str, int]]:
    """(module of the package imported, line) for every import of generator in a file; `from
    generator import x` names generator.x."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "generator":
                out += [(f"generator.{a.name}", node.lineno) for a in node.names]
            else:
                out.append((node.module, node.lineno))
        elif isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
    return [(name, line) for name, line in out if name.split(".")[0] == "generator"]


def foreign(path: Path) -> list[tuple[str, int]]:
    """The imports of `path` that name a module of the package outside ALLOWED."""
    return [
        (name, line)
        for name, line in generator_imports(path)
        if not any(name == a or name.startswith(a + ".") for a in ALLOWED)
    ]


def test_the_control_plane_imports_nothing_of_the_fleet() -> None:
    files = sorted(PACKAGE.rglob("*.py"))
    assert files
    hits = [f"{p.relative_to(ROOT)}:{line}: {name}" for p in files for name, line in foreign(p)]
    assert hits == []


def test_the_scan_catches_an_import_of_the_fleet(tmp_path: Path) -> None:
    """Each way of naming a fleet module is caught; the allowed ones are not."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from generator import toolchain, values\n"
        "from generator.builders import platform\n"
        "import generator.workloads.model\n"
        "from generator.controlplane.api import ApiClient\n"
        "from generator.findings import Finding\n"
        "import yaml\n",
        encoding="utf-8",
    )
    assert foreign(probe) == [
        ("generator.values", 1),
        ("generator.builders", 2),
        ("generator.workloads.model", 3),
    ]
