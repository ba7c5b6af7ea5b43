"""The fleet benchmark's own figures: what it says of a process is that process's."""

from __future__ import annotations

import subprocess
import sys

from benchmarks import fleet

CHILD = "from benchmarks.fleet import own_peak_kb; print(own_peak_kb())"


def test_a_fresh_process_reports_its_own_peak_not_the_larger_one_of_its_parent() -> None:
    held = bytearray(400 * 1024 * 1024)  # touched page by page: resident in this process
    for i in range(0, len(held), 4096):
        held[i] = 1
    assert fleet.own_peak_kb() > 400 * 1024
    child = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, check=True
    )
    # An interpreter importing the benchmark holds tens of MB; ru_maxrss would say 400+ here.
    assert int(child.stdout) < 200 * 1024
    del held
