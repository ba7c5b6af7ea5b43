"""Values schema validation is cached by content: only files whose bytes changed are checked
again, a file with findings is checked every time, and a change to the code starts afresh."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.errors import FindingsError
from generator.values import loader as values
from generator.values import schemacache
from tests.fixtures import invoke

Checked = list[str]


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> Checked:
    """The display paths of the files whose schema was actually checked."""
    seen: Checked = []
    real = values._schema_findings

    def spy(kind: str, data: object, smap: values.SourceMap) -> list[values.Finding]:
        seen.append(smap.file)
        return real(kind, data, smap)

    monkeypatch.setattr(values, "_schema_findings", spy)
    return seen


def test_only_changed_files_are_checked_again(
    values_dir: Path, tmp_path: Path, checked: Checked
) -> None:
    cache = tmp_path / "schema.json"
    values.load(values_dir, cache)
    every = sorted(checked)
    assert len(every) == 10  # fleet, 5 vendors, 2 teams, 2 environments
    checked.clear()
    values.load(values_dir, cache)
    assert checked == []
    team = values_dir / "teams/ml-team.yaml"
    team.write_text(team.read_text().replace("nvidia: 8", "nvidia: 7"))
    values.load(values_dir, cache)
    assert checked == ["values/teams/ml-team.yaml"]


def test_a_file_with_findings_is_checked_every_time(
    values_dir: Path, tmp_path: Path, checked: Checked
) -> None:
    cache = tmp_path / "schema.json"
    (values_dir / "teams/inference.yaml").write_text("quota: {nvidia: many}\n")
    for _ in range(2):
        checked.clear()
        with pytest.raises(FindingsError) as exc:
            values.load(values_dir, cache)
        assert "values/teams/inference.yaml" in checked
        assert [f.code for f in exc.value.findings] == ["VAL001"]


def test_a_change_to_the_code_or_schemas_starts_afresh(
    values_dir: Path, tmp_path: Path, checked: Checked, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "schema.json"
    values.load(values_dir, cache)
    checked.clear()
    monkeypatch.setattr(schemacache, "_code", lambda: "another version of the code")
    values.load(values_dir, cache)
    assert len(checked) == 10


def test_render_and_validate_share_the_cache_beside_the_values(values_dir: Path) -> None:
    result = invoke("render", "--values", str(values_dir))
    assert result.exit_code == 0, result.output
    assert (values_dir.parent / ".cache/validate/values-schema.json").is_file()
    (values_dir / "teams/inference.yaml").write_text("quota: {nvidia: many}\n")
    for command in ("render", "validate"):
        result = invoke(command, "--values", str(values_dir))
        assert result.exit_code == 1
        assert "values/teams/inference.yaml:1:17: VAL001 'many' is not of type 'integer'" in (
            result.output
        )
