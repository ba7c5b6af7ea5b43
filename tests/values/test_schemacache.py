"""Values schema validation is cached by content: only files whose bytes changed are checked
again, a file with findings is checked every time, and a change to the code starts afresh."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.errors import FindingsError
from generator.values import loader as values
from generator.values import schemacache
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
    """The display paths of the files whose schema was actually checked."""
    seen: Checked = []
    real = values._schema_findings

    def spy(kind: str, data: object, smap: values.SourceMap) -> list[values.Finding]:
        seen.append(smap.file)
        return real(kind, data, smap)

    monkeypatch.setattr(values, "_schema_findings", spy)
    return seen


def test_only_changed_files_are_checked_again(
    values_tree: Path, tmp_path: Path, checked: Checked
) -> None:
    cache = tmp_path / "schema.json"
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
    cache = tmp_path / "schema.json"
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
    cache = tmp_path / "schema.json"
    values.load(values_tree, cache)
    checked.clear()
    monkeypatch.setattr(schemacache, "_code", lambda: "another version of the code")
    values.load(values_tree, cache)
    assert sorted(checked) == FILES


def test_render_and_validate_share_the_cache_beside_the_values(values_tree: Path) -> None:
    result = invoke("render", "--values", str(values_tree))
    assert result.exit_code == 0, result.output
    assert (values_tree.parent / ".cache/validate/values-schema.json").is_file()
    (values_tree / "teams/inference.yaml").write_text("quota: {nvidia: many}\n")
    for command in ("render", "validate"):
        result = invoke(command, "--values", str(values_tree))
        assert result.exit_code == 1
        assert "values/teams/inference.yaml:1:17: VAL001 'many' is not of type 'integer'" in (
            result.output
        )
