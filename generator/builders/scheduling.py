"""Scheduler configuration per backend, and the one device accounting of each (docs/scheduling.md).

- `volcano`: the Volcano scheduler's ConfigMap (actions, gang, capacity or proportion, binpack
  weighted per vendor resource, resourcequota, and network-topology-aware when a Volcano Job
  asks for a network topology), in unit `scheduling`. Team Queues are built with
  the team's workloads (builders/workloads.py).
- `quota` and `kueue` run on the default scheduler: with `kubeScheduler.packing`, a
  KubeSchedulerConfiguration whose profile scores NodeResourcesFit by MostAllocated, weighted per
  accelerator resource, as a ConfigMap in unit `scheduling` for clusters that run their own
  scheduler profile. Kueue's ResourceFlavors (one per vendor pool) go in the same unit.

Every Volcano key below was read in volcano-sh/volcano at v1.14.0 (the release of the
volcano.sh/apis v1.14.0 that gotools/crdgen pins); the file and line is next to each.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from generator.builders import mirrors, platform
from generator.builders.build import Parts
from generator.builders.common import metadata, toleration
from generator.values.model import FleetView, Pool, Team, Vendor
from generator.values.quantity import format_quantity, parse_quantity
from generator.values.yamlio import dump
from generator.vocab import addons
from generator.vocab.api import (
    APPS,
    CORE,
    KUBE_SCHEDULER_CONFIG,
    KUEUE,
    KUEUE_CONFIG,
    KUEUE_FRAMEWORKS,
    RBAC,
    SCHEDULING,
    TRAINER_GROUP,
)
from generator.vocab.kube import DEFAULT_SCHEDULER
from generator.vocab.labels import (
    COMPONENT_LABEL,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    NAME_LABEL,
    VENDOR_LABEL,
)
from generator.vocab.names import KUBE_SCHEDULER_IMAGE
from generator.vocab.objects import Obj
from generator.vocab.units import PACKING_UNIT, SCHEDULING_UNIT, Component
from generator.workloads.model import Workloads

BACKENDS = ("quota", "volcano", "kueue")
QUEUE_BACKENDS = ("volcano", "kueue")
DEFAULT_BINPACK_WEIGHT = 10

# volcano-sh/volcano v1.14.0 installer/helm/chart/volcano/templates/scheduler.yaml: the chart's
# ConfigMap `<release>-scheduler-configmap` holds `volcano-scheduler.conf`, which the scheduler
# reads from --scheduler-conf and reloads when the file changes (pkg/scheduler/scheduler.go,
# NewScheduler's filewatcher and loadSchedulerConf).
VOLCANO_NAMESPACE = "volcano-system"
VOLCANO_CONFIGMAP = "volcano-scheduler-configmap"
VOLCANO_CONF_KEY = "volcano-scheduler.conf"

KUBE_SCHEDULER_CONFIGMAP = "accel-kube-scheduler-config"
KUBE_SCHEDULER_CONF_KEY = "kube-scheduler-config.yaml"
# The packing scheduler the fleet runs beside the cluster's own: its name, ServiceAccount, lease
# and Deployment, in a unit of its own (PACKING_UNIT) that syncs in the same wave as the team units
# whose pods name it (builders/common.py UNIT_WAVES).
PACKING_SCHEDULER = "accel-packing-scheduler"
FLEET, CONTROL_PLANE = "fleet", "control-plane"
# kube-scheduler serves /healthz and /readyz over HTTPS on this port (k8s.io/kubernetes v1.36.3
# pkg/scheduler/apis/config/types.go, DefaultKubeSchedulerPort).
KUBE_SCHEDULER_PORT = 10259
CONFIG_DIR = "/etc/kubernetes/accel-packing-scheduler"


def _settings(view: FleetView, *path: str, default: Any) -> Any:
    return view.fleet.doc.get("scheduling", *path, default=default)


def backend(view: FleetView) -> str:
    return str(_settings(view, "backend", default="quota"))


def queue_policy(view: FleetView) -> str:
    """Volcano's queue plugin: `capacity` (deserved = quota, borrow up to capability) or
    `proportion` (deserved by weight)."""
    return str(_settings(view, "volcano", "queuePolicy", default="capacity"))


def scheduler_name(view: FleetView) -> str:
    """The scheduler the team's pods name (`spec.schedulerName`): Volcano's under its backend; with
    a packing profile the fleet runs, that scheduler (its own name, `PACKING_SCHEDULER` unless
    values name it); else `kubeScheduler.schedulerName`, default the cluster's own."""
    if backend(view) == "volcano":
        return "volcano"
    default = (
        PACKING_SCHEDULER if packing(view) and packing_runs(view) == FLEET else DEFAULT_SCHEDULER
    )
    return str(_settings(view, "kubeScheduler", "schedulerName", default=default))


def packing(view: FleetView) -> bool:
    """Whether the fleet renders a packing profile."""
    return backend(view) != "volcano" and bool(
        _settings(view, "kubeScheduler", "packing", default=False)
    )


def packing_runs(view: FleetView) -> str:
    """Who runs the packing profile: `fleet` (a second kube-scheduler the fleet renders, beside
    the cluster's own) or `control-plane` (the cluster's kube-scheduler is started with it: a
    self-managed control plane, declared here and not rendered)."""
    return str(_settings(view, "kubeScheduler", "runs", default=FLEET))


# ---- one accounting per backend ---------------------------------------------------------------


def borrowing(team: Team, vendor: Vendor) -> int:
    """Devices the team may borrow from the rest of the fleet above its own quota (team-wide)."""
    return int(team.doc.get("borrowing", vendor.id, default=0) or 0)


def team_share(team: Team, vendor: Vendor) -> int:
    """The team's own devices of a vendor across its namespaces (quota is per namespace); of a
    vendor it quotas per model, the models' sum (those of the vendor's pools: RES003 names any
    other, and it counts nowhere)."""
    if team.models.get(vendor.id):
        return sum(model_shares(team, vendor).values())
    return team.quota.get(vendor.id, 0) * len(team.namespaces)


def model_shares(team: Team, vendor: Vendor) -> dict[str, int]:
    """The team's own devices of each model of a vendor it quotas per model, across its
    namespaces, keyed by the model as the vendor's pools spell it ({} for a quota per vendor;
    a model no pool has is RES003's and counts for none)."""
    out: dict[str, int] = {}
    for model, count in team.models.get(vendor.id, {}).items():
        if spelt := vendor.pool_model(model):
            out[spelt] = out.get(spelt, 0) + count * len(team.namespaces)
    return out


def team_ceiling(view: FleetView, team: Team, vendor: Vendor) -> int:
    """The most devices the team's queue lets it hold at once: its share plus what it may borrow
    (borrowing only exists where a queue lends: volcano and kueue)."""
    extra = borrowing(team, vendor) if backend(view) in QUEUE_BACKENDS else 0
    return team_share(team, vendor) + extra


def accounted_devices(view: FleetView, team: Team, vendor: Vendor) -> int:
    """What the team's ResourceQuota allows per namespace for a vendor's resource.

    One accounting per backend. With `quota`, the ResourceQuota is the limit: the team's quota per
    namespace. With a queue (Volcano Queue, Kueue ClusterQueue), the queue is the limit, for all
    the team's namespaces together, and lends and borrows; the ResourceQuota only stops pods that
    bypass the queue, so it is the queue's ceiling in every namespace and never refuses a pod
    the queue admitted.
    """
    if backend(view) in QUEUE_BACKENDS:
        return team_ceiling(view, team, vendor)
    return team.quota.get(vendor.id, 0)


# ---- binpack weights --------------------------------------------------------------------------


def binpack_weight(vendor: Vendor) -> int:
    return int(vendor.doc.get("binpackWeight", default=DEFAULT_BINPACK_WEIGHT))


def resource_weights(view: FleetView) -> dict[str, int]:
    """Packing weight per accelerator resource name. Vendors that share a resource name (AMD and
    the seed's Hygon DCU both advertise amd.com/gpu) share one weight: the scheduler only sees the
    name, so the larger of their weights applies."""
    out: dict[str, int] = {}
    for vendor in view.vendors:
        if vendor.dra:
            continue  # no extended resource for NodeResourcesFit to weigh: its pods claim devices
        out[vendor.resource_name] = max(out.get(vendor.resource_name, 0), binpack_weight(vendor))
    return dict(sorted(out.items()))


# ---- Volcano -----------------------------------------------------------------------------------


def network_topology_jobs(workloads: Workloads) -> list[tuple[Team, str]]:
    """(team, job) of every rendered Volcano Job of the view that sets `networkTopology`."""
    return [
        (team, job.name)
        for team in workloads.view.teams
        for job in workloads.of(team).jobs
        if job.kind == "volcano" and job.network_topology is not None
    ]


def network_topology_plugin(weights: dict[str, int]) -> dict[str, Any]:
    """Volcano's `network-topology-aware` plugin (volcano-sh/volcano v1.14.0
    pkg/scheduler/plugins/network-topology-aware/network_topology_aware.go; enabled in the second
    tier next to binpack as docs/user-guide/how_to_use_network_topology_aware_scheduling.md
    shows). It is what enforces a job's `networkTopology`: its HyperNodeGradientForJobFn drops
    HyperNodes above `highestTierAllowed` in hard mode; without it the session falls back to the
    whole cluster (pkg/scheduler/framework/session_plugins.go HyperNodeGradientForJobFn).

    Its HyperNode-level bin packing weighs only cpu, memory and the resources listed in
    `hypernode.binpack.resources` (getPriorityWeight, getBinPackWeight; GetInt, so integers), so
    the accelerator resources are listed with the same weights as the node-level binpack. The
    plugin's `weight` and the normal-pod settings keep their upstream defaults (1, enabled, 0.8)."""
    args: dict[str, Any] = {"hypernode.binpack.cpu": 1, "hypernode.binpack.memory": 1}
    if weights:
        args["hypernode.binpack.resources"] = ", ".join(weights)
        for resource, weight in weights.items():
            args[f"hypernode.binpack.resources.{resource}"] = weight
    return {"name": "network-topology-aware", "arguments": args}


def volcano_conf(workloads: Workloads) -> dict[str, Any]:
    """The Volcano scheduler configuration (pkg/scheduler/conf/scheduler_conf.go,
    SchedulerConfiguration: `actions`, `tiers[].plugins[]` with `name` and `arguments`)."""
    view = workloads.view
    weights = resource_weights(view)
    binpack: dict[str, Any] = {
        # pkg/scheduler/plugins/binpack/binpack.go: binpack.weight, binpack.cpu, binpack.memory,
        # binpack.resources (comma-separated names) and binpack.resources.<name>; each read with
        # Arguments.GetInt, so they must be YAML integers (framework/arguments.go).
        "binpack.weight": int(_settings(view, "volcano", "binpackWeight", default=10)),
        "binpack.cpu": 1,
        "binpack.memory": 1,
    }
    if weights:
        binpack["binpack.resources"] = ", ".join(weights)
        for resource, weight in weights.items():
            binpack[f"binpack.resources.{resource}"] = weight
    policy = queue_policy(view)
    # `reclaim` gives back what a queue lent above its deserved share (capacity plugin guide,
    # docs/user-guide/how_to_use_capacity_plugin.md: "reclaim action is enabled").
    actions = "enqueue, allocate, backfill" + (", reclaim" if policy == "capacity" else "")
    second_tier: list[dict[str, Any]] = [
        {"name": "drf", "enablePreemptable": False},
        {"name": "predicates"},
        # capacity and proportion conflict: only one of them (capacity plugin guide).
        {"name": policy},
        # resourcequota: enqueue only what the namespace's ResourceQuota still
        # admits (plugins/resourcequota/resourcequota.go, AddJobEnqueueableFn).
        {"name": "resourcequota"},
        {
            "name": "nodeorder",
            # plugins/nodeorder/nodeorder.go calculateWeight: leastrequested (1)
            # and balancedresource (1) spread pods, against binpack: off. Node
            # affinity (default 2) outweighs binpack, so a preferred pool wins and
            # binpack packs within it.
            "arguments": {
                "leastrequested.weight": 0,
                "balancedresource.weight": 0,
                "nodeaffinity.weight": 2 * binpack["binpack.weight"],
            },
        },
        {"name": "binpack", "arguments": binpack},
    ]
    if network_topology_jobs(workloads):
        # Only when a job asks for it: the plugin also packs every other pod by HyperNode
        # (hypernode.binpack.normal-pod.enable defaults to true), which a fleet without
        # topology-constrained jobs has not asked for.
        second_tier.append(network_topology_plugin(weights))
    return {
        # pkg/scheduler/util.go UnmarshalSchedulerConf: actions split on "," and looked up by name.
        "actions": actions,
        "tiers": [
            {
                "plugins": [
                    {"name": "priority"},
                    # gang: a job starts only when minAvailable pods can all be placed.
                    {"name": "gang", "enablePreemptable": False},
                    {"name": "conformance"},
                ]
            },
            {"plugins": second_tier},
        ],
    }


def volcano_chart_values(workloads: Workloads) -> dict[str, Any]:
    """Values of the Volcano chart when the fleet renders Volcano (builders/platform.py): its
    scheduler runs this fleet's configuration. The chart writes `custom.scheduler_config_override`
    as volcano-scheduler.conf of its own ConfigMap (volcano-sh/volcano v1.14.0
    installer/helm/chart/volcano/templates/scheduler.yaml), so the scheduling unit then renders no
    ConfigMap of its own: two Applications would fight over one object."""
    view = workloads.view
    if backend(view) != "volcano":
        return {}
    return {"custom": {"scheduler_config_override": dump(volcano_conf(workloads))}}


# Kueue's chart at the pinned version (sigs.k8s.io/kueue v0.17.0 charts/kueue). The chart inside
# the module names the staging image; the release replaces it with registry.k8s.io/kueue/kueue at
# the tag, IfNotPresent (hack/helm-chart-package.sh, v0.17.0), so the values say so and the
# chart rendered offline from the module deploys what the published chart deploys.
KUEUE_IMAGE = {
    "repository": "registry.k8s.io/kueue/kueue",
    "tag": "v0.17.0",
    "pullPolicy": "IfNotPresent",
}
# The chart's own controller manager configuration (charts/kueue/values.yaml
# managerConfig.controllerManagerConfigYaml, v0.17.0) but its integration list: the chart
# replaces the whole document with the value given (adding only internalCertManagement when it
# is missing: templates/manager/manager-config.yaml), so every default it carries is kept here.
KUEUE_MANAGER_CONFIG: dict[str, Any] = {
    "apiVersion": KUEUE_CONFIG,
    "kind": "Configuration",
    "health": {"healthProbeBindAddress": ":8081"},
    "metrics": {"bindAddress": ":8443"},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
    "controller": {
        "groupKindConcurrency": {
            "Job.batch": 5,
            "Pod": 5,
            "Workload.kueue.x-k8s.io": 5,
            "LocalQueue.kueue.x-k8s.io": 1,
            "ClusterQueue.kueue.x-k8s.io": 1,
            "ResourceFlavor.kueue.x-k8s.io": 1,
        }
    },
    "clientConnection": {"qps": 50, "burst": 100},
}


def kueue_integrations(workloads: Workloads) -> list[str]:
    """Exactly the integrations the fleet's queued workloads need, in Kueue's spelling."""
    kinds: set[str] = set()
    for team in workloads.view.teams:
        work = workloads.of(team)
        kinds |= {j.kind for j in work.jobs if j.kind in ("job", "jobset", "trainjob")}
        sizes = [t.group_size for s in work.services for t in s.local_tracks]
        kinds |= {"service" for size in sizes if size == 1}
        kinds |= {"lws" for size in sizes if size > 1}
    if kinds:
        # batch/job always: Kueue v0.17.0 sets up its mutating Job webhook whether or not the
        # integration is enabled (pkg/controller/jobs/job/job_webhook.go SetupWebhook ignores the
        # no-op option jobframework/setup.go passes to a disabled integration), and without the
        # integration that webhook has no queue manager and panics on every Job it is asked about,
        # so the API server refuses every batch Job: a JobSet's child Jobs among them (found by
        # `simulate`, which runs Kueue's and JobSet's controllers).
        kinds.add("job")
    return sorted(KUEUE_FRAMEWORKS[k] for k in kinds)


def kueue_chart_values(workloads: Workloads) -> dict[str, Any]:
    """Values of Kueue's chart when the fleet renders Kueue (builders/platform.py): the released
    image, and the manager configuration with exactly the integrations the fleet's workloads
    need (each framework enabled puts a webhook with failurePolicy Fail in front of that kind in
    every namespace but kube-system and kueue-system, whether the fleet uses it or not:
    charts/kueue/templates/webhook/manifests.yaml)."""
    config = {**KUEUE_MANAGER_CONFIG, "integrations": {"frameworks": kueue_integrations(workloads)}}
    return {
        "controllerManager": {"manager": {"image": dict(KUEUE_IMAGE)}},
        "managerConfig": {"controllerManagerConfigYaml": dump(config)},
    }


# The released JobSet image: the chart's default is the project's staging image at `main`
# (charts/jobset/values.yaml image, v0.11.1); releases publish registry.k8s.io/jobset/jobset:
# <version> (.github/ISSUE_TEMPLATE/new-release.md, v0.11.1).
JOBSET_IMAGE = {
    "repository": "registry.k8s.io/jobset/jobset",
    "tag": "v0.11.1",
    "pullPolicy": "IfNotPresent",
}


def jobset_chart_values(workloads: Workloads) -> dict[str, Any]:
    """Values of JobSet's chart when the fleet renders it: the released image."""
    return {"image": dict(JOBSET_IMAGE)}


# The released LeaderWorkerSet image: the chart's default tag is `main` (charts/lws/values.yaml,
# v0.8.0); the release sets image.manager to registry.k8s.io/lws/lws at the release tag
# (hack/push-chart.sh, v0.8.0).
LWS_IMAGE = {"repository": "registry.k8s.io/lws/lws", "tag": "v0.8.0", "pullPolicy": "IfNotPresent"}


def lws_chart_values(workloads: Workloads) -> dict[str, Any]:
    """Values of LeaderWorkerSet's chart when the fleet renders it: the released image."""
    return {"image": {"manager": dict(LWS_IMAGE)}}


TRAINER_RUNTIMES = {
    "torch-distributed": "torchDistributed",
    "jax-distributed": "jaxDistributed",
    "xgboost-distributed": "xgboostDistributed",
}


def trainer_runtimes(workloads: Workloads) -> list[str]:
    """The runtimes the fleet's TrainJobs name, sorted."""
    return sorted(
        {
            j.runtime
            for team in workloads.view.teams
            for j in workloads.of(team).jobs
            if j.kind == "trainjob"
        }
    )


def trainer_chart_values(workloads: Workloads) -> dict[str, Any]:
    """Values of Kubeflow Trainer's chart when the fleet renders it: its JobSet subchart off
    (the fleet's JobSet add-on is the cluster's one JobSet: two would fight over its CRD and
    webhooks), and exactly the runtimes the fleet's TrainJobs name. The image is the chart's
    default, the release's own tag (templates/_helpers.tpl trainer.defaultImageTag: v2.2.0)."""
    return trainer_values(trainer_runtimes(workloads))


def named_runtimes(objs: Iterable[Obj]) -> set[str]:
    """The ClusterTrainingRuntimes the TrainJobs among rendered objects name."""
    return {
        str(((o.get("spec") or {}).get("runtimeRef") or {}).get("name", ""))
        for o in objs
        if o.get("kind") == "TrainJob" and str(o.get("apiVersion", "")).startswith(TRAINER_GROUP)
    }


def trainer_values(runtimes: Iterable[str]) -> dict[str, Any]:
    """Trainer's chart values that install `runtimes` (names the chart knows) and no JobSet."""
    on = {TRAINER_RUNTIMES[r]: {"enabled": True} for r in sorted(runtimes) if r in TRAINER_RUNTIMES}
    return {"jobset": {"install": False}, "runtimes": on}


def volcano_configmap(workloads: Workloads) -> Obj:
    view = workloads.view
    ns = str(_settings(view, "volcano", "namespace", default=VOLCANO_NAMESPACE))
    name = str(_settings(view, "volcano", "configMap", default=VOLCANO_CONFIGMAP))
    return {
        "apiVersion": CORE,
        "kind": "ConfigMap",
        "metadata": metadata(name, namespace=ns, sources=view.fleet.doc.sources),
        "data": {VOLCANO_CONF_KEY: dump(volcano_conf(workloads))},
    }


# ---- kube-scheduler ------------------------------------------------------------------------------


def kube_scheduler_config(view: FleetView) -> dict[str, Any]:
    """A KubeSchedulerConfiguration (k8s.io/kube-scheduler config/v1) with one profile that packs:
    NodeResourcesFit scored MostAllocated, each accelerator resource weighted (weights 1..100,
    k8s.io/kubernetes v1.36.3 pkg/scheduler/apis/config/validation/validation_pluginargs.go
    validateResources).

    MostAllocated alone does not pack: in v1.36.3's default profile
    (pkg/scheduler/apis/config/v1/default_plugins.go) NodeResourcesFit scores with weight 1, while
    PodTopologySpread (weight 2, with system default constraints that spread a Deployment's pods
    over nodes) and NodeResourcesBalancedAllocation (weight 1) pull the other way, so two inference
    replicas still land on two nodes and no node keeps room for a 4- or 8-device job. The profile
    therefore drops the system default spreading (defaultingType List with no constraints:
    constraints a pod sets itself still apply) and the balanced-allocation score."""
    resources = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
    resources += [{"name": r, "weight": w} for r, w in resource_weights(view).items()]
    config: dict[str, Any] = {
        "apiVersion": KUBE_SCHEDULER_CONFIG,
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": scheduler_name(view),
                "plugins": {"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}},
                "pluginConfig": [
                    {
                        "name": "NodeResourcesFit",
                        "args": {
                            "scoringStrategy": {"type": "MostAllocated", "resources": resources}
                        },
                    },
                    {"name": "PodTopologySpread", "args": {"defaultingType": "List"}},
                ],
            }
        ],
    }
    kubeconfig = _settings(view, "kubeScheduler", "kubeconfig", default="")
    if kubeconfig:
        # With --config, kube-scheduler ignores --kubeconfig (k8s.io/kubernetes v1.36.3
        # cmd/kube-scheduler/app/options/deprecated.go): a static pod's connection goes here.
        # Without it, in a pod, client-go's BuildConfigFromFlags("", "") uses the in-cluster
        # ServiceAccount (options.go createKubeConfig), which the fleet's scheduler wants.
        config["clientConnection"] = {"kubeconfig": str(kubeconfig)}
    if scheduler_name(view) != DEFAULT_SCHEDULER:
        # A second scheduler next to the cluster's own: it must not take the default's lease.
        config["leaderElection"] = {
            "leaderElect": True,
            "resourceName": scheduler_name(view),
            "resourceNamespace": "kube-system",
        }
    return config


def packing_version(view: FleetView) -> str:
    """The kube-scheduler image tag: `kubeScheduler.version`, else the fleet's Kubernetes version
    (its patch release when it names one, else the minor's first: pin your cluster's patch)."""
    explicit = _settings(view, "kubeScheduler", "version", default=None)
    if explicit:
        return str(explicit)
    version = view.fleet.kubernetes_version
    return f"v{version}" if version.count(".") == 2 else f"v{version}.0"


def packing_scheduler_objects(view: FleetView) -> list[Obj]:
    """A second kube-scheduler running the packing profile under its own name, as the Kubernetes
    documentation "Configure Multiple Schedulers" deploys one (kubernetes/website
    content/en/examples/admin/sched/my-scheduler.yaml): a ServiceAccount bound to the
    system:kube-scheduler and system:volume-scheduler ClusterRoles and, in kube-system, to the
    extension-apiserver-authentication-reader Role; the profile in a ConfigMap; a Deployment.
    system:kube-scheduler grants leases get/update only for the name kube-scheduler
    (k8s.io/kubernetes v1.36.3 plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go), so
    the scheduler's own lease (`leaderElection.resourceName`) gets a Role of its own."""
    name = scheduler_name(view)
    ns = str(_settings(view, "kubeScheduler", "namespace", default="kube-system"))
    sources = view.fleet.doc.sources
    account = {"kind": "ServiceAccount", "name": name, "namespace": ns}
    labels = {NAME_LABEL: name, COMPONENT_LABEL: "scheduler"}
    # Its pods carry the fleet's label too: what it deployed is found by it (simulate's reset).
    pod_labels = {**labels, MANAGED_BY_LABEL: MANAGED_BY}

    def binding(
        kind: str, binding_name: str, role_kind: str, role: str, namespace: str | None
    ) -> Obj:
        return {
            "apiVersion": RBAC,
            "kind": kind,
            "metadata": metadata(binding_name, namespace=namespace, sources=sources),
            "subjects": [account],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        }

    lease_role: Obj = {
        "apiVersion": RBAC,
        "kind": "Role",
        "metadata": metadata(f"{name}-lease", namespace="kube-system", sources=sources),
        "rules": [
            {
                "apiGroups": ["coordination.k8s.io"],
                "resources": ["leases"],
                "resourceNames": [name],
                "verbs": ["get", "list", "update", "watch"],
            }
        ],
    }
    scheduler_image = _settings(view, "kubeScheduler", "image", default=KUBE_SCHEDULER_IMAGE)
    container: Obj = {
        "name": "kube-scheduler",
        "image": f"{mirrors.image(view.fleet.mirrors, scheduler_image)}:{packing_version(view)}",
        # kubeadm runs the image's binary the same way (cmd/kubeadm/app/phases/controlplane/
        # manifests.go, getSchedulerCommand).
        "command": ["kube-scheduler", f"--config={CONFIG_DIR}/{KUBE_SCHEDULER_CONF_KEY}"],
        "livenessProbe": _probe("/healthz"),
        "readinessProbe": _probe("/readyz"),
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
        # A read-only root is enough: kube-scheduler keeps its self-signed serving certificate
        # in memory (cmd/kube-scheduler/app/options/options.go: CertDirectory left blank).
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "runAsUser": 65532,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": [{"name": "config", "mountPath": CONFIG_DIR, "readOnly": True}],
    }
    deployment: Obj = {
        "apiVersion": APPS,
        "kind": "Deployment",
        "metadata": metadata(name, namespace=ns, sources=sources, labels=labels),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {NAME_LABEL: name}},
            "template": {
                "metadata": {"labels": pod_labels},
                "spec": {
                    "serviceAccountName": name,
                    "priorityClassName": "system-cluster-critical",
                    "containers": [container],
                    "volumes": [
                        {"name": "config", "configMap": {"name": KUBE_SCHEDULER_CONFIGMAP}}
                    ],
                },
            },
        },
    }
    return [
        kube_scheduler_configmap(view),
        {
            "apiVersion": CORE,
            "kind": "ServiceAccount",
            "metadata": metadata(name, namespace=ns, sources=sources),
        },
        binding(
            "ClusterRoleBinding",
            f"{name}-as-kube-scheduler",
            "ClusterRole",
            "system:kube-scheduler",
            None,
        ),
        binding(
            "ClusterRoleBinding",
            f"{name}-as-volume-scheduler",
            "ClusterRole",
            "system:volume-scheduler",
            None,
        ),
        binding(
            "RoleBinding",
            f"{name}-extension-apiserver-authentication-reader",
            "Role",
            "extension-apiserver-authentication-reader",
            "kube-system",
        ),
        lease_role,
        binding("RoleBinding", f"{name}-lease", "Role", f"{name}-lease", "kube-system"),
        deployment,
    ]


def _probe(path: str) -> Obj:
    return {
        "httpGet": {"path": path, "port": KUBE_SCHEDULER_PORT, "scheme": "HTTPS"},
        "initialDelaySeconds": 15,
    }


def kube_scheduler_configmap(view: FleetView) -> Obj:
    ns = str(_settings(view, "kubeScheduler", "namespace", default="kube-system"))
    return {
        "apiVersion": CORE,
        "kind": "ConfigMap",
        "metadata": metadata(
            KUBE_SCHEDULER_CONFIGMAP, namespace=ns, sources=view.fleet.doc.sources
        ),
        "data": {KUBE_SCHEDULER_CONF_KEY: dump(kube_scheduler_config(view))},
    }


# ---- Kueue ResourceFlavors ---------------------------------------------------------------------

# The flavor of what is not an accelerator (cpu, memory): no node labels, so it adds no node
# constraint; a ClusterQueue covers these resources on it (builders/workloads.py _queues).
GENERAL_FLAVOR = "general"


def flavor_name(vendor: Vendor, pool: Pool) -> str:
    return f"{vendor.id}-{pool.name}"


def kueue_flavor(view: FleetView, vendor: Vendor, pool: Pool) -> Obj:
    """One ResourceFlavor per vendor pool (kueue v0.17.0 apis/kueue/v1beta2/resourceflavor_types.go:
    nodeLabels, nodeTaints, tolerations): Kueue adds the labels to the pods it admits on the
    flavor and the tolerations. Because the flavor carries the tolerations of its own taints,
    Kueue does not consider `nodeTaints` at admission (resourceflavor_types.go v0.17.0: "When this
    ResourceFlavor has also set the matching tolerations ... the nodeTaints are not considered");
    the ClusterQueue's `coveredResources` is what keeps other workloads off the flavor."""
    spec: dict[str, Any] = {
        "nodeLabels": view.fleet.node_selector({**vendor.selector, vendor.model_label: pool.model})
    }
    if pool.taints:
        spec["nodeTaints"] = [t.as_dict() for t in pool.taints]
        spec["tolerations"] = [toleration(t) for t in pool.taints]
    return {
        "apiVersion": KUEUE,
        "kind": "ResourceFlavor",
        "metadata": metadata(
            flavor_name(vendor, pool), sources=vendor.doc.sources, labels={VENDOR_LABEL: vendor.id}
        ),
        "spec": spec,
    }


def general_flavor(view: FleetView) -> Obj:
    return {
        "apiVersion": KUEUE,
        "kind": "ResourceFlavor",
        "metadata": metadata(GENERAL_FLAVOR, sources=view.fleet.doc.sources),
        "spec": {},
    }


def general_requests(
    view: FleetView, pods: list[tuple[dict[str, Any], int]], accelerators: set[str]
) -> dict[str, str]:
    """What a team's pods request at most of every resource that is not an accelerator:
    requests (limits where a request is not set, as the API server defaults them) x pods."""
    total: dict[str, Fraction] = {}
    for spec, count in pods:
        for container in spec.get("containers") or []:
            res = container.get("resources") or {}
            asked = {**(res.get("limits") or {}), **(res.get("requests") or {})}
            for name, value in asked.items():
                qty = parse_quantity(value)
                if name in accelerators or qty is None:
                    continue
                total[name] = total.get(name, Fraction(0)) + qty * count
    return {name: format_quantity(q) for name, q in sorted(total.items()) if q > 0}


def priority_class(view: FleetView, name: str, raw: dict[str, Any]) -> Obj:
    """A scheduling.k8s.io/v1 PriorityClass the fleet's workloads name (priorityClassName).
    Kueue reads it too: a workload's priority orders admission and preemption in its queue
    (sigs.k8s.io/kueue v0.17.0 pkg/util/priority/priority.go GetPriorityFromPriorityClass)."""
    obj: Obj = {
        "apiVersion": SCHEDULING,
        "kind": "PriorityClass",
        "metadata": metadata(name, sources=view.fleet.doc.sources),
        "value": int(raw["value"]),
    }
    if raw.get("preemptionPolicy"):
        obj["preemptionPolicy"] = raw["preemptionPolicy"]
    if raw.get("description"):
        obj["description"] = raw["description"]
    return obj


def build(parts: Parts) -> list[Component]:
    view = parts.view
    origin = view.fleet.doc.anchor(("scheduling",))
    out: list[Component] = []
    kind = backend(view)
    if kind == "volcano" and platform.provided(view, addons.BY_KEY["volcano"]) != addons.FLEET:
        out.append(
            Component(
                SCHEDULING_UNIT,
                "scheduling/volcano",
                [volcano_configmap(parts.workloads)],
                origin=origin,
            )
        )
    if packing(view) and packing_runs(view) == FLEET:
        where = view.fleet.doc.anchor(("scheduling", "kubeScheduler"))
        out.append(
            Component(PACKING_UNIT, PACKING_UNIT, packing_scheduler_objects(view), origin=where)
        )
    elif packing(view):
        out.append(
            Component(
                SCHEDULING_UNIT,
                "scheduling/kube-scheduler",
                [kube_scheduler_configmap(view)],
                origin=origin,
            )
        )
    classes = view.fleet.doc.get("scheduling", "priorityClasses", default={}) or {}
    if classes:
        comp = Component(SCHEDULING_UNIT, "scheduling/priority-classes", origin=origin)
        for name, raw in sorted(classes.items()):
            comp.add(
                priority_class(view, name, raw),
                view.fleet.doc.anchor(("scheduling", "priorityClasses", name)),
            )
        out.append(comp)
    if kind == "kueue" and view.vendors:
        comp = Component(SCHEDULING_UNIT, "scheduling/kueue-flavors", origin=origin)
        for vendor in view.vendors:
            for pool in vendor.pools:
                comp.add(kueue_flavor(view, vendor, pool), vendor.doc.anchor(("pools",)))
        comp.add(general_flavor(view))
        out.append(comp)
    return out
