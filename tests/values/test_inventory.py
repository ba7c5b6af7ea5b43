"""The PCI inventories (generator/values/inventories/*.yaml): well formed, and in NFD's own terms.

The attribute names are checked against Node Feature Discovery's source in the Go module cache
(the version generator/toolchain/gotools/nfd/go.mod pins), so a rename upstream fails here rather than in a cluster.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from generator.toolchain import registry
from generator.values import inventory
from tests.fixtures import tool

NFD_MODULE = "sigs.k8s.io/node-feature-discovery"


def nfd_source_dir() -> Path:
    """NFD's source as the pinned module (go mod download; the cache is warm after make tools)."""
    out = subprocess.run(
        [str(tool("go")), "mod", "download", "-json", NFD_MODULE],
        cwd=registry.GOTOOLS / "nfd",
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    return Path(json.loads(out)["Dir"])


def go_string_slice(source: str, name: str) -> tuple[str, ...]:
    match = re.search(rf"var {name} = \[\]string\{{([^}}]*)\}}", source)
    assert match, f"{name} not found in NFD's source/pci/utils.go"
    return tuple(re.findall(r'"([^"]+)"', match.group(1)))


def test_attribute_names_are_those_nfd_publishes() -> None:
    utils_go = (nfd_source_dir() / "source" / "pci" / "utils.go").read_text()
    assert go_string_slice(utils_go, "mandatoryDevAttrs") == inventory.MANDATORY_ATTRIBUTES
    assert go_string_slice(utils_go, "optionalDevAttrs") == inventory.OPTIONAL_ATTRIBUTES


def test_the_seed_server_types_have_inventories() -> None:
    want = {
        "hygon-dcu-z100l",
        "hygon-cpu",
        "kunpeng-ascend-910b",
        "kunpeng-cpu",
        "x86-a100",
        "x86-h100",
        "amd-mi250x",
        "cambricon-mlu370",
        "x86-cpu",
    }
    assert want <= set(inventory.names())


@pytest.mark.parametrize("name", inventory.names())
def test_inventory_is_well_formed(name: str) -> None:
    inv = inventory.load(name)
    assert inv.server_type == name
    assert inv.sources and "pci.ids" in inv.sources[0]
    hexa = re.compile(r"^[0-9a-f]{4}$")
    for dev in inv.devices:
        for attr in inventory.MANDATORY_ATTRIBUTES:
            assert hexa.match(dev[attr]), (name, dev)
    if inv.accelerator is not None:
        # The accelerator functions are there, as many as the file says.
        vendor_ids = {"nvidia": "10de", "amd": "1002", "ascend": "19e5", "hygon": "1d94",
                      "cambricon": "cabc"}  # fmt: skip
        accel = [
            d
            for d in inv.devices
            if d["vendor"] == vendor_ids[inv.accelerator.vendor]
            and d["class"] in ("0300", "0302", "0380", "0b40", "1200")
            and d["device"] not in ("1711", "a250")  # Huawei iBMC VGA, Kunpeng ZIP engine
        ]
        assert len(accel) == inv.accelerator.count, name


def test_node_feature_is_what_nfd_worker_writes() -> None:
    obj = inventory.node_feature(inventory.load("x86-cpu"), "node-a")
    assert obj["metadata"]["labels"] == {"nfd.node.kubernetes.io/node-name": "node-a"}
    features = obj["spec"]["features"]
    assert features["attributes"]["system.name"]["elements"] == {"nodename": "node-a"}
    elements = features["instances"]["pci.device"]["elements"]
    assert len(elements) == len(inventory.load("x86-cpu").devices)


def test_unknown_server_type_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="known: amd-mi250x"):
        inventory.load("no-such-server")


def test_node_features_text_keeps_ids_strings() -> None:
    # Unquoted 19e5 / 0380 would reach Go as numbers: the stream is JSON documents.
    text = inventory.node_features_text([("a", inventory.load("kunpeng-cpu"))])
    assert '"vendor": "19e5"' in text
    assert '"class": "0300"' in text
