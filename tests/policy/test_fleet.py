"""Each fleet check, fed a values tree that breaks it, gives its code at the right file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.policy.registry import CHECKS as REGISTRY
from tests.fixtures import AMD_MI250X, FLEET, HYGON_Z100L, findings, lines, tree

NFD = FLEET + "nodeConfig: {method: nfd}\n"
# Ascend with a pool label that has no prefix: the key is on line 7, column 7.
ASCEND = """\
pools:
  - name: 910b
    model: 910b
    devicesPerNode: 8
    nodes: [npu-1]
    labels:
      accelerator-type: module-910b-8
"""
LONG_TEAM = "a-team-with-a-very-long-name-that-goes-on-and-on-and-on"

# code -> (fleet.yaml, files beside it and the default NVIDIA vendor and team ml (4 of its 8
# GPUs), the finding line expected, prefix match)
CASES: dict[str, tuple[str, dict[str, str], str]] = {
    "REF001": (
        FLEET,
        {"teams/inference.yaml": "quota:\n  nvidia: 2\n  kunlun: 2\n"},
        "values/teams/inference.yaml:3:3: REF001 quota names vendor 'kunlun', which has no "
        "enabled values/vendors/kunlun.yaml (at $.quota.kunlun)",
    ),
    "CAP001": (
        FLEET,
        {
            "teams/ml.yaml": "quota:\n  nvidia: 8\n",
            "teams/inference.yaml": "quota: {nvidia: 4}\n",
            # Staging holds the quotas: only prod overflows.
            "environments/staging.yaml": "teams:\n  ml:\n    quota: {nvidia: 4}\n",
        },
        "values/teams/ml.yaml:2:11: CAP001 quotas for nvidia (nvidia.com/gpu) add up to 12 "
        "devices (inference 4, ml 8) but its pools hold 8 in environment 'prod' "
        "(at $.quota.nvidia)",
    ),
    "RES001": (
        FLEET,
        {
            "vendors/amd.yaml": AMD_MI250X,
            "vendors/hygon.yaml": "resourceName: amd.com/gpu\nnodeLabels: {accelerator: amd-gpu}\n"
            "devicePlugin: {image: r/dcu, version: v1}\n"
            "pools:\n  - {name: z100l, model: Z100L, devicesPerNode: 8, nodes: [dcu-1]}\n",
        },
        "values/vendors/hygon.yaml:2:27: RES001 hygon and amd both advertise amd.com/gpu, and "
        "hygon's selector accelerator=amd-gpu also matches amd's pool 'mi250x'",
    ),
    "RES002": (
        FLEET,
        {
            "vendors/amd.yaml": AMD_MI250X,
            "vendors/hygon.yaml": HYGON_Z100L,
            "teams/inference.yaml": "quota:\n  hygon: 4\n  amd: 4\n",
        },
        "values/teams/inference.yaml:2:3: RES002 quota for amd and hygon, which both advertise "
        "amd.com/gpu",
    ),
    "NAME003": (
        FLEET,
        {
            "vendors/amd.yaml": AMD_MI250X.replace("amd-1", "dcu-1"),
            "vendors/hygon.yaml": HYGON_Z100L,
        },
        "values/vendors/hygon.yaml:8:9: NAME003 node 'dcu-1' is in pool hygon/z100l and in "
        "amd/mi250x",
    ),
    "NAME004": (
        FLEET,
        {"teams/inference.yaml": "namespaces: [ml]\nquota: {nvidia: 2}\n"},
        "values/teams/inference.yaml:1:14: NAME004 namespace 'ml' is already used by team 'ml'",
    ),
    "NAME007": (
        FLEET,
        {"teams/inference.yaml": "namespaces: [inference, kube-system]\nquota: {nvidia: 2}\n"},
        "values/teams/inference.yaml:1:25: NAME007 team 'inference' claims namespace "
        "'kube-system', which belongs to Kubernetes system components (at $.namespaces[1]); give "
        "the team its own namespace",
    ),
    "NAME008": (
        FLEET,
        {
            "vendors/nvidia-a800.yaml": "catalog: nvidia\npools:\n  - {name: a800, model: A800, "
            "devicesPerNode: 8, nodes: [a800-01]}\n"
        },
        "values/vendors/nvidia-a800.yaml:1:1: NAME008 DaemonSet "
        "accelerator-plugins/nvidia-device-plugin would be emitted twice, by vendor 'nvidia' ",
    ),
    "VER001": (
        FLEET.replace('"1.33"', '"1.19"'),
        {},
        "values/fleet.yaml:2:20: VER001 kubernetesVersion '1.19' is outside the versions the "
        "pinned schemas cover",
    ),
    "NODE001": (
        FLEET + "nodeConfig: {method: node-patch}\n",
        {
            "vendors/amd.yaml": "pools:\n  - {name: mi250x, model: MI250X, devicesPerNode: 8, "
            "nodeCount: 2}\n",
        },
        "values/vendors/amd.yaml:2:5: NODE001 pool 'mi250x' lists no nodes, so node-patch cannot "
        "label it",
    ),
    "NODE002": (
        NFD,
        {
            "vendors/nvidia.yaml": "pools:\n  - {name: b200, model: B200, devicesPerNode: 8, "
            "nodes: [n1]}\n"
        },
        "values/vendors/nvidia.yaml:2:25: NODE002 pool 'b200': model 'B200' has no known PCI "
        "device IDs for nvidia, so no NFD rule can find its nodes",
    ),
    "NODE003": (
        NFD,
        {"vendors/ascend.yaml": ASCEND},
        "values/vendors/ascend.yaml:7:7: NODE003 warning: pool '910b' label 'accelerator-type' "
        "has no prefix: nfd-master sets it as 'feature.node.kubernetes.io/accelerator-type'",
    ),
    "NODE004": (
        FLEET,
        {
            "vendors/nvidia.yaml": "taints:\n  - {key: example.com/gpu, effect: NoSchedule}\n"
            "  - {key: example.com/gpu, value: x, effect: NoSchedule}\npools:\n"
            "  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1]}\n"
        },
        "values/vendors/nvidia.yaml:3:5: NODE004 vendor nvidia taints repeat "
        "example.com/gpu:NoSchedule (first at taints[0]); the API server refuses such a Node",
    ),
    "CAP002": (
        FLEET,
        {"vendors/amd.yaml": "pools:\n  - {name: mi250x, model: MI250X, devicesPerNode: 8}\n"},
        "values/vendors/amd.yaml:2:5: CAP002 warning: pool 'mi250x' has no nodes and no "
        "nodeCount, so it adds no capacity",
    ),
    "NAME005": (
        FLEET,
        {f"teams/{LONG_TEAM}.yaml": "quota: {}\n"},
        # fleet.yaml's `name: f`; f-staging-team- and the team's 55 characters.
        f"values/fleet.yaml:1:7: NAME005 Application name 'f-staging-team-{LONG_TEAM}' is 70 "
        "characters",
    ),
}


def test_every_registered_check_has_a_case() -> None:
    # Workload (WKL, MIG, POD), monitoring (MON) and scheduling (SCH) checks are tested beside
    # their modules.
    own = ("WKL", "MIG", "POD", "MON", "SCH")
    assert {c for c in REGISTRY if not c.startswith(own)} == set(CASES)


@pytest.mark.parametrize("code", sorted(CASES))
def test_check_reports_its_code_at_the_right_place(code: str, tmp_path: Path) -> None:
    fleet, files, expected = CASES[code]
    got = lines(tree(tmp_path, files, fleet=fleet))
    assert any(g.startswith(expected) for g in got), "\n".join(got)


def test_the_seed_has_only_warnings(values_dir: Path) -> None:
    found = findings(values_dir)
    assert {(f.code, f.severity.value) for f in found} == {
        ("CAP001", "warning"),
        ("NODE003", "warning"),
    }


def test_the_seed_dcu_and_amd_share_amd_com_gpu_but_are_told_apart(tmp_path: Path) -> None:
    values = tree(
        tmp_path, {"vendors/amd.yaml": AMD_MI250X, "vendors/hygon.yaml": HYGON_Z100L}, fleet=NFD
    )
    assert "RES001" not in {f.code for f in findings(values)}


def test_nfd_pools_of_one_vendor_need_names_when_devices_are_shared(tmp_path: Path) -> None:
    # Two A100 pools match the same device IDs: without node names NFD labels each node as both.
    nvidia = (
        "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, nodeCount: 2}\n"
        "  - {name: a100-big, model: A100, devicesPerNode: 8, nodes: [big-01]}\n"
        "  - {name: h100, model: H100, devicesPerNode: 8, nodeCount: 1}\n"
    )
    values_dir = tree(tmp_path, {"vendors/nvidia.yaml": nvidia}, fleet=NFD)
    got = [g for g in lines(values_dir) if "NODE001" in g]
    assert len(got) == 1, got
    assert got[0].startswith(
        "values/vendors/nvidia.yaml:2:5: NODE001 pool 'a100' matches the same PCI devices as "
        "pool 'a100-big' and lists no nodes"
    ), got


def test_nfd_pools_with_different_models_need_no_names(tmp_path: Path) -> None:
    nvidia = (
        "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, nodeCount: 2}\n"
        "  - {name: h100, model: H100, devicesPerNode: 8, nodeCount: 1}\n"
    )
    values_dir = tree(tmp_path, {"vendors/nvidia.yaml": nvidia}, fleet=NFD)
    assert not [g for g in lines(values_dir) if "NODE00" in g and "nvidia" in g]


def test_pci_devices_make_an_unknown_model_usable(tmp_path: Path) -> None:
    nvidia = (
        "pools:\n  - {name: b200, model: B200, devicesPerNode: 8, nodes: [n1], "
        "pciDevices: ['2901']}\n"
    )
    values_dir = tree(tmp_path, {"vendors/nvidia.yaml": nvidia}, fleet=NFD)
    assert not [g for g in lines(values_dir) if "NODE002" in g]


def test_a_vendor_outside_the_catalog_needs_a_pci_vendor(tmp_path: Path) -> None:
    iluvatar = (
        "resourceName: iluvatar.ai/gpu\nselectorLabel: accelerator\nmodelLabel: gpu-model\n"
        "nodeLabels: {accelerator: iluvatar-gpu}\n"
        "taints: [{key: feature.node.kubernetes.io/accelerator, value: iluvatar, effect: NoSchedule}]\n"
        "devicePlugin: {name: p, image: r/p, version: v1, namespace: accelerator-plugins,\n"
        "  volumes: [{name: dp, hostPath: {path: /var/lib/kubelet/device-plugins}}],\n"
        "  volumeMounts: [{name: dp, mountPath: /var/lib/kubelet/device-plugins}]}\n"
        "pools:\n  - {name: bi150, model: BI-V150, devicesPerNode: 8, nodes: [n1], "
        "pciDevices: ['0001']}\n"
    )
    values_dir = tree(tmp_path, {"vendors/iluvatar.yaml": iluvatar}, fleet=NFD)
    got = [g for g in lines(values_dir) if "NODE002" in g]
    assert got and got[0].startswith(
        "values/vendors/iluvatar.yaml:1:1: NODE002 vendor iluvatar has no pciVendor"
    ), got


def test_unknown_model_is_fine_without_nfd(tmp_path: Path) -> None:
    # Under nfd both would be found (NODE002, NODE003 above); node-patch labels nodes by name.
    nvidia = "pools:\n  - {name: b200, model: B200, devicesPerNode: 8, nodes: [n1]}\n"
    values_dir = tree(
        tmp_path,
        {"vendors/nvidia.yaml": nvidia, "vendors/ascend.yaml": ASCEND},
        fleet=NFD.replace("method: nfd", "method: node-patch"),
    )
    got = lines(values_dir)
    assert not [g for g in got if "NODE002" in g or "NODE003" in g], got


def test_one_finding_per_place_even_across_environments(tmp_path: Path) -> None:
    # Two environments (FLEET), one place.
    values_dir = tree(tmp_path, {"teams/inference.yaml": "quota:\n  kunlun: 2\n"})
    assert sum("REF001" in g for g in lines(values_dir)) == 1


def test_duplicate_taints_are_told_once_at_whose_list_repeats_them(tmp_path: Path) -> None:
    pool = "  - {{name: {0}, model: A100, devicesPerNode: 4, nodes: [{0}-01]{1}}}\n"
    twice = (
        "[{key: a.example.com/x, effect: NoSchedule}, {key: a.example.com/x, effect: NoSchedule}]"
    )
    # The vendor's list, inherited by two pools: one finding, at the vendor's second taint.
    values_dir = tree(
        tmp_path,
        {
            "vendors/nvidia.yaml": f"taints: {twice}\npools:\n"
            + pool.format("a", "")
            + pool.format("b", "")
        },
    )
    got = [g for g in lines(values_dir) if " NODE004 " in g]
    assert len(got) == 1 and got[0].startswith("values/vendors/nvidia.yaml:1:"), got
    assert "(at $.taints[1])" in got[0]
    # A pool's own list: at the pool's taint; the other pool inherits nothing repeated.
    nvidia = "pools:\n" + pool.format("a", f", taints: {twice}") + pool.format("b", "")
    tree(tmp_path, {"vendors/nvidia.yaml": nvidia})
    got = [g for g in lines(values_dir) if " NODE004 " in g]
    assert len(got) == 1 and "pool 'a' taints repeat" in got[0], got
    assert "(at $.pools[0].taints[1])" in got[0]
    # The same key with another effect is two taints, as Kubernetes counts them.
    other = twice.replace("effect: NoSchedule}]", "effect: NoExecute}]")
    tree(tmp_path, {"vendors/nvidia.yaml": f"taints: {other}\npools:\n" + pool.format("a", "")})
    assert [g for g in lines(values_dir) if " NODE004 " in g] == []
