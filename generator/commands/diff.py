"""`diff`'s core: what changes between two environments, or between a git ref and the working
tree."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from generator.delivery import diff as differ
from generator.errors import UsageError


@dataclass(frozen=True)
class DiffOptions:
    values_dir: Path
    environments: tuple[str, ...] = ()  # OLD NEW, or none with `base`
    base: str | None = None  # a git ref to compare the working tree with
    env: str | None = None  # with `base`: only this environment


def diff(opts: DiffOptions) -> differ.DiffResult:
    if opts.base is not None and opts.environments:
        raise UsageError("give either two environments or --base REF, not both")
    if opts.base is not None:
        return differ.against_ref(opts.values_dir, opts.base, opts.env)
    if len(opts.environments) == 2:
        if opts.env is not None:
            raise UsageError("--env goes with --base; two environments are compared whole")
        return differ.between_envs(opts.values_dir, *opts.environments)
    raise UsageError("give two environments (diff staging prod) or --base REF")
