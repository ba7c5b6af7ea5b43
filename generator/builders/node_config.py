"""Node labels and taints per pool.

`nfd` (default): a NodeFeatureRule per vendor with a rule per pool. A rule matches one PCI function
by vendor, class and the device IDs of the pool's model (catalog `pciModels`, or the pool's
`pciDevices`), never by vendor alone: 1d94 is also the Hygon CPU's root complex and 19e5 the
Huawei iBMC's VGA. So a node is labelled with a model only when that model's device is present,
and a new node joins its pool by itself. Node names are matched as well only where two pools of
a vendor match the same devices. NFD prefixes label keys that have no prefix with
feature.node.kubernetes.io/, so the rules and every selector use the prefixed key.

`node-patch`: for clusters without NFD, a partial Node object per named node, applied by Argo CD
with server-side apply; never pruned or deleted, since removing it from Git must not delete a Node.
"""

from __future__ import annotations

from typing import Any

from generator.builders import operators
from generator.builders.common import metadata, toleration
from generator.values.model import FleetView, Pool, Taint, Vendor
from generator.vocab.api import CORE, NFD, NODE
from generator.vocab.labels import SYNC_OPTIONS, VENDOR_LABEL
from generator.vocab.objects import Obj
from generator.vocab.units import NODE_CONFIG_UNIT, Component
from generator.workloads.model import Workloads

NODE_PATCH_OPTIONS = "ServerSideApply=true,Validate=false,Prune=false,Delete=false"


def build(view: FleetView) -> list[Component]:
    out = []
    for vendor in view.vendors:
        handover = operators.handover_labels(view, vendor)
        if view.fleet.node_config_method == "nfd":
            objs = [_node_feature_rule(view, vendor, handover)]
        else:
            objs = [obj for pool in vendor.pools for obj in _node_patches(vendor, pool, handover)]
        if vendor.runtime_class and vendor.runtime_handler and not _operators(view, vendor):
            objs.append(runtime_class(vendor))
        if objs:
            out.append(
                Component(
                    NODE_CONFIG_UNIT,
                    f"{NODE_CONFIG_UNIT}/{vendor.id}",
                    objs,
                    origin=vendor.doc.anchor(("pools",)),
                )
            )
    return out


def _operators(view: FleetView, vendor: Vendor) -> bool:
    """Whether the RuntimeClass the vendor's pods name is one its operator creates in this
    cluster: then the operator owns it, and the fleet renders no second copy for Argo CD to
    manage and prune (the pods still name it)."""
    op = operators.running(view, vendor)
    return op is not None and op.runtime_class == vendor.runtime_class


def runtime_class(vendor: Vendor) -> Obj:
    """The RuntimeClass a vendor's pods name when its runtime is not the node's default
    (k8s.io/api node/v1 v0.36.3: `handler` is the runtime's name in the CRI configuration).
    In node-config, the first unit, because the API server refuses a pod naming a RuntimeClass
    that does not exist (kubernetes v1.36.3 plugin/pkg/admission/runtimeclass), and the device
    plugins and team units sync together in a later wave."""
    return {
        "apiVersion": NODE,
        "kind": "RuntimeClass",
        "metadata": metadata(vendor.runtime_class, sources=vendor.doc.sources),
        "handler": vendor.runtime_handler,
    }


def nfd_chart_values(workloads: Workloads) -> dict[str, Any]:
    """Values of NFD's chart when the fleet renders NFD (builders/platform.py), so that it does
    what the rendered NodeFeatureRules need (kubernetes-sigs/node-feature-discovery v0.19.0
    deployment/helm/node-feature-discovery):

    - `master.enableTaints: true`: nfd-master applies a rule's taints only when started with
      -enable-taints, which templates/master.yaml adds from this value (it defaults to false);
    - `worker.tolerations`: every taint of the fleet's pools. nfd-worker publishes each node's
      PCI devices, which the rules match; on a node it cannot run on, nothing labels or taints
      the node (templates/worker.yaml takes its tolerations from this value, default none);
    - `postDeleteCleanup: false`: by default the chart has a post-delete hook Job that runs
      `nfd-master -prune` (templates/post-delete-job.yaml), removing NFD's labels and taints from
      every node, and Argo CD runs a Helm post-delete hook when the Application is deleted
      (argo-cd v3.5.7 docs/user-guide/helm.md). Deleting the add-on's Application must not strip
      the pools' nodes: every pod would lose its nodes' labels, and the taints that keep other
      pods off the accelerators would go.
    """
    view = workloads.view
    taints: dict[Taint, None] = {}
    for vendor in view.vendors:
        for taint in vendor.all_taints:
            taints.setdefault(taint)
    ordered = sorted(taints, key=lambda t: (t.key, t.value, t.effect))
    return {
        "master": {"enableTaints": True},
        "worker": {"tolerations": [toleration(t) for t in ordered]},
        "postDeleteCleanup": False,
    }


def class_expression(classes: tuple[str, ...]) -> dict[str, Any]:
    """NFD expression on `class` (4 hex digits): exact classes, or base classes as prefixes."""
    if all(len(c) == 4 for c in classes):
        return {"op": "In", "value": sorted(classes)}
    return {"op": "InRegexp", "value": [f"^{c}" for c in sorted(classes)]}


def device_twins(view: FleetView, vendor: Vendor, pool: Pool) -> list[tuple[Vendor, Pool]]:
    """The other pools whose NFD rules match one of this pool's device IDs: the vendor's own,
    and those of every vendor with the same PCI vendor (a vendor file that reuses a catalog
    entry, as a shared one does: docs/allocation.md). Only node names tell their nodes apart."""
    mine = set(pool.pci_devices)
    return [
        (v, p)
        for v in view.vendors
        if v.pci_vendor == vendor.pci_vendor
        for p in v.pools
        if not (v.id == vendor.id and p is pool) and mine & set(p.pci_devices)
    ]


def rule_name(vendor: Vendor) -> str:
    """The NodeFeatureRule that labels and taints the vendor's pools."""
    return f"accel-{vendor.id}"


def _node_feature_rule(view: FleetView, vendor: Vendor, handover: dict[str, str]) -> Obj:
    rules = []
    for pool in vendor.pools:
        if not pool.pci_devices:
            continue  # NODE002: a rule on the vendor ID alone would label every vendor's server
        match: list[dict[str, Any]] = [
            {
                "feature": "pci.device",
                "matchExpressions": {
                    "vendor": {"op": "In", "value": [vendor.pci_vendor]},
                    "class": class_expression(pool.pci_classes),
                    "device": {"op": "In", "value": sorted(pool.pci_devices)},
                },
            }
        ]
        if pool.nodes and device_twins(view, vendor, pool):
            match.append(
                {
                    "feature": "system.name",
                    "matchExpressions": {"nodename": {"op": "In", "value": sorted(pool.nodes)}},
                }
            )
        rule: dict[str, Any] = {
            "name": f"{vendor.id}-{pool.name}",
            "labels": view.fleet.node_selector({**pool.labels, **handover}),
            "matchFeatures": match,
        }
        if pool.taints:
            rule["taints"] = [t.as_dict() for t in pool.taints]
        rules.append(rule)
    return {
        "apiVersion": NFD,
        "kind": "NodeFeatureRule",
        "metadata": metadata(
            rule_name(vendor), sources=vendor.doc.sources, labels={VENDOR_LABEL: vendor.id}
        ),
        "spec": {"rules": rules},
    }


def _node_patches(vendor: Vendor, pool: Pool, handover: dict[str, str]) -> list[Obj]:
    out = []
    for node in sorted(pool.nodes):
        meta = metadata(
            node, sources=vendor.doc.sources, annotations={SYNC_OPTIONS: NODE_PATCH_OPTIONS}
        )
        # Only the labels we own: managed-by would otherwise land on every node.
        meta["labels"] = dict(sorted({**pool.labels, **handover}.items()))
        obj: Obj = {"apiVersion": CORE, "kind": "Node", "metadata": meta}
        if pool.taints:
            obj["spec"] = {"taints": [t.as_dict() for t in pool.taints]}
        out.append(obj)
    return out
