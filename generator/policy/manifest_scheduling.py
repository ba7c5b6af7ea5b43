"""Manifest rules on the scheduling objects as kustomize builds them (docs/scheduling.md)."""

from __future__ import annotations

from collections.abc import Iterable

from generator.builders.workloads import queue_name
from generator.findings import Finding
from generator.policy.checks import ManifestRule
from generator.policy.manifest import describe
from generator.policy.scheduling import queue_problems
from generator.values.model import FleetView, Team
from generator.vocab.api import KUEUE, VOLCANO_SCHEDULING
from generator.vocab.objects import Obj
from generator.vocab.units import Unit


def queue_matches_quota(view: FleetView, unit: Unit, objs: list[Obj]) -> Iterable[Finding]:
    teams = _teams_by_queue(view)
    for obj in objs:
        api, kind = obj.get("apiVersion"), obj.get("kind")
        if (api, kind) not in ((VOLCANO_SCHEDULING, "Queue"), (KUEUE, "ClusterQueue")):
            continue
        team = teams.get(str((obj.get("metadata") or {}).get("name")))
        if team is None:
            continue
        for problem in queue_problems(view, team, obj):
            yield Finding(
                "SCH001",
                f"{describe(unit, obj)}: {problem}",
                team.doc.anchor(("quota",)),
                "$.quota",
                "the queue is rendered from quota and borrowing: re-render, and change quota "
                "in the team's values rather than the queue",
            )


def _teams_by_queue(view: FleetView) -> dict[str, Team]:
    """{queue name: team}, once per view (not once per unit: 1,000 teams make 3,000 units)."""
    key = "scheduling_rules.teams_by_queue"
    if key not in view.memo:
        view.memo[key] = {queue_name(t): t for t in view.teams}
    teams: dict[str, Team] = view.memo[key]
    return teams


RULES: tuple[ManifestRule, ...] = (
    ManifestRule(
        "SCH001",
        "a team's Volcano Queue or Kueue ClusterQueue does not carry its quota",
        queue_matches_quota,
    ),
)
