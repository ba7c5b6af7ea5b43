"""Team workloads (docs/workloads.md): training Jobs, Volcano Jobs, inference services with one
track per vendor, weighted routing, and the team's queues of the fleet's scheduling backend
(docs/scheduling.md: a Volcano Queue, or a Kueue ClusterQueue and LocalQueues).

Everything lands in the team's unit `team-<team>` as component `workloads/<team>`; what every
team shares (scheduler configuration, Kueue ResourceFlavors) is builders/scheduling.py's.
"""

from __future__ import annotations

import copy
from typing import Any

from generator.builders import claims, scheduling
from generator.builders.build import Parts, PodRef, TeamBuild
from generator.builders.common import metadata, toleration
from generator.builders.teams import unit_name
from generator.findings import Location
from generator.values.model import FleetView, Pool, Team, Vendor
from generator.values.yamlio import YamlPath
from generator.vocab import api, kube
from generator.vocab.api import (
    APPS,
    BATCH,
    CORE,
    GATEWAY,
    ISTIO_NETWORKING,
    JOBSET,
    KUEUE,
    LWS,
    MCS,
    MCS_GROUP,
    POLICY,
    TRAINER,
    VOLCANO_BATCH,
    VOLCANO_SCHEDULING,
)
from generator.vocab.labels import (
    NAME_LABEL,
    PHASE_ANNOTATION,
    QUEUE_LABEL,
    SERVING_LABEL,
    SYNC_WAVE,
    TEAM_LABEL,
    TRACK_LABEL,
    TRAINER_PATCH_MANAGER,
    VENDOR_LABEL,
    VOLCANO_QUEUE_ANNOTATION,
)
from generator.vocab.objects import Obj
from generator.vocab.units import Component, UserPatch
from generator.workloads import podspec, usage
from generator.workloads.model import Job, PodDecl, Service, Workloads
from generator.workloads.phases import plan_service

# The trainer step's replicated job and container in the runtimes the fleet supports, where
# Trainer puts the TrainJob's image, command, resources and env (pkg/constants/constants.go
# Node; pkg/runtime/framework/plugins/jobset/builder.go Trainer, v2.2.0).
TRAINER_STEP = "node"
# The pod fields a runtime patch may carry (trainjob_types.go PodSpecPatch, ContainerPatch).
TRAINER_POD_FIELDS = (
    "affinity",
    "imagePullSecrets",
    "nodeSelector",
    "securityContext",
    "serviceAccountName",
    "tolerations",
    "volumes",
)
TRAINER_CONTAINER_FIELDS = ("securityContext", "volumeMounts")
# What LeaderWorkerSet's defaulting webhook sets when left out (sigs.k8s.io/lws v0.8.0
# pkg/webhooks/leaderworkerset_webhook.go Default; restartPolicy RecreateGroupOnPodRestart there
# too): written out, so that Argo CD does not see every LeaderWorkerSet out of sync, and the API
# server takes it where no webhook defaults it.
LWS_DEFAULTS: dict[str, Any] = {
    "startupPolicy": "LeaderCreated",
    "rolloutStrategy": {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 0, "partition": 0},
    },
    "networkConfig": {"subdomainPolicy": "Shared"},
}
# Queues sync one wave before the workloads that name them: Volcano's admission webhook refuses a
# Job (and a PodGroup) whose Queue does not exist or is not Open yet (volcano-sh/volcano v1.14.0
# pkg/webhooks/admission/jobs/validate/admit_job.go "can only submit job to queue with state
# `Open`"; podgroups/validate/validate_podgroup.go), and Kueue's LocalQueue must exist for the
# Job to be admitted. Namespaces are wave -2 (builders/teams.py).
QUEUE_WAVE = "-1"


# The kinds of object a team's job is rendered as (Volcano's Job is a "Job" too).
JOB_OBJECT_KINDS = ("Job", "JobSet", "TrainJob")


def backend(view: FleetView) -> str:
    return scheduling.backend(view)


def cohort(view: FleetView) -> str:
    return str(view.fleet.doc.get("scheduling", "cohort", default=view.fleet.name))


def queue_name(team: Team) -> str:
    return f"team-{team.name}"


def build(parts: Parts) -> list[Component]:
    view = parts.view
    out = []
    for team in view.teams:
        objs = parts.team(team).objects
        if objs:
            comp = Component(
                unit_name(team.name), f"workloads/{team.name}", origin=team.doc.anchor(("quota",))
            )
            for obj in objs:
                comp.add(obj, workload_origin(team, obj))
            comp.patches = user_patches(parts.workloads, team, objs)
            out.append(comp)
    return out


def patch_targets(workloads: Workloads, team: Team, objs: list[Obj]) -> list[tuple[YamlPath, Obj]]:
    """(values path of the workload, object) for each object a workload's `patch` applies to:
    a job's Job; each track's Deployment of a service."""
    loaded = workloads.of(team)
    out: list[tuple[YamlPath, Obj]] = []
    for job in loaded.jobs:
        out += [
            (job.path, o)
            for o in objs
            if o["kind"] in JOB_OBJECT_KINDS and o["metadata"]["name"] == job.name
        ]
    for svc in loaded.services:
        names = {f"{svc.name}-{t.vendor}" for t in svc.tracks}
        out += [
            (svc.path, o)
            for o in objs
            if o["kind"] in ("Deployment", "LeaderWorkerSet") and o["metadata"]["name"] in names
        ]
    return out


def user_patches(workloads: Workloads, team: Team, objs: list[Obj]) -> list[UserPatch]:
    if not _declares_patches(team):
        # Most teams patch nothing: their workload model is not resolved for this (at 1,000
        # teams, 0.2 s of each build of a changed view).
        return []
    out = []
    for path, obj in patch_targets(workloads, team, objs):
        patch = team.doc.get(*path, "patch", default=None) or {}
        if patch.get("json6902"):
            out.append(UserPatch(obj, [dict(op) for op in patch["json6902"]]))
        elif patch.get("strategicMerge"):
            out.append(UserPatch(obj, dict(patch["strategicMerge"])))
    return out


def _declares_patches(team: Team) -> bool:
    """Whether a job or a service of the team's values gives a `patch` (where patch_targets
    reads them: `jobs.<name>.patch`, `services.<name>.patch`)."""
    return any(
        isinstance(raw, dict) and raw.get("patch")
        for section in ("jobs", "services")
        for raw in (team.doc.get(section, default={}) or {}).values()
    )


def workload_origin(team: Team, obj: Obj) -> Location:
    """The workload in the team's values that an object comes from: a Job is named after its
    job; a service's objects after the service, its per-track ones `<service>-<vendor>`. Names
    alone would mislead: service `train-api`'s objects start with job `train`'s name."""
    name = str(obj["metadata"]["name"])
    if obj["kind"] in JOB_OBJECT_KINDS:
        if name in (team.doc.get("jobs", default={}) or {}):
            return team.doc.anchor(("jobs", name))
    else:
        for key, raw in (team.doc.get("services", default={}) or {}).items():
            tracks = (raw or {}).get("tracks") or {}
            if name == key or name in {f"{key}-{vendor}" for vendor in tracks}:
                return team.doc.anchor(("services", key))
    return team.doc.anchor(("quota",))


def team_build(workloads: Workloads, team: Team) -> TeamBuild:
    """The team's workload objects and their pod templates (the view's Build makes them once)."""
    view = workloads.view
    loaded = workloads.of(team)
    objs: list[Obj] = []
    pods: list[PodRef] = []
    for job in loaded.jobs:
        obj = _job(view, team, job)
        objs.append(obj)
        if job.has_tasks:
            # A Volcano task's pod template, or a JobSet replicated job's Job's.
            volcano = job.kind == "volcano"
            specs = (
                [t["template"]["spec"] for t in obj["spec"]["tasks"]]
                if volcano
                else [
                    r["template"]["spec"]["template"]["spec"] for r in obj["spec"]["replicatedJobs"]
                ]
            )
            kind = "Job (volcano) task" if volcano else "JobSet task"
            for task, spec in zip(job.tasks, specs, strict=True):
                pods.append(
                    PodRef(team, kind, f"{job.name}/{task.name}", spec, task.path, task.replicas)
                )
        elif job.kind == "trainjob":
            spec = trainjob_pod(view, team, job)["spec"]
            pods.append(PodRef(team, "TrainJob", job.name, spec, job.path, job.tasks[0].replicas))
        else:
            pods.append(
                PodRef(
                    team,
                    "Job",
                    job.name,
                    obj["spec"]["template"]["spec"],
                    job.path,
                    job.tasks[0].replicas,
                )
            )
    for svc in loaded.services:
        svc_objs = service_objects(view, team, svc)
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
                        int(obj["spec"]["replicas"]),
                    )
                )
            elif obj["kind"] == "LeaderWorkerSet":
                vendor = obj["metadata"]["labels"][TRACK_LABEL]
                group = obj["spec"]["leaderWorkerTemplate"]
                pods.append(
                    PodRef(
                        team,
                        "LeaderWorkerSet",
                        obj["metadata"]["name"],
                        group["leaderTemplate"]["spec"],
                        (*svc.path, "tracks", vendor),
                        int(obj["spec"]["replicas"]) * int(group["size"]),
                    )
                )
    return TeamBuild(
        _queues(workloads, team, pods) + objs + _claim_templates(workloads, team, objs),
        pods,
        usage.team_usage(workloads, team),
        usage.team_pinned(workloads, team),
    )


def _claim_templates(workloads: Workloads, team: Team, objs: list[Obj]) -> list[Obj]:
    """The ResourceClaimTemplates the team's pods name, one per name and namespace."""
    wanted: dict[tuple[str, str], Obj] = {}
    shapes = {
        claims.template_name(v, p.model, p.devices): (v, p) for v, p in _dra_pods(workloads, team)
    }
    for obj in objs:
        namespace = obj["metadata"].get("namespace", "")
        for name in _claims_named(obj):
            vendor, pod = shapes[name]
            wanted.setdefault(
                (namespace, name),
                claims.claim_template(
                    vendor, pod.model, pod.devices, namespace, team.doc.sources, _labels(team)
                ),
            )
    return [wanted[k] for k in sorted(wanted)]


def _dra_pods(workloads: Workloads, team: Team) -> list[tuple[Vendor, PodDecl]]:
    view = workloads.view
    loaded = workloads.of(team)
    decls = [t.pod for j in loaded.jobs for t in j.tasks]
    decls += [t.pod for s in loaded.services for t in s.local_tracks]
    out = []
    for pod in decls:
        vendor = view.vendor(pod.vendor)
        if vendor is not None and vendor.dra and pod.devices:
            out.append((vendor, pod))
    return out


def _claims_named(node: Any) -> list[str]:
    """Every resourceClaimTemplateName under an object (its pod templates, however nested)."""
    if isinstance(node, dict):
        out = [str(c["resourceClaimTemplateName"]) for c in node.get("resourceClaims") or []]
        for key, value in node.items():
            if key != "resourceClaims":
                out += _claims_named(value)
        return out
    if isinstance(node, list):
        return [n for item in node for n in _claims_named(item)]
    return []


# ---- pods ------------------------------------------------------------------------------------


def workload_mounts(vendor: Vendor) -> list[dict[str, Any]]:
    return list(vendor.doc.get("workloadMounts", default=[]) or [])


# cpu and memory every workload container requests unless its values say otherwise: without
# requests a pod is BestEffort, the first the kubelet evicts under node pressure.
DEFAULT_REQUESTS: dict[str, str] = {"cpu": "1", "memory": "2Gi"}


def security_contexts(
    pod_security: str, capabilities: tuple[str, ...] = ()
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(pod, container) security contexts for a namespace enforcing `pod_security`, the
    container adding `capabilities` (granted by the team's security profiles).

    'restricted' requires runAsNonRoot, RuntimeDefault seccomp, no privilege escalation and all
    capabilities dropped; 'baseline' requires none of them, and root CUDA/CANN images need to run
    as root, so there only seccomp and no privilege escalation are kept (both harmless to them)."""
    pod: dict[str, Any] = {"seccompProfile": {"type": "RuntimeDefault"}}
    ctr: dict[str, Any] = {"allowPrivilegeEscalation": False}
    caps: dict[str, Any] = {}
    if capabilities:
        caps["add"] = list(capabilities)
    if pod_security == "restricted":
        pod = {"runAsNonRoot": True, **pod}
        caps["drop"] = ["ALL"]
    if caps:
        ctr["capabilities"] = caps
    return pod, ctr


def _pod_spec(
    view: FleetView,
    name: str,
    pod: PodDecl,
    *,
    restart: str | None = None,
    pod_security: str = "restricted",
    active_deadline: int | None = None,
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
    extra = pod.extras
    env: list[Obj] = [{"name": k, "value": v} for k, v in pod.env.items()]
    env += [{"name": k, "valueFrom": v} for k, v in extra.env_sources.items()]
    if env:
        container["env"] = sorted(env, key=lambda e: str(e["name"]))
    if extra.env_from:
        container["envFrom"] = list(extra.env_from)
    spec: dict[str, Any] = {}
    selector: dict[str, str] = dict(pod.node_selector)
    mounts: list[dict[str, Any]] = []
    claims_of: list[Obj] = []
    if vendor is not None:
        if pod.devices and vendor.dra:
            # Devices by claim, not by extended resource (builders/claims.py); the template is
            # emitted beside the workload (_claim_templates).
            template = claims.template_name(vendor, pod.model, pod.devices)
            spec["resourceClaims"] = [{"name": claims.CLAIM, "resourceClaimTemplateName": template}]
            claims_of = [{"name": claims.CLAIM}]
        elif pod.devices:
            requests[vendor.resource_name] = pod.devices
            limits[vendor.resource_name] = pod.devices
        selector = {**vendor.selector, **selector}
        if pod.model and not pod.fallback_model:
            selector[vendor.model_label] = pod.model
        if pod.fallback_model:
            spec["affinity"] = model_affinity(view, vendor, pod.model, pod.fallback_model)
        if pod.devices and pod.vendor_mounts:
            mounts = workload_mounts(vendor)
        if pod.devices and vendor.runtime_class:
            spec["runtimeClassName"] = vendor.runtime_class
        spec["tolerations"] = [toleration(t) for t in vendor.all_taints]
    if extra.affinity:
        spec["affinity"] = combine_affinity(spec.get("affinity", {}), extra.affinity)
    if extra.tolerations:
        spec["tolerations"] = [*spec.get("tolerations", []), *extra.tolerations]
    if extra.topology_spread:
        spec["topologySpreadConstraints"] = list(extra.topology_spread)
    if extra.image_pull_secrets:
        spec["imagePullSecrets"] = list(extra.image_pull_secrets)
    if extra.service_account:
        spec["serviceAccountName"] = extra.service_account
    if extra.priority_class:
        spec["priorityClassName"] = extra.priority_class
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = dict(sorted(requests.items()))
    if limits:
        resources["limits"] = dict(sorted(limits.items()))
    if claims_of:
        resources["claims"] = claims_of
    container["resources"] = resources
    pod_context, container["securityContext"] = security_contexts(pod_security, extra.capabilities)
    volume_mounts: list[Obj] = [
        {"name": m["name"], "mountPath": m["path"], "readOnly": bool(m.get("readOnly"))}
        for m in mounts
    ]
    volumes: list[Obj] = [
        {"name": m["name"], "hostPath": {"path": m["path"], "type": "Directory"}} for m in mounts
    ]
    volume_mounts += extra.volume_mounts
    volumes += extra.volumes
    if extra.shm_size:
        # An emptyDir in memory is tmpfs: what it holds counts in the container's memory.
        volume_mounts.append({"name": podspec.SHM_VOLUME, "mountPath": podspec.SHM_PATH})
        volumes.append(
            {
                "name": podspec.SHM_VOLUME,
                "emptyDir": {"medium": "Memory", "sizeLimit": extra.shm_size},
            }
        )
    if volume_mounts:
        container["volumeMounts"] = volume_mounts
    if volumes:
        spec["volumes"] = volumes
    if selector:
        spec["nodeSelector"] = view.fleet.node_selector(selector)
    spec["securityContext"] = pod_context
    spec["containers"] = [container]
    if restart:
        spec["restartPolicy"] = restart
    if active_deadline is not None:
        # A Volcano Job has no deadline of its own (volcano.sh/apis v1.14.0
        # pkg/apis/batch/v1alpha1/job.go JobSpec): each pod gets it, counted from its start.
        spec["activeDeadlineSeconds"] = active_deadline
    return dict(sorted(spec.items()))


def model_affinity(view: FleetView, vendor: Vendor, preferred: str, fallback: str) -> Obj:
    """Node affinity for a preferred pool model and an acceptable fallback of the same vendor:
    required: either model; preferred: the first (weight 100, the most the API allows)."""
    key = view.fleet.label_key(vendor.model_label)
    models = [m for m in (preferred, fallback) if m]

    def term(values: list[str]) -> Obj:
        return {"matchExpressions": [{"key": key, "operator": "In", "values": values}]}

    node: Obj = {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term(models)]}
    }
    if preferred:
        node["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": 100, "preference": term([preferred])}
        ]
    return {"nodeAffinity": node}


def combine_affinity(generated: Obj, user: Obj) -> Obj:
    """The workload's affinity with the generator's (a fallback model's node affinity): both
    hold. Node selector terms are ORed and a term's expressions ANDed (k8s.io/api v0.36.3
    core/v1/types.go NodeSelector), so each of the user's required terms gets the generator's
    expressions added, one term per pair; preferred terms add up; pod (anti-)affinity is the
    user's alone."""
    out: Obj = dict(user)
    mine, theirs = generated.get("nodeAffinity"), user.get("nodeAffinity")
    if not mine:
        return dict(sorted(out.items()))
    if not theirs:
        out["nodeAffinity"] = mine
        return dict(sorted(out.items()))
    node: Obj = {}
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    ours = (mine.get(required) or {}).get("nodeSelectorTerms") or []
    users = (theirs.get(required) or {}).get("nodeSelectorTerms") or []
    if ours or users:
        terms = [
            {
                key: [*(u.get(key) or []), *(o.get(key) or [])]
                for key in ("matchExpressions", "matchFields")
                if u.get(key) or o.get(key)
            }
            for u in (users or [{}])
            for o in (ours or [{}])
        ]
        node[required] = {"nodeSelectorTerms": terms}
    preferred = "preferredDuringSchedulingIgnoredDuringExecution"
    weighted = [*(mine.get(preferred) or []), *(theirs.get(preferred) or [])]
    if weighted:
        node[preferred] = weighted
    out["nodeAffinity"] = node
    return dict(sorted(out.items()))


def _template(labels: dict[str, str], spec: Obj, pod: PodDecl) -> Obj:
    """A pod template: labels, the workload's pod annotations, the spec."""
    meta: Obj = {"labels": labels}
    if pod.extras.annotations:
        meta["annotations"] = dict(pod.extras.annotations)
    return {"metadata": meta, "spec": spec}


def _labels(team: Team, **extra: str) -> dict[str, str]:
    return {TEAM_LABEL: team.name, **extra}


def network_topology(job: Job) -> Obj:
    """The Volcano Job's `spec.networkTopology` (volcano.sh/apis v1.14.0
    pkg/apis/batch/v1alpha1/job.go NetworkTopologySpec): `mode` hard or soft (the CRD defaults it
    to hard; written out so the manifest says what it asks for), then the highest HyperNode tier
    the job may span, by number (`highestTierAllowed`) or by name (`highestTierName`). Volcano's
    job controller copies it to the job's PodGroup (volcano-sh/volcano v1.14.0
    pkg/controllers/job/job_controller_actions.go), where the `network-topology-aware` scheduler
    plugin enforces it (builders/scheduling.py)."""
    raw = job.network_topology or {}
    out: Obj = {"mode": str(raw.get("mode", "hard"))}
    for key in ("highestTierAllowed", "highestTierName"):
        if raw.get(key) is not None:
            out[key] = raw[key]
    return out


def _jobset(view: FleetView, team: Team, job: Job) -> Obj:
    """A JobSet (sigs.k8s.io/jobset v0.11.1 api/jobset/v1alpha2): one replicated job per task,
    each one batch/v1 Job of `replicas` pods (parallelism = completions), so that a task's
    devices are its replicas x devices as for a Volcano task. Kueue admits the whole JobSet as
    one workload with a pod set per replicated job (kueue v0.17.0
    pkg/controller/jobs/jobset/jobset_controller.go PodSets), by the queue label on the
    JobSet."""
    meta_labels = _labels(team)
    replicated = []
    for task in job.tasks:
        labels = _labels(team, **{NAME_LABEL: job.name, VENDOR_LABEL: task.pod.vendor})
        template = _template(
            labels,
            _pod_spec(
                view,
                task.name,
                task.pod,
                restart="Never",
                pod_security=team.pod_security,
            ),
            task.pod,
        )
        _wire_pods(view, team, template)
        child: Obj = {
            "parallelism": task.replicas,
            "completions": task.replicas,
            "backoffLimit": job.backoff_limit,
        }
        if job.active_deadline is not None:
            child["activeDeadlineSeconds"] = job.active_deadline
        replicated.append(
            {
                "name": task.name,
                "replicas": 1,
                "template": {"spec": {**child, "template": template}},
            }
        )
    spec: Obj = {}
    if job.success_policy is not None:
        spec["successPolicy"] = job.success_policy
    if job.failure_policy is not None:
        spec["failurePolicy"] = job.failure_policy
    if job.ttl_after_finished is not None:
        spec["ttlSecondsAfterFinished"] = job.ttl_after_finished
    spec["replicatedJobs"] = replicated
    _queue_label(view, team, meta_labels)
    return {
        "apiVersion": JOBSET,
        "kind": "JobSet",
        "metadata": metadata(
            job.name, namespace=job.namespace, sources=team.doc.sources, labels=meta_labels
        ),
        "spec": spec,
    }


def trainjob_pod(view: FleetView, team: Team, job: Job) -> Obj:
    """The pod template of a TrainJob's nodes as the generator means it (the checks read it):
    what Trainer makes of the runtime's template, the TrainJob's trainer fields and the fleet's
    runtime patch together."""
    task = job.tasks[0]
    labels = _labels(team, **{NAME_LABEL: job.name, VENDOR_LABEL: task.pod.vendor})
    spec = _pod_spec(view, TRAINER_STEP, task.pod, pod_security=team.pod_security)
    return _template(labels, spec, task.pod)


def _trainjob(view: FleetView, team: Team, job: Job) -> Obj:
    """A Kubeflow Trainer TrainJob (trainer.kubeflow.org/v1alpha1, v2.2.0) on the fleet's
    ClusterTrainingRuntime `job.runtime`: the trainer's image, command, env and devices per node
    in `spec.trainer`, numNodes its pods; what places the pods on the vendor's pool (selector,
    tolerations, affinity), its volumes and identity in a runtime patch of the trainer step,
    the one way a TrainJob sets them (trainjob_types.go RuntimePatch). Trainer runs it as a
    JobSet; Kueue admits the TrainJob whole (trainjob integration), by the queue label on it.
    What a TrainJob cannot carry is refused before this (policy/workloads.py WKL010)."""
    template = trainjob_pod(view, team, job)
    pod = template["spec"]
    container = pod["containers"][0]
    trainer: Obj = {"image": container["image"]}
    for key in ("command", "args", "env"):
        if key in container:
            trainer[key] = container[key]
    trainer["numNodes"] = job.tasks[0].replicas
    if job.procs_per_node is not None:
        trainer["numProcPerNode"] = job.procs_per_node
    trainer["resourcesPerNode"] = container["resources"]
    patched: Obj = {k: pod[k] for k in TRAINER_POD_FIELDS if k in pod}
    patched["containers"] = [
        {
            "name": TRAINER_STEP,
            **{k: container[k] for k in TRAINER_CONTAINER_FIELDS if k in container},
        }
    ]
    step = {
        "name": TRAINER_STEP,
        "template": {"spec": {"template": {"metadata": template["metadata"], "spec": patched}}},
    }
    meta_labels = _labels(team)
    _queue_label(view, team, meta_labels)  # its pods' scheduler: WKL010 refuses any other
    spec: Obj = {
        # apiGroup and kind as the CRD defaults them, written out so that Argo CD sees no drift.
        "runtimeRef": {
            "apiGroup": api.TRAINER_GROUP,
            "kind": "ClusterTrainingRuntime",
            "name": job.runtime,
        },
        "trainer": trainer,
        "runtimePatches": [
            {
                "manager": TRAINER_PATCH_MANAGER,
                "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [step]}}},
            }
        ],
    }
    if job.active_deadline is not None:
        spec["activeDeadlineSeconds"] = job.active_deadline
    return {
        "apiVersion": TRAINER,
        "kind": "TrainJob",
        "metadata": metadata(
            job.name, namespace=job.namespace, sources=team.doc.sources, labels=meta_labels
        ),
        "spec": spec,
    }


def _job(view: FleetView, team: Team, job: Job) -> Obj:
    sources = team.doc.sources
    if job.kind == "jobset":
        return _jobset(view, team, job)
    if job.kind == "trainjob":
        return _trainjob(view, team, job)
    if job.kind == "volcano":
        tasks = []
        for task in job.tasks:
            tlabels = _labels(team, **{NAME_LABEL: job.name, VENDOR_LABEL: task.pod.vendor})
            tasks.append(
                {
                    "name": task.name,
                    "replicas": task.replicas,
                    "template": _template(
                        tlabels,
                        _pod_spec(
                            view,
                            task.name,
                            task.pod,
                            restart="Never",
                            pod_security=team.pod_security,
                            active_deadline=job.active_deadline,
                        ),
                        task.pod,
                    ),
                }
            )
        spec: Obj = {
            "schedulerName": "volcano",
            "queue": queue_name(team) if backend(view) == "volcano" else "default",
            "minAvailable": job.min_available,
            "maxRetry": job.backoff_limit,
            "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
        }
        if job.network_topology is not None:
            spec["networkTopology"] = network_topology(job)
        if job.ttl_after_finished is not None:
            spec["ttlSecondsAfterFinished"] = job.ttl_after_finished
        spec["tasks"] = tasks
        return {
            "apiVersion": VOLCANO_BATCH,
            "kind": "Job",
            "metadata": metadata(
                job.name, namespace=job.namespace, sources=sources, labels=_labels(team)
            ),
            "spec": spec,
        }
    task = job.tasks[0]
    labels = _labels(team, **{NAME_LABEL: job.name, VENDOR_LABEL: task.pod.vendor})
    meta_labels = _labels(team)
    template = _template(
        labels,
        _pod_spec(view, job.name, task.pod, restart="Never", pod_security=team.pod_security),
        task.pod,
    )
    _wire_queue(view, team, meta_labels, template)
    spec = {
        "parallelism": task.replicas,
        "completions": job.completions,
        "backoffLimit": job.backoff_limit,
    }
    if job.active_deadline is not None:
        spec["activeDeadlineSeconds"] = job.active_deadline
    if job.ttl_after_finished is not None:
        spec["ttlSecondsAfterFinished"] = job.ttl_after_finished
    return {
        "apiVersion": BATCH,
        "kind": "Job",
        "metadata": metadata(
            job.name, namespace=job.namespace, sources=sources, labels=meta_labels
        ),
        "spec": {**spec, "template": template},
    }


# ---- services --------------------------------------------------------------------------------


def service_objects(view: FleetView, team: Team, svc: Service) -> list[Obj]:
    """A service's objects in the view's cluster, at its phase: what the view's build holds of
    it. `simulate --phases` renders a service at each phase of its ladder through here too (a
    Service with another phase), so that no second table of phases exists."""
    sources = team.doc.sources
    plans = {p.vendor: p for p in plan_service(svc)}
    objs: list[Obj] = []
    # With a multi-host track (a LeaderWorkerSet), only the pods that serve (a Deployment's, a
    # group's leader) carry the serving label, and every Service of the service selects it: a
    # group's workers take no traffic. Services without one keep their selectors as they were.
    grouped = any(t.group_size > 1 for t in svc.tracks)
    serving = {SERVING_LABEL: "true"} if grouped else {}
    # A service across clusters: each cluster renders its own tracks (Service.local_tracks).
    for track in svc.local_tracks:
        name = f"{svc.name}-{track.vendor}"
        match = {NAME_LABEL: svc.name, TRACK_LABEL: track.vendor}
        labels = _labels(team, **match, **{VENDOR_LABEL: track.vendor})
        pod = _pod_spec(view, svc.name, track.pod, pod_security=team.pod_security)
        worker_pod = copy.deepcopy(pod)
        ctr = pod["containers"][0]
        ctr["ports"] = [{"name": "http", "containerPort": svc.container_port, "protocol": "TCP"}]
        for key, default in (
            ("readinessProbe", READINESS_PROBE),
            ("livenessProbe", LIVENESS_PROBE),
        ):
            ctr[key] = team.doc.get(*svc.path, key, default=None) or default
        template = _template({**labels, **serving}, pod, track.pod)
        meta_labels = dict(labels)
        _wire_queue(view, team, meta_labels, template)
        if track.group_size > 1:
            worker = _template(labels, worker_pod, track.pod)
            _wire_pods(view, team, worker)
            objs.append(
                {
                    "apiVersion": LWS,
                    "kind": "LeaderWorkerSet",
                    "metadata": metadata(
                        name, namespace=svc.namespace, sources=sources, labels=meta_labels
                    ),
                    "spec": {
                        "replicas": plans[track.vendor].replicas,
                        "leaderWorkerTemplate": {
                            "size": track.group_size,
                            "restartPolicy": "RecreateGroupOnPodRestart",
                            "leaderTemplate": template,
                            "workerTemplate": worker,
                        },
                        **LWS_DEFAULTS,
                    },
                }
            )
        else:
            objs.append(
                {
                    "apiVersion": APPS,
                    "kind": "Deployment",
                    "metadata": metadata(
                        name, namespace=svc.namespace, sources=sources, labels=meta_labels
                    ),
                    "spec": {
                        "replicas": plans[track.vendor].replicas,
                        "selector": {"matchLabels": match},
                        "template": template,
                    },
                }
            )
        objs.append(_svc(name, svc, team, labels, {**match, **serving}))
        if svc.cross is not None:
            objs.append(_service_export(name, svc, team, labels))
        budget: dict[str, Any] = (
            {"minAvailable": track.min_available}
            if track.min_available is not None
            else {"maxUnavailable": 1}
        )
        objs.append(
            {
                "apiVersion": POLICY,
                "kind": "PodDisruptionBudget",
                "metadata": metadata(name, namespace=svc.namespace, sources=sources, labels=labels),
                "spec": {**budget, "selector": {"matchLabels": match}},
            }
        )
    if svc.cross is not None:
        # No cluster holds both tracks: no Service spans them. The ingress cluster's HTTPRoute
        # sends each track its weight through the track's ServiceImport, which the MCS
        # implementation makes in every cluster of the set from the ServiceExport above
        # (Gateway API v1.6.3 geps/gep-1748: "References to ServiceImports MUST be interpreted
        # as routing to Multi-Cluster endpoints across the ClusterSet"); routing: external
        # leaves the split to the global load balancer (render/traffic.py).
        if svc.routes_here:
            refs = [
                {
                    "group": MCS_GROUP,
                    "kind": "ServiceImport",
                    "name": f"{svc.name}-{t.vendor}",
                    "port": svc.port,
                    "weight": plans[t.vendor].weight,
                }
                for t in svc.tracks
            ]
            objs.append(_http_route(svc, team, svc.cross.gateway, refs))
        return objs
    # The Service over all tracks: when one track takes all the traffic it selects only that
    # track (a selector change moves traffic without restarting pods); otherwise it spans the
    # serving tracks and traffic follows ready pods (MIG006 warns when that is not the weights).
    carrying = [t.vendor for t in svc.tracks if plans[t.vendor].weight > 0]
    match = {NAME_LABEL: svc.name, **serving}
    if len(carrying) == 1:
        match[TRACK_LABEL] = carrying[0]
    labels = _labels(team, **{NAME_LABEL: svc.name})
    objs.append(_svc(svc.name, svc, team, labels, match, {PHASE_ANNOTATION: svc.phase}))
    backends = [(f"{svc.name}-{t.vendor}", plans[t.vendor].weight) for t in svc.tracks]
    if svc.routing == "gateway":
        refs = [
            {"group": "", "kind": "Service", "name": n, "port": svc.port, "weight": w}
            for n, w in backends
        ]
        objs.append(_http_route(svc, team, svc.gateway, refs))
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


def _svc(
    name: str,
    svc: Service,
    team: Team,
    labels: dict[str, str],
    match: dict[str, str],
    annotations: dict[str, str] | None = None,
) -> Obj:
    return {
        "apiVersion": CORE,
        "kind": "Service",
        "metadata": metadata(
            name,
            namespace=svc.namespace,
            sources=team.doc.sources,
            labels=labels,
            annotations=annotations,
        ),
        "spec": {
            "selector": match,
            "ports": [{"name": "http", "port": svc.port, "targetPort": "http", "protocol": "TCP"}],
        },
    }


def _http_route(svc: Service, team: Team, gateway: dict[str, Any], refs: list[Obj]) -> Obj:
    """The HTTPRoute of a service: `gateway` its values' gateway block, `refs` its weighted
    backendRefs (Services in one cluster, ServiceImports across clusters)."""
    parents = [
        {"group": "gateway.networking.k8s.io", "kind": "Gateway", **ref}
        for ref in gateway.get("parentRefs", [])
    ]
    spec: dict[str, Any] = {"parentRefs": parents}
    if gateway.get("hostnames"):
        spec["hostnames"] = list(gateway["hostnames"])
    # The match the API server would fill in (sigs.k8s.io/gateway-api v1.6.3 config/crd/
    # standard/gateway.networking.k8s.io_httproutes.yaml: rules[].matches `default: [{path:
    # {type: PathPrefix, value: /}}]`), written out: left out, Argo CD finds the route it
    # applied OutOfSync with the defaulted one (simulate showed it).
    spec["rules"] = [
        {"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "backendRefs": refs}
    ]
    return _route(GATEWAY, "HTTPRoute", svc, team, spec)


def _service_export(name: str, svc: Service, team: Team, labels: dict[str, str]) -> Obj:
    """A track's Service exported to the cluster set: the MCS implementation then serves a
    ServiceImport of the same name and namespace in every cluster of the set (sigs.k8s.io/
    mcs-api v0.5.2 config/crd/multicluster.x-k8s.io_serviceexports.yaml: "ServiceExport declares
    that the Service with the same name and namespace as this export should be consumable from
    other clusters")."""
    return {
        "apiVersion": MCS,
        "kind": "ServiceExport",
        "metadata": metadata(
            name, namespace=svc.namespace, sources=team.doc.sources, labels=labels
        ),
    }


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
    return _route(ISTIO_NETWORKING, "VirtualService", svc, team, spec)


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
    """Devices per resource name that are the team's own across its namespaces (quota x
    namespaces): a Volcano Queue's `deserved`, a ClusterQueue's nominal quota."""
    out: dict[str, int] = {}
    for vendor in view.vendors:
        out[vendor.resource_name] = out.get(vendor.resource_name, 0) + scheduling.team_share(
            team, vendor
        )
    return dict(sorted(out.items()))


def team_capability(view: FleetView, team: Team) -> dict[str, int]:
    """The most devices per resource name the team's queue lets it hold: its own plus what it
    may borrow (a Volcano Queue's `capability`, a ClusterQueue's nominal + borrowing limit)."""
    out: dict[str, int] = {}
    for vendor in view.vendors:
        n = scheduling.team_ceiling(view, team, vendor)
        out[vendor.resource_name] = out.get(vendor.resource_name, 0) + n
    return dict(sorted(out.items()))


def pinned_needs(workloads: Workloads, team: Team, vendor: Vendor) -> dict[str, int]:
    """Per pool model of `vendor`, the most devices one Kueue workload of the team pinned to that
    model asks for at once: a batch/v1 Job's pods are one workload (parallelism x devices), a
    service's pods one workload each. Kueue gives a workload's resource one flavor (kueue v0.17.0
    pkg/scheduler/flavorassigner/flavorassigner.go, assignFlavors: one flavor per resource
    group), and a flavor is a pool, so the pool of that model must hold it alone. A workload with
    a fallback model counts for its preferred model."""
    loaded = workloads.of(team)
    pods = [(t.pod, t.replicas) for j in loaded.jobs if j.kind != "volcano" for t in j.tasks]
    pods += [(t.pod, t.group_size) for s in loaded.services for t in s.local_tracks]
    out: dict[str, int] = {}
    for pod, count in pods:
        if pod.vendor == vendor.id and pod.model and pod.devices:
            key = pod.model.casefold()
            out[key] = max(out.get(key, 0), pod.devices * count)
    return dict(sorted(out.items()))


def flavor_split(team: Team, vendor: Vendor, needs: dict[str, int]) -> list[tuple[int, int]]:
    """The team's share of a vendor, and what it may borrow, over its pools' flavors (nominal
    quota and borrowing limit per pool, in pool order).

    The share goes first to what each pinned model needs (`needs`), on the first pool of that
    model large enough to hold it (else the first of that model), as far as the share goes; the
    rest fills the pools in order up to each pool's capacity, the last pool taking what remains.
    A team that quotas the vendor per model has a share per model, spread that way over that
    model's pools alone (a model it gives nothing has nominal 0). The borrowing limit goes over
    all the pools to what the nominal quota left short of each need, then in pool order. Before
    pinned needs came first, the share went to the first pools only, and a job pinned to a
    later pool's model got a flavor of nominal 0 that Kueue could never admit it on."""
    pools = vendor.pools
    targets: list[tuple[int, int]] = []  # (pool index, devices) per pinned model
    for model, need in needs.items():
        of_model = [i for i, p in enumerate(pools) if p.model.casefold() == model]
        if of_model:  # else no pool of that model: the placement checks say so
            i = next((i for i in of_model if pools[i].capacity >= need), of_model[0])
            targets.append((i, need))
    by_model = scheduling.model_shares(team, vendor)
    shares = (
        [
            ([i for i, p in enumerate(pools) if p.model.casefold() == m.casefold()], n)
            for m, n in by_model.items()
        ]
        if team.models.get(vendor.id)
        else [(list(range(len(pools))), scheduling.team_share(team, vendor))]
    )
    nominal = [0] * len(pools)
    for indices, share in shares:
        mine = [(indices.index(i), need) for i, need in targets if i in indices]
        spread = _spread(share, tuple(pools[i] for i in indices), mine, [0] * len(indices))
        for i, got in zip(indices, spread, strict=True):
            nominal[i] = got
    short = [(i, max(need - nominal[i], 0)) for i, need in targets]
    borrow = _spread(scheduling.borrowing(team, vendor), pools, short, [0] * len(pools))
    return list(zip(nominal, borrow, strict=True))


def _spread(
    total: int, pools: tuple[Pool, ...], targets: list[tuple[int, int]], got: list[int]
) -> list[int]:
    """`total` over the pools: each target (pool, devices) first, then the pools in order up to
    their capacity, the last pool taking what remains."""
    for i, want in targets:
        give = min(want, total)
        got[i] += give
        total -= give
    for i, pool in enumerate(pools):
        last = i == len(pools) - 1
        give = total if last else min(total, max(pool.capacity - got[i], 0))
        got[i] += give
        total -= give
    return got


def _wire_queue(view: FleetView, team: Team, meta_labels: dict[str, str], tpl: Obj) -> None:
    """Point a batch/v1 Job's or a Deployment's pods at the team's queue, so that the backend
    accounts for services too (one accounting per backend, docs/scheduling.md)."""
    _queue_label(view, team, meta_labels)
    _wire_pods(view, team, tpl)


def _queue_label(view: FleetView, team: Team, meta_labels: dict[str, str]) -> None:
    """Under Kueue, the label by which Kueue admits the object to the team's LocalQueue."""
    if backend(view) == "kueue":
        meta_labels[QUEUE_LABEL] = queue_name(team)


def _wire_pods(view: FleetView, team: Team, tpl: Obj) -> None:
    """A pod template's scheduler (the fleet's, when it is not the default) and, under Volcano,
    the team's queue."""
    name = scheduling.scheduler_name(view)
    if name != kube.DEFAULT_SCHEDULER:
        tpl["spec"]["schedulerName"] = name
    if backend(view) == "volcano":
        tpl.setdefault("metadata", {}).setdefault("annotations", {})[VOLCANO_QUEUE_ANNOTATION] = (
            queue_name(team)
        )


def _wave(team: Team, name: str, namespace: str | None = None) -> Obj:
    return metadata(
        name,
        namespace=namespace,
        sources=team.doc.sources,
        labels=_labels(team),
        annotations={SYNC_WAVE: QUEUE_WAVE},
    )


def _queues(workloads: Workloads, team: Team, pods: list[PodRef]) -> list[Obj]:
    view = workloads.view
    kind = backend(view)
    if kind == "volcano":
        spec: dict[str, Any] = {
            "weight": 1,
            "reclaimable": True,
            "capability": team_capability(view, team),
        }
        if scheduling.queue_policy(view) == "capacity":
            spec["deserved"] = team_devices(view, team)
        return [
            {
                "apiVersion": VOLCANO_SCHEDULING,
                "kind": "Queue",
                "metadata": _wave(team, queue_name(team)),
                "spec": spec,
            }
        ]
    if kind != "kueue":
        return []
    groups: dict[str, list[dict[str, Any]]] = {}
    for vendor in view.vendors:
        split = flavor_split(team, vendor, pinned_needs(workloads, team, vendor))
        for pool, (nominal, limit) in zip(vendor.pools, split, strict=True):
            groups.setdefault(vendor.resource_name, []).append(
                {
                    "name": scheduling.flavor_name(vendor, pool),
                    "resources": [
                        {
                            "name": vendor.resource_name,
                            "nominalQuota": nominal,
                            "borrowingLimit": limit,
                        }
                    ],
                }
            )
    resource_groups = [
        {"coveredResources": [res], "flavors": flavors} for res, flavors in sorted(groups.items())
    ]
    general = scheduling.general_requests(view, [(p.spec, p.count) for p in pods], set(groups))
    if general:
        # Kueue admits a workload only if its ClusterQueue covers every resource it requests
        # (cpu, memory): one group on the `general` flavor, as much as the team's workloads ask
        # for at most, so that only accelerators decide admission.
        resource_groups.append(
            {
                "coveredResources": list(general),
                "flavors": [
                    {
                        "name": scheduling.GENERAL_FLAVOR,
                        "resources": [
                            {"name": r, "nominalQuota": q, "borrowingLimit": 0}
                            for r, q in general.items()
                        ],
                    }
                ],
            }
        )
    cluster_queue = {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": _wave(team, queue_name(team)),
        "spec": {
            "cohortName": cohort(view),
            "namespaceSelector": {"matchLabels": {TEAM_LABEL: team.name}},
            # A team takes back the nominal quota it lent: preempt borrowers in the cohort
            # (kueue v0.17.0 clusterqueue_types.go ClusterQueuePreemption; default Never).
            "preemption": {"reclaimWithinCohort": "Any"},
            "resourceGroups": resource_groups,
        },
    }
    local = [
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": _wave(team, queue_name(team), ns),
            "spec": {"clusterQueue": queue_name(team)},
        }
        for ns in team.namespaces
    ]
    return [cluster_queue, *local]
