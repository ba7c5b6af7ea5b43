"""KUE001: run Kueue's own admission webhooks on the Kueue objects as kustomize builds them.

kubeconform checks Kueue's objects against the CRD schemas only; Kueue's webhooks refuse more
(sigs.k8s.io/kueue v0.17.0 pkg/webhooks: a ResourceFlavor's taints must be unique by key and
effect, a ClusterQueue's borrowing and lending limits need a cohort and lendingLimit at most its
nominalQuota, at most 256 flavors across its resource groups, ...). kueuecheck (gotools/kueuecheck,
built on that package) runs the webhooks' defaulting and ValidateCreate on every Kueue object;
each field error becomes a finding at the values behind the field: a flavor `<vendor>-<pool>`
is the pool's (taints, model), a ClusterQueue `team-<team>` is the team's (quota, borrowing),
its cohort the fleet's `scheduling.cohort`.

One kueuecheck process checks every unit of a run (a file per unit): thousands of team units
cost one process start, not thousands.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from generator.builders import scheduling
from generator.builders.workloads import queue_name
from generator.findings import CodeInfo, Finding, Location
from generator.policy.manifest import origin
from generator.validate.stages import (
    Batch,
    UnitView,
    find_object,
    json_lines_per_unit,
    tool_salt,
)
from generator.values.merge import Doc
from generator.values.model import FleetView, Pool, Vendor
from generator.values.yamlio import YamlPath, json_path
from generator.vocab.units import Unit

CODE = "KUE001"
SUMMARY = "Kueue's admission webhooks would refuse a ClusterQueue, ResourceFlavor or Cohort"
GROUP = "kueue.x-k8s.io"
TIMEOUT = 300


def kueue_docs(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in docs if str(d.get("apiVersion", "")).startswith(GROUP + "/")]


def check(files: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """kueuecheck's verdict per unit, from one run over every unit's file:
    {unit: {"kueueVersion", "objects": n, "refused": [result with errors, ...]}}."""
    return {
        unit: {
            "kueueVersion": items[-1]["kueueVersion"] if items else "",
            "objects": len(items),
            "refused": [i for i in items if i["errors"]],
        }
        for unit, items in json_lines_per_unit("kueuecheck", files, [], TIMEOUT).items()
    }


def findings(
    view: FleetView | None,
    unit: Unit,
    docs: list[dict[str, Any]],
    result: dict[str, Any],
    committed: Callable[[str, str], Location],
) -> list[Finding]:
    """A finding per field error, at the values behind it; without values (they do not
    render), at the object's committed file (`committed(kind, name)`)."""
    out = []
    version = result.get("kueueVersion", "")
    for item in result.get("refused") or []:
        obj = find_object(docs, item)
        for err in item["errors"]:
            if view is not None:
                loc, path, hint = _locate(view, unit, obj, item, err["field"])
            else:
                loc, path = committed(item["kind"], item["name"]), ""
                hint = "fix the values so that they render, then render again"
            name = (
                item["name"] if not item.get("namespace") else f"{item['namespace']}/{item['name']}"
            )
            out.append(
                Finding(
                    CODE,
                    f"{item['kind']} {name}: Kueue {version}'s admission webhook "
                    f"would refuse it: {err['message']}",
                    loc,
                    path,
                    hint,
                )
            )
    return out


_INDEX = re.compile(r"\[(\d+)\]")


def _indexes(fld: str, name: str) -> list[int]:
    """The indexes after `name` in a field path: resourceGroups[1].flavors[2] -> [1, 2]."""
    return [int(i) for i in _INDEX.findall(fld[fld.find(name) :])] if name in fld else []


def _locate(
    view: FleetView, unit: Unit, obj: dict[str, Any], item: dict[str, Any], fld: str
) -> tuple[Location, str, str]:
    """(where in values, values path, hint) for one field error."""
    kind, name = item["kind"], item["name"]
    if kind == "ResourceFlavor":
        for vendor in view.vendors:
            for pool in vendor.pools:
                if name == scheduling.flavor_name(vendor, pool):
                    return _flavor(vendor, pool, fld)
        if name == scheduling.GENERAL_FLAVOR:
            loc, path = _anchor(view.fleet.doc, ("scheduling",), ())
            return loc, path, "the general flavor has no values of its own: report it"
    if kind == "ClusterQueue":
        for team in view.teams:
            if name == queue_name(team):
                return _cluster_queue(view, team.doc, obj, fld)
    loc = origin(unit, obj) if obj else Location(unit.path)
    return loc, "", "fix the values that render this object"


def _flavor(vendor: Vendor, pool: Pool, fld: str) -> tuple[Location, str, str]:
    i = pool.index
    own = vendor.doc.get("pools", i, "taints") is not None  # the pool replaces the vendor's
    for part in ("nodeTaints", "tolerations"):
        if f"spec.{part}" in fld:
            j = (_indexes(fld, part) or [0])[0]
            paths: list[YamlPath] = [("pools", i, "taints", j), ("pools", i, "taints")]
            if not own:
                paths = [("taints", j), ("taints",)]
            loc, path = _anchor(vendor.doc, *paths, ("pools", i))
            return (
                loc,
                path,
                "Kueue takes a pool's taints as the ResourceFlavor's nodeTaints and tolerations: "
                "keep one taint per key and effect, with a valid key and value",
            )
    loc, path = _anchor(vendor.doc, ("pools", i, "model"), ("pools", i))
    return loc, path, "the ResourceFlavor's nodeLabels come from the vendor's and pool's labels"


def _cluster_queue(
    view: FleetView, team: Doc, obj: dict[str, Any], fld: str
) -> tuple[Location, str, str]:
    if fld.startswith("spec.cohortName"):
        loc, path = _anchor(view.fleet.doc, ("scheduling", "cohort"), ("scheduling",))
        return loc, path, "set scheduling.cohort to a valid cohort name"
    groups = (obj.get("spec") or {}).get("resourceGroups") or []
    idx = _indexes(fld, "resourceGroups")
    vendor = None
    if len(idx) >= 2 and idx[0] < len(groups):
        flavors = groups[idx[0]].get("flavors") or []
        if idx[1] < len(flavors):
            flavor = flavors[idx[1]].get("name")
            vendor = next(
                (
                    v
                    for v in view.vendors
                    for p in v.pools
                    if scheduling.flavor_name(v, p) == flavor
                ),
                None,
            )
    if vendor is not None and fld.endswith(("borrowingLimit", "lendingLimit")):
        loc, path = _anchor(team, ("borrowing", vendor.id), ("quota", vendor.id), ("quota",))
        return loc, path, "set the team's borrowing for the vendor to what Kueue accepts"
    if vendor is not None:
        loc, path = _anchor(team, ("quota", vendor.id), ("quota",))
        return loc, path, "set the team's quota for the vendor to what Kueue accepts"
    loc, path = _anchor(team, ("quota",))
    return (
        loc,
        path,
        "a team's ClusterQueue lists every pool of every vendor as a flavor, and its cpu and "
        "memory: fewer pools or vendors, or fix what the message names",
    )


def _anchor(doc: Doc, *paths: YamlPath) -> tuple[Location, str]:
    """The first path set in a values file (never the catalog), else the entity's file."""
    for path in paths:
        loc = doc.keys.get(path) or doc.values.get(path)
        if loc is not None and loc.file in doc.sources:
            return loc, json_path(path)
    last = paths[-1] if paths else ()
    return doc.anchor(last), json_path(last)


class KueueStage:
    name = "kueue"
    order = 30
    tools = ("kueuecheck",)
    codes = (CodeInfo(CODE, "manifests (kueuecheck)", "error", SUMMARY),)

    def salt(self, engine: str) -> str:
        return tool_salt("kueuecheck", stamped=True)

    def run(self, batch: Batch) -> dict[str, Any]:
        files = {}
        for path in batch.ok():
            docs = kueue_docs(batch.built[path]["docs"])
            if docs:
                file = batch.scratch / (path.replace("/", "__") + ".kueue.built.yaml")
                file.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
                files[path] = file
        return check(files)

    def findings(self, unit: UnitView, result: Any) -> list[Finding]:
        return findings(unit.view, unit.unit, unit.docs, result, unit.at) if result else []


STAGE = KueueStage()
