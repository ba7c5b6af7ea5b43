"""The render stage: values -> checks -> file tree -> written (or compared) output.

The core never prints or exits: it returns results and raises GeneratorError subclasses.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from generator.builders.fleet import Build, build_values
from generator.errors import FindingsError
from generator.findings import Finding, has_errors, sorted_findings, split_layer
from generator.policy import registry as policy
from generator.policy import shared
from generator.policy.memo import FOLDER as MEMO_FOLDER
from generator.policy.memo import VIEWS_FOLDER, CheckMemo, Digests
from generator.render import gcpause, traffic, treeindex
from generator.render.buildmemo import FOLDER as BUILD_FOLDER
from generator.render.buildmemo import ComponentMemo
from generator.render.dumpcache import FOLDER as DUMP_FOLDER
from generator.render.dumpcache import DumpCache
from generator.render.layout import Rendered, render_tree
from generator.render.layoutmemo import FOLDER as LAYOUT_FOLDER
from generator.render.layoutmemo import LayoutMemo
from generator.render.teammemo import FOLDER as TEAMS_FOLDER
from generator.render.teammemo import TeamMemo
from generator.render.texts import Texts
from generator.render.treeindex import Sums
from generator.render.writer import (
    Drift,
    OutputError,
    compare,
    known_sums,
    recover,
    write_tree,
)
from generator.values import clusters
from generator.values import loader as values
from generator.values.filecache import FOLDER
from generator.values.loader import Loaded
from generator.values.model import Values
from generator.vocab.units import Tree


@dataclass(frozen=True)
class RenderOptions:
    values_dir: Path
    out_dir: Path
    env: str | None = None  # render only this environment's overlays (base is always whole)
    check: bool = False
    # validate's cache folder: values files parsed (values/filecache.py), each view's check
    # findings (policy/memo.py), components (render/buildmemo.py) and laid-out units
    # (render/layoutmemo.py), each object's YAML text (render/dumpcache.py); None: no cache
    cache_dir: Path | None = None


@dataclass(frozen=True)
class Checked:
    """A values tree loaded and checked: each view's build (by layer key), made once for the
    checks and the layout, and the checks' findings (warnings only: errors raise)."""

    values: Values
    builds: dict[str, Build]
    findings: list[Finding]
    # The views' digests made or recalled (policy/memo.py): `render --validate` hands them on,
    # so that validate's rules' memo does not digest the changed views a second time.
    digests: Digests = field(default_factory=Digests)


@dataclass
class RenderResult:
    rendered: Rendered
    findings: list[Finding]  # warnings only: errors raise
    drift: Drift | None = None
    values: Values | None = None  # what was rendered: `render --validate` hands it to validate
    # base/ and overlays/ as the output now holds them (the tree written; None for --check):
    # `render --validate` hands it to validate, which need not read the files back (nor the
    # texts the layout memo kept: render/texts.py).
    written: Mapping[str, str] | None = None
    digests: Digests = field(default_factory=Digests)  # the views' digests (Checked.digests)


def load_and_check(
    values_dir: Path, cache_dir: Path | None = None, *, write_cache: bool = True
) -> Checked:
    """Load values, build every view and run every policy check; raise FindingsError when any
    is an error. `cache_dir` (validate's) keeps what did not change since the last run."""
    digests = Digests()
    found, builds, findings = load_and_check_all(
        values_dir, cache_dir, write_cache=write_cache, digests=digests
    )
    if has_errors(findings):
        raise FindingsError(sorted_findings(findings))
    return Checked(found.values, builds, sorted_findings(findings), digests)


def load_and_check_all(
    values_dir: Path,
    cache_dir: Path | None,
    *,
    write_cache: bool = True,
    digests: Digests | None = None,
) -> tuple[Loaded, dict[str, Build], list[Finding]]:
    """(what loading found, each view's build, loading's findings and the checks'). The checks
    run even when loading found errors, on what it accepted (loader.Loaded), so that one run
    reports every root cause: a vendor file the schema refuses and a quota naming a vendor that
    was deleted come together, and neither hides the other. FindingsError only when nothing
    loads (no usable fleet.yaml)."""
    found = values.load_all(values_dir, sub(cache_dir, FOLDER), write_cache=write_cache)
    builds = build_values(found.values)
    digests = digests if digests is not None else Digests()
    # The views' digests of the same values files (a validate after a render): read, not made.
    digests.recall(found, sub(cache_dir, VIEWS_FOLDER), write_cache)
    # The views that did not change since the last run are not built again: their components
    # are read back (render/buildmemo.py), for the checks and the layout alike.
    memo = ComponentMemo(sub(cache_dir, BUILD_FOLDER), write_cache, digests)
    memo.attach(builds)
    # A changed view builds again only its teams whose values changed (render/teammemo.py).
    teams = TeamMemo(sub(cache_dir, TEAMS_FOLDER), write_cache, digests)
    for build in builds.values():
        build.kept_teams = teams.of(build.view)
    checked = check_values(
        found.values, builds, cache_dir, write_cache=write_cache, digests=digests
    )
    teams.save()  # the checks asked for every team of the views that changed
    digests.keep()
    return found, builds, [*found.findings, *clusters.unrestated(found.findings, checked)]


def check_values(
    loaded: Values,
    builds: dict[str, Build],
    cache_dir: Path | None,
    *,
    write_cache: bool = True,
    digests: Digests | None = None,
) -> list[Finding]:
    """Every policy check on each view's build, the unchanged views' findings from the cache
    folder's `checks/` (`digests`: the views' digests, when the caller digests them too)."""
    memo = CheckMemo(sub(cache_dir, MEMO_FOLDER), write=write_cache, digests=digests)
    return [*policy.run_checks(loaded, builds, memo), *shared.shared_argocd(loaded)]


def sub(folder: Path | None, name: str) -> Path | None:
    """`name` in the cache folder, or None without one."""
    return folder / name if folder is not None else None


def recover_output(out: Path) -> str:
    """Roll back a render that was killed mid-change, before reading or writing the output."""
    try:
        return recover(out)
    except OSError as exc:
        raise OutputError(
            f"an interrupted render left {out} half-changed and it cannot be restored: "
            f"{exc.strerror or exc} ({exc.filename}); make it writable and run again"
        ) from None


def render(opts: RenderOptions) -> RenderResult:
    with gcpause.paused():  # half the time of loading values went to the cycle collector
        return _render(opts)


def _render(opts: RenderOptions) -> RenderResult:
    if not opts.check:  # --check writes nothing: the CLI reports an interrupted render instead
        recover_output(opts.out_dir)  # the CLI does this first, to say so; a no-op then
    # The output's files are walked by a child process while this one loads and renders.
    with treeindex.Walk(opts.out_dir) as walk:
        return _rendered(opts, walk)


def _rendered(opts: RenderOptions, walk: treeindex.Walk) -> RenderResult:
    checked = load_and_check(opts.values_dir, opts.cache_dir, write_cache=not opts.check)
    loaded, findings = checked.values, checked.findings
    loaded.require_env(opts.env)
    dumps = DumpCache(sub(opts.cache_dir, DUMP_FOLDER))
    # The views that did not change since the last run are not laid out again either.
    layouts = LayoutMemo(
        sub(opts.cache_dir, LAYOUT_FOLDER), write=not opts.check, digests=checked.digests
    )
    rendered = render_tree(loaded, dumps.dump, builds=checked.builds, memo=layouts)
    if not opts.check:
        dumps.save()
    tree: Mapping[str, str] = rendered.tree
    sums = rendered.sums
    # The committed files whose stat did not change since the last run are known by digest:
    # neither read to compare nor written again; nor is a rendered text hashed whose digest the
    # layout memo kept.
    index = treeindex.index_file(opts.cache_dir, opts.out_dir)
    committed = None
    if opts.env is not None:
        committed = _scan(opts.out_dir, index, walk)
        tree, sums = _only_env(rendered.tree, sums, committed, opts.env)
    if opts.check:
        drift = compare(tree, committed or _scan(opts.out_dir, index, walk), sums=sums)
        return RenderResult(rendered, findings, drift, loaded, digests=checked.digests)
    write_tree(tree, opts.out_dir, index, sums, walk)
    return RenderResult(rendered, findings, values=loaded, written=tree, digests=checked.digests)


def _scan(out: Path, index: Path | None, walk: treeindex.Walk) -> treeindex.Files:
    try:
        return treeindex.scan(out, index, walk)
    except OSError as exc:
        raise OutputError(
            f"cannot read the output in {out}: {exc.strerror or exc} ({exc.filename})"
        ) from None


def _only_env(
    fresh: Mapping[str, str], sums: Sums, committed: treeindex.Files, env: str
) -> tuple[Texts, Sums]:
    """Fresh base and this environment's overlays; other environments' overlays as committed,
    each read only when it must be written or shown as a diff (at 20 clusters x 500 teams,
    `render --env` of one cluster read all 36,000 committed files to keep them as they were);
    and the digests known of the tree: the rendered files' of `sums`, the others' the tree
    index's (committed.digests: the files whose stat did not change since it read them)."""
    prefix = f"overlays/{env}/"
    # A traffic file is its environment's, whichever of its clusters --env names.
    home = split_layer(env)[0]

    def other(p: str) -> bool:
        found = traffic.env_of(p)
        if found is not None:
            return found != home
        return p.startswith("overlays/") and not p.startswith(prefix)

    tree = Texts()
    known: Sums = {}
    for p in committed:
        if other(p):
            tree.defer((p,), functools.partial(_committed_file, committed, p))
            digest = committed.digests.get(p)
            if digest is not None:
                known[p] = digest
    mine = {  # by path first: a text the layout memo kept is read only when taken (texts.py)
        p: fresh[p]
        for p in fresh
        if p.startswith("base/") or p.startswith(prefix) or traffic.env_of(p) == home
    }
    tree.update(mine)
    tree.sort()
    known.update(known_sums(mine, fresh, sums))
    return tree, known


def _committed_file(committed: treeindex.Files, rel: str) -> Tree:
    return {rel: committed[rel]}
