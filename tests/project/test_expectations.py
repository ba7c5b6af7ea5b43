"""A test's expected value never comes from the code under test (docs/testing.md): no test module
reads the code's hint or message tables for what it expects.

Such a table is a name imported from `generator` whose last word is HINT(S), SUMMARY/SUMMARIES or
MESSAGE(S) (`HINTS`, `HINT`, `MON003_HINT`, `SUMMARIES`: the ones tests used to read), imported
by name or read as an attribute of an imported module (`workloads.HINTS`). A test may hold the
table itself as its subject, the left of an assert's comparison (`sorted(SUMMARIES) == [...]`);
anywhere else (the expected side of an assert, a Finding built to compare with, a name that
copies it) the text a user reads would come from the code, and a changed hint would pass. Other
constants of the code (labels, kinds, timeouts) are not recognised by name; a review keeps those
out of expected values.
"""

from __future__ import annotations

import ast
import re
import textwrap

import pytest

from tests.fixtures import ROOT

# The last word of a hint or message table's name (a leading underscore aside).
WORDS = re.compile(r"(?:^|_)(?:HINTS?|SUMMAR(?:Y|IES)|MESSAGES?)$")


def _from_generator(module: str | None) -> bool:
    return module is not None and (module == "generator" or module.startswith("generator."))


def _root(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


def copied_expectations(source: str) -> list[str]:
    """`line: name` for each read of a generator hint or message table that is not the subject of
    an assert's comparison."""
    tree = ast.parse(source)
    tables: set[str] = set()  # names bound to a table
    modules: set[str] = set()  # names bound to a generator module (or anything else of it)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and _from_generator(node.module):
            for alias in node.names:
                bound = alias.asname or alias.name
                (tables if WORDS.search(alias.name.lstrip("_")) else modules).add(bound)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _from_generator(alias.name):
                    modules.add(alias.asname or alias.name.split(".")[0])

    def is_table(node: ast.Name | ast.Attribute) -> bool:
        if isinstance(node, ast.Name):
            return node.id in tables and isinstance(node.ctx, ast.Load)
        root = _root(node)
        return bool(WORDS.search(node.attr.lstrip("_"))) and (
            isinstance(root, ast.Name) and root.id in modules
        )

    # Reads inside the subject of an assert's comparison; a comparison nested in a subject still
    # has its own expected side, which is not the subject.
    subject: set[int] = set()
    expected: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            for compare in ast.walk(node.test):
                if isinstance(compare, ast.Compare):
                    subject |= {id(n) for n in ast.walk(compare.left)}
                    expected |= {id(n) for c in compare.comparators for n in ast.walk(c)}
    found = {
        (node.lineno, ast.unparse(node))
        for node in ast.walk(tree)
        if isinstance(node, ast.Name | ast.Attribute)
        and is_table(node)
        and (id(node) not in subject or id(node) in expected)
    }
    return [f"{line}: {name}" for line, name in sorted(found)]


def test_no_test_expects_a_hint_or_message_read_from_the_code() -> None:
    found = {
        str(path.relative_to(ROOT)): hits
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if (hits := copied_expectations(path.read_text(encoding="utf-8")))
    }
    assert found == {}, "write the expected text in the test, not the code's table: " + str(found)


@pytest.mark.parametrize(
    ("source", "hits"),
    [
        # The defect as the tests had it: a finding's hint expected from the code's table.
        (
            """
            from generator.cluster.simresult import HINTS
            assert report.findings == [Finding("SIM001", "m", at, hint=HINTS["SIM001"])]
            """,
            ["3: HINTS"],
        ),
        # A module's table read as an attribute, and a hint built from an aliased one.
        (
            """
            from generator.validate.stages import workloads
            from generator.cluster.preflight import HINT as PRE
            assert hints[path] == workloads.HINTS["tasks"]
            assert finding.hint == "install NFD; " + PRE
            """,
            ["4: workloads.HINTS", "5: PRE"],
        ),
        # `import generator...` in both spellings, and a table among a module's names.
        (
            """
            import generator.cluster.simresult
            import generator.cluster.simresult as simresult
            assert f.hint == generator.cluster.simresult.HINTS["SIM002"]
            assert f.hint in simresult.HINTS.values()
            """,
            ["4: generator.cluster.simresult.HINTS", "5: simresult.HINTS"],
        ),
        # Copied outside the assert: a finding built beforehand, a module-level alias.
        (
            """
            from generator.policy.monitoring import MON003_HINT
            from generator.cluster.simscope import HINT
            WANT = MON003_HINT
            def test():
                want = Finding("SIM011", "m", at, hint=HINT)
                assert found == [want]
            """,
            ["4: MON003_HINT", "6: HINT"],
        ),
        # A subject's own comparison has an expected side too.
        (
            """
            from generator.policy.placement import SUMMARIES
            assert (SUMMARIES["POD001"] == SUMMARIES["POD002"]) is False
            """,
            ["3: SUMMARIES"],
        ),
        # The table as the assert's subject: its keys are what the test holds.
        (
            """
            from generator.policy.placement import SUMMARIES
            assert sorted(SUMMARIES) == ["POD001", "POD002"]
            """,
            [],
        ),
        # The hint written in the test, under the same name: no import from generator.
        (
            """
            from tests.fixtures import tree
            HINTS = {"SIM001": "fix the pool's labels"}
            assert f.hint == HINTS["SIM001"]
            """,
            [],
        ),
        # Not a hint or message table: an input the test builds with (a review's part).
        (
            """
            from generator.builders.workloads import NAME_LABEL
            assert selector(svc) == {NAME_LABEL: "chat"}
            """,
            [],
        ),
    ],
)
def test_the_guard_fires_on_each_way_a_table_reaches_an_expectation(
    source: str, hits: list[str]
) -> None:
    assert copied_expectations(textwrap.dedent(source)) == hits
