"""NFD001: run Node Feature Discovery's own code on the NodeFeatureRules as kustomize builds them.

nfd-rulecheck (gotools/nfd/cmd/nfd-rulecheck, built on NFD's pinned packages) validates every rule
as nfd-master does and executes it against the PCI inventories of real server types
(generator/values/inventories). Whatever nfd-master would refuse or drop (an unprefixed taint key, a
label in a namespace NFD does not allow, a rule that fails to evaluate) becomes a finding at the
vendor's values: the rule named `<vendor>-<pool>` comes from that pool.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from generator.findings import CodeInfo, Finding, Location
from generator.policy.manifest import origin
from generator.toolchain import process
from generator.validate.stages import Batch, UnitView, tool_salt
from generator.values import inventory
from generator.values.model import FleetView, Vendor
from generator.values.yamlio import json_path
from generator.vocab.labels import NFD_PREFIX
from generator.vocab.units import Unit

TIMEOUT = 120
RULE_KINDS = {"NodeFeatureRule"}


def has_rules(docs: list[dict[str, Any]]) -> bool:
    return any(d.get("kind") in RULE_KINDS for d in docs)


def inventory_file(folder: Path) -> Path:
    """Every inventory as a NodeFeature of a node named after its server type."""
    path = folder / "inventories.yaml"
    if not path.exists():
        nodes = [(n, inventory.load(n)) for n in inventory.names()]
        path.write_text(inventory.node_features_text(nodes), encoding="utf-8")
    return path


def check(built: Path, nodes: Path) -> dict[str, Any]:
    """nfd-rulecheck's verdict on one built unit: {"ruleErrors": [...], "nodes": {...}}."""
    proc = process.run("nfd-rulecheck", [str(built), str(nodes)], timeout=TIMEOUT)
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def findings(
    view: FleetView | None,
    unit: Unit,
    result: dict[str, Any],
    committed: Callable[[str, str], Location],
) -> list[Finding]:
    """A finding per refusal, at the pool's values; without values (they do not render), at the
    committed file of the NodeFeatureRule (`committed(kind, name)`)."""
    # A rule's own validation errors first; what nfd-master drops while applying it to the
    # inventories is reported only where validation did not already say so.
    refusals: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for item in result.get("ruleErrors") or []:
        refusals.setdefault(_key(item), item)
    for node in (result.get("nodes") or {}).values():
        for item in node.get("refused") or []:
            refusals.setdefault(_key(item), item)
    out = []
    for item in refusals.values():
        if view is not None:
            loc, path = _locate(view, unit, item)
        else:
            loc, path = committed("NodeFeatureRule", item["nodeFeatureRule"]), "$.spec.rules"
        out.append(
            Finding(
                "NFD001",
                f"NodeFeatureRule {item['nodeFeatureRule']} rule {item['rule']!r}: Node Feature "
                f"Discovery {result.get('nfdVersion', '')} would refuse it: {item['error']}",
                loc,
                path,
                _HINTS.get(item["kind"], "fix the pool's values"),
            )
        )
    return out


def _key(item: dict[str, Any]) -> tuple[str, str, str, str]:
    return (item["nodeFeatureRule"], item["rule"], item["kind"], item.get("key", ""))


_HINTS = {
    "taint": "give the taint key a prefix NFD accepts (e.g. feature.node.kubernetes.io/<name> or "
    "example.com/<name>; not kubernetes.io or a subdomain of it)",
    "label": "use a label key NFD may set: no prefix (NFD adds feature.node.kubernetes.io/), or "
    "a prefix outside kubernetes.io, or feature.node.kubernetes.io/",
}


def _locate(view: FleetView, unit: Unit, item: dict[str, Any]) -> tuple[Location, str]:
    """The values that produced the refused part: the pool's (or vendor's) taints or labels."""
    for vendor in view.vendors:
        for pool in vendor.pools:
            if item["rule"] != f"{vendor.id}-{pool.name}":
                continue
            i = pool.index
            if item["kind"] == "taint":
                return _anchor(vendor, ("pools", i, "taints"), ("taints",), ("pools", i))
            if item["kind"] == "label":
                key = str(item.get("key", ""))
                short = key.removeprefix(NFD_PREFIX)
                return _anchor(
                    vendor,
                    ("pools", i, "labels", short),
                    ("pools", i, "labels", key),
                    ("nodeLabels", short),
                    ("nodeLabels", key),
                    ("pools", i),
                )
            return _anchor(vendor, ("pools", i))
    rule_obj = next((o for o in unit.objects if o.get("kind") in RULE_KINDS), None)
    return (origin(unit, rule_obj) if rule_obj else Location(unit.path)), "$.spec.rules"


def _anchor(vendor: Vendor, *paths: tuple[str | int, ...]) -> tuple[Location, str]:
    """Where the user edits it: the first path set in a values file (never the catalog), else
    the last path (the pool, always in the vendor's values file)."""
    doc = vendor.doc
    for path in paths:
        loc = doc.keys.get(path) or doc.values.get(path)
        if loc is not None and loc.file in doc.sources:
            return loc, json_path(path)
    return doc.anchor(paths[-1]), json_path(paths[-1])


NFD001 = CodeInfo(
    "NFD001",
    "manifests (nfd-rulecheck)",
    "error",
    "Node Feature Discovery would refuse or drop a NodeFeatureRule's label or taint",
)


def _yaml_file(folder: Path, unit: str, docs: list[dict[str, Any]], suffix: str) -> Path:
    """A unit's objects as a YAML file for a helper tool (kbuild hands them back as JSON)."""
    path = folder / (unit.replace("/", "__") + suffix + ".built.yaml")
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    return path


class NfdStage:
    name = "nfd"
    order = 20
    tools = ("nfd-rulecheck",)
    codes = (NFD001,)

    def salt(self, engine: str) -> str:
        return tool_salt("nfd-rulecheck")

    def run(self, batch: Batch) -> dict[str, Any]:
        return {
            path: check(
                _yaml_file(batch.scratch, path, batch.built[path]["docs"], ""),
                inventory_file(batch.scratch),
            )
            for path in batch.ok()
            if has_rules(batch.built[path]["docs"])
        }

    def findings(self, unit: UnitView, result: Any) -> list[Finding]:
        return findings(unit.view, unit.unit, result, unit.at) if result else []


STAGE = NfdStage()
