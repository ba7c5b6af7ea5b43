"""The promtool stage: `promtool check rules --lint=all --lint-fatal` on every PrometheusRule's
rule groups, every unit's in a few batched processes (PROM001); and beside it the Prometheus
Operator's own check of every PrometheusRule, one promrulecheck process (PROM002,
promoperator.py), whose findings depend on promtool's. Both check only the PrometheusRules their
CRD's schema takes (`schema_passed`)."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from generator.findings import CodeInfo, Finding
from generator.toolchain import process
from generator.validate.stages import Batch, UnitView, promoperator, tool_salt

FILE_POSITION = re.compile(r"^\d+:\d+: ")
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
        path.write_text(json.dumps(groups, ensure_ascii=False), encoding="utf-8")
        out[name] = path
    return out


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


def promtool_check(files: dict[str, Path]) -> dict[str, str]:
    """{name: problem} for each rules file promtool rejects (syntax, PromQL, lint), one promtool
    process per batch of files."""
    problems: dict[str, str] = {}
    items = sorted(files.items())
    for start in range(0, len(items), PROMTOOL_BATCH):
        problems.update(_promtool_batch(dict(items[start : start + PROMTOOL_BATCH])))
    return problems


def _promtool_batch(files: dict[str, Path]) -> dict[str, str]:
    """promtool prints `Checking FILE` on stdout, then FAILED and the errors on stderr, in file
    order (unbuffered writes): with both streams on one pipe, each file's block is its own."""
    paths = {str(p): name for name, p in files.items()}
    args = ["check", "rules", "--lint=all", "--lint-fatal", *paths]
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
    problems: dict[str, str] = {}
    for path, name in paths.items():
        lines = blocks.get(path)
        if lines is None:  # promtool stopped before this file: say so rather than pass it
            if code != 0:
                problems[name] = f"promtool exited {code} before checking it: {text.strip()}"
            continue
        if any(ln.strip().startswith("SUCCESS") for ln in lines):
            continue
        # Each line once: promtool's rule parser decodes a file twice (the groups, then their
        # YAML nodes) and returns the error of each decode, so a value neither takes (a `for:
        # 5 minutes`) is the same line twice (prometheus v0.316.0 model/rulefmt/rulefmt.go,
        # Parse). Two rules with the same mistake are said by one line too: it names neither.
        detail = dict.fromkeys(
            _own(ln.strip(), path) for ln in lines if ln.strip() and ln.strip() != "FAILED:"
        )
        problems[name] = "; ".join(detail) or f"promtool exited {code}"
    return problems


def _own(line: str, path: str) -> str:
    """promtool's line about a rule without the scratch file's path and the line and column in
    it, a file no user sees (the group, the rule's number and name say which rule)."""
    return FILE_POSITION.sub("", line.removeprefix(f"{path}: "), count=1)


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
        for key, text in problems.items():
            path, _, name = key.partition("\0")
            out[path]["promtool"][name] = text
        return out

    def findings(self, unit: UnitView, result: Any) -> list[Finding]:
        refused: dict[str, str] = result["promtool"]
        out = []
        for name, problem in sorted(refused.items()):
            ns, _, short = name.partition("/")
            loc, what = unit.find("PrometheusRule", short or ns)
            out.append(
                Finding(
                    PROM001.code,
                    f"{what}: promtool check rules: {problem}",
                    loc,
                    hint="fix the recording rule or the metric names in values",
                    unit=unit.unit.path,
                )
            )
        if result["operator"]:
            out += promoperator.findings(unit, result["operator"], set(refused))
        return out


STAGE = PromtoolStage()
