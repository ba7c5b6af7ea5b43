"""The lines a pull request changed in the values tree, as real git reports them."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.delivery.changes import changed_lines
from generator.errors import UsageError
from tests.repos import commit_all, git, init

TEAM = "quota:\n  nvidia: 4\n  ascend: 2\nowners: [a@example.com]\n"


@pytest.fixture
def values_dir(tmp_path: Path) -> Path:
    """A repository whose values tree (in a sub-folder) has one team and one vendor file."""
    repo = init(tmp_path / "fleet")
    values = repo / "values"
    (values / "teams").mkdir(parents=True)
    (values / "teams/a.yaml").write_text(TEAM)
    (values / "vendors").mkdir()
    (values / "vendors/nvidia.yaml").write_text("pools:\n  - {name: a, nodes: [n1, n2]}\n")
    (repo / "README.md").write_text("outside the values tree\n")
    commit_all(repo, "base")
    return values


def test_changed_and_added_lines_are_named_by_the_file_findings_name(values_dir: Path) -> None:
    (values_dir / "teams/a.yaml").write_text(TEAM.replace("nvidia: 4", "nvidia: 8") + "x: 1\n")
    assert changed_lines(values_dir, "HEAD") == {"values/teams/a.yaml": {2, 5}}


def test_committed_changes_count_against_the_base(values_dir: Path) -> None:
    """A pull request's commits: HEAD~1 is its base."""
    (values_dir / "teams/a.yaml").write_text(TEAM.replace("ascend: 2", "ascend: 3"))
    commit_all(values_dir.parent, "raise ascend")
    assert changed_lines(values_dir, "HEAD~1") == {"values/teams/a.yaml": {3}}
    assert changed_lines(values_dir, "HEAD") == {}


def test_a_removal_marks_the_lines_around_it(values_dir: Path) -> None:
    (values_dir / "teams/a.yaml").write_text(TEAM.replace("  ascend: 2\n", ""))
    assert changed_lines(values_dir, "HEAD") == {"values/teams/a.yaml": {2, 3}}


def test_a_new_file_is_changed_on_every_line_and_outside_files_are_not(values_dir: Path) -> None:
    (values_dir / "teams/b.yaml").write_text("quota:\n  nvidia: 2\n")
    (values_dir.parent / "README.md").write_text("changed, but not values\n")
    (values_dir / "vendors/nvidia.yaml").unlink()
    assert changed_lines(values_dir, "HEAD") == {"values/teams/b.yaml": {1, 2}}


def test_a_ref_that_names_no_commit_is_a_usage_error(values_dir: Path) -> None:
    with pytest.raises(UsageError, match="'origin/nope' names no commit"):
        changed_lines(values_dir, "origin/nope")


def test_the_values_folder_may_be_the_current_one(
    values_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--values .`: files are named as the loader names them then (teams/a.yaml)."""
    (values_dir / "teams/a.yaml").write_text(TEAM.replace("nvidia: 4", "nvidia: 8"))
    monkeypatch.chdir(values_dir)
    assert changed_lines(Path("."), "HEAD") == {"teams/a.yaml": {2}}


def test_the_diff_does_not_follow_the_users_git_configuration(values_dir: Path) -> None:
    """No prefixes, rename detection: a renamed team file is a new team, every line of it."""
    repo = values_dir.parent
    git(repo, "config", "diff.noprefix", "true")
    git(repo, "config", "diff.renames", "true")
    (values_dir / "teams/a.yaml").rename(values_dir / "teams/c.yaml")
    git(repo, "add", "-A")
    assert changed_lines(values_dir, "HEAD") == {"values/teams/c.yaml": {1, 2, 3, 4}}


def test_a_branch_is_compared_with_where_it_left_its_base(values_dir: Path) -> None:
    """The base moved on after the branch left it: only the branch's own change counts. (A
    branch name of this repository only: git runs in it.)"""
    repo = values_dir.parent
    git(repo, "branch", "base-of-the-pr")
    git(repo, "checkout", "-q", "-b", "the-pr")
    (values_dir / "teams/a.yaml").write_text(TEAM.replace("ascend: 2", "ascend: 3"))
    commit_all(repo, "the pull request")
    git(repo, "checkout", "-q", "base-of-the-pr")
    (values_dir / "vendors/nvidia.yaml").write_text("pools: []\n")
    commit_all(repo, "the base moves on")
    git(repo, "checkout", "-q", "the-pr")
    assert changed_lines(values_dir, "base-of-the-pr") == {"values/teams/a.yaml": {3}}


def test_a_base_with_no_history_in_common_is_compared_as_it_is(values_dir: Path) -> None:
    repo = values_dir.parent
    git(repo, "checkout", "-q", "--orphan", "unrelated")
    (values_dir / "teams/a.yaml").write_text(TEAM.replace("nvidia: 4", "nvidia: 1"))
    commit_all(repo, "another history")
    git(repo, "checkout", "-q", "-f", "main")
    assert changed_lines(values_dir, "unrelated") == {"values/teams/a.yaml": {2}}


def test_an_untracked_entry_that_cannot_be_read_is_left_to_the_loader(values_dir: Path) -> None:
    """A link to nothing (listed first) is skipped; the file after it still counts, every line
    of it whatever its bytes, the last without its newline too. An ignored file is not one."""
    (values_dir / "teams/a-gone.yaml").symlink_to(values_dir / "nowhere.yaml")
    (values_dir / "teams/b.yaml").write_bytes(b"quota:\n  nvidia: \xff\n  ascend: 1")
    (values_dir / ".gitignore").write_text("*.bak\n")
    (values_dir / "teams/c.yaml.bak").write_text("ignored\n")
    assert changed_lines(values_dir, "HEAD") == {
        "values/teams/b.yaml": {1, 2, 3},
        "values/.gitignore": {1},
    }


def test_a_name_with_a_space_is_named_whole(values_dir: Path) -> None:
    (values_dir / "teams/a b.yaml").write_text("quota: {}\n")
    commit_all(values_dir.parent, "a team with a space in its name")
    (values_dir / "teams/a b.yaml").write_text("quota: {nvidia: 1}\n")
    assert changed_lines(values_dir, "HEAD") == {"values/teams/a b.yaml": {1}}
