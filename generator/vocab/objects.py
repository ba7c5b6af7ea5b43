"""A Kubernetes object as the fleet handles it: plain data, named by its identity."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Obj = dict[str, Any]  # one object (or any mapping read from YAML)


def identity(obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """(apiVersion, kind, namespace or "", name): what tells two objects of a render apart."""
    meta = obj["metadata"]
    return (obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])
