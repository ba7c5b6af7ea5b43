"""Rendering an add-on's chart from its Go module (generator/render/charts.py): a chart whose
subcharts its module does not ship renders only with each of them switched off."""

from __future__ import annotations

import pytest
import yaml

from generator.render.charts import ChartError, disabled_dependencies, render_chart
from generator.vocab import addons

META = {
    "name": "c",
    "dependencies": [
        {"name": "jobset", "condition": "jobset.install"},
        {"name": "lws", "condition": "dataCache.enabled,dataCache.lws.install"},
    ],
}
DEFAULTS = {"jobset": {"install": True}, "dataCache": {"enabled": False, "lws": {"install": True}}}


def test_a_subchart_switched_off_by_the_values_passes() -> None:
    disabled_dependencies(META, {"jobset": {"install": False}}, DEFAULTS)


def test_a_subchart_on_by_the_charts_default_is_refused_with_the_setting_to_change() -> None:
    with pytest.raises(ChartError, match=r"subchart jobset.*set jobset.install to false"):
        disabled_dependencies(META, {}, DEFAULTS)


def test_the_first_set_path_of_a_condition_decides() -> None:
    """helm: the first path of a comma-separated condition that is set decides."""
    off = {"jobset": {"install": False}}
    disabled_dependencies(META, off, DEFAULTS)  # dataCache.enabled false (default) decides
    with pytest.raises(ChartError, match="subchart lws"):
        disabled_dependencies(META, {**off, "dataCache": {"enabled": True}}, DEFAULTS)
    # an unset first path: the second decides
    with pytest.raises(ChartError, match="subchart lws"):
        disabled_dependencies(META, off, {"dataCache": {"lws": {"install": True}}})
    # a condition that nothing sets: refused (helm renders the subchart)
    with pytest.raises(ChartError, match="subchart lws"):
        disabled_dependencies(META, off, {})


def test_kubeflow_trainers_chart_renders_from_its_module_without_its_subcharts() -> None:
    chart = addons.BY_KEY["trainer"].chart
    assert chart is not None
    values = {"jobset": {"install": False}, "runtimes": {"torchDistributed": {"enabled": True}}}
    docs = [d for d in yaml.safe_load_all(render_chart(chart, values, "1.36")) if d]
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert ("ClusterTrainingRuntime", "torch-distributed") in kinds
    assert ("CustomResourceDefinition", "trainjobs.trainer.kubeflow.org") in kinds
    # no JobSet of its own: the fleet's JobSet add-on is the cluster's
    assert not any("jobset" in name for kind, name in kinds if kind != "ClusterTrainingRuntime")
    with pytest.raises(ChartError, match="set jobset.install to false"):
        render_chart(chart, {}, "1.36")


def test_the_gpu_operators_chart_renders_from_its_module_with_its_own_nfd() -> None:
    """NVIDIA/gpu-operator v25.3.4 ships its NFD subchart in charts/ (its module holds it): the
    chart renders as it is, NFD on or off, and the ClusterPolicy carries the operands' values."""
    chart = addons.BY_KEY["gpuOperator"].chart
    assert chart is not None
    taint = {
        "key": "feature.node.kubernetes.io/accelerator",
        "operator": "Equal",
        "value": "nvidia-gpu",
        "effect": "NoSchedule",
    }
    values = {
        "daemonsets": {"tolerations": [taint]},
        "devicePlugin": {"enabled": False},
        "nfd": {"enabled": True},
    }
    docs = [d for d in yaml.safe_load_all(render_chart(chart, values, "1.36")) if d]
    [policy] = [d for d in docs if d["kind"] == "ClusterPolicy"]
    assert policy["spec"]["daemonsets"]["tolerations"] == [taint]
    assert policy["spec"]["devicePlugin"]["enabled"] is False
    daemonsets = sorted(d["metadata"]["name"] for d in docs if d["kind"] == "DaemonSet")
    assert daemonsets == ["gpu-operator-node-feature-discovery-worker"]
    off = {**values, "nfd": {"enabled": False}}
    docs = [d for d in yaml.safe_load_all(render_chart(chart, off, "1.36")) if d]
    assert [d for d in docs if d["kind"] == "DaemonSet"] == []
