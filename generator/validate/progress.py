"""Progress on stderr for long validate runs: the stage; units built, cached and remaining.

Shown only on a terminal, never with --quiet, and only once a run has taken longer than
`delay` seconds (short runs stay silent); then a final line gives the time of each stage.
A ticker thread redraws one status line a few times a second, so slow stages without units
(loading values, rendering) show their time too; a new stage or the units' count, once the
delay has passed, is drawn at once (a run that finishes between two ticks still showed them).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TextIO

DELAY = 1.5  # seconds before the first line: a quick run prints nothing
DELAY_ENV = "ACCEL_GITOPS_PROGRESS_DELAY"  # tests shorten the delay
TICK = 0.25


class Progress:
    def __init__(self, stream: TextIO | None, delay: float | None = None) -> None:
        self.stream = stream  # None: silent
        self.delay = delay if delay is not None else _delay()
        self.start = time.perf_counter()
        self.stage_name = "values"
        self.total = self.cached = self.built = 0
        self.shown = False
        self._lock = threading.Lock()
        self._drawing = threading.Lock()  # the ticker and the pipeline's thread both draw
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        if stream is not None:
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()

    # ---- what the pipeline reports ----------------------------------------------------------
    def stage(self, name: str) -> None:
        with self._lock:
            self.stage_name = name
        self._draw_if_due()

    def units(self, total: int, cached: int) -> None:
        with self._lock:
            self.total, self.cached, self.built = total, cached, 0
        self._draw_if_due()

    def unit_done(self, unit: str) -> None:
        del unit
        with self._lock:
            self.built += 1

    def finish(self, timings: dict[str, float] | None) -> None:
        """Stop drawing; the timing line, or (timings None: the run failed) a cleared line."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self.stream is None or not self.shown:
            return
        if timings is None:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            return
        elapsed = time.perf_counter() - self.start
        stages = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in timings.items())
        line = (
            f"validate: {self.total} units ({self.cached} cached, {self.built} built) "
            f"in {elapsed:.1f} s: {stages}"
        )
        self.stream.write("\r" + line + "\x1b[K\n")
        self.stream.flush()

    # ---- drawing ----------------------------------------------------------------------------
    def line(self) -> str:
        """The stage, and the units: the tools run in the background from the start."""
        with self._lock:
            elapsed = time.perf_counter() - self.start
            text = f"validate: {self.stage_name}"
            if self.total:
                remaining = self.total - self.cached - self.built
                text += f"; {self.built} units built, {self.cached} cached, {remaining} remaining"
            return f"{text} ({elapsed:.1f} s)"

    def _tick(self) -> None:
        wait = self.delay
        while not self._stop.wait(max(0.0, wait)):
            wait = TICK
            self._draw()

    def _draw_if_due(self) -> None:
        if self.stream is not None and time.perf_counter() - self.start >= self.delay:
            self._draw()

    def _draw(self) -> None:
        assert self.stream is not None
        with self._drawing:
            if self._stop.is_set():
                return  # finish() writes the last line
            self.stream.write("\r" + self.line() + "\x1b[K")
            self.stream.flush()
            self.shown = True


def progress_stream(quiet: bool) -> TextIO | None:
    """stderr when it is a terminal and the user did not ask for quiet; else None (silent)."""
    if quiet or not sys.stderr.isatty():
        return None
    return sys.stderr


def _delay() -> float:
    try:
        return float(os.environ.get(DELAY_ENV, DELAY))
    except ValueError:
        return DELAY
