"""PROM002: the Prometheus Operator's own ValidateRule (v0.85.0, through the real promrulecheck)
on every PrometheusRule of a validate run, beside promtool (the promtool stage), fed by a builder
added at run time."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from generator import CONSOLE
from generator.builders.common import metadata
from generator.builders.monitoring import rulefiles
from generator.findings import Location
from generator.toolchain.registry import tools_dir
from generator.validate.stages import UnitView, promoperator
from generator.validate.stages.promtool import STAGE
from generator.vocab.units import Unit
from tests.fixtures import (
    AMD_MI250X,
    ASCEND_910B,
    CAMBRICON_MLU370,
    FLEET,
    HYGON_Z100L,
    ml_tree,
    render_committed,
    tool,
    tree,
    validate_committed,
)

ML = """\
quota:
  nvidia: 4
"""
QUOTA_AT = "values/teams/ml-team.yaml:1:1"  # where the extra objects' findings point
WHAT = "PrometheusRule ml-team/rules (overlays/prod/team-ml-team)"
SIZE_HINT = (
    "the operator loads no rule file over 524288 bytes (512 KiB): split the rule groups over "
    "several PrometheusRules, fewer rules in each"
)


@pytest.fixture
def values(tmp_path: Path) -> Path:
    values = ml_tree(tmp_path, {"teams/ml-team.yaml": ML})
    assert render_committed(values) == 0
    return values


def rule(groups: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """A PrometheusRule in ml-team's unit, as if a builder made it from ml-team's values."""
    return (
        "team-ml-team",
        {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PrometheusRule",
            "metadata": metadata(
                "rules", namespace="ml-team", sources=["values/teams/ml-team.yaml"]
            ),
            "spec": {"groups": groups},
        },
    )


def padded(quota: int, cost: int) -> list[dict[str, Any]]:
    """Two groups of one recording rule each, a label of `quota` and `cost` bytes on them: the
    operator serialises the spec to 206 bytes more than the two labels (measured with
    promrulecheck), so 262041 + 262041 is its limit, 524288 bytes, exactly."""
    return [
        {
            "name": group,
            "rules": [
                {
                    "record": f"team:gpu_{group}:sum",
                    "expr": "sum(up)",
                    "labels": {"padding": "a" * n},
                }
            ],
        }
        for group, n in (("quota", quota), ("cost", cost))
    ]


def prom_lines(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if "PROM00" in ln]


def promrulecheck(folder: Path, *files: str) -> subprocess.CompletedProcess[str]:
    """promrulecheck run on `files` (relative to `folder`, where it runs)."""
    return subprocess.run(
        [str(tool("promrulecheck")), *files],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=folder,
    )


def test_a_rule_file_one_byte_over_the_operators_limit(
    values: Path, extra_objects: list[Any]
) -> None:
    extra_objects.append(rule(padded(262041, 262042)))
    code, out = validate_committed(values, "--no-cache", "--env", "prod")
    assert code == 1, out
    assert prom_lines(out) == [
        f"{QUOTA_AT}: PROM002 {WHAT}: the Prometheus Operator v0.85.0 rejects it: the length of "
        "rendered Prometheus Rule is 524289 bytes which is above the maximum limit of 524288 "
        f"bytes; {SIZE_HINT}"
    ]


def test_a_rule_file_at_the_operators_limit_passes(values: Path, extra_objects: list[Any]) -> None:
    extra_objects.append(rule(padded(262041, 262041)))
    code, out = validate_committed(values, "--no-cache", "--env", "prod")
    assert code == 0, out
    assert prom_lines(out) == []


def test_a_label_name_promtool_accepts_and_the_operator_refuses(
    values: Path, extra_objects: list[Any]
) -> None:
    """promtool (Prometheus v3.16) takes UTF-8 label names; the operator v0.85.0 validates rule
    files with legacy names only: the rules would not load, and only PROM002 says so."""
    dotted = {"record": "team:gpu:sum", "expr": "sum(up)", "labels": {"gpu.vendor": "nvidia"}}
    extra_objects.append(rule([{"name": "quota", "rules": [dotted]}]))
    code, out = validate_committed(values, "--no-cache", "--env", "prod")
    assert code == 1, out
    assert prom_lines(out) == [
        f"{QUOTA_AT}: PROM002 {WHAT}: the Prometheus Operator v0.85.0 rejects it: group "
        '"quota", rule 1, "team:gpu:sum": invalid label name: gpu.vendor; fix the rule: the '
        "operator reads it with Prometheus's rulefmt and allows only legacy label and metric "
        "names (letters, digits, underscores; colons in metric names), where promtool allows any "
        "UTF-8 name"
    ]


BAD_PROMQL = {"record": "team:gpu:sum", "expr": "sum(rate(up[5m]) by (node)"}


def test_a_rule_promtool_refuses_is_prom001_alone(values: Path, extra_objects: list[Any]) -> None:
    """The operator's rulefmt refuses the same expression: said once, by promtool."""
    extra_objects.append(rule([{"name": "quota", "rules": [BAD_PROMQL]}]))
    code, out = validate_committed(values, "--no-cache", "--env", "prod")
    assert code == 1, out
    assert [ln.split(": ")[1].split()[0] for ln in prom_lines(out)] == ["PROM001"]


PROM001_HINT = "fix the recording rule or the metric names in values"


def test_two_mistakes_of_one_rule_group_are_two_findings_in_one_run(
    values: Path, extra_objects: list[Any]
) -> None:
    """promtool stops decoding at the first bad duration and lints no file with an error: the
    stage checks such a file again in parts, and each mistake is a finding of its own, said
    with its group and rule (a `for: ""` passes the CRD's pattern, and promtool refuses it)."""
    rules = [
        {"alert": "Late", "expr": "up == 0", "for": ""},
        BAD_PROMQL,
        {"record": "team:up:sum", "expr": "sum(up)"},
        {"record": "team:up:sum", "expr": "sum(up)"},
    ]
    extra_objects.append(rule([{"name": "quota", "rules": rules}]))
    code, out = validate_committed(values, "--no-cache", "--env", "prod")
    assert code == 1, out
    assert prom_lines(out) == [
        f"{QUOTA_AT}: PROM001 {WHAT}: promtool check rules: {problem}; {PROM001_HINT}"
        for problem in (
            'group "quota", rule 1, "Late": empty duration string',
            'group "quota", rule 2, "team:gpu:sum": could not parse expression: 1:18: parse '
            "error: unexpected <by> in aggregation",
            "lint error 1 duplicate rule(s) found.; Metric: team:up:sum; Label(s):; Might cause "
            "inconsistency while recording expressions",
        )
    ]


def test_the_operators_own_refusal_of_another_rule_is_said_beside_promtools(
    values: Path, extra_objects: list[Any]
) -> None:
    """Of a PrometheusRule promtool refuses, the operator's words about the rule promtool
    refused are left out (the same mistake), and its words about another rule, a legacy label
    name promtool takes, are its own finding, in the same run."""
    dotted = {"record": "team:gpu:sum", "expr": "sum(up)", "labels": {"gpu.vendor": "nvidia"}}
    extra_objects.append(rule([{"name": "quota", "rules": [BAD_PROMQL, dotted]}]))
    code, out = validate_committed(values, "--no-cache", "--env", "prod")
    assert code == 1, out
    assert prom_lines(out) == [
        f'{QUOTA_AT}: PROM001 {WHAT}: promtool check rules: group "quota", rule 1, '
        '"team:gpu:sum": could not parse expression: 1:18: parse error: unexpected <by> in '
        f"aggregation; {PROM001_HINT}",
        f"{QUOTA_AT}: PROM002 {WHAT}: the Prometheus Operator v0.85.0 rejects it: group "
        '"quota", rule 2, "team:gpu:sum": invalid label name: gpu.vendor; fix the rule: the '
        "operator reads it with Prometheus's rulefmt and allows only legacy label and metric "
        "names (letters, digits, underscores; colons in metric names), where promtool allows any "
        "UTF-8 name",
    ]


def test_the_size_of_a_rule_promtool_refuses_is_still_checked(
    values: Path, extra_objects: list[Any]
) -> None:
    groups = padded(262041, 262042)
    groups[1]["rules"].append(BAD_PROMQL)
    extra_objects.append(rule(groups))
    code, out = validate_committed(values, "--no-cache", "--env", "prod")
    assert code == 1, out
    lines = prom_lines(out)
    assert [ln.split(": ")[1].split()[0] for ln in lines] == ["PROM001", "PROM002"]
    assert lines[1] == (
        f"{QUOTA_AT}: PROM002 {WHAT}: the Prometheus Operator v0.85.0 rejects it: the length of "
        "rendered Prometheus Rule is 524351 bytes which is above the maximum limit of 524288 "
        f"bytes; {SIZE_HINT}"
    )


def test_one_finding_per_distinct_error() -> None:
    """rulefmt reports a bad duration twice (ValidateRule's own output for `for: 5x`): one
    finding; another error of the same object is its own."""
    bad = 'unknown unit "x" in duration "5x"'
    result = {
        "version": "v0.85.0",
        "objects": 2,
        "rejected": [
            {
                "kind": "PrometheusRule",
                "name": "alerts",
                "maxBytes": 524288,
                "errors": [{"message": bad}, {"message": bad}, {"message": "other"}],
            }
        ],
    }
    unit = UnitView(
        Unit("prod", "monitoring", "overlays/prod/monitoring", (), {}),
        None,
        lambda: [],  # no committed objects (UnitView.objects reads them when asked)
        lambda kind, name: (Location("values/fleet.yaml", 3, 5), f"{kind} m/{name} (u)"),
        CONSOLE,
    )
    found = promoperator.findings(unit, result, {})
    got = [(f.code, f.message, str(f.location)) for f in found]
    assert got == [
        (
            "PROM002",
            f"PrometheusRule m/alerts (u): the Prometheus Operator v0.85.0 rejects it: {bad}",
            "values/fleet.yaml:3:5",
        ),
        (
            "PROM002",
            "PrometheusRule m/alerts (u): the Prometheus Operator v0.85.0 rejects it: other",
            "values/fleet.yaml:3:5",
        ),
    ]


def test_what_promtool_said_is_left_out_and_the_rest_is_the_operators() -> None:
    """Of a PrometheusRule promtool refused: the operator's words about a rule promtool named
    (whatever they say, wherever in the file) and an error about no rule in promtool's words
    are left out; another rule's error, one promtool did not say, and the size are kept."""
    said = [
        'group "g", rule 1, "a:b:sum": could not parse expression: 1:7: parse error: x',
        'group "g", rule 3, "A": unknown unit "x" in duration "3x"',
    ]
    messages = [
        '5:11: group "g", rule 1, "a:b:sum": could not parse expression: 1:7: parse error: x',
        'group "g", rule 1, "a:b:sum": invalid label name: a.b',
        'group "g", rule 2, "c:d:sum": invalid label name: a.b',
        'unknown unit "x" in duration "3x"',
        'unknown unit "y" in duration "3y"',
        'group "h", rule 1, "a:b:sum": invalid label name: a.b',
        "the length of rendered Prometheus Rule is 600000 bytes which is above the maximum",
    ]
    result = {
        "version": "v0.85.0",
        "objects": 1,
        "rejected": [
            {
                "kind": "PrometheusRule",
                "name": "alerts",
                "namespace": "m",
                "maxBytes": 524288,
                "errors": [{"message": m} for m in messages],
            }
        ],
    }
    unit = UnitView(
        Unit("prod", "monitoring", "overlays/prod/monitoring", (), {}),
        None,
        lambda: [],  # no committed objects (UnitView.objects reads them when asked)
        lambda kind, name: (Location("values/fleet.yaml", 3, 5), f"{kind} m/{name} (u)"),
        CONSOLE,
    )
    found = promoperator.findings(unit, result, {"m/alerts": said})
    prefix = "PrometheusRule m/alerts (u): the Prometheus Operator v0.85.0 rejects it: "
    assert [f.message.removeprefix(prefix) for f in found] == [
        'group "g", rule 2, "c:d:sum": invalid label name: a.b',
        'unknown unit "y" in duration "3y"',
        'group "h", rule 1, "a:b:sum": invalid label name: a.b',
        "the length of rendered Prometheus Rule is 600000 bytes which is above the maximum",
    ]
    # Of an object promtool passed, every error is the operator's.
    assert len(promoperator.findings(unit, result, {"m/other": said})) == len(messages)


def test_the_cache_key_holds_both_tools_versions_and_the_checkers_build() -> None:
    stamp = (tools_dir() / "bin" / ".promrulecheck.sha256").read_text(encoding="utf-8")
    assert STAGE.salt("kbuild") == f"promtool=v0.316.0\npromrulecheck=v0.85.0\n{stamp}"


# ---- promrulecheck itself: what validate reads of it ---------------------------------------

RULES_YAML = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: other, namespace: m}
---
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: fine, namespace: m}
spec:
  groups:
  - name: g
    rules:
    - {record: "a:b:sum", expr: sum(up)}
"""


def test_promrulecheck_prints_a_line_per_prometheusrule_of_yaml_or_json(tmp_path: Path) -> None:
    """YAML as a user would hand it, JSON as validate does: the same verdict; other kinds are
    not listed."""
    fine = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "fine", "namespace": "m"},
        "spec": {"groups": [{"name": "g", "rules": [{"record": "a:b:sum", "expr": "sum(up)"}]}]},
    }
    (tmp_path / "a.yaml").write_text(RULES_YAML)
    (tmp_path / "b.json").write_text('{"kind": "ConfigMap"}\n---\n' + json.dumps(fine) + "\n")
    proc = promrulecheck(tmp_path, "a.yaml", "b.json")
    assert (proc.returncode, proc.stderr) == (0, "")
    line = {
        "module": "github.com/prometheus-operator/prometheus-operator",
        "version": "v0.85.0",
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "name": "fine",
        "namespace": "m",
        "maxBytes": 524288,
        "checked": True,
        "allowed": True,
        "errors": [],
    }
    assert [json.loads(ln) for ln in proc.stdout.splitlines()] == [
        {**line, "file": "a.yaml", "document": 1},
        {**line, "file": "b.json", "document": 1},
    ]


def test_promrulecheck_prints_a_files_verdicts_in_document_order(tmp_path: Path) -> None:
    """It checks a file's documents side by side: the lines still come in input order, the
    slowest first (3,000 rules) ahead of small ones that finish before it."""

    def rule(name: str, rules: int) -> str:
        group = {
            "name": "g",
            "rules": [{"record": f"r{i}:up:sum", "expr": "sum(up)"} for i in range(rules)],
        }
        meta = {"name": name, "namespace": "m"}
        spec = {"groups": [group]}
        kind = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule"}
        return json.dumps({**kind, "metadata": meta, "spec": spec}) + "\n"

    docs = [rule("big", 3000), '{"kind": "ConfigMap"}\n', *(rule(f"s{i}", 1) for i in range(6))]
    (tmp_path / "a.json").write_text("---\n".join(docs))
    proc = promrulecheck(tmp_path, "a.json")
    assert (proc.returncode, proc.stderr) == (0, "")
    lines = [json.loads(ln) for ln in proc.stdout.splitlines()]
    assert [(ln["name"], ln["document"]) for ln in lines] == [
        ("big", 0),
        ("s0", 2),
        ("s1", 3),
        ("s2", 4),
        ("s3", 5),
        ("s4", 6),
        ("s5", 7),
    ]


def test_promrulecheck_exits_2_when_it_cannot_read_its_input(tmp_path: Path) -> None:
    proc = promrulecheck(tmp_path, "missing.yaml")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        "promrulecheck: missing.yaml: open missing.yaml: no such file or directory\n"
    )


def test_a_fleets_rules_past_the_limit_are_spread_and_each_object_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """640 teams with quota on four resources: their recording rules (a namespace and four cost
    weights each) are about 547 KB, more than the operator loads from one PrometheusRule.
    Spread (builders/monitoring/rulefiles.py), every object passes the operator's own check; put
    in one object, as before, PROM002 says so."""
    files: dict[str, str | None] = {
        "vendors/amd.yaml": AMD_MI250X,
        "vendors/ascend.yaml": ASCEND_910B,
        "vendors/cambricon.yaml": CAMBRICON_MLU370,
        "vendors/hygon.yaml": HYGON_Z100L,
        "teams/ml.yaml": None,
    }
    quota = "quota: {nvidia: 1, amd: 1, ascend: 1, cambricon: 1}\n"
    files.update({f"teams/team-{i:03d}.yaml": quota for i in range(640)})
    fleet = FLEET + "capacity: {allowOvercommit: true}\n"
    values = tree(tmp_path / "repo", files, fleet=fleet)
    code, out = validate_committed(values, "--env", "prod", "--no-cache")
    assert (code, prom_lines(out)) == (0, [])
    unit = values.parent / "base/monitoring/rules"  # prod has no clusters: the base's rules
    names = sorted(p.name for p in unit.iterdir() if "unified" in p.name)
    # the main one and two shares of the teams' rules (256 KiB of estimate each at most)
    assert names == [
        *(
            f"prometheusrule-accelerator-monitoring-accelerators-unified-teams-{i}-of-2.yaml"
            for i in range(1, 3)
        ),
        "prometheusrule-accelerator-monitoring-accelerators-unified.yaml",
    ]
    monkeypatch.setattr(rulefiles, "BUDGET", 10**9)
    # A constant patched at run time is no change of the code the caches' keys digest.
    shutil.rmtree(values.parent / ".cache")
    code, out = validate_committed(values, "--env", "prod", "--no-cache")
    [size] = prom_lines(out)
    assert code == 1
    assert (
        "PROM002" in size and "PrometheusRule accelerator-monitoring/accelerators-unified" in size
    )
    assert "which is above the maximum limit of 524288 bytes" in size
