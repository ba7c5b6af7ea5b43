"""Upstream files the control plane needs at run time, read from the Go module cache
(generator/toolchain/modules.py): the modules are the ones the tools are built from
(gotools/kwok/go.mod, gotools/nfd/go.mod)."""

from __future__ import annotations

from pathlib import Path

from generator.toolchain.modules import module_dir
from generator.toolchain.registry import KWOK_MODULE, NFD_MODULE

# KWOK's Stage objects (kwok refuses to start without any: they are not compiled into the kwok
# binary, only into kwokctl). The "fast" node and pod stages, and node heartbeats so that
# node-lifecycle-controller keeps the nodes Ready. Not pod-complete: simulated job pods stay
# Running, as training jobs do for hours, so the steady state keeps their devices in use.
# source: sigs.k8s.io/kwok v0.8.0, kustomize/stage/{node/fast,node/heartbeat,pod/fast}
KWOK_STAGES = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat/node-heartbeat.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-delete.yaml",
)
# source: sigs.k8s.io/node-feature-discovery v0.19.0, deployment/base/nfd-crds/nfd-api-crds.yaml
NFD_CRDS = "deployment/base/nfd-crds/nfd-api-crds.yaml"


def kwok_stages() -> str:
    root = module_dir("kwok", KWOK_MODULE)
    return "".join("---\n" + (root / rel).read_text(encoding="utf-8") for rel in KWOK_STAGES)


def nfd_crd_file() -> Path:
    return module_dir("nfd", NFD_MODULE) / NFD_CRDS
