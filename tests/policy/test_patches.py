"""The escape hatch (values `patch`, generator/policy/patches.py): kustomize applies a workload's
patch in every overlay after the generator's own, and a patch that changes what the generator
owns is refused at its values line (PATCH001); one that does not passes. On trees made for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures import FLEET, build_unit, tree, validate_committed

JOB = """\
quota: {nvidia: 4}
jobs:
  train:
    vendor: nvidia
    devices: 2
    images: {nvidia: r/train:1}
    patch:
"""
SERVICE = """\
quota: {nvidia: 4}
services:
  serve:
    images: {nvidia: r/serve:1}
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 2}
    patch:
"""
JOBSET = """\
quota: {nvidia: 4}
jobs:
  train:
    kind: jobset
    images: {nvidia: r/train:1}
    tasks:
      gpu: {vendor: nvidia, devices: 1, replicas: 2}
    patch:
"""
OWNED = "the patch changes what the generator owns in "


def run(tmp_path: Path, team: str) -> tuple[int, list[str]]:
    # The cluster runs JobSet (a JobSet needs its API: policy/platform.py).
    fleet = FLEET + "platform: {jobset: {provided: site}}\n"
    values_dir = tree(tmp_path, {"teams/ml.yaml": team, "fleet.yaml": fleet})
    code, out = validate_committed(values_dir)
    return code, [line for line in out.splitlines() if " PATCH001 " in line]


def test_a_harmless_patch_is_applied_by_kustomize_in_every_environment(tmp_path: Path) -> None:
    team = JOB + "      strategicMerge: {spec: {template: {spec: {enableServiceLinks: false}}}}\n"
    assert run(tmp_path, team) == (0, [])
    for env in ("staging", "prod"):
        (job,) = [o for o in build_unit(tmp_path, env, "team-ml") if o["kind"] == "Job"]
        spec = job["spec"]["template"]["spec"]
        assert spec["enableServiceLinks"] is False
        # what the generator wrote is all still there
        assert spec["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 2}


def test_a_json_patch_is_applied_to_each_track_of_a_service(tmp_path: Path) -> None:
    team = SERVICE + (
        "      json6902: [{op: add, path: /spec/template/spec/terminationGracePeriodSeconds, "
        "value: 300}]\n"
    )
    assert run(tmp_path, team) == (0, [])
    deployments = [o for o in build_unit(tmp_path, "prod", "team-ml") if o["kind"] == "Deployment"]
    assert [
        d["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] for d in deployments
    ] == [300]


@pytest.mark.parametrize(
    ("team", "what"),
    [
        (
            JOB + "      json6902: [{op: remove, path: "
            "/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu}]\n",
            "Job ml/train: $.spec.template.spec.containers['train'].resources",
        ),
        (
            JOB + "      strategicMerge: {spec: {parallelism: 4}}\n",
            "Job ml/train: $.spec.parallelism",
        ),
        (
            JOB + "      strategicMerge: {spec: {template: {spec: {nodeSelector: {zone: a}}}}}\n",
            "Job ml/train: $.spec.template.spec.nodeSelector",
        ),
        (
            JOB + "      json6902: [{op: remove, path: /spec/template/spec/tolerations}]\n",
            "Job ml/train: $.spec.template.spec.tolerations",
        ),
        (
            SERVICE + "      strategicMerge: {spec: {replicas: 5}}\n",
            "Deployment ml/serve-nvidia: $.spec.replicas",
        ),
        (
            JOBSET + "      json6902: [{op: replace, path: "
            "/spec/replicatedJobs/0/template/spec/parallelism, value: 8}]\n",
            "JobSet ml/train: $.spec.replicatedJobs[0].template.spec.parallelism",
        ),
        (
            JOBSET + "      json6902: [{op: remove, path: /spec/replicatedJobs/0/template/spec/"
            "template/spec/nodeSelector}]\n",
            "JobSet ml/train: $.spec.replicatedJobs[0].template.spec.template.spec.nodeSelector",
        ),
    ],
)
def test_a_patch_that_changes_what_the_generator_owns_is_refused_at_its_line(
    tmp_path: Path, team: str, what: str
) -> None:
    code, found = run(tmp_path, team)
    assert code == 1
    workload = "services.serve" if team.startswith(SERVICE) else "jobs.train"
    line = "9:7" if team.startswith(JOBSET) else "8:7"
    assert found == [
        f"values/teams/ml.yaml:{line}: PATCH001 {OWNED}{what} (at $.{workload}.patch); "
        "set it with the workload's own values (devices, resources, model, nodeSelector, "
        "tolerations, affinity, replicas), which the checks and plan count; the patch is for "
        "what values do not cover"
    ]


def test_the_teams_patch_applies_after_the_environments_own_change_of_the_same_object(
    tmp_path: Path,
) -> None:
    """prod changes the job (its overlay's JSON patch, generated); the team's patch comes after
    it in the same overlay: both hold in prod, and where both set one field the team's wins."""
    team = JOB + (
        "      strategicMerge: {spec: {activeDeadlineSeconds: 200, "
        "template: {spec: {enableServiceLinks: false}}}}\n"
    )
    prod = "teams:\n  ml:\n    jobs:\n      train: {activeDeadlineSeconds: 100, backoffLimit: 7}\n"
    fleet = FLEET + "platform: {jobset: {provided: site}}\n"
    files = {"teams/ml.yaml": team, "fleet.yaml": fleet, "environments/prod.yaml": prod}
    values_dir = tree(tmp_path, files)
    code, out = validate_committed(values_dir)
    assert code == 0, out
    jobs = {
        env: next(o for o in build_unit(tmp_path, env, "team-ml") if o["kind"] == "Job")
        for env in ("staging", "prod")
    }
    prod_job, staging_job = jobs["prod"]["spec"], jobs["staging"]["spec"]
    # The environment's change: only in prod.
    assert (prod_job["backoffLimit"], staging_job["backoffLimit"]) == (7, 3)
    # Both set activeDeadlineSeconds: the team's patch, applied last, wins in both.
    assert prod_job["activeDeadlineSeconds"] == staging_job["activeDeadlineSeconds"] == 200
    assert prod_job["template"]["spec"]["enableServiceLinks"] is False
    # The generated patch and the team's are both listed, the team's last.
    kustomization = (tmp_path / "overlays/prod/team-ml/kustomization.yaml").read_text()
    listed = [line.strip() for line in kustomization.splitlines() if "patches/" in line]
    assert len(listed) >= 2 and "team-" in listed[-1], listed
