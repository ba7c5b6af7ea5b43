"""DeviceClasses, ResourceClaimTemplates and pods' claims of vendors allocated by DRA
(generator/builders/claims.py, and where workloads, device plugins and teams use it)."""

from __future__ import annotations

from pathlib import Path

from generator.builders import claims, device_plugins, teams
from generator.values import loader as values
from generator.values.model import FleetView
from tests.fixtures import DRA_NVIDIA, NVIDIA, PROD_FLEET, Obj, team_objects, tree

# H100s (n4) and A100s (n5) claimed through NVIDIA's DRA driver.
DRA_TWO_MODELS = DRA_NVIDIA + "  - {name: a100-dra, model: A100, devicesPerNode: 4, nodes: [n5]}\n"
H100 = "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H100')"
A100 = "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA A100')"
WHOLE = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
# Team ml: a job of 4 H100s in namespace ml, a service of one GPU of any model in namespace web,
# and a second job of 4 H100s, which shares the first's template.
TEAM = """\
namespaces: [ml, web]
quota: {nvidia-dra: 8, nvidia: 2}
jobs:
  train:
    vendor: nvidia-dra
    devices: 4
    model: H100
    images: {nvidia-dra: r/t:cuda}
  again:
    vendor: nvidia-dra
    devices: 4
    model: H100
    images: {nvidia-dra: r/t:cuda}
  whole:
    vendor: nvidia
    devices: 2
    images: {nvidia: r/t:cuda}
services:
  chat:
    namespace: web
    images: {nvidia-dra: r/chat:cuda}
    tracks:
      nvidia-dra: {devicesPerReplica: 1, replicas: 2}
"""


def view_of(tmp_path: Path, team: str = TEAM, vendor: str = DRA_TWO_MODELS) -> FleetView:
    files = {
        "vendors/nvidia.yaml": NVIDIA,
        "vendors/nvidia-dra.yaml": vendor,
        "teams/ml.yaml": team,
    }
    return values.load(tree(tmp_path, files, fleet=PROD_FLEET, defaults=False)).envs["prod"]


def test_the_device_class_selects_the_drivers_whole_devices_of_the_pools_models(
    tmp_path: Path,
) -> None:
    """The chart's own class selects driver and type (deployments/helm/.../deviceclass-gpu.yaml
    v25.12.0); the fleet's adds its pools' models, in model order. No plugin, no namespace."""
    view = view_of(tmp_path)
    comps = {c.name: c for c in device_plugins.build(view)}
    assert [o["kind"] for o in comps["device-plugins/nvidia-dra"].objects] == ["DeviceClass"]
    (cls,) = comps["device-plugins/nvidia-dra"].objects
    assert cls == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {
            "name": "nvidia-dra",
            "labels": {"app.kubernetes.io/managed-by": "accel-gitops"},
            "annotations": {"accel-gitops.io/source": "values/vendors/nvidia-dra.yaml"},
        },
        "spec": {"selectors": [{"cel": {"expression": f"{WHOLE} && ({A100} || {H100})"}}]},
    }
    (ns,) = comps["device-plugins/namespaces"].objects
    assert ns["metadata"]["annotations"]["accel-gitops.io/source"] == "values/vendors/nvidia.yaml"
    only_h100 = view_of(tmp_path / "h", vendor=DRA_NVIDIA)
    vendor = only_h100.vendor("nvidia-dra")
    assert vendor is not None
    assert claims.device_class(vendor)["spec"]["selectors"] == [
        {"cel": {"expression": f"{WHOLE} && ({H100})"}}
    ]


def test_a_dra_vendors_unit_holds_its_class_and_the_vendors_after_it_follow(
    tmp_path: Path,
) -> None:
    """A DRA vendor sorted first (a-dra) gets its own base in the device-plugins unit, at its
    `allocation` line; nvidia after it still gets its plugin."""
    files = {
        "vendors/a-dra.yaml": DRA_NVIDIA.replace("nvidia-gpu-dra", "gpu-a-dra").replace(
            "dcgm-exporter-dra", "dcgm-exporter-a"
        ),
        "vendors/nvidia.yaml": NVIDIA,
    }
    view = values.load(tree(tmp_path, files, fleet=PROD_FLEET, defaults=False)).envs["prod"]
    comps = device_plugins.build(view)
    assert [(c.unit, c.name, [o["kind"] for o in c.objects]) for c in comps] == [
        ("device-plugins", "device-plugins/namespaces", ["Namespace"]),
        ("device-plugins", "device-plugins/a-dra", ["DeviceClass"]),
        ("device-plugins", "device-plugins/nvidia", ["DaemonSet"]),
    ]
    assert str(comps[1].origin) == "values/vendors/a-dra.yaml:2:1"


def claim_template(name: str, namespace: str, count: int, selector: str | None) -> Obj:
    # allocationMode as the API server defaults it, written out (else Argo CD sees a diff).
    exactly: Obj = {"deviceClassName": "nvidia-dra", "allocationMode": "ExactCount", "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/managed-by": "accel-gitops",
                "accel-gitops.io/team": "ml",
            },
            "annotations": {"accel-gitops.io/source": "values/teams/ml.yaml"},
        },
        "spec": {"spec": {"devices": {"requests": [{"name": "devices", "exactly": exactly}]}}},
    }


def test_pods_claim_their_devices_by_a_template_of_their_namespace(tmp_path: Path) -> None:
    """No extended resource for the DRA vendor: the pod claims `devices` by a template per
    model and count, one per namespace however many pods use it; a whole vendor's pod is as
    before. The claim of a named model narrows the class to that model."""
    view = view_of(tmp_path)
    (team,) = view.teams
    objs, pods = team_objects(view, team)
    templates = [o for o in objs if o["kind"] == "ResourceClaimTemplate"]
    assert templates == [
        claim_template("nvidia-dra-h100-x4", "ml", 4, H100),
        claim_template("nvidia-dra-any-x1", "web", 1, None),
    ]
    specs = {p.name: p.spec for p in pods}
    for name, template in (
        ("train", "nvidia-dra-h100-x4"),
        ("again", "nvidia-dra-h100-x4"),
        ("chat-nvidia-dra", "nvidia-dra-any-x1"),
    ):
        spec = specs[name]
        assert spec["resourceClaims"] == [
            {"name": "devices", "resourceClaimTemplateName": template}
        ]
        (ctr,) = spec["containers"]
        assert ctr["resources"] == {
            "requests": {"cpu": "1", "memory": "2Gi"},
            "claims": [{"name": "devices"}],
        }
    whole = specs["whole"]
    assert "resourceClaims" not in whole
    assert whole["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 2}


def test_claims_are_read_back_from_the_template_names(tmp_path: Path) -> None:
    """claimed() gives vendor, model and count of the fleet's own templates: a pool model in
    its own spelling, "" for any model, a model no pool has as the name spells it; a template
    that is not the fleet's is left out."""
    view = view_of(tmp_path)
    spec = {
        "resourceClaims": [
            {"name": "a", "resourceClaimTemplateName": "nvidia-dra-h100-x4"},
            {"name": "b", "resourceClaimTemplateName": "nvidia-dra-any-x1"},
            {"name": "c", "resourceClaimTemplateName": "nvidia-dra-b200-x2"},
            {"name": "d", "resourceClaimTemplateName": "someone-elses"},
            {"name": "e", "resourceClaimTemplateName": "nvidia-dra-h100"},
        ]
    }
    got = {k: (v.id, m, n) for k, (v, m, n) in claims.claimed(view, spec).items()}
    assert got == {
        "a": ("nvidia-dra", "H100", 4),
        "b": ("nvidia-dra", "", 1),
        "c": ("nvidia-dra", "b200", 2),
    }


def test_a_teams_quota_line_counts_the_devices_claimed_of_the_class(tmp_path: Path) -> None:
    """kubernetes/api core/v1 types.go v0.36.3 ResourceClaimsPerClass: no `requests.` prefix."""
    view = view_of(tmp_path)
    (team,) = view.teams
    assert teams.quota_hard(view, team) == {
        "nvidia-dra.deviceclass.resource.k8s.io/devices": "8",
        "requests.nvidia.com/gpu": "2",
    }
    quotas = [o for o in teams.build(view)[0].objects if o["kind"] == "ResourceQuota"]
    assert [(q["metadata"]["namespace"], q["spec"]["hard"]) for q in quotas] == [
        (ns, teams.quota_hard(view, team)) for ns in ("ml", "web")
    ]


def test_a_models_template_name_is_an_object_name(tmp_path: Path) -> None:
    """A pool model is a label value and may hold `_` and `.`, which an object name may not:
    the template spells both `-` (nvidia-dra-h100-nvl-94gb-x2), and claimed() reads the pool's
    own spelling back from it."""
    model = "H100_NVL.94GB"
    source = "example/none tests/builders/test_claims.py v0: a model made up for this test"
    vendor = DRA_NVIDIA.replace("model: H100", f"model: {model}") + (
        "draDriver:\n"
        "  name: gpu.nvidia.com\n"
        "  typeAttribute: type\n"
        "  typeValue: gpu\n"
        "  modelAttribute: productName\n"
        "  models:\n"
        f"    {model}: {{prefix: NVIDIA H100 NVL, source: '{source}'}}\n"
        "  sources: ['NVIDIA/k8s-dra-driver-gpu cmd/gpu-kubelet-plugin/main.go v25.12.0']\n"
    )
    team = (
        "quota: {nvidia-dra: 8}\n"
        "jobs:\n"
        f"  train: {{vendor: nvidia-dra, devices: 2, model: {model}, "
        "images: {nvidia-dra: r/t:cuda}}\n"
    )
    view = view_of(tmp_path, team=team, vendor=vendor)
    (ml,) = view.teams
    objs, pods = team_objects(view, ml)
    selector = "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H100 NVL')"
    assert [o for o in objs if o["kind"] == "ResourceClaimTemplate"] == [
        claim_template("nvidia-dra-h100-nvl-94gb-x2", "ml", 2, selector)
    ]
    (pod,) = pods
    assert pod.spec["resourceClaims"] == [
        {"name": "devices", "resourceClaimTemplateName": "nvidia-dra-h100-nvl-94gb-x2"}
    ]
    got = {k: (v.id, m, n) for k, (v, m, n) in claims.claimed(view, pod.spec).items()}
    assert got == {"devices": ("nvidia-dra", model, 2)}


def test_a_claim_belongs_to_the_vendor_whose_class_name_it_starts_with_longest(
    tmp_path: Path,
) -> None:
    """Vendor nvidia-dra-a100's templates start with `nvidia-dra-` too: each is read as the
    vendor with the longest class name it starts with, not as nvidia-dra's model `a100-any`."""
    a100 = (
        DRA_NVIDIA.replace(
            "h100-dra, model: H100, devicesPerNode: 8, nodes: [n4]",
            "a100-dra, model: A100, devicesPerNode: 4, nodes: [n5]",
        )
        .replace("nvidia-gpu-dra", "nvidia-gpu-dra-a100")
        .replace("dcgm-exporter-dra", "dcgm-exporter-dra-a100")
    )
    team = (
        "quota: {nvidia-dra: 8, nvidia-dra-a100: 4}\n"
        "jobs:\n"
        "  h100: {vendor: nvidia-dra, devices: 4, model: H100, images: {nvidia-dra: r/t:cuda}}\n"
        "  a100: {vendor: nvidia-dra-a100, devices: 2, images: {nvidia-dra-a100: r/t:cuda}}\n"
    )
    files = {
        "vendors/nvidia-dra.yaml": DRA_NVIDIA,
        "vendors/nvidia-dra-a100.yaml": a100,
        "teams/ml.yaml": team,
    }
    view = values.load(tree(tmp_path, files, fleet=PROD_FLEET, defaults=False)).envs["prod"]
    (ml,) = view.teams
    _, pods = team_objects(view, ml)
    got = {
        p.name: (
            p.spec["resourceClaims"][0]["resourceClaimTemplateName"],
            {k: (v.id, m, n) for k, (v, m, n) in claims.claimed(view, p.spec).items()},
        )
        for p in pods
    }
    assert got == {
        "h100": ("nvidia-dra-h100-x4", {"devices": ("nvidia-dra", "H100", 4)}),
        "a100": ("nvidia-dra-a100-any-x2", {"devices": ("nvidia-dra-a100", "", 2)}),
    }


def test_claims_that_are_not_the_fleets_do_not_hide_the_ones_after_them(tmp_path: Path) -> None:
    """Another template, a claim by name, a fleet-like name with no count or a count that is not
    a number: each is left out, and the fleet's claims after them are still read. A model no pool
    has may hold `-x` itself: the count is after the last one."""
    view = view_of(tmp_path)
    spec = {
        "resourceClaims": [
            {"name": "d", "resourceClaimTemplateName": "someone-elses"},
            {"name": "e", "resourceClaimTemplateName": "nvidia-dra-h100"},
            {"name": "f", "resourceClaimTemplateName": "nvidia-dra-h100-xfour"},
            {"name": "g", "resourceClaimTemplateName": "nvidia-dra-123"},
            {"name": "h", "resourceClaimName": "a-shared-claim"},
            {"name": "a", "resourceClaimTemplateName": "nvidia-dra-h100-x4"},
            {"name": "c", "resourceClaimTemplateName": "nvidia-dra-b200-xl-x2"},
        ]
    }
    got = {k: (v.id, m, n) for k, (v, m, n) in claims.claimed(view, spec).items()}
    assert got == {"a": ("nvidia-dra", "H100", 4), "c": ("nvidia-dra", "b200-xl", 2)}
