"""Safe reading and YAML 1.1-safe writing."""

from __future__ import annotations

import pytest
import yaml

from generator.yamlio import YamlInputError, dump, load_text


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (b"a: 1\nb: 2\na: 3\n", 3, "duplicate key 'a' (first at line 1)"),
        (b"a: &x [1, 2]\nb: *x\n", 2, "anchors and aliases are not allowed"),
        (b"a: !!python/object/apply:os.system [ls]\n", 1, "tag"),
        (b"a: !custom 1\n", 1, "tag '!custom' is not allowed"),
        (b"a: 1\n---\nb: 2\n", 3, "more than one YAML document"),
        (b"a: [1, 2\n", 2, "invalid YAML"),
        (b"ok: 1\nbad: \xff\xfe\n", 2, "invalid UTF-8"),
        (b"<<: {a: 1}\n", 1, "merge keys"),
        (b"a: " + b"[" * 100 + b"]" * 100 + b"\n", 1, "nesting deeper"),
    ],
)
def test_hostile_input_is_refused_with_a_position(text: bytes, line: int, message: str) -> None:
    with pytest.raises(YamlInputError) as info:
        load_text(text, "values/teams/x.yaml")
    finding = info.value.finding
    assert finding.location.file == "values/teams/x.yaml"
    assert finding.location.line == line
    assert message in finding.message


def test_billion_laughs_is_refused_before_expansion() -> None:
    lol = b"a: &a [x, x]\n" + b"".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}]\n".encode()
        for i in range(9)
    )
    with pytest.raises(YamlInputError, match="aliases"):
        load_text(lol, "f.yaml")


def test_oversized_file_is_refused() -> None:
    with pytest.raises(YamlInputError, match="larger than"):
        load_text(b"a: " + b"x" * (1024 * 1024 + 1), "f.yaml")


def test_positions_of_values_and_keys() -> None:
    data, smap = load_text(b"quota:\n  nvidia: 8\n  ascend: 16\n", "t.yaml")
    assert data == {"quota": {"nvidia": 8, "ascend": 16}}
    assert (smap.values[("quota", "ascend")].line, smap.values[("quota", "ascend")].column) == (
        3,
        11,
    )
    assert (smap.keys[("quota", "ascend")].line, smap.keys[("quota", "ascend")].column) == (3, 3)


def test_dates_stay_text() -> None:
    data, _ = load_text(b"since: 2024-01-01\n", "f.yaml")
    assert data == {"since": "2024-01-01"}


RETYPED = [
    "no",
    "y",
    "Y",
    "n",
    "on",
    "off",
    "yes",
    "true",
    "0644",
    "1.10",
    "72225e2",
    "1e3",
    "0o17",
    "0x1F",
    "~",
    "null",
    "",
    "1_000",
    ".inf",
    "2024-01-01",
    "12:30:00",
]


@pytest.mark.parametrize("value", RETYPED)
def test_strings_a_yaml_11_reader_would_retype_are_quoted(value: str) -> None:
    text = dump({"v": value})
    assert text.startswith("v: '") or text.startswith('v: "'), text
    # and they read back as the same string with a YAML 1.1 reader
    assert yaml.safe_load(text) == {"v": value}


def test_dump_orders_keys_canonically_whatever_the_insertion_order() -> None:
    a = dump({"spec": {"b": 1, "a": 2}, "metadata": {"name": "x"}, "kind": "K", "apiVersion": "v1"})
    b = dump({"apiVersion": "v1", "kind": "K", "metadata": {"name": "x"}, "spec": {"a": 2, "b": 1}})
    assert a == b
    assert a.splitlines()[:3] == ["apiVersion: v1", "kind: K", "metadata:"]
