"""Argo CD: an Application per (environment, unit), ordered by sync waves, and a root Application
(app of apps) that manages them: bootstrap once with `kubectl apply -k overlays/<env>/argocd`.

Argo CD only waits for a wave of Applications to be healthy when the Application health check is
enabled (resource.customizations.health.argoproj.io_Application); docs/argocd.md says how.
"""

from __future__ import annotations

import posixpath
from typing import Any

from ..model import FleetView
from .common import SYNC_WAVE, TEAM_UNIT_WAVE, UNIT_WAVES, Component, Obj, metadata

UNIT = "argocd"


def app_name(view: FleetView, unit: str) -> str:
    return f"{view.fleet.name}-{view.env}-{unit}"


def unit_path(view: FleetView, unit: str) -> str:
    return posixpath.join(view.fleet.repo_path or "", "overlays", view.env, unit)


def build(view: FleetView, units: list[str]) -> list[Component]:
    fleet = view.fleet
    sources = list(fleet.doc.sources)
    apps = [
        _application(view, unit, UNIT_WAVES.get(unit, TEAM_UNIT_WAVE), sources) for unit in units
    ]
    apps.append(_application(view, UNIT, -10, sources, root=True))
    return [Component(UNIT, f"{UNIT}/applications", apps, origin=fleet.doc.anchor(("git",)))]


def _application(
    view: FleetView, unit: str, wave: int, sources: list[str], root: bool = False
) -> Obj:
    fleet = view.fleet
    sync: dict[str, Any] = {
        "syncOptions": ["ServerSideApply=true"],
        "retry": {"limit": 5, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "5m"}},
    }
    if fleet.automated_sync:
        sync["automated"] = {"prune": True, "selfHeal": True}
    meta = metadata(
        app_name(view, "root" if root else unit),
        namespace=fleet.argocd_namespace,
        sources=sources,
        labels={"accel-gitops.io/environment": view.env, "accel-gitops.io/unit": unit},
        annotations={SYNC_WAVE: str(wave)},
    )
    if not root:
        # Deleting an Application deletes what it deployed (the root app never cascades).
        meta["finalizers"] = ["resources-finalizer.argocd.argoproj.io"]
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": meta,
        "spec": {
            "project": fleet.argocd_project,
            "source": {
                "repoURL": fleet.repo_url,
                "targetRevision": fleet.target_revision,
                "path": unit_path(view, unit),
            },
            "destination": {
                "server": fleet.destination_server,
                **({"namespace": fleet.argocd_namespace} if root else {}),
            },
            "syncPolicy": sync,
        },
    }
