"""The committed tree's stat index: unchanged files are known without reading them, and no hand
edit hides behind it, whatever it keeps of the file's stat (size, mtime)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from generator.render import statwalk, treeindex
from generator.render.stage import RenderOptions, render
from generator.render.writer import write_tree
from generator.validate.run import ValidateOptions, validate
from tests.fixtures import two_teams

TREE = {
    "base/a/kustomization.yaml": "resources:\n- cm.yaml\n",
    "base/a/cm.yaml": "kind: ConfigMap\nmetadata:\n  name: a\n",
    "overlays/dev/a/kustomization.yaml": "resources:\n- ../../../base/a\n",
}


def later(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scans from now on start 10 s later than the clock says: the files written so far are
    older than the racy margin and may be trusted by their stat."""
    monkeypatch.setattr(treeindex, "now_ns", lambda: time.time_ns() + 10_000_000_000)


def after_a_tick(path: Path) -> None:
    """Return once the filesystem's clock has moved past `path`'s ctime, so that a change made
    now gets another ctime than the one `path` has (timestamps are coarse: a kernel tick)."""
    before = path.stat().st_ctime_ns
    probe = path.parent / ".tick"
    while True:
        probe.write_bytes(b"")
        if probe.stat().st_ctime_ns > before:
            probe.unlink()
            return


def test_files_whose_stat_did_not_change_are_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, index = tmp_path / "out", tmp_path / "cache" / "index"
    write_tree(TREE, out, index)
    assert treeindex.scan(out, index).read == []  # nothing indexed yet: the files were written
    first = treeindex.scan(out, index)
    assert sorted(first) == sorted(TREE)
    assert (
        first.digest("base/a/cm.yaml") == hashlib.sha256(TREE["base/a/cm.yaml"].encode()).digest()
    )
    assert first.read == ["base/a/cm.yaml"]
    later(monkeypatch)
    # Read them all, then remember them: a scan 10 s on trusts them.
    scanned = treeindex.scan(out, index)
    for rel in scanned:
        scanned.digest(rel)
    treeindex.save(scanned, index)
    again = treeindex.scan(out, index)
    assert {rel: again.digest(rel) for rel in again} == {
        rel: hashlib.sha256(text.encode()).digest() for rel, text in TREE.items()
    }
    assert again.read == []
    assert again["base/a/cm.yaml"] == TREE["base/a/cm.yaml"]  # read when asked for
    assert again.read == ["base/a/cm.yaml"]
    # Nothing learnt: the index is not written again (a new file would be a new inode).
    inode = index.stat().st_ino
    treeindex.save(again, index)
    assert index.stat().st_ino == inode
    (out / "base/a/new.yaml").write_text("new")
    grown = treeindex.scan(out, index)
    grown.digest("base/a/new.yaml")
    treeindex.save(grown, index)
    assert index.stat().st_ino != inode


def test_a_scan_that_found_the_index_as_it_was_is_not_saved_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exactly the index's files, each with its stat then: saved as it is (marked used), unless
    some are dropped (written since); a file gone or touched is a change."""
    out, index = tmp_path / "out", tmp_path / "cache" / "index"
    write_tree(TREE, out, index)
    later(monkeypatch)
    scanned = treeindex.scan(out, index)
    assert not scanned.unchanged  # the index knew none of them (too young when written)
    for rel in scanned:
        scanned.digest(rel)
    treeindex.save(scanned, index)
    again = treeindex.scan(out, index)
    assert again.unchanged and again.read == []
    inode = index.stat().st_ino
    treeindex.save(again, index)
    assert index.stat().st_ino == inode
    treeindex.save(again, index, drop=frozenset({"base/a/cm.yaml"}))
    assert index.stat().st_ino != inode
    assert not treeindex.scan(out, index).unchanged  # the index lost that file
    # A file the index does not hold, not read since: nothing learnt, the index not rewritten.
    unread = treeindex.scan(out, index)
    assert not unread.unchanged
    inode = index.stat().st_ino
    treeindex.save(unread, index)
    assert index.stat().st_ino == inode
    relearnt = treeindex.scan(out, index)
    relearnt.digest("base/a/cm.yaml")  # read again, and kept
    treeindex.save(relearnt, index)
    assert treeindex.scan(out, index).unchanged
    (out / "base/a/cm.yaml").unlink()
    assert not treeindex.scan(out, index).unchanged


def test_files_changed_within_the_racy_margin_are_not_remembered(tmp_path: Path) -> None:
    out, index = tmp_path / "out", tmp_path / "index"
    write_tree(TREE, out, index)
    scanned = treeindex.scan(out, index)
    for rel in scanned:
        scanned.digest(rel)
    treeindex.save(scanned, index)  # the files are younger than 2 s: none is kept
    again = treeindex.scan(out, index)
    for rel in again:
        again.digest(rel)
    assert sorted(again.read) == sorted(TREE)


def test_a_rewritten_file_is_not_written_again_only_when_its_bytes_are_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, index = tmp_path / "out", tmp_path / "index"
    write_tree(TREE, out, index)
    later(monkeypatch)
    write_tree(TREE, out, index)  # reads them all once, remembers them
    changed = {**TREE, "base/a/cm.yaml": TREE["base/a/cm.yaml"].replace("a\n", "b\n")}
    after_a_tick(out / "base/a/cm.yaml")
    (out / "base/a/cm.yaml").write_text(changed["base/a/cm.yaml"])  # same size, by hand
    written = write_tree(TREE, out, index)
    assert (written.replaced, written.created, written.removed) == (1, 0, 0)
    assert (out / "base/a/cm.yaml").read_text() == TREE["base/a/cm.yaml"]


def hand_edit(path: Path, how: str) -> None:
    """Swap two letters of the file: its size stays; `how` says what else is kept."""
    stat = path.stat()
    text = path.read_text()
    at = text.index("nvidia")
    path.write_text(text[:at] + "nvdiia" + text[at + 6 :])
    if how == "mtime put back":
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    elif how == "touch -d back":
        when = f"@{stat.st_mtime_ns // 10**9}.{stat.st_mtime_ns % 10**9:09d}"
        subprocess.run(["touch", "-d", when, str(path)], check=True)
    assert path.stat().st_size == stat.st_size
    if how != "size kept":
        assert path.stat().st_mtime_ns == stat.st_mtime_ns


EDITED = "overlays/prod/device-plugins/kustomization.yaml"


@pytest.mark.parametrize("how", ["size kept", "mtime put back", "touch -d back"])
def test_render_check_catches_a_hand_edit_the_index_knew_the_file_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    values, out, cache = two_teams(tmp_path), tmp_path / "out", tmp_path / "cache"
    render(RenderOptions(values, out, cache_dir=cache))
    later(monkeypatch)
    render(RenderOptions(values, out, cache_dir=cache))  # reads the files written, keeps them
    index = treeindex.index_file(cache, out)
    assert treeindex.scan(out, index).read == []
    assert (out / EDITED).read_text().count("nvidia") >= 1
    after_a_tick(out / EDITED)
    hand_edit(out / EDITED, how)
    drift = render(RenderOptions(values, out, check=True, cache_dir=cache)).drift
    assert drift is not None
    assert (drift.changed, drift.missing, drift.stale) == ([EDITED], [], [])


def test_render_check_catches_a_hand_edit_right_after_the_render(tmp_path: Path) -> None:
    """The racy case: the edit may share the render's timestamps (same size, same tick)."""
    values, out, cache = two_teams(tmp_path), tmp_path / "out", tmp_path / "cache"
    render(RenderOptions(values, out, cache_dir=cache))
    render(RenderOptions(values, out, cache_dir=cache))
    hand_edit(out / EDITED, "mtime put back")
    drift = render(RenderOptions(values, out, check=True, cache_dir=cache)).drift
    assert drift is not None
    assert drift.changed == [EDITED]


def test_validate_reports_a_hand_edit_with_its_mtime_put_back_as_drift(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values, out, cache = two_teams(tmp_path), tmp_path / "out", tmp_path / "cache"
    render(RenderOptions(values, out, cache_dir=cache))
    later(monkeypatch)
    opts = ValidateOptions(values, cache_dir=cache, committed=out)
    assert [f.code for f in validate(opts).findings if f.code.startswith("DRIFT")] == []
    assert treeindex.scan(out, treeindex.index_file(cache, out)).read == []
    after_a_tick(out / EDITED)
    hand_edit(out / EDITED, "mtime put back")
    drifts = [f for f in validate(opts).findings if f.code == "DRIFT001"]
    assert [(f.location.file, f.location.line) for f in drifts] == [(EDITED, 7)]


def test_the_indexes_of_the_four_output_folders_used_last_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    later(monkeypatch)
    cache = tmp_path / "cache"
    outs = [tmp_path / f"out{k}" for k in range(6)]
    indexes = [treeindex.index_file(cache, out) for out in outs]
    assert all(index is not None for index in indexes)
    paths = [index for index in indexes if index is not None]
    for k, (out, index) in enumerate(zip(outs, paths, strict=True)):
        write_tree(TREE, out, index)
        write_tree(TREE, out, index)  # nothing to write: the index is saved
        os.utime(index, ns=(k * 10**9, k * 10**9))  # used at second k
    write_tree(TREE, outs[0], paths[0])  # out0's index learns its files
    os.utime(paths[0], ns=(0, 0))
    inode = paths[0].stat().st_ino
    # out0 used again: its index, unchanged, is not rewritten but marked used; the oldest go
    write_tree(TREE, outs[0], paths[0])
    assert paths[0].stat().st_ino == inode
    assert sorted(p.name for p in (cache / "tree-index").iterdir()) == sorted(
        p.name for p in (paths[0], paths[3], paths[4], paths[5])
    )
    # a file of another name in the folder is not an index: left alone
    (cache / "tree-index" / "notes.marshal").write_text("")
    os.utime(cache / "tree-index" / "notes.marshal", ns=(0, 0))
    write_tree(TREE, outs[1], paths[1])
    assert (cache / "tree-index" / "notes.marshal").exists()
    assert paths[0].exists() and not paths[3].exists()


# ---- the walk in a child process (render/statwalk.py, treeindex.Walk) ----------------------


def _odd_tree(tmp_path: Path) -> Path:
    """A tree with what a walk must treat each its own way: nested folders, a link to a file
    (read through), a link to a folder (not followed), traffic/, and a folder it never reads."""
    out = tmp_path / "out"
    write_tree({**TREE, "overlays/dev/a/patches/p.yaml": "p\n"}, out)
    (out / "traffic").mkdir()
    (out / "traffic" / "prod.json").write_text("{}\n")
    (out / "overlays" / "dev" / "link.yaml").symlink_to(out / "base" / "a" / "cm.yaml")
    (out / "overlays" / "dev" / "folder-link").symlink_to(out / "base" / "a")
    (out / "docs").mkdir()
    (out / "docs" / "x.md").write_text("x\n")
    return out


def test_a_child_process_walks_the_tree_as_this_process_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _odd_tree(tmp_path)
    here = treeindex._walk

    def refused(root: Path) -> dict[str, statwalk.Stat]:
        raise AssertionError("walked in this process")

    monkeypatch.setattr(treeindex, "_walk", refused)
    with treeindex.Walk(out) as walk:
        stats = walk.stats()
    monkeypatch.setattr(treeindex, "_walk", here)
    assert walk._child is not None and walk._child.returncode == 0  # the child walked it
    assert list(stats) == [
        "base/a/cm.yaml",
        "base/a/kustomization.yaml",
        "overlays/dev/a/kustomization.yaml",
        "overlays/dev/a/patches/p.yaml",
        "overlays/dev/link.yaml",
        "traffic/prod.json",
    ]
    assert stats == treeindex._walk(out)
    cm = os.stat(out / "base/a/cm.yaml")
    assert stats["overlays/dev/link.yaml"] == (
        cm.st_size,
        cm.st_mtime_ns,
        cm.st_ctime_ns,
        cm.st_ino,
        cm.st_dev,
    )
    assert walk.stats() is stats  # taken once


def test_a_scan_takes_the_walk_and_the_time_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _odd_tree(tmp_path)
    monkeypatch.setattr(treeindex, "now_ns", lambda: 1234)
    with treeindex.Walk(out) as walk:
        monkeypatch.setattr(treeindex, "now_ns", lambda: 5678)
        walk.stats()
        (out / "base" / "a" / "late.yaml").write_text("after the walk\n")
        scanned = treeindex.scan(out, None, walk)
    # what the walk saw, judged racy against its start, not the scan's
    assert scanned.started == 1234
    assert "base/a/late.yaml" not in scanned
    assert scanned.stats is walk.stats()
    assert treeindex.scan(out, None).started == 5678


@pytest.mark.parametrize("python", ["/nonexistent/python3", "/bin/false"])
def test_a_child_that_cannot_walk_means_the_walk_is_done_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, python: str
) -> None:
    out = _odd_tree(tmp_path)
    monkeypatch.setattr(sys, "executable", python)
    walked: list[Path] = []
    real = treeindex._walk

    def walk_here(root: Path) -> dict[str, statwalk.Stat]:
        walked.append(root)
        return real(root)

    monkeypatch.setattr(treeindex, "_walk", walk_here)
    with treeindex.Walk(out) as walk:
        assert walk.stats() == real(out)
    assert walked == [out]


def test_a_walk_never_taken_ends_its_child(tmp_path: Path) -> None:
    walk = treeindex.Walk(_odd_tree(tmp_path))
    walk.close()
    assert walk._child is not None and walk._child.returncode is not None


@pytest.mark.parametrize(("recovered", "used"), [("", True), ("rolled back", False)])
def test_write_tree_walks_again_when_it_rolled_back_an_interrupted_render(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recovered: str, used: bool
) -> None:
    from generator.render import writer

    out = _odd_tree(tmp_path)
    given: list[treeindex.Walk | None] = []
    real = treeindex.scan
    monkeypatch.setattr(writer, "recover", lambda _: recovered)

    def scan(root: Path, index: Path | None, walk: treeindex.Walk | None = None) -> Any:
        given.append(walk)
        return real(root, index)

    monkeypatch.setattr(treeindex, "scan", scan)
    with treeindex.Walk(out) as walk:
        write_tree(TREE, out, None, walk=walk)
    assert given == [walk if used else None]
