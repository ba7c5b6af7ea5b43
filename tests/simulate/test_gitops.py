"""simulate's Argo CD step without a control plane: how the published tree is localized (the
repository URL, the add-on charts, the other clusters' Applications), and the judge's verdicts
on what the observer recorded (simulate/gitops.py). What the real Argo CD does is
tests/cluster/test_argocd.py's."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest
import yaml

from generator.findings import Location
from generator.simulate import gitops
from generator.simulate.gitops import AppSeen, ArgoRun, localize, publish

REPO = "https://git.example.com/fleet.git"
URL = "file:///tmp/x/fleet.git"


def app(name: str, source: dict[str, object], labels: dict[str, str] | None = None) -> dict:  # type: ignore[type-arg]
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name, "namespace": "argocd", "labels": labels or {}},
        "spec": {"project": "p", "source": source, "destination": {"server": "s"}},
    }


def test_an_application_of_the_fleets_repository_syncs_from_the_local_one() -> None:
    unit = app(
        "f-dev-team-a", {"repoURL": REPO, "path": "overlays/dev/team-a", "targetRevision": "main"}
    )
    local = localize(unit, REPO, URL, "main")
    assert local is not None
    assert local["spec"]["source"] == {
        "repoURL": URL,
        "path": "overlays/dev/team-a",
        "targetRevision": "main",
    }
    assert unit["spec"]["source"]["repoURL"] == REPO  # the input is left as it was


def test_an_add_on_application_syncs_its_chart_from_the_local_repository_with_its_values() -> None:
    """JobSet's chart ships in a Go module: the same chart, under charts/jobset of the local
    repository, at the published branch, with the Application's Helm values unchanged."""
    helm = {"releaseName": "jobset", "valuesObject": {"image": {"tag": "v0.11.1"}}}
    jobset = app(
        "f-dev-jobset",
        {
            "repoURL": "registry.k8s.io/jobset/charts",
            "chart": "jobset",
            "targetRevision": "0.11.1",
            "helm": helm,
        },
        {"accel-gitops.io/addon": "jobset"},
    )
    local = localize(jobset, REPO, URL, "prod")
    assert local is not None
    assert local["spec"]["source"] == {
        "repoURL": URL,
        "path": "charts/jobset",
        "targetRevision": "prod",
        "helm": helm,
    }


def test_an_add_on_whose_chart_no_module_ships_is_left_out() -> None:
    volcano = app(
        "f-dev-volcano",
        {"repoURL": "https://volcano-sh.github.io/helm-charts", "chart": "volcano"},
        {"accel-gitops.io/addon": "volcano"},
    )
    assert localize(volcano, REPO, URL, "main") is None


def test_a_project_allows_the_local_repository_for_the_fleets_and_the_charts() -> None:
    project = {
        "kind": "AppProject",
        "metadata": {"name": "p"},
        "spec": {"sourceRepos": [REPO, "registry.k8s.io/jobset/charts", "https://other.example"]},
    }
    local = localize(project, REPO, URL, "main")
    assert local is not None
    assert local["spec"]["sourceRepos"] == [URL, "https://other.example"]


def test_a_project_allows_the_local_repository_for_a_mirrored_chart_repository() -> None:
    """With values `mirrors`, the platform project names the mirror (mirror.example.cn/k8s/...):
    the simulation serves the chart from its local repository, which the project must allow
    in its place."""
    project = {
        "kind": "AppProject",
        "metadata": {"name": "p"},
        "spec": {"sourceRepos": ["mirror.example.cn/k8s/jobset/charts", "https://other.example"]},
    }
    local = localize(project, REPO, URL, "main", {"mirror.example.cn/k8s/jobset/charts"})
    assert local is not None
    assert local["spec"]["sourceRepos"] == [URL, "https://other.example"]
    unlisted = localize(project, REPO, URL, "main")
    assert unlisted is not None
    assert unlisted["spec"]["sourceRepos"] == [
        "https://other.example",
        "mirror.example.cn/k8s/jobset/charts",
    ]


def test_publishing_one_cluster_keeps_the_hubs_applications_of_that_cluster_alone(
    tmp_path: Path,
) -> None:
    """prod's hub unit holds a root per cluster: simulating `domestic`, the main cluster's root
    is left out of the published tree (file and kustomization entry), and an add-on without a
    module is left out and named; what is committed is on the environment's branch."""
    hub = "overlays/prod/argocd"
    roots = {
        "main": app(
            "f-prod-main-root",
            {"repoURL": REPO, "path": "overlays/prod/main/argocd"},
            {"accel-gitops.io/cluster": "main"},
        ),
        "domestic": app(
            "f-prod-domestic-root",
            {"repoURL": REPO, "path": "overlays/prod/domestic/argocd"},
            {"accel-gitops.io/cluster": "domestic"},
        ),
    }
    volcano = app(
        "f-prod-volcano", {"repoURL": "x", "chart": "volcano"}, {"accel-gitops.io/addon": "volcano"}
    )
    tree = {
        f"{hub}/kustomization.yaml": yaml.safe_dump(
            {"resources": ["main.yaml", "domestic.yaml", "volcano.yaml"]}
        ),
        f"{hub}/main.yaml": yaml.safe_dump(roots["main"]),
        f"{hub}/domestic.yaml": yaml.safe_dump(roots["domestic"]),
        f"{hub}/volcano.yaml": yaml.safe_dump(volcano),
        "base/x.yaml": "a: 1\n",
    }
    published = publish(tree, [hub], REPO, "prod", tmp_path, "domestic")
    assert published.dropped == ["f-prod-volcano"]
    assert published.url == f"file://{tmp_path / 'fleet.git'}"
    files = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", "prod"],
        cwd=tmp_path / "fleet.git",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert files == ["base/x.yaml", f"{hub}/domestic.yaml", f"{hub}/kustomization.yaml"]
    kust = yaml.safe_load((published.checkout / hub / "kustomization.yaml").read_text())
    assert kust["resources"] == ["domestic.yaml"]
    root = yaml.safe_load((published.checkout / hub / "domestic.yaml").read_text())
    assert root["spec"]["source"]["repoURL"] == published.url


def test_publishing_allows_the_local_repository_in_place_of_a_mirrored_chart_repository(
    tmp_path: Path,
) -> None:
    """The add-on Applications of the published folders name the mirror their project allows:
    publish reads it from them and localizes the project's entry."""
    hub = "overlays/prod/argocd"
    mirror = "https://charts.example.cn/volcano"
    volcano = app(
        "f-prod-volcano",
        {"repoURL": mirror, "chart": "volcano"},
        {"accel-gitops.io/addon": "volcano"},
    )
    project = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": {"name": "f-platform", "namespace": "argocd"},
        "spec": {"sourceRepos": [mirror]},
    }
    tree = {
        f"{hub}/kustomization.yaml": yaml.safe_dump({"resources": ["p.yaml", "volcano.yaml"]}),
        f"{hub}/p.yaml": yaml.safe_dump(project),
        f"{hub}/volcano.yaml": yaml.safe_dump(volcano),
    }
    published = publish(tree, [hub], REPO, "prod", tmp_path)
    local = yaml.safe_load((published.checkout / hub / "p.yaml").read_text())
    assert local["spec"]["sourceRepos"] == [published.url]


def seen(name: str, wave: int, **kw: object) -> AppSeen:
    out = AppSeen(name, wave, "team-a" if wave == 2 else "node-config")
    out.sync, out.health, out.settled_at, out.syncs = "Synced", "Healthy", 1.0, 1
    for key, value in kw.items():
        setattr(out, key, value)
    return out


def judged(run: ArgoRun) -> tuple[list[dict], list]:  # type: ignore[type-arg]
    where = {
        "a": Location("values/teams/a.yaml", 3, 1),
        "n": Location("values/vendors/n.yaml", 2, 1),
    }
    return gitops.judge(run, where)


def test_the_judge_passes_applications_that_settled_in_order_and_stayed() -> None:
    rows, found = judged(ArgoRun({"n": seen("n", 0), "a": seen("a", 2)}))
    assert found == []
    assert [
        (r["application"], r["wave"], r["sync"], r["health"], r["settled"], r["ok"]) for r in rows
    ] == [
        ("n", 0, "Synced", "Healthy", "1.0s", True),
        ("a", 2, "Synced", "Healthy", "1.0s", True),
    ]


def test_an_application_that_never_settles_is_sim020_with_argo_cds_words() -> None:
    failed = seen(
        "a",
        2,
        sync="OutOfSync",
        health="Missing",
        settled_at=None,
        messages=["one or more synchronization tasks are not valid"],
        unfinished=["Widget a/w: OutOfSync/Missing"],
    )
    rows, found = judged(ArgoRun({"n": seen("n", 0), "a": failed}))
    assert [r["ok"] for r in rows] == [True, False]
    assert [(f.code, f.location.file, f.location.line) for f in found] == [
        ("SIM020", "values/teams/a.yaml", 3)
    ]
    assert found[0].message == (
        "Argo CD leaves Application a OutOfSync/Missing: one or more synchronization tasks are "
        "not valid; Widget a/w: OutOfSync/Missing"
    )


def test_an_application_created_before_an_earlier_wave_was_healthy_is_sim021() -> None:
    rows, found = judged(ArgoRun({"n": seen("n", 0), "a": seen("a", 2, early=["n"])}))
    assert [(f.code, f.location.file) for f in found] == [("SIM021", "values/teams/a.yaml")]
    assert found[0].message == (
        "Argo CD created Application a (wave 2) while n of an earlier wave had never been Healthy"
    )


def test_a_field_fought_over_after_the_sync_is_sim022_naming_object_and_writer() -> None:
    fought = seen("n", 0, drifted=["Secret s/cert: data (by jobset)"], syncs=3)
    rows, found = judged(ArgoRun({"n": fought}))
    assert [r["ok"] for r in rows] == [False]
    assert [(f.code, f.location.file, f.location.line) for f in found] == [
        ("SIM022", "values/vendors/n.yaml", 2)
    ]
    assert found[0].message == (
        "Application n: after Argo CD had synced it and synced it 3 times, with one revision in "
        "Git, another writer changed what it applies, which self-heal takes back: Secret "
        "s/cert: data (by jobset)"
    )


def test_a_root_and_a_team_progressing_only_while_they_wait_are_settled_and_said_so() -> None:
    root = seen("r", -10, health="Progressing", running_only=True)
    root.unit = "argocd"
    team = seen("a", 2, health="Progressing", running_only=True)
    rows, found = gitops.judge(ArgoRun({"r": root, "a": team}), {})
    assert found == []
    assert [(r["application"], r["note"], r["ok"]) for r in rows] == [
        ("r", "as its Applications", True),
        ("a", "Jobs running", True),
    ]


def test_a_site_on_another_argo_cd_is_told_what_the_run_did_not_prove(tmp_path: Path) -> None:
    """argocd.version v3.4.1: SIM011 at it, naming v3.4's health change; v3.2.6 (the version
    simulated) or no version: nothing."""
    from generator.values import loader
    from tests.fixtures import FLEET, tree

    def view(version: str) -> object:
        fleet = FLEET + (f"argocd: {{version: {version}}}\n" if version else "")
        return loader.load(tree(tmp_path / (version or "none"), fleet=fleet)).envs["prod"]

    [found] = gitops.version_differs(view("v3.4.1"))  # type: ignore[arg-type]
    assert (found.code, found.location.file, found.location.line) == (
        "SIM011",
        "values/fleet.yaml",
        5,
    )
    assert found.message == (
        "the site runs Argo CD v3.4.1 (argocd.version); the simulation ran v3.2.6, so what "
        "differs between them was not exercised; known: from v3.4 Missing resources do not "
        "count in an Application's health (argo-cd PR #25962), so a wave can start before the "
        "previous one has all its objects"
    )
    [older] = gitops.version_differs(view("v3.1.0"))  # type: ignore[arg-type]
    assert "known" not in older.message
    assert gitops.version_differs(view("v3.2.6")) == []  # type: ignore[arg-type]
    assert gitops.version_differs(view("")) == []  # type: ignore[arg-type]


class ScriptedApplications:
    """An API whose list of Applications is one scripted look after another (the last repeats)."""

    def __init__(self, looks: list[list[dict]]) -> None:  # type: ignore[type-arg]
        self.looks = looks

    def list(self, api_version: str, kind: str, namespace: str) -> list[dict]:  # type: ignore[type-arg]
        return self.looks.pop(0) if len(self.looks) > 1 else self.looks[0]


def looked(name: str, sync: str, health: str, revision: str = "r1") -> dict:  # type: ignore[type-arg]
    return {
        "metadata": {"name": name},
        "status": {"sync": {"status": sync, "revision": revision}, "health": {"status": health}},
    }


def observed(looks: list[list[dict]], monkeypatch: pytest.MonkeyPatch) -> ArgoRun:  # type: ignore[type-arg]
    monkeypatch.setattr(gitops, "WATCH", 0.0)
    monkeypatch.setattr(gitops, "POLL", 0.0)
    api = ScriptedApplications(looks)
    expected = {"node-config": (0, "node-config"), "team-a": (2, "team-a")}
    return gitops.observe(api, "argocd", expected, "r1")  # type: ignore[arg-type]


def test_an_earlier_wave_healthy_in_the_look_that_first_shows_the_later_one_is_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One look lists the later wave first and the earlier one Healthy after it: Argo CD created
    # team-a after node-config was Healthy, whatever order the list has.
    run = observed(
        [
            [looked("node-config", "OutOfSync", "Progressing")],
            [looked("team-a", "Synced", "Healthy"), looked("node-config", "Synced", "Healthy")],
        ],
        monkeypatch,
    )
    assert run.apps["team-a"].early == []
    assert gitops.judge(run, {})[1] == []


def test_a_later_wave_created_while_the_earlier_one_was_never_healthy_is_early(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run = observed(
        [
            [
                looked("team-a", "Synced", "Healthy"),
                looked("node-config", "OutOfSync", "Progressing"),
            ],
            [looked("team-a", "Synced", "Healthy"), looked("node-config", "Synced", "Healthy")],
        ],
        monkeypatch,
    )
    assert run.apps["team-a"].early == ["node-config"]
    assert [f.code for f in gitops.judge(run, {})[1]] == ["SIM021"]


def test_an_application_progressing_only_on_its_routes_is_settled_and_said_so() -> None:
    """No Gateway implementation runs here: an HTTPRoute stays "Waiting for HTTPRoute status"
    (argo-cd v3.2.6 HTTPRoute health.lua). An Application Progressing on it alone, or on it and
    a running Job, is settled; on a Deployment that is not, it is not."""
    route = {"kind": "HTTPRoute", "namespace": "i", "name": "chat", "status": "Synced"}
    job = {"kind": "Job", "namespace": "i", "name": "train", "status": "Synced"}
    deployment = {"kind": "Deployment", "namespace": "i", "name": "d", "status": "Synced"}

    def application(*resources: Mapping[str, object]) -> dict[str, object]:
        return {
            "status": {
                "sync": {"status": "Synced"},
                "health": {"status": "Progressing"},
                "resources": [{**r, "health": {"status": "Progressing"}} for r in resources],
            }
        }

    assert gitops.settled(application(route))
    assert gitops.settled(application(route, job))
    assert not gitops.settled(application(route, deployment))
    team = seen("a", 2, health="Progressing", running_only=True)
    team.unfinished = ["HTTPRoute i/chat: Synced/Progressing"]
    both = seen("b", 2, health="Progressing", running_only=True)
    both.unfinished = ["HTTPRoute i/chat: Synced/Progressing", "Job i/train: Synced/Progressing"]
    rows, found = gitops.judge(ArgoRun({"a": team, "b": both}), {})
    assert found == []
    assert [(r["application"], r["note"], r["ok"]) for r in rows] == [
        ("a", "routes await the site's Gateway", True),
        ("b", "Jobs running; routes await the site's Gateway", True),
    ]
