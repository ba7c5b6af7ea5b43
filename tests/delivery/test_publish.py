"""`render.py publish` with real git: a local bare repository is the GitOps remote."""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from generator import Program, __version__
from generator.builders import fleet as builders
from generator.builders.common import metadata
from generator.cli.main import main
from generator.cli.options import Invocation
from generator.commands.publish import PublishCommand
from generator.commands.publish import publish as run_publish
from generator.delivery import publish as publishing
from generator.delivery.diff import ObjectDiff, TreeDiff
from generator.errors import FindingsError, UsageError
from generator.findings import Location
from generator.values.model import FleetView
from generator.vocab.units import Component
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


@pytest.fixture(scope="session")
def validate_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One validate cache for the session's publishes: their fleets are alike, so the tools
    check each distinct unit once rather than in every test (most of a publish's time)."""
    return tmp_path_factory.mktemp("validate-cache")


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, validate_cache: Path) -> Path:
    """A small fleet (fixtures.two_teams: 6 units an environment) committed in its own
    repository (the source of a publish). Its validate cache (.cache/validate beside the values,
    ignored by the repository) is the session's."""
    values_dir = two_teams(tmp_path)
    for key, value in repos.IDENTITY.items():
        monkeypatch.setenv(key, value)
    repo = repos.init(values_dir.parent)
    (repo / ".gitignore").write_text(".cache/\n")
    (repo / ".cache").mkdir()
    (repo / ".cache" / "validate").symlink_to(validate_cache, target_is_directory=True)
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

    monkeypatch.setattr(builders, "BUILDERS", (*builders.BUILDERS, builders.of_view(extra)))
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
    assert err.startswith("error: git push origin main failed (1): remote: protected branch")
    assert "attempt 2" not in err
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
    "--allow-delete; otherwise restore the values. A team: disable it (enabled: false) before "
    "removing its file, or Argo CD leaves its objects behind (docs/argocd.md)"
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
    # No origin: the source is named by its folder, not by a path on this machine.
    body = repos.git(remote, "log", "-1", "--format=%B", "main").splitlines()
    assert body[2] == (
        f"Rendered by accel-gitops {__version__} from {fleet.parent.name} (a local repository) "
        f"at {source}."
    )
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


NOTE_OTHER_REPOSITORY = (
    "note: the Argo CD Applications sync from https://git.example.com/f.git "
    "(values/fleet.yaml git.repoURL), not from the repository published to"
)


def test_publish_result_of_a_publish_and_of_the_same_one_again(fleet: Path, remote: Path) -> None:
    """publish() itself: the pushed commit (None when the branch already has the render), the
    source commit, the changed units, in one attempt, with the note and the values' warning."""
    source = repos.git(fleet.parent, "rev-parse", "HEAD")
    cache = fleet.parent / ".cache" / "validate"
    opts = publishing.PublishOptions(fleet, str(remote), "main")
    first = run_publish(PublishCommand(opts, cache))
    head = repos.git(remote, "rev-parse", "main")
    assert (first.commit, first.source, first.units, first.attempts, first.notes) == (
        head,
        source,
        TWELVE_UNITS,
        1,
        [NOTE_OTHER_REPOSITORY],
    )
    assert [f.code for f in first.findings] == ["CAP001"]
    again = run_publish(PublishCommand(opts, cache))
    assert (again.commit, again.source, again.units, again.attempts, again.notes) == (
        None,
        source,
        [],
        1,
        [NOTE_OTHER_REPOSITORY],
    )
    assert [f.code for f in again.findings] == ["CAP001"]
    assert repos.git(remote, "rev-parse", "main") == head


def test_publish_result_after_the_remote_moved(
    fleet: Path, remote: Path, competitor: Callable[[bool], None]
) -> None:
    """publish() itself: what it pushed, from which source, in how many attempts, and why."""
    source = repos.git(fleet.parent, "rev-parse", "HEAD")
    competitor(True)
    result = run_publish(PublishCommand(publishing.PublishOptions(fleet, str(remote), "main")))
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
    again = run_publish(PublishCommand(publishing.PublishOptions(fleet, str(remote), "main")))
    assert (again.commit, again.source, again.units, again.attempts) == (None, source, [], 1)
    # Nothing pushed: still the note and the values' warnings (ml-team's NVIDIA quota is above
    # the pools: overcommit allowed).
    assert again.notes == result.notes[:1]
    assert [f.code for f in again.findings] == [f.code for f in result.findings] == ["CAP001"]


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
    # No note; the values' one warning, once (validate checks the values again).
    assert err == (
        "values/teams/ml-team.yaml:2:11: CAP001 warning: quotas for nvidia (nvidia.com/gpu) add "
        "up to 12 devices (inference 4, ml-team 8) but its pools hold 8 (overcommit allowed by "
        "capacity.allowOvercommit) in environment 'prod' (at $.quota.nvidia)\n"
    )
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
    shutil.rmtree(fleet.parent / ".cache")  # not the session's cache: where does it go?
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


# ---- the parts of a publish, each on its own -------------------------------------------------
#
# No render, no validate: each test runs in milliseconds (git on tiny repositories made here), so
# under mutmut, which runs the fastest tests first, a mutant of these parts costs one of them.

GUARD_HINT = (
    "if that is intended (a team or vendor removed on purpose), publish again with "
    "--allow-delete; otherwise restore the values. A team: disable it (enabled: false) before "
    "removing its file, or Argo CD leaves its objects behind (docs/argocd.md)"
)


def unit_object(unit: str, title: str, status: str, source: str | None = None) -> ObjectDiff:
    """An object of `unit` (overlays/<env>/<name>) as tree_diff reports it: `title` is
    "Kind namespace/name" or "Kind name", `source` its provenance annotation."""
    _, env, name_of_unit = unit.split("/")
    kind, _, ref = title.partition(" ")
    namespace, _, name = ref.rpartition("/")
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if source is not None:
        meta["annotations"] = {"accel-gitops.io/source": source}
    obj = {"apiVersion": "v1", "kind": kind, "metadata": meta}
    key = ("v1", kind, namespace, name)
    return ObjectDiff(env, name_of_unit, key, status, obj=None if status == "changed" else obj)


def gone(unit: str, *titles: str) -> list[ObjectDiff]:
    return [unit_object(unit, t, "removed") for t in titles]


def refusals(objects: list[ObjectDiff], counts: dict[str, int], **options: Any) -> list[str]:
    """The delete guard on a diff made by hand (`counts`: the objects each unit had): each
    refusal as "file: message", [] when it lets the publish through."""
    opts = publishing.PublishOptions(Path("values"), "gitops.git", "main", **options)
    try:
        publishing._guard(TreeDiff(objects, sorted(counts), counts), opts)
    except FindingsError as e:
        assert {(f.code, f.hint) for f in e.findings} == {("PUB001", GUARD_HINT)}
        return [f"{f.location}: {f.message}" for f in e.findings]
    return []


def test_guard_lets_a_unit_lose_exactly_its_share_and_refuses_more() -> None:
    """Added and changed objects are no deletions: 2 of 4 objects go, 50 %."""
    unit = "overlays/prod/team-a"
    objects = [
        unit_object(unit, "ConfigMap a/c1", "removed"),
        unit_object(unit, "ConfigMap a/c2", "changed"),
        unit_object(unit, "ConfigMap a/c3", "removed"),
        unit_object(unit, "ConfigMap a/c5", "added"),
    ]
    assert refusals(objects, {unit: 4}) == []
    assert refusals(objects, {unit: 4}, max_delete_share=0.5) == []
    assert refusals(objects, {unit: 4}, max_delete_share=0.49) == [
        "overlays/prod/team-a: publishing overlays/prod/team-a deletes 2 of its 4 objects (more "
        "than 49%): ConfigMap a/c1, ConfigMap a/c3"
    ]
    assert refusals(objects, {unit: 3}) == [
        "overlays/prod/team-a: publishing overlays/prod/team-a deletes 2 of its 3 objects (more "
        "than 50%): ConfigMap a/c1, ConfigMap a/c3"
    ]


def test_guard_refuses_a_namespace_whatever_the_share() -> None:
    one = "overlays/staging/team-a"
    assert refusals(gone(one, "Namespace a"), {one: 10}) == [
        "overlays/staging/team-a: publishing overlays/staging/team-a deletes Namespace a: "
        "Namespace a"
    ]
    two = gone(one, "ConfigMap a/c1", "Namespace a", "Namespace a-tmp")
    assert refusals(two, {one: 3}, max_delete_share=1.0) == [
        "overlays/staging/team-a: publishing overlays/staging/team-a deletes Namespace a, "
        "Namespace a-tmp: ConfigMap a/c1, Namespace a, Namespace a-tmp"
    ]


def test_guard_lets_everything_through_with_allow_delete() -> None:
    unit = "overlays/prod/team-a"
    objects = gone(unit, "ConfigMap a/c1", "Namespace a")
    assert refusals(objects, {unit: 2}, allow_delete=True, max_delete_share=0.0) == []


def test_guard_judges_each_unit_on_its_own() -> None:
    """A unit within its share does not end the check: each unit over it is one finding."""
    objects = [
        *gone("overlays/prod/a", "ConfigMap x/c1"),
        *gone("overlays/prod/b", "ConfigMap y/c1", "ConfigMap y/c2"),
        *gone("overlays/staging/a", "Namespace x"),
    ]
    counts = {"overlays/prod/a": 3, "overlays/prod/b": 3, "overlays/staging/a": 5}
    assert refusals(objects, counts) == [
        "overlays/prod/b: publishing overlays/prod/b deletes 2 of its 3 objects (more than 50%): "
        "ConfigMap y/c1, ConfigMap y/c2",
        "overlays/staging/a: publishing overlays/staging/a deletes Namespace x: Namespace x",
    ]


def test_guard_names_five_objects_and_counts_the_rest() -> None:
    def unit(n: int) -> list[ObjectDiff]:
        return gone(f"overlays/prod/u{n}", *(f"ConfigMap u/c{i}" for i in range(1, n + 1)))

    counts = {f"overlays/prod/u{n}": n for n in (5, 6, 7)}
    first_five = "ConfigMap u/c1, ConfigMap u/c2, ConfigMap u/c3, ConfigMap u/c4, ConfigMap u/c5"
    assert refusals([*unit(5), *unit(6), *unit(7)], counts) == [
        "overlays/prod/u5: publishing overlays/prod/u5 deletes 5 of its 5 objects (more than "
        f"50%): {first_five}",
        "overlays/prod/u6: publishing overlays/prod/u6 deletes 6 of its 6 objects (more than "
        f"50%): {first_five} and 1 more",
        "overlays/prod/u7: publishing overlays/prod/u7 deletes 7 of its 7 objects (more than "
        f"50%): {first_five} and 2 more",
    ]


def test_guard_points_at_the_values_file_of_the_first_deleted_object() -> None:
    """The first deleted object's provenance annotation (its first file) names the values file
    to look at; without one, the finding is about the unit."""
    objects = [
        unit_object(
            "overlays/prod/a",
            "ConfigMap a/c1",
            "removed",
            " values/teams/a.yaml , values/environments/prod.yaml",
        ),
        unit_object("overlays/prod/a", "ConfigMap a/c2", "removed", "values/teams/other.yaml"),
        unit_object("overlays/prod/b", "ConfigMap b/c1", "removed"),
        unit_object("overlays/prod/b", "ConfigMap b/c2", "removed", "values/teams/b.yaml"),
        unit_object("overlays/prod/c", "ConfigMap c/c1", "removed", ""),
    ]
    counts = {"overlays/prod/a": 2, "overlays/prod/b": 2, "overlays/prod/c": 1}
    assert refusals(objects, counts) == [
        "overlays/prod/b: publishing overlays/prod/b deletes 2 of its 2 objects (more than 50%): "
        "ConfigMap b/c1, ConfigMap b/c2",
        "overlays/prod/c: publishing overlays/prod/c deletes 1 of its 1 objects (more than 50%): "
        "ConfigMap c/c1",
        "values/teams/a.yaml: publishing overlays/prod/a deletes 2 of its 2 objects (more than "
        "50%): ConfigMap a/c1, ConfigMap a/c2",
    ]


def test_guard_judges_a_unit_without_a_count_by_its_namespaces_alone() -> None:
    """A diff that did not count a unit's committed objects: no share is known, so only a
    deleted Namespace refuses the unit."""
    unit = "overlays/prod/team-a"
    assert refusals(gone(unit, "ConfigMap a/c1", "ConfigMap a/c2"), {}) == []
    assert refusals(gone(unit, "ConfigMap a/c1", "Namespace a"), {}) == [
        "overlays/prod/team-a: publishing overlays/prod/team-a deletes Namespace a: "
        "ConfigMap a/c1, Namespace a"
    ]


def test_guard_points_at_the_unit_of_a_deletion_without_its_object() -> None:
    """A deletion the diff names by key alone (no object body): no values file to point at."""
    keyed = ObjectDiff("prod", "team-a", ("v1", "ConfigMap", "a", "c1"), "removed")
    assert refusals([keyed], {"overlays/prod/team-a": 1}) == [
        "overlays/prod/team-a: publishing overlays/prod/team-a deletes 1 of its 1 objects (more "
        "than 50%): ConfigMap a/c1"
    ]


def test_where_is_the_first_file_of_the_annotation_else_the_unit() -> None:
    unit = "overlays/prod/a"
    assert publishing._where("values/teams/a.yaml", unit) == Location("values/teams/a.yaml")
    both = " values/teams/a.yaml , values/environments/prod.yaml"
    assert publishing._where(both, unit) == Location("values/teams/a.yaml")
    assert publishing._where("", unit) == Location("overlays/prod/a")
    assert publishing._where(" ", unit) == Location("overlays/prod/a")


SOURCE_COMMIT = "0123456789abcdef0123456789abcdef01234567"
WITH_TOKEN = "https://ci-bot:s3cr3t@git.example.com/fleet/values.git"


def test_message_names_the_source_and_each_changed_unit(tmp_path: Path) -> None:
    repo = repos.init(tmp_path / "values-repo")
    repos.git(repo, "remote", "add", "origin", WITH_TOKEN)
    opts = publishing.PublishOptions(repo / "values", "gitops.git", "main")
    units = ["overlays/prod/a", "overlays/staging/b"]
    assert publishing._message(opts, repo, SOURCE_COMMIT, units) == (
        "accel-gitops: render 0123456789ab (2 units changed)\n"
        "\n"
        f"Rendered by accel-gitops {__version__} from https://git.example.com/fleet/values.git "
        "at 0123456789abcdef0123456789abcdef01234567.\n"
        "\n"
        "Changed units (2):\n"
        "- overlays/prod/a\n"
        "- overlays/staging/b\n"
        "\n"
        "Source-Commit: 0123456789abcdef0123456789abcdef01234567\n"
    )


def test_message_subject_is_the_given_one_stripped_else_the_default(tmp_path: Path) -> None:
    repo = repos.init(tmp_path / "values-repo")
    opts = publishing.PublishOptions(repo / "values", "gitops.git", "main")
    given = dataclasses.replace(opts, message="  ml-team <gives> back 2 & more \n")
    assert publishing._message(given, repo, SOURCE_COMMIT, []) == (
        "ml-team <gives> back 2 & more\n"
        "\n"
        f"Rendered by accel-gitops {__version__} from values-repo (a local repository) "
        "at 0123456789abcdef0123456789abcdef01234567.\n"
        "\n"
        "Source-Commit: 0123456789abcdef0123456789abcdef01234567\n"
    )
    blank = dataclasses.replace(opts, message=" \n")
    text = publishing._message(blank, repo, SOURCE_COMMIT, ["overlays/prod/a"])
    assert text.splitlines()[0] == "accel-gitops: render 0123456789ab (1 units changed)"


def test_message_lists_a_hundred_units_and_counts_the_rest(tmp_path: Path) -> None:
    repo = repos.init(tmp_path / "values-repo")
    opts = publishing.PublishOptions(repo / "values", "gitops.git", "main")
    units = [f"overlays/prod/u{i:03}" for i in range(102)]
    lines = publishing._message(opts, repo, SOURCE_COMMIT, units).splitlines()
    assert lines[0] == "accel-gitops: render 0123456789ab (102 units changed)"
    assert lines[4:6] == ["Changed units (102):", "- overlays/prod/u000"]
    assert lines[104:] == [
        "- overlays/prod/u099",
        "- ... and 2 more",
        "",
        "Source-Commit: 0123456789abcdef0123456789abcdef01234567",
    ]


def test_source_name_is_the_origin_url_without_credentials_else_the_folder(
    tmp_path: Path,
) -> None:
    repo = repos.init(tmp_path / "values-repo")
    assert publishing._source_name(repo) == "values-repo (a local repository)"
    for local in (str(tmp_path / "upstream.git"), f"file://{tmp_path}/upstream.git", "../up"):
        repos.git(repo, "remote", "add", "origin", local)
        assert publishing._source_name(repo) == local.rpartition("/")[2].removesuffix(".git") + (
            " (a local repository)"
        )
        assert str(tmp_path) not in publishing._source_name(repo)
        repos.git(repo, "remote", "remove", "origin")
    repos.git(repo, "remote", "add", "origin", WITH_TOKEN)
    assert publishing._source_name(repo) == "https://git.example.com/fleet/values.git"
    for url, shown in (
        ("ssh://git@git.example.com:2222/values.git", "ssh://git.example.com:2222/values.git"),
        ("git@git.example.com:fleet/values.git", "git@git.example.com:fleet/values.git"),
        ("https://git.example.com/values.git", "https://git.example.com/values.git"),
    ):
        repos.git(repo, "remote", "set-url", "origin", url)
        assert publishing._source_name(repo) == shown


@pytest.fixture
def no_git_identity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """git knows no user.email (an empty home, no global or system config): the home."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for key in ("XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_COUNT"):
        monkeypatch.delenv(key, raising=False)
    return home


def test_identity_is_accel_gitops_when_git_has_none(tmp_path: Path, no_git_identity: Path) -> None:
    clone = repos.init(tmp_path / "clone")
    assert publishing._identity(clone) == [
        "-c",
        "user.name=accel-gitops",
        "-c",
        "user.email=accel-gitops@localhost",
    ]


def test_identity_git_has_for_the_clone_wins(tmp_path: Path, no_git_identity: Path) -> None:
    """An email in the clone's own config, or in the user's: git commits as that identity."""
    clone = repos.init(tmp_path / "clone")
    repos.git(clone, "config", "user.email", "ops@example.com")
    assert publishing._identity(clone) == []
    (no_git_identity / ".gitconfig").write_text("[user]\n\temail = me@example.com\n")
    assert publishing._identity(repos.init(tmp_path / "other")) == []


def test_head_is_the_commit_checked_out_or_none(tmp_path: Path) -> None:
    repo = repos.init(tmp_path / "repo")
    assert publishing._head(repo) is None
    head = repos.commit_all(repo, "first")
    assert len(head) == 40
    assert publishing._head(repo) == head


def test_fetch_returns_the_head_the_branch_has_on_the_remote_now(
    tmp_path: Path, remote: Path
) -> None:
    clone = tmp_path / "clone"
    repos.git(tmp_path, "clone", "-q", str(remote), str(clone))
    before = repos.git(clone, "rev-parse", "HEAD")
    moved = push_files(remote, {"OTHER.md": "someone else\n"}, "competing commit")
    assert moved != before
    assert publishing._fetch(clone, "main") == moved
    assert repos.git(clone, "rev-parse", "HEAD") == before  # fetched, nothing checked out
    assert publishing._fetch(clone, "rendered") is None  # the remote has no such branch


def test_source_commit_is_the_head_when_the_values_are_committed(tmp_path: Path) -> None:
    repo = repos.init(tmp_path / "repo")
    values = repo / "values"
    values.mkdir()
    (values / "fleet.yaml").write_text("a: 1\n")
    head = repos.commit_all(repo, "values")
    (repo / "NOTES.md").write_text("not values\n")  # a change outside the values: no matter
    assert publishing._source_commit(repo, values) == head
    (values / "fleet.yaml").write_text("a: 2\n")
    with pytest.raises(UsageError) as err:
        publishing._source_commit(repo, values)
    assert str(err.value) == (
        f"the values in {values} have uncommitted changes; commit them first (a publish names "
        "the source commit it was rendered from)"
    )


def test_source_commit_refuses_a_repository_without_a_commit(tmp_path: Path) -> None:
    repo = repos.init(tmp_path / "repo")
    values = repo / "values"
    values.mkdir()
    with pytest.raises(UsageError) as err:
        publishing._source_commit(repo, values)
    assert str(err.value) == f"{repo} has no commit yet; commit the values first"


@pytest.fixture
def dest(tmp_path: Path) -> Path:
    """Where _checkout puts the clone: a folder of its own, as publish's temporary folder."""
    (tmp_path / "publish-tmp").mkdir()
    return tmp_path / "publish-tmp" / "gitops"


def test_checkout_clones_the_branch_alone_without_tags(
    tmp_path: Path, remote: Path, dest: Path
) -> None:
    head = push_files(remote, {"overlays/prod/a/kustomization.yaml": "resources: []\n"}, "render")
    repos.git(remote, "branch", "other", "main~1")
    repos.git(remote, "tag", "v1", "main")
    assert publishing._checkout(str(remote), "main", dest) == dest
    assert repos.git(dest, "rev-parse", "HEAD") == head
    assert repos.git(dest, "symbolic-ref", "HEAD") == "refs/heads/main"
    assert repos.git(dest, "branch", "--remotes") == "origin/HEAD -> origin/main\n  origin/main"
    assert repos.git(dest, "tag") == ""
    assert (dest / "overlays/prod/a/kustomization.yaml").read_text() == "resources: []\n"


def test_checkout_of_a_new_branch_is_an_empty_repository_on_it(remote: Path, dest: Path) -> None:
    assert publishing._checkout(str(remote), "rendered", dest) == dest
    assert os.listdir(dest) == [".git"]
    assert repos.git(dest, "symbolic-ref", "HEAD") == "refs/heads/rendered"
    assert repos.git(dest, "remote", "get-url", "origin") == str(remote)
    assert repos.git(dest, "status", "--porcelain") == ""


def test_checkout_of_an_unreadable_repository_says_so(tmp_path: Path, dest: Path) -> None:
    nowhere = tmp_path / "nowhere.git"
    with pytest.raises(UsageError) as err:
        publishing._checkout(str(nowhere), "main", dest)
    assert str(err.value).startswith(
        f"cannot read the GitOps repository {nowhere}: fatal: '{nowhere}' does not appear to be "
        "a git repository\n"
    )
    assert not dest.exists()


def test_checkout_ignores_the_git_config_of_the_folder_it_is_started_in(
    tmp_path: Path, remote: Path, dest: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """publish is usually started inside the values' repository: its git config (here a URL
    rewrite) must not change which repository is read. (_checkout only reads, clones and
    creates: starting it inside a repository made here is safe.)"""
    here = repos.init(tmp_path / "values-repo")
    repos.git(here, "config", f"url.{tmp_path / 'nowhere.git'}.insteadOf", str(remote))
    monkeypatch.chdir(here)
    head = repos.git(remote, "rev-parse", "main")
    assert publishing._checkout(str(remote), "main", dest) == dest
    assert repos.git(dest, "rev-parse", "HEAD") == head


@pytest.fixture
def kind_without_schema(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An object of a kind no schema describes: kubeconform refuses it (K8S002), and the hint
    names the command that lays out the schemas."""

    def extra(view: FleetView) -> list[Component]:
        team = next(t for t in view.teams if t.name == "ml-team")
        obj: dict[str, Any] = {
            "apiVersion": "widgets.example.com/v1",
            "kind": "Widget",
            "metadata": metadata("w", namespace="ml-team", sources=team.doc.sources),
        }
        return [
            Component("team-ml-team", "extra/widget", [obj], origin=team.doc.anchor(("quota",)))
        ]

    monkeypatch.setattr(builders, "BUILDERS", (*builders.BUILDERS, builders.of_view(extra)))
    yield


@pytest.mark.usefixtures("kind_without_schema")
def test_publish_names_commands_as_the_user_runs_the_program(fleet: Path, remote: Path) -> None:
    args = ["publish", "--values", str(fleet), "--repo", str(remote), "--branch", "main"]
    result = CliRunner().invoke(
        main, [*args, "--no-cache"], obj=Invocation(Program("python render.py"))
    )
    assert result.exit_code == 1
    widgets = [line for line in result.stderr.splitlines() if " K8S002 Widget " in line]
    assert len(widgets) == 2  # one per environment
    for line in widgets:
        assert line.endswith(
            "generator/toolchain/gotools/schemas.lock.yaml and run `python render.py tools install`"
        )
