"""What simulate takes from the add-ons the fleet renders: it runs them as deployed, not with
settings of its own. NFD's chart (builders/platform.py, rendered offline by render/charts.py)
gives nfd-master's flags and configuration file; Kueue's, JobSet's and LeaderWorkerSet's give
their controller managers' configuration, CRDs and webhooks."""

from __future__ import annotations

from typing import Any

import yaml

from generator.builders.scheduling import named_runtimes, trainer_values
from generator.cluster.units import BuiltUnit
from generator.controlplane.controllers import ControllerSetup
from generator.render.charts import addon_applications, application_values, render_chart
from generator.simulate.kueue import kueue_setup
from generator.vocab import addons
from generator.vocab.kube import HELM_HOOK_ANNOTATION

# Flags the local control plane sets itself: where nfd-master listens.
OWN_FLAGS = ("-port=", "-metrics=", "-grpc-health=")


def addon_application(built: list[BuiltUnit], key: str) -> dict[str, Any] | None:
    """The Application of add-on `key` among the environment's units, if the fleet renders it."""
    docs = [o for unit in built for o in unit.docs]
    return next((app for app, addon in addon_applications(docs) if addon.key == key), None)


def nfd_master(objs: list[dict[str, Any]]) -> tuple[tuple[str, ...], str] | None:
    """(flags, nfd-master.conf) of the nfd-master Deployment among a rendered chart's objects:
    its container's args but the listening ports, and the configuration file of the ConfigMap it
    mounts. None: the chart runs no nfd-master."""
    for obj in objs:
        if obj.get("kind") != "Deployment":
            continue
        spec = obj["spec"]["template"]["spec"]
        for container in spec.get("containers") or []:
            if (container.get("command") or [None])[0] != "nfd-master":
                continue
            args = tuple(
                str(a) for a in container.get("args") or [] if not str(a).startswith(OWN_FLAGS)
            )
            maps = {v["configMap"]["name"] for v in spec.get("volumes") or [] if "configMap" in v}
            conf = next(
                (
                    str((o.get("data") or {}).get("nfd-master.conf", ""))
                    for o in objs
                    if o.get("kind") == "ConfigMap" and o["metadata"]["name"] in maps
                ),
                "",
            )
            return args, conf
    return None


def nfd_chart(built: list[BuiltUnit], kube_version: str) -> list[dict[str, Any]] | None:
    """Every object of the fleet's NFD chart as its Application renders it; None when the fleet
    does not render NFD (the site runs it)."""
    app = addon_application(built, "nfd")
    chart = addons.BY_KEY["nfd"].chart
    if app is None or chart is None:
        return None
    text = render_chart(chart, application_values(app), kube_version)
    return [d for d in yaml.safe_load_all(text) if d]


def nfd_applied(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the simulation applies of NFD's chart: all that stays deployed but the CRDs (the
    control plane installs NFD's, from the same module) and the nfd-master Deployment (the
    nfd-master process stands in for it, with its flags: nfd_master). nfd-worker's DaemonSet is
    among them: its pods show where nfd-worker can run."""
    return [
        o
        for o in objs
        if o.get("kind") != "CustomResourceDefinition"
        and nfd_master([o]) is None
        and HELM_HOOK_ANNOTATION not in ((o.get("metadata") or {}).get("annotations") or {})
    ]


def site_values(key: str, built: list[BuiltUnit]) -> dict[str, Any]:
    """The chart values the simulation takes for a site's add-on beyond the chart's defaults.
    Kubeflow Trainer: its JobSet subchart off (the site's JobSet is an add-on of its own,
    platform.jobset; the chart cannot render here with it), and the ClusterTrainingRuntimes the
    environment's TrainJobs name, as the chart defines them: the TrainJobs declare them, and
    preflight checks that the site has them (PRE008)."""
    if key != "trainer":
        return {}
    return trainer_values(named_runtimes(o for u in built for o in u.docs))


def rendered_controller(
    built: list[BuiltUnit], key: str, kube_version: str
) -> tuple[ControllerSetup | None, bool]:
    """(add-on `key`'s controller manager as it runs in this environment, whether it is the
    site's): the fleet's Application's chart with its values; when the environment applies
    objects of the add-on but the site provides it, the chart with its own defaults (what a plain
    install runs: the simulation says that it assumed it, SIM011); (None, False) when nothing
    needs it. `key`: kueue, jobset, lws or trainer."""
    addon = addons.BY_KEY[key]
    chart = addon.chart
    assert chart is not None
    app = addon_application(built, key)
    if app is not None:
        values = application_values(app)
    elif any(addons.addon_of(o) is addon for u in built for o in u.docs):
        values = site_values(key, built)
    else:
        return None, False
    objs = [d for d in yaml.safe_load_all(render_chart(chart, values, kube_version)) if d]
    setup = (
        kueue_setup(objs)
        if key == "kueue"
        else ControllerSetup.from_chart(key, chart.namespace, objs)
    )
    return setup, app is None
