"""Runs of `simulate` recorded on a real control plane, judged again without one.

A recorded run is what the driver took of each environment (generator/simulate/snapshot.py,
EnvRun), kept as JSON in tests/simulate/snapshots/<name>.json with a digest of the values tree it
ran on. `recorded(...)` judges it as `simulate` would (plan from the same values, then judge); a
test that gives the same values and patches as when it was recorded gets the report the real run
gave. To record again (after a change to the driver, or to a case's values), on a machine with
the control plane's tools:

    python -m pytest tests/simulate/test_judge.py --record-snapshots -p no:xdist

which runs each case on the session's control plane and writes its file; `git diff` then shows
what changed on the API server's side.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from generator.cluster.dryrun import load
from generator.cluster.units import build
from generator.findings import sorted_findings
from generator.simulate.judge import judge
from generator.simulate.plan import make_plan
from generator.simulate.run import SimulationResult, simulate
from generator.simulate.snapshot import EnvRun

SNAPSHOTS = Path(__file__).parent / "snapshots"


def dumps(value: Any, indent: str = "") -> str:
    """JSON of a recording: indented, sorted, and each Kubernetes object (a mapping with
    apiVersion and kind) on one line of its own, so that a diff names the objects that changed
    and a recording stays small."""
    inner = indent + " "
    if isinstance(value, dict) and value and not {"apiVersion", "kind"} <= value.keys():
        items = [f"{inner}{json.dumps(k)}: {dumps(v, inner)}" for k, v in sorted(value.items())]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list) and value:
        return "[\n" + ",\n".join(inner + dumps(v, inner) for v in value) + "\n" + indent + "]"
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def values_digest(values: Path) -> str:
    """A digest of every file of a values tree (its paths and contents)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in values.rglob("*") if p.is_file()):
        digest.update(path.relative_to(values).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def judge_runs(
    values: Path, env: str | None, runs: list[EnvRun], phases: bool = False
) -> SimulationResult:
    """What `simulate` reports of `values` when its driver takes `runs`: each environment's plan
    made from the values (`phases`: as simulate --phases plans it), judged on its run."""
    checked, envs = load(values, env)
    loaded = checked.values
    assert [r.env for r in runs] == envs, "the runs are of other environments"
    reports = []
    for run in runs:
        built, found = build(loaded, run.env, builds=checked.builds)
        plan = make_plan(loaded, checked.builds[run.env], built, found, phases=phases)
        reports.append(judge(plan, run))
    return SimulationResult(reports, sorted_findings(f for r in reports for f in r.findings))


def recorded(
    request: pytest.FixtureRequest,
    name: str,
    values: Path,
    env: str | None = None,
    *,
    phases: bool = False,
) -> SimulationResult:
    """The report of the run `name` recorded of `values` (`env`: as simulate's --env; `phases`:
    as its --phases), judged now; with --record-snapshots, simulated first on the session's
    control plane and recorded."""
    path = SNAPSHOTS / f"{name}.json"
    digest = values_digest(values)
    if request.config.getoption("--record-snapshots"):
        plane = request.getfixturevalue("cluster")
        runs: list[EnvRun] = []
        simulate(
            values,
            env,
            lambda _minor: contextlib.nullcontext(plane),
            runs=runs,
            argocd=False,
            watch_metrics=False,
            phases=phases,
        )
        doc: dict[str, Any] = {"values": digest, "env": env, "runs": [r.as_json() for r in runs]}
        if phases:
            doc["phases"] = True
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(dumps(doc) + "\n", encoding="utf-8")
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert (doc["values"], doc["env"], doc.get("phases", False)) == (digest, env, phases), (
        f"{path.name} was recorded from other values: record it again (tests/simulate/recorded.py)"
    )
    return judge_runs(values, env, [EnvRun.from_json(r) for r in doc["runs"]], phases)
