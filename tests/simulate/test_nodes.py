"""The simulated nodes of a fleet (generator/simulate/nodes.py): what each advertises."""

from __future__ import annotations

from pathlib import Path

from generator.simulate.nodes import node_object, plan_nodes, resource_slice
from generator.values import loader as values
from tests.fixtures import DRA_NVIDIA, MIG_NVIDIA, NVIDIA, SHARED_NVIDIA, VNPU_ASCEND, tree


def test_a_shared_pools_node_advertises_each_device_replicas_times(tmp_path: Path) -> None:
    """As the plugin would (its README, "With CUDA Time-Slicing": replicas x GPUs under the
    .shared name): n3's one GPU shared 4 ways is 4 nvidia.com/gpu.shared; nvidia's nodes keep
    their 4 nvidia.com/gpu. Both have the A100 server's PCI devices, so NFD finds them."""
    shared = SHARED_NVIDIA.replace("devicesPerNode: 1", "devicesPerNode: 2")
    view = values.load(
        tree(tmp_path, {"vendors/nvidia.yaml": NVIDIA, "vendors/nvidia-shared.yaml": shared})
    ).envs["prod"]
    pools = [n for n in plan_nodes(view) if n.role == "pool"]
    assert [
        (n.name, n.inventory.server_type if n.inventory else None, n.labels) for n in pools
    ] == [
        (name, "x86-a100", {**brand, "feature.node.kubernetes.io/gpu-model": "A100"})
        for name, brand in (
            ("n1", {"feature.node.kubernetes.io/accelerator": "nvidia-gpu"}),
            ("n2", {"feature.node.kubernetes.io/accelerator": "nvidia-gpu"}),
            ("n3", {"feature.node.kubernetes.io/accelerator": "nvidia-gpu-shared"}),
        )
        for brand in [{**brand, "feature.node.kubernetes.io/gpu-brand": "nvidia"}]
    ]
    capacity = {n.name: node_object(n)["status"]["capacity"] for n in pools}
    assert {k: {r: v for r, v in c.items() if "/" in r} for k, c in capacity.items()} == {
        "n1": {"nvidia.com/gpu": "4"},
        "n2": {"nvidia.com/gpu": "4"},
        "n3": {"nvidia.com/gpu.shared": "8"},
    }


def test_a_mig_pools_node_advertises_its_layouts_instances(tmp_path: Path) -> None:
    """As the plugin would under the mixed strategy once the MIG manager applied all-3g.40gb:
    n5's two 80GB A100s, each two 3g.40gb instances, are 4 nvidia.com/mig-3g.40gb and no
    nvidia.com/gpu; its labels include the layout label NFD sets from the pool's rule."""
    view = values.load(
        tree(tmp_path, {"vendors/nvidia.yaml": NVIDIA, "vendors/nvidia-mig.yaml": MIG_NVIDIA})
    ).envs["prod"]
    (n5,) = [n for n in plan_nodes(view) if n.name == "n5"]
    assert (n5.inventory.server_type if n5.inventory else None) == "x86-a100"
    assert n5.labels["nvidia.com/mig.config"] == "all-3g.40gb"
    capacity = node_object(n5)["status"]["capacity"]
    assert {r: v for r, v in capacity.items() if "/" in r} == {"nvidia.com/mig-3g.40gb": "4"}


def test_a_vnpu_pools_node_advertises_its_vnpus_not_its_npus(tmp_path: Path) -> None:
    """As Ascend's plugin would once the site made the vNPUs: npu-v1's 2 NPUs, 4 vNPUs of
    vir06_1c_16g each, are 8 huawei.com/Ascend910-6c.1cpu.16g and no huawei.com/Ascend910."""
    view = values.load(tree(tmp_path, {"vendors/ascend-vnpu.yaml": VNPU_ASCEND})).envs["prod"]
    (node,) = [n for n in plan_nodes(view) if n.name == "npu-v1"]
    capacity = node_object(node)["status"]["capacity"]
    assert {r: v for r, v in capacity.items() if "/" in r} == {
        "huawei.com/Ascend910-6c.1cpu.16g": "8"
    }


def test_a_dra_pools_node_has_the_slice_its_driver_would_publish(tmp_path: Path) -> None:
    """NVIDIA/k8s-dra-driver-gpu v25.12.0: driver gpu.nvidia.com, a pool per node named after it,
    devices gpu-<n>; of the attributes only type and productName (the model's start), what the
    fleet's DeviceClass reads. No extended resource on the node; none for other nodes."""
    dra = DRA_NVIDIA.replace("devicesPerNode: 8", "devicesPerNode: 2")
    view = values.load(tree(tmp_path, {"vendors/nvidia-dra.yaml": dra})).envs["prod"]
    nodes = {n.name: n for n in plan_nodes(view)}
    attributes = {"type": {"string": "gpu"}, "productName": {"string": "NVIDIA H100"}}
    assert resource_slice(nodes["n4"]) == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "n4-gpu.nvidia.com"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": "n4",
            "pool": {"name": "n4", "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {"name": "gpu-0", "attributes": attributes},
                {"name": "gpu-1", "attributes": attributes},
            ],
        },
    }
    capacity = node_object(nodes["n4"])["status"]["capacity"]
    assert not [r for r in capacity if "/" in r]
    assert resource_slice(nodes["n1"]) is None
    assert resource_slice(nodes["general-purpose-01"]) is None


# A site's H100 server (values/inventories/hgx-h100.yaml): one GPU function is enough here.
HGX_H100 = """\
description: our HGX H100 8-GPU
accelerator: {vendor: nvidia, model: H100, count: 8}
sources: ["lspci -nn of gpu-node-17"]
devices:
  - {class: "0302", vendor: "10de", device: "2330", subsystem_vendor: "10de", subsystem_device: "16c1"}
node: {cpu: 192, memory: 768Gi, resources: {rdma/ib: 8}}
"""


def test_a_pools_node_has_the_declared_shape_and_the_control_planes_default_elsewhere(
    tmp_path: Path,
) -> None:
    """n1's shape is the pool's memory over its server's CPU and rdma/ib, beside its 8 GPUs;
    the general server, declared nowhere, keeps the 64 CPU / 512Gi the launcher gives a node."""
    vendor = (
        "pools:\n"
        "  - {name: h100, model: H100, devicesPerNode: 8, nodes: [n1], serverType: hgx-h100,\n"
        "     node: {memory: 900Gi}}\n"
    )
    view = values.load(
        tree(tmp_path, {"vendors/nvidia.yaml": vendor, "inventories/hgx-h100.yaml": HGX_H100})
    ).envs["prod"]
    nodes = {n.name: n for n in plan_nodes(view)}
    assert node_object(nodes["n1"])["status"]["capacity"] == {
        "cpu": "192",
        "memory": "900Gi",
        "pods": "110",
        "rdma/ib": "8",
        "nvidia.com/gpu": "8",
    }
    assert node_object(nodes["general-purpose-01"])["status"]["capacity"] == {
        "cpu": "64",
        "memory": "512Gi",
        "pods": "110",
    }


def test_a_node_without_an_inventory_is_registered_with_its_pools_labels_and_taints(
    tmp_path: Path,
) -> None:
    """nfd-master has nothing to match on an H200 node without an inventory: it carries what the
    pool declares from its registration; a node with an inventory waits for nfd-master."""
    vendor = (
        "taints: [{key: example.com/gpu, value: h, effect: NoSchedule}]\n"
        "pools:\n"
        "  - {name: h200, model: H200, devicesPerNode: 8, nodes: [n9]}\n"
        "  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1]}\n"
    )
    view = values.load(tree(tmp_path, {"vendors/nvidia.yaml": vendor})).envs["prod"]
    nodes = {n.name: n for n in plan_nodes(view)}
    n9 = node_object(nodes["n9"])
    assert {k: v for k, v in n9["metadata"]["labels"].items() if "feature.node" in k} == {
        "feature.node.kubernetes.io/accelerator": "nvidia-gpu",
        "feature.node.kubernetes.io/gpu-brand": "nvidia",
        "feature.node.kubernetes.io/gpu-model": "H200",
    }
    assert n9["spec"]["taints"] == [
        {"key": "example.com/gpu", "value": "h", "effect": "NoSchedule"}
    ]
    n1 = node_object(nodes["n1"])
    assert [k for k in n1["metadata"]["labels"] if "feature.node" in k] == []
    assert n1["spec"]["taints"] == []


def test_the_sites_cpu_only_server_is_simulated_beside_the_built_in_ones_with_its_shape(
    tmp_path: Path,
) -> None:
    """A site's EPYC server without accelerators (accelerator: null) is a node of its own,
    publishing its inventory, with its declared shape; the built-in CPU-only servers stay."""
    epyc = (
        "description: our 2-socket EPYC 9654 storage server\n"
        "accelerator: null\n"
        'sources: ["lspci -nn of store-3"]\n'
        "devices:\n"
        '  - {class: "0600", vendor: "1022", device: "14a4", subsystem_vendor: "1022", '
        'subsystem_device: "14a4"}\n'
        "node: {cpu: 384, memory: 1536Gi}\n"
    )
    view = values.load(tree(tmp_path, {"inventories/epyc-9654.yaml": epyc})).envs["prod"]
    servers = {n.name: n for n in plan_nodes(view) if n.role != "pool"}
    assert sorted(servers) == [
        "cpu-epyc-9654-01",
        "cpu-hygon-cpu-01",
        "cpu-kunpeng-cpu-01",
        "general-purpose-01",
    ]
    node = servers["cpu-epyc-9654-01"]
    assert node.inventory is not None and node.inventory.file == "values/inventories/epyc-9654.yaml"
    assert node_object(node)["status"]["capacity"] == {
        "cpu": "384",
        "memory": "1536Gi",
        "pods": "110",
    }
