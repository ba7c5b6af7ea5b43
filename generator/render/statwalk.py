"""The output folders' files and what `stat` says of each, walked by this module run as a child
process while its parent loads and renders the values (treeindex.Walk).

Standard library only, and nothing imported from the project: the child is started as
`python -I -S statwalk.py ROOT` so that it costs a bare interpreter's start (20 ms), not the
generator's imports. The walk is 36,473 `stat` calls at 20 clusters x 500 teams, 0.3 s of each
render that the parent, holding the interpreter lock for its own work, could not overlap with a
thread; a child process runs on the other core.
"""

from __future__ import annotations

import marshal
import os
import sys

# Every folder the render writes: base/ and overlays/, which are always there, and traffic/,
# which holds a file only for an environment with a service split by an external load balancer
# (render/traffic.py) and goes when it is empty.
RENDERED_DIRS = ("base", "overlays", "traffic")

Stat = tuple[int, int, int, int, int]  # size, mtime_ns, ctime_ns, inode, device


def walk(root: str) -> dict[str, Stat]:
    """Every file under root/base, root/overlays and root/traffic by path, in the order of a
    walk that lists each folder sorted by name (a link to a folder is not followed, a link to a
    file is read through)."""
    stats: dict[str, Stat] = {}

    def into(folder: str, rel: str) -> None:
        with os.scandir(folder) as listing:
            entries = sorted(listing, key=lambda e: e.name)
        for entry in entries:
            if entry.is_dir():
                if not entry.is_symlink():
                    into(entry.path, f"{rel}/{entry.name}")
                continue
            st = entry.stat()
            stats[f"{rel}/{entry.name}"] = (
                st.st_size,
                st.st_mtime_ns,
                st.st_ctime_ns,
                st.st_ino,
                st.st_dev,
            )

    for name in RENDERED_DIRS:
        if os.path.isdir(os.path.join(root, name)):
            into(os.path.join(root, name), name)
    return stats


if __name__ == "__main__":
    sys.stdout.buffer.write(marshal.dumps(walk(sys.argv[1])))
