"""What a Go binary says about how it was built, and so the version of a pinned tool."""

from __future__ import annotations

import mmap
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from generator.toolchain.process import run
from generator.toolchain.registry import _require, _tool


@dataclass(frozen=True)
class GoBuildInfo:
    """What a Go binary records about how it was built (as ``go version -m`` shows)."""

    go_version: str
    path: str
    """Import path of the main package."""
    modules: Mapping[str, str]
    """Module path -> version, for the main module and every dependency."""


_BUILDINFO_MAGIC = b"\xff Go buildinf:"


def _uvarint(buf: bytes | mmap.mmap, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def go_build_info(binary: Path) -> GoBuildInfo | None:
    """Read the Go build info embedded in a binary (Go >= 1.18 format), or None if it has none."""
    try:
        with binary.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            start = buf.find(_BUILDINFO_MAGIC)
            while start != -1 and start % 16:
                start = buf.find(_BUILDINFO_MAGIC, start + 1)
            if start == -1 or not buf[start + 15] & 0x2:  # flag 2: strings inline
                return None
            pos = start + 32
            n, pos = _uvarint(buf, pos)
            go_version = buf[pos : pos + n].decode("utf-8", "replace")
            pos += n
            n, pos = _uvarint(buf, pos)
            modinfo = buf[pos : pos + n].decode("utf-8", "replace")
    except (OSError, ValueError, IndexError):
        return None
    if len(modinfo) >= 33 and modinfo[-17] == "\n":
        modinfo = modinfo[16:-16]  # strip the sentinels
    main_path = ""
    modules: dict[str, str] = {}
    for line in modinfo.splitlines():
        fields = line.split("\t")
        if fields[0] == "path" and len(fields) > 1:
            main_path = fields[1]
        elif fields[0] in ("mod", "dep") and len(fields) > 2:
            modules[fields[1]] = fields[2]
        elif fields[0] == "=>" and len(fields) > 2 and modules:
            modules[list(modules)[-1]] = fields[2]
    return GoBuildInfo(go_version=go_version, path=main_path, modules=modules)


_VERSION_RE = re.compile(r"v?\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.+~-]*)?")


def version(tool: str) -> str:
    """Version of the installed tool (e.g. ``v5.8.1``, ``2.42.0+ds``, ``go1.26.8``).

    Go-built tools report the version of their module recorded in the binary's build info, which
    is what the pin is about; other tools are asked with their version command.
    """
    spec = _tool(tool)
    path = _require(tool)
    if spec.go_module is not None:
        info = go_build_info(path)
        if info is not None and info.modules.get(spec.go_module, "(devel)") != "(devel)":
            return info.modules[spec.go_module]
    if tool == "go":
        out = run("go", ["env", "GOVERSION"], timeout=60).stdout.decode().strip()
        return out
    argv = {"kustomize": ["version"], "kubeconform": ["-v"], "openssl": ["version"]}.get(
        tool, ["--version"]
    )
    proc = run(tool, argv, timeout=60, check=False)
    text = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    match = _VERSION_RE.search(text)
    return match.group(0) if match else text.strip().splitlines()[0] if text.strip() else ""
