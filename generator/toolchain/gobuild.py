"""The version of a pinned tool: what its Go build info says (buildinfo.py), else its own words."""

from __future__ import annotations

import re

from generator.toolchain.buildinfo import go_build_info
from generator.toolchain.process import run
from generator.toolchain.registry import _require, _tool

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
