"""Node Feature Discovery's own code decides what the rendered NodeFeatureRules do.

The rules are rendered from values, built with the real kustomize (what Argo CD applies), and run
by nfd-rulecheck (generator/toolchain/gotools/nfd/cmd/nfd-rulecheck: NFD v0.19.0's validate package and
nodefeaturerule.Execute, as nfd-master uses them) against the PCI inventories of real server
types (generator/values/inventories). Each node must get exactly its pool's labels and taints, and a
server without accelerators none at all.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from generator.render.stage import RenderOptions, render
from generator.values import inventory
from tests.fixtures import FLEET as TWO_ENVS
from tests.fixtures import invoke, kustomize_text, ml_tree, tool, tree

NFD = "feature.node.kubernetes.io/"

FLEET = """\
name: lab
kubernetesVersion: "1.33"
environments: [lab]
git: {repoURL: https://git.example.com/lab.git, targetRevision: main}
nodeConfig: {method: nfd}
"""

# One pool per accelerator inventory; the H100 pool shares nothing with the A100 pool but the
# vendor ID, so only the device IDs can tell the two servers apart.
VENDORS = {
    "nvidia.yaml": "pools:\n"
    "  - {name: a100, model: A100, devicesPerNode: 8, nodeCount: 1}\n"
    "  - {name: h100, model: H100, devicesPerNode: 8, nodeCount: 1}\n",
    "amd.yaml": "pools:\n  - {name: mi250x, model: MI250X, devicesPerNode: 8, nodeCount: 1}\n"
    "  - {name: mi300x, model: MI300X, devicesPerNode: 8, nodeCount: 1}\n",
    "ascend.yaml": "pools:\n  - {name: 910b, model: 910b, devicesPerNode: 8, nodeCount: 1}\n",
    "hygon.yaml": "devicePlugin: {image: r.example.com/dcu, version: v1}\n"
    "exporter: {daemonSet: {image: r.example.com/dcu-exporter}}\n"
    "pools:\n  - {name: z100l, model: Z100L, devicesPerNode: 8, nodeCount: 1}\n"
    "  - {name: k100, model: K100, devicesPerNode: 8, nodeCount: 1}\n"
    "  - {name: k100-ai, model: K100-AI, devicesPerNode: 8, nodeCount: 1}\n",
    "cambricon.yaml": "devicePlugin: {image: r.example.com/mlu, version: v1}\n"
    "exporter: {daemonSet: {image: r.example.com/mlu-exporter}}\n"
    "pools:\n  - {name: mlu370, model: MLU370, devicesPerNode: 8, nodeCount: 1}\n",
}


def taint(value: str) -> list[dict[str, str]]:
    return [{"key": NFD + "accelerator", "value": value, "effect": "NoSchedule"}]


def labels(accelerator: str, brand: str, model_label: str, model: str) -> dict[str, str]:
    return {
        NFD + "accelerator": accelerator,
        NFD + "gpu-brand": brand,
        NFD + model_label: model,
    }


# server type -> (labels, taints) NFD must set on it
EXPECTED: dict[str, tuple[dict[str, str], list[dict[str, str]]]] = {
    "x86-a100": (labels("nvidia-gpu", "nvidia", "gpu-model", "A100"), taint("nvidia-gpu")),
    "x86-h100": (labels("nvidia-gpu", "nvidia", "gpu-model", "H100"), taint("nvidia-gpu")),
    "amd-mi250x": (labels("amd-gpu", "amd", "gpu-model", "MI250X"), taint("amd-gpu")),
    "amd-mi300x": (labels("amd-gpu", "amd", "gpu-model", "MI300X"), taint("amd-gpu")),
    "kunpeng-ascend-910b": (
        labels("huawei-npu", "huawei", "npu-model", "910b"),
        taint("huawei-npu"),
    ),
    "hygon-dcu-z100l": (labels("hygon-dcu", "hygon", "dcu-model", "Z100L"), taint("hygon-dcu")),
    "hygon-dcu-k100": (labels("hygon-dcu", "hygon", "dcu-model", "K100"), taint("hygon-dcu")),
    "hygon-dcu-k100-ai": (
        labels("hygon-dcu", "hygon", "dcu-model", "K100-AI"),
        taint("hygon-dcu"),
    ),
    "cambricon-mlu370": (
        labels("cambricon-mlu", "cambricon", "mlu-model", "MLU370"),
        taint("cambricon-mlu"),
    ),
    "hygon-cpu": ({}, []),
    "kunpeng-cpu": ({}, []),
    "x86-cpu": ({}, []),
}


def nodes_file(folder: Path, extra: dict[str, str] | None = None) -> Path:
    """A node per server type, named after it; `extra`: more nodes, name -> server type."""
    path = folder / "nodes.yaml"
    nodes = [(n, inventory.load(n)) for n in inventory.names()]
    nodes += [(name, inventory.load(server)) for name, server in (extra or {}).items()]
    path.write_text(inventory.node_features_text(nodes), encoding="utf-8")
    return path


def rulecheck(*files: Path, enable_taints: bool = True) -> dict[str, Any]:
    proc = subprocess.run(
        [
            str(tool("nfd-rulecheck")),
            f"-enable-taints={str(enable_taints).lower()}",
            *map(str, files),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def built_node_config(values_dir: Path, out: Path, env: str) -> Path:
    """The node-config unit rendered from values and built by kustomize, as a file."""
    render(RenderOptions(values_dir=values_dir, out_dir=out))
    path = out / "node-config.built.yaml"
    path.write_text(kustomize_text(out / "overlays" / env / "node-config"), encoding="utf-8")
    return path


@pytest.fixture
def lab(tmp_path: Path) -> Path:
    files = {f"vendors/{name}": text for name, text in VENDORS.items()}
    return tree(tmp_path / "repo", files, fleet=FLEET, defaults=False)


def test_every_server_gets_exactly_its_pools_labels_and_taints(lab: Path, tmp_path: Path) -> None:
    result = rulecheck(built_node_config(lab, tmp_path / "out", "lab"), nodes_file(tmp_path))
    assert result["nfdVersion"] == "v0.19.0"
    assert result["ruleErrors"] == []
    assert set(EXPECTED) <= set(result["nodes"])
    for server, (want_labels, want_taints) in EXPECTED.items():
        node = result["nodes"][server]
        assert node["refused"] == [], server
        assert node["labels"] == want_labels, server
        assert node["taints"] == want_taints, server


def test_an_h100_server_is_not_labelled_a100(lab: Path, tmp_path: Path) -> None:
    # Only an A100 pool: the H100 server (same vendor, same class) must get nothing at all.
    (lab / "vendors" / "nvidia.yaml").write_text(
        "pools:\n  - {name: a100, model: A100, devicesPerNode: 8, nodeCount: 1}\n"
    )
    result = rulecheck(built_node_config(lab, tmp_path / "out", "lab"), nodes_file(tmp_path))
    assert result["nodes"]["x86-h100"]["labels"] == {}
    assert result["nodes"]["x86-h100"]["taints"] == []
    assert result["nodes"]["x86-a100"]["labels"][NFD + "gpu-model"] == "A100"


def test_without_enable_taints_nfd_sets_no_taints(lab: Path, tmp_path: Path) -> None:
    built = built_node_config(lab, tmp_path / "out", "lab")
    result = rulecheck(built, nodes_file(tmp_path), enable_taints=False)
    assert result["nodes"]["x86-a100"]["taints"] == []
    assert result["nodes"]["x86-a100"]["labels"] == EXPECTED["x86-a100"][0]


def test_the_example_fleet_labels_and_taints_only_its_pools(
    values_dir: Path, tmp_path: Path
) -> None:
    # The example's two A100 vendors (nvidia, and nvidia-shared's time-sliced GPUs) match the
    # same device IDs, so their rules also match node names: an A100 server by another name
    # (x86-a100) gets neither vendor's labels.
    a100 = {"nvidia-node-01": "x86-a100", "nvidia-node-03": "x86-a100"}
    result = rulecheck(
        built_node_config(values_dir, tmp_path / "out", "staging"), nodes_file(tmp_path, a100)
    )
    assert result["ruleErrors"] == []
    nodes = result["nodes"]
    for server, node in nodes.items():
        assert node["refused"] == [], server
    # The seed's pools, all in staging's one cluster: A100 (whole and shared), MI250X, 910b
    # (with its accelerator-type label), Z100L, MLU370.
    assert (nodes["nvidia-node-01"]["labels"], nodes["nvidia-node-01"]["taints"]) == EXPECTED[
        "x86-a100"
    ]
    assert (nodes["nvidia-node-03"]["labels"], nodes["nvidia-node-03"]["taints"]) == (
        labels("nvidia-gpu-shared", "nvidia", "gpu-model", "A100"),
        taint("nvidia-gpu"),
    )
    assert (nodes["x86-a100"]["labels"], nodes["x86-a100"]["taints"]) == ({}, [])
    for server in ("amd-mi250x", "hygon-dcu-z100l", "cambricon-mlu370"):
        assert (nodes[server]["labels"], nodes[server]["taints"]) == EXPECTED[server], server
    ascend = nodes["kunpeng-ascend-910b"]
    assert ascend["labels"] == {
        **EXPECTED["kunpeng-ascend-910b"][0],
        NFD + "accelerator-type": "module-910b-8",
    }
    assert ascend["taints"] == taint("huawei-npu")
    # The seed's one H100 pool is claimed by DRA (nvidia-dra), alone on H100's device IDs: the
    # H100 server gets its labels, certainly not A100's.
    assert (nodes["x86-h100"]["labels"], nodes["x86-h100"]["taints"]) == (
        labels("nvidia-gpu-dra", "nvidia", "gpu-model", "H100"),
        taint("nvidia-gpu"),
    )
    for server in ("hygon-cpu", "kunpeng-cpu", "x86-cpu"):
        assert (nodes[server]["labels"], nodes[server]["taints"]) == ({}, []), server


# ---- negative: the same code refuses what the old rules did, and can fail ---------------------

VENDOR_ONLY_RULE = """\
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata: {name: vendor-only}
spec:
  rules:
    - name: hygon-by-vendor
      labels: {accelerator: hygon-dcu}
      matchFeatures:
        - feature: pci.device
          matchExpressions: {vendor: {op: In, value: ["1d94"]}}
    - name: huawei-by-vendor-and-class
      labels: {npu: "true"}
      matchFeatures:
        - feature: pci.device
          matchExpressions:
            vendor: {op: In, value: ["19e5"]}
            class: {op: InRegexp, value: ["^03", "^12"]}
"""


def test_a_vendor_only_match_labels_the_cpu_only_servers(tmp_path: Path) -> None:
    # What the generator rendered before: 1d94 is also the Hygon CPU's root complex and bridges,
    # and 19e5 with an accelerator class is also Huawei's iBMC VGA and Kunpeng's ZIP engine.
    rule = tmp_path / "rule.yaml"
    rule.write_text(VENDOR_ONLY_RULE)
    nodes = rulecheck(rule, nodes_file(tmp_path))["nodes"]
    assert nodes["hygon-cpu"]["labels"] == {NFD + "accelerator": "hygon-dcu"}
    assert nodes["kunpeng-cpu"]["labels"] == {NFD + "npu": "true"}
    assert nodes["x86-cpu"]["labels"] == {}


def test_nfd_refuses_an_unprefixed_taint_key(tmp_path: Path) -> None:
    rule = tmp_path / "rule.yaml"
    rule.write_text(
        "apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\n"
        "metadata: {name: old}\nspec:\n  rules:\n    - name: nvidia\n"
        "      labels: {accelerator: nvidia-gpu}\n"
        "      taints: [{key: accelerator, value: nvidia-gpu, effect: NoSchedule}]\n"
        "      matchFeatures:\n        - feature: pci.device\n"
        "          matchExpressions: {vendor: {op: In, value: ['10de']}, "
        "device: {op: In, value: ['20b2']}}\n"
    )
    result = rulecheck(rule, nodes_file(tmp_path))
    assert [e["error"] for e in result["ruleErrors"]] == [
        "invalid taint accelerator=nvidia-gpu:NoSchedule: unprefixed keys are not allowed"
    ]
    a100 = result["nodes"]["x86-a100"]
    assert a100["taints"] == []  # dropped, as nfd-master's filterTaints does
    assert [r["error"] for r in a100["refused"]] == [
        "ignoring taint: unprefixed keys are not allowed"
    ]
    assert a100["labels"] == {NFD + "accelerator": "nvidia-gpu"}


def test_nfd_refuses_labels_in_kubernetes_io_namespaces(tmp_path: Path) -> None:
    rule = tmp_path / "rule.yaml"
    rule.write_text(
        "apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\n"
        "metadata: {name: ns}\nspec:\n  rules:\n    - name: role\n"
        "      labels: {node-role.kubernetes.io/gpu: 'true', example.com/gpu: 'true'}\n"
        "      matchFeatures:\n        - feature: pci.device\n"
        "          matchExpressions: {device: {op: In, value: ['20b2']}}\n"
    )
    result = rulecheck(rule, nodes_file(tmp_path))
    assert [e["error"] for e in result["ruleErrors"]] == [
        'invalid label "node-role.kubernetes.io/gpu":"true" namespace is not allowed'
    ]
    assert result["nodes"]["x86-a100"]["labels"] == {"example.com/gpu": "true"}


# ---- validate: NFD001 at the values line ------------------------------------------------------


def nfd_tree(tmp_path: Path, files: dict[str, str] | None = None) -> Path:
    """A small tree labelled by NFD: staging and prod, NVIDIA (8 GPUs) unless `files` says
    otherwise, team ml-team."""
    return ml_tree(tmp_path, files, fleet=TWO_ENVS + "nodeConfig: {method: nfd}\n")


def validate_json(values_dir: Path) -> tuple[int, dict[str, Any]]:
    invoke("render", "--values", str(values_dir))  # what validate checks
    res = invoke(
        "validate", "--values", str(values_dir), "--no-cache", "--no-drift", "--output", "json"
    )
    return res.exit_code, json.loads(res.output)


def test_validate_reports_an_unprefixed_taint_at_the_vendor_file(tmp_path: Path) -> None:
    nvidia = (
        "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, "
        "nodes: [nvidia-node-01, nvidia-node-02]}\n"
        "taints:\n  - {key: accelerator, value: nvidia-gpu, effect: NoSchedule}\n"
    )
    values_dir = nfd_tree(tmp_path, {"vendors/nvidia.yaml": nvidia})
    code, doc = validate_json(values_dir)
    assert code == 1
    nfd = [f for f in doc["findings"] if f["code"] == "NFD001"]
    assert len(nfd) == 1, nfd  # once, though both environments render the rule
    assert (nfd[0]["file"], nfd[0]["line"], nfd[0]["path"]) == (
        "values/vendors/nvidia.yaml",
        3,
        "$.taints",
    )
    assert "unprefixed keys are not allowed" in nfd[0]["message"]
    assert nfd[0]["hint"] == (
        "give the taint key a prefix NFD accepts (e.g. feature.node.kubernetes.io/<name> or "
        "example.com/<name>; not kubernetes.io or a subdomain of it)"
    )


def test_a_k8s_io_prefix_is_one_nfd_accepts(tmp_path: Path) -> None:
    """NFD v0.19.0 refuses only kubernetes.io and its subdomains (validate.go Label, Taint): a
    k8s.io label and taint are set as written, so validate reports nothing."""
    nvidia = (
        "pools:\n  - name: a100\n    model: A100\n    devicesPerNode: 4\n"
        "    nodes: [nvidia-node-01, nvidia-node-02]\n    labels: {gpu.k8s.io/class: train}\n"
        "taints:\n  - {key: gpu.k8s.io/accelerator, value: nvidia-gpu, effect: NoSchedule}\n"
    )
    code, doc = validate_json(nfd_tree(tmp_path, {"vendors/nvidia.yaml": nvidia}))
    assert [f for f in doc["findings"] if f["code"] == "NFD001"] == []
    assert code == 0, doc["findings"]


def test_a_committed_rule_nfd_refuses_is_reported_even_when_the_values_have_errors(
    tmp_path: Path,
) -> None:
    # What Argo CD applies is the committed tree: a rule there that nfd-master refuses is told
    # even while a values error keeps validate from rendering, at the committed file.
    values_dir = nfd_tree(tmp_path)
    assert invoke("render", "--values", str(values_dir)).exit_code == 0
    rule = values_dir.parent / "base/node-config/nvidia/nodefeaturerule-accel-nvidia.yaml"
    text = rule.read_text(encoding="utf-8")
    prefixed = "key: feature.node.kubernetes.io/accelerator\n      value: nvidia-gpu"
    assert prefixed in text
    rule.write_text(text.replace(prefixed, "key: accelerator\n      value: nvidia-gpu", 1))
    (values_dir / "teams/broken.yaml").write_text("quota: {nvidia: -1}\n")
    res = invoke(
        "validate", "--values", str(values_dir), "--no-cache", "--no-drift", "--output", "json"
    )
    doc = json.loads(res.output)
    assert res.exit_code == 1 and any(
        f["file"] == "values/teams/broken.yaml" for f in doc["findings"]
    )
    nfd = [f for f in doc["findings"] if f["code"] == "NFD001"]
    assert [(f["file"], f["path"]) for f in nfd] == [
        ("base/node-config/nvidia/nodefeaturerule-accel-nvidia.yaml", "$.spec.rules")
    ]
    assert "unprefixed keys are not allowed" in nfd[0]["message"]


def test_validate_reports_a_refused_pool_label_at_its_line(tmp_path: Path) -> None:
    amd = (
        "pools:\n  - name: mi250x\n    model: MI250X\n    devicesPerNode: 8\n"
        "    nodes: [amd-node-01]\n    labels:\n      node-role.kubernetes.io/gpu: 'true'\n"
    )
    values_dir = nfd_tree(tmp_path, {"vendors/amd.yaml": amd})
    code, doc = validate_json(values_dir)
    nfd = [f for f in doc["findings"] if f["code"] == "NFD001"]
    assert code == 1 and len(nfd) == 1, nfd
    assert (nfd[0]["file"], nfd[0]["line"]) == ("values/vendors/amd.yaml", 7)
    assert "namespace is not allowed" in nfd[0]["message"]


def test_the_example_fleet_has_no_nfd_findings(values_dir: Path) -> None:
    code, doc = validate_json(values_dir)
    assert code == 0
    assert not [f for f in doc["findings"] if f["code"].startswith("NFD")]
