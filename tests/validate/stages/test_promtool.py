"""promtool checks rule files in batches; each file's verdict is its own (real promtool)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
    # promtool names its file, a scratch file no user sees, and the line and column there: the
    # group, the rule's number and its name say which rule.
    assert problems["b"] == (
        'group "g", rule 1, "a:b:sum": could not parse expression: 1:7: '
        "parse error: unclosed left parenthesis"
    )
    assert problems["d"].startswith("lint error 1 duplicate rule(s) found.; Metric: a:b:sum")


def test_rule_files_hold_the_groups_as_json_which_promtool_reads_as_yaml(tmp_path: Path) -> None:
    """JSON is written 15 times faster than YAML; promtool reads it as the same groups: a clean
    file passes, and a bad expression, a duplicate and unicode text get the verdicts they get
    as YAML."""
    expr = 'sum by (namespace) (kube_resourcequota{resource="nvidia.com/gpu", type="used"})\n'
    groups = [
        {
            "name": "quota: ünïcode & 'quotes'",
            "rules": [
                {"record": "a:b:sum", "expr": expr * 1, "labels": {"team": "x: y", "n": "1"}},
                {
                    "alert": "Long",
                    "expr": " or ".join(f'up{{job="j{i}"}} == 0' for i in range(40)),
                    "for": "5m",
                },
            ],
        }
    ]
    bad = [{"name": "g", "rules": [{"record": "a:b:sum", "expr": "sum(up"}]}]
    twice = [{"name": "g", "rules": [{"record": "a:b:sum", "expr": "sum(up)"}] * 2}]
    rule = {"kind": "PrometheusRule", "metadata": {"namespace": "m"}}
    docs = [
        {**rule, "metadata": {"name": name, "namespace": "m"}, "spec": {"groups": g}}
        for name, g in (("good", groups), ("bad", bad), ("twice", twice))
    ]
    files = tools.rule_files("overlays/x/monitoring", [*docs, {"kind": "ConfigMap"}], tmp_path)
    assert list(files) == ["m/good", "m/bad", "m/twice"]
    assert json.loads(files["m/good"].read_text(encoding="utf-8")) == {"groups": groups}
    assert "ünïcode" in files["m/good"].read_text(encoding="utf-8")
    problems = tools.promtool_check(files)
    assert sorted(problems) == ["m/bad", "m/twice"]
    assert problems["m/bad"] == (
        'group "g", rule 1, "a:b:sum": could not parse expression: 1:7: '
        "parse error: unclosed left parenthesis"
    )
    assert problems["m/twice"].startswith("lint error 1 duplicate rule(s) found.")


def test_a_bad_duration_is_said_once_in_promtool_s_words(tmp_path: Path) -> None:
    """promtool prints the error of a value its rule parser cannot decode twice (it decodes the
    file twice): the problem says it once, as promtool words it. (Decoding stops there: a second
    rule's bad duration is not reached.)"""
    rule = "  - alert: {}\n    expr: up == 0\n    for: {}\n"
    files = {"late": tmp_path / "late.yaml"}
    files["late"].write_text(
        "groups:\n- name: g\n  rules:\n"
        + rule.format("Down", "5 minutes")
        + rule.format("Up", "3x")
    )
    assert tools.promtool_check(files) == {
        "late": 'unknown unit " minutes" in duration "5 minutes"'
    }
