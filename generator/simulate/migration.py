"""The judge of each migrating service's walk through its phases (simulate --phases): at each
phase, each track of the service in this cluster against what the phase asks of it, and where
its pods landed. Pure: it reads what the driver took at each phase (snapshot.PhaseRun).

A track short of ready pods at a phase is SIM007 naming the phase and the cluster, with what
kept its pods out (the scheduler's, quota's or admission's reason). The environment's own phase
is judged in the steady state already (checks.track_verdicts): its rows are here, and a
shortfall it shares with other phases is not said again for them."""

from __future__ import annotations

from typing import Any

from generator.builders.build import PodRef
from generator.findings import Finding
from generator.simulate.checks import track_row
from generator.simulate.nodes import SimNode
from generator.simulate.plan import PhaseWalk
from generator.simulate.pods import SERVICE_KINDS, pod_verdicts
from generator.simulate.result import HINTS
from generator.simulate.snapshot import JobOutcome, PhaseRun
from generator.values.model import FleetView
from generator.values.yamlio import json_path
from generator.vocab.api import CORE
from generator.workloads.phases import local_plans


def phase_verdicts(
    view: FleetView,
    walks: list[PhaseWalk],
    runs: list[PhaseRun],
    refs: dict[tuple[str, str, str], PodRef],
    nodes: dict[str, SimNode],
) -> tuple[list[dict[str, Any]], list[Finding]]:
    """A row per track of this cluster at each phase walked (checks.track_row, with its phase),
    and SIM007 for a track short of its phase's ready pods, at the track: one per shortfall,
    at the first phase it shows in, naming the later phases where the track is short the same
    way (dual-run to fallback ask the same full size: one cause, one finding); none for a
    shortfall the environment's own phase has, which the steady state says."""
    taken = {(r.team, r.service, r.phase): r for r in runs}
    rows: list[dict[str, Any]] = []
    findings: list[Finding] = []
    for walk in walks:
        team = walk.team
        # Per track, its shortfalls in phase order: (ready, plan) -> phases, words, reason.
        short: dict[str, dict[tuple[int, int], tuple[list[str], str, str]]] = {}
        for step in walk.steps:
            run = taken.get((team.name, walk.service.name, step.phase))
            if run is None:
                continue
            svc = step.service
            pods = run.state.list(CORE, "Pod")
            names = {f"{svc.name}-{t.vendor}" for t in svc.local_tracks}
            mine = {
                k: r
                for k, r in refs.items()
                if k[0] == svc.namespace and k[1] in SERVICE_KINDS and k[2] in names
            }
            _, failing = pod_verdicts(run.state, view, mine, nodes, JobOutcome())
            why = {k[2]: fs[0].detail for k, fs in failing.items() if fs}
            for plan in local_plans(svc):
                row, words = track_row(view, svc, plan, pods, nodes)
                rows.append({"phase": step.phase, **row})
                if not words:
                    continue
                seen = short.setdefault(plan.vendor, {})
                key = (int(row["ready"]), plan.replicas)
                if key in seen:
                    seen[key][0].append(step.phase)
                else:
                    reason = why.get(f"{svc.name}-{plan.vendor}", "")
                    seen[key] = ([step.phase], words, reason)
        svc = walk.service
        for vendor, by_shortfall in short.items():
            for phases, words, reason in by_shortfall.values():
                if svc.phase in phases:
                    continue  # the steady state said it, at the environment's phase
                track = (*svc.path, "tracks", vendor)
                also = f" (and {', '.join(phases[1:])})" if phases[1:] else ""
                findings.append(
                    Finding(
                        "SIM007",
                        f"service {svc.namespace}/{svc.name} at phase {phases[0]}{also}: {words}"
                        + (f": {reason}" if reason else ""),
                        team.doc.anchor((*track, "replicas"), track),
                        json_path(track),
                        HINTS["SIM007"],
                    )
                )
    return rows, findings
