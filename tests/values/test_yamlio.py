"""Safe reading and YAML 1.1-safe writing."""

from __future__ import annotations

import pytest
import yaml

from generator.values.yamlio import YamlInputError, dump, load_text


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
        (b"a: [" + b"1," * 50_001 + b"]\n", 1, "more than 50000 values in one file"),
        (b"a: 1\nb: x\x00y\n", 2, "character U+0000 is not allowed"),
        (b"a: 1\nb: \x07\n", 2, "character U+0007 is not allowed"),
        (b"\xef\xbb\xbfa: 1\n", 1, "byte order mark"),
        (b"a: 1\nb: x\xef\xbb\xbf\n", 2, "character U+FEFF is not allowed"),
        # tags outside the core schema, in every position
        (b"--- !foo\na: 1\n", 1, "tag '!foo' is not allowed"),
        (b"a: !!timestamp 2024-01-01\n", 1, "tag 'tag:yaml.org,2002:timestamp'"),
        (b"a: !!binary aGk=\n", 1, "tag 'tag:yaml.org,2002:binary'"),
        (b"a: ! 12\n", 1, "tag '!' is not allowed"),
        (b"a:\n  - x\n  - !!set {b: null}\n", 3, "tag 'tag:yaml.org,2002:set'"),
        (b"a: !!omap [{b: 1}]\n", 1, "tag 'tag:yaml.org,2002:omap'"),
        (b"a: {b: [!local x]}\n", 1, "tag '!local' is not allowed"),
        (b"a: !foo {b: 1}\n", 1, "tag '!foo' is not allowed"),
        (b"!!int a: 1\n", 1, "a tag on a mapping key"),
        (b"a:\n  ? !!str b\n  : 1\n", 2, "a tag on a mapping key"),
        (b"%TAG !! tag:example.com,2000:\n---\na: !!str x\n", 3, "tag:example.com,2000:str"),
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


def test_a_dict_held_twice_is_written_out_twice_not_aliased() -> None:
    """Two containers sharing one default-resources dict: each is written in full (our own
    loader refuses aliases, and so may a reviewer's tool)."""
    shared = {"limits": {"memory": "256Mi"}}
    text = dump({"a": shared, "b": shared})
    assert text == "a:\n  limits:\n    memory: 256Mi\nb:\n  limits:\n    memory: 256Mi\n"


def test_core_tags_are_read_as_written() -> None:
    data, smap = load_text(b"a: !!str 12\nb: !!float 1\nc: !<tag:yaml.org,2002:str> x\n", "f")
    assert data == {"a": "12", "b": 1.0, "c": "x"}
    assert smap.plain == {}  # written with a tag: not a plain scalar that YAML 1.1 re-typed


def test_plain_scalars_that_yaml_11_re_types_keep_their_text() -> None:
    data, smap = load_text(b"a: 0755\nb: yes\nc: 1.10\nd: '0755'\ne: ~\nf: text\n", "f")
    assert data == {"a": 493, "b": True, "c": 1.1, "d": "0755", "e": None, "f": "text"}
    assert smap.plain == {("a",): "0755", ("b",): "yes", ("c",): "1.10", ("e",): "~"}


@pytest.mark.parametrize(
    ("text", "line", "column", "message", "hint"),
    [
        # a tab: at the tab, said in words, with the fix
        (
            b"quota:\n\tnvidia: 4\n",
            2,
            1,
            "a tab character where YAML expects spaces",
            "indent with spaces: YAML does not allow tabs for indentation",
        ),
        # a lost colon: PyYAML stops on the next line; the finding names the line that lost it
        (
            b"quota:\n  nvidia 4\n  amd: 2\n",
            2,
            3,
            "this line is neither 'key: value' nor a list item",
            "write 'key: value' with a space after the colon, or start a list item with '- '",
        ),
        # a key indented deeper than its siblings
        (
            b"quota:\n  nvidia: 4\n   amd: 2\n",
            3,
            7,
            "a 'key: value' where YAML cannot start one: the line is indented deeper than the keys "
            "beside it, or a plain value contains ': '",
            "line keys of one mapping up at the same indentation, or quote the value",
        ),
        # a key indented less than its siblings
        (
            b"quota:\n  nvidia: 4\n amd: 2\n",
            3,
            2,
            "invalid YAML: while parsing a block mapping did not find expected key",
            "check the indentation: keys of one mapping line up, and each list item under a key "
            "starts with '- '",
        ),
        # a line of plain text inside a mapping
        (
            b"quota:\n  nvidia: 4\nowners\n",
            3,
            1,
            "this line is neither 'key: value' nor a list item",
            "write 'key: value' with a space after the colon, or start a list item with '- '",
        ),
    ],
)
def test_syntax_errors_are_said_in_words_at_the_line_of_the_mistake_with_a_fix(
    text: bytes, line: int, column: int, message: str, hint: str
) -> None:
    with pytest.raises(YamlInputError) as info:
        load_text(text, "values/teams/x.yaml")
    finding = info.value.finding
    assert (finding.location.line, finding.location.column) == (line, column)
    assert finding.message == message
    assert finding.hint == hint
