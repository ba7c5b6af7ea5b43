"""The stand-ins for what the fleet relies on but does not run (generator/simulate/sitestack.py):
the DaemonSet each becomes, built from values trees made for the case, and what the run says of
them (SIM011). No control plane: where the stand-ins' pods land is test_judge.py's and
test_run.py's; the verdict on them is test_checks.py's. Every object and message is written out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from generator.findings import Finding, Location, Severity
from generator.simulate import sitestack
from generator.values import loader
from tests.fixtures import DRA_NVIDIA, build_of, tree

Obj = dict[str, Any]

# platform: at line 5, its first add-on at line 6, column 3.
FLEET = """\
name: t
kubernetesVersion: "1.36"
environments: [dev]
git: {repoURL: https://git.example.com/t.git, targetRevision: main}
"""
ASCEND = "pools:\n  - {name: 910b, model: 910b, devicesPerNode: 8, nodes: [npu-1]}\n"
# devicePlugin.provided's value at line 1, column 26; exporter.provided's at line 2, column 22.
BY_OPERATOR = """\
devicePlugin: {provided: operator}
exporter: {provided: operator}
pools:
  - {name: a100, model: A100, devicesPerNode: 4, nodes: [g1]}
"""
# Its exporter alone is the Operator's (exporter.provided's value at line 5, column 22); the
# fleet renders its device plugin.
H100_EXPORTER_BY_OPERATOR = """\
catalog: nvidia
nodeLabels: {accelerator: nvidia-h100}
taints: [{key: feature.node.kubernetes.io/accelerator, value: nvidia-h100, effect: NoSchedule}]
devicePlugin: {name: nvidia-device-plugin-h100}
exporter: {provided: operator, name: dcgm-exporter-h100}
pools:
  - {name: h100, model: H100, devicesPerNode: 8, nodes: [g2]}
"""
# A second vendor file claimed through NVIDIA's DRA driver, tainted without a value.
DRA_NVIDIA_2 = """\
catalog: nvidia
allocation: dra
nodeLabels: {accelerator: nvidia-gpu-dra2}
taints: [{key: example.com/dra, effect: NoExecute}]
exporter: {name: dcgm-exporter-dra2}
pools:
  - {name: h100-dra2, model: H100, devicesPerNode: 8, nodes: [n5]}
"""
TEAM = "quota: {nvidia: 4}\n"
HINT = "check what was not simulated on a cluster that runs it (docs/simulation.md)"
GPU = "feature.node.kubernetes.io/accelerator"
# The GPU Operator chart's own daemonsets.tolerations (its values.yaml v25.3.4).
CHART_DEFAULT = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
PAUSE = {"name": "stand-in", "image": "registry.k8s.io/pause:3.10"}
PLUGIN_LABELS = {"app": "nvidia-device-plugin-daemonset", "accel-gitops.io/vendor": "nvidia"}
EXPORTER_LABELS = {"app": "nvidia-dcgm-exporter", "accel-gitops.io/vendor": "nvidia"}
METRICS = {**PAUSE, "ports": [{"name": "metrics", "containerPort": 9400}]}


def build(root: Path, fleet: str, vendors: dict[str, str]) -> Any:
    files = {f"vendors/{name}.yaml": text for name, text in vendors.items()}
    values = tree(root, {**files, "teams/ml.yaml": TEAM}, fleet=fleet, defaults=False)
    return build_of(loader.load(values).envs["dev"])


def daemonset(name: str, namespace: str, labels: dict[str, str], pod: Obj, container: Obj) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {**pod, "containers": [container]},
            },
        },
    }


def shown(daemons: list[sitestack.SiteDaemon]) -> list[tuple[str, str, list[str], Location, Obj]]:
    return [(d.what, d.key, [v.id for v in d.vendors], d.location, d.obj) for d in daemons]


def stood_in(what: str, key: str, at: Location) -> Finding:
    return Finding(
        "SIM011",
        f"{what} does not run here: a stand-in DaemonSet {key} with its pod labels, node "
        "selection and tolerations ran in its place, so where its pods land was simulated; what "
        "it does on a node was not (the nodes' capacity and ResourceSlices stand for what it "
        "would advertise)",
        at,
        hint=HINT,
        severity=Severity.WARNING,
    )


def test_the_fleets_gpu_operator_runs_each_operand_a_vendor_hands_to_it(tmp_path: Path) -> None:
    """platform.gpuOperator.provided: fleet. Vendor nvidia hands both components to it, vendor
    nvidia-h100 its exporter only, vendor ascend has no operator: three stand-ins, in the
    Operator's namespace, each on its vendor's nodes with the tolerations the fleet's chart
    values give every operand (the chart's own, then each NVIDIA pool's taint)."""
    fleet = FLEET + "platform:\n  gpuOperator: {provided: fleet}\n"
    vendors = {
        "ascend": ASCEND,
        "nvidia": BY_OPERATOR,
        "nvidia-h100": H100_EXPORTER_BY_OPERATOR,
    }
    b = build(tmp_path, fleet, vendors)
    tolerations = [
        CHART_DEFAULT,
        {"key": GPU, "operator": "Equal", "value": "nvidia-gpu", "effect": "NoSchedule"},
        {"key": GPU, "operator": "Equal", "value": "nvidia-h100", "effect": "NoSchedule"},
    ]
    h100_labels = {"app": "nvidia-dcgm-exporter", "accel-gitops.io/vendor": "nvidia-h100"}
    daemons = sitestack.site_daemons(b)
    assert shown(daemons) == [
        (
            "the NVIDIA GPU Operator's devicePlugin of vendor nvidia",
            "gpu-operator/nvidia-device-plugin-daemonset-nvidia",
            ["nvidia"],
            Location("values/vendors/nvidia.yaml", 1, 26),
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {
                    "name": "nvidia-device-plugin-daemonset-nvidia",
                    "namespace": "gpu-operator",
                    "labels": PLUGIN_LABELS,
                },
                "spec": {
                    "selector": {"matchLabels": PLUGIN_LABELS},
                    "template": {
                        "metadata": {"labels": PLUGIN_LABELS},
                        "spec": {
                            "nodeSelector": {GPU: "nvidia-gpu"},
                            "tolerations": tolerations,
                            "containers": [
                                {"name": "stand-in", "image": "registry.k8s.io/pause:3.10"}
                            ],
                        },
                    },
                },
            },
        ),
        (
            "the NVIDIA GPU Operator's exporter of vendor nvidia",
            "gpu-operator/nvidia-dcgm-exporter-nvidia",
            ["nvidia"],
            Location("values/vendors/nvidia.yaml", 2, 22),
            daemonset(
                "nvidia-dcgm-exporter-nvidia",
                "gpu-operator",
                EXPORTER_LABELS,
                {"nodeSelector": {GPU: "nvidia-gpu"}, "tolerations": tolerations},
                METRICS,
            ),
        ),
        (
            "the NVIDIA GPU Operator's exporter of vendor nvidia-h100",
            "gpu-operator/nvidia-dcgm-exporter-nvidia-h100",
            ["nvidia-h100"],
            Location("values/vendors/nvidia-h100.yaml", 5, 22),
            daemonset(
                "nvidia-dcgm-exporter-nvidia-h100",
                "gpu-operator",
                h100_labels,
                {"nodeSelector": {GPU: "nvidia-h100"}, "tolerations": tolerations},
                METRICS,
            ),
        ),
    ]
    assert sitestack.said(b, daemons) == [
        stood_in(
            "the NVIDIA GPU Operator's devicePlugin of vendor nvidia",
            "gpu-operator/nvidia-device-plugin-daemonset-nvidia",
            Location("values/vendors/nvidia.yaml", 1, 26),
        ),
        stood_in(
            "the NVIDIA GPU Operator's exporter of vendor nvidia",
            "gpu-operator/nvidia-dcgm-exporter-nvidia",
            Location("values/vendors/nvidia.yaml", 2, 22),
        ),
        stood_in(
            "the NVIDIA GPU Operator's exporter of vendor nvidia-h100",
            "gpu-operator/nvidia-dcgm-exporter-nvidia-h100",
            Location("values/vendors/nvidia-h100.yaml", 5, 22),
        ),
    ]


def test_the_sites_gpu_operator_runs_its_operands_with_the_tolerations_values_declare(
    tmp_path: Path,
) -> None:
    """platform.gpuOperator.provided: site with `tolerations`: the site's install gives them to
    every operand, in place of the chart's default (and none of the pools' taints is added)."""
    declared = [
        {"key": "example.com/site", "operator": "Exists"},
        {"key": GPU, "operator": "Equal", "value": "nvidia-gpu", "effect": "NoExecute"},
    ]
    fleet = FLEET + (
        "platform:\n"
        "  gpuOperator:\n"
        "    provided: site\n"
        "    tolerations:\n"
        "      - {key: example.com/site, operator: Exists}\n"
        f"      - {{key: {GPU}, operator: Equal, value: nvidia-gpu, effect: NoExecute}}\n"
    )
    b = build(tmp_path, fleet, {"nvidia": BY_OPERATOR})
    pod = {"nodeSelector": {GPU: "nvidia-gpu"}, "tolerations": declared}
    assert [(d.key, d.obj) for d in sitestack.site_daemons(b)] == [
        (
            "gpu-operator/nvidia-device-plugin-daemonset-nvidia",
            daemonset(
                "nvidia-device-plugin-daemonset-nvidia", "gpu-operator", PLUGIN_LABELS, pod, PAUSE
            ),
        ),
        (
            "gpu-operator/nvidia-dcgm-exporter-nvidia",
            daemonset("nvidia-dcgm-exporter-nvidia", "gpu-operator", EXPORTER_LABELS, pod, METRICS),
        ),
    ]


def test_the_sites_gpu_operator_without_declared_tolerations_keeps_the_charts_default(
    tmp_path: Path,
) -> None:
    """platform.gpuOperator.provided: site without `tolerations`: the chart's default alone,
    which tolerates none of the fleet's taints (SIM003 says so once the pods miss the nodes).
    A DRA driver values do not declare is neither stood in for nor said."""
    fleet = FLEET + "platform:\n  gpuOperator: {provided: site}\n"
    b = build(tmp_path, fleet, {"nvidia": BY_OPERATOR, "nvidia-dra": DRA_NVIDIA})
    pod = {"nodeSelector": {GPU: "nvidia-gpu"}, "tolerations": [CHART_DEFAULT]}
    daemons = sitestack.site_daemons(b)
    assert [(d.key, d.obj) for d in daemons] == [
        (
            "gpu-operator/nvidia-device-plugin-daemonset-nvidia",
            daemonset(
                "nvidia-device-plugin-daemonset-nvidia", "gpu-operator", PLUGIN_LABELS, pod, PAUSE
            ),
        ),
        (
            "gpu-operator/nvidia-dcgm-exporter-nvidia",
            daemonset("nvidia-dcgm-exporter-nvidia", "gpu-operator", EXPORTER_LABELS, pod, METRICS),
        ),
    ]
    assert [f.code for f in sitestack.said(b, daemons)] == ["SIM011", "SIM011"]


def test_no_stand_in_where_values_declare_no_operator(tmp_path: Path) -> None:
    """A vendor file hands its components to the GPU Operator, but platform: names none: this
    cluster runs no operator (PRV001 refuses the tree), so nothing stands in for it."""
    b = build(tmp_path, FLEET, {"ascend": ASCEND, "nvidia": BY_OPERATOR})
    assert sitestack.site_daemons(b) == []
    assert sitestack.said(b, []) == []


def test_the_fleets_dra_driver_runs_one_kubelet_plugin_for_all_its_vendors(
    tmp_path: Path,
) -> None:
    """platform.nvidiaDraDriver.provided: fleet, two vendor files claimed through it and one
    that is not: one stand-in kubelet plugin, in the chart's namespace with the chart's pod
    labels, its tolerations and node affinity as the fleet's chart values give them (every DRA
    pool's taint, each DRA vendor's selector label), its nodes both vendors'."""
    fleet = FLEET + "platform:\n  nvidiaDraDriver: {provided: fleet}\n"
    vendors = {
        "nvidia": "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, nodes: [g1]}\n",
        "nvidia-dra": DRA_NVIDIA,
        "nvidia-dra2": DRA_NVIDIA_2,
    }
    b = build(tmp_path, fleet, vendors)
    labels = {"nvidia-dra-driver-gpu-component": "kubelet-plugin"}
    terms = [
        {"matchExpressions": [{"key": GPU, "operator": "In", "values": ["nvidia-gpu-dra"]}]},
        {"matchExpressions": [{"key": GPU, "operator": "In", "values": ["nvidia-gpu-dra2"]}]},
    ]
    pod = {
        "tolerations": [
            {"key": "example.com/dra", "operator": "Exists", "effect": "NoExecute"},
            {"key": GPU, "operator": "Equal", "value": "nvidia-gpu", "effect": "NoSchedule"},
        ],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
            }
        },
    }
    at = Location("values/fleet.yaml", 6, 3)
    daemons = sitestack.site_daemons(b)
    assert shown(daemons) == [
        (
            "the NVIDIA DRA driver's kubelet plugin",
            "nvidia-dra-driver-gpu/nvidia-dra-driver-gpu-kubelet-plugin",
            ["nvidia-dra", "nvidia-dra2"],
            at,
            daemonset(
                "nvidia-dra-driver-gpu-kubelet-plugin", "nvidia-dra-driver-gpu", labels, pod, PAUSE
            ),
        )
    ]
    assert sitestack.said(b, daemons) == [
        stood_in(
            "the NVIDIA DRA driver's kubelet plugin",
            "nvidia-dra-driver-gpu/nvidia-dra-driver-gpu-kubelet-plugin",
            at,
        )
    ]


def test_the_sites_dra_driver_is_said_not_simulated_after_the_stand_ins(tmp_path: Path) -> None:
    """platform.nvidiaDraDriver.provided: site: no stand-in (its tolerations and affinity are
    not in values), and a SIM011 at its platform entry, after the Operator's stand-ins'."""
    fleet = FLEET + (
        "platform:\n  gpuOperator: {provided: site}\n  nvidiaDraDriver: {provided: site}\n"
    )
    b = build(tmp_path, fleet, {"nvidia": BY_OPERATOR, "nvidia-dra": DRA_NVIDIA})
    daemons = sitestack.site_daemons(b)
    assert [d.key for d in daemons] == [
        "gpu-operator/nvidia-device-plugin-daemonset-nvidia",
        "gpu-operator/nvidia-dcgm-exporter-nvidia",
    ]
    assert sitestack.said(b, daemons)[2:] == [
        Finding(
            "SIM011",
            "the NVIDIA DRA driver is the site's (platform.nvidiaDraDriver.provided: site): its "
            "tolerations and node affinity are not known here, so where its kubelet plugin lands "
            "was not simulated; preflight checks it on the cluster (PRE013)",
            Location("values/fleet.yaml", 7, 3),
            hint=HINT,
            severity=Severity.WARNING,
        )
    ]
    assert len(sitestack.said(b, daemons)) == 3


def test_a_stand_ins_port_without_a_name_is_given_by_its_number() -> None:
    """No operator in the catalog has an exporter port without a name today; a stand-in of one
    would declare the number alone (a PodMonitor then scrapes it by portNumber)."""
    obj = sitestack._daemonset("x", "ns", {"app": "x"}, {}, ("", 9100))
    assert obj["spec"]["template"]["spec"]["containers"] == [
        {**PAUSE, "ports": [{"containerPort": 9100}]}
    ]


def test_a_dra_driver_of_an_addon_the_catalog_does_not_know_leaves_the_fleets_stood_in(
    tmp_path: Path,
) -> None:
    """A vendor file that writes its own DRA driver may name an add-on no catalog entry is
    (`acmeDra`, before nvidiaDraDriver in order): nothing installs it here, and the driver the
    fleet installs for the other vendor is still stood in for."""
    acme = DRA_NVIDIA.replace("allocation: dra\n", "allocation: dra\ndraDriver: {addon: acmeDra}\n")
    fleet = FLEET + "platform:\n  nvidiaDraDriver: {provided: fleet}\n"
    b = build(tmp_path, fleet, {"acme": acme.replace("-dra", "-acme"), "nvidia-dra": DRA_NVIDIA})
    daemons = sitestack.site_daemons(b)
    assert [(d.key, [v.id for v in d.vendors]) for d in daemons] == [
        ("nvidia-dra-driver-gpu/nvidia-dra-driver-gpu-kubelet-plugin", ["nvidia-dra"])
    ]
    assert [f.location for f in sitestack.said(b, daemons)] == [Location("values/fleet.yaml", 6, 3)]
