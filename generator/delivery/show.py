"""`render.py show`: the manifests of an environment's units exactly as kustomize builds them.

The values are rendered afresh (what `render` would write) and each unit is built with the
pinned kustomize, so the output is what Argo CD applies once the render is committed, and what
`kubectl diff -f -` can compare with a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from generator import kustomize
from generator.errors import UsageError
from generator.findings import Finding, layer_selected
from generator.render.layout import render_tree
from generator.render.stage import load_and_check


@dataclass
class Shown:
    text: str
    units: list[str]
    findings: list[Finding]  # warnings of the values


def show(values_dir: Path, env: str, unit: str | None = None) -> Shown:
    checked = load_and_check(values_dir)
    loaded, findings = checked.values, checked.findings
    loaded.require_env(env)
    rendered = render_tree(loaded, builds=checked.builds)
    # An environment with clusters shows each cluster's unit of that name (and its own argocd).
    mine = [u for u in rendered.units if layer_selected(u.env, env)]
    names = {u.name for u in mine}
    if unit is not None and unit not in names:
        raise UsageError(
            f"environment {env!r} has no unit {unit!r}; its units: " + ", ".join(sorted(names))
        )
    paths = sorted(u.path for u in mine if unit in (None, u.name))
    built = kustomize.build(rendered.tree, paths)
    if unit is not None and len(paths) == 1:
        return Shown(built[paths[0]], paths, findings)
    # Several units: one YAML stream, each unit's documents after a comment naming it.
    text = "---\n".join(f"# {path}\n{built[path]}" for path in paths)
    return Shown(text, paths, findings)
