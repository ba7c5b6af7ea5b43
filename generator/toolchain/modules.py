"""Upstream files read from the Go module cache: the folder of a module at the version one of
the tool modules pins (gotools/<folder>/go.mod).

`go mod download -json MODULE` inside the tool's module folder returns the cached copy of exactly
the pinned version (checked against that module's go.sum), so nothing is copied into the
package or fetched from anywhere but the Go module proxy, and only when the cache is empty.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from generator.toolchain.process import run
from generator.toolchain.registry import GOTOOLS


@functools.cache
def module_dir(tool_module: str, module: str) -> Path:
    """The module cache folder of ``module`` at the version gotools/<tool_module>/go.mod pins."""
    gomod = GOTOOLS / tool_module
    proc = run("go", ["mod", "download", "-json", module], cwd=gomod, timeout=300)
    info = json.loads(proc.stdout)
    return Path(info["Dir"])
