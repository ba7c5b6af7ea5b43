"""What a Go binary records about how it was built (Go >= 1.18 build info), read from the file:
the module versions a pinned tool must report, without running it."""

from __future__ import annotations

import mmap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


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


def _elf_section(buf: mmap.mmap, name: bytes) -> int | None:
    """The file offset of the section `name` of a 64-bit little-endian ELF file (every Go
    tool this repository builds on Linux), or None. Go's own reader starts its search for the
    build info at the `.go.buildinfo` section (go1.26.8 src/debug/buildinfo/buildinfo.go,
    elfExe.DataStart); searching the whole file from its start read all of a tool's code first
    (tens of MB per tool, about 0.2 s of every validate for its tools' versions). Section header
    fields as the ELF-64 object file format lays them out: sh_name at 0, sh_offset at 0x18;
    the header's e_shoff at 0x28, e_shentsize, e_shnum and e_shstrndx at 0x3A-0x3F."""
    if buf[:6] != b"\x7fELF\x02\x01":  # ELFCLASS64, ELFDATA2LSB
        return None

    def word(at: int, size: int) -> int:
        return int.from_bytes(buf[at : at + size], "little")

    shoff, shentsize, shnum, shstrndx = word(0x28, 8), word(0x3A, 2), word(0x3C, 2), word(0x3E, 2)
    if not shoff or shentsize < 0x28 or shstrndx >= shnum:
        return None
    names = word(shoff + shstrndx * shentsize + 0x18, 8)
    for i in range(shnum):
        header = shoff + i * shentsize
        at = names + word(header, 4)
        if buf[at : at + len(name) + 1] == name + b"\0":
            return word(header + 0x18, 8)
    return None


def go_build_info(binary: Path) -> GoBuildInfo | None:
    """Read the Go build info embedded in a binary (Go >= 1.18 format), or None if it has none."""
    try:
        with binary.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            begin = _elf_section(buf, b".go.buildinfo") or 0  # no such section: the whole file
            start = buf.find(_BUILDINFO_MAGIC, begin)
            if start == -1 and begin:
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
