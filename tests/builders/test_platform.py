"""Add-ons the fleet renders (generator/builders/platform.py, builders/argocd.py): an Argo CD
Application of the upstream chart at its pinned version, with values generated from the fleet, in
a project of its own, one wave before the units; and what is `provided` where."""

from __future__ import annotations

from pathlib import Path

from generator.builders import argocd, node_config, platform, scheduling
from generator.builders.fleet import Build
from generator.values import loader as values
from generator.values.model import FleetView
from generator.values.yamlio import dump
from generator.vocab import addons, units
from tests.fixtures import PROD_FLEET, build_of, find, tree, workloads_of

TEAM = "quota: {nvidia: 4}\n"


def prod(tmp_path: Path, fleet: str) -> FleetView:
    loaded = values.load(tree(tmp_path, {"teams/ml.yaml": TEAM}, fleet=PROD_FLEET + fleet))
    return loaded.envs["prod"]


def argocd_objects(view: FleetView) -> list[dict]:  # type: ignore[type-arg]
    build = Build(view)
    comps = [c for c in build.components if c.unit != units.ARGOCD_UNIT]
    return [
        o
        for c in argocd.build(view, [(build.workloads, argocd.shapes(comps))]).hub
        for o in c.objects
    ]


def test_provided_reads_values_then_the_setting_that_names_the_addon(tmp_path: Path) -> None:
    volcano, nfd = addons.BY_KEY["volcano"], addons.BY_KEY["nfd"]
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
            "custom": {
                "scheduler_config_override": dump(scheduling.volcano_conf(workloads_of(view)))
            }
        },
    }
    assert app["spec"]["syncPolicy"]["automated"] == {"prune": True, "selfHeal": True}
    # No resources finalizer: deleting the add-on's Application leaves its CRDs and objects.
    assert "finalizers" not in app["metadata"]
    assert [
        c.name for c in scheduling.build(build_of(view)) if c.name == "scheduling/volcano"
    ] == []


def test_volcano_provided_by_the_site_renders_nothing_but_the_configmap(tmp_path: Path) -> None:
    view = prod(
        tmp_path, "scheduling: {backend: volcano}\nplatform:\n  volcano: {provided: site}\n"
    )
    assert platform.rendered(view) == []
    assert [o["kind"] for o in argocd_objects(view)].count("AppProject") == 1
    assert [c.name for c in scheduling.build(build_of(view))] == ["scheduling/volcano"]


def test_the_defaults_that_declare_an_addon_are_the_ones_values_apply(tmp_path: Path) -> None:
    """A fleet that leaves nodeConfig.method and scheduling.backend out gets nfd and quota:
    platform's copy of those defaults must be the loader's and the scheduling builder's."""
    view = prod(tmp_path, "")
    applied = {
        ("nodeConfig", "method"): view.fleet.node_config_method,
        ("scheduling", "backend"): scheduling.backend(view),
    }
    assert applied == {("nodeConfig", "method"): "nfd", ("scheduling", "backend"): "quota"}
    assert applied == platform.SETTING_DEFAULTS  # platform's copy of them
    assert platform.provided(view, addons.BY_KEY["nfd"]) == "site"


def test_every_addon_the_fleet_can_render_has_its_values_made_from_the_fleet() -> None:
    assert set(argocd.CHART_VALUES) == {a.key for a in addons.ADDONS if a.chart is not None}


def test_group_patterns_cover_subgroups_or_one_group() -> None:
    assert addons.serves("*.volcano.sh", "batch.volcano.sh")
    assert not addons.serves("*.volcano.sh", "volcano.sh")
    assert not addons.serves("*.volcano.sh", "notvolcano.sh")
    assert addons.serves("kueue.x-k8s.io", "kueue.x-k8s.io")
    assert not addons.serves("kueue.x-k8s.io", "v1.kueue.x-k8s.io")


def test_the_addon_applications_point_their_findings_at_platform(tmp_path: Path) -> None:
    """The component and each Application at `platform` (and `platform.<key>`) in fleet.yaml;
    the project as the fleet's own has it: argocd namespace, environment label."""
    fleet = "platform:\n  volcano: {provided: fleet}\n  nfd: {provided: fleet}\n"
    view = prod(tmp_path, fleet)
    comps = [
        c for c in argocd.build(view, [(workloads_of(view), [])]).hub if c.name == "argocd/platform"
    ]
    [comp] = comps
    assert str(comp.origin) == "values/fleet.yaml:5:1"
    project, *apps = comp.objects
    assert [(a["metadata"]["name"], str(comp.origin_of(a))) for a in apps] == [
        ("mini-prod-volcano", "values/fleet.yaml:6:3"),
        ("mini-prod-nfd", "values/fleet.yaml:7:3"),
    ]
    assert project["apiVersion"] == "argoproj.io/v1alpha1"
    assert project["metadata"] == {
        "name": "mini-platform",
        "namespace": "argocd",
        "labels": {
            "app.kubernetes.io/managed-by": "accel-gitops",
            "accel-gitops.io/environment": "prod",
            "accel-gitops.io/bootstrap": "true",
        },
        "annotations": {
            "accel-gitops.io/source": "values/fleet.yaml",
            "argocd.argoproj.io/sync-wave": "-20",
        },
    }
    assert project["spec"]["sourceRepos"] == [
        "https://volcano-sh.github.io/helm-charts",
        "registry.k8s.io/nfd/charts",
    ]
    assert project["spec"]["destinations"] == [
        {"server": "https://kubernetes.default.svc", "namespace": "node-feature-discovery"},
        {"server": "https://kubernetes.default.svc", "namespace": "volcano-system"},
    ]


def test_nfd_chart_values_taint_and_tolerate_every_pool_and_keep_nodes_on_delete(
    tmp_path: Path,
) -> None:
    """Every distinct taint of every vendor's pools, sorted; the same taint of two pools once."""
    nvidia = (
        "pools:\n  - {name: a, model: A100, devicesPerNode: 4, nodes: [n1]}\n"
        "  - name: b\n    model: H100\n    devicesPerNode: 8\n    nodes: [n2]\n"
        "    taints: [{key: z.example.com/t, effect: NoExecute}, "
        "{key: a.example.com/t, value: v, effect: NoSchedule}]\n"
    )
    loaded = values.load(
        tree(tmp_path, {"teams/ml.yaml": TEAM, "vendors/nvidia.yaml": nvidia}, fleet=PROD_FLEET)
    )
    got = node_config.nfd_chart_values(workloads_of(loaded.envs["prod"]))
    assert got == {
        "master": {"enableTaints": True},
        "worker": {
            "tolerations": [
                {
                    "key": "a.example.com/t",
                    "operator": "Equal",
                    "value": "v",
                    "effect": "NoSchedule",
                },
                {
                    "key": "feature.node.kubernetes.io/accelerator",
                    "operator": "Equal",
                    "value": "nvidia-gpu",
                    "effect": "NoSchedule",
                },
                {"key": "z.example.com/t", "operator": "Exists", "effect": "NoExecute"},
            ]
        },
        "postDeleteCleanup": False,
    }


def test_an_objects_addon_is_the_one_serving_its_api_group() -> None:
    def of(api_version: str) -> str | None:
        addon = addons.addon_of({"apiVersion": api_version, "kind": "X"})
        return addon.key if addon else None

    assert of("batch.volcano.sh/v1alpha1") == "volcano"
    assert of("kueue.x-k8s.io/v1beta2") == "kueue"
    assert of("nfd.k8s-sigs.io/v1alpha1") == "nfd"
    # Kubernetes' own groups, the core group included, need no add-on.
    assert of("batch/v1") is None
    assert of("v1") is None


def test_only_nfds_application_labels_its_namespace_privileged(tmp_path: Path) -> None:
    """NFD's worker mounts hostPath volumes (node-feature-discovery v0.19.0 templates/worker.yaml),
    which Pod Security baseline refuses: its Application has Argo CD label the namespace it
    creates. Volcano's chart (scheduler, controllers, admission) asks for no host access: its
    namespace keeps the cluster's default."""
    fleet = "platform:\n  volcano: {provided: fleet}\n  nfd: {provided: fleet}\n"
    objs = argocd_objects(prod(tmp_path, fleet))
    nfd = find(objs, "Application", "mini-prod-nfd")["spec"]["syncPolicy"]
    assert nfd["syncOptions"] == ["CreateNamespace=true", "ServerSideApply=true"]
    assert nfd["managedNamespaceMetadata"] == {
        "labels": {"pod-security.kubernetes.io/enforce": "privileged"}
    }
    volcano = find(objs, "Application", "mini-prod-volcano")["spec"]["syncPolicy"]
    assert "managedNamespaceMetadata" not in volcano


def test_the_addons_whose_charts_need_host_access_say_so_in_the_catalogue() -> None:
    """Read from each chart's templates at its pinned version (vocab/addons.py cites them)."""
    assert {a.key: a.pod_security for a in addons.ADDONS if a.chart is not None} == {
        "volcano": "",
        "kueue": "",
        "nfd": "privileged",
        "jobset": "",
        "lws": "",
        "trainer": "",
        "gpuOperator": "privileged",
        "nvidiaDraDriver": "privileged",
    }
