"""What a render is made of: components (kustomize bases), units (one Argo CD Application's
kustomize folder each), the tree of files, and the order Argo CD syncs the units in."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from generator.findings import Location
from generator.vocab.objects import Obj, identity

Tree = dict[str, str]  # relative path -> file text of a rendered tree (base/, overlays/)

# The units every environment may have, by name.
NODE_CONFIG_UNIT = "node-config"
DEVICE_PLUGINS_UNIT = "device-plugins"
MONITORING_UNIT = "monitoring"
SCHEDULING_UNIT = "scheduling"
PACKING_UNIT = "packing-scheduler"
ARGOCD_UNIT = "argocd"
SECURITY_UNIT = "security-profiles"

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
    NODE_CONFIG_UNIT: 0,
    # The admission policy that keeps baseline in namespaces a security profile lifts to
    # privileged must exist before a pod is created there (docs/security.md).
    SECURITY_UNIT: 0,
    SCHEDULING_UNIT: 1,
    DEVICE_PLUGINS_UNIT: 2,
    MONITORING_UNIT: 2,
    PACKING_UNIT: 2,
}
TEAM_UNIT_WAVE = 2
# Add-on Applications sync before every unit (UNIT_WAVES starts at 0).
ADDON_WAVE = -5


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


def by_unit(comps: Iterable[Component]) -> dict[str, list[Component]]:
    """Components grouped by their unit, each group in the order given."""
    found: dict[str, list[Component]] = {}
    for comp in comps:
        found.setdefault(comp.unit, []).append(comp)
    return found


@dataclass(frozen=True)
class Unit:
    """One Argo CD Application's kustomize unit: what `kustomize build path` must give."""

    env: str
    name: str
    path: str  # overlays/<env>/<unit>
    objects: tuple[Obj, ...]
    origins: dict[tuple[str, str, str, str], Location]  # values file:line of each object
