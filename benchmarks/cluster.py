#!/usr/bin/env python3
"""Benchmark the local control plane: start-up (warm binaries), server-side dry-run and simulation
of the example fleet per environment, and of a synthetic fleet of N teams (benchmarks/fleet.py's
values, with kubernetesVersion set to the control plane's minor).

    benchmarks/cluster.py [--teams 100] [--starts 3] [--env prod] [--json]

Figures depend on the machine: docs/performance.md records them with the machine they came from.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from benchmarks import fleet  # noqa: E402
from generator.cluster import dryrun  # noqa: E402
from generator.cluster import plane as fleet_plane  # noqa: E402
from generator.controlplane.launcher import ControlPlane  # noqa: E402
from generator.simulate.run import SimulationResult, simulate  # noqa: E402


def _load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def _sim(
    values: Path, env: str | None, plane: ControlPlane, *, argocd: bool = True
) -> SimulationResult:
    # The monitoring step with Argo CD: the synthetic fleet's figures stay the simulation's own.
    return simulate(
        values,
        env,
        lambda _minor: contextlib.nullcontext(plane),
        argocd=argocd,
        watch_metrics=argocd,
    )


def run(teams: int, starts: int, env: str, work: Path) -> dict[str, Any]:
    figures: dict[str, Any] = {"load_before": _load()}
    ready = []
    for _ in range(starts):
        with fleet_plane.control_plane() as plane:
            ready.append(plane.started_in)
    figures["control_plane_ready_s"] = ready

    synthetic = work / "values"
    fleet.make_values(synthetic, teams)
    path = synthetic / "fleet.yaml"
    minor = dryrun.control_plane_minor()
    doc = yaml.safe_load(path.read_text())
    doc["kubernetesVersion"] = minor
    path.write_text(yaml.safe_dump(doc, sort_keys=False))

    with fleet_plane.control_plane() as plane:
        example: dict[str, Any] = {}
        start = time.perf_counter()
        dry = dryrun.dry_run(ROOT / "values", None, plane=plane)
        example["dry_run_s"] = round(time.perf_counter() - start, 1)
        example["dry_run_objects"] = dry.objects
        example["dry_run_errors"] = sum(f.severity.value == "error" for f in dry.findings)
        for name in ("prod", "staging"):
            start = time.perf_counter()
            result = _sim(ROOT / "values", name, plane)
            rep = result.envs[0]
            example[f"simulate_{name}_s"] = round(time.perf_counter() - start, 1)
            example[f"simulate_{name}_objects"] = rep.objects
            example[f"simulate_{name}_errors"] = result.errors
            example[f"simulate_{name}_phases_s"] = rep.timings
            # The Argo CD part (simulate/gitops.py), per cluster of the environment.
            example[f"argocd_{name}_s"] = {r.env: r.timings.get("argocd") for r in result.envs}
            # The monitoring part (simulate/monitoring.py), per cluster of the environment.
            example[f"monitoring_{name}_s"] = {
                r.env: r.timings.get("monitoring") for r in result.envs
            }
        figures["example"] = example

        big: dict[str, Any] = {"teams": teams}
        fleet_plane.reset(plane)
        start = time.perf_counter()
        dry = dryrun.dry_run(synthetic, env, plane=plane)
        seconds = time.perf_counter() - start
        big["dry_run_s"] = round(seconds, 1)
        big["dry_run_objects"] = dry.objects
        big["dry_run_ms_per_object"] = round(1000 * seconds / max(1, dry.objects), 1)
        big["dry_run_errors"] = sum(f.severity.value == "error" for f in dry.findings)
        assert not any(f.code == "KVER001" for f in dry.findings), dry.findings
        start = time.perf_counter()
        # Without Argo CD: these figures are the simulation's own loop's, comparable with
        # earlier runs; the Argo CD part is the example's above.
        result = _sim(synthetic, env, plane, argocd=False)
        seconds = time.perf_counter() - start
        rep = result.envs[0]
        big["simulate_s"] = round(seconds, 1)
        big["simulate_nodes"] = len(rep.nodes)
        big["simulate_objects"] = rep.objects
        big["simulate_pods"] = len(rep.pods)
        big["simulate_ms_per_object"] = round(1000 * seconds / max(1, rep.objects), 1)
        big["simulate_errors"] = result.errors
        big["simulate_phases_s"] = rep.timings
        figures["synthetic"] = big
        fleet_plane.reset(plane)
    figures["load_after"] = _load()
    figures["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--teams", type=int, default=100, help="teams of the synthetic fleet")
    parser.add_argument("--starts", type=int, default=3, help="control plane starts to time")
    parser.add_argument("--env", default="prod", help="environment of the synthetic fleet")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="accel-bench-cluster-") as tmp:
        figures = run(args.teams, args.starts, args.env, Path(tmp))
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for key, value in figures.items():
            print(f"{key:24} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
