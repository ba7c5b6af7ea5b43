"""Node labels and taints per pool (generator/builders/node_config.py): the NFD NodeFeatureRules
and the node-patch Node objects built from small values trees, each expected object written out
by hand from the values and the catalog's PCI IDs (generator/values/catalog/*.yaml)."""

from __future__ import annotations

from pathlib import Path

import yaml

from generator.builders import node_config
from generator.findings import Location
from generator.values import loader as values
from generator.values.model import FleetView
from generator.vocab.units import Component
from tests.fixtures import (
    AMD_MI250X,
    ASCEND_910B,
    NVIDIA,
    PROD_FLEET,
    SHARED_NVIDIA,
    Obj,
    render_into,
    tree,
)

NODE_PATCH_FLEET = PROD_FLEET + "nodeConfig: {method: node-patch}\n"
NODE_PATCH_OPTIONS = "ServerSideApply=true,Validate=false,Prune=false,Delete=false"

MANAGED = {"app.kubernetes.io/managed-by": "accel-gitops"}
NFD = "feature.node.kubernetes.io/"
A100_IDS = ["20b0", "20b1", "20b2", "20b3", "20b5", "20b8", "20f0", "20f1", "20f2"]
H100_IDS = ["2313", "2321", "2330", "2331", "2336", "2337", "2338", "2339", "233d"]
NVIDIA_TAINT = {"key": NFD + "accelerator", "value": "nvidia-gpu", "effect": "NoSchedule"}
NVIDIA_LABELS = {NFD + "accelerator": "nvidia-gpu", NFD + "gpu-brand": "nvidia"}

# A vendor outside the catalog: no pciModels, so its pools' pciDevices match all of NFD's
# accelerator classes (03, 0b40, 12).
ACME = """\
resourceName: acme.example/npu
pciVendor: "acde"
selectorLabel: accelerator
modelLabel: npu-model
nodeLabels: {accelerator: acme-npu}
taints: [{key: acme.example/npu, value: present, effect: NoSchedule}]
devicePlugin:
  name: acme-device-plugin
  image: registry.example.com/acme/device-plugin
  version: v1.2.3
  namespace: accelerator-plugins
  volumes:
    - {name: device-plugin, hostPath: {path: /var/lib/kubelet/device-plugins}}
  volumeMounts:
    - {name: device-plugin, mountPath: /var/lib/kubelet/device-plugins}
pools:
  - {name: n1, model: n1, pciDevices: ['ff02', 'ff01'], devicesPerNode: 4, nodes: [acme-1]}
"""


def view_of(tmp_path: Path, files: dict[str, str], fleet: str = PROD_FLEET) -> FleetView:
    """The prod view of a tree holding fleet.yaml (`fleet`) and `files` alone."""
    return values.load(tree(tmp_path, files, fleet=fleet, defaults=False)).envs["prod"]


def rule_object(vendor: str, rules: list[Obj], sources: str | None = None) -> Obj:
    return {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeatureRule",
        "metadata": {
            "name": f"accel-{vendor}",
            "labels": {**MANAGED, "accel-gitops.io/vendor": vendor},
            "annotations": {
                "accel-gitops.io/source": sources or f"values/vendors/{vendor}.yaml",
            },
        },
        "spec": {"rules": rules},
    }


def pci(vendor: str, classes: Obj, devices: list[str]) -> Obj:
    return {
        "feature": "pci.device",
        "matchExpressions": {
            "vendor": {"op": "In", "value": [vendor]},
            "class": classes,
            "device": {"op": "In", "value": devices},
        },
    }


def nodename(*nodes: str) -> Obj:
    return {
        "feature": "system.name",
        "matchExpressions": {"nodename": {"op": "In", "value": list(nodes)}},
    }


CLASS_0302 = {"op": "In", "value": ["0302"]}


def only(components: list[Component]) -> Component:
    [component] = components
    return component


# ---- NodeFeatureRules (nfd, the default) --------------------------------------------------------


def test_nfd_rule_per_pool_with_labels_taints_and_the_models_pci_ids(tmp_path: Path) -> None:
    """Two NVIDIA pools of different models: a rule each, matching class 0302, vendor 10de and
    exactly the model's device IDs; the pool's own labels beside the vendor's and the model's
    (unprefixed keys under NFD's prefix, prefixed ones kept); the vendor's taints, or the pool's
    own when it lists them (a taint without value has no value key)."""
    nvidia = """\
costWeight: 1.0
pools:
  - name: a100
    model: A100
    devicesPerNode: 4
    nodes: [gpu-2, gpu-1]
    labels: {example.com/rack: r7, zone: west}
  - name: h100
    model: H100
    devicesPerNode: 8
    nodes: [gpu-3]
    taints:
      - {key: example.com/reserved, value: research, effect: NoExecute}
      - {key: example.com/drain, effect: PreferNoSchedule}
"""
    component = only(node_config.build(view_of(tmp_path, {"vendors/nvidia.yaml": nvidia})))
    assert (component.unit, component.name) == ("node-config", "node-config/nvidia")
    # Findings on these objects point at the vendor's pools: line 2 of its file.
    assert component.origin == Location("values/vendors/nvidia.yaml", 2, 1)
    assert component.objects == [
        rule_object(
            "nvidia",
            [
                {
                    "name": "nvidia-a100",
                    "labels": {
                        NFD + "accelerator": "nvidia-gpu",
                        "example.com/rack": "r7",
                        NFD + "gpu-brand": "nvidia",
                        NFD + "gpu-model": "A100",
                        NFD + "zone": "west",
                    },
                    "matchFeatures": [pci("10de", CLASS_0302, A100_IDS)],
                    "taints": [NVIDIA_TAINT],
                },
                {
                    "name": "nvidia-h100",
                    "labels": {**NVIDIA_LABELS, NFD + "gpu-model": "H100"},
                    "matchFeatures": [pci("10de", CLASS_0302, H100_IDS)],
                    "taints": [
                        {"key": "example.com/reserved", "value": "research", "effect": "NoExecute"},
                        {"key": "example.com/drain", "effect": "PreferNoSchedule"},
                    ],
                },
            ],
        )
    ]


def test_nfd_rule_of_a_pool_without_taints_has_no_taints_key(tmp_path: Path) -> None:
    nvidia = "pools:\n  - {name: open, model: A100, devicesPerNode: 4, nodes: [n1], taints: []}\n"
    [rule] = only(node_config.build(view_of(tmp_path, {"vendors/nvidia.yaml": nvidia}))).objects
    assert rule["spec"]["rules"] == [
        {
            "name": "nvidia-open",
            "labels": {**NVIDIA_LABELS, NFD + "gpu-model": "A100"},
            "matchFeatures": [pci("10de", CLASS_0302, A100_IDS)],
        }
    ]


def test_two_pools_of_one_model_are_told_apart_by_node_name(tmp_path: Path) -> None:
    """Pools a and b match the same A100 IDs, so each rule also matches its nodes by name (sorted);
    pool c, whose H100 IDs no other pool matches, matches by PCI alone though it names nodes."""
    nvidia = """\
pools:
  - {name: a, model: A100, devicesPerNode: 4, nodes: [gpu-b, gpu-a]}
  - {name: b, model: A100, devicesPerNode: 4, nodes: [gpu-c]}
  - {name: c, model: H100, devicesPerNode: 8, nodes: [gpu-d]}
"""
    [rule] = only(node_config.build(view_of(tmp_path, {"vendors/nvidia.yaml": nvidia}))).objects
    assert [r["matchFeatures"] for r in rule["spec"]["rules"]] == [
        [pci("10de", CLASS_0302, A100_IDS), nodename("gpu-a", "gpu-b")],
        [pci("10de", CLASS_0302, A100_IDS), nodename("gpu-c")],
        [pci("10de", CLASS_0302, H100_IDS)],
    ]
    assert [r["name"] for r in rule["spec"]["rules"]] == ["nvidia-a", "nvidia-b", "nvidia-c"]


def test_pools_sharing_one_device_id_are_told_apart_and_a_nameless_pool_is_not(
    tmp_path: Path,
) -> None:
    """pciDevices overlapping in one ID (20b0) are enough to need node names; a pool listing no
    nodes (nodeCount only) keeps the PCI match alone."""
    nvidia = """\
pools:
  - {name: x, model: A100, pciDevices: ['20b0', '20b1'], devicesPerNode: 4, nodes: [n2]}
  - {name: y, model: A100, pciDevices: ['20b2', '20b0'], devicesPerNode: 4, nodeCount: 3}
"""
    view = view_of(tmp_path, {"vendors/nvidia.yaml": nvidia})
    [rule] = only(node_config.build(view)).objects
    assert [r["matchFeatures"] for r in rule["spec"]["rules"]] == [
        [pci("10de", CLASS_0302, ["20b0", "20b1"]), nodename("n2")],
        [pci("10de", CLASS_0302, ["20b0", "20b2"])],
    ]
    [vendor] = view.vendors
    assert [bool(node_config.device_twins(view, vendor, p)) for p in vendor.pools] == [True, True]


def test_shares_devices_only_with_another_pool(tmp_path: Path) -> None:
    nvidia = """\
pools:
  - {name: x, model: A100, devicesPerNode: 4, nodes: [n1]}
  - {name: y, model: H100, devicesPerNode: 4, nodes: [n2]}
  - {name: z, model: H100, pciDevices: ['2313'], devicesPerNode: 4, nodes: [n3]}
"""
    view = view_of(tmp_path, {"vendors/nvidia.yaml": nvidia})
    [vendor] = view.vendors
    assert [
        [p.name for _, p in node_config.device_twins(view, vendor, p)] for p in vendor.pools
    ] == [
        [],
        ["z"],
        ["y"],
    ]


def test_pools_of_two_vendors_on_one_pci_vendor_are_told_apart_by_node_name(
    tmp_path: Path,
) -> None:
    """nvidia's A100 rule would also label the shared vendor's A100 node as nvidia's (and the
    reverse): both rules match node names. A vendor with another PCI vendor is no twin."""
    view = view_of(
        tmp_path,
        {
            "vendors/nvidia.yaml": NVIDIA,
            "vendors/nvidia-shared.yaml": SHARED_NVIDIA,
            "vendors/amd.yaml": AMD_MI250X,
        },
    )
    rules = {
        r["metadata"]["name"]: r["spec"]["rules"]
        for c in node_config.build(view)
        for r in c.objects
        if r["kind"] == "NodeFeatureRule"
    }
    assert rules["accel-nvidia"][0]["matchFeatures"][1] == nodename("n1", "n2")
    assert rules["accel-nvidia-shared"][0]["matchFeatures"][1] == nodename("n3")
    assert len(rules["accel-amd"][0]["matchFeatures"]) == 1
    shared = view.vendor("nvidia-shared")
    assert shared is not None
    assert [(v.id, p.name) for v, p in node_config.device_twins(view, shared, shared.pools[0])] == [
        ("nvidia", "a100")
    ]


def test_a_pool_without_pci_ids_gets_no_rule_and_the_next_pool_still_does(tmp_path: Path) -> None:
    """A model the catalog does not know, without pciDevices: no rule (NODE002 refuses such values;
    a rule on the vendor ID alone would label every NVIDIA function); the pools after it keep
    theirs."""
    nvidia = """\
pools:
  - {name: mystery, model: Z9, devicesPerNode: 4, nodes: [n1]}
  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n2]}
"""
    [rule] = only(node_config.build(view_of(tmp_path, {"vendors/nvidia.yaml": nvidia}))).objects
    assert [r["name"] for r in rule["spec"]["rules"]] == ["nvidia-a100"]


def test_a_vendor_whose_pools_have_no_pci_ids_gets_a_rule_object_without_rules(
    tmp_path: Path,
) -> None:
    nvidia = "pools:\n  - {name: mystery, model: Z9, devicesPerNode: 4, nodes: [n1]}\n"
    component = only(node_config.build(view_of(tmp_path, {"vendors/nvidia.yaml": nvidia})))
    assert component.objects == [rule_object("nvidia", [])]


def test_nfd_rule_per_vendor_with_its_pci_vendor_classes_and_taints(tmp_path: Path) -> None:
    """One component and NodeFeatureRule per vendor, sorted by vendor: AMD's MI250X matches base
    classes 03 and 12 as prefixes, Ascend's 910b class 12 prefix, Hygon's Z100L the exact class
    0380; each vendor's labels and taint from the catalog."""
    files = {
        "vendors/ascend.yaml": ASCEND_910B,
        "vendors/amd.yaml": "pools:\n  - {name: mi, model: MI250X, devicesPerNode: 8, nodes: [amd-1]}\n",
        "vendors/hygon.yaml": """\
devicePlugin: {image: r/dcu, version: v1}
pools:
  - {name: z, model: Z100L, devicesPerNode: 8, nodes: [dcu-1]}
""",
    }
    components = node_config.build(view_of(tmp_path, files))
    assert [(c.unit, c.name) for c in components] == [
        ("node-config", "node-config/amd"),
        ("node-config", "node-config/ascend"),
        ("node-config", "node-config/hygon"),
    ]
    assert [c.origin for c in components] == [
        Location("values/vendors/amd.yaml", 1, 1),
        Location("values/vendors/ascend.yaml", 1, 1),
        Location("values/vendors/hygon.yaml", 2, 1),
    ]
    assert [c.objects for c in components] == [
        [
            rule_object(
                "amd",
                [
                    {
                        "name": "amd-mi",
                        "labels": {
                            NFD + "accelerator": "amd-gpu",
                            NFD + "gpu-brand": "amd",
                            NFD + "gpu-model": "MI250X",
                        },
                        "matchFeatures": [
                            pci(
                                "1002",
                                {"op": "InRegexp", "value": ["^03", "^12"]},
                                ["7408", "740c"],
                            )
                        ],
                        "taints": [
                            {"key": NFD + "accelerator", "value": "amd-gpu", "effect": "NoSchedule"}
                        ],
                    }
                ],
            )
        ],
        [
            rule_object(
                "ascend",
                [
                    {
                        "name": "ascend-910b",
                        "labels": {
                            NFD + "accelerator": "huawei-npu",
                            NFD + "gpu-brand": "huawei",
                            NFD + "npu-model": "910b",
                        },
                        "matchFeatures": [
                            pci("19e5", {"op": "InRegexp", "value": ["^12"]}, ["d802"])
                        ],
                        "taints": [
                            {
                                "key": NFD + "accelerator",
                                "value": "huawei-npu",
                                "effect": "NoSchedule",
                            }
                        ],
                    }
                ],
            )
        ],
        [
            rule_object(
                "hygon",
                [
                    {
                        "name": "hygon-z",
                        "labels": {
                            NFD + "accelerator": "hygon-dcu",
                            NFD + "dcu-model": "Z100L",
                            NFD + "gpu-brand": "hygon",
                        },
                        "matchFeatures": [pci("1d94", {"op": "In", "value": ["0380"]}, ["55b7"])],
                        "taints": [
                            {
                                "key": NFD + "accelerator",
                                "value": "hygon-dcu",
                                "effect": "NoSchedule",
                            }
                        ],
                    }
                ],
            )
        ],
    ]


def test_pci_devices_of_an_unknown_model_match_every_accelerator_class(tmp_path: Path) -> None:
    """A vendor without pciModels: the pool's pciDevices (sorted) under NFD's accelerator
    classes 03, 0b40 and 12, as prefixes."""
    [rule] = only(node_config.build(view_of(tmp_path, {"vendors/acme.yaml": ACME}))).objects
    assert rule == rule_object(
        "acme",
        [
            {
                "name": "acme-n1",
                "labels": {NFD + "accelerator": "acme-npu", NFD + "npu-model": "n1"},
                "matchFeatures": [
                    pci(
                        "acde",
                        {"op": "InRegexp", "value": ["^03", "^0b40", "^12"]},
                        ["ff01", "ff02"],
                    )
                ],
                "taints": [{"key": "acme.example/npu", "value": "present", "effect": "NoSchedule"}],
            }
        ],
    )


def test_a_vendor_files_own_pci_model_classes_and_devices_are_sorted(tmp_path: Path) -> None:
    nvidia = """\
pciModels:
  X9: {classes: ['12', '03'], devices: ['ff09', 'aa01'], source: test}
  X8: {classes: ['0b40', '0302'], devices: ['ff08'], source: test}
pools:
  - {name: x9, model: X9, devicesPerNode: 4, nodes: [n1]}
  - {name: x8, model: x8, devicesPerNode: 4, nodes: [n2]}
"""
    [rule] = only(node_config.build(view_of(tmp_path, {"vendors/nvidia.yaml": nvidia}))).objects
    assert [r["matchFeatures"] for r in rule["spec"]["rules"]] == [
        [pci("10de", {"op": "InRegexp", "value": ["^03", "^12"]}, ["aa01", "ff09"])],
        [pci("10de", {"op": "In", "value": ["0302", "0b40"]}, ["ff08"])],
    ]


def test_a_vendor_file_adds_a_device_id_to_a_catalog_model(tmp_path: Path) -> None:
    """docs/node-config.md: a site whose K100-AI cards show 6210 (the community guide's ID, not
    the registry's 6211) lists both in its vendor file, with its own source."""
    hygon = """\
devicePlugin: {image: r/dcu, version: v1}
pciModels:
  K100-AI: {classes: ['0b40'], devices: ['6211', '6210'], source: lspci on our nodes}
pools:
  - {name: k100ai, model: K100-AI, devicesPerNode: 8, nodes: [n1]}
"""
    [rule] = only(node_config.build(view_of(tmp_path, {"vendors/hygon.yaml": hygon}))).objects
    assert [r["matchFeatures"] for r in rule["spec"]["rules"]] == [
        [pci("1d94", {"op": "In", "value": ["0b40"]}, ["6210", "6211"])]
    ]


def test_class_expression_exact_classes_or_base_class_prefixes() -> None:
    assert node_config.class_expression(("0b40", "0302")) == {
        "op": "In",
        "value": ["0302", "0b40"],
    }
    assert node_config.class_expression(("12", "03")) == {"op": "InRegexp", "value": ["^03", "^12"]}
    # One base class among exact ones: all of them as prefixes.
    assert node_config.class_expression(("0302", "12")) == {
        "op": "InRegexp",
        "value": ["^0302", "^12"],
    }
    assert node_config.class_expression(("1200",)) == {"op": "In", "value": ["1200"]}


def test_rule_object_names_every_file_its_vendor_merges(tmp_path: Path) -> None:
    """An environment that overrides the vendor's taints: the rule carries them, and its source
    annotation names the vendor file and the environment file."""
    files = {
        "vendors/nvidia.yaml": "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1]}\n",
        "environments/prod.yaml": """\
vendors:
  nvidia:
    taints: [{key: example.com/gpu, effect: NoSchedule}]
""",
    }
    [rule] = only(node_config.build(view_of(tmp_path, files))).objects
    assert rule == rule_object(
        "nvidia",
        [
            {
                "name": "nvidia-a100",
                "labels": {**NVIDIA_LABELS, NFD + "gpu-model": "A100"},
                "matchFeatures": [pci("10de", CLASS_0302, A100_IDS)],
                "taints": [{"key": "example.com/gpu", "effect": "NoSchedule"}],
            }
        ],
        sources="values/vendors/nvidia.yaml, values/environments/prod.yaml",
    )


# ---- node-patch: a partial Node per named node ------------------------------------------------


def node(name: str, labels: dict[str, str], taints: list[Obj] | None, source: str) -> Obj:
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {
                "accel-gitops.io/source": source,
                "argocd.argoproj.io/sync-options": NODE_PATCH_OPTIONS,
            },
        },
    }
    if taints is not None:
        obj["spec"] = {"taints": taints}
    return obj


def test_node_patch_a_node_object_per_named_node_with_the_pools_labels_and_taints(
    tmp_path: Path,
) -> None:
    """Nodes in pool order, each pool's nodes sorted; labels as written (no NFD prefix, no
    managed-by label, which would land on every node), sorted by key; taints as the pool's; no
    spec for a pool without taints; server-side apply, never pruned nor deleted."""
    nvidia = """\
costWeight: 1.0
pools:
  - name: a100
    model: A100
    devicesPerNode: 4
    nodes: [gpu-2, gpu-1]
    labels: {zone: west, example.com/rack: r7}
  - {name: open, model: H100, devicesPerNode: 8, nodes: [gpu-0], taints: []}
"""
    source = "values/vendors/nvidia.yaml"
    component = only(
        node_config.build(view_of(tmp_path, {"vendors/nvidia.yaml": nvidia}, NODE_PATCH_FLEET))
    )
    assert (component.unit, component.name) == ("node-config", "node-config/nvidia")
    assert component.origin == Location(source, 2, 1)
    a100 = {
        "accelerator": "nvidia-gpu",
        "example.com/rack": "r7",
        "gpu-brand": "nvidia",
        "gpu-model": "A100",
        "zone": "west",
    }
    h100 = {"accelerator": "nvidia-gpu", "gpu-brand": "nvidia", "gpu-model": "H100"}
    assert component.objects == [
        node("gpu-1", a100, [NVIDIA_TAINT], source),
        node("gpu-2", a100, [NVIDIA_TAINT], source),
        node("gpu-0", h100, None, source),
    ]
    assert list(component.objects[0]["metadata"]["labels"]) == sorted(a100)


def test_node_patch_per_vendor_and_nothing_for_a_vendor_without_named_nodes(
    tmp_path: Path,
) -> None:
    """A vendor whose pools name no node (NODE001 refuses it) gets no component at all; the others
    one each, sorted by vendor."""
    files = {
        "vendors/nvidia.yaml": "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, nodeCount: 2}\n",
        "vendors/ascend.yaml": ASCEND_910B,
        "vendors/amd.yaml": """\
pools:
  - {name: mi, model: MI250X, devicesPerNode: 8, nodes: [amd-1]}
  - {name: mj, model: MI250X, devicesPerNode: 8, nodeCount: 1, taints: []}
""",
    }
    components = node_config.build(view_of(tmp_path, files, NODE_PATCH_FLEET))
    assert [c.name for c in components] == ["node-config/amd", "node-config/ascend"]
    assert [c.objects for c in components] == [
        [
            node(
                "amd-1",
                {"accelerator": "amd-gpu", "gpu-brand": "amd", "gpu-model": "MI250X"},
                [{"key": NFD + "accelerator", "value": "amd-gpu", "effect": "NoSchedule"}],
                "values/vendors/amd.yaml",
            )
        ],
        [
            node(
                "npu-1",
                {"accelerator": "huawei-npu", "gpu-brand": "huawei", "npu-model": "910b"},
                [{"key": NFD + "accelerator", "value": "huawei-npu", "effect": "NoSchedule"}],
                "values/vendors/ascend.yaml",
            )
        ],
    ]


# ---- RuntimeClass where a vendor's runtime is not the node's default (issue 19) -----------------

RUNTIME_TEAM = """\
quota: {nvidia: 4, ascend: 8}
jobs:
  train:
    vendor: nvidia
    devices: 1
    images: {nvidia: r/t:1}
  prep:
    vendor: nvidia
    devices: 0
    images: {nvidia: r/t:1}
  npu:
    vendor: ascend
    devices: 8
    images: {ascend: r/t:1}
"""


def test_a_vendor_runtime_class_is_rendered_and_named_by_its_pods_with_devices(
    tmp_path: Path,
) -> None:
    files = {
        "vendors/nvidia.yaml": "runtimeClass: nvidia-rt\n" + NVIDIA,
        "vendors/ascend.yaml": ASCEND_910B,
        "teams/ml.yaml": RUNTIME_TEAM,
    }
    out = render_into(tree(tmp_path, files, fleet=PROD_FLEET, defaults=False), tmp_path / "out")
    base = out / "base"
    # Its handler is the catalog's: NVIDIA's runtime as nvidia-ctk names it.
    assert yaml_docs(base / "node-config/nvidia/runtimeclass-nvidia-rt.yaml") == [
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {
                "name": "nvidia-rt",
                "annotations": {"accel-gitops.io/source": "values/vendors/nvidia.yaml"},
                "labels": MANAGED,
            },
            "handler": "nvidia",
        }
    ]
    assert not list(base.glob("node-config/ascend/runtimeclass-*"))

    def runtime_of(path: str) -> object:
        (doc,) = yaml_docs(base / path)
        spec = doc["spec"]["template"]["spec"]
        return spec.get("runtimeClassName")

    assert (
        runtime_of("device-plugins/nvidia/daemonset-accelerator-plugins-nvidia-device-plugin.yaml")
        == "nvidia-rt"
    )
    assert (
        runtime_of("monitoring/exporters/nvidia/daemonset-accelerator-exporters-dcgm-exporter.yaml")
        == "nvidia-rt"
    )
    assert runtime_of("workloads/ml/job-ml-train.yaml") == "nvidia-rt"
    # A pod of the vendor that asks for no device needs no runtime of the vendor's.
    assert runtime_of("workloads/ml/job-ml-prep.yaml") is None
    # Ascend's runtime is its nodes' default here (no runtimeClass in its file).
    assert runtime_of("workloads/ml/job-ml-npu.yaml") is None
    assert (
        runtime_of("device-plugins/ascend/daemonset-accelerator-plugins-ascend-device-plugin.yaml")
        is None
    )


def yaml_docs(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]
