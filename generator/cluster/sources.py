"""Upstream files the control plane needs at run time, read from the Go module cache.

The modules are the ones the tools are built from (tools/kwok/go.mod, tools/nfd/go.mod); `go mod
download -json MODULE` inside the tool's module folder returns the cached copy of exactly the
pinned version (checked against that module's go.sum), so nothing here is copied into the
repository or fetched from anywhere but the Go module proxy, and only when the cache is empty.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from generator import toolchain

# KWOK's Stage objects (kwok refuses to start without any: they are not compiled into the kwok
# binary, only into kwokctl). The "fast" node and pod stages, and node heartbeats so that
# node-lifecycle-controller keeps the nodes Ready. Not pod-complete: simulated job pods stay
# Running, as training jobs do for hours, so the steady state keeps their devices in use.
# source: sigs.k8s.io/kwok v0.8.0, kustomize/stage/{node/fast,node/heartbeat,pod/fast}
KWOK_MODULE = "sigs.k8s.io/kwok"
KWOK_STAGES = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat/node-heartbeat.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-delete.yaml",
)
# source: sigs.k8s.io/node-feature-discovery v0.19.0, deployment/base/nfd-crds/nfd-api-crds.yaml
NFD_MODULE = "sigs.k8s.io/node-feature-discovery"
NFD_CRDS = "deployment/base/nfd-crds/nfd-api-crds.yaml"


@functools.cache
def module_dir(tool_module: str, module: str) -> Path:
    """The module cache folder of ``module`` at the version tools/<tool_module>/go.mod pins."""
    gomod = toolchain.repo_root() / "tools" / tool_module
    proc = toolchain.run("go", ["mod", "download", "-json", module], cwd=gomod, timeout=300)
    info = json.loads(proc.stdout)
    return Path(info["Dir"])


def kwok_stages() -> str:
    root = module_dir("kwok", KWOK_MODULE)
    return "".join("---\n" + (root / rel).read_text(encoding="utf-8") for rel in KWOK_STAGES)


def nfd_crd_file() -> Path:
    return module_dir("nfd", NFD_MODULE) / NFD_CRDS
