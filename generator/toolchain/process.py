"""The one place a subprocess starts: `run` (with a timeout, failures typed), `popen` (a tool
that streams), `spawn` and `terminate` (long-running control-plane services)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from generator.toolchain.errors import ToolExited, ToolFailed, ToolTimeout
from generator.toolchain.registry import _require


def run(
    tool: str,
    args: Sequence[str],
    *,
    timeout: float,
    cwd: Path | None = None,
    input: bytes | None = None,
    check: bool = True,
    merge_stderr: bool = False,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run a registered tool with ``args``; capture stdout/stderr as bytes.

    Raises ToolMissing if the tool is not installed, ToolTimeout if it runs longer than ``timeout``
    seconds (it is killed), and -- when ``check`` -- ToolFailed on a non-zero exit code.
    Standard input is ``input``, or empty (never the caller's terminal). With ``merge_stderr``
    stderr goes to the same pipe as stdout (one ordered stream, in ``stdout``). ``env``: the
    whole environment of the tool (default: this process's).
    """
    argv = [str(_require(tool)), *args]
    try:
        proc = subprocess.run(
            argv,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ToolTimeout(argv, timeout, _as_bytes(exc.stdout), _as_bytes(exc.stderr)) from None
    if check and proc.returncode != 0:
        raise ToolFailed(argv, proc.returncode, proc.stdout, proc.stderr)
    return proc


def popen(
    tool: str,
    args: Sequence[str],
    *,
    stderr: IO[bytes] | int,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start a registered tool that streams: binary pipes on stdin and stdout, stderr where the
    caller says. The caller feeds, reads, applies its own deadline and waits (validate's kbuild
    helper, git cat-file --batch)."""
    argv = [str(_require(tool)), *args]
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
    )


@dataclass
class Service:
    """A long-running tool started by :func:`spawn`: its own process group, output in a log."""

    name: str
    argv: tuple[str, ...]
    process: subprocess.Popen[bytes]
    log: Path

    def check(self) -> None:
        """Raise ToolExited when the process is no longer running."""
        code = self.process.poll()
        if code is not None:
            raise ToolExited(self.argv, code, self.log_tail())

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.strip().splitlines()[-lines:])


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask Linux to SIGKILL the child when the thread that started it dies (PR_SET_PDEATHSIG),
    so that even a SIGKILLed caller leaves no control-plane process behind. SIGKILL, not
    SIGTERM: a kube-apiserver whose etcd went down with the caller keeps retrying etcd after a
    SIGTERM, for minutes (seen when mutmut killed a mutant's test run), and nobody is left to
    read what a graceful stop would write."""
    import contextlib
    import ctypes
    import signal

    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)


def spawn(
    tool: str,
    args: Sequence[str],
    *,
    log: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    wrap: Sequence[str] = (),
) -> Service:
    """Start a registered tool in the background, in a process group of its own (so that
    :func:`terminate` reaches everything it starts and a Ctrl-C at the terminal does not), with
    stdout and stderr appended to ``log``; ``wrap``: a command that runs it (and execs it).
    Raises ToolMissing when it is not installed."""
    argv = [*wrap, str(_require(tool)), *args]
    with log.open("ab") as out:
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env={**os.environ, **env} if env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
    return Service(tool, tuple(argv), process, log)


def terminate(service: Service, grace: float = 20.0) -> None:
    """Stop a service's whole process group: SIGTERM, then SIGKILL after ``grace`` seconds."""
    import signal

    proc = service.process
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _as_bytes(data: bytes | str | None) -> bytes:
    if data is None:
        return b""
    return data.encode() if isinstance(data, str) else data
