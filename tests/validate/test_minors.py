"""KVER002: a built-in kind the fleet renders at an apiVersion that the cluster's Kubernetes minor
does not serve (removed, or not yet served), judged by the pinned Kubernetes schemas of each
minor; the finding points at the cluster's kubernetesVersion, where the fix is."""

from __future__ import annotations

from pathlib import Path

import yaml

from generator.toolchain import schemas
from tests.fixtures import DRA_NVIDIA, SIM_FLEET, invoke, tree


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
