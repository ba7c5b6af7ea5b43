"""The cores of the commands: options in, a result out, nothing printed; the usage errors a core
finds in its options are raised, not printed."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

import pytest

from generator import Program
from generator.cluster import dryrun
from generator.cluster import plane as fleet_plane
from generator.cluster.dryrun import DryRunResult
from generator.commands.diff import DiffOptions, diff
from generator.commands.simulate import SimulateOptions, simulate
from generator.commands.validate import DryRun, ValidateCommand, validate
from generator.errors import UsageError
from generator.simulate import run as sim_run
from generator.simulate.result import SimulationResult
from generator.validate.progress import Progress
from generator.validate.run import ValidateOptions
from tests.fixtures import render_committed, two_teams


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        (
            DiffOptions(Path("values"), ("staging", "prod"), base="main"),
            "give either two environments or --base REF, not both",
        ),
        (
            DiffOptions(Path("values"), ("staging", "prod"), env="prod"),
            "--env goes with --base; two environments are compared whole",
        ),
        (DiffOptions(Path("values")), "give two environments (diff staging prod) or --base REF"),
        (
            DiffOptions(Path("values"), ("prod",)),
            "give two environments (diff staging prod) or --base REF",
        ),
    ],
)
def test_diff_refuses_what_its_options_do_not_say(opts: DiffOptions, message: str) -> None:
    with pytest.raises(UsageError) as info:
        diff(opts)
    assert str(info.value) == message


def test_validate_returns_its_result_and_prints_nothing(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    values = two_teams(tmp_path)
    assert render_committed(values) == 0
    capfd.readouterr()
    asked: list[tuple[str, tuple[str, ...]]] = []
    opts = ValidateOptions(values, "prod", drift=False, program=Program("python render.py"))
    done = validate(ValidateCommand(opts), Progress(None), lambda *a: asked.append(a))
    assert capfd.readouterr() == ("", "")
    assert asked == []  # no dry-run: no tools to build
    assert done.stats == {"units": 6, "objects": done.result.objects, "cached units": 0}
    assert [f.code for f in done.findings] == ["CAP001"]


def test_a_dry_run_on_a_cluster_needs_kubectl_a_local_one_a_control_plane_of_its_minor() -> None:
    assert DryRun(Path("kubeconfig")).tools() == ("kubectl",)
    assert DryRun(Path("kubeconfig")).tools("1.34") == ("kubectl",)
    assert {"etcd", "kube-apiserver", "kubectl", "kwok"} <= set(DryRun().tools())
    oldest = set(DryRun().tools("1.34"))
    assert {"etcd-1.34", "kube-apiserver-1.34", "kube-scheduler-1.34", "kwok"} <= oldest
    assert not {"etcd", "kube-apiserver", "kube-scheduler"} & oldest


def test_a_local_dry_run_builds_each_minors_plane_when_first_needed_and_says_what_it_ran_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = two_teams(tmp_path)
    assert render_committed(values) == 0
    asked: list[tuple[str, tuple[str, ...]]] = []

    def fake_dry_run(*_: object, prepare: Callable[[str], None], **__: object) -> DryRunResult:
        for minor in ("1.34", "1.36"):  # the minors of the fleet's clusters, oldest first
            prepare(minor)
        versions = {"prod/old": "v1.34.4", "prod/new": "v1.36.3", "staging": "v1.36.3"}
        return DryRunResult([], objects=7, versions=versions)

    monkeypatch.setattr(dryrun, "dry_run", fake_dry_run)
    opts = ValidateOptions(values, None, drift=False, program=Program("python render.py"))
    done = validate(ValidateCommand(opts, DryRun()), Progress(None), lambda *a: asked.append(a))
    assert [(command, "kube-apiserver-1.34" in tools) for command, tools in asked] == [
        ("validate --dry-run=server", True),
        ("validate --dry-run=server", False),
    ]
    assert "kube-apiserver" in asked[1][1]
    assert done.stats["dry-run objects"] == 7
    assert done.stats["dry-run on"] == "v1.34.4, v1.36.3"


def test_simulate_gives_each_minor_its_plane_its_tools_and_its_own_keep_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[tuple[str, tuple[str, ...]]] = []
    started: list[tuple[str, Path | None]] = []

    def fake_plane(*, keep_dir: Path | None, minor: str) -> contextlib.nullcontext[None]:
        started.append((minor, keep_dir))
        return contextlib.nullcontext()

    def fake_simulate(
        _values: Path, _env: object, planes: Callable[[str], object], **_: object
    ) -> SimulationResult:
        planes("1.34")
        planes("1.36")
        return SimulationResult([], [])

    monkeypatch.setattr(fleet_plane, "control_plane", fake_plane)
    monkeypatch.setattr(sim_run, "simulate", fake_simulate)
    opts = SimulateOptions(tmp_path / "values", keep=tmp_path / "keep", argocd=False)
    simulate(opts, lambda *a: asked.append(a))
    assert started == [("1.34", tmp_path / "keep" / "1.34"), ("1.36", tmp_path / "keep" / "1.36")]
    assert [a[0] for a in asked] == ["simulate", "simulate"]
    assert {"kube-apiserver-1.34", "etcd-1.34", "kwok", "prometheus"} <= set(asked[0][1])
    assert "kube-apiserver" not in asked[0][1] and "argocd" not in asked[0][1]
    assert {"kube-apiserver", "etcd"} <= set(asked[1][1])


@pytest.mark.parametrize("phases", [False, True])
def test_simulate_hands_the_phase_walk_to_the_simulation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, phases: bool
) -> None:
    """simulate --phases (cli/cluster.py) walks each migrating service's phases; without it,
    none."""
    given: dict[str, object] = {}

    def fake_simulate(_values: Path, _env: object, _planes: object, **kw: object) -> object:
        given.update(kw)
        return SimulationResult([], [])

    monkeypatch.setattr(sim_run, "simulate", fake_simulate)
    simulate(SimulateOptions(tmp_path / "values", phases=phases), lambda *a: None)
    assert given["phases"] is phases
