"""Findings are data: every problem a run sees, with where it is and how to fix it.

A finding's facts are fields, never text to search: the environments it holds in (`envs`), the
unit whose objects it concerns (`unit`, an `overlays/<env>/<unit>` path), the code, the place in
the values file the user edits. Reporters print them; nothing parses a message back.
"""

from __future__ import annotations

import difflib
import enum
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any


class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"

    @property
    def rank(self) -> int:
        return 1 if self is Severity.ERROR else 0


@dataclass(frozen=True, order=True)
class Location:
    """A place in a values file; line and column are 1-based (0 when unknown)."""

    file: str
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        if self.line:
            return f"{self.file}:{self.line}:{self.column}"
        return self.file


@dataclass(frozen=True)
class Place:
    """A values line that takes part in a finding: where, its JSON path, and the last line of
    its value (its own line for a scalar; a block's last)."""

    location: Location
    path: str
    last_line: int

    def touched(self, changed: Mapping[str, Collection[int]]) -> bool:
        lines = changed.get(self.location.file, ())
        return any(self.location.line <= n <= self.last_line for n in lines)


@dataclass(frozen=True)
class Finding:
    code: str
    message: str
    location: Location
    path: str = ""  # JSON path inside the values file, e.g. $.quota.nvidia
    hint: str = ""  # how to fix it
    severity: Severity = Severity.ERROR
    # The layers it applies to: layer keys (an environment's name, or `env/cluster` for each
    # cluster of an environment that declares clusters: `layer_key`), BASE_LAYER for the values
    # without environment overrides; empty when it applies to every layer (nothing to name).
    envs: tuple[str, ...] = ()
    detail: str = ""  # more for a program or a log (DRIFT001: the unified diff); not in text
    # The unit whose objects it concerns (overlays/<env>/<unit>), "" for none: JUnit's test case.
    unit: str = ""
    # Other values lines that take part in the problem (every team's quota in a sum over
    # capacity, the vendor's pools): where it may be fixed too. A pull request's run anchors the
    # finding at the one of them it changed (`anchor_at_changes`).
    also: tuple[Place, ...] = ()
    # The last line of the value at `location` when it spans several (a job written as a
    # block); 0: its own line.
    last_line: int = 0

    @property
    def place(self) -> Place:
        return Place(self.location, self.path, max(self.last_line, self.location.line))

    @classmethod
    def at(cls, code: str, message: str, place: Place, hint: str = "", **fields: Any) -> Finding:
        """A finding at `place`: its location, JSON path and extent."""
        return cls(
            code, message, place.location, place.path, hint, last_line=place.last_line, **fields
        )

    def at_unit(self, unit: str) -> Finding:
        """This finding, about the objects of `unit`."""
        return replace(self, unit=unit)

    def sort_key(self) -> tuple[str, int, int, str, str, tuple[str, ...]]:
        loc = self.location
        return (loc.file, loc.line, loc.column, self.code, self.message, self.envs)

    @property
    def environments(self) -> tuple[str, ...]:
        """The environments of the layers it holds in, each once (the base layer's is "")."""
        return tuple(dict.fromkeys(split_layer(e)[0] for e in self.envs))

    @property
    def clusters(self) -> tuple[str, ...]:
        """The clusters it holds in, as `env/cluster` layers; () for an environment that
        declares no clusters (its one cluster is the environment)."""
        return tuple(e for e in self.envs if split_layer(e)[1])

    @property
    def text(self) -> str:
        """The message with the layers it applies to."""
        by_env: dict[str, list[str]] = {}
        for layer in self.envs:
            env, cluster = split_layer(layer)
            if env != BASE_LAYER:
                by_env.setdefault(env, []).extend([cluster] if cluster else [])
        parts = []
        for env, clusters in by_env.items():
            names = ", ".join(repr(c) for c in clusters)
            plural = "s" if len(clusters) > 1 else ""
            parts.append(f"{env!r} (cluster{plural} {names})" if clusters else repr(env))
        named = ", ".join(parts)
        if not parts:
            suffix = (
                " in the base layer (values without environment overrides)" if self.envs else ""
            )
        elif len(parts) == 1:
            suffix = f" in environment {named}"
        else:
            suffix = f" in environments {named}"
        return self.message + suffix

    def format(self) -> str:
        level = "warning: " if self.severity is Severity.WARNING else ""
        text = f"{self.location}: {self.code} {level}{self.text}"
        if self.path:
            text += f" (at {self.path})"
        if self.hint:
            text += f"; {self.hint}"
        return text


@dataclass(frozen=True)
class CodeInfo:
    """What `render.py rules` lists of a code: where it runs, what it can be, what it means."""

    code: str
    runs_in: str  # values, manifests, manifests (<tool>), drift, dry-run, simulate, publish, ...
    severity: str  # error, warning, or "error or warning" (decided by the values)
    summary: str


BASE_LAYER = ""  # the layer of the values without environment overrides (model.BASE_ENV)


def layer_key(env: str, cluster: str = "") -> str:
    """The layer of one cluster: the environment's name when it declares no clusters (its one
    cluster), else `env/cluster`. Environment and cluster names are DNS labels: no '/'."""
    return f"{env}/{cluster}" if cluster else env


def layer_selected(layer: str, env: str | None) -> bool:
    """Whether `--env env` selects a layer: every layer for None, else the environment's (all
    its clusters) or one cluster's (`env/cluster`)."""
    return env is None or layer == env or split_layer(layer)[0] == env


def concerns(finding: Finding, env: str) -> bool:
    """Whether a finding concerns `--env env` (an environment or one cluster): it holds in every
    layer, in a layer `env` selects, or in the environment of the cluster `env` names. (One of
    the base layer alone is about no environment: no overlay deploys the base as it is.)"""
    return not finding.envs or any(
        layer != BASE_LAYER and (layer_selected(layer, env) or layer_selected(env, layer))
        for layer in finding.envs
    )


def split_layer(layer: str) -> tuple[str, str]:
    """(environment, cluster) of a layer key; cluster "" for an environment's only cluster."""
    env, _, cluster = layer.partition("/")
    return env, cluster


def did_you_mean(word: object, choices: Iterable[str], then: str = "") -> str:
    """A hint that starts with "did you mean 'x'?" when one of `choices` is close to `word`
    (a typo), followed by `then`."""
    close = difflib.get_close_matches(str(word), sorted(choices), n=1, cutoff=0.7)
    first = f"did you mean {close[0]!r}?" if isinstance(word, str) and close else ""
    return " ".join(part for part in (first, then) if part)


def sorted_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Identical findings once (the highest severity of them), in file and line order."""
    unique: dict[tuple[object, ...], Finding] = {}
    for f in findings:
        key = (f.sort_key(), f.path, f.hint)
        if key not in unique or f.severity.rank > unique[key].severity.rank:
            unique[key] = f
    return [unique[k] for k in sorted(unique, key=lambda k: (k[0], k[1], k[2]))]


def merge_layers(
    layers: Iterable[tuple[str, Iterable[Finding]]], envs: Iterable[str]
) -> list[Finding]:
    """Findings of the base layer and of each environment, each problem once.

    Only identical findings merge (same code, place, path and message, whatever environment
    found them); the merged finding has the highest severity among them and names every
    environment it applies to: none when it holds in every environment (what Argo CD applies),
    the base layer when it holds only there (the base/ output, which every overlay patches).
    """
    every = set(envs)
    groups: dict[tuple[str, Location, str, str], tuple[Finding, set[str]]] = {}
    for layer, found in layers:
        for f in found:
            key = (f.code, f.location, f.path, f.message)
            best, seen = groups.get(key, (f, set()))
            if f.severity.rank > best.severity.rank or (
                f.severity is best.severity and not best.hint
            ):
                best = f
            seen.add(layer)
            groups[key] = (best, seen)
    out = []
    for best, seen in groups.values():
        named = () if every and seen >= every else tuple(sorted(seen))
        out.append(replace(best, envs=named))
    return out


def anchor_at_changes(
    findings: Iterable[Finding], changed: Mapping[str, Collection[int]]
) -> list[Finding]:
    """Each finding at a place `changed` touched (file -> changed line numbers, as a pull
    request's diff gives them) when its own place is untouched and one of its `also` places is:
    a sum over capacity is reported where the pull request raised it, not at whichever team
    holds the most. The place it had joins `also`."""
    out = []
    for f in findings:
        hit = (
            None
            if f.place.touched(changed)
            else next((p for p in f.also if p.touched(changed)), None)
        )
        if hit is None:
            out.append(f)
            continue
        rest = tuple(p for p in f.also if p != hit)
        out.append(
            replace(
                f,
                location=hit.location,
                path=hit.path,
                last_line=hit.last_line,
                also=(f.place, *rest),
            )
        )
    return out


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(f.severity is Severity.ERROR for f in findings)
