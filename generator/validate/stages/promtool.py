"""The promtool stage: `promtool check rules --lint=all --lint-fatal` on every PrometheusRule's
rule groups, every unit's in a few batched processes (PROM001); and beside it the Prometheus
Operator's own check of every PrometheusRule, one promrulecheck process (PROM002,
promoperator.py), whose findings depend on promtool's. Both check only the PrometheusRules their
CRD's schema takes (`schema_passed`)."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.findings import CodeInfo, Finding
from generator.toolchain import process
from generator.validate.stages import Batch, UnitView, promoperator, tool_salt

FILE_POSITION = re.compile(r"^(?:\d+:\d+: ){1,2}")
# A line of promtool's logger (log/slog's text handler: `time=... level=...`), on the same
# stream as its verdicts: rulefmt's Parse logs a warning for a file of several YAML documents
# (prometheus v0.316.0 model/rulefmt/rulefmt.go). Not an error of the file.
LOG_LINE = re.compile(r"^time=\S+ level=[A-Z]+ ")
PROMTOOL_BATCH = 200  # rule files per promtool process (keeps argv short)
PROMTOOL_TIMEOUT = 300.0
RULE_KIND = "PrometheusRule"

PROM001 = CodeInfo(
    "PROM001",
    "manifests (promtool)",
    "error",
    "promtool rejects a PrometheusRule's rule groups (syntax, PromQL, lint)",
)


def rule_files(unit_path: str, docs: list[dict[str, Any]], folder: Path) -> dict[str, Path]:
    """Write the rule groups of each PrometheusRule as a plain rules file promtool can read.

    Written as JSON, which is YAML to promtool's parser (it reads rule files with yaml.v3,
    YAML 1.2: prometheus v0.316.0 model/rulefmt/rulefmt.go), the same groups: Python's JSON
    encoder is 15 times faster than libyaml's emitter on a cluster's 2.4 MB of rules at 500
    teams (0.05 s against 0.8 s, 20 clusters a cold validate)."""
    out: dict[str, Path] = {}
    for doc in docs:
        if doc.get("kind") != RULE_KIND:
            continue
        name = f"{doc['metadata'].get('namespace', '')}/{doc['metadata']['name']}"
        path = folder / (unit_path.replace("/", "__") + "__" + name.replace("/", "__") + ".json")
        groups = {"groups": doc.get("spec", {}).get("groups", [])}
        path.write_text(_json(groups), encoding="utf-8")
        out[name] = path
    return out


# The characters yaml.v3's reader refuses in a document's text (go.yaml.in/yaml/v3 v3.0.5
# readerc.go, yaml_parser_update_buffer: "control characters are not allowed"; it takes 0x09,
# 0x0A, 0x0D, 0x20-0x7E, 0x85, 0xA0-0xD7FF, 0xE000-0xFFFD and 0x10000 up) that JSON's encoder
# leaves as they are with ensure_ascii=False: written as JSON escapes, which a double-quoted
# YAML scalar reads as the same character. The Prometheus Operator's YAML writer escapes them
# too, so a rule holding one is no mistake of the rule.
_UNREADABLE = {c: f"\\u{c:04x}" for c in (*range(0x7F, 0xA0), 0xFFFE, 0xFFFF)}


def _json(doc: dict[str, Any]) -> str:
    """A rules file's text: JSON (YAML to promtool) of `doc`, non-ASCII text as it is but what
    yaml.v3 refuses to read raw (_UNREADABLE)."""
    return json.dumps(doc, ensure_ascii=False).translate(_UNREADABLE)


def schema_passed(built: dict[str, Any]) -> list[dict[str, Any]]:
    """A built unit's objects but the PrometheusRules its CRD's schema refuses (K8S001, by the
    build stage's kubeconform): the API server would not take such an object, and promtool and
    the operator would say again what the schema said (a `for: 5 minutes` is no duration to
    any of them). Left out whole, as a values file the schema refuses is (docs/validate.md,
    "One finding per root cause"): their rules are checked once the object passes."""
    refused = {str(item.get("name")) for item in built["schema"] if item.get("kind") == RULE_KIND}
    return [
        doc
        for doc in built["docs"]
        if doc.get("kind") != RULE_KIND or doc["metadata"]["name"] not in refused
    ]


def promtool_check(files: dict[str, Path]) -> dict[str, list[str]]:
    """{name: [problem, ...]} for each rules file promtool rejects (syntax, PromQL, lint), each
    problem once, in file order: one promtool process per batch of files, and for a file whose
    verdict may hide more (below) a few more processes over its parts, so a clean run costs
    nothing more.

    promtool tells only part of what is wrong with a file (prometheus v0.316.0): rulefmt's
    Parse (model/rulefmt/rulefmt.go) decodes the file with yaml.v3, which stops at the first
    value a field's UnmarshalYAML refuses (go.yaml.in/yaml/v3 v3.0.5 decode.go,
    callObsoleteUnmarshaler: fail(err)), so a second bad duration, and every rule's PromQL, are
    not read; and checkRules (cmd/promtool/main.go) runs the duplicate-rules lint
    (checkRuleGroups) only on a file without errors. What Validate checks (expressions,
    templates, names, repeated group names) it tells for every rule. So a file refused for more
    than lint is checked again in parts (_parts), and its problems are theirs."""
    whole = _promtool_run(files, LINT_ALL)
    hidden = {
        name: files[name]
        for name, found in whole.items()
        if not found[0].startswith(LINT_ERROR)  # lint-only: every check ran on it
    }
    return {**whole, **_split_check(hidden, whole)}


LINT_ALL = ("--lint=all", "--lint-fatal")
LINT_NONE = ("--lint=none",)
LINT_ERROR = "lint error "  # how checkRuleGroups's error begins (errLint, cmd/promtool/main.go)


def _promtool_run(files: dict[str, Path], lint: tuple[str, ...]) -> dict[str, list[str]]:
    problems: dict[str, list[str]] = {}
    items = sorted(files.items())
    for start in range(0, len(items), PROMTOOL_BATCH):
        problems.update(_promtool_batch(dict(items[start : start + PROMTOOL_BATCH]), lint))
    return problems


def _promtool_batch(files: dict[str, Path], lint: tuple[str, ...]) -> dict[str, list[str]]:
    """promtool prints `Checking FILE` on stdout, then FAILED and the errors on stderr, in file
    order (unbuffered writes): with both streams on one pipe, each file's block is its own."""
    paths = {str(p): name for name, p in files.items()}
    args = ["check", "rules", *lint, *paths]
    proc = process.run("promtool", args, timeout=PROMTOOL_TIMEOUT, check=False, merge_stderr=True)
    code, text = proc.returncode, proc.stdout.decode("utf-8", "replace")
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        header = line.removeprefix("Checking ")
        if line.startswith("Checking ") and header in paths:
            current = blocks.setdefault(header, [])
        elif current is not None:
            current.append(line)
    problems: dict[str, list[str]] = {}
    for path, name in paths.items():
        lines = blocks.get(path)
        if lines is None:  # promtool stopped before this file: say so rather than pass it
            if code != 0:
                problems[name] = [f"promtool exited {code} before checking it: {text.strip()}"]
            continue
        if any(ln.strip().startswith("SUCCESS") for ln in lines):
            continue
        problems[name] = _errors(lines, path) or [f"promtool exited {code}"]
    return problems


def _errors(lines: list[str], path: str) -> list[str]:
    """A failed file's errors, each once: each error of rulefmt begins with the file's path
    (ParseFile wraps them), the lint's with `lint error`; the lines after one (a lint's
    duplicates, yaml's list of unknown fields) are its own, joined by "; ".

    Each once: promtool's rule parser decodes a file twice (the groups, then their YAML nodes)
    and returns the error of each decode, so a value neither takes (a `for: 5 minutes`) is the
    same error twice (prometheus v0.316.0 model/rulefmt/rulefmt.go, Parse)."""
    errors: list[list[str]] = []
    for raw in lines:
        line = raw.strip()
        if not line or line == "FAILED:" or LOG_LINE.match(line):
            continue
        if raw.startswith(f"{path}: ") or line.startswith(LINT_ERROR) or not errors:
            errors.append([_own(line, path)])
        else:
            errors[-1].append(line)
    return list(dict.fromkeys("; ".join(e) for e in errors))


def _own(line: str, path: str) -> str:
    """promtool's line about a rule without the scratch file's path and the line and column in
    it (two of them for a rule with both `record` and `alert`), a file no user sees (the group,
    the rule's number and name say which rule)."""
    return FILE_POSITION.sub("", line.removeprefix(f"{path}: "), count=1)


# A rule is checked in a file of its own under this group name, its one rule: promtool's words
# about it then begin with RULE_PREFIX, which the rule's group, number and name replace.
PART_GROUP = "_"
RULE_PREFIX = f'group "{PART_GROUP}", rule 1, '


@dataclass(frozen=True)
class Part:
    """A rules file made of part of another, and how to say promtool's words about it as words
    about the whole: `renumbered` replaces RULE_PREFIX, `context` precedes any other line."""

    doc: dict[str, Any]
    where: tuple[int, ...]  # (group,) or (group, rule) indices; () for the file's group names
    renumbered: str = ""
    context: str = ""
    # The part again, checked when it is refused: without its durations, and with each of
    # them alone. A duration yaml.v3 cannot decode stops the decoding, so another duration
    # is not read and rulefmt's Validate, which reads the rule's expression, templates and
    # labels, never runs (Parse returns first). Empty when the part has no duration.
    retry: tuple[dict[str, Any], ...] = ()


# The fields rulefmt decodes as model.Duration (prometheus v0.316.0 model/rulefmt/rulefmt.go,
# RuleGroupNode and RuleNode); each is optional, so a part without them refuses nothing new.
GROUP_DURATIONS = ("interval", "query_offset")
RULE_DURATIONS = ("for", "keep_firing_for")


def _retry(doc: dict[str, Any], fields: tuple[str, ...]) -> list[dict[str, Any]]:
    """`doc` (a group or a rule) without the duration fields it has, then with each of them
    alone; nothing when it has none."""
    present = [f for f in fields if f in doc]
    if not present:
        return []
    bare = {k: v for k, v in doc.items() if k not in fields}
    return [bare, *({**bare, f: doc[f]} for f in present)] if len(present) > 1 else [bare]


def _quoted(text: Any) -> str:
    """A name as promtool quotes it (Go's %q, strconv.Quote: go1.26.8 src/strconv/quote.go,
    appendEscapedRune): in double quotes, `"` and `\\` backslashed, a printable character as
    it is, else \\a \\b \\f \\n \\r \\t \\v, \\xNN below a space and for DEL, \\uNNNN or
    \\UNNNNNNNN (lower-case hex). Go's unicode.IsPrint (letters, marks, numbers, punctuation,
    symbols and the ASCII space) is Python's str.isprintable (all but the Other and Separator
    categories, the ASCII space kept), as far as the two Unicode versions agree."""
    out = ['"']
    for ch in text if isinstance(text, str) else str(text):
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        elif ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out) + '"'


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
               "\t": "\\t", "\v": "\\v"}  # fmt: skip


def _groups(path: Path) -> list[dict[str, Any]] | None:
    """The rule groups of a rules file this stage wrote (JSON: rule_files), or None for one it
    cannot take apart (not JSON, or not groups of rules): its whole verdict then stands."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    groups = doc.get("groups") if isinstance(doc, dict) else None
    if not isinstance(groups, list) or not all(
        isinstance(g, dict)
        and isinstance(g.get("rules", []), list)
        and all(isinstance(r, dict) for r in g.get("rules", []))
        for g in groups
    ):
        return None
    return groups


def _parts(groups: list[dict[str, Any]]) -> list[Part]:
    """The parts of a file checked with lint off, each holding what one error of decoding can
    stop at (a duration, a field): each group without its rules (its name, interval, limit,
    labels), each rule alone, and the group names together (rulefmt's Validate says a name
    repeated in the file; names that are not, or are empty, are each group's part's to say)."""
    parts = []
    for j, group in enumerate(groups):
        where = _quoted(group.get("name"))
        own = {k: v for k, v in group.items() if k != "rules"}
        parts.append(
            Part(
                {"groups": [{**own, "rules": []}]},
                (j,),
                context=f"group {where}: ",
                retry=tuple({"groups": [{**g, "rules": []}]} for g in _retry(own, GROUP_DURATIONS)),
            )
        )
        for i, rule in enumerate(group.get("rules", [])):
            named = _quoted(rule.get("alert") or rule.get("record") or "")
            parts.append(
                Part(
                    {"groups": [{"name": PART_GROUP, "rules": [rule]}]},
                    (j, i),
                    renumbered=f"group {where}, rule {i + 1}, ",
                    context=f"group {where}, rule {i + 1}, {named}: ",
                    retry=tuple(
                        {"groups": [{"name": PART_GROUP, "rules": [r]}]}
                        for r in _retry(rule, RULE_DURATIONS)
                    ),
                )
            )
    names = [g["name"] for g in groups if isinstance(g.get("name"), str) and g["name"]]
    if len(set(names)) < len(names):
        parts.append(Part({"groups": [{"name": n, "rules": []} for n in names]}, ()))
    return parts


def _linted(groups: list[dict[str, Any]], refused: set[tuple[int, ...]]) -> dict[str, Any]:
    """The file for the duplicate-rules lint: the groups and rules whose parts passed, every
    group under a name of its own (the lint's words name no group)."""
    kept: list[dict[str, Any]] = []
    seen: set[str] = set()
    for j, group in enumerate(groups):
        if (j,) in refused:
            continue
        name = str(group.get("name"))
        while name in seen:
            name += "'"
        seen.add(name)
        rules = [r for i, r in enumerate(group.get("rules", [])) if (j, i) not in refused]
        kept.append({**group, "name": name, "rules": rules})
    return {"groups": kept}


def _split_check(files: dict[str, Path], whole: dict[str, list[str]]) -> dict[str, list[str]]:
    """The problems of each file in `files` (refused for more than lint), from promtool's
    verdicts on its parts (_parts), in one run with lint off over every file's parts, then on
    each file's groups and rules that passed, with lint (_linted), in one more. A file whose
    parts all pass keeps its whole verdict (`whole`): what of it the parts do not hold is said
    rather than lost."""
    parts: dict[str, tuple[str, Part]] = {}
    groups: dict[str, list[dict[str, Any]]] = {}
    for name, path in sorted(files.items()):
        found = _groups(path)
        if found is None:
            continue
        groups[name] = found
        for part in _parts(found):
            parts[str(len(parts))] = (name, part)
    verdicts = _promtool_run(
        _write({key: part.doc for key, (_, part) in parts.items()}, files, "promtool-parts"),
        LINT_NONE,
    )
    # A refused part's durations may have hidden the rest of its mistakes: checked again
    # without them and with each alone (what the part said is said once).
    again = {
        f"{key}/{n}": doc
        for key, (_, part) in parts.items()
        if verdicts.get(key)
        for n, doc in enumerate(part.retry)
    }
    retried = _promtool_run(_write(again, files, "promtool-retries"), LINT_NONE) if again else {}
    refused: dict[str, set[tuple[int, ...]]] = {name: set() for name in groups}
    said: dict[str, list[str]] = {name: [] for name in groups}
    for key, (name, part) in parts.items():
        more = [p for n in range(len(part.retry)) for p in retried.get(f"{key}/{n}", [])]
        for problem in verdicts.get(key, []) + more:
            refused[name].add(part.where)
            if part.renumbered and problem.startswith(RULE_PREFIX):
                said[name].append(part.renumbered + problem.removeprefix(RULE_PREFIX))
            else:
                said[name].append(part.context + problem)
    # The duplicate-rules lint compares every rule of the file (checkDuplicates: each rule's
    # name and its group's and own labels): it runs on the whole file, less what was refused
    # above (said already; promtool lints no file with an error), so it neither loses a pair
    # of duplicates that both passed nor tells one made by the split.
    linted = _promtool_run(
        _write({n: _linted(g, refused[n]) for n, g in groups.items()}, files, "promtool-lints"),
        LINT_ALL,
    )
    return {
        name: list(dict.fromkeys(said[name] + linted.get(name, []))) or whole[name]
        for name in groups
    }


def _write(docs: dict[str, dict[str, Any]], files: dict[str, Path], folder: str) -> dict[str, Path]:
    """The parts as files beside the rules files, in a folder of their own."""
    if not files:
        return {}
    into = next(iter(files.values())).parent / folder
    into.mkdir(exist_ok=True)
    out = {}
    for k, (key, doc) in enumerate(sorted(docs.items())):
        out[key] = into / f"{k}.json"
        out[key].write_text(_json(doc), encoding="utf-8")
    return out


class PromtoolStage:
    name = "promtool"
    order = 10
    tools = ("promtool", promoperator.TOOL)
    codes = (PROM001, promoperator.PROM002)

    def salt(self, engine: str) -> str:
        return tool_salt("promtool") + "\n" + tool_salt(promoperator.TOOL, stamped=True)

    def run(self, batch: Batch) -> dict[str, Any]:
        """{path: {"promtool": {name: problem}, "operator": promrulecheck's verdict or None}}."""
        # Only the PrometheusRules the schema takes (schema_passed): one the API server refuses
        # is K8S001's alone. promrulecheck and promtool read the same objects and not each
        # other's output: run side by side, the stage takes the longer of the two rather than
        # their sum (their verdicts are joined below, in the same order whichever ends first).
        docs = {path: schema_passed(batch.built[path]) for path in batch.ok()}
        with ThreadPoolExecutor(max_workers=1) as pool:
            operator_run = pool.submit(promoperator.check, batch, docs)
            files: dict[str, Path] = {}
            for path, found in docs.items():
                written = rule_files(path, found, batch.scratch)
                files.update({f"{path}\0{name}": file for name, file in written.items()})
            problems = promtool_check(files)
            operator = operator_run.result()
        out: dict[str, dict[str, Any]] = {
            path: {"promtool": {}, "operator": operator.get(path)} for path in batch.ok()
        }
        for key, said in problems.items():
            path, _, name = key.partition("\0")
            out[path]["promtool"][name] = said
        return out

    def findings(self, unit: UnitView, result: Any) -> list[Finding]:
        refused: dict[str, list[str]] = result["promtool"]
        out = []
        # A finding per problem: each is a rule's (or a group's, or the file's duplicates), and
        # fixing one leaves the others.
        for name, problems in sorted(refused.items()):
            ns, _, short = name.partition("/")
            loc, what = unit.find("PrometheusRule", short or ns)
            out += [
                Finding(
                    PROM001.code,
                    f"{what}: promtool check rules: {problem}",
                    loc,
                    hint="fix the recording rule or the metric names in values",
                    unit=unit.unit.path,
                )
                for problem in problems
            ]
        if result["operator"]:
            out += promoperator.findings(unit, result["operator"], refused)
        return out


STAGE = PromtoolStage()
