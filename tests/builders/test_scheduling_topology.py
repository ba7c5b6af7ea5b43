"""Volcano network-topology-aware scheduling (issue 12, topology): a Volcano Job's
`networkTopology` from the values, the scheduler's `network-topology-aware` plugin only when a
job asks for it, kustomize and kubeconform (the Volcano Job CRD schema) on every unit, the values
schema, and SCH008 at file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.builders import scheduling
from generator.values import loader as values
from tests.example import CUDA_JOB_LINE, MIXED, MIXED_JOB_LINE, MIXED_TOPOLOGY_LINE, use_backend
from tests.fixtures import (
    Obj,
    Write,
    assert_units_build_exactly,
    by_name,
    cli,
    kustomize_build,
    lines,
    plugins,
    render_into,
    volcano_conf,
)

# Inserted after `kind: volcano` in the example's values/teams/ml-team.yaml: lines
# MIXED_TOPOLOGY_LINE to MIXED_TOPOLOGY_LINE + 2.
TOPOLOGY = "    networkTopology:\n      mode: hard\n      highestTierAllowed: 2\n"
ML = "teams/ml-team.yaml"


def with_topology(values_dir: Path, write: Write, topology: str = TOPOLOGY) -> None:
    """The seed's mixed Volcano job asks for a network topology."""
    ml = (values_dir / ML).read_text()
    assert MIXED in ml
    write(ML, ml.replace(MIXED, MIXED + topology))


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
    topology: str, rendered: Obj, values_dir: Path, write: Write, tmp_path: Path
) -> None:
    use_backend(values_dir, write, "volcano")
    nvidia = (values_dir / "vendors/nvidia.yaml").read_text()
    write("vendors/nvidia.yaml", nvidia + "binpackWeight: 3\n")
    with_topology(values_dir, write, topology)
    # Staging runs no Volcano Job with a topology: its scheduler conf keeps the plugin off.
    staging = (values_dir / "environments/staging.yaml").read_text()
    ml_staging = "  ml-team:\n    quota:\n      nvidia: 4\n"
    assert ml_staging in staging
    write(
        "environments/staging.yaml",
        staging.replace(
            ml_staging, ml_staging + "    jobs:\n      mixed-training-job: {enabled: false}\n"
        ),
    )
    out = render_into(values_dir, tmp_path / "out")

    jobs = by_name(kustomize_build(out / "overlays/prod/team-ml-team"), "Job")
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
        kustomize_build(out / "overlays/staging/team-ml-team"), "Job"
    )
    assert list(plugins(staging_conf)) == [p for p in plugins(prod) if p != PLUGIN["name"]]


def test_without_a_topology_the_scheduler_conf_has_no_plugin(
    values_dir: Path, write: Write, tmp_path: Path
) -> None:
    use_backend(values_dir, write, "volcano")
    out = render_into(values_dir, tmp_path / "out")
    for env in ("prod", "staging"):
        names = list(plugins(volcano_conf(out, env)))
        assert names[-1] == "binpack"
        assert len(names) == 9
    job = by_name(kustomize_build(out / "overlays/prod/team-ml-team"), "Job")["mixed-training-job"]
    assert sorted(job["spec"]) == [
        "maxRetry",
        "minAvailable",
        "policies",
        "queue",
        "schedulerName",
        "tasks",
    ]


def test_every_unit_builds_and_the_volcano_job_crd_schema_checks_the_field(
    values_dir: Path, write: Write, tmp_path: Path
) -> None:
    use_backend(values_dir, write, "volcano")
    with_topology(values_dir, write)
    assert assert_units_build_exactly(tmp_path / "out", values_dir) >= 12
    # Render as a user commits it, then kustomize and kubeconform (strict, the Volcano Job CRD
    # schema from volcano.sh/apis v1.14.0) on every unit.
    assert cli("render", "--values", str(values_dir))[0] == 0
    code, out = cli("validate", "--values", str(values_dir), "--no-cache")
    assert code == 0, out
    # The schema does check the field: a mode Volcano does not know is refused in both units.
    job = values_dir.parent / "base/workloads/ml-team/job-ml-team-mixed-training-job.yaml"
    text = job.read_text()
    assert "    mode: hard\n" in text
    job.write_text(text.replace("    mode: hard\n", "    mode: firm\n"))
    code, out = cli("validate", "--values", str(values_dir), "--no-cache", "--no-drift")
    assert code == 1
    for env in ("prod", "staging"):
        assert (
            f"values/teams/ml-team.yaml:{MIXED_JOB_LINE}:3: K8S001 Job ml-team/mixed-training-job "
            f"(overlays/{env}/team-ml-team): value must be one of 'hard', 'soft' "
            "(at $.spec.networkTopology.mode)"
        ) in out


# ---- the values schema ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("topology", "want"),
    [
        (
            "    networkTopology:\n      mode: firm\n",
            f"values/teams/ml-team.yaml:{MIXED_TOPOLOGY_LINE + 1}:13: VAL001 'firm' is not one of ['hard', 'soft'] "
            "(at $.jobs['mixed-training-job'].networkTopology.mode)",
        ),
        (
            "    networkTopology:\n      highestTierAllowed: -1\n",
            f"values/teams/ml-team.yaml:{MIXED_TOPOLOGY_LINE + 1}:27: VAL001 -1 is less than the minimum of 0 "
            "(at $.jobs['mixed-training-job'].networkTopology.highestTierAllowed)",
        ),
        (
            "    networkTopology:\n      tier: 2\n",
            f"values/teams/ml-team.yaml:{MIXED_TOPOLOGY_LINE + 1}:7: VAL001 unknown key 'tier' "
            "(at $.jobs['mixed-training-job'].networkTopology.tier)",
        ),
    ],
)
def test_the_values_schema_refuses_what_the_crd_refuses(
    topology: str, want: str, values_dir: Path, write: Write
) -> None:
    use_backend(values_dir, write, "volcano")
    with_topology(values_dir, write, topology)
    got = lines(values_dir)
    assert any(g.startswith(want) for g in got), got


# ---- SCH008: a topology nothing would honour -------------------------------------------------------


def test_a_topology_without_the_volcano_backend_is_refused(values_dir: Path, write: Write) -> None:
    with_topology(values_dir, write)  # the example's backend: quota
    assert sch008(values_dir) == [
        f"values/teams/ml-team.yaml:{MIXED_TOPOLOGY_LINE}:5: SCH008 job 'mixed-training-job' asks for a network "
        "topology, but backend 'quota' renders no Volcano scheduler configuration, so nothing "
        "enables the network-topology-aware plugin that honours it "
        "(at $.jobs['mixed-training-job'].networkTopology); set scheduling.backend: volcano in "
        "values/fleet.yaml (or the environment's fleet:), or remove networkTopology "
        "(docs/scheduling.md)"
    ]
    use_backend(values_dir, write, "volcano")
    assert sch008(values_dir) == []


def test_a_topology_on_a_batch_job_is_refused(values_dir: Path, write: Write) -> None:
    use_backend(values_dir, write, "volcano")
    ml = (values_dir / ML).read_text()
    cuda = "  cuda-training-job:\n    vendor: nvidia\n"
    assert ml.index(cuda) == ml.index("jobs:\n") + len("jobs:\n")  # CUDA_JOB_LINE
    write(ML, ml.replace(cuda, cuda + TOPOLOGY))
    [got] = sch008(values_dir)
    assert got == (
        f"values/teams/ml-team.yaml:{CUDA_JOB_LINE + 2}:5: SCH008 job 'cuda-training-job' is a batch/v1 Job: only "
        "a Volcano Job carries networkTopology (at $.jobs['cuda-training-job'].networkTopology); "
        "set kind: volcano (with tasks), or remove networkTopology (docs/scheduling.md)"
    )
    # Only a Volcano Job's topology turns the plugin on.
    view = values.load(values_dir).envs["prod"]
    assert "network-topology-aware" not in plugins(scheduling.volcano_conf(view))
    with_topology(values_dir, write, "    networkTopology: {mode: soft}\n")
    view = values.load(values_dir).envs["prod"]
    assert "network-topology-aware" in plugins(scheduling.volcano_conf(view))


@pytest.mark.parametrize(
    ("topology", "want"),
    [
        (
            "    networkTopology: {}\n",  # hard is the default mode
            f"values/teams/ml-team.yaml:{MIXED_TOPOLOGY_LINE}:5: SCH008 job 'mixed-training-job' is in hard mode "
            "without highestTierAllowed or highestTierName, which Volcano treats as no constraint",
        ),
        (
            "    networkTopology:\n      mode: hard\n",
            f"values/teams/ml-team.yaml:{MIXED_TOPOLOGY_LINE}:5: SCH008 job 'mixed-training-job' is in hard mode "
            "without highestTierAllowed or highestTierName, which Volcano treats as no constraint",
        ),
        (
            "    networkTopology:\n      highestTierAllowed: 2\n      highestTierName: spine\n",
            f"values/teams/ml-team.yaml:{MIXED_TOPOLOGY_LINE + 2}:24: SCH008 job 'mixed-training-job' sets both "
            "highestTierAllowed and highestTierName, which Volcano's admission webhook refuses",
        ),
    ],
)
def test_a_topology_volcano_would_refuse_or_ignore_is_refused(
    topology: str, want: str, values_dir: Path, write: Write
) -> None:
    use_backend(values_dir, write, "volcano")
    with_topology(values_dir, write, topology)
    [got] = sch008(values_dir)
    assert got.startswith(want), got


def test_an_environment_override_is_found_in_the_environment_file(
    values_dir: Path, write: Write
) -> None:
    """A topology set only in prod's file is judged by prod's backend, at that file's line."""
    fleet = (values_dir / "fleet.yaml").read_text()
    write("fleet.yaml", fleet + "scheduling:\n  backend: volcano\n")
    override = (
        "  ml-team:\n    jobs:\n      mixed-training-job:\n        networkTopology: {mode: soft}\n"
    )
    prod = (values_dir / "environments/prod.yaml").read_text()
    write("environments/prod.yaml", prod + override)
    assert sch008(values_dir) == []
    # prod alone leaves Volcano for the quota backend: the override is refused at its line.
    write(
        "environments/prod.yaml",
        prod.replace("    kubeScheduler:\n", "    backend: quota\n    kubeScheduler:\n") + override,
    )
    lines_before = len(prod.splitlines()) + 1  # the `backend: quota` line
    [got] = sch008(values_dir)
    assert got.startswith(
        f"values/environments/prod.yaml:{lines_before + 4}:9: SCH008 job 'mixed-training-job' "
        "asks for a network topology, but backend 'quota' renders no Volcano scheduler "
        "configuration"
    ), got
