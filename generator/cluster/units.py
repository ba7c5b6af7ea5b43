"""The units of one environment as Argo CD applies them: kustomize-built, in sync-wave order.

Order (what Argo CD's gitops-engine does, source: argoproj/argo-cd
gitops-engine/pkg/sync/sync_tasks.go at 2c6e46a, `syncTasks.Less` and `Sort`): Applications by
their sync wave; inside a unit, objects by sync-wave annotation, then by kind in `kindOrder`
(Namespace, NetworkPolicy, ResourceQuota, ... Job, CronJob, Ingress; other kinds, custom
resources included, after them), then by name; a Namespace moves before the first object in it.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from generator.builders.fleet import Build
from generator.findings import Finding, Location, split_layer
from generator.kustomize import build_failed, kustomize, objects, write_tree
from generator.render.layout import render_tree
from generator.values import clusters
from generator.values.model import FleetView, Values
from generator.vocab.api import CORE
from generator.vocab.labels import CLUSTER_LABEL, SYNC_WAVE, UNIT_LABEL
from generator.vocab.objects import Obj
from generator.vocab.units import TEAM_UNIT_WAVE, UNIT_WAVES, Unit

# source: argoproj/argo-cd gitops-engine/pkg/sync/sync_tasks.go (kindOrder), at 2c6e46a
KIND_ORDER = (
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
)
_KIND_RANK = {kind: i - len(KIND_ORDER) for i, kind in enumerate(KIND_ORDER)}
ARGOCD_UNIT = "argocd"
ROOT_WAVE = -10


@dataclass
class BuiltUnit:
    unit: Unit
    wave: int
    docs: list[Obj]
    """The kustomize output, in the order Argo CD applies it."""


def object_wave(obj: Obj) -> int:
    raw = (obj.get("metadata", {}).get("annotations") or {}).get(SYNC_WAVE, "0")
    try:
        return int(raw)
    except ValueError:
        return 0


def _kind_rank(obj: Obj) -> int:
    # Only core kinds are in kindOrder; a custom resource that shares a kind name (Volcano's Job)
    # is ranked with the custom resources, as gitops-engine looks at the kind alone.
    return _KIND_RANK.get(str(obj.get("kind")), 0)


def argocd_order(docs: list[Obj]) -> list[Obj]:
    ordered = sorted(
        docs, key=lambda o: (object_wave(o), _kind_rank(o), str(o.get("metadata", {}).get("name")))
    )
    # Namespaces before the first object that lives in them.
    out: list[Obj] = []
    for obj in ordered:
        if obj.get("kind") == "Namespace" and obj.get("apiVersion") == CORE:
            name = obj["metadata"]["name"]
            first = next(
                (i for i, o in enumerate(out) if o.get("metadata", {}).get("namespace") == name),
                None,
            )
            if first is not None:
                out.insert(first, obj)
                continue
        out.append(obj)
    return out


def unit_waves(units: list[Unit]) -> dict[str, int]:
    """Each unit's wave, as its Application carries it (the root app of apps first)."""
    waves = {ARGOCD_UNIT: ROOT_WAVE}
    for unit in units:
        if unit.name != ARGOCD_UNIT:
            continue
        for obj in unit.objects:
            labels = obj.get("metadata", {}).get("labels") or {}
            name = labels.get(UNIT_LABEL)
            if obj.get("kind") == "Application" and name and name != ARGOCD_UNIT:
                waves[name] = object_wave(obj)
    for unit in units:
        waves.setdefault(unit.name, UNIT_WAVES.get(unit.name, TEAM_UNIT_WAVE))
    return waves


def _this_cluster(docs: list[Obj], cluster: str) -> list[Obj]:
    """The hub's argocd unit as one cluster sees it: the project and root Application, and the
    Applications that deploy to this cluster (not the other clusters' units and add-ons)."""
    return [
        d
        for d in docs
        if (d.get("metadata", {}).get("labels") or {}).get(CLUSTER_LABEL, cluster) == cluster
    ]


def build(
    loaded: Values, env: str, jobs: int = 0, *, builds: dict[str, Build] | None = None
) -> tuple[list[BuiltUnit], list[Finding]]:
    """kustomize build of every unit of ``env`` (rendered from `builds`, each view's, when
    given); findings for units that do not build."""
    rendered = render_tree(loaded, builds=builds)
    # A cluster's units, and its environment's argocd unit (on the hub, beside the clusters'
    # folders when the environment declares clusters): it holds the waves.
    hub = split_layer(env)[0]
    units = [u for u in rendered.units if u.env == env or (u.env == hub and u.name == ARGOCD_UNIT)]
    folders = tuple(f"{u.path}/" for u in units)
    mine = {
        rel: text
        for rel, text in rendered.tree.items()
        if rel.startswith("base/") or rel.startswith(folders)
    }
    with tempfile.TemporaryDirectory(prefix="accel-units-") as tmp:
        write_tree(mine, Path(tmp))
        built = kustomize(Path(tmp), [u.path for u in units], jobs)
    waves = unit_waves(units)
    out: list[BuiltUnit] = []
    findings: list[Finding] = []
    for unit in units:
        res = built[unit.path]
        if not res["ok"]:
            findings.append(build_failed(unit, res["error"], Location(unit.path)))
            continue
        docs = argocd_order(objects(res["output"]))
        if unit.env != env:
            docs = _this_cluster(docs, split_layer(env)[1])
        out.append(BuiltUnit(unit, waves[unit.name], docs))
    out.sort(key=lambda b: (b.wave, b.unit.name))
    return out, findings


def version_location(loaded: Values, view: FleetView | None = None) -> tuple[Location, str]:
    """(where, JSON path) the Kubernetes version of `view`'s cluster is set (values/clusters.py),
    or fleet.yaml's without a view."""
    if view is not None:
        return clusters.version_location(view)
    return loaded.base.fleet.doc.locate(("kubernetesVersion",)), "$.kubernetesVersion"
