"""validate's progress line: on a terminal's stderr only, never with --quiet, then a timing line."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import threading
from pathlib import Path

import pytest

from generator.validate.progress import DELAY_ENV, Progress
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


def test_once_past_the_delay_a_new_stage_or_the_units_are_drawn_at_once() -> None:
    """Not at the next tick: a run that ends between two ticks still shows its units."""
    stream = io.StringIO()
    progress = Progress(stream, delay=0)
    progress.stage("committed")
    progress.units(10, 3)
    progress.unit_done("a")
    progress.finish({"tools": 0.25})
    text = stream.getvalue()
    assert "\rvalidate: committed (" in text
    assert "\rvalidate: committed; 0 units built, 3 cached, 7 remaining (" in text
    assert text.endswith("\rvalidate: 10 units (3 cached, 1 built) in " + text.rsplit(" in ", 1)[1])
    assert text.rsplit(" in ", 1)[1].endswith(" s: tools 0.2 s\x1b[K\n")


def test_before_the_delay_nothing_is_drawn_and_after_the_end_nothing_more() -> None:
    stream = io.StringIO()
    progress = Progress(stream, delay=3600)
    progress.stage("committed")
    progress.units(10, 3)
    progress.finish({"tools": 0.25})
    assert stream.getvalue() == ""  # a quick run stays silent
    stream = io.StringIO()
    progress = Progress(stream, delay=0)
    progress.finish(None)
    drawn = stream.getvalue()
    progress.stage("policy")
    progress.units(4, 0)
    assert stream.getvalue() == drawn  # stopped: the cleared line stays the last
