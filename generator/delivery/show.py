"""`render.py show`: the manifests of an environment's units exactly as kustomize builds them.

The values are rendered afresh (what `render` would write) and each unit is built with the
pinned kustomize, so the output is what Argo CD applies once the render is committed, and what
`kubectl diff -f -` can compare with a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from generator.delivery import build as kustomize
from generator.errors import UsageError
from generator.findings import Finding
from generator.render.layout import render_tree
from generator.render.stage import load_and_check


@dataclass
class Shown:
    text: str
    units: list[str]
    findings: list[Finding]  # warnings of the values


def show(values_dir: Path, env: str, unit: str | None = None) -> Shown:
    loaded, findings = load_and_check(values_dir)
    loaded.require_env(env)
    rendered = render_tree(loaded)
    names = [u.name for u in rendered.units if u.env == env]
    if unit is not None and unit not in names:
        raise UsageError(
            f"environment {env!r} has no unit {unit!r}; its units: " + ", ".join(sorted(names))
        )
    paths = [f"overlays/{env}/{n}" for n in sorted(names) if unit in (None, n)]
    built = kustomize.build(rendered.tree, paths)
    if unit is not None:
        return Shown(built[paths[0]], paths, findings)
    # Several units: one YAML stream, each unit's documents after a comment naming it.
    text = "---\n".join(f"# {path}\n{built[path]}" for path in paths)
    return Shown(text, paths, findings)
