"""One view as the checks read it (generator/policy/context.py, Context): a team's landings (its
pod templates that ask for devices, with the pools they may land on) and its pods' placement
problems, each worked out once per team and handed out again when asked again."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.values import loader as values
from generator.values.model import FleetView, Team
from tests.fixtures import PROD_FLEET, context, tree

# Team ml: a job of 2 GPUs, which lands on the default NVIDIA pool a100.
ML = "quota: {nvidia: 4}\njobs:\n  train: {vendor: nvidia, devices: 2, images: {nvidia: r/t:1}}\n"
# Team cv: a job that asks for an H100 (no pool has one: POD003) and a service of one GPU a
# replica, which lands on a100.
CV = """\
quota: {nvidia: 4}
jobs:
  detect: {vendor: nvidia, devices: 1, model: H100, images: {nvidia: r/d:1}}
services:
  web:
    images: {nvidia: r/w:1}
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 2}
"""


@pytest.fixture
def view(tmp_path: Path) -> FleetView:
    files = {"teams/ml.yaml": ML, "teams/cv.yaml": CV}
    return values.load(tree(tmp_path, files, fleet=PROD_FLEET)).envs["prod"]


def team(view: FleetView, name: str) -> Team:
    return next(t for t in view.teams if t.name == name)


def test_a_teams_landings_are_worked_out_once(view: FleetView) -> None:
    """Each team's landings, the same list when asked again, before and after another team's."""
    ctx = context(view)
    ml, cv = team(view, "ml"), team(view, "cv")
    first = ctx.landings(ml)
    assert [(x.ref.name, x.vendor.id, x.devices, [p.name for p in x.pools]) for x in first] == [
        ("train", "nvidia", 2, ["a100"])
    ]
    assert ctx.landings(ml) is first
    # The H100 job picks no pool, so it lands nowhere; the service's track does.
    of_cv = ctx.landings(cv)
    assert [(x.ref.kind, x.ref.name, x.devices) for x in of_cv] == [("Deployment", "web-nvidia", 1)]
    assert ctx.landings(cv) is of_cv
    assert ctx.landings(ml) is first


def test_a_teams_pod_problems_are_worked_out_once(view: FleetView) -> None:
    """Each team's placement problems, the same list when asked again (the five POD checks read
    it): cv's H100 job picks no pool; ml's pods have no problem."""
    ctx = context(view)
    ml, cv = team(view, "ml"), team(view, "cv")
    first = ctx.pod_problems(cv)
    assert [(ref.name, p.code) for ref, p in first] == [("detect", "POD003")]
    assert ctx.pod_problems(cv) is first
    none = ctx.pod_problems(ml)
    assert none == []
    assert ctx.pod_problems(ml) is none
    assert ctx.pod_problems(cv) is first


def test_a_part_of_the_view_shares_what_the_whole_worked_out(view: FleetView) -> None:
    """The context of one team (or none) that a check of each team (or of no team) reads: the
    view holds that team alone, its pods are that team's, and what the view's context worked
    out is the same object there, not worked out again for each of 1,000 teams."""
    ctx = context(view)
    cv = team(view, "cv")
    part = ctx.of_teams((cv,))
    assert part.view.teams == (cv,)
    assert part.view.vendors == view.vendors
    assert [(ref.kind, ref.name) for ref in part.build.pods()] == [
        ("Job", "detect"),
        ("Deployment", "web-nvidia"),
    ]
    assert part.pools is ctx.pools
    assert part.reserved_namespaces() is ctx.reserved_namespaces()
    assert part.clashes() is ctx.clashes()
    assert part.landings(cv) is ctx.landings(cv)
    assert part.pod_problems(cv) is ctx.pod_problems(cv)
    assert part.build.team(cv) is ctx.build.team(cv)
    # its own workload model, whose view holds the part's team alone, with the whole's teams
    assert part.build.workloads.view.teams == (cv,)
    assert part.build.workloads.of(cv) is ctx.build.workloads.of(cv)
    assert ctx.of_teams(()).view.teams == ()
