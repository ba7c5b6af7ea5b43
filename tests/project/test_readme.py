"""The README's example edit gives exactly the findings the README shows."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from tests.fixtures import ROOT, cli


def _block_after(text: str, marker: str) -> list[str]:
    rest = text[text.index(marker) :]
    found = re.search(r"```\n(.*?)```", rest, re.S)
    assert found is not None, marker
    return found.group(1).splitlines()


def test_the_readme_example_edit_gives_the_findings_it_shows(tmp_path: Path) -> None:
    for folder in ("values", "base", "overlays"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    team = tmp_path / "values/teams/ml-team.yaml"
    text = team.read_text()
    assert "quota:\n  nvidia: 8\n" in text
    team.write_text(text.replace("quota:\n  nvidia: 8\n", "quota:\n  nvidia: 2\n"))
    code, out = cli("validate", "--values", str(tmp_path / "values"))
    assert code == 1, out
    shown = _block_after((ROOT / "README.md").read_text(), "say, `nvidia: 2` under `quota:`")
    *findings, summary = out.splitlines()
    assert findings == shown[:-1]
    prefix = shown[-1].removesuffix("...)")
    assert summary.startswith(prefix), (summary, shown[-1])
