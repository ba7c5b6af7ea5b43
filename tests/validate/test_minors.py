"""KVER002: a built-in kind the fleet renders at an apiVersion that the cluster's Kubernetes minor
does not serve (removed, or not yet served), judged by the pinned Kubernetes schemas of each
minor; the finding points at the cluster's kubernetesVersion, where the fix is."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import yaml

from generator.findings import Finding, Location
from generator.reporters import findings as reporter
from generator.toolchain import schemas
from generator.validate.stages.kustomize import unserved_once
from tests.fixtures import DRA_NVIDIA, SIM_FLEET, cli, invoke, tree


def dra_tree(root: Path, version: str) -> Path:
    """A fleet whose one vendor is claimed through DRA: it renders a resource.k8s.io/v1
    DeviceClass, which Kubernetes serves from 1.34 (GA), not in 1.33."""
    fleet = {**SIM_FLEET, "kubernetesVersion": version}
    files = {
        "fleet.yaml": yaml.safe_dump(fleet, sort_keys=False),
        "vendors/nvidia-dra.yaml": DRA_NVIDIA,
        "teams/ml.yaml": "quota: {nvidia-dra: 2}\n",
    }
    return tree(root, files, defaults=False)


def test_a_kind_the_clusters_minor_does_not_serve_is_a_finding_at_its_version(
    tmp_path: Path,
) -> None:
    values = dra_tree(tmp_path, "1.33")
    assert invoke("render", "--values", str(values)).exit_code == 0
    result = invoke("validate", "--values", str(values), "--no-cache")
    assert result.exit_code == 1, result.output
    errors = [ln for ln in result.output.splitlines() if " KVER" in ln or " K8S" in ln]
    assert errors == [
        "values/fleet.yaml:2:20: KVER002 DeviceClass nvidia-dra (overlays/dev/device-plugins): "
        "Kubernetes 1.33 (this cluster's kubernetesVersion) does not serve resource.k8s.io/v1 "
        "DeviceClass; the pinned Kubernetes schemas have it in 1.34 to 1.37 (at "
        "$.kubernetesVersion); set kubernetesVersion to a minor that serves resource.k8s.io/v1 "
        "DeviceClass (1.34 to 1.37), or drop what renders it from this cluster's values"
    ]


def claiming_teams(root: Path) -> Path:
    """dra_tree at 1.33 in two environments (both at fleet.yaml's kubernetesVersion), and three
    teams whose jobs claim a GPU: a ResourceClaimTemplate in each team's unit of each."""
    fleet = {**SIM_FLEET, "kubernetesVersion": "1.33", "environments": ["dev", "prod"]}
    team = (
        "quota: {nvidia-dra: 2}\njobs:\n  train:\n    vendor: nvidia-dra\n    model: H100\n"
        "    devices: 1\n    images: {nvidia-dra: r/t}\n"
    )
    files = {
        "fleet.yaml": yaml.safe_dump(fleet, sort_keys=False),
        "vendors/nvidia-dra.yaml": DRA_NVIDIA,
        **{f"teams/t{i}.yaml": team for i in (1, 2, 3)},
    }
    return tree(root, files, defaults=False)


UNSERVED = (
    "Kubernetes 1.33 (this cluster's kubernetesVersion) does not serve resource.k8s.io/v1 {kind}; "
    "the pinned Kubernetes schemas have it in 1.34 to 1.37 (at $.kubernetesVersion); set "
    "kubernetesVersion to a minor that serves resource.k8s.io/v1 {kind} (1.34 to 1.37), or drop "
    "what renders it from this cluster's values"
)


def test_a_kind_in_several_units_is_one_finding_of_its_objects_in_a_run_and_in_shards(
    tmp_path: Path,
) -> None:
    """One cause, one fix (the version line): one finding per version, apiVersion and kind,
    counting its objects and naming their units, a few and then how many more. Shards of the
    run (each with some of the units) merge into the same finding."""
    values = claiming_teams(tmp_path)
    assert invoke("render", "--values", str(values)).exit_code == 0
    base = ["validate", "--values", str(values), "--no-cache"]
    whole = invoke(*base)
    assert whole.exit_code == 1, whole.output
    errors = [ln for ln in whole.output.splitlines() if " KVER" in ln or " K8S" in ln]
    assert errors == [
        "values/fleet.yaml:2:20: KVER002 2 objects in units overlays/dev/device-plugins and "
        "overlays/prod/device-plugins: " + UNSERVED.format(kind="DeviceClass"),
        "values/fleet.yaml:2:20: KVER002 6 objects in units overlays/dev/team-t1, "
        "overlays/dev/team-t2, overlays/dev/team-t3 and 3 more: "
        + UNSERVED.format(kind="ResourceClaimTemplate"),
    ]
    reports = []
    for k in (1, 2, 3):  # team-t1, team-t3 and team-t2 are each in a shard of their own
        shard = invoke(*base, "--shard", f"{k}/3", "--output", "json")
        found = json.loads(shard.output)["findings"]
        claims = [f for f in found if "ResourceClaimTemplate" in f["message"]]
        team = f"t{(1, 3, 2)[k - 1]}"
        assert [json.loads(f["detail"])["objects"] for f in claims] == [
            [
                [
                    f"overlays/{env}/team-{team}",
                    f"ResourceClaimTemplate {team}/nvidia-dra-h100-x1 (overlays/{env}/team-{team})",
                ]
                for env in ("dev", "prod")
            ]
        ]
        # Objects of two units: the finding is no one unit's (JUnit: a case of its code).
        assert [f["unit"] for f in claims] == [""]
        reports.append(tmp_path / f"{k}.json")
        reports[-1].write_text(shard.output)
    merged = invoke("validate", "--merge", *map(str, reports))
    assert merged.output == whole.output


def test_the_same_kind_on_a_minor_that_serves_it_passes(tmp_path: Path) -> None:
    values = dra_tree(tmp_path, "1.34")
    assert invoke("render", "--values", str(values)).exit_code == 0
    result = invoke("validate", "--values", str(values), "--no-cache")
    assert result.exit_code == 0, result.output
    assert "KVER002" not in result.output and "K8S002" not in result.output


def test_the_minors_serving_a_kind_are_read_from_each_minors_schemas() -> None:
    assert schemas.k8s_versions_serving("resource.k8s.io/v1", "DeviceClass") == [
        "1.34.0",
        "1.35.0",
        "1.36.0",
        "1.37.0",
    ]
    # MutatingAdmissionPolicy is GA (admissionregistration.k8s.io/v1) from 1.36.
    assert schemas.k8s_versions_serving(
        "admissionregistration.k8s.io/v1", "MutatingAdmissionPolicy"
    ) == [
        "1.36.0",
        "1.37.0",
    ]
    # A CRD's kind of the same spelling in another group is not the built-in one.
    assert schemas.k8s_versions_serving("resource.example.com/v1", "DeviceClass") == []
    assert schemas.k8s_versions_serving("v1", "Pod")[-1] == "1.37.0"
    assert schemas.k8s_versions_serving("v1", "Widget") == []


REASON = "Kubernetes 1.33 does not serve resource.k8s.io/v1 DeviceClass"


def kver002(unit: str, name: str, line: int = 2) -> Finding:
    """One object's KVER002 as a unit's verdicts give it: the reason and the object in its
    detail (what a shard's JSON report carries too)."""
    what = f"DeviceClass {name} ({unit})"
    return Finding(
        "KVER002",
        f"{what}: {REASON}",
        Location("values/fleet.yaml", line, 20),
        "$.kubernetesVersion",
        "set kubernetesVersion",
        detail=json.dumps({"reason": REASON, "objects": [[unit, what]]}, sort_keys=True),
        unit=unit,
    )


def test_one_object_is_named_and_several_are_counted_with_a_few_of_their_units() -> None:
    other = Finding("K8S001", "bad", Location("values/teams/a.yaml", 1, 1))
    one = kver002("overlays/dev/a", "x")
    assert unserved_once([other, one]) == [other, one]  # as _unserved says it
    same_unit = unserved_once([kver002("overlays/dev/a", "x"), kver002("overlays/dev/a", "y")])
    assert [(f.message, f.unit) for f in same_unit] == [
        (f"2 objects in unit overlays/dev/a: {REASON}", "overlays/dev/a")
    ]
    # Units sorted, three named; the same object twice (a shard's report merged twice) once.
    many = [kver002(f"overlays/dev/{u}", "x") for u in "edcba"] + [kver002("overlays/dev/a", "x")]
    [joined] = unserved_once(many)
    assert (joined.message, joined.unit, joined.location, joined.hint) == (
        "5 objects in units overlays/dev/a, overlays/dev/b, overlays/dev/c and 2 more: " + REASON,
        "",
        Location("values/fleet.yaml", 2, 20),
        "set kubernetesVersion",
    )
    assert json.loads(joined.detail)["objects"][0] == [
        "overlays/dev/a",
        "DeviceClass x (overlays/dev/a)",
    ]
    # Another cluster's version line is another fix: a finding of its own.
    apart = unserved_once([kver002("overlays/a/x", "x"), kver002("overlays/b/x", "x", line=7)])
    assert [f.message for f in apart] == [
        f"DeviceClass x (overlays/a/x): {REASON}",
        f"DeviceClass x (overlays/b/x): {REASON}",
    ]


def test_a_merged_kver002_without_its_objects_is_a_merge_error(tmp_path: Path) -> None:
    shard = {"index": 1, "count": 1, "fingerprint": "f", "scope": "s"}
    bare = dataclasses.replace(kver002("overlays/dev/a", "x"), detail="")
    out = io.StringIO()
    reporter.as_json(reporter.Report("validate", [bare], {"shard": shard}), out)
    (tmp_path / "1.json").write_text(out.getvalue())
    code, text = cli("validate", "--merge", str(tmp_path / "1.json"))
    assert code == 2
    assert "a KVER002 finding's detail does not list its objects" in text
