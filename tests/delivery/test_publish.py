"""`render.py publish` with real git: a local bare repository is the GitOps remote."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from generator.builders import fleet as builders
from generator.builders.common import Component, metadata
from generator.values.model import FleetView
from tests import repos
from tests.fixtures import TWO_TEAMS_STAGING, cli_streams, two_teams


def write_in(values_dir: Path, rel: str, text: str) -> None:
    (values_dir / rel).write_text(text, encoding="utf-8")


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small fleet (fixtures.two_teams: 6 units an environment) committed in its own
    repository (the source of a publish)."""
    values_dir = two_teams(tmp_path)
    for key, value in repos.IDENTITY.items():
        monkeypatch.setenv(key, value)
    repo = repos.init(values_dir.parent)
    (repo / ".gitignore").write_text(".cache/\n")
    repos.commit_all(repo, "values")
    return values_dir


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    return repos.bare(tmp_path / "gitops.git")


def publish(values_dir: Path, remote: Path, *args: str) -> tuple[int, str, str]:
    return cli_streams(
        "publish", "--values", str(values_dir), "--repo", str(remote), "--branch", "main", *args
    )


def commit_values(values_dir: Path, message: str = "change") -> str:
    return repos.commit_all(values_dir.parent, message)


def test_publish_commits_the_render_once_and_names_its_source(fleet: Path, remote: Path) -> None:
    source = repos.git(fleet.parent, "rev-parse", "HEAD")
    code, out, err = publish(fleet, remote)
    assert code == 0, err
    assert f"render of {source[:12]}, 12 units changed" in out
    assert repos.log(remote, "main") == [
        f"accel-gitops: render {source[:12]} (12 units changed)",
        "initial",
    ]
    body = repos.git(remote, "log", "-1", "--format=%B", "main")
    assert f"at {source}." in body and f"Source-Commit: {source}" in body
    assert "Changed units (12):\n- overlays/prod/argocd\n" in body
    files = repos.git(remote, "ls-tree", "-r", "--name-only", "main").splitlines()
    assert "README.md" in files  # what else the repository holds stays
    assert "overlays/prod/team-ml-team/kustomization.yaml" in files
    assert any(f.startswith("base/teams/ml-team/") for f in files)
    # The published tree is exactly the render.
    assert cli_streams("render", "--values", str(fleet))[0] == 0
    for rel in (
        "overlays/staging/team-ml-team/kustomization.yaml",
        "base/teams/ml-team/kustomization.yaml",
    ):
        assert repos.git(remote, "show", f"main:{rel}") + "\n" == (fleet.parent / rel).read_text()

    # Same input again: no commit.
    code, out, err = publish(fleet, remote)
    assert code == 0, err
    assert f"main of {remote} already has the render of {source[:12]}" in out
    assert len(repos.log(remote, "main")) == 2


def test_second_publish_names_only_the_units_that_changed(fleet: Path, remote: Path) -> None:
    assert publish(fleet, remote)[0] == 0
    text = (fleet / "teams/ml-team.yaml").read_text().replace("nvidia: 8", "nvidia: 6")
    write_in(fleet, "teams/ml-team.yaml", text)
    source = commit_values(fleet, "ml-team: 6 NVIDIA GPUs")
    code, out, err = publish(fleet, remote, "--message", "ml-team gives back two GPUs")
    assert code == 0, err
    assert repos.log(remote, "main")[0] == "ml-team gives back two GPUs"
    body = repos.git(remote, "log", "-1", "--format=%B", "main")
    # staging overrides the quota (4): its objects stay as they were.
    assert "Changed units (1):\n- overlays/prod/team-ml-team\n\nSource-Commit" in body
    assert f"Source-Commit: {source}" in body
    quota = repos.git(
        remote, "show", "main:base/teams/ml-team/resourcequota-ml-team-accelerators.yaml"
    )
    assert "requests.nvidia.com/gpu: '6'" in quota


def test_values_with_errors_push_nothing(fleet: Path, remote: Path) -> None:
    before = repos.git(remote, "rev-parse", "main")
    write_in(fleet, "teams/ml-team.yaml", "quota:\n  nvidia: many\n")
    commit_values(fleet)
    code, _, err = publish(fleet, remote)
    assert code == 1
    assert "values/teams/ml-team.yaml:2:11: VAL001" in err and "nothing pushed" in err
    assert repos.git(remote, "rev-parse", "main") == before


@pytest.fixture
def broken_object(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A ConfigMap with a field Kubernetes does not have: only validate (kubeconform) sees it."""

    def extra(view: FleetView) -> list[Component]:
        team = next(t for t in view.teams if t.name == "ml-team")
        obj: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": metadata("broken", namespace="ml-team", sources=team.doc.sources),
            "data": {"a": "b"},
            "spec": {"nope": True},
        }
        return [
            Component("team-ml-team", "extra/broken", [obj], origin=team.doc.anchor(("quota",)))
        ]

    monkeypatch.setattr(builders, "BUILDERS", (*builders.BUILDERS, extra))
    yield


@pytest.mark.usefixtures("broken_object")
def test_a_failing_validation_leaves_the_remote_untouched(fleet: Path, remote: Path) -> None:
    before = repos.git(remote, "rev-parse", "main")
    code, _, err = publish(fleet, remote, "--no-cache")
    assert code == 1
    assert "K8S001 ConfigMap ml-team/broken" in err and "nothing pushed" in err
    assert repos.git(remote, "rev-parse", "main") == before
    assert repos.git(remote, "for-each-ref", "--format=%(refname)") == "refs/heads/main"


COMPETE = """\
#!/bin/sh
# pre-push: another publisher pushes to the same branch first (once, or every time).
[ -n "$COMPETING" ] && exit 0
if [ -n "$ONCE" ]; then [ -e "$ONCE" ] && exit 0; touch "$ONCE"; fi
export COMPETING=1
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE
work=$(mktemp -d)
git clone -q "$REMOTE" "$work/c" && cd "$work/c" || exit 1
date +%s%N >> OTHER.md && git add OTHER.md && git commit -qm "competing commit" && git push -q origin HEAD:main
"""


@pytest.fixture
def competitor(
    tmp_path: Path, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[bool], None]:
    """Install a pre-push hook (through git's own GIT_CONFIG_* variables) in every git run."""

    def install(once: bool) -> None:
        hooks = tmp_path / "hooks"
        hooks.mkdir(exist_ok=True)
        hook = hooks / "pre-push"
        hook.write_text(COMPETE)
        hook.chmod(hook.stat().st_mode | stat.S_IEXEC)
        monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
        monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.hooksPath")
        monkeypatch.setenv("GIT_CONFIG_VALUE_0", str(hooks))
        monkeypatch.setenv("REMOTE", str(remote))
        if once:
            monkeypatch.setenv("ONCE", str(tmp_path / "once"))
        else:
            monkeypatch.delenv("ONCE", raising=False)

    return install


def test_a_remote_that_moved_is_published_onto_its_new_head(
    fleet: Path, remote: Path, competitor: Callable[[bool], None]
) -> None:
    competitor(True)
    code, out, err = publish(fleet, remote)
    assert code == 0, err
    assert "the branch main moved to" in err and "attempt 2 of 4" in err
    log = repos.log(remote, "main")
    assert log[1:] == ["competing commit", "initial"] and log[0].startswith("accel-gitops: render")
    files = repos.git(remote, "ls-tree", "-r", "--name-only", "main").splitlines()
    assert "OTHER.md" in files and "overlays/prod/argocd/kustomization.yaml" in files


def test_a_remote_that_keeps_moving_fails_after_the_retries(
    fleet: Path, remote: Path, competitor: Callable[[bool], None]
) -> None:
    competitor(False)
    code, _, err = publish(fleet, remote, "--retries", "1")
    assert code == 2
    assert f"the branch main of {remote} moved during each of 2 attempts; nothing was pushed" in err
    assert repos.log(remote, "main") == ["competing commit", "competing commit", "initial"]


def test_a_push_refused_for_another_reason_is_not_retried(fleet: Path, remote: Path) -> None:
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'protected branch' >&2\nexit 1\n")
    hook.chmod(0o755)
    code, _, err = publish(fleet, remote)
    assert code == 2
    assert "protected branch" in err and "attempt 2" not in err
    assert repos.log(remote, "main") == ["initial"]


def test_the_first_publish_creates_the_branch(
    fleet: Path, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(remote.parent)  # a relative path to the repository works too
    code, _, err = cli_streams(
        "publish", "--values", str(fleet), "--repo", remote.name, "--branch", "rendered"
    )
    assert code == 0, err
    assert repos.log(remote, "rendered")[0].startswith("accel-gitops: render")
    assert len(repos.log(remote, "rendered")) == 1  # its own history, apart from main


def _drop_inference(values_dir: Path) -> None:
    (values_dir / "teams/inference.yaml").unlink()
    write_in(values_dir, "environments/prod.yaml", "fleet:\n  git:\n    targetRevision: prod\n")
    write_in(values_dir, "environments/staging.yaml", TWO_TEAMS_STAGING.split("  inference:")[0])


def test_delete_guard_refuses_a_deleted_namespace_until_allowed(fleet: Path, remote: Path) -> None:
    assert publish(fleet, remote)[0] == 0
    before = repos.git(remote, "rev-parse", "main")
    _drop_inference(fleet)
    commit_values(fleet, "inference leaves")
    code, _, err = publish(fleet, remote)
    assert code == 1
    assert (
        "values/teams/inference.yaml: PUB001 publishing overlays/prod/team-inference deletes "
        "Namespace inference: "
    ) in err
    assert "publish again with --allow-delete" in err and "nothing pushed" in err
    assert repos.git(remote, "rev-parse", "main") == before
    code, _, err = publish(fleet, remote, "--allow-delete")
    assert code == 0, err
    files = repos.git(remote, "ls-tree", "-r", "--name-only", "main")
    assert "team-inference" not in files


def test_delete_guard_share_of_a_unit(fleet: Path, remote: Path) -> None:
    assert publish(fleet, remote)[0] == 0
    write_in(
        fleet,
        "environments/prod.yaml",
        (fleet / "environments/prod.yaml").read_text()
        + "  ml-team:\n    jobs:\n      npu-training-job: {enabled: false}\n",
    )
    commit_values(fleet, "no NPU job in prod")
    code, _, err = publish(fleet, remote, "--max-delete-share", "0.1")
    assert code == 1
    assert (
        "PUB001 publishing overlays/prod/team-ml-team deletes 1 of its 4 objects (more than 10%): "
        "Job ml-team/npu-training-job"
    ) in err
    # Namespace, ResourceQuota and two Jobs: 1 of 4 is within the default share (50%).
    assert publish(fleet, remote)[0] == 0


def test_publish_usage_errors(fleet: Path, remote: Path, tmp_path: Path) -> None:
    code, _, err = publish(fleet, remote, "--path", "clusters/accel")
    assert code == 2 and "values/fleet.yaml sets git.path ''" in err
    write_in(fleet, "teams/ml-team.yaml", (fleet / "teams/ml-team.yaml").read_text() + "\n")
    code, _, err = publish(fleet, remote)
    assert code == 2 and "uncommitted changes" in err
    commit_values(fleet)
    code, _, err = publish(fleet, tmp_path / "nowhere.git")
    assert code == 2 and "cannot read the GitOps repository" in err
    assert repos.log(remote, "main") == ["initial"]


def test_publish_into_a_folder_of_the_gitops_repository(fleet: Path, remote: Path) -> None:
    text = (fleet / "fleet.yaml").read_text()
    assert "targetRevision: main}" in text
    fleet_yaml = text.replace(
        "targetRevision: main}", "targetRevision: main, path: clusters/accel}"
    )
    write_in(fleet, "fleet.yaml", fleet_yaml)
    commit_values(fleet)
    code, _, err = publish(fleet, remote)
    assert code == 0, err
    files = repos.git(remote, "ls-tree", "-r", "--name-only", "main").splitlines()
    assert "clusters/accel/overlays/prod/argocd/kustomization.yaml" in files
    app = repos.git(
        remote,
        "show",
        "main:clusters/accel/overlays/prod/argocd/application-argocd-f-prod-team-ml-team.yaml",
    )
    assert "path: clusters/accel/overlays/prod/team-ml-team" in app
    assert os.path.basename(str(remote)) == "gitops.git"
