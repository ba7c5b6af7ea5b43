"""Shared pieces of every builder: components, metadata, provenance."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from generator.findings import Location
from generator.values.model import Taint
from generator.values.yamlio import Obj

MANAGED_BY = "accel-gitops"
SOURCE_ANNOTATION = "accel-gitops.io/source"
VENDOR_LABEL = "accel-gitops.io/vendor"
TEAM_LABEL = "accel-gitops.io/team"
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"

# The kustomize units every environment has, in Argo CD sync order. With the Application health
# check restored (docs/argocd.md), a wave starts only when every Application of the waves before
# it is Healthy (argo-cd v3.4.0 gitops-engine/pkg/sync/sync_context.go), with no timeout unless
# the controller's --sync-timeout is set. A DaemonSet is Progressing while one of its pods is not
# available (gitops-engine/pkg/health/health_daemonset.go), a Deployment while its replicas are not
# available, a Job until it finishes (health_deployment.go, health_job.go). So a unit whose
# health waits on pods must not come before another: a device plugin whose image is not pushed
# yet would hold every team, and a team's GPU Deployment, which waits for the device plugins and
# the packing scheduler, would hold them in turn (a deadlock on first install). Only what others
# need to exist, not to run, comes first: the node configuration (labels and taints) and the
# scheduling unit (Kueue's flavors). Everything with pods syncs together in the last wave, where
# team pods simply wait for the devices and the scheduler of the same wave.
UNIT_WAVES = {
    "node-config": 0,
    "scheduling": 1,
    "device-plugins": 2,
    "monitoring": 2,
    "packing-scheduler": 2,
}
TEAM_UNIT_WAVE = 2
UNSHARED_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease", "default"})


@dataclass(frozen=True)
class UserPatch:
    """A patch a workload's values give (`patch`) for one of its objects: a strategic merge
    patch (an object) or a JSON 6902 patch (a list of operations)."""

    target: Obj  # the object it patches, as the generator renders it
    patch: Obj | list[Obj]


@dataclass
class Component:
    """A group of objects that is a kustomize base of its own: `base/<name>/`.

    `unit` is the kustomize unit (and Argo CD Application) of each environment it belongs to.
    """

    unit: str
    name: str
    objects: list[Obj] = field(default_factory=list)
    # Where in values each object comes from (validate points its findings there); objects
    # without an entry fall back to `origin`.
    origin: Location | None = None
    origins: dict[tuple[str, str, str, str], Location] = field(default_factory=dict)
    # A team's escape-hatch patches (values `patch`), applied by kustomize in every overlay of
    # the unit after the generator's own objects and patches.
    patches: list[UserPatch] = field(default_factory=list)

    def add(self, obj: Obj, origin: Location | None = None) -> Obj:
        self.objects.append(obj)
        if origin is not None:
            self.origins[identity(obj)] = origin
        return obj

    def origin_of(self, obj: Obj) -> Location | None:
        return self.origins.get(identity(obj), self.origin)


def metadata(
    name: str,
    *,
    sources: Iterable[str],
    namespace: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> Obj:
    meta: Obj = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = {"app.kubernetes.io/managed-by": MANAGED_BY, **(labels or {})}
    notes = {SOURCE_ANNOTATION: ", ".join(sources)}
    notes.update(annotations or {})
    meta["annotations"] = notes
    return meta


def namespace(
    name: str,
    *,
    sources: Iterable[str],
    pod_security: str,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> Obj:
    """A Namespace with Pod Security admission enforcing `pod_security` (warn/audit restricted)."""
    psa = {
        "pod-security.kubernetes.io/enforce": pod_security,
        "pod-security.kubernetes.io/audit": "restricted"
        if pod_security != "privileged"
        else "privileged",
        "pod-security.kubernetes.io/warn": "restricted"
        if pod_security != "privileged"
        else "privileged",
    }
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": metadata(
            name, sources=sources, labels={**psa, **(labels or {})}, annotations=annotations
        ),
    }


def same_but_source(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two objects differ at most in their provenance annotation.

    The environment's view of an object names every file merged into it, its environment file
    included, even where that file changed nothing in the object; layout uses this to keep such
    an object as the base has it, so only real changes become patches.
    """
    if a.keys() != b.keys() or any(a[k] != b[k] for k in a if k != "metadata"):
        return False
    meta_a, meta_b = a["metadata"], b["metadata"]
    if meta_a.keys() != meta_b.keys() or any(
        meta_a[k] != meta_b[k] for k in meta_a if k != "annotations"
    ):
        return False
    notes_a, notes_b = meta_a.get("annotations") or {}, meta_b.get("annotations") or {}
    return {k: v for k, v in notes_a.items() if k != SOURCE_ANNOTATION} == {
        k: v for k, v in notes_b.items() if k != SOURCE_ANNOTATION
    }


def identity(obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
    meta = obj["metadata"]
    return (obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])


Tree = dict[str, str]  # relative path -> file text of a rendered tree (base/, overlays/)


@dataclass(frozen=True)
class Unit:
    """One Argo CD Application's kustomize unit: what `kustomize build path` must give."""

    env: str
    name: str
    path: str  # overlays/<env>/<unit>
    objects: tuple[Obj, ...]
    origins: dict[tuple[str, str, str, str], Location]  # values file:line of each object


def toleration(taint: Taint) -> dict[str, str]:
    """The toleration that lets a pod onto nodes with `taint` (a Kueue flavor's, a workload's)."""
    if taint.value:
        return {"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect}
    return {"key": taint.key, "operator": "Exists", "effect": taint.effect}
