"""`render.py preflight --kubeconfig PATH`: read-only checks that a live cluster has what the values
declare it provides (docs/platform.md), before Argo CD syncs the fleet there.

What the fleet renders itself (its add-on Applications, its units) is not asked of the cluster.
What values declare as the site's is: every API group and version the environment's objects use
and the fleet does not install (PRE001); nfd-master applying taints (PRE002) and nfd-worker
tolerating every pool's taint (PRE003) when NFD is the site's; the Prometheus values name loading
every PodMonitor and PrometheusRule the fleet renders (PRE004, the same rules as MON003, on the
live Prometheus's spec); and each node a pool names carrying the pool's labels and taints
(PRE005); and, when Kueue is the site's, a Kueue manager with every integration the fleet's
queued workloads need (PRE006); and each node of a DRA vendor's pools publishing its devices by
the site's DRA driver (PRE009). On a cluster that already runs the site's components on the
pools' nodes: each DaemonSet of the site's with a pod there tolerating the taints the fleet adds
(PRE011), no second device plugin beside the one the fleet renders (PRE012), and a DRA driver's
kubelet plugin that would still run there once the fleet labels and taints the node (PRE013).
For each vendor whose exporter is not the fleet's, a running pod its PodMonitor selects on each
node its pools name (PRE014); and when the GPU Operator is the site's, its ClusterPolicy running
the operands the vendor files hand to it, tolerating the fleet's taints (PRE015).
The cluster is read once (`read_cluster`); the checks are plain functions of what was read, so
each is tested without a cluster. Nothing is written: every request is a GET.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from generator.builders import platform, scheduling
from generator.builders.argocd import IN_CLUSTER
from generator.builders.fleet import Build
from generator.builders.monitoring.sources import Exporter, exporters
from generator.builders.node_config import rule_name
from generator.builders.operators import GPU_OPERATOR, gpu_operator_tolerations
from generator.cluster import dryrun
from generator.controlplane import target
from generator.controlplane.api import ApiClient, Obj
from generator.errors import FindingsError, UsageError
from generator.findings import CodeInfo, Finding, Location, Severity, sorted_findings
from generator.policy.manifest import origin
from generator.policy.monitoring import unloaded
from generator.policy.placement import selects, tolerates, unselected
from generator.render.layout import render_tree
from generator.values.model import (
    DEVICE_PLUGIN,
    DEVICE_PLUGIN_PATH,
    EXPORTER,
    FleetView,
    Pool,
    Taint,
    Team,
    Vendor,
)
from generator.values.quantity import parse_quantity
from generator.values.yamlio import json_path
from generator.vocab import addons
from generator.vocab.addons import FLEET, OPERATOR, SITE
from generator.vocab.api import (
    APPS,
    CORE,
    GATEWAY,
    MCS,
    MONITORING,
    NFD,
    NVIDIA_GPU_OPERATOR,
    RESOURCE,
    TRAINER,
)
from generator.vocab.kube import HOSTNAME_LABEL
from generator.vocab.labels import GPU_OPERATOR_DEVICE_PLUGIN_LABEL, MANAGED_BY, MANAGED_BY_LABEL
from generator.vocab.units import Unit
from generator.workloads.external import external_uses
from generator.workloads.model import Workloads

CODES = (
    CodeInfo(
        "PRE001",
        "preflight",
        "error",
        "the cluster does not serve an API the fleet's objects use and the fleet does not install",
    ),
    CodeInfo(
        "PRE002", "preflight", "error", "the site's nfd-master is missing or applies no taints"
    ),
    CodeInfo(
        "PRE003", "preflight", "error", "the site's nfd-worker does not tolerate a pool's taint"
    ),
    CodeInfo(
        "PRE004",
        "preflight",
        "error",
        "the Prometheus values name is missing or does not load the fleet's monitoring",
    ),
    CodeInfo(
        "PRE005",
        "preflight",
        "error or warning",
        "a node a pool names is missing (warning) or lacks the pool's labels or taints",
    ),
    CodeInfo(
        "PRE007",
        "preflight",
        "error",
        "a Secret, ConfigMap, PVC or ServiceAccount a team declares and a workload uses is missing",
    ),
    CodeInfo(
        "PRE008",
        "preflight",
        "error",
        "the site's Kubeflow Trainer lacks a ClusterTrainingRuntime a TrainJob names",
    ),
    CodeInfo(
        "PRE009",
        "preflight",
        "error",
        "a node of a DRA vendor's pool publishes fewer devices of its model than the pool holds",
    ),
    CodeInfo(
        "PRE010",
        "preflight",
        "error",
        "a node of a MIG or vNPU pool advertises fewer of its instances than the pool holds",
    ),
    CodeInfo(
        "PRE006",
        "preflight",
        "error or warning",
        "the site's Kueue is missing or lacks an integration the fleet's workloads need",
    ),
    CodeInfo(
        "PRE011",
        "preflight",
        "error",
        "a site DaemonSet runs on a pool's node and does not tolerate a taint the fleet adds there",
    ),
    CodeInfo(
        "PRE012",
        "preflight",
        "error",
        "a site DaemonSet that is a device plugin runs on the nodes of a vendor whose plugin the "
        "fleet renders",
    ),
    CodeInfo(
        "PRE013",
        "preflight",
        "error",
        "no site DRA kubelet plugin would run on a DRA pool's node once the fleet labels and "
        "taints it",
    ),
    CodeInfo(
        "PRE014",
        "preflight",
        "error",
        "a pool's node has no running pod that the PodMonitor of an exporter the fleet does not "
        "render selects",
    ),
    CodeInfo(
        "PRE015",
        "preflight",
        "error",
        "the site's GPU Operator's ClusterPolicy disables an operand a vendor hands to it, or "
        "does not tolerate the fleet's taints",
    ),
    CodeInfo(
        "PRE016",
        "preflight",
        "warning",
        "the Argo CD application controller in the cluster runs another version than "
        "argocd.version says, or is not there",
    ),
    CodeInfo(
        "PRE017",
        "preflight",
        "error",
        "a cluster of a service across clusters lacks a kind it needs: ServiceExport (a "
        "track's), ServiceImport or HTTPRoute (the ingress's)",
    ),
)
HINT = "docs/platform.md says what the site provides and how preflight checks it"


@dataclass
class ClusterState:
    """What preflight reads of a cluster: served API versions, nodes, workloads, Prometheuses."""

    served: set[str] = field(default_factory=set)  # "group/version" ("v1" for the core group)
    kinds: set[tuple[str, str]] = field(default_factory=set)  # (group/version, kind) served
    nodes: dict[str, Obj] = field(default_factory=dict)
    workloads: list[Obj] = field(default_factory=list)  # Deployments and DaemonSets
    prometheuses: list[Obj] = field(default_factory=list)
    configmaps: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    """(namespace, name) -> data of the ConfigMaps in the namespaces Kueue runs in."""
    team_objects: set[tuple[str, str, str]] = field(default_factory=set)
    """(kind, namespace, name) of the Secrets, ConfigMaps, PVCs and ServiceAccounts in the
    namespaces whose workloads use objects their team declares (`external`)."""
    training_runtimes: set[str] | None = None
    """Names of the ClusterTrainingRuntimes; None when the cluster does not serve the kind."""
    slices: list[Obj] = field(default_factory=list)
    """The ResourceSlices, read when a vendor is allocated by DRA."""
    rules: set[str] | None = None
    """Names of the NodeFeatureRules; None when the cluster does not serve the kind."""
    daemon_pods: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    """(namespace, DaemonSet name) -> the nodes a pool names that one of its pods is on (the
    pods' controller ownerReference and spec.nodeName)."""
    exporter_pods: list[Obj] = field(default_factory=list)
    """The pods the PodMonitor of an exporter the fleet does not render selects (its labels, in
    its namespace when it has one), on any node, with what PRE014 reads of them: namespace,
    name, labels, spec.nodeName, the containers' ports, status.phase."""
    argocd_images: list[str] | None = None
    """The images of the argocd-application-controller StatefulSet's containers in the fleet's
    Argo CD namespace; None when not read (argocd.version unset, or Argo CD runs elsewhere)."""
    cluster_policies: list[Obj] | None = None
    """The GPU Operator's ClusterPolicies, read when values declare the Operator the site's;
    None when not read, or the cluster does not serve the kind."""


def read_cluster(client: ApiClient, workloads: Workloads | None = None) -> ClusterState:
    """Everything the checks look at, read once with GETs (the team namespaces' objects only
    with `workloads`: the namespaces whose workloads use a declared external object)."""
    view = workloads.view if workloads is not None else None
    client.refresh()
    state = ClusterState()
    state.kinds = set(client.resources())
    state.served = {gv for gv, _ in state.kinds}
    state.nodes = {n["metadata"]["name"]: n for n in client.list(CORE, "Node")}
    state.workloads = [
        *client.list(APPS, "Deployment"),
        *client.list(APPS, "DaemonSet"),
    ]
    if client.serves(MONITORING, "Prometheus"):
        state.prometheuses = client.list(MONITORING, "Prometheus")
    for ns in sorted({str(w["metadata"].get("namespace")) for w in _kueue_managers(state)}):
        for cm in client.list(CORE, "ConfigMap", ns):
            state.configmaps[(ns, cm["metadata"]["name"])] = cm.get("data") or {}
    if client.serves(*TRAINING_RUNTIME):
        state.training_runtimes = {
            str(r["metadata"]["name"]) for r in client.list(*TRAINING_RUNTIME)
        }
    if client.serves(*NODE_FEATURE_RULE):
        state.rules = {str(r["metadata"]["name"]) for r in client.list(*NODE_FEATURE_RULE)}
    if view is not None and any(v.dra for v in view.vendors) and client.serves(*RESOURCE_SLICE):
        state.slices = client.list(*RESOURCE_SLICE)
    if view is not None and _argocd_here(view):
        found = [
            c.get("image", "")
            for sts in client.list(APPS, "StatefulSet", view.fleet.argocd_namespace)
            if sts["metadata"]["name"] == ARGOCD_CONTROLLER
            for c in _containers(sts)
        ]
        state.argocd_images = [str(i) for i in found]
    if view is not None and _site_operator(view) and client.serves(*CLUSTER_POLICY):
        state.cluster_policies = client.list(*CLUSTER_POLICY)
    named = {n for v in view.vendors for p in v.pools for n in p.nodes} if view else set()
    selected = [e for _, e in _site_exporters(view)] if view else []
    if named:
        # One list of every pod, kept only for the DaemonSet pods on the pools' nodes and the
        # pods an exporter's PodMonitor selects: a request per node (a fieldSelector on
        # spec.nodeName) would be hundreds on a large pool.
        for pod in client.list(CORE, "Pod"):
            if any(_selects(e, pod) for e in selected):
                state.exporter_pods.append(_exporter_pod(pod))
            on = str((pod.get("spec") or {}).get("nodeName") or "")
            if on not in named:
                continue
            meta = pod["metadata"]
            for ref in meta.get("ownerReferences") or []:
                if ref.get("kind") == "DaemonSet" and ref.get("controller"):
                    key = (str(meta.get("namespace")), str(ref.get("name")))
                    state.daemon_pods.setdefault(key, set()).add(on)
    uses = external_uses(workloads) if workloads is not None else []
    for kind, ns in sorted({(u.kind, u.namespace) for u in uses}):
        for obj in client.list(CORE, kind, ns):
            state.team_objects.add((kind, ns, obj["metadata"]["name"]))
    return state


def team_externals(workloads: Workloads, state: ClusterState) -> list[Finding]:
    """PRE007: each object a team declares as its own and a workload uses exists in the
    workload's namespace."""
    out = []
    for use in external_uses(workloads):
        if (use.kind, use.namespace, use.name) in state.team_objects:
            continue
        out.append(
            Finding(
                "PRE007",
                f"{use.kind} {use.namespace}/{use.name} does not exist: the team declares it "
                f"(external) and its workload uses it, so its pods would not start",
                use.team.doc.locate(use.path),
                json_path(use.path),
                f"create it in namespace {use.namespace!r} before Argo CD syncs the team",
            )
        )
    return out


# github.com/kubeflow/trainer/v2 v2.2.0 pkg/apis/trainer/v1alpha1 ClusterTrainingRuntime.
TRAINING_RUNTIME = (TRAINER, "ClusterTrainingRuntime")


def site_trainer(workloads: Workloads, state: ClusterState) -> list[Finding]:
    """PRE008: when Kubeflow Trainer is the site's, each ClusterTrainingRuntime a TrainJob names
    exists (Trainer's webhook refuses a TrainJob whose runtime does not: pkg/runtime/core
    clustertrainingruntime.go ValidateObjects, v2.2.0). A cluster that does not serve the kind is
    PRE001's."""
    view = workloads.view
    trainer = addons.BY_KEY["trainer"]
    if platform.provided(view, trainer) != addons.SITE or state.training_runtimes is None:
        return []
    out = []
    for team in view.teams:
        for job in workloads.of(team).jobs:
            if job.kind != "trainjob" or job.runtime in state.training_runtimes:
                continue
            path = (*job.path, "runtime")
            have = ", ".join(sorted(state.training_runtimes)) or "none"
            out.append(
                Finding(
                    "PRE008",
                    f"TrainJob {job.namespace}/{job.name} names ClusterTrainingRuntime "
                    f"{job.runtime!r}, which the site's Kubeflow Trainer does not have (it has: "
                    f"{have}): Trainer's webhook refuses the TrainJob",
                    team.doc.anchor(path),
                    json_path(path),
                    f"install runtime {job.runtime!r} on the cluster (Trainer's chart: "
                    "runtimes.<name>.enabled), or name one it has",
                )
            )
    return out


def _fleet_installed(view: FleetView) -> set[str]:
    """API group patterns the fleet installs itself (its add-on Applications)."""
    return {g for a in platform.rendered(view) for g in a.groups}


def served_apis(view: FleetView, units: list[Unit], state: ClusterState) -> list[Finding]:
    """PRE001: one finding per API version the units use that the cluster does not serve."""
    installed = _fleet_installed(view)
    seen: dict[str, tuple[Unit, Obj]] = {}
    for unit in units:
        if unit.name == "argocd":  # Applications live where Argo CD runs, checked by Argo CD
            continue
        for obj in unit.objects:
            seen.setdefault(str(obj["apiVersion"]), (unit, obj))
    out = []
    for api, (unit, obj) in sorted(seen.items()):
        group = api.rpartition("/")[0]
        if api in state.served or any(addons.serves(p, group) for p in installed):
            continue
        addon = addons.addon_for_group(group)
        where = origin(unit, obj)
        what = f"{obj['kind']} of unit {unit.name}"
        if addon is not None:
            where = view.fleet.doc.anchor(("platform", addon.key), *_implied(addon))
            what += f"; values declare that the site runs {addon.title}"
        out.append(
            Finding(
                "PRE001",
                f"the cluster does not serve {api} ({what}): Argo CD's dry-run would fail the "
                f"unit's whole Application",
                where,
                hint="install it on the cluster (its CRDs), or let the fleet render it "
                "(platform.<add-on>.provided: fleet); " + HINT,
            )
        )
    return out


def _implied(addon: addons.Addon) -> tuple[tuple[str, ...], ...]:
    return (addon.implied_by[0],) if addon.implied_by else ()


def _containers(obj: Obj) -> list[dict[str, Any]]:
    spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    return list(spec.get("containers") or [])


def _runs(obj: Obj, binary: str) -> bool:
    return any(
        binary in " ".join(map(str, [*(c.get("command") or []), *(c.get("args") or [])]))
        or str(c.get("image", "")).rsplit("/", 1)[-1].startswith(binary)
        for c in _containers(obj)
    )


def site_nfd(view: FleetView, state: ClusterState) -> list[Finding]:
    """PRE002 and PRE003, when NFD is the site's and the fleet's nodes are configured by it."""
    nfd = addons.BY_KEY["nfd"]
    if view.fleet.node_config_method != "nfd" or platform.provided(view, nfd) != addons.SITE:
        return []
    where = view.fleet.doc.anchor(("platform", "nfd"), ("nodeConfig", "method"))
    masters = [
        w for w in state.workloads if w.get("kind") == "Deployment" and _runs(w, "nfd-master")
    ]
    out = []
    if not masters:
        out.append(
            Finding(
                "PRE002",
                "no Deployment runs nfd-master: nothing labels or taints the pools' nodes",
                where,
                hint="install NFD (or platform.nfd.provided: fleet); " + HINT,
            )
        )
    for master in masters:
        args = [str(a) for c in _containers(master) for a in c.get("args") or []]
        if "-enable-taints" not in args:
            meta = master["metadata"]
            out.append(
                Finding(
                    "PRE002",
                    f"nfd-master ({meta.get('namespace')}/{meta['name']}) runs without "
                    "-enable-taints: it ignores the taints of the fleet's NodeFeatureRules, and "
                    "every pod may land on the accelerator nodes",
                    where,
                    hint="set master.enableTaints: true in NFD's chart (in the GPU Operator's "
                    "chart, whose NFD is a subchart: node-feature-discovery.master.enableTaints), "
                    "or platform.nfd.provided: fleet; " + HINT,
                )
            )
    taints = sorted(
        {t for v in view.vendors for t in v.all_taints}, key=lambda t: (t.key, t.value, t.effect)
    )
    for worker in state.workloads:
        if worker.get("kind") != "DaemonSet" or not _runs(worker, "nfd-worker"):
            continue
        spec = worker["spec"]["template"]["spec"]
        missing = [t for t in taints if not tolerates(spec, t)]
        if missing:
            shown = ", ".join(f"{t.key}={t.value}:{t.effect}" for t in missing)
            meta = worker["metadata"]
            out.append(
                Finding(
                    "PRE003",
                    f"nfd-worker ({meta.get('namespace')}/{meta['name']}) does not tolerate "
                    f"{shown}: it does not run on those nodes, so nothing publishes their "
                    "devices and the rules never label or taint them",
                    where,
                    hint="add the tolerations to NFD's worker.tolerations (in the GPU Operator's "
                    "chart: node-feature-discovery.worker.tolerations), or "
                    "platform.nfd.provided: fleet; " + HINT,
                )
            )
    return out


# Kueue's manager reads its configuration from this file (sigs.k8s.io/kueue v0.17.0
# charts/kueue/templates/manager/manager-config.yaml and manager.yaml; the kustomize install mounts
# the same key: config/default/manager_config_patch.yaml).
KUEUE_CONFIG_KEY = "controller_manager_config.yaml"
# What Kueue enables when its configuration names no integration (apis/config/v1beta2/defaults.go
# v0.17.0, defaultJobFrameworkName).
KUEUE_DEFAULT_FRAMEWORKS = ("batch/job",)


def _kueue_managers(state: ClusterState) -> list[Obj]:
    """Deployments whose container image is Kueue's (registry.k8s.io/kueue/kueue:<tag>; not
    kueueviz or another image whose name merely starts alike)."""
    return [
        w
        for w in state.workloads
        if w.get("kind") == "Deployment"
        and any(
            str(c["image"]).split("/")[-1].split(":")[0].split("@")[0] == "kueue"
            for c in _containers(w)
        )
    ]


def _kueue_frameworks(manager: Obj, state: ClusterState) -> list[str] | None:
    """The integrations of the configuration a Kueue Deployment mounts; None when it mounts none
    that preflight can read."""
    ns = str(manager["metadata"].get("namespace"))
    spec = manager["spec"]["template"]["spec"]
    for volume in spec.get("volumes") or []:
        data = state.configmaps.get((ns, str((volume.get("configMap") or {}).get("name"))))
        if data and KUEUE_CONFIG_KEY in data:
            doc = yaml.safe_load(data[KUEUE_CONFIG_KEY]) or {}
            named = (doc.get("integrations") or {}).get("frameworks") or KUEUE_DEFAULT_FRAMEWORKS
            return [str(f) for f in named]
    return None


def site_kueue(workloads: Workloads, state: ClusterState) -> list[Finding]:
    """PRE006: when Kueue is the site's, a Deployment runs it with every integration the fleet's
    queued workloads need (the same list the fleet's own Kueue chart would get)."""
    view = workloads.view
    if platform.provided(view, addons.BY_KEY["kueue"]) != addons.SITE:
        return []
    where = view.fleet.doc.anchor(("platform", "kueue"), ("scheduling", "backend"))
    managers = _kueue_managers(state)
    if not managers:
        return [
            Finding(
                "PRE006",
                "no Deployment runs Kueue (image registry.k8s.io/kueue/kueue): nothing admits "
                "the fleet's queued Jobs, which stay suspended",
                where,
                hint="install Kueue (or platform.kueue.provided: fleet); " + HINT,
            )
        ]
    need = scheduling.kueue_integrations(workloads)
    out = []
    for manager in managers:
        meta = manager["metadata"]
        name = f"{meta.get('namespace')}/{meta['name']}"
        frameworks = _kueue_frameworks(manager, state)
        if frameworks is None:
            out.append(
                Finding(
                    "PRE006",
                    f"Kueue ({name}) mounts no {KUEUE_CONFIG_KEY} preflight can read: whether "
                    f"it manages {', '.join(need) or 'the fleet'} is not checked",
                    where,
                    hint=HINT,
                    severity=Severity.WARNING,
                )
            )
            continue
        missing = [n for n in need if n not in frameworks]
        if missing:
            out.append(
                Finding(
                    "PRE006",
                    f"Kueue ({name}) does not manage {', '.join(missing)} (its integrations: "
                    f"{', '.join(frameworks)}): those workloads of the fleet would run without "
                    "being admitted, outside every team's ClusterQueue",
                    where,
                    hint="add them to integrations.frameworks of Kueue's manager configuration "
                    "(or platform.kueue.provided: fleet); " + HINT,
                )
            )
    return out


def prometheus_loads(view: FleetView, units: list[Unit], state: ClusterState) -> list[Finding]:
    """PRE004: the live Prometheus of `monitoring.prometheus`'s namespace, judged like MON003."""
    doc = view.fleet.doc
    declared = doc.get("monitoring", "prometheus")
    if declared is None:
        return []
    ns = str(declared.get("namespace"))
    where = doc.locate(("monitoring", "prometheus"), key=True)
    live = [p for p in state.prometheuses if p["metadata"].get("namespace") == ns]
    if not live:
        return [
            Finding(
                "PRE004",
                f"no Prometheus in namespace {ns!r} (monitoring.prometheus): nothing loads the "
                "fleet's PodMonitors and rules",
                where,
                hint="name the namespace of the Prometheus that scrapes the fleet; " + HINT,
            )
        ]
    objs = [o for u in units if u.name == "monitoring" for o in u.objects]
    out = []
    for prom in live:
        spec = {**(prom.get("spec") or {}), "namespace": ns}
        for obj, misses in unloaded(spec, objs):
            meta = obj["metadata"]
            out.append(
                Finding(
                    "PRE004",
                    f"Prometheus {ns}/{prom['metadata']['name']} on the cluster does not load "
                    f"{obj['kind']} {meta.get('namespace')}/{meta['name']}: " + "; ".join(misses),
                    where,
                    hint="copy the live Prometheus's selectors into monitoring.prometheus, "
                    "then label the fleet's objects to match (MON003 checks it offline); " + HINT,
                )
            )
    return out


def pool_nodes(view: FleetView, state: ClusterState) -> list[Finding]:
    """PRE005: each node a pool names, with the pool's labels and taints. Before the first sync
    (the vendor's NodeFeatureRule is not on the cluster yet) nothing has applied them: said as
    a warning of what the sync will do, not an error."""
    out = []
    for vendor in view.vendors:
        pending = (
            view.fleet.node_config_method == "nfd"
            and state.rules is not None
            and rule_name(vendor) not in state.rules
        )
        for pool in vendor.pools:
            want = view.fleet.node_selector(pool.labels)
            where = vendor.doc.anchor(("pools", pool.index, "nodes"), ("pools", pool.index))
            for name in pool.nodes:
                node = state.nodes.get(name)
                if node is None:
                    out.append(
                        Finding(
                            "PRE005",
                            f"node {name} of pool {vendor.id}/{pool.name} is not in the cluster "
                            "(yet): its devices are not there",
                            where,
                            hint="join the node, or take it out of the pool's nodes",
                            severity=Severity.WARNING,
                        )
                    )
                    continue
                labels = node["metadata"].get("labels") or {}
                wrong = sorted(k for k, v in want.items() if labels.get(k) != v)
                have = {
                    (t.get("key"), t.get("value", ""), t.get("effect"))
                    for t in (node.get("spec") or {}).get("taints") or []
                }
                untainted = [t for t in pool.taints if (t.key, t.value, t.effect) not in have]
                problems = [
                    f"label {k}={want[k]} (it has {labels[k]!r})"
                    if k in labels
                    else f"label {k}={want[k]} (it has none)"
                    for k in wrong
                ]
                problems += [f"taint {t.key}={t.value}:{t.effect}" for t in untainted]
                if problems and pending:
                    out.append(
                        Finding(
                            "PRE005",
                            f"node {name} of pool {vendor.id}/{pool.name} lacks "
                            + ", ".join(problems)
                            + f": not applied yet, the fleet's NodeFeatureRule {rule_name(vendor)} "
                            "is not on the cluster (the first sync applies it)",
                            where,
                            hint="nothing to do before the first sync; run preflight again after "
                            "it, when a node that still lacks them is an error; " + HINT,
                            severity=Severity.WARNING,
                        )
                    )
                elif problems:
                    out.append(
                        Finding(
                            "PRE005",
                            f"node {name} of pool {vendor.id}/{pool.name} lacks "
                            + ", ".join(problems),
                            where,
                            hint="check nfd-master (and nfd-worker on that node), or the node's "
                            "PCI devices against the pool's model; " + HINT,
                        )
                    )
    return out


RESOURCE_SLICE = (RESOURCE, "ResourceSlice")
NODE_FEATURE_RULE = (NFD, "NodeFeatureRule")


def _attribute(device: Obj, driver: str, name: str) -> str:
    """A device's string attribute, written with its driver's domain or without (the same
    attribute: kubernetes/api resource/v1 types.go v0.36.3, QualifiedName)."""
    attrs = device.get("attributes") or {}
    value = attrs.get(name) or attrs.get(f"{driver}/{name}") or {}
    return str(value.get("string", ""))


def _fleet_driver(view: FleetView, vendor: Vendor) -> addons.Addon | None:
    """The add-on that installs the vendor's DRA driver when the fleet renders it; None when
    the site runs the driver (or values declare no one)."""
    dra = vendor.dra
    addon = addons.BY_KEY.get(dra.addon) if dra is not None and dra.addon else None
    return addon if addon is not None and platform.provided(view, addon) == addons.FLEET else None


def _installed(addon: addons.Addon, state: ClusterState) -> bool:
    """Whether the fleet's install of `addon` is on the cluster yet: a DaemonSet in its chart's
    namespace (the first sync creates it)."""
    chart = addon.chart
    return chart is not None and any(
        w.get("kind") == "DaemonSet" and w["metadata"].get("namespace") == chart.namespace
        for w in state.workloads
    )


def dra_devices(view: FleetView, state: ClusterState) -> list[Finding]:
    """PRE009: each node a DRA vendor's pool names publishes, in its driver's ResourceSlices,
    at least the pool's devices per node of the pool's model: the site's driver runs there and
    the fleet's DeviceClass selects them (the same attributes as builders/claims.py)."""
    out = []
    for vendor in view.vendors:
        dra = vendor.dra
        if dra is None:
            continue
        driver = _fleet_driver(view, vendor)
        if driver is not None and not _installed(driver, state):
            # The fleet installs the driver with the sync this runs before: nothing publishes
            # the devices yet, and where its plugin will land is simulate's to show (SIM003).
            continue
        for pool in vendor.pools:
            where = vendor.doc.anchor(("pools", pool.index, "nodes"), ("pools", pool.index))
            prefix = dra.prefixes[pool.model]
            for name in pool.nodes:
                if name not in state.nodes:
                    continue  # PRE005 says the node is missing
                devices = [
                    d
                    for s in state.slices
                    if (s.get("spec") or {}).get("driver") == dra.name
                    and (s.get("spec") or {}).get("nodeName") == name
                    for d in (s.get("spec") or {}).get("devices") or []
                ]
                matching = [
                    d
                    for d in devices
                    if _attribute(d, dra.name, dra.type_attribute) == dra.type_value
                    and _attribute(d, dra.name, dra.model_attribute).startswith(prefix)
                ]
                if len(matching) >= pool.devices_per_node:
                    continue
                out.append(
                    Finding(
                        "PRE009",
                        f"node {name} of pool {vendor.id}/{pool.name} publishes "
                        f"{len(matching)} whole {pool.model} devices by DRA driver {dra.name} "
                        f"({len(devices)} devices in its ResourceSlices), the pool holds "
                        f"{pool.devices_per_node}",
                        where,
                        hint=f"check that the site's {dra.name} driver runs on the node and its "
                        f"{dra.model_attribute} starts with {prefix!r}; " + HINT,
                    )
                )
    return out


def site_partitions(view: FleetView, state: ClusterState) -> list[Finding]:
    """PRE010: each node of a pool whose devices the site partitions advertises the pool's
    units: a MIG pool's instances, once the site's MIG manager reports by its state label the
    layout its layout label asks for applied; a vNPU pool's vNPUs, which the site creates with
    npu-smi. The fleet counts them in quotas, but only the site makes them
    (docs/allocation.md)."""
    out = []
    for vendor in view.vendors:
        sharing = vendor.sharing
        if sharing is None or not sharing.mode.site_made:
            continue
        state_key, ready = sharing.state_label
        for pool in vendor.pools:
            where = vendor.doc.anchor(("pools", pool.index, "nodes"), ("pools", pool.index))
            for name in pool.nodes:
                node = state.nodes.get(name)
                if node is None:
                    continue  # PRE005 says the node is missing
                # A mode without a state label (vNPUs): only what the node advertises tells.
                got = (node["metadata"].get("labels") or {}).get(state_key) if state_key else ""
                allocatable = ((node.get("status") or {}).get("allocatable") or {}).get(
                    vendor.resource_name, "0"
                )
                if got == ready and _count(allocatable) >= pool.units_per_node:
                    continue
                message, hint = sharing.mode.site_shortfall(
                    vendor.id, vendor.resource_name, sharing, pool, name, got, allocatable
                )
                out.append(Finding("PRE010", message, where, hint=hint + HINT))
    return out


def _count(quantity: Any) -> int:
    """An extended resource's allocatable count, as a quantity (1k is 1000); 0 when it is not
    a whole number of them."""
    value = parse_quantity(quantity)
    return int(value) if value is not None and value.denominator == 1 else 0


# ---- the site's DaemonSets on the pools' nodes (PRE011, PRE012, PRE013) --------------------------

# What a DaemonSet pod does once its node carries a taint it does not tolerate (kubernetes
# v1.36.3 pkg/controller/daemon/daemon_controller.go, NodeShouldRunDaemonPod): "if !fitsTaints {
# // Scheduled daemon pods should continue running if they tolerate NoExecute taint. ...
# return false, !hasUntoleratedTaint }" with only NoExecute taints counted there. So a NoSchedule
# taint gives shouldRun false and shouldContinueRunning true: podsShouldBeOnNode keeps the pod
# that runs ("case shouldContinueRunning:") and creates none once it is gone ("case shouldRun &&
# !exists:" only). An untolerated NoExecute taint gives both false: "case !shouldContinueRunning
# && exists: ... delete all daemon pods on node".
RESTART_TAIL = "its pod stays until it restarts, then none comes back"
EVICT_TAIL = "NoExecute evicts its pod, and none comes back"
# The kubelet's plugin directories (kubernetes v1.36.3 pkg/kubelet/kubeletconfig/defaults.go:
# DefaultKubeletPluginsRegistrationDirName "plugins_registry", DefaultKubeletPluginsDirName
# "plugins", under the root directory cmd/kubelet/app/options/options.go defaultRootDir
# "/var/lib/kubelet"; pkg/kubelet/kubelet_getters.go getPluginsRegistrationDir: "the directory
# under which plugins socket should be placed to be registered"). A DRA driver's kubelet plugin
# registers there and serves from plugins/<driver> (k8s.io/dynamic-resource-allocation v0.36.3
# kubeletplugin/draplugin.go: KubeletRegistryDir "/var/lib/kubelet/plugins_registry",
# KubeletPluginsDir "/var/lib/kubelet/plugins", the data directory path.Join(KubeletPluginsDir,
# driverName)); NVIDIA's chart mounts both whole (k8s-dra-driver-gpu
# deployments/helm/nvidia-dra-driver-gpu/templates/kubeletplugin.yaml, volumes plugins-registry
# and plugins).
PLUGINS_REGISTRY_PATH = "/var/lib/kubelet/plugins_registry"
PLUGINS_PATH = "/var/lib/kubelet/plugins"
# Where the charts the site most often runs on GPU nodes set their DaemonSets' tolerations
# (NVIDIA/gpu-operator deployments/gpu-operator/values.yaml `daemonsets.tolerations`, every
# operand's; k8s-dra-driver-gpu values.yaml `kubeletPlugin.tolerations`, default []).
TOLERATION_VALUES = (
    "GPU Operator: daemonsets.tolerations, and node-feature-discovery.worker.tolerations for "
    "its NFD; NFD: worker.tolerations; NVIDIA DRA driver: kubeletPlugin.tolerations"
)
# How many nodes of a pool a finding names before it counts the rest.
SHOWN_NODES = 5


def _site_daemonsets(build: Build, state: ClusterState) -> list[tuple[str, str, dict[str, Any]]]:
    """(namespace, name, pod spec) of every DaemonSet the fleet does not render. The fleet's
    carry the label every object it renders carries (builders/common.py metadata), or have the
    namespace and name of one of the build's, or are in the namespace of an add-on chart the
    fleet renders (its Application installs them)."""
    fleet = {
        (str(o["metadata"].get("namespace")), str(o["metadata"]["name"]))
        for c in build.components
        for o in c.objects
        if o.get("kind") == "DaemonSet"
    }
    charts = {a.chart.namespace for a in platform.rendered(build.view) if a.chart is not None}
    out = []
    for w in state.workloads:
        meta = w["metadata"]
        ns, name = str(meta.get("namespace")), str(meta["name"])
        if (
            w.get("kind") != "DaemonSet"
            or (meta.get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY
            or (ns, name) in fleet
            or ns in charts
        ):
            continue
        out.append((ns, name, ((w.get("spec") or {}).get("template") or {}).get("spec") or {}))
    return out


def _host_paths(spec: dict[str, Any]) -> set[str]:
    """The host directories a pod's containers mount (hostPath volumes a container, or an init
    container, mounts), without a trailing slash."""
    mounted = {
        m.get("name")
        for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
        for m in c.get("volumeMounts") or []
    }
    return {
        posixpath.normpath(str(v["hostPath"].get("path", "")))
        for v in spec.get("volumes") or []
        if v.get("hostPath") and v.get("name") in mounted
    }


def _pools_of(view: FleetView) -> dict[str, list[tuple[Vendor, Pool]]]:
    out: dict[str, list[tuple[Vendor, Pool]]] = {}
    for vendor in view.vendors:
        for pool in vendor.pools:
            for name in pool.nodes:
                out.setdefault(name, []).append((vendor, pool))
    return out


def _taint_text(taint: Taint) -> str:
    return (
        f"{taint.key}={taint.value}:{taint.effect}"
        if taint.value
        else f"{taint.key}:{taint.effect}"
    )


def _toleration_text(taint: Taint) -> str:
    """The toleration of exactly `taint`, as flow YAML."""
    if taint.value:
        return (
            f"{{key: {taint.key}, operator: Equal, value: {taint.value}, effect: {taint.effect}}}"
        )
    return f"{{key: {taint.key}, operator: Exists, effect: {taint.effect}}}"


def _nodes_text(nodes: list[str]) -> str:
    shown = ", ".join(nodes[:SHOWN_NODES])
    return shown + (f" and {len(nodes) - SHOWN_NODES} more" if len(nodes) > SHOWN_NODES else "")


def _on_pools(groups: dict[tuple[str, str], list[str]]) -> str:
    """`gpu-1, gpu-2 (pool nvidia/a100), gpu-9 (pool amd/mi300)`."""
    return ", ".join(f"{_nodes_text(nodes)} (pool {v}/{p})" for (v, p), nodes in groups.items())


def _taints_at(vendor: Vendor, pool: Pool) -> Location:
    """Where the pool's taints are written: its own `taints`, else the vendor file's, else (the
    catalog's taints) the pool."""
    if vendor.doc.get("pools", pool.index, "taints") is not None:
        return vendor.doc.anchor(("pools", pool.index, "taints"))
    return vendor.doc.anchor(("taints",), ("pools", pool.index))


def untolerated_taints(build: Build, state: ClusterState) -> list[Finding]:
    """PRE011: each DaemonSet the fleet does not render, with a pod on a node a pool names, whose
    pod template tolerates every taint the fleet puts on that node (NFD's rules or the node
    patch: the pool's taints). One finding per DaemonSet, its nodes and taints listed."""
    view = build.view
    pools_of = _pools_of(view)
    out = []
    for ns, name, spec in _site_daemonsets(build, state):
        groups: dict[tuple[str, str], list[str]] = {}
        first: tuple[Vendor, Pool] | None = None
        missing: dict[Taint, None] = {}
        for node in sorted(state.daemon_pods.get((ns, name), ())):
            for vendor, pool in pools_of.get(node, ()):
                untolerated = [t for t in pool.taints if not tolerates(spec, t)]
                if not untolerated:
                    continue
                first = first or (vendor, pool)
                groups.setdefault((vendor.id, pool.name), []).append(node)
                missing.update(dict.fromkeys(untolerated))
        if first is None:
            continue
        taints = list(missing)
        tail = EVICT_TAIL if any(t.effect == "NoExecute" for t in taints) else RESTART_TAIL
        out.append(
            Finding(
                "PRE011",
                f"{ns}/{name} runs on {_on_pools(groups)} and does not tolerate "
                f"{', '.join(_taint_text(t) for t in taints)}, which the fleet adds: {tail}",
                _taints_at(*first),
                hint=f"add {', '.join(_toleration_text(t) for t in taints)} to the chart value "
                f"that sets its tolerations ({TOLERATION_VALUES}); " + HINT,
            )
        )
    return out


def second_plugins(build: Build, state: ClusterState) -> list[Finding]:
    """PRE012: on the nodes of a vendor whose device plugin the fleet renders, no DaemonSet of
    the site's that mounts the kubelet's device-plugin directory (DEVICE_PLUGIN_PATH, where a
    device plugin registers): a second device plugin. The kubelet keeps one plugin per resource
    name, the last to register (kubernetes v1.36.3 pkg/kubelet/cm/devicemanager/manager.go
    PluginConnected: `m.endpoints[resourceName] = endpointInfo{e, options}`)."""
    view = build.view
    out = []
    for vendor in view.vendors:
        if vendor.plugin_provider != addons.FLEET or vendor.dra is not None:
            continue
        pool_of = {n: p for p in vendor.pools for n in p.nodes}
        for ns, name, spec in _site_daemonsets(build, state):
            if DEVICE_PLUGIN_PATH not in _host_paths(spec):
                continue
            groups: dict[tuple[str, str], list[str]] = {}
            nodes = sorted(n for n in state.daemon_pods.get((ns, name), ()) if n in pool_of)
            for node in nodes:
                groups.setdefault((vendor.id, pool_of[node].name), []).append(node)
            if not nodes:
                continue
            pool = pool_of[nodes[0]]
            out.append(
                Finding(
                    "PRE012",
                    f"{ns}/{name} runs on {_on_pools(groups)} and mounts the kubelet's "
                    f"device-plugin directory {DEVICE_PLUGIN_PATH}: a second device plugin on "
                    f"the nodes of vendor {vendor.id}, whose device plugin the fleet renders "
                    "(devicePlugin.provided: fleet); the kubelet keeps one plugin per resource "
                    "name, the last to register",
                    vendor.doc.anchor(("devicePlugin", "provided"), ("pools", pool.index, "nodes")),
                    hint=f"set devicePlugin.provided: operator (or site) in "
                    f"values/vendors/{vendor.id}.yaml, and the fleet renders none; or turn that "
                    "plugin off on these nodes (GPU Operator: node label "
                    f"{GPU_OPERATOR_DEVICE_PLUGIN_LABEL}=false); " + HINT,
                )
            )
    return out


def _dra_plugin(spec: dict[str, Any], driver: str) -> bool:
    """Whether a pod template is a DRA kubelet plugin of `driver`: it mounts the kubelet's
    plugin registration directory and its plugins directory (whole, or the driver's own)."""
    paths = _host_paths(spec)
    own = posixpath.join(PLUGINS_PATH, driver)
    return PLUGINS_REGISTRY_PATH in paths and any(
        p in (PLUGINS_PATH, own) or p.startswith(own + "/") for p in paths
    )


def _misses(
    plugins: list[tuple[str, str, dict[str, Any]]], labels: dict[str, str], pool: Pool
) -> list[tuple[str, list[str], list[Taint]]] | None:
    """Why each plugin would place no pod on a node with `labels` and the pool's taints:
    (namespace/name, what its selection needs, the taints it does not tolerate); None when one
    would place a pod there."""
    out = []
    for ns, name, spec in plugins:
        wants = [] if selects(spec, labels) else unselected(spec, labels)
        taints = [t for t in pool.taints if not tolerates(spec, t)]
        if not wants and not taints:
            return None
        out.append((f"{ns}/{name}", wants, taints))
    return out


def _affinity_text(key: str, value: str) -> str:
    """A required node affinity on `key=value`, as flow YAML."""
    term = f"{{matchExpressions: [{{key: {key}, operator: In, values: [{value}]}}]}}"
    return (
        "{nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
        f"{{nodeSelectorTerms: [{term}]}}}}}}"
    )


def dra_plugin_placement(build: Build, state: ClusterState) -> list[Finding]:
    """PRE013: each node a DRA vendor's pool names gets a pod of a DaemonSet of the site's that
    is the driver's kubelet plugin, once the fleet's labels and taints are on it: one selects
    the node (its labels and the pool's, as they land: Fleet.node_selector) and tolerates every
    taint of the pool. The cause PRE009 (no ResourceSlice) sees the symptom of. One finding per
    pool and reason, its nodes listed."""
    view = build.view
    out = []
    for vendor in view.vendors:
        dra = vendor.dra
        if dra is None or _fleet_driver(view, vendor) is not None:
            # The fleet's install carries the tolerations and affinity its pools need
            # (builders/operators.py); simulate shows where its plugin lands (SIM003).
            continue
        plugins = [d for d in _site_daemonsets(build, state) if _dra_plugin(d[2], dra.name)]
        [(key, value)] = view.fleet.node_selector(vendor.selector).items()
        none = (
            f"no DaemonSet mounts {PLUGINS_REGISTRY_PATH} and {PLUGINS_PATH} (or "
            f"{PLUGINS_PATH}/{dra.name})"
        )
        for pool in vendor.pools:
            landed = view.fleet.node_selector(pool.labels)
            # reason -> its nodes, and whether a taint, a selection is among its causes
            groups: dict[str, tuple[list[str], bool, bool]] = {}
            for name in pool.nodes:
                node = state.nodes.get(name)
                if node is None:
                    continue  # PRE005 says the node is missing
                own = (node.get("metadata") or {}).get("labels") or {}
                misses = _misses(plugins, {HOSTNAME_LABEL: name, **own, **landed}, pool)
                if misses is None:
                    continue
                reason = "; ".join(
                    f"{ds} "
                    + " and ".join(
                        [f"needs {w}" for w in wants]
                        + (
                            [f"does not tolerate {', '.join(map(_taint_text, taints))}"]
                            if taints
                            else []
                        )
                    )
                    for ds, wants, taints in misses
                )
                tainted = not misses or any(taints for _, _, taints in misses)
                unselecting = not misses or any(wants for _, wants, _ in misses)
                nodes, _, _ = groups.get(reason, ([], False, False))
                groups[reason] = ([*nodes, name], tainted, unselecting)
            for reason, (nodes, tainted, unselecting) in groups.items():
                parts = []
                if tainted:
                    tolerations = ", ".join(_toleration_text(t) for t in pool.taints)
                    parts.append(f"kubeletPlugin.tolerations: [{tolerations}]")
                if unselecting:
                    parts.append(f"kubeletPlugin.affinity: {_affinity_text(key, value)}")
                where = (
                    _taints_at(vendor, pool)
                    if tainted
                    else vendor.doc.anchor(("pools", pool.index, "nodes"), ("pools", pool.index))
                )
                noun = "nodes" if len(nodes) > 1 else "node"
                out.append(
                    Finding(
                        "PRE013",
                        f"{noun} {_nodes_text(nodes)} of pool {vendor.id}/{pool.name} would get "
                        f"no pod of the site's {dra.name} kubelet plugin once the fleet labels "
                        f"and taints it: {reason or none}; nothing would publish its devices "
                        "(PRE009)",
                        where,
                        hint=f"set {' and '.join(parts)} in the DRA driver's chart values (NVIDIA "
                        "DRA driver; another driver: the values of its kubelet plugin "
                        "DaemonSet); " + HINT,
                    )
                )
    return out


# ---- what the fleet relies on of a vendor's operator or the site (PRE014, PRE015) ---------------


def _site_exporters(view: FleetView) -> list[tuple[Vendor, Exporter]]:
    """Each vendor whose exporter is not the fleet's (operator or site), with its exporter as
    its PodMonitor selects it."""
    by_id = {e.vendor: e for e in exporters(view)}
    return [
        (v, by_id[v.id]) for v in view.vendors if v.exporter_provider != FLEET and v.id in by_id
    ]


def _selects(exp: Exporter, pod: Obj) -> bool:
    """Whether the exporter's PodMonitor selects the pod: its labels (matchLabels), in its
    namespace when it names one (else any)."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    return (exp.namespace is None or meta.get("namespace") == exp.namespace) and all(
        labels.get(k) == v for k, v in exp.pod_labels.items()
    )


def _exporter_pod(pod: Obj) -> Obj:
    """What PRE014 reads of a pod: a pool holds hundreds of them, kept all through the check."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    return {
        "metadata": {k: meta.get(k) for k in ("namespace", "name", "labels")},
        "spec": {
            "nodeName": spec.get("nodeName"),
            **{
                kind: [{"name": c.get("name"), "ports": c.get("ports") or []} for c in spec[kind]]
                for kind in ("containers", "initContainers")
                if spec.get(kind)
            },
        },
        "status": {"phase": (pod.get("status") or {}).get("phase")},
    }


def _ports(pod: Obj) -> list[dict[str, Any]]:
    """The container ports Prometheus discovers of a pod: its containers' and its init
    containers' (prometheus v3 discovery/kubernetes/pod.go buildPod, `containers :=
    append(pod.Spec.Containers, pod.Spec.InitContainers...)`)."""
    spec = pod.get("spec") or {}
    return [
        p
        for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
        for p in c.get("ports") or []
    ]


def _has_port(exp: Exporter, pod: Obj) -> bool:
    """The PodMonitor's endpoint selects the pod's port: by name (`port`), else by number
    (`portNumber`; builders/monitoring/scrape.py pod_monitor_spec)."""
    if exp.port_name:
        return any(p.get("name") == exp.port_name for p in _ports(pod))
    return any(p.get("containerPort") == exp.port for p in _ports(pod))


def _port_text(exp: Exporter) -> str:
    return f"named {exp.port_name}" if exp.port_name else f"numbered {exp.port}"


def _selector_text(exp: Exporter) -> str:
    return ",".join(f"{k}={v}" for k, v in exp.pod_labels.items())


def _pod_node(pod: Obj) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _why_unscraped(exp: Exporter, labelled: list[Obj], on_pools: set[str], name: str) -> str | None:
    """Why the PodMonitor selects no running exporter pod on node `name` (None: it does)."""
    here = [p for p in labelled if _pod_node(p) == name]
    serving = [p for p in here if _has_port(exp, p)]
    if any((p.get("status") or {}).get("phase") == "Running" for p in serving):
        return None
    what = f"{_selector_text(exp)}" + (f" in namespace {exp.namespace}" if exp.namespace else "")
    if not labelled:
        return f"no pod carries {what}"
    if not any(_pod_node(p) in on_pools for p in labelled):
        others = sorted({_pod_node(p) or "no node" for p in labelled})
        return (
            f"the pods with {what} run on no node of its pools (they run on {_nodes_text(others)})"
        )
    if not here:
        return f"no pod with {what} runs there"
    if not serving:
        ports = sorted(
            {
                f"{p.get('name')} {p.get('containerPort')}"
                if p.get("name")
                else str(p.get("containerPort"))
                for pod in here
                for p in _ports(pod)
            }
        )
        return (
            f"the pods with {what} there have no container port {_port_text(exp)} (their "
            f"ports: {', '.join(ports) or 'none'})"
        )
    phases = sorted({str((p.get("status") or {}).get("phase") or "unknown") for p in serving})
    return f"the pods with {what} there are not Running (phase {', '.join(phases)})"


def scraped_exporters(view: FleetView, state: ClusterState) -> list[Finding]:
    """PRE014: for each vendor whose exporter is not the fleet's (the operator's or the site's),
    each node its pools name runs a pod its PodMonitor selects: its labels (in its namespace,
    when given), Running, with the container port it scrapes. One finding per vendor and
    reason, its nodes by pool; the reason says whether no pod carries the labels, they run on
    other nodes only, or lack the port (the podLabels or portName written wrong)."""
    out = []
    for vendor, exp in _site_exporters(view):
        pool_of = {n: p for p in vendor.pools for n in p.nodes if n in state.nodes}
        labelled = [p for p in state.exporter_pods if _selects(exp, p)]
        groups: dict[str, dict[tuple[str, str], list[str]]] = {}
        for name, pool in pool_of.items():  # a node missing is PRE005's
            reason = _why_unscraped(exp, labelled, set(pool_of), name)
            if reason is not None:
                groups.setdefault(reason, {}).setdefault((vendor.id, pool.name), []).append(name)
        scope = f"-n {exp.namespace}" if exp.namespace else "-A"
        check_it = (
            f"list the pods with `kubectl get pods {scope} -l {_selector_text(exp)} -o wide` and "
            f"check their container port {_port_text(exp)}; "
        )
        part = vendor.operator.parts.get(EXPORTER) if vendor.operator else None
        if vendor.exporter_provider == OPERATOR and part is not None:
            where = vendor.doc.anchor(("exporter", "provided"))
            fix = (
                f"the operator's exporter ({part.daemon_set}) must run on those nodes (node label "
                f"{part.deploy_label}=true), or set exporter.provided: site with the podLabels "
                f"and portName of the exporter that runs, in values/vendors/{vendor.id}.yaml; "
            )
        else:
            where = vendor.doc.anchor(("exporter", "podLabels"), ("exporter", "provided"))
            fix = (
                "set exporter.podLabels and exporter.portName (or port) in "
                f"values/vendors/{vendor.id}.yaml to those of the exporter's pods; "
            )
        for reason, nodes in groups.items():
            out.append(
                Finding(
                    "PRE014",
                    f"the PodMonitor of vendor {vendor.id} selects no running exporter pod on "
                    f"{_on_pools(nodes)}: {reason}; nothing exports its devices' metrics there",
                    where,
                    hint=check_it + fix + HINT,
                )
            )
    return out


# NVIDIA/gpu-operator v25.3.4 api/nvidia/v1 clusterpolicy_types.go: ClusterPolicy, cluster-scoped
# (`+kubebuilder:resource:scope=Cluster`).
CLUSTER_POLICY = (NVIDIA_GPU_OPERATOR, "ClusterPolicy")
# The ClusterPolicy's operand of each component a vendor hands to the GPU Operator, and its name
# in a message (clusterpolicy_types.go: ClusterPolicySpec `DevicePlugin DevicePluginSpec
# json:"devicePlugin"`, `DCGMExporter DCGMExporterSpec json:"dcgmExporter"`; each `Enabled *bool
# json:"enabled,omitempty"`, and IsEnabled: "default is true if not specified by user").
CLUSTER_POLICY_OPERANDS = {
    DEVICE_PLUGIN: ("devicePlugin", "device plugin"),
    EXPORTER: ("dcgmExporter", "DCGM exporter"),
}
# The Operator reconciles one ClusterPolicy and sets every other's status.state to "ignored"
# (controllers/clusterpolicy_controller.go v25.3.4 Reconcile: `instance.SetStatus(gpuv1.Ignored,
# ...)`; clusterpolicy_types.go: "Ignored indicates duplicate ClusterPolicy instances").
IGNORED_POLICY = "ignored"


def _site_operator(view: FleetView) -> bool:
    return platform.provided(view, addons.BY_KEY[GPU_OPERATOR]) == SITE


def _flow(mapping: dict[str, str]) -> str:
    """A toleration as flow YAML: `{key: k, operator: Exists, effect: NoSchedule}`."""
    return "{" + ", ".join(f"{k}: {v}" for k, v in mapping.items()) + "}"


def _vendors_text(vendors: list[Vendor]) -> str:
    ids = ", ".join(v.id for v in vendors)
    return f"vendors {ids}" if len(vendors) > 1 else f"vendor {ids}"


def site_gpu_operator(view: FleetView, state: ClusterState) -> list[Finding]:
    """PRE015: when the GPU Operator is the site's, the ClusterPolicy it reconciles (not one it
    ignores) runs each operand a vendor file hands to it (`<component>.provided: operator`;
    `enabled` absent means on), and tolerates every taint the fleet puts on the NVIDIA pools
    (spec.daemonsets.tolerations, which the Operator sets on every operand when not empty, else
    each keeps its own: controllers/object_controls.go v25.3.4 applyCommonDaemonsetConfig; the
    assets' own tolerate nvidia.com/gpu only, as the chart's default does). One finding per
    disabled operand and one for the tolerations: the cause of PRE014 (no exporter pod) and of
    PRE011 on each operand DaemonSet. A cluster that does not serve the kind: nothing to read."""
    if not _site_operator(view) or not state.cluster_policies:
        return []
    vendors = [v for v in view.vendors if v.operator and v.operator.addon == GPU_OPERATOR]
    out = []
    for policy in state.cluster_policies:
        if (policy.get("status") or {}).get("state") == IGNORED_POLICY:
            continue
        name = f"ClusterPolicy {policy['metadata']['name']} of the site's GPU Operator"
        spec = policy.get("spec") or {}
        for component, (key, what) in CLUSTER_POLICY_OPERANDS.items():
            handed = [v for v in vendors if v.provider(component) == OPERATOR]
            if not handed or (spec.get(key) or {}).get("enabled", True) is not False:
                continue
            if component == DEVICE_PLUGIN:
                resources = ", ".join(sorted({v.resource_name for v in handed}))
                effect = (
                    f"nothing advertises {resources} on the pools' nodes, and the pods that "
                    "request it stay Pending"
                )
            else:
                effect = "no exporter pod runs on the pools' nodes: the cause of PRE014"
            first = handed[0]
            out.append(
                Finding(
                    "PRE015",
                    f"{name} disables its {what} (spec.{key}.enabled: false), which "
                    f"{_vendors_text(handed)} hand{'' if len(handed) > 1 else 's'} to the "
                    f"Operator ({component}.provided: operator): {effect}",
                    first.doc.anchor((component, "provided")),
                    hint=f"set {key}.enabled: true in the GPU Operator's chart values (the chart "
                    f"writes it into its ClusterPolicy), or {component}.provided: fleet in "
                    f"values/vendors/{first.id}.yaml and the fleet renders it; " + HINT,
                )
            )
        given = (spec.get("daemonsets") or {}).get("tolerations") or []
        own = given or [t for v in vendors if v.operator for t in v.operator.tolerations]
        missing: dict[Taint, None] = {}
        pools = []
        for vendor in vendors:
            for pool in vendor.pools:
                untolerated = [t for t in pool.taints if not tolerates({"tolerations": own}, t)]
                if untolerated:
                    missing.update(dict.fromkeys(untolerated))
                    pools.append(f"{vendor.id}/{pool.name}")
        if not missing:
            continue
        taints = list(missing)
        tail = (
            "NoExecute evicts the operands' pods there, and none comes back"
            if any(t.effect == "NoExecute" for t in taints)
            else "the operands' pods there stay until they restart, then none comes back"
        )
        setting = (
            "spec.daemonsets.tolerations"
            if given
            else "spec.daemonsets.tolerations is unset: each operand keeps its own"
        )
        wanted = ", ".join(_flow(t) for t in gpu_operator_tolerations(view))
        out.append(
            Finding(
                "PRE015",
                f"{name} does not tolerate {', '.join(_taint_text(t) for t in taints)} "
                f"({setting}), which the fleet puts on pool{'s' if len(pools) > 1 else ''} "
                f"{', '.join(pools)}: {tail}; the cause of PRE011 on its operand DaemonSets",
                view.fleet.doc.anchor(("platform", GPU_OPERATOR)),
                hint=f"set daemonsets.tolerations: [{wanted}] in the GPU Operator's chart values "
                "(the chart writes them into its ClusterPolicy; the list replaces the chart's "
                "default, kept first); " + HINT,
            )
        )
    return out


# ---- the Argo CD that syncs the cluster (PRE016) -------------------------------------------

# argo-cd v3.2.6 manifests/base/application-controller/argocd-application-controller-
# statefulset.yaml: the StatefulSet's name; its image is quay.io/argoproj/argocd:<version>
# (manifests/base/kustomization.yaml, images).
ARGOCD_CONTROLLER = "argocd-application-controller"


def _argocd_here(view: FleetView) -> bool:
    """Whether the values say which Argo CD version the site runs and that it runs in this
    cluster: the units go to the cluster Argo CD runs in (its in-cluster server)."""
    return bool(view.fleet.argocd_version) and view.fleet.destination == {"server": IN_CLUSTER}


def argocd_version(view: FleetView, state: ClusterState) -> list[Finding]:
    """PRE016: the application controller runs the version argocd.version says."""
    if state.argocd_images is None:
        return []
    want = view.fleet.argocd_version
    tags = sorted({i.rpartition(":")[2] for i in state.argocd_images if ":" in i})
    if want in tags:
        return []
    ns = view.fleet.argocd_namespace
    seen = (
        f"its StatefulSet {ns}/{ARGOCD_CONTROLLER} runs {', '.join(state.argocd_images)}"
        if state.argocd_images
        else f"no StatefulSet {ns}/{ARGOCD_CONTROLLER} is there"
    )
    return [
        Finding(
            "PRE016",
            f"argocd.version says the site's Argo CD is {want}, but {seen}",
            view.fleet.doc.locate(("argocd", "version")),
            "$.argocd.version",
            "set argocd.version to what the site runs: simulate and docs/argocd.md say how it "
            "differs from the version simulate runs",
            severity=Severity.WARNING,
        )
    ]


def cross_cluster_apis(workloads: Workloads, state: ClusterState) -> list[Finding]:
    """PRE017: a cluster of a service across clusters serves what the MCS implementation and the
    route need there: ServiceExport where a track runs (the fleet exports it), ServiceImport
    and HTTPRoute on the ingress cluster (the route's backends are the imports: Gateway API
    v1.6.3 geps/gep-1748). The kinds of sigs.k8s.io/mcs-api v0.5.2 config/crd, each its own CRD,
    so a group served is not both kinds served. A rendered kind whose API version the cluster
    does not serve at all is PRE001's to say."""
    view = workloads.view
    needs: dict[tuple[str, str], list[tuple[Team, str]]] = {}
    for team in view.teams:
        for svc in workloads.of(team).services:
            if svc.cross is None:
                continue
            wanted = [(MCS, "ServiceExport")] if svc.local_tracks else []
            if svc.routes_here:
                wanted += [(MCS, "ServiceImport"), (GATEWAY, "HTTPRoute")]
            for key in wanted:
                needs.setdefault(key, []).append((team, svc.name))
    rendered = {"ServiceExport", "HTTPRoute"}
    out = []
    for (api, kind), users in sorted(needs.items()):
        if (api, kind) in state.kinds or (kind in rendered and api not in state.served):
            continue
        team, name = users[0]
        path = ("services", name, "crossCluster")
        what = ", ".join(f"{t.name}/{n}" for t, n in users)
        out.append(
            Finding(
                "PRE017",
                f"the cluster does not serve {kind} ({api}), which the service across "
                f"clusters {what} needs there: "
                + (
                    "its track's Service is exported by one"
                    if kind == "ServiceExport"
                    else "its HTTPRoute here routes to the tracks' ServiceImports"
                ),
                team.doc.anchor(path),
                json_path(path),
                hint=f"install the {kind} CRD on the cluster (the site's "
                + (
                    "Gateway API implementation"
                    if kind == "HTTPRoute"
                    else "Multi-Cluster Services implementation"
                )
                + "); "
                + HINT,
            )
        )
    return out


def check(build: Build, units: list[Unit], state: ClusterState) -> list[Finding]:
    """Every preflight check of one environment (its build) against what was read of its
    cluster."""
    view, workloads = build.view, build.workloads
    return [
        *served_apis(view, units, state),
        *site_nfd(view, state),
        *site_kueue(workloads, state),
        *prometheus_loads(view, units, state),
        *pool_nodes(view, state),
        *team_externals(workloads, state),
        *site_trainer(workloads, state),
        *dra_devices(view, state),
        *site_partitions(view, state),
        *untolerated_taints(build, state),
        *second_plugins(build, state),
        *dra_plugin_placement(build, state),
        *scraped_exporters(view, state),
        *site_gpu_operator(view, state),
        *argocd_version(view, state),
        *cross_cluster_apis(workloads, state),
    ]


@dataclass
class PreflightResult:
    findings: list[Finding]
    env: str = ""
    version: str = ""  # the API server's


def run_preflight(
    values_dir: Path, env: str | None, kubeconfig: Path, context: str | None = None
) -> PreflightResult:
    """Check one cluster's values against the cluster of `kubeconfig` (read-only). A fleet of
    several environments or clusters needs `env` (`env/cluster` for a cluster of an environment
    that declares clusters): one kubeconfig is one cluster."""
    try:
        checked, _ = dryrun.load(values_dir, env)
        loaded = checked.values
    except FindingsError as exc:
        return PreflightResult(exc.findings)
    if env not in loaded.envs:
        # One kubeconfig is one cluster: an environment of several clusters names one of them.
        chosen = loaded.views_of(env)
        if len(chosen) != 1:
            raise UsageError(
                "preflight checks one cluster: pass --env (known: "
                + ", ".join(v.key for v in chosen)
                + ")"
            )
        env = chosen[0].key
    rendered = render_tree(loaded, builds=checked.builds)
    units = [u for u in rendered.units if u.env == env]
    build = rendered.builds[env]
    with target.kubeconfig(kubeconfig, context) as cluster:
        state = read_cluster(cluster.client, build.workloads)
        found = check(build, units, state)
        version = cluster.version
    return PreflightResult(sorted_findings(replace(f, envs=(env,)) for f in found), env, version)
