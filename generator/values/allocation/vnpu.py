"""Ascend static vNPUs (docs/allocation.md, "Ascend static vNPUs"): the site splits every NPU of
the vendor's pools into vNPUs of one template with npu-smi, and the device plugin finds them by
itself and advertises them under the template's resource. Values: `sharing.vnpu.template` and
`perDevice`; the catalog's `vnpu` records the templates."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from generator.values.allocation.base import (
    Context,
    PluginConfig,
    PoolFacts,
    Sharing,
    SharingMode,
)
from generator.values.schemakit import LABEL_VALUE, SOURCES, array, obj, string

# The vendor file's key under which the catalog records the templates.
CATALOG = "vnpu"

SETTINGS = obj(
    {
        "template": string(
            r"^vir[0-9a-z_]+$",
            description="the vNPU template the site splits every NPU of the pools by "
            "(catalog vnpu.templates), e.g. vir06_1c_16g",
        ),
        "perDevice": {
            "type": "integer",
            "minimum": 1,
            # A training chip's vNPU IDs run phy_id*16+100 .. phy_id*16+115
            # (Ascend/mind-cluster docs/zh/scheduling/usage/virtual_instance/
            # virtual_instance_with_hdk/04_creating_vnpu.md v26.0.0).
            "maximum": 16,
            "description": "vNPUs the site creates on each NPU (npu-smi create-vnpu)",
        },
    },
    ("template", "perDevice"),
)

# What the catalog knows of a vendor's static vNPUs (values `sharing.vnpu`, docs/allocation.md):
# per template, the suffix of the resource its vNPUs are advertised under and the models it is
# made for. Catalog data, cited.
CATALOG_SCHEMA = obj(
    {
        "templates": {
            "type": "object",
            "propertyNames": {"pattern": r"^vir[0-9a-z_]+$"},
            "additionalProperties": obj(
                {
                    "suffix": string(r"^[0-9a-z.]+$", description="resourceName-<suffix>"),
                    "models": array(string(LABEL_VALUE, minLength=1), minItems=1),
                    "source": string(minLength=1),
                },
                ("suffix", "models", "source"),
            ),
        },
        "sources": SOURCES,
    },
    # No field is required: a vendor file may add a template to the catalog's.
    description="the vendor's static vNPU templates (docs/allocation.md)",
)


@dataclass(frozen=True, eq=False)
class Vnpu(SharingMode):
    def resolve(
        self, ctx: Context, settings: dict[str, Any], resource: str, config: PluginConfig | None
    ) -> Sharing | None:
        """A vendor whose NPUs the site splits into static vNPUs of one template, as the
        catalog's `vnpu` records the template; None (ALC006) for one it does not record. The
        plugin finds the vNPUs itself: no config file of its own."""
        template = str(settings["template"])
        templates = (ctx.doc.get(CATALOG) or {}).get("templates", {})
        if template not in templates:
            self.unknown_partition(
                ctx,
                "template",
                "vNPU template",
                template,
                "vnpu.templates",
                templates,
                "resource suffix, models and source",
            )
            return None
        suffix = str(templates[template]["suffix"])
        return Sharing(self, int(settings["perDevice"]), f"{resource}-{suffix}", template)

    def check_pools(self, ctx: Context, sharing: Sharing, pools: Sequence[PoolFacts]) -> None:
        """ALC006: a vNPU pool of a model the template is not made for (the site could not
        create those vNPUs on its chips)."""
        models = [str(m) for m in ctx.doc.get(CATALOG)["templates"][sharing.profile]["models"]]
        for pool in pools:
            if pool.model.casefold() in {m.casefold() for m in models}:
                continue
            ctx.refuse(
                "ALC006",
                f"pool {pool.name!r}: vNPU template {sharing.profile} is for "
                f"{', '.join(models)} chips, not {pool.model}",
                ("pools", pool.index, "model"),
                f"use a template made for {pool.model} (vnpu.templates), or put the pool "
                "in a vendor file of its own",
            )

    def simulated(self, vendor_id: str, resource: str, sharing: Sharing) -> str:
        return (
            f"vendor {vendor_id} splits its NPUs into vNPUs of template {sharing.profile}: "
            f"its simulated nodes advertised {sharing.replicas} {resource} per "
            "NPU, as its device plugin would once the site had created them with npu-smi, "
            "and the real scheduler placed pods by them; creating the vNPUs and the plugin "
            "finding them were not exercised"
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
        # vNPUs have no state label: only what the node advertises tells.
        return (
            f"node {node} of pool {vendor_id}/{pool.name} advertises "
            f"{allocatable} {resource}: the pool counts "
            f"{pool.units_per_node} on it ({pool.devices_per_node} NPUs, each "
            f"{sharing.per_device})",
            f"create the vNPUs on the node (npu-smi set -t create-vnpu ... "
            f"-f {sharing.profile}) and restart the device plugin there; ",
        )


VNPU = Vnpu(
    key="vnpu",
    units="vNPUs",
    words=("split into {n} vNPUs of template {p}", "{p} vNPUs (1/{n})"),
    settings=SETTINGS,
    # Ascend/mind-cluster component/ascend-device-plugin/pkg/server/plugin.go v26.0.0:
    # MaxRequestVirtualDeviceNum 1.
    one_per_pod=("vNPU", "one virtual device per container request"),
    # The site splits the NPUs; the plugin finds the vNPUs: no config file of its own.
    in_plugin_file=False,
    site_made=True,
    catalog={CATALOG: CATALOG_SCHEMA},
)
