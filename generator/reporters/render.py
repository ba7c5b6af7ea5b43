"""How `render` and `render --check` say what they did: the rendered units, or the drift."""

from __future__ import annotations

from pathlib import Path

from generator import Program
from generator.findings import layer_selected
from generator.render.layout import Rendered
from generator.render.writer import Drift


def drift_text(drift: Drift, out: Path, values_dir: Path, program: Program) -> str:
    """What `render --check` prints: each changed file with its diff, each missing and stale
    file, and the counts (naming the render command as `program` runs it); or that the output
    is up to date."""
    if drift.clean:
        return f"render --check: {out} is up to date with {values_dir}\n"
    lines: list[str] = []
    for rel in drift.changed:
        lines.append(f"changed: {rel}\n")
        lines.append(drift.diffs[rel])
    lines += [f"missing: {rel} (a fresh render creates it)\n" for rel in drift.missing]
    lines += [
        f"stale: {rel} (not rendered from the values; a fresh render removes it)\n"
        for rel in drift.stale
    ]
    lines.append(
        f"render --check: {len(drift.changed)} changed, {len(drift.missing)} missing, "
        f"{len(drift.stale)} stale; run `{program.command('render')}` and commit the result\n"
    )
    return "".join(lines)


def rendered_text(rendered: Rendered, env: str | None, out: Path) -> str:
    """What `render` prints once the tree is written."""
    units = rendered.units
    envs = sorted({u.env for u in units if layer_selected(u.env, env)})
    return (
        f"rendered {len(rendered.bases)} bases and "
        f"{sum(1 for u in units if u.env in envs)} units for {', '.join(envs)} into {out}\n"
    )
