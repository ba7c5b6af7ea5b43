"""`render.py doctor`: every registered tool, installed or not, at its pin or not."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from generator import CONSOLE, Program
from generator.toolchain.errors import ToolError
from generator.toolchain.gobuild import version
from generator.toolchain.registry import (
    CLONE_ONLY,
    OPTIONAL,
    TOOLS,
    find,
    in_clone,
    install_hint,
    tools_dir,
    tools_dir_origin,
)


@dataclass(frozen=True)
class ToolStatus:
    """What :func:`doctor` found for one tool."""

    name: str
    path: Path | None
    version: str | None
    """Installed version, or None when the tool is missing or its version cannot be read."""
    pinned: str
    source: str
    """Where the pinned tool comes from, or where this one was found if it is not the pinned one."""
    found_in: str
    """Where this one was found: the tools dir and why it is there, or PATH ('' when missing)."""
    install_hint: str
    optional: bool = False
    """Not every command needs it (control plane, test-only tools): missing is not a failure."""

    @property
    def ok(self) -> bool:
        """Installed and, if pinned, at the pinned version."""
        if self.path is None or self.version is None:
            return False
        return not self.pinned or self.version == self.pinned


def doctor(program: Program = CONSOLE) -> list[ToolStatus]:
    """Status of every registered tool, its install hint as `program` runs it; never raises for
    a missing or broken tool."""
    statuses: list[ToolStatus] = []
    for name, spec in TOOLS.items():
        if name in CLONE_ONLY and not in_clone():
            continue  # an installed accel-gitops never runs them: no row to puzzle over
        path = find(name)
        found_version: str | None = None
        source = spec.source
        found_in = ""
        if path is not None:
            try:
                found_version = version(name)
            except ToolError:
                found_version = None
            found_in = f"{tools_dir_origin()}: {path.parent}"
            if path.parent != tools_dir() / "bin":
                found_in = f"PATH: {path.parent}"
                source = f"PATH ({path})" if spec.pinned else spec.source
        statuses.append(
            ToolStatus(
                name=name,
                path=path,
                version=found_version,
                pinned=spec.pinned,
                source=source,
                found_in=found_in,
                install_hint=install_hint(name, program),
                optional=name in OPTIONAL,
            )
        )
    return statuses
