"""The vocabulary has one home: no API version, label or annotation key is spelled outside
generator/vocab/ (ARCHITECTURE.md). A reader and a writer of the same label then cannot
disagree, and an API upgrade is one line.

The test reads every string literal of the package (docstrings aside) and refuses those shaped
like an apiVersion (`v1`, `apps/v1`, `kueue.x-k8s.io/v1beta2`) or a qualified key
(`accel-gitops.io/vendor`, `feature.node.kubernetes.io/`). generator/toolchain/ is exempt: its
Go module paths (`sigs.k8s.io/kueue`) share the shape and are the pins of the tools, not words
of the fleet.
"""

from __future__ import annotations

import ast
import re

import pytest

from tests.fixtures import ROOT

PACKAGE = ROOT / "generator"
HOME = PACKAGE / "vocab"
EXEMPT = (PACKAGE / "toolchain",)


API_VERSION = re.compile(r"^(?:[a-z0-9-]+(?:\.[a-z0-9-]+)*/)?v\d+(?:(?:alpha|beta)\d+)?$")
QUALIFIED_KEY = re.compile(r"^(?:[a-z0-9-]+\.)+[a-z0-9-]+/(?:[A-Za-z0-9._-]+)?$")


def spelled(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string literal of a module that is an API version or a qualified
    label or annotation key; docstrings are prose and are left alone."""
    tree = ast.parse(source)
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and (API_VERSION.match(node.value) or QUALIFIED_KEY.match(node.value))
    )


def test_no_api_version_or_label_is_spelled_outside_the_vocabulary() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if not path.is_relative_to(HOME) and not any(path.is_relative_to(e) for e in EXEMPT)
        for line, text in spelled(path.read_text(encoding="utf-8"))
    ]
    assert found == []


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ('OBJ = {"apiVersion": "v1", "kind": "Namespace"}\n', [(1, "v1")]),
        ('API = "apps/v1"\n', [(1, "apps/v1")]),
        ('API = "kueue.x-k8s.io/v1beta2"\n', [(1, "kueue.x-k8s.io/v1beta2")]),
        ('x = {"accel-gitops.io/vendor": "nvidia"}\n', [(1, "accel-gitops.io/vendor")]),
        ('PREFIX = "feature.node.kubernetes.io/"\n', [(1, "feature.node.kubernetes.io/")]),
        ('"""A docstring naming apps/v1 and accel-gitops.io/vendor."""\n', []),
        ('PATH = "values/fleet.yaml"\nURL = "https://example.com/x"\nV = "v1.36"\n', []),
        ('def f():\n    """apps/v1"""\n    return "batch/v1"\n', [(3, "batch/v1")]),
    ],
)
def test_the_vocabulary_guard_sees_what_it_must(source: str, found: list[tuple[int, str]]) -> None:
    assert spelled(source) == found


def test_each_word_of_the_vocabulary_is_declared_once() -> None:
    """Two names for one label would let readers and writers drift apart again."""
    values: dict[str, list[str]] = {}
    for path in sorted(HOME.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                values.setdefault(node.value.value, []).append(f"{path.name}:{node.targets[0].id}")
    assert {v: names for v, names in values.items() if len(names) > 1} == {}


def test_the_vocabulary_imports_nothing_above_findings() -> None:
    """It sits at the bottom: findings and errors below it, everything else above."""
    for path in sorted(HOME.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("generator"):
                module = str(node.module)
                assert module == "generator.findings" or module.startswith("generator.vocab"), (
                    f"{path.relative_to(ROOT)}:{node.lineno}: imports {module}"
                )
