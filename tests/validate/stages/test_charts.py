"""The charts stage (generator/validate/stages/charts.py): an add-on the fleet renders is
rendered offline from the chart inside its pinned module, with the values its Application
carries, and checked like a unit (CHART001); the Application must name that chart and version
(CHART002). NFD's chart is the one available here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from generator.builders import node_config
from generator.render.charts import addon_applications, render_chart
from generator.toolchain import registry
from generator.values import loader as values
from generator.vocab import addons
from tests.fixtures import FLEET, ml_tree, validate_committed, workloads_of

NFD = addons.BY_KEY["nfd"]
# A pool whose nodes carry a taint of their own, beside the vendor's.
NVIDIA = """\
pools:
  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1]}
  - name: h100
    model: H100
    devicesPerNode: 8
    nodes: [n2]
    taints: [{key: example.com/h100, value: reserved, effect: NoSchedule}]
"""
FLEET_NFD = FLEET + "platform:\n  nfd: {provided: fleet}\n"


def test_the_chart_validate_renders_is_the_version_argo_cd_installs() -> None:
    """The Application's chart version is the module's tag, and the tool module pins it."""
    chart = NFD.chart
    assert chart is not None and chart.module
    assert "v" + chart.version == chart.module_version
    gomod = (registry.GOTOOLS / chart.tool_module / "go.mod").read_text()
    assert re.search(rf"^\s*{re.escape(chart.module)} {chart.module_version}$", gomod, re.M)


def test_nfd_values_make_nfd_master_taint_and_nfd_worker_tolerate_every_pool(
    tmp_path: Path,
) -> None:
    """Rendered by NFD's own chart: nfd-master runs with -enable-taints, nfd-worker tolerates
    every taint of the fleet's pools (the vendor's, and the H100 pool's own), and the chart
    installs the NodeFeatureRule CRD the node-config unit's objects need."""
    view = values.load(ml_tree(tmp_path, {"vendors/nvidia.yaml": NVIDIA}, fleet=FLEET_NFD)).envs[
        "prod"
    ]
    generated = node_config.nfd_chart_values(workloads_of(view))
    assert generated == {
        "master": {"enableTaints": True},
        "worker": {
            "tolerations": [
                {
                    "key": "example.com/h100",
                    "operator": "Equal",
                    "value": "reserved",
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
        "postDeleteCleanup": False,
    }
    assert NFD.chart is not None
    docs = [d for d in yaml.safe_load_all(render_chart(NFD.chart, generated, "1.36")) if d]
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert ("CustomResourceDefinition", "nodefeaturerules.nfd.k8s-sigs.io") in kinds
    [master] = [d for d in docs if d["kind"] == "Deployment" and "master" in d["metadata"]["name"]]
    args = master["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "-enable-taints" in args
    [worker] = [d for d in docs if d["kind"] == "DaemonSet" and "worker" in d["metadata"]["name"]]
    assert worker["spec"]["template"]["spec"]["tolerations"] == generated["worker"]["tolerations"]
    # No post-delete hook that would prune every node's NFD labels and taints when the
    # Application is deleted (the chart's default has one: a Job running nfd-master -prune).
    assert [d for d in docs if d["kind"] == "Job"] == []
    # The chart's defaults, for contrast: no taints, nfd-worker tolerating nothing, the hook.
    plain = [d for d in yaml.safe_load_all(render_chart(NFD.chart, {}, "1.36")) if d]
    [prune] = [d for d in plain if d["kind"] == "Job"]
    assert prune["metadata"]["annotations"]["helm.sh/hook"] == "post-delete"
    assert "-prune" in prune["spec"]["template"]["spec"]["containers"][0]["args"]
    [plain_master] = [
        d for d in plain if d["kind"] == "Deployment" and "master" in d["metadata"]["name"]
    ]
    assert "-enable-taints" not in plain_master["spec"]["template"]["spec"]["containers"][0]["args"]


def test_addon_applications_keeps_only_addons_with_a_chart_in_a_module() -> None:
    def app(addon: str) -> dict[str, object]:
        return {
            "kind": "Application",
            "metadata": {"name": addon, "labels": {"accel-gitops.io/addon": addon}},
        }

    other = {
        "kind": "ConfigMap",
        "metadata": {"name": "x", "labels": {"accel-gitops.io/addon": "nfd"}},
    }
    found = addon_applications([app("nfd"), app("volcano"), app("unknown"), other])
    assert [(d["metadata"]["name"], a.key) for d, a in found] == [("nfd", "nfd")]


def test_validate_renders_the_committed_application_and_names_each_problem(
    tmp_path: Path,
) -> None:
    """The committed tree passes; a hand edit of the values it carries (refused by the chart's
    own values schema) and of its version are each reported at platform.nfd."""
    values_dir = ml_tree(tmp_path, fleet=FLEET_NFD)
    code, out = validate_committed(values_dir, "--no-cache", "--output", "json")
    doc = json.loads(out)
    assert code == 0, [f for f in doc["findings"] if f["severity"] == "error"]
    repo = values_dir.parent
    prod = repo / "overlays/prod/argocd/application-argocd-f-prod-nfd.yaml"
    prod.write_text(prod.read_text().replace("enableTaints: true", "enableTaints: maybe"))
    staging = repo / "overlays/staging/argocd/application-argocd-f-staging-nfd.yaml"
    staging.write_text(
        staging.read_text().replace("targetRevision: 0.19.0", "targetRevision: 0.18.3")
    )
    code, out = validate_committed(values_dir, "--no-cache", "--output", "json", drift=True)
    found = [f for f in json.loads(out)["findings"] if f["code"].startswith("CHART")]
    assert code == 1
    assert [(f["code"], f["file"], f["line"], f["unit"]) for f in found] == [
        ("CHART001", "values/fleet.yaml", 6, "overlays/prod/argocd"),
        ("CHART002", "values/fleet.yaml", 6, "overlays/staging/argocd"),
    ]
    assert "values don't meet the specifications of the schema" in found[0]["message"]
    assert "'0.18.3'" in found[1]["message"] and "'0.19.0'" in found[1]["message"]


def test_an_object_kubeconform_refuses_is_named_with_its_kind_name_and_reason(
    tmp_path: Path,
) -> None:
    """Two add-ons in one unit (NFD's and Kueue's charts), each judged on its own: a value the
    Kueue chart does not check makes a Deployment kubeconform refuses, named at platform.kueue."""
    fleet = FLEET_NFD + "  kueue: {provided: fleet}\nscheduling: {backend: kueue}\n"
    values_dir = ml_tree(tmp_path, fleet=fleet)
    code, out = validate_committed(values_dir, "--no-cache", "--output", "json")
    assert code == 0, [f for f in json.loads(out)["findings"] if f["severity"] == "error"]
    prod = values_dir.parent / "overlays/prod/argocd/application-argocd-f-prod-kueue.yaml"
    text = prod.read_text()
    assert "        controllerManager:\n" in text
    prod.write_text(
        text.replace(
            "        controllerManager:\n", "        controllerManager:\n          replicas: two\n"
        )
    )
    code, out = validate_committed(values_dir, "--no-cache", "--output", "json", drift=True)
    found = [f for f in json.loads(out)["findings"] if f["code"].startswith("CHART")]
    assert code == 1
    assert [(f["code"], f["line"], f["unit"]) for f in found] == [
        ("CHART001", 7, "overlays/prod/argocd")
    ]
    assert "Deployment kueue-controller-manager: " in found[0]["message"]
    assert "replicas" in found[0]["message"]


def test_the_gpu_operators_chart_is_checked_but_its_cluster_policy_left_to_the_api_server(
    tmp_path: Path,
) -> None:
    """The GPU Operator the fleet installs: every object of its chart passes kubeconform but the
    ClusterPolicy, whose CRD's default (operator.defaultRuntime) only the API server fills:
    said as CHART003, a warning at platform.gpuOperator, not refused as CHART001."""
    fleet = FLEET + "platform: {gpuOperator: {provided: fleet}}\n"
    vendor = (
        "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1, n2]}\n"
        "devicePlugin: {provided: operator}\nexporter: {provided: operator}\n"
    )
    values_dir = ml_tree(tmp_path, {"vendors/nvidia.yaml": vendor}, fleet=fleet)
    code, out = validate_committed(values_dir, "--no-cache", "--output", "json")
    found = [f for f in json.loads(out)["findings"] if f["code"].startswith("CHART")]
    assert code == 0, found
    assert [(f["code"], f["severity"], f["file"], f["line"], f["unit"]) for f in found] == [
        ("CHART003", "warning", "values/fleet.yaml", 5, "overlays/prod/argocd"),
        ("CHART003", "warning", "values/fleet.yaml", 5, "overlays/staging/argocd"),
    ]
    assert (
        "gives ClusterPolicy cluster-policy, which only the API server makes valid"
        in (found[0]["message"])
    )


def test_a_webhook_secret_its_controller_fills_is_left_to_the_cluster_or_refused(
    tmp_path: Path,
) -> None:
    """JobSet's chart (v0.11.1 templates/webhook/secret.yaml) ships its webhook Secret with empty
    data, which JobSet's certificate rotator fills. The rendered Application ignores that data and
    syncs with RespectIgnoreDifferences; with either taken out of the committed Application,
    Argo CD's self-heal would fight the rotator: CHART004 at platform.jobset, once per unit."""
    fleet = FLEET + "platform: {jobset: {provided: fleet}}\n"
    values_dir = ml_tree(tmp_path, fleet=fleet)
    code, out = validate_committed(values_dir, "--no-cache", "--output", "json")
    assert code == 0, [f for f in json.loads(out)["findings"] if f["severity"] == "error"]
    repo = values_dir.parent
    prod = repo / "overlays/prod/argocd/application-argocd-f-prod-jobset.yaml"
    app = yaml.safe_load(prod.read_text())
    assert app["spec"]["ignoreDifferences"] == [
        {
            "kind": "Secret",
            "name": "jobset-webhook-server-cert",
            "namespace": "jobset-system",
            "jsonPointers": ["/data"],
        }
    ]
    assert app["spec"]["syncPolicy"]["syncOptions"][-1] == "RespectIgnoreDifferences=true"
    del app["spec"]["ignoreDifferences"]
    prod.write_text(yaml.safe_dump(app, sort_keys=False))
    staging = repo / "overlays/staging/argocd/application-argocd-f-staging-jobset.yaml"
    staging.write_text(staging.read_text().replace("- RespectIgnoreDifferences=true\n", ""))
    code, out = validate_committed(values_dir, "--no-cache", "--output", "json", drift=True)
    found = [f for f in json.loads(out)["findings"] if f["code"].startswith("CHART")]
    assert code == 1
    assert [(f["code"], f["file"], f["line"], f["unit"]) for f in found] == [
        ("CHART004", "values/fleet.yaml", 5, "overlays/prod/argocd"),
        ("CHART004", "values/fleet.yaml", 5, "overlays/staging/argocd"),
    ]
    assert (
        "ships Secret jobset-system/jobset-webhook-server-cert with empty data"
        in (found[0]["message"])
    )
