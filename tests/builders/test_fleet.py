"""Every builder of an environment (generator/builders/fleet.py, build_all): the components in
the order the builders run (node configuration, device plugins, monitoring, teams, workloads,
scheduling), built once per view so the checks and the layout read the same objects, and handed
out as a fresh list each time so a caller that adds to it (layout adds the argocd unit) changes
nothing the next caller sees."""

from __future__ import annotations

from pathlib import Path

from generator.builders.fleet import build_all
from generator.values import loader as values
from generator.values.model import FleetView
from generator.vocab.units import Component
from tests.fixtures import FLEET, tree

# Team ml with one NVIDIA job, scheduled by Kueue: every builder has something to build.
ML_JOB = """\
quota: {nvidia: 4}
jobs:
  train: {vendor: nvidia, devices: 1, images: {nvidia: r/t:1}, command: [python]}
"""


def prod_view(tmp_path: Path) -> FleetView:
    """The prod view of the default tree (NVIDIA, team ml with a job) under Kueue."""
    files = {"teams/ml.yaml": ML_JOB}
    return values.load(tree(tmp_path, files, fleet=FLEET + "scheduling: {backend: kueue}\n")).envs[
        "prod"
    ]


# ---- build_all ---------------------------------------------------------------------------------


def test_build_all_gives_every_builders_components_in_order(tmp_path: Path) -> None:
    """Node configuration, device plugins, monitoring, the team's quota and its workloads, then
    the scheduler's objects: each builder's components, in the order BUILDERS lists them."""
    comps = build_all(prod_view(tmp_path))
    assert [(c.unit, c.name) for c in comps] == [
        ("node-config", "node-config/nvidia"),
        ("device-plugins", "device-plugins/namespaces"),
        ("device-plugins", "device-plugins/nvidia"),
        ("monitoring", "monitoring/namespace"),
        ("monitoring", "monitoring/exporters/namespace"),
        ("monitoring", "monitoring/exporters/nvidia"),
        ("monitoring", "monitoring/scrape"),
        ("monitoring", "monitoring/rules"),
        ("monitoring", "monitoring/alerts"),
        ("monitoring", "monitoring/dashboard"),
        ("team-ml", "teams/ml"),
        ("team-ml", "workloads/ml"),
        ("scheduling", "scheduling/kueue-flavors"),
    ]


def test_build_all_builds_once_per_view(tmp_path: Path) -> None:
    """A second call on the same view answers the same Component objects (NAME008 and the
    layout read one build); another view builds its own."""
    view = prod_view(tmp_path / "a")
    first, second = build_all(view), build_all(view)
    assert len(first) == len(second) == 13
    assert all(a is b for a, b in zip(first, second, strict=True))
    other = build_all(prod_view(tmp_path / "b"))
    assert not any(a is b for a, b in zip(first, other, strict=True))


def test_adding_to_the_answer_changes_nothing_the_next_caller_sees(tmp_path: Path) -> None:
    """Layout adds the argocd unit to the list it gets: the next build_all has no such entry."""
    view = prod_view(tmp_path)
    comps = build_all(view)
    comps += [Component("argocd", "argocd/applications")]
    again = build_all(view)
    assert len(again) == 13
    assert "argocd" not in {c.unit for c in again}
