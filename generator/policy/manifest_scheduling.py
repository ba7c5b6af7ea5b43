"""Manifest rules on the scheduling objects as kustomize builds them (docs/scheduling.md)."""

from __future__ import annotations

from collections.abc import Iterable

from generator.findings import Finding
from generator.policy.checks import ManifestRule
from generator.policy.context import Context
from generator.policy.manifest import describe
from generator.policy.scheduling import queue_problems
from generator.vocab.api import KUEUE, VOLCANO_SCHEDULING
from generator.vocab.objects import Obj
from generator.vocab.units import Unit


def queue_matches_quota(ctx: Context, unit: Unit, objs: list[Obj]) -> Iterable[Finding]:
    view = ctx.view
    for obj in objs:
        api, kind = obj.get("apiVersion"), obj.get("kind")
        if (api, kind) not in ((VOLCANO_SCHEDULING, "Queue"), (KUEUE, "ClusterQueue")):
            continue
        team = ctx.team_of_queue(str((obj.get("metadata") or {}).get("name")))
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


RULES: tuple[ManifestRule, ...] = (
    ManifestRule(
        "SCH001",
        "a team's Volcano Queue or Kueue ClusterQueue does not carry its quota",
        queue_matches_quota,
    ),
)
