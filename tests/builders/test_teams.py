"""Team units: namespaces and quotas (issue #8 item 9)."""

from __future__ import annotations

from pathlib import Path

from tests.fixtures import PROD_FLEET, build_unit, find, render_into, tree

POOL = (
    "pools:\n  - {name: p1, model: m1, pciDevices: ['abcd'], devicesPerNode: 8, nodes: [node-01]}\n"
)
TEAM = "quota: {nvidia: 4}\n"


def test_team_quota_counts_extended_resources_under_requests_only(tmp_path: Path) -> None:
    """kubernetes pkg/quota/v1/evaluator/core/pods.go (v1.36.3) counts an extended resource only
    as requests.<name>: a limits.<name> line would be accepted and never enforced."""
    amd = POOL.replace("node-01", "node-02")
    values_dir = tree(
        tmp_path,
        {"vendors/nvidia.yaml": POOL, "vendors/amd.yaml": amd, "teams/ml.yaml": TEAM},
        fleet=PROD_FLEET,
        defaults=False,
    )
    quota = find(
        build_unit(render_into(values_dir, tmp_path / "out"), "prod", "team-ml"), "ResourceQuota"
    )
    assert quota["spec"]["hard"] == {"requests.amd.com/gpu": "0", "requests.nvidia.com/gpu": "4"}
