"""Each unit's key kept with what it depends on (generator/validate/planmemo.py): a run works out
again only the keys of the units a change reaches, and every kept key equals the one worked out
afresh (cache.unit_key over cache.UnitInputs, tested in test_cache.py)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

from generator.validate import cache, planmemo
from generator.values.filecache import code_digest

TREE = {
    "base/a/kustomization.yaml": "resources:\n- x.yaml\n- ../b\n",
    "base/a/x.yaml": "x",
    "base/b/kustomization.yaml": "resources:\n- y.yaml\n",
    "base/b/y.yaml": "y",
    "base/c/kustomization.yaml": "resources:\n- z.yaml\n",
    "base/c/z.yaml": "z",
    "overlays/e/u/kustomization.yaml": (
        "resources:\n- ../../../base/a\n- missing.yaml\npatches:\n- path: patches/p.yaml\n"
        "- path: '../shared.yaml'\n- path: ../later.yaml\n- path: ../later-folder\n"
    ),
    "overlays/e/u/patches/p.yaml": "p",
    "overlays/e/shared.yaml": "s",
    "overlays/e/v/kustomization.yaml": "resources:\n- ../../../base/c\n",
    "overlays/e/w/kustomization.yaml": "resources:\n- ../../../base/b\n",
}
UNITS = ("overlays/e/u", "overlays/e/v", "overlays/e/w")


def _digest_of(tree: dict[str, str]) -> Callable[[str], bytes]:
    return lambda rel: hashlib.sha256(tree[rel].encode()).digest()


class Walked(planmemo.Reads):
    """Reads that note each unit it walks."""

    def __init__(self, tree: dict[str, str], cache_dir: Path | None) -> None:
        super().__init__(tree, _digest_of(tree), cache_dir)
        self.walked: list[str] = []

    def reach(self, unit: str) -> tuple[list[str], tuple[str, ...]]:
        self.walked.append(unit)
        return super().reach(unit)


def _fresh(tree: dict[str, str], salt: str = "s1") -> dict[str, str]:
    digest_of = _digest_of(tree)
    walk = cache.UnitInputs(tree, digest_of)
    return {unit: cache.unit_key(digest_of, unit, salt, walk(unit)) for unit in UNITS}


def _run(
    tree: dict[str, str], cache_dir: Path | None, salts: dict[str, str] | None = None
) -> tuple[dict[str, str], list[str]]:
    """(the keys, the units walked) of a run keeping its memo in `cache_dir`/cache/validate (a folder
    made with its parents when first saved)."""
    cache_dir = cache_dir / "cache" / "validate" if cache_dir is not None else None
    reads = Walked(tree, cache_dir)
    given = salts if salts is not None else dict.fromkeys(UNITS, "s1")
    keys = planmemo.unit_keys(cache_dir, tree, reads.digest_of, given, reads)
    return keys, sorted(reads.walked)


def test_an_unchanged_tree_walks_no_unit_and_keeps_every_key(tmp_path: Path) -> None:
    first, walked = _run(TREE, tmp_path)
    assert walked == list(UNITS)
    assert first == _fresh(TREE)
    again, walked = _run(dict(TREE), tmp_path)
    assert walked == []
    assert again == first
    # What depends on what, as the memo holds it: each reached folder, and each named path
    # outside them, there or not ("" for one that climbs out is never watched).
    assert planmemo._load(tmp_path / "cache" / "validate")[2]["overlays/e/u"][2] == (
        "base/a",
        "base/b",
        "overlays/e/later-folder",
        "overlays/e/later.yaml",
        "overlays/e/shared.yaml",
        "overlays/e/u",
    )


@pytest.mark.parametrize(
    ("change", "walked"),
    [
        # a file of a base that one unit reaches through another base
        ({"base/b/y.yaml": "y2"}, ["overlays/e/u", "overlays/e/w"]),
        # a file added below a reached folder (every file below it is an input)
        ({"base/c/new.yaml": "n"}, ["overlays/e/v"]),
        # a named file outside the unit's folders
        ({"overlays/e/shared.yaml": "s2"}, ["overlays/e/u"]),
        # a named path that was not there comes: a file, then a kustomization folder
        ({"overlays/e/later.yaml": "l"}, ["overlays/e/u"]),
        ({"overlays/e/later-folder/kustomization.yaml": "resources: []\n"}, ["overlays/e/u"]),
        # a patch below the unit's own folder
        ({"overlays/e/u/patches/p.yaml": "p2"}, ["overlays/e/u"]),
        # the unit's kustomization names another base
        (
            {"overlays/e/w/kustomization.yaml": "resources:\n- ../../../base/c\n"},
            ["overlays/e/w"],
        ),
        # a file no unit reads
        ({"overlays/e/readme.txt": "r"}, []),
    ],
)
def test_a_change_walks_again_only_the_units_it_reaches(
    tmp_path: Path, change: dict[str, str], walked: list[str]
) -> None:
    _run(TREE, tmp_path)
    changed = {**TREE, **change}
    keys, again = _run(changed, tmp_path)
    assert again == walked
    assert keys == _fresh(changed)
    # and the memo saved after the change is the changed tree's
    assert _run(dict(changed), tmp_path) == (keys, [])


def test_a_file_gone_walks_again_the_units_that_read_it(tmp_path: Path) -> None:
    _run(TREE, tmp_path)
    gone = {rel: text for rel, text in TREE.items() if rel != "base/a/x.yaml"}
    keys, walked = _run(gone, tmp_path)
    assert walked == ["overlays/e/u"]
    assert keys == _fresh(gone)
    assert keys["overlays/e/v"] == _fresh(TREE)["overlays/e/v"]


def test_a_unit_of_another_salt_is_keyed_again(tmp_path: Path) -> None:
    _run(TREE, tmp_path)
    salts = {"overlays/e/u": "s1", "overlays/e/v": "s2", "overlays/e/w": "s1"}
    keys, walked = _run(TREE, tmp_path, salts)
    assert walked == ["overlays/e/v"]
    assert keys["overlays/e/v"] == _fresh(TREE, "s2")["overlays/e/v"]
    assert keys["overlays/e/v"] != _fresh(TREE)["overlays/e/v"]


def test_each_unit_keyed_again_is_given_its_last_key_made_with_the_same_salt(
    tmp_path: Path,
) -> None:
    """run.known_valid reuses the last result's verdicts per document: only one made with the
    same tools (salt); a unit the memo never held, or held with another salt, has none."""
    cache_dir = tmp_path / "cache" / "validate"
    first, _ = _run(TREE, tmp_path)
    changed = {**TREE, "base/b/y.yaml": "y2", "overlays/e/new/kustomization.yaml": ""}
    previous: dict[str, str] = {}
    salts = {"overlays/e/u": "s1", "overlays/e/v": "s1", "overlays/e/w": "s2"}
    salts["overlays/e/new"] = "s1"
    keys = planmemo.unit_keys(
        cache_dir, changed, _digest_of(changed), salts, Walked(changed, None), previous
    )
    # u: the edit reached it, same salt; w: reached too, but another salt; v: kept; new: none
    assert previous == {"overlays/e/u": first["overlays/e/u"]}
    assert keys["overlays/e/u"] != first["overlays/e/u"]


def test_a_run_of_some_units_keeps_the_others_entries(tmp_path: Path) -> None:
    _run(TREE, tmp_path)
    # a shard's run, after an edit that reaches u and w: v's entry is still good
    changed = {**TREE, "base/b/y.yaml": "y2"}
    keys, walked = _run(changed, tmp_path, {"overlays/e/u": "s1"})
    assert (keys, walked) == ({"overlays/e/u": _fresh(changed)["overlays/e/u"]}, ["overlays/e/u"])
    # the next whole run walks w (the edit reached it, its entry went), not v
    keys, walked = _run(changed, tmp_path)
    assert walked == ["overlays/e/w"]
    assert keys == _fresh(changed)


@pytest.mark.parametrize("memo", [b"", b"not marshal", None])
def test_a_memo_that_cannot_be_used_means_every_unit_is_walked(
    tmp_path: Path, memo: bytes | None
) -> None:
    _run(TREE, tmp_path)
    path = tmp_path / "cache" / "validate" / planmemo.FILE
    if memo is None:  # a memo of another format
        import marshal

        path.write_bytes(marshal.dumps({"format": "unit-plans-0", "paths": "", "sums": b""}))
    else:
        path.write_bytes(memo)
    keys, walked = _run(TREE, tmp_path)
    assert walked == list(UNITS)
    assert keys == _fresh(TREE)


def test_without_a_cache_folder_every_unit_is_walked_each_run() -> None:
    assert _run(TREE, None) == (_fresh(TREE), list(UNITS))
    assert _run(TREE, None)[1] == list(UNITS)


def test_inputs_are_walked_once_when_first_asked_for(tmp_path: Path) -> None:
    reads = Walked(TREE, tmp_path)
    assert reads["overlays/e/v"] == [
        "base/c/kustomization.yaml",
        "base/c/z.yaml",
        "overlays/e/v/kustomization.yaml",
    ]
    assert reads["overlays/e/v"] is reads["overlays/e/v"]
    reads.save()
    assert set(cache.load_refs(tmp_path)) == {"base/c", "overlays/e/v"}
    unused = Walked(TREE, tmp_path / "other")
    unused.save()  # nothing walked: nothing written
    assert not (tmp_path / "other").exists()


def test_the_memo_is_written_again_only_when_the_tree_or_a_key_changed(tmp_path: Path) -> None:
    memo = tmp_path / "cache" / "validate" / planmemo.FILE
    _run(TREE, tmp_path)
    first = memo.stat().st_ino
    _run(dict(TREE), tmp_path)
    assert memo.stat().st_ino == first  # nothing changed: not rewritten
    _run({**TREE, "overlays/e/readme.txt": "r"}, tmp_path)  # a path no unit reads came
    second = memo.stat().st_ino
    assert second != first
    _run({**TREE, "overlays/e/readme.txt": "r2"}, tmp_path)  # its bytes changed
    third = memo.stat().st_ino
    assert third != second
    # another salt for one unit: its key and entry change, the tree does not
    _run(
        {**TREE, "overlays/e/readme.txt": "r2"},
        tmp_path,
        {**dict.fromkeys(UNITS, "s1"), "overlays/e/v": "s2"},
    )
    assert memo.stat().st_ino != third


def test_kept_says_whether_this_code_saved_the_memo_which_is_marked_again_otherwise(
    tmp_path: Path,
) -> None:
    """validate/run.py loads the values first where planmemo.kept: this generator's code saved
    the memo there (the units' results and the parsed values most likely kept too)."""
    folder = tmp_path / "cache" / "validate"
    assert not planmemo.kept(folder)  # nothing saved yet
    assert not planmemo.kept(None)
    _run(TREE, tmp_path)
    assert planmemo.kept(folder)
    assert (folder / planmemo.CODE).read_text() == code_digest()
    # Marked by another code (the memo then had nothing to keep): not kept; the next run,
    # though nothing changed, saves the memo again with this code's mark.
    (folder / planmemo.CODE).write_text("0" * 64)
    assert not planmemo.kept(folder)
    memo = folder / planmemo.FILE
    before = memo.stat().st_ino
    assert _run(dict(TREE), tmp_path) == (_fresh(TREE), [])
    assert planmemo.kept(folder) and memo.stat().st_ino != before
    (folder / planmemo.CODE).write_bytes(b"\xff")  # unreadable as text
    assert not planmemo.kept(folder)


class Unread(dict[str, str]):
    """A tree whose kustomizations' texts must not be read (their digests are known)."""

    def __getitem__(self, rel: str) -> str:
        if rel.endswith("/kustomization.yaml"):
            raise AssertionError(f"{rel} read")
        return super().__getitem__(rel)


def test_a_walk_takes_the_kustomizations_named_paths_kept_by_their_digest(tmp_path: Path) -> None:
    first = Walked(TREE, tmp_path)
    first.reach("overlays/e/u")
    first.save()
    tree = Unread(TREE)
    again = planmemo.Reads(tree, _digest_of(TREE), tmp_path)
    assert again.reach("overlays/e/u") == first.reach("overlays/e/u")
