"""The render stage: what it says it wrote is what the output holds."""

from __future__ import annotations

from pathlib import Path

from generator.render.stage import RenderOptions, render
from generator.render.writer import read_tree
from tests.fixtures import two_teams


def test_the_tree_render_reports_written_is_the_output_read_back(tmp_path: Path) -> None:
    values_dir = two_teams(tmp_path)
    out = tmp_path / "out"
    whole = render(RenderOptions(values_dir, out))
    assert whole.written == read_tree(out)
    assert list(whole.written) == sorted(whole.written)
    # One environment rendered after a change: the other's overlays stay as committed, and the
    # tree reported is still the output as a whole.
    (out / "overlays/prod/monitoring/kustomization.yaml").write_text("# hand edit\n")
    (values_dir / "teams/inference.yaml").write_text(
        (values_dir / "teams/inference.yaml").read_text().replace("nvidia: 4", "nvidia: 3")
    )
    staging = render(RenderOptions(values_dir, out, env="staging"))
    assert staging.written == read_tree(out)
    assert staging.written["overlays/prod/monitoring/kustomization.yaml"] == "# hand edit\n"
    assert render(RenderOptions(values_dir, out, check=True)).written is None
