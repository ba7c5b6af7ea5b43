"""The single wrapper around the external tools this project runs.

Every subprocess call to kustomize, kubeconform, promtool, the NFD tools, go or git goes through
:func:`run`, which finds the pinned binary, applies a timeout, and turns every failure into a
:class:`ToolError` (long-running tools, the local control plane's components, go through
:func:`spawn` and :func:`terminate` instead):

* :class:`ToolMissing` -- the tool is not installed; the message names the install command;
* :class:`ToolFailed` -- it exited non-zero (carries argv, exit code, stdout and stderr);
* :class:`ToolTimeout` -- it ran longer than the timeout (and was killed).

Where tools are looked for: first ``<tools dir>/bin`` -- ``$ACCEL_GITOPS_TOOLS_DIR`` when set,
else ``.tools`` in a clone of this repository, else the user's cache (``~/.cache/accel-gitops``)
-- then ``PATH``: for go, git, openssl and make whatever version is there; for promtool and the
upstream binaries this package pins (kustomize, kubeconform, helm, the control plane, kwok,
nfd-master, kueue, actionlint) only a build whose Go build info reports the pinned module
version. This package's own helpers (kbuild, the checkers) come from the tools dir alone. All
are pinned in ``gotools/*/go.mod`` (data of this package) and built by ``accel-gitops tools
install`` (:mod:`generator.toolchain.install`; ``make tools`` runs it).

The same tools dir holds the JSON Schemas kubeconform validates against (``schemas/k8s`` and
``schemas/crds``, laid out by the same command from ``gotools/schemas.lock.yaml``); see
:func:`k8s_schema_location` and :func:`crd_schema_location`.

This module never prints and never exits the process.
"""

from __future__ import annotations

from generator.toolchain.buildinfo import GoBuildInfo, go_build_info
from generator.toolchain.doctor import ToolStatus, doctor
from generator.toolchain.errors import (
    Install,
    ToolError,
    ToolExited,
    ToolFailed,
    ToolMissing,
    ToolTimeout,
)
from generator.toolchain.gobuild import version
from generator.toolchain.install import build_missing
from generator.toolchain.install import install as install_tools
from generator.toolchain.install import resolve as install_steps
from generator.toolchain.process import Service, popen, run, spawn, terminate
from generator.toolchain.registry import (
    CONTROL_PLANE,
    CONTROL_PLANE_TARGET,
    DEV_TOOLS,
    ENV_TOOLS_DIR,
    GOTOOLS,
    TOOLS,
    Tool,
    crd_manifests_dir,
    find,
    in_clone,
    install_command,
    install_hint,
    missing,
    repo_root,
    require,
    tools_dir,
    tools_dir_origin,
    user_cache,
)
from generator.toolchain.schemas import (
    crd_schema_location,
    k8s_schema_location,
    k8s_schema_versions,
    kubeconform_kubernetes_version,
    kubeconform_schema_args,
)

__all__ = [
    "CONTROL_PLANE",
    "CONTROL_PLANE_TARGET",
    "DEV_TOOLS",
    "ENV_TOOLS_DIR",
    "GOTOOLS",
    "TOOLS",
    "GoBuildInfo",
    "Install",
    "Service",
    "Tool",
    "ToolError",
    "ToolExited",
    "ToolFailed",
    "ToolMissing",
    "ToolStatus",
    "ToolTimeout",
    "build_missing",
    "crd_manifests_dir",
    "crd_schema_location",
    "doctor",
    "find",
    "go_build_info",
    "in_clone",
    "install_command",
    "install_hint",
    "install_steps",
    "install_tools",
    "k8s_schema_location",
    "k8s_schema_versions",
    "kubeconform_kubernetes_version",
    "kubeconform_schema_args",
    "missing",
    "popen",
    "repo_root",
    "require",
    "run",
    "spawn",
    "terminate",
    "tools_dir",
    "tools_dir_origin",
    "user_cache",
    "version",
]
