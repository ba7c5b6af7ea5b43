"""What a simulation did not exercise, said in its own findings (SIM011, warnings): a verdict of
"0 errors" must never cover behaviour that did not run.

Read from what the environment deploys (the built units), not from the backend: each add-on
whose objects are applied but whose controllers do not run here, and the packing profile, which
the simulation gives to this control plane's own scheduler.
"""

from __future__ import annotations

from generator.builders import platform
from generator.builders.platform import FLEET, SITE
from generator.cluster.units import BuiltUnit
from generator.findings import Finding, Severity
from generator.values.model import FleetView

# What does not run here, per add-on, and what the simulation does in its place. Volcano only:
# its objects are the ones whose meaning a controller decides and which does not run here
# (nfd-master and Kueue's controller manager run; the Gateway API and Istio objects route
# traffic, which a simulation has none of).
NOT_RUN = {
    "volcano": (
        "Volcano's scheduler, controllers and admission do not run here: the task pods of {what} "
        "were made by the simulation as Volcano's job controller makes them and placed by "
        "kube-scheduler, all or none as Volcano's gang plugin decides; Volcano's queues, "
        "capability, reclaim and binpack were not exercised"
    ),
    "lws": (
        "LeaderWorkerSet's controller does not run here: {what} were applied (the API server "
        "took them, with the pinned CRD), but no group and no pod of theirs was made, "
        "scheduled or admitted, and their tracks' ready pods were not compared with the plan"
    ),
    "jobset": (
        "JobSet's controller does not run here: {what} were applied (the API server took them, "
        "with the pinned CRD; Kueue, where it runs, decided their admission), but no child Job "
        "and no pod of theirs was made or scheduled, and their success and failure policies "
        "were not exercised"
    ),
}
# The kinds whose objects each add-on's controllers act on (the rest are configuration).
ACTED_ON = {"volcano": ("Job",), "jobset": ("JobSet",), "lws": ("LeaderWorkerSet",)}
HINT = "check what was not simulated on a cluster that runs it (docs/simulation.md)"


def _named(objs: list[tuple[str, str]]) -> str:
    shown = [f"{kind} {name}" for kind, name in objs[:4]]
    more = f" and {len(objs) - 4} more" if len(objs) > 4 else ""
    return ", ".join(shown) + more


KUEUE_RAN = {
    FLEET: (
        "Kueue's controller manager (sigs.k8s.io/kueue v0.17.0) ran with the configuration, "
        "CRDs, webhooks and certificate rotation of the fleet's Kueue chart, as a process with "
        "the control plane's admin credentials reached through an EndpointSlice the simulation "
        "wrote: the chart's Deployment and RBAC, and Kueue's visibility API (off), were not "
        "exercised"
    ),
    SITE: (
        "Kueue is the site's (platform.kueue is not provided by the fleet): the simulation ran "
        "Kueue v0.17.0 with its chart's default configuration (integrations: {integrations}); "
        "the site's own version and configuration were not simulated"
    ),
}


def not_simulated(
    view: FleetView,
    built: list[BuiltUnit],
    packing: bool,
    site_nfd: bool = False,
    kueue: str | None = None,
    integrations: tuple[str, ...] = (),
) -> list[Finding]:
    """A warning per add-on whose objects this environment applies but which does not run here;
    one when the packing profile is the control plane's to run (`packing`): the fleet renders no
    scheduler for it; one when nfd-master is the site's (`site_nfd`): its flags are assumed; and
    one when Kueue runs (`kueue`: fleet or site), naming what of it did not."""
    uses: dict[str, list[tuple[str, str]]] = {}
    for unit in built:
        for obj in unit.docs:
            addon = platform.addon_of(obj)
            if addon is None or addon.key not in NOT_RUN:
                continue
            if obj.get("kind") in ACTED_ON[addon.key]:
                meta = obj.get("metadata") or {}
                name = (
                    f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
                )
                kind = str(obj["kind"])
                title = kind if kind == addon.title else f"{addon.title} {kind}"
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
    if kueue is not None:
        out.append(
            Finding(
                "SIM011",
                KUEUE_RAN[kueue].format(integrations=", ".join(integrations) or "none"),
                view.fleet.doc.anchor(("platform", "kueue"), ("scheduling", "backend")),
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
