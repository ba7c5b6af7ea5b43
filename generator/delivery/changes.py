"""The values lines a pull request changed, as git says: where a finding about a sum is reported
in a pull request (`validate --changed-since`, findings.anchor_at_changes)."""

from __future__ import annotations

import re
from pathlib import Path

from generator.delivery.git import git, resolve, toplevel

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def changed_lines(values_dir: Path, ref: str) -> dict[str, set[int]]:
    """{file as findings name it (values/teams/a.yaml): its lines that differ}: the working tree
    against where the branch left `ref` (their merge base: what a pull request changed, not
    what `ref` gained since). A file git does not track yet is changed on every line; where lines
    were only removed, the lines around the removal count. The diff's form is fixed whatever the
    user's git configuration says (prefixes, renames, text conversion)."""
    repo = toplevel(values_dir)
    resolve(repo, ref)
    merged = git(["merge-base", ref, "HEAD"], repo, check=False)
    base = merged.stdout.strip() if merged.returncode == 0 else ref
    fixed = ["--unified=0", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames"]
    prefixes = ["--src-prefix=a/", "--dst-prefix=b/", "--relative"]
    proc = git(["diff", *fixed, *prefixes, base, "--", "."], values_dir)
    out: dict[str, set[int]] = {}
    lines: set[int] = set()
    for row in proc.stdout.splitlines():
        if row.startswith("+++ "):
            # b/<path>, a tab after a name with a space; /dev/null for a deleted file. A name git
            # quotes (one with a character outside ASCII, a quote or a control character) is no
            # valid values file name: the loader refuses it, and its lines are not collected.
            name = row[4:].rstrip("\t")
            lines = set()
            if name.startswith("b/"):
                lines = out.setdefault(str(Path(values_dir.name) / name[2:]), set())
            continue
        hunk = _HUNK.match(row)
        if hunk is None:
            continue
        start, count = int(hunk.group(1)), int(hunk.group(2) or 1)
        lines.update(range(start, start + count) if count else (start, start + 1))
    new = git(["ls-files", "-z", "--others", "--exclude-standard", "--", "."], values_dir)
    for name in filter(None, new.stdout.split("\0")):
        try:
            rows = (values_dir / name).read_bytes().split(b"\n")
        except OSError:
            continue  # a link to nothing, a folder, an unreadable file: the loader says so
        count = len(rows) - (rows[-1] == b"")  # the last line may lack its newline
        out[str(Path(values_dir.name) / name)] = set(range(1, count + 1))
    return out
