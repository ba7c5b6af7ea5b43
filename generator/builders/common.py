"""Shared pieces of every builder: metadata, provenance, namespaces and tolerations."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from generator.values.model import Taint
from generator.vocab.api import CORE
from generator.vocab.labels import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
    PSA_AUDIT,
    PSA_ENFORCE,
    PSA_WARN,
    SOURCE_ANNOTATION,
)
from generator.vocab.objects import Obj


def metadata(
    name: str,
    *,
    sources: Iterable[str],
    namespace: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> Obj:
    meta: Obj = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = {MANAGED_BY_LABEL: MANAGED_BY, **(labels or {})}
    notes = {SOURCE_ANNOTATION: ", ".join(sources)}
    notes.update(annotations or {})
    meta["annotations"] = notes
    return meta


def namespace(
    name: str,
    *,
    sources: Iterable[str],
    pod_security: str,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    reports: str = "",
) -> Obj:
    """A Namespace with Pod Security admission enforcing `pod_security`, auditing and warning at
    `reports` (default: restricted, privileged where it enforces privileged)."""
    report = reports or ("restricted" if pod_security != "privileged" else "privileged")
    psa = {PSA_ENFORCE: pod_security, PSA_AUDIT: report, PSA_WARN: report}
    return {
        "apiVersion": CORE,
        "kind": "Namespace",
        "metadata": metadata(
            name, sources=sources, labels={**psa, **(labels or {})}, annotations=annotations
        ),
    }


def same_but_source(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two objects differ at most in their provenance annotation.

    The environment's view of an object names every file merged into it, its environment file
    included, even where that file changed nothing in the object; layout uses this to keep such
    an object as the base has it, so only real changes become patches.
    """
    if a.keys() != b.keys() or any(a[k] != b[k] for k in a if k != "metadata"):
        return False
    meta_a, meta_b = a["metadata"], b["metadata"]
    if meta_a.keys() != meta_b.keys() or any(
        meta_a[k] != meta_b[k] for k in meta_a if k != "annotations"
    ):
        return False
    notes_a, notes_b = meta_a.get("annotations") or {}, meta_b.get("annotations") or {}
    return {k: v for k, v in notes_a.items() if k != SOURCE_ANNOTATION} == {
        k: v for k, v in notes_b.items() if k != SOURCE_ANNOTATION
    }


def toleration(taint: Taint) -> dict[str, str]:
    """The toleration that lets a pod onto nodes with `taint` (a Kueue flavor's, a workload's)."""
    if taint.value:
        return {"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect}
    return {"key": taint.key, "operator": "Exists", "effect": taint.effect}
