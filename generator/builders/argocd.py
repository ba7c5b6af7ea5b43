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
from dataclasses import dataclass, field
from typing import Any

from generator.builders import mirrors, node_config, operators, platform, scheduling
from generator.builders.common import metadata
from generator.values.model import FleetView
from generator.vocab import addons
from generator.vocab.api import ARGOCD
from generator.vocab.labels import (
    BOOTSTRAP_LABEL,
    CLUSTER_LABEL,
    ENVIRONMENT_LABEL,
    SYNC_WAVE,
    UNIT_LABEL,
)
from generator.vocab.objects import Obj, identity
from generator.vocab.units import ARGOCD_UNIT, TEAM_UNIT_WAVE, UNIT_WAVES, Component
from generator.workloads.model import Workloads

# The cluster Argo CD runs in, as Argo CD names it: the root Application and the Applications
# it manages live there whatever cluster the fleet deploys to.
IN_CLUSTER = "https://kubernetes.default.svc"
PROJECT_WAVE = -20
ROOT_WAVE = -10


def app_name(view: FleetView, unit: str) -> str:
    """`<fleet>-<env>-<unit>`, with the cluster after the environment for a cluster of an
    environment that declares clusters."""
    return f"{view.fleet.name}-{view.key.replace('/', '-')}-{unit}"


def unit_path(view: FleetView, unit: str) -> str:
    return posixpath.join(view.fleet.repo_path or "", "overlays", view.key, unit)


def _group_kind(obj: Obj) -> tuple[str, str]:
    api, kind, _, _ = identity(obj)
    group = api.rpartition("/")[0]
    return group, kind


def _labels(view: FleetView, **more: str) -> dict[str, str]:
    out = {ENVIRONMENT_LABEL: view.env}
    if view.cluster is not None:
        out[CLUSTER_LABEL] = view.cluster.name
    return {**out, **more}


@dataclass(frozen=True)
class Shape:
    """What the argocd units read of one unit of a cluster: its name, whether it has objects,
    the namespaces of its namespaced objects and the (group, kind) of its cluster-scoped ones,
    each sorted. Small and a function of the cluster's components alone, so that the layout can
    keep it by the view's digest (render/layoutmemo.py) and build the hub's unit without reading
    back the components of every cluster."""

    unit: str
    objects: bool
    namespaces: tuple[str, ...]
    cluster_kinds: tuple[tuple[str, str], ...]


def shapes(comps: list[Component]) -> list[Shape]:
    """Each unit's Shape, in the order the components first name the units."""
    units: dict[str, list[Obj]] = {}
    for comp in comps:
        units.setdefault(comp.unit, []).extend(comp.objects)
    return [
        Shape(
            unit,
            bool(objs),
            tuple(
                sorted({o["metadata"]["namespace"] for o in objs if o["metadata"].get("namespace")})
            ),
            tuple(sorted({_group_kind(o) for o in objs if not o["metadata"].get("namespace")})),
        )
        for unit, objs in units.items()
    ]


# Each cluster's workload model (its view, and what its add-ons' chart values read) and the
# shapes of its units.
Built = list[tuple[Workloads, list[Shape]]]


@dataclass
class ArgoUnits:
    """The argocd components of an environment: the hub's unit, and for an environment that
    declares clusters, each cluster's own argocd unit (by layer key) with that cluster's
    Applications, so that no unit grows with the number of clusters."""

    hub: list[Component]
    clusters: dict[str, list[Component]] = field(default_factory=dict)


def build(hub: FleetView, clusters: Built) -> ArgoUnits:
    """The argocd units of an environment (applied to the hub, the cluster Argo CD runs in),
    from the components of each of its clusters' units: an Application per unit of each
    cluster, pointed at that cluster, and the project and root Application over them all.

    An environment of one cluster has one argocd unit with everything. One of several clusters
    has, per cluster, an argocd unit of that cluster's Applications (`overlays/<env>/<cluster>/
    argocd`) and, on the hub, an Application per cluster that syncs it (an app of apps per
    cluster, under the root one)."""
    fleet = hub.fleet
    sources = list(fleet.doc.sources)
    split = any(wl.view.cluster is not None for wl, _ in clusters)
    apps: dict[str, list[Obj]] = {}
    units: list[tuple[FleetView, Shape]] = []
    for wl, found in clusters:
        view = wl.view
        for shape in found:
            home = shape.namespaces[0] if shape.namespaces else fleet.argocd_namespace
            wave = UNIT_WAVES.get(shape.unit, TEAM_UNIT_WAVE)
            apps.setdefault(view.key, []).append(
                _application(view, shape.unit, wave, home, sources)
            )
            units.append((view, shape))
    root = _application(hub, ARGOCD_UNIT, ROOT_WAVE, fleet.argocd_namespace, sources, root=True)
    per_cluster = [
        _application(wl.view, ARGOCD_UNIT, ROOT_WAVE, fleet.argocd_namespace, sources, root=True)
        for wl, _ in clusters
        if split
    ]
    every = [a for found in apps.values() for a in found]
    project = _project(hub, units, [*every, root, *per_cluster], sources)
    rendered = [(wl, a) for wl, _ in clusters for a in platform.rendered(wl.view)]
    if not split:
        out = [
            Component(
                ARGOCD_UNIT,
                f"{ARGOCD_UNIT}/applications",
                [project, *every, root],
                fleet.doc.anchor(("git",)),
            )
        ]
        if rendered:
            out.append(_addons(hub, rendered, with_project=True))
        return ArgoUnits(out)
    out = [
        Component(
            ARGOCD_UNIT,
            f"{ARGOCD_UNIT}/applications",
            [project, root, *per_cluster],
            fleet.doc.anchor(("git",)),
        )
    ]
    if rendered:
        out.append(_addons(hub, rendered, with_project=True, with_apps=False))
    own: dict[str, list[Component]] = {}
    for wl, _ in clusters:
        view = wl.view
        own[view.key] = [
            Component(
                ARGOCD_UNIT,
                f"{ARGOCD_UNIT}/applications",
                apps.get(view.key, []),
                fleet.doc.anchor(("git",)),
            )
        ]
        mine = [(w, a) for w, a in rendered if w is wl]
        if mine:
            own[view.key].append(_addons(hub, mine, with_project=False))
    return ArgoUnits(out, own)


# What each add-on the fleet can render gives its chart, generated from the fleet (every add-on
# with a chart has an entry: a test holds it).
CHART_VALUES = {
    "volcano": scheduling.volcano_chart_values,
    "kueue": scheduling.kueue_chart_values,
    "nfd": node_config.nfd_chart_values,
    "jobset": scheduling.jobset_chart_values,
    "lws": scheduling.lws_chart_values,
    "trainer": scheduling.trainer_chart_values,
    "gpuOperator": operators.gpu_operator_chart_values,
    "nvidiaDraDriver": operators.dra_driver_chart_values,
}


def addons_project(view: FleetView) -> str:
    return f"{view.fleet.argocd_project}-platform"


def _destination(dest: dict[str, str], namespace: str) -> dict[str, str]:
    return {**dest, "namespace": namespace}


def _sorted_destinations(found: set[tuple[tuple[str, str], str]]) -> list[dict[str, str]]:
    return [_destination(dict([dest]), ns) for dest, ns in sorted(found)]


def _addons(
    hub: FleetView,
    rendered: list[tuple[Workloads, addons.Addon]],
    *,
    with_project: bool,
    with_apps: bool = True,
) -> Component:
    """The add-on Applications (each cluster's own) and their AppProject. An add-on installs
    CRDs, webhooks and cluster roles that this builder cannot list without rendering its chart,
    so its project allows every cluster-scoped kind, but only from the pinned charts'
    repositories and only into the add-ons' namespaces; the fleet's own project stays exactly as
    narrow as its units. The project lives on the hub; with clusters, each cluster's argocd unit
    holds its own add-ons' Applications."""
    fleet = hub.fleet
    project = addons_project(hub)
    comp = Component(ARGOCD_UNIT, f"{ARGOCD_UNIT}/platform", origin=fleet.doc.anchor(("platform",)))
    charts = [(wl.view, a.chart) for wl, a in rendered if a.chart is not None]
    for wl, addon in rendered if with_apps else []:
        view = wl.view
        assert addon.chart is not None  # platform.rendered() only yields add-ons with a chart
        values = mirrors.chart_values(view, addon.chart, CHART_VALUES[addon.key](wl))
        comp.add(
            platform.application(
                view, addon, app_name(view, addon.name), project, values, _labels(view)
            ),
            fleet.doc.anchor(("platform", addon.key)),  # rendered only where it says fleet
        )
    if not with_project:
        return comp
    comp.objects.insert(
        0,
        {
            "apiVersion": ARGOCD,
            "kind": "AppProject",
            "metadata": metadata(
                project,
                namespace=fleet.argocd_namespace,
                sources=fleet.doc.sources,
                labels={ENVIRONMENT_LABEL: hub.env, BOOTSTRAP_LABEL: "true"},
                annotations={SYNC_WAVE: str(PROJECT_WAVE)},
            ),
            "spec": {
                "description": f"cluster add-ons of accel-gitops fleet {fleet.name}, "
                f"environment {hub.env}",
                "sourceRepos": sorted(
                    {mirrors.chart_repo(view.fleet.mirrors, c) for view, c in charts}
                ),
                "destinations": _sorted_destinations(
                    {(_one(view.fleet.destination), c.namespace) for view, c in charts}
                ),
                "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
            },
        },
    )
    return comp


def _one(dest: dict[str, str]) -> tuple[str, str]:
    [(key, value)] = dest.items()
    return key, value


def _project(
    hub: FleetView, units: list[tuple[FleetView, Shape]], apps: list[Obj], sources: list[str]
) -> Obj:
    fleet = hub.fleet
    cluster_kinds = sorted({k for _, shape in units for k in shape.cluster_kinds})
    destinations = {
        (
            _one({k: v for k, v in a["spec"]["destination"].items() if k != "namespace"}),
            a["spec"]["destination"]["namespace"],
        )
        for a in apps
    }
    destinations |= {
        (_one(view.fleet.destination), ns) for view, shape in units for ns in shape.namespaces
    }
    # A disabled team's namespaces, on every cluster the environment deploys to: its
    # Application's cascade deletes only what the project still permits.
    destinations |= {
        (_one(view.fleet.destination), ns)
        for view, shape in units
        if shape.objects
        for ns in hub.retired
    }
    return {
        "apiVersion": ARGOCD,
        "kind": "AppProject",
        "metadata": metadata(
            fleet.argocd_project,
            namespace=fleet.argocd_namespace,
            sources=sources,
            labels={ENVIRONMENT_LABEL: hub.env, BOOTSTRAP_LABEL: "true"},
            annotations={SYNC_WAVE: str(PROJECT_WAVE)},
        ),
        "spec": {
            "description": f"accel-gitops fleet {fleet.name}, environment {hub.env}",
            "sourceRepos": [fleet.repo_url],
            "destinations": _sorted_destinations(destinations),
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
    # The environment's root (not a cluster's, which the root creates) is applied by hand once.
    first = {BOOTSTRAP_LABEL: "true"} if root and view.cluster is None else {}
    meta = metadata(
        app_name(view, "root" if root else unit),
        namespace=fleet.argocd_namespace,
        sources=sources,
        labels=_labels(view, **{UNIT_LABEL: unit}, **first),
        annotations={SYNC_WAVE: str(wave)},
    )
    if not root:
        # Deleting an Application deletes what it deployed (the root app never cascades), except
        # what opts out: team Namespaces (builders/teams.py).
        meta["finalizers"] = ["resources-finalizer.argocd.argoproj.io"]
    return {
        "apiVersion": ARGOCD,
        "kind": "Application",
        "metadata": meta,
        "spec": {
            "project": fleet.argocd_project,
            "source": {
                "repoURL": fleet.repo_url,
                "targetRevision": fleet.target_revision,
                "path": unit_path(view, unit),
            },
            # The root app manages Applications, which live where Argo CD runs (the hub): never
            # moved by a destination. Each unit goes to its cluster, by server or by name. The
            # unit's objects name their namespaces; `namespace` is only where an object without
            # one would go.
            "destination": _destination(
                {"server": IN_CLUSTER} if root else fleet.destination, namespace
            ),
            "syncPolicy": sync,
        },
    }
