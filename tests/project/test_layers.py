"""The package's shape holds: no import cycle, no import against the layer order, no import
hidden in a function, and nothing registered as a side effect of being imported.

Layers, bottom to top (a module imports only from its own layer or below; inside one layer,
modules may import each other as long as no cycle forms):

findings/errors -> toolchain -> values -> workloads -> builders -> policy -> render ->
validate / delivery / cluster / plan -> commands -> reporters / fleetreport -> cli

commands holds the cores that compose the stage packages for one command each (validate then a
dry-run, ...): above them, so they stay independent of each other, and below the reporters,
which format the cores' results.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.fixtures import ROOT

PACKAGE = ROOT / "generator"

# (layer, module prefixes in it); the first matching prefix decides, so the longest go first.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("findings", ("generator.findings", "generator.errors", "generator.__init__")),
    ("toolchain", ("generator.toolchain",)),
    ("values", ("generator.values",)),
    ("workloads", ("generator.workloads",)),
    ("builders", ("generator.builders",)),
    ("policy", ("generator.policy",)),
    ("render", ("generator.render",)),
    (
        "stages",
        ("generator.validate", "generator.delivery", "generator.cluster", "generator.plan"),
    ),
    ("commands", ("generator.commands",)),
    ("reporters", ("generator.reporters", "generator.fleetreport")),
    ("cli", ("generator.cli", "generator.__main__")),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int:
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                return i
    raise AssertionError(f"{module} is in no layer: add it to LAYERS")


def imports(path: Path, known: dict[str, Path]) -> list[tuple[str, int, bool]]:
    """(imported generator module, line, at module level) for every import in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    out = []
    for node in ast.walk(tree):
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


def test_every_module_is_in_a_layer() -> None:
    for name in modules():
        layer_of(name)


def test_no_import_goes_against_the_layer_order() -> None:
    known = modules()
    wrong = []
    for name, path in known.items():
        for target, line, _ in imports(path, known):
            if target == "generator":
                continue
            if layer_of(target) > layer_of(name):
                wrong.append(
                    f"{path.relative_to(ROOT)}:{line}: {name} ({LAYERS[layer_of(name)][0]}) "
                    f"imports {target} ({LAYERS[layer_of(target)][0]})"
                )
    assert wrong == []


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
