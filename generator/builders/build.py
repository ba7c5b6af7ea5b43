"""What a builder reads (`Parts`) and what the builders make of a team's workloads (`TeamBuild`,
its `PodRef`s, the devices it holds). The build of a view itself, which holds them, is
builders/fleet.py's `Build`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from generator.values.model import FleetView, Team
from generator.values.yamlio import YamlPath
from generator.vocab.objects import Obj
from generator.workloads.model import Workloads
from generator.workloads.usage import Pinned, Usage


@dataclass(frozen=True)
class PodRef:
    """A rendered pod template and the values path that declared it (for checks)."""

    team: Team
    kind: str  # Job, Job (volcano) task, Deployment
    name: str
    spec: dict[str, Any]
    path: YamlPath
    count: int = 1  # pods of this template at most (replicas, parallelism)


@dataclass(frozen=True)
class TeamBuild:
    """A team's workload objects, the pod templates in them, what its workloads hold of each
    vendor and which of them are pinned to pool models (workloads/usage.py: the checks of the
    whole view sum them over its teams). Shared by everyone who reads the build: nobody changes
    them."""

    objects: list[Obj]
    pods: list[PodRef]
    usage: tuple[Usage, ...]
    pinned: tuple[Pinned, ...]


class KeptTeams(Protocol):
    """Team builds kept from an earlier run (render/teammemo.py): asked before a team is
    built, and handed each team built."""

    def get(self, team: Team) -> TeamBuild | None: ...

    def put(self, team: Team, build: TeamBuild) -> None: ...


class Parts(Protocol):
    """What every builder reads: the view, its workload model, each team's workload objects."""

    @property
    def view(self) -> FleetView: ...

    @property
    def workloads(self) -> Workloads: ...

    def team(self, team: Team) -> TeamBuild: ...
