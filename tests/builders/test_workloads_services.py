"""The services of workloads.py (docs/workloads.md "Inference services and migration phases"):
the dual-track inference Deployments (replicas per phase), their Services and
PodDisruptionBudgets, the Service over the serving tracks, and the traffic routes: Gateway API v1
HTTPRoute and Istio networking v1 VirtualService, with the weights the phase gives each track.

Every object is written out by hand and compared as JSON text: render writes the keys in the
order they are built, so a key moved is a changed file a reviewer sees."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from generator.values import loader as values
from tests.fixtures import ASCEND_910B, PROD_FLEET, Obj, team_objects, tree

SOURCE = "accel-gitops.io/source"
MANAGED = "app.kubernetes.io/managed-by"
TEAM = "accel-gitops.io/team"
NAME = "app.kubernetes.io/name"
TRACK = "accel-gitops.io/track"
VENDOR = "accel-gitops.io/vendor"
NFD = "feature.node.kubernetes.io/"

NVIDIA_A100 = "pools:\n  - {name: a100, model: A100, devicesPerNode: 8, nodes: [g1]}\n"
# Team inf (namespace serving, Pod Security baseline by default): service chat migrates from
# NVIDIA (3 replicas of 2 GPUs) to Ascend 910B (2 replicas of 1 NPU, a PDB of minAvailable 1);
# Service port 8000, container port 9000. {extra} adds keys to the service.
CHAT = """\
namespaces: [serving]
quota: {{nvidia: 8, ascend: 8}}
services:
  chat:
    images: {{nvidia: r/chat:cuda, ascend: r/chat:cann}}
    migration: {{from: nvidia, to: ascend}}
    phase: {phase}
    port: 8000
    containerPort: 9000
{extra}    tracks:
      nvidia: {{devicesPerReplica: 2, replicas: 3}}
      ascend: {{devicesPerReplica: 1, replicas: 2, model: 910b, minAvailable: 1}}
"""


def chat(phase: str = "validate", extra: str = "") -> str:
    return CHAT.format(phase=phase, extra=extra)


def objects(tmp_path: Path, team: str) -> list[Obj]:
    """Team inf's objects in the prod view of a tree: NVIDIA (8 A100), Ascend (8 910B) and
    teams/inf.yaml = `team`, quota backend (no queues)."""
    files = {"vendors/nvidia.yaml": NVIDIA_A100, "vendors/ascend.yaml": ASCEND_910B}
    fleet = PROD_FLEET + "capacity: {allowOvercommit: true}\n"
    view = values.load(
        tree(tmp_path, {**files, "teams/inf.yaml": team}, fleet=fleet, defaults=False)
    ).envs["prod"]
    [inf] = view.teams
    objs, _ = team_objects(view, inf)
    return objs


def written(obj: Any) -> str:
    """`obj` as text in the order of its keys, as render writes it."""
    return json.dumps(obj, indent=1)


def of_kind(objs: list[Obj], kind: str) -> list[Obj]:
    return [o for o in objs if o["kind"] == kind]


def meta(name: str, **labels: str) -> Obj:
    """metadata of a team inf object in namespace serving, declared in values/teams/inf.yaml."""
    return {
        "name": name,
        "namespace": "serving",
        "labels": {MANAGED: "accel-gitops", TEAM: "inf", **labels},
        "annotations": {SOURCE: "values/teams/inf.yaml"},
    }


def track_labels(vendor: str) -> dict[str, str]:
    """The labels of a track's objects and pods: team, service, track and vendor."""
    return {TEAM: "inf", NAME: "chat", TRACK: vendor, VENDOR: vendor}


def taint_toleration(value: str) -> Obj:
    return {"key": NFD + "accelerator", "operator": "Equal", "value": value, "effect": "NoSchedule"}


# Baseline Pod Security: seccomp RuntimeDefault, no privilege escalation (docs/workloads.md).
BASELINE_POD = {"seccompProfile": {"type": "RuntimeDefault"}}
BASELINE_CTR = {"allowPrivilegeEscalation": False}
# The default probes on the `http` port: readiness every 10 s, liveness after 120 s for model
# loading, every 20 s, 3 failures (docs/workloads.md).
READINESS = {"tcpSocket": {"port": "http"}, "periodSeconds": 10}
LIVENESS = {
    "tcpSocket": {"port": "http"},
    "initialDelaySeconds": 120,
    "periodSeconds": 20,
    "failureThreshold": 3,
}


def deployment(vendor: str, replicas: int, image: str, resource: str, devices: int) -> Obj:
    """The Deployment chat-<vendor> of team inf, written out (its pod as docs/workloads.md says:
    the devices in limits and requests, the vendor's selector and taint, the probes)."""
    selector = (
        {NFD + "accelerator": "nvidia-gpu"}
        if vendor == "nvidia"
        else {NFD + "accelerator": "huawei-npu", NFD + "npu-model": "910b"}
    )
    container = {
        "name": "chat",
        "image": image,
        "resources": {
            # sorted by name, as render writes them
            "requests": (
                {"cpu": "1", "memory": "2Gi", resource: devices}
                if vendor == "nvidia"
                else {"cpu": "1", resource: devices, "memory": "2Gi"}
            ),
            "limits": {resource: devices},
        },
        "securityContext": BASELINE_CTR,
        "ports": [{"name": "http", "containerPort": 9000, "protocol": "TCP"}],
        "readinessProbe": READINESS,
        "livenessProbe": LIVENESS,
    }
    pod = {
        "containers": [container],
        "nodeSelector": selector,
        "securityContext": BASELINE_POD,
        "tolerations": [
            taint_toleration("nvidia-gpu" if vendor == "nvidia" else "huawei-npu"),
        ],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(f"chat-{vendor}", **{NAME: "chat", TRACK: vendor, VENDOR: vendor}),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {NAME: "chat", TRACK: vendor}},
            "template": {"metadata": {"labels": track_labels(vendor)}, "spec": pod},
        },
    }


def service(
    name: str, labels: dict[str, str], selector: dict[str, str], phase: str | None = None
) -> Obj:
    """A v1 Service of team inf: port 8000 named http to the pods' `http` port, over TCP; the
    Service over all tracks says the phase it was rendered for."""
    metadata = meta(name, **labels)
    if phase is not None:
        metadata["annotations"]["accel-gitops.io/phase"] = phase
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {
            "selector": selector,
            "ports": [{"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}],
        },
    }


def budget(vendor: str, rule: dict[str, int]) -> Obj:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": meta(f"chat-{vendor}", **{NAME: "chat", TRACK: vendor, VENDOR: vendor}),
        "spec": {**rule, "selector": {"matchLabels": {NAME: "chat", TRACK: vendor}}},
    }


def track_objects(vendor: str, replicas: int) -> list[Obj]:
    """Deployment, Service and PodDisruptionBudget chat-<vendor>."""
    if vendor == "nvidia":
        dep = deployment("nvidia", replicas, "r/chat:cuda", "nvidia.com/gpu", 2)
        pdb = budget("nvidia", {"maxUnavailable": 1})
    else:
        dep = deployment("ascend", replicas, "r/chat:cann", "huawei.com/Ascend910", 1)
        pdb = budget("ascend", {"minAvailable": 1})
    labels = {NAME: "chat", TRACK: vendor, VENDOR: vendor}
    svc = service(f"chat-{vendor}", labels, {NAME: "chat", TRACK: vendor})
    return [dep, svc, pdb]


# ---- service_objects and _svc: the tracks' objects and the Service over them ----------------


def test_dual_track_service_in_validate_written_out(tmp_path: Path) -> None:
    """validate: per track (old first) a Deployment, a Service and a PDB (maxUnavailable 1, or the
    track's minAvailable); the new track runs 1 replica; the Service chat selects the old track
    alone, which carries all the traffic; routing `service` writes no route object."""
    want = [
        *track_objects("nvidia", 3),
        *track_objects("ascend", 1),
        service("chat", {NAME: "chat"}, {NAME: "chat", TRACK: "nvidia"}, "validate"),
    ]
    assert written(objects(tmp_path, chat())) == written(want)


@pytest.mark.parametrize(
    ("phase", "replicas", "weights", "serving"),
    [
        ("validate", (3, 1), (100, 0), "nvidia"),
        ("dual-run", (3, 2), (100, 0), "nvidia"),
        ("shift-1", (3, 2), (99, 1), None),
        ("shift-70", (3, 2), (30, 70), None),
        ("primary-new", (3, 2), (0, 100), "ascend"),
        ("fallback", (1, 2), (0, 100), "ascend"),
    ],
)
def test_replicas_weights_and_service_selector_per_phase(
    tmp_path: Path,
    phase: str,
    replicas: tuple[int, int],
    weights: tuple[int, int],
    serving: str | None,
) -> None:
    """The phase table of docs/workloads.md: (old, new) replicas of the Deployments and weights of
    the route's backends; the Service chat selects the one track with traffic, or every track
    while both carry some (shift-1: a weight of 1 is traffic too)."""
    extra = "    routing: gateway\n    gateway: {parentRefs: [{name: public}]}\n"
    objs = objects(tmp_path, chat(phase, extra))
    deps = {o["metadata"]["name"]: o["spec"]["replicas"] for o in of_kind(objs, "Deployment")}
    assert deps == {"chat-nvidia": replicas[0], "chat-ascend": replicas[1]}
    [route] = of_kind(objs, "HTTPRoute")
    refs = [(r["name"], r["weight"]) for r in route["spec"]["rules"][0]["backendRefs"]]
    assert refs == [("chat-nvidia", weights[0]), ("chat-ascend", weights[1])]
    selector = {NAME: "chat"} if serving is None else {NAME: "chat", TRACK: serving}
    [svc] = [s for s in of_kind(objs, "Service") if s["metadata"]["name"] == "chat"]
    assert svc["spec"]["selector"] == selector


# ---- _http_route and _route: Gateway API gateway.networking.k8s.io/v1 HTTPRoute ---------------

GATEWAY = """\
    routing: gateway
    gateway:
      parentRefs:
        - {name: public, namespace: gateways, sectionName: https}
        - {name: internal, namespace: gateways}
      hostnames: [chat.example.com, chat.internal]
"""


def route_meta() -> Obj:
    return meta("chat", **{NAME: "chat"})


def test_gateway_route_written_out(tmp_path: Path) -> None:
    """routing gateway, shift-30: after the Service chat (which spans both tracks), an HTTPRoute
    chat attached to every parentRef, with the hostnames and one rule whose backendRefs are the
    tracks' Services on the Service port, weighted 70/30. group and kind are written on every
    parentRef (Gateway API v1 defaults: gateway.networking.k8s.io, Gateway) and backendRef
    ("" core, Service), so the live object equals the manifest and Argo CD shows it in sync."""
    objs = objects(tmp_path, chat("shift-30", GATEWAY))
    gateway = {"group": "gateway.networking.k8s.io", "kind": "Gateway"}
    route = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": route_meta(),
        "spec": {
            "parentRefs": [
                {**gateway, "name": "public", "namespace": "gateways", "sectionName": "https"},
                {**gateway, "name": "internal", "namespace": "gateways"},
            ],
            "hostnames": ["chat.example.com", "chat.internal"],
            "rules": [
                {
                    # the Gateway API CRD's default, written out (Argo CD compares it)
                    "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                    "backendRefs": [
                        {
                            "group": "",
                            "kind": "Service",
                            "name": "chat-nvidia",
                            "port": 8000,
                            "weight": 70,
                        },
                        {
                            "group": "",
                            "kind": "Service",
                            "name": "chat-ascend",
                            "port": 8000,
                            "weight": 30,
                        },
                    ],
                }
            ],
        },
    }
    want = [
        *track_objects("nvidia", 3),
        *track_objects("ascend", 2),
        service("chat", {NAME: "chat"}, {NAME: "chat"}, "shift-30"),
        route,
    ]
    assert written(objs) == written(want)


def test_gateway_route_without_hostnames_writes_none(tmp_path: Path) -> None:
    """Without gateway.hostnames the HTTPRoute has no hostnames (it then matches every host of
    its listeners, Gateway API v1 HTTPRouteSpec); routing gateway writes no VirtualService."""
    extra = "    routing: gateway\n    gateway: {parentRefs: [{name: public}]}\n"
    objs = objects(tmp_path, chat("primary-new", extra))
    assert of_kind(objs, "VirtualService") == []
    [route] = of_kind(objs, "HTTPRoute")
    assert written(route["spec"]) == written(
        {
            "parentRefs": [
                {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "public"}
            ],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                    "backendRefs": [
                        {"group": "", "kind": "Service", "name": n, "port": 8000, "weight": w}
                        for n, w in (("chat-nvidia", 0), ("chat-ascend", 100))
                    ],
                }
            ],
        }
    )


# ---- _virtual_service and _route: Istio networking.istio.io/v1 VirtualService -----------------


def test_istio_virtual_service_written_out(tmp_path: Path) -> None:
    """routing istio, shift-30: a VirtualService chat whose hosts default to the service's name,
    bound to istio.gateways, with one http route of a weighted destination per track (the
    track's Service, port number = the Service port), 70/30; no HTTPRoute."""
    extra = "    routing: istio\n    istio: {gateways: [istio-system/public, mesh]}\n"
    objs = objects(tmp_path, chat("shift-30", extra))
    vs = {
        "apiVersion": "networking.istio.io/v1",
        "kind": "VirtualService",
        "metadata": route_meta(),
        "spec": {
            "hosts": ["chat"],
            "gateways": ["istio-system/public", "mesh"],
            "http": [
                {
                    "route": [
                        {
                            "destination": {"host": "chat-nvidia", "port": {"number": 8000}},
                            "weight": 70,
                        },
                        {
                            "destination": {"host": "chat-ascend", "port": {"number": 8000}},
                            "weight": 30,
                        },
                    ]
                }
            ],
        },
    }
    want = [
        *track_objects("nvidia", 3),
        *track_objects("ascend", 2),
        service("chat", {NAME: "chat"}, {NAME: "chat"}, "shift-30"),
        vs,
    ]
    assert written(objs) == written(want)


def test_istio_hosts_from_values_and_no_gateways(tmp_path: Path) -> None:
    """istio.hosts replaces the default host; without istio.gateways the VirtualService has no
    gateways (Istio then applies it to the mesh's sidecars only)."""
    extra = "    routing: istio\n    istio: {hosts: [chat.example.com, chat]}\n"
    [vs] = of_kind(objects(tmp_path, chat("dual-run", extra)), "VirtualService")
    assert written(vs["spec"]) == written(
        {
            "hosts": ["chat.example.com", "chat"],
            "http": [
                {
                    "route": [
                        {"destination": {"host": n, "port": {"number": 8000}}, "weight": w}
                        for n, w in (("chat-nvidia", 100), ("chat-ascend", 0))
                    ]
                }
            ],
        }
    )
