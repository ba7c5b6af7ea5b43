"""The cluster add-ons of an environment (docs/platform.md): whether the fleet renders each one of
the catalogue (vocab/addons.py) or the site provides it, and the Argo CD Applications of the
add-ons the fleet renders.

An add-on is *available* in an environment when values say so:
`platform.<key>.provided: fleet` (the fleet renders it as an Argo CD Application of the upstream
chart at a pinned version) or `site` (the cluster already runs it; `preflight` is where a live
cluster is checked), or when a fleet setting names it (`scheduling.backend: volcano`,
`nodeConfig.method: nfd`): choosing a backend declares that the cluster runs it. A team object that
needs an add-on that is not available is a finding (policy/platform.py): on a cluster without its
CRDs, Argo CD's dry-run fails the object's whole Application.
"""

from __future__ import annotations

from typing import Any

from generator.builders import mirrors
from generator.builders.common import metadata
from generator.values.model import FleetView
from generator.vocab import api
from generator.vocab.addons import ADDONS, FLEET, SITE, Addon
from generator.vocab.labels import ADDON_LABEL, CHART_SOURCE_ANNOTATION, PSA_ENFORCE, SYNC_WAVE
from generator.vocab.objects import Obj
from generator.vocab.units import ADDON_WAVE

# What the settings that declare an add-on are when values leave them out (values/loader.py's
# nodeConfig.method default, builders/scheduling.py's backend default): the default declares too.
SETTING_DEFAULTS: dict[tuple[str, ...], str] = {
    ("nodeConfig", "method"): "nfd",
    ("scheduling", "backend"): "quota",
}


def provided(view: FleetView, addon: Addon) -> str | None:
    """`fleet`, `site`, or None when values neither render nor declare the add-on."""
    explicit = view.fleet.doc.get("platform", addon.key, "provided")
    if explicit is not None:
        return str(explicit)
    if addon.implied_by is not None:
        path, value = addon.implied_by
        if view.fleet.doc.get(*path, default=SETTING_DEFAULTS.get(path)) == value:
            return SITE
    return None


def rendered(view: FleetView) -> list[Addon]:
    """The add-ons the fleet renders in this environment, in catalog order: one installed for
    a vendor's pools only where the view holds such a vendor."""
    return [
        a
        for a in ADDONS
        if a.chart is not None
        and provided(view, a) == FLEET
        and (not a.for_pools or a.key in _pool_addons(view))
    ]


def _pool_addons(view: FleetView) -> set[str]:
    """The add-ons the view's vendors name: their operator's, their DRA driver's."""
    out = {v.operator.addon for v in view.vendors if v.operator is not None}
    return out | {v.dra.addon for v in view.vendors if v.dra is not None and v.dra.addon}


def application(
    view: FleetView,
    addon: Addon,
    name: str,
    project: str,
    values: dict[str, Any],
    labels: dict[str, str],
) -> Obj:
    """The Argo CD Application that installs `addon`'s upstream chart at its pinned version, with
    `values` generated from the fleet (what the chart must agree with), into the view's cluster.
    `labels`: the environment's and cluster's, as every Application of the unit carries."""
    chart = addon.chart
    assert chart is not None  # rendered() only yields add-ons with a chart
    fleet = view.fleet
    helm: dict[str, Any] = {"releaseName": chart.release}
    if values:
        helm["valuesObject"] = values
    sync: dict[str, Any] = {
        # CreateNamespace: the chart installs into its own namespace, which it does not create
        # (argo-cd docs/user-guide/sync-options.md v3.5.7, "Create Namespace").
        # ServerSideApply: CRDs are larger than the client-side last-applied annotation allows.
        "syncOptions": ["CreateNamespace=true", "ServerSideApply=true"],
        "retry": {"limit": 5, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "5m"}},
    }
    if addon.pod_security:
        # The namespace CreateNamespace makes has no Pod Security labels: on a cluster whose
        # default level is baseline, a chart with host access (Addon.pod_security) would have its
        # pods refused. managedNamespaceMetadata labels the namespace Argo CD creates, with
        # CreateNamespace=true only (argo-cd docs/user-guide/sync-options.md v3.5.1, "Create
        # Namespace", "Namespace Metadata"; the same text on branch release-3.5 at 961ee40).
        sync["managedNamespaceMetadata"] = {"labels": {PSA_ENFORCE: addon.pod_security}}
    if fleet.automated_sync:
        sync["automated"] = {"prune": True, "selfHeal": True}
    spec_extra: dict[str, Any] = {}
    if chart.filled_secrets:
        # The controller fills these Secrets (Chart.filled_secrets): Argo CD leaves their data
        # out of its diff, and RespectIgnoreDifferences makes a sync apply the live data back
        # rather than the chart's empty one (argo-cd v3.2.6 controller/sync.go,
        # normalizeTargetResources). A Secret not there yet is created as the chart has it.
        spec_extra["ignoreDifferences"] = [
            {
                "kind": "Secret",
                "name": secret,
                "namespace": chart.namespace,
                "jsonPointers": ["/data"],
            }
            for secret in chart.filled_secrets
        ]
        sync["syncOptions"].append("RespectIgnoreDifferences=true")
    meta = metadata(
        name,
        namespace=fleet.argocd_namespace,
        sources=fleet.doc.sources,
        labels={**labels, ADDON_LABEL: addon.key},
        annotations={SYNC_WAVE: str(ADDON_WAVE), CHART_SOURCE_ANNOTATION: chart.source},
    )
    # No resources finalizer, unlike the units' Applications: dropping an add-on from values
    # (the root app prunes its Application) must never delete its CRDs, and with them every
    # object of their kinds in the cluster; without the finalizer Argo CD leaves the resources in
    # place (argo-cd docs/user-guide/app_deletion.md v3.5.7, "About The Deletion Finalizer").
    # `argocd app delete` by hand cascades unless told --cascade=false (same page).
    return {
        "apiVersion": api.ARGOCD,
        "kind": "Application",
        "metadata": meta,
        "spec": {
            "project": project,
            "source": {
                "repoURL": mirrors.chart_repo(fleet.mirrors, chart),
                "chart": chart.name,
                "targetRevision": chart.version,
                "helm": helm,
            },
            "destination": {**fleet.destination, "namespace": chart.namespace},
            "syncPolicy": sync,
            **spec_extra,
        },
    }
