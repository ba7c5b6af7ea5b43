"""Run a build step only when its inputs changed, judged by content, never by file times.

The SHA-256 of the inputs' contents (files, or every file below a folder, in sorted order, named
relative to the folder given), of the command line and of ``go version`` is compared with a
stamp file. When it matches and the output exists, nothing runs; otherwise the step runs and, when
it succeeds, the stamp is rewritten. A cache restored with old file times (CI) or a fresh clone
with new ones is therefore reused as long as the pinned inputs are the same.

Standard library only: the Makefile runs this file as a script with the system Python to decide
whether the virtualenv is current (``python3 generator/toolchain/fresh.py STAMP OUTPUT -- INPUT...
-- COMMAND...``), before any dependency is installed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path


def _files(inputs: Sequence[Path]) -> list[tuple[str, Path]]:
    """(name, path) of every input file; a folder's files are named relative to the folder's
    parent, so the digest does not depend on where the inputs are installed."""
    found: list[tuple[str, Path]] = []
    for item in inputs:
        if item.is_dir():
            for path in item.rglob("*"):
                if path.is_file() and not path.name.endswith(".sha256"):
                    found.append((path.relative_to(item.parent).as_posix(), path))
        elif item.is_file():
            found.append((item.name, item))
    return sorted(found)


def go_version() -> str:
    """``go version`` of the Go on PATH ('' without one): a new Go rebuilds every tool."""
    go = shutil.which("go") or (
        "/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None
    )
    if go is None:
        return ""
    proc = subprocess.run([go, "version"], capture_output=True, text=True, check=False)
    return proc.stdout.strip()


def digest(inputs: Sequence[Path], command: Sequence[str], go: str) -> str:
    """The SHA-256 that names one build: its input files' names and contents, its command line
    and the Go that runs it."""
    h = hashlib.sha256()
    for name, path in _files(inputs):
        h.update(name.encode() + b"\n")
        h.update(hashlib.sha256(path.read_bytes()).hexdigest().encode() + b"\n")
    h.update(("command: " + " ".join(command) + "\n").encode())
    h.update((go + "\n").encode())
    return h.hexdigest()


def is_fresh(stamp: Path, output: Path, want: str) -> bool:
    """The output exists and the stamp records this exact digest."""
    try:
        return output.exists() and stamp.read_text(encoding="utf-8").strip() == want
    except OSError:
        return False


def refresh(stamp: Path, output: Path, want: str, step: Callable[[], None]) -> bool:
    """Run `step` unless the output is fresh; True when it ran. The stamp is removed before the
    step and written only after it succeeds, so a failed step is never taken for a fresh one."""
    if is_fresh(stamp, output, want):
        return False
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    step()
    stamp.write_text(want + "\n", encoding="utf-8")
    return True


def main(argv: Sequence[str]) -> int:
    """``fresh.py STAMP OUTPUT -- INPUT... -- COMMAND...``"""
    if len(argv) < 3 or argv[2] != "--" or "--" not in argv[3:]:
        print("usage: fresh.py STAMP OUTPUT -- INPUT... -- COMMAND...", file=sys.stderr)
        return 2
    stamp, output = Path(argv[0]), Path(argv[1])
    rest = list(argv[3:])
    cut = rest.index("--")
    inputs, command = [Path(p) for p in rest[:cut]], rest[cut + 1 :]

    def step() -> None:
        subprocess.run(command, check=True)

    try:
        refresh(stamp, output, digest(inputs, command, go_version()), step)
    except subprocess.CalledProcessError as exc:
        return exc.returncode or 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
