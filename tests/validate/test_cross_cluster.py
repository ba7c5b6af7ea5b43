"""validate's kubeconform stage knows the Multi-Cluster Services kinds (sigs.k8s.io/mcs-api
v0.5.2, pinned in gotools/schemas.lock.yaml): a service across clusters validates clean, and a
ServiceExport that does not match its CRD's schema is a finding."""

from __future__ import annotations

from pathlib import Path

from tests.fixtures import cross_clusters, invoke, render_committed


def test_a_service_across_clusters_validates_and_its_export_is_checked(tmp_path: Path) -> None:
    values_dir = cross_clusters(tmp_path, phase="shift-10")
    render_committed(values_dir)
    result = invoke("validate", "--values", str(values_dir), "--no-drift")
    assert result.exit_code == 0, result.output
    export = tmp_path / "overlays/prod/domestic/team-inference"
    [found] = list(export.glob("serviceexport-*.yaml"))
    found.write_text(found.read_text() + "spec: {exported: true}\n")
    result = invoke("validate", "--values", str(values_dir), "--no-drift")
    assert result.exit_code == 1
    assert "ServiceExport inference/chat-ascend" in result.output
    assert "additional properties 'exported' not allowed (at $.spec)" in result.output
