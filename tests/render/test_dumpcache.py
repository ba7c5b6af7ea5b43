"""validate's cache of YAML text per object gives exactly what yamlio.dump writes."""

from __future__ import annotations

from pathlib import Path

from generator.render.dumpcache import DumpCache
from generator.render.layout import render_tree
from generator.values import loader as values
from tests.fixtures import two_teams


def test_warm_cache_renders_the_same_bytes_and_prunes(tmp_path: Path) -> None:
    loaded = values.load(two_teams(tmp_path))  # two teams, two vendors, jobs and a service
    plain = render_tree(loaded).tree
    path = tmp_path / "dump-cache.json"
    cold = DumpCache(path)
    assert render_tree(loaded, cold.dump).tree == plain
    cold.save()
    warm = DumpCache(path)
    assert render_tree(loaded, warm.dump).tree == plain
    assert warm.misses == 0
    # Entries of objects no longer rendered are dropped on the next save.
    warm.entries["stale"] = "x: 1\n"
    warm.save()
    assert "stale" not in DumpCache(path).entries


def test_key_tells_types_apart(tmp_path: Path) -> None:
    cache = DumpCache(None)
    texts = {cache.dump({"v": v}) for v in (8, "8", True, "true", 1.0, None, "null")}
    assert len(texts) == 7
