"""Each view's components kept by the view's digest: read back, they are what the builders
made; after one team's edit only the views holding its share are built again."""

from __future__ import annotations

import marshal
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
import yaml

from benchmarks.fleet import make_values
from generator.builders.fleet import Build
from generator.findings import Location
from generator.render import buildmemo
from generator.render.stage import RenderOptions, render
from generator.values.yamlio import dump
from generator.vocab.units import Component, UserPatch

TARGET = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "t"}}


def test_components_read_back_are_the_ones_kept() -> None:
    made = (
        Component(
            "team-a",
            "teams/a",
            [TARGET, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}}],
            Location("values/teams/a.yaml", 1, 1),
            {("v1", "Service", "t", "s"): Location("values/teams/a.yaml", 7, 3)},
            [
                UserPatch(TARGET, {"spec": {"type": "NodePort"}}),
                UserPatch(TARGET, [{"op": "remove", "path": "/spec/ports/0"}]),
            ],
        ),
        Component("monitoring", "monitoring/rules", [], None, {}, []),
    )
    assert buildmemo.decode(buildmemo.encode(made)) == made


def _build() -> Build:
    """What the entry's code reads of a build: the encodings it holds (none yet)."""
    return cast(Build, SimpleNamespace(encoded=None))


JOB = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "t"}}


def test_a_views_entry_is_each_units_encoding_and_gives_the_components_in_their_order(
    tmp_path: Path,
) -> None:
    a1 = Component("team-a", "teams/a", [TARGET], Location("values/teams/a.yaml", 1, 1))
    b1 = Component("monitoring", "monitoring/rules", [{"kind": "PrometheusRule"}])
    a2 = Component("team-a", "workloads/a", [JOB])
    made = (a1, b1, a2)  # a unit's components apart in the order made
    build = _build()
    blob = buildmemo.encode_view(build, made)
    # The layout compares a unit by these bytes: encoded once, kept on the build.
    units = {"team-a": buildmemo.encode((a1, a2)), "monitoring": buildmemo.encode((b1,))}
    assert build.encoded == units
    assert buildmemo.unit_blobs(build) is build.encoded
    assert marshal.loads(blob) == ("components-2", ("team-a", "monitoring", "team-a"), units)
    read = _build()
    assert buildmemo.decode_view(blob, read) == made
    assert read.encoded == units
    path = tmp_path / "entry.marshal"
    path.write_bytes(blob)
    assert buildmemo._read(path, _build()) == made


@pytest.mark.parametrize(
    "entry",
    [
        ("components-1", ("team-a",), {"team-a": b"x"}),  # another format
        ("components-2", ("team-a",), {"team-a": "OK"}),  # one component fewer than held
        ("components-2", ("team-a", "team-a", "team-a"), "OK"),  # one more than held
        ("components-2", ("team-b",), "OK"),  # a unit it does not hold
    ],
)
def test_an_entry_that_does_not_hold_what_it_says_is_built_instead(
    tmp_path: Path, entry: tuple[str, tuple[str, ...], dict[str, bytes] | str]
) -> None:
    two = buildmemo.encode(
        (Component("team-a", "teams/a", [TARGET]), Component("team-a", "w", [JOB]))
    )
    fmt, order, blobs = entry
    path = tmp_path / "entry.marshal"
    held = {"team-a": two} if isinstance(blobs, str) else blobs
    path.write_bytes(marshal.dumps((fmt, order, held)))
    build = _build()
    assert buildmemo._read(path, build) is None
    assert build.encoded is None  # the layout encodes what is built


def test_after_one_teams_edit_only_the_views_holding_it_are_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values, out, cache = tmp_path / "values", tmp_path / "out", tmp_path / "cache"
    make_values(values, 4, clusters=2)
    recalled: list[list[str]] = []
    real = buildmemo.ComponentMemo.attach

    def attach(self: buildmemo.ComponentMemo, builds: dict[str, object]) -> None:
        real(self, builds)  # type: ignore[arg-type]
        recalled.append(sorted(self.recalled))

    monkeypatch.setattr(buildmemo.ComponentMemo, "attach", attach)
    render(RenderOptions(values, out, cache_dir=cache))
    render(RenderOptions(values, out, cache_dir=cache))
    team = values / "teams" / "team-0001.yaml"
    raw = yaml.safe_load(team.read_text())
    raw["quota"]["amd"]["c01"] = 3  # its share in c01 alone
    team.write_text(dump(raw))
    render(RenderOptions(values, out, cache_dir=cache))
    # The layers: the base ("") and the two clusters (prod's hub, which has no pools, builds
    # nothing a render reads). The edit changes the base and c01.
    assert recalled == [[], ["", "prod/c00", "prod/c01"], ["prod/c00"]]
    assert len(list((cache / buildmemo.FOLDER).iterdir())) == 3  # the changed views' old gone


def test_a_builder_added_at_run_time_is_not_served_the_components_kept_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from generator.builders import fleet as builders
    from generator.values.model import FleetView

    values, out, cache = tmp_path / "values", tmp_path / "out", tmp_path / "cache"
    make_values(values, 2, clusters=2)
    render(RenderOptions(values, out, cache_dir=cache))
    extra = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "extra"}}

    def more(view: FleetView) -> list[Component]:
        return [Component("team-team-0000", "extra", [extra])]

    monkeypatch.setattr(builders, "BUILDERS", (*builders.BUILDERS, builders.of_view(more)))
    render(RenderOptions(values, out, cache_dir=cache))
    assert (out / "base/extra/configmap-extra.yaml").is_file()


def test_the_builders_are_named_by_the_function_each_wraps() -> None:
    """A view's key names the builders this process runs: of_view's wrapper by the builder it
    wraps, the others by their own name."""
    assert buildmemo.builders() == (
        "components",
        "generator.builders.node_config.build",
        "generator.builders.device_plugins.build",
        "generator.builders.monitoring.component.build",
        "generator.builders.teams.build",
        "generator.builders.security.build",
        "generator.builders.workloads.build",
        "generator.builders.scheduling.build",
    )


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        (("components-1", ("team-a",), {}), "^an entry of another format$"),
        (
            ("components-2", ("team-a", "team-a", "team-a")),
            "^an entry naming more components than it holds$",
        ),
        (("components-2", ("team-a",)), "^an entry holding components it does not place$"),
    ],
)
def test_a_malformed_entry_says_what_is_wrong_with_it(entry: tuple[Any, ...], why: str) -> None:
    two = buildmemo.encode(
        (Component("team-a", "teams/a", [TARGET]), Component("team-a", "w", [JOB]))
    )
    blob = marshal.dumps((*entry, {"team-a": two}) if len(entry) == 2 else entry)
    with pytest.raises(ValueError, match=why):
        buildmemo.decode_view(blob, _build())


def test_a_units_bytes_do_not_depend_on_which_values_share_an_object() -> None:
    """The layout compares a unit by its bytes with the last run's, whose components were read
    back (no value shared): equal components give equal bytes however they share objects."""
    ports = [{"port": 80}]
    shared = {"kind": "Service", "spec": {"ports": ports, "more": ports}}
    apart = {"kind": "Service", "spec": {"ports": [{"port": 80}], "more": [{"port": 80}]}}
    assert buildmemo.encode((Component("u", "c", [shared, shared]),)) == buildmemo.encode(
        (Component("u", "c", [apart, dict(apart)]),)
    )


def test_a_builds_units_are_encoded_from_its_components_as_made() -> None:
    a = Component("team-a", "teams/a", [TARGET])
    b = Component("monitoring", "monitoring/rules", [JOB])
    build = cast(Build, SimpleNamespace(encoded=None, as_made=(a, b)))
    assert buildmemo.unit_blobs(build) == {
        "team-a": buildmemo.encode((a,)),
        "monitoring": buildmemo.encode((b,)),
    }


def test_views_are_read_back_by_their_digest_and_a_run_that_may_not_write_keeps_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entries go in a folder made with its parents, one per view named by the view's
    digest (the build carries it: the layout memo keys the view by it); the next run reads every
    view back instead of building it; a run that may not write writes nothing."""
    from generator.render.stage import load_and_check

    values = tmp_path / "values"
    make_values(values, 2)
    nowrite = tmp_path / "nowrite" / "cache"
    checked = load_and_check(values, nowrite, write_cache=False)
    for build in checked.builds.values():
        build.components  # noqa: B018 (made: a run that may write would keep them now)
    assert not (nowrite / buildmemo.FOLDER).exists()
    cache = tmp_path / "deep" / "er" / "cache"
    checked = load_and_check(values, cache)
    for build in checked.builds.values():
        build.components  # noqa: B018
    digests = {key: build.digest for key, build in checked.builds.items()}
    entries = {p.name for p in (cache / buildmemo.FOLDER).iterdir()}
    assert entries == {f"{d}{buildmemo.SUFFIX}" for d in digests.values() if d}
    assert len(entries) == 4 and all(len(d or "") == 64 for d in digests.values())
    reads: list[bool] = []
    real = buildmemo._read

    def read(path: Path, build: Build) -> tuple[Component, ...] | None:
        found = real(path, build)
        reads.append(found is not None)
        return found

    monkeypatch.setattr(buildmemo, "_read", read)
    again = load_and_check(values, cache)
    for key, build in again.builds.items():
        assert build.components == checked.builds[key].components, key
    assert reads == [True] * 4


def test_an_entry_is_written_into_a_folder_made_with_its_parents(tmp_path: Path) -> None:
    from generator.policy.memo import Digests

    folder = tmp_path / "a" / "b" / buildmemo.FOLDER
    memo = buildmemo.ComponentMemo(folder, True, Digests())
    made = (Component("team-a", "teams/a", [TARGET]),)
    keep = memo._keeper("k", _build())
    assert keep is not None
    keep(made)
    assert buildmemo._read(folder / f"k{buildmemo.SUFFIX}", _build()) == made
    assert buildmemo.ComponentMemo(folder, False, Digests())._keeper("k", _build()) is None
