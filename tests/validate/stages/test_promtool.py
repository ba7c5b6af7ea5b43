"""promtool checks rule files in batches; each file's verdict is its own (real promtool)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from generator.validate.stages import promtool as tools

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


def test_rule_files_hold_the_groups_as_pyyaml_writes_them(tmp_path: Path) -> None:
    # Written with libyaml's emitter for speed: the bytes of yaml.safe_dump, so promtool's
    # messages (line and column) are the same either way.
    expr = 'sum by (namespace) (kube_resourcequota{resource="nvidia.com/gpu", type="used"})\n'
    groups = [
        {
            "name": "quota: ünïcode & 'quotes'",
            "rules": [
                {"record": "a:b:sum", "expr": expr * 3, "labels": {"team": "x: y", "n": "1"}},
                {"alert": "Long", "expr": "up == 0 " * 40, "for": "5m"},
            ],
        }
    ]
    rule = {"kind": "PrometheusRule", "metadata": {"name": "r", "namespace": "m"}}
    files = tools.rule_files(
        "overlays/x/monitoring", [{**rule, "spec": {"groups": groups}}], tmp_path
    )
    assert list(files) == ["m/r"]
    assert files["m/r"].read_text(encoding="utf-8") == yaml.safe_dump({"groups": groups})
