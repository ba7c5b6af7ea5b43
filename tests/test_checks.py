"""Each fleet check, fed a values tree that breaks it, gives its code at the right file:line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from generator.checks import REGISTRY
from tests.helpers import findings, lines

Write = Callable[[str, str], Path]

NO_OVERCOMMIT = """\
name: accel
kubernetesVersion: "1.33"
environments: [staging, prod]
git: {repoURL: https://git.example.com/x.git, targetRevision: main}
"""

# code -> (files to write, the finding line expected, prefix match)
CASES: dict[str, tuple[dict[str, str], str]] = {
    "REF001": (
        {"teams/inference.yaml": "quota:\n  hygon: 8\n  kunlun: 2\n"},
        "values/teams/inference.yaml:3:3: REF001 quota names vendor 'kunlun', which has no "
        "enabled values/vendors/kunlun.yaml (at $.quota.kunlun)",
    ),
    "CAP001": (
        {"fleet.yaml": NO_OVERCOMMIT},
        "values/teams/ml-team.yaml:5:11: CAP001 quotas for nvidia (nvidia.com/gpu) add up to 12 "
        "devices (inference 4, ml-team 8) but its pools hold 8 (at $.quota.nvidia)",
    ),
    "RES001": (
        {
            "vendors/hygon.yaml": "resourceName: amd.com/gpu\nnodeLabels: {accelerator: amd-gpu}\n"
            "devicePlugin: {image: r/dcu, version: v1}\n"
            "pools:\n  - {name: z100l, model: Z100L, devicesPerNode: 8, nodes: [dcu-node-01]}\n"
        },
        "values/vendors/hygon.yaml:2:27: RES001 hygon and amd both advertise amd.com/gpu, and "
        "hygon's selector accelerator=amd-gpu also matches amd's pool 'mi250x'",
    ),
    "RES002": (
        {"teams/inference.yaml": "quota:\n  hygon: 4\n  amd: 4\n"},
        "values/teams/inference.yaml:2:3: RES002 quota for amd and hygon, which both advertise "
        "amd.com/gpu",
    ),
    "NAME003": (
        {
            "vendors/amd.yaml": "pools:\n  - {name: mi250x, model: MI250X, devicesPerNode: 8, "
            "nodes: [dcu-node-01]}\n"
        },
        "values/vendors/hygon.yaml:12:13: NAME003 node 'dcu-node-01' is in pool hygon/z100l and "
        "in amd/mi250x",
    ),
    "NAME004": (
        {"teams/inference.yaml": "namespaces: [ml-team]\nquota: {hygon: 8}\n"},
        "values/teams/inference.yaml:1:14: NAME004 namespace 'ml-team' is already used by team "
        "'ml-team'",
    ),
    "NODE001": (
        {
            "fleet.yaml": NO_OVERCOMMIT + "nodeConfig: {method: node-patch}\n"
            "capacity: {allowOvercommit: true}\n",
            "vendors/amd.yaml": "pools:\n  - {name: mi250x, model: MI250X, devicesPerNode: 8, "
            "nodeCount: 2}\n",
        },
        "values/vendors/amd.yaml:2:5: NODE001 pool 'mi250x' lists no nodes, so node-patch cannot "
        "label it",
    ),
    "CAP002": (
        {"vendors/amd.yaml": "pools:\n  - {name: mi250x, model: MI250X, devicesPerNode: 8}\n"},
        "values/vendors/amd.yaml:2:5: CAP002 warning: pool 'mi250x' has no nodes and no "
        "nodeCount, so it adds no capacity",
    ),
    "NAME005": (
        {"teams/a-team-with-a-very-long-name-that-goes-on-and-on.yaml": "quota: {}\n"},
        "values/fleet.yaml:3:7: NAME005 Application name "
        "'accel-staging-team-a-team-with-a-very-long-name-that-goes-on-and-on' is 67 characters",
    ),
}


def test_every_registered_check_has_a_case() -> None:
    # Workload (WKL, MIG, POD), monitoring (MON) and scheduling (SCH) checks are tested beside
    # their modules.
    own = ("WKL", "MIG", "POD", "MON", "SCH")
    assert {c for c in REGISTRY if not c.startswith(own)} == set(CASES)


@pytest.mark.parametrize("code", sorted(CASES))
def test_check_reports_its_code_at_the_right_place(
    code: str, values_dir: Path, write: Write
) -> None:
    files, expected = CASES[code]
    for rel, text in files.items():
        write(rel, text)
    got = lines(values_dir)
    assert any(g.startswith(expected) for g in got), "\n".join(got)


def test_overcommit_allowed_is_a_warning_not_an_error(values_dir: Path) -> None:
    found = findings(values_dir)
    assert {(f.code, f.severity.value) for f in found} == {("CAP001", "warning")}


def test_the_seed_dcu_and_amd_share_amd_com_gpu_but_are_told_apart(values_dir: Path) -> None:
    assert "RES001" not in {f.code for f in findings(values_dir)}


def test_nfd_pools_of_one_vendor_need_names_or_device_ids(values_dir: Path, write: Write) -> None:
    write(
        "vendors/nvidia.yaml",
        "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, "
        "nodeCount: 2}\n  - {name: h100, model: H100, devicesPerNode: 8, nodeCount: 1, "
        "pciDevices: ['2330']}\n",
    )
    got = lines(values_dir)
    assert any(
        g.startswith(
            "values/vendors/nvidia.yaml:2:5: NODE001 pool 'a100' has neither nodes nor pciDevices"
        )
        for g in got
    ), got


def test_one_finding_per_place_even_across_environments(values_dir: Path, write: Write) -> None:
    write("teams/inference.yaml", "quota:\n  kunlun: 2\n")
    assert sum("REF001" in g for g in lines(values_dir)) == 1
