"""How many PrometheusRules a view's rules need, and which rules go in which.

The Prometheus Operator refuses a PrometheusRule whose rule groups, rendered as YAML, are over
512 KiB: `ValidateRule` compares their length with `MaxConfigMapDataSize`,
`int(float64(v1.MaxSecretSize) * 0.5)` (prometheus-operator v0.85.0 pkg/operator/rules.go), and
the operator skips such a rule with an InvalidConfiguration event (its admission webhook refuses
it outright). At 500 teams a cluster's per-team recording rules are 2.4 MB: in one object, none
of them would ever be evaluated. So the rules about one thing (a team, a pool) are kept together
and spread over as many objects as keep each under a budget; validate proves each object against
the operator's own code (PROM002).

The spread is a hash of the thing's name modulo a power of two, so that one team's edit, or a
team added, moves no other team's rules, and the number of objects doubles only when one of them
would pass the budget. A fleet whose rules fit in one object keeps one object, as before.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

# Half the operator's limit: the estimate below counts text, not the YAML the operator writes
# (its indentation and line folding); PROM002 checks the real length.
BUDGET = 256 * 1024
FIELD_COST = 8  # a field's indentation, key punctuation and newline, roughly
MAX_PARTS = 4096  # 1 GiB of rules: past it, PROM002 names the objects still too large


def size(value: Any) -> int:
    """A cheap estimate of a rule's length as YAML: its text plus a little per field."""
    if isinstance(value, str):
        return len(value) + FIELD_COST
    if isinstance(value, Mapping):
        return sum(len(k) + size(v) for k, v in value.items())
    if isinstance(value, list):
        return sum(size(v) for v in value)
    return len(repr(value)) + FIELD_COST


def bucket(key: str, count: int) -> int:
    """Which of `count` objects holds the rules about `key` (stable across runs and machines)."""
    return zlib.crc32(key.encode()) % count  # of its UTF-8 bytes


def spread(sizes: Mapping[str, int], shared: int, budget: int) -> int:
    """How many objects the keyed rules need beside the shared ones: 0 when everything fits in
    one object, else the smallest power of two whose every bucket fits the budget or holds one
    key alone (a key whose own rules are over it: PROM002 then names that object)."""
    if not sizes or shared + sum(sizes.values()) <= budget:
        return 0
    count = 1
    while count < MAX_PARTS:
        totals = [0] * count
        keys = [0] * count
        for key, n in sizes.items():
            totals[bucket(key, count)] += n
            keys[bucket(key, count)] += 1
        if all(totals[b] <= budget or keys[b] == 1 for b in range(count)):
            break
        count *= 2
    return count


def shares(
    keyed: Sequence[tuple[str, T, int]], shared: int, budget: int | None = None
) -> list[tuple[tuple[int, int], list[T]]] | None:
    """The keyed rules (key, item, its size; each key once: a team's rules, a pool's alert)
    spread over objects beside the shared ones (of size `shared`): None while everything fits
    one object, else each object that holds any, as ((index, count), its items in order)."""
    sizes = {key: n for key, _, n in keyed}
    count = spread(sizes, shared, BUDGET if budget is None else budget)
    if count == 0:
        return None
    held: list[list[T]] = [[] for _ in range(count)]
    for key, item, _ in keyed:
        held[bucket(key, count)].append(item)
    return [((index, count), items) for index, items in enumerate(held) if items]


def part_name(name: str, what: str, index: int, count: int) -> str:
    """The name of the index-th of `count` objects (or groups) holding `what` (teams, pools),
    numbered from 1 and padded so that they sort in order."""
    return f"{name}-{what}-{index + 1:0{len(str(count))}d}-of-{count}"


@dataclass(frozen=True)
class RuleFile:
    """The rule groups of one PrometheusRule, and the values files its rules were made from
    besides the monitoring settings and the vendors (a share of the teams' rules: their teams')."""

    part: tuple[int, int] | None  # (index, count) of a share of the keyed rules; None: the main
    groups: list[dict[str, Any]]
    sources: tuple[str, ...] = ()
