"""All-or-nothing output and drift detection for the rendered `base/` and `overlays/`."""

from __future__ import annotations

import difflib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .layout import Tree

OUTPUT_DIRS = ("base", "overlays")


def write_tree(tree: Tree, out: Path) -> None:
    """Write into a temporary folder beside `out`, then swap each output folder into place.

    A failure before the swap leaves the previous output untouched; each swap is one rename.
    """
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".render-", dir=out))
    try:
        for rel, text in tree.items():
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8", newline="\n")
        for top in OUTPUT_DIRS:
            (staging / top).mkdir(exist_ok=True)
        for top in OUTPUT_DIRS:
            current = out / top
            if current.exists():
                old = staging / f"old-{top}"
                os.replace(current, old)
            os.replace(staging / top, current)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def read_tree(out: Path) -> Tree:
    tree: Tree = {}
    for top in OUTPUT_DIRS:
        root = out / top
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if path.is_file():
                rel = path.relative_to(out).as_posix()
                try:
                    tree[rel] = path.read_text(encoding="utf-8")
                except UnicodeDecodeError:
                    tree[rel] = "<binary file>"
    return tree


@dataclass
class Drift:
    changed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # rendered, not committed
    stale: list[str] = field(default_factory=list)  # committed, no longer rendered
    diffs: dict[str, str] = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        return not (self.changed or self.missing or self.stale)


def compare(expected: Tree, actual: Tree, context: int = 2) -> Drift:
    drift = Drift()
    for rel in sorted(set(expected) | set(actual)):
        if rel not in actual:
            drift.missing.append(rel)
        elif rel not in expected:
            drift.stale.append(rel)
        elif expected[rel] != actual[rel]:
            drift.changed.append(rel)
            drift.diffs[rel] = "".join(
                difflib.unified_diff(
                    actual[rel].splitlines(keepends=True),
                    expected[rel].splitlines(keepends=True),
                    f"committed/{rel}",
                    f"rendered/{rel}",
                    n=context,
                )
            )
    return drift
