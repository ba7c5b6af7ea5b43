"""Team units: namespaces at Pod Security baseline or stricter, and a quota per vendor resource.

Every vendor resource of the environment gets a quota line, 0 where the team has none, so a team
cannot use a vendor it was not given: a missing quota line would mean "unlimited".
"""

from __future__ import annotations

from ..model import FleetView, Team
from .common import SYNC_WAVE, TEAM_LABEL, Component, Obj, metadata, namespace
from .scheduling import accounted_devices

OWNERS_ANNOTATION = "accel-gitops.io/owners"


def unit_name(team: str) -> str:
    return f"team-{team}"


def build(view: FleetView) -> list[Component]:
    return [
        Component(
            unit_name(t.name),
            f"teams/{t.name}",
            _objects(view, t),
            origin=t.doc.anchor(("quota",), ("namespaces",)),
        )
        for t in view.teams
    ]


def quota_hard(view: FleetView, team: Team) -> dict[str, str]:
    # One accounting per backend: with a queue backend the queue limits the team and this quota
    # is sized to the queue's ceiling (builders/scheduling.py accounted_devices).
    devices: dict[str, int] = {}
    for vendor in view.vendors:
        devices.setdefault(vendor.resource_name, 0)
        devices[vendor.resource_name] += accounted_devices(view, team, vendor)
    hard: dict[str, str] = {}
    for resource, count in sorted(devices.items()):
        hard[f"requests.{resource}"] = str(count)
        hard[f"limits.{resource}"] = str(count)
    return hard


def _objects(view: FleetView, team: Team) -> list[Obj]:
    sources = team.doc.sources
    labels = {TEAM_LABEL: team.name}
    notes = {OWNERS_ANNOTATION: ", ".join(team.owners)} if team.owners else {}
    objs: list[Obj] = []
    hard = quota_hard(view, team)
    for ns in team.namespaces:
        objs.append(
            namespace(
                ns,
                sources=sources,
                pod_security=team.pod_security,
                labels=labels,
                annotations={SYNC_WAVE: "-2", **notes},
            )
        )
        if hard:
            objs.append(
                {
                    "apiVersion": "v1",
                    "kind": "ResourceQuota",
                    "metadata": metadata(
                        "accelerators",
                        namespace=ns,
                        sources=sources,
                        labels=labels,
                        annotations={SYNC_WAVE: "-1"},
                    ),
                    "spec": {"hard": hard},
                }
            )
    return objs
