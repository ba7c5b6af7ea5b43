"""Dynamic Resource Allocation (docs/allocation.md): the DeviceClass of a vendor whose devices
are claimed through its DRA driver, and the ResourceClaimTemplates its pods claim them by.

A vendor allocated by DRA (values `allocation: dra`) has one DeviceClass, named after it: the
driver's whole devices of the vendor's pool models, told by the attributes the catalog records
(draDriver). A pod asks for N devices of it through a ResourceClaimTemplate of its namespace;
a model it names narrows the claim with a selector. Field names: kubernetes/api resource/v1
types.go and core/v1 types.go v0.36.3 (DeviceClass spec.selectors[].cel.expression;
ResourceClaimTemplate spec.spec.devices.requests[].exactly{deviceClassName, count, selectors};
pod spec.resourceClaims[], container resources.claims[]).
"""

from __future__ import annotations

from generator.builders.common import metadata
from generator.values.model import FleetView, Vendor
from generator.vocab.api import RESOURCE
from generator.vocab.objects import Obj

# The name of the claim in a pod and of the request in its template.
CLAIM = "devices"


def device_class(vendor: Vendor) -> Obj:
    """The vendor's DeviceClass: its driver's whole devices of the models of its pools here."""
    dra = vendor.dra
    assert dra is not None  # a DRA vendor's
    models = sorted({p.model for p in vendor.pools})
    whole = f"{dra.attribute(dra.type_attribute)} == '{dra.type_value}'"
    expression = f"device.driver == '{dra.name}' && {whole}"
    if models:
        expression += " && (" + " || ".join(dra.model_expression(m) for m in models) + ")"
    return {
        "apiVersion": RESOURCE,
        "kind": "DeviceClass",
        "metadata": metadata(vendor.device_class, sources=vendor.doc.sources),
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def template_name(vendor: Vendor, model: str, count: int) -> str:
    """One template per vendor, model and count: pods of one shape share it."""
    shape = model.lower().replace("_", "-").replace(".", "-") if model else "any"
    return f"{vendor.device_class}-{shape}-x{count}"


def claim_template(
    vendor: Vendor,
    model: str,
    count: int,
    namespace: str,
    sources: tuple[str, ...],
    labels: dict[str, str],
) -> Obj:
    dra = vendor.dra
    assert dra is not None
    # allocationMode is the API server's default (types.go v0.36.3: "If AllocationMode is not
    # specified, the default mode is ExactCount"), written out: left to the server, the live
    # object differs from Git and Argo CD reports the team's Application OutOfSync for ever
    # (simulate showed it with argo-cd v3.2.6).
    exactly: Obj = {
        "deviceClassName": vendor.device_class,
        "allocationMode": "ExactCount",
        "count": count,
    }
    if model:
        exactly["selectors"] = [{"cel": {"expression": dra.model_expression(model)}}]
    return {
        "apiVersion": RESOURCE,
        "kind": "ResourceClaimTemplate",
        "metadata": metadata(
            template_name(vendor, model, count),
            namespace=namespace,
            sources=sources,
            labels=labels,
        ),
        "spec": {"spec": {"devices": {"requests": [{"name": CLAIM, "exactly": exactly}]}}},
    }


def claimed(view: FleetView, spec: Obj) -> dict[str, tuple[Vendor, str, int]]:
    """The pod's claims on DRA vendors' devices, by claim name: (vendor, model or "", count),
    read back from the names of the templates it claims by (template_name). A model no pool has
    comes back as the template spells it; a claim on any other template is not the fleet's and
    is left out."""
    out = {}
    vendors = sorted((v for v in view.vendors if v.dra), key=lambda v: -len(v.device_class))
    for claim in spec.get("resourceClaims") or []:
        name = str(claim.get("resourceClaimTemplateName", ""))
        vendor = next((v for v in vendors if name.startswith(f"{v.device_class}-")), None)
        if vendor is None:
            continue
        shape, sep, count = name.removeprefix(f"{vendor.device_class}-").rpartition("-x")
        if not sep or not count.isdigit():
            continue
        models = {template_name(vendor, p.model, 0): p.model for p in vendor.pools}
        model = "" if shape == "any" else models.get(template_name(vendor, shape, 0), shape)
        out[str(claim["name"])] = (vendor, model, int(count))
    return out
