"""Shared fixtures: the example values tree copied into tmp_path, and the real tools."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_VALUES = ROOT / "values"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="Re-render the committed example output (base/, overlays/, schemas/).",
    )


@pytest.fixture
def values_dir(tmp_path: Path) -> Path:
    """A private copy of the example fleet's values, free to edit."""
    dest = tmp_path / "repo" / "values"
    shutil.copytree(EXAMPLE_VALUES, dest)
    return dest


@pytest.fixture
def write(values_dir: Path) -> Callable[[str, str], Path]:
    """Write (or overwrite) a file in the values copy: write("teams/x.yaml", text)."""

    def _write(rel: str, text: str) -> Path:
        path = values_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    return _write


def tool(name: str) -> Path:
    local = ROOT / ".tools" / "bin" / name
    if local.exists():
        return local
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: run `make tools`")
    return Path(found)
