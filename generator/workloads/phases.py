"""Migration phases: from a service's phase (or explicit values) to replicas and weights per track.

| phase       | old track (migration.from)  | new track (migration.to) |
|-------------|-----------------------------|--------------------------|
| validate    | full replicas, weight 100   | 1 replica, weight 0      |
| dual-run    | full, 100                   | full, 0                  |
| shift-N     | full, 100 - N               | full, N                  |
| primary-new | full, 0                     | full, 100                |
| fallback    | fallbackReplicas (1), 0     | full, 100                |

Other tracks run at full size with weight 0. A one-track service takes all traffic. Explicit
`replicas` (per track) and `weights` (all tracks; missing ones are 0) override the phase.
"""

from __future__ import annotations

from dataclasses import dataclass

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
        out.append(TrackPlan(v, replicas, weight, replicas * track.pod.devices, rpath, explicit))
    return out
