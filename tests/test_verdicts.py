"""Verdicts that must be right and point at the right line: each through the real CLI, on a
values tree made for it, with the exit code and an untouched output."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import FLEET, render_refused, tree


def test_a_warning_in_one_layer_never_hides_an_error_in_another(tmp_path: Path) -> None:
    values = tree(
        tmp_path,
        {
            "fleet.yaml": FLEET + "capacity: {allowOvercommit: true}\n",
            "teams/ml.yaml": "quota:\n  nvidia: 16\n",
            "environments/prod.yaml": "fleet:\n  capacity: {allowOvercommit: false}\n",
        },
    )
    output = render_refused(values)
    assert (
        "values/teams/ml.yaml:2:11: CAP001 warning: quotas for nvidia (nvidia.com/gpu) add up to "
        "16 devices (ml 16) but its pools hold 8 (overcommit allowed by "
        "capacity.allowOvercommit) in environment 'staging' (at $.quota.nvidia)\n"
    ) in output
    assert (
        "values/teams/ml.yaml:2:11: CAP001 quotas for nvidia (nvidia.com/gpu) add up to 16 "
        "devices (ml 16) but its pools hold 8 in environment 'prod' (at $.quota.nvidia); lower "
        "the quotas"
    ) in output
    assert "1 error(s), 1 warning(s)" in output


def test_a_finding_names_every_environment_it_holds_in(tmp_path: Path) -> None:
    # Both environments shrink the pool to one node: the team's quota of 8 no longer fits there.
    smaller = "vendors:\n  nvidia:\n    pools:\n      - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1]}\n"
    values = tree(
        tmp_path,
        {
            "teams/ml.yaml": "quota:\n  nvidia: 8\n",
            "environments/prod.yaml": smaller,
            "environments/staging.yaml": smaller,
        },
    )
    output = render_refused(values)
    assert [line for line in output.splitlines() if "CAP001" in line] == [
        "values/teams/ml.yaml:2:11: CAP001 quotas for nvidia (nvidia.com/gpu) add up to 8 devices "
        "(ml 8) but its pools hold 4 in environments 'prod', 'staging' (at $.quota.nvidia); lower "
        "the quotas, add nodes to the vendor's pools, or set capacity.allowOvercommit: true in "
        "values/fleet.yaml"
    ]


def test_one_problem_in_every_layer_is_reported_once_without_naming_them(tmp_path: Path) -> None:
    values = tree(tmp_path, {"teams/ml.yaml": "quota:\n  nvidia: 12\n"})
    output = render_refused(values)
    assert [line for line in output.splitlines() if "CAP001" in line] == [
        "values/teams/ml.yaml:2:11: CAP001 quotas for nvidia (nvidia.com/gpu) add up to 12 devices "
        "(ml 12) but its pools hold 8 (at $.quota.nvidia); lower the quotas, add nodes to the "
        "vendor's pools, or set capacity.allowOvercommit: true in values/fleet.yaml"
    ]
