"""Migration phases: from a service's phase (or explicit values) to replicas and weights per track.

| phase       | old track (migration.from)  | new track (migration.to) |
|-------------|-----------------------------|--------------------------|
| validate    | full replicas, weight 100   | 1 replica, weight 0      |
| dual-run    | full, 100                   | full, 0                  |
| shift-N     | full, 100 - N               | full, N                  |
| primary-new | full, 0                     | full, 100                |
| fallback    | fallbackReplicas (1), 0     | full, 100                |

A service across clusters is planned the same way over all its tracks, wherever they run: each
plan says its track's cluster, and a cluster renders and counts only its own tracks' plans
(`local_plans`).

Other tracks run at full size with weight 0. A one-track service takes all traffic. Explicit
`replicas` (per track) and `weights` (all tracks; missing ones are 0) override the phase.

`replicasFollowWeights` (routing: service only, where traffic follows ready pods): the tracks
that carry traffic get replicas in proportion to their weights instead (`scaled`), as many as
each needs for its share of the load at least.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from generator.values.yamlio import YamlPath
from generator.workloads.model import Service


@dataclass(frozen=True)
class TrackPlan:
    vendor: str
    replicas: int
    weight: int
    devices: int  # replicas x devices per replica
    replicas_path: YamlPath  # where the replica count was decided, for findings
    weight_explicit: bool
    cluster: str = ""  # the track's cluster, for a service across clusters (Track.cluster)


# The shift-N steps a migration's walk takes (docs/workloads.md, "Phase order and rollback": "for
# example shift-10, shift-50, shift-90"), beside the service's own N when it is at one.
SHIFT_STEPS = (10, 50, 90)


def ladder(svc: Service) -> list[str]:
    """The phases a migrating service climbs, in order (docs/workloads.md): validate, dual-run,
    the shift steps (SHIFT_STEPS and the service's own shift-N), primary-new, fallback. Empty
    for a service that does not migrate (no migration.from and .to)."""
    if not (svc.old and svc.new):
        return []
    shifts = set(SHIFT_STEPS)
    if svc.phase.startswith("shift-"):
        shifts.add(int(svc.phase.removeprefix("shift-")))
    steps = [f"shift-{n}" for n in sorted(shifts)]
    return ["validate", "dual-run", *steps, "primary-new", "fallback"]


def _phase_split(phase: str) -> tuple[int, int]:
    """(old weight, new weight)."""
    if phase.startswith("shift-"):
        n = int(phase.removeprefix("shift-"))
        return 100 - n, n
    if phase in ("primary-new", "fallback"):
        return 0, 100
    return 100, 0


def plan_service(svc: Service) -> list[TrackPlan]:
    old_w, new_w = _phase_split(svc.phase)
    out = []
    for track in svc.tracks:
        v = track.vendor
        replicas = track.replicas
        rpath: YamlPath = (*svc.path, "tracks", v, "replicas")
        if len(svc.tracks) == 1:
            weight = 100
        elif v == svc.old:
            weight = old_w
            if svc.phase == "fallback":
                replicas = min(track.replicas, svc.fallback_replicas)
                rpath = (*svc.path, "phase")
        elif v == svc.new:
            weight = new_w
            if svc.phase == "validate":
                replicas = min(track.replicas, 1)
                rpath = (*svc.path, "phase")
        else:
            weight = 0
        if v in svc.explicit_replicas:
            replicas = svc.explicit_replicas[v]
            rpath = (*svc.path, "replicas", v)
        explicit = bool(svc.explicit_weights)
        if explicit:
            weight = svc.explicit_weights.get(v, 0)
        out.append(
            TrackPlan(
                v,
                replicas,
                weight,
                replicas * track.devices_per_replica,
                rpath,
                explicit,
                track.cluster,
            )
        )
    if svc.replicas_follow_weights and svc.routing == "service":
        return scaled(svc, out)
    return out


def scaled(svc: Service, plans: list[TrackPlan]) -> list[TrackPlan]:
    """Replicas of the tracks that carry traffic in proportion to their weights, so that a
    Service over all of them (traffic by ready pods) gives each about its weight.

    Each such track needs ceil(full size x weight / 100) replicas (at least 1) to carry its
    share; the total N is the least at which every track's proportional share reaches that; the
    N pods are shared by largest remainder. A track whose replicas the values set is left as
    set, and so are tracks of weight 0."""
    serving = [p for p in plans if p.weight > 0 and p.vendor not in svc.explicit_replicas]
    if len(serving) < 2:
        return plans
    full = {t.vendor: t.replicas for t in svc.tracks}
    need = {p.vendor: max(1, math.ceil(full[p.vendor] * p.weight / 100)) for p in serving}
    weight = sum(p.weight for p in serving)
    total = max(math.ceil(need[p.vendor] * weight / p.weight) for p in serving)
    exact = {p.vendor: total * p.weight / weight for p in serving}
    counts = {v: math.floor(x) for v, x in exact.items()}
    order = sorted(serving, key=lambda p: (-(exact[p.vendor] - counts[p.vendor]), p.vendor))
    for p in order[: total - sum(counts.values())]:
        counts[p.vendor] += 1
    path = (*svc.path, "replicasFollowWeights")
    devices = {t.vendor: t.devices_per_replica for t in svc.tracks}
    return [
        replace(
            p,
            replicas=counts[p.vendor],
            devices=counts[p.vendor] * devices[p.vendor],
            replicas_path=path,
        )
        if p.vendor in counts
        else p
        for p in plans
    ]


def local_plans(svc: Service) -> list[TrackPlan]:
    """The plans of the tracks that run in the view's cluster (Service.local_tracks): what the
    cluster renders and what its quota holds."""
    here = {t.vendor for t in svc.local_tracks}
    return [p for p in plan_service(svc) if p.vendor in here]
