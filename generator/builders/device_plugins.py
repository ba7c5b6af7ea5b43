"""Device plugins: a DaemonSet per vendor, on its pools only, in a privileged namespace.

The DaemonSet is the vendor's upstream manifest as the catalog records it
(generator/values/catalog/, each fact with its source; docs/vendors.md), placed by the fleet's
own selectors and taints."""

from __future__ import annotations

from generator.builders.agents import daemonset, rbac_objects
from generator.builders.common import (
    SYNC_WAVE,
    UNSHARED_NAMESPACES,
    VENDOR_LABEL,
    Component,
    namespace,
)
from generator.findings import Location
from generator.values.model import FleetView, Vendor
from generator.values.yamlio import Obj

UNIT = "device-plugins"


def build(view: FleetView) -> list[Component]:
    if not view.vendors:
        return []
    out: list[Component] = []
    namespaces: dict[str, list[str]] = {}
    # Findings on a Namespace point at the first vendor (by id) that asks for it.
    asked_at: dict[str, Location] = {}
    for vendor in view.vendors:
        ns = vendor.device_plugin.namespace
        if ns not in UNSHARED_NAMESPACES:
            known = namespaces.setdefault(ns, [])
            known += [src for src in vendor.doc.sources if src not in known]
            asked_at.setdefault(ns, vendor.doc.anchor(("devicePlugin", "namespace")))
        out.append(
            Component(
                UNIT,
                f"{UNIT}/{vendor.id}",
                _vendor_objects(view, vendor),
                origin=vendor.doc.anchor(("devicePlugin",)),
            )
        )
    if namespaces:
        comp = Component(UNIT, f"{UNIT}/namespaces")
        for name in sorted(namespaces):
            ns_obj = namespace(
                name,
                sources=namespaces[name],
                pod_security="privileged",
                annotations={SYNC_WAVE: "-1"},
            )
            comp.add(ns_obj, asked_at[name])
        out.insert(0, comp)
    return out


def _vendor_objects(view: FleetView, vendor: Vendor) -> list[Obj]:
    dp = vendor.device_plugin
    labels = {
        "app.kubernetes.io/name": dp.name,
        "app.kubernetes.io/component": "device-plugin",
        VENDOR_LABEL: vendor.id,
    }
    objs = rbac_objects(dp.name, dp.namespace, dp.agent, vendor.doc.sources, labels)
    objs.append(
        daemonset(
            view,
            vendor,
            dp.agent,
            name=dp.name,
            namespace=dp.namespace,
            labels=labels,
            match={"app.kubernetes.io/name": dp.name},
        )
    )
    return objs
