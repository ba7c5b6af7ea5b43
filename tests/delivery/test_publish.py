"""`render.py publish` with real git: a local bare repository is the GitOps remote."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from generator import __version__
from generator.builders import fleet as builders
from generator.builders.common import Component, metadata
from generator.delivery import publish as publishing
from generator.values.model import FleetView
from tests import repos
from tests.fixtures import TWO_TEAMS_STAGING, cli_streams, two_teams


def write_in(values_dir: Path, rel: str, text: str) -> None:
    (values_dir / rel).write_text(text, encoding="utf-8")


@pytest.fixture(autouse=True)
def outside_any_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test runs from an empty folder outside any git repository: publish runs git in its
    own clone, never where it is started (`git clean -qfdx` there would delete the user's files;
    in a mutation run, the project's copy). A git command run here fails, so the test does."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)


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


# ---- the delete guard, to the boundary ---------------------------------------------------------

# What every PUB001 line ends with.
ALLOW_HINT = (
    "; if that is intended (a team or vendor removed on purpose), publish again with "
    "--allow-delete; otherwise restore the values"
)
NO_JOBS_IN_PROD = (
    "  ml-team:\n    jobs:\n"
    "      cuda-training-job: {enabled: false}\n      npu-training-job: {enabled: false}\n"
)


def test_delete_guard_allows_exactly_the_share_and_refuses_above_it(
    fleet: Path, remote: Path
) -> None:
    """--max-delete-share is the largest share a unit may lose: exactly it passes, a share
    above it is refused with the share in the message."""
    assert publish(fleet, remote)[0] == 0
    before = repos.git(remote, "rev-parse", "main")
    prod = (fleet / "environments/prod.yaml").read_text()
    write_in(fleet, "environments/prod.yaml", prod + NO_JOBS_IN_PROD)
    commit_values(fleet, "no jobs in prod")
    # Namespace, ResourceQuota and two Jobs: both Jobs are 2 of 4, exactly 50%.
    code, _, err = publish(fleet, remote, "--max-delete-share", "0.49")
    assert code == 1
    assert err.splitlines() == [
        "values/teams/ml-team.yaml: PUB001 publishing overlays/prod/team-ml-team deletes 2 of its "
        "4 objects (more than 49%): Job ml-team/cuda-training-job, Job ml-team/npu-training-job"
        + ALLOW_HINT,
        "publish: 1 error(s), 0 warning(s); nothing pushed",
    ]
    assert repos.git(remote, "rev-parse", "main") == before
    code, out, err = publish(fleet, remote, "--max-delete-share", "0.5")
    assert code == 0, err
    assert out.endswith(", 1 units changed\n")
    body = repos.git(remote, "log", "-1", "--format=%B", "main")
    assert "\nChanged units (1):\n- overlays/prod/team-ml-team\n\n" in body


def test_delete_guard_refuses_a_namespace_whatever_the_share(fleet: Path, remote: Path) -> None:
    assert publish(fleet, remote)[0] == 0
    _drop_inference(fleet)
    commit_values(fleet, "inference leaves")
    # Every object of the unit may go (share 1), its Namespace still may not. The first five
    # objects are named (in apiVersion, kind, namespace, name order), the other four counted.
    code, _, err = publish(fleet, remote, "--max-delete-share", "1")
    assert code == 1
    shown = (
        "Deployment inference/inference-service-ascend, "
        "Deployment inference/inference-service-nvidia, "
        "PodDisruptionBudget inference/inference-service-ascend, "
        "PodDisruptionBudget inference/inference-service-nvidia, Namespace inference and 4 more"
    )
    assert err.splitlines() == [
        f"values/teams/inference.yaml: PUB001 publishing overlays/{env}/team-inference deletes "
        f"Namespace inference: {shown}{ALLOW_HINT}"
        for env in ("prod", "staging")
    ] + ["publish: 2 error(s), 0 warning(s); nothing pushed"]
    assert repos.log(remote, "main")[0].startswith("accel-gitops: render")
    assert len(repos.log(remote, "main")) == 2
    # --allow-delete wins over any share, even 0.
    code, out, err = publish(fleet, remote, "--allow-delete", "--max-delete-share", "0")
    assert code == 0, err
    files = repos.git(remote, "ls-tree", "-r", "--name-only", "main")
    assert "overlays/prod/team-inference/" not in files
    assert "overlays/staging/team-inference/" not in files


def push_files(remote: Path, files: dict[str, str], message: str) -> str:
    """Commit `files` to main of `remote` as someone else would: the new head."""
    work = Path(tempfile.mkdtemp(dir=remote.parent)) / "clone"
    repos.git(remote.parent, "clone", "-q", str(remote), str(work))
    for rel, text in files.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text, encoding="utf-8")
    head = repos.commit_all(work, message)
    repos.git(work, "push", "-q", "origin", "HEAD:main")
    return head


def hand_made_unit(folder: str, titles: list[str], sources: dict[str, str]) -> dict[str, str]:
    """The files of a unit `folder` of the GitOps repository holding the objects `titles`
    ("Kind namespace/name" or "Kind name"); `sources`: title -> its provenance annotation."""
    docs = []
    for title in titles:
        kind, _, ref = title.partition(" ")
        namespace, _, name = ref.rpartition("/")
        meta = f"  namespace: {namespace}\n" if namespace else ""
        if title in sources:
            meta += f"  annotations: {{accel-gitops.io/source: '{sources[title]}'}}\n"
        docs.append(f"apiVersion: v1\nkind: {kind}\nmetadata:\n  name: {name}\n{meta}")
    return {
        f"{folder}/kustomization.yaml": "resources: [objects.yaml]\n",
        f"{folder}/objects.yaml": "---\n".join(docs),
    }


def test_delete_guard_names_five_objects_and_where_they_came_from(
    fleet: Path, remote: Path
) -> None:
    """Units the GitOps repository has and the values no longer render: all their objects go.
    The finding points at the first deleted object's values file (its provenance annotation),
    else at the unit."""
    assert publish(fleet, remote)[0] == 0
    six = [f"ConfigMap legacy/c{i}" for i in range(1, 7)]
    prod = hand_made_unit(
        "overlays/prod/legacy",
        six,
        {six[0]: "values/teams/gone.yaml, values/environments/prod.yaml", six[5]: "values/x.yaml"},
    )
    five = [*six[:3], "Namespace legacy", "Namespace legacy-tmp"]
    staging = hand_made_unit("overlays/staging/legacy", five, {})
    push_files(remote, {**prod, **staging}, "units made by hand")
    before = repos.git(remote, "rev-parse", "main")
    code, _, err = publish(fleet, remote)
    assert code == 1
    assert err.splitlines() == [
        "overlays/staging/legacy: PUB001 publishing overlays/staging/legacy deletes Namespace "
        "legacy, Namespace legacy-tmp: ConfigMap legacy/c1, ConfigMap legacy/c2, ConfigMap "
        f"legacy/c3, Namespace legacy, Namespace legacy-tmp{ALLOW_HINT}",
        "values/teams/gone.yaml: PUB001 publishing overlays/prod/legacy deletes 6 of its 6 "
        "objects (more than 50%): ConfigMap legacy/c1, ConfigMap legacy/c2, ConfigMap legacy/c3, "
        f"ConfigMap legacy/c4, ConfigMap legacy/c5 and 1 more{ALLOW_HINT}",
        "publish: 2 error(s), 0 warning(s); nothing pushed",
    ]
    assert repos.git(remote, "rev-parse", "main") == before
    code, _, err = publish(fleet, remote, "--allow-delete")
    assert code == 0, err
    files = repos.git(remote, "ls-tree", "-r", "--name-only", "main").splitlines()
    assert [f for f in files if "legacy" in f] == []
    assert "README.md" in files and "overlays/prod/team-ml-team/kustomization.yaml" in files


# ---- the commit --------------------------------------------------------------------------------

TWELVE_UNITS = [
    f"overlays/{env}/{unit}"
    for env in ("prod", "staging")
    for unit in (
        "argocd",
        "device-plugins",
        "monitoring",
        "node-config",
        "team-inference",
        "team-ml-team",
    )
]


def test_commit_message_in_full(fleet: Path, remote: Path) -> None:
    """The source repository's URL without the token it holds; a blank --message is none."""
    origin = "https://ci-bot:s3cr3t@git.example.com/fleet/values.git"
    repos.git(fleet.parent, "remote", "add", "origin", origin)
    source = repos.git(fleet.parent, "rev-parse", "HEAD")
    code, _, err = publish(fleet, remote, "--message", "  ")
    assert code == 0, err
    units = "".join(f"- {u}\n" for u in TWELVE_UNITS)
    assert repos.git(remote, "log", "-1", "--format=%B", "main") == (
        f"accel-gitops: render {source[:12]} (12 units changed)\n\n"
        f"Rendered by accel-gitops {__version__} from https://git.example.com/fleet/values.git "
        f"at {source}.\n\nChanged units (12):\n{units}\nSource-Commit: {source}"
    )
    text = (fleet / "teams/ml-team.yaml").read_text().replace("nvidia: 8", "nvidia: 6")
    write_in(fleet, "teams/ml-team.yaml", text)
    source = commit_values(fleet, "ml-team: 6 NVIDIA GPUs")
    code, _, err = publish(fleet, remote, "--message", "  ml-team <gives> back 2 & more  ")
    assert code == 0, err
    assert repos.git(remote, "log", "-1", "--format=%B", "main") == (
        "ml-team <gives> back 2 & more\n\n"
        f"Rendered by accel-gitops {__version__} from https://git.example.com/fleet/values.git "
        f"at {source}.\n\nChanged units (1):\n- overlays/prod/team-ml-team\n\n"
        f"Source-Commit: {source}"
    )


def test_commit_identity_when_git_has_none(
    fleet: Path, remote: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without an identity git knows, publish commits as accel-gitops; the identity of the
    repository it is run from (the values' own) is not the clone's."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    for key in repos.IDENTITY:
        if key.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_")):
            monkeypatch.delenv(key)
    repos.git(fleet.parent, "config", "user.email", "values@example.com")
    monkeypatch.chdir(fleet.parent)
    source = repos.git(fleet.parent, "rev-parse", "HEAD")
    assert publish(fleet, remote)[0] == 0
    who = ["log", "-1", "--format=%an <%ae>, %cn <%ce>", "main"]
    assert repos.git(remote, *who) == (
        "accel-gitops <accel-gitops@localhost>, accel-gitops <accel-gitops@localhost>"
    )
    # No origin: the source is named by its folder.
    body = repos.git(remote, "log", "-1", "--format=%B", "main").splitlines()
    assert body[2] == f"Rendered by accel-gitops {__version__} from {fleet.parent} at {source}."
    # git's own identity, when it has one, wins.
    (home / ".gitconfig").write_text("[user]\n\tname = Ops Bot\n\temail = ops@example.com\n")
    text = (fleet / "teams/ml-team.yaml").read_text().replace("nvidia: 8", "nvidia: 6")
    write_in(fleet, "teams/ml-team.yaml", text)
    commit_values(fleet)
    assert publish(fleet, remote)[0] == 0
    assert repos.git(remote, *who) == "Ops Bot <ops@example.com>, Ops Bot <ops@example.com>"


def test_publish_path_with_slashes_around_it(fleet: Path, remote: Path) -> None:
    """--path may have slashes around it; only slashes are stripped (here, not the X)."""
    text = (fleet / "fleet.yaml").read_text()
    write_in(fleet, "fleet.yaml", text.replace("main}", "main, path: fleets/X}"))
    commit_values(fleet)
    code, _, err = publish(fleet, remote, "--path", "/fleets/X/")
    assert code == 0, err
    files = repos.git(remote, "ls-tree", "-r", "--name-only", "main").splitlines()
    assert "fleets/X/overlays/prod/team-ml-team/kustomization.yaml" in files
    assert [f for f in files if not f.startswith("fleets/X/")] == ["README.md"]


# ---- pushing -----------------------------------------------------------------------------------


def test_publish_result_after_the_remote_moved(
    fleet: Path, remote: Path, competitor: Callable[[bool], None]
) -> None:
    """publish() itself: what it pushed, from which source, in how many attempts, and why."""
    source = repos.git(fleet.parent, "rev-parse", "HEAD")
    competitor(True)
    result = publishing.publish(publishing.PublishOptions(fleet, str(remote), "main"))
    head, competing = repos.git(remote, "rev-parse", "main", "main~1").splitlines()
    assert repos.log(remote, "main~1") == ["competing commit", "initial"]
    assert (result.commit, result.source, result.units, result.attempts) == (
        head,
        source,
        TWELVE_UNITS,
        2,
    )
    assert result.notes == [
        "note: the Argo CD Applications sync from https://git.example.com/f.git "
        "(values/fleet.yaml git.repoURL), not from the repository published to",
        f"the branch main moved to {competing[:12]} during the publish; rendering onto it again "
        "(attempt 2 of 4)",
    ]
    again = publishing.publish(publishing.PublishOptions(fleet, str(remote), "main"))
    assert (again.commit, again.source, again.units, again.attempts) == (None, source, [], 1)
    # Nothing pushed: still the note and the values' warnings (ml-team's NVIDIA quota is above
    # the pools: overcommit allowed).
    assert again.notes == result.notes[:1]
    assert {f.code for f in again.findings} == {f.code for f in result.findings} == {"CAP001"}


def test_a_refused_push_is_reported_as_git_said(fleet: Path, remote: Path) -> None:
    """Refused onto an existing branch (it did not move) and onto a new one (nothing to fetch)."""
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'protected branch' >&2\nexit 1\n")
    hook.chmod(0o755)
    for branch in ("main", "rendered"):
        code, out, err = cli_streams(
            "publish", "--values", str(fleet), "--repo", str(remote), "--branch", branch
        )
        assert (code, out) == (2, "")
        assert err.startswith(
            f"error: git push origin {branch} failed (1): remote: protected branch"
        )
        assert f"!\tHEAD:refs/heads/{branch}\t[remote rejected] (pre-receive hook declined)" in err
        assert "attempt" not in err
    assert repos.git(remote, "for-each-ref", "--format=%(refname)") == "refs/heads/main"
    assert repos.log(remote, "main") == ["initial"]


def test_publish_to_the_url_argo_cd_syncs(fleet: Path, remote: Path) -> None:
    """A URL goes to git as it is; no note when it is values/fleet.yaml git.repoURL (give or
    take a trailing slash)."""
    url = remote.as_uri()
    fleet_yaml = (fleet / "fleet.yaml").read_text()
    write_in(fleet, "fleet.yaml", fleet_yaml.replace("https://git.example.com/f.git", url))
    source = commit_values(fleet, "Argo CD syncs from the local remote")
    code, out, err = cli_streams(
        "publish", "--values", str(fleet), "--repo", url + "/", "--branch", "main"
    )
    assert code == 0, err
    head = repos.git(remote, "rev-parse", "main")
    assert (
        out
        == f"publish: pushed {head[:12]} to main of {url}/: render of {source[:12]}, 12 units changed\n"
    )
    assert "note:" not in err
    assert repos.log(remote, "main")[0] == f"accel-gitops: render {source[:12]} (12 units changed)"


def test_uncommitted_values_are_refused_and_validate_keeps_its_cache(
    fleet: Path, remote: Path
) -> None:
    text = (fleet / "teams/ml-team.yaml").read_text()
    write_in(fleet, "teams/ml-team.yaml", text + "\n")
    code, out, err = publish(fleet, remote)
    assert (code, out) == (2, "")
    assert err == (
        f"error: the values in {fleet} have uncommitted changes; commit them first (a publish "
        "names the source commit it was rendered from)\n"
    )
    commit_values(fleet)
    assert not (fleet.parent / ".cache").exists()
    assert publish(fleet, remote)[0] == 0
    # validate's cache is beside the values (ignored by their repository), as for `validate`.
    assert [p.name for p in (fleet.parent / ".cache" / "validate").iterdir()] != []


def test_a_path_other_than_git_path_is_refused_with_the_reason(fleet: Path, remote: Path) -> None:
    code, out, err = publish(fleet, remote, "--path", "clusters/accel")
    assert (code, out) == (2, "")
    assert err == (
        "error: --path 'clusters/accel' but values/fleet.yaml sets git.path '': the Argo CD "
        "Applications would look for the units elsewhere; set git.path instead\n"
    )
    assert repos.log(remote, "main") == ["initial"]


def test_values_in_a_repository_without_a_commit_are_refused(tmp_path: Path, remote: Path) -> None:
    values_dir = two_teams(tmp_path)
    repo = repos.init(values_dir.parent)
    repos.git(repo, "config", "status.showUntrackedFiles", "no")  # new files look clean
    code, out, err = publish(values_dir, remote)
    assert (code, out) == (2, "")
    assert err == f"error: {repo} has no commit yet; commit the values first\n"
    assert repos.log(remote, "main") == ["initial"]
