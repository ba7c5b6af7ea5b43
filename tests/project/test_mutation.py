"""`make mutation` (tools/mutation.py): the real mutmut on a small project made for it, the score
and floor it reports, the triage file it reads; and the shards cover the modules docs/testing.md
lists."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

from tests.fixtures import ROOT

# area() has no test at first; clamp()'s two mutants (`<` to `<=`, `>` to `>=`) are equivalent.
TOY = """\
def clamp(x: int, low: int, high: int) -> int:
    if x < low:
        return low
    if x > high:
        return high
    return x


def area(width: int, height: int) -> int:
    return width * height
"""
TESTS = """\
from generator.toy import clamp


def test_below() -> None:
    assert clamp(-1, 0, 10) == 0


def test_inside() -> None:
    assert clamp(5, 0, 10) == 5
"""
AREA_TEST = """

def test_area() -> None:
    from generator.toy import area

    assert area(3, 4) == 12
"""
# At x == low (x == high) both branches return x, so no test can tell them apart.
EQUIVALENT = """\
[[equivalent]]
module = "generator.toy"
function = "clamp"
mutation = ["-    if x > high:", "+    if x >= high:"]
reason = "at x == high both branches return x"

[[equivalent]]
module = "generator.toy"
function = "clamp"
mutation = ["-    if x < low:", "+    if x <= low:"]
reason = "at x == low both branches return x"
"""


def toy(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "generator").mkdir(parents=True)
    (root / "generator" / "__init__.py").write_text("")
    (root / "generator" / "toy.py").write_text(TOY)
    (root / "tests" / "mutation").mkdir(parents=True)
    (root / "tests" / "test_toy.py").write_text(TESTS)
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    (root / "tests" / "mutation" / "shards.toml").write_text(
        '[shard.toy]\ntests = ["tests/test_toy.py"]\nmodules = { "generator/toy.py" = 90 }\n'
    )
    return root


def mutation(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, str(ROOT / "tools" / "mutation.py"), "--root", str(root), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def row(out: str) -> list[str]:
    line = next(x for x in out.splitlines() if x.startswith("| `generator/toy.py`"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_a_survivor_fails_the_floor_until_a_test_kills_it_or_it_is_triaged(
    tmp_path: Path,
) -> None:
    root = toy(tmp_path)
    first = mutation(root, "run", "--max-children", "1")
    assert first.returncode == 1, first.stdout + first.stderr
    # Each mutant no test killed is shown with its diff; area() has no test at all.
    assert row(first.stdout) == [
        "`generator/toy.py`",
        "3",
        "0",
        "0",
        "3",
        "0.0 %",
        "90 % **below floor**",
    ]
    assert "--- survived: generator.toy.x_clamp__mutmut_2" in first.stdout
    assert "-    if x > high:\n+    if x >= high:" in first.stdout
    assert "--- no tests: generator.toy.x_area__mutmut_1" in first.stdout
    assert "-    return width * height\n+    return width / height" in first.stdout

    # A test of area() kills its mutant; the triage file takes clamp()'s two equivalents.
    (root / "tests" / "test_toy.py").write_text(TESTS + AREA_TEST)
    (root / "tests" / "mutation" / "equivalents.toml").write_text(EQUIVALENT)
    second = mutation(root, "run", "--max-children", "1")
    assert second.returncode == 0, second.stdout + second.stderr
    assert row(second.stdout) == ["`generator/toy.py`", "3", "1", "2", "0", "100.0 %", "90 %"]
    assert "--- survived" not in second.stdout

    # `report` reads the last run again; a triage entry that matches no mutant any more fails.
    stale = EQUIVALENT.replace("x >= high", "x != high")
    (root / "tests" / "mutation" / "equivalents.toml").write_text(stale)
    again = mutation(root, "report")
    assert again.returncode == 1
    assert "stale triage in tests/mutation/equivalents.toml: generator.toy clamp" in again.stdout
    assert "--- survived: generator.toy.x_clamp__mutmut_2" in again.stdout
    assert row(again.stdout) == [
        "`generator/toy.py`",
        "3",
        "1",
        "1",
        "1",
        "50.0 %",
        "90 % **below floor**",
    ]

    # One shard reported alone (CI runs a job per shard) still fails on its own stale triage,
    # and says nothing of another shard's triage, whose mutants it did not read.
    shards = root / "tests" / "mutation" / "shards.toml"
    shards.write_text(
        shards.read_text() + '[shard.other]\ntests = []\nmodules = { "generator/other.py" = 90 }\n'
    )
    other = EQUIVALENT.replace('"generator.toy"', '"generator.other"').split("\n\n")[0]
    (root / "tests" / "mutation" / "equivalents.toml").write_text(stale + "\n" + other + "\n")
    alone = mutation(root, "report", "toy")
    assert alone.returncode == 1
    assert "stale triage in tests/mutation/equivalents.toml: generator.toy clamp" in alone.stdout
    assert "generator.other" not in alone.stdout


def test_an_unknown_shard_is_a_usage_error(tmp_path: Path) -> None:
    proc = mutation(toy(tmp_path), "run", "toys")
    assert proc.returncode == 2
    assert "unknown shard toys; shards: toy" in proc.stderr


def test_the_shards_and_the_docs_name_the_same_modules_and_floors() -> None:
    shards = tomllib.loads((ROOT / "tests" / "mutation" / "shards.toml").read_text())["shard"]
    floors = {m: f for s in shards.values() for m, f in s["modules"].items()}
    doc = (ROOT / "docs" / "testing.md").read_text()
    table = dict(re.findall(r"^\| `(generator/[\w/]+\.py)` \|.*\| (\d+) % \|$", doc, re.M))
    assert {m: int(f) for m, f in table.items()} == floors
    for shard in shards.values():
        for path in [*shard["modules"], *shard["tests"]]:
            assert (ROOT / path).exists(), path


def test_every_triaged_equivalent_says_why() -> None:
    path = ROOT / "tests" / "mutation" / "equivalents.toml"
    entries = tomllib.loads(path.read_text()).get("equivalent", [])
    for e in entries:
        assert set(e) == {"module", "function", "mutation", "reason"}, e
        assert len(e["reason"]) > 10 and e["mutation"], e
        assert all(line[:1] in "-+" for line in e["mutation"]), e
    assert textwrap.dedent(path.read_text()).startswith("#")  # the file says what it is


def _function_source(path: Path, qualname: str) -> str | None:
    """The source of a module's function or `Class.method`, or None when it has none such."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    scope: list[ast.stmt] = tree.body
    *classes, name = qualname.split(".")
    for cls in classes:
        found = [n for n in scope if isinstance(n, ast.ClassDef) and n.name == cls]
        if not found:
            return None
        scope = found[0].body
    for node in scope:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            # Whole lines: a comment closing the last line is part of what mutmut shows.
            return "\n".join(text.splitlines()[node.lineno - 1 : node.end_lineno])
    return None


def test_every_triaged_equivalent_still_names_code_that_exists() -> None:
    """A refactoring that moves or rewrites a function leaves its triage stale; `make mutation`
    fails on it only after a run of tens of minutes. Here it fails at once: the module and the
    function of each entry exist and hold the lines its mutation removes (indentation aside)."""
    stale = []
    for entry in tomllib.loads(
        (ROOT / "tests" / "mutation" / "equivalents.toml").read_text(encoding="utf-8")
    )["equivalent"]:
        path = ROOT / (entry["module"].replace(".", "/") + ".py")
        source = _function_source(path, entry["function"]) if path.is_file() else None
        if source is None:
            stale.append(f"{entry['module']} {entry['function']}: no such function")
            continue
        lines = {line.strip() for line in source.splitlines()}
        removed = [m[1:].strip() for m in entry["mutation"] if m.startswith("-")]
        missing = [line for line in removed if line not in lines]
        if missing:
            stale.append(f"{entry['module']} {entry['function']}: no line {missing[0]!r}")
    assert stale == []
