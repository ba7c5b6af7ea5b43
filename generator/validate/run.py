"""The validate run: one run, every stage, one list of findings.

values (schema, checks) -> render into memory, compared with the committed output (drift.py) ->
the stages (validate/stages/: kustomize build and kubeconform -strict of every committed unit,
then promtool, NFD, Kueue and kube-scheduler code on what it built) -> the manifest rules on the
built objects (policy/registry.py).

The tools run on the committed `base/` and `overlays/`, which is what Argo CD syncs; the fresh
render only says where each object comes from in values and whether the committed tree is what
the values give (DRIFT001). A hand edit is therefore caught twice: as drift, and by the tools if
it breaks a unit, even with `--no-drift` and even when the values have errors. Tool results are
cached per unit by content hash.
"""

from __future__ import annotations

import functools
import re
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from posixpath import basename
from typing import Any

import yaml

from generator import CONSOLE, Program, __version__
from generator.builders.fleet import Build
from generator.errors import FindingsError, UsageError
from generator.findings import (
    Finding,
    Location,
    Severity,
    has_errors,
    layer_key,
    layer_selected,
    sorted_findings,
    split_layer,
)
from generator.policy import registry as policy
from generator.policy.context import Context
from generator.policy.manifest import describe, origin
from generator.policy.memo import RULES_FOLDER, Digests, RuleMemo
from generator.render import gcpause, treeindex
from generator.render.dumpcache import FOLDER as DUMP_FOLDER
from generator.render.dumpcache import DumpCache
from generator.render.layout import Rendered, render_tree, unit_folder
from generator.render.layoutmemo import FOLDER as LAYOUT_FOLDER
from generator.render.layoutmemo import LayoutMemo
from generator.render.stage import RenderResult, load_and_check_all, recover_output, sub
from generator.render.writer import OUTPUT_DIRS, known_sums
from generator.toolchain import registry as tool_registry
from generator.toolchain import schemas
from generator.validate import drift, findmemo, planmemo, shard
from generator.validate.cache import (
    Cache,
    built_objects,
    file_digests,
    object_count,
    settle,
)
from generator.validate.findmemo import FindingsMemo
from generator.validate.progress import Progress
from generator.validate.stages import BUILD, Batch, Stage, UnitView, registry
from generator.validate.stages.kustomize import ENGINES, unserved_once
from generator.values import filecache
from generator.values.model import FleetView, Values
from generator.vocab.units import Unit


@dataclass(frozen=True)
class ValidateOptions:
    values_dir: Path
    env: str | None = None
    cache_dir: Path | None = None  # None: no cache
    jobs: int = 0  # 0: twice the CPU count
    committed: Path | None = None  # where base/ and overlays/ are; None: beside the values
    drift: bool = True  # compare the committed output with a fresh render
    engine: str = "kbuild"  # or "processes": a kustomize process per unit (the reference)
    shard: tuple[int, int] | None = None  # (K, N): only the units of shard K of N
    # The values stage of a render of the same values tree just done in this process
    # (`render --validate`): validate uses its values, findings and rendered tree instead of
    # loading, checking and rendering the same bytes again.
    prepared: Prepared | None = None
    program: Program = CONSOLE  # how the user runs this program, for the hints that name it
    # Stages not to run (`--skip`, by name): their tools need not be built, and the report
    # says they did not run. The build stage cannot be skipped: every other reads its objects.
    skip: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Prepared:
    values: Values
    findings: tuple[Finding, ...]  # the values checks' findings (a render has no errors)
    rendered: Rendered
    # The committed tree when the caller just wrote it (`render --validate`): not read again.
    committed: Mapping[str, str] | None = None
    # The views' digests the render made (render/stage.py Checked.digests): not made again.
    digests: Digests | None = None

    @classmethod
    def of(cls, result: RenderResult) -> Prepared:
        """What a render that wrote its output (`result`) hands to validate."""
        assert result.values is not None  # a render that wrote its output has its values
        return cls(
            result.values, tuple(result.findings), result.rendered, result.written, result.digests
        )


@dataclass
class ValidateResult:
    findings: list[Finding]
    units: int = 0
    objects: int = 0
    cached_units: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    not_run: list[str] = field(default_factory=list)  # what did not run, and why
    shard: dict[str, object] | None = None  # {"index", "count", "fingerprint"} when sharded
    checked: list[str] = field(default_factory=list)  # unit paths (JUnit: one case each)
    skipped: list[str] = field(default_factory=list)  # the stages --skip left out, in order

    @property
    def errors(self) -> int:
        return sum(f.severity is Severity.ERROR for f in self.findings)


class _Clock:
    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self._t = time.perf_counter()

    def lap(self, name: str) -> None:
        """The time since the last lap, added to `name`'s (the values load early or late)."""
        now = time.perf_counter()
        self.timings[name] = round(self.timings.get(name, 0.0) + now - self._t, 3)
        self._t = now


def _salt(kubernetes_version: str, engine: str, stages: list[Stage]) -> str:
    """What, besides the unit's files, decides the stages' verdicts: the generator's code too
    (filecache.code_digest), since some stages' verdicts are made by it (the charts stage's
    values, the objects handed to a tool), and a stale verdict is worse than a slow one."""
    parts = [__version__, filecache.code_digest(), kubernetes_version, engine]
    parts += [f"{stage.name}: {stage.salt(engine)}" for stage in stages]
    index = tool_registry.tools_dir() / "schemas" / "crds" / "index.json"
    parts.append(index.read_text(encoding="utf-8") if index.is_file() else "")
    return "\n".join(parts)


def _load(
    values_dir: Path, cache_dir: Path | None, digests: Digests
) -> tuple[Values | None, dict[str, Build], list[Finding]]:
    """(values, each view's build, findings): values is None (and there are no builds) when
    loading them found errors (syntax, schema, references, the cluster split). The checks run
    on what loading accepted all the same (render/stage.load_and_check_all says why), but nothing
    after them reads values that loading refused part of."""
    try:
        found, builds, findings = load_and_check_all(values_dir, cache_dir, digests=digests)
    except FindingsError as exc:
        return None, {}, exc.findings
    if has_errors(found.findings):
        return None, {}, findings
    return found.values, builds, findings


def _render(
    loaded: Values,
    builds: dict[str, Build],
    findings: list[Finding],
    dumps: DumpCache,
    layouts: LayoutMemo,
) -> Rendered | None:
    try:
        return render_tree(loaded, dumps.dump, builds=builds, memo=layouts)
    except Exception:
        if has_errors(findings):
            return None  # the builders met values the checks refuse: drift cannot be known
        raise


def committed_units(tree: Mapping[str, str], env: str | None) -> list[tuple[str, str, str]]:
    """(layer, unit, path) of every committed unit `--env` selects: a folder of overlays/ that
    holds a kustomization.yaml (layout.unit_folder). These are what the Argo CD Applications
    point at."""
    found = [u for rel in tree if (u := unit_folder(rel)) is not None]
    return sorted(u for u in found if layer_selected(u[0], env))


def validate(opts: ValidateOptions, progress: Progress | None = None) -> ValidateResult:
    """Run every stage; `progress` hears of each stage and each unit built."""
    progress = progress or Progress(None)
    timings: dict[str, float] | None = None  # None: the run failed, no timing line
    try:
        with gcpause.paused():
            result = _validate(opts, progress)
        timings = result.timings
        return result
    finally:
        progress.finish(timings)


def skippable() -> list[str]:
    """The stages `--skip` may name, in the order they run: all but the build."""
    return [stage.name for stage in registry.STAGES if stage.name != BUILD]


def chosen_stages(skip: frozenset[str]) -> list[Stage]:
    """The stages a run with `skip` runs; UsageError for a name no stage has, or the build's."""
    unknown = sorted(skip - {stage.name for stage in registry.STAGES})
    if unknown:
        choices = ", ".join(skippable())
        raise UsageError(f"--skip: no stage named {', '.join(unknown)}; the stages: {choices}")
    if BUILD in skip:
        raise UsageError(f"--skip: the {BUILD} stage always runs (every other reads its objects)")
    return [stage for stage in registry.STAGES if stage.name not in skip]


def _validate(opts: ValidateOptions, progress: Progress) -> ValidateResult:
    if opts.engine not in ENGINES:
        raise UsageError(f"unknown engine {opts.engine!r}; known: {', '.join(ENGINES)}")
    stages = chosen_stages(opts.skip)
    clock = _Clock()
    # The views' digests, for the checks' memo and the rules' alike: each view digested once.
    given = opts.prepared.digests if opts.prepared is not None else None
    digests = given if given is not None else Digests()
    home = opts.committed if opts.committed is not None else _beside(opts.values_dir)
    recover_output(home)  # a render killed mid-change is rolled back before anything is read

    # The stages check the committed tree, which does not depend on the values: they start first
    # and run in the background while the values load and render (two stages of Python). But
    # where this generator validated with this cache folder before, the units' results are kept
    # (after one team's edit the tools build its units in 0.1 s, their unchanged documents not
    # validated again) and the values files are parsed: there the values load first, while a
    # child process walks the tree (treeindex.Walk, 0.3 s at 20 x 500), and the tools start
    # after (planmemo.kept).
    early = opts.prepared is None and planmemo.kept(opts.cache_dir)
    walk = treeindex.Walk(home) if early else None
    try:
        values = None
        if early:
            values = _load(opts.values_dir, opts.cache_dir, digests)
            clock.lap("values")
        plan = _plan(opts, home, stages, walk)
    finally:
        if walk is not None:
            walk.close()
    progress.units(len(plan.paths), len(plan.paths) - len(plan.misses))
    clock.lap("committed")  # read the tree, key each unit, read the cached results
    job = None
    if plan.misses:
        job = _Background(
            lambda stop: _run_stages_once_per_key(
                home,
                plan.misses,
                plan.keys,
                plan.versions,
                opts,
                stages,
                plan.serial,
                plan.known,
                progress.unit_done,
                stop,
            )
        )
    try:
        loaded, findings, rendered, not_run = _values_and_drift(
            opts, plan.committed, clock, progress, digests, values
        )
        if not plan.found and not committed_units(plan.committed, opts.env):
            if opts.drift or loaded is None or has_errors(findings):
                return ValidateResult(
                    sorted_findings(findings),
                    timings=clock.timings,
                    not_run=not_run,
                    shard=plan.shard,
                    skipped=[name for name in skippable() if name in opts.skip],
                )
            raise UsageError(
                f"no rendered output in {home} ({' and '.join(f'{d}/' for d in OUTPUT_DIRS)}): "
                "validate checks what is committed; run "
                f"`{opts.program.command('render')}` first, or pass --committed DIR"
            )
        # The manifest rules and the stages' findings on the units whose results are cached are
        # worked out while the tools build the others: after one team's edit that is all but a
        # few of 10,000 units, 0.15 s that no longer waits for the tools or they for it.
        progress.stage("policy")
        policy_run = _Policy(opts, plan, stages, rendered, digests)
        policy_run.check(plan.results)
        clock.lap("policy")
        progress.stage("tools")
        if job is not None:
            plan.results.update(job.result())
            for key, path in {plan.keys[p]: p for p in plan.misses}.items():
                plan.cache.put(key, plan.results[path])
    finally:
        if job is not None:
            job.stop()
    clock.lap("tools wait")
    if job is not None:
        clock.timings["tools"] = round(job.seconds, 3)
    settle(opts.cache_dir, _scope(opts), plan.keys.values(), opts.shard[1] if opts.shard else 1)
    progress.stage("policy")
    policy_run.check(plan.results)
    findings.extend(policy_run.findings())
    units = policy_run.units
    total = policy_run.objects()
    policy_run.save(_checked_views(rendered))
    clock.lap("policy")
    # The same finding about shared values (e.g. NFD001 or KUE001 on a vendor's taint, KSC001 on
    # the fleet's kubeScheduler) comes from the unit of every environment: report it once.
    findings = unserved_once(dict.fromkeys(findings))
    return ValidateResult(
        sorted_findings(findings),
        len(units),
        total,
        len(units) - len(plan.misses),
        clock.timings,
        not_run,
        plan.shard,
        checked=[u.path for u in units],
        skipped=[name for name in skippable() if name in opts.skip],
    )


class _Policy:
    """Each committed unit's findings: its stages' verdicts and the manifest rules on its
    objects, checked in any order as each unit's results arrive, reported in the units' order;
    a view none of whose units changed answered whole from its memo (validate/findmemo.py)."""

    def __init__(
        self,
        opts: ValidateOptions,
        plan: _Plan,
        stages: list[Stage],
        rendered: Rendered | None,
        digests: Digests,
    ) -> None:
        self.opts, self.plan, self.stages = opts, plan, stages
        self.fresh = {u.path: u for u in rendered.units} if rendered is not None else {}
        self.units = [
            self.fresh.get(path) or Unit(env, name, path, (), {}) for env, name, path in plan.found
        ]
        # A cluster's units are checked against its view; an environment's argocd unit (on the
        # hub, beside its clusters' folders) against the environment's. Each layer's context,
        # over the build render made: the rules read the objects laid out.
        self.contexts = (
            {k: Context(b) for k, b in rendered.builds.items()} if rendered is not None else {}
        )
        self.rules = RuleMemo(
            sub(opts.cache_dir, RULES_FOLDER), True, list(policy.MANIFEST_RULES), digests
        )
        self.views = FindingsMemo(sub(opts.cache_dir, findmemo.FOLDER), True)
        self.layers: dict[str, list[Unit]] = {}
        for unit in self.units:
            self.layers.setdefault(unit.env, []).append(unit)
        self.marks: dict[str, str] = {}  # layer -> its units' mark (findmemo.mark)
        self.kept: dict[str, dict[str, tuple[str, list[Any], int]]] = {}  # layer -> as read
        self.settled: set[str] = set()  # the layers whose units are all done (their entry put)
        self.done: dict[str, tuple[list[Finding], int]] = {}

    def check(self, results: Mapping[str, object]) -> None:
        """Check every unit not yet checked whose results are in `results` (or whose findings
        the memo kept with its key)."""
        keys = self.plan.keys
        for layer, units in self.layers.items():
            marked = self._mark(layer)
            if marked is not None and layer not in self.kept:
                self.kept[layer] = self.views.get(layer, marked)  # read by the first check
            kept = self.kept.get(layer, {})
            for unit in units:
                if unit.path in self.done:
                    continue
                hit = kept.get(unit.path)
                if hit is not None and hit[0] == keys[unit.path]:
                    self.done[unit.path] = findmemo.done_of(hit[1], hit[2])
                    continue
                if unit.path not in results:
                    continue
                # A unit the values no longer render has no view's objects to remember it by.
                memo = self.rules if unit.path in self.fresh else None
                self.done[unit.path] = _unit_findings(
                    unit,
                    self.contexts.get(unit.env),
                    self.plan,
                    self.stages,
                    memo,
                    self.opts.program,
                )
            if marked is None or layer in self.settled:
                continue
            if all(u.path in self.done for u in units):
                self.settled.add(layer)
                same = kept.keys() == {u.path for u in units} and all(
                    kept[u.path][0] == keys[u.path] for u in units
                )
                if not same:  # kept again, each unit with its key of this run
                    done = {u.path: (keys[u.path], self.done[u.path]) for u in units}
                    self.views.put(layer, marked, done)

    def _mark(self, layer: str) -> str | None:
        """The mark of the layer's view (None: no memo, or the values do not render)."""
        ctx = self.contexts.get(layer)
        if ctx is None or not self.views.enabled:
            return None
        found = self.marks.get(layer)
        if found is None:
            found = self.marks[layer] = findmemo.mark(
                self.rules.digests.view(ctx.view, self.rules.codes),
                [stage.name for stage in self.stages],
                self.opts.program.name,
            )
        return found

    def findings(self) -> list[Finding]:
        return [f for unit in self.units for f in self.done[unit.path][0]]

    def objects(self) -> int:
        return sum(self.done[unit.path][1] for unit in self.units)

    def save(self, views: list[FleetView]) -> None:
        self.rules.save(views)
        self.views.save(view.key for view in views)


def _checked_views(rendered: Rendered | None) -> list[FleetView]:
    """The views the manifest rules check a unit against, whether or not this run checks one of
    theirs: the views of the layers that have units (not the base's, whose digest, the whole
    fleet's, `render --validate` would otherwise make only for this)."""
    if rendered is None:
        return []
    layers = {unit.env for unit in rendered.units}
    return [build.view for layer, build in rendered.builds.items() if layer in layers]


def _scope(opts: ValidateOptions) -> str:
    """What picks a run's units and their keys: the unit results a run of another scope uses are
    not this run's to evict (cache.settle)."""
    shard = "all" if opts.shard is None else f"{opts.shard[0]}/{opts.shard[1]}"
    skip = ",".join(sorted(opts.skip))
    return f"env={opts.env or '*'} shard={shard} engine={opts.engine} skip={skip}"


@dataclass
class _Plan:
    """The committed units to check, what each reads, its cache key, and the cached results."""

    committed: Mapping[str, str]  # the tree as given, or as scanned (texts read on demand)
    found: list[tuple[str, str, str]]  # (layer, unit, path) of this run's units (its shard)
    shard: dict[str, object] | None
    versions: dict[str, str]  # path -> the Kubernetes version of the unit's cluster
    inputs: planmemo.Reads  # path -> the committed files its build reads
    keys: dict[str, str]  # path -> cache key
    results: dict[str, dict[str, Any]]  # path -> {stage: verdicts}, the cached ones so far
    misses: list[str]  # paths to run the stages on, biggest first
    cache: Cache  # where the misses' results go once the stages have run
    serial: bool = False  # a miss reads a kustomization that sets openapi: (sets_openapi)
    # Kubernetes version -> the documents the build stage found valid in the misses' results of
    # the last run, made with the same tools and schemas: not validated again (known_valid).
    known: dict[str, set[str]] = field(default_factory=dict)

    @property
    def paths(self) -> list[str]:
        return [path for _, _, path in self.found]


def _plan(
    opts: ValidateOptions, home: Path, stages: list[Stage], walk: treeindex.Walk | None = None
) -> _Plan:
    given = opts.prepared.committed if opts.prepared is not None else None
    # The committed files whose stat did not change since the last run are known by digest
    # (render/treeindex.py): keyed without being read.
    index = treeindex.index_file(opts.cache_dir, home)
    committed: Mapping[str, str] = given if given is not None else treeindex.scan(home, index, walk)
    found = committed_units(committed, opts.env)
    shard_info: dict[str, object] | None = None
    if opts.shard is not None:
        scope = f"env={opts.env or '*'} drift={'on' if opts.drift else 'off'}"
        shard_info = {
            "index": opts.shard[0],
            "count": opts.shard[1],
            "fingerprint": shard.fingerprint(committed, opts.values_dir),
            "scope": scope,
        }
        mine, count = opts.shard
        found = [f for f in found if shard.shard_of(f[1], count, split_layer(f[0])[1]) == mine]
    paths = [path for _, _, path in found]
    fleet_version, cluster_versions = _kubernetes_versions(opts.values_dir)
    versions = {path: cluster_versions.get(layer, fleet_version) for layer, _, path in found}
    cache = Cache(opts.cache_dir)
    salts = {v: _salt(v, opts.engine, stages) for v in set(versions.values())}
    # `render --validate`'s tree: the rendered files' digests the layout memo kept hold for it
    # where it holds the rendered text (not hashed again to key the units).
    known = (
        known_sums(given, opts.prepared.rendered.tree, opts.prepared.rendered.sums)
        if given is not None and opts.prepared is not None
        else {}
    )
    digest_of = file_digests(committed, known)
    # Each unit's inputs are walked only where its key is worked out again (planmemo.py) or
    # something reads them.
    inputs = planmemo.Reads(committed, digest_of, opts.cache_dir)
    previous: dict[str, str] = {}
    keys = planmemo.unit_keys(
        opts.cache_dir,
        committed,
        digest_of,
        {p: salts[versions[p]] for p in paths},
        inputs,
        previous,
    )
    if isinstance(committed, treeindex.Files):
        treeindex.save(committed, index)
    results: dict[str, dict[str, Any]] = {}
    hits = {key: cache.get(key) for key in dict.fromkeys(keys.values())}  # twins read once
    for path in paths:
        hit = hits[keys[path]]
        if hit is not None:
            results[path] = hit
    size = committed.size if isinstance(committed, treeindex.Files) else _text_size(committed)
    # Biggest first (by the bytes they read): the one-object-per-team units (monitoring, argocd)
    # take seconds each and must not start last, when one worker is left to build them alone.
    misses = sorted(
        (p for p in paths if p not in results),
        key=lambda p: -sum(size(rel) for rel in inputs[p]),
    )
    serial = sets_openapi(committed, inputs, misses)
    valid = known_valid(cache, {p: previous[p] for p in misses if p in previous}, versions)
    inputs.save()
    return _Plan(
        committed, found, shard_info, versions, inputs, keys, results, misses, cache, serial, valid
    )


# The names kustomize reads a kustomization from (kustomize api v0.21.1, the helper's:
# konfig/general.go RecognizedKustomizationFileNames).
KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def sets_openapi(tree: Mapping[str, str], inputs: planmemo.Reads, units: list[str]) -> bool:
    """Whether a kustomization one of `units` reads (its own or a base's) mentions `openapi`:
    kustomize keeps the schema that field sets in package globals, so the kbuild helper then
    builds the batch one unit at a time from a reset schema (`-serial`). The same test the
    helper made of every kustomization under its root; here only the batch's are read."""
    named = {rel for unit in units for rel in inputs[unit] if basename(rel) in KUSTOMIZATION_NAMES}
    return any("openapi" in tree[rel] for rel in sorted(named))


def known_valid(
    cache: Cache, previous: Mapping[str, str], versions: Mapping[str, str]
) -> dict[str, set[str]]:
    """Kubernetes version -> the documents (SHA-256 of their bytes) the build stage found valid
    in the last run's result of each unit that changed (`previous`: unit -> its last key, made
    with this run's salt). kubeconform's verdict on a document is a function of its bytes and
    the salt's tools and schemas alone, so after a one-line edit the kbuild helper validates the
    edited documents and compiles only their kinds' schemas (gotools/kbuild: -valid-docs)."""
    known: dict[str, set[str]] = {}
    for unit, key in sorted(previous.items()):
        result = cache.get(key)
        built = result.get(BUILD) if isinstance(result, dict) else None
        if isinstance(built, dict) and built.get("ok"):
            digests = built.get("valid") or ()
            # only what the helper wrote: a damaged entry costs the reuse, not the batch
            sound = {d for d in digests if isinstance(d, str) and _SHA256.fullmatch(d)}
            known.setdefault(versions[unit], set()).update(sound)
    return known


_SHA256 = re.compile(r"[0-9a-f]{64}")


def _text_size(tree: Mapping[str, str]) -> Callable[[str], int]:
    return lambda rel: len(tree[rel])


def _values_and_drift(
    opts: ValidateOptions,
    committed: Mapping[str, str],
    clock: _Clock,
    progress: Progress,
    digests: Digests,
    values: tuple[Values | None, dict[str, Build], list[Finding]] | None = None,
) -> tuple[Values | None, list[Finding], Rendered | None, list[str]]:
    """(values, findings so far, the fresh render, what did not run): the values' checks and,
    when they render, the drift of the committed tree. `values`: `_load`'s, when it ran
    already."""
    loaded: Values | None
    builds: dict[str, Build] = {}
    if opts.prepared is not None:
        loaded, findings = opts.prepared.values, list(opts.prepared.findings)
    else:
        loaded, builds, findings = values or _load(opts.values_dir, opts.cache_dir, digests)
    if loaded is not None:
        loaded.require_env(opts.env)
    not_run: list[str] = []
    clock.lap("values")
    progress.stage("render")
    rendered = opts.prepared.rendered if opts.prepared is not None else None
    if loaded is not None and rendered is None:
        dumps = DumpCache(sub(opts.cache_dir, DUMP_FOLDER))
        # render's memo
        layouts = LayoutMemo(sub(opts.cache_dir, LAYOUT_FOLDER), write=True, digests=digests)
        rendered = _render(loaded, builds, findings, dumps, layouts)
        dumps.save()
    if rendered is None:
        why = "the values have errors" if loaded is None else "the values' checks fail"
        skipped = "drift and manifest rules" if opts.drift else "manifest rules"
        not_run.append(f"{skipped} ({why}: fix them first)")
        if opts.drift:
            findings.append(drift.not_compared(opts.values_dir, why))
    elif opts.drift and has_errors(findings):
        # A render of values the checks refuse is never written (render refuses them too): the
        # committed output differing from it is the error already reported, not a second one.
        not_run.append("drift (the values' checks fail: fix them, then render)")
        findings.append(drift.not_compared(opts.values_dir, "the values' checks fail"))
    elif opts.drift:
        findings.extend(
            drift.drift_findings(rendered.tree, committed, opts.env, opts.program, rendered.sums)
        )
    clock.lap("render")
    return loaded, findings, rendered, not_run


def _unit_findings(
    unit: Unit,
    ctx: Context | None,
    plan: _Plan,
    stages: list[Stage],
    memo: RuleMemo | None,
    program: Program,
) -> tuple[list[Finding], int]:
    """(every stage's findings and the manifest rules' on one unit, its built objects); the
    rules' findings from `memo` when it remembers them."""
    res = plan.results[unit.path]
    ok = _built(res)
    built = res[BUILD]
    # Parsed once, when a stage or the rules read them (a cached unit's usually are not).
    docs = functools.cache(lambda: built_objects(built) if ok else [])
    seen = UnitView(
        unit,
        ctx.build if ctx is not None else None,
        docs,
        functools.partial(_find, unit, plan.committed, plan.inputs),
        program,
    )
    out: list[Finding] = []
    # Upstream code's verdicts on the committed tree are reported even when the values do not
    # render (then at the committed file); the manifest rules need the values.
    for stage in stages:
        verdicts = res.get(stage.name)
        if stage.name == BUILD or (ok and verdicts is not None):
            out.extend(stage.findings(seen, verdicts))
    if ctx is not None and ok:
        rules_ctx = ctx
        team = ctx.team_of_unit(unit)

        def run() -> list[Finding]:
            return policy.run_rules(rules_ctx, unit, docs())

        key = plan.keys[unit.path]
        found = (
            memo.findings(ctx.view, unit.path, key, run, team, lambda: rules_ctx.reads_alone(team))
            if memo is not None
            else run()
        )
        out.extend(found)
    return out, object_count(built) if ok else 0


def _beside(values_dir: Path) -> Path:
    try:
        return values_dir.resolve().parent
    except (OSError, RuntimeError):  # a symbolic link loop: loading the values reports it
        return values_dir.absolute().parent


class _Background:
    """Run `fn(stop)` in a thread; `result()` waits and re-raises, `stop()` asks it to end."""

    def __init__(self, fn: Callable[[threading.Event], dict[str, dict[str, Any]]]) -> None:
        self._stop = threading.Event()
        self._value: dict[str, dict[str, Any]] = {}
        self._error: BaseException | None = None
        self._start = time.perf_counter()
        self.seconds = 0.0

        def run() -> None:
            try:
                self._value = fn(self._stop)
            except BaseException as exc:  # re-raised in the caller's thread
                self._error = exc
            self.seconds = time.perf_counter() - self._start

        self._thread = threading.Thread(target=run, name="validate-tools", daemon=True)
        self._thread.start()

    def result(self) -> dict[str, dict[str, Any]]:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _kubernetes_versions(values_dir: Path) -> tuple[str, dict[str, str]]:
    """The fleet's Kubernetes version, and each cluster's own ({layer: version}), read from the
    values files themselves: the tools start before the values load, and run when they do not.
    Without a usable fleet.yaml, the newest schema set the tools have; a cluster's version that
    is not one is left out (its finding comes from the values' checks)."""
    try:
        fleet = yaml.safe_load((values_dir / "fleet.yaml").read_text(encoding="utf-8"))
        version = str(fleet["kubernetesVersion"])
        schemas.kubeconform_kubernetes_version(version)
    except (OSError, yaml.YAMLError, TypeError, KeyError, ValueError):
        versions = schemas.k8s_schema_versions()
        version = versions[-1] if versions else "1.33"
    clusters: dict[str, str] = {}
    for path in sorted((values_dir / "environments").glob("*.yaml")):
        try:
            declared = yaml.safe_load(path.read_text(encoding="utf-8")).get("clusters") or {}
            items = list(declared.items())
        except (OSError, yaml.YAMLError, AttributeError):
            continue
        for name, raw in items:
            try:
                own = str(raw["kubernetesVersion"])
                schemas.kubeconform_kubernetes_version(own)
            except (TypeError, KeyError, ValueError):
                continue
            clusters[layer_key(path.stem, str(name))] = own
    return version, clusters


def _run_stages_once_per_key(
    root: Path,
    paths: list[str],
    keys: dict[str, str],
    versions: dict[str, str],
    opts: ValidateOptions,
    stages: list[Stage],
    serial: bool = False,
    known: Mapping[str, set[str]] | None = None,
    on_unit: Callable[[str], None] | None = None,
    stop: threading.Event | None = None,
) -> dict[str, dict[str, Any]]:
    """`_run_stages` on one unit of each cache key, its result given to the others; each unit
    checked against its cluster's Kubernetes version (`versions`: path -> version, part of
    the key).

    Units with equal keys see the same bytes at the same relative paths (their own files and
    their bases', `unit_key`): the cache already replays one's result for the other across
    runs, and within a run the same unit in each environment (a team without environment
    patches) is built once instead of once per environment. A failed build's message names the
    folders it read by absolute path, so the others of a failed unit are built themselves.
    """
    groups: dict[str, list[str]] = {}
    for path in paths:
        groups.setdefault(keys[path], []).append(path)

    def done(path: str) -> None:  # progress: a unit's twins are done with it
        if on_unit is not None:
            for twin in groups[keys[path]]:
                on_unit(twin)

    def run(chosen: list[str], on: Callable[[str], None] | None) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for version in sorted({versions[p] for p in chosen}):
            same = [p for p in chosen if versions[p] == version]
            valid = (known or {}).get(version, set())
            out.update(_run_stages(root, same, version, opts, stages, serial, valid, on, stop))
        return out

    results = run([group[0] for group in groups.values()], done)
    failed = [p for g in groups.values() if not _built(results[g[0]]) for p in g[1:]]
    if failed:
        results.update(run(failed, None))
    for group in groups.values():
        for path in group[1:]:
            results.setdefault(path, results[group[0]])
    return results


def _built(result: dict[str, Any]) -> bool:
    return bool(result[BUILD]["ok"])


def _run_stages(
    root: Path,
    paths: list[str],
    kube_version: str,
    opts: ValidateOptions,
    stages: list[Stage],
    serial: bool = False,
    known: set[str] | None = None,
    on_unit: Callable[[str], None] | None = None,
    stop: threading.Event | None = None,
) -> dict[str, dict[str, Any]]:
    """Every stage on the units `paths` of the tree at `root`: {path: {stage: verdicts}}, plain
    JSON-able data whichever engine built them."""
    with tempfile.TemporaryDirectory(prefix="accel-validate-") as tmp:
        batch = Batch(
            root,
            paths,
            kube_version,
            opts.jobs,
            opts.engine,
            Path(tmp),
            on_unit,
            stop,
            serial,
            frozenset(known or ()),
        )
        verdicts = {stage.name: stage.run(batch) for stage in stages}
    return {path: {name: found.get(path) for name, found in verdicts.items()} for path in paths}


def _committed_file(
    committed: Mapping[str, str], inputs: list[str], kind: str | None, name: str | None
) -> str:
    """The committed file that holds an object the values do not render (a hand edit)."""
    for rel in inputs:
        if rel.endswith("/kustomization.yaml"):
            continue
        try:
            doc = yaml.load(committed[rel], Loader=yaml.CSafeLoader)
        except yaml.YAMLError:
            continue
        if isinstance(doc, dict) and doc.get("kind") == kind:
            meta = doc.get("metadata")
            if isinstance(meta, dict) and meta.get("name") == name:
                return rel
    return ""


def _find(
    unit: Unit,
    committed: Mapping[str, str],
    inputs: planmemo.Reads,
    kind: str | None,
    name: str | None,
) -> tuple[Location, str]:
    for obj in unit.objects:
        if obj["kind"] == kind and obj["metadata"]["name"] == name:
            return origin(unit, obj), describe(unit, obj)
    found = _committed_file(committed, inputs[unit.path], kind, name)
    where = found or f"{unit.path}/kustomization.yaml"
    return Location(where), f"{kind} {name} ({unit.path})"


__all__ = ["ValidateOptions", "ValidateResult", "committed_units", "validate"]
