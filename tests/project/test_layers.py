"""The package's shape holds: no import cycle, no import hidden in a function, and nothing
registered as a side effect of being imported. (The layer order is import-linter's contract:
ARCHITECTURE.md, tests/project/test_architecture.py.)"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.fixtures import ROOT

PACKAGE = ROOT / "generator"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(path: Path, known: dict[str, Path]) -> list[tuple[str, int, bool]]:
    """(imported generator module, line, at module level) for every import in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{path}:{node.lineno}: relative import"
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                names.append(full if full in known else node.module)
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            if name == "generator" or name.startswith("generator."):
                out.append((name, node.lineno, id(node) in top))
    return out


def graph() -> dict[str, set[str]]:
    """{module: the modules importing it runs}. Importing generator.x.y runs the __init__ of
    generator.x too, except where the importer lives inside generator.x: its own packages are
    initialised before it, whatever it imports."""
    known = modules()
    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        parts = name.removesuffix(".__init__").split(".")
        own = {".".join(parts[:i]) + ".__init__" for i in range(1, len(parts) + 1)}
        targets = set()
        for target, _, _ in imports(path, known):
            steps = target.split(".")
            for i in range(1, len(steps) + 1):
                init = ".".join(steps[:i]) + ".__init__"
                if init in known:
                    targets.add(init)
            if target in known:
                targets.add(target)
        edges[name] = targets - own - {name}
    return edges


def test_no_import_hides_in_a_function() -> None:
    """Every import of the package is at module level, where the cycle test sees it."""
    known = modules()
    hidden = [
        f"{path.relative_to(ROOT)}:{line}: {target}"
        for name, path in known.items()
        for target, line, at_top in imports(path, known)
        if not at_top
    ]
    assert hidden == []


def find_cycle(edges: dict[str, set[str]]) -> list[str]:
    """One import cycle, as a path of modules, or [] when there is none."""
    state: dict[str, int] = {}  # 1 visiting, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return []

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


def test_no_import_cycle() -> None:
    assert find_cycle(graph()) == []


@pytest.mark.parametrize(
    ("edges", "cycle"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"a2"}, "a2": {"b"}, "b": {"a2"}}, ["a2", "b", "a2"]),
    ],
)
def test_the_cycle_finder_finds_cycles(edges: dict[str, set[str]], cycle: list[str]) -> None:
    assert find_cycle(edges) == cycle


def test_importing_a_module_registers_nothing() -> None:
    """The policy registry and the validate stages are lists: no module adds itself to one."""
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        for node in tree.body:
            # A module-level call on a registry (REGISTRY[...] = ..., X.append(...)) would be
            # registration by import; module-level statements are definitions and constants.
            # A module-level loop is how a module registers what it defines (the old POD and
            # placement rules did): lists are built as expressions instead.
            assert not isinstance(node, ast.For | ast.While), (
                f"{path.relative_to(ROOT)}:{node.lineno}: a module-level loop"
            )
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                func = node.value.func
                assert not (
                    isinstance(func, ast.Attribute) and func.attr in ("append", "register")
                ), f"{path.relative_to(ROOT)}:{node.lineno}: registration by import"
