"""The single wrapper around the external tools this project runs.

Every subprocess call to kustomize, kubeconform, promtool, the NFD tools, go or git goes through
:func:`process.run`, which finds the pinned binary, applies a timeout, and turns every failure
into a :class:`ToolError` (long-running tools, the local control plane's components, go through
:func:`process.spawn` and :func:`process.terminate` instead). This package's modules are
imported themselves (`from generator.toolchain import process`): the package re-exports
nothing, so none of them imports a package that imports it back.

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
