"""Validate stages: each module here runs one upstream tool on the committed units.

A stage is a module with a `STAGE` object (the `Stage` protocol below), listed in registry.py:
validate runs it on every unit that is not cached, caches its verdicts with the unit, turns them
into findings, and `render.py rules` lists its codes.

The build stage (kustomize and kubeconform) comes first: the others read the objects it built
(`Batch.built`). A stage's results are plain JSON-able data, so the cache can replay them; they
become findings later, with the values locations of the objects they concern.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from generator import Program
from generator.builders.fleet import Build
from generator.findings import CodeInfo, Finding, Location
from generator.toolchain import gobuild, process
from generator.toolchain import registry as tool_registry
from generator.values.model import FleetView
from generator.vocab.objects import Obj
from generator.vocab.units import Unit

BUILD = "build"  # the build stage's name: the other stages read the objects it built


@dataclass
class Batch:
    """One run of the stages over the units whose verdicts are not cached."""

    root: Path  # the folder holding the committed base/ and overlays/
    paths: list[str]  # overlays/<env>/<unit> folders to check
    kube_version: str  # the fleet's kubernetesVersion
    jobs: int  # workers (0: the stage's default)
    engine: str  # "kbuild" (one helper process) or "processes" (a kustomize per unit)
    scratch: Path  # a temporary folder for the files a stage hands to its tool
    on_unit: Callable[[str], None] | None = None  # progress: a unit was built
    stop: threading.Event | None = None  # set: the caller gave up, stop early
    # A unit reads a kustomization that sets openapi: (run.sets_openapi): the kbuild helper
    # builds one unit at a time from a reset schema.
    serial: bool = False
    # Documents (SHA-256 of their bytes) the build stage found valid with the same tools and
    # schemas (run.known_valid): the kbuild helper does not validate them again.
    known: frozenset[str] = frozenset()
    # Filled by the build stage: {path: {"ok", "error", "docs", "schema"}}.
    built: dict[str, dict[str, Any]] = field(default_factory=dict)

    def ok(self) -> list[str]:
        """The units that built: the only ones the later stages look at."""
        return [p for p in self.paths if self.built[p]["ok"]]


@dataclass(frozen=True)
class UnitView:
    """What a stage's findings see of one committed unit."""

    unit: Unit  # its rendered objects and their values locations (empty when not rendered)
    build: Build | None  # its layer's build; None when the values do not render
    # the objects kustomize built from the committed files, read when asked for (`docs`): a
    # cached unit's are parsed only when a stage's verdicts or the rules need them
    objects: Callable[[], list[Obj]]
    # (kind, name) -> (where the object is: its values, else its committed file; its name
    # with the unit, for messages).
    find: Callable[[str | None, str | None], tuple[Location, str]]
    program: Program  # how the user runs this program, for a hint that names a command

    @property
    def view(self) -> FleetView | None:
        """Its layer's values; None when the values do not render."""
        return self.build.view if self.build is not None else None

    @property
    def docs(self) -> list[Obj]:
        return self.objects()

    def at(self, kind: str, name: str) -> Location:
        return self.find(kind, name)[0]


class Stage(Protocol):
    # Read-only members: a stage declares them as class attributes of its own exact types.
    @property
    def name(self) -> str:
        """The key of its verdicts in a unit's cached result."""
        ...

    @property
    def order(self) -> int:
        """The build stage is 0; the others read what it built."""
        ...

    @property
    def codes(self) -> tuple[CodeInfo, ...]: ...

    @property
    def tools(self) -> tuple[str, ...]:
        """The tools it runs (names of toolchain/registry.py): what `validate --skip` of it
        leaves unneeded."""
        ...

    def salt(self, engine: str) -> str:
        """What, besides a unit's files, decides its verdicts (tool versions, helper stamps)."""
        ...

    def run(self, batch: Batch) -> dict[str, Any]:
        """{path: JSON-able verdicts} for the batch's units (one tool process for all, where the
        tool allows); a unit without verdicts may be left out."""
        ...

    def findings(self, unit: UnitView, result: Any) -> list[Finding]:
        """The findings of one unit's verdicts (`result` as `run` gave it, or the cache)."""
        ...


def json_lines_per_unit(
    tool: str, files: dict[str, Path], flags: list[str], timeout: float
) -> dict[str, list[dict[str, Any]]]:
    """One run of a checker that prints a JSON line per object it checked, each naming the file
    it came from, over every unit's file (`files`: unit -> file; `flags` before the files):
    the lines of each unit, every unit present. kueuecheck and workloadcheck print so."""
    unit_of = {str(path): unit for unit, path in files.items()}
    out: dict[str, list[dict[str, Any]]] = {unit: [] for unit in files}
    if not files:
        return out
    proc = process.run(tool, [*flags, *(str(p) for p in files.values())], timeout=timeout)
    for line in proc.stdout.splitlines():
        if line.strip():
            item = json.loads(line)
            out[unit_of[item["file"]]].append(item)
    return out


def find_object(docs: list[Obj], item: dict[str, Any]) -> Obj:
    """The object a checker's JSON line is about (apiVersion, kind, namespace, name), among a
    unit's built objects; {} when none is."""
    want = (item["apiVersion"], item["kind"], item.get("namespace") or None, item["name"])
    for d in docs:
        meta = d.get("metadata") or {}
        if (d.get("apiVersion"), d.get("kind"), meta.get("namespace"), meta.get("name")) == want:
            return d
    return {}


def tool_salt(tool: str, *, stamped: bool = False) -> str:
    """What of a tool decides its verdicts: its version and, for a helper built from this
    repository's source (`stamped`: kbuild, kueuecheck, schedcheck), the content stamp `make
    tools` writes for it, since its own code decides how it reports upstream's verdicts."""
    salt = f"{tool}={gobuild.version(tool)}"
    if stamped:
        stamp = tool_registry.tools_dir() / "bin" / f".{tool}.sha256"
        salt += "\n" + (stamp.read_text(encoding="utf-8") if stamp.is_file() else "")
    return salt
