"""Integration: the real kustomize builds every rendered unit to exactly the intended objects."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.render.stage import RenderOptions, render
from tests.fixtures import Write, assert_units_build_exactly, kustomize_build


def test_every_unit_of_the_example_fleet_builds_to_the_intended_objects(
    values_dir: Path, tmp_path: Path
) -> None:
    # staging's 8 units, prod's argocd unit on the hub and 8 units (its argocd unit among them)
    # in each of its two clusters
    assert assert_units_build_exactly(tmp_path / "out", values_dir) == 25


def test_overlay_patches_deletes_and_local_objects_build_exactly(
    values_dir: Path, write: Write, tmp_path: Path
) -> None:
    # prod drops the Ascend plugin's RBAC (delete patches; its DaemonSet stays as the base has
    # it), moves the NVIDIA plugin to another namespace (a new local Namespace, a delete and an
    # add), changes quotas (JSON patches), disables AMD and adds a team namespace (ml-team's jobs are off: they need more
    # than that quota, and Cambricon, which ml-team has quota for).
    write(
        "environments/prod.yaml",
        """\
vendors:
  ascend:
    devicePlugin: {rbac: []}
  nvidia:
    devicePlugin: {namespace: nvidia-plugins}
  amd: {enabled: false}
teams:
  ml-team:
    namespaces: [ml-team, ml-team-batch]
    quota: {nvidia: 2, ascend: 4}
    jobs:
      cuda-training-job: {enabled: false}
      npu-training-job: {enabled: false}
      mixed-training-job: {enabled: false}
""",
    )
    out = tmp_path / "out"
    assert_units_build_exactly(out, values_dir)
    kust = (out / "overlays/prod/device-plugins/kustomization.yaml").read_text()
    assert "patches/delete-clusterrole-ascend-device-plugin.yaml" in kust
    assert "../../../base/device-plugins/amd" not in kust


def test_a_component_changed_all_over_is_carried_whole_and_builds_exactly(
    values_dir: Path, write: Write, tmp_path: Path
) -> None:
    # A new plugin version replaces the DaemonSet's containers, most of the object, and the
    # RBAC goes: the unit carries the DaemonSet instead of the base and its patches.
    write(
        "environments/prod.yaml",
        "vendors:\n  ascend:\n    devicePlugin: {rbac: [], version: v6.0.1}\n",
    )
    out = tmp_path / "out"
    assert_units_build_exactly(out, values_dir)
    kust = (out / "overlays/prod/device-plugins/kustomization.yaml").read_text()
    assert "- daemonset-accelerator-plugins-ascend-device-plugin.yaml" in kust, kust
    assert "base/device-plugins/ascend" not in kust and "delete-" not in kust, kust
    assert (
        "base/device-plugins/ascend"
        in (out / "overlays/staging/device-plugins/kustomization.yaml").read_text()
    )


@pytest.mark.parametrize("method", ["nfd", "node-patch"])
def test_both_node_config_methods_build(
    method: str, values_dir: Path, write: Write, tmp_path: Path
) -> None:
    fleet = (values_dir / "fleet.yaml").read_text().replace("method: nfd", f"method: {method}")
    write("fleet.yaml", fleet)
    out = tmp_path / "out"
    assert_units_build_exactly(out, values_dir)
    docs = kustomize_build(out / "overlays/staging/node-config")  # one cluster, every pool
    if method == "nfd":
        assert {d["kind"] for d in docs} == {"NodeFeatureRule"}
    else:
        nodes = {d["metadata"]["name"]: d for d in docs}
        assert nodes["dcu-node-01"]["metadata"]["labels"] == {
            "accelerator": "hygon-dcu",
            "dcu-model": "Z100L",
            "gpu-brand": "hygon",
        }
        assert nodes["dcu-node-01"]["spec"]["taints"] == [
            {
                "key": "feature.node.kubernetes.io/accelerator",
                "value": "hygon-dcu",
                "effect": "NoSchedule",
            }
        ]


def test_device_plugins_land_only_on_their_vendor_and_tolerate_its_taints(
    values_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    render(RenderOptions(values_dir=values_dir, out_dir=out))
    docs = kustomize_build(out / "overlays/staging/device-plugins")  # one cluster, every pool
    ds = {d["metadata"]["name"]: d for d in docs if d["kind"] == "DaemonSet"}
    hygon = ds["dcu-device-plugin"]["spec"]["template"]["spec"]
    amd = ds["amdgpu-device-plugin"]["spec"]["template"]["spec"]
    assert hygon["nodeSelector"] == {"feature.node.kubernetes.io/accelerator": "hygon-dcu"}
    assert amd["nodeSelector"] == {"feature.node.kubernetes.io/accelerator": "amd-gpu"}
    assert {
        "key": "feature.node.kubernetes.io/accelerator",
        "operator": "Equal",
        "value": "hygon-dcu",
        "effect": "NoSchedule",
    } in hygon["tolerations"]
    nvidia = ds["nvidia-device-plugin"]["spec"]["template"]["spec"]
    assert nvidia["containers"][0]["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }
    assert "serviceAccountName" not in nvidia
    ascend = ds["ascend-device-plugin"]["spec"]["template"]["spec"]
    assert {"name": "hiai-driver", "mountPath": "/usr/local/Ascend/driver", "readOnly": True} in (
        ascend["containers"][0]["volumeMounts"]
    )
    assert ascend["serviceAccountName"] == "ascend-device-plugin"
    ns = next(d for d in docs if d["kind"] == "Namespace")
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"


def test_team_namespaces_are_baseline_or_stricter_with_quota_per_vendor(
    values_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    render(RenderOptions(values_dir=values_dir, out_dir=out))
    docs = kustomize_build(out / "overlays/staging/team-inference")
    ns = next(d for d in docs if d["kind"] == "Namespace")
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    quota = next(d for d in docs if d["kind"] == "ResourceQuota")
    assert quota["spec"]["hard"]["requests.amd.com/gpu"] == "8"
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu"] == "4"
    assert quota["spec"]["hard"]["requests.huawei.com/Ascend910"] == "4"


def test_argocd_applications_are_ordered_by_sync_wave(values_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    render(RenderOptions(values_dir=values_dir, out_dir=out))
    every = [
        d for d in kustomize_build(out / "overlays/staging/argocd") if d["kind"] == "Application"
    ]
    # The example's add-ons (docs/platform.md) are Applications of their charts, no units.
    addons = {
        d["metadata"]["labels"]["accel-gitops.io/addon"]: d
        for d in every
        if "accel-gitops.io/addon" in d["metadata"]["labels"]
    }
    assert sorted(addons) == ["jobset", "nfd", "nvidiaDraDriver", "volcano"]
    volcano = addons["volcano"]
    apps = {
        d["metadata"]["labels"]["accel-gitops.io/unit"]: d
        for d in every
        if "accel-gitops.io/addon" not in d["metadata"]["labels"]
    }
    wave = {
        u: int(a["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"])
        for u, a in apps.items()
    }
    volcano_wave = int(volcano["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"])
    assert volcano_wave < wave["node-config"] < wave["team-ml-team"] == wave["device-plugins"]
    assert wave["argocd"] < volcano_wave
    assert apps["team-ml-team"]["spec"]["source"] == {
        "repoURL": "https://git.example.com/platform/accel-gitops.git",
        "targetRevision": "main",
        "path": "overlays/staging/team-ml-team",
    }
    for unit in apps:
        assert (out / "overlays/staging" / unit / "kustomization.yaml").is_file()


def test_environment_file_is_named_only_on_objects_it_changed(
    values_dir: Path, write: Write, tmp_path: Path
) -> None:
    """An override that changes one object makes one patch; the others keep the base's
    provenance (an annotation-only patch per object would bury the real change)."""
    write("environments/staging.yaml", "teams:\n  ml-team:\n    quota: {nvidia: 4}\n")
    # prod sets the value the team file already has: it changes nothing, so no patch at all.
    # (One cluster, given a third NVIDIA node, so that its jobs and services fit: MIG005.)
    write(
        "environments/prod.yaml",
        "teams:\n  ml-team:\n    quota: {nvidia: 8}\nvendors:\n  nvidia:\n    pools:\n"
        "      - {name: a100, model: A100, devicesPerNode: 4,"
        " nodes: [nvidia-node-01, nvidia-node-02, nvidia-node-05]}\n",
    )
    out = tmp_path / "out"
    assert_units_build_exactly(out, values_dir)
    staging = out / "overlays/staging/team-ml-team"
    assert sorted(p.name for p in (staging / "patches").iterdir()) == [
        "resourcequota-ml-team-accelerators.yaml"
    ]
    assert not (out / "overlays/prod/team-ml-team/patches").exists()
    source = "accel-gitops.io/source"
    built = {d["kind"] + "/" + d["metadata"]["name"]: d for d in kustomize_build(staging)}
    assert built["ResourceQuota/accelerators"]["metadata"]["annotations"][source] == (
        "values/teams/ml-team.yaml, values/environments/staging.yaml"
    )
    for key in ("Namespace/ml-team", "Job/cuda-training-job"):
        assert built[key]["metadata"]["annotations"][source] == "values/teams/ml-team.yaml"
