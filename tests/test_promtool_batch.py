"""promtool checks rule files in batches; each file's verdict is its own (real promtool)."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.validate import tools

GOOD = "groups:\n- name: g\n  rules:\n  - record: a:b:sum\n    expr: sum(up)\n"
BAD_PROMQL = "groups:\n- name: g\n  rules:\n  - record: a:b:sum\n    expr: sum(up\n"
DUPLICATE = (  # lint only: --lint-fatal makes it a failure
    "groups:\n- name: g\n  rules:\n  - record: a:b:sum\n    expr: sum(up)\n"
    "  - record: a:b:sum\n    expr: sum(up)\n"
)


@pytest.mark.parametrize("batch", [1, 2, 200])
def test_each_rule_file_gets_its_own_verdict_whatever_the_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    monkeypatch.setattr(tools, "PROMTOOL_BATCH", batch)
    files = {}
    for name, text in [("a", GOOD), ("b", BAD_PROMQL), ("c", GOOD), ("d", DUPLICATE), ("e", GOOD)]:
        files[name] = tmp_path / f"{name}.yaml"
        files[name].write_text(text)
    problems = tools.promtool_check(files)
    assert sorted(problems) == ["b", "d"]
    assert problems["b"] == (
        f'{files["b"]}: 5:11: group "g", rule 1, "a:b:sum": could not parse expression: 1:7: '
        "parse error: unclosed left parenthesis"
    )
    assert problems["d"].startswith("lint error 1 duplicate rule(s) found.; Metric: a:b:sum")
