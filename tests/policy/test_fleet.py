"""Each fleet check, fed a values tree that breaks it, gives its code at the right file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.policy.registry import CHECKS as REGISTRY
from generator.toolchain import schemas as tool_schemas
from tests.fixtures import (
    AMD_MI250X,
    ASCEND_910B,
    DRA_NVIDIA,
    FLEET,
    HYGON_Z100L,
    NVIDIA,
    PROD_FLEET,
    SHARED_NVIDIA,
    SPLIT_NVIDIA,
    TWO_CLUSTERS,
    TWO_CLUSTERS_ML,
    findings,
    lines,
    tree,
)

NFD = FLEET + "nodeConfig: {method: nfd}\n"
# An H100 pool whose nodes declare 64 CPUs, 512Gi and 4 rdma/ib, and a job that needs more.
SHAPED_H100 = """\
pools:
  - {name: h100, model: H100, devicesPerNode: 8, nodes: [n1],
     node: {cpu: 64, memory: 512Gi, resources: {rdma/ib: 4}}}
"""
BIG_JOB = """\
quota: {nvidia: 8}
jobs:
  train:
    vendor: nvidia
    devices: 8
    images: {nvidia: r/train:1}
    resources:
      requests: {cpu: "32", memory: 800Gi}
      limits: {rdma/ib: 8}
"""
# Ascend with a pool label that has no prefix (its key is on line 7, column 7) and one that has.
ASCEND = """\
pools:
  - name: 910b
    model: 910b
    devicesPerNode: 8
    nodes: [npu-1]
    labels:
      accelerator-type: module-910b-8
      example.com/rack: r1
"""
# A vendor outside the built-in catalog, `{id}` its id: what it must say itself (no pciVendor).
OUTSIDE = (
    "resourceName: {id}.ai/gpu\nselectorLabel: accelerator\nmodelLabel: gpu-model\n"
    "nodeLabels: {{accelerator: {id}-gpu}}\n"
    "taints: [{{key: feature.node.kubernetes.io/accelerator, value: {id}, effect: NoSchedule}}]\n"
    "devicePlugin: {{name: {id}-plugin, image: r/p, version: v1, namespace: accelerator-plugins,\n"
    "  volumes: [{{name: dp, hostPath: {{path: /var/lib/kubelet/device-plugins}}}}],\n"
    "  volumeMounts: [{{name: dp, mountPath: /var/lib/kubelet/device-plugins}}]}}\n"
)
LONG_TEAM = "a-team-with-a-very-long-name-that-goes-on-and-on-and-on"
# The Kubernetes versions whose schemas `make tools` laid out, as the tests pretend (VER001).
SCHEMA_VERSIONS = ["1.25.0", "1.26.0", "1.33.0", "1.36.0", "1.37.0"]
NAME008_HINT = (
    "give one of them a name of its own (devicePlugin.name, exporter.name), or drop the duplicate"
)


@pytest.fixture(autouse=True)
def schema_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    """VER001 reads the schema sets laid out under .tools; every test here sees the same ones."""
    monkeypatch.setattr(tool_schemas, "k8s_schema_versions", lambda: list(SCHEMA_VERSIONS))


def of_code(values_dir: Path, code: str) -> list[str]:
    """The findings of one code for a values tree, as `render` prints them."""
    return [g for g in lines(values_dir) if f": {code} " in g]


# code -> (fleet.yaml, files beside it and the default NVIDIA vendor and team ml (4 of its 8
# GPUs), every finding of that code, whole)
CASES: dict[str, tuple[str, dict[str, str], list[str]]] = {
    "PRV001": (
        # AMD's catalog entry names no operator (docs/brownfield.md).
        FLEET,
        {"vendors/amd.yaml": AMD_MI250X + "devicePlugin: {provided: operator}\n"},
        [
            "values/vendors/amd.yaml:3:26: PRV001 vendor amd: devicePlugin.provided is operator, "
            "but its catalog entry names no operator that runs its devicePlugin "
            "(at $.devicePlugin.provided); set devicePlugin.provided: fleet, or "
            "site where the cluster runs it another way (docs/brownfield.md lists the operators "
            "the catalog knows)"
        ],
    ),
    "PRV002": (
        # The GPU Operator runs in staging only: prod has no one to run the exporter.
        FLEET,
        {
            "vendors/nvidia.yaml": NVIDIA + "exporter: {provided: operator}\n",
            "environments/staging.yaml": "fleet:\n  platform: {gpuOperator: {provided: site}}\n",
        },
        [
            "values/vendors/nvidia.yaml:3:22: PRV002 vendor nvidia: exporter.provided is "
            "operator, but this cluster neither renders nor declares the NVIDIA GPU Operator: "
            "nothing would run its exporter in environment 'prod' (at $.exporter.provided); "
            "declare it in values/fleet.yaml (or the environment's file): "
            "platform.gpuOperator.provided: site where the cluster runs it, or fleet to install "
            "it; or set exporter.provided: fleet"
        ],
    ),
    "PRV003": (
        # The label that was the only way to hand the plugin to the fleet, now said in values.
        FLEET + "platform: {gpuOperator: {provided: site}}\n",
        {
            "vendors/nvidia.yaml": "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, "
            "nodes: [n1, n2],\n     labels: {nvidia.com/gpu.deploy.device-plugin: 'true'}}\n"
            "exporter: {provided: operator}\n",
        },
        [
            "values/vendors/nvidia.yaml:3:15: PRV003 vendor nvidia pool 'a100': label "
            "nvidia.com/gpu.deploy.device-plugin=true contradicts devicePlugin.provided: fleet "
            "(fleet provides it): the operator would run a second devicePlugin beside it "
            "(at $.pools[0].labels['nvidia.com/gpu.deploy.device-plugin']); drop the label: the fleet sets nvidia.com/gpu.deploy.device-plugin "
            "from devicePlugin.provided wherever the operator runs"
        ],
    ),
    "PRV004": (
        # NVIDIA's DRA driver runs in staging only (the site's): prod has no one to publish the
        # H100s of the DRA vendor.
        FLEET,
        {
            "vendors/nvidia-dra.yaml": DRA_NVIDIA,
            "environments/staging.yaml": "fleet:\n  platform: {nvidiaDraDriver: {provided: site}}\n",
        },
        [
            "values/vendors/nvidia-dra.yaml:2:1: PRV004 warning: vendor nvidia-dra is allocated "
            "by DRA, but this cluster neither renders nor declares the NVIDIA DRA driver: nothing "
            "is known to publish its devices, and its claims stay pending in environment 'prod' "
            "(at $.allocation); declare it in values/fleet.yaml (or the environment's file): "
            "platform.nvidiaDraDriver.provided: fleet to install it with the tolerations and "
            "affinity the pools need, or site where the cluster runs it (preflight checks that "
            "it reaches the pools' nodes, PRE013); docs/brownfield.md"
        ],
    ),
    "REF001": (
        FLEET,
        {
            "vendors/ascend.yaml": ASCEND_910B,
            "teams/inference.yaml": "quota:\n  nvidia: 2\n  kunlun: 2\n",
        },
        [
            "values/teams/inference.yaml:3:3: REF001 quota names vendor 'kunlun', which has no "
            "enabled values/vendors/kunlun.yaml (at $.quota.kunlun); known vendors: ascend, "
            "nvidia"
        ],
    ),
    "CAP001": (
        FLEET,
        {
            "teams/ml.yaml": "quota:\n  nvidia: 8\n",
            "teams/inference.yaml": "quota: {nvidia: 4}\n",
            # Staging holds the quotas: only prod overflows.
            "environments/staging.yaml": "teams:\n  ml:\n    quota: {nvidia: 4}\n",
        },
        [
            "values/teams/ml.yaml:2:11: CAP001 quotas for nvidia (nvidia.com/gpu) add up to 12 "
            "devices (inference 4, ml 8) but its pools hold 8 in environment 'prod' "
            "(at $.quota.nvidia); lower the quotas, add nodes to the vendor's pools, or allow a "
            "bounded overcommit with capacity.overcommitRatio (e.g. 1.5) in values/fleet.yaml"
        ],
    ),
    "CAP003": (
        # No overcommit setting lets one team's quota exceed what the pools hold.
        FLEET + "capacity: {allowOvercommit: true}\n",
        {"environments/prod.yaml": "teams:\n  ml:\n    quota: {nvidia: 9}\n"},
        [
            "values/environments/prod.yaml:3:21: CAP003 team ml: quota of 9 nvidia devices per "
            "namespace, but the vendor's pools hold 8 in environment 'prod' "
            "(at $.quota.nvidia); lower it to at most 8, or add nodes to nvidia's pools"
        ],
    ),
    "RES001": (
        FLEET,
        {
            "vendors/amd.yaml": AMD_MI250X,
            "vendors/hygon.yaml": "resourceName: amd.com/gpu\nnodeLabels: {accelerator: amd-gpu}\n"
            "devicePlugin: {image: r/dcu, version: v1}\n"
            "pools:\n  - {name: z100l, model: Z100L, devicesPerNode: 8, nodes: [dcu-1]}\n",
        },
        [
            # One pair, one finding (both selectors match the other's pools): at the vendor
            # later in id order, here the one whose file sets the label (AMD's is the catalog's).
            "values/vendors/hygon.yaml:2:27: RES001 hygon and amd both advertise amd.com/gpu, and "
            "hygon's selector accelerator=amd-gpu also matches amd's pool 'mi250x' "
            "(at $.nodeLabels.accelerator); give the two vendors different accelerator values "
            "in nodeLabels",
        ],
    ),
    # NVIDIA's runtime has a handler in the catalog (nvidia); AMD's devices need none.
    "NODE005": (
        FLEET,
        {
            "vendors/amd.yaml": AMD_MI250X + "runtimeClass: rocm\n",
            "vendors/nvidia.yaml": NVIDIA + "runtimeClass: nvidia\n",
        },
        [
            "values/vendors/amd.yaml:3:15: NODE005 runtimeClass 'rocm': vendor 'amd' names no "
            "container runtime of its own (runtime.handler), so a RuntimeClass would have no "
            "handler (at $.runtimeClass); drop runtimeClass (the vendor's devices need no runtime "
            "of their own), or set runtime.handler to the runtime's name in containerd's "
            "configuration"
        ],
    ),
    # The pool's declared node shape is short of the job's memory and rdma/ib (its CPU is not:
    # 32 of 64); the rdma/ib request defaults to its limit.
    "NODE006": (
        FLEET,
        {
            "vendors/nvidia.yaml": SHAPED_H100,
            "teams/ml.yaml": BIG_JOB,
        },
        [
            "values/teams/ml.yaml:8:7: NODE006 Job 'train': its pod asks for memory 800Gi, "
            "rdma/ib 8, more than the nodes it may land on declare (pool nvidia/h100: memory "
            "512Gi, rdma/ib 4): it can never be scheduled (at $.jobs.train.resources); ask for "
            "less, or declare the pool's node shape as its nodes are (the pool's `node`, or its "
            "server type's in values/inventories/: docs/values.md)"
        ],
    ),
    "RES002": (
        FLEET,
        {
            "vendors/amd.yaml": AMD_MI250X,
            "vendors/hygon.yaml": HYGON_Z100L,
            "teams/inference.yaml": "quota:\n  hygon: 4\n  amd: 4\n",
        },
        [
            "values/teams/inference.yaml:2:3: RES002 quota for amd and hygon, which both "
            "advertise amd.com/gpu: a ResourceQuota cannot tell them apart (at $.quota.hygon); "
            "quota one of them, give one vendor its own resourceName, or use "
            "scheduling.backend kueue, whose flavors tell them apart"
        ],
    ),
    "RES003": (
        FLEET + "scheduling: {backend: kueue}\n",
        {"teams/ml.yaml": "quota:\n  nvidia:\n    a100: 2\n    B200: 2\n"},
        [
            "values/teams/ml.yaml:4:5: RES003 team ml: quota for nvidia names model 'B200', "
            "which no pool of nvidia has (at $.quota.nvidia.B200); models of nvidia's pools: "
            "A100; a quota split by cluster needs the clusters declared in the environment's "
            "file"
        ],
    ),
    "RES004": (
        FLEET,
        {"vendors/nvidia.yaml": NVIDIA + "costWeights: {a100: 2, B200: 4}\n"},
        [
            "values/vendors/nvidia.yaml:3:24: RES004 vendor nvidia: costWeights names model "
            "'B200', which no pool of nvidia has (at $.costWeights.B200); models of nvidia's "
            "pools: A100"
        ],
    ),
    "RES005": (
        FLEET + "scheduling: {backend: volcano}\n",
        {"teams/ml.yaml": "quota:\n  nvidia: {A100: 4}\n"},
        [
            "values/teams/ml.yaml:2:3: RES005 team ml: quota for nvidia is per model, and "
            "scheduling.backend volcano counts nvidia.com/gpu whatever the model "
            "(at $.quota.nvidia); give one number (quota: {nvidia: 4}), or use "
            "scheduling.backend kueue, whose flavors count each model apart"
        ],
    ),
    "NAME003": (
        FLEET,
        {
            "vendors/amd.yaml": AMD_MI250X.replace("amd-1", "dcu-1"),
            "vendors/hygon.yaml": HYGON_Z100L,
        },
        [
            "values/vendors/hygon.yaml:8:9: NAME003 node 'dcu-1' is in pool hygon/z100l and in "
            "amd/mi250x (at $.pools[0].nodes[0]); a node belongs to one pool"
        ],
    ),
    "NAME004": (
        FLEET,
        # `a-solo` has one owner: the check goes on to `ml`.
        {"teams/inference.yaml": "namespaces: [a-solo, ml]\nquota: {nvidia: 2}\n"},
        [
            "values/teams/inference.yaml:1:22: NAME004 namespace 'ml' is already used by team "
            "'ml' (at $.namespaces[1]); pick another namespace"
        ],
    ),
    "NAME007": (
        FLEET,
        {"teams/inference.yaml": "namespaces: [inference, kube-system]\nquota: {nvidia: 2}\n"},
        [
            "values/teams/inference.yaml:1:25: NAME007 team 'inference' claims namespace "
            "'kube-system', which belongs to Kubernetes system components (at $.namespaces[1]); "
            "give the team its own namespace"
        ],
    ),
    "NAME008": (
        FLEET,
        {
            "vendors/nvidia-a800.yaml": "catalog: nvidia\npools:\n  - {name: a800, model: A800, "
            "devicesPerNode: 8, nodes: [a800-01]}\n"
        },
        [
            f"values/vendors/nvidia-a800.yaml:1:1: NAME008 {shown} would be emitted twice, by "
            "vendor 'nvidia' (values/vendors/nvidia.yaml:1:1) and by vendor 'nvidia-a800': Argo "
            f"CD would apply one over the other; {NAME008_HINT}"
            for shown in (
                "DaemonSet accelerator-exporters/dcgm-exporter",
                "DaemonSet accelerator-plugins/nvidia-device-plugin",
                "PodMonitor accelerator-monitoring/dcgm-exporter",
            )
        ],
    ),
    "VER001": (
        FLEET.replace('"1.33"', '"1.19"'),
        {},
        [
            "values/fleet.yaml:2:20: VER001 kubernetesVersion '1.19' is outside the versions the "
            "pinned schemas cover (1.25 to 1.37) (at $.kubernetesVersion); set a version from "
            "1.25 to 1.37 (the Kubernetes versions this accel-gitops has schemas for)"
        ],
    ),
    # Kueue v0.17.0 requires Kubernetes 1.29 or newer (its README); the fleet renders it here.
    "KVER003": (
        FLEET.replace('"1.33"', '"1.28"') + "platform:\n  kueue: {provided: fleet}\n",
        {},
        [
            "values/fleet.yaml:2:20: KVER003 the fleet renders Kueue 0.17.0 for this cluster, "
            "which its upstream supports on Kubernetes 1.29 and newer; this cluster's "
            "kubernetesVersion is 1.28 (at $.kubernetesVersion); set kubernetesVersion to 1.29 "
            "or newer, or platform.kueue.provided: site where the cluster runs a Kueue that "
            "supports its minor"
        ],
    ),
    "NODE001": (
        FLEET + "nodeConfig: {method: node-patch}\n",
        {
            "vendors/amd.yaml": "pools:\n  - {name: mi250x, model: MI250X, devicesPerNode: 8, "
            "nodeCount: 2}\n",
        },
        [
            "values/vendors/amd.yaml:2:5: NODE001 pool 'mi250x' lists no nodes, so node-patch "
            "cannot label it (at $.pools[0]); list the pool's nodes, or use nodeConfig.method: nfd"
        ],
    ),
    "NODE002": (
        NFD,
        {
            "vendors/nvidia.yaml": "pools:\n  - {name: b200, model: B200, devicesPerNode: 8, "
            "nodes: [n1]}\n"
        },
        [
            "values/vendors/nvidia.yaml:2:25: NODE002 pool 'b200': model 'B200' has no known PCI "
            "device IDs for nvidia, so no NFD rule can find its nodes (a rule on the vendor ID "
            "10de alone would also match the vendor's other functions, such as CPU bridges or a "
            "BMC's VGA) (at $.pools[0].model); set pciDevices on the pool to the device IDs its "
            "nodes show as [10de:<device>] in `lspci -nn`, or use a model the catalog knows: "
            "A100, A800, H100, H200, H800"
        ],
    ),
    "NODE003": (
        NFD,
        {"vendors/ascend.yaml": ASCEND},
        [
            "values/vendors/ascend.yaml:7:7: NODE003 warning: pool '910b' label "
            "'accelerator-type' has no prefix: nfd-master sets it as "
            "'feature.node.kubernetes.io/accelerator-type'. The selectors rendered here use that "
            "key, but anything that reads 'accelerator-type' itself will not find it (Ascend's "
            "Volcano plugin reads accelerator-type: mind-cluster v7.3.2 "
            "component/ascend-for-volcano/common/util/type.go) "
            "(at $.pools[0].labels['accelerator-type']); label those nodes another way (kubelet "
            "--node-labels, or nodeConfig.method: node-patch), or drop the label if nothing "
            "outside reads it"
        ],
    ),
    "NODE004": (
        FLEET,
        {
            "vendors/nvidia.yaml": "taints:\n  - {key: example.com/gpu, effect: NoSchedule}\n"
            "  - {key: example.com/gpu, value: x, effect: NoSchedule}\npools:\n"
            "  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1]}\n"
        },
        [
            "values/vendors/nvidia.yaml:3:5: NODE004 vendor nvidia taints repeat "
            "example.com/gpu:NoSchedule (first at taints[0]); the API server refuses such a Node, "
            "so none of its taints would be set (at $.taints[1]); keep one taint per key and "
            "effect"
        ],
    ),
    "CAP002": (
        FLEET,
        {"vendors/amd.yaml": "pools:\n  - {name: mi250x, model: MI250X, devicesPerNode: 8}\n"},
        [
            "values/vendors/amd.yaml:2:5: CAP002 warning: pool 'mi250x' has no nodes and no "
            "nodeCount, so it adds no capacity (at $.pools[0]); list its nodes or set nodeCount"
        ],
    ),
    "NAME005": (
        FLEET,
        {f"teams/{LONG_TEAM}.yaml": "quota: {}\n"},
        # fleet.yaml's `name: f`; f-<env>-team- and the team's 55 characters.
        [
            f"values/fleet.yaml:1:7: NAME005 Application name 'f-{env}-team-{LONG_TEAM}' is "
            f"{length} characters; Argo CD's tracking label allows 63 in environment '{env}' "
            "(at $.name); shorten the fleet, environment, cluster or team name"
            for env, length in (("prod", 67), ("staging", 70))
        ],
    ),
}


def test_every_registered_check_has_a_case() -> None:
    # Workload (WKL, MIG, POD), monitoring (MON), scheduling (SCH), add-on (DEP), allocation
    # (ALC), security profile (SEC: test_security_profiles.py) and mirror (MIR) checks are tested
    # beside their modules.
    own = ("WKL", "MIG", "POD", "MON", "SCH", "DEP", "ALC", "SEC", "MIR")
    assert {c for c in REGISTRY if not c.startswith(own)} == set(CASES)


@pytest.mark.parametrize("code", sorted(CASES))
def test_check_reports_its_findings_whole(code: str, tmp_path: Path) -> None:
    """Code, file:line:column, message, JSON path and hint of every finding of the code."""
    fleet, files, expected = CASES[code]
    assert of_code(tree(tmp_path, files, fleet=fleet), code) == expected


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
    iluvatar = OUTSIDE.format(id="iluvatar") + (
        "pools:\n  - {name: bi150, model: BI-V150, devicesPerNode: 8, nodes: [n1], "
        "pciDevices: ['0001']}\n"
    )
    values_dir = tree(tmp_path, {"vendors/iluvatar.yaml": iluvatar}, fleet=NFD)
    got = [g for g in lines(values_dir) if "NODE002" in g]
    assert got and got[0].startswith(
        "values/vendors/iluvatar.yaml:1:1: NODE002 vendor iluvatar has no pciVendor"
    ), got


def test_an_unprefixed_label_nothing_known_reads_cites_nothing(tmp_path: Path) -> None:
    """NODE003 names a reader only for the vendor's topology label, from the catalog
    (`topology.readBy`): an NVIDIA pool's own label gets the warning without it."""
    nvidia = (
        "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1], "
        "labels: {gpu-class: big}}\n"
    )
    got = of_code(tree(tmp_path, {"vendors/nvidia.yaml": nvidia}, fleet=NFD), "NODE003")
    assert got == [
        "values/vendors/nvidia.yaml:2:72: NODE003 warning: pool 'a100' label 'gpu-class' has no "
        "prefix: nfd-master sets it as 'feature.node.kubernetes.io/gpu-class'. The selectors "
        "rendered here use that key, but anything that reads 'gpu-class' itself will not find "
        "it (at $.pools[0].labels['gpu-class']); label those nodes another way (kubelet "
        "--node-labels, or nodeConfig.method: node-patch), or drop the label if nothing outside "
        "reads it"
    ]


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


# ---- REF001 (unknown_vendor)


def test_a_quota_in_a_fleet_without_vendors_knows_none(tmp_path: Path) -> None:
    """With no vendor file at all, the hint says no vendor is known."""
    values_dir = tree(
        tmp_path, {"vendors/nvidia.yaml": None, "teams/ml.yaml": "quota: {nvidia: 2}\n"}
    )
    assert of_code(values_dir, "REF001") == [
        "values/teams/ml.yaml:1:9: REF001 quota names vendor 'nvidia', which has no enabled "
        "values/vendors/nvidia.yaml (at $.quota.nvidia); add (or enable) values/vendors/nvidia.yaml: "
        "nvidia is in the catalog, so its pools are all the file needs; or name another vendor "
        "(known vendors: none)"
    ]


def test_a_deleted_catalog_vendor_is_not_taken_for_a_close_other_one(tmp_path: Path) -> None:
    """nvidia.yaml deleted beside nvidia-dra.yaml: 'nvidia' is close to 'nvidia-dra', whose DRA
    H100s are other devices; the hint names the file to add back instead."""
    values_dir = tree(
        tmp_path,
        {
            "vendors/nvidia.yaml": None,
            "vendors/nvidia-dra.yaml": DRA_NVIDIA,
            "teams/ml.yaml": "quota: {nvidia: 2}\n",
        },
    )
    [finding] = [f for f in findings(values_dir) if f.code == "REF001"]
    assert finding.hint == (
        "add (or enable) values/vendors/nvidia.yaml: nvidia is in the catalog, so its pools are "
        "all the file needs; or name another vendor (known vendors: nvidia-dra)"
    )


def test_a_misspelt_quota_key_is_one_finding_with_the_vendor_it_likely_meant(
    tmp_path: Path,
) -> None:
    """The job's vendor has no quota because its key is misspelt: REF001 says which key, and
    the MIG004 that follows from it is not said again."""
    team = (
        "quota: {nvdia: 4}\njobs:\n  train:\n    vendor: nvidia\n    devices: 2\n"
        "    images: {nvidia: r/t:cuda}\n"
    )
    values_dir = tree(tmp_path, {"teams/ml.yaml": team}, fleet=PROD_FLEET)
    assert lines(values_dir) == [
        "values/teams/ml.yaml:1:9: REF001 quota names vendor 'nvdia', which has no enabled "
        "values/vendors/nvdia.yaml (at $.quota.nvdia); did you mean 'nvidia'? known vendors: "
        "nvidia"
    ]
    # quota given for the right vendor too: a real shortfall is still MIG004's
    values_dir = tree(
        tmp_path / "short", {"teams/ml.yaml": team.replace("{nvdia: 4}", "{nvdia: 4, nvidia: 1}")}
    )
    assert {line.split()[1] for line in lines(values_dir)} == {"REF001", "MIG004"}
    # the vendor the misspelt key left without quota is skipped, the next one still checked
    both = (
        "quota: {acsend: 8, nvidia: 1}\njobs:\n  train:\n    vendor: nvidia\n    devices: 2\n"
        "    images: {nvidia: r/t:cuda}\n  npu:\n    vendor: ascend\n    devices: 8\n"
        "    images: {ascend: r/t:npu}\n    vendorMounts: false\n"
    )
    values_dir = tree(
        tmp_path / "both",
        {"teams/ml.yaml": both, "vendors/ascend.yaml": ASCEND_910B},
        fleet=PROD_FLEET,
    )
    assert [line.split()[1] for line in lines(values_dir)] == ["REF001", "MIG004"]
    assert "needs 2 nvidia devices" in lines(values_dir)[1]


# ---- CAP001 (quota_capacity)


def test_allowed_overcommit_is_a_warning_for_every_vendor(tmp_path: Path) -> None:
    """capacity.allowOvercommit turns each vendor's overcommit into a warning, without a hint
    (each team within the 8 the pools hold: CAP003's otherwise)."""
    values_dir = tree(
        tmp_path,
        {
            "vendors/ascend.yaml": ASCEND_910B,
            "teams/ml.yaml": "quota:\n  nvidia: 6\n  ascend: 5\n",
            "teams/b.yaml": "quota: {nvidia: 4, ascend: 4}\n",
        },
        fleet=PROD_FLEET + "capacity: {allowOvercommit: true}\n",
    )
    assert of_code(values_dir, "CAP001") == [
        "values/teams/ml.yaml:2:11: CAP001 warning: quotas for nvidia (nvidia.com/gpu) add up to "
        "10 devices (b 4, ml 6) but its pools hold 8 (overcommit allowed by "
        "capacity.allowOvercommit) (at $.quota.nvidia)",
        "values/teams/ml.yaml:3:11: CAP001 warning: quotas for ascend (huawei.com/Ascend910) add "
        "up to 9 devices (b 4, ml 5) but its pools hold 8 (overcommit allowed by "
        "capacity.allowOvercommit) (at $.quota.ascend)",
    ]


def test_a_sum_over_the_pools_only_by_a_quota_over_them_alone_is_that_quota_s_finding(
    tmp_path: Path,
) -> None:
    """ml's 10 of 8 GPUs is CAP003, and the sum of ml's alone says nothing more:
    lowering ml to 8, as CAP003 asks, brings it within the pools. With b's 2 beside it, 8 and 2
    are still over the 8: that sum is a root cause of its own."""
    alone = tree(tmp_path / "alone", {"teams/ml.yaml": "quota: {nvidia: 10}\n"}, fleet=PROD_FLEET)
    assert [f.code for f in findings(alone)] == ["CAP003"]
    both = {"teams/ml.yaml": "quota: {nvidia: 10}\n", "teams/b.yaml": "quota: {nvidia: 2}\n"}
    found = findings(tree(tmp_path / "both", both, fleet=PROD_FLEET))
    assert [(f.code, f.path) for f in found] == [
        ("CAP001", "$.quota.nvidia"),
        ("CAP003", "$.quota.nvidia"),
    ]
    assert found[0].message.startswith("quotas for nvidia (nvidia.com/gpu) add up to 12 devices")


def test_an_overcommit_ratio_bounds_the_quotas(tmp_path: Path) -> None:
    """capacity.overcommitRatio 1.5 on 8 GPUs: 12 is a warning, 13 an error (each team within
    the 8 its pools hold)."""

    def cap001(total_b: int) -> list[str]:
        values_dir = tree(
            tmp_path,
            {
                "teams/ml.yaml": "quota: {nvidia: 8}\n",
                "teams/b.yaml": f"quota: {{nvidia: {total_b}}}\n",
            },
            fleet=PROD_FLEET + "capacity: {overcommitRatio: 1.5}\n",
        )
        return of_code(values_dir, "CAP001")

    assert cap001(4) == [
        "values/teams/ml.yaml:1:17: CAP001 warning: quotas for nvidia (nvidia.com/gpu) add up to "
        "12 devices (b 4, ml 8) but its pools hold 8 (within capacity.overcommitRatio 1.5: up "
        "to 12) (at $.quota.nvidia)"
    ]
    assert cap001(5) == [
        "values/teams/ml.yaml:1:17: CAP001 quotas for nvidia (nvidia.com/gpu) add up to 13 "
        "devices (b 5, ml 8) but its pools hold 8, more than capacity.overcommitRatio 1.5 allows "
        "(12) (at $.quota.nvidia); lower the quotas, add nodes to the vendor's pools, or raise "
        "capacity.overcommitRatio"
    ]
    assert cap001(0) == []


def test_a_sum_over_capacity_names_every_other_quota_and_the_pools(tmp_path: Path) -> None:
    """CAP001 at the largest quota; the other teams' quotas (not one of 0) and each pool are
    where the sum may be lowered too (and where a pull request's change moves it)."""
    values_dir = tree(
        tmp_path,
        {
            "vendors/nvidia.yaml": NVIDIA
            + "  - name: b\n    model: A100\n    devicesPerNode: 4\n    nodes: [n3]\n",
            "teams/ml.yaml": "quota: {nvidia: 8}\n",
            "teams/b.yaml": "owners: [b@example.com]\nquota: {nvidia: 5}\n",
            "teams/c.yaml": "quota: {nvidia: 0, ascend: 0}\n",
        },
        fleet=PROD_FLEET + "capacity: {allowOvercommit: true}\n",
    )
    [found] = [f for f in findings(values_dir) if f.code == "CAP001"]
    assert (str(found.location), found.path) == ("values/teams/ml.yaml:1:17", "$.quota.nvidia")
    assert [(str(p.location), p.path, p.last_line) for p in found.also] == [
        ("values/teams/b.yaml:2:17", "$.quota.nvidia", 2),
        ("values/vendors/nvidia.yaml:2:5", "$.pools[0]", 2),
        ("values/vendors/nvidia.yaml:3:5", "$.pools[1]", 6),  # a block: lines 3 to 6
    ]


def test_a_team_quota_above_its_cluster_is_refused_at_its_share(tmp_path: Path) -> None:
    """SPLIT_NVIDIA: 8 GPUs in main, 8 in domestic. 12 in main is more than main holds, though
    the fleet's 16 would."""
    team = "quota: {nvidia: {main: 12, domestic: 2}}\n"
    split = {**TWO_CLUSTERS, **SPLIT_NVIDIA, "teams/ml.yaml": team}
    found = [f for f in findings(tree(tmp_path, split, fleet=PROD_FLEET)) if f.code == "CAP003"]
    assert [(str(f.location), f.path, f.clusters) for f in found] == [
        ("values/teams/ml.yaml:1:24", "$.quota.nvidia.main", ("prod/main",))
    ]
    # main's pool, not domestic's
    assert [(str(p.location), p.path, p.last_line) for p in found[0].also] == [
        ("values/vendors/nvidia.yaml:2:5", "$.pools[0]", 2)
    ]
    # The cluster is named once, by the finding's layers.
    assert found[0].text == (
        "team ml: quota of 12 nvidia devices per namespace, but the vendor's pools hold 8 in "
        "environment 'prod' (cluster 'main')"
    )


def test_a_quota_not_split_is_refused_at_the_quota_in_its_one_cluster(tmp_path: Path) -> None:
    """TWO_CLUSTERS: NVIDIA only in main (8 GPUs); ml's 9, one number, is refused there, at the
    quota itself (no share to point at). (The base layer, all clusters' pools together, says
    so too.)"""
    team = TWO_CLUSTERS_ML.replace("nvidia: 4,", "nvidia: 9,")
    values_dir = tree(tmp_path, {**TWO_CLUSTERS, "teams/ml.yaml": team}, fleet=PROD_FLEET)
    found = [f for f in findings(values_dir) if f.code == "CAP003" and f.clusters]
    assert [(str(f.location), f.path, f.clusters) for f in found] == [
        ("values/teams/ml.yaml:1:17", "$.quota.nvidia", ("prod/main",))
    ]


def test_a_quota_per_model_is_held_to_that_models_pools(tmp_path: Path) -> None:
    """NVIDIA's A100 pool holds 8 (two nodes of 4), its H100 pool 4: a quota of 6 H100 is more
    than the H100 pools hold, though 6 + 2 is within the vendor's 12; 8 A100 is within its own.
    One finding, at the model's line, beside the H100 pool."""
    nvidia = NVIDIA + "  - {name: h100, model: H100, devicesPerNode: 4, nodes: [n9]}\n"
    team = "quota:\n  nvidia:\n    h100: 6\n    A100: 2\n"
    fleet = FLEET + "scheduling: {backend: kueue}\n"
    files = {"vendors/nvidia.yaml": nvidia, "teams/ml.yaml": team}
    found = [f for f in findings(tree(tmp_path, files, fleet=fleet)) if f.code == "CAP003"]
    assert [(f.format(), [str(p.location) for p in f.also]) for f in found] == [
        (
            "values/teams/ml.yaml:3:11: CAP003 team ml: quota of 6 nvidia H100 devices per "
            "namespace, but the vendor's H100 pools hold 4 (at $.quota.nvidia.h100); lower it "
            "to at most 4, or add nodes to nvidia's H100 pools",
            ["values/vendors/nvidia.yaml:3:5"],
        )
    ]
    assert of_code(
        tree(
            tmp_path / "a100",
            {**files, "teams/ml.yaml": team.replace("6", "4").replace("2", "9")},
            fleet=fleet,
        ),
        "CAP003",
    ) == [
        "values/teams/ml.yaml:4:11: CAP003 team ml: quota of 9 nvidia A100 devices per "
        "namespace, but the vendor's A100 pools hold 8 (at $.quota.nvidia.A100); lower it to "
        "at most 8, or add nodes to nvidia's A100 pools"
    ]


# ---- RES002 (shared_quota)


def test_a_quota_on_three_vendors_of_one_resource_points_at_the_last(tmp_path: Path) -> None:
    """Vendors are listed in id order; the finding is at the quota of the last of them."""
    amd_b = (
        "catalog: amd\nnodeLabels: {accelerator: amd-b}\n"
        "pools:\n  - {name: mi300, model: MI250X, devicesPerNode: 8, nodes: [amd-2]}\n"
    )
    values_dir = tree(
        tmp_path,
        {
            "vendors/amd.yaml": AMD_MI250X,
            "vendors/amd-b.yaml": amd_b,
            "vendors/hygon.yaml": HYGON_Z100L,
            "teams/ml.yaml": "quota:\n  hygon: 1\n  amd: 1\n  amd-b: 1\n",
        },
        fleet=PROD_FLEET,
    )
    assert of_code(values_dir, "RES002") == [
        "values/teams/ml.yaml:2:3: RES002 quota for amd and amd-b and hygon, which both "
        "advertise amd.com/gpu: a ResourceQuota cannot tell them apart (at $.quota.hygon); "
        "quota one of them, give one vendor its own resourceName, or use "
        "scheduling.backend kueue, whose flavors tell them apart"
    ]


def test_kueue_holds_quota_on_two_vendors_of_one_resource_apart(tmp_path: Path) -> None:
    """nvidia (A100) and nvidia-h100 both advertise nvidia.com/gpu: a ResourceQuota cannot tell
    them apart (RES002 under the quota and volcano backends), Kueue's flavors can (none)."""
    h100 = (
        "catalog: nvidia\nnodeLabels: {accelerator: nvidia-h100}\n"
        "pools:\n  - {name: h100, model: H100, devicesPerNode: 8, nodes: [n9]}\n"
    )
    files = {
        "vendors/nvidia-h100.yaml": h100,
        "teams/ml.yaml": "quota: {nvidia: 4, nvidia-h100: 2}\n",
    }
    res002 = [
        "values/teams/ml.yaml:1:20: RES002 quota for nvidia and nvidia-h100, which both "
        "advertise nvidia.com/gpu: a ResourceQuota cannot tell them apart "
        "(at $.quota['nvidia-h100']); quota one of them, give one vendor its own resourceName, "
        "or use scheduling.backend kueue, whose flavors tell them apart"
    ]
    for backend, expected in (("kueue", []), ("volcano", res002), ("quota", res002)):
        fleet = FLEET + f"scheduling: {{backend: {backend}}}\n"
        assert of_code(tree(tmp_path / backend, files, fleet=fleet), "RES002") == expected


# ---- NAME004 (namespace_twice)


def test_a_namespace_of_three_teams_names_the_other_two(tmp_path: Path) -> None:
    shared = "namespaces: [shared]\nquota: {}\n"
    values_dir = tree(
        tmp_path,
        {"teams/ml.yaml": shared, "teams/a.yaml": shared, "teams/b.yaml": shared},
        fleet=PROD_FLEET,
    )
    assert of_code(values_dir, "NAME004") == [
        "values/teams/ml.yaml:1:14: NAME004 namespace 'shared' is already used by team 'a', 'b' "
        "(at $.namespaces[0]); pick another namespace"
    ]


# ---- NAME007 (reserved_namespace, reserved_namespaces)


def test_the_namespaces_of_argo_cd_monitoring_plugins_and_exporters_are_reserved(
    tmp_path: Path,
) -> None:
    """Each reserved namespace names what owns it: Argo CD, the fleet's monitoring, the rendered
    exporters, a vendor's device plugin, a vendor's exporter installed another way."""
    fleet = PROD_FLEET + (
        "argocd: {namespace: gitops}\nmonitoring: {namespace: mon, exporterNamespace: exp}\n"
    )
    nvidia = (
        "devicePlugin: {namespace: dp-nv}\nexporter: {render: false, namespace: nv-exp}\n"
        "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1]}\n"
    )
    team = "namespaces: [ml, gitops, mon, exp, dp-nv, nv-exp]\nquota: {}\n"
    values_dir = tree(tmp_path, {"vendors/nvidia.yaml": nvidia, "teams/ml.yaml": team}, fleet=fleet)
    claims = [
        (18, "gitops", "Argo CD"),
        (26, "mon", "the fleet's monitoring"),
        (31, "exp", "the rendered exporters"),
        (36, "dp-nv", "nvidia's device plugin"),
        (43, "nv-exp", "nvidia's exporter"),
    ]
    assert of_code(values_dir, "NAME007") == [
        f"values/teams/ml.yaml:1:{column}: NAME007 team 'ml' claims namespace {ns!r}, which "
        f"belongs to {owner} (at $.namespaces[{i}]); give the team its own namespace"
        for i, (column, ns, owner) in enumerate(claims, start=1)
    ]


def test_a_team_named_after_a_reserved_namespace_is_told_to_rename_its_file(
    tmp_path: Path,
) -> None:
    """Without `namespaces:` the team's namespace is its file name: the finding says so, at the
    top of the file, and the hint offers both fixes."""
    values_dir = tree(tmp_path, {"teams/default.yaml": "quota: {}\n"}, fleet=PROD_FLEET)
    assert of_code(values_dir, "NAME007") == [
        "values/teams/default.yaml:1:1: NAME007 team 'default' claims namespace 'default' (its "
        "file name, the default namespace), which belongs to objects created without a "
        "namespace (at $.namespaces[0]); give the team its own namespace in namespaces:, or "
        "rename the file"
    ]


# ---- NODE001 (node_config)


def test_node_patch_names_every_pool_without_nodes(tmp_path: Path) -> None:
    nvidia = (
        "pools:\n  - {name: a, model: A100, devicesPerNode: 4, nodes: [n1]}\n"
        "  - {name: b, model: A100, devicesPerNode: 4, nodeCount: 1}\n"
        "  - {name: c, model: H100, devicesPerNode: 8, nodeCount: 1}\n"
    )
    values_dir = tree(
        tmp_path,
        {"vendors/nvidia.yaml": nvidia},
        fleet=PROD_FLEET + "nodeConfig: {method: node-patch}\n",
    )
    assert of_code(values_dir, "NODE001") == [
        f"values/vendors/nvidia.yaml:{line}:5: NODE001 pool {pool!r} lists no nodes, so "
        f"node-patch cannot label it (at $.pools[{i}]); list the pool's nodes, or use "
        "nodeConfig.method: nfd"
        for line, i, pool in ((3, 1, "b"), (4, 2, "c"))
    ]


def test_nfd_names_every_pool_a_nameless_pool_shares_devices_with(tmp_path: Path) -> None:
    """A pool with nodes comes first: the check still goes on to the pools after it."""
    nvidia = (
        "pools:\n  - {name: a, model: H100, devicesPerNode: 8, nodes: [n1]}\n"
        "  - {name: b, model: A100, devicesPerNode: 4, nodes: [n2]}\n"
        "  - {name: c, model: A100, devicesPerNode: 4, nodeCount: 1}\n"
        "  - {name: d, model: A100, devicesPerNode: 4, nodes: [n3]}\n"
    )
    values_dir = tree(tmp_path, {"vendors/nvidia.yaml": nvidia}, fleet=PROD_FLEET)
    assert of_code(values_dir, "NODE001") == [
        "values/vendors/nvidia.yaml:4:5: NODE001 pool 'c' matches the same PCI devices as pool "
        "'b', 'd' and lists no nodes, so NFD labels every such nvidia node as both "
        "(at $.pools[2]); list the pool's nodes, or give the pools different pciDevices"
    ]


def test_nfd_names_another_vendors_pool_of_the_same_devices(tmp_path: Path) -> None:
    """A shared vendor reusing NVIDIA's entry matches nvidia's A100 IDs: a nameless pool there
    is labelled as both vendors' (the other vendor's pool is named with its vendor)."""
    shared = SHARED_NVIDIA.replace("nodes: [n3]", "nodeCount: 1")
    values_dir = tree(tmp_path, {"vendors/nvidia-shared.yaml": shared}, fleet=PROD_FLEET)
    assert of_code(values_dir, "NODE001") == [
        "values/vendors/nvidia-shared.yaml:8:5: NODE001 pool 'a100-shared' matches the same PCI "
        "devices as pool 'nvidia/a100' and lists no nodes, so NFD labels every such "
        "nvidia-shared node as both (at $.pools[0]); list the pool's nodes, or give the pools "
        "different pciDevices"
    ]


# ---- NODE002 (unknown_pci_model)


def test_nfd_checks_every_vendor_and_pool_for_pci_ids(tmp_path: Path) -> None:
    """A vendor without pciVendor, one outside the catalog (no known models), and a catalog
    vendor whose second pool has an unknown model: one finding each, in vendor order."""
    iluvatar = OUTSIDE.format(id="iluvatar") + (
        "pools:\n  - {name: bi150, model: BI-V150, devicesPerNode: 8, nodes: [n1], "
        "pciDevices: ['0001']}\n"
    )
    moore = OUTSIDE.format(id="moore") + (
        "pciVendor: 1ed5\npools:\n  - {name: s4000, model: S4000, devicesPerNode: 8, nodes: [m1]}\n"
    )
    nvidia = (
        "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n2]}\n"
        "  - {name: b200, model: B200, devicesPerNode: 8, nodes: [n3]}\n"
    )
    values_dir = tree(
        tmp_path,
        {
            "vendors/iluvatar.yaml": iluvatar,
            "vendors/moore.yaml": moore,
            "vendors/nvidia.yaml": nvidia,
        },
        fleet=PROD_FLEET,
    )

    def unknown(
        where: str, i: int, pool: str, model: str, vendor: str, pci: str, known: str
    ) -> str:
        return (
            f"{where}: NODE002 pool {pool!r}: model {model!r} has no known PCI device IDs for "
            f"{vendor}, so no NFD rule can find its nodes (a rule on the vendor ID {pci} alone "
            "would also match the vendor's other functions, such as CPU bridges or a BMC's VGA) "
            f"(at $.pools[{i}].model); set pciDevices on the pool to the device IDs its "
            f"nodes show as [{pci}:<device>] in `lspci -nn`, or use a model the catalog knows: "
            f"{known}"
        )

    assert of_code(values_dir, "NODE002") == [
        "values/vendors/iluvatar.yaml:1:1: NODE002 vendor iluvatar has no pciVendor, so no NFD "
        "rule can find its nodes (at $.pciVendor); set pciVendor to the vendor's PCI vendor ID "
        "(lspci -nn shows [vendor:device]), with pciDevices on each pool",
        unknown("values/vendors/moore.yaml:11:26", 0, "s4000", "S4000", "moore", "1ed5", "none"),
        unknown(
            "values/vendors/nvidia.yaml:3:25",
            1,
            "b200",
            "B200",
            "nvidia",
            "10de",
            "A100, A800, H100, H200, H800",
        ),
    ]


# ---- NODE004 (duplicate_taints)


def test_repeated_taints_are_told_for_each_own_list_and_once_for_the_vendors(
    tmp_path: Path,
) -> None:
    """Pools 0 and 3 repeat a taint in their own lists, pools 1 and 2 inherit the vendor's
    repeated one: three findings, whatever order the pools come in. Each is at the list's second
    taint: column 54 of the vendor's line, 117 of a pool's."""
    twice = (
        "[{key: a.example.com/x, effect: NoSchedule}, {key: a.example.com/x, effect: NoSchedule}]"
    )
    pool = "  - {{name: p{0}, model: A100, devicesPerNode: 4, nodes: [p{0}-01]{1}}}\n"
    nvidia = (
        f"taints: {twice}\npools:\n"
        + pool.format(0, f", taints: {twice}")
        + pool.format(1, "")
        + pool.format(2, "")
        + pool.format(3, f", taints: {twice}")
    )
    values_dir = tree(tmp_path, {"vendors/nvidia.yaml": nvidia}, fleet=PROD_FLEET)
    rest = (
        "taints repeat a.example.com/x:NoSchedule (first at taints[0]); the API server refuses "
        "such a Node, so none of its taints would be set"
    )
    assert of_code(values_dir, "NODE004") == [
        f"values/vendors/nvidia.yaml:1:54: NODE004 vendor nvidia {rest} (at $.taints[1]); keep "
        "one taint per key and effect",
        f"values/vendors/nvidia.yaml:3:117: NODE004 pool 'p0' {rest} (at $.pools[0].taints[1]); "
        "keep one taint per key and effect",
        f"values/vendors/nvidia.yaml:6:117: NODE004 pool 'p3' {rest} (at $.pools[3].taints[1]); "
        "keep one taint per key and effect",
    ]


# ---- NAME005 (app_name_length)


@pytest.mark.parametrize(("team_length", "found"), [(48, False), (49, True)])
def test_an_application_name_may_be_63_characters_long(
    team_length: int, found: bool, tmp_path: Path
) -> None:
    """mini-prod-team-<team>: 15 characters and the team's."""
    team = "t" * team_length
    values_dir = tree(tmp_path, {f"teams/{team}.yaml": "quota: {}\n"}, fleet=PROD_FLEET)
    expected = (
        f"values/fleet.yaml:1:7: NAME005 Application name 'mini-prod-team-{team}' is 64 "
        "characters; Argo CD's tracking label allows 63 (at $.name); shorten the fleet, "
        "environment, cluster or team name"
    )
    assert of_code(values_dir, "NAME005") == ([expected] if found else [])


# ---- NAME008 (same_object)


def test_a_namespace_two_components_emit_is_told_once_with_both(tmp_path: Path) -> None:
    """The device plugins' namespace is the monitoring one: a cluster-scoped object, so no
    namespace before its name; no JSON path (the finding is about objects, not one value)."""
    nvidia = NVIDIA + "devicePlugin: {namespace: accelerator-monitoring}\n"
    values_dir = tree(tmp_path, {"vendors/nvidia.yaml": nvidia}, fleet=PROD_FLEET)
    assert of_code(values_dir, "NAME008") == [
        "values/fleet.yaml:1:1: NAME008 Namespace accelerator-monitoring would be emitted twice, "
        "by device-plugins/namespaces (values/vendors/nvidia.yaml:3:16) and by "
        "monitoring/namespace: Argo CD would apply one over the other; give one of them a name "
        "or namespace of its own, or drop the duplicate"
    ]
    assert [f.path for f in findings(values_dir) if f.code == "NAME008"] == [""]


def test_a_teams_namespace_claim_is_left_to_name004_with_everything_it_doubles(
    tmp_path: Path,
) -> None:
    """Two teams in one namespace: the Namespace object and the two ResourceQuotas
    `accelerators` in it are one mistake, NAME004's, said once at the claim's line. (Their jobs
    `train`, a batch Job and a Volcano Job, are two objects of two API groups anyway.)"""
    job = "jobs:\n  train:\n    images: {nvidia: r/t:cuda}\n"
    a = "namespaces: [shared]\nquota: {nvidia: 1}\n" + job + "    vendor: nvidia\n    devices: 1\n"
    b = (
        "namespaces: [shared]\nquota: {nvidia: 1}\n"
        + job
        + (
            "    kind: volcano\n    tasks:\n      workers: {vendor: nvidia, devices: 1, replicas: 1}\n"
        )
    )
    values_dir = tree(
        tmp_path, {"teams/ml.yaml": None, "teams/a.yaml": a, "teams/b.yaml": b}, fleet=PROD_FLEET
    )
    assert of_code(values_dir, "NAME008") == []
    assert of_code(values_dir, "NAME004") == [
        "values/teams/b.yaml:1:14: NAME004 namespace 'shared' is already used by team 'a' (at "
        "$.namespaces[0]); pick another namespace"
    ]
    # A second team in another namespace of its own: its quota is no duplicate of anything.
    c = "namespaces: [own]\nquota: {nvidia: 1}\n"
    values_dir = tree(tmp_path / "c", {"teams/ml.yaml": None, "teams/a.yaml": a, "teams/c.yaml": c})
    assert of_code(values_dir, "NAME008") == []


def test_a_workload_object_twice_in_one_team_points_at_the_service(tmp_path: Path) -> None:
    """Service `s` migrates (its NVIDIA track's Service is s-nvidia) and service `s-nvidia`
    runs on NVIDIA alone: the team's workloads emit Service ml/s-nvidia twice. A team's objects
    point at the team's file even when they carry a vendor label."""
    team = """\
quota: {nvidia: 4, ascend: 4}
services:
  s:
    images: {nvidia: r/s:cuda, ascend: r/s:ascend}
    vendorMounts: false
    migration: {from: nvidia, to: ascend}
    phase: validate
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 1}
      ascend: {devicesPerReplica: 1, replicas: 1}
  s-nvidia:
    images: {nvidia: r/s:cuda}
    vendorMounts: false
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 1}
"""
    values_dir = tree(
        tmp_path, {"vendors/ascend.yaml": ASCEND_910B, "teams/ml.yaml": team}, fleet=PROD_FLEET
    )
    assert of_code(values_dir, "NAME008") == [
        "values/teams/ml.yaml:3:3: NAME008 Service ml/s-nvidia would be emitted twice, by "
        "workloads/ml: Argo CD would apply one over the other; rename one of the two workloads, "
        "or drop the duplicate"
    ]


def test_a_vendors_duplicates_point_at_the_value_that_names_each(tmp_path: Path) -> None:
    """A second NVIDIA vendor names its plugin and exporter as the first does, and its pool's
    Kueue flavor (vendor-pool) is the first's: the plugin at devicePlugin.name, the exporter
    and its PodMonitor at exporter.name, the flavor at `catalog:`. prod overrides both vendors,
    so there the first vendor's flavor (its file has no `catalog:`) is at its override."""
    nvidia_a = """\
# a second NVIDIA vendor
devicePlugin: {name: nvidia-device-plugin}
exporter: {name: dcgm-exporter}
catalog: nvidia
pools:
  - {name: b, model: H100, devicesPerNode: 8, nodes: [n2]}
"""
    values_dir = tree(
        tmp_path,
        {
            "vendors/nvidia.yaml": "pools:\n  - {name: a-b, model: A100, devicesPerNode: 4, "
            "nodes: [n1]}\n",
            "vendors/nvidia-a.yaml": nvidia_a,
            "teams/ml.yaml": "quota: {}\n",
            "environments/prod.yaml": "vendors:\n  nvidia:\n    costWeight: 2\n"
            "  nvidia-a:\n    costWeight: 2\n",
        },
        fleet=PROD_FLEET + "scheduling: {backend: kueue}\n",
    )
    top, override = "values/vendors/nvidia.yaml:1:1", "values/environments/prod.yaml:2:3"
    base = " in the base layer (values without environment overrides)"
    assert of_code(values_dir, "NAME008") == [
        f"values/vendors/nvidia-a.yaml:{where}: NAME008 {shown} would be emitted twice, by "
        f"vendor 'nvidia' ({first}) and by vendor 'nvidia-a': Argo CD would apply one over the "
        f"other{layer}; {NAME008_HINT}"
        for where, shown, first, layer in (
            ("2:16", "DaemonSet accelerator-plugins/nvidia-device-plugin", top, ""),
            ("3:12", "DaemonSet accelerator-exporters/dcgm-exporter", top, ""),
            ("3:12", "PodMonitor accelerator-monitoring/dcgm-exporter", top, ""),
            ("4:1", "ResourceFlavor nvidia-a-b", override, ""),
            ("4:1", "ResourceFlavor nvidia-a-b", top, base),
        )
    ]


def test_a_cluster_s_own_kubernetes_version_is_checked_where_it_is_set(tmp_path: Path) -> None:
    """TWO_CLUSTERS with domestic at 1.99, which no pinned schema set covers: VER001 at the
    cluster's line, for that cluster only."""
    prod = TWO_CLUSTERS["environments/prod.yaml"].replace('"1.34"', '"1.99"')
    files = {**TWO_CLUSTERS, "environments/prod.yaml": prod}
    [found] = [f for f in findings(tree(tmp_path, files, fleet=PROD_FLEET)) if f.code == "VER001"]
    assert (str(found.location), found.path, found.clusters) == (
        "values/environments/prod.yaml:7:24",
        "$.clusters.domestic.kubernetesVersion",
        ("prod/domestic",),
    )


# A vendor outside the catalog whose own operator (the GPU Operator's add-on, installed for it)
# runs its device plugin only: its operator contract has no exporter.
OWN_OPERATOR = OUTSIDE.format(id="acme") + (
    "operator:\n"
    "  addon: gpuOperator\n"
    "  sources: [acme/operator v1 deploy/plugin.yaml]\n"
    "  devicePlugin: {deployLabel: acme.ai/deploy.plugin, daemonSet: acme-plugin,\n"
    "    podLabels: {app: acme-plugin}, sources: [acme/operator v1 deploy/plugin.yaml]}\n"
    "pools:\n  - {name: x1, model: X1, devicesPerNode: 8, nodes: [a1]}\n"
)


def test_prv001_names_only_the_component_the_vendors_operator_does_not_run(
    tmp_path: Path,
) -> None:
    """Both components handed to an operator that runs the device plugin alone: the plugin is
    the operator's (no finding), the exporter has no one (PRV001 at its `provided`)."""
    text = OWN_OPERATOR.replace("{name: acme-plugin,", "{provided: operator, name: acme-plugin,")
    text += "exporter: {provided: operator}\n"
    values_dir = tree(
        tmp_path,
        {"vendors/acme.yaml": text},
        fleet=FLEET + "platform: {gpuOperator: {provided: site}}\n",
    )
    assert of_code(values_dir, "PRV001") == [
        "values/vendors/acme.yaml:16:22: PRV001 vendor acme: exporter.provided is operator, "
        "but its catalog entry names no operator that runs its exporter "
        "(at $.exporter.provided); set exporter.provided: fleet, or site where the cluster "
        "runs it another way (docs/brownfield.md lists the operators the catalog knows)"
    ]


def test_prv001_and_prv002_are_told_apart_and_each_vendor_is_checked(tmp_path: Path) -> None:
    """AMD hands its plugin to an operator its catalog entry lacks (PRV001, not PRV002), and
    NVIDIA, after it, its exporter to the GPU Operator no environment runs (PRV002 alone); the
    GPU Operator's own plugin of NVIDIA is no PRV001."""
    values_dir = tree(
        tmp_path,
        {
            "vendors/amd.yaml": AMD_MI250X + "devicePlugin: {provided: operator}\n",
            "vendors/nvidia.yaml": NVIDIA + "exporter: {provided: operator}\n",
        },
        fleet=PROD_FLEET,
    )
    assert [line.split(" vendor ")[0] for line in lines(values_dir) if " PRV" in line] == [
        "values/vendors/amd.yaml:3:26: PRV001",
        "values/vendors/nvidia.yaml:3:22: PRV002",
    ]


def test_prv003_reads_each_pools_labels_against_each_components_provider(
    tmp_path: Path,
) -> None:
    """The GPU Operator runs NVIDIA's exporter, the fleet its plugin. Pool a100 has no label;
    h100 says "false" to both: right for the fleet's plugin, wrong for the operator's exporter;
    l40 says "true" to the operator's exporter, as the operator itself would. AMD, before
    NVIDIA, has no operator and is no reason to stop."""
    nvidia = (
        "exporter: {provided: operator}\n"
        "pools:\n"
        "  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1]}\n"
        "  - {name: h100, model: H100, devicesPerNode: 8, nodes: [n2],\n"
        "     labels: {nvidia.com/gpu.deploy.device-plugin: 'false',\n"
        "              nvidia.com/gpu.deploy.dcgm-exporter: 'false'}}\n"
        "  - {name: l40, model: L40, devicesPerNode: 4, nodes: [n3],\n"
        "     labels: {nvidia.com/gpu.deploy.dcgm-exporter: 'true'}}\n"
    )
    values_dir = tree(
        tmp_path,
        {"vendors/amd.yaml": AMD_MI250X, "vendors/nvidia.yaml": nvidia},
        fleet=PROD_FLEET + "platform: {gpuOperator: {provided: site}}\n",
    )
    assert of_code(values_dir, "PRV003") == [
        "values/vendors/nvidia.yaml:6:15: PRV003 vendor nvidia pool 'h100': label "
        "nvidia.com/gpu.deploy.dcgm-exporter=false contradicts exporter.provided: operator "
        "(the operator provides it): the operator would run no exporter on these nodes "
        "(at $.pools[1].labels['nvidia.com/gpu.deploy.dcgm-exporter']); drop the label: the "
        "fleet sets nvidia.com/gpu.deploy.dcgm-exporter from exporter.provided wherever the "
        "operator runs"
    ]


# A DRA vendor on NVIDIA's catalog entry whose driver `platform.<addon>` would install, its
# names and node its own.
def dra_by(addon: str, suffix: str, node: str) -> str:
    return (
        DRA_NVIDIA.replace("-dra", f"-{suffix}")
        .replace("allocation: dra\n", f"allocation: dra\ndraDriver: {{addon: {addon}}}\n")
        .replace("[n4]", f"[{node}]")
    )


def test_prv004_checks_each_dra_vendor_for_its_own_driver(tmp_path: Path) -> None:
    """Two DRA vendors whose drivers two add-ons install: the first's is declared, the
    second's is not (PRV004 for it alone); a driver that no add-on installs (a name the
    catalogue does not know) is the site's to run, not this check's."""
    values_dir = tree(
        tmp_path,
        {
            "vendors/nvidia-dra.yaml": DRA_NVIDIA,
            "vendors/nvidia-dra2.yaml": dra_by("gpuOperator", "dra2", "n6"),
            "vendors/nvidia-dra3.yaml": dra_by("acmeDra", "dra3", "n7"),
        },
        fleet=PROD_FLEET + "platform: {nvidiaDraDriver: {provided: site}}\n",
    )
    assert [line.split(" is allocated")[0] for line in of_code(values_dir, "PRV004")] == [
        "values/vendors/nvidia-dra2.yaml:2:1: PRV004 warning: vendor nvidia-dra2"
    ]


def test_prv003_any_value_but_true_keeps_the_operators_operand_off(tmp_path: Path) -> None:
    """The Operator runs an operand only where its deploy label is "true" (its DaemonSets select
    that value; docs/brownfield.md): 'no' beside the fleet's plugin agrees with it, and 'False'
    on the Operator's exporter leaves its pool without one."""
    nvidia = (
        "exporter: {provided: operator}\n"
        "pools:\n"
        "  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1],\n"
        "     labels: {nvidia.com/gpu.deploy.device-plugin: 'no'}}\n"
        "  - {name: h100, model: H100, devicesPerNode: 8, nodes: [n2],\n"
        "     labels: {nvidia.com/gpu.deploy.dcgm-exporter: 'False'}}\n"
    )
    values_dir = tree(
        tmp_path,
        {"vendors/nvidia.yaml": nvidia},
        fleet=PROD_FLEET + "platform: {gpuOperator: {provided: site}}\n",
    )
    assert of_code(values_dir, "PRV003") == [
        "values/vendors/nvidia.yaml:6:15: PRV003 vendor nvidia pool 'h100': label "
        "nvidia.com/gpu.deploy.dcgm-exporter=False contradicts exporter.provided: operator "
        "(the operator provides it): the operator would run no exporter on these nodes "
        "(at $.pools[1].labels['nvidia.com/gpu.deploy.dcgm-exporter']); drop the label: the "
        "fleet sets nvidia.com/gpu.deploy.dcgm-exporter from exporter.provided wherever the "
        "operator runs"
    ]


# ---- NODE006 (node_shape)


@pytest.mark.parametrize(
    ("second", "found"),
    [
        # A second H100 pool whose nodes have enough: the pod fits there.
        ("node: {cpu: 192, memory: 900Gi, resources: {rdma/ib: 8}}", False),
        # One that declares nothing: what its nodes have is not known to be short.
        ("labels: {rack: r2}", False),
        # One as short as the first: nowhere to go.
        ("node: {memory: 768Gi, resources: {rdma/ib: 8}}", True),
    ],
)
def test_a_pod_is_short_only_where_every_pool_it_may_land_on_is(
    tmp_path: Path, second: str, found: bool
) -> None:
    vendor = (
        SHAPED_H100
        + f"  - {{name: h100-b, model: H100, devicesPerNode: 8, nodes: [n2], {second}}}\n"
    )
    got = [
        f
        for f in findings(tree(tmp_path, {"vendors/nvidia.yaml": vendor, "teams/ml.yaml": BIG_JOB}))
        if f.code == "NODE006"
    ]
    assert bool(got) is found
    if found:
        assert "(pool nvidia/h100: memory 512Gi, rdma/ib 4; pool nvidia/h100-b: memory 768Gi)" in (
            got[0].message
        )
