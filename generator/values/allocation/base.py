"""What the sharing modes have in common: the mode itself (SharingMode, which each mode's module
specialises), what a vendor's `sharing` resolves to (Sharing), the device plugin's config file as
the catalog records it, and the context a mode resolves in.

A mode is data (its values key, its units, its words, its schema) and the methods that differ
between modes (resolving its settings, the plugin's config file, what simulate and preflight say
of it). Code outside this package asks a vendor's `sharing.mode` and never compares its key.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from generator.findings import Finding
from generator.values.merge import Doc
from generator.values.schemakit import Schema
from generator.values.yamlio import YamlPath, json_path

# `allocation` of a vendor whose devices reach pods through its device plugin (the default).
DEVICE_PLUGIN = "devicePlugin"


@dataclass(frozen=True)
class MpsDaemon:
    """A plugin's MPS control daemon as the catalog records it (configFile.mps): it runs beside
    the plugin from the plugin's image, and both reach it through the host folder `root`."""

    root: str  # on the host
    container_root: str  # where the daemon and the plugin see it
    env: str  # the plugin's variable naming the host folder
    command: tuple[str, ...]
    mount_command: tuple[str, ...]  # its init container's: mounts the daemon's memory
    env_vars: tuple[dict[str, Any], ...]  # the daemon container's
    max_replicas: int


@dataclass(frozen=True)
class PluginConfig:
    """A device plugin's config file as the catalog records it (devicePlugin.configFile)."""

    env: str  # the environment variable that names the file
    version: str
    shared_suffix: str  # appended to the resource name of shared devices
    sharing: tuple[str, ...]  # the sharing strategies the file accepts
    mps: MpsDaemon | None = None


def plugin_config(raw: Any) -> PluginConfig | None:
    """A PluginConfig from the merged values of devicePlugin.configFile; None without one."""
    if not raw:
        return None
    mps = raw.get("mps")
    return PluginConfig(
        str(raw["env"]),
        str(raw["version"]),
        str(raw["sharedSuffix"]),
        tuple(raw["sharing"]),
        MpsDaemon(
            str(mps["root"]),
            str(mps["containerRoot"]),
            str(mps["env"]),
            tuple(mps["command"]),
            tuple(mps["mountCommand"]),
            tuple(dict(e) for e in mps.get("daemonEnv", [])),
            int(mps["maxReplicas"]),
        )
        if mps
        else None,
    )


@dataclass(frozen=True)
class PluginContainer:
    """What a mode gives the device plugin's container besides its config file, as the mode's
    catalog facts record it: variables appended to its env, and a securityContext that takes the
    place of the catalog's devicePlugin.securityContext ({}: the catalog's stands)."""

    env: tuple[dict[str, Any], ...] = ()
    security_context: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Sharing:
    """How a vendor's devices are shared between pods (values `sharing`, docs/allocation.md):
    the plugin advertises each device `replicas` times, under the shared resource name: shares
    of it (time-slicing), or the MIG instances of one profile the device is partitioned into."""

    mode: SharingMode  # the key of values `sharing` it came from: mode.key
    replicas: int  # units per device: shares, MIG instances of the profile, vNPUs
    # The plugin's resource before renaming (its config's resources[].name); for mig and vnpu,
    # the resource the plugin advertises each instance or vNPU under.
    resource: str
    profile: str = ""  # the MIG profile (mig) or vNPU template (vnpu); "" otherwise
    mig_strategy: str = ""  # the plugin's flags.migStrategy (mig); "" otherwise
    # mig: the node label that asks the site's MIG manager for the layout (key, value), and the
    # label by which it reports the layout applied (key, value once applied).
    layout_label: tuple[str, str] = ("", "")
    state_label: tuple[str, str] = ("", "")
    # What the plugin's container needs under the mode (mig: the catalog's mig.plugin); the
    # mode hands it to the builder through plugin_container().
    plugin: PluginContainer = field(default_factory=PluginContainer)

    @property
    def units(self) -> str:
        """What a shared vendor's capacity and quotas count: shares, instances, vNPUs."""
        return self.mode.units

    @property
    def per_device(self) -> str:
        """What one device becomes, after "each": "shared 4 ways", "partitioned into 7 MIG
        1g.10gb instances"."""
        return self.mode.words[0].format(n=self.replicas, p=self.profile)

    @property
    def counted_in(self) -> str:
        """The unit of the vendor's capacity and quotas, for a table: "1/4 shares"."""
        return self.mode.words[1].format(n=self.replicas, p=self.profile)

    @property
    def one_per_pod(self) -> bool:
        """Whether the plugin refuses a pod more than one unit (failRequestsGreaterThanOne, which
        MPS forces; Ascend's plugin allocates one vNPU per container request); a pod may ask for
        several MIG instances."""
        return self.mode.one_per_pod is not None


class PoolFacts(Protocol):
    """What a mode reads of a resolved pool (model.Pool, which sits above this package)."""

    @property
    def index(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def pci_devices(self) -> tuple[str, ...]: ...
    @property
    def devices_per_node(self) -> int: ...
    @property
    def units_per_node(self) -> int: ...


@dataclass
class Context:
    """One vendor being resolved: its merged values, and the findings the loader collects."""

    vendor_id: str
    doc: Doc
    findings: list[Finding]

    @property
    def where(self) -> str:
        return f"values/vendors/{self.vendor_id}.yaml"

    def need(self, path: YamlPath, what: str, hint: str) -> Any:
        """The value at `path`; VAL003 when it is not set (or empty)."""
        value = self.doc.get(*path)
        if value in (None, "", [], {}):
            self.findings.append(
                Finding(
                    "VAL003", f"{what} is not set", self.doc.locate(path), json_path(path), hint
                )
            )
        return value

    def refuse(self, code: str, message: str, path: YamlPath, hint: str, key: bool = False) -> None:
        """A finding at `path` of the vendor's values (at its key with `key`)."""
        self.findings.append(
            Finding(code, message, self.doc.locate(path, key=key), json_path(path), hint)
        )


@dataclass(frozen=True, eq=False)
class SharingMode(ABC):
    """One key of values `sharing`: its data here, what differs between modes in the methods its
    module overrides. One object per mode (registry.py lists them), compared by identity."""

    key: str  # under values `sharing`
    units: str  # what the vendor's capacity and quotas count
    # What a device becomes and what a unit is, in words ({n}: units per device, {p}: the MIG
    # profile or vNPU template).
    words: tuple[str, str]
    settings: Schema  # the schema of values `sharing.<key>`
    # A plugin that gives a pod one unit at most: what one unit is called and why (ALC002);
    # None where a pod may hold several.
    one_per_pod: tuple[str, str] | None = None
    # Whether the plugin's config file must offer the mode (the catalog's configFile.sharing);
    # a mode the plugin finds by itself needs no file (ALC001 otherwise).
    in_plugin_file: bool = True
    # Whether the plugin needs its MPS control daemon beside it (rendered by the builders).
    mps_daemon: bool = False
    # Whether the site makes the units the fleet counts (preflight checks each node, PRE010).
    site_made: bool = False
    # Keys of a vendor file (catalog facts) the mode reads, with their schemas.
    catalog: dict[str, Schema] = field(default_factory=dict)
    # Keys of devicePlugin.configFile the mode reads, with their schemas.
    plugin_file: dict[str, Schema] = field(default_factory=dict)

    @abstractmethod
    def resolve(
        self, ctx: Context, settings: dict[str, Any], resource: str, config: PluginConfig | None
    ) -> Sharing | None:
        """The vendor's Sharing from its `sharing.<key>` settings, or None with findings."""

    def offered(self, ctx: Context, config: PluginConfig | None) -> PluginConfig | None:
        """The plugin's config file when it accepts this mode; None and ALC001 when it cannot."""
        if config is not None and self.key in config.sharing:
            return config
        offered = (
            f"its config file offers {', '.join(config.sharing) or 'no sharing'}"
            if config
            else "the catalog records no config file for it (devicePlugin.configFile)"
        )
        ctx.refuse(
            "ALC001",
            f"vendor {ctx.vendor_id} shares its devices by {self.key}, but its device plugin "
            f"cannot: {offered}",
            ("sharing", self.key),
            "remove `sharing`, or use a vendor whose plugin shares devices this way "
            "(docs/allocation.md lists them)",
            key=True,
        )
        return None

    def pool_labels(self, sharing: Sharing) -> dict[str, str]:
        """Labels every node of the vendor's pools carries for the mode."""
        return {}

    def check_pools(self, ctx: Context, sharing: Sharing, pools: Sequence[PoolFacts]) -> None:
        """Findings on pools the mode cannot serve as declared (none: any pool will do)."""
        return None

    def advertised(self, sharing: Sharing, config: PluginConfig | None) -> str:
        """The resource name the plugin advertises each unit under."""
        return sharing.resource

    def plugin_file_settings(self, sharing: Sharing, config: PluginConfig) -> dict[str, Any] | None:
        """The plugin's config file for the mode; None when the plugin needs none."""
        return None

    def plugin_container(self, sharing: Sharing) -> PluginContainer:
        """What the plugin's container gets under the mode besides its config file: env to
        append and a securityContext in place of the catalog's. Nothing, unless the mode's
        resolve() read some from its catalog facts (MIG's mig.plugin)."""
        return sharing.plugin

    @abstractmethod
    def simulated(self, vendor_id: str, resource: str, sharing: Sharing) -> str:
        """What simulate stood in for and did not run (SIM011)."""

    def devices_missing_cause(self, sharing: Sharing) -> str | None:
        """Why a node may advertise fewer units than its pool's, beyond a failed device or a
        plugin that lost one (AcceleratorNodeDevicesMissing); None: nothing more."""
        return None

    def site_shortfall(
        self,
        vendor_id: str,
        resource: str,
        sharing: Sharing,
        pool: PoolFacts,
        node: str,
        reported: str | None,
        allocatable: str,
    ) -> tuple[str, str]:
        """PRE010's message and the start of its hint, for a node of a pool whose units the
        site makes (site_made) that does not advertise them: `reported` is its state label's
        value (None: no label), `allocatable` what it advertises."""
        raise NotImplementedError(self.key)

    def unknown_partition(
        self,
        ctx: Context,
        setting: str,
        what: str,
        name: str,
        catalog: str,
        known: dict[str, Any],
        facts: str,
    ) -> None:
        """ALC006 at `sharing.<key>.<setting>`: a MIG profile or vNPU template (`what`) the
        catalog does not record, with the ones it does."""
        listed = ", ".join(sorted(known)) or "none"
        ctx.refuse(
            "ALC006",
            f"vendor {ctx.vendor_id}: {what} {name!r} is not one the catalog records for its "
            f"devices ({catalog}: {listed})",
            ("sharing", self.key, setting),
            f"use one of {listed}, or add the {setting} to `{catalog}` in the vendor file with "
            f"its {facts}",
        )
