"""MIG (docs/allocation.md, "MIG"): every GPU of the vendor's pools partitioned by the site's MIG
manager into instances of one profile, which the device plugin advertises under the profile's
own resource name. Values: `sharing.mig.profile`; the catalog's `mig` records the profiles."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from generator.values.allocation.base import (
    Context,
    PluginConfig,
    PluginContainer,
    PoolFacts,
    Sharing,
    SharingMode,
)
from generator.values.schemakit import (
    ENV_VAR,
    LABEL_KEY,
    SECURITY_CONTEXT,
    SOURCES,
    array,
    obj,
    string,
)

# The vendor file's key under which the catalog records MIG.
CATALOG = "mig"

# A MIG profile's name as NVIDIA writes it: compute slices, then memory (1g.10gb, 1g.10gb+me).
MIG_PROFILE = r"^[1-9][0-9]*g\.[1-9][0-9]*gb(\+[a-z]+)?$"

SETTINGS = obj(
    {
        "profile": string(
            MIG_PROFILE,
            description="the MIG profile every device of the pools is partitioned into "
            "(catalog mig.profiles), e.g. 1g.10gb",
        ),
    },
    ("profile",),
)

# What the catalog knows of a vendor's MIG partitioning (values `sharing.mig`,
# docs/allocation.md): the device plugin's strategy and resource names, what its container needs
# under a MIG strategy, the node labels by which the site's MIG manager is asked for a layout and
# reports it, and per profile how many instances one device holds and on which devices (PCI IDs).
# Catalog data, cited.
CATALOG_SCHEMA = obj(
    {
        "strategy": string(minLength=1, description="the plugin's flags.migStrategy"),
        "resourcePrefix": string(
            minLength=1, description="a profile's resource name is this prefix + the profile"
        ),
        "plugin": obj(
            {
                "env": array(
                    ENV_VAR, minItems=1, description="appended to the plugin container's env"
                ),
                "securityContext": SECURITY_CONTEXT,
            },
            description="what the plugin's container needs under a MIG strategy, as upstream's "
            "chart gives it: env, and a securityContext in place of devicePlugin's",
        ),
        "configLabel": string(LABEL_KEY, description="the node label naming the MIG layout"),
        "layoutPrefix": string(description="a profile's layout name is this prefix + the profile"),
        "stateLabel": string(LABEL_KEY, description="the node label the MIG manager reports on"),
        "stateReady": string(minLength=1, description="its value once the layout is applied"),
        "profiles": {
            "type": "object",
            "propertyNames": {"pattern": MIG_PROFILE},
            "additionalProperties": obj(
                {
                    "instances": {"type": "integer", "minimum": 1},
                    "devices": array(string(r"^[0-9a-f]{4}$"), minItems=1, uniqueItems=True),
                    "source": string(minLength=1),
                },
                ("instances", "devices", "source"),
            ),
        },
        "sources": SOURCES,
    },
    # As draDriver: the loader asks for what the merged entry lacks.
    description="the vendor's MIG partitioning (docs/allocation.md)",
)
# The facts the merged entry must hold (VAL003 for each one missing), as paths under `mig`.
FIELDS: tuple[tuple[str, ...], ...] = (
    ("strategy",),
    ("resourcePrefix",),
    ("plugin", "env"),
    ("plugin", "securityContext"),
    ("configLabel",),
    ("layoutPrefix",),
    ("stateLabel",),
    ("stateReady",),
    ("profiles",),
    ("sources",),
)


@dataclass(frozen=True, eq=False)
class Mig(SharingMode):
    def resolve(
        self, ctx: Context, settings: dict[str, Any], resource: str, config: PluginConfig | None
    ) -> Sharing | None:
        """A vendor whose devices are partitioned into MIG instances of one profile, as the
        catalog's `mig` records the profile; None (ALC006) for a profile it does not record."""
        if self.offered(ctx, config) is None:
            return None
        profile = str(settings["profile"])
        # A list, not a generator: every missing fact is reported.
        names = [(path, "mig." + ".".join(path)) for path in FIELDS]
        facts = [
            ctx.need((CATALOG, *path), name, f"set {name} in {ctx.where}") for path, name in names
        ]
        if not all(facts):
            return None
        raw = ctx.doc.get(CATALOG)
        profiles = raw["profiles"]
        if profile not in profiles:
            self.unknown_partition(
                ctx,
                "profile",
                "MIG profile",
                profile,
                "mig.profiles",
                profiles,
                "instances per device, devices and source",
            )
            return None
        # A profile's attributes follow a '+' (1g.10gb+me), written '.' in its resource and
        # layout names (NVIDIA/k8s-device-plugin internal/rm/rm.go v0.17.1).
        name = profile.replace("+", ".")
        plugin = raw["plugin"]
        return Sharing(
            self,
            int(profiles[profile]["instances"]),
            str(raw["resourcePrefix"]) + name,
            profile,
            str(raw["strategy"]),
            (str(raw["configLabel"]), str(raw["layoutPrefix"]) + name),
            (str(raw["stateLabel"]), str(raw["stateReady"])),
            # Under a MIG strategy the plugin crash-loops without them (catalog mig.plugin).
            PluginContainer(tuple(dict(e) for e in plugin["env"]), dict(plugin["securityContext"])),
        )

    def pool_labels(self, sharing: Sharing) -> dict[str, str]:
        # A MIG vendor's nodes ask the site's MIG manager for the profile's layout.
        return dict([sharing.layout_label])

    def check_pools(self, ctx: Context, sharing: Sharing, pools: Sequence[PoolFacts]) -> None:
        """ALC006: a MIG pool that may hold devices the profile's layout does not apply to (the
        MIG manager matches its layouts by PCI device ID): those would stay whole, and the pool
        would advertise fewer instances than the fleet counts."""
        profile = ctx.doc.get(CATALOG)["profiles"][sharing.profile]
        fits = set(profile["devices"])
        for pool in pools:
            others = sorted(set(pool.pci_devices) - fits)
            if not others and pool.pci_devices:
                continue
            key = "pciDevices" if "pciDevices" in ctx.doc.data["pools"][pool.index] else "model"
            unknown = "its model's PCI device IDs are not known"
            ctx.refuse(
                "ALC006",
                f"pool {pool.name!r}: MIG profile {sharing.profile} applies to devices "
                f"{', '.join(sorted(fits))}, but "
                + (f"the pool matches {', '.join(others)} as well" if others else unknown),
                ("pools", pool.index, key),
                f"set the pool's pciDevices to the devices of {sharing.profile} it holds "
                f"(of {', '.join(sorted(fits))}), or a profile all its devices have",
            )

    def plugin_file_settings(self, sharing: Sharing, config: PluginConfig) -> dict[str, Any]:
        """The plugin's MIG strategy (catalog `mig.strategy`), under which it advertises each MIG
        instance the site's MIG manager made as one unit of the profile's own resource name."""
        return {"version": config.version, "flags": {"migStrategy": sharing.mig_strategy}}

    def simulated(self, vendor_id: str, resource: str, sharing: Sharing) -> str:
        return (
            f"vendor {vendor_id} partitions its devices into MIG {sharing.profile} "
            f"instances: its simulated nodes advertised {sharing.replicas} "
            f"{resource} per device, as its device plugin would once the site's "
            f"MIG manager had applied the layout their label {sharing.layout_label[0]} "
            "names, and the real scheduler placed pods by them; neither the MIG "
            "manager (the layout applied, the device's reconfiguration) nor the plugin (its "
            "finding the instances) runs here, so those were not exercised"
        )

    def devices_missing_cause(self, sharing: Sharing) -> str:
        # The instances exist only once the site's MIG manager applied the layout.
        key, layout = sharing.layout_label
        return (
            "a device failed, the device plugin lost it, or the MIG manager has not "
            f"applied the layout {layout} ({key})."
        )

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
        (state_key, ready), layout = sharing.state_label, sharing.layout_label
        problem = (
            f"has no label {state_key} (no MIG manager has reported there)"
            if reported is None
            else f"reports {state_key}={reported}"
            if reported != ready
            else f"advertises {allocatable}"
        )
        return (
            f"node {node} of pool {vendor_id}/{pool.name} {problem}: the pool counts "
            f"{pool.units_per_node} {resource} on it "
            f"({pool.devices_per_node} devices, each {sharing.per_device} by the "
            f"layout {layout[1]})",
            f"check that the site's MIG manager runs on the node and knows the "
            f"layout {layout[1]} (it sets {state_key}={ready} once applied), then restart "
            "the fleet's device plugin there (the MIG manager restarts only the GPU "
            "Operator's); ",
        )


MIG = Mig(
    key="mig",
    units="instances",
    words=("partitioned into {n} MIG {p} instances", "MIG {p} instances (1/{n})"),
    settings=SETTINGS,
    site_made=True,
    catalog={CATALOG: CATALOG_SCHEMA},
)
