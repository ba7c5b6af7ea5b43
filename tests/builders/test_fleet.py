"""The build of a view (generator/builders/fleet.py, Build): the components in the order the
builders run (node configuration, device plugins, monitoring, teams, workloads, scheduling),
each part made once per build so the checks and the layout read the same objects, handed out as
a tuple a caller cannot add to (layout adds the argocd unit to a list of its own); and one build
per layer of a values tree."""

from __future__ import annotations

from pathlib import Path

from generator.builders.fleet import Build, build_values
from generator.values import loader as values
from generator.values.model import FleetView
from generator.vocab.units import Component
from tests.fixtures import FLEET, PROD_FLEET, TWO_CLUSTERS, tree

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


# ---- Build.components ----------------------------------------------------------------------------


def test_a_build_gives_every_builders_components_in_order(tmp_path: Path) -> None:
    """Node configuration, device plugins, monitoring, the team's quota and its workloads, then
    the scheduler's objects: each builder's components, in the order BUILDERS lists them."""
    comps = Build(prod_view(tmp_path)).components
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


def test_a_build_makes_each_part_once(tmp_path: Path) -> None:
    """Asked again, a build answers the same Component objects and team objects (the checks and
    the layout read one build); another view's build makes its own."""
    view = prod_view(tmp_path / "a")
    build = Build(view)
    first, second = build.components, build.components
    assert len(first) == len(second) == 13
    assert all(a is b for a, b in zip(first, second, strict=True))
    [team] = view.teams
    assert build.team(team) is build.team(team)
    assert build.workloads.of(team) is build.workloads.of(team)
    other = Build(prod_view(tmp_path / "b")).components
    assert not any(a is b for a, b in zip(first, other, strict=True))


def test_the_components_are_a_tuple_a_caller_cannot_add_to(tmp_path: Path) -> None:
    """Layout adds the argocd unit to a list of its own: the build's components stay 13."""
    build = Build(prod_view(tmp_path))
    comps = list(build.components)
    comps += [Component("argocd", "argocd/applications")]
    assert isinstance(build.components, tuple)
    assert len(build.components) == 13
    assert "argocd" not in {c.unit for c in build.components}


def test_a_builds_pods_are_every_teams_pod_templates_team_by_team(tmp_path: Path) -> None:
    """Build.pods: each team's pod templates (a job's, a service track's Deployment), the teams
    in the view's order (cv before ml)."""
    cv = (
        "quota: {nvidia: 4}\n"
        "jobs:\n  detect: {vendor: nvidia, devices: 1, images: {nvidia: r/d:1}}\n"
        "services:\n  web:\n    images: {nvidia: r/w:1}\n"
        "    tracks:\n      nvidia: {devicesPerReplica: 1, replicas: 2}\n"
    )
    files = {"teams/ml.yaml": ML_JOB, "teams/cv.yaml": cv}
    view = values.load(tree(tmp_path, files, fleet=PROD_FLEET)).envs["prod"]
    assert [(p.team.name, p.kind, p.name, p.count) for p in Build(view).pods()] == [
        ("cv", "Job", "detect", 1),
        ("cv", "Deployment", "web-nvidia", 2),
        ("ml", "Job", "train", 1),
    ]


def test_a_build_of_values_has_the_base_every_cluster_and_every_hub(tmp_path: Path) -> None:
    """One build per layer key: the base (""), each cluster of an environment with clusters,
    and the environment itself (its hub, where its argocd unit comes from)."""
    loaded = values.load(tree(tmp_path, TWO_CLUSTERS, fleet=PROD_FLEET))
    builds = build_values(loaded)
    assert sorted(builds) == ["", "prod", "prod/domestic", "prod/main"]
    assert builds["prod/main"].view is loaded.envs["prod/main"]
    assert builds["prod"].view is loaded.hubs["prod"]
