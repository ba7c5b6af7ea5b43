"""SCH001 (generator/policy/manifest_scheduling.py): the queues as built carry the team's quota."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.builders.common import Unit
from generator.builders.workloads import team_objects
from generator.findings import Location
from generator.policy.registry import run_rules
from generator.values import loader as values
from tests.example import use_backend
from tests.fixtures import Write

# ---- SCH001: queues as built carry the team's quota ----------------------------------------------


@pytest.mark.parametrize("backend", ["volcano", "kueue"])
def test_queue_that_does_not_carry_the_quota_is_found(
    backend: str, values_dir: Path, write: Write
) -> None:
    use_backend(values_dir, write, backend)
    view = values.load(values_dir).envs["prod"]
    team = next(t for t in view.teams if t.name == "ml-team")
    objs = [o for o in team_objects(view, team)[0] if o["kind"] in ("Queue", "ClusterQueue")]
    unit = Unit("prod", "team-ml-team", "overlays/prod/team-ml-team", tuple(objs), {})
    assert [f.code for f in run_rules(view, unit, objs) if f.code == "SCH001"] == []
    [queue] = objs
    if backend == "volcano":
        queue["spec"]["capability"]["nvidia.com/gpu"] = 80
        want = "capability of nvidia.com/gpu is 80, the team's quota gives 8"
    else:
        [group] = [
            g
            for g in queue["spec"]["resourceGroups"]
            if g["coveredResources"] == ["nvidia.com/gpu"]
        ]
        group["flavors"][0]["resources"][0]["nominalQuota"] = 80
        want = "nominal quota of nvidia.com/gpu is 80, the team's quota gives 8"
    found = [f for f in run_rules(view, unit, objs) if f.code == "SCH001"]
    assert found and want in found[0].message
    assert {f.location for f in found} == {Location("values/teams/ml-team.yaml", 4, 1)}
