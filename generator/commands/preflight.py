"""`preflight`'s core: a live cluster read (kubectl built first when missing) against what the
values say the site provides."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from generator.cluster import preflight as pre
from generator.commands import EnsureTools


@dataclass(frozen=True)
class PreflightOptions:
    values_dir: Path
    kubeconfig: Path  # the cluster to read (every request is a GET)
    env: str | None = None  # the environment (or env/cluster) whose cluster this is
    context: str | None = None  # the kubeconfig context


def preflight(opts: PreflightOptions, ensure: EnsureTools) -> pre.PreflightResult:
    ensure("preflight", ("kubectl",))
    return pre.run_preflight(opts.values_dir, opts.env, opts.kubeconfig, opts.context)
