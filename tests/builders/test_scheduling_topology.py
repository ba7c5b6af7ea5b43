"""Volcano network-topology-aware scheduling (issue 12, topology): a Volcano Job's
`networkTopology` from the values, the scheduler's `network-topology-aware` plugin only when a
job asks for it, kustomize and kubeconform (the Volcano Job CRD schema) on every unit, the values
schema, and SCH008 at file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.builders import scheduling
from generator.values import loader as values
from tests.fixtures import (
    FLEET,
    NVIDIA,
    OTHER_VENDORS,
    Obj,
    assert_units_build_exactly,
    by_name,
    cli,
    kustomize_build,
    lines,
    plugins,
    render_into,
    tree,
    volcano_conf,
    workloads_of,
)

TOPOLOGY = "    networkTopology:\n      mode: hard\n      highestTierAllowed: 2\n"
VOLCANO = FLEET + "scheduling:\n  backend: volcano\n"


def ml_team(topology: str = "", cuda_topology: str = "") -> str:
    """teams/ml.yaml: the batch Job cuda-training-job (its key on line 3; `cuda_topology` from
    line 5) and the Volcano Job mixed-training-job (its key on line 7 when the batch Job has no
    topology; `topology` from line 9)."""
    return (
        "quota: {nvidia: 8}\n"
        "jobs:\n"
        "  cuda-training-job:\n"
        "    vendor: nvidia\n"
        f"{cuda_topology}"
        "    devices: 4\n"
        "    images: {nvidia: r/train:cuda}\n"
        "  mixed-training-job:\n"
        "    kind: volcano\n"
        f"{topology}"
        "    images: {nvidia: r/train:cuda}\n"
        "    tasks:\n"
        "      nvidia-workers: {vendor: nvidia, devices: 1, replicas: 4}\n"
    )


def topo_tree(root: Path, fleet: str = VOLCANO, **kw: str) -> Path:
    """The default NVIDIA vendor and team ml (ml_team(**kw)) under `fleet` (backend volcano)."""
    return tree(root, {"teams/ml.yaml": ml_team(**kw)}, fleet=fleet)


def sch008(values_dir: Path) -> list[str]:
    return [g for g in lines(values_dir) if " SCH008 " in g]


# ---- rendering ---------------------------------------------------------------------------------

# The plugin as volcano-sh/volcano v1.14.0 docs/user-guide/how_to_use_network_topology_aware_
# scheduling.md enables it, with the node-level binpack's accelerator weights (catalog: 10).
PLUGIN = {
    "name": "network-topology-aware",
    "arguments": {
        "hypernode.binpack.cpu": 1,
        "hypernode.binpack.memory": 1,
        "hypernode.binpack.resources": (
            "amd.com/gpu, cambricon.com/mlu, huawei.com/Ascend910, nvidia.com/gpu"
        ),
        "hypernode.binpack.resources.amd.com/gpu": 10,
        "hypernode.binpack.resources.cambricon.com/mlu": 10,
        "hypernode.binpack.resources.huawei.com/Ascend910": 10,
        "hypernode.binpack.resources.nvidia.com/gpu": 3,
    },
}


@pytest.mark.parametrize(
    ("topology", "rendered"),
    [
        (TOPOLOGY, {"mode": "hard", "highestTierAllowed": 2}),
        # The CRD's default mode, written out; a tier by name.
        (
            "    networkTopology: {highestTierName: leaf}\n",
            {"mode": "hard", "highestTierName": "leaf"},
        ),
        ("    networkTopology: {mode: soft}\n", {"mode": "soft"}),
    ],
)
def test_network_topology_is_rendered_and_enables_the_plugin_only_where_a_job_asks(
    topology: str, rendered: Obj, tmp_path: Path
) -> None:
    files = {
        **OTHER_VENDORS,
        "vendors/nvidia.yaml": NVIDIA + "binpackWeight: 3\n",
        "teams/ml.yaml": ml_team(topology),
        # Staging runs no Volcano Job with a topology: its scheduler conf keeps the plugin off.
        "environments/staging.yaml": "teams:\n  ml:\n    jobs:\n"
        "      mixed-training-job: {enabled: false}\n",
    }
    out = render_into(tree(tmp_path, files, fleet=VOLCANO), tmp_path / "out")

    jobs = by_name(kustomize_build(out / "overlays/prod/team-ml"), "Job")
    assert jobs["mixed-training-job"]["spec"]["networkTopology"] == rendered
    assert "networkTopology" not in jobs["cuda-training-job"]["spec"]  # a batch/v1 Job

    prod = volcano_conf(out, "prod")
    assert prod["tiers"][1]["plugins"][-1] == PLUGIN  # second tier, after binpack
    assert [p["name"] for p in prod["tiers"][1]["plugins"]][-2:] == [
        "binpack",
        "network-topology-aware",
    ]
    assert [p["name"] for p in prod["tiers"][0]["plugins"]] == ["priority", "gang", "conformance"]

    staging_conf = volcano_conf(out, "staging")
    assert "mixed-training-job" not in by_name(
        kustomize_build(out / "overlays/staging/team-ml"), "Job"
    )
    assert list(plugins(staging_conf)) == [p for p in plugins(prod) if p != PLUGIN["name"]]


def test_without_a_topology_the_scheduler_conf_has_no_plugin(tmp_path: Path) -> None:
    out = render_into(topo_tree(tmp_path), tmp_path / "out")
    for env in ("prod", "staging"):
        names = list(plugins(volcano_conf(out, env)))
        assert names[-1] == "binpack"
        assert len(names) == 9
    job = by_name(kustomize_build(out / "overlays/prod/team-ml"), "Job")["mixed-training-job"]
    assert sorted(job["spec"]) == [
        "maxRetry",
        "minAvailable",
        "policies",
        "queue",
        "schedulerName",
        "tasks",
    ]


def test_every_unit_builds_and_the_volcano_job_crd_schema_checks_the_field(tmp_path: Path) -> None:
    values_dir = topo_tree(tmp_path / "repo", topology=TOPOLOGY)
    # Each environment: node-config, device-plugins, monitoring, team-ml, scheduling, argocd.
    assert assert_units_build_exactly(tmp_path / "out", values_dir) == 12
    # Render as a user commits it, then kustomize and kubeconform (strict, the Volcano Job CRD
    # schema from volcano.sh/apis v1.14.0) on every unit.
    assert cli("render", "--values", str(values_dir))[0] == 0
    code, out = cli("validate", "--values", str(values_dir), "--no-cache")
    assert code == 0, out
    # The schema does check the field: a mode Volcano does not know is refused in both units.
    job = values_dir.parent / "base/workloads/ml/job-ml-mixed-training-job.yaml"
    text = job.read_text()
    assert "    mode: hard\n" in text
    job.write_text(text.replace("    mode: hard\n", "    mode: firm\n"))
    code, out = cli("validate", "--values", str(values_dir), "--no-cache", "--no-drift")
    assert code == 1
    for env in ("prod", "staging"):
        assert (
            f"values/teams/ml.yaml:7:3: K8S001 Job ml/mixed-training-job "
            f"(overlays/{env}/team-ml): value must be one of 'hard', 'soft' "
            "(at $.spec.networkTopology.mode)"
        ) in out


# ---- the values schema ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("topology", "want"),
    [
        (
            "    networkTopology:\n      mode: firm\n",
            "values/teams/ml.yaml:10:13: VAL001 'firm' is not one of hard, soft "
            "(at $.jobs['mixed-training-job'].networkTopology.mode)",
        ),
        (
            "    networkTopology:\n      highestTierAllowed: -1\n",
            "values/teams/ml.yaml:10:27: VAL001 -1 is less than the minimum of 0 "
            "(at $.jobs['mixed-training-job'].networkTopology.highestTierAllowed)",
        ),
        (
            "    networkTopology:\n      tier: 2\n",
            "values/teams/ml.yaml:10:7: VAL001 unknown key 'tier' "
            "(at $.jobs['mixed-training-job'].networkTopology.tier)",
        ),
    ],
)
def test_the_values_schema_refuses_what_the_crd_refuses(
    topology: str, want: str, tmp_path: Path
) -> None:
    got = lines(topo_tree(tmp_path, topology=topology))
    assert any(g.startswith(want) for g in got), got


# ---- SCH008: a topology nothing would honour -------------------------------------------------------


def test_a_topology_without_the_volcano_backend_is_refused(tmp_path: Path) -> None:
    values_dir = topo_tree(tmp_path, FLEET, topology=TOPOLOGY)  # the default backend: quota
    assert sch008(values_dir) == [
        "values/teams/ml.yaml:9:5: SCH008 job 'mixed-training-job' asks for a network "
        "topology, but backend 'quota' renders no Volcano scheduler configuration, so nothing "
        "enables the network-topology-aware plugin that honours it "
        "(at $.jobs['mixed-training-job'].networkTopology); set scheduling.backend: volcano in "
        "values/fleet.yaml (or the environment's fleet:), or remove networkTopology "
        "(docs/scheduling.md)"
    ]
    topo_tree(tmp_path, topology=TOPOLOGY)
    assert sch008(values_dir) == []


def test_a_topology_on_a_batch_job_is_refused(tmp_path: Path) -> None:
    values_dir = topo_tree(tmp_path, cuda_topology=TOPOLOGY)
    [got] = sch008(values_dir)
    assert got == (
        "values/teams/ml.yaml:5:5: SCH008 job 'cuda-training-job' is a batch/v1 Job: only "
        "a Volcano Job carries networkTopology (at $.jobs['cuda-training-job'].networkTopology); "
        "set kind: volcano (with tasks), or remove networkTopology (docs/scheduling.md)"
    )
    # Only a Volcano Job's topology turns the plugin on.
    view = values.load(values_dir).envs["prod"]
    assert "network-topology-aware" not in plugins(scheduling.volcano_conf(workloads_of(view)))
    topo_tree(tmp_path, cuda_topology=TOPOLOGY, topology="    networkTopology: {mode: soft}\n")
    view = values.load(values_dir).envs["prod"]
    assert "network-topology-aware" in plugins(scheduling.volcano_conf(workloads_of(view)))


@pytest.mark.parametrize(
    ("topology", "want"),
    [
        (
            "    networkTopology: {}\n",  # hard is the default mode
            "values/teams/ml.yaml:9:5: SCH008 job 'mixed-training-job' is in hard mode "
            "without highestTierAllowed or highestTierName, which Volcano treats as no constraint",
        ),
        (
            "    networkTopology:\n      mode: hard\n",
            "values/teams/ml.yaml:9:5: SCH008 job 'mixed-training-job' is in hard mode "
            "without highestTierAllowed or highestTierName, which Volcano treats as no constraint",
        ),
        (
            "    networkTopology:\n      highestTierAllowed: 2\n      highestTierName: spine\n",
            "values/teams/ml.yaml:11:24: SCH008 job 'mixed-training-job' sets both "
            "highestTierAllowed and highestTierName, which Volcano's admission webhook refuses",
        ),
    ],
)
def test_a_topology_volcano_would_refuse_or_ignore_is_refused(
    topology: str, want: str, tmp_path: Path
) -> None:
    [got] = sch008(topo_tree(tmp_path, topology=topology))
    assert got.startswith(want), got


def test_an_environment_override_is_found_in_the_environment_file(tmp_path: Path) -> None:
    """A topology set only in prod's file is judged by prod's backend, at that file's line."""
    override = "teams:\n  ml:\n    jobs:\n      mixed-training-job:\n        networkTopology: {mode: soft}\n"
    values_dir = tree(
        tmp_path,
        {"teams/ml.yaml": ml_team(), "environments/prod.yaml": override},
        fleet=VOLCANO,
    )
    assert sch008(values_dir) == []
    # prod alone leaves Volcano for the quota backend: the override (line 8) is refused there.
    prod = "fleet:\n  scheduling:\n    backend: quota\n" + override
    tree(tmp_path, {"teams/ml.yaml": ml_team(), "environments/prod.yaml": prod}, fleet=VOLCANO)
    [got] = sch008(values_dir)
    assert got.startswith(
        "values/environments/prod.yaml:8:9: SCH008 job 'mixed-training-job' "
        "asks for a network topology, but backend 'quota' renders no Volcano scheduler "
        "configuration"
    ), got
