"""Allocation modes are plug-ins (docs/allocation.md, "Where a mode lives"): each mode's
knowledge sits in its own module of generator/values/allocation/, and nothing outside that
package compares or branches on a mode's name. Anything else asks the mode object
(`vendor.sharing.mode`, the DRA mode), so a new mode is one new module and one line in the
package's list, not an edit in every module that once spelt `strategy == "mig"`.

The scan is of the syntax tree, not the text: a mode's name in a message, a docstring or a
values path is fine; in a comparison, a membership test, a match case or as the key of a table
(the shape `{"mig": ..., "vnpu": ...}[strategy]` that a branch takes as data) it is not.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.fixtures import ROOT

PACKAGE = ROOT / "generator"
HOME = PACKAGE / "values" / "allocation"
# The names values give the modes: the keys of `sharing`, and `allocation: dra`.
MODE_NAMES = frozenset({"timeSlicing", "mps", "mig", "vnpu", "dra"})


def _names(node: ast.AST) -> list[str]:
    """The mode names a node spells as a literal: a string, or the strings of a tuple, list or
    set (the right side of `in`)."""
    if isinstance(node, ast.Constant) and node.value in MODE_NAMES:
        return [str(node.value)]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [n for elt in node.elts for n in _names(elt)]
    return []


def _pattern_names(pattern: ast.pattern) -> list[str]:
    if isinstance(pattern, ast.MatchValue):
        return _names(pattern.value)
    if isinstance(pattern, ast.MatchOr):
        return [n for p in pattern.patterns for n in _pattern_names(p)]
    return []


def branches(source: str) -> list[tuple[int, str, str]]:
    """(line, what, name) for every comparison, membership test, match case or table key that
    spells a mode's name."""
    out: list[tuple[int, str, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                out += [(node.lineno, "comparison", n) for n in _names(side)]
        elif isinstance(node, ast.match_case):
            out += [(node.pattern.lineno, "match case", n) for n in _pattern_names(node.pattern)]
        elif isinstance(node, ast.Dict):
            out += [
                (key.lineno, "table key", n)
                for key in node.keys
                if key is not None
                for n in _names(key)
            ]
    return sorted(out)


def test_no_module_outside_the_allocation_package_branches_on_a_mode_name() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {what} on {name!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if HOME not in path.parents
        for line, what, name in branches(path.read_text(encoding="utf-8"))
    ]
    assert not found, "ask the mode object instead (values/allocation/):\n" + "\n".join(found)


def test_the_allocation_package_is_where_the_scan_looks_away() -> None:
    """The exemption is the package's folder: if it moved, the scan above would pass over
    nothing, or fail on the modes' own modules."""
    assert (HOME / "registry.py").is_file()
    assert sorted(p.name for p in HOME.glob("*.py")) == [
        "__init__.py",
        "base.py",
        "dra.py",
        "mig.py",
        "mps.py",
        "registry.py",
        "timeslicing.py",
        "vnpu.py",
    ]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # The shapes the branches took before the modes were plug-ins.
        ('if sharing.strategy == "mig":\n    pass\n', [(1, "comparison", "mig")]),
        ('x = sharing.strategy != "mps"\n', [(1, "comparison", "mps")]),
        (
            'if s.strategy not in ("mig", "vnpu"):\n    pass\n',
            [(1, "comparison", "mig"), (1, "comparison", "vnpu")],
        ),
        ('ok = s in ["timeSlicing"]\n', [(1, "comparison", "timeSlicing")]),
        ('ok = "dra" == doc.get("allocation")\n', [(1, "comparison", "dra")]),
        (
            'match s.strategy:\n    case "mig":\n        pass\n    case "vnpu" | "mps":\n'
            "        pass\n",
            [(2, "match case", "mig"), (4, "match case", "mps"), (4, "match case", "vnpu")],
        ),
        (
            'what = {"mig": "MIG profile", "vnpu": "vNPU template"}[strategy]\n',
            [(1, "table key", "mig"), (1, "table key", "vnpu")],
        ),
        # Not branches: a name in a message, a values path, a call's argument, another word.
        ('msg = f"shares its devices by {strategy}" + "mig"\n', []),
        ('at = doc.locate(("sharing", "mig", "profile"))\n', []),
        ('if kind == "Deployment" or name == "migrate":\n    pass\n', []),
        ('table = {**base, "devicePlugin": 1}\n', []),
    ],
)
def test_the_scan_finds_each_shape_of_branch(
    source: str, expected: list[tuple[int, str, str]]
) -> None:
    assert branches(source) == expected


def test_the_scan_fires_on_a_module_written_the_old_way(tmp_path: Path) -> None:
    """A sample module in the shape of the old cluster/simscope.py and policy/allocation.py:
    every branch on a mode's name is named, with its line."""
    sample = tmp_path / "old.py"
    sample.write_text(
        "ONE_PER_POD = {\n"
        '    "timeSlicing": ("share", "failRequestsGreaterThanOne"),\n'
        '    "vnpu": ("vNPU", "one virtual device per container request"),\n'
        "}\n"
        "\n"
        "def words(sharing):\n"
        '    if sharing.strategy == "mig":\n'
        '        return "instances"\n'
        '    elif sharing.strategy in ("mps", "timeSlicing"):\n'
        '        return "shares"\n'
        '    return "vNPUs"\n',
        encoding="utf-8",
    )
    assert branches(sample.read_text(encoding="utf-8")) == [
        (2, "table key", "timeSlicing"),
        (3, "table key", "vnpu"),
        (7, "comparison", "mig"),
        (9, "comparison", "mps"),
        (9, "comparison", "timeSlicing"),
    ]
