"""The components the fleet relies on but does not run itself, modelled from their contracts
(docs/brownfield.md): a vendor's device plugin or exporter that its operator provides, and the
DRA driver the fleet installs from a chart that cannot run here.

Each becomes a stand-in DaemonSet with what decides where the component's pods land: its pod
labels, the nodes it selects, and the tolerations its chart values give it (the fleet's, or the
site's as values declare them, else the chart's default). The stand-ins are applied once the
fleet's taints are on the nodes, and the real DaemonSet controller and scheduler place their
pods; the judge compares the nodes each reached with the nodes that need it (SIM003). A site
install whose tolerations miss a fleet taint shows there, as it would after the component's next
restart on the cluster. What the components do (register devices, publish ResourceSlices, serve
metrics) is not run: the run says so (SIM011).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from generator.builders import operators, platform
from generator.builders.fleet import Build
from generator.findings import Finding, Location, Severity
from generator.values.model import Vendor
from generator.vocab import addons
from generator.vocab.addons import OPERATOR
from generator.vocab.api import APPS
from generator.vocab.labels import VENDOR_LABEL
from generator.vocab.objects import Obj

# A container that does nothing: no pod of a simulated node runs (KWOK marks it Running).
STAND_IN_IMAGE = "registry.k8s.io/pause:3.10"
HINT = "check what was not simulated on a cluster that runs it (docs/simulation.md)"
# NVIDIA's DRA driver chart's kubelet plugin: its DaemonSet's name and the component label its
# selector uses (NVIDIA/k8s-dra-driver-gpu v25.12.0 templates/kubeletplugin.yaml, _helpers.tpl).
DRA_KUBELET_PLUGIN = "nvidia-dra-driver-gpu-kubelet-plugin"
DRA_PLUGIN_LABELS = {"nvidia-dra-driver-gpu-component": "kubelet-plugin"}


@dataclass(frozen=True)
class SiteDaemon:
    """One stand-in: the component it models, the DaemonSet applied, the vendors whose nodes
    need its pods, and where values declare it."""

    what: str
    obj: Obj
    vendors: tuple[Vendor, ...]
    location: Location

    @property
    def key(self) -> str:
        meta = self.obj["metadata"]
        return f"{meta['namespace']}/{meta['name']}"


def _daemonset(
    name: str,
    namespace: str,
    labels: dict[str, str],
    pod: dict[str, Any],
    port: tuple[str, int] | None = None,
) -> Obj:
    container: dict[str, Any] = {"name": "stand-in", "image": STAND_IN_IMAGE}
    if port is not None:
        container["ports"] = (
            [{"name": port[0], "containerPort": port[1]}]
            if port[0]
            else [{"containerPort": port[1]}]
        )
    return {
        "apiVersion": APPS,
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "selector": {"matchLabels": dict(labels)},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {**pod, "containers": [container]},
            },
        },
    }


def _operator_daemons(build: Build) -> list[SiteDaemon]:
    """Each component a vendor hands to its operator, as the operator runs it on that vendor's
    nodes: the operand's pod labels, on the vendor's nodes, with the operands' tolerations."""
    view, workloads = build.view, build.workloads
    out = []
    for vendor in view.vendors:
        op = operators.running(view, vendor)
        if op is None:
            continue
        addon = addons.BY_KEY[op.addon]
        # Its operands run in its release's namespace: the chart's, unless the site chose
        # another (the stand-in's namespace decides nothing of where its pods land).
        assert addon.chart is not None  # every operator the catalog names has its chart
        namespace = addon.chart.namespace
        tolerations = operators.operand_tolerations(workloads, op)
        for component, part in sorted(op.parts.items()):
            if vendor.provider(component) != OPERATOR:
                continue
            labels = {**part.pod_labels, VENDOR_LABEL: vendor.id}
            pod = {
                "nodeSelector": view.fleet.node_selector(vendor.selector),
                "tolerations": tolerations,
            }
            port = (part.port_name, part.port) if part.port else None
            obj = _daemonset(f"{part.daemon_set}-{vendor.id}", namespace, labels, pod, port)
            out.append(
                SiteDaemon(
                    f"the {addon.title}'s {component} of vendor {vendor.id}",
                    obj,
                    (vendor,),
                    vendor.doc.locate((component, "provided")),
                )
            )
    return out


def _dra_daemons(build: Build) -> list[SiteDaemon]:
    """The kubelet plugin of each DRA driver the fleet installs, with the tolerations and node
    affinity its chart values give it: its pods must reach every node of its vendors."""
    view, workloads = build.view, build.workloads
    out = []
    for key in sorted({v.dra.addon for v in view.vendors if v.dra is not None and v.dra.addon}):
        addon = addons.BY_KEY.get(key)
        if addon is None or addon.chart is None or platform.provided(view, addon) != addons.FLEET:
            continue
        vendors = tuple(v for v in view.vendors if v.dra is not None and v.dra.addon == key)
        plugin = operators.dra_driver_chart_values(workloads)["kubeletPlugin"]
        pod: dict[str, Any] = {"tolerations": plugin["tolerations"]}
        if "affinity" in plugin:
            pod["affinity"] = plugin["affinity"]
        obj = _daemonset(DRA_KUBELET_PLUGIN, addon.chart.namespace, DRA_PLUGIN_LABELS, pod)
        out.append(
            SiteDaemon(
                f"the {addon.title}'s kubelet plugin",
                obj,
                vendors,
                view.fleet.doc.anchor(("platform", key)),
            )
        )
    return out


def site_daemons(build: Build) -> list[SiteDaemon]:
    return _operator_daemons(build) + _dra_daemons(build)


def said(build: Build, daemons: list[SiteDaemon]) -> list[Finding]:
    """SIM011 for each stand-in: what of the component ran here and what did not; and for a DRA
    driver the site runs, that it was not modelled (preflight checks it, PRE013)."""
    out = [
        Finding(
            "SIM011",
            f"{d.what} does not run here: a stand-in DaemonSet {d.key} with its pod labels, "
            "node selection and tolerations ran in its place, so where its pods land was "
            "simulated; what it does on a node was not (the nodes' capacity and ResourceSlices "
            "stand for what it would advertise)",
            d.location,
            hint=HINT,
            severity=Severity.WARNING,
        )
        for d in daemons
    ]
    view = build.view
    for key in sorted({v.dra.addon for v in view.vendors if v.dra is not None and v.dra.addon}):
        addon = addons.BY_KEY.get(key)
        if addon is not None and platform.provided(view, addon) == addons.SITE:
            out.append(
                Finding(
                    "SIM011",
                    f"the {addon.title} is the site's (platform.{key}.provided: site): its "
                    "tolerations and node affinity are not known here, so where its kubelet "
                    "plugin lands was not simulated; preflight checks it on the cluster (PRE013)",
                    view.fleet.doc.anchor(("platform", key)),
                    hint=HINT,
                    severity=Severity.WARNING,
                )
            )
    return out
