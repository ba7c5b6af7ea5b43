"""Argo CD delivery: the AppProject the Applications name, what it allows, what is never pruned,
and where the root Application lives (issue #8 item 6; docs/argocd.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from generator.builders import argocd
from generator.findings import Location
from generator.values import loader as values
from generator.values.model import FleetView
from generator.vocab.units import Component
from tests.fixtures import (
    PROD_FLEET,
    TWO_CLUSTERS,
    Obj,
    build_unit,
    find,
    render_into,
    tree,
    workloads_of,
)

POOL = (
    "pools:\n  - {name: p1, model: m1, pciDevices: ['abcd'], devicesPerNode: 8, nodes: [node-01]}\n"
)
TEAM = "quota: {nvidia: 4}\n"


def everything(out: Path, env: str) -> dict[str, list[dict[str, Any]]]:
    """What Argo CD applies, per unit (kustomize build of every overlay of `env`)."""
    return {
        p.name: build_unit(out, env, p.name) for p in sorted((out / "overlays" / env).iterdir())
    }


def group_kind(obj: dict[str, Any]) -> tuple[str, str]:
    return obj["apiVersion"].rpartition("/")[0], obj["kind"]


def test_the_app_project_allows_exactly_what_the_fleet_deploys(tmp_path: Path) -> None:
    fleet = PROD_FLEET + "nodeConfig: {method: node-patch}\nscheduling: {backend: kueue}\n"
    amd = POOL.replace("node-01", "node-02")
    values_dir = tree(
        tmp_path,
        {"vendors/nvidia.yaml": POOL, "vendors/amd.yaml": amd, "teams/ml.yaml": TEAM},
        fleet=fleet,
        defaults=False,
    )
    units = everything(render_into(values_dir, tmp_path / "out"), "prod")
    project = find(units["argocd"], "AppProject")
    apps = [o for o in units["argocd"] if o["kind"] == "Application"]
    assert {a["spec"]["project"] for a in apps} == {project["metadata"]["name"]}
    assert project["metadata"]["namespace"] == "argocd"
    spec = project["spec"]
    assert spec["sourceRepos"] == ["https://git.example.com/mini.git"]
    objs = [o for unit in units.values() for o in unit]
    emitted = {group_kind(o) for o in objs if "namespace" not in o["metadata"]}
    allowed = {(w["group"], w["kind"]) for w in spec["clusterResourceWhitelist"]}
    assert allowed == emitted
    # Cluster-scoped as their definitions say: Node, Namespace and RBAC (the AMD exporter's) in
    # Kubernetes; Kueue's
    # ClusterQueue and ResourceFlavor (config/components/crd/bases, scope: Cluster, v0.17.0).
    assert allowed == {
        ("", "Namespace"),
        ("", "Node"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("kueue.x-k8s.io", "ClusterQueue"),
        ("kueue.x-k8s.io", "ResourceFlavor"),
    }
    destinations = {(d["server"], d["namespace"]) for d in spec["destinations"]}
    server = "https://kubernetes.default.svc"
    assert destinations == {
        (server, o["metadata"]["namespace"]) for o in objs if "namespace" in o["metadata"]
    }
    for app in apps:
        dest = app["spec"]["destination"]
        assert (dest["server"], dest["namespace"]) in destinations


def test_a_volcano_fleet_allows_its_queues(tmp_path: Path) -> None:
    fleet = PROD_FLEET + "scheduling: {backend: volcano}\n"
    values_dir = tree(
        tmp_path, {"vendors/nvidia.yaml": POOL, "teams/ml.yaml": TEAM}, fleet=fleet, defaults=False
    )
    argocd = build_unit(render_into(values_dir, tmp_path / "out"), "prod", "argocd")
    allowed = {
        (w["group"], w["kind"])
        for w in find(argocd, "AppProject")["spec"]["clusterResourceWhitelist"]
    }
    # scheduling.volcano.sh Queue: +kubebuilder:resource scope=Cluster (volcano.sh/apis v1.14.0).
    assert ("scheduling.volcano.sh", "Queue") in allowed
    assert ("kueue.x-k8s.io", "ClusterQueue") not in allowed


def test_team_namespaces_are_never_pruned_or_cascade_deleted(tmp_path: Path) -> None:
    values_dir = tree(
        tmp_path,
        {"vendors/nvidia.yaml": POOL, "teams/ml.yaml": TEAM},
        fleet=PROD_FLEET,
        defaults=False,
    )
    objs = build_unit(render_into(values_dir, tmp_path / "out"), "prod", "team-ml")
    ns = find(objs, "Namespace", "ml")
    options = ns["metadata"]["annotations"]["argocd.argoproj.io/sync-options"].split(",")
    assert "Prune=false" in options and "Delete=false" in options
    # What the team's Application owns besides is deleted with it: only the Namespace opts out.
    quota = find(objs, "ResourceQuota")
    assert "argocd.argoproj.io/sync-options" not in quota["metadata"]["annotations"]


def test_destination_server_moves_the_units_not_the_root_application(tmp_path: Path) -> None:
    remote = "https://gpu-cluster.example.com:6443"
    fleet = PROD_FLEET + f"argocd: {{destinationServer: '{remote}'}}\n"
    values_dir = tree(tmp_path, {"vendors/nvidia.yaml": POOL}, fleet=fleet, defaults=False)
    argocd = build_unit(render_into(values_dir, tmp_path / "out"), "prod", "argocd")
    apps = {
        a["metadata"]["name"]: a["spec"]["destination"]
        for a in argocd
        if a["kind"] == "Application"
    }
    assert apps.pop("mini-prod-root") == {
        "server": "https://kubernetes.default.svc",
        "namespace": "argocd",
    }
    assert apps and {d["server"] for d in apps.values()} == {remote}
    destinations = find(argocd, "AppProject")["spec"]["destinations"]
    assert {"server": "https://kubernetes.default.svc", "namespace": "argocd"} in destinations
    assert {"server": remote, "namespace": "accelerator-plugins"} in destinations


def cluster_argocd(out: Path) -> list[Obj]:
    """The hub's argocd unit and each cluster's (overlays/prod/<cluster>/argocd): what Argo CD
    applies to the hub."""
    units = ("argocd", "main/argocd", "domestic/argocd")
    return [o for unit in units for o in build_unit(out, "prod", unit)]


def test_each_cluster_s_units_are_applications_pointed_at_that_cluster(tmp_path: Path) -> None:
    """TWO_CLUSTERS: main by server, domestic by its name in Argo CD; every Application lives on
    the hub, named and labelled with its cluster: the root one and an app of apps per cluster in
    the hub's unit, each cluster's unit Applications in that cluster's argocd unit."""
    values_dir = tree(tmp_path, TWO_CLUSTERS, fleet=PROD_FLEET)
    out = render_into(values_dir, tmp_path / "out")
    hub = build_unit(out, "prod", "argocd")
    assert sorted(o["metadata"]["name"] for o in hub if o["kind"] == "Application") == [
        "mini-prod-domestic-root",
        "mini-prod-main-root",
        "mini-prod-root",
    ]
    domestic = build_unit(out, "prod", "domestic/argocd")
    assert {o["metadata"]["labels"]["accel-gitops.io/cluster"] for o in domestic} == {"domestic"}
    argocd = cluster_argocd(out)
    apps = {a["metadata"]["name"]: a for a in argocd if a["kind"] == "Application"}
    assert {
        name: (
            a["spec"]["destination"],
            a["spec"]["source"]["path"],
            a["metadata"]["labels"].get("accel-gitops.io/cluster"),
        )
        for name, a in apps.items()
        if "team-" in name or name.endswith("root")
    } == {
        "mini-prod-root": (
            {"server": "https://kubernetes.default.svc", "namespace": "argocd"},
            "overlays/prod/argocd",
            None,
        ),
        "mini-prod-main-root": (
            {"server": "https://kubernetes.default.svc", "namespace": "argocd"},
            "overlays/prod/main/argocd",
            "main",
        ),
        "mini-prod-domestic-root": (
            {"server": "https://kubernetes.default.svc", "namespace": "argocd"},
            "overlays/prod/domestic/argocd",
            "domestic",
        ),
        "mini-prod-main-team-ml": (
            {"server": "https://main.example.com:6443", "namespace": "ml"},
            "overlays/prod/main/team-ml",
            "main",
        ),
        "mini-prod-main-team-inference": (
            {"server": "https://main.example.com:6443", "namespace": "inference"},
            "overlays/prod/main/team-inference",
            "main",
        ),
        "mini-prod-domestic-team-ml": (
            {"name": "domestic", "namespace": "ml"},
            "overlays/prod/domestic/team-ml",
            "domestic",
        ),
    }
    destinations = find(argocd, "AppProject")["spec"]["destinations"]
    assert {"name": "domestic", "namespace": "ml"} in destinations
    assert {"server": "https://main.example.com:6443", "namespace": "inference"} in destinations
    # Nothing of main's reaches domestic: the project allows each cluster its own namespaces.
    assert {"name": "domestic", "namespace": "inference"} not in destinations


def test_each_cluster_gets_its_own_add_ons(tmp_path: Path) -> None:
    fleet = PROD_FLEET + "platform: {nfd: {provided: fleet}}\n"
    values_dir = tree(tmp_path, TWO_CLUSTERS, fleet=fleet)
    argocd = cluster_argocd(render_into(values_dir, tmp_path / "out"))
    nfd = {
        a["metadata"]["name"]: a["spec"]["destination"]
        for a in argocd
        if a["kind"] == "Application" and a["metadata"]["name"].endswith("-nfd")
    }
    assert nfd == {
        "mini-prod-main-nfd": {
            "server": "https://main.example.com:6443",
            "namespace": "node-feature-discovery",
        },
        "mini-prod-domestic-nfd": {"name": "domestic", "namespace": "node-feature-discovery"},
    }
    [platform] = [
        p
        for p in argocd
        if p["kind"] == "AppProject" and p["metadata"]["name"].endswith("platform")
    ]
    assert platform["spec"]["destinations"] == [
        {"name": "domestic", "namespace": "node-feature-discovery"},
        {"server": "https://main.example.com:6443", "namespace": "node-feature-discovery"},
    ]


def test_the_project_syncs_before_the_applications_that_name_it(tmp_path: Path) -> None:
    values_dir = tree(tmp_path, {"vendors/nvidia.yaml": POOL}, fleet=PROD_FLEET, defaults=False)
    argocd = build_unit(render_into(values_dir, tmp_path / "out"), "prod", "argocd")
    wave = {
        o["kind"] + "/" + o["metadata"]["name"]: int(
            o["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]
        )
        for o in argocd
    }
    project = wave.pop("AppProject/mini")
    assert all(project < w for w in wave.values())


# ---- build, in-process: the argocd unit of one environment, written out by hand ----------------
#
# The expected objects follow argo-cd v3.5.7: Application and AppProject fields as
# pkg/apis/application/v1alpha1/types.go and app_project_types.go name them (SyncPolicy's
# automated prune/selfHeal, syncOptions, retry limit and backoff duration/factor/maxDuration);
# the cascading finalizer resources-finalizer.argocd.argoproj.io as
# docs/user-guide/app_deletion.md names it.

REMOTE = "https://gpu.example.com:6443"
IN_CLUSTER = "https://kubernetes.default.svc"
# Fleet mini, project gpu in namespace gitops, rendered under clusters/gpu of the repository.
ARGO_FLEET = """\
name: mini
kubernetesVersion: "1.33"
environments: [prod]
git: {repoURL: https://git.example.com/mini.git, targetRevision: main, path: clusters/gpu}
argocd: {namespace: gitops, project: gpu}
"""
# prod deploys to another cluster and syncs the release branch.
ARGO_PROD = (
    f"fleet:\n  git: {{targetRevision: release}}\n  argocd: {{destinationServer: '{REMOTE}'}}\n"
)
SOURCES = "values/fleet.yaml, values/environments/prod.yaml"
RETRY = {"limit": 5, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "5m"}}
AUTOMATED = {"prune": True, "selfHeal": True}
NFD_API = "nfd.k8s-sigs.io/v1alpha1"
KUEUE_API = "kueue.x-k8s.io/v1beta1"


def argo_view(tmp_path: Path, fleet: str = ARGO_FLEET, prod: str | None = ARGO_PROD) -> FleetView:
    """The prod view of a tree with fleet.yaml `fleet`, environments/prod.yaml `prod`, one
    vendor (what builds the fleet needs; argocd.build reads only the fleet and the components' shapes)."""
    files = {"vendors/nvidia.yaml": POOL, "environments/prod.yaml": prod}
    return values.load(tree(tmp_path, files, fleet=fleet, defaults=False)).envs["prod"]


def one_cluster(view: FleetView, comps: list[Component]) -> tuple[FleetView, argocd.Built]:
    """argocd.build's arguments for an environment that is one cluster: the hub is the view."""
    return view, [(workloads_of(view), argocd.shapes(comps))]


def obj(api: str, kind: str, name: str, namespace: str | None = None) -> Obj:
    meta: Obj = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": api, "kind": kind, "metadata": meta}


def unit_components() -> list[Component]:
    """Components of four units: node-config (cluster-scoped only), device-plugins (its Namespace
    and a DaemonSet), a team with two namespaces (the later one first) and scheduling (Kueue)."""
    return [
        Component("node-config", "node-config/nfd", [obj(NFD_API, "NodeFeatureRule", "accel-a")]),
        Component(
            "device-plugins",
            "device-plugins/nvidia",
            [
                obj("v1", "Namespace", "accelerator-plugins"),
                obj("apps/v1", "DaemonSet", "nvidia-device-plugin", "accelerator-plugins"),
            ],
        ),
        Component(
            "team-ml",
            "teams/ml",
            [
                obj("v1", "ResourceQuota", "quota", "ml-train"),
                obj("v1", "ResourceQuota", "quota", "ml-serve"),
            ],
        ),
        Component("scheduling", "scheduling/kueue", [obj(KUEUE_API, "ClusterQueue", "ml")]),
    ]


def application(
    name: str, unit: str, wave: str, path: str, destination: dict[str, str], *, root: bool = False
) -> Obj:
    """An Application of fleet mini in prod as argo-cd's types.go spells it."""
    meta: Obj = {
        "name": name,
        "namespace": "gitops",
        "labels": {
            "app.kubernetes.io/managed-by": "accel-gitops",
            "accel-gitops.io/environment": "prod",
            "accel-gitops.io/unit": unit,
        },
        "annotations": {"accel-gitops.io/source": SOURCES, "argocd.argoproj.io/sync-wave": wave},
    }
    if root:
        # What the first install applies by hand (docs/argocd.md), with the AppProjects.
        meta["labels"]["accel-gitops.io/bootstrap"] = "true"
    else:
        meta["finalizers"] = ["resources-finalizer.argocd.argoproj.io"]
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": meta,
        "spec": {
            "project": "gpu",
            "source": {
                "repoURL": "https://git.example.com/mini.git",
                "targetRevision": "release",
                "path": path,
            },
            "destination": destination,
            "syncPolicy": {
                "syncOptions": ["ServerSideApply=true"],
                "retry": RETRY,
                "automated": AUTOMATED,
            },
        },
    }


def test_each_unit_gets_an_application_in_its_wave_and_the_root_one_manages_them(
    tmp_path: Path,
) -> None:
    """Applications per unit (wave by unit, home namespace the first of its objects', Argo CD's
    namespace for a cluster-scoped unit), the root app in-cluster without a finalizer."""
    [comp] = argocd.build(*one_cluster(argo_view(tmp_path), unit_components())).hub
    assert (comp.unit, comp.name) == ("argocd", "argocd/applications")
    apps = [o for o in comp.objects if o["kind"] == "Application"]
    assert apps == [
        application(
            "mini-prod-node-config",
            "node-config",
            "0",
            "clusters/gpu/overlays/prod/node-config",
            {"server": REMOTE, "namespace": "gitops"},
        ),
        application(
            "mini-prod-device-plugins",
            "device-plugins",
            "2",
            "clusters/gpu/overlays/prod/device-plugins",
            {"server": REMOTE, "namespace": "accelerator-plugins"},
        ),
        application(
            "mini-prod-team-ml",
            "team-ml",
            "2",
            "clusters/gpu/overlays/prod/team-ml",
            {"server": REMOTE, "namespace": "ml-serve"},
        ),
        application(
            "mini-prod-scheduling",
            "scheduling",
            "1",
            "clusters/gpu/overlays/prod/scheduling",
            {"server": REMOTE, "namespace": "gitops"},
        ),
        application(
            "mini-prod-root",
            "argocd",
            "-10",
            "clusters/gpu/overlays/prod/argocd",
            {"server": IN_CLUSTER, "namespace": "gitops"},
            root=True,
        ),
    ]


def test_the_app_project_lists_the_repo_destinations_and_cluster_kinds_of_the_units(
    tmp_path: Path,
) -> None:
    """The AppProject comes first, in wave -20: the fleet's repository, every (server, namespace)
    the Applications and objects use, the cluster-scoped kinds by API group (core is "")."""
    [comp] = argocd.build(*one_cluster(argo_view(tmp_path), unit_components())).hub
    assert comp.objects[0] == {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": {
            "name": "gpu",
            "namespace": "gitops",
            "labels": {
                "app.kubernetes.io/managed-by": "accel-gitops",
                "accel-gitops.io/environment": "prod",
                "accel-gitops.io/bootstrap": "true",
            },
            "annotations": {
                "accel-gitops.io/source": SOURCES,
                "argocd.argoproj.io/sync-wave": "-20",
            },
        },
        "spec": {
            "description": "accel-gitops fleet mini, environment prod",
            "sourceRepos": ["https://git.example.com/mini.git"],
            "destinations": [
                {"server": REMOTE, "namespace": "accelerator-plugins"},
                {"server": REMOTE, "namespace": "gitops"},
                {"server": REMOTE, "namespace": "ml-serve"},
                {"server": REMOTE, "namespace": "ml-train"},
                {"server": IN_CLUSTER, "namespace": "gitops"},
            ],
            "clusterResourceWhitelist": [
                {"group": "", "kind": "Namespace"},
                {"group": "kueue.x-k8s.io", "kind": "ClusterQueue"},
                {"group": "nfd.k8s-sigs.io", "kind": "NodeFeatureRule"},
            ],
        },
    }
    assert len(comp.objects) == 6


def test_the_argocd_component_points_at_the_git_key_that_sets_it(tmp_path: Path) -> None:
    """Findings on the Applications and the project name the `git:` key in force: prod's own
    (environments/prod.yaml line 2) where it sets one, else fleet.yaml's (line 4)."""
    [comp] = argocd.build(*one_cluster(argo_view(tmp_path / "env"), unit_components())).hub
    assert comp.origin == Location("values/environments/prod.yaml", 2, 3)
    [comp] = argocd.build(
        *one_cluster(argo_view(tmp_path / "fleet", prod=None), unit_components())
    ).hub
    assert comp.origin == Location("values/fleet.yaml", 4, 1)
    assert all(comp.origin_of(o) == Location("values/fleet.yaml", 4, 1) for o in comp.objects)


def test_without_a_repo_path_units_live_under_overlays_at_the_repo_root(tmp_path: Path) -> None:
    """git.path unset: each Application's path is overlays/<env>/<unit> (no leading folder)."""
    fleet = PROD_FLEET + "argocd: {automatedSync: true}\n"
    [comp] = argocd.build(
        *one_cluster(argo_view(tmp_path, fleet, None), unit_components()[1:2])
    ).hub
    paths = [o["spec"]["source"]["path"] for o in comp.objects if o["kind"] == "Application"]
    assert paths == ["overlays/prod/device-plugins", "overlays/prod/argocd"]


def test_automated_sync_off_leaves_sync_options_and_retry_alone(tmp_path: Path) -> None:
    """argocd.automatedSync: false drops `automated` (a person syncs) and keeps the rest."""
    fleet = PROD_FLEET + "argocd: {automatedSync: false}\n"
    [comp] = argocd.build(*one_cluster(argo_view(tmp_path, fleet, None), unit_components()[:1])).hub
    policies = [o["spec"]["syncPolicy"] for o in comp.objects if o["kind"] == "Application"]
    manual = {"syncOptions": ["ServerSideApply=true"], "retry": RETRY}
    assert policies == [manual, manual]


# ---- the wave plan: nothing waits on a DaemonSet ------------------------------------------------


def test_the_wave_plan_never_puts_a_pods_health_in_front_of_another_unit(
    tmp_path: Path,
) -> None:
    """Read as data from what Argo CD applies (every unit of a fleet with NFD, Kueue, the packing
    scheduler, Volcano rendered by the fleet and a team with a job): a wave waits for every
    earlier wave to be Healthy, and a DaemonSet, Deployment or Job is not Healthy until its pods
    run (docs/argocd.md). So no unit that holds one comes before any other unit: the team's job
    waits for the device plugins and the packing scheduler, which wait for nothing. What others
    need to exist first (node labels and taints, Kueue's flavors) comes first; the add-ons
    before every unit (their CRDs)."""
    fleet = (
        PROD_FLEET
        + "nodeConfig: {method: nfd}\n"
        + "scheduling: {backend: kueue, kubeScheduler: {packing: true}}\n"
        + "platform:\n  volcano: {provided: fleet}\n"
    )
    team = TEAM + "jobs:\n  train: {vendor: nvidia, devices: 1, images: {nvidia: r/t:1}}\n"
    values_dir = tree(
        tmp_path, {"vendors/nvidia.yaml": POOL, "teams/ml.yaml": team}, fleet=fleet, defaults=False
    )
    units = everything(render_into(values_dir, tmp_path / "out"), "prod")
    waves = {
        o["metadata"]["labels"].get("accel-gitops.io/unit")
        or "addon:" + o["metadata"]["labels"]["accel-gitops.io/addon"]: int(
            o["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]
        )
        for o in units["argocd"]
        if o["kind"] == "Application"
    }
    assert waves == {
        "addon:volcano": -5,
        "argocd": -10,
        "node-config": 0,
        "scheduling": 1,
        "team-ml": 2,
        "device-plugins": 2,
        "monitoring": 2,
        "packing-scheduler": 2,
    }
    del waves["argocd"]  # the root app: it creates the others
    running = {
        u
        for u, objs in units.items()
        if any(o["kind"] in ("DaemonSet", "Deployment", "Job") for o in objs)
    }
    assert running == {"device-plugins", "monitoring", "packing-scheduler", "team-ml"}
    units_only = {u: w for u, w in waves.items() if not u.startswith("addon:")}
    for unit in running:
        assert all(units_only[unit] >= w for w in units_only.values()), unit
    assert max(w for u, w in waves.items() if u.startswith("addon:")) < min(units_only.values())
    assert waves["node-config"] < waves["team-ml"] and waves["scheduling"] < waves["team-ml"]


def test_with_clusters_the_hub_holds_the_projects_and_each_cluster_its_own_applications(
    tmp_path: Path,
) -> None:
    """TWO_CLUSTERS with NFD rendered: the hub's unit holds the fleet's project, the root
    Application and each cluster's app of apps (in the root's wave), and the add-ons' project
    without any add-on Application; each cluster's unit holds its own units' Applications and
    its own add-ons', never another cluster's, and no project. Every Application points its
    findings at the `git:` key, the add-ons at their `platform:` entry."""
    fleet = PROD_FLEET + "platform: {nfd: {provided: fleet}}\n"
    loaded = values.load(tree(tmp_path, TWO_CLUSTERS, fleet=fleet))
    views = loaded.views_of("prod")
    team = [Component("team-x", "teams/x", [obj("v1", "ConfigMap", "c", "x")])]
    built = [(workloads_of(view), argocd.shapes(team)) for view in views]
    hub = loaded.hub_of(views[0])
    argo = argocd.build(hub, built)
    git = Location("values/fleet.yaml", 4, 1)
    nfd = Location("values/fleet.yaml", 5, 12)

    def kinds(comp: Component) -> list[tuple[str, str]]:
        return [(o["kind"], o["metadata"]["name"]) for o in comp.objects]

    apps, addons = argo.hub
    assert kinds(apps) == [
        ("AppProject", "mini"),
        ("Application", "mini-prod-root"),
        ("Application", "mini-prod-domestic-root"),
        ("Application", "mini-prod-main-root"),
    ]
    assert all(apps.origin_of(o) == git for o in apps.objects)
    waves = {o["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] for o in apps.objects[1:]}
    assert waves == {"-10"}
    assert kinds(addons) == [("AppProject", "mini-platform")]
    assert sorted(argo.clusters) == ["prod/domestic", "prod/main"]
    for key, cluster in (("prod/main", "main"), ("prod/domestic", "domestic")):
        own_apps, own_addons = argo.clusters[key]
        assert kinds(own_apps) == [("Application", f"mini-prod-{cluster}-team-x")]
        assert own_apps.origin == git
        assert kinds(own_addons) == [("Application", f"mini-prod-{cluster}-nfd")]
        assert [own_addons.origin_of(o) for o in own_addons.objects] == [nfd]


def test_a_disabled_teams_namespaces_stay_in_the_project_for_argo_cds_cascade(
    tmp_path: Path,
) -> None:
    """Team `old` is disabled (enabled: false, namespaces old-a and old-b): its unit is gone, but
    the AppProject still permits its namespaces on the units' destination, so that Argo CD's
    cascade may delete what its Application deployed there (argo-cd v3.2.6
    getPermittedAppLiveObjects); an enabled team adds nothing of the kind."""
    files = {
        "vendors/nvidia.yaml": POOL,
        "environments/prod.yaml": ARGO_PROD,
        "teams/old.yaml": "enabled: false\nnamespaces: [old-b, old-a]\n",
    }
    view = values.load(tree(tmp_path, files, fleet=ARGO_FLEET, defaults=False)).envs["prod"]
    assert view.retired == ("old-a", "old-b")
    [comp] = argocd.build(*one_cluster(view, unit_components())).hub
    destinations = comp.objects[0]["spec"]["destinations"]
    assert [d for d in destinations if d["namespace"].startswith("old-")] == [
        {"server": REMOTE, "namespace": "old-a"},
        {"server": REMOTE, "namespace": "old-b"},
    ]
    assert argo_view(tmp_path / "plain").retired == ()
