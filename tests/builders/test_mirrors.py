"""Mirrors (generator/builders/mirrors.py, values `mirrors`): a registry mirror reaches every
image the fleet names (the vendors' node agents, the packing kube-scheduler, each image an add-on
chart's values name) and the add-on charts kept in OCI registries; a chart mirror replaces an
add-on's chart repository. No mirror leaves everything as the catalogue names it. Each case is a
values tree made for it, with the expected references written out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from generator.builders import argocd, mirrors
from generator.builders.fleet import Build
from generator.values import loader as values
from generator.values.model import FleetView, Mirrors
from generator.vocab import addons, units
from tests.fixtures import MPS_NVIDIA, PROD_FLEET, find, tree

TEAM = "quota: {nvidia: 4}\n"
REGISTRIES = """\
mirrors:
  registries:
    registry.k8s.io: mirror.example.cn/k8s
    nvcr.io: mirror.example.cn/nvcr
    nvcr.io/nvidia/k8s: dcgm.example.cn/k8s
    docker.io: hub.example.cn
    ghcr.io: mirror.example.cn/ghcr
"""


def prod(tmp_path: Path, fleet: str, files: dict[str, str] | None = None) -> FleetView:
    given = {"teams/ml.yaml": TEAM, **(files or {})}
    return values.load(tree(tmp_path, given, fleet=PROD_FLEET + fleet)).envs["prod"]


def argocd_objects(view: FleetView) -> list[dict[str, Any]]:
    build = Build(view)
    comps = [c for c in build.components if c.unit != units.ARGOCD_UNIT]
    return [
        o
        for c in argocd.build(view, [(build.workloads, argocd.shapes(comps))]).hub
        for o in c.objects
    ]


def images(view: FleetView) -> dict[str, list[str]]:
    """Every container image of the fleet's own DaemonSets and Deployments, by object name."""
    out = {}
    for comp in Build(view).components:
        for obj in comp.objects:
            if obj["kind"] in ("DaemonSet", "Deployment"):
                pod = obj["spec"]["template"]["spec"]
                ctrs = [*pod.get("initContainers", []), *pod["containers"]]
                out[obj["metadata"]["name"]] = [c["image"] for c in ctrs]
    return out


def test_an_oci_chart_and_its_image_come_from_the_registry_mirror(tmp_path: Path) -> None:
    """NFD's chart is in registry.k8s.io's OCI registry: its Application installs it from the
    mirror, its project allows that repository alone, and its values name the mirrored image
    beside what the fleet gives the chart anyway."""
    view = prod(tmp_path, REGISTRIES + "platform:\n  nfd: {provided: fleet}\n")
    objs = argocd_objects(view)
    app = find(objs, "Application", "mini-prod-nfd")
    assert app["spec"]["source"]["repoURL"] == "mirror.example.cn/k8s/nfd/charts"
    assert app["spec"]["source"]["chart"] == "node-feature-discovery"
    assert app["spec"]["source"]["targetRevision"] == "0.19.0"
    given = app["spec"]["source"]["helm"]["valuesObject"]
    assert given["image"] == {"repository": "mirror.example.cn/k8s/nfd/node-feature-discovery"}
    assert given["master"] == {"enableTaints": True}
    project = find(objs, "AppProject", "mini-platform")
    assert project["spec"]["sourceRepos"] == ["mirror.example.cn/k8s/nfd/charts"]


def test_no_mirror_installs_from_the_catalogues_repository_with_the_images_as_they_are(
    tmp_path: Path,
) -> None:
    view = prod(tmp_path, "platform:\n  nfd: {provided: fleet}\n  jobset: {provided: fleet}\n")
    objs = argocd_objects(view)
    nfd = find(objs, "Application", "mini-prod-nfd")
    assert nfd["spec"]["source"]["repoURL"] == "registry.k8s.io/nfd/charts"
    assert "image" not in nfd["spec"]["source"]["helm"]["valuesObject"]
    jobset = find(objs, "Application", "mini-prod-jobset")
    assert jobset["spec"]["source"]["helm"]["valuesObject"]["image"] == {
        "repository": "registry.k8s.io/jobset/jobset",
        "tag": "v0.11.1",
        "pullPolicy": "IfNotPresent",
    }
    project = find(objs, "AppProject", "mini-platform")
    assert project["spec"]["sourceRepos"] == [
        "registry.k8s.io/jobset/charts",
        "registry.k8s.io/nfd/charts",
    ]


def test_a_mirror_replaces_the_registry_of_the_released_image_the_fleet_names(
    tmp_path: Path,
) -> None:
    """JobSet's values already name the released image (tag and pull policy): the mirror
    changes its repository alone."""
    view = prod(tmp_path, REGISTRIES + "platform:\n  jobset: {provided: fleet}\n")
    app = find(argocd_objects(view), "Application", "mini-prod-jobset")
    assert app["spec"]["source"]["repoURL"] == "mirror.example.cn/k8s/jobset/charts"
    assert app["spec"]["source"]["helm"]["valuesObject"]["image"] == {
        "repository": "mirror.example.cn/k8s/jobset/jobset",
        "tag": "v0.11.1",
        "pullPolicy": "IfNotPresent",
    }


def test_a_chart_mirror_replaces_an_http_repository_and_split_image_fields_follow(
    tmp_path: Path,
) -> None:
    """Volcano's chart is in an HTTP repository, which only a chart mirror replaces; its images
    are a registry field and a name field: docker.io's mirror is a host and a path, so the host
    goes in the registry and the path before the name."""
    fleet = (
        REGISTRIES
        + "  charts:\n    https://volcano-sh.github.io/helm-charts: https://charts.example.cn/vc\n"
        + "platform:\n  volcano: {provided: fleet}\n"
    ).replace("docker.io: hub.example.cn", "docker.io: hub.example.cn/library-mirror")
    app = find(argocd_objects(prod(tmp_path, fleet)), "Application", "mini-prod-volcano")
    assert app["spec"]["source"]["repoURL"] == "https://charts.example.cn/vc"
    assert app["spec"]["source"]["helm"]["valuesObject"] == {
        "basic": {
            "image_registry": "hub.example.cn",
            "controller_image_name": "library-mirror/volcanosh/vc-controller-manager",
            "scheduler_image_name": "library-mirror/volcanosh/vc-scheduler",
            "agent_scheduler_image_name": "library-mirror/volcanosh/vc-agent-scheduler",
            "admission_image_name": "library-mirror/volcanosh/vc-webhook-manager",
            "agent_image_name": "library-mirror/volcanosh/vc-agent",
        }
    }


def test_an_http_chart_repository_without_a_chart_mirror_is_kept(tmp_path: Path) -> None:
    """A registry mirror never rewrites an http(s) repository (NVIDIA's NGC), but still reaches
    the images its chart names (the DRA driver's)."""
    dra = "pools:\n  - {name: h100, model: H100, devicesPerNode: 8, nodes: [n1]}\nallocation: dra\n"
    fleet = REGISTRIES + "platform:\n  nvidiaDraDriver: {provided: fleet}\n"
    view = prod(tmp_path, fleet, {"vendors/nvidia.yaml": dra})
    app = find(argocd_objects(view), "Application", "mini-prod-nvidia-dra-driver")
    assert app["spec"]["source"]["repoURL"] == "https://helm.ngc.nvidia.com/nvidia"
    assert app["spec"]["source"]["helm"]["valuesObject"]["image"] == {
        "repository": "mirror.example.cn/nvcr/nvidia/k8s-dra-driver-gpu"
    }


def test_the_gpu_operators_operands_keep_their_names_and_take_the_mirrors_repository(
    tmp_path: Path,
) -> None:
    """Each operand is a repository and an image name: the name stays, the repository is the
    mirror's; the longest mirror wins (nvcr.io/nvidia/k8s over nvcr.io); NFD's subchart too."""
    fleet = REGISTRIES + "platform:\n  gpuOperator: {provided: fleet}\n"
    vendor = (
        "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1]}\n"
        "devicePlugin: {provided: operator}\n"
    )
    view = prod(tmp_path, fleet, {"vendors/nvidia.yaml": vendor})
    app = find(argocd_objects(view), "Application", "mini-prod-gpu-operator")
    given = app["spec"]["source"]["helm"]["valuesObject"]
    assert given["operator"] == {
        "repository": "mirror.example.cn/nvcr/nvidia",
        "image": "gpu-operator",
        "initContainer": {"repository": "mirror.example.cn/nvcr/nvidia", "image": "cuda"},
        "version": "v25.3.4",  # the release's tag (builders/operators.py)
    }
    assert given["toolkit"] == {"repository": "dcgm.example.cn/k8s", "image": "container-toolkit"}
    assert given["devicePlugin"]["repository"] == "mirror.example.cn/nvcr/nvidia"
    assert given["devicePlugin"]["image"] == "k8s-device-plugin"
    assert given["devicePlugin"]["enabled"] is True
    assert given["driver"]["manager"] == {
        "repository": "mirror.example.cn/nvcr/nvidia/cloud-native",
        "image": "k8s-driver-manager",
    }
    assert given["node-feature-discovery"] == {
        "image": {"repository": "mirror.example.cn/k8s/nfd/node-feature-discovery"}
    }
    assert "vgpuManager" in given and "repository" not in given["vgpuManager"]


def test_vendor_images_and_the_packing_scheduler_come_from_the_mirrors(tmp_path: Path) -> None:
    fleet = REGISTRIES + "scheduling:\n  kubeScheduler: {packing: true}\n"
    assert images(prod(tmp_path, fleet)) == {
        "nvidia-device-plugin": ["mirror.example.cn/nvcr/nvidia/k8s-device-plugin:v0.17.1"],
        "dcgm-exporter": ["dcgm.example.cn/k8s/dcgm-exporter:4.5.3-4.8.2-distroless"],
        "accel-packing-scheduler": ["mirror.example.cn/k8s/kube-scheduler:v1.33.0"],
    }


def test_the_mps_daemon_and_its_init_container_come_from_the_mirror(tmp_path: Path) -> None:
    view = prod(tmp_path, REGISTRIES, {"vendors/nvidia.yaml": MPS_NVIDIA})
    plugin = "mirror.example.cn/nvcr/nvidia/k8s-device-plugin:v0.17.1"
    assert images(view)["nvidia-device-plugin-mps-mps-control-daemon"] == [plugin, plugin]


def test_an_environment_sets_its_own_mirrors(tmp_path: Path) -> None:
    """prod's overrides add a mirror; staging keeps the catalogue's images."""
    fleet = PROD_FLEET.replace("[prod]", "[staging, prod]")
    overrides = "fleet:\n  mirrors:\n    registries:\n      nvcr.io: mirror.example.cn/nvcr\n"
    loaded = values.load(
        tree(tmp_path, {"teams/ml.yaml": TEAM, "environments/prod.yaml": overrides}, fleet=fleet)
    )
    assert images(loaded.envs["prod"])["nvidia-device-plugin"] == [
        "mirror.example.cn/nvcr/nvidia/k8s-device-plugin:v0.17.1"
    ]
    assert images(loaded.envs["staging"])["nvidia-device-plugin"] == [
        "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"
    ]


def test_a_registry_mirror_matches_whole_path_parts_and_the_longest_wins() -> None:
    given = Mirrors(
        registries=(("ghcr.io/kubeflow", "a.example.cn/kf"), ("ghcr.io", "b.example.cn/gh"))
    )
    assert mirrors.image(given, "ghcr.io/kubeflow/trainer/x") == "a.example.cn/kf/trainer/x"
    assert mirrors.image(given, "ghcr.io/kubeflowx/y") == "b.example.cn/gh/kubeflowx/y"
    assert mirrors.image(given, "ghcr.io") == "b.example.cn/gh"
    assert mirrors.image(given, "ghcr.iox/y") == "ghcr.iox/y"


def test_images_sharing_a_registry_field_with_different_mirrors_are_a_clash() -> None:
    """Volcano's five images share basic.image_registry: a mirror of one of them on another
    host than the rest needs two values there. The first in the chart's order is rendered."""
    given = Mirrors(
        registries=(
            ("docker.io", "hub.example.cn/x"),
            ("docker.io/volcanosh/vc-scheduler", "other.example.cn/vc-scheduler"),
        )
    )
    chart = addons.BY_KEY["volcano"].chart
    assert chart is not None
    found = mirrors.chart_images(given, chart)
    assert found.clashes == [(("basic", "image_registry"), ("hub.example.cn", "other.example.cn"))]
    assert found.values["basic"]["image_registry"] == "hub.example.cn"
    assert found.values["basic"]["scheduler_image_name"] == "vc-scheduler"


def test_every_chart_the_fleet_can_render_names_its_images() -> None:
    """An add-on with a chart and no images would escape every mirror unnoticed."""
    assert [a.key for a in addons.ADDONS if a.chart is not None and not a.chart.images] == []
    counts = {a.key: len(a.chart.images) for a in addons.ADDONS if a.chart is not None}
    assert counts == {
        "volcano": 5,
        "kueue": 3,
        "nfd": 1,
        "jobset": 1,
        "lws": 1,
        "trainer": 6,
        "gpuOperator": 22,
        "nvidiaDraDriver": 1,
    }
