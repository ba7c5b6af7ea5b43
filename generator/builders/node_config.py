"""Node labels and taints per pool.

`nfd` (default): a NodeFeatureRule per vendor matches the PCI vendor ID (and the pool's node names
or PCI device IDs) so a new node joins its pool by itself. NFD prefixes label keys that have no
prefix with feature.node.kubernetes.io/, so the rules and every selector use the prefixed key.

`node-patch`: for clusters without NFD, a partial Node object per named node, applied by Argo CD
with server-side apply; never pruned or deleted, since removing it from Git must not delete a Node.
"""

from __future__ import annotations

from typing import Any

from ..model import FleetView, Pool, Vendor
from .common import SYNC_OPTIONS, VENDOR_LABEL, Component, Obj, metadata

UNIT = "node-config"
NODE_PATCH_OPTIONS = "ServerSideApply=true,Validate=false,Prune=false,Delete=false"


def build(view: FleetView) -> list[Component]:
    out = []
    for vendor in view.vendors:
        if view.fleet.node_config_method == "nfd":
            objs = [_node_feature_rule(view, vendor)]
        else:
            objs = [obj for pool in vendor.pools for obj in _node_patches(view, vendor, pool)]
        if objs:
            out.append(
                Component(UNIT, f"{UNIT}/{vendor.id}", objs, origin=vendor.doc.anchor(("pools",)))
            )
    return out


def _node_feature_rule(view: FleetView, vendor: Vendor) -> Obj:
    rules = []
    for pool in vendor.pools:
        match: list[dict[str, Any]] = []
        pci: dict[str, Any] = {"vendor": {"op": "In", "value": [vendor.pci_vendor]}}
        if pool.pci_devices:
            pci["device"] = {"op": "In", "value": list(pool.pci_devices)}
        match.append({"feature": "pci.device", "matchExpressions": pci})
        # Node names only where PCI IDs cannot tell the vendor's pools apart: a rule without them
        # lets any new node with the vendor's devices join the pool by itself.
        if pool.nodes and len(vendor.pools) > 1 and not pool.pci_devices:
            match.append(
                {
                    "feature": "system.name",
                    "matchExpressions": {"nodename": {"op": "In", "value": sorted(pool.nodes)}},
                }
            )
        rule: dict[str, Any] = {
            "name": f"{vendor.id}-{pool.name}",
            "labels": view.fleet.node_selector(pool.labels),
            "matchFeatures": match,
        }
        if pool.taints:
            rule["taints"] = [t.as_dict() for t in pool.taints]
        rules.append(rule)
    return {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeatureRule",
        "metadata": metadata(
            f"accel-{vendor.id}", sources=vendor.doc.sources, labels={VENDOR_LABEL: vendor.id}
        ),
        "spec": {"rules": rules},
    }


def _node_patches(view: FleetView, vendor: Vendor, pool: Pool) -> list[Obj]:
    out = []
    for node in sorted(pool.nodes):
        meta = metadata(
            node, sources=vendor.doc.sources, annotations={SYNC_OPTIONS: NODE_PATCH_OPTIONS}
        )
        # Only the labels we own: managed-by would otherwise land on every node.
        meta["labels"] = dict(sorted(pool.labels.items()))
        obj: Obj = {"apiVersion": "v1", "kind": "Node", "metadata": meta}
        if pool.taints:
            obj["spec"] = {"taints": [t.as_dict() for t in pool.taints]}
        out.append(obj)
    return out
