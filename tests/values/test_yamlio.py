"""Safe reading and YAML 1.1-safe writing."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.fleet import make_values
from generator.render.stage import RenderOptions, render
from generator.values import yamlio
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


# ---- the block writer (yamlio._Block): the dumper's bytes, written directly -------------------

KINDS_OF_STRING = [
    "true",
    "False",
    "yes",
    "NO",
    "on",
    "Off",
    "y",
    "N",
    "~",
    "null",
    "",
    "0o17",
    "0x1F",
    "017",
    "1e3",
    "1_000",
    ".5",
    "-1",
    "+1",
    "1.0",
    "2001-12-14",
    "12:30",
    "<<",
    "=",
    "---",
    "...",
    "--x",
    "..x",
    "- x",
    "-x",
    "-",
    "a: b",
    "a:b",
    "a:",
    ":",
    ":x",
    "? x",
    "?x",
    "?",
    "a #b",
    "a#b",
    "#x",
    "x ",
    " x",
    "it's",
    "'q'",
    '"q"',
    "[x]",
    "{x}",
    "x,y",
    "&a",
    "*a",
    "!t",
    "|x",
    ">x",
    "%x",
    "@x",
    "`x",
    "a.b/c",
    "Prune=false,Delete=false",
    "registry.example.com/x:cuda",
]
TRICKY = " :#-?'\"[]{},&*!|>%@`.~=+/_0123456789abcxyYnNtTfFeEoO"
STRINGS = st.one_of(st.sampled_from(KINDS_OF_STRING), st.text(alphabet=TRICKY, max_size=10))
LEAVES = st.one_of(STRINGS, st.integers(), st.booleans(), st.none())


def _subset(kids: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mappings of anything, lists of anything but a non-empty list."""
    item = st.one_of(LEAVES, st.dictionaries(STRINGS, kids, max_size=3), st.just([]))
    return st.one_of(st.lists(item, max_size=4), st.dictionaries(STRINGS, kids, max_size=4))


DOCUMENTS = st.dictionaries(
    STRINGS, st.recursive(LEAVES, _subset, max_leaves=25), min_size=1, max_size=5
)


@settings(derandomize=True, database=None, deadline=None, max_examples=1500)
@given(DOCUMENTS)
def test_the_block_writer_writes_what_the_dumper_writes(doc: dict[str, Any]) -> None:
    lines: list[str] = []
    yamlio._BLOCK.mapping(doc, "", lines, None)  # every document here is in its subset
    assert "".join(lines) == yamlio._dumped(doc)
    assert dump(doc) == yamlio._dumped(doc)


def test_the_block_writer_quotes_and_lays_out_as_the_dumper() -> None:
    doc = {
        "t": True,
        "n": None,  # a key YAML 1.1 reads as a boolean
        "list": [
            {"name": "c", "args": ["-v", "- x", "a: b", "a:b", "x #y", "x#y", "#x", "it's", "-"]},
            {},
            [],
        ],
        "i": -3,
        "data": {"k": ""},
        "metadata": {"labels": {"a.b/c": "yes"}, "name": "x"},
        "kind": "ConfigMap",
        "apiVersion": "v1",
    }
    lines: list[str] = []
    yamlio._BLOCK.mapping(doc, "", lines, None)
    assert "".join(lines) == (
        "apiVersion: v1\n"
        "kind: ConfigMap\n"
        "metadata:\n"
        "  name: x\n"
        "  labels:\n"
        "    a.b/c: 'yes'\n"
        "data:\n"
        "  k: ''\n"
        "i: -3\n"
        "list:\n"
        "- name: c\n"
        "  args:\n"
        "  - -v\n"
        "  - '- x'\n"
        "  - 'a: b'\n"
        "  - a:b\n"
        "  - 'x #y'\n"
        "  - x#y\n"
        "  - '#x'\n"
        "  - it's\n"
        "  - '-'\n"
        "- {}\n"
        "- []\n"
        "'n': null\n"
        "t: true\n"
    )


def test_a_long_line_is_written_as_the_dumper_writes_it_up_to_where_it_would_break() -> None:
    # a source annotation naming 250 teams' files is about 7,000 characters
    sources = ", ".join(f"values/teams/team-{i:04}.yaml" for i in range(2200))
    doc = {"metadata": {"annotations": {"accel-gitops.io/source": sources}}, "x": sources + ":"}
    lines: list[str] = []
    yamlio._BLOCK.mapping(doc, "", lines, None)
    assert "".join(lines) == yamlio._dumped(doc)
    assert len(sources) == 63_798
    too_long = {"a": sources + " and" * 435}  # 65,538 characters: left to the dumper
    with pytest.raises(yamlio._Unsupported):
        yamlio._BLOCK.mapping(too_long, "", [], None)
    assert dump(too_long) == yamlio._dumped(too_long)


@pytest.mark.parametrize(
    ("doc", "text"),
    [
        ({"a": 1.5}, "a: 1.5\n"),
        ({"a": "x\ny"}, "a: |-\n  x\n  y\n"),
        ({"a": [[1]]}, "a:\n- - 1\n"),
        ({"a": "\u00e9"}, "a: \u00e9\n"),
        ({"a": "tab\there"}, 'a: "tab\\there"\n'),
        ({"k" * 129: 1}, "? " + "k" * 129 + "\n: 1\n"),
        ({1: "a"}, "1: a\n"),
    ],
    ids=["float", "multi-line", "list-in-list", "non-ascii", "tab", "long-key", "int-key"],
)
def test_what_the_block_writer_leaves_the_dumper_writes(doc: dict[Any, Any], text: str) -> None:
    with pytest.raises(yamlio._Unsupported):
        yamlio._BLOCK.mapping(doc, "", [], None)
    assert dump(doc) == text


@pytest.mark.parametrize(("doc", "text"), [({}, "{}\n"), ([1], "- 1\n"), ("x", "x\n")])
def test_a_document_that_is_no_mapping_or_an_empty_one_is_the_dumpers(doc: Any, text: str) -> None:
    assert dump(doc) == text


@pytest.mark.parametrize(
    ("values", "left"),
    [
        # the dashboard, the scrape configuration, the scheduler's configuration, the shared
        # configuration of the NVIDIA plugin: each a ConfigMap holding a multi-line string
        ("example", 11),
        ("made", 4),  # benchmarks.fleet's 4 teams in 2 clusters: the dashboard, the scrape
    ],
)
def test_every_object_of_a_rendered_fleet_is_written_as_the_dumper_writes_it(
    values: str, left: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path("values")
        if values == "made":
            folder = Path(tmp) / "values"
            make_values(folder, 4, clusters=2)
        done = render(RenderOptions(folder, Path(tmp) / "out"))
        objects = [o for u in done.rendered.units for o in u.objects]
        assert [o for o in objects if dump(o) != yamlio._dumped(o)] == []
        leaves = 0
        for obj in objects:
            try:
                yamlio._BLOCK.mapping(obj, "", [], None)
            except yamlio._Unsupported:
                leaves += 1
        assert leaves == left
