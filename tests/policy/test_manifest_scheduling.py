"""SCH001 (generator/policy/manifest_scheduling.py): the queues as built carry the team's quota."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.findings import Finding, Location
from generator.policy.registry import run_rules
from generator.values import loader as values
from generator.vocab.units import Unit
from tests.fixtures import FLEET, context, team_objects, tree

# Team ml: 8 NVIDIA devices, its quota's key on line 2, column 1.
ML = "owners: [ml@example.com]\nquota:\n  nvidia: 8\n"

# ---- SCH001: queues as built carry the team's quota ----------------------------------------------


@pytest.mark.parametrize("backend", ["volcano", "kueue"])
def test_queue_that_does_not_carry_the_quota_is_found(backend: str, tmp_path: Path) -> None:
    fleet = FLEET + f"scheduling:\n  backend: {backend}\n"
    view = values.load(tree(tmp_path, {"teams/ml.yaml": ML}, fleet=fleet)).envs["prod"]
    team = next(t for t in view.teams if t.name == "ml")
    objs = [o for o in team_objects(view, team)[0] if o["kind"] in ("Queue", "ClusterQueue")]
    unit = Unit("prod", "team-ml", "overlays/prod/team-ml", tuple(objs), {})
    assert [f.code for f in run_rules(context(view), unit, objs) if f.code == "SCH001"] == []
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
    found = [f for f in run_rules(context(view), unit, objs) if f.code == "SCH001"]
    assert found and want in found[0].message
    assert {f.location for f in found} == {Location("values/teams/ml.yaml", 2, 1)}


def test_the_whole_finding_names_the_queue_and_the_teams_quota(tmp_path: Path) -> None:
    """Objects that are not queues, and a queue of no team, are passed over, not the end of the
    unit: the team's queue after them is still checked, and its finding says where to fix it."""
    fleet = FLEET + "scheduling:\n  backend: volcano\n"
    view = values.load(tree(tmp_path, {"teams/ml.yaml": ML}, fleet=fleet)).envs["prod"]
    team = next(t for t in view.teams if t.name == "ml")
    [queue] = [o for o in team_objects(view, team)[0] if o["kind"] == "Queue"]
    queue["spec"]["capability"]["nvidia.com/gpu"] = 80
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "team-ml"}}
    stranger = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "team-nobody"},
        "spec": {"capability": {"nvidia.com/gpu": 80}},
    }
    objs = [config, stranger, queue]
    unit = Unit("prod", "team-ml", "overlays/prod/team-ml", tuple(objs), {})
    assert [f for f in run_rules(context(view), unit, objs) if f.code == "SCH001"] == [
        Finding(
            "SCH001",
            "Queue team-ml (overlays/prod/team-ml): capability of nvidia.com/gpu is 80, the "
            "team's quota gives 8",
            Location("values/teams/ml.yaml", 2, 1),
            "$.quota",
            "the queue is rendered from quota and borrowing: re-render, and change quota in the "
            "team's values rather than the queue",
            unit="overlays/prod/team-ml",
        )
    ]


def test_the_context_tells_whether_a_units_rules_read_another_team(tmp_path: Path) -> None:
    """A unit of team ml holding team ai's queue: SCH001 reads ai's quota there, so the unit's
    findings are not ml's alone (validate keeps them by the whole view: policy/memo.RuleMemo).
    Nor when it holds a queue named after no team: a team of that name added later would be
    read there."""
    fleet = FLEET + "scheduling:\n  backend: volcano\n"
    files = {"teams/ml.yaml": ML, "teams/ai.yaml": ML}
    view = values.load(tree(tmp_path, files, fleet=fleet)).envs["prod"]
    ml, ai = (next(t for t in view.teams if t.name == name) for name in ("ml", "ai"))
    [own] = [o for o in team_objects(view, ml)[0] if o["kind"] == "Queue"]
    [other] = [o for o in team_objects(view, ai)[0] if o["kind"] == "Queue"]
    stranger = {**own, "metadata": {**own["metadata"], "name": "team-zzz"}}
    ctx = context(view)
    unit = Unit("prod", "team-ml", "overlays/prod/team-ml", (own,), {})
    run_rules(ctx, unit, [own])
    assert ctx.queues_asked == {"team-ml"}
    assert ctx.reads_alone(ml)
    assert not ctx.reads_alone(ai)
    assert not ctx.reads_alone(None)  # a unit of no team reads them all
    run_rules(ctx, unit, [own, other])
    assert ctx.queues_asked == {"team-ml", "team-ai"}
    assert not ctx.reads_alone(ml)
    run_rules(ctx, unit, [own, stranger])
    assert ctx.queues_asked == {"team-ml", "team-zzz"}
    assert not ctx.reads_alone(ml)
    run_rules(ctx, unit, [own])  # each unit's rules: what they read alone
    assert ctx.queues_asked == {"team-ml"}
    assert ctx.reads_alone(ml)
