"""PCI inventories of real server types (generator/values/inventories/*.yaml) as NFD would see them.

Each inventory lists every PCI function of one kind of machine with the attributes Node Feature
Discovery v0.19.0 publishes for a ``pci.device`` feature instance (its source/pci/utils.go), and
says which accelerator the machine carries. The format is described at the top of
``inventories/hygon-dcu-z100l.yaml``. Tests run NFD's own rule code on them; a simulated cluster
turns them into NodeFeature objects (:func:`node_feature`), the objects nfd-worker would write.

A site declares its own server types in the same format in its values tree
(``values/inventories/<server type>.yaml``, read by the loader with the rest of the values), with
the node's shape besides (:class:`NodeShape`); the built-in ones here are the defaults.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml

from generator.vocab.api import NFD
from generator.vocab.labels import NFD_NODE_NAME_LABEL

__all__ = [
    "NFD_NAMESPACE",
    "Accelerator",
    "Inventory",
    "NodeShape",
    "builtin",
    "from_data",
    "load",
    "names",
    "node_feature",
    "node_features_text",
]

NFD_NAMESPACE = "node-feature-discovery"
# The attributes nfd-worker reads for every PCI function (mandatoryDevAttrs) and those it adds
# when sysfs has them (optionalDevAttrs), NFD v0.19.0 source/pci/utils.go.
MANDATORY_ATTRIBUTES = ("class", "vendor", "device", "subsystem_vendor", "subsystem_device")
OPTIONAL_ATTRIBUTES = ("sriov_totalvfs", "iommu_group/type", "iommu/intel-iommu/version")


@dataclass(frozen=True)
class Accelerator:
    vendor: str
    """Catalog vendor id (nvidia, amd, ascend, hygon, cambricon)."""
    model: str
    """The model as a pool's ``model`` names it."""
    count: int


@dataclass(frozen=True)
class NodeShape:
    """What a node's kubelet reports besides the accelerators it is counted for: CPU, memory and
    other resources (``rdma/ib``, ``hugepages-1Gi``), as quantities; "" or absent: not declared."""

    cpu: str = ""
    memory: str = ""
    resources: dict[str, str] = field(default_factory=dict)

    def over(self, base: NodeShape) -> NodeShape:
        """This shape where it says something, `base` elsewhere (a pool's over its server's)."""
        return NodeShape(
            self.cpu or base.cpu,
            self.memory or base.memory,
            {**base.resources, **self.resources},
        )

    def capacity(self) -> dict[str, str]:
        """The Node's capacity as declared (only what is)."""
        declared = {"cpu": self.cpu, "memory": self.memory}
        return {**{k: v for k, v in declared.items() if v}, **self.resources}


@dataclass(frozen=True)
class Inventory:
    server_type: str
    description: str
    accelerator: Accelerator | None
    sources: tuple[str, ...]
    devices: tuple[dict[str, str], ...]
    node: NodeShape = field(default_factory=NodeShape)
    """The node's shape, where the inventory declares it."""
    file: str = ""
    """Where it is declared: the values file of a site's, the package's path of a built-in."""


def _folder() -> Any:
    return resources.files("generator.values") / "inventories"


def names() -> list[str]:
    """Server types with an inventory, sorted."""
    return sorted(
        p.name.removesuffix(".yaml") for p in _folder().iterdir() if p.name.endswith(".yaml")
    )


def load(server_type: str) -> Inventory:
    """The built-in inventory of one server type; ValueError names the known ones if it has none."""
    path = _folder() / f"{server_type}.yaml"
    if not path.is_file():
        raise ValueError(f"no PCI inventory {server_type!r}; known: {', '.join(names())}")
    # libyaml's parser: the same safe constructor and resolver as yaml.safe_load, and the twelve
    # built-in inventories (10,000 nodes) parse in 0.1 s instead of 1 s, in every process.
    doc = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
    inv = from_data(doc, server_type, f"generator/values/inventories/{server_type}.yaml")
    for d in inv.devices:
        missing = [a for a in MANDATORY_ATTRIBUTES if a not in d]
        unknown = sorted(set(d) - set(MANDATORY_ATTRIBUTES) - set(OPTIONAL_ATTRIBUTES))
        if missing or unknown:
            raise ValueError(f"{server_type}: device {d} lacks {missing} or has unknown {unknown}")
    return inv


@functools.cache
def builtin() -> dict[str, Inventory]:
    """Every built-in inventory, by server type (read once)."""
    return {name: load(name) for name in names()}


def shape(raw: dict[str, Any] | None) -> NodeShape:
    """A ``node`` mapping of values (an inventory's or a pool's), quantities as strings."""
    raw = raw or {}
    return NodeShape(
        cpu=str(raw.get("cpu", "")),
        memory=str(raw.get("memory", "")),
        resources={str(k): str(v) for k, v in (raw.get("resources") or {}).items()},
    )


def from_data(doc: dict[str, Any], server_type: str, file: str) -> Inventory:
    """An inventory from its parsed file (a built-in one, or a site's the schema has checked):
    its server type is its file's name."""
    acc = doc.get("accelerator")
    return Inventory(
        server_type=server_type,
        description=str(doc.get("description", "")),
        accelerator=(
            Accelerator(vendor=acc["vendor"], model=str(acc["model"]), count=int(acc["count"]))
            if acc
            else None
        ),
        sources=tuple(str(s) for s in doc.get("sources", ())),
        devices=tuple({str(k): str(v) for k, v in d.items()} for d in doc["devices"]),
        node=shape(doc.get("node")),
        file=file,
    )


def node_feature(inventory: Inventory, node: str, namespace: str = NFD_NAMESPACE) -> dict[str, Any]:
    """The NodeFeature object nfd-worker would write for ``node`` with this hardware.

    Only the features the rendered rules read: ``pci.device`` instances and ``system.name``
    (nfd-worker's system source publishes the node name as attribute ``nodename``).
    """
    return {
        "apiVersion": NFD,
        "kind": "NodeFeature",
        "metadata": {
            "name": node,
            "namespace": namespace,
            "labels": {NFD_NODE_NAME_LABEL: node},
        },
        "spec": {
            "features": {
                "attributes": {"system.name": {"elements": {"nodename": node}}},
                "instances": {
                    "pci.device": {"elements": [{"attributes": dict(d)} for d in inventory.devices]}
                },
            },
        },
    }


def node_features_text(nodes: Iterable[tuple[str, Inventory]]) -> str:
    """NodeFeature objects for (node name, inventory) pairs as a multi-document stream.

    Each document is JSON (valid YAML): a YAML writer leaves IDs such as 19e5 or 0380 unquoted,
    and Go's YAML reader then takes them for numbers (1.9e5, 380), so no rule would match.
    """
    return "---\n".join(
        json.dumps(node_feature(inv, node), sort_keys=True) + "\n" for node, inv in nodes
    )
