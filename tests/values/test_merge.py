"""generator/values/merge.py: where a finding about a merged entity points (Doc.anchor)."""

from __future__ import annotations

from generator.findings import Location
from generator.values.merge import Doc

TEAM = "values/teams/ml-team.yaml"
CATALOG = "generator/values/catalog/nvidia.yaml"


def team_doc() -> Doc:
    """A team file that sets `namespaces` and `jobs[0].devices` but no `quota`; `exporter` comes
    from the catalog (not a file the user edits)."""
    return Doc(
        data={"namespaces": ["ml"], "jobs": [{"devices": 4}], "exporter": {"port": 9400}},
        values={
            ("namespaces",): Location(TEAM, 2, 13),
            ("jobs", 0, "devices"): Location(TEAM, 4, 14),
            ("exporter", "port"): Location(CATALOG, 9, 9),
        },
        keys={
            ("namespaces",): Location(TEAM, 2, 1),
            ("jobs",): Location(TEAM, 3, 1),
            ("jobs", 0, "devices"): Location(TEAM, 4, 5),
            ("exporter",): Location(CATALOG, 8, 1),
        },
        sources=(TEAM,),
    )


def test_anchor_is_the_first_path_set_in_a_values_file() -> None:
    assert team_doc().anchor(("namespaces",), ("jobs",)) == Location(TEAM, 2, 1)
    assert team_doc().anchor(("jobs",), ("namespaces",)) == Location(TEAM, 3, 1)


def test_a_later_path_answers_when_the_first_is_not_set() -> None:
    """No `quota` in the file: the finding points at `namespaces`, the next path asked for, not
    at the file's first key (which is what looking up `quota` alone falls back to)."""
    assert team_doc().anchor(("quota",), ("namespaces",)) == Location(TEAM, 2, 1)


def test_a_path_set_only_by_the_catalog_is_passed_over() -> None:
    assert team_doc().anchor(("exporter",), ("jobs",)) == Location(TEAM, 3, 1)


def test_a_paths_nearest_set_parent_answers_before_a_later_path() -> None:
    """`jobs[0].image` is not set but `jobs` is: the finding points there, the nearest place to
    add the missing key, before the later path."""
    assert team_doc().anchor(("jobs", 0, "image"), ("namespaces",)) == Location(TEAM, 3, 1)


def test_with_no_path_set_the_key_that_declares_the_entity_answers() -> None:
    """A vendor an environment overrides: where `nvidia:` is written in that environment."""
    doc = team_doc()
    doc.keys[()] = Location("values/environments/prod.yaml", 2, 3)
    doc.sources = (TEAM, "values/environments/prod.yaml")
    assert doc.anchor(("quota",)) == Location("values/environments/prod.yaml", 2, 3)
    assert doc.anchor(("quota",), ("jobs",)) == Location(TEAM, 3, 1)


def test_with_nothing_set_in_a_values_file_the_top_of_the_entitys_file_answers() -> None:
    assert team_doc().anchor(("exporter",), ("quota",)) == Location(TEAM, 1, 1)
    # An entity only the catalog sets (no file of its own): its first located value.
    catalog_only = Doc(
        data={"exporter": {"port": 9400}},
        values={("exporter", "port"): Location(CATALOG, 9, 9)},
        keys={("exporter",): Location(CATALOG, 8, 1)},
    )
    assert catalog_only.anchor(("exporter",)) == Location(CATALOG, 9, 9)
