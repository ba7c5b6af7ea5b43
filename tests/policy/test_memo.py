"""The check memo: a view whose values did not change is not checked again, and what it
answers equals what checking would find.

TWO_CLUSTERS: prod is main (NVIDIA, Ascend) and domestic (Cambricon); team ml has NVIDIA in
main and Cambricon (and its job mlu-train) in domestic. The views are the base layer (every team,
unsplit), prod/main and prod/domestic.
"""

from __future__ import annotations

import dataclasses
import marshal
from pathlib import Path
from typing import Any

import pytest

from benchmarks.fleet import make_values
from generator.builders.fleet import build_values
from generator.findings import Finding, Location, Place, Severity
from generator.policy import memo as memo_module
from generator.policy import registry
from generator.policy.checks import run_checks
from generator.policy.memo import CheckMemo, RuleMemo
from generator.policy.memo import finding_of_row as _finding
from generator.policy.memo import row_of_finding as _row
from generator.values import filecache, loader
from generator.values.model import Fleet, FleetView, PciModel, Team
from tests.fixtures import PROD_FLEET, TWO_CLUSTERS, spied_team_digests, spied_view_digests, tree

ML = "teams/ml.yaml"


@pytest.fixture
def values_dir(tmp_path: Path) -> Path:
    return tree(tmp_path / "repo", TWO_CLUSTERS, fleet=PROD_FLEET)


def checked(
    values_dir: Path, folder: Path | None, write: bool = True
) -> tuple[list[str], list[Finding]]:
    """(the views checked, the findings) of one run with the memo in `folder`."""
    memo = CheckMemo(folder, write)
    loaded = loader.load(values_dir)
    found = registry.run_checks(loaded, build_values(loaded), memo)
    return memo.checked, found


def cold(values_dir: Path) -> list[Finding]:
    loaded = loader.load(values_dir)
    return registry.run_checks(loaded, build_values(loaded))


def edit(values_dir: Path, old: str, new: str) -> None:
    path = values_dir / ML
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_a_second_run_checks_nothing(values_dir: Path, tmp_path: Path) -> None:
    memo = tmp_path / "memo"
    first, found = checked(values_dir, memo)
    assert first == ["", "prod/main", "prod/domestic"]
    again, same = checked(values_dir, memo)
    assert again == []
    assert same == found


def test_an_edit_in_one_cluster_checks_that_cluster_and_the_base_only(
    values_dir: Path, tmp_path: Path
) -> None:
    """A job asking for more devices than a node has: the finding the memo's run reports is the
    cold run's, at the edited line, and prod/main is answered from the memo."""
    memo = tmp_path / "memo"
    checked(values_dir, memo)
    edit(values_dir, "devices: 2", "devices: 12")
    views, found = checked(values_dir, memo)
    assert views == ["", "prod/domestic"]
    assert found == cold(values_dir)
    assert any(f.location == Location(f"values/{ML}", 5, 14) for f in found), found


def test_a_quota_share_is_the_cluster_it_goes_to(values_dir: Path, tmp_path: Path) -> None:
    """prod/domestic's findings (the job too large for a node) come from the memo."""
    memo = tmp_path / "memo"
    edit(values_dir, "devices: 2", "devices: 12")
    checked(values_dir, memo)
    edit(values_dir, "nvidia: 4,", "nvidia: 3,")
    views, found = checked(values_dir, memo)
    assert views == ["", "prod/main"]
    assert found == cold(values_dir)
    assert sorted(f.code for f in found if f.envs == ("prod/domestic",)) == ["MIG004", "MIG005"]


def test_a_line_that_moved_checks_every_view_of_the_team(values_dir: Path, tmp_path: Path) -> None:
    """A comment above everything moves every line of the file: findings quote lines, so each
    view the team is in is checked again, and the findings name the new lines."""
    memo = tmp_path / "memo"
    edit(values_dir, "devices: 2", "devices: 12")
    checked(values_dir, memo)
    path = values_dir / ML
    path.write_text("# moved\n" + path.read_text())
    views, found = checked(values_dir, memo)
    assert views == ["", "prod/main", "prod/domestic"]
    assert found == cold(values_dir)
    assert any(f.location == Location(f"values/{ML}", 6, 14) for f in found), found


def test_the_tools_facts_and_the_checks_chosen_are_part_of_the_key(
    values_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memo = tmp_path / "memo"
    checked(values_dir, memo)
    monkeypatch.setattr(memo_module, "salt", lambda: "other schemas")
    assert checked(values_dir, memo)[0] == ["", "prod/main", "prod/domestic"]
    loaded = loader.load(values_dir)
    fewer = CheckMemo(memo, write=True)
    run_checks(loaded, build_values(loaded), [registry.CHECKS["CAP001"]], fewer)
    assert fewer.checked == ["", "prod/main", "prod/domestic"]


def test_without_a_folder_every_view_is_checked(values_dir: Path) -> None:
    for _ in range(2):
        assert checked(values_dir, None) == (["", "prod/main", "prod/domestic"], cold(values_dir))


def test_a_run_that_may_not_write_leaves_the_memo_as_it_was(
    values_dir: Path, tmp_path: Path
) -> None:
    memo = tmp_path / "memo"
    checked(values_dir, memo, write=False)
    assert not memo.exists()
    checked(values_dir, memo)
    entries = {p.name: p.read_bytes() for p in memo.iterdir()}
    assert len(entries) == 3
    edit(values_dir, "devices: 2", "devices: 1")
    checked(values_dir, memo, write=False)
    assert {p.name: p.read_bytes() for p in memo.iterdir()} == entries
    checked(values_dir, memo)  # a run that writes keeps only what it used
    now = {p.name: p.read_bytes() for p in memo.iterdir()}
    # one entry per view, by its data but its teams: a team's edit rewrites two of them
    assert sorted(now) == sorted(entries)
    assert sum(now[name] != entries[name] for name in now) == 2


def test_an_unreadable_entry_is_checked_again(values_dir: Path, tmp_path: Path) -> None:
    memo = tmp_path / "memo"
    checked(values_dir, memo)
    for entry in memo.iterdir():
        entry.write_bytes(b"not marshal data")
    views, found = checked(values_dir, memo)
    assert views == ["", "prod/main", "prod/domestic"]
    assert found == cold(values_dir)


def test_a_finding_keeps_every_field() -> None:
    f = Finding(
        "CAP001",
        "message",
        Location("values/teams/ml.yaml", 3, 5),
        "$.quota.nvidia",
        "hint",
        Severity.WARNING,
        ("prod/main",),
        "detail",
        "overlays/prod/main/team-ml",
        (Place(Location("values/teams/a.yaml", 2, 11), "$.quota.nvidia.main", 2),),
        9,
    )
    assert _finding(_row(f)) == f


def test_the_digest_reads_what_a_vendor_holds_in_its_maps(values_dir: Path) -> None:
    """A PCI model (a dataclass in a map of the vendor) that differs makes another view."""
    view = loader.load(values_dir).envs["prod/domestic"]
    [vendor] = view.vendors
    assert "MLU370" in vendor.pci_models
    models = {k: PciModel(m.classes, ("ffff",), m.source) for k, m in vendor.pci_models.items()}
    other = dataclasses.replace(vendor, pci_models=models)
    # Another view, so its own memo of derived data (replace would share the dict).
    changed = dataclasses.replace(view, vendors=(other,))
    digest = memo_module.Digests()
    assert digest.view(changed, ["CAP001"]) != digest.view(view, ["CAP001"])
    assert digest.view(view, ["CAP001"]) == memo_module.Digests().view(view, ["CAP001"])


def test_the_digest_reads_where_a_vendors_catalog_entry_is_located(values_dir: Path) -> None:
    """SEC005 tells a vendor file's own image line from the catalog's by it (Doc.set_at)."""
    view = loader.load(values_dir).envs["prod/domestic"]
    [vendor] = view.vendors
    assert vendor.doc.catalog_at is not None
    doc = dataclasses.replace(vendor.doc, catalog_at=Location("values/vendors/x.yaml", 2, 1))
    changed = dataclasses.replace(view, vendors=(dataclasses.replace(vendor, doc=doc),))
    digest = memo_module.Digests()
    assert digest.view(changed, ["SEC005"]) != digest.view(view, ["SEC005"])


def test_a_vendors_values_are_digested_once_for_every_view_that_holds_them(
    values_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NVIDIA's and Ascend's values (one Doc each, in the base layer and in prod/main) are made
    canonical and written once per run, not once per view; each view's digest is what a
    Digests of its own gives it."""
    values = loader.load(values_dir)
    views = [values.base, values.envs["prod/main"], values.envs["prod/domestic"]]
    vendor_data = {id(v.doc.data): v.id for v in values.base.vendors}
    written: list[str] = []
    dumps = marshal.dumps

    def spy(value: Any, version: int = marshal.version) -> bytes:
        if isinstance(value, tuple) and value and id(value[0]) in vendor_data:
            written.append(vendor_data[id(value[0])])
        return dumps(value, version)

    monkeypatch.setattr(marshal, "dumps", spy)
    digests = memo_module.Digests()
    keys = [digests.view(view, ["CAP001"]) for view in views]
    assert sorted(written) == ["ascend", "cambricon", "nvidia"]
    monkeypatch.setattr(marshal, "dumps", dumps)
    assert keys == [memo_module.Digests().view(view, ["CAP001"]) for view in views]
    assert len(set(keys)) == 3


def test_a_view_parsed_or_read_from_the_file_cache_has_one_digest(
    values_dir: Path, tmp_path: Path
) -> None:
    """The first load parses every values file, the second reads them from the file cache
    (other objects shared between them): each view's digest is the same, so the second run's
    memos find the first's entries."""
    parsed = loader.load(values_dir, tmp_path / "values")
    cached = loader.load(values_dir, tmp_path / "values")
    views = ["prod/main", "prod/domestic"]
    first = memo_module.Digests()
    second = memo_module.Digests()
    assert first.view(parsed.base, ["CAP001"]) == second.view(cached.base, ["CAP001"])
    for key in views:
        assert first.view(parsed.envs[key], ["CAP001"]) == second.view(cached.envs[key], ["CAP001"])


def test_a_vendors_values_that_differ_make_another_view(values_dir: Path) -> None:
    """The same view but for one value of its vendor's Doc (the data a check reads) has
    another digest, in the same run as the first."""
    view = loader.load(values_dir).envs["prod/domestic"]
    [vendor] = view.vendors
    data = {**vendor.doc.data, "displayName": "Another name"}
    doc = dataclasses.replace(vendor.doc, data=data)
    changed = dataclasses.replace(view, vendors=(dataclasses.replace(vendor, doc=doc),))
    digest = memo_module.Digests()
    assert digest.view(view, ["CAP001"]) != digest.view(changed, ["CAP001"])


# ---- the manifest rules' findings per unit -------------------------------------------------------

RULE_FINDING = Finding("WKL001", "a rule said so", Location("values/teams/ml.yaml", 3, 5), "$.x")


class Rules:
    """A RuleMemo over the views of `values_dir`, and a record of which units' rules ran."""

    def __init__(self, values_dir: Path, folder: Path | None, write: bool = True) -> None:
        self.found = loader.load_all(values_dir)
        self.values = self.found.values
        digests = memo_module.Digests()
        # The views' digests recalled as validate recalls them (by the values' fingerprint, a
        # team's by its sources), from beside the rules' folder.
        digests.recall(self.found, folder.parent / "views" if folder else None, write)
        self.memo = RuleMemo(folder, write, ["WKL001", "WKL002"], digests)

    def save(self) -> None:
        """Keep the findings and the digests, as validate does at its end."""
        self.memo.save()
        self.memo.digests.keep()

    def ask(
        self,
        layer: str,
        unit: str,
        key: str,
        found: list[Finding],
        team: str | None = None,
        alone: bool = True,
    ) -> list[Finding]:
        """The memo's answer for `unit` of `layer`'s view; `team`: the unit's team, by name;
        `alone`: whether its rules read no other team."""
        view = self.values.envs[layer]
        of = next(t for t in view.teams if t.name == team) if team is not None else None
        return self.memo.findings(view, unit, key, lambda: list(found), of, lambda: alone)


def test_rules_run_again_only_on_a_changed_unit_key_or_view(
    values_dir: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "rules"
    first = Rules(values_dir, folder)
    assert first.ask("prod/main", "overlays/prod/main/team-ml", "k1", [RULE_FINDING]) == [
        RULE_FINDING
    ]
    assert first.ask("prod/domestic", "overlays/prod/domestic/team-ml", "k2", []) == []
    first.memo.save()
    assert first.memo.ran == ["overlays/prod/main/team-ml", "overlays/prod/domestic/team-ml"]

    # The same views and keys: the remembered findings, even where `run` would now say other.
    again = Rules(values_dir, folder)
    assert again.ask("prod/main", "overlays/prod/main/team-ml", "k1", []) == [RULE_FINDING]
    assert again.ask("prod/domestic", "overlays/prod/domestic/team-ml", "k2", [RULE_FINDING]) == []
    assert again.memo.ran == []
    # Another key for the unit (its committed files or the tools changed): run again.
    assert again.ask("prod/main", "overlays/prod/main/team-ml", "k3", []) == []
    assert again.memo.ran == ["overlays/prod/main/team-ml"]
    again.memo.save()

    # An edit of domestic's share of the team: domestic's units run again, main's do not.
    edit(values_dir, "devices: 2", "devices: 3")
    third = Rules(values_dir, folder)
    assert third.ask("prod/main", "overlays/prod/main/team-ml", "k3", [RULE_FINDING]) == []
    assert third.ask("prod/domestic", "overlays/prod/domestic/team-ml", "k2", [RULE_FINDING]) == [
        RULE_FINDING
    ]
    assert third.memo.ran == ["overlays/prod/domestic/team-ml"]


def test_a_teams_unit_is_kept_by_its_team(
    values_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """prod/main holds inference and ml. An edit of inference's values runs the rules again on
    inference's unit and on the view's other units, and not on ml's unit; but on a unit of ml
    whose rules read another team (a queue named after it: SCH001), since that unit is kept by
    the whole view. A view that did not change digests none of its teams; after the edit, only
    the edited team's digest is made (ml's is kept by its sources)."""
    folder = tmp_path / "rules"
    main = "overlays/prod/main/"
    first = Rules(values_dir, folder)
    first.ask("prod/main", main + "team-ml", "k", [RULE_FINDING], "ml")
    first.ask("prod/main", main + "team-inference", "k", [], "inference")
    first.ask("prod/main", main + "argocd", "k", [])
    first.ask("prod/main", main + "team-ml-queues", "k", [], "ml", alone=False)
    first.save()
    again = Rules(values_dir, folder)
    digested = spied_team_digests(monkeypatch)
    for unit, team in [("team-ml", "ml"), ("team-inference", "inference"), ("argocd", None)]:
        again.ask("prod/main", main + unit, "k", [RULE_FINDING], team)
    again.ask("prod/main", main + "team-ml-queues", "k", [], "ml")
    assert (again.memo.ran, digested) == ([], [])
    again.save()
    path = values_dir / "teams" / "inference.yaml"
    path.write_text(path.read_text().replace("replicas: 2}", "replicas: 1}"))
    edited = Rules(values_dir, folder)
    assert edited.ask("prod/main", main + "team-ml", "k", [], "ml") == [RULE_FINDING]
    assert edited.ask("prod/main", main + "team-inference", "k", [], "inference") == []
    assert edited.ask("prod/main", main + "argocd", "k", [], None) == []
    edited.ask("prod/main", main + "team-ml-queues", "k", [], "ml")
    assert edited.memo.ran == [main + "team-inference", main + "argocd", main + "team-ml-queues"]
    # ml's unit answered by ml's digest (recalled); inference's compared, then kept by it; the
    # queues' unit, kept by the view, ran, and read ml alone this time: kept by ml's digest
    assert digested == ["inference"]
    # Another key for ml's unit (its committed files changed): run again all the same.
    edited.ask("prod/main", main + "team-ml", "k2", [], "ml")
    assert edited.memo.ran[-1] == main + "team-ml"


def test_rules_memo_keeps_the_views_the_values_have_and_writes_only_when_it_may(
    values_dir: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "rules"
    first = Rules(values_dir, folder)
    first.ask("prod/main", "overlays/prod/main/a", "k", [RULE_FINDING])
    first.ask("prod/main", "overlays/prod/main/b", "k", [RULE_FINDING])
    first.ask("prod/domestic", "overlays/prod/domestic/c", "k", [RULE_FINDING])
    first.memo.save()
    # Every unit is remembered, and stays so through a run of hits only.
    for _ in range(2):
        hits = Rules(values_dir, folder)
        assert hits.ask("prod/main", "overlays/prod/main/a", "k", []) == [RULE_FINDING]
        assert hits.ask("prod/main", "overlays/prod/main/b", "k", []) == [RULE_FINDING]
        assert hits.ask("prod/domestic", "overlays/prod/domestic/c", "k", []) == [RULE_FINDING]
        hits.memo.save()
        assert hits.memo.ran == []
    # A run that asks only for unit a (one shard's) keeps b, the view's unit it did not check,
    # and prod/domestic's entry, a view the values have though it checked none of its units.
    second = Rules(values_dir, folder)
    second.ask("prod/main", "overlays/prod/main/a", "k", [])
    second.memo.save([second.values.envs["prod/domestic"]])
    third = Rules(values_dir, folder)
    assert third.ask("prod/main", "overlays/prod/main/b", "k", []) == [RULE_FINDING]
    assert third.ask("prod/domestic", "overlays/prod/domestic/c", "k", []) == [RULE_FINDING]
    assert third.memo.ran == []
    # A view neither checked nor among the values' views is dropped.
    fourth = Rules(values_dir, folder)
    fourth.ask("prod/main", "overlays/prod/main/a", "k", [])
    fourth.memo.save()
    fifth = Rules(values_dir, folder)
    assert fifth.ask("prod/domestic", "overlays/prod/domestic/c", "k", []) == []
    assert fifth.memo.ran == ["overlays/prod/domestic/c"]
    # A run that may not write changes nothing on disk.
    before = sorted((p.name, p.read_bytes()) for p in folder.iterdir())
    sixth = Rules(values_dir, folder, write=False)
    sixth.ask("prod/main", "overlays/prod/main/c", "k", [RULE_FINDING])
    sixth.memo.save()
    assert sorted((p.name, p.read_bytes()) for p in folder.iterdir()) == before


def test_without_a_folder_the_rules_always_run(values_dir: Path) -> None:
    rules = Rules(values_dir, None)
    rules.ask("prod/main", "overlays/prod/main/a", "k", [])
    rules.ask("prod/main", "overlays/prod/main/a", "k", [])
    rules.memo.save()
    assert rules.memo.ran == ["overlays/prod/main/a", "overlays/prod/main/a"]


def test_a_view_is_made_canonical_once_for_both_memos(
    values_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    views = spied_view_digests(monkeypatch)
    values = loader.load(values_dir)
    digests = memo_module.Digests()  # validate hands one to both memos
    checks = CheckMemo(tmp_path / "checks", True, digests)
    registry.run_checks(values, build_values(values), checks)
    assert views == ["", "prod/main", "prod/domestic"]
    rules = RuleMemo(tmp_path / "rules", True, ["WKL001"], digests)
    rules.findings(values.envs["prod/main"], "overlays/prod/main/a", "k", list)
    assert views == ["", "prod/main", "prod/domestic"]
    # Memos with digests of their own each make the view canonical.
    RuleMemo(tmp_path / "other", True, ["WKL001"]).findings(
        values.envs["prod/main"], "overlays/prod/main/a", "k", list
    )
    assert views == ["", "prod/main", "prod/domestic", "prod/main"]


# ---- the views' digests kept by the values' fingerprint ----------------------------------------


def digested(values_dir: Path, folder: Path, write: bool = True) -> dict[str, str]:
    """One load's digests of its views (for CAP001), recalled from and kept in `folder`."""
    found = loader.load_all(values_dir)
    digests = memo_module.Digests()
    digests.recall(found, folder, write)
    views = [found.values.base, *found.values.envs.values(), *found.values.hubs.values()]
    out = {view.key: digests.view(view, ["CAP001"]) for view in views}
    digests.keep()
    return out


def test_a_second_load_of_the_same_files_reads_its_views_digests(
    values_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """validate after a render: the same values files, the same code: no view is made
    canonical again, and each digest is the one the first load made."""
    folder = tmp_path / "views"
    made = spied_view_digests(monkeypatch)
    first = digested(values_dir, folder)
    assert sorted(first) == ["", "prod", "prod/domestic", "prod/main"]
    assert sorted(made) == ["", "prod", "prod/domestic", "prod/main"]
    made.clear()
    assert digested(values_dir, folder) == first
    assert made == []
    # the entry of the files' fingerprint, and the teams' digests by their sources
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [f"{found_fingerprint(values_dir)}.marshal", f"{memo_module.SOURCES_ENTRY}.marshal"]
    )


def found_fingerprint(values_dir: Path) -> str:
    return loader.load_all(values_dir).fingerprint


def fingerprints(folder: Path) -> list[str]:
    """The entries of the views' folder kept by a fingerprint (not the teams' by sources)."""
    return [p.name for p in folder.iterdir() if p.stem != memo_module.SOURCES_ENTRY]


def spied_rests(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The layers whose view without its teams is digested (not recalled) from now on."""
    made: list[str] = []
    rest = memo_module.Digests.rest

    def spy(self: memo_module.Digests, view: FleetView) -> bytes:
        if id(view) not in self.rests:
            made.append(view.key)
        return rest(self, view)

    monkeypatch.setattr(memo_module.Digests, "rest", spy)
    return made


def parts_digested(values_dir: Path, folder: Path) -> dict[str, bytes]:
    """One load's digests of its views without their teams and of their teams, by layer (and
    team name), recalled from and kept in `folder`."""
    found = loader.load_all(values_dir)
    digests = memo_module.Digests()
    digests.recall(found, folder, True)
    out: dict[str, bytes] = {}
    for view in [found.values.base, *found.values.envs.values()]:
        out[view.key] = digests.rest(view)
        out.update({f"{view.key}/{t.name}": digests.team(t) for t in view.teams})
    digests.keep()
    return out


def test_a_second_load_of_the_same_files_reads_its_teams_digests(
    values_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The teams' digests and the views' without their teams are kept as the views' are: a
    second load of the same files makes none canonical again; an edited team file makes the
    edited team's again (its sources changed), and takes the other team's and the views'
    without teams by their sources, each the same where its team did not change."""
    folder = tmp_path / "views"
    first = parts_digested(values_dir, folder)
    assert sorted(first) == [
        "", "/inference", "/ml", "prod/domestic", "prod/domestic/ml", "prod/main",
        "prod/main/inference", "prod/main/ml",
    ]  # fmt: skip
    made: list[str] = []
    canon = memo_module.Digests.canon

    def spy(self: memo_module.Digests, obj: object) -> object:
        if isinstance(obj, Team):
            made.append(obj.name)
        if isinstance(obj, Fleet):  # a view without its teams: its fleet's values first
            made.append("a view without teams")
        return canon(self, obj)

    monkeypatch.setattr(memo_module.Digests, "canon", spy)
    assert parts_digested(values_dir, folder) == first
    assert made == []
    edit(values_dir, "devices: 2", "devices: 3")
    after = parts_digested(values_dir, folder)
    assert sorted(made) == ["ml", "ml", "ml"]
    assert [k for k in first if after[k] != first[k]] == ["/ml", "prod/domestic/ml"]


def test_a_teams_sources_are_every_file_but_the_teams_and_its_own(values_dir: Path) -> None:
    first = loader.load_all(values_dir).team_sources
    assert sorted(first) == ["inference", "ml"]
    edit(values_dir, "devices: 2", "devices: 3")  # ml's file
    after = loader.load_all(values_dir).team_sources
    assert (after["inference"], after["ml"] != first["ml"]) == (first["inference"], True)
    fleet = values_dir / "fleet.yaml"
    fleet.write_text(fleet.read_text() + "\n")  # a byte of a file every team is made with
    again = loader.load_all(values_dir).team_sources
    assert [again[t] != after[t] for t in ("inference", "ml")] == [True, True]


def test_an_edit_of_a_file_that_is_no_teams_makes_every_teams_digest_again(
    values_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """... and every view's without its teams; so does a team's edit that retires it (its
    namespaces join the views' `retired`)."""
    folder = tmp_path / "views"
    parts_digested(values_dir, folder)
    made = spied_team_digests(monkeypatch)
    rests = spied_rests(monkeypatch)
    fleet = values_dir / "fleet.yaml"
    fleet.write_text(fleet.read_text() + "\n")
    parts_digested(values_dir, folder)
    # the base layer's two teams, prod/domestic's ml, prod/main's two
    assert sorted(made) == ["inference", "inference", "ml", "ml", "ml"]
    assert sorted(rests) == ["", "prod/domestic", "prod/main"]
    made.clear()
    rests.clear()
    inference = values_dir / "teams" / "inference.yaml"
    inference.write_text(inference.read_text() + "enabled: false\n")
    after = parts_digested(values_dir, folder)
    # ml's digests kept; inference's namespaces retired in every view (prod's clusters both)
    assert (made, sorted(rests)) == ([], ["", "prod/domestic", "prod/main"])
    assert "prod/main/inference" not in after


def test_the_tests_refuse_a_stale_teams_digest(
    values_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were a team's object made of more than its sources say (here: sources that never
    change), its kept digest would be stale after an edit: tests/conftest.py compares each
    recalled digest with its canonical form's."""
    folder = tmp_path / "views"
    real_load = loader.load_all

    def unchanging(*args: Any, **kwargs: Any) -> loader.Loaded:
        found = real_load(*args, **kwargs)
        return dataclasses.replace(found, team_sources=dict.fromkeys(found.team_sources, "same"))

    monkeypatch.setattr(loader, "load_all", unchanging)
    parts_digested(values_dir, folder)
    edit(values_dir, "devices: 2", "devices: 3")
    with pytest.raises(AssertionError, match="team 'ml': a stale digest recalled"):
        parts_digested(values_dir, folder)


def test_an_edited_file_makes_every_view_canonical_again_and_keeps_one_entry(
    values_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fingerprint covers every file: one team's edit (it is in both clusters) changes the
    base's and prod/domestic's digests and no other, and the entry of the files before the edit
    is dropped."""
    folder = tmp_path / "views"
    first = digested(values_dir, folder)
    [before] = fingerprints(folder)
    edit(values_dir, "devices: 2", "devices: 12")
    made = spied_view_digests(monkeypatch)
    second = digested(values_dir, folder)
    assert sorted(made) == ["", "prod", "prod/domestic", "prod/main"]
    assert sorted(k for k in first if first[k] != second[k]) == ["", "prod", "prod/domestic"]
    [after] = fingerprints(folder)
    assert after != before
    # Back to the first files: the first digests, made again (their entry was dropped).
    edit(values_dir, "devices: 12", "devices: 2")
    made.clear()
    assert digested(values_dir, folder) == first
    assert sorted(made) == ["", "prod", "prod/domestic", "prod/main"]


def test_the_fingerprint_is_the_files_bytes_paths_and_the_code(
    values_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = loader.load_all(values_dir).fingerprint
    assert len(first) == 64
    assert loader.load_all(values_dir).fingerprint == first
    path = values_dir / ML
    text = path.read_text()
    path.write_text(text + "\n")  # a byte that changes nothing the views hold
    assert loader.load_all(values_dir).fingerprint != first
    path.write_text(text)
    assert loader.load_all(values_dir).fingerprint == first
    # The catalog as read: a release's entry (package data) that the code's digest missed.
    built_in = loader.catalog()
    data, where = built_in["nvidia"]
    monkeypatch.setattr(
        loader, "catalog", lambda: {**built_in, "nvidia": ({**data, "note": 1}, where)}
    )
    assert loader.load_all(values_dir).fingerprint != first
    monkeypatch.setattr(loader, "catalog", lambda: built_in)
    assert loader.load_all(values_dir).fingerprint == first
    monkeypatch.setattr(filecache, "code_digest", lambda: "other code")
    assert loader.load_all(values_dir).fingerprint != first


def test_a_view_made_from_a_loaded_one_is_digested_from_what_it_holds(
    values_dir: Path, tmp_path: Path
) -> None:
    """Only the objects the load made take a kept digest: a copy with another Kubernetes
    version, same layer key, has its own."""
    folder = tmp_path / "views"
    first = digested(values_dir, folder)
    found = loader.load_all(values_dir)
    digests = memo_module.Digests()
    digests.recall(found, folder, True)
    main = found.values.envs["prod/main"]
    other = dataclasses.replace(
        main, fleet=dataclasses.replace(main.fleet, kubernetes_version="1.30")
    )
    assert digests.view(main, ["CAP001"]) == first["prod/main"]
    assert digests.view(other, ["CAP001"]) != first["prod/main"]


def test_a_run_that_may_not_write_keeps_no_digests(values_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "views"
    digested(values_dir, folder, write=False)
    assert not folder.exists()
    first = digested(values_dir, folder)
    blobs = sorted(p.read_bytes() for p in folder.iterdir())
    assert len(blobs) == 2  # the fingerprint's entry, the teams' by their sources
    edit(values_dir, "devices: 2", "devices: 12")
    digested(values_dir, folder, write=False)  # render --check of an edit: the entries stay
    assert sorted(p.read_bytes() for p in folder.iterdir()) == blobs
    edit(values_dir, "devices: 12", "devices: 2")
    assert digested(values_dir, folder, write=False) == first


def test_the_views_of_environments_without_clusters_are_kept_once_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """benchmarks/fleet.py's tree: dev, staging and prod one cluster each, so an environment's
    hub is its cluster's view (one object under both names): four views kept, none made
    canonical again on the next load."""
    values_dir = tmp_path / "values"
    make_values(values_dir, 2)
    folder = tmp_path / "views"
    made = spied_view_digests(monkeypatch)
    first = digested(values_dir, folder)
    assert sorted(first) == ["", "dev", "prod", "staging"]
    assert sorted(made) == ["", "dev", "prod", "staging"]
    made.clear()
    assert digested(values_dir, folder) == first
    assert made == []


def test_teams_of_one_name_in_a_view_take_no_digest_kept_by_their_sources(
    values_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were two teams of a view to share a name (a view made by hand: the loader makes one team
    per file), one key would name both: neither takes a kept digest there; the other views'
    teams do."""
    folder = tmp_path / "views"
    parts_digested(values_dir, folder)
    found = loader.load_all(values_dir)
    base = found.values.base
    ml = next(t for t in base.teams if t.name == "ml")
    twin = dataclasses.replace(ml, owners=("someone@example.com",))
    doubled = dataclasses.replace(base, teams=(*base.teams, twin))
    values = dataclasses.replace(found.values, base=doubled)
    made = spied_team_digests(monkeypatch)
    digests = memo_module.Digests()
    digests.recall(dataclasses.replace(found, values=values), folder, False)
    for view in (doubled, found.values.envs["prod/main"]):
        for team in view.teams:
            digests.team(team)
    assert made == ["inference", "ml", "ml"]  # the base's three, none of prod/main's


def test_a_layer_held_by_two_objects_takes_no_kept_digest(
    values_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were an environment's hub another object than its view under the same layer key, the
    kept digest could be either's: neither takes it."""
    folder = tmp_path / "views"
    digested(values_dir, folder)
    found = loader.load_all(values_dir)
    main = found.values.envs["prod/main"]
    twin = dataclasses.replace(main)  # the same layer key, another object
    values = dataclasses.replace(found.values, hubs={**found.values.hubs, "prod/main": twin})
    digests = memo_module.Digests()
    digests.recall(dataclasses.replace(found, values=values), folder, False)
    made = spied_view_digests(monkeypatch)
    digests.view(main, ["CAP001"])
    digests.view(twin, ["CAP001"])
    digests.view(found.values.envs["prod/domestic"], ["CAP001"])
    assert made == ["prod/main", "prod/main"]


def test_a_load_without_a_fingerprint_or_a_recall_keeps_nothing(
    values_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """keep() without recall() touches nothing; a Loaded made by hand (no fingerprint)
    neither takes nor keeps digests (and its keep, as every one, drops the other entries)."""
    folder = tmp_path / "views"
    digested(values_dir, folder)
    found = loader.load_all(values_dir)
    before = sorted((p.name, p.read_bytes()) for p in folder.iterdir())
    alone = memo_module.Digests()
    alone.view(found.values.base, ["CAP001"])
    alone.keep()
    assert sorted((p.name, p.read_bytes()) for p in folder.iterdir()) == before
    bare = loader.Loaded(found.values, found.findings)
    assert bare.fingerprint == ""
    digests = memo_module.Digests()
    digests.recall(bare, folder, True)
    made = spied_view_digests(monkeypatch)
    digests.view(found.values.envs["prod/main"], ["CAP001"])
    assert made == ["prod/main"]
    digests.keep()
    assert list(folder.iterdir()) == []


def test_the_kept_digests_stay_while_the_files_do(
    values_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loads of the same files, one after another: the entries are written once and kept by
    each (not rewritten), so no load after the first makes a view canonical."""
    folder = tmp_path / "views"
    first = digested(values_dir, folder)
    inodes = sorted(p.stat().st_ino for p in folder.iterdir())
    assert len(inodes) == 2
    made = spied_view_digests(monkeypatch)
    for _ in range(3):
        assert digested(values_dir, folder) == first
    assert made == []
    assert sorted(p.stat().st_ino for p in folder.iterdir()) == inodes


def test_only_the_views_digested_are_kept(
    values_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that digested the base alone keeps the base's digest: the next load takes it and
    makes the others canonical."""
    folder = tmp_path / "views"
    found = loader.load_all(values_dir)
    digests = memo_module.Digests()
    digests.recall(found, folder, True)
    base = digests.view(found.values.base, ["CAP001"])
    digests.keep()
    made = spied_view_digests(monkeypatch)
    again = digested(values_dir, folder)
    assert again[""] == base
    assert sorted(made) == ["prod", "prod/domestic", "prod/main"]


def test_a_teams_digest_and_its_views_without_teams_are_made_once_a_run(
    values_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each asked twice: made canonical once; the same from a parsed load and one read from the
    file cache; and another team, or another view, another digest."""
    parsed = loader.load(values_dir, tmp_path / "values")
    cached = loader.load(values_dir, tmp_path / "values")
    canon = memo_module.Digests.canon
    seen: list[str] = []

    def spy(self: memo_module.Digests, obj: object) -> object:
        seen.append(type(obj).__name__)
        return canon(self, obj)

    monkeypatch.setattr(memo_module.Digests, "canon", spy)
    digests = memo_module.Digests()
    main = parsed.envs["prod/main"]
    [ml] = [t for t in main.teams if t.name == "ml"]
    team = digests.team(ml)
    assert digests.team(ml) == team and seen.count("Team") == 1
    rest = digests.rest(main)
    assert digests.rest(main) == rest and seen.count("Fleet") == 1
    other = memo_module.Digests()
    cached_main = cached.envs["prod/main"]
    assert other.team(next(t for t in cached_main.teams if t.name == "ml")) == team
    assert other.rest(cached_main) == rest
    domestic = parsed.envs["prod/domestic"]
    assert digests.rest(domestic) != rest
    assert digests.team(next(t for t in domestic.teams if t.name == "ml")) != team
