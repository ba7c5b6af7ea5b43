"""Values files are parsed and schema-checked once per content: only files whose bytes changed
are read again, a file with findings is read every time, a change to the code starts afresh, and
what comes from the cache equals what parsing gives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from generator.errors import FindingsError
from generator.findings import Finding, Location
from generator.values import filecache
from generator.values import loader as values
from generator.values.yamlio import SourceMap, load_text
from tests.fixtures import ASCEND_910B, invoke, tree

Checked = list[str]
# Every file of the tree `values_tree` writes, as findings name them.
FILES = [
    "values/environments/prod.yaml",
    "values/environments/staging.yaml",
    "values/fleet.yaml",
    "values/teams/inference.yaml",
    "values/teams/ml.yaml",
    "values/vendors/ascend.yaml",
    "values/vendors/nvidia.yaml",
]


@pytest.fixture
def values_tree(tmp_path: Path) -> Path:
    """A tree of seven files: fleet, two vendors, two teams, two environments."""
    files = {
        "vendors/ascend.yaml": ASCEND_910B,
        "teams/inference.yaml": "quota: {nvidia: 2, ascend: 4}\n",
        "environments/staging.yaml": "teams:\n  ml: {quota: {nvidia: 2}}\n",
        "environments/prod.yaml": "{}\n",
    }
    return tree(tmp_path / "repo", files)


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> Checked:
    """The display paths of the files actually parsed and schema-checked (each once)."""
    seen: Checked = []
    parse, check = load_text, values._schema_findings

    def parsed(raw: bytes, file: str) -> tuple[object, SourceMap]:
        if file.startswith("values/"):  # not the built-in catalog, read once per process
            seen.append(file)
        return parse(raw, file)

    def schema(kind: str, data: object, smap: SourceMap) -> list[Finding]:
        assert smap.file in seen  # never a file that came from the cache
        return check(kind, data, smap)

    monkeypatch.setattr(values, "load_text", parsed)
    monkeypatch.setattr(values, "_schema_findings", schema)
    return seen


def test_only_changed_files_are_checked_again(
    values_tree: Path, tmp_path: Path, checked: Checked
) -> None:
    cache = tmp_path / "files"
    values.load(values_tree, cache)
    assert sorted(checked) == FILES
    checked.clear()
    values.load(values_tree, cache)
    assert checked == []
    team = values_tree / "teams/ml.yaml"
    team.write_text(team.read_text().replace("nvidia: 4", "nvidia: 3"))
    values.load(values_tree, cache)
    assert checked == ["values/teams/ml.yaml"]


def test_a_file_with_findings_is_checked_every_time(
    values_tree: Path, tmp_path: Path, checked: Checked
) -> None:
    cache = tmp_path / "files"
    (values_tree / "teams/inference.yaml").write_text("quota: {nvidia: many}\n")
    for _ in range(2):
        checked.clear()
        with pytest.raises(FindingsError) as exc:
            values.load(values_tree, cache)
        assert "values/teams/inference.yaml" in checked
        assert [f.code for f in exc.value.findings] == ["VAL001"]


def test_a_change_to_the_code_or_schemas_starts_afresh(
    values_tree: Path, tmp_path: Path, checked: Checked, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "files"
    values.load(values_tree, cache)
    checked.clear()
    monkeypatch.setattr(filecache, "code_digest", lambda: "another version of the code")
    values.load(values_tree, cache)
    assert sorted(checked) == FILES


def test_render_and_validate_share_the_cache_beside_the_values(values_tree: Path) -> None:
    result = invoke("render", "--values", str(values_tree))
    assert result.exit_code == 0, result.output
    assert len(list((values_tree.parent / ".cache/validate/values").iterdir())) == len(FILES)
    (values_tree / "teams/inference.yaml").write_text("quota: {nvidia: many}\n")
    for command in ("render", "validate"):
        result = invoke(command, "--values", str(values_tree))
        assert result.exit_code == 1
        assert "values/teams/inference.yaml:1:17: VAL001 'many' is not of type 'integer'" in (
            result.output
        )


def test_what_the_cache_gives_equals_what_parsing_gives(values_tree: Path, tmp_path: Path) -> None:
    """Data, every location of values and keys, and YAML 1.1's reading of plain scalars."""
    team = values_tree / "teams/ml.yaml"
    team.write_text("# ml\nquota:\n  nvidia: 4\nowners: [ml@example.com]\npodSecurity: baseline\n")
    display = "values/teams/ml.yaml"
    cache = filecache.FileCache(tmp_path / "files")
    key = cache.key("team", display, team.read_bytes())
    data, smap = load_text(team.read_bytes(), display)
    smap.plain[("quota", "nvidia")] = "4"  # as YAML 1.1 read it
    cache.put(key, data, smap)
    cache.save()
    again = filecache.FileCache(tmp_path / "files").get(key, display)
    assert again is not None
    assert again == (data, smap)
    assert list(again[0]) == ["quota", "owners", "podSecurity"]  # in the file's order
    assert again[1].keys[("owners",)] == Location(display, 4, 1)


def test_an_unreadable_entry_is_parsed_again(
    values_tree: Path, tmp_path: Path, checked: Checked
) -> None:
    cache = tmp_path / "files"
    first = values.load(values_tree, cache)
    for entry in cache.iterdir():
        entry.write_bytes(b"not marshal data")
    checked.clear()
    again = values.load(values_tree, cache)
    assert sorted(checked) == FILES
    assert again.envs["prod"].teams == first.envs["prod"].teams


def test_a_load_that_may_not_write_leaves_the_cache_as_it_was(
    values_tree: Path, tmp_path: Path, checked: Checked
) -> None:
    cache = tmp_path / "files"
    values.load(values_tree, cache, write_cache=False)
    assert not cache.exists()
    values.load(values_tree, cache)
    entries = sorted(cache.iterdir())
    team = values_tree / "teams/ml.yaml"
    team.write_text(team.read_text().replace("nvidia: 4", "nvidia: 3"))
    values.load(values_tree, cache, write_cache=False)
    assert sorted(cache.iterdir()) == entries
    values.load(values_tree, cache)  # a load that writes keeps only the entries it used
    assert len(list(cache.iterdir())) == len(FILES)
    assert sorted(cache.iterdir()) != entries


def test_an_entry_is_written_whole_beside_its_place_or_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The temporary file is in the entry's folder (a rename there is atomic), and a write that
    fails leaves nothing behind."""
    renamed: list[tuple[str, str]] = []
    real = os.replace

    def spy(src: str, dst: Path) -> None:
        renamed.append((str(Path(src).parent), str(Path(dst).parent)))
        real(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    target = tmp_path / "entry"
    filecache.write_atomically(target, b"data")
    assert target.read_bytes() == b"data"
    assert renamed == [(str(tmp_path), str(tmp_path))]
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "x").write_text("a folder is in the way")
    with pytest.raises(OSError):
        filecache.write_atomically(tmp_path / "taken", b"data")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["entry", "taken"]
