"""A finding's environments and unit are fields: reporters group and rebuild findings from them,
never from the message text."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

from generator.findings import (
    Finding,
    Location,
    Place,
    Severity,
    anchor_at_changes,
    concerns,
    did_you_mean,
    layer_key,
    layer_selected,
    merge_layers,
    sorted_findings,
    split_layer,
)
from generator.reporters import findings as reporter

UNIT = "overlays/prod/team-a"


def junit_cases(findings: list[Finding]) -> dict[str, list[str]]:
    out = io.StringIO()
    reporter.junit(reporter.Report("validate", findings, {}, [UNIT]), out)
    suite = ET.fromstring(out.getvalue()).find("testsuite")
    assert suite is not None
    return {
        f"{c.get('classname')}:{c.get('name')}": [(f.text or "") for f in c.iter("failure")]
        for c in suite.iter("testcase")
    }


def test_junit_puts_a_finding_in_its_units_case_by_the_field() -> None:
    about_unit = Finding(
        "KUS001", "kustomize build failed", Location("values/teams/a.yaml"), unit=UNIT
    )
    # A message that names the unit in parentheses but carries no unit is not the unit's.
    only_text = Finding("CAP001", f"quota ({UNIT})", Location("values/teams/b.yaml"))
    cases = junit_cases([about_unit, only_text])
    assert cases[f"validate:{UNIT}"] == [about_unit.format()]
    assert cases["CAP001:values/teams/b.yaml"] == [only_text.format()]


def test_a_shard_report_rebuilds_each_finding_from_its_fields(tmp_path: Path) -> None:
    # A message that itself ends like an environment suffix must come back unchanged.
    odd = Finding(
        "NAME005",
        "name 'x' in environment 'prod'",
        Location("values/fleet.yaml", 2, 7),
        "$.name",
        "shorten it",
        Severity.WARNING,
        ("prod",),
        unit=UNIT,
        detail="more for a program",
        also=(Place(Location("values/teams/b.yaml", 3, 5), "$.quota.nvidia", 3),),
        last_line=4,
    )
    report = reporter.Report(
        "validate", [odd], {"shard": {"index": 1, "count": 1, "fingerprint": "f", "scope": "s"}}
    )
    out = io.StringIO()
    reporter.as_json(report, out)
    path = tmp_path / "shard.json"
    path.write_text(out.getvalue())
    merged = reporter.merge(reporter.read_reports([path]))
    assert merged.findings == [odd]
    assert json.loads(out.getvalue())["findings"][0]["message"] == odd.text


def test_layers_merge_by_fields_and_name_their_environments() -> None:
    at = Location("values/teams/a.yaml", 3, 5)
    same = Finding("CAP001", "too many", at)
    merged = merge_layers([("", [same]), ("staging", [same]), ("prod", [])], ["staging", "prod"])
    assert [(f.message, f.envs) for f in merged] == [("too many", ("", "staging"))]
    everywhere = merge_layers([("staging", [same]), ("prod", [same])], ["staging", "prod"])
    assert [(f.message, f.envs) for f in everywhere] == [("too many", ())]
    assert everywhere[0].text == "too many"
    assert merged[0].text == "too many in environment 'staging'"


def test_a_finding_in_clusters_names_them_as_fields_and_in_its_text() -> None:
    at = Location("values/teams/a.yaml", 3, 5)
    layers = ("", "prod/domestic", "prod/main", "staging")
    found = Finding("CAP001", "too many", at, envs=layers)
    assert found.environments == ("", "prod", "staging")
    assert found.clusters == ("prod/domestic", "prod/main")
    assert found.text == (
        "too many in environments 'prod' (clusters 'domestic', 'main'), 'staging'"
    )
    one = Finding("CAP001", "too many", at, envs=("prod/main",))
    assert one.text == "too many in environment 'prod' (cluster 'main')"
    assert (layer_key("prod", "main"), layer_key("prod")) == ("prod/main", "prod")
    assert (split_layer("prod/main"), split_layer("prod")) == (("prod", "main"), ("prod", ""))


def test_a_shard_report_rebuilds_the_clusters_of_each_finding(tmp_path: Path) -> None:
    at = Location("values/teams/a.yaml", 3, 5)
    layers = ("", "prod/domestic", "staging")
    found = Finding("CAP001", "too many", at, envs=layers)
    report = reporter.Report(
        "validate", [found], {"shard": {"index": 1, "count": 1, "fingerprint": "f", "scope": "s"}}
    )
    out = io.StringIO()
    reporter.as_json(report, out)
    item = json.loads(out.getvalue())["findings"][0]
    assert (item["environments"], item["clusters"]) == (["", "prod", "staging"], ["prod/domestic"])
    path = tmp_path / "shard.json"
    path.write_text(out.getvalue())
    assert reporter.merge(reporter.read_reports([path])).findings == [found]


def test_did_you_mean_names_the_closest_choice_only_when_it_is_close() -> None:
    choices = ["nvidia", "ascend", "hygon"]
    assert did_you_mean("nvida", choices) == "did you mean 'nvidia'?"
    assert did_you_mean("nvida", choices, "known: x") == "did you mean 'nvidia'? known: x"
    assert did_you_mean("kunlun", choices, "known: x") == "known: x"
    assert did_you_mean("kunlun", choices) == ""
    assert did_you_mean(3, ["3"], "then") == "then"  # not text: no guess
    assert did_you_mean("hygn", reversed(choices)) == "did you mean 'hygon'?"
    # "stage" is 0.67 like "staging": under the 0.7 cutoff, no guess (difflib's default is 0.6).
    assert did_you_mean("stage", ["staging", "prod"], "known: prod, staging") == (
        "known: prod, staging"
    )
    assert did_you_mean("stagin", ["staging", "prod"]) == "did you mean 'staging'?"


def test_a_finding_formats_as_place_code_level_text_path_and_hint() -> None:
    at = Location("values/teams/a.yaml", 2, 11)
    error = Finding("CAP001", "too many", at, "$.quota.nvidia", "lower one", envs=("prod",))
    assert error.format() == (
        "values/teams/a.yaml:2:11: CAP001 too many in environment 'prod'"
        " (at $.quota.nvidia); lower one"
    )
    warning = Finding("NAME005", "long name", at, hint="shorten it", severity=Severity.WARNING)
    assert warning.format() == "values/teams/a.yaml:2:11: NAME005 warning: long name; shorten it"
    bare = Finding("VAL001", "not a number", Location("values/fleet.yaml"))
    assert bare.format() == "values/fleet.yaml: VAL001 not a number"


def test_env_selects_its_layers_and_each_of_its_clusters() -> None:
    assert layer_selected("prod", "prod")
    assert layer_selected("prod/main", "prod")
    assert layer_selected("prod/main", "prod/main")
    assert layer_selected("staging", None)
    assert not layer_selected("staging", "prod")
    assert not layer_selected("prod/main", "prod/domestic")
    assert not layer_selected("prod", "prod/main")
    assert not layer_selected("prod/main", "main")


def test_a_finding_concerns_the_env_of_its_layers_and_their_clusters() -> None:
    at = Location("values/teams/a.yaml", 3, 5)

    def concerned(envs: tuple[str, ...], env: str) -> bool:
        return concerns(Finding("CAP001", "too many", at, envs=envs), env)

    assert concerned((), "prod") is True  # every layer
    assert concerned(("prod",), "prod") is True
    assert concerned(("staging",), "prod") is False
    assert concerned(("prod/main",), "prod") is True  # a cluster of the environment
    assert concerned(("prod",), "prod/main") is True  # the environment of the cluster
    assert concerned(("prod/main",), "prod/domestic") is False
    assert concerned(("prod/main",), "prod/main") is True
    # The base layer alone is about no environment; with another layer, about that one.
    assert concerned(("",), "prod") is False
    assert concerned(("", "staging"), "staging") is True
    assert concerned(("", "staging"), "prod") is False


def test_layers_merge_into_the_highest_severity_and_keep_a_hint() -> None:
    at = Location("values/teams/a.yaml", 3, 5)

    def one(message: str, severity: Severity, hint: str = "") -> Finding:
        return Finding("CAP001", message, at, hint=hint, severity=severity)

    error, warning = Severity.ERROR, Severity.WARNING
    layers = [
        ("staging", [one("raised", warning), one("kept", error), one("hinted first", error, "a")]),
        ("prod", [one("raised", error), one("kept", warning), one("hinted first", error)]),
        ("test", [one("hinted later", error)]),
        ("dev", [one("hinted later", error, "b")]),
    ]
    merged = merge_layers(layers, ["staging", "prod", "test", "dev"])
    assert [(f.message, f.severity, f.hint, f.envs) for f in merged] == [
        ("raised", error, "", ("prod", "staging")),
        ("kept", error, "", ("prod", "staging")),
        ("hinted first", error, "a", ("prod", "staging")),
        ("hinted later", error, "b", ("dev", "test")),
    ]


def test_sorted_findings_orders_by_place_then_path_then_hint_and_keeps_the_first_of_equals() -> (
    None
):
    def at(
        file: str,
        path: str = "",
        hint: str = "",
        severity: Severity = Severity.ERROR,
        unit: str = "",
        detail: str = "",
    ) -> Finding:
        where = Location(file, 2, 11)
        return Finding("CAP001", "too many", where, path, hint, severity, unit=unit, detail=detail)

    later_file = at("values/teams/b.yaml", "$.a")
    first_file = at("values/teams/a.yaml", "$.z")
    path_b_hint_a = at("values/teams/c.yaml", "$.b", "a")
    path_a_hint_z = at("values/teams/c.yaml", "$.a", "z")
    assert sorted_findings([later_file, path_b_hint_a, first_file, path_a_hint_z]) == [
        first_file,
        later_file,
        path_a_hint_z,
        path_b_hint_a,
    ]
    # Identical findings once: the highest severity, else the first found (its unit, detail).
    first = at("values/teams/a.yaml", unit="overlays/prod/team-a", detail="first")
    again = at("values/teams/a.yaml", unit="overlays/prod/team-b", detail="again")
    assert sorted_findings([first, again]) == [first]
    warning = at("values/teams/a.yaml", severity=Severity.WARNING)
    assert sorted_findings([warning, again]) == [again]


A = Place(Location("values/teams/a.yaml", 2, 11), "$.quota.nvidia", 2)
B = Place(Location("values/teams/b.yaml", 2, 11), "$.quota.nvidia", 2)
# A pool written as a block: its entry starts on line 3, its nodes end on line 6.
POOL = Place(Location("values/vendors/nvidia.yaml", 3, 5), "$.pools[0]", 6)
SUM = Finding.at(
    "CAP001", "quotas add up to 12 devices but its pools hold 8", A, "lower one", also=(B, POOL)
)


def test_a_sum_is_reported_at_the_line_the_change_made() -> None:
    moved = anchor_at_changes([SUM], {"values/teams/b.yaml": {2}})
    assert moved == [Finding.at("CAP001", SUM.message, B, "lower one", also=(A, POOL))]
    assert moved[0].hint == "lower one"
    # The pool the change shrank: a node removed from its block (line 5).
    [shrunk] = anchor_at_changes([SUM], {"values/vendors/nvidia.yaml": {5}})
    assert (shrunk.location, shrunk.path, shrunk.last_line) == (POOL.location, "$.pools[0]", 6)
    assert shrunk.also == (A, B)


def test_a_finding_stays_where_it_is_when_the_change_made_that_line_or_none_of_its_lines() -> None:
    both = {"values/teams/a.yaml": {2}, "values/teams/b.yaml": {2}}
    assert anchor_at_changes([SUM], both) == [SUM]
    other = Finding("NAME001", "a name", Location("values/teams/x.yaml"))
    moved = Finding.at("CAP001", SUM.message, B, "lower one", also=(A, POOL))
    assert anchor_at_changes([other, SUM, other], {"values/teams/b.yaml": {2}}) == [
        other,
        moved,
        other,
    ]
    elsewhere = {"values/teams/b.yaml": {1, 3}, "values/vendors/nvidia.yaml": {2, 7}}
    assert anchor_at_changes([SUM], elsewhere) == [SUM]
    assert anchor_at_changes([SUM], {}) == [SUM]


def test_a_finding_at_a_place_has_no_hint_unless_given() -> None:
    found = Finding.at("CAP001", "m", A)
    assert (found.location, found.path, found.hint, found.last_line) == (A.location, A.path, "", 2)


def test_a_finding_on_a_block_stays_when_the_change_is_inside_it() -> None:
    """MIG005 at a job written over lines 4-7: a change to its devices (line 6) is a change
    to it, though another team's quota changed too."""
    job = Place(Location("values/teams/a.yaml", 4, 5), "$.jobs.train", 7)
    found = Finding.at("MIG005", "workloads need 9", job, also=(B,))
    assert found.place == job
    changed = {"values/teams/a.yaml": {6}, "values/teams/b.yaml": {2}}
    assert anchor_at_changes([found], changed) == [found]
