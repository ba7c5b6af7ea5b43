"""validate's cache of YAML text per object gives exactly what yamlio.dump writes, and a save
rewrites only the shards whose entries changed."""

from __future__ import annotations

import json
from pathlib import Path

from generator.render.dumpcache import DumpCache
from generator.render.layout import render_tree
from generator.values import loader as values
from tests.fixtures import two_teams


def inodes(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_ino for p in folder.glob("*.json")}


def test_warm_cache_renders_the_same_bytes_and_prunes(tmp_path: Path) -> None:
    loaded = values.load(two_teams(tmp_path))  # two teams, two vendors, jobs and a service
    plain = render_tree(loaded).tree
    folder = tmp_path / "dump-cache"
    cold = DumpCache(folder)
    assert render_tree(loaded, cold.dump).tree == plain
    cold.save()
    written = inodes(folder)
    assert len(written) > 1  # entries spread over shards by their key
    warm = DumpCache(folder)
    assert render_tree(loaded, warm.dump).tree == plain
    assert warm.misses == 0
    warm.save()
    assert inodes(folder) == written  # nothing changed: nothing rewritten
    # An entry no longer rendered is dropped on the next save, and only its shard is rewritten.
    name = sorted(warm.shards)[0]
    warm.shards[name]["stale"] = "x: 1\n"
    warm.save()
    assert "stale" not in DumpCache(folder)._shard(name)
    after = inodes(folder)
    assert after.keys() == written.keys()
    assert {n for n in after if after[n] != written[n]} == {f"{name}.json"}


def test_a_new_entry_rewrites_its_shard_only(tmp_path: Path) -> None:
    folder = tmp_path / "dump-cache"
    cold = DumpCache(folder)
    for i in range(40):
        cold.dump({"count": i})
    cold.save()
    written = inodes(folder)
    warm = DumpCache(folder)
    for i in range(41):
        warm.dump({"count": i})
    assert warm.misses == 1
    warm.save()
    after = inodes(folder)
    [new] = [n for n in after if after[n] != written.get(n)]
    assert {n for n in written if after.get(n) != written[n]} <= {new}
    assert DumpCache(folder).dump({"count": 40}) == "count: 40\n"


def test_shards_and_the_old_file_a_run_did_not_use_are_removed(tmp_path: Path) -> None:
    folder = tmp_path / "dump-cache"
    (tmp_path / "dump-cache.json").write_text("{}")  # the one-file form of earlier versions
    cold = DumpCache(folder)
    for i in range(40):
        cold.dump({"count": i})
    cold.save()
    warm = DumpCache(folder)
    warm.dump({"count": 0})
    warm.save()
    [left] = folder.glob("*.json")
    assert list(json.loads(left.read_text())["entries"].values()) == ["count: 0\n"]
    assert not (tmp_path / "dump-cache.json").exists()


def test_an_unreadable_or_foreign_shard_is_a_miss(tmp_path: Path) -> None:
    folder = tmp_path / "dump-cache"
    cold = DumpCache(folder)
    cold.dump({"count": 1})
    cold.save()
    [shard] = folder.glob("*.json")
    for text in ("not json", json.dumps({"format": "dump-cache-0", "entries": {}})):
        shard.write_text(text)
        again = DumpCache(folder)
        assert again.dump({"count": 1}) == "count: 1\n"
        assert again.misses == 1


def test_no_folder_writes_nothing(tmp_path: Path) -> None:
    cache = DumpCache(None)
    assert cache.dump({"count": 1}) == "count: 1\n"
    cache.save()
    assert list(tmp_path.iterdir()) == []


def test_key_tells_types_apart(tmp_path: Path) -> None:
    cache = DumpCache(None)
    texts = {cache.dump({"v": v}) for v in (8, "8", True, "true", 1, 1.0, None, "null")}
    assert len(texts) == 8
    assert cache.misses == 8


def test_equal_documents_share_a_key_whatever_objects_they_share(tmp_path: Path) -> None:
    cache = DumpCache(None)
    label = "a" * 40
    shared = {"x": [label, label], "y": label}
    cache.dump(shared)
    cache.dump({"x": ["a" * 40, "".join(["a"] * 40)], "y": "a" * 20 + "a" * 20})
    assert cache.misses == 1
