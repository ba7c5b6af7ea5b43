"""A vendor's node components provided by NVIDIA's GPU Operator (docs/brownfield.md): the fleet
renders what it provides and nothing the Operator runs, labels each pool's nodes so that the
Operator runs only what it provides there, and, when it installs the Operator, writes the chart
values the fleet's nodes need. Expected values are written out from the GPU Operator's source
(NVIDIA/gpu-operator v25.3.4, cited in the catalog)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from generator.builders import operators
from generator.builders.fleet import Build
from generator.builders.monitoring import scrape
from generator.builders.monitoring.sources import exporters
from generator.values import loader as values
from generator.values.model import FleetView
from generator.vocab.objects import Obj
from generator.workloads.model import Workloads
from tests.fixtures import AMD_MI250X, DRA_NVIDIA, NVIDIA, PROD_FLEET, tree

SITE_OPERATOR = PROD_FLEET + "platform: {gpuOperator: {provided: site}}\n"
FLEET_OPERATOR = PROD_FLEET + "platform: {gpuOperator: {provided: fleet}}\n"
BY_OPERATOR = NVIDIA + "devicePlugin: {provided: operator}\nexporter: {provided: operator}\n"
# A time-sliced NVIDIA vendor file (tests/fixtures.py SHARED_NVIDIA) with its providers named.
SHARED = """\
catalog: nvidia
sharing:
  timeSlicing: {{replicas: 4}}
nodeLabels: {{accelerator: nvidia-gpu-shared}}
devicePlugin: {{name: nvidia-device-plugin-shared, provided: {plugin}}}
exporter: {{name: dcgm-exporter-shared, provided: {exporter}}}
pools:
  - {{name: a100-shared, model: A100, devicesPerNode: 1, nodes: [n3]}}
"""


def view_of(tmp_path: Path, fleet: str, vendors: dict[str, str]) -> FleetView:
    files = {f"vendors/{name}": text for name, text in vendors.items()}
    root = tree(tmp_path / "repo", files, fleet=fleet, defaults=False)
    return values.load(root).envs["prod"]


def objects(view: FleetView) -> list[Obj]:
    return [o for c in Build(view).components for o in c.objects]


def named(objs: list[Obj], kind: str) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs if o["kind"] == kind)


def rule_labels(objs: list[Obj], vendor: str) -> dict[str, str]:
    [rule] = [o for o in objs if o["kind"] == "NodeFeatureRule" and o["metadata"]["name"] == vendor]
    [pool] = rule["spec"]["rules"]
    labels: dict[str, str] = pool["labels"]
    return labels


def test_a_vendor_whose_plugin_and_exporter_the_operator_runs_renders_neither(
    tmp_path: Path,
) -> None:
    view = view_of(tmp_path, SITE_OPERATOR, {"nvidia.yaml": BY_OPERATOR})
    objs = objects(view)
    assert named(objs, "DaemonSet") == []
    # The Operator runs both on these nodes: no label keeps it off them.
    assert rule_labels(objs, "accel-nvidia") == {
        "feature.node.kubernetes.io/accelerator": "nvidia-gpu",
        "feature.node.kubernetes.io/gpu-brand": "nvidia",
        "feature.node.kubernetes.io/gpu-model": "A100",
    }


def test_the_fleets_own_plugin_beside_the_operator_keeps_the_operators_off_its_nodes(
    tmp_path: Path,
) -> None:
    """The fleet's plugin and exporter where the Operator runs: the nodes get the Operator's
    per-node switches set to "false", so each component has one provider."""
    view = view_of(tmp_path, SITE_OPERATOR, {"nvidia.yaml": NVIDIA})
    objs = objects(view)
    assert named(objs, "DaemonSet") == ["dcgm-exporter", "nvidia-device-plugin"]
    assert rule_labels(objs, "accel-nvidia") == {
        "feature.node.kubernetes.io/accelerator": "nvidia-gpu",
        "feature.node.kubernetes.io/gpu-brand": "nvidia",
        "feature.node.kubernetes.io/gpu-model": "A100",
        "nvidia.com/gpu.deploy.dcgm-exporter": "false",
        "nvidia.com/gpu.deploy.device-plugin": "false",
    }


def test_without_the_operator_no_switch_is_set(tmp_path: Path) -> None:
    objs = objects(view_of(tmp_path, PROD_FLEET, {"nvidia.yaml": NVIDIA}))
    assert "nvidia.com/gpu.deploy.device-plugin" not in rule_labels(objs, "accel-nvidia")


def test_the_operators_exporter_is_scraped_by_its_own_labels_on_the_vendors_nodes_only(
    tmp_path: Path,
) -> None:
    """Two vendor files on one Operator: each PodMonitor selects the Operator's dcgm-exporter
    pods (app: nvidia-dcgm-exporter, port metrics) and keeps those on its own nodes."""
    shared = SHARED.format(plugin="fleet", exporter="operator")
    view = view_of(
        tmp_path, SITE_OPERATOR, {"nvidia.yaml": BY_OPERATOR, "nvidia-shared.yaml": shared}
    )
    specs = {e.vendor: scrape.pod_monitor_spec(e) for e in exporters(view)}
    for vendor, value in (("nvidia", "nvidia-gpu"), ("nvidia-shared", "nvidia-gpu-shared")):
        spec = specs[vendor]
        assert spec["selector"] == {"matchLabels": {"app": "nvidia-dcgm-exporter"}}
        assert spec["namespaceSelector"] == {"any": True}
        assert spec["attachMetadata"] == {"node": True}
        [endpoint] = spec["podMetricsEndpoints"]
        assert endpoint["port"] == "metrics"
        assert endpoint["relabelings"][0] == {
            "action": "keep",
            "sourceLabels": ["__meta_kubernetes_node_label_feature_node_kubernetes_io_accelerator"],
            "regex": value,
        }


def chart_values(tmp_path: Path, fleet: str, vendors: dict[str, str]) -> dict[str, Any]:
    return operators.gpu_operator_chart_values(Workloads(view_of(tmp_path, fleet, vendors)))


def test_the_operator_the_fleet_installs_runs_what_the_vendors_hand_it_and_tolerates_the_taints(
    tmp_path: Path,
) -> None:
    text = NVIDIA + "devicePlugin: {provided: operator}\n"
    assert chart_values(tmp_path, FLEET_OPERATOR, {"nvidia.yaml": text}) == {
        "daemonsets": {
            "tolerations": [
                # the chart's own, kept: a list in values replaces it
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                # the NVIDIA catalog's taint, which the fleet's NFD rule puts on the pool
                {
                    "key": "feature.node.kubernetes.io/accelerator",
                    "operator": "Equal",
                    "value": "nvidia-gpu",
                    "effect": "NoSchedule",
                },
            ]
        },
        "devicePlugin": {"enabled": True},
        "dcgmExporter": {"enabled": False},
        # nodeConfig.method nfd (the default) declares the fleet's NFD: the Operator's stays off
        "nfd": {"enabled": False},
        # the release's image tag, not the source tree's appVersion placeholder devel-ubi8
        "operator": {"version": "v25.3.4"},
        "validator": {"version": "v25.3.4"},
        "nodeStatusExporter": {"version": "v25.3.4"},
    }


def test_time_slicing_through_the_operator_is_its_plugin_config_and_node_label(
    tmp_path: Path,
) -> None:
    shared = SHARED.format(plugin="operator", exporter="fleet")
    view = view_of(tmp_path, FLEET_OPERATOR, {"nvidia-shared.yaml": shared})
    plugin = operators.gpu_operator_chart_values(Workloads(view))["devicePlugin"]
    assert plugin == {
        "enabled": True,
        "config": {
            "name": "accel-device-plugin-configs",
            "create": True,
            "default": "",
            "data": {
                # the file the fleet's own plugin reads (base/device-plugins/nvidia-shared)
                "nvidia-shared": "sharing:\n"
                "  timeSlicing:\n"
                "    failRequestsGreaterThanOne: true\n"
                "    renameByDefault: true\n"
                "    resources:\n"
                "    - name: nvidia.com/gpu\n"
                "      replicas: 4\n"
                "version: v1\n"
            },
        },
    }
    labels = rule_labels(objects(view), "accel-nvidia-shared")
    assert labels["nvidia.com/device-plugin.config"] == "nvidia-shared"
    assert labels["nvidia.com/gpu.deploy.dcgm-exporter"] == "false"  # the fleet's exporter
    assert named(objects(view), "DaemonSet") == ["dcgm-exporter-shared"]


def test_the_operators_runtime_class_is_left_to_it(tmp_path: Path) -> None:
    """runtimeClass: nvidia is the RuntimeClass the Operator creates: with the Operator in the
    cluster the fleet renders no second copy; without it, the fleet renders it."""
    text = NVIDIA + "runtimeClass: nvidia\n"
    with_op = objects(view_of(tmp_path / "a", SITE_OPERATOR, {"nvidia.yaml": text}))
    without = objects(view_of(tmp_path / "b", PROD_FLEET, {"nvidia.yaml": text}))
    assert (named(with_op, "RuntimeClass"), named(without, "RuntimeClass")) == ([], ["nvidia"])


def test_only_the_component_the_operator_does_not_provide_is_switched_off(
    tmp_path: Path,
) -> None:
    """The Operator runs the plugin (unshared: no config to pick), the fleet the exporter: the
    exporter's switch alone is "false"."""
    text = NVIDIA + "devicePlugin: {provided: operator}\n"
    objs = objects(view_of(tmp_path, SITE_OPERATOR, {"nvidia.yaml": text}))
    assert rule_labels(objs, "accel-nvidia") == {
        "feature.node.kubernetes.io/accelerator": "nvidia-gpu",
        "feature.node.kubernetes.io/gpu-brand": "nvidia",
        "feature.node.kubernetes.io/gpu-model": "A100",
        "nvidia.com/gpu.deploy.dcgm-exporter": "false",
    }


def test_the_operator_tolerates_its_vendors_taints_alone_by_key_and_value(
    tmp_path: Path,
) -> None:
    """AMD, beside NVIDIA, has no operator: its taint is not the GPU Operator's. NVIDIA's pools
    taint b before a, and the pool without taints of its own has the catalog's."""
    nvidia = (
        "devicePlugin: {provided: operator}\n"
        "exporter: {provided: operator}\n"
        "pools:\n"
        "  - name: a100\n"
        "    model: A100\n"
        "    devicesPerNode: 4\n"
        "    nodes: [n1]\n"
        "    taints:\n"
        "      - {key: example.com/zone, value: b, effect: NoSchedule}\n"
        "      - {key: example.com/zone, value: a, effect: NoSchedule}\n"
        "  - {name: h100, model: H100, devicesPerNode: 8, nodes: [n2]}\n"
    )
    vendors = {"amd.yaml": AMD_MI250X, "nvidia.yaml": nvidia}
    assert chart_values(tmp_path, FLEET_OPERATOR, vendors) == {
        "daemonsets": {
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {
                    "key": "example.com/zone",
                    "operator": "Equal",
                    "value": "a",
                    "effect": "NoSchedule",
                },
                {
                    "key": "example.com/zone",
                    "operator": "Equal",
                    "value": "b",
                    "effect": "NoSchedule",
                },
                {
                    "key": "feature.node.kubernetes.io/accelerator",
                    "operator": "Equal",
                    "value": "nvidia-gpu",
                    "effect": "NoSchedule",
                },
            ]
        },
        "devicePlugin": {"enabled": True},
        "dcgmExporter": {"enabled": True},
        "nfd": {"enabled": False},
        "operator": {"version": "v25.3.4"},
        "validator": {"version": "v25.3.4"},
        "nodeStatusExporter": {"version": "v25.3.4"},
    }


def test_the_dra_driver_lands_on_every_dra_pool_and_only_there(tmp_path: Path) -> None:
    """Two DRA vendors and a plain NVIDIA one: the kubelet plugin tolerates the DRA pools'
    taints (in key order; the plain pool's example.com/plain is not among them) and requires a
    node of either DRA vendor (one term each: terms are ORed), by the labels NFD writes."""
    plain = (
        "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1],\n"
        "     taints: [{key: example.com/plain, effect: NoSchedule}]}\n"
    )
    dra2 = DRA_NVIDIA.replace("-dra", "-dra2").replace(
        "[n4]", "[n5],\n     taints: [{key: example.com/dra, effect: NoExecute}]"
    )
    fleet = PROD_FLEET + "platform: {nvidiaDraDriver: {provided: fleet}}\n"
    vendors = {"nvidia.yaml": plain, "nvidia-dra.yaml": DRA_NVIDIA, "nvidia-dra2.yaml": dra2}
    view = view_of(tmp_path, fleet, vendors)
    assert operators.dra_driver_chart_values(Workloads(view)) == {
        "kubeletPlugin": {
            "tolerations": [
                {"key": "example.com/dra", "operator": "Exists", "effect": "NoExecute"},
                # NVIDIA's catalog taint, on nvidia-dra's pool (its nodeLabels do not change it)
                {
                    "key": "feature.node.kubernetes.io/accelerator",
                    "operator": "Equal",
                    "value": "nvidia-gpu",
                    "effect": "NoSchedule",
                },
            ],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "feature.node.kubernetes.io/accelerator",
                                        "operator": "In",
                                        "values": ["nvidia-gpu-dra"],
                                    }
                                ]
                            },
                            {
                                "matchExpressions": [
                                    {
                                        "key": "feature.node.kubernetes.io/accelerator",
                                        "operator": "In",
                                        "values": ["nvidia-gpu-dra2"],
                                    }
                                ]
                            },
                        ]
                    }
                }
            },
        },
        "gpuResourcesEnabledOverride": True,
    }


def test_the_operators_exporter_is_found_on_the_port_its_contract_gives(tmp_path: Path) -> None:
    """A vendor file's exporter.port is its own manifest's: the Operator's dcgm-exporter listens
    on 9400 (its DaemonSet's container port metrics), whatever the vendor file says."""
    text = (
        NVIDIA + "devicePlugin: {provided: operator}\nexporter: {provided: operator, port: 9500}\n"
    )
    [exp] = exporters(view_of(tmp_path, SITE_OPERATOR, {"nvidia.yaml": text}))
    assert (exp.port_name, exp.port) == ("metrics", 9400)
    job = scrape.scrape_config(exp)
    assert {
        "action": "keep",
        "source_labels": ["__meta_kubernetes_pod_container_port_number"],
        "regex": "9400",
    } in job["relabel_configs"]
