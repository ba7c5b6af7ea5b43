"""Device plugins: a DaemonSet per vendor, on its pools only, in a privileged namespace."""

from __future__ import annotations

from typing import Any

from ..model import FleetView, Vendor
from .common import (
    SYNC_WAVE,
    UNSHARED_NAMESPACES,
    VENDOR_LABEL,
    Component,
    Obj,
    metadata,
    namespace,
)

UNIT = "device-plugins"


def build(view: FleetView) -> list[Component]:
    if not view.vendors:
        return []
    out: list[Component] = []
    namespaces: dict[str, list[str]] = {}
    for vendor in view.vendors:
        ns = vendor.device_plugin.namespace
        if ns not in UNSHARED_NAMESPACES:
            known = namespaces.setdefault(ns, [])
            known += [src for src in vendor.doc.sources if src not in known]
        out.append(
            Component(
                UNIT,
                f"{UNIT}/{vendor.id}",
                _vendor_objects(view, vendor),
                origin=vendor.doc.anchor(("devicePlugin",), ("pools",)),
            )
        )
    ns_objs = []
    for name, sources in sorted(namespaces.items()):
        ns_obj = namespace(
            name,
            sources=sources or ["values/fleet.yaml"],
            pod_security="privileged",
            annotations={SYNC_WAVE: "-1"},
        )
        ns_objs.append(ns_obj)
    if ns_objs:
        origin = view.vendors[0].doc.anchor(("devicePlugin", "namespace"))
        out.insert(0, Component(UNIT, f"{UNIT}/namespaces", ns_objs, origin=origin))
    return out


def _vendor_objects(view: FleetView, vendor: Vendor) -> list[Obj]:
    dp = vendor.device_plugin
    sources = vendor.doc.sources
    labels = {
        "app.kubernetes.io/name": dp.name,
        "app.kubernetes.io/component": "device-plugin",
        VENDOR_LABEL: vendor.id,
    }
    objs: list[Obj] = []
    if dp.rbac:
        objs += [
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": metadata(
                    dp.name, namespace=dp.namespace, sources=sources, labels=labels
                ),
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": metadata(dp.name, sources=sources, labels=labels),
                "rules": [dict(rule) for rule in dp.rbac],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": metadata(dp.name, sources=sources, labels=labels),
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": dp.name,
                },
                "subjects": [
                    {"kind": "ServiceAccount", "name": dp.name, "namespace": dp.namespace}
                ],
            },
        ]
    objs.append(_daemonset(view, vendor, labels))
    return objs


def _daemonset(view: FleetView, vendor: Vendor, labels: dict[str, str]) -> Obj:
    dp = vendor.device_plugin
    container: dict[str, Any] = {
        "name": dp.name,
        "image": f"{dp.image}:{dp.version}",
        "imagePullPolicy": "IfNotPresent",
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        "volumeMounts": [
            {"name": h.name, "mountPath": h.path, "readOnly": h.read_only} for h in dp.host_paths
        ],
    }
    if dp.command:
        container["command"] = list(dp.command)
    if dp.args:
        container["args"] = list(dp.args)
    if dp.env:
        container["env"] = [{"name": k, "value": v} for k, v in sorted(dp.env.items())]
    if dp.privileged:
        container["securityContext"] = {"privileged": True}
    else:
        container["securityContext"] = {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
        }
    tolerations = [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
    tolerations += [_toleration(t.key, t.value, t.effect) for t in vendor.all_taints]
    pod_spec: dict[str, Any] = {
        "nodeSelector": view.fleet.node_selector(vendor.selector),
        "tolerations": tolerations,
        "priorityClassName": dp.priority_class,
        "containers": [container],
        "volumes": [{"name": h.name, "hostPath": {"path": h.path}} for h in dp.host_paths],
    }
    if dp.rbac:
        pod_spec["serviceAccountName"] = dp.name
    else:
        pod_spec["automountServiceAccountToken"] = False
    match = {"app.kubernetes.io/name": dp.name}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": metadata(
            dp.name, namespace=dp.namespace, sources=vendor.doc.sources, labels=labels
        ),
        "spec": {
            "selector": {"matchLabels": match},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": {**match, VENDOR_LABEL: vendor.id}},
                "spec": pod_spec,
            },
        },
    }


def _toleration(key: str, value: str, effect: str) -> dict[str, str]:
    if value:
        return {"key": key, "operator": "Equal", "value": value, "effect": effect}
    return {"key": key, "operator": "Exists", "effect": effect}
