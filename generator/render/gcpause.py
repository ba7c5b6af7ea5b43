"""Python's cycle collector paused for one render or validate run.

Both build large trees of dicts and lists (the values model, every object, the cached tool
results) that reference counting frees on its own; they make few reference cycles. The cycle
collector still walks the growing heap again and again as objects are allocated: at 361 teams
it took half of the values stage of validate (1.05 s -> 0.50 s paused) and collected fewer than
2,000 objects, with the same peak memory either way (benchmarks/fleet.py, docs/performance.md).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No automatic cycle collection inside the block; the caller's setting after it.

    The objects made inside are frozen at its end (gc.freeze: moved out of the collector's
    generations, which resets the count of young objects): re-enabled, the collector would
    otherwise walk every object the run made at its first allocation (at 1,000 teams, 0.3 s of
    each render: benchmarks/fleet.py). The next block unfreezes them into the oldest
    generation, where a later full collection finds whatever cycles they hold: a process that
    renders again and again (the tests, a CLI's render then validate) keeps no garbage for
    longer than one run."""
    enabled = gc.isenabled()
    gc.disable()
    gc.unfreeze()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.enable()
