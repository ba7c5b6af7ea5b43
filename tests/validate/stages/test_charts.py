"""The charts stage (generator/validate/stages/charts.py): an add-on the fleet renders is
rendered offline from the chart inside its pinned module, with the values its Application
carries, and checked like a unit (CHART001); the Application must name that chart and version
(CHART002). NFD's chart is the one available here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from generator.builders import node_config
from generator.render.charts import addon_applications, application_values, render_chart
from generator.toolchain import registry
from generator.values import loader as values
from generator.vocab import addons
from tests.fixtures import FLEET, ml_tree, render_committed, validate_committed, workloads_of

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


# ---- mirrors: the rendered charts pull every image from the mirrors ------------------------------
MIRRORED = """\
mirrors:
  registries:
    registry.k8s.io: mirror.example.cn/k8s
    nvcr.io: mirror.example.cn/nvcr
    ghcr.io: mirror.example.cn/ghcr
    docker.io: mirror.example.cn/hub
"""
MIRROR = "mirror.example.cn/"


def chart_images(docs: list[dict[str, Any]]) -> list[str]:
    """Every image the rendered objects name: each container's `image`, and each operand of a
    GPU Operator ClusterPolicy (`repository` and `image`, which the operator joins)."""
    out: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("image"), str) and "repository" in node:
                out.append(f"{node['repository']}/{node['image']}")
            elif isinstance(node.get("image"), str):
                out.append(node["image"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for doc in docs:
        walk(doc if doc.get("kind") != "CustomResourceDefinition" else {})
    return sorted(set(out))


def rendered_images(values_dir: Path) -> dict[str, list[str]]:
    """Each add-on Application of prod's render whose chart is in a module: the images of its
    chart rendered offline with the values it carries."""
    render_committed(values_dir)
    unit = values_dir.parent / "overlays/prod/argocd"
    docs = [yaml.safe_load(p.read_text()) for p in sorted(unit.glob("application-*.yaml"))]
    out = {}
    for app, addon in addon_applications(docs):
        assert addon.chart is not None
        text = render_chart(addon.chart, application_values(app), "1.36")
        out[addon.key] = chart_images([d for d in yaml.safe_load_all(text) if d])
    return out


def test_mirrored_charts_render_every_image_from_the_mirrors(tmp_path: Path) -> None:
    """Kueue, NFD, JobSet, LeaderWorkerSet and Kubeflow Trainer, each chart rendered by helm with
    the values its Application carries: every container image is the mirror's."""
    fleet = (
        FLEET
        + MIRRORED
        + "scheduling: {backend: kueue}\nplatform:\n"
        + "".join(f"  {k}: {{provided: fleet}}\n" for k in ("kueue", "nfd", "jobset", "lws"))
        + "  trainer: {provided: fleet}\n"
    )
    found = rendered_images(ml_tree(tmp_path, fleet=fleet))
    assert found == {
        "kueue": ["mirror.example.cn/k8s/kueue/kueue:v0.17.0"],
        "nfd": ["mirror.example.cn/k8s/nfd/node-feature-discovery:v0.19.0"],
        "jobset": ["mirror.example.cn/k8s/jobset/jobset:v0.11.1"],
        "lws": ["mirror.example.cn/k8s/lws/lws:v0.8.0"],
        "trainer": ["mirror.example.cn/ghcr/kubeflow/trainer/trainer-controller-manager:v2.2.0"],
    }


def test_the_gpu_operators_chart_names_every_operand_and_nfd_from_the_mirrors(
    tmp_path: Path,
) -> None:
    """The GPU Operator's chart with its NFD subchart (the fleet's NFD off): the operator's
    Deployment, every operand of the ClusterPolicy and NFD's pods name the mirror alone."""
    fleet = FLEET + MIRRORED + "nodeConfig: {method: node-patch}\n"
    fleet += "platform: {gpuOperator: {provided: fleet}}\n"
    vendor = (
        "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1, n2]}\n"
        "devicePlugin: {provided: operator}\nexporter: {provided: operator}\n"
    )
    found = rendered_images(ml_tree(tmp_path, {"vendors/nvidia.yaml": vendor}, fleet=fleet))
    images = found["gpuOperator"]
    # vgpuManager's image has no repository: the site builds it (NVIDIA's vGPU driver is not
    # published), and the operand is off unless a site turns it on.
    assert [i for i in images if not i.startswith(MIRROR)] == ["vgpu-manager"]
    # The release's tag, set in the values: the module's Chart.yaml says appVersion devel-ubi8,
    # a placeholder the release replaces.
    assert "mirror.example.cn/nvcr/nvidia/gpu-operator:v25.3.4" in images
    assert not [i for i in images if "devel-ubi8" in i]
    assert "mirror.example.cn/nvcr/nvidia/k8s/dcgm-exporter" in images
    assert "mirror.example.cn/nvcr/nvidia/cloud-native/k8s-driver-manager" in images
    assert "mirror.example.cn/k8s/nfd/node-feature-discovery:v0.17.3" in images


def test_validate_takes_the_mirrored_chart_repository_as_the_chart_it_renders(
    tmp_path: Path,
) -> None:
    """The Application installs NFD's chart from the mirror: validate renders it from the module
    (no CHART002); a hand edit back to the catalogue's repository is CHART002, naming the
    mirror."""
    values_dir = ml_tree(tmp_path, fleet=FLEET_NFD + MIRRORED)
    code, out = validate_committed(values_dir, "--no-cache", "--output", "json")
    assert code == 0, [f for f in json.loads(out)["findings"] if f["severity"] == "error"]
    prod = values_dir.parent / "overlays/prod/argocd/application-argocd-f-prod-nfd.yaml"
    text = prod.read_text()
    assert "repoURL: mirror.example.cn/k8s/nfd/charts" in text
    prod.write_text(text.replace("mirror.example.cn/k8s/nfd/charts", "registry.k8s.io/nfd/charts"))
    code, out = validate_committed(values_dir, "--no-cache", "--output", "json", drift=True)
    found = [f for f in json.loads(out)["findings"] if f["code"].startswith("CHART")]
    assert code == 1
    assert [(f["code"], f["file"], f["line"], f["unit"]) for f in found] == [
        ("CHART002", "values/fleet.yaml", 6, "overlays/prod/argocd")
    ]
    assert found[0]["message"].endswith(
        "it installs chart 'node-feature-discovery' '0.19.0' from 'registry.k8s.io/nfd/charts', "
        "but what validate renders is 'node-feature-discovery' '0.19.0' "
        "(sigs.k8s.io/node-feature-discovery@v0.19.0), from 'mirror.example.cn/k8s/nfd/charts'"
    )
