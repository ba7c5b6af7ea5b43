"""Split validate across machines: `--shard K/N` checks a stable 1/N of the committed units.

A unit goes to shard `sha256(key) mod N`, its key being the unit's name without the environment,
so every environment of a unit (and the bases they share) lands in one shard, and a unit stays in
its shard when others come and go. In an environment of several clusters the key is
`<cluster>/<unit>`: a cluster's units spread over the shards as the teams do, and the same
cluster's unit in every environment stays together. Values checks and drift are global and
cheap: every shard runs them, and `report.merge` keeps one copy of each identical finding.

`matrix` says how many shards a CI run should use: the reusable workflows run its answer as a
matrix of runners, and one runner when it is empty.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from pathlib import Path

from generator.errors import UsageError
from generator.findings import layer_selected
from generator.render.layout import unit_folder

_SHARD = re.compile(r"^([1-9][0-9]*)/([1-9][0-9]*)$")


def parse(text: str) -> tuple[int, int]:
    """'2/4' -> (2, 4); shards count from 1."""
    match = _SHARD.match(text.strip())
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise UsageError(f"--shard {text!r}: expected K/N with 1 <= K <= N, e.g. 2/4")
    return int(match.group(1)), int(match.group(2))


def shard_of(unit_name: str, count: int, cluster: str = "") -> int:
    """The shard (1..count) that validates every environment's unit of this name (of this
    cluster, for a cluster of an environment that declares clusters)."""
    key = f"{cluster}/{unit_name}" if cluster else unit_name
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def fingerprint(committed: Mapping[str, str], values_dir: Path) -> str:
    """What the shards of one run must agree on: the committed output and the values."""
    digest = hashlib.sha256()
    for rel, text in sorted(committed.items()):
        digest.update(f"{rel}\0{text}\0".encode())
    for path in sorted(p for p in values_dir.rglob("*") if p.is_file()):
        digest.update(path.relative_to(values_dir).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


# Every shard repeats the values, the fresh render for drift and the builds the manifest rules
# read, whatever its share of units; only the tools' work on the units divides. Measured at 20
# clusters x 500 teams (docs/performance.md, "Validate on several runners"): about 20 CPU-seconds
# repeated and 7 ms per unit. At 5,000 units a runner's own share is about twice what it
# repeats; below 5,000 units in all, a second runner would save at most some 9 s of tool work
# on two cores, little against its start-up and the merge job (the CI service's, not measured).
UNITS_PER_RUNNER = 5000
# Past this the slowest shard is mostly the repeated part: at 20 x 500, 8 runners took 16% less
# CPU in the slowest shard than 4.
MAX_RUNNERS = 8
# What a runner count given by hand may be: GitLab's `parallel` takes 1 to 200 jobs (its CI
# schema, as check-jsonschema vendors it: vendor/gitlab-ci.json, definitions.parallel).
MAX_ASKED = 200
AUTO = "auto"


def committed_unit_count(home: Path, env: str | None) -> int:
    """The committed units `--env` selects, from the names under overlays/ alone (no file is
    read: this runs before the tools are installed)."""
    overlays = home / "overlays"
    found = (
        unit_folder(p.relative_to(home).as_posix()) for p in overlays.rglob("kustomization.yaml")
    )
    return sum(1 for unit in found if unit is not None and layer_selected(unit[0], env))


def runners(asked: str, units: int) -> int:
    """The runners of a CI run: `asked` as a number, or for 'auto' one per UNITS_PER_RUNNER
    units, at most MAX_RUNNERS."""
    if asked.strip() == AUTO:
        return max(1, min(MAX_RUNNERS, math.ceil(units / UNITS_PER_RUNNER)))
    if not re.fullmatch(r"[0-9]+", asked.strip()) or not 1 <= int(asked) <= MAX_ASKED:
        raise UsageError(
            f"--matrix {asked!r}: expected {AUTO!r} or a number of runners from 1 to {MAX_ASKED}"
        )
    return int(asked)


def matrix(count: int) -> list[str]:
    """The `--shard` argument of each runner; none for one runner, which validates unsharded."""
    return [f"{k}/{count}" for k in range(1, count + 1)] if count > 1 else []
