"""Rules spread over several PrometheusRules when one would pass the Prometheus Operator's limit
(generator/builders/monitoring/rulefiles.py): how many, which rules go where, and that one
team's edit moves no other team's rules. The buckets below are CRC-32 of the names modulo the
count, worked out by hand (zlib.crc32(b"ml") % 4 == 2, and so on); validate's PROM002
(tests/validate) proves the objects against the operator's own code."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.builders.monitoring import alerts, rulefiles
from generator.builders.monitoring import recording_rules as rules
from generator.builders.monitoring.sources import exporters
from generator.values import loader as values
from generator.values.model import FleetView
from tests.builders.monitoring.test_recording_rules import team, with_teams, xp
from tests.fixtures import PROD_FLEET, TWO_CLUSTERS, tree

TEAMS = ("ml", "cv", "nlp", "speech", "search", "ads", "infra", "robotics")


def test_spread_is_zero_while_everything_fits_one_object() -> None:
    assert rulefiles.spread({"a": 400, "b": 500}, 100, 1000) == 0
    assert rulefiles.spread({}, 5000, 1000) == 0


def test_spread_is_the_smallest_power_of_two_whose_buckets_fit() -> None:
    # crc32 % 2: ml 0, cv 0, nlp 1, speech 1; % 4: ml 2, cv 2, nlp 3, speech 3
    sizes = {"ml": 600, "cv": 600, "nlp": 300, "speech": 300}
    assert rulefiles.spread(sizes, 200, 1900) == 1  # 2,000 in all: one object more holds 1,800
    assert rulefiles.spread(sizes, 0, 1300) == 2  # ml and cv together: 1,200
    # % 4 still puts ml and cv together; % 8: ml 6, cv 2, nlp 7, speech 7
    assert rulefiles.spread(sizes, 0, 1199) == 8


def test_a_bucket_exactly_at_the_budget_fits() -> None:
    # % 2 puts ml and cv in bucket 0 (1,200, the budget itself) and nlp in 1
    assert rulefiles.spread({"ml": 600, "cv": 600, "nlp": 300}, 0, 1200) == 2


def test_spread_gives_up_at_max_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """ml and cv share a bucket % 2 and % 4: capped at 4, the shared bucket stays over the
    budget (PROM002 then names its object) rather than the count growing without end."""
    monkeypatch.setattr(rulefiles, "MAX_PARTS", 4)
    assert rulefiles.spread({"ml": 5000, "cv": 10}, 0, 1000) == 4


def test_spread_stops_when_a_key_over_the_budget_is_alone_in_its_bucket() -> None:
    # ml and cv share a bucket % 2 and % 4; % 8 parts them (ml 6, cv 2)
    assert rulefiles.spread({"ml": 5000, "cv": 10}, 0, 1000) == 8
    assert rulefiles.spread({"ml": 5000}, 0, 1000) == 1


def test_part_names_count_from_one_and_sort_in_order() -> None:
    assert rulefiles.part_name("accelerators-unified", "teams", 0, 4) == (
        "accelerators-unified-teams-1-of-4"
    )
    assert rulefiles.part_name("accelerators-unified", "teams", 8, 16) == (
        "accelerators-unified-teams-09-of-16"
    )
    assert rulefiles.part_name("r", "pools", 99, 128) == "r-pools-100-of-128"


def test_size_counts_text_and_a_little_per_field() -> None:
    assert rulefiles.size("abc") == 3 + 8
    assert rulefiles.size({"record": "x", "labels": {"team": "ml"}}) == (6 + 1 + 8) + (
        6 + 4 + 2 + 8
    )
    assert rulefiles.size([1.5, "ab"]) == (3 + 8) + (2 + 8)


def view(tmp_path: Path) -> FleetView:
    loaded = values.load(tree(tmp_path / "repo", fleet=PROD_FLEET)).envs["prod"]
    return with_teams(loaded, *(team(n, {"a": 2}) for n in TEAMS))


def records(file: rulefiles.RuleFile) -> list[tuple[str, str]]:
    return [
        (r["record"], r.get("labels", {}).get("team", "")) for g in file.groups for r in g["rules"]
    ]


def test_recording_rules_fit_one_object_under_the_budget(tmp_path: Path) -> None:
    [one] = rules.files(view(tmp_path), [xp("a")], budget=10**6)
    assert one.part is None
    assert [g["name"] for g in one.groups] == ["accelerators.unified"]
    # vendor and fleet rules, a namespace and a weight per team, two joins, ratio, cost, hours
    assert len(one.groups[0]["rules"]) == 5 + 8 * 2 + 2 + 3


def test_each_teams_rules_go_whole_to_its_bucket_and_the_shared_ones_stay(tmp_path: Path) -> None:
    """Eight teams of one resource, about 265 units of estimate each, under a budget of 1,100:
    two buckets hold 777 and 1,344; four hold ads (261), infra (267), ml and cv (516), nlp,
    speech, search and robotics (1,077). The joins stay in the main object, whatever the
    number of teams."""
    main, *parts = rules.files(view(tmp_path), [xp("a")], budget=1100)
    assert main.part is None and main.sources == ()
    assert [g["name"] for g in main.groups] == ["accelerators.unified"]
    assert [r for r, _ in records(main)] == [
        "gpu:utilization:percent",
        "gpu:memory_used:bytes",
        "gpu:memory_total:bytes",
        "gpu:memory_used:ratio",
        "gpu:devices:count",
        "team_vendor:gpu_quota_used:devices",
        "team_vendor:gpu_quota_hard:devices",
        "team_vendor:gpu_quota_used:ratio",
        "team_vendor:gpu_cost_weighted_devices:sum",
        "team_vendor:gpu_cost_weighted_device_hours:1h",
    ]
    assert [(p.part, [g["name"] for g in p.groups]) for p in parts] == [
        ((0, 4), ["accelerators.unified-teams-1-of-4"]),
        ((1, 4), ["accelerators.unified-teams-2-of-4"]),
        ((2, 4), ["accelerators.unified-teams-3-of-4"]),
        ((3, 4), ["accelerators.unified-teams-4-of-4"]),
    ]
    info, weight = "namespace:accelerator_team:info", "team_vendor:gpu_cost_weight:factor"
    assert records(parts[2]) == [(info, "ml"), (weight, "ml"), (info, "cv"), (weight, "cv")]
    assert {t for p in parts for _, t in records(p)} == set(TEAMS)
    assert [sorted({t for _, t in records(p)}) for p in parts] == [
        ["ads"],
        ["infra"],
        ["cv", "ml"],
        ["nlp", "robotics", "search", "speech"],
    ]


def test_the_main_objects_rules_count_against_the_budget(tmp_path: Path) -> None:
    """The eight teams' data is 2,121 of estimate, the vendor and fleet rules 686 and the joins
    1,325: 4,132 in all. One object holds them under a budget of 4,132; under 4,000, which the
    teams' data alone, or with either of the others, would fit, it moves to an object of its
    own."""
    assert [f.part for f in rules.files(view(tmp_path), [xp("a")], budget=4132)] == [None]
    assert [f.part for f in rules.files(view(tmp_path), [xp("a")], budget=4000)] == [
        None,
        (0, 1),
    ]


def test_each_object_names_the_team_files_its_rules_come_from(tmp_path: Path) -> None:
    """Team cv and the tree's ml apart under a budget of 300 (crc32 % 8: cv 2, ml 6): each share
    names its team's values file; the main one, made from the vendors alone, none."""
    loaded = values.load(
        tree(tmp_path / "repo", {"teams/cv.yaml": "quota: {nvidia: 1}\n"}, fleet=PROD_FLEET)
    ).envs["prod"]
    assert [(f.part, f.sources) for f in rules.files(loaded, [xp("a")], budget=300)] == [
        (None, ()),
        ((2, 8), ("values/teams/cv.yaml",)),
        ((6, 8), ("values/teams/ml.yaml",)),
    ]
    [one] = rules.files(loaded, [xp("a")], budget=10**6)
    assert one.sources == ("values/teams/cv.yaml", "values/teams/ml.yaml")


def test_the_budget_is_rulefiles_budget_unless_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rulefiles, "BUDGET", 1100)
    assert [f.part for f in rules.files(view(tmp_path), [xp("a")])] == [
        None,
        (0, 4),
        (1, 4),
        (2, 4),
        (3, 4),
    ]


def test_one_teams_edit_changes_its_own_bucket_only(tmp_path: Path) -> None:
    """infra (bucket 1 of 4) gets a second namespace: its data gains a namespace; the main
    object and the other three parts are equal."""
    base = view(tmp_path)
    before = rules.files(base, [xp("a")], budget=1100)
    moved = with_teams(
        base, *(team(n, {"a": 2}, ("infra", "infra-2") if n == "infra" else ()) for n in TEAMS)
    )
    after = rules.files(moved, [xp("a")], budget=1100)
    assert [f.part for f in after] == [None, (0, 4), (1, 4), (2, 4), (3, 4)]
    assert [a == b for a, b in zip(after, before, strict=True)] == [True, True, False, True, True]
    assert after[2].groups[0]["rules"][1] == {
        "record": "namespace:accelerator_team:info",
        "expr": "vector(1)",
        "labels": {"namespace": "infra-2", "team": "infra"},
    }


def test_a_cluster_labels_every_rule_of_every_part(tmp_path: Path) -> None:
    loaded = values.load(tree(tmp_path, TWO_CLUSTERS, fleet=PROD_FLEET))
    domestic = loaded.envs["prod/domestic"]
    files = rules.files(with_teams(domestic, *(team(n, {"a": 2}) for n in TEAMS)), [xp("a")], 1100)
    # The cluster label counts too: eight buckets, of which % 8 fills 0 (ads), 1 (infra), 2 (cv),
    # 3 (robotics), 6 (ml) and 7 (nlp, speech, search).
    assert [f.part for f in files] == [None, (0, 8), (1, 8), (2, 8), (3, 8), (6, 8), (7, 8)]
    assert {r["labels"]["cluster"] for f in files for g in f.groups for r in g["rules"]} == {
        "domestic"
    }


NVIDIA_POOLS = "pools:\n" + "".join(
    f"  - {{name: p{i}, model: A100, devicesPerNode: 4, nodes: [n{i}a, n{i}b]}}\n"
    for i in range(1, 5)
)


def test_alerts_spread_the_pools_node_alerts_and_keep_the_rest(tmp_path: Path) -> None:
    """Four pools' AcceleratorNodeDevicesMissing alerts, about 540 units of estimate each, under
    a budget of 1,200: % 4 puts p2 in bucket 0, p4 in 1, p1 and p3 in 2, none in 3 (no object)."""
    loaded = values.load(tree(tmp_path, {"vendors/nvidia.yaml": NVIDIA_POOLS})).envs["prod"]
    main, *parts = alerts.files(loaded, exporters(loaded), budget=1200)
    assert [g["name"] for g in main.groups] == [
        "accelerators.alerts.devices",
        "accelerators.alerts.fleet",
    ]
    assert "AcceleratorNodeDevicesMissing" not in {
        r["alert"] for g in main.groups for r in g["rules"]
    }
    assert [
        (p.part, [g["name"] for g in p.groups], [r["labels"]["pool"] for r in p.groups[0]["rules"]])
        for p in parts
    ] == [
        ((0, 4), ["accelerators.alerts.fleet-pools-1-of-4"], ["p2"]),
        ((1, 4), ["accelerators.alerts.fleet-pools-2-of-4"], ["p4"]),
        ((2, 4), ["accelerators.alerts.fleet-pools-3-of-4"], ["p1", "p3"]),
    ]
    [whole] = alerts.files(loaded, exporters(loaded), budget=10**6)
    assert [r["labels"].get("pool") for r in whole.groups[1]["rules"]][-4:] == [
        "p1",
        "p2",
        "p3",
        "p4",
    ]
