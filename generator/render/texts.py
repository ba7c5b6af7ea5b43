"""A rendered tree whose kept units' texts are read only when asked for.

At 20 clusters x 500 teams the layout memo keeps 57 MB of texts in the views' entries, of which
an edit writes or compares by text a handful of files: the others are compared by digest
(render/writer.py). So a unit the memo kept is added by its paths and a function that reads its
files, called when one of them is first asked for; every other file is added with its text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping

from generator.vocab.units import Tree


class Texts(Mapping[str, str]):
    """Each file's text by path, in the order added; a deferred unit's files read at once, when
    the first of them is asked for."""

    def __init__(self) -> None:
        self._paths: dict[str, None] = {}
        self._texts: dict[str, str] = {}
        self._later: dict[str, tuple[tuple[str, ...], Callable[[], Tree]]] = {}

    def update(self, files: Mapping[str, str]) -> None:
        for rel, text in files.items():
            self._paths[rel] = None
            self._texts[rel] = text
            self._later.pop(rel, None)

    def __setitem__(self, rel: str, text: str) -> None:
        self.update({rel: text})

    def defer(self, paths: Iterable[str], read: Callable[[], Tree]) -> None:
        """Files at `paths`, whose texts `read()` gives (exactly those paths)."""
        some = tuple(paths)
        for rel in some:
            self._paths[rel] = None
            self._texts.pop(rel, None)
            self._later[rel] = (some, read)

    def sort(self) -> None:
        """Order the paths by name."""
        self._paths = dict.fromkeys(sorted(self._paths))

    def peek(self, rel: str) -> str | None:
        """The text at `rel` when it was added or read already: never read here."""
        return self._texts.get(rel)

    def __getitem__(self, rel: str) -> str:
        text = self._texts.get(rel)
        if text is not None:
            return text
        paths, read = self._later[rel]  # KeyError: not in the tree
        files = read()
        if sorted(files) != sorted(paths):
            raise ValueError(f"the layout memo gave other files than {paths!r}")
        for path in paths:
            if self._later.get(path, ((), None))[1] is read:  # not added again since
                self._texts[path] = files[path]
                del self._later[path]
        return files[rel]

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def __contains__(self, rel: object) -> bool:
        return rel in self._paths


def peek(tree: Mapping[str, str], rel: str) -> str | None:
    """The text at `rel` if `tree` holds it without reading it (any tree but a Texts does)."""
    return tree.peek(rel) if isinstance(tree, Texts) else tree.get(rel)
