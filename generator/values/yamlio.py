"""Safe YAML in, deterministic YAML 1.1-safe YAML out.

Reading keeps the parser's marks so every finding can name a line and a column, and refuses what a
values file never needs and an attacker likes: aliases (billion-laughs), tags outside YAML's core
schema (in any position), tags on keys, duplicate keys, several documents, invalid UTF-8, a byte
order mark, NUL and other control characters, very large, very deep or very many-noded files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from generator.errors import GeneratorError
from generator.findings import CodeInfo, Finding, Location

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 64
MAX_NODES = 50_000  # scalars, lists and maps of one file (the example's largest has ~150)
YamlPath = tuple[str | int, ...]

_STD = "tag:yaml.org,2002:"
_SCALAR_TAGS = {f"{_STD}{t}" for t in ("str", "int", "float", "bool", "null")}
_CORE_TAGS = _SCALAR_TAGS | {f"{_STD}seq", f"{_STD}map"}  # tags a values file may write out
_TIMESTAMP = f"{_STD}timestamp"


@dataclass
class SourceMap:
    """Where each value (and each mapping key) of one parsed file sits."""

    file: str
    values: dict[YamlPath, Location] = field(default_factory=dict)
    keys: dict[YamlPath, Location] = field(default_factory=dict)
    # The text of each plain scalar that YAML 1.1 read as something other than a string
    # ("yes" -> True, "0755" -> 493, "1.10" -> 1.1): findings quote what the user wrote.
    plain: dict[YamlPath, str] = field(default_factory=dict)

    def locate(self, path: YamlPath, *, key: bool = False) -> Location:
        """The closest known location of `path`, walking up to its parents."""
        table = self.keys if key else self.values
        probe = path
        while True:
            if probe in table:
                return table[probe]
            if probe in self.values:
                return self.values[probe]
            if not probe:
                return Location(self.file, 1, 1)
            probe = probe[:-1]


class YamlInputError(GeneratorError):
    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.format())
        self.finding = finding


def json_path(path: Iterable[str | int]) -> str:
    out = "$"
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
            out += f".{part}"
        else:
            out += f"[{part!r}]"
    return out


def _fail(file: str, node_or_mark: Any, message: str, hint: str = "") -> YamlInputError:
    mark = getattr(node_or_mark, "start_mark", node_or_mark)
    loc = Location(file, mark.line + 1, mark.column + 1) if mark is not None else Location(file)
    return YamlInputError(Finding("YAML001", message, loc, hint=hint))


def _syntax_error(file: str, text: str, exc: yaml.MarkedYAMLError) -> YamlInputError:
    """PyYAML's complaint said in words, at the line of the mistake, with a fix. PyYAML often
    notices a mistake on the line after it (it reads on to be sure); its context mark is then
    where the bad line starts."""
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or ""
    words = " ".join(p for p in (exc.context, exc.problem) if p) or "invalid YAML"
    at = mark.index if mark is not None else -1
    if (0 <= at < len(text) and text[at] == "\t") or "'\\t'" in problem:
        return _fail(
            file,
            mark,
            "a tab character where YAML expects spaces",
            "indent with spaces: YAML does not allow tabs for indentation",
        )
    if "could not find expected ':'" in problem and exc.context_mark is not None:
        return _fail(
            file,
            exc.context_mark,
            "this line is neither 'key: value' nor a list item",
            "write 'key: value' with a space after the colon, or start a list item with '- '",
        )
    if "mapping values are not allowed" in problem and mark is not None:
        # A line without its colon runs on into the next as one plain text; the colon of that
        # next line is where PyYAML stops. Name the line that lost its colon.
        lines = text.splitlines()
        before = [n for n in range(mark.line) if lines[n].strip()]
        last = before[-1] if before else -1
        stripped = lines[last].strip() if last >= 0 else ""
        if stripped and ":" not in stripped and not stripped.startswith(("-", "#")):
            column = len(lines[last]) - len(lines[last].lstrip())
            return YamlInputError(
                Finding(
                    "YAML001",
                    "this line is neither 'key: value' nor a list item",
                    Location(file, last + 1, column + 1),
                    hint="write 'key: value' with a space after the colon, or start a list item "
                    "with '- '",
                )
            )
        return _fail(
            file,
            mark,
            "a 'key: value' where YAML cannot start one: the line is indented deeper than the "
            "keys beside it, or a plain value contains ': '",
            "line keys of one mapping up at the same indentation, or quote the value",
        )
    if "expected <block end>" in problem or "did not find expected key" in problem:
        return _fail(
            file,
            mark,
            f"invalid YAML: {words}",
            "check the indentation: keys of one mapping line up, and each list item under a key "
            "starts with '- '",
        )
    return _fail(file, mark, f"invalid YAML: {words}")


class _Builder:
    def __init__(self, file: str, text: str) -> None:
        self.file = file
        self.text = text
        self.smap = SourceMap(file)
        self.seen: set[int] = set()
        self.constructor = SafeConstructor()

    def build(self, node: Node, path: YamlPath, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise _fail(self.file, node, f"nesting deeper than {MAX_DEPTH} levels")
        if id(node) in self.seen:
            raise _fail(
                self.file,
                node,
                "anchors and aliases are not allowed in values files",
                "write the value out in full",
            )
        self.seen.add(id(node))
        self.smap.values[path] = Location(
            self.file, node.start_mark.line + 1, node.start_mark.column + 1
        )
        if isinstance(node, MappingNode):
            return self._mapping(node, path, depth)
        if isinstance(node, SequenceNode):
            if node.tag != f"{_STD}seq":
                raise _fail(self.file, node, f"tag {node.tag!r} is not allowed")
            return [self.build(item, (*path, i), depth + 1) for i, item in enumerate(node.value)]
        assert isinstance(node, ScalarNode)
        if node.tag == _TIMESTAMP:
            return str(node.value)  # dates stay text; the schema decides what they may be
        if node.tag not in _SCALAR_TAGS:
            raise _fail(
                self.file,
                node,
                f"tag {node.tag!r} is not allowed",
                "values files hold plain strings, numbers, booleans, lists and maps",
            )
        try:
            value = self.constructor.construct_object(node, deep=True)  # type: ignore[no-untyped-call]
        except (yaml.YAMLError, ValueError) as exc:
            raise _fail(self.file, node, f"cannot read scalar {node.value!r}: {exc}") from None
        # plain (no quotes, no block) and untagged: YAML 1.1 chose its type
        if not isinstance(value, str) and not node.style and not self._tagged(node):
            self.smap.plain[path] = str(node.value)
        return value

    def _tagged(self, node: Node) -> bool:
        return self.text[node.start_mark.index : node.start_mark.index + 1] == "!"

    def _mapping(self, node: MappingNode, path: YamlPath, depth: int) -> dict[str, Any]:
        if node.tag != f"{_STD}map":
            raise _fail(self.file, node, f"tag {node.tag!r} is not allowed")
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == f"{_STD}merge":
                raise _fail(
                    self.file,
                    key_node,
                    "merge keys (<<) are not allowed",
                    "write the keys out in full",
                )
            if not isinstance(key_node, ScalarNode) or key_node.tag not in _SCALAR_TAGS:
                raise _fail(self.file, key_node, "mapping keys must be plain scalars")
            if self._tagged(key_node):
                raise _fail(
                    self.file,
                    key_node,
                    "a tag on a mapping key is not allowed",
                    "keys are plain text: remove the tag",
                )
            key = str(key_node.value)
            if key in out:
                first = self.smap.keys[(*path, key)]
                raise _fail(
                    self.file,
                    key_node,
                    f"duplicate key {key!r} (first at line {first.line})",
                    "remove one of them",
                )
            self.smap.keys[(*path, key)] = Location(
                self.file, key_node.start_mark.line + 1, key_node.start_mark.column + 1
            )
            out[key] = self.build(value_node, (*path, key), depth + 1)
        return out


def load_text(text_bytes: bytes, file: str) -> tuple[Any, SourceMap]:
    """Parse one YAML document; raise YamlInputError with a finding on anything unsafe."""
    if len(text_bytes) > MAX_BYTES:
        raise YamlInputError(
            Finding("YAML001", f"file is larger than {MAX_BYTES} bytes", Location(file))
        )
    try:
        text = text_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = text_bytes[: exc.start].count(b"\n") + 1
        raise YamlInputError(
            Finding(
                "YAML001",
                f"invalid UTF-8 at byte {exc.start}",
                Location(file, line, 1),
                hint="save the file as UTF-8",
            )
        ) from None
    _refuse_characters(text, file)
    try:
        _check_events(text, file)
        docs = list(yaml.compose_all(text, Loader=yaml.CSafeLoader))
    except yaml.reader.ReaderError as exc:
        line, col = _line_col(text, exc.position)
        raise YamlInputError(
            Finding(
                "YAML001",
                f"character U+{exc.character:04X} is not allowed in YAML"
                if isinstance(exc.character, int)
                else f"invalid YAML: {exc.reason}",
                Location(file, line, col),
                hint="remove it; write special characters as escapes in a double-quoted string",
            )
        ) from None
    except yaml.MarkedYAMLError as exc:
        raise _syntax_error(file, text, exc) from None
    except yaml.YAMLError as exc:
        raise YamlInputError(Finding("YAML001", f"invalid YAML: {exc}", Location(file))) from None
    if len(docs) > 1:
        raise _fail(
            file,
            docs[1],
            "more than one YAML document in a values file",
            "remove the '---' separator",
        )
    builder = _Builder(file, text)
    if not docs or docs[0] is None:
        return None, builder.smap
    data = builder.build(docs[0], (), 0)
    return data, builder.smap


def _line_col(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _refuse_characters(text: str, file: str) -> None:
    """A BOM and NUL before the parser sees them: the parser drops the one and its message for
    the other has no line."""
    if text.startswith("\ufeff"):
        raise YamlInputError(
            Finding(
                "YAML001",
                "the file starts with a byte order mark (U+FEFF)",
                Location(file, 1, 1),
                hint="save the file as UTF-8 without a byte order mark",
            )
        )
    for char in ("\x00", "\ufeff"):
        index = text.find(char)
        if index >= 0:
            line, col = _line_col(text, index)
            raise YamlInputError(
                Finding(
                    "YAML001",
                    f"character U+{ord(char):04X} is not allowed in a values file",
                    Location(file, line, col),
                    hint="remove it",
                )
            )


def _check_events(text: str, file: str) -> None:
    """Refuse, before anything is composed: aliases (so nothing is ever expanded and the finding
    names the alias itself), tags outside the core schema in any position (a document, a list, a
    map, a key or a value; `!` too, which PyYAML would still resolve), too deep nesting and too
    many nodes."""
    depth = nodes = 0
    for event in yaml.parse(text, Loader=yaml.CSafeLoader):
        if isinstance(event, yaml.AliasEvent):
            raise _fail(
                file,
                event.start_mark,
                "anchors and aliases are not allowed in values files",
                "write the value out in full",
            )
        if isinstance(event, yaml.NodeEvent):
            nodes += 1
            if nodes > MAX_NODES:
                raise _fail(file, event.start_mark, f"more than {MAX_NODES} values in one file")
            tag = getattr(event, "tag", None)
            if tag is not None and tag not in _CORE_TAGS:
                raise _fail(
                    file,
                    event.start_mark,
                    f"tag {tag!r} is not allowed",
                    "values files hold plain strings, numbers, booleans, lists and maps",
                )
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise _fail(file, event.start_mark, f"nesting deeper than {MAX_DEPTH} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def load_file(path: Path, display: str) -> tuple[Any, SourceMap]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise YamlInputError(
            Finding("YAML001", f"cannot read file: {exc.strerror}", Location(display))
        ) from None
    return load_text(raw, display)


# ---- output -------------------------------------------------------------------------------

_FIRST_KEYS = ("apiVersion", "kind", "metadata", "name", "namespace")


class _Dumper(yaml.CSafeDumper):
    """libyaml's emitter with a resolver that also knows what YAML 1.2 and Go parsers re-type.

    The emitter quotes any string whose plain form the resolver would read as non-string, so
    teaching the resolver the extra forms (y/n booleans, exponent floats without a dot, 0o octal)
    makes those strings come out quoted.
    """

    def ignore_aliases(self, data: Any) -> bool:
        # Manifests are read by tools and people that expect every value written out: an
        # object that holds one dict twice (two containers' default resources) must not come
        # out as an anchor and an alias.
        return True


_Dumper.add_implicit_resolver(  # type: ignore[no-untyped-call]
    f"{_STD}bool", re.compile(r"^(?:y|Y|n|N)$"), list("yYnN")
)
_Dumper.add_implicit_resolver(  # type: ignore[no-untyped-call]
    f"{_STD}float",
    re.compile(r"^[-+]?(?:\.[0-9]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?$"),
    list("-+.0123456789"),
)
_Dumper.add_implicit_resolver(  # type: ignore[no-untyped-call]
    f"{_STD}int", re.compile(r"^0o[0-7]+$"), ["0"]
)


def _ordered_keys(data: Mapping[str, Any]) -> list[str]:
    first = [k for k in _FIRST_KEYS if k in data]
    return first + sorted(k for k in data if k not in _FIRST_KEYS)


def _represent_dict(dumper: yaml.SafeDumper, data: Mapping[str, Any]) -> yaml.MappingNode:
    items = [(k, data[k]) for k in _ordered_keys(data)]
    return dumper.represent_mapping(f"{_STD}map", items)


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    if "\n" in data:
        return dumper.represent_scalar(f"{_STD}str", data, style="|")
    return dumper.represent_scalar(f"{_STD}str", data)


_Dumper.add_representer(dict, _represent_dict)  # type: ignore[arg-type]
_Dumper.add_representer(str, _represent_str)  # type: ignore[arg-type]


def dump(data: Any) -> str:
    """One YAML document, keys in a fixed order, strings safe for YAML 1.1 and 1.2 readers.

    Written by `_Block` when the document is in its subset, else by the dumper: the same bytes
    either way (tests/values/test_yamlio.py compares the two on generated documents and on
    every object of a rendered fleet)."""
    if type(data) is dict and data:
        lines: list[str] = []
        try:
            _BLOCK.mapping(data, "", lines, None)
        except _Unsupported:
            return _dumped(data)
        return "".join(lines)
    return _dumped(data)


def _dumped(data: Any) -> str:
    """The document as PyYAML's representer and libyaml's emitter write it."""
    return yaml.dump(
        data,
        Dumper=_Dumper,
        default_flow_style=False,
        allow_unicode=True,
        width=100000,
        sort_keys=False,
    )


class _Unsupported(Exception):
    """A value `_Block` leaves to the dumper."""


# One line of printable ASCII, short enough that the emitter never breaks it: it breaks a plain
# or single-quoted line at a space only past the width (100,000 columns here).
_PRINTABLE_LINE = re.compile(r"[\x20-\x7e]{0,65536}\Z")
_LEADING_INDICATORS = frozenset("#,[]{}&*!|>'\"%@`")
_STR_TAG = f"{_STD}str"


class _Block:
    """The dumper's output written directly for what manifests mostly hold: non-empty mappings
    with string keys, lists (not of lists), ints, booleans, null and one-line printable ASCII
    strings (a float, a multi-line or non-ASCII string, a list in a list, a key longer than 128
    characters raise _Unsupported, and the dumper writes the whole document). PyYAML's
    representer is Python: building a node per value and resolving each scalar's tag was
    about 40 % of a first render at 20 clusters x 500 teams; this writes the same text in a
    seventh of the time.

    The layout is the emitter's block style with the dumper's settings (indent 2, a list inside
    a mapping not indented, empty collections as {} and [], a line width never reached). A
    string is plain when the dumper's own resolver reads it back as a string and the emitter
    allows it plain in block context, else single-quoted. The emitter is libyaml 0.2.5 (what
    the installed PyYAML runs: yaml._yaml.get_version_string()), src/emitter.c:
    `yaml_emitter_analyze_scalar` (a leading or trailing space, a start of '---' or '...', a
    leading indicator, a leading '?', ':' or '-' before a blank or the end, ': ' or ' #'
    inside), `yaml_emitter_select_scalar_style`, `yaml_emitter_check_simple_key` (a key over
    128 characters is not a simple key: left to the dumper), and the plain and single-quoted
    writers, which break a line at a space only past `best_width`; PyYAML's yaml/emitter.py
    mirrors them.
    """

    def __init__(self) -> None:
        # the dumper's own resolver (with the forms YAML 1.2 and Go re-type); nothing is written
        self._resolver = _Dumper(None)  # type: ignore[arg-type]
        self._texts: dict[str, str] = {}

    def text(self, value: str) -> str:
        found = self._texts.get(value)
        if found is None:
            if not _PRINTABLE_LINE.match(value):
                raise _Unsupported
            tag = self._resolver.resolve(ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]
            if tag == _STR_TAG and _plain_in_block(value):
                found = value
            else:
                found = "'" + value.replace("'", "''") + "'"
            if len(self._texts) < 200_000:  # keys and values repeat across objects
                self._texts[value] = found
        return found

    def scalar(self, value: Any) -> str:
        if value is True:
            return "true"
        if value is False:
            return "false"
        if value is None:
            return "null"
        kind = type(value)
        if kind is str:
            return self.text(value)
        if kind is int:
            return str(value)
        raise _Unsupported

    def mapping(
        self, data: dict[Any, Any], indent: str, lines: list[str], first: str | None
    ) -> None:
        """`data`'s lines at `indent`; `first`: the first line's start instead (a list item's
        '- ')."""
        start = first
        for key in _ordered_keys(data):
            if type(key) is not str or len(key) > 128:
                raise _Unsupported
            head = (indent if start is None else start) + self.text(key) + ":"
            start = None
            value = data[key]
            kind = type(value)
            if kind is dict:
                if value:
                    lines.append(head + "\n")
                    self.mapping(value, indent + "  ", lines, None)
                else:
                    lines.append(head + " {}\n")
            elif kind is list:
                if value:
                    lines.append(head + "\n")
                    self.sequence(value, indent, lines)
                else:
                    lines.append(head + " []\n")
            else:
                lines.append(head + " " + self.scalar(value) + "\n")

    def sequence(self, items: list[Any], indent: str, lines: list[str]) -> None:
        for item in items:
            kind = type(item)
            if kind is dict:
                if item:
                    self.mapping(item, indent + "  ", lines, indent + "- ")
                else:
                    lines.append(indent + "- {}\n")
            elif kind is list:
                if item:
                    raise _Unsupported
                lines.append(indent + "- []\n")
            else:
                lines.append(indent + "- " + self.scalar(item) + "\n")


def _plain_in_block(value: str) -> bool:
    """Whether the emitter would write a one-line printable ASCII string plain in block
    context (PyYAML yaml/emitter.py analyze_scalar: allow_block_plain); the empty string is
    left to the resolver, which reads it as null."""
    if not value:
        return True
    if value[0] == " " or value[-1] == " " or value.startswith(("---", "...")):
        return False
    if value[0] in _LEADING_INDICATORS:
        return False
    last = len(value) - 1
    if value[0] in "?:-" and (last == 0 or value[1] == " "):
        return False
    for i in range(1, last + 1):
        ch = value[i]
        if ch == ":" and (i == last or value[i + 1] == " "):
            return False
        if ch == "#" and value[i - 1] == " ":
            return False
    return True


_BLOCK = _Block()


def dump_all(docs: Iterable[Any]) -> str:
    return "".join("---\n" + dump(d) for d in docs)


# What loading a values file can report (`render.py rules` lists it with every other code).
CODES = (
    CodeInfo(
        "YAML001",
        "values (load)",
        "error",
        "unsafe or invalid YAML: syntax, aliases, tags, duplicate keys, several documents, size",
    ),
)
