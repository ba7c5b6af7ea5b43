"""Small wrappers over the git command line (diff --base, publish), run through the toolchain.

Every call runs git with a fixed environment (no pager, no prompts, C locale) and turns a failure
into a GeneratorError that quotes git's own message.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from generator.errors import GeneratorError, UsageError
from generator.toolchain import process

GIT_TIMEOUT = 300.0


class GitError(GeneratorError):
    def __init__(self, args: Sequence[str], code: int, stderr: str) -> None:
        super().__init__(f"git {' '.join(args)} failed ({code}): {stderr.strip()}")
        self.code = code
        self.stderr = stderr


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_PAGER": "cat",
            "LC_ALL": "C",
            "GIT_CONFIG_NOSYSTEM": "1",
        }
    )
    return env


def git(
    args: Sequence[str], cwd: Path, *, check: bool = True, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """git `args` in `cwd` (through toolchain.run), its output as text."""
    raw = process.run(
        "git",
        args,
        timeout=GIT_TIMEOUT,
        cwd=cwd,
        input=input.encode() if input is not None else None,
        check=False,
        env=_env(),
    )
    proc = subprocess.CompletedProcess(
        raw.args,
        raw.returncode,
        raw.stdout.decode("utf-8", "replace"),
        raw.stderr.decode("utf-8", "replace"),
    )
    if check and proc.returncode != 0:
        raise GitError(args, proc.returncode, proc.stderr or proc.stdout)
    return proc


def out(args: Sequence[str], cwd: Path) -> str:
    return git(args, cwd).stdout.strip()


def toplevel(path: Path) -> Path:
    proc = git(["rev-parse", "--show-toplevel"], path, check=False)
    if proc.returncode != 0:
        raise UsageError(f"{path} is not inside a git repository")
    return Path(proc.stdout.strip())


def resolve(repo: Path, ref: str) -> str:
    """The commit `ref` names, or a UsageError saying it names none."""
    proc = git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], repo, check=False)
    if proc.returncode != 0:
        raise UsageError(f"{ref!r} names no commit in {repo}; fetch it or give another ref")
    return proc.stdout.strip()


@contextlib.contextmanager
def worktree(repo: Path, commit: str) -> Iterator[Path]:
    """A temporary, detached worktree of `repo` at `commit`, removed afterwards."""
    tmp = Path(tempfile.mkdtemp(prefix="accel-worktree-"))
    path = tmp / "tree"
    git(["worktree", "add", "--detach", "--quiet", str(path), commit], repo)
    try:
        yield path
    finally:
        git(["worktree", "remove", "--force", str(path)], repo, check=False)
        shutil.rmtree(tmp, ignore_errors=True)


def ls_tree(repo: Path, commit: str, folders: Sequence[str]) -> dict[str, str]:
    """{path: blob id} of every file under `folders` (paths from the repository's root) at
    `commit`, read from git's object store: nothing is checked out."""
    proc = git(["ls-tree", "-r", "-z", "--full-tree", commit, "--", *folders], repo)
    out: dict[str, str] = {}
    for entry in proc.stdout.split("\0"):
        if not entry:
            continue
        meta, _, path = entry.partition("\t")
        _mode, kind, blob = meta.split(" ")
        if kind == "blob":
            out[path] = blob
    return out


class BlobTree(Mapping[str, str]):
    """Files of a commit as a read-only {path: text} map, each read from git's object store when
    first asked for, through one `git cat-file --batch` process (close() ends it)."""

    def __init__(self, repo: Path, ids: Mapping[str, str]) -> None:
        self.ids = dict(ids)
        self._texts: dict[str, str] = {}
        self._proc = process.popen(
            "git", ["cat-file", "--batch"], stderr=subprocess.DEVNULL, cwd=repo, env=_env()
        )

    def __getitem__(self, path: str) -> str:
        if path not in self._texts:
            blob = self.ids[path]
            assert self._proc.stdin is not None and self._proc.stdout is not None
            self._proc.stdin.write(blob.encode() + b"\n")
            self._proc.stdin.flush()
            header = self._proc.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob":
                raise GitError(["cat-file", "--batch"], 1, f"cannot read {path} ({blob})")
            data = self._proc.stdout.read(int(header[2]) + 1)[:-1]  # the text, then a newline
            self._texts[path] = data.decode("utf-8", "replace")
        return self._texts[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait(timeout=GIT_TIMEOUT)
        if self._proc.stdout is not None:
            self._proc.stdout.close()
