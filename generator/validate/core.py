"""The validate pipeline: one run, every stage, one list of findings.

values (schema, checks) -> render into a temporary tree -> kustomize build of every unit in
parallel -> kubeconform -strict against offline schemas -> promtool on extracted rule groups ->
policy rules on the built objects. Tool results are cached per unit by content hash.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__, toolchain
from ..errors import Finding, FindingsError, Location, Severity, UsageError, sorted_findings
from ..layout import Tree, Unit, render_tree
from ..output import compare, read_tree
from ..pipeline import load_and_check
from . import nfd, tools
from .cache import Cache, folder_index, unit_inputs, unit_key
from .dumpcache import DumpCache
from .rules import describe, origin, run_rules

DEFAULT_CACHE = Path(".cache") / "validate"


@dataclass(frozen=True)
class ValidateOptions:
    values_dir: Path
    env: str | None = None
    cache_dir: Path | None = None  # None: no cache
    jobs: int = 0  # 0: twice the CPU count
    committed: Path | None = None  # where base/ and overlays/ are committed; None: skip drift


@dataclass
class ValidateResult:
    findings: list[Finding]
    units: int = 0
    objects: int = 0
    cached_units: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    stopped: str = ""  # the stage whose errors stopped the run, if any
    checked: list[str] = field(default_factory=list)  # unit paths (JUnit: one case each)

    @property
    def errors(self) -> int:
        return sum(f.severity is Severity.ERROR for f in self.findings)


class _Clock:
    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self._t = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.timings[name] = round(now - self._t, 3)
        self._t = now


def _salt(kubernetes_version: str) -> str:
    """What, besides the unit's files, decides the tools' verdicts."""
    parts = [__version__, kubernetes_version]
    for tool in ("kustomize", "kubeconform", "promtool", "nfd-rulecheck"):
        parts.append(f"{tool}={toolchain.version(tool)}")
    index = toolchain.tools_dir() / "schemas" / "crds" / "index.json"
    parts.append(index.read_text(encoding="utf-8") if index.is_file() else "")
    return "\n".join(parts)


def validate(opts: ValidateOptions) -> ValidateResult:
    clock = _Clock()
    try:
        loaded, findings = load_and_check(opts.values_dir)
    except FindingsError as exc:
        # Nothing can be rendered from values with errors: report them, build nothing.
        return ValidateResult(exc.findings, timings={"values": 0.0}, stopped="values")
    if opts.env is not None and opts.env not in loaded.envs:
        raise UsageError(
            f"unknown environment {opts.env!r}; known: " + ", ".join(sorted(loaded.envs))
        )
    clock.lap("values")
    dumps = DumpCache(opts.cache_dir / "dump-cache.json" if opts.cache_dir else None)
    rendered = render_tree(loaded, dumps.dump)
    dumps.save()
    units = [u for u in rendered.units if opts.env in (None, u.env)]
    if opts.committed is not None:
        findings.extend(drift_findings(rendered.tree, opts.committed, opts.env))
    clock.lap("render")

    kube_version = loaded.base.fleet.kubernetes_version
    cache = Cache(opts.cache_dir)
    salt = _salt(kube_version)
    index = folder_index(rendered.tree)
    inputs = {u.path: unit_inputs(rendered.tree, u.path, index) for u in units}
    keys = {u.path: unit_key(rendered.tree, u.path, salt, inputs[u.path]) for u in units}
    results: dict[str, dict[str, Any]] = {}
    for unit in units:
        hit = cache.get(keys[unit.path])
        if hit is not None:
            results[unit.path] = hit
    misses = [u for u in units if u.path not in results]

    with tempfile.TemporaryDirectory(prefix="accel-validate-") as tmp:
        root = Path(tmp)
        if misses:
            # Only what the units to build read: on a warm cache that is a few files.
            needed = {rel for u in misses for rel in inputs[u.path]}
            _write({rel: rendered.tree[rel] for rel in needed}, root)
            results.update(_run_tools(root, misses, kube_version, opts.jobs or tools.jobs()))
            for unit in misses:
                cache.put(keys[unit.path], results[unit.path])
    clock.lap("tools")

    views = loaded.envs
    total = 0
    for unit in units:
        res = results[unit.path]
        findings.extend(_tool_findings(unit, res))
        if res["build_ok"]:
            docs = res["docs"]
            total += len(docs)
            findings.extend(run_rules(views[unit.env], unit, docs))
            if res.get("nfd"):
                findings.extend(nfd.findings(views[unit.env], unit, res["nfd"]))
    clock.lap("policy")
    # The same finding about shared values (e.g. NFD001 on a vendor's taint) comes from the
    # node-config unit of every environment: report it once.
    findings = list(dict.fromkeys(findings))
    return ValidateResult(
        sorted_findings(findings),
        len(units),
        total,
        len(units) - len(misses),
        clock.timings,
        checked=[u.path for u in units],
    )


MAX_DRIFT_FINDINGS = 20


def drift_findings(tree: Tree, committed: Path, env: str | None) -> list[Finding]:
    """What Argo CD syncs is the committed output: it must be what the values render to."""

    def mine(rel: str) -> bool:
        return env is None or not rel.startswith("overlays/") or rel.startswith(f"overlays/{env}/")

    committed_tree = read_tree(committed)
    drift = compare(
        {k: v for k, v in tree.items() if mine(k)},
        {k: v for k, v in committed_tree.items() if mine(k)},
    )
    hint = "run `python render.py render` and commit the result"
    found = [(rel, "differs from a fresh render of the values") for rel in drift.changed]
    found += [(rel, "is rendered from the values but not committed") for rel in drift.missing]
    found += [(rel, "is committed but no longer rendered from the values") for rel in drift.stale]
    out = [
        Finding(
            "DRIFT001",
            f"committed {rel} {what}",
            Location(rel, *drift_line(committed_tree.get(rel), tree.get(rel))),
            hint=hint,
            detail=drift.diffs.get(rel, ""),
        )
        for rel, what in found[:MAX_DRIFT_FINDINGS]
    ]
    if len(found) > MAX_DRIFT_FINDINGS:
        out.append(
            Finding(
                "DRIFT001",
                f"{len(found) - MAX_DRIFT_FINDINGS} more committed files "
                "differ from a fresh render",
                Location("overlays"),
                hint=hint,
            )
        )
    return out


def drift_line(committed: str | None, rendered: str | None) -> tuple[int, int]:
    """(line, column) of the committed file where it first differs from the render; (1, 1) for
    a file no longer rendered, (0, 0) for one not committed at all."""
    if committed is None:
        return 0, 0
    old, new = committed.splitlines(), (rendered or "").splitlines()
    if rendered is None or not old:
        return 1, 1
    first = next(
        (i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b),
        min(len(old), len(new)),
    )
    return min(first, len(old) - 1) + 1, 1


def _write(tree: dict[str, str], root: Path) -> None:
    for rel, text in tree.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _run_tools(
    root: Path, units: list[Unit], kube_version: str, workers: int
) -> dict[str, dict[str, Any]]:
    built = tools.kustomize_build(root, [u.path for u in units], workers)
    out_dir = root / ".built"
    rules_dir = root / ".rules"
    out_dir.mkdir()
    rules_dir.mkdir()
    files: dict[str, Path] = {}
    rule_files: dict[str, dict[str, Path]] = {}
    docs: dict[str, list[dict[str, Any]]] = {}
    for unit in units:
        b = built[unit.path]
        if b["ok"]:
            path = out_dir / (unit.path.replace("/", "__") + ".yaml")
            path.write_text(b["output"], encoding="utf-8")
            files[unit.path] = path
            # Parsed once; the cache keeps JSON, which reads back far faster than YAML.
            docs[unit.path] = tools.load_docs(b["output"])
            rule_files[unit.path] = tools.rule_files(unit.path, docs[unit.path], rules_dir)
    schema_results = tools.kubeconform(files, kube_version)
    # Node Feature Discovery's own code on the rules, against the PCI inventories.
    nfd_results = {
        path: nfd.check(files[path], nfd.inventory_file(root))
        for path in files
        if nfd.has_rules(docs[path])
    }
    results: dict[str, dict[str, Any]] = {}
    for unit in units:
        b = built[unit.path]
        results[unit.path] = {
            "build_ok": b["ok"],
            "build_error": b["error"],
            "docs": docs.get(unit.path, []),
            "schema": schema_results.get(unit.path, []),
            "promtool": tools.promtool_check(rule_files.get(unit.path, {})),
            "nfd": nfd_results.get(unit.path),
        }
    return results


def _find(unit: Unit, kind: str | None, name: str | None) -> tuple[Location, str]:
    for obj in unit.objects:
        if obj["kind"] == kind and obj["metadata"]["name"] == name:
            return origin(unit, obj), describe(unit, obj)
    return Location(unit.path), f"{kind} {name} ({unit.path})"


def _tool_findings(unit: Unit, res: dict[str, Any]) -> list[Finding]:
    out: list[Finding] = []
    if not res["build_ok"]:
        where = next(iter(unit.origins.values()), Location(unit.path))
        out.append(
            Finding(
                "KUS001",
                f"kustomize build {unit.path} failed: {res['build_error']}",
                where,
                hint="a bug in the generator or a hand edit: re-render",
            )
        )
        return out
    for item in res["schema"]:
        loc, what = _find(unit, item.get("kind"), item.get("name"))
        errors = item.get("validationErrors") or []
        if item.get("status") == "statusError" and "could not find schema" in (
            item.get("msg") or ""
        ):
            out.append(
                Finding(
                    "K8S002",
                    f"{what}: no schema for {item.get('version')} {item.get('kind')}",
                    loc,
                    hint="every kind must have a schema: add its CRD to "
                    "tools/schemas.lock.yaml and run `make tools`",
                )
            )
        elif errors:
            for err in errors:
                out.append(
                    Finding(
                        "K8S001",
                        f"{what}: {err.get('msg')}",
                        loc,
                        "$" + str(err.get("path") or "").replace("/", "."),
                    )
                )
        else:
            out.append(Finding("K8S001", f"{what}: {item.get('msg')}", loc))
    for name, problem in sorted(res["promtool"].items()):
        ns, _, short = name.partition("/")
        loc, what = _find(unit, "PrometheusRule", short or ns)
        out.append(
            Finding(
                "PROM001",
                f"{what}: promtool check rules: {problem}",
                loc,
                hint="fix the recording rule or the metric names in values",
            )
        )
    return out
