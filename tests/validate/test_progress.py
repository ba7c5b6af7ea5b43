"""validate's progress line: on a terminal's stderr only, never with --quiet, then a timing line."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import threading
from pathlib import Path

import pytest

from generator.validate.progress import DELAY_ENV
from tests.fixtures import ml_tree, render_py, render_py_argv


def run(values: Path, *args: str, tty: bool) -> tuple[int, str, str]:
    """Run the real CLI with stderr on a pseudo-terminal (tty) or a pipe; (code, out, err)."""
    env = {**os.environ, DELAY_ENV: "0"}  # show progress at once: the example runs fast
    argv = render_py_argv("validate", "--values", str(values), *args)
    if not tty:
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
        return proc.returncode, proc.stdout, proc.stderr
    master, slave = pty.openpty()
    popen = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: the terminal's other end is closed
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain)
    reader.start()
    out, _ = popen.communicate(timeout=600)
    reader.join()
    os.close(master)
    return popen.returncode, out, b"".join(chunks).decode()


@pytest.fixture
def rendered(tmp_path: Path) -> Path:
    """A small tree rendered beside itself: NVIDIA, team ml-team, 5 units in each of staging and
    prod (argocd, device-plugins, node-config, monitoring, team-ml-team)."""
    values_dir = ml_tree(tmp_path)
    proc = render_py(
        "render",
        "--values",
        str(values_dir),
        capture_output=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return values_dir


def test_progress_and_a_timing_line_on_a_terminal(rendered: Path, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    code, out, err = run(rendered, "--cache-dir", cache, tty=True)
    assert code == 0, out + err
    assert re.search(r"validate: [a-z]+; \d+ units built, 0 cached, \d+ remaining \(", err), err
    final = err.replace("\x1b[K", "").splitlines()[-1].split("\r")[-1]
    assert re.fullmatch(
        r"validate: 10 units \(0 cached, 10 built\) in [\d.]+ s: committed [\d.]+ s, values [\d.]+ s, "
        r"render [\d.]+ s, policy [\d.]+ s, tools wait [\d.]+ s, tools [\d.]+ s",
        final,
    ), final
    assert "validate: 0 error(s)" in out  # the report itself stays on stdout
    code, out, err = run(rendered, "--cache-dir", cache, tty=True)
    assert "validate: 10 units (10 cached, 0 built) in " in err


def test_no_progress_with_quiet_or_without_a_terminal(rendered: Path) -> None:
    for args, tty in ((["--quiet"], True), ([], False)):
        code, out, err = run(rendered, "--no-cache", *args, tty=tty)
        assert code == 0, out + err
        assert err == "", (args, tty, err)
        assert "validate: 0 error(s)" in out
