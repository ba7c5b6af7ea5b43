"""Behaviour that only the golden diff held before: each on a values tree made for it, through the
real CLI, reading what it wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from generator.policy.placement import tolerates
from generator.render.layout import render_tree
from generator.values.model import Taint
from tests.fixtures import FLEET, NVIDIA, cli, render_refused, snapshot, tree

AMD = "pools:\n  - {name: mi250x, model: MI250X, devicesPerNode: 8, nodes: [m1]}\n"


def render(values: Path) -> Path:
    out = values.parent / "out"
    code, output = cli("render", "--values", str(values), "--out", str(out))
    assert code == 0, output
    return out


def objects(folder: Path) -> dict[str, dict[str, Any]]:
    """Every rendered object under folder, by 'Kind/name'."""
    out = {}
    for path in sorted(folder.rglob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        if isinstance(doc, dict) and "metadata" in doc:
            out[f"{doc['kind']}/{doc['metadata']['name']}"] = doc
    return out


def test_render_check_fails_when_the_only_difference_is_a_stale_file(tmp_path: Path) -> None:
    values = tree(tmp_path)
    out = render(values)
    (out / "overlays" / "prod" / "team-ml" / "leftover.yaml").write_text("kind: ConfigMap\n")
    before = snapshot(out)
    code, output = cli("render", "--values", str(values), "--out", str(out), "--check")
    assert code == 1
    assert output.splitlines() == [
        "stale: overlays/prod/team-ml/leftover.yaml (not rendered from the values; a fresh "
        "render removes it)",
        "render --check: 0 changed, 0 missing, 1 stale; run `accel-gitops render` and "
        "commit the result",
    ]
    assert snapshot(out) == before


def test_a_toleration_with_another_effect_does_not_tolerate_the_taint() -> None:
    taint = Taint("accelerator", "NoSchedule", "nvidia-gpu")
    same = {"key": "accelerator", "operator": "Equal", "value": "nvidia-gpu"}
    assert tolerates({"tolerations": [{**same, "effect": "NoSchedule"}]}, taint)
    assert tolerates({"tolerations": [same]}, taint)  # no effect: every effect
    assert not tolerates({"tolerations": [{**same, "effect": "NoExecute"}]}, taint)
    assert not tolerates({"tolerations": [{**same, "effect": "PreferNoSchedule"}]}, taint)
    assert not tolerates(
        {"tolerations": [{"key": "accelerator", "operator": "Exists", "effect": "NoExecute"}]},
        taint,
    )


def test_an_environment_that_changes_the_taints_effect_keeps_workloads_tolerating_it(
    tmp_path: Path,
) -> None:
    """The workloads' tolerations follow the vendor's taints, effect included, per environment."""
    vendor = "taints: [{key: accelerator, value: nvidia-gpu, effect: NoExecute}]\n" + NVIDIA
    team = "quota: {nvidia: 4}\njobs:\n  train:\n    vendor: nvidia\n"
    team += "    images: {nvidia: registry.example.com/t:1}\n"
    out = render(tree(tmp_path, {"vendors/nvidia.yaml": vendor, "teams/ml.yaml": team}))
    job = objects(out / "base")["Job/train"]
    assert job["spec"]["template"]["spec"]["tolerations"] == [
        {"key": "accelerator", "operator": "Equal", "value": "nvidia-gpu", "effect": "NoExecute"}
    ]


def test_quota_counts_once_per_namespace_of_a_team(tmp_path: Path) -> None:
    team = "namespaces: [ml-a, ml-b]\nquota:\n  nvidia: {n}\n"
    fits = tree(tmp_path / "fits", {"teams/ml.yaml": team.format(n=4)})  # 2 x 4 = 8 GPUs
    render(fits)
    over = tree(tmp_path / "over", {"teams/ml.yaml": team.format(n=5)})
    assert (
        "values/teams/ml.yaml:3:11: CAP001 quotas for nvidia (nvidia.com/gpu) add up to 10 "
        "devices (ml 10) but its pools hold 8 (at $.quota.nvidia); lower the quotas, add nodes "
        "to the vendor's pools, or allow a bounded overcommit with capacity.overcommitRatio "
        "(e.g. 1.5) in values/fleet.yaml"
    ) in render_refused(over).splitlines()


def test_explicit_weights_that_leave_out_a_track_give_it_no_traffic(tmp_path: Path) -> None:
    team = """\
quota: {nvidia: 4, amd: 8}
services:
  web:
    images: {nvidia: registry.example.com/web:1, amd: registry.example.com/web:rocm}
    routing: gateway
    gateway: {parentRefs: [{name: edge, namespace: gateways}]}
    migration: {from: nvidia, to: amd}
    phase: shift-50
    weights: {amd: 100}
    tracks:
      nvidia: {replicas: 1}
      amd: {replicas: 1}
"""
    fleet = FLEET + "platform:\n  gatewayAPI: {provided: site}\n"
    out = render(tree(tmp_path, {"vendors/amd.yaml": AMD, "teams/ml.yaml": team}, fleet=fleet))
    objs = objects(out / "base")
    backends = objs["HTTPRoute/web"]["spec"]["rules"][0]["backendRefs"]
    assert [(b["name"], b["weight"]) for b in backends] == [("web-nvidia", 0), ("web-amd", 100)]
    # the Service over both tracks selects the one serving track
    assert objs["Service/web"]["spec"]["selector"] == {
        "app.kubernetes.io/name": "web",
        "accel-gitops.io/track": "amd",
    }
    assert objs["Deployment/web-nvidia"]["spec"]["replicas"] == 1  # still running


def test_sync_waves_order_every_unit_and_the_objects_inside_them(tmp_path: Path) -> None:
    fleet = FLEET + "scheduling: {backend: kueue}\n"
    team = "quota: {nvidia: 4}\njobs:\n  train:\n    vendor: nvidia\n"
    team += "    images: {nvidia: registry.example.com/t:1}\n"
    out = render(tree(tmp_path, {"fleet.yaml": fleet, "teams/ml.yaml": team}))

    def wave(obj: dict[str, Any]) -> int:
        return int(obj["metadata"].get("annotations", {}).get("argocd.argoproj.io/sync-wave", 0))

    # Applications are per environment: overlays/<env>/argocd
    apps = {
        o["metadata"]["labels"]["accel-gitops.io/unit"]: wave(o)
        for o in objects(out / "overlays" / "prod" / "argocd").values()
        if o["kind"] == "Application"
    }
    assert set(apps) == {
        "argocd",
        "node-config",
        "device-plugins",
        "monitoring",
        "scheduling",
        "team-ml",
    }
    # What teams need to exist comes first; everything with pods in one last wave (docs/argocd.md)
    assert apps["argocd"] < apps["node-config"] < apps["scheduling"] < apps["team-ml"]
    assert apps["team-ml"] == apps["device-plugins"] == apps["monitoring"]
    team_objs = objects(out / "base" / "teams" / "ml")
    assert wave(team_objs["Namespace/ml"]) < wave(team_objs["ResourceQuota/accelerators"]) < 0
    workload = objects(out / "base" / "workloads" / "ml")
    quota_wave = wave(team_objs["ResourceQuota/accelerators"])
    assert wave(workload["LocalQueue/team-ml"]) > wave(team_objs["Namespace/ml"])
    assert wave(workload["Job/train"]) > max(quota_wave, wave(workload["LocalQueue/team-ml"]))
    plugins = objects(out / "base" / "device-plugins")
    assert wave(plugins["Namespace/accelerator-plugins"]) < wave(
        plugins["DaemonSet/nvidia-device-plugin"]
    )


def test_a_team_gets_a_quota_line_of_0_for_every_vendor_it_was_not_given(tmp_path: Path) -> None:
    ascend = "pools:\n  - {name: npu, model: 910b, devicesPerNode: 8, nodes: [a1]}\n"
    values = tree(tmp_path, {"vendors/amd.yaml": AMD, "vendors/ascend.yaml": ascend})
    out = render(values)
    quota = objects(out / "base" / "teams" / "ml")["ResourceQuota/accelerators"]
    assert quota["spec"]["hard"] == {
        "requests.amd.com/gpu": "0",
        "requests.huawei.com/Ascend910": "0",
        "requests.nvidia.com/gpu": "4",
    }
    # and the in-memory render says the same for every environment
    from generator.values import loader as values_mod

    for unit in render_tree(values_mod.load(values)).units:
        for obj in unit.objects:
            if obj["kind"] == "ResourceQuota":
                assert obj["spec"]["hard"]["requests.amd.com/gpu"] == "0", unit.path
