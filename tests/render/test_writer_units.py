"""write_tree, recover, interrupted, read_tree and compare on purpose-made small trees: the exact
counts, messages and file trees (folders included) of each change, failure and recovery.

A render killed mid-change is made in a forked child whose fault injection (FAULT_ENV "kill")
SIGKILLs it: what it leaves is what a real kill leaves, without starting an interpreter."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from generator.render import writer as output
from generator.render.writer import Drift, OutputError, Written
from generator.vocab.units import Tree

# Version 1 -> version 2 takes every step: two files change, one goes (with the two folders it
# leaves empty), four come (three in two new folders, one in a folder that is there), one stays as
# it is.
V1 = {
    "base/a/one.yaml": "one: 1\n",
    "base/a/two.yaml": "two: 2\n",
    "base/gone/deep/old.yaml": "old: 0\n",
    "overlays/dev/keep.yaml": "keep: 0\n",
}
V1_FOLDERS = ("base", "base/a", "base/gone", "base/gone/deep", "overlays", "overlays/dev")
V2 = {
    "base/a/one.yaml": "one: 11\n",
    "base/a/two.yaml": "two: 22\n",
    "base/a/three.yaml": "three: 3\n",  # created in a folder that is there
    "base/new/deeper/fresh.yaml": "fresh: 1\n",
    "base/new/deeper/more.yaml": "more: 1\n",
    "base/new/x.yaml": "x: 1\n",
    "overlays/dev/keep.yaml": "keep: 0\n",
}
V2_FOLDERS = ("base", "base/a", "base/new", "base/new/deeper", "overlays", "overlays/dev")
V1_TO_V2 = Written(replaced=2, created=4, removed=1)
# Creating V2 moves base/new in whole (one step "created"), then base/a/three.yaml (the second).


def on_disk(
    files: Tree, folders: tuple[str, ...], **extra: bytes | None
) -> dict[str, bytes | None]:
    """What snapshot() finds for `files` in `folders` (plus `extra` entries by name)."""
    found: dict[str, bytes | None] = {folder: None for folder in folders}
    found.update({rel: text.encode() for rel, text in files.items()})
    found.update(extra)
    return dict(sorted(found.items()))


def snapshot(out: Path) -> dict[str, bytes | None]:
    """Every entry below `out` (hidden ones too): file bytes, None for a folder."""
    found: dict[str, bytes | None] = {}
    for path in sorted(out.rglob("*")):
        rel = path.relative_to(out).as_posix()
        found[rel] = None if path.is_dir() and not path.is_symlink() else path.read_bytes()
    return found


def version_1(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    assert output.write_tree(V1, out) == Written(created=4)
    assert snapshot(out) == on_disk(V1, V1_FOLDERS)
    return out


def staging_folders(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.name.startswith(output.STAGING_PREFIX))


def killed_writing(tree: Tree, out: Path, fault: str) -> Path:
    """What write_tree(tree, out) leaves when SIGKILLed at `fault` ("STEP[:N]"): it runs in a
    forked child. Returns the staging folder the child left."""
    before = set(staging_folders(out))
    pid = os.fork()
    if pid == 0:  # the child: it never returns into pytest
        try:
            os.environ[output.FAULT_ENV] = f"{fault}:kill"
            output.write_tree(tree, out)
        finally:
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status
    (left,) = set(staging_folders(out)) - before
    return out / left


def rolled_back(restored: int, staging: str) -> str:
    return (
        f"an interrupted render was rolled back ({restored} file(s) restored from {staging}); "
        "the output is as it was before it"
    )


# ---- write_tree: the change ----------------------------------------------------------------


def test_write_tree_makes_exactly_the_new_tree_and_counts_each_kind_of_change(
    tmp_path: Path,
) -> None:
    out = tmp_path / "not" / "yet" / "out"  # made with its missing parents
    assert output.write_tree(V1, out) == Written(created=4)
    assert snapshot(out) == on_disk(V1, V1_FOLDERS)
    kept = (out / "overlays/dev/keep.yaml").stat().st_ino
    assert output.write_tree(V2, out) == V1_TO_V2
    # base/gone/deep and base/gone are removed (deepest first), base/new/deeper is made.
    assert snapshot(out) == on_disk(V2, V2_FOLDERS)
    assert (out / "overlays/dev/keep.yaml").stat().st_ino == kept
    assert output.write_tree(V1, out) == Written(replaced=2, created=1, removed=4)
    assert snapshot(out) == on_disk(V1, V1_FOLDERS)


def test_a_new_folder_is_moved_in_whole_and_a_file_in_a_folder_that_is_there_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = version_1(tmp_path)
    renamed: list[str] = []
    real = os.replace

    def replace(src: str | Path, dst: str | Path) -> None:
        renamed.append(Path(dst).relative_to(out).as_posix())
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    assert output.write_tree(V2, out) == V1_TO_V2
    assert snapshot(out) == on_disk(V2, V2_FOLDERS)
    # journal.json into the staging folder, the two changed files, base/new with the three
    # files below it, base/a/three.yaml
    assert [r for r in renamed if not r.startswith(output.STAGING_PREFIX)] == [
        "base/a/one.yaml",
        "base/a/two.yaml",
        "base/new",
        "base/a/three.yaml",
    ]


@pytest.mark.parametrize(
    ("tree", "written"),
    [
        ({**V1, "base/a/one.yaml": "one: 3\n"}, Written(replaced=1)),
        ({**V1, "base/a/three.yaml": "three: 3\n"}, Written(created=1)),
        ({k: v for k, v in V1.items() if k != "base/a/two.yaml"}, Written(removed=1)),
        (V1, Written()),
    ],
    ids=["only-replaced", "only-created", "only-removed", "unchanged"],
)
def test_a_change_of_one_kind_is_made_and_counted(
    tmp_path: Path, tree: Tree, written: Written
) -> None:
    out = version_1(tmp_path)
    assert output.write_tree(tree, out) == written
    assert snapshot(out) == on_disk(tree, V1_FOLDERS)


def test_an_empty_tree_leaves_only_the_empty_output_folders(tmp_path: Path) -> None:
    assert output.write_tree({}, tmp_path / "fresh") == Written()
    assert snapshot(tmp_path / "fresh") == {"base": None, "overlays": None}
    out = version_1(tmp_path)
    assert output.write_tree({}, out) == Written(removed=4)
    assert snapshot(out) == {"base": None, "overlays": None}


# ---- write_tree: failures ------------------------------------------------------------------


def test_a_failure_before_the_commit_restores_the_previous_tree_and_after_it_keeps_the_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = version_1(tmp_path)
    for step, nth in [("journal", 1), ("replaced", 2), ("pruned", 2), ("created", 2)]:
        monkeypatch.setenv(output.FAULT_ENV, f"{step}:{nth}:raise")
        with pytest.raises(OutputError) as failed:
            output.write_tree(V2, out)
        assert str(failed.value) == (
            f"cannot write the output in {out}: injected fault at step {step} #{nth} "
            "while writing; the previous output is restored"
        )
        # Removed folders made again, made folders removed (deepest first), no staging folder.
        assert snapshot(out) == on_disk(V1, V1_FOLDERS), step
    monkeypatch.setenv(output.FAULT_ENV, "committed:raise")
    with pytest.raises(OSError) as raw:
        output.write_tree(V2, out)
    assert type(raw.value) is OSError  # as raised, not an OutputError saying "restored"
    assert raw.value.errno == errno.EIO
    assert str(raw.value) == "[Errno 5] injected fault at step committed #1"
    assert snapshot(out) == on_disk(V2, V2_FOLDERS)  # the change stands, staging folder gone
    monkeypatch.delenv(output.FAULT_ENV)
    assert output.write_tree(V2, out) == Written()
    assert output.write_tree(V1, out) == Written(replaced=2, created=1, removed=4)
    assert snapshot(out) == on_disk(V1, V1_FOLDERS)


def test_a_folder_where_a_new_file_goes_fails_the_change_and_restores_the_previous_tree(
    tmp_path: Path,
) -> None:
    """The roll-back leaves the folder (it is not the render's) and puts everything else back."""
    out = version_1(tmp_path)
    (out / "base/new/x.yaml").mkdir(parents=True)
    with pytest.raises(OutputError) as failed:
        output.write_tree(V2, out)
    assert str(failed.value).startswith(f"cannot write the output in {out}: Is a directory")
    assert str(failed.value).endswith("while writing; the previous output is restored")
    assert snapshot(out) == on_disk(V1, (*V1_FOLDERS, "base/new", "base/new/x.yaml"))
    assert output.recover(out) == ""  # nothing half done is left for the next run


def test_an_output_path_that_is_a_file_is_a_clear_error(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.write_text("not a folder\n")
    with pytest.raises(OutputError) as failed:
        output.write_tree(V1, out)
    assert str(failed.value) == (
        f"cannot write the output in {out}: File exists ({out}) "
        "before anything was written; nothing was changed"
    )
    assert out.read_text() == "not a folder\n"


def _link_failing(monkeypatch: pytest.MonkeyPatch, make: Callable[[str], OSError]) -> None:
    def link(src: str, dst: str, *, follow_symlinks: bool = True) -> None:
        raise make(os.fspath(src))

    monkeypatch.setattr(os, "link", link)


def _errno(code: int) -> Callable[[str], OSError]:
    return lambda src: OSError(code, os.strerror(code), src)


def test_a_link_error_is_reported_with_the_file_and_the_tree_restored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = version_1(tmp_path)
    _link_failing(monkeypatch, _errno(errno.EIO))
    with pytest.raises(OutputError) as failed:
        output.write_tree(V2, out)
    assert str(failed.value) == (
        f"cannot write the output in {out}: Input/output error ({out}/base/a/one.yaml) "
        "while writing; the previous output is restored"
    )
    assert snapshot(out) == on_disk(V1, V1_FOLDERS)


def test_an_error_without_an_errno_is_reported_by_its_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = version_1(tmp_path)
    _link_failing(monkeypatch, lambda src: OSError("no links here"))
    with pytest.raises(OutputError) as failed:
        output.write_tree(V2, out)
    assert str(failed.value) == (
        f"cannot write the output in {out}: no links here "
        "while writing; the previous output is restored"
    )
    assert snapshot(out) == on_disk(V1, V1_FOLDERS)


def test_without_hard_links_the_old_files_are_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = version_1(tmp_path)
    for code in (errno.EPERM, errno.EXDEV, errno.ENOTSUP, errno.EMLINK):
        _link_failing(monkeypatch, _errno(code))
        monkeypatch.setenv(output.FAULT_ENV, "created:2:raise")
        with pytest.raises(OutputError):
            output.write_tree(V2, out)
        assert snapshot(out) == on_disk(V1, V1_FOLDERS), code  # put back from the copies
    monkeypatch.delenv(output.FAULT_ENV)
    assert output.write_tree(V2, out) == V1_TO_V2
    assert snapshot(out) == on_disk(V2, V2_FOLDERS)


def test_a_symbolic_link_replaced_then_rolled_back_is_the_same_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "elsewhere.yaml"
    target.write_text(V1["base/a/two.yaml"])
    monkeypatch.setenv(output.FAULT_ENV, "replaced:2:raise")  # after two.yaml is replaced
    for links in ("hard links", "copies"):
        out = version_1(tmp_path / links)
        (out / "base/a/two.yaml").unlink()
        (out / "base/a/two.yaml").symlink_to(target)
        if links == "copies":
            _link_failing(monkeypatch, _errno(errno.EXDEV))
        with pytest.raises(OutputError):
            output.write_tree(V2, out)
        assert os.readlink(out / "base/a/two.yaml") == str(target), links
        assert target.stat().st_nlink == 1  # the link, not its target, went to staging
        assert snapshot(out) == on_disk(V1, V1_FOLDERS)


# ---- a render killed mid-change: interrupted() and recover() -------------------------------


def test_a_kill_at_the_first_step_leaves_its_staging_folder_and_a_failure_there_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    tree = {"base/x.yaml": "x\n"}
    staging = killed_writing(tree, out, "staged")
    assert snapshot(out) == {
        staging.name: None,
        f"{staging.name}/new": None,
        f"{staging.name}/new/base": None,
        f"{staging.name}/new/base/x.yaml": b"x\n",
    }
    assert output.interrupted(out) == []  # no journal: nothing was changed yet
    assert output.recover(out) == ""  # removed without a word
    assert snapshot(out) == {}
    monkeypatch.setenv(output.FAULT_ENV, "staged:raise")
    with pytest.raises(OutputError) as failed:
        output.write_tree(tree, out)
    assert str(failed.value) == (
        f"cannot write the output in {out}: injected fault at step staged #1 "
        "while writing; the previous output is restored"
    )
    assert snapshot(out) == {}


def test_a_kill_before_the_journal_leaves_a_staging_folder_recover_removes_silently(
    tmp_path: Path,
) -> None:
    out = version_1(tmp_path)
    staging = killed_writing(V2, out, "linked:2")
    assert sorted(p.name for p in staging.iterdir()) == ["new", "old"]
    assert output.interrupted(out) == []  # nothing was changed: nothing to report
    (out / output.STAGING_PREFIX).write_text("a file, not a staging folder\n")
    assert output.recover(out) == ""
    assert not staging.exists()
    assert snapshot(out) == on_disk(
        V1, V1_FOLDERS, **{output.STAGING_PREFIX: b"a file, not a staging folder\n"}
    )


def test_the_journal_of_a_killed_change_records_the_whole_change(tmp_path: Path) -> None:
    out = version_1(tmp_path)
    staging = killed_writing(V2, out, "journal")
    assert json.loads((staging / output.JOURNAL).read_text()) == {
        "format": 1,
        "replace": ["base/a/one.yaml", "base/a/two.yaml"],
        "create": [
            "base/a/three.yaml",
            "base/new/deeper/fresh.yaml",
            "base/new/deeper/more.yaml",
            "base/new/x.yaml",
        ],
        "remove": ["base/gone/deep/old.yaml"],
        "mkdirs": ["base/new", "base/new/deeper"],
        "rmdirs": ["base/gone/deep", "base/gone"],
    }
    assert sorted(p.name for p in staging.iterdir()) == [output.JOURNAL, "new", "old"]


def test_interrupted_names_only_staging_folders_with_a_journal(tmp_path: Path) -> None:
    assert output.interrupted(tmp_path / "missing") == []
    out = version_1(tmp_path)
    assert output.interrupted(out) == []
    staging = killed_writing(V2, out, "journal")
    (out / output.STAGING_PREFIX).write_text("a file\n")
    (out / f"{output.STAGING_PREFIX}stage" / "new").mkdir(parents=True)  # no journal
    before = snapshot(out)
    assert output.interrupted(out) == [staging.name]
    assert snapshot(out) == before  # it only looks


def test_recover_rolls_back_a_change_killed_after_its_folders_changed(tmp_path: Path) -> None:
    out = version_1(tmp_path)
    staging = killed_writing(V2, out, "created")
    half = snapshot(out)
    assert half["base/a/one.yaml"] == b"one: 11\n" and "base/gone" not in half
    assert half["base/new/deeper/fresh.yaml"] == b"fresh: 1\n"
    assert output.recover(out) == rolled_back(3, staging.name)
    # Made folders removed deepest first, removed ones made again with their parents.
    assert snapshot(out) == on_disk(V1, V1_FOLDERS)
    assert output.recover(out) == ""


def test_recover_rolls_back_every_interrupted_change_in_name_order(tmp_path: Path) -> None:
    """Two renders killed at the same point of their changes (running at once)."""
    out = version_1(tmp_path)
    first = killed_writing(V2, out, "journal")
    aside = tmp_path / "aside"
    first.rename(aside)  # out of the way of the second render's own recovery
    second = killed_writing({**V1, "base/a/one.yaml": "one: 3\n"}, out, "journal")
    aside.rename(first)
    counts = {first.name: 3, second.name: 1}
    assert output.recover(out) == "; ".join(rolled_back(counts[n], n) for n in sorted(counts))
    assert snapshot(out) == on_disk(V1, V1_FOLDERS)


def test_write_tree_first_rolls_back_a_killed_change_and_says_so(tmp_path: Path) -> None:
    out = version_1(tmp_path)
    staging = killed_writing(V2, out, "removed")
    written = output.write_tree(V2, out)
    assert written == Written(2, 4, 1, recovered=rolled_back(3, staging.name))
    assert snapshot(out) == on_disk(V2, V2_FOLDERS)


def test_recover_without_an_output_folder_makes_nothing(tmp_path: Path) -> None:
    assert output.recover(tmp_path / "missing") == ""
    assert not (tmp_path / "missing").exists()


# ---- read_tree and compare -----------------------------------------------------------------


def test_read_tree_reads_text_and_names_binary_files_in_path_order(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "overlays/dev").mkdir(parents=True)
    (out / "base/z").mkdir(parents=True)
    (out / "base/z/b.yaml").write_text("b: é\n", encoding="utf-8")
    (out / "base/a.bin").write_bytes(b"\xff\xfe\x00")
    (out / "overlays/dev/k.yaml").write_text("k: 1\n")
    (out / "elsewhere.yaml").write_text("not output\n")
    tree = output.read_tree(out)
    assert list(tree.items()) == [
        ("base/a.bin", "<binary file>"),
        ("base/z/b.yaml", "b: é\n"),
        ("overlays/dev/k.yaml", "k: 1\n"),
    ]


def test_read_tree_reads_deep_folders_and_linked_files_but_not_linked_folders(
    tmp_path: Path,
) -> None:
    """As os.walk finds them: a link to a file is read through, a link to a folder is not
    followed (it could loop, or reach outside the output)."""
    out = tmp_path / "out"
    (out / "overlays/prod/main/team-ml/patches").mkdir(parents=True)
    (out / "overlays/prod/main/team-ml/patches/p.yaml").write_text("p: 1\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/x.yaml").write_text("x: 1\n")
    (out / "base").mkdir()
    (out / "base/linked.yaml").symlink_to(tmp_path / "outside/x.yaml")
    (out / "base/folder").symlink_to(tmp_path / "outside")
    assert output.read_tree(out) == {
        "base/linked.yaml": "x: 1\n",
        "overlays/prod/main/team-ml/patches/p.yaml": "p: 1\n",
    }


def test_read_tree_of_an_output_without_its_folders_is_empty(tmp_path: Path) -> None:
    (tmp_path / "base").write_text("a file, not the folder\n")
    assert output.read_tree(tmp_path) == {}
    assert output.read_tree(tmp_path / "missing") == {}


COMMITTED = {
    "base/a.yaml": "1\n2\n3\n4\nX\n6\n7\n8\n9\n",
    "base/old.yaml": "old\n",
    "base/same.yaml": "same\n",
}
RENDERED = {
    "base/a.yaml": "1\n2\n3\n4\n5\n6\n7\n8\n9\n",
    "base/new.yaml": "new\n",
    "base/same.yaml": "same\n",
}


def test_compare_names_each_drift_and_diffs_the_changed_files() -> None:
    drift = output.compare(RENDERED, COMMITTED)
    assert drift == Drift(
        changed=["base/a.yaml"],
        missing=["base/new.yaml"],
        stale=["base/old.yaml"],
        diffs={
            "base/a.yaml": "--- committed/base/a.yaml\n+++ rendered/base/a.yaml\n"
            "@@ -3,5 +3,5 @@\n 3\n 4\n-X\n+5\n 6\n 7\n"
        },
    )
    assert not drift.clean
    assert output.compare(RENDERED, COMMITTED, context=0).diffs == {
        "base/a.yaml": "--- committed/base/a.yaml\n+++ rendered/base/a.yaml\n@@ -5 +5 @@\n-X\n+5\n"
    }
    assert output.compare(RENDERED, dict(RENDERED)) == Drift()
    assert output.compare(RENDERED, dict(RENDERED)).clean


def test_compare_reads_only_the_paths_it_is_given() -> None:
    """validate's drift compares only its environment's files (`only`): a changed file outside
    them is no drift."""
    drift = output.compare(RENDERED, COMMITTED, only=lambda rel: rel != "base/a.yaml")
    assert drift == Drift(missing=["base/new.yaml"], stale=["base/old.yaml"])


def test_known_sums_hold_where_the_tree_holds_the_rendered_text_itself() -> None:
    """A kept digest is of the rendered text: it holds for the rendered tree whole, and in
    `render --env`'s tree only where that tree holds the rendered text object itself (another
    environment's committed text, even an equal one, is digested as read)."""
    rendered = {"base/a.yaml": "a\n", "base/b.yaml": "b\n"}
    sums = {"base/a.yaml": b"A", "base/b.yaml": b"B", "base/c.yaml": b"C"}
    assert output.known_sums(rendered, rendered, sums) == sums
    committed_b = "".join(["b", "\n"])  # equal to the rendered text, another object
    tree = {"base/a.yaml": rendered["base/a.yaml"], "base/b.yaml": committed_b}
    assert output.known_sums(tree, rendered, sums) == {"base/a.yaml": b"A"}


def test_compare_of_a_tree_read_back_from_disk_is_clean(tmp_path: Path) -> None:
    out = version_1(tmp_path)
    assert output.compare(V1, output.read_tree(out)) == Drift()
    shutil.rmtree(out / "base/gone")
    assert output.compare(V1, output.read_tree(out)) == Drift(missing=["base/gone/deep/old.yaml"])
