"""Node agents: the DaemonSet (and RBAC) of a container that runs on every node of a vendor's
pools, built from a catalog entry as upstream ships it (device plugins, exporters)."""

from __future__ import annotations

from typing import Any

from generator.builders import mirrors
from generator.builders.common import metadata, toleration
from generator.values.model import FleetView, Mirrors, NodeAgent, Vendor
from generator.vocab.api import APPS, CORE, RBAC
from generator.vocab.objects import Obj

# Requests and limits of an agent whose upstream manifest sets none: a request keeps the pod out
# of BestEffort (evicted first under node pressure), the memory limit bounds a leak.
DEFAULT_RESOURCES: dict[str, Any] = {
    "requests": {"cpu": "50m", "memory": "64Mi"},
    "limits": {"memory": "256Mi"},
}


def rbac_objects(
    name: str, namespace: str, agent: NodeAgent, sources: tuple[str, ...], labels: dict[str, str]
) -> list[Obj]:
    """ServiceAccount, ClusterRole and binding for an agent with RBAC rules (none without)."""
    if not agent.rbac:
        return []
    return [
        {
            "apiVersion": CORE,
            "kind": "ServiceAccount",
            "metadata": metadata(name, namespace=namespace, sources=sources, labels=labels),
        },
        {
            "apiVersion": RBAC,
            "kind": "ClusterRole",
            "metadata": metadata(name, sources=sources, labels=labels),
            "rules": [dict(rule) for rule in agent.rbac],
        },
        {
            "apiVersion": RBAC,
            "kind": "ClusterRoleBinding",
            "metadata": metadata(name, sources=sources, labels=labels),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": name,
            },
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
        },
    ]


def container(
    name: str,
    agent: NodeAgent,
    ports: list[dict[str, Any]] | None = None,
    *,
    registry_mirrors: Mirrors,
) -> Obj:
    """The agent's container, its image pulled through the fleet's registry mirrors."""
    out: Obj = {
        "name": name,
        "image": f"{mirrors.image(registry_mirrors, agent.image)}:{agent.version}",
        "imagePullPolicy": "IfNotPresent",
    }
    if agent.command:
        out["command"] = list(agent.command)
    if agent.args:
        out["args"] = list(agent.args)
    if agent.env:
        out["env"] = [dict(e) for e in agent.env]
    if ports:
        out["ports"] = ports
    out["resources"] = dict(agent.resources) if agent.resources else DEFAULT_RESOURCES
    if agent.security_context:
        out["securityContext"] = dict(agent.security_context)
    if agent.liveness_probe:
        out["livenessProbe"] = dict(agent.liveness_probe)
    if agent.readiness_probe:
        out["readinessProbe"] = dict(agent.readiness_probe)
    if agent.volume_mounts:
        out["volumeMounts"] = [dict(m) for m in agent.volume_mounts]
    return out


def daemonset(
    view: FleetView,
    vendor: Vendor,
    agent: NodeAgent,
    *,
    name: str,
    namespace: str,
    labels: dict[str, str],
    match: dict[str, str],
    ports: list[dict[str, Any]] | None = None,
) -> Obj:
    """A DaemonSet on the vendor's pools (selector and taints from the same values as theirs);
    `match` selects its pods, `labels` label the DaemonSet and its pods."""
    tolerations = [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
    tolerations += [toleration(t) for t in vendor.all_taints]
    pod: dict[str, Any] = {"nodeSelector": view.fleet.node_selector(vendor.selector)}
    pod["tolerations"] = tolerations
    if agent.priority_class:
        pod["priorityClassName"] = agent.priority_class
    if vendor.runtime_class:
        # The plugin and exporter need the vendor's runtime as much as workloads do
        # (docs/vendors.md, node prerequisites).
        pod["runtimeClassName"] = vendor.runtime_class
    for key, on in (
        ("hostPID", agent.host_pid),
        ("hostIPC", agent.host_ipc),
        ("hostNetwork", agent.host_network),
    ):
        if on:
            pod[key] = True
    if agent.host_network:
        pod["dnsPolicy"] = "ClusterFirstWithHostNet"
    if agent.rbac:
        pod["serviceAccountName"] = name
    else:
        pod["automountServiceAccountToken"] = False
    pod["containers"] = [container(name, agent, ports, registry_mirrors=view.fleet.mirrors)]
    if agent.volumes:
        pod["volumes"] = [dict(v) for v in agent.volumes]
    return {
        "apiVersion": APPS,
        "kind": "DaemonSet",
        "metadata": metadata(name, namespace=namespace, sources=vendor.doc.sources, labels=labels),
        "spec": {
            "selector": {"matchLabels": dict(match)},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {"metadata": {"labels": {**labels, **match}}, "spec": pod},
        },
    }
