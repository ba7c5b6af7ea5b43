"""promtool checks rule files in batches; each file's verdict is its own (real promtool)."""

from __future__ import annotations

import json
import locale
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from generator import CONSOLE
from generator.findings import Location
from generator.toolchain import process
from generator.toolchain.errors import ToolTimeout
from generator.validate.stages import UnitView
from generator.validate.stages import promtool as tools
from generator.validate.stages.promtool import STAGE
from generator.vocab.units import Unit

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
    assert problems["b"] == [
        'group "g", rule 1, "a:b:sum": could not parse expression: 1:7: '
        "parse error: unclosed left parenthesis"
    ]
    assert problems["d"] == [
        "lint error 1 duplicate rule(s) found.; Metric: a:b:sum; Label(s):; Might cause "
        "inconsistency while recording expressions"
    ]


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
    assert problems["m/bad"] == [
        'group "g", rule 1, "a:b:sum": could not parse expression: 1:7: '
        "parse error: unclosed left parenthesis"
    ]
    assert problems["m/twice"] == [
        "lint error 1 duplicate rule(s) found.; Metric: a:b:sum; Label(s):; Might cause "
        "inconsistency while recording expressions"
    ]


def test_a_bad_duration_is_said_once_in_promtool_s_words(tmp_path: Path) -> None:
    """promtool prints the error of a value its rule parser cannot decode twice (it decodes the
    file twice): the problem says it once, as promtool words it (YAML, which the stage does not
    write, is not taken apart: promtool's verdict on the file stands)."""
    files = {"late": tmp_path / "late.yaml"}
    files["late"].write_text(
        "groups:\n- name: g\n  rules:\n  - alert: Down\n    expr: up == 0\n    for: 5 minutes\n"
    )
    assert tools.promtool_check(files) == {
        "late": ['unknown unit " minutes" in duration "5 minutes"']
    }


def rules_file(tmp_path: Path, name: str, groups: list[dict[str, Any]]) -> Path:
    """A rules file as the stage writes it (JSON: rule_files)."""
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"groups": groups}), encoding="utf-8")
    return path


def record(name: str, expr: str = "sum(up)", **more: Any) -> dict[str, Any]:
    return {"record": name, "expr": expr, **more}


def alert(name: str, expr: str = "up == 0", **more: Any) -> dict[str, Any]:
    return {"alert": name, "expr": expr, **more}


DUPLICATE_C_D = (
    "lint error 1 duplicate rule(s) found.; Metric: c:d:sum; Label(s):; Might cause "
    "inconsistency while recording expressions"
)
UNCLOSED = "could not parse expression: 1:7: parse error: unclosed left parenthesis"


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        pytest.param(  # promtool lints no file with an error: the duplicate waited for the fix
            [
                {"name": "g1", "rules": [record("a:b:sum", "sum(up")]},
                {"name": "g2", "rules": [record("c:d:sum")]},
                {"name": "g3", "rules": [record("c:d:sum")]},
            ],
            [f'group "g1", rule 1, "a:b:sum": {UNCLOSED}', DUPLICATE_C_D],
            id="promql-and-duplicates-across-groups",
        ),
        pytest.param(  # yaml.v3 stops decoding at the first duration it cannot take
            [{"name": "g", "rules": [alert("A", **{"for": "5 minutes"}), alert("B", for_="")]}],
            [
                'group "g", rule 1, "A": unknown unit " minutes" in duration "5 minutes"',
                'group "g", rule 2, "B": empty duration string',
            ],
            id="two-durations",
        ),
        pytest.param(  # ... and then validates nothing: the expression was not read
            [{"name": "g", "rules": [alert("A", **{"for": "3x"}), alert("B", "up ==")]}],
            [
                'group "g", rule 1, "A": unknown unit "x" in duration "3x"',
                'group "g", rule 2, "B": could not parse expression: 1:6: parse error: '
                "unexpected end of input",
            ],
            id="duration-and-promql",
        ),
        pytest.param(  # the group's own duration stops the decoding of its rules too
            [{"name": "g", "interval": "1 m", "rules": [alert("A", **{"for": "3x"})]}],
            [
                'group "g": unknown unit " m" in duration "1 m"',
                'group "g", rule 1, "A": unknown unit "x" in duration "3x"',
            ],
            id="group-interval-and-rule-duration",
        ),
        pytest.param(  # a duration stops the decoding of its own rule: the rest is read too
            [{"name": "g", "rules": [alert("A", "up ==", for_="")]}],
            [
                'group "g", rule 1, "A": empty duration string',
                'group "g", rule 1, "A": could not parse expression: 1:6: parse error: '
                "unexpected end of input",
            ],
            id="duration-and-promql-in-one-rule",
        ),
        pytest.param(  # each of a rule's durations is read, whichever yaml.v3 met first
            [{"name": "g", "rules": [alert("A", **{"for": "", "keep_firing_for": "1 minute"})]}],
            [
                'group "g", rule 1, "A": empty duration string',
                'group "g", rule 1, "A": unknown unit " minute" in duration "1 minute"',
            ],
            id="two-durations-in-one-rule",
        ),
        pytest.param(  # a group's two durations and its labels, each said
            [
                {
                    "name": "g",
                    "interval": "",
                    "query_offset": "x",
                    "labels": {"__name__": "x"},
                    "rules": [record("r:x", "up")],
                }
            ],
            [
                'group "g": empty duration string',
                'group "g": invalid label name: __name__',
                'group "g": not a valid duration string: "x"',
            ],
            id="group-durations-and-label",
        ),
        pytest.param(  # promtool gives two positions for a rule both recording and alerting
            [{"name": "g", "rules": [record("r:x", "up", alert="A")]}],
            ["group \"g\", rule 1, \"A\": only one of 'record' and 'alert' must be set"],
            id="record-and-alert",
        ),
        pytest.param(  # names quoted as promtool quotes them (Go's %q), whatever they hold
            [
                {
                    "name": "a\u00a0b\u0007",
                    "rules": [alert("A", "up =="), alert("B", "up ==", for_="")],
                }
            ],
            [
                'group "a\\u00a0b\\a", rule 1, "A": could not parse expression: 1:6: parse '
                "error: unexpected end of input",
                'group "a\\u00a0b\\a", rule 2, "B": empty duration string',
                'group "a\\u00a0b\\a", rule 2, "B": could not parse expression: 1:6: parse '
                "error: unexpected end of input",
            ],
            id="go-quoted-group-name",
        ),
        pytest.param(  # a repeated group name is an error: no lint
            [
                {"name": "g", "rules": [record("c:d:sum")]},
                {"name": "g", "rules": [record("c:d:sum")]},
            ],
            ['groupname: "g" is repeated in the same file', DUPLICATE_C_D],
            id="repeated-group-name-and-duplicates",
        ),
        pytest.param(  # Validate already says every rule's: the same words, rule by rule
            [{"name": "g", "rules": [record("a:b:sum", "sum(up"), alert("X", "up ==")]}],
            [
                f'group "g", rule 1, "a:b:sum": {UNCLOSED}',
                'group "g", rule 2, "X": could not parse expression: 1:6: parse error: '
                "unexpected end of input",
            ],
            id="two-expressions",
        ),
    ],
)
def test_two_mistakes_in_one_file_are_two_problems_in_one_run(
    tmp_path: Path, groups: list[dict[str, Any]], expected: list[str]
) -> None:
    for rule in (r for g in groups for r in g["rules"]):
        if "for_" in rule:  # `for` is a Python keyword
            rule["for"] = rule.pop("for_")
    assert tools.promtool_check({"m/rules": rules_file(tmp_path, "rules", groups)}) == {
        "m/rules": expected
    }


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        pytest.param(  # the same name under other group labels is another series
            [
                {"name": "g1", "labels": {"team": "a"}, "rules": [record("c:d:sum")]},
                {"name": "g2", "labels": {"team": "b"}, "rules": [record("c:d:sum")]},
                {"name": "g3", "rules": [record("a:b:sum", "sum(up")]},
            ],
            [f'group "g3", rule 1, "a:b:sum": {UNCLOSED}'],
            id="group-labels-kept",
        ),
        pytest.param(  # the groups the lint file renames keep their labels too
            [
                {"name": "g", "labels": {"team": "a"}, "rules": [record("c:d:sum")]},
                {"name": "g", "labels": {"team": "b"}, "rules": [record("c:d:sum")]},
            ],
            ['groupname: "g" is repeated in the same file'],
            id="repeated-group-name-without-duplicates",
        ),
        pytest.param(  # a rule refused is left out of the lint: said once fixed, if still so
            [{"name": "g", "rules": [record("c:d:sum", "sum(up"), record("c:d:sum")]}],
            [f'group "g", rule 1, "c:d:sum": {UNCLOSED}'],
            id="refused-rule-not-linted",
        ),
    ],
)
def test_the_split_lint_neither_invents_a_duplicate_nor_says_one_twice(
    tmp_path: Path, groups: list[dict[str, Any]], expected: list[str]
) -> None:
    assert tools.promtool_check({"m/rules": rules_file(tmp_path, "rules", groups)}) == {
        "m/rules": expected
    }


@pytest.mark.parametrize(
    ("name", "quoted"),
    [  # Go's fmt %q of each (go1.26.8, `go run` of fmt.Printf("%q\n", s)), written here
        ('a"b\\c', '"a\\"b\\\\c"'),
        ("XaX", '"XaX"'),
        ("x\x01y", '"x\\x01y"'),
        ("\x7f", '"\\x7f"'),
        ("t\tn\nv\v", '"t\\tn\\nv\\v"'),
        ("é ü", '"é ü"'),
        ("a\u00a0b", '"a\\u00a0b"'),
        ("a\u200bb", '"a\\u200bb"'),
        ("\U0001f600", '"\U0001f600"'),
        ("\U000e0001", '"\\U000e0001"'),
        ("\uffff", '"\\uffff"'),
        ("\u0085", '"\\u0085"'),
        (5, '"5"'),
    ],
)
def test_names_are_quoted_as_promtool_quotes_them(name: Any, quoted: str) -> None:
    assert tools._quoted(name) == quoted


@pytest.mark.parametrize(
    ("text", "taken"),
    [
        ('{"groups": [{"name": "g"}, {"name": "h", "rules": [{"record": "a:b"}]}]}', True),
        ("groups: []", False),  # YAML, not JSON: not a file this stage wrote
        ('[{"name": "g"}]', False),
        ('{"groups": {"name": "g"}}', False),
        ('{"groups": ["g"]}', False),
        ('{"groups": [{"name": "g", "rules": {"record": "a:b"}}]}', False),
        ('{"groups": [{"name": "g", "rules": ["a:b"]}]}', False),
    ],
)
def test_only_groups_of_rules_are_taken_apart(tmp_path: Path, text: str, taken: bool) -> None:
    """A file the stage cannot take apart keeps promtool's whole verdict (None here)."""
    path = tmp_path / "rules.json"
    path.write_text(text, encoding="utf-8")
    assert (
        (tools._groups(path) == json.loads(text)["groups"])
        if taken
        else (tools._groups(path) is None)
    )


def test_the_lint_file_holds_what_passed_under_names_of_its_own() -> None:
    """Refused rules and groups are left out, later groups kept; a name seen before gets a
    prime per time seen; a group without rules is linted as having none."""
    r = [record(f"r:{n}") for n in range(5)]
    groups: list[dict[str, Any]] = [
        {"name": "g", "labels": {"team": "a"}, "rules": [r[0], r[1]]},
        {"name": "g", "rules": [r[2]]},
        {"name": "g", "rules": [r[3]]},
        {"name": "g", "rules": [r[4]]},
        {"name": "h"},
    ]
    assert tools._linted(groups, {(0, 1), (2,)}) == {
        "groups": [
            {"name": "g", "labels": {"team": "a"}, "rules": [r[0]]},
            {"name": "g'", "rules": [r[2]]},
            {"name": "g''", "rules": [r[4]]},
            {"name": "h", "rules": []},
        ]
    }


def test_a_rule_file_holds_what_yaml_v3_reads_and_promtool_logs_no_finding(
    tmp_path: Path,
) -> None:
    """A DEL or a C1 control character in an annotation (the operator's YAML writer escapes
    them) is written as a JSON escape, which yaml.v3 reads; raw, its reader refuses the file.
    The warning rulefmt logs for a file of two YAML documents is no finding (the stage writes
    no such file; a user's YAML could be one)."""
    doc = {
        "kind": "PrometheusRule",
        "metadata": {"name": "r", "namespace": "m"},
        "spec": {
            "groups": [{"name": "g", "rules": [alert("A", annotations={"x": "a\x7fb\x85c"})]}]
        },
    }
    [path] = tools.rule_files("u", [doc], tmp_path).values()
    assert path.read_text(encoding="utf-8") == (
        '{"groups": [{"name": "g", "rules": [{"alert": "A", "expr": "up == 0", '
        '"annotations": {"x": "a\\u007fb\\u0085c"}}]}]}'
    )
    two = tmp_path / "two.yaml"
    two.write_text(
        'groups:\n- name: g\n  rules:\n  - alert: A\n    expr: "up =="\n---\ngroups: []\n',
        encoding="utf-8",
    )
    assert tools.promtool_check({"m/rules": path, "m/two": two}) == {
        "m/two": [
            'group "g", rule 1, "A": could not parse expression: 1:6: parse error: '
            "unexpected end of input"
        ]
    }


def test_a_file_is_taken_apart_only_when_promtool_refused_it_for_more_than_lint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Clean files, and a file refused for its duplicates alone (promtool ran every check on
    it), cost one promtool process per batch, as before; the files with an error cost their
    parts' batches, then one batch of their lint, for the whole run."""
    monkeypatch.setattr(tools, "PROMTOOL_BATCH", 2)
    runs: list[list[str]] = []
    real = process.run

    def run(tool: str, args: list[str], **kw: Any) -> Any:
        runs.append([tool, *args[:3]])
        return real(tool, args, **kw)

    monkeypatch.setattr(process, "run", run)
    clean = [{"name": "g", "rules": [record("a:b:sum")]}]
    twice = [{"name": "g", "rules": [record("a:b:sum"), record("a:b:sum")]}]
    files = {f"m/{i}": rules_file(tmp_path, str(i), clean) for i in range(4)}
    files["m/twice"] = rules_file(tmp_path, "twice", twice)
    assert list(tools.promtool_check(files)) == ["m/twice"]
    assert runs == [["promtool", "check", "rules", "--lint=all"]] * 3
    runs.clear()
    bad = [{"name": "g", "rules": [record("a:b:sum", "sum(up"), record("c:d:sum")]}]
    files.update({"m/bad1": rules_file(tmp_path, "bad1", bad)})
    files.update({"m/bad2": rules_file(tmp_path, "bad2", bad)})
    problems = tools.promtool_check(files)
    assert problems["m/bad1"] == problems["m/bad2"] == [f'group "g", rule 1, "a:b:sum": {UNCLOSED}']
    assert runs == [
        *[["promtool", "check", "rules", "--lint=all"]] * 4,  # 7 files, 2 a process
        # 2 files x (a group and 2 rules), 2 a process, then the 2 files' passing rules
        *[["promtool", "check", "rules", "--lint=none"]] * 3,
        ["promtool", "check", "rules", "--lint=all"],
    ]


# ---- what the stage hands promtool, and what it reads back ------------------------------------


def prometheus_rule(name: str, namespace: str | None = "m", **spec: Any) -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace is not None else {})}
    return {"kind": "PrometheusRule", "metadata": meta, **({"spec": spec} if spec else {})}


def test_only_the_prometheusrules_the_schema_takes_are_checked() -> None:
    """kubeconform's verdict (the build stage's `schema` items) refuses a PrometheusRule by its
    kind and name: that one is left out; another kind of the same name, and a PrometheusRule
    named as another kind the schema refused, are kept."""
    late = prometheus_rule(
        "late", groups=[{"name": "g", "rules": [alert("A", **{"for": "5 min"})]}]
    )
    rules = prometheus_rule("rules", groups=[{"name": "g", "rules": [record("a:b:sum")]}])
    config_late = {"kind": "ConfigMap", "metadata": {"name": "late", "namespace": "m"}}
    config_rules = {"kind": "ConfigMap", "metadata": {"name": "rules", "namespace": "m"}}
    built = {
        "schema": [
            {"kind": "PrometheusRule", "name": "late", "status": "statusInvalid"},
            {"kind": "ConfigMap", "name": "rules", "status": "statusInvalid"},
        ],
        "docs": [late, rules, config_late, config_rules],
    }
    assert tools.schema_passed(built) == [rules, config_late, config_rules]


def test_each_prometheusrule_is_a_file_named_after_its_unit_namespace_and_name(
    tmp_path: Path,
) -> None:
    """Other kinds (before or after) are not written; one without a namespace is `/name`; one
    without spec or groups is a file of no groups, which promtool passes."""
    docs = [
        {"kind": "ConfigMap", "metadata": {"name": "c"}},
        prometheus_rule("rules", groups=[{"name": "g", "rules": [record("a:b:sum")]}]),
        prometheus_rule("cluster", namespace=None, groups=[]),
        {"kind": "PrometheusRule", "metadata": {"name": "bare", "namespace": "m"}, "spec": {}},
        {"kind": "PrometheusRule", "metadata": {"name": "none", "namespace": "m"}},
    ]
    files = tools.rule_files("overlays/prod/team-a", docs, tmp_path)
    assert files == {
        "m/rules": tmp_path / "overlays__prod__team-a__m__rules.json",
        "/cluster": tmp_path / "overlays__prod__team-a____cluster.json",
        "m/bare": tmp_path / "overlays__prod__team-a__m__bare.json",
        "m/none": tmp_path / "overlays__prod__team-a__m__none.json",
    }
    assert [p.read_text(encoding="utf-8") for p in files.values()] == [
        '{"groups": [{"name": "g", "rules": [{"record": "a:b:sum", "expr": "sum(up)"}]}]}',
        '{"groups": []}',
        '{"groups": []}',
        '{"groups": []}',
    ]
    assert tools.promtool_check(files) == {}


@pytest.fixture
def ascii_locale() -> Iterator[None]:
    """The C locale's codec (ASCII) as the process's default text encoding, as under a locale
    whose codec is not UTF-8: what a file's text is read or written with unless it says."""
    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        yield
    finally:
        locale.setlocale(locale.LC_CTYPE, before)


def test_rule_files_are_utf_8_whatever_the_locale(tmp_path: Path, ascii_locale: None) -> None:
    """promtool reads UTF-8: a rule's non-ASCII text is written so, and read back so when the
    file is taken apart, under a locale whose codec is ASCII too."""
    doc = prometheus_rule(
        "r", groups=[{"name": "grüße", "rules": [alert("Ü", "up =="), alert("B", **{"for": ""})]}]
    )
    files = tools.rule_files("u", [doc], tmp_path)
    assert (
        files["m/r"].read_bytes()
        == (
            '{"groups": [{"name": "grüße", "rules": [{"alert": "Ü", "expr": "up =="}, '
            '{"alert": "B", "expr": "up == 0", "for": ""}]}]}'
        ).encode()
    )
    assert tools._groups(files["m/r"]) == doc["spec"]["groups"]
    assert tools.promtool_check(files) == {
        "m/r": [
            'group "grüße", rule 1, "Ü": could not parse expression: 1:6: parse error: '
            "unexpected end of input",
            'group "grüße", rule 2, "B": empty duration string',
        ]
    }


def test_files_promtool_stopped_before_are_each_refused_with_its_words(tmp_path: Path) -> None:
    """promtool refuses the whole command line when a path is not there and checks nothing: no
    file of that process passes, each says what promtool said (bytes not UTF-8 in it, here the
    path's, replaced)."""
    gone = Path(os.fsdecode(bytes(tmp_path) + b"/\xff.json"))
    files = {"m/gone": gone, "m/good": rules_file(tmp_path, "good", [{"name": "g", "rules": []}])}
    said = (
        f"promtool exited 1 before checking it: promtool: error: path '{tmp_path}/\ufffd.json' "
        "does not exist, try --help"
    )
    assert tools.promtool_check(files) == {"m/gone": [said], "m/good": [said]}


def test_a_line_that_looks_like_a_files_header_is_part_of_the_file_being_checked(
    tmp_path: Path,
) -> None:
    """The duplicate-rules lint prints each duplicate's labels as they are, new lines and all:
    a label value's line `Checking x` names no file of the run, and stays the lint's."""
    labels = {"x": "a\nChecking b"}
    twice = [{"name": "g", "rules": [record("a:b:sum", labels=labels)] * 2}]
    files = {"m/twice": rules_file(tmp_path, "twice", twice)}
    files["m/fine"] = rules_file(tmp_path, "fine", [{"name": "g", "rules": [alert("B", "up ==")]}])
    assert tools.promtool_check(files) == {
        "m/fine": [
            'group "g", rule 1, "B": could not parse expression: 1:6: parse error: '
            "unexpected end of input"
        ],
        "m/twice": [
            "lint error 1 duplicate rule(s) found.; Metric: a:b:sum; Label(s):; x: a; Checking b; "
            "Might cause inconsistency while recording expressions"
        ],
    }


def test_a_file_not_taken_apart_leaves_the_next_one_taken_apart(tmp_path: Path) -> None:
    """Files are taken apart in name order: one the stage did not write (YAML) keeps promtool's
    verdict, and the one after it still says both its mistakes."""
    yaml = tmp_path / "a.yaml"
    yaml.write_text("groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up ==\n    for: 3x\n")
    two = [{"name": "g", "rules": [alert("A", **{"for": "3x"}), alert("B", "up ==")]}]
    files = {"m/a": yaml, "m/b": rules_file(tmp_path, "b", two)}
    assert tools.promtool_check(files) == {
        "m/a": ['unknown unit "x" in duration "3x"'],
        "m/b": [
            'group "g", rule 1, "A": unknown unit "x" in duration "3x"',
            'group "g", rule 2, "B": could not parse expression: 1:6: parse error: '
            "unexpected end of input",
        ],
    }


def test_what_no_part_holds_keeps_the_whole_files_verdict(tmp_path: Path) -> None:
    """A field beside the groups (no file the stage writes has one) is refused by promtool and
    held by no group or rule: the parts all pass, and promtool's words on the whole file stand."""
    path = tmp_path / "extra.json"
    groups = [{"name": "g", "rules": [record("a:b:sum")]}]
    path.write_text(json.dumps({"groups": groups, "extra": 2}), encoding="utf-8")
    assert tools.promtool_check({"m/extra": path}) == {
        "m/extra": [
            "yaml: unmarshal errors:; line 1: field extra not found in type rulefmt.RuleGroups"
        ]
    }


def test_a_group_without_rules_and_rules_without_a_name_are_taken_apart(tmp_path: Path) -> None:
    """The CRD's schema requires neither a group's rules nor a rule's `record` or `alert`. A
    duration yaml.v3 cannot read stops the decoding before Validate names the rule: the part's
    context names it, as `record` or `alert` says, or "" when neither does, as promtool does."""
    groups: list[dict[str, Any]] = [
        {"name": "empty"},
        {
            "name": "g",
            "rules": [
                record("a:b:sum", **{"for": "5 minutes"}),
                {"expr": "up", "for": "5 minutes"},
                record("c:d:sum", "sum(up"),
            ],
        },
    ]
    assert tools.promtool_check({"m/rules": rules_file(tmp_path, "rules", groups)}) == {
        "m/rules": [
            'group "g", rule 1, "a:b:sum": unknown unit " minutes" in duration "5 minutes"',
            'group "g", rule 2, "": unknown unit " minutes" in duration "5 minutes"',
            "group \"g\", rule 2, \"\": one of 'record' or 'alert' must be set",
            f'group "g", rule 3, "c:d:sum": {UNCLOSED}',
        ]
    }


def test_the_parts_are_checked_in_folders_of_their_own_beside_the_rules_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parts, their retries and the lint's file are written in three folders beside the
    rules files, one file each; a refused part is checked again without its duration (with one
    duration, that is the only retry: the part with it alone is the part itself), and a file
    whose parts have no duration needs no retries."""
    runs: list[tuple[str, int]] = []
    real = process.run

    def run(
        tool: str,
        args: list[str],
        *,
        timeout: float,
        cwd: Path | None = None,
        input: bytes | None = None,
        check: bool = True,
        merge_stderr: bool = False,
        env: Any = None,
    ) -> Any:
        runs.append((args[2], len(args) - 3 - (args[2] == "--lint=all")))
        return real(
            tool,
            args,
            timeout=timeout,
            cwd=cwd,
            input=input,
            check=check,
            merge_stderr=merge_stderr,
            env=env,
        )

    monkeypatch.setattr(process, "run", run)
    (tmp_path / "late").mkdir()
    late = rules_file(
        tmp_path / "late", "late", [{"name": "g", "rules": [alert("A", "up ==", **{"for": "3x"})]}]
    )
    assert tools.promtool_check({"m/late": late}) == {
        "m/late": [
            'group "g", rule 1, "A": unknown unit "x" in duration "3x"',
            'group "g", rule 1, "A": could not parse expression: 1:6: parse error: '
            "unexpected end of input",
        ]
    }
    # the whole file; its group and its rule; the rule without `for`; the lint's file
    assert runs == [("--lint=all", 1), ("--lint=none", 2), ("--lint=none", 1), ("--lint=all", 1)]
    assert {p.relative_to(tmp_path).as_posix() for p in (tmp_path / "late").rglob("*")} == {
        "late/late.json",
        "late/promtool-parts",
        "late/promtool-parts/0.json",
        "late/promtool-parts/1.json",
        "late/promtool-retries",
        "late/promtool-retries/0.json",
        "late/promtool-lints",
        "late/promtool-lints/0.json",
    }
    runs.clear()
    (tmp_path / "bad").mkdir()
    bad = rules_file(tmp_path / "bad", "bad", [{"name": "g", "rules": [alert("A", "up ==")]}])
    assert list(tools.promtool_check({"m/bad": bad})) == ["m/bad"]
    assert runs == [("--lint=all", 1), ("--lint=none", 2), ("--lint=all", 1)]
    assert {p.relative_to(tmp_path).as_posix() for p in (tmp_path / "bad").rglob("*")} == {
        "bad/bad.json",
        "bad/promtool-parts",
        "bad/promtool-parts/0.json",
        "bad/promtool-parts/1.json",
        "bad/promtool-lints",
        "bad/promtool-lints/0.json",
    }


def test_a_promtool_that_does_not_finish_is_stopped_at_its_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """promtool waits on a named pipe no one writes (it opens its files blocking): stopped after
    PROMTOOL_TIMEOUT seconds, ToolTimeout says so. A writer opens the pipe after 60 s, so a run
    with no timeout ends (and fails here: promtool then passes the file) rather than hangs; the
    test reads no clock (a busy machine only makes it slower)."""
    monkeypatch.setattr(tools, "PROMTOOL_TIMEOUT", 1.0)
    pipe = tmp_path / "rules.json"
    os.mkfifo(pipe)

    def release() -> None:
        try:
            fd = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # no reader left: promtool was stopped
            return
        os.write(fd, b'{"groups": []}')
        os.close(fd)

    writer = threading.Timer(60.0, release)
    writer.start()
    try:
        with pytest.raises(ToolTimeout) as stopped:
            tools.promtool_check({"m/rules": pipe})
    finally:
        writer.cancel()
    assert stopped.value.timeout == 1.0
    assert stopped.value.argv[1:] == ("check", "rules", "--lint=all", "--lint-fatal", str(pipe))


def test_every_problem_of_every_refused_prometheusrule_is_a_finding_on_its_unit() -> None:
    """Names in order; the object is looked up by its name, all that follows its namespace (no
    namespace: `/name`); each finding is the unit's."""
    asked: list[tuple[str | None, str | None]] = []

    def find(kind: str | None, name: str | None) -> tuple[Location, str]:
        asked.append((kind, name))
        return Location(f"values/{name}.yaml", 2, 3), f"{kind} {name} (u)"

    unit = UnitView(
        Unit("prod", "monitoring", "overlays/prod/monitoring", (), {}), None, list, find, CONSOLE
    )
    refused = {"m/z": ["third"], "/cluster": ["first"], "m/a/b": ["second", "again"]}
    found = STAGE.findings(unit, {"promtool": refused, "operator": None})
    assert asked == [
        ("PrometheusRule", "cluster"),
        ("PrometheusRule", "a/b"),
        ("PrometheusRule", "z"),
    ]
    hint = "fix the recording rule or the metric names in values"
    assert [(f.code, f.message, str(f.location), f.hint, f.unit) for f in found] == [
        (
            "PROM001",
            f"PrometheusRule {name} (u): promtool check rules: {problem}",
            f"values/{name}.yaml:2:3",
            hint,
            "overlays/prod/monitoring",
        )
        for name, problem in [
            ("cluster", "first"),
            ("a/b", "second"),
            ("a/b", "again"),
            ("z", "third"),
        ]
    ]


def test_a_second_check_beside_the_same_rules_files_reads_only_its_own_parts(
    tmp_path: Path,
) -> None:
    """The parts' folders are there from the first check: the second writes its parts over
    them, and the first's left over (it had more) are not read."""
    many = [{"name": "g", "rules": [alert("A", "up =="), alert("B", "up =="), alert("C")]}]
    path = rules_file(tmp_path, "rules", many)
    first = tools.promtool_check({"m/rules": path})
    assert first == {
        "m/rules": [
            f'group "g", rule {n}, "{a}": could not parse expression: 1:6: parse error: '
            "unexpected end of input"
            for n, a in ((1, "A"), (2, "B"))
        ]
    }
    path = rules_file(tmp_path, "rules", [{"name": "g", "rules": [alert("D", "up ==")]}])
    assert tools.promtool_check({"m/rules": path}) == {
        "m/rules": [
            'group "g", rule 1, "D": could not parse expression: 1:6: parse error: '
            "unexpected end of input"
        ]
    }
    assert len(list((tmp_path / "promtool-parts").iterdir())) == 4  # 4 parts, then 2


def test_an_empty_group_name_is_said_by_its_group_not_as_a_repeated_name(tmp_path: Path) -> None:
    """promtool says `Groupname must not be empty` of each group without a name, and calls the
    empty name repeated too: the stage says the first, once (the same words), an empty name
    being each group's own problem rather than a repeated one. A name truly repeated is said."""
    groups: list[dict[str, Any]] = [
        {"name": "", "rules": [record("a:b:sum")]},
        {"name": "", "rules": [record("c:d:sum")]},
        {"name": "h", "rules": [record("e:f:sum")]},
        {"name": "h", "rules": []},
    ]
    assert tools.promtool_check({"m/rules": rules_file(tmp_path, "rules", groups)}) == {
        "m/rules": [
            'group "": Groupname must not be empty',
            'groupname: "h" is repeated in the same file',
        ]
    }
