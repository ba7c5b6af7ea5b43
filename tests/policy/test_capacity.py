"""Devices promised per vendor (generator/policy/capacity.py): quota x namespaces, summed."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.policy.capacity import VendorQuota, quota_totals, team_devices
from generator.values import loader as values
from generator.values.model import FleetView, Team
from tests.fixtures import (
    AMD_MI250X,
    ASCEND_910B,
    CAMBRICON_MLU370,
    PROD_FLEET,
    SPLIT_NVIDIA,
    TWO_CLUSTERS,
    findings,
    tree,
)

# NVIDIA: 4 x 2 nodes + 8 x 1 node = 16 GPUs; Ascend 8 NPUs; AMD 8 GPUs; Cambricon disabled.
NVIDIA = """\
pools:
  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1, n2]}
  - {name: h100, model: H100, devicesPerNode: 8, nodeCount: 1}
"""
TEAMS = {
    # 3 namespaces: 4 GPUs each, 2 AMD GPUs each; Ascend quota 0 promises nothing.
    "teams/ml.yaml": "namespaces: [ml-a, ml-b, ml-c]\nquota: {nvidia: 4, ascend: 0, amd: 2}\n",
    "teams/cv.yaml": "quota: {nvidia: 5}\n",
    "teams/web.yaml": "quota: {ascend: 3}\n",
    "teams/idle.yaml": "namespaces: [idle-a, idle-b]\n",
    "teams/off.yaml": "enabled: false\nquota: {nvidia: 100}\n",
}


@pytest.fixture(scope="module")
def prod(tmp_path_factory: pytest.TempPathFactory) -> FleetView:
    files = {
        "vendors/nvidia.yaml": NVIDIA,
        "vendors/ascend.yaml": ASCEND_910B,
        "vendors/amd.yaml": AMD_MI250X,
        "vendors/cambricon.yaml": "enabled: false\n" + CAMBRICON_MLU370,
        **TEAMS,
    }
    return values.load(tree(tmp_path_factory.mktemp("capacity"), files)).envs["prod"]


def team(view: FleetView, name: str) -> Team:
    return next(t for t in view.teams if t.name == name)


def test_a_team_is_promised_its_quota_in_each_of_its_namespaces(prod: FleetView) -> None:
    assert team_devices(team(prod, "ml"), "nvidia") == 12
    assert team_devices(team(prod, "ml"), "amd") == 6
    assert team_devices(team(prod, "cv"), "nvidia") == 5
    assert team_devices(team(prod, "web"), "ascend") == 3


def test_no_quota_for_a_vendor_promises_no_device(prod: FleetView) -> None:
    assert team_devices(team(prod, "ml"), "ascend") == 0  # quota 0
    assert team_devices(team(prod, "cv"), "amd") == 0  # no quota for AMD
    assert team_devices(team(prod, "idle"), "nvidia") == 0  # no quota at all, two namespaces
    assert team_devices(team(prod, "web"), "kunlun") == 0  # no such vendor


def rows(view: FleetView) -> list[tuple[str, list[tuple[str, int]], int, int, bool]]:
    return [
        (
            q.vendor.id,
            [(t.name, n) for t, n in q.parts],
            q.total,
            q.capacity,
            q.overcommitted,
        )
        for q in quota_totals(view)
    ]


def test_every_enabled_vendor_with_the_teams_that_have_quota_for_it(prod: FleetView) -> None:
    assert rows(prod) == [
        ("amd", [("ml", 6)], 6, 8, False),
        ("ascend", [("web", 3)], 3, 8, False),
        ("nvidia", [("cv", 5), ("ml", 12)], 17, 16, True),
    ]


def test_the_parts_are_the_teams_themselves(prod: FleetView) -> None:
    nvidia = next(q for q in quota_totals(prod) if q.vendor.id == "nvidia")
    assert nvidia.vendor is prod.vendor("nvidia")
    assert nvidia.parts == ((team(prod, "cv"), 5), (team(prod, "ml"), 12))


def test_a_vendor_without_quotas_promises_nothing(tmp_path: Path) -> None:
    files = {"vendors/ascend.yaml": ASCEND_910B, "teams/ml.yaml": "quota: {nvidia: 2}\n"}
    view = values.load(tree(tmp_path, files)).envs["prod"]
    assert rows(view) == [("ascend", [], 0, 8, False), ("nvidia", [("ml", 2)], 2, 8, False)]


def test_overcommitted_means_more_than_the_pools_hold(prod: FleetView) -> None:
    amd = prod.vendor("amd")
    assert amd is not None and amd.capacity == 8
    ml, cv = team(prod, "ml"), team(prod, "cv")
    full = VendorQuota(amd, ((ml, 6), (cv, 2)))
    assert (full.total, full.capacity, full.overcommitted) == (8, 8, False)
    over = VendorQuota(amd, ((ml, 6), (cv, 3)))
    assert (over.total, over.capacity, over.overcommitted) == (9, 8, True)
    none = VendorQuota(amd, ())
    assert (none.total, none.overcommitted) == (0, False)


def test_capacity_is_per_cluster_and_its_findings_name_the_cluster(tmp_path: Path) -> None:
    """SPLIT_NVIDIA: 8 GPUs in each cluster. In main, inference 4 + ml 6 = 10 is more than its
    8, though the fleet's 16 GPUs hold all 12."""
    team = "quota: {nvidia: {main: 6, domestic: 2}}\n"
    split = {**TWO_CLUSTERS, **SPLIT_NVIDIA, "teams/ml.yaml": team}
    [cap] = [f for f in findings(tree(tmp_path, split, fleet=PROD_FLEET)) if f.code == "CAP001"]
    assert cap.clusters == ("prod/main",) and cap.environments == ("prod",)
    assert "add up to 10 devices (inference 4, ml 6) but its pools hold 8" in cap.message
    assert cap.text.endswith("in environment 'prod' (cluster 'main')")
    # The same quotas, moved so that each cluster holds what it is given: nothing to say.
    team = "quota: {nvidia: {main: 4, domestic: 4}}\n"
    split["teams/ml.yaml"] = team
    assert not [f for f in findings(tree(tmp_path, split, fleet=PROD_FLEET)) if f.code == "CAP001"]
