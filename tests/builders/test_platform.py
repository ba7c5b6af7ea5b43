"""Add-ons the fleet renders (generator/builders/platform.py, builders/argocd.py): an Argo CD
Application of the upstream chart at its pinned version, with values generated from the fleet, in
a project of its own, one wave before the units; and what is `provided` where."""

from __future__ import annotations

from pathlib import Path

from generator.builders import argocd, platform, scheduling
from generator.builders.fleet import build_all
from generator.values import loader as values
from generator.values.model import FleetView
from generator.values.yamlio import dump
from tests.fixtures import PROD_FLEET, find, tree

TEAM = "quota: {nvidia: 4}\n"


def prod(tmp_path: Path, fleet: str) -> FleetView:
    loaded = values.load(tree(tmp_path, {"teams/ml.yaml": TEAM}, fleet=PROD_FLEET + fleet))
    return loaded.envs["prod"]


def argocd_objects(view: FleetView) -> list[dict]:  # type: ignore[type-arg]
    comps = [c for c in build_all(view) if c.unit != argocd.UNIT]
    return [o for c in argocd.build(view, comps) for o in c.objects]


def test_provided_reads_values_then_the_setting_that_names_the_addon(tmp_path: Path) -> None:
    volcano, nfd = platform.BY_KEY["volcano"], platform.BY_KEY["nfd"]
    assert platform.provided(prod(tmp_path / "a", ""), volcano) is None
    assert platform.provided(prod(tmp_path / "b", "scheduling: {backend: volcano}\n"), volcano) == (
        "site"
    )
    explicit = "scheduling: {backend: volcano}\nplatform:\n  volcano: {provided: fleet}\n"
    assert platform.provided(prod(tmp_path / "c", explicit), volcano) == "fleet"
    assert platform.provided(prod(tmp_path / "d", "nodeConfig: {method: nfd}\n"), nfd) == "site"
    assert (
        platform.provided(prod(tmp_path / "e", "nodeConfig: {method: node-patch}\n"), nfd) is None
    )


def test_volcano_provided_by_the_fleet_is_an_application_of_its_pinned_chart(
    tmp_path: Path,
) -> None:
    """Under the quota backend the chart runs its own scheduler configuration: no values; with
    automated sync off, none here either."""
    fleet = "argocd: {automatedSync: false}\nplatform:\n  volcano: {provided: fleet}\n"
    view = prod(tmp_path, fleet)
    objs = argocd_objects(view)
    app = find(objs, "Application", "mini-prod-volcano")
    assert app == {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {
            "name": "mini-prod-volcano",
            "namespace": "argocd",
            "labels": {
                "app.kubernetes.io/managed-by": "accel-gitops",
                "accel-gitops.io/environment": "prod",
                "accel-gitops.io/addon": "volcano",
            },
            "annotations": {
                "accel-gitops.io/source": "values/fleet.yaml",
                "argocd.argoproj.io/sync-wave": "-5",
                "accel-gitops.io/chart-source": "volcano-sh/volcano installer/helm/chart/volcano "
                "v1.14.0",
            },
        },
        "spec": {
            "project": "mini-platform",
            "source": {
                "repoURL": "https://volcano-sh.github.io/helm-charts",
                "chart": "volcano",
                "targetRevision": "1.14.0",
                "helm": {"releaseName": "volcano"},
            },
            "destination": {
                "server": "https://kubernetes.default.svc",
                "namespace": "volcano-system",
            },
            "syncPolicy": {
                "syncOptions": ["CreateNamespace=true", "ServerSideApply=true"],
                "retry": {
                    "limit": 5,
                    "backoff": {"duration": "10s", "factor": 2, "maxDuration": "5m"},
                },
            },
        },
    }
    project = find(objs, "AppProject", "mini-platform")
    assert project["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "-20"
    assert project["spec"] == {
        "description": "cluster add-ons of accel-gitops fleet mini, environment prod",
        "sourceRepos": ["https://volcano-sh.github.io/helm-charts"],
        "destinations": [
            {"server": "https://kubernetes.default.svc", "namespace": "volcano-system"}
        ],
        "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
    }
    # The fleet's own project stays as narrow as its units: no chart repository, no wildcard.
    fleet_project = find(objs, "AppProject", "mini")
    assert fleet_project["spec"]["sourceRepos"] == ["https://git.example.com/mini.git"]
    assert {"group": "*", "kind": "*"} not in fleet_project["spec"]["clusterResourceWhitelist"]


def test_the_chart_runs_the_fleets_volcano_configuration_and_owns_its_configmap(
    tmp_path: Path,
) -> None:
    view = prod(
        tmp_path, "scheduling: {backend: volcano}\nplatform:\n  volcano: {provided: fleet}\n"
    )
    app = find(argocd_objects(view), "Application", "mini-prod-volcano")
    assert app["spec"]["source"]["helm"] == {
        "releaseName": "volcano",
        "valuesObject": {
            "custom": {"scheduler_config_override": dump(scheduling.volcano_conf(view))}
        },
    }
    assert app["spec"]["syncPolicy"]["automated"] == {"prune": True, "selfHeal": True}
    # No resources finalizer: deleting the add-on's Application leaves its CRDs and objects.
    assert "finalizers" not in app["metadata"]
    assert [c.name for c in scheduling.build(view) if c.name == "scheduling/volcano"] == []


def test_volcano_provided_by_the_site_renders_nothing_but_the_configmap(tmp_path: Path) -> None:
    view = prod(
        tmp_path, "scheduling: {backend: volcano}\nplatform:\n  volcano: {provided: site}\n"
    )
    assert platform.rendered(view) == []
    assert [o["kind"] for o in argocd_objects(view)].count("AppProject") == 1
    assert [c.name for c in scheduling.build(view)] == ["scheduling/volcano"]


def test_the_defaults_that_declare_an_addon_are_the_ones_values_apply(tmp_path: Path) -> None:
    """A fleet that leaves nodeConfig.method and scheduling.backend out gets nfd and quota:
    platform's copy of those defaults must be the loader's and the scheduling builder's."""
    view = prod(tmp_path, "")
    applied = {
        ("nodeConfig", "method"): view.fleet.node_config_method,
        ("scheduling", "backend"): scheduling.backend(view),
    }
    assert applied == platform.SETTING_DEFAULTS
    assert platform.provided(view, platform.BY_KEY["nfd"]) == "site"
