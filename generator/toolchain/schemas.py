"""The offline JSON Schemas kubeconform validates against (laid out by `tools install`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from generator.toolchain.errors import Install, ToolMissing
from generator.toolchain.registry import tools_dir


def _schemas_dir() -> Path:
    return tools_dir() / "schemas"


def k8s_schema_versions() -> list[str]:
    """Kubernetes versions (``1.37.0``) whose built-in schemas are laid out, oldest first."""
    base = _schemas_dir() / "k8s"
    if not base.is_dir():
        return []
    found = [
        p.name.removeprefix("v").removesuffix("-local-strict")
        for p in base.iterdir()
        if p.is_dir() and p.name.endswith("-local-strict")
    ]
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".")))


def k8s_versions_serving(api_version: str, kind: str) -> list[str]:
    """The Kubernetes versions (``1.34.0``) whose laid-out built-in schemas have `kind` at
    `api_version`, oldest first: the minors whose API server serves it (kubernetes-validate's
    sets are generated from each release's OpenAPI). The file is named as kubeconform names it
    (github.com/yannh/kubeconform v0.7.0 pkg/registry/registry.go: the kind, the group's first
    label, the version), and its x-kubernetes-group-version-kind must name the same group, so a
    CRD's kind of the same spelling in another group is not taken for it."""
    group, _, version = api_version.rpartition("/")
    suffix = f"-{(group or version).split('.')[0].lower()}" + (
        f"-{version.lower()}" if group else ""
    )
    base = _schemas_dir() / "k8s"
    out = []
    for v in k8s_schema_versions():
        path = base / f"v{v}-local-strict" / f"{kind.lower()}{suffix}.json"
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        named = doc.get("x-kubernetes-group-version-kind") or []
        if {"group": group, "version": version, "kind": kind} in named:
            out.append(v)
    return out


def k8s_schema_location() -> str:
    """kubeconform ``-schema-location`` template for the built-in Kubernetes kinds.

    Pass ``-kubernetes-version X.Y.0`` (see :func:`kubeconform_kubernetes_version`) with it.
    """
    base = _schemas_dir() / "k8s"
    if not k8s_schema_versions():
        raise ToolMissing("Kubernetes JSON schemas", Install(), [str(base)])
    return (
        f"{base}/{{{{.NormalizedKubernetesVersion}}}}-local{{{{.StrictSuffix}}}}"
        "/{{.ResourceKind}}{{.KindSuffix}}.json"
    )


def crd_schema_location() -> str:
    """kubeconform ``-schema-location`` template for the pinned CRDs' schemas."""
    base = _schemas_dir() / "crds"
    if not (base / "index.json").is_file():
        raise ToolMissing("CRD JSON schemas", Install(), [str(base)])
    return f"{base}/{{{{.Group}}}}/{{{{.ResourceKind}}}}_{{{{.ResourceAPIVersion}}}}.json"


def crd_schema(api_version: str, kind: str) -> dict[str, Any] | None:
    """The laid-out schema kubeconform validates a CRD's `kind` at `api_version` against, None
    for a built-in kind or one not laid out. The file is where crd_schema_location's template
    leads kubeconform (github.com/yannh/kubeconform v0.7.0 pkg/registry/registry.go: Group the
    apiVersion's group, ResourceKind the kind in lower case, ResourceAPIVersion its version)."""
    group, _, version = api_version.rpartition("/")
    if not group:
        return None
    path = _schemas_dir() / "crds" / group / f"{kind.lower()}_{version}.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def schemas_salt() -> str:
    """What of the laid-out schemas decides kubeconform's verdicts, for the validate cache: the
    Kubernetes versions present and the CRD index (its sources and kinds). A verdict made while a
    CRD's schema was missing must not be served once it is laid out."""
    index = _schemas_dir() / "crds" / "index.json"
    crds = index.read_text(encoding="utf-8") if index.is_file() else ""
    return "schemas=" + ",".join(k8s_schema_versions()) + "\n" + crds


def kubeconform_schema_args() -> list[str]:
    """``-schema-location`` arguments for kubeconform: built-in kinds first, then CRDs."""
    return ["-schema-location", k8s_schema_location(), "-schema-location", crd_schema_location()]


def kubeconform_kubernetes_version(kubernetes_version: str) -> str:
    """Map a fleet's ``kubernetesVersion`` (``'1.33'`` or ``'1.33.2'``) to the schema set name that
    kubeconform's ``-kubernetes-version`` must get (``'1.33.0'``); schemas exist per minor only."""
    parts = kubernetes_version.removeprefix("v").split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        raise ValueError(f"not a Kubernetes version: {kubernetes_version!r}")
    return f"{int(parts[0])}.{int(parts[1])}.0"
