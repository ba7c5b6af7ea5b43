"""Team workloads (docs/workloads.md): training Jobs, Volcano Jobs, inference services with one
track per vendor, weighted routing, and the fleet's scheduling backend (Volcano or Kueue queues).

Everything lands in the team's unit `team-<team>` as component `workloads/<team>`, except the
Kueue ResourceFlavors, which every team shares: they go in unit `scheduling`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import Location
from ..model import FleetView, Pool, Taint, Team, Vendor
from ..workloads.model import Job, PodDecl, Service, team_workloads
from ..workloads.phases import plan_service
from ..yamlio import YamlPath
from .common import TEAM_LABEL, VENDOR_LABEL, Component, Obj, metadata
from .teams import unit_name

# Kueue v1beta2 (Kueue 0.15+): the ClusterQueue names its cohort in `cohortName`.
KUEUE_API = "kueue.x-k8s.io/v1beta2"
VOLCANO_QUEUE_API = "scheduling.volcano.sh/v1beta1"
VOLCANO_JOB_API = "batch.volcano.sh/v1alpha1"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
TRACK_LABEL = "accel-gitops.io/track"
NAME_LABEL = "app.kubernetes.io/name"
SCHEDULING_UNIT = "scheduling"


@dataclass(frozen=True)
class PodRef:
    """A rendered pod template and the values path that declared it (for checks)."""

    team: Team
    kind: str  # Job, Job (volcano) task, Deployment
    name: str
    spec: dict[str, Any]
    path: YamlPath


def backend(view: FleetView) -> str:
    return str(view.fleet.doc.get("scheduling", "backend", default="quota"))


def cohort(view: FleetView) -> str:
    return str(view.fleet.doc.get("scheduling", "cohort", default=view.fleet.name))


def queue_name(team: Team) -> str:
    return f"team-{team.name}"


def build(view: FleetView) -> list[Component]:
    out = []
    for team in view.teams:
        objs, _ = team_objects(view, team)
        if objs:
            comp = Component(
                unit_name(team.name), f"workloads/{team.name}", origin=team.doc.anchor(("quota",))
            )
            for obj in objs:
                comp.add(obj, _origin(team, obj))
            out.append(comp)
    if backend(view) == "kueue" and view.vendors:
        flavors = [_flavor(view, v, p) for v in view.vendors for p in v.pools]
        origin = view.vendors[0].doc.anchor(("pools",))
        out.append(Component(SCHEDULING_UNIT, "workloads/kueue-flavors", flavors, origin=origin))
    return out


def _origin(team: Team, obj: Obj) -> Location:
    """The workload in the team's values that an object comes from (services name their
    per-track objects `<service>-<vendor>`)."""
    name = str(obj["metadata"]["name"])
    for section in ("jobs", "services"):
        for key in team.doc.get(section, default={}) or {}:
            if name == key or name.startswith(f"{key}-"):
                return team.doc.anchor((section, key))
    return team.doc.anchor(("quota",))


def team_objects(view: FleetView, team: Team) -> tuple[list[Obj], list[PodRef]]:
    """The team's workload objects and their pod templates (computed once per view)."""
    key = ("team_objects", team.name)
    if key not in view.memo:
        view.memo[key] = _team_objects(view, team)
    result: tuple[list[Obj], list[PodRef]] = view.memo[key]
    return result


def _team_objects(view: FleetView, team: Team) -> tuple[list[Obj], list[PodRef]]:
    loaded = team_workloads(view, team)
    objs: list[Obj] = []
    pods: list[PodRef] = []
    objs += _queues(view, team)
    for job in loaded.jobs:
        obj = _job(view, team, job)
        objs.append(obj)
        if job.kind == "volcano":
            for task, spec in zip(job.tasks, obj["spec"]["tasks"], strict=True):
                pods.append(
                    PodRef(
                        team,
                        "Job (volcano) task",
                        f"{job.name}/{task.name}",
                        spec["template"]["spec"],
                        task.path,
                    )
                )
        else:
            pods.append(PodRef(team, "Job", job.name, obj["spec"]["template"]["spec"], job.path))
    for svc in loaded.services:
        svc_objs = _service_objects(view, team, svc)
        objs += svc_objs
        for obj in svc_objs:
            if obj["kind"] == "Deployment":
                vendor = obj["metadata"]["labels"][TRACK_LABEL]
                pods.append(
                    PodRef(
                        team,
                        "Deployment",
                        obj["metadata"]["name"],
                        obj["spec"]["template"]["spec"],
                        (*svc.path, "tracks", vendor),
                    )
                )
    return objs, pods


# ---- pods ------------------------------------------------------------------------------------


def toleration(taint: Taint) -> dict[str, str]:
    if taint.value:
        return {"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect}
    return {"key": taint.key, "operator": "Exists", "effect": taint.effect}


def workload_mounts(vendor: Vendor) -> list[dict[str, Any]]:
    return list(vendor.doc.get("workloadMounts", default=[]) or [])


# cpu and memory every workload container requests unless its values say otherwise: without
# requests a pod is BestEffort, the first the kubelet evicts under node pressure.
DEFAULT_REQUESTS: dict[str, str] = {"cpu": "1", "memory": "2Gi"}


def security_contexts(pod_security: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(pod, container) security contexts for a namespace enforcing `pod_security`.

    'restricted' requires runAsNonRoot, RuntimeDefault seccomp, no privilege escalation and all
    capabilities dropped; 'baseline' requires none of them, and root CUDA/CANN images need to run
    as root, so there only seccomp and no privilege escalation are kept (both harmless to them)."""
    pod: dict[str, Any] = {"seccompProfile": {"type": "RuntimeDefault"}}
    ctr: dict[str, Any] = {"allowPrivilegeEscalation": False}
    if pod_security == "restricted":
        pod = {"runAsNonRoot": True, **pod}
        ctr["capabilities"] = {"drop": ["ALL"]}
    return pod, ctr


def _pod_spec(
    view: FleetView,
    name: str,
    pod: PodDecl,
    *,
    restart: str | None = None,
    pod_security: str = "restricted",
) -> dict[str, Any]:
    vendor = view.vendor(pod.vendor)
    requests: dict[str, Any] = {
        **DEFAULT_REQUESTS,
        **dict(pod.resources.get("requests", {})),
    }
    limits: dict[str, Any] = dict(pod.resources.get("limits", {}))
    container: dict[str, Any] = {"name": name, "image": pod.image}
    if pod.command:
        container["command"] = list(pod.command)
    if pod.args:
        container["args"] = list(pod.args)
    if pod.env:
        container["env"] = [{"name": k, "value": v} for k, v in pod.env.items()]
    spec: dict[str, Any] = {}
    selector: dict[str, str] = dict(pod.node_selector)
    mounts: list[dict[str, Any]] = []
    if vendor is not None:
        if pod.devices:
            requests[vendor.resource_name] = pod.devices
            limits[vendor.resource_name] = pod.devices
        selector = {**vendor.selector, **selector}
        if pod.model:
            selector[vendor.model_label] = pod.model
        if pod.devices and pod.vendor_mounts:
            mounts = workload_mounts(vendor)
        spec["tolerations"] = [toleration(t) for t in vendor.all_taints]
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = dict(sorted(requests.items()))
    if limits:
        resources["limits"] = dict(sorted(limits.items()))
    container["resources"] = resources
    pod_context, container["securityContext"] = security_contexts(pod_security)
    if mounts:
        container["volumeMounts"] = [
            {"name": m["name"], "mountPath": m["path"], "readOnly": bool(m.get("readOnly"))}
            for m in mounts
        ]
        spec["volumes"] = [
            {"name": m["name"], "hostPath": {"path": m["path"], "type": "Directory"}}
            for m in mounts
        ]
    if selector:
        spec["nodeSelector"] = view.fleet.node_selector(selector)
    spec["securityContext"] = pod_context
    spec["containers"] = [container]
    if restart:
        spec["restartPolicy"] = restart
    return dict(sorted(spec.items()))


def _labels(team: Team, **extra: str) -> dict[str, str]:
    return {TEAM_LABEL: team.name, **extra}


def _job(view: FleetView, team: Team, job: Job) -> Obj:
    sources = team.doc.sources
    if job.kind == "volcano":
        tasks = []
        for task in job.tasks:
            tlabels = _labels(team, **{NAME_LABEL: job.name, VENDOR_LABEL: task.pod.vendor})
            tasks.append(
                {
                    "name": task.name,
                    "replicas": task.replicas,
                    "template": {
                        "metadata": {"labels": tlabels},
                        "spec": _pod_spec(
                            view,
                            task.name,
                            task.pod,
                            restart="Never",
                            pod_security=team.pod_security,
                        ),
                    },
                }
            )
        return {
            "apiVersion": VOLCANO_JOB_API,
            "kind": "Job",
            "metadata": metadata(
                job.name, namespace=job.namespace, sources=sources, labels=_labels(team)
            ),
            "spec": {
                "schedulerName": "volcano",
                "queue": queue_name(team) if backend(view) == "volcano" else "default",
                "minAvailable": job.min_available,
                "maxRetry": job.backoff_limit,
                "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
                "tasks": tasks,
            },
        }
    task = job.tasks[0]
    labels = _labels(team, **{NAME_LABEL: job.name, VENDOR_LABEL: task.pod.vendor})
    meta_labels = _labels(team)
    if backend(view) == "kueue":
        meta_labels[QUEUE_LABEL] = queue_name(team)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(
            job.name, namespace=job.namespace, sources=sources, labels=meta_labels
        ),
        "spec": {
            "parallelism": task.replicas,
            "completions": job.completions,
            "backoffLimit": job.backoff_limit,
            "template": {
                "metadata": {"labels": labels},
                "spec": _pod_spec(
                    view, job.name, task.pod, restart="Never", pod_security=team.pod_security
                ),
            },
        },
    }


# ---- services --------------------------------------------------------------------------------


def _service_objects(view: FleetView, team: Team, svc: Service) -> list[Obj]:
    sources = team.doc.sources
    plans = {p.vendor: p for p in plan_service(svc)}
    objs: list[Obj] = []
    for track in svc.tracks:
        name = f"{svc.name}-{track.vendor}"
        match = {NAME_LABEL: svc.name, TRACK_LABEL: track.vendor}
        labels = _labels(team, **match, **{VENDOR_LABEL: track.vendor})
        pod = _pod_spec(view, svc.name, track.pod, pod_security=team.pod_security)
        ctr = pod["containers"][0]
        ctr["ports"] = [{"name": "http", "containerPort": svc.container_port, "protocol": "TCP"}]
        for key, default in (
            ("readinessProbe", READINESS_PROBE),
            ("livenessProbe", LIVENESS_PROBE),
        ):
            ctr[key] = team.doc.get(*svc.path, key, default=None) or default
        objs.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": metadata(name, namespace=svc.namespace, sources=sources, labels=labels),
                "spec": {
                    "replicas": plans[track.vendor].replicas,
                    "selector": {"matchLabels": match},
                    "template": {"metadata": {"labels": labels}, "spec": pod},
                },
            }
        )
        objs.append(_svc(name, svc, team, labels, match))
        budget: dict[str, Any] = (
            {"minAvailable": track.min_available}
            if track.min_available is not None
            else {"maxUnavailable": 1}
        )
        objs.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": metadata(name, namespace=svc.namespace, sources=sources, labels=labels),
                "spec": {**budget, "selector": {"matchLabels": match}},
            }
        )
    # The Service over all tracks: when one track takes all the traffic it selects only that
    # track (a selector change moves traffic without restarting pods); otherwise it spans the
    # serving tracks and traffic follows ready pods (MIG006 warns when that is not the weights).
    serving = [t.vendor for t in svc.tracks if plans[t.vendor].weight > 0]
    match = {NAME_LABEL: svc.name}
    if len(serving) == 1:
        match[TRACK_LABEL] = serving[0]
    objs.append(_svc(svc.name, svc, team, _labels(team, **{NAME_LABEL: svc.name}), match))
    backends = [(f"{svc.name}-{t.vendor}", plans[t.vendor].weight) for t in svc.tracks]
    if svc.routing == "gateway":
        objs.append(_http_route(svc, team, backends))
    elif svc.routing == "istio":
        objs.append(_virtual_service(svc, team, backends))
    return objs


# Probes of a service container unless its values give their own: the server accepts connections
# on its port (the only thing every inference server shares); liveness waits for model loading.
READINESS_PROBE: dict[str, Any] = {"tcpSocket": {"port": "http"}, "periodSeconds": 10}
LIVENESS_PROBE: dict[str, Any] = {
    "tcpSocket": {"port": "http"},
    "initialDelaySeconds": 120,
    "periodSeconds": 20,
    "failureThreshold": 3,
}


def _svc(name: str, svc: Service, team: Team, labels: dict[str, str], match: dict[str, str]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(
            name, namespace=svc.namespace, sources=team.doc.sources, labels=labels
        ),
        "spec": {
            "selector": match,
            "ports": [{"name": "http", "port": svc.port, "targetPort": "http", "protocol": "TCP"}],
        },
    }


def _http_route(svc: Service, team: Team, backends: list[tuple[str, int]]) -> Obj:
    parents = [
        {"group": "gateway.networking.k8s.io", "kind": "Gateway", **ref}
        for ref in svc.gateway.get("parentRefs", [])
    ]
    spec: dict[str, Any] = {"parentRefs": parents}
    if svc.gateway.get("hostnames"):
        spec["hostnames"] = list(svc.gateway["hostnames"])
    spec["rules"] = [
        {
            "backendRefs": [
                {"group": "", "kind": "Service", "name": n, "port": svc.port, "weight": w}
                for n, w in backends
            ]
        }
    ]
    return _route("gateway.networking.k8s.io/v1", "HTTPRoute", svc, team, spec)


def _virtual_service(svc: Service, team: Team, backends: list[tuple[str, int]]) -> Obj:
    spec: dict[str, Any] = {"hosts": list(svc.istio.get("hosts", [svc.name]))}
    if svc.istio.get("gateways"):
        spec["gateways"] = list(svc.istio["gateways"])
    spec["http"] = [
        {
            "route": [
                {"destination": {"host": n, "port": {"number": svc.port}}, "weight": w}
                for n, w in backends
            ]
        }
    ]
    return _route("networking.istio.io/v1", "VirtualService", svc, team, spec)


def _route(api: str, kind: str, svc: Service, team: Team, spec: dict[str, Any]) -> Obj:
    """The weighted route object of a service (HTTPRoute or VirtualService)."""
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": metadata(
            svc.name,
            namespace=svc.namespace,
            sources=team.doc.sources,
            labels=_labels(team, **{NAME_LABEL: svc.name}),
        ),
        "spec": spec,
    }


# ---- scheduling backends ---------------------------------------------------------------------


def team_devices(view: FleetView, team: Team) -> dict[str, int]:
    """Devices per resource name the team may hold across its namespaces (quota x namespaces)."""
    out: dict[str, int] = {}
    for vendor in view.vendors:
        n = team.quota.get(vendor.id, 0) * len(team.namespaces)
        out[vendor.resource_name] = out.get(vendor.resource_name, 0) + n
    return dict(sorted(out.items()))


def flavor_name(vendor: Vendor, pool: Pool) -> str:
    return f"{vendor.id}-{pool.name}"


def _flavor(view: FleetView, vendor: Vendor, pool: Pool) -> Obj:
    spec: dict[str, Any] = {
        "nodeLabels": view.fleet.node_selector({**vendor.selector, vendor.model_label: pool.model})
    }
    if pool.taints:
        spec["nodeTaints"] = [t.as_dict() for t in pool.taints]
        spec["tolerations"] = [toleration(t) for t in pool.taints]
    return {
        "apiVersion": KUEUE_API,
        "kind": "ResourceFlavor",
        "metadata": metadata(
            flavor_name(vendor, pool), sources=vendor.doc.sources, labels={VENDOR_LABEL: vendor.id}
        ),
        "spec": spec,
    }


def _queues(view: FleetView, team: Team) -> list[Obj]:
    sources = team.doc.sources
    labels = _labels(team)
    kind = backend(view)
    if kind == "volcano":
        capability = {r: n for r, n in team_devices(view, team).items()}
        return [
            {
                "apiVersion": VOLCANO_QUEUE_API,
                "kind": "Queue",
                "metadata": metadata(queue_name(team), sources=sources, labels=labels),
                "spec": {"weight": 1, "reclaimable": True, "capability": capability},
            }
        ]
    if kind != "kueue":
        return []
    groups: dict[str, list[dict[str, Any]]] = {}
    for vendor in view.vendors:
        left = team.quota.get(vendor.id, 0) * len(team.namespaces)
        for i, pool in enumerate(vendor.pools):
            # Fill pools in order; the last pool takes what remains.
            share = left if i == len(vendor.pools) - 1 else min(left, pool.capacity)
            left -= share
            groups.setdefault(vendor.resource_name, []).append(
                {
                    "name": flavor_name(vendor, pool),
                    "resources": [{"name": vendor.resource_name, "nominalQuota": share}],
                }
            )
    cluster_queue = {
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": metadata(queue_name(team), sources=sources, labels=labels),
        "spec": {
            "cohortName": cohort(view),
            "namespaceSelector": {"matchLabels": {TEAM_LABEL: team.name}},
            "resourceGroups": [
                {"coveredResources": [res], "flavors": flavors}
                for res, flavors in sorted(groups.items())
            ],
        },
    }
    local = [
        {
            "apiVersion": KUEUE_API,
            "kind": "LocalQueue",
            "metadata": metadata(queue_name(team), namespace=ns, sources=sources, labels=labels),
            "spec": {"clusterQueue": queue_name(team)},
        }
        for ns in team.namespaces
    ]
    return [cluster_queue, *local]
