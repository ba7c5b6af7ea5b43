"""The site's hardware in its values: server types (values/inventories/<server type>.yaml, the
built-in inventories' format) and node shapes (an inventory's `node`, a pool's `node` over it),
as the loader resolves them for each pool."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
import yaml

from generator.errors import FindingsError
from generator.findings import Finding, Location
from generator.values import inventory
from generator.values import loader as values
from generator.values.inventory import NodeShape
from generator.values.model import Pool
from tests.fixtures import findings, tree

# Two functions of a site's HGX H100 server as lspci -nn lists them, and its shape.
HGX_H100 = """\
description: our HGX H100 8-GPU
accelerator: {vendor: nvidia, model: H100, count: 8}
sources: ["lspci -nn of gpu-node-17"]
devices:
  - {class: "0300", vendor: "1a03", device: "2000", subsystem_vendor: "1a03", subsystem_device: "2000"}
  - {class: "0302", vendor: "10de", device: "2330", subsystem_vendor: "10de", subsystem_device: "16c1"}
node:
  cpu: 192
  memory: 768Gi
  resources: {rdma/ib: 8, hugepages-1Gi: 64Gi}
"""


def pool_of(tmp_path: Path, vendor: str, files: dict[str, str] | None = None) -> Pool:
    view = values.load(tree(tmp_path, {"vendors/nvidia.yaml": vendor, **(files or {})}))
    (pool,) = view.envs["prod"].vendor("nvidia").pools  # type: ignore[union-attr]
    return pool


def test_a_pool_names_the_sites_server_type_and_its_node_shape_goes_over_the_servers(
    tmp_path: Path,
) -> None:
    vendor = (
        "pools:\n"
        "  - name: h100\n"
        "    model: H100\n"
        "    devicesPerNode: 8\n"
        "    nodes: [n1]\n"
        "    serverType: hgx-h100\n"
        "    node: {memory: 900Gi, resources: {rdma/ib: 4}}\n"
    )
    pool = pool_of(tmp_path, vendor, {"inventories/hgx-h100.yaml": HGX_H100})
    assert pool.inventory is not None
    assert (pool.inventory.server_type, pool.inventory.file, len(pool.inventory.devices)) == (
        "hgx-h100",
        "values/inventories/hgx-h100.yaml",
        2,
    )
    assert pool.inventory.node == NodeShape(
        "192", "768Gi", {"rdma/ib": "8", "hugepages-1Gi": "64Gi"}
    )
    assert pool.node == NodeShape("192", "900Gi", {"rdma/ib": "4", "hugepages-1Gi": "64Gi"})
    assert pool.node.capacity() == {
        "cpu": "192",
        "memory": "900Gi",
        "rdma/ib": "4",
        "hugepages-1Gi": "64Gi",
    }


def test_without_a_server_type_the_sites_inventory_of_the_model_comes_before_the_built_in(
    tmp_path: Path,
) -> None:
    vendor = "pools:\n  - {name: h100, model: H100, devicesPerNode: 8, nodes: [n1]}\n"
    pool = pool_of(tmp_path / "site", vendor, {"inventories/hgx-h100.yaml": HGX_H100})
    assert pool.inventory is not None and pool.inventory.file == "values/inventories/hgx-h100.yaml"
    builtin = pool_of(tmp_path / "builtin", vendor)
    assert builtin.inventory is not None
    assert builtin.inventory.file == "generator/values/inventories/x86-h100.yaml"
    assert builtin.node == NodeShape()
    assert builtin.node.capacity() == {}


def test_a_model_without_any_inventory_has_none(tmp_path: Path) -> None:
    vendor = "pools:\n  - {name: h200, model: H200, devicesPerNode: 8, nodes: [n1]}\n"
    pool = pool_of(tmp_path, vendor)
    assert (pool.inventory, pool.node) == (None, NodeShape())


def test_a_server_type_that_names_no_inventory_is_a_finding_at_it(tmp_path: Path) -> None:
    vendor = (
        "pools:\n"
        "  - {name: h100, model: H100, devicesPerNode: 8, nodes: [n1], serverType: hgx-h10}\n"
    )
    values_dir = tree(
        tmp_path, {"vendors/nvidia.yaml": vendor, "inventories/hgx-h100.yaml": HGX_H100}
    )
    found = [f for f in findings(values_dir) if f.code == "REF002"]
    assert found == [
        Finding(
            "REF002",
            "pool 'h100': no inventory for server type 'hgx-h10'",
            Location("values/vendors/nvidia.yaml", 2, 75),
            "$.pools[0].serverType",
            "did you mean 'hgx-h100'? declare it in values/inventories/hgx-h10.yaml "
            "(docs/node-config.md), or name one of: amd-mi250x, amd-mi300x, cambricon-mlu370, "
            "hgx-h100, hygon-cpu, hygon-dcu-k100, hygon-dcu-k100-ai, hygon-dcu-z100l, "
            "kunpeng-ascend-910b, kunpeng-cpu, x86-a100, x86-cpu, x86-h100",
        )
    ]


def test_a_server_type_far_from_any_says_where_to_declare_it(tmp_path: Path) -> None:
    vendor = (
        "pools:\n"
        "  - {name: h200, model: H200, devicesPerNode: 8, nodes: [n1], serverType: dgx-h200}\n"
    )
    with pytest.raises(FindingsError) as raised:
        values.load(tree(tmp_path, {"vendors/nvidia.yaml": vendor}))
    (found,) = raised.value.findings
    assert found.hint == (
        "declare it in values/inventories/dgx-h200.yaml (docs/node-config.md), or name one of: "
        "amd-mi250x, amd-mi300x, cambricon-mlu370, hygon-cpu, hygon-dcu-k100, hygon-dcu-k100-ai, "
        "hygon-dcu-z100l, kunpeng-ascend-910b, kunpeng-cpu, x86-a100, x86-cpu, x86-h100"
    )


def test_an_inventory_whose_server_type_is_not_its_file_name_is_a_finding(
    tmp_path: Path,
) -> None:
    text = "serverType: hgx-h200\n" + HGX_H100
    with pytest.raises(FindingsError) as raised:
        values.load(tree(tmp_path, {"inventories/hgx-h100.yaml": text}))
    assert raised.value.findings == [
        Finding(
            "VAL003",
            "serverType 'hgx-h200' is not the file's name 'hgx-h100'",
            Location("values/inventories/hgx-h100.yaml", 1, 13),
            "$.serverType",
            "the file's name is the server type: rename the file to hgx-h200.yaml, or remove "
            "serverType",
        )
    ]


def test_a_node_resource_named_as_kubernetes_does_not_name_one_is_a_schema_finding(
    tmp_path: Path,
) -> None:
    vendor = (
        "pools:\n"
        "  - {name: h100, model: H100, devicesPerNode: 8, nodes: [n1], "
        "node: {resources: {ib: 8}}}\n"
    )
    with pytest.raises(FindingsError) as raised:
        values.load(tree(tmp_path, {"vendors/nvidia.yaml": vendor}))
    (found,) = raised.value.findings
    assert (found.code, found.path) == ("VAL001", "$.pools[0].node.resources.ib")
    assert found.hint is not None and "extended resource <domain>/<name>" in found.hint


def test_a_device_without_an_attribute_nfd_always_publishes_is_a_schema_finding(
    tmp_path: Path,
) -> None:
    text = HGX_H100.replace(', subsystem_device: "16c1"', "")
    with pytest.raises(FindingsError) as raised:
        values.load(tree(tmp_path, {"inventories/hgx-h100.yaml": text}))
    (found,) = raised.value.findings
    assert (found.code, found.location, found.path) == (
        "VAL001",
        Location("values/inventories/hgx-h100.yaml", 6, 5),
        "$.devices[1]",
    )
    assert "subsystem_device" in found.message


@pytest.mark.parametrize(
    ("broken", "code"),
    [
        ("serverType: hgx-h200\n" + HGX_H100, "VAL003"),
        (HGX_H100.replace(', subsystem_device: "16c1"', ""), "VAL001"),
    ],
    ids=["its-name", "its-schema"],
)
def test_a_pool_of_a_refused_inventory_is_told_nothing_its_files_finding_does_not_say(
    tmp_path: Path, broken: str, code: str
) -> None:
    """The pool names a file that is there: 'no inventory for server type, declare it in
    values/inventories/hgx-h100.yaml' would send the user to the file they just wrote."""
    vendor = (
        "pools:\n"
        "  - {name: h100, model: H100, devicesPerNode: 8, nodes: [n1], serverType: hgx-h100}\n"
    )
    values_dir = tree(
        tmp_path, {"vendors/nvidia.yaml": vendor, "inventories/hgx-h100.yaml": broken}
    )
    assert [(f.code, f.location.file) for f in findings(values_dir)] == [
        (code, "values/inventories/hgx-h100.yaml")
    ]


@pytest.mark.parametrize("name", inventory.names())
def test_the_built_in_inventories_are_in_the_format_a_site_writes(name: str) -> None:
    """One format: the site's files are checked by the schema the built-in ones meet."""
    path = resources.files("generator.values") / "inventories" / f"{name}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert [e.message for e in values._validator("inventory").iter_errors(data)] == []
