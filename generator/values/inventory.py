"""PCI inventories of real server types (generator/values/inventories/*.yaml) as NFD would see them.

Each inventory lists every PCI function of one kind of machine with the attributes Node Feature
Discovery v0.19.0 publishes for a ``pci.device`` feature instance (its source/pci/utils.go), and
says which accelerator the machine carries. The format is described at the top of
``inventories/hygon-dcu-z100l.yaml``. Tests run NFD's own rule code on them; a simulated cluster
turns them into NodeFeature objects (:func:`node_feature`), the objects nfd-worker would write.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from generator.vocab.api import NFD
from generator.vocab.labels import NFD_NODE_NAME_LABEL

__all__ = [
    "NFD_NAMESPACE",
    "Accelerator",
    "Inventory",
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
class Inventory:
    server_type: str
    description: str
    accelerator: Accelerator | None
    sources: tuple[str, ...]
    devices: tuple[dict[str, str], ...]


def _folder() -> Any:
    return resources.files("generator.values") / "inventories"


def names() -> list[str]:
    """Server types with an inventory, sorted."""
    return sorted(
        p.name.removesuffix(".yaml") for p in _folder().iterdir() if p.name.endswith(".yaml")
    )


def load(server_type: str) -> Inventory:
    """The inventory of one server type; ValueError names the known ones if it has none."""
    path = _folder() / f"{server_type}.yaml"
    if not path.is_file():
        raise ValueError(f"no PCI inventory {server_type!r}; known: {', '.join(names())}")
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    acc = doc["accelerator"]
    devices = tuple({str(k): str(v) for k, v in d.items()} for d in doc["devices"])
    for d in devices:
        missing = [a for a in MANDATORY_ATTRIBUTES if a not in d]
        unknown = sorted(set(d) - set(MANDATORY_ATTRIBUTES) - set(OPTIONAL_ATTRIBUTES))
        if missing or unknown:
            raise ValueError(f"{server_type}: device {d} lacks {missing} or has unknown {unknown}")
    return Inventory(
        server_type=doc["serverType"],
        description=doc["description"],
        accelerator=(
            Accelerator(vendor=acc["vendor"], model=str(acc["model"]), count=int(acc["count"]))
            if acc
            else None
        ),
        sources=tuple(doc["sources"]),
        devices=devices,
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
