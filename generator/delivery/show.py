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
from generator.findings import Finding, layer_selected, split_layer
from generator.render.layout import render_tree
from generator.render.stage import load_and_check
from generator.vocab.units import ARGOCD_UNIT


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
    mine = [u for u in rendered.units if layer_selected(u.env, env)]
    names = {u.name for u in mine}
    if unit is not None and unit not in names:
        raise UsageError(
            f"environment {env!r} has no unit {unit!r}; its units: " + ", ".join(sorted(names))
        )
    # Each cluster is its own destination: one stream of several clusters' units is none of
    # theirs, and `kubectl diff -f -` would compare it with the one cluster it talks to. So only
    # one layer is shown: a cluster (env/cluster, its units as the cluster commands take them),
    # an environment without clusters, or an environment's own layer (the hub's argocd unit).
    # A cluster's own argocd unit holds the Applications of its units, which the hub applies
    # (builders/argocd.py): in the stream for `kubectl diff` against the cluster they would be
    # objects it does not have, so it is shown only when asked for by name.
    in_cluster = bool(split_layer(env)[1])
    here = sorted(
        u.path
        for u in mine
        if u.env == env
        and (u.name == unit if unit is not None else not (u.name == ARGOCD_UNIT and in_cluster))
    )
    clusters = sorted({u.env for u in mine if u.env != env})
    if clusters and (unit is None or not here):
        hub = f"; the hub's own unit: --env {env} --unit {ARGOCD_UNIT}"
        raise UsageError(
            f"environment {env!r} has clusters, each its own destination: one stream of their "
            "manifests would be no cluster's; show one cluster: "
            + ", ".join(f"--env {c}" for c in clusters)
            + (hub if any(u.env == env for u in mine) else "")
        )
    built = kustomize.build(rendered.tree, here)
    if unit is not None and len(here) == 1:
        return Shown(built[here[0]], here, findings)
    # Several units: one YAML stream, each unit's documents after a comment naming it.
    text = "---\n".join(f"# {path}\n{built[path]}" for path in here)
    return Shown(text, here, findings)
