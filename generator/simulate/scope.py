"""What a simulation did not exercise, said in its own findings (SIM011, warnings): a verdict of
"0 errors" must never cover behaviour that did not run.

Read from what the environment deploys (the built units), not from the backend: each add-on
whose objects are applied but whose controllers do not run here; each add-on controller manager
that ran, and what of it did not; and the packing profile, which the simulation gives to this
control plane's own scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping

from generator.builders import platform
from generator.cluster.units import BuiltUnit
from generator.findings import Finding, Severity
from generator.values.allocation.dra import DRA
from generator.values.model import FleetView
from generator.vocab import addons
from generator.vocab.addons import FLEET, SITE
from generator.workloads.model import Service, Workloads

# What does not run here, per add-on, and what the simulation does in its place. Volcano only:
# its objects are the ones whose meaning a controller decides and which does not run here
# (nfd-master and the controller managers of Kueue, JobSet and LeaderWorkerSet run; the Gateway
# API and Istio objects route traffic, which a simulation has none of).
NOT_RUN = {
    "volcano": (
        "Volcano's scheduler, controllers and admission do not run here: the task pods of {what} "
        "were made by the simulation as Volcano's job controller makes them and placed by "
        "kube-scheduler, all or none as Volcano's gang plugin decides; Volcano's queues, "
        "capability, reclaim and binpack were not exercised"
    ),
}
# The kinds whose objects each add-on's controllers act on (the rest are configuration).
ACTED_ON = {"volcano": ("Job",)}
HINT = "check what was not simulated on a cluster that runs it (docs/simulation.md)"


def _installer(view: FleetView, key: str) -> str:
    """Who installs a DRA driver, as values say (`platform.<key>`)."""
    addon = addons.BY_KEY.get(key)
    if addon is not None and platform.provided(view, addon) == FLEET:
        return f"the fleet (platform.{key})"
    return "the site"


def _named(objs: list[tuple[str, str]]) -> str:
    shown = [f"{kind} {name}" for kind, name in objs[:4]]
    more = f" and {len(objs) - 4} more" if len(objs) > 4 else ""
    return ", ".join(shown) + more


# The controller managers that ran (controlplane/controllers.py), per add-on, as the fleet's chart
# deploys them or, for the site's, with their chart's defaults, and what of each did not run.
_AS_PROCESS = (
    "ran with the configuration, CRDs, webhooks and certificate rotation of the fleet's {title} "
    "chart, as a process with the control plane's admin credentials reached through an "
    "EndpointSlice the simulation wrote: the chart's Deployment and RBAC"
)
_ASSUMED = (
    "{title} is the site's (platform.{key} is not provided by the fleet): the simulation ran "
    "{module} with its chart's default configuration"
)
_SITE_TAIL = "; the site's own version and configuration were not simulated"
# No pod runs a container here (KWOK marks scheduled pods Running and never ends them).
_JOBSET_NOT = (
    "; its child Jobs and their pods were made and scheduled, but none ran to an end here, so "
    "the JobSets' success and failure policies were not exercised"
)
_LWS_NOT = (
    "; its groups' pods were made and scheduled, but none failed or was updated here, so "
    "group restarts and rolling updates were not exercised"
)
_TRAINER_NOT = (
    "; it made each TrainJob's JobSet from its ClusterTrainingRuntime, whose pods were made and "
    "scheduled, but no training process ran here, so the TrainJobs' progress, completion and "
    "the status server were not exercised"
)
RAN: dict[str, dict[str, str]] = {
    "kueue": {
        FLEET: "Kueue's controller manager ({module}) "
        + _AS_PROCESS
        + ", and Kueue's visibility API (off), were not exercised",
        SITE: _ASSUMED.replace("{module}", "Kueue v0.17.0")
        + " (integrations: {integrations})"
        + _SITE_TAIL,
    },
    "jobset": {
        FLEET: "JobSet's controller manager ({module}) "
        + _AS_PROCESS
        + " were not exercised"
        + _JOBSET_NOT,
        SITE: _ASSUMED + _SITE_TAIL + _JOBSET_NOT,
    },
    "lws": {
        FLEET: "LeaderWorkerSet's controller manager ({module}) "
        + _AS_PROCESS
        + " were not exercised"
        + _LWS_NOT,
        SITE: _ASSUMED + _SITE_TAIL + _LWS_NOT,
    },
    "trainer": {
        FLEET: "Kubeflow Trainer's controller manager ({module}) "
        + _AS_PROCESS
        + " were not exercised"
        + _TRAINER_NOT,
        SITE: _ASSUMED
        + " and the ClusterTrainingRuntimes its TrainJobs name as that chart defines them "
        "(preflight checks that the site has them, PRE008)"
        + _SITE_TAIL
        + ", nor its runtimes' own content"
        + _TRAINER_NOT,
    },
}


def not_simulated(
    view: FleetView,
    built: list[BuiltUnit],
    packing: bool,
    site_nfd: bool = False,
    controllers: Mapping[str, str] | None = None,
    integrations: tuple[str, ...] = (),
) -> list[Finding]:
    """A warning per add-on whose objects this environment applies but which does not run here;
    one when the packing profile is the control plane's to run (`packing`): the fleet renders no
    scheduler for it; one when nfd-master is the site's (`site_nfd`): its flags are assumed; and
    one per add-on controller manager that ran (`controllers`: add-on key -> fleet or site),
    naming what of it did not (`integrations`: the frameworks Kueue manages); and one per vendor
    that shares its devices, whose plugin's sharing is stood in for by its nodes' capacity."""
    uses: dict[str, list[tuple[str, str]]] = {}
    for unit in built:
        for obj in unit.docs:
            addon = addons.addon_of(obj)
            if addon is None or addon.key not in NOT_RUN:
                continue
            if obj.get("kind") in ACTED_ON[addon.key]:
                # Volcano's Jobs: namespaced, and named "Volcano Job" apart from batch Jobs.
                meta = obj["metadata"]
                name = f"{meta['namespace']}/{meta['name']}"
                title = f"{addon.title} {obj['kind']}"
                uses.setdefault(addon.key, []).append((title, name))
    out = []
    for key, objs in sorted(uses.items()):
        out.append(
            Finding(
                "SIM011",
                NOT_RUN[key].format(what=_named(sorted(objs))),
                view.fleet.doc.anchor(("platform", key), ("scheduling", "backend")),
                hint=HINT,
                severity=Severity.WARNING,
            )
        )
    if packing:
        out.append(
            Finding(
                "SIM011",
                "the packing profile (scheduling.kubeScheduler, runs: control-plane) is for the "
                "control plane's own kube-scheduler, which the fleet does not render: the "
                "simulation ran it, but that the cluster's scheduler is started with it is not "
                "simulated (docs/scheduling.md)",
                view.fleet.doc.anchor(("scheduling", "kubeScheduler")),
                hint=HINT,
                severity=Severity.WARNING,
            )
        )
    for key, by in sorted((controllers or {}).items()):
        addon = addons.BY_KEY[key]
        text = RAN[key][by].format(
            title=addon.title,
            key=key,
            module=addon.source,
            integrations=", ".join(integrations) or "none",
        )
        out.append(
            Finding(
                "SIM011",
                text,
                view.fleet.doc.anchor(("platform", key), ("scheduling", "backend")),
                hint=HINT,
                severity=Severity.WARNING,
            )
        )
    for vendor in view.vendors:
        if vendor.dra is not None:
            out.append(
                Finding(
                    "SIM011",
                    DRA.simulated(vendor.id, vendor.dra, _installer(view, vendor.dra.addon)),
                    vendor.doc.anchor(("allocation",)),
                    hint=HINT,
                    severity=Severity.WARNING,
                )
            )
        if vendor.sharing is None:
            continue
        sharing = vendor.sharing
        out.append(
            Finding(
                "SIM011",
                sharing.mode.simulated(vendor.id, vendor.resource_name, sharing),
                vendor.doc.anchor(("sharing", sharing.mode.key)),
                hint=HINT,
                severity=Severity.WARNING,
            )
        )
    if site_nfd:
        out.append(
            Finding(
                "SIM011",
                "nfd-master is the site's (platform.nfd is not provided by the fleet): the "
                "simulation ran it with -enable-taints and an empty configuration, what "
                "docs/node-config.md asks of the site; the site's own flags were not simulated",
                view.fleet.doc.anchor(("platform", "nfd"), ("nodeConfig", "method")),
                hint=HINT,
                severity=Severity.WARNING,
            )
        )
    return out


def _tracks_by_cluster(svc: Service) -> str:
    return ", ".join(f"{t.vendor} in {t.cluster}" for t in svc.tracks)


# What routes a service across clusters on a site, by its crossCluster.routing, and what of it
# the simulation does instead (docs/multi-cluster.md, "Moving a service across clusters").
CROSS_NOT_RUN = {
    "gateway": (
        "no Multi-Cluster Services implementation and no Gateway controller run here: the "
        "tracks' ServiceExports{route} were applied and checked by the API server, but no "
        "ServiceImport was made and no request routed, so the weights are rendered and checked, "
        "not served"
    ),
    "external": (
        "the global load balancer that splits its traffic reads traffic/<env>.json, which "
        "nothing here reads: the weights are rendered, not routed"
    ),
}


def across_clusters(workloads: Workloads) -> list[Finding]:
    """A warning per service across clusters with something in this cluster: each cluster's
    tracks run on that cluster's own control plane, and what routes between the clusters does
    not run here."""
    out: list[Finding] = []
    for team in workloads.view.teams:
        for svc in workloads.of(team).services:
            cross = svc.cross
            if cross is None:
                continue
            route = f" and cluster {cross.ingress}'s HTTPRoute over their ServiceImports"
            text = CROSS_NOT_RUN[cross.routing].format(route=route if cross.ingress else "")
            out.append(
                Finding(
                    "SIM011",
                    f"service {svc.namespace}/{svc.name} runs across clusters "
                    f"({_tracks_by_cluster(svc)}; routing {cross.routing}): each cluster's "
                    f"tracks ran on a control plane of their own, in that cluster's simulation; "
                    + text,
                    team.doc.anchor((*svc.path, "crossCluster"), svc.path),
                    hint=HINT,
                    severity=Severity.WARNING,
                )
            )
    return out
