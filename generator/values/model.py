"""The resolved fleet for one environment (or for the environment-independent base).

Builders read these typed objects; `doc` keeps the merged values with their locations so checks
can point at the file and line that set a value.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from generator.errors import UsageError
from generator.findings import layer_key
from generator.values.allocation.base import MpsDaemon, PluginConfig, Sharing
from generator.values.allocation.dra import DraDriver
from generator.values.inventory import Inventory, NodeShape
from generator.values.merge import Doc
from generator.vocab.addons import FLEET
from generator.vocab.labels import NFD_PREFIX

# The PCI classes NFD treats as accelerators: its pci source's default deviceClassWhitelist
# (display 03, co-processor 0b40, processing accelerators 12; NFD v0.19.0 source/pci/pci.go).
# Rules for device IDs of a model the catalog does not know match any of them.
ACCELERATOR_CLASSES = ("03", "0b40", "12")
BASE_ENV = ""  # the name of the environment-independent layer


@dataclass(frozen=True)
class Taint:
    key: str
    effect: str
    value: str = ""

    def as_dict(self) -> dict[str, str]:
        out = {"key": self.key, "effect": self.effect}
        if self.value:
            out["value"] = self.value
        return out


# The kubelet's device-plugin directory: a device plugin registers and serves its socket there
# (source: kubernetes/kubelet pkg/apis/deviceplugin/v1beta1/constants.go v0.36.3, DevicePluginPath).
DEVICE_PLUGIN_PATH = "/var/lib/kubelet/device-plugins"


@dataclass(frozen=True)
class NodeAgent:
    """One container on every node of a vendor's pools (a device plugin or an exporter), as
    upstream ships it: env, volumes and mounts are Kubernetes EnvVar/Volume/VolumeMount dicts."""

    image: str
    version: str
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: tuple[dict[str, Any], ...] = ()
    volumes: tuple[dict[str, Any], ...] = ()
    volume_mounts: tuple[dict[str, Any], ...] = ()
    security_context: dict[str, Any] = field(default_factory=dict)
    resources: dict[str, Any] = field(default_factory=dict)
    liveness_probe: dict[str, Any] = field(default_factory=dict)
    readiness_probe: dict[str, Any] = field(default_factory=dict)
    host_pid: bool = False
    host_ipc: bool = False
    host_network: bool = False
    rbac: tuple[dict[str, Any], ...] = ()
    priority_class: str = "system-node-critical"

    @property
    def privileged(self) -> bool:
        return bool(self.security_context.get("privileged"))

    def mounts_host_path(self, path: str) -> bool:
        """Whether the container mounts host directory `path` at the same path."""
        host = {
            v["name"]: v["hostPath"]["path"].rstrip("/")
            for v in self.volumes
            if isinstance(v.get("hostPath"), dict)
        }
        return any(
            host.get(m["name"]) == path and m["mountPath"].rstrip("/") == path
            for m in self.volume_mounts
        )


def node_agent(raw: dict[str, Any], priority_class: str = "system-node-critical") -> NodeAgent:
    """A NodeAgent from the merged values of `devicePlugin` or `exporter.daemonSet`."""
    return NodeAgent(
        image=str(raw.get("image", "")),
        version=str(raw.get("version", "")),
        command=tuple(raw.get("command", [])),
        args=tuple(raw.get("args", [])),
        env=tuple(dict(e) for e in raw.get("env", [])),
        volumes=tuple(dict(v) for v in raw.get("volumes", [])),
        volume_mounts=tuple(dict(m) for m in raw.get("volumeMounts", [])),
        security_context=dict(raw.get("securityContext", {})),
        resources=dict(raw.get("resources", {})),
        liveness_probe=dict(raw.get("livenessProbe", {})),
        readiness_probe=dict(raw.get("readinessProbe", {})),
        host_pid=bool(raw.get("hostPID", False)),
        host_ipc=bool(raw.get("hostIPC", False)),
        host_network=bool(raw.get("hostNetwork", False)),
        rbac=tuple(dict(r) for r in raw.get("rbac", [])),
        priority_class=str(raw.get("priorityClassName", priority_class)),
    )


# A vendor's sharing (Sharing), its plugin's config file (PluginConfig, MpsDaemon) and its DRA
# driver (DraDriver) are defined with the allocation modes that make them (values/allocation/).


@dataclass(frozen=True)
class DevicePlugin:
    name: str
    namespace: str
    agent: NodeAgent
    config: PluginConfig | None = None

    @property
    def mps(self) -> MpsDaemon | None:
        """The plugin's MPS control daemon, where its config file records one."""
        return self.config.mps if self.config else None

    @property
    def image(self) -> str:
        return self.agent.image

    @property
    def version(self) -> str:
        return self.agent.version


@dataclass(frozen=True)
class OperatorPart:
    """One node component a vendor's operator can provide (catalog `operator.<component>`)."""

    deploy_label: str  # the node label it reads ("false": not on this node)
    daemon_set: str
    pod_labels: dict[str, str]
    port: int = 0
    port_name: str = ""
    config_label: str = ""  # node label naming the operand's config, where it has one


@dataclass(frozen=True)
class VendorOperator:
    """A vendor's operator (catalog `operator`): the platform add-on it is, the components it can
    provide, and the RuntimeClass it creates (docs/brownfield.md)."""

    addon: str  # its key under `platform:`
    parts: dict[str, OperatorPart]  # by component: devicePlugin, exporter
    runtime_class: str = ""
    tolerations: tuple[dict[str, str], ...] = ()  # its chart's default for every operand


# The components of a vendor that a provider is declared for (`<component>.provided`).
DEVICE_PLUGIN, EXPORTER = "devicePlugin", "exporter"


@dataclass(frozen=True)
class PciModel:
    """An accelerator model as PCI sees it (catalog `pciModels`)."""

    classes: tuple[str, ...]
    """PCI classes (4 hex digits) or base classes (2)."""
    devices: tuple[str, ...]
    source: str


def find_pci_model(models: dict[str, PciModel], model: str) -> PciModel | None:
    """The entry for a pool's model, case-insensitively (A100 and a100 are one model)."""
    wanted = model.casefold()
    return next((m for k, m in models.items() if k.casefold() == wanted), None)


@dataclass(frozen=True)
class Pool:
    index: int
    name: str
    model: str
    devices_per_node: int
    nodes: tuple[str, ...]
    node_count: int  # len(nodes) when nodes are named
    pci_devices: tuple[str, ...]
    """Device IDs the pool's NFD rule matches: pciDevices, else the model's; () if unknown."""
    pci_classes: tuple[str, ...]
    """PCI classes (or base classes) the rule matches with them."""
    labels: dict[str, str]  # everything the pool's nodes carry (vendor + model + pool labels)
    taints: tuple[Taint, ...]
    # Pods that share one device (the vendor's `sharing`); 1 when devices are handed out whole.
    replicas: int = 1
    # The PCI inventory of the pool's servers: its `serverType` (the site's values/inventories/,
    # else a built-in one), else the built-in one of the vendor's model; None: none is known.
    inventory: Inventory | None = None
    # The pool's node shape (its `node`) over its inventory's; what is declared in neither is
    # not declared (a simulated node then has the control plane's default).
    node: NodeShape = field(default_factory=NodeShape)

    @property
    def units_per_node(self) -> int:
        """What each node advertises: devices, times replicas where they are shared."""
        return self.devices_per_node * self.replicas

    @property
    def capacity(self) -> int:
        """The pool's units: devices, or shares of them where the vendor shares its devices."""
        return self.units_per_node * self.node_count


@dataclass(frozen=True)
class Vendor:
    id: str
    display_name: str
    resource_name: str
    pci_vendor: str
    pci_models: dict[str, PciModel]
    selector_label: str
    model_label: str
    node_labels: dict[str, str]
    taints: tuple[Taint, ...]
    cost_weight: float  # of one unit: a device, or one share of it (costWeight / replicas)
    device_plugin: DevicePlugin
    exporter: dict[str, Any]
    pools: tuple[Pool, ...]
    doc: Doc = field(repr=False, compare=False)
    # The container runtime the vendor's devices need, as the node's containerd names it (the
    # catalog's `runtime.handler`), and the RuntimeClass its pods name when that runtime is not
    # the node's default (values `runtimeClass`; "" when it is: docs/vendors.md).
    runtime_handler: str = ""
    runtime_class: str = ""
    sharing: Sharing | None = None
    # The vendor's DRA driver when its devices are claimed through it (values `allocation:
    # dra`): the vendor's resource_name is then its DeviceClass's quota name.
    dra: DraDriver | None = None
    # The built-in catalog entry the vendor starts from (its file name, or values `catalog`);
    # "" for a vendor outside the catalog.
    catalog: str = ""
    # Who provides the vendor's device plugin and its exporter (vocab/addons.py PROVIDERS): the
    # fleet renders only what it provides (docs/brownfield.md).
    plugin_provider: str = FLEET
    exporter_provider: str = FLEET
    operator: VendorOperator | None = None
    # Per pool model, as the vendor file spells it (`costWeights`), of one unit like cost_weight:
    # the models priced apart from the vendor's costWeight.
    model_cost_weights: dict[str, float] = field(default_factory=dict)

    def provider(self, component: str) -> str:
        """Who provides `component` (DEVICE_PLUGIN or EXPORTER) on the vendor's nodes."""
        return self.plugin_provider if component == DEVICE_PLUGIN else self.exporter_provider

    @property
    def capacity(self) -> int:
        return sum(p.capacity for p in self.pools)

    def pool_model(self, model: str) -> str:
        """The model as the vendor's pools spell it (A100 and a100 are one model); "" when no
        pool of the vendor has it."""
        wanted = model.casefold()
        return next((p.model for p in self.pools if p.model.casefold() == wanted), "")

    @property
    def models(self) -> tuple[str, ...]:
        """The models of the vendor's pools, in pool order, each once."""
        return tuple(dict.fromkeys(p.model for p in self.pools))

    def model_cost_weight(self, model: str) -> float:
        """The cost of one unit of a model: its `costWeights` entry, else the vendor's."""
        wanted = model.casefold()
        return next(
            (w for m, w in self.model_cost_weights.items() if m.casefold() == wanted),
            self.cost_weight,
        )

    @property
    def quota_key(self) -> str:
        """The vendor's line in a ResourceQuota: `requests.<resource>` for an extended resource,
        the DeviceClass's claimed devices for a vendor allocated by DRA."""
        return self.resource_name if self.dra else f"requests.{self.resource_name}"

    @property
    def device_class(self) -> str:
        """The DeviceClass a vendor allocated by DRA renders (its id), "" otherwise."""
        return self.id if self.dra else ""

    @property
    def unit_size(self) -> float:
        """The part of a device one unit is: 1, or 1/replicas of a shared or partitioned one."""
        return 1 / self.sharing.replicas if self.sharing else 1.0

    @property
    def units(self) -> str:
        """What the vendor's capacity and quotas count: devices, shares or MIG instances."""
        return self.sharing.units if self.sharing else "devices"

    @property
    def selector(self) -> dict[str, str]:
        """The node labels (as written in values) that pick this vendor's pools."""
        return {self.selector_label: self.node_labels[self.selector_label]}

    @property
    def all_taints(self) -> tuple[Taint, ...]:
        seen: dict[Taint, None] = {}
        for pool in self.pools:
            for taint in pool.taints:
                seen.setdefault(taint)
        return tuple(seen)


@dataclass(frozen=True)
class Crossing:
    """Where a service across clusters runs: each track's cluster (by vendor), and the cluster
    whose Gateway routes between them ("" for routing: external)."""

    tracks: dict[str, str]
    ingress: str = ""


@dataclass(frozen=True)
class Team:
    name: str
    namespaces: tuple[str, ...]
    owners: tuple[str, ...]
    pod_security: str
    quota: dict[str, int]  # vendor id -> devices per namespace (a per-model quota: their sum)
    doc: Doc = field(repr=False, compare=False)
    # The fleet's security profiles the team names (values/security.py), as its file lists them.
    security_profiles: tuple[str, ...] = ()
    # vendor id -> model (as the team file spells it) -> devices per namespace, for the vendors
    # the team quotas per model (`quota: {nvidia: {H100: 8, A100: 4}}`; docs/values.md).
    models: dict[str, dict[str, int]] = field(default_factory=dict)
    # service name -> where its tracks run, for the team's services whose tracks run in
    # different clusters of the environment (values/clusters.py places them; a cluster's view
    # holds such a service in every cluster of its tracks, and in its ingress cluster).
    crossing: dict[str, Crossing] = field(default_factory=dict)


def unit_cost(team: Team, vendor: Vendor) -> float:
    """What one of the team's units of `vendor` costs: the vendor's costWeight, or where the
    team quotas it per model, the models' weights (costWeights) averaged by that quota. Nothing
    counts a vendor's use per model (a ResourceQuota counts its resource), so the quota says
    which models a team's devices are."""
    models = team.models.get(vendor.id, {})
    total = sum(models.values())
    if not total:
        return vendor.cost_weight
    return sum(n * vendor.model_cost_weight(m) for m, n in models.items()) / total


@dataclass(frozen=True)
class Mirrors:
    """values `mirrors` (docs/values.md, "Mirrors"): where to pull what the fleet names from
    another place. Each a (what, its mirror) pair, sorted; builders/mirrors.py applies them."""

    # An image registry, or a path in one, and the registry path that mirrors it.
    registries: tuple[tuple[str, str], ...] = ()
    # A chart repository as an add-on names it (an https URL or an OCI registry path) and the
    # repository Argo CD installs the chart from instead.
    charts: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Fleet:
    name: str
    kubernetes_version: str
    environments: tuple[str, ...]
    repo_url: str
    target_revision: str
    repo_path: str
    argocd_namespace: str
    argocd_project: str
    destination_server: str
    automated_sync: bool
    node_config_method: str
    allow_overcommit: bool
    doc: Doc = field(repr=False, compare=False)
    # capacity.overcommitRatio: quotas may add up to this multiple of capacity; None: unset
    overcommit_ratio: float | None = None
    # The cluster's name in Argo CD, when the destination is given by name rather than server
    # (a cluster of an environment: values `clusters.<name>.destination.name`).
    destination_name: str = ""
    # argocd.instance: the Argo CD that syncs the environment ("": its own, shared with none).
    argocd_instance: str = ""
    # argocd.version: the Argo CD version the site runs ("": not said).
    argocd_version: str = ""
    mirrors: Mirrors = field(default_factory=Mirrors)

    @property
    def destination(self) -> dict[str, str]:
        """Where Argo CD deploys the units: by server URL or by registered name, never both
        (argo-cd pkg/apis/application/v1alpha1/types.go v3.5.1, ApplicationDestination; both is
        refused: util/argo/argo.go GetDestinationServer)."""
        if self.destination_name:
            return {"name": self.destination_name}
        return {"server": self.destination_server}

    def label_key(self, key: str) -> str:
        """The node label key as it lands on nodes: NFD prefixes keys that have no prefix."""
        if self.node_config_method == "nfd" and "/" not in key:
            return NFD_PREFIX + key
        return key

    def node_selector(self, labels: dict[str, str]) -> dict[str, str]:
        return {self.label_key(k): v for k, v in sorted(labels.items())}


@dataclass(frozen=True)
class Cluster:
    """One cluster of an environment that declares clusters (values `clusters.<name>`)."""

    name: str
    labels: dict[str, str]  # the cluster's own labels (region, ...), for people and monitoring
    doc: Doc = field(repr=False, compare=False)


@dataclass(frozen=True)
class FleetView:
    """Everything a builder needs for one cluster of an environment (env == BASE_ENV for the
    base layer). An environment that declares no clusters is one cluster: `cluster` is None
    and the view is the whole environment."""

    env: str
    fleet: Fleet
    vendors: tuple[Vendor, ...]  # enabled vendors, sorted by id
    teams: tuple[Team, ...]  # enabled teams, sorted by name
    env_file: str | None = None
    cluster: Cluster | None = None
    # The namespaces of the teams disabled here (`enabled: false`), sorted: Argo CD deletes what
    # a team's Application deployed only where its AppProject still permits it (argo-cd v3.2.6
    # controller/appcontroller.go, getPermittedAppLiveObjects), so the project keeps them
    # (builders/argocd.py) until the team's file is removed.
    retired: tuple[str, ...] = ()
    # The vendors whose values the loader refused here (a file that does not parse or match its
    # schema, a vendor that does not resolve), sorted: their own findings say why, so what names
    # them (a quota, a workload, a cluster's pools) is left unchecked rather than reported as
    # naming a vendor that does not exist (docs/validate.md, "One finding per root cause").
    refused: tuple[str, ...] = ()
    # The site's server types without accelerators (values/inventories/, accelerator null), by
    # name: simulate registers one node of each, beside the built-in ones, so a rule that
    # over-matches the site's own CPU servers shows.
    cpu_servers: tuple[Inventory, ...] = ()

    @property
    def key(self) -> str:
        """The view's layer: `env`, or `env/cluster` (findings.layer_key); also the folder of
        its units under overlays/."""
        return layer_key(self.env, self.cluster.name if self.cluster else "")

    def vendor(self, vendor_id: str) -> Vendor | None:
        return next((v for v in self.vendors if v.id == vendor_id), None)

    def vendors_for_resource(self, resource: str) -> list[Vendor]:
        return [v for v in self.vendors if v.resource_name == resource]


@dataclass(frozen=True)
class Values:
    """The loaded values tree: the base layer, one view per cluster, and one per environment."""

    root: str
    base: FleetView
    # One view per cluster, by layer key (FleetView.key): `env` for an environment that declares
    # no clusters, `env/<cluster>` for each cluster of one that does.
    envs: dict[str, FleetView]
    # One view per environment, unsplit: where its Argo CD (the hub) and the units that span its
    # clusters are built from. The same object as envs[env] when it declares no clusters.
    hubs: dict[str, FleetView] = field(default_factory=dict)

    def require_env(self, env: str | None) -> None:
        """UsageError when `env` (a --env option) names no environment or cluster."""
        require_env(env, [*self.envs, *self.hubs])

    def views_of(self, env: str | None) -> list[FleetView]:
        """The cluster views `--env` selects, in key order: all, one environment's clusters,
        or one cluster (`env/cluster`)."""
        return [
            v
            for k, v in sorted(self.envs.items())
            if env is None or k == env or (v.env == env and v.cluster is not None)
        ]

    def hub_of(self, view: FleetView) -> FleetView:
        return self.hubs.get(view.env, view)

    def of_layer(self, layer: str) -> FleetView:
        """The view a unit of `layer` (Unit.env) is built from: its cluster's, or for the argocd
        unit of an environment with clusters, the environment's (the hub's)."""
        return self.envs.get(layer) or self.hubs[layer]


def require_env(env: str | None, known: Iterable[str]) -> None:
    """UsageError when `env` (a --env option) is set and not one of `known`."""
    names = sorted(set(known))
    if env is not None and env not in names:
        raise UsageError(f"unknown environment {env!r}; known: " + ", ".join(names))
