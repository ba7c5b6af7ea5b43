"""Argo CD: the AppProject, an Application per (environment, unit), ordered by sync waves, and a
root Application (app of apps) that manages them: bootstrap once with
`kubectl apply -k overlays/<env>/argocd` (docs/argocd.md).

The AppProject allows exactly what the environment deploys: the fleet's repository, the
namespaces its objects use on the destination cluster (and the Argo CD namespace for the
Applications themselves), and the cluster-scoped kinds it emits. Argo CD denies every
cluster-scoped kind an AppProject does not list (argo-cd pkg/apis/application/v1alpha1/
app_project_types.go v3.5.7, IsGroupKindNamePermitted: an empty clusterResourceWhitelist permits
none) and allows every namespaced kind when namespaceResourceWhitelist is unset.

Argo CD only waits for a wave of Applications to be healthy when the Application health check is
enabled (resource.customizations.health.argoproj.io_Application); docs/argocd.md says how.
"""

from __future__ import annotations

import posixpath
from typing import Any

from generator.builders import node_config, platform, scheduling
from generator.builders.common import (
    SYNC_WAVE,
    TEAM_UNIT_WAVE,
    UNIT_WAVES,
    Component,
    identity,
    metadata,
)
from generator.values.model import FleetView
from generator.values.yamlio import Obj

UNIT = "argocd"
# The cluster Argo CD runs in, as Argo CD names it: the root Application and the Applications
# it manages live there whatever cluster the fleet deploys to.
IN_CLUSTER = "https://kubernetes.default.svc"
PROJECT_WAVE = -20
ROOT_WAVE = -10


def app_name(view: FleetView, unit: str) -> str:
    return f"{view.fleet.name}-{view.env}-{unit}"


def unit_path(view: FleetView, unit: str) -> str:
    return posixpath.join(view.fleet.repo_path or "", "overlays", view.env, unit)


def _group_kind(obj: Obj) -> tuple[str, str]:
    api, kind, _, _ = identity(obj)
    group = api.rpartition("/")[0]
    return group, kind


def build(view: FleetView, comps: list[Component]) -> list[Component]:
    """The argocd unit of an environment, from the components of its other units."""
    fleet = view.fleet
    sources = list(fleet.doc.sources)
    units: dict[str, list[Obj]] = {}
    for comp in comps:
        units.setdefault(comp.unit, []).extend(comp.objects)
    apps = []
    for unit, objs in units.items():
        spaces = sorted(
            {o["metadata"]["namespace"] for o in objs if o["metadata"].get("namespace")}
        )
        home = spaces[0] if spaces else fleet.argocd_namespace
        apps.append(_application(view, unit, UNIT_WAVES.get(unit, TEAM_UNIT_WAVE), home, sources))
    apps.append(_application(view, UNIT, ROOT_WAVE, fleet.argocd_namespace, sources, root=True))
    objs = [o for unit_objs in units.values() for o in unit_objs]
    project = _project(view, objs, apps, sources)
    out = [
        Component(UNIT, f"{UNIT}/applications", [project, *apps], origin=fleet.doc.anchor(("git",)))
    ]
    addons = platform.rendered(view)
    if addons:
        out.append(_addons(view, addons))
    return out


# What each add-on the fleet can render gives its chart, generated from the fleet (every add-on
# with a chart has an entry: a test holds it).
CHART_VALUES = {
    "volcano": scheduling.volcano_chart_values,
    "kueue": scheduling.kueue_chart_values,
    "nfd": node_config.nfd_chart_values,
    "jobset": scheduling.jobset_chart_values,
    "lws": scheduling.lws_chart_values,
    "trainer": scheduling.trainer_chart_values,
}


def addons_project(view: FleetView) -> str:
    return f"{view.fleet.argocd_project}-platform"


def _addons(view: FleetView, addons: list[platform.Addon]) -> Component:
    """The add-on Applications and their own AppProject. An add-on installs CRDs, webhooks and
    cluster roles that this builder cannot list without rendering its chart, so its project
    allows every cluster-scoped kind, but only from the pinned charts' repositories and only into
    the add-ons' namespaces; the fleet's own project stays exactly as narrow as its units."""
    fleet = view.fleet
    project = addons_project(view)
    comp = Component(UNIT, f"{UNIT}/platform", origin=fleet.doc.anchor(("platform",)))
    charts = [a.chart for a in addons if a.chart is not None]
    for addon in addons:
        values = CHART_VALUES[addon.key](view)
        comp.add(
            platform.application(view, addon, app_name(view, addon.key), project, values),
            fleet.doc.anchor(("platform", addon.key), ("scheduling", "backend")),
        )
    comp.objects.insert(
        0,
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "AppProject",
            "metadata": metadata(
                project,
                namespace=fleet.argocd_namespace,
                sources=fleet.doc.sources,
                labels={"accel-gitops.io/environment": view.env},
                annotations={SYNC_WAVE: str(PROJECT_WAVE)},
            ),
            "spec": {
                "description": f"cluster add-ons of accel-gitops fleet {fleet.name}, "
                f"environment {view.env}",
                "sourceRepos": sorted({c.repo_url for c in charts}),
                "destinations": [
                    {"server": fleet.destination_server, "namespace": ns}
                    for ns in sorted({c.namespace for c in charts})
                ],
                "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
            },
        },
    )
    return comp


def _project(view: FleetView, objs: list[Obj], apps: list[Obj], sources: list[str]) -> Obj:
    fleet = view.fleet
    cluster_kinds = sorted({_group_kind(o) for o in objs if not o["metadata"].get("namespace")})
    destinations = {
        (a["spec"]["destination"]["server"], a["spec"]["destination"]["namespace"]) for a in apps
    }
    destinations |= {
        (fleet.destination_server, o["metadata"]["namespace"])
        for o in objs
        if o["metadata"].get("namespace")
    }
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": metadata(
            fleet.argocd_project,
            namespace=fleet.argocd_namespace,
            sources=sources,
            labels={"accel-gitops.io/environment": view.env},
            annotations={SYNC_WAVE: str(PROJECT_WAVE)},
        ),
        "spec": {
            "description": f"accel-gitops fleet {fleet.name}, environment {view.env}",
            "sourceRepos": [fleet.repo_url],
            "destinations": [
                {"server": server, "namespace": ns} for server, ns in sorted(destinations)
            ],
            "clusterResourceWhitelist": [{"group": g, "kind": k} for g, k in cluster_kinds],
        },
    }


def _application(
    view: FleetView, unit: str, wave: int, namespace: str, sources: list[str], root: bool = False
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
        # Deleting an Application deletes what it deployed (the root app never cascades), except
        # what opts out: team Namespaces (builders/teams.py).
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
            # The root app manages Applications, which live where Argo CD runs: never moved by
            # destinationServer. The unit's objects name their namespaces; `namespace` is only
            # where an object without one would go.
            "destination": {
                "server": IN_CLUSTER if root else fleet.destination_server,
                "namespace": namespace,
            },
            "syncPolicy": sync,
        },
    }
