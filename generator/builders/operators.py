"""A vendor's operator (NVIDIA's GPU Operator) as the provider of some of the vendor's node
components, beside the fleet (docs/brownfield.md).

Each component of a vendor (its device plugin, its exporter) has one provider: the fleet renders
it, the vendor's operator runs it (`<component>.provided: operator`), or the site installed it
another way (`site`). An operator that runs in a cluster puts each operand on every node of its
vendor unless told otherwise: the GPU Operator labels a GPU node
`nvidia.com/gpu.deploy.<operand>=true`, runs each operand only where its label is "true", and keeps
a value already on the node (the catalog's `operator` contract cites its source). So on the pools
of a vendor whose component is not the operator's, the fleet labels the nodes "false": one
provider per component and node.

What the operator must agree with the fleet on, the fleet writes into its chart's values when the
fleet renders it (`platform.gpuOperator.provided: fleet`): the operands the vendor files hand to it
and no others, tolerations for the fleet's taints, and NFD only when the fleet's NFD does not run.
"""

from __future__ import annotations

from typing import Any

from generator.builders import platform
from generator.builders.common import toleration
from generator.builders.device_plugins import plugin_config
from generator.values.model import (
    DEVICE_PLUGIN,
    EXPORTER,
    FleetView,
    Taint,
    Vendor,
    VendorOperator,
)
from generator.values.yamlio import dump
from generator.vocab import addons
from generator.vocab.addons import OPERATOR
from generator.workloads.model import Workloads

GPU_OPERATOR = "gpuOperator"
NVIDIA_DRA = "nvidiaDraDriver"

# The ConfigMap the Operator's device plugin picks its config from, one key per vendor file: the
# node label `nvidia.com/device-plugin.config` names the key (assets/state-device-plugin/
# 0500_daemonset.yaml v25.3.4, the config-manager's NODE_LABEL; templates/plugin_config.yaml
# creates the ConfigMap from devicePlugin.config.data when `create` is true).
PLUGIN_CONFIGS = "accel-device-plugin-configs"


def running(view: FleetView, vendor: Vendor) -> VendorOperator | None:
    """The vendor's operator when this cluster runs it (rendered by the fleet or the site's)."""
    op = vendor.operator
    if op is None or op.addon not in addons.BY_KEY:
        return None
    return op if platform.provided(view, addons.BY_KEY[op.addon]) is not None else None


def handover_labels(view: FleetView, vendor: Vendor) -> dict[str, str]:
    """Node labels for the vendor's pools that leave each component to its one provider: "false"
    on the operator's deploy label of every component the operator does not provide, and the
    device-plugin config's key where the operator's plugin shares the devices."""
    op = running(view, vendor)
    if op is None:
        return {}
    out = {
        part.deploy_label: "false"
        for component, part in sorted(op.parts.items())
        if vendor.provider(component) != OPERATOR
    }
    plugin = op.parts.get(DEVICE_PLUGIN)
    shared = vendor.plugin_provider == OPERATOR and plugin_config(vendor) is not None
    if plugin is not None and plugin.config_label and shared:
        out[plugin.config_label] = vendor.id
    return out


def _vendors(view: FleetView, addon: str) -> list[Vendor]:
    return [v for v in view.vendors if v.operator is not None and v.operator.addon == addon]


def gpu_operator_tolerations(view: FleetView) -> list[dict[str, str]]:
    """The GPU Operator's `daemonsets.tolerations` the fleet's pools need: the chart's own first
    (values replace its list rather than add to it), then one for every taint the fleet puts on
    the NVIDIA pools. The chart's values when the fleet renders it; what preflight asks of the
    site's ClusterPolicy (PRE015) when not."""
    vendors = _vendors(view, GPU_OPERATOR)
    defaults = {
        tuple(sorted(t.items())): t for v in vendors if v.operator for t in v.operator.tolerations
    }
    return [*defaults.values(), *_taint_tolerations(vendors)]


def _taint_tolerations(vendors: list[Vendor]) -> list[dict[str, str]]:
    """One toleration per taint the fleet puts on the vendors' pools, by key and value."""
    taints: dict[Taint, None] = {}
    for vendor in vendors:
        for taint in vendor.all_taints:
            taints.setdefault(taint)
    return [toleration(t) for t in sorted(taints, key=lambda t: (t.key, t.value))]


def gpu_operator_chart_values(workloads: Workloads) -> dict[str, Any]:
    """Values of the GPU Operator's chart when the fleet renders it (NVIDIA/gpu-operator v25.3.4
    deployments/gpu-operator/values.yaml):

    - `devicePlugin.enabled`, `dcgmExporter.enabled`: true only when a vendor file hands that
      component to the Operator (the fleet renders the others, and labels their nodes "false");
    - `daemonsets.tolerations`: the chart's own tolerations and every taint the fleet puts on the
      NVIDIA pools, so that the operands (driver, toolkit, plugin, GFD, MIG manager) still land
      on those nodes after their next restart;
    - `nfd.enabled: false` where the fleet's NFD (or the site's, declared) labels the nodes: the
      Operator finds its GPU nodes by NFD's `pci-0302_10de.present` label as well
      (controllers/state_manager.go gpuNodeLabels), and two NFDs would fight over the labels;
    - `devicePlugin.config`: a vendor file whose devices the Operator's plugin shares gets its
      plugin config file (the same the fleet's plugin would read) under its own key, and its
      nodes the label that picks it.
    """
    view = workloads.view
    vendors = _vendors(view, GPU_OPERATOR)
    configs = {
        v.id: dump(config)
        for v in vendors
        if v.plugin_provider == OPERATOR and (config := plugin_config(v)) is not None
    }
    plugin: dict[str, Any] = {
        "enabled": any(v.provider(DEVICE_PLUGIN) == OPERATOR for v in vendors)
    }
    if configs:
        plugin["config"] = {
            "name": PLUGIN_CONFIGS,
            "create": True,
            "default": "",
            "data": dict(sorted(configs.items())),
        }
    nfd = platform.provided(view, addons.BY_KEY["nfd"]) is not None
    # The chart in the source tree says appVersion "devel-ubi8", a placeholder its release
    # replaces, and the operator's and validator's images take their tag from it unless set
    # (templates/_helpers.tpl gpu-operator.fullimage, templates/clusterpolicy.yaml). The release's
    # images are tagged with its VERSION (versions.mk `VERSION ?= v25.3.4`, Makefile `IMAGE_TAG ?=
    # $(VERSION)`): set, the render validate makes offline from the module names the images the
    # release runs, and Argo CD's render from the chart repository names the same.
    release = {"version": gpu_operator_release()}
    return {
        "daemonsets": {"tolerations": gpu_operator_tolerations(view)},
        "devicePlugin": plugin,
        "dcgmExporter": {"enabled": any(v.provider(EXPORTER) == OPERATOR for v in vendors)},
        "nfd": {"enabled": not nfd},
        "operator": dict(release),
        "validator": dict(release),
        "nodeStatusExporter": dict(release),
    }


def gpu_operator_release() -> str:
    """The GPU Operator release the fleet installs: its chart's version."""
    chart = addons.BY_KEY[GPU_OPERATOR].chart
    assert chart is not None  # the catalog of add-ons gives the GPU Operator a chart
    return chart.version


def dra_driver_chart_values(workloads: Workloads) -> dict[str, Any]:
    """Values of NVIDIA's DRA driver chart when the fleet renders it (NVIDIA/k8s-dra-driver-gpu
    v25.12.0 deployments/helm/nvidia-dra-driver-gpu):

    - `kubeletPlugin.tolerations`: every taint the fleet puts on the DRA pools; the chart's
      default is none, so its kubelet plugin would never land on them;
    - `kubeletPlugin.affinity`: the DRA pools' selector labels as they are on the nodes. The
      chart's default requires `feature.node.kubernetes.io/pci-10de.present`, which the fleet's
      NFD does not write (its pci source labels by class and vendor, `pci-0302_10de.present`:
      node-feature-discovery v0.19.0 source/pci/pci.go), or labels of the GPU Operator; a list in
      values replaces the chart's terms;
    - `gpuResourcesEnabledOverride: true`: the chart refuses to serve whole GPUs
      (`resources.gpus.enabled`, its default) unless told that no standard device plugin runs on
      the same nodes (templates/validation.yaml). On the DRA pools none does: the fleet renders
      no plugin for a DRA vendor, and labels the nodes nvidia.com/gpu.deploy.device-plugin=false
      where the GPU Operator runs (handover_labels).
    """
    view = workloads.view
    vendors = [v for v in view.vendors if v.dra is not None and v.dra.addon == NVIDIA_DRA]
    terms = [
        {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
        for key, value in sorted(
            {kv for v in vendors for kv in view.fleet.node_selector(v.selector).items()}
        )
    ]
    plugin: dict[str, Any] = {"tolerations": _taint_tolerations(vendors)}
    if terms:
        plugin["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
            }
        }
    return {"kubeletPlugin": plugin, "gpuResourcesEnabledOverride": True}


def operand_tolerations(workloads: Workloads, op: VendorOperator) -> list[dict[str, Any]]:
    """The tolerations the operator's operands run with in this cluster: what the fleet's chart
    values give them when the fleet installs it; what values say the site's install gives
    (`platform.<addon>.tolerations`), else its chart's default, when the site runs it."""
    view = workloads.view
    if platform.provided(view, addons.BY_KEY[op.addon]) == addons.FLEET:
        return list(TOLERATIONS_OF_OPERATORS[op.addon](view))
    declared = view.fleet.doc.get("platform", op.addon, "tolerations")
    return [dict(t) for t in declared] if declared is not None else list(op.tolerations)


# What each operator the fleet can install gives its operands, by its add-on key (the same list
# its chart values carry).
TOLERATIONS_OF_OPERATORS = {GPU_OPERATOR: gpu_operator_tolerations}
