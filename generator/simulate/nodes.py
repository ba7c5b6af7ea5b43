"""The simulated nodes of one environment: one per pool node (or per `nodeCount`), one
general-purpose server, and one of every CPU-only server type that has a PCI inventory (built in,
or the site's in values/inventories/).

Each node carries the pool's device capacity (what the vendor's device plugin would advertise)
and the pool's node shape (values `node`, over its server type's: CPU, memory, other resources),
and publishes the PCI inventory of its server type (the pool's, values/model.py Pool.inventory)
as the NodeFeature object nfd-worker would publish (name = node name, label
nfd.node.kubernetes.io/node-name, namespace of nfd-master; source:
sigs.k8s.io/node-feature-discovery v0.19.0 pkg/nfd-worker/nfd-worker.go, the NodeFeature it
creates). nfd-master then labels and taints the node from the fleet's NodeFeatureRules.

A pool whose server type has no inventory has nothing for nfd-master to match: its nodes are
registered with the pool's labels and taints as declared (the plan says so, once per pool:
SIM009), so what follows is judged as the pool says its nodes are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from generator.builders import operators
from generator.cluster.plane import NFD_NAMESPACE
from generator.controlplane.launcher import fake_node
from generator.findings import Location
from generator.values import inventory
from generator.values.inventory import Inventory
from generator.values.model import FleetView, Pool, Vendor
from generator.vocab.api import RESOURCE
from generator.vocab.objects import Obj

GENERAL_SERVER = "x86-cpu"


@dataclass
class SimNode:
    name: str
    role: str
    """'pool' (a pool's node), 'general' or 'cpu-only' (a CPU-only server of a vendor)."""
    vendor: Vendor | None = None
    pool: Pool | None = None
    inventory: Inventory | None = None
    labels: dict[str, str] = field(default_factory=dict)
    """Labels the node must end up with (the pool's, as they land on nodes)."""
    taints: list[dict[str, str]] = field(default_factory=list)

    @property
    def accelerator(self) -> bool:
        return self.vendor is not None

    def describe(self) -> str:
        if self.vendor is not None and self.pool is not None:
            return f"pool {self.vendor.id}/{self.pool.name}"
        server = self.inventory.server_type if self.inventory else "no inventory"
        return f"{self.role} server ({server})"

    def location(self) -> Location | None:
        """Where in values this node's labels and taints are declared."""
        if self.vendor is None or self.pool is None:
            return None
        i = self.pool.index
        return self.vendor.doc.anchor(("pools", i, "taints"), ("pools", i), ("pools",))

    @property
    def declared(self) -> bool:
        """A pool's node with no inventory: it carries the pool's labels and taints as declared
        from its registration, since nfd-master has nothing to match on it."""
        return self.pool is not None and self.inventory is None

    def capacity(self) -> dict[str, str]:
        """The Node's capacity as declared: the pool's node shape (a server's own, for a general
        or CPU-only one) and what the vendor's device plugin advertises (each device `replicas`
        times where the vendor shares them); not for a vendor allocated by DRA, whose devices
        are published as a ResourceSlice instead."""
        if self.vendor is None or self.pool is None:
            return self.inventory.node.capacity() if self.inventory else {}
        capacity = self.pool.node.capacity()
        if not self.vendor.dra:
            capacity[self.vendor.resource_name] = str(self.pool.units_per_node)
        return capacity


def cpu_servers(view: FleetView) -> dict[str, Inventory]:
    """The CPU-only server types by name: the built-in ones, and the site's (its own over a
    built-in one of the same name)."""
    builtin = {n: inv for n, inv in inventory.builtin().items() if inv.accelerator is None}
    return {**builtin, **{inv.server_type: inv for inv in view.cpu_servers}}


def plan_nodes(view: FleetView) -> list[SimNode]:
    nodes: list[SimNode] = []
    for vendor in view.vendors:
        # The labels that leave a component to its one provider where an operator runs
        # (builders/operators.py): the node must end up with them too, as nfd-master applies
        # them from the same rule.
        handover = operators.handover_labels(view, vendor)
        for pool in vendor.pools:
            names = list(pool.nodes) or [
                f"{vendor.id}-{pool.name}-{i + 1:02d}" for i in range(pool.node_count)
            ]
            for name in names:
                nodes.append(
                    SimNode(
                        name=name,
                        role="pool",
                        vendor=vendor,
                        pool=pool,
                        inventory=pool.inventory,
                        labels=view.fleet.node_selector({**pool.labels, **handover}),
                        taints=[t.as_dict() for t in pool.taints],
                    )
                )
    taken = {n.name for n in nodes}
    by_type = cpu_servers(view)
    general = by_type.pop(GENERAL_SERVER, None)
    extra = [("general", "general-purpose-01", general)]
    extra += [("cpu-only", f"cpu-{t}-01", inv) for t, inv in sorted(by_type.items())]
    for role, name, inv in extra:
        if name not in taken:
            nodes.append(SimNode(name=name, role=role, inventory=inv))
    return nodes


def node_object(node: SimNode) -> Obj:
    # Cordoned until the node-config unit has converged: the way a node joins with
    # --register-with-taints, so no pod lands before nfd-master has had its say, and a taint
    # that nfd-master drops stays visibly missing afterwards. A node with no inventory carries
    # its pool's labels and taints from the start: nfd-master removes only the labels and taints
    # it recorded setting itself (node-feature-discovery v0.19.0 pkg/nfd-master/nfd-master.go,
    # updateNodeObject: the feature-labels annotation; setTaints: the taints annotation).
    return fake_node(
        node.name,
        labels=node.labels if node.declared else None,
        taints=node.taints if node.declared else None,
        capacity=node.capacity(),
        unschedulable=True,
    )


def resource_slice(node: SimNode) -> Obj | None:
    """For a node of a vendor allocated by DRA, the ResourceSlice its driver would publish: one
    pool named after the node with one slice, devices gpu-0.. (NVIDIA/k8s-dra-driver-gpu
    cmd/gpu-kubelet-plugin/driver.go and deviceinfo.go v25.12.0), each a whole device of the
    pool's model. Of the attributes the driver publishes, only the two the fleet's DeviceClass
    reads: the kind, and the model attribute set to the start the catalog records for the model
    (SIM011 says the rest is not simulated). None for other nodes."""
    vendor, pool = node.vendor, node.pool
    if vendor is None or pool is None or vendor.dra is None:
        return None
    dra = vendor.dra
    attributes = {
        dra.type_attribute: {"string": dra.type_value},
        dra.model_attribute: {"string": dra.prefixes[pool.model]},
    }
    return {
        "apiVersion": RESOURCE,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node.name}-{dra.name}"},
        "spec": {
            "driver": dra.name,
            "nodeName": node.name,
            "pool": {"name": node.name, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {"name": f"gpu-{i}", "attributes": dict(attributes)}
                for i in range(pool.devices_per_node)
            ],
        },
    }


def node_feature(node: SimNode) -> Obj:
    """What nfd-worker would publish for the node (no PCI devices without an inventory)."""
    inv = node.inventory or Inventory(node.name, "no inventory", None, (), ())
    return inventory.node_feature(inv, node.name, NFD_NAMESPACE)


def fleet_label_keys(view: FleetView) -> set[str]:
    """Every node label key the fleet's pools declare (as it lands on nodes)."""
    return {
        key
        for vendor in view.vendors
        for pool in vendor.pools
        for key in view.fleet.node_selector(pool.labels)
    }


def fleet_taint_keys(view: FleetView) -> set[str]:
    return {t.key for vendor in view.vendors for pool in vendor.pools for t in pool.taints}
