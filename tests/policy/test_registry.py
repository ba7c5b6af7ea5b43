"""Every code the program can emit is listed (`render.py rules`), with a one-line summary, its
place and severity, a test that asserts it, and a line in the docs."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from generator.builders.fleet import build_values
from generator.findings import Finding, Location
from generator.policy import registry
from generator.policy.checks import Check
from generator.policy.context import Context
from generator.reporters.rules import all_codes, rules_table
from generator.values import loader as values
from tests.fixtures import NVIDIA, ROOT, tree

CODE = re.compile(r"\b[A-Z][A-Z0-9]{1,4}[0-9]{3}\b")


def all_rules() -> dict[str, str]:
    return {c.code: c.summary for c in all_codes()}


def test_codes_are_well_formed_and_summaries_one_line() -> None:
    for info in all_codes():
        assert re.fullmatch(r"[A-Z][A-Z0-9]{1,4}[0-9]{3}", info.code), info.code
        assert info.summary and "\n" not in info.summary and len(info.summary) < 140, info.code
        assert info.severity in ("error", "warning", "error or warning"), info.code
        assert info.runs_in, info.code


def emitted_codes() -> dict[str, str]:
    """{code: a file that emits it}: every string literal in the package shaped like a code."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "generator").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and re.fullmatch(r"[A-Z][A-Z0-9]{1,4}[0-9]{3}", text):
                found.setdefault(text, str(path.relative_to(ROOT)))
    return found


def test_every_code_the_program_emits_is_listed() -> None:
    """`render.py rules` is complete: a code found anywhere in the source is in it, and every
    code in it is found in the source (no stale entry)."""
    emitted = emitted_codes()
    listed = set(all_rules())
    assert {c: f for c, f in emitted.items() if c not in listed} == {}
    assert sorted(listed - set(emitted)) == []


def test_the_emitted_code_finder_sees_codes_built_in_tables() -> None:
    # Codes held in tables (HINTS, SUMMARIES) and passed as constants count, not only those
    # written in a Finding(...) call.
    emitted = emitted_codes()
    assert {"SIM004", "POD001", "KUS001", "K8S001", "DRIFT002", "KVER001"} <= set(emitted)


# ---- "asserted as the outcome of some test", not merely mentioned ---------------------------
# A code counts when it reaches a positive assertion of a test function: written in the assert
# (in a string, an f-string), or through what the assert reads: the test's parameters (their
# parametrize values), its local variables, and module-level constants, followed transitively.
# Mentions in comments, docstrings, `not in` / `!=` checks, `== []` (nothing found), the
# subtracted side of a set difference, or data no assertion reads do not count.


def _strings(node: ast.AST | None, resolve: dict[str, list[ast.AST]], depth: int = 0) -> set[str]:
    out: set[str] = set()
    if node is None or depth > 6:
        return out
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Compare):
        negated = any(isinstance(op, ast.NotIn | ast.NotEq | ast.IsNot) for op in node.ops)
        empty = any(_empty(c) for c in (node.left, *node.comparators))
        if negated or empty:
            return out
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
        return _strings(node.left, resolve, depth + 1)
    if isinstance(node, ast.Name):
        for expr in resolve.get(node.id, []):
            out |= _strings(expr, resolve, depth + 1)
        return out
    for child in ast.iter_child_nodes(node):
        out |= _strings(child, resolve, depth + 1)
    return out


def _empty(node: ast.AST) -> bool:
    """[], (), {}, set(), list(), dict(): an assertion that nothing was found."""
    if isinstance(node, ast.List | ast.Set | ast.Tuple | ast.Dict):
        return not [c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.expr_context)]
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("set", "list", "dict", "tuple")
        and not node.args
    )


def _bindings(body: list[ast.stmt] | ast.AST) -> dict[str, list[ast.AST]]:
    """Each name assigned (or looped over) in a body -> the expressions it comes from."""
    out: dict[str, list[ast.AST]] = {}
    nodes: list[ast.AST] = [*body] if isinstance(body, list) else [body]
    for stmt in nodes:
        for node in ast.walk(stmt):
            pairs: list[tuple[ast.AST, ast.AST]] = []
            if isinstance(node, ast.Assign):
                pairs = [(t, node.value) for t in node.targets]
            elif isinstance(node, ast.AnnAssign | ast.AugAssign) and node.value is not None:
                pairs = [(node.target, node.value)]
            elif isinstance(node, ast.For | ast.comprehension):
                pairs = [(node.target, node.iter)]
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                pairs = [(node.optional_vars, node.context_expr)]
            for target, value in pairs:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        out.setdefault(name.id, []).append(value)
    return out


def asserted_strings(source: str) -> set[str]:
    """Every string that reaches a positive assertion of a test function in `source`."""
    tree = ast.parse(source)
    module = _bindings([s for s in tree.body if not isinstance(s, ast.FunctionDef)])
    found: set[str] = set()
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef) or not fn.name.startswith("test_"):
            continue
        resolve = {k: list(v) for k, v in module.items()}
        for deco in fn.decorator_list:  # @pytest.mark.parametrize(names, values)
            if isinstance(deco, ast.Call) and len(deco.args) >= 2:
                names = deco.args[0]
                if isinstance(names, ast.Constant) and isinstance(names.value, str):
                    for name in names.value.split(","):
                        resolve.setdefault(name.strip(), []).append(deco.args[1])
        for name, exprs in _bindings(fn.body).items():
            resolve[name] = exprs + resolve.get(name, [])
        for node in ast.walk(fn):
            if isinstance(node, ast.Assert):
                found |= _strings(node.test, resolve)
            elif (  # pytest.raises(..., match=...)
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "raises"
            ):
                for kw in node.keywords:
                    if kw.arg == "match":
                        found |= _strings(kw.value, resolve)
    return found


def asserted_codes(source: str) -> set[str]:
    return {code for text in asserted_strings(source) for code in CODE.findall(text)}


def test_the_assertion_finder_counts_outcomes_and_ignores_mentions() -> None:
    source = '''
# AAA001 in a comment
KNOWN = {"BBB001": "x"}
CASES = {"CCC001": "file:1:1: CCC001 message"}
def helper():
    assert "DDD001" in run()
def test_a():
    """EEE001 in a docstring"""
    assert "FFF001" not in run()
    assert run() != "GGG001"
    assert find("HHH001") == []
    assert set(KNOWN) - {"III001"} == set()
    unused = "JJJ001"
    got = run()
    assert "KKK001" in got
@pytest.mark.parametrize("code", sorted(CASES))
def test_b(code):
    expected = CASES[code]
    assert expected in run()
def test_c():
    with pytest.raises(Error, match="LLL001"):
        run()
    line = f"x: MMM001 {1}"
    assert line in run()
'''
    assert asserted_codes(source) == {"KKK001", "CCC001", "LLL001", "MMM001"}


# Codes no test yet asserts as an outcome, each with why. Listed when `render.py rules` became
# complete (the dry-run and simulate codes were not in the registry the test read before); the
# next test issue closes them. A code leaves this list when a test asserts it (the test below
# fails until it is removed here), and no code joins it silently.
NOT_YET_ASSERTED = {
    "DRY002": "needs a kind the local control plane does not serve in a committed unit",
    "SIM005": "needs a pod that the scheduler places on another vendor's or model's node",
    "SIM012": "needs an object the API server refuses while simulate applies it",
}


def test_every_rule_is_asserted_as_the_outcome_of_a_test() -> None:
    asserted: set[str] = set()
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if path.resolve() != Path(__file__).resolve():
            asserted |= asserted_codes(path.read_text())
    missing = sorted(code for code in all_rules() if code not in asserted)
    assert missing == sorted(NOT_YET_ASSERTED)


def test_every_rule_is_documented() -> None:
    docs = "".join(p.read_text() for p in (ROOT / "docs").glob("*.md"))
    missing = [code for code in all_rules() if code not in docs]
    assert missing == []


def test_docs_list_the_registry_as_it_is() -> None:
    assert rules_table() in (ROOT / "docs" / "validate.md").read_text()


# ---- the registry's own functions --------------------------------------------------------------


def _nothing(ctx: Context) -> list[Finding]:
    return []


def test_listed_maps_each_code_to_its_check_in_order() -> None:
    first, second = Check("AAA001", "a", _nothing), Check("BBB001", "b", _nothing)
    got = registry._listed((second, first))
    assert list(got.items()) == [("BBB001", second), ("AAA001", first)]


def test_a_code_listed_twice_is_refused() -> None:
    """Two checks of one code would hide one of them in the {code: check} table."""
    twice = (Check("AAA001", "a", _nothing), Check("AAA001", "b", _nothing))
    with pytest.raises(ValueError) as raised:
        registry._listed(twice)
    assert str(raised.value) == "code AAA001 is listed twice in the policy registry"


def test_run_checks_runs_the_registered_checks_on_every_layer(tmp_path: Path) -> None:
    """A problem of the vendor files holds in every layer: one finding, naming no layer."""
    nvidia = NVIDIA + "exporter:\n  labels: {node: device, device: node}\n"
    loaded = values.load(tree(tmp_path, {"vendors/nvidia.yaml": nvidia}))
    got = [f for f in registry.run_checks(loaded, build_values(loaded)) if f.code == "MON001"]
    assert [(f.location, f.path, f.envs) for f in got] == [
        (Location("values/vendors/nvidia.yaml", 4, 3), "$.exporter.labels", ())
    ]
