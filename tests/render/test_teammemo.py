"""The team builds' memo (render/teammemo.py): a view that changed builds again only the teams
whose values changed, and a team's build read back is the one building it gives, its pod
templates inside its objects as built.

The values: benchmarks/fleet.py's tree of 3 teams (each a Job and a service of two tracks) in
environments dev, staging and prod, one cluster each; the base layer is the fourth view.
"""

from __future__ import annotations

import dataclasses
import hashlib
import marshal
from pathlib import Path
from typing import Any

import pytest

from benchmarks.fleet import make_values
from generator.builders import workloads
from generator.builders.build import PodRef, TeamBuild
from generator.policy import memo
from generator.render import teammemo
from generator.render.stage import Checked, load_and_check
from generator.values import loader
from generator.values.model import FleetView, Team
from generator.workloads.model import Workloads
from generator.workloads.usage import Pinned, Usage

VIEWS = ["", "dev", "prod", "staging"]
BUILD = workloads.team_build  # the builder itself (tests spy on it)


class Built:
    """The (view, team) pairs built, in order."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.pairs: list[tuple[str, str]] = []

        def spy(model: Workloads, team: Team) -> TeamBuild:
            self.pairs.append((model.view.key, team.name))
            return BUILD(model, team)

        monkeypatch.setattr(workloads, "team_build", spy)  # the module Build calls

    def take(self) -> list[tuple[str, str]]:
        out, self.pairs = sorted(self.pairs), []
        return out


def values_of(tmp_path: Path) -> Path:
    values = tmp_path / "values"
    make_values(values, 3)
    return values


def edit(values: Path, team: str, old: str, new: str) -> None:
    path = values / "teams" / f"{team}.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def every_build(checked: Checked) -> dict[tuple[str, str], TeamBuild]:
    return {
        (key, t.name): build.team(t)
        for key, build in checked.builds.items()
        for t in build.view.teams
    }


def fresh(checked: Checked) -> dict[tuple[str, str], TeamBuild]:
    """Each team's build made now, by the builder (no memo)."""
    return {
        (key, t.name): BUILD(Workloads(build.view), t)
        for key, build in checked.builds.items()
        for t in build.view.teams
    }


def same(a: TeamBuild, b: TeamBuild) -> bool:
    """The same objects, pod templates, usage and pinned parts (their team's values file and
    team the same objects)."""
    pods = [(p.kind, p.name, p.spec, p.path, p.count) for p in a.pods]
    return (
        a.objects == b.objects
        and pods == [(p.kind, p.name, p.spec, p.path, p.count) for p in b.pods]
        and a.usage == b.usage
        and a.pinned == b.pinned
    )


def inside(pod: PodRef, objects: list[Any]) -> bool:
    """Whether the pod's template is (by identity) part of one of the objects."""
    return any(teammemo._path_to(pod.spec, obj, ()) is not None for obj in objects)


def test_an_edit_builds_again_only_the_edited_team(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values, cache = values_of(tmp_path), tmp_path / "cache"
    built = Built(monkeypatch)
    load_and_check(values, cache)
    assert len(built.take()) == 12  # 3 teams in each of the 4 views
    load_and_check(values, cache)
    assert built.take() == []  # no view changed: neither checked nor built
    # team-0001's NVIDIA quota: the base's, and dev's and prod's (staging sets its own)
    edit(values, "team-0001", "nvidia: 4", "nvidia: 3")
    checked = load_and_check(values, cache)
    assert built.take() == [("", "team-0001"), ("dev", "team-0001"), ("prod", "team-0001")]
    kept, made = every_build(checked), fresh(checked)
    assert sorted(kept) == sorted(made) and len(kept) == 12
    for pair, build in kept.items():
        assert same(build, made[pair]), pair
        assert build.pods and all(inside(p, build.objects) for p in build.pods), pair
        # each pod names the team object of this run (a read-back build: the view's, not a
        # copy from the entry)
        [team] = [t for t in checked.builds[pair[0]].view.teams if t.name == pair[1]]
        assert all(p.team is team for p in build.pods), pair
        assert build.usage and all(u.team_doc is team.doc for u in build.usage), pair

    def usage(view: str, team: str) -> list[tuple[object, ...]]:
        return [
            (
                u.vendor,
                u.namespace,
                u.services,
                u.largest_job,
                u.quota,
                u.jobs_total,
                u.detail,
                u.blame,
            )
            for u in kept[(view, team)].usage
        ]

    # read back: dev's own NVIDIA quota for team-0000 (2); built again: team-0001's new quota
    serve = ("services", "serve", "tracks")
    assert usage("dev", "team-0000") == [
        ("ascend", "team-0000", 1, 0, 4, 0, "service serve 1x1=1", (*serve, "ascend", "replicas")),
        (
            "nvidia",
            "team-0000",
            1,
            1,
            2,
            1,
            "service serve 1x1=1, job train=1",
            (*serve, "nvidia", "replicas"),
        ),
    ]
    assert [u[4] for u in usage("prod", "team-0001")] == [4, 3]
    assert [u[4] for u in usage("staging", "team-0001")] == [4, 3]  # staging's own, kept


def test_what_every_team_reads_besides_itself_builds_every_team_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A vendor's values (every team's NVIDIA pods read its pool's model) and the checks' salt
    (the generator's code): every team of every view is built again."""
    values, cache = values_of(tmp_path), tmp_path / "cache"
    built = Built(monkeypatch)
    load_and_check(values, cache)
    built.take()
    nvidia = values / "vendors" / "nvidia.yaml"
    nvidia.write_text(nvidia.read_text() + "nodeLabels: {accelerator: nvidia-other}\n")
    checked = load_and_check(values, cache)
    assert len(built.take()) == 12
    made = fresh(checked)
    assert all(same(b, made[p]) for p, b in every_build(checked).items())
    monkeypatch.setattr(memo, "salt", lambda: "another code")
    edit(values, "team-0002", "nvidia: 4", "nvidia: 3")  # a view changed, so it is checked
    load_and_check(values, cache)
    assert len(built.take()) == 12


def test_a_run_that_may_not_write_keeps_nothing_and_a_damaged_entry_builds_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values, cache = values_of(tmp_path), tmp_path / "cache"
    built = Built(monkeypatch)
    load_and_check(values, cache, write_cache=False)
    assert not (cache / teammemo.FOLDER).exists()
    load_and_check(values, cache)
    built.take()
    entries = sorted((cache / teammemo.FOLDER).iterdir())
    assert len(entries) == 4  # one per view
    for path in entries:
        path.write_bytes(path.read_bytes()[:100])
    # team-0000's Ascend quota (no environment sets its own): every view changed, and builds
    # every team, their entries unreadable.
    edit(values, "team-0000", "ascend: 4", "ascend: 3")
    checked = load_and_check(values, cache)
    assert len(built.take()) == 12
    made = fresh(checked)
    assert all(same(b, made[p]) for p, b in every_build(checked).items())
    # Written whole again: the next edit builds one team per view.
    edit(values, "team-0000", "ascend: 3", "ascend: 2")
    load_and_check(values, cache)
    assert built.take() == [(key, "team-0000") for key in VIEWS]


def test_a_pod_template_apart_from_the_objects_is_kept_by_value() -> None:
    """A TrainJob's pod template is made apart from its TrainJob (builders/workloads.py
    trainjob_pod): kept as it is; one inside an object is put back inside it."""
    team = object.__new__(Team)
    job: dict[str, Any] = {
        "kind": "Job",
        "spec": {"template": {"spec": {"containers": [{"name": "a"}]}}},
    }
    apart = {"containers": [{"name": "b"}]}
    pods = [
        PodRef(team, "Job", "j", job["spec"]["template"]["spec"], ("jobs", "j"), 2),
        PodRef(team, "TrainJob", "t", apart, ("jobs", "t"), 1),
    ]
    back = teammemo.decode(teammemo.encode(TeamBuild([job], pods, (), ())), team)
    assert back.objects == [job]
    assert back.pods[0].spec is back.objects[0]["spec"]["template"]["spec"]
    assert back.pods[1].spec == apart and not inside(back.pods[1], back.objects)
    assert [(p.team, p.kind, p.name, p.path, p.count) for p in back.pods] == [
        (team, "Job", "j", ("jobs", "j"), 2),
        (team, "TrainJob", "t", ("jobs", "t"), 1),
    ]


def test_the_usage_and_pinned_parts_are_kept_and_name_the_team_of_this_run() -> None:
    """What a team's workloads hold per vendor (MIG004/5/7, plan) and per pool model (SCH006)
    comes back field by field, its values file and team those of the run that reads it."""
    old, team = object.__new__(Team), object.__new__(Team)
    object.__setattr__(old, "doc", object())
    object.__setattr__(team, "doc", object())
    path = ("services", "s", "tracks", "nvidia", "replicas")
    use = Usage("nvidia", "ml", 2, 3, 6, 7, "service s 2x1=2, job j=3", path, old.doc)
    pin = Pinned(old, "nvidia", ("a100", "h100"), 4, True, ("jobs", "j"), "job j")
    back = teammemo.decode(teammemo.encode(TeamBuild([], [], (use,), (pin,))), team)
    assert back.usage == (
        Usage("nvidia", "ml", 2, 3, 6, 7, "service s 2x1=2, job j=3", path, team.doc),
    )
    assert back.pinned == (
        Pinned(team, "nvidia", ("a100", "h100"), 4, True, ("jobs", "j"), "job j"),
    )
    assert back.usage[0].team_doc is team.doc and back.pinned[0].team is team


def test_a_pod_template_in_a_list_is_put_back_in_its_place() -> None:
    """A Volcano Job's tasks are a list: its second task's template is found there, and is the
    second task's (not the first's, equal to it) once read back."""
    team = object.__new__(Team)
    spec = {"containers": [{"name": "w"}]}
    twin = {"containers": [{"name": "w"}]}
    job: dict[str, Any] = {
        "kind": "Job",
        "spec": {"tasks": [{"template": {"spec": twin}}, {"template": {"spec": spec}}]},
    }
    pods = [PodRef(team, "Job (volcano) task", "j/b", spec, ("jobs", "j", "tasks", "b"), 3)]
    back = teammemo.decode(teammemo.encode(TeamBuild([{"kind": "Queue"}, job], pods, (), ())), team)
    assert back.pods[0].spec is back.objects[1]["spec"]["tasks"][1]["template"]["spec"]
    assert back.pods[0].path == ("jobs", "j", "tasks", "b") and back.pods[0].count == 3


def test_the_entry_of_a_view_the_values_no_longer_have_is_removed(tmp_path: Path) -> None:
    values, cache = values_of(tmp_path), tmp_path / "cache"
    load_and_check(values, cache)
    assert len(list((cache / teammemo.FOLDER).iterdir())) == 4
    (values / "environments" / "staging.yaml").unlink()
    fleet_yaml = values / "fleet.yaml"
    fleet_yaml.write_text(fleet_yaml.read_text().replace("- staging\n", ""))
    load_and_check(values, cache)
    names = sorted(p.name for p in (cache / teammemo.FOLDER).iterdir())
    # each view's entry named by its layer (as layouts/ names them)
    assert names == sorted(
        "view-" + hashlib.sha256(key.encode()).hexdigest()[:24] + ".marshal"
        for key in ("", "dev", "prod")
    )


# ---- the entries, at the unit level ----------------------------------------------------------


def memo_in(folder: Path) -> teammemo.TeamMemo:
    return teammemo.TeamMemo(folder, True, memo.Digests())


def a_build(kind: str) -> TeamBuild:
    return TeamBuild([{"kind": kind}], [], (), ())


def test_an_entry_keeps_the_teams_not_asked_and_drops_those_gone(tmp_path: Path) -> None:
    """Run 1 builds teams 0, 1 and a team since removed; run 2 reads team 0 back, builds a new
    team and does not ask for team 1: its entry holds teams 0, 1 and the new one; run 3 reads
    all three back and writes nothing."""
    make_values(tmp_path / "values", 3)
    view = loader_view(tmp_path / "values")
    a, b, c = view.teams
    folder = tmp_path / "deep" / "cache" / "teams"  # its parents made too
    first = memo_in(folder)
    kept = first.of(dataclasses.replace(view, teams=(a, b, c)))
    assert kept is not None
    for team in (a, b, c):
        kept.put(team, a_build(team.name))
    first.save()
    new = dataclasses.replace(c, name="team-new")
    second = memo_in(folder)
    now = second.of(dataclasses.replace(view, teams=(a, b, new)))
    assert now is not None
    got = now.get(a)
    assert got is not None and got.objects == [{"kind": "team-0000"}]
    assert now.get(new) is None
    now.put(new, a_build("new"))
    second.save()
    [entry] = folder.iterdir()
    assert sorted(teammemo.TeamMemo(folder, False, memo.Digests()).read(entry.stem)) == [
        "team-0000",
        "team-0001",
        "team-new",
    ]
    inode = entry.stat().st_ino
    third = memo_in(folder)
    again = third.of(dataclasses.replace(view, teams=(a, b, new)))
    assert again is not None
    assert [again.get(t) for t in (a, b, new)] == [
        a_build("team-0000"),
        a_build("team-0001"),
        a_build("new"),
    ]
    third.save()
    assert entry.stat().st_ino == inode  # nothing built: not written again


def test_an_entry_of_another_format_or_a_build_marshal_cannot_write_is_built(
    tmp_path: Path,
) -> None:
    make_values(tmp_path / "values", 1)
    view = loader_view(tmp_path / "values")
    [team] = view.teams
    folder = tmp_path / "teams"
    first = memo_in(folder)
    kept = first.of(view)
    assert kept is not None
    kept.put(team, a_build("ok"))
    first.save()
    [entry] = folder.iterdir()
    _, entries = marshal.loads(entry.read_bytes())
    entry.write_bytes(marshal.dumps(("teams-0", entries)))
    second = memo_in(folder)
    now = second.of(view)
    assert now is not None and now.get(team) is None
    now.put(team, TeamBuild([{"kind": "X", "set": {1, 2}}], [], (), ()))
    second.save()
    third = memo_in(folder).of(view)
    assert third is not None and third.get(team) == TeamBuild(
        [{"kind": "X", "set": {1, 2}}], [], (), ()
    )
    # A value marshal cannot write: not kept (and not an error), in a folder of no entries.
    fresh_memo = memo_in(tmp_path / "other")
    now = fresh_memo.of(view)
    assert now is not None
    now.put(team, TeamBuild([{"kind": "X", "bad": object()}], [], (), ()))
    assert now.entry() == {}
    fresh_memo.save()
    [empty] = (tmp_path / "other").iterdir()
    assert marshal.loads(empty.read_bytes()) == (teammemo.FORMAT, {})


def loader_view(values: Path) -> FleetView:
    return loader.load(values).envs["dev"]
