"""Dynamic Resource Allocation (docs/allocation.md, "Dynamic Resource Allocation"): the vendor's
devices are claimed through ResourceClaims that its DRA driver allocates, not advertised by a
device plugin. Values: `allocation: dra`; the catalog's `draDriver` records the driver."""

from __future__ import annotations

from dataclasses import dataclass, field

from generator.values.allocation.base import Context
from generator.values.schemakit import DNS_SUBDOMAIN, LABEL_VALUE, SOURCES, Schema, obj, string
from generator.values.yamlio import YamlPath

# The vendor file's key under which the catalog records the driver.
CATALOG = "draDriver"

# A vendor's DRA driver as the catalog records it (docs/allocation.md): its name, the attribute
# and value its full devices carry, and per model the start of the model attribute's value.
CATALOG_SCHEMA = obj(
    {
        "name": string(DNS_SUBDOMAIN, description="the driver name its ResourceSlices carry"),
        "typeAttribute": string(
            minLength=1, description="the attribute that tells a device's kind"
        ),
        "typeValue": string(minLength=1, description="its value for a whole device"),
        "modelAttribute": string(minLength=1, description="the attribute that names the model"),
        "addon": string(
            description="the platform add-on that installs the driver (docs/brownfield.md)"
        ),
        "models": {
            "type": "object",
            "description": "per pool model, the start of the model attribute's value",
            "propertyNames": {"pattern": LABEL_VALUE, "minLength": 1},
            "additionalProperties": obj(
                {"prefix": string(minLength=1), "source": string(minLength=1)},
                ("prefix", "source"),
            ),
        },
        "sources": SOURCES,
    },
    # No field is required here: a vendor file may add to the catalog's entry (a model), and
    # the loader asks for what the merged entry lacks (VAL003).
    description="the vendor's DRA driver (docs/allocation.md)",
)
FIELDS = ("name", "typeAttribute", "typeValue", "modelAttribute", "models", "sources")

# A ResourceQuota line counts the devices claimed through one DeviceClass under this name:
# <class>.deviceclass.resource.k8s.io/devices, with no `requests.` prefix (kubernetes/api
# core/v1/types.go v0.36.3, ResourceClaimsPerClass).
CLAIMS_PER_CLASS = ".deviceclass.resource.k8s.io/devices"


@dataclass(frozen=True)
class DraDriver:
    """A vendor's DRA driver as the catalog records it (draDriver, docs/allocation.md): what its
    ResourceSlices say of a whole device and of its model."""

    name: str  # the driver name: the domain of its attributes in CEL
    type_attribute: str
    type_value: str
    model_attribute: str
    prefixes: dict[str, str]  # pool model -> the start of the model attribute's value
    addon: str = ""  # the platform add-on that installs it (`platform.<addon>`), if one does

    def attribute(self, name: str) -> str:
        """A CEL reference to one of the driver's attributes (names without a domain are the
        driver's: k8s.io/dynamic-resource-allocation cel/compile.go v0.36.2)."""
        return f"device.attributes['{self.name}'].{name}"

    def model_expression(self, model: str) -> str:
        prefix = self.prefixes[model]
        return f"{self.attribute(self.model_attribute)}.startsWith('{prefix}')"


@dataclass(frozen=True, eq=False)
class Dra:
    """Values `allocation: <key>`: a way devices reach pods instead of the device plugin."""

    key: str
    counted_in: str  # the unit of the vendor's capacity and quotas, for a table
    catalog: dict[str, Schema] = field(default_factory=dict)

    def quota_resource(self, vendor_id: str) -> str:
        """The vendor's quota name: the devices claimed through its DeviceClass (its id)."""
        return vendor_id + CLAIMS_PER_CLASS

    def resolve(self, ctx: Context) -> DraDriver | None:
        """The vendor's DRA driver when `allocation: dra`, else None (device plugin; or ALC003:
        DRA asked for without what it needs)."""
        if ctx.doc.get("allocation") != self.key:
            return None
        raw = ctx.doc.get(CATALOG)
        # A driver the vendor file adds to, or writes itself: every fact it lacks reported.
        if raw and not all(
            [
                ctx.need((CATALOG, k), f"draDriver.{k}", f"set draDriver.{k} in {ctx.where}")
                for k in FIELDS
            ]
        ):
            return None
        at: YamlPath = ("allocation",)
        problems = []
        if not raw:
            problems.append(
                (
                    f"vendor {ctx.vendor_id} is allocated by DRA, but the catalog records no DRA "
                    "driver for it (draDriver)",
                    "use a vendor whose catalog entry has a DRA driver (docs/allocation.md), "
                    "or set draDriver in the vendor file",
                )
            )
        if ctx.doc.get("sharing"):
            problems.append(
                (
                    f"vendor {ctx.vendor_id} is allocated by DRA and shares its devices by its "
                    "device plugin's config file: a DRA vendor runs no device plugin",
                    "remove `sharing`, or `allocation: dra`",
                )
            )
        # need() refused a driver without models: a driver here has some.
        models = raw["models"] if raw else {}
        for i, pool in enumerate(ctx.doc.get("pools") or []):
            if raw and pool["model"] not in models:
                problems.append(
                    (
                        f"pool {pool['name']!r}: the catalog records no {raw['modelAttribute']} "
                        f"for model {pool['model']!r} under DRA driver {raw['name']}, so no "
                        "DeviceClass can select its devices",
                        f"add draDriver.models.{pool['model']} (prefix and source) to the vendor "
                        f"file, or use a model it knows: {', '.join(sorted(models))}",
                    )
                )
                at = ("pools", i, "model")
        for message, hint in problems:
            ctx.refuse("ALC003", message, at, hint)
        if problems:  # no driver at all is one of them
            return None
        return DraDriver(
            str(raw["name"]),
            str(raw["typeAttribute"]),
            str(raw["typeValue"]),
            str(raw["modelAttribute"]),
            {str(m): str(v["prefix"]) for m, v in models.items()},
            str(raw.get("addon", "")),
        )

    def simulated(self, vendor_id: str, driver: DraDriver, installed_by: str) -> str:
        """What simulate stood in for and did not run (SIM011); `installed_by` says who installs
        the driver ("the site", "the fleet")."""
        return (
            f"vendor {vendor_id} is allocated by DRA: its driver ({driver.name}) is "
            f"installed by {installed_by} and does not run here. The simulation published "
            "for each of its nodes the ResourceSlice the driver would, with only the "
            f"attributes the fleet's DeviceClass reads ({driver.type_attribute}, and "
            f"{driver.model_attribute} set to the start the catalog records for the "
            "model), and the real scheduler allocated the claims from them; the "
            "driver's other attributes, its preparing the devices on the node, and the "
            "DeviceClasses its own chart installs were not exercised"
        )


DRA = Dra(key="dra", counted_in="claimed devices", catalog={CATALOG: CATALOG_SCHEMA})
