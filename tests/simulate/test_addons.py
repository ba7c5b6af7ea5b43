"""What simulate takes from the add-ons the fleet renders (generator/simulate/addons.py): nfd-master's
flags and configuration file from NFD's chart as rendered with the Application's values, never
the simulation's own. The run itself: tests/cluster/test_cluster.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from generator.cluster.units import BuiltUnit
from generator.render.charts import render_chart
from generator.simulate.addons import (
    addon_application,
    nfd_applied,
    nfd_chart,
    nfd_master,
    rendered_controller,
)
from generator.simulate.kueue import integrations
from generator.vocab import addons
from tests.fixtures import FLEET, built_units

NFD = addons.BY_KEY["nfd"]
DEV_FLEET = FLEET.replace("environments: [staging, prod]", "environments: [dev]")
NVIDIA = "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1]}\n"


def chart_objects(values: dict[str, Any]) -> list[dict[str, Any]]:
    assert NFD.chart is not None
    return [d for d in yaml.safe_load_all(render_chart(NFD.chart, values, "1.36")) if d]


def rendered_nfd_master(built: list[BuiltUnit]) -> tuple[tuple[str, ...], str] | None:
    """nfd-master's flags and configuration as simulate takes them from the fleet's NFD chart."""
    objs = nfd_chart(built, "1.36")
    return None if objs is None else nfd_master(objs)


def test_nfd_master_flags_and_configuration_come_from_the_chart_values() -> None:
    """Whatever the values make of nfd-master reaches it: -enable-taints only when asked, the
    chart's extra flags and its configuration file; its listening ports are the plane's own."""
    args, conf = nfd_master(chart_objects({"master": {"enableTaints": True}})) or ((), "")
    assert args == ("-enable-taints",)
    plain, _ = nfd_master(chart_objects({})) or ((), "")
    assert plain == ()
    values = {
        "master": {
            "extraArgs": ["-v=4"],
            "config": {"noPublish": True},
        }
    }
    extra, conf = nfd_master(chart_objects(values)) or ((), "")
    assert extra == ("-v=4",)
    assert yaml.safe_load(conf) == {"noPublish": True}


def test_no_nfd_master_in_objects_without_one() -> None:
    assert nfd_master([{"kind": "ConfigMap", "metadata": {"name": "x"}}]) is None
    worker_only = chart_objects({"master": {"enable": False}})
    assert nfd_master(worker_only) is None


def test_the_fleets_nfd_application_or_none(tmp_path: Path) -> None:
    files = {"vendors/nvidia.yaml": NVIDIA}
    fleet = DEV_FLEET + "platform:\n  nfd: {provided: fleet}\n"
    _, _, built = built_units(tmp_path / "fleet", files, fleet)
    app = addon_application(built, "nfd")
    assert app is not None and app["metadata"]["name"] == "f-dev-nfd"
    assert rendered_nfd_master(built) == (("-enable-taints",), "null")
    _, _, site = built_units(tmp_path / "site", files, DEV_FLEET)
    assert addon_application(site, "nfd") is None
    assert rendered_nfd_master(site) is None


# ---- Kueue ------------------------------------------------------------------------------------

KUEUE_TEAM = (
    "quota: {nvidia: 2}\njobs:\n  j: {vendor: nvidia, devices: 1, images: {nvidia: r/t:1}}\n"
)


def test_the_fleets_kueue_runs_with_its_application_values(tmp_path: Path) -> None:
    files = {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": KUEUE_TEAM}
    fleet = DEV_FLEET + "scheduling: {backend: kueue}\nplatform:\n  kueue: {provided: fleet}\n"
    _, _, built = built_units(tmp_path, files, fleet)
    setup, site = rendered_controller(built, "kueue", "1.36")
    assert setup is not None and site is False
    # The fleet's integrations (batch Jobs only here), not the chart's default list.
    assert integrations(setup) == ["batch/job"]
    kinds = sorted({yaml.safe_load(t)["kind"] for t in setup.objects})
    assert (setup.service, setup.namespace) == ("kueue", "kueue-system")
    assert setup.args == ("--feature-gates=VisibilityOnDemand=false",)
    # Everything of the chart but what the process stands in for (kueue.NOT_APPLIED).
    assert "Deployment" not in kinds and "APIService" not in kinds and "ConfigMap" not in kinds
    assert {"CustomResourceDefinition", "MutatingWebhookConfiguration", "Secret", "Service"} <= set(
        kinds
    )


def test_the_sites_kueue_runs_with_the_charts_defaults(tmp_path: Path) -> None:
    files = {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": KUEUE_TEAM}
    _, _, built = built_units(tmp_path, files, DEV_FLEET + "scheduling: {backend: kueue}\n")
    setup, site = rendered_controller(built, "kueue", "1.36")
    assert setup is not None and site is True
    # charts/kueue/values.yaml v0.17.0: its default integration list, "pod" among them.
    assert integrations(setup)[0] == "batch/job" and "pod" in integrations(setup)


def test_no_kueue_where_nothing_needs_it(tmp_path: Path) -> None:
    files = {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": KUEUE_TEAM}
    _, _, built = built_units(tmp_path, files, DEV_FLEET)
    for key in ("kueue", "jobset", "lws"):
        assert rendered_controller(built, key, "1.36") == (None, False)


def test_nfd_master_is_found_behind_a_sidecar_and_without_a_configuration() -> None:
    deployment: dict[str, Any] = {
        "kind": "Deployment",
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "proxy", "command": ["envoy"]},
                        {"name": "m", "command": ["nfd-master"], "args": ["-port=1", "-v=2"]},
                    ]
                }
            }
        },
    }
    # The plane's own port flag dropped; no ConfigMap mounted: an empty configuration file.
    assert nfd_master([deployment]) == (("-v=2",), "")
    # A mounted ConfigMap without nfd-master.conf: empty too.
    spec = deployment["spec"]["template"]["spec"]
    spec["volumes"] = [{"name": "c", "configMap": {"name": "other"}}]
    other = {"kind": "ConfigMap", "metadata": {"name": "other"}, "data": {"x": "y"}}
    assert nfd_master([deployment, other]) == (("-v=2",), "")


def test_what_the_simulation_applies_of_the_nfd_chart(tmp_path: Path) -> None:
    files = {"vendors/nvidia.yaml": NVIDIA}
    fleet = DEV_FLEET + "platform:\n  nfd: {provided: fleet}\n"
    _, _, built = built_units(tmp_path, files, fleet)
    objs = nfd_chart(built, "1.36")
    assert objs is not None
    applied = {(o["kind"], o["metadata"]["name"]) for o in nfd_applied(objs)}
    # nfd-worker and the garbage collector run as the chart deploys them ...
    assert ("DaemonSet", "nfd-node-feature-discovery-worker") in applied
    assert ("Deployment", "nfd-node-feature-discovery-gc") in applied
    assert ("ConfigMap", "nfd-node-feature-discovery-worker-conf") in applied
    # ... but not the CRDs (the plane installs NFD's own), nor nfd-master's Deployment (the
    # process stands in for it).
    kinds = {kind for kind, _ in applied}
    assert "CustomResourceDefinition" not in kinds
    assert ("Deployment", "nfd-node-feature-discovery-master") not in applied
    # Helm hooks run at install or delete, never stay: the chart's own post-delete Job.
    hooked = [
        o
        for o in chart_objects({"postDeleteCleanup": True})
        if "helm.sh/hook" in (o["metadata"].get("annotations") or {})
    ]
    assert hooked
    assert not [o for o in nfd_applied(hooked + objs) if o in hooked]
    _, _, site = built_units(tmp_path / "site", files, DEV_FLEET)
    assert nfd_chart(site, "1.36") is None


def test_jobsets_and_leaderworkersets_controllers_run_from_their_charts(tmp_path: Path) -> None:
    """The fleet's JobSet chart with its Application's values, the site's LeaderWorkerSet with
    its chart's defaults: each manager's configuration, CRDs, webhooks and certificate Secret."""
    team = (
        "quota: {nvidia: 4}\njobs:\n  js:\n    kind: jobset\n    images: {nvidia: r/t:1}\n"
        "    tasks:\n      w: {vendor: nvidia, devices: 1, replicas: 2}\n"
        "services:\n  llm:\n    images: {nvidia: r/s:1}\n"
        "    tracks:\n      nvidia: {devicesPerReplica: 1, replicas: 1, groupSize: 2}\n"
    )
    fleet = DEV_FLEET + "platform:\n  jobset: {provided: fleet}\n  lws: {provided: site}\n"
    _, _, built = built_units(
        tmp_path, {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": team}, fleet
    )
    jobset, site = rendered_controller(built, "jobset", "1.36")
    assert jobset is not None and site is False
    assert (jobset.service, jobset.namespace, jobset.args) == ("jobset", "jobset-system", ())
    assert yaml.safe_load(jobset.config)["kind"] == "Configuration"
    assert jobset.groups() == {"jobset.x-k8s.io"}
    assert jobset.cert_secret() == "jobset-webhook-server-cert"  # named by the chart
    lws, site = rendered_controller(built, "lws", "1.36")
    assert lws is not None and site is True
    assert (lws.service, lws.namespace) == ("lws", "lws-system")
    assert lws.groups() == {"leaderworkerset.x-k8s.io"}
    # LeaderWorkerSet's chart names no Secret: the manager's default (lws v0.8.0 defaults.go).
    assert "webhookSecretName" not in lws.config
    assert lws.cert_secret() == "lws-webhook-server-cert"
    kinds = {yaml.safe_load(t)["kind"] for t in lws.objects}
    assert "Deployment" not in kinds and "ConfigMap" not in kinds
    assert {"CustomResourceDefinition", "ValidatingWebhookConfiguration", "Secret"} <= kinds
