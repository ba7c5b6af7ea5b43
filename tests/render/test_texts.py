"""A rendered tree whose kept units' texts are read when asked for (render/texts.py)."""

from __future__ import annotations

from generator.render.texts import Texts


def test_texts_reads_a_deferred_unit_once_and_keeps_a_text_added_since() -> None:
    """A unit's files read at once when the first is asked for; a path added again with its
    text keeps that text, whatever the read gives."""
    reads: list[str] = []

    def read() -> dict[str, str]:
        reads.append("u")
        return {"overlays/a/u/x.yaml": "x\n", "overlays/a/u/y.yaml": "y\n"}

    tree = Texts()
    tree.update({"base/b/k.yaml": "k\n"})
    tree.defer(["overlays/a/u/x.yaml", "overlays/a/u/y.yaml"], read)
    tree.update({"overlays/a/u/y.yaml": "later\n"})
    assert list(tree) == ["base/b/k.yaml", "overlays/a/u/x.yaml", "overlays/a/u/y.yaml"]
    assert tree.peek("overlays/a/u/x.yaml") is None and reads == []
    assert tree["overlays/a/u/x.yaml"] == "x\n"
    assert tree["overlays/a/u/y.yaml"] == "later\n"
    assert dict(tree) == {
        "base/b/k.yaml": "k\n",
        "overlays/a/u/x.yaml": "x\n",
        "overlays/a/u/y.yaml": "later\n",
    }
    assert reads == ["u"]
    assert "overlays/a/u/z.yaml" not in tree
    tree["overlays/a/u/z.yaml"] = "z\n"  # as a test edits a rendered tree
    assert list(tree)[-1] == "overlays/a/u/z.yaml" and tree["overlays/a/u/z.yaml"] == "z\n"
