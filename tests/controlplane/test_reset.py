"""A reset on the real control plane: what goes, what stays, and that nothing of a deleted
namespace comes back when a namespace of that name is created again (the reset empties the
namespaces itself and finalizes them, rather than wait for the namespace controller's rounds)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from generator.cluster import plane as fleet_plane
from generator.controlplane import launcher
from generator.controlplane.launcher import ControlPlane, ResetRules

pytestmark = pytest.mark.xdist_group("control-plane")

PROBE = "reset-probe"
KEPT = "reset-kept"


@pytest.fixture
def plane(control_plane: ControlPlane) -> Iterator[ControlPlane]:
    yield control_plane
    fleet_plane.reset(control_plane)  # the fleet's rules: KEPT goes too


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def config_map(ns: str, name: str, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, **meta},
        "data": {"k": "v"},
    }


def names(plane: ControlPlane, kind: str, ns: str) -> set[str]:
    return {o["metadata"]["name"] for o in plane.client().list("v1", kind, ns)}


def test_a_reset_leaves_nothing_of_a_deleted_namespace_to_come_back(plane: ControlPlane) -> None:
    api = plane.client()
    for ns in (PROBE, KEPT):
        api.apply(namespace(ns))
        api.apply(config_map(ns, "left"))
    # A finalizer no controller here removes: the namespace controller would wait for it.
    api.apply(config_map(PROBE, "held", finalizers=["example.com/hold"]))
    api.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "token", "namespace": PROBE},
            "stringData": {"t": "x"},
        }
    )

    launcher.reset(plane, ResetRules(keep_namespaces=frozenset({KEPT})))

    spaces = {o["metadata"]["name"] for o in api.list("v1", "Namespace")}
    assert PROBE not in spaces
    assert KEPT in spaces
    assert "left" in names(plane, "ConfigMap", KEPT)
    api.apply(namespace(PROBE))
    assert {"left", "held"}.isdisjoint(names(plane, "ConfigMap", PROBE))
    assert "token" not in names(plane, "Secret", PROBE)
