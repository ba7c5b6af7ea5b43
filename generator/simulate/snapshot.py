"""What the driver (drive.py) hands the judge (judge.py): what the API server served at each point
the judge reads it, as plain data that round-trips through JSON, so that judging runs, and is
tested, without a control plane (tests/simulate/snapshots/).

A `Snapshot` is every object of some kinds at one moment, read through the same calls as the
API client's reading half (`list`, `get`, `serves`), so a verdict reads a snapshot or the live
API server alike (`Reader`). An `EnvRun` is one environment's run: its snapshots, what the API
server refused, what the simulation did in Volcano's and Kueue's stead (`JobOutcome`), and how
long each step took.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from generator.controlplane.api import ApiClient, Obj, UnknownKind
from generator.vocab.api import APPS, BATCH, CORE, KUEUE

Kind = tuple[str, str]
"""(apiVersion, kind)."""


class Reader(Protocol):
    """What a verdict reads: the API client, or a snapshot of what it served."""

    def list(
        self, api_version: str, kind: str, namespace: str = "", *, selector: str = ""
    ) -> list[Obj]: ...

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Obj | None: ...

    def serves(self, api_version: str, kind: str) -> bool: ...


# What a snapshot keeps of a Pod's spec and drops of its status: the judge reads where a pod was
# placed and by which scheduler, its phase, conditions and claims; the containers are most of a
# pod's size, and a recorded run of the example fleet holds thousands of pods.
POD_SPEC = ("nodeName", "schedulerName", "schedulingGates")
POD_STATUS_DROPPED = ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")
# The owners whose pod templates the judge never reads (it reads their replicas, parallelism and
# completions, and a Kueue Workload's admission; the pods themselves are taken): spec field.
TEMPLATES = {
    (APPS, "Deployment"): "template",
    (APPS, "ReplicaSet"): "template",
    (BATCH, "Job"): "template",
    (KUEUE, "Workload"): "podSets",
}
# Metadata that differs on every run and that nothing reads (who wrote which field, the object's
# identity and version): left out, so that a run recorded again differs where the cluster did.
METADATA_DROPPED = ("managedFields", "uid", "resourceVersion", "creationTimestamp")


def slim(obj: Obj) -> Obj:
    """`obj` as a snapshot keeps it: without METADATA_DROPPED, a Pod without its containers and
    their statuses, an owner without its pod templates (TEMPLATES)."""
    out = dict(obj)
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        out["metadata"] = {k: v for k, v in meta.items() if k not in METADATA_DROPPED}
    kind = (str(obj.get("apiVersion")), str(obj.get("kind")))
    spec = obj.get("spec")
    if kind == (CORE, "Pod"):
        out["spec"] = {k: v for k, v in (spec or {}).items() if k in POD_SPEC}
        status = obj.get("status") or {}
        out["status"] = {k: v for k, v in status.items() if k not in POD_STATUS_DROPPED}
    elif kind in TEMPLATES and isinstance(spec, dict):
        out["spec"] = {k: v for k, v in spec.items() if k != TEMPLATES[kind]}
    return out


def _key(kind: Kind) -> str:
    return f"{kind[0]}/{kind[1]}"


def _kind(key: str) -> Kind:
    api_version, _, kind = key.rpartition("/")
    return api_version, kind


@dataclass
class Snapshot:
    """Every object of some kinds, as the API server listed them at one moment."""

    objects: dict[str, list[Obj]] = field(default_factory=dict)
    """'apiVersion/kind' -> its objects; a kind the server did not serve is absent."""

    @staticmethod
    def take(api: ApiClient, kinds: Iterable[Kind], *, events: str = "") -> Snapshot:
        """What `api` serves of `kinds` now (those it does not serve are left out). `events`: keep
        only the Events of this reason (the judge reads FailedCreate alone)."""
        out: dict[str, list[Obj]] = {}
        for kind in kinds:
            if not api.serves(*kind):
                continue
            items = [slim(o) for o in api.list(*kind)]
            if kind == (CORE, "Event") and events:
                items = [e for e in items if e.get("reason") == events]
            out[_key(kind)] = items
        return Snapshot(out)

    def serves(self, api_version: str, kind: str) -> bool:
        return _key((api_version, kind)) in self.objects

    def list(
        self, api_version: str, kind: str, namespace: str = "", *, selector: str = ""
    ) -> list[Obj]:
        """The objects of a kind (in `namespace`, '' for all; `selector`: a label selector of
        `key=value` terms, all of which must hold). A kind not taken raises UnknownKind, as the
        API client does for a kind the server does not serve."""
        if not self.serves(api_version, kind):
            raise UnknownKind(api_version, kind)
        terms = [t.partition("=")[::2] for t in selector.split(",") if t]
        return [
            o
            for o in self.objects[_key((api_version, kind))]
            if (not namespace or o["metadata"].get("namespace") == namespace)
            and all((o["metadata"].get("labels") or {}).get(k) == v for k, v in terms)
        ]

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Obj | None:
        return next(
            (
                o
                for o in self.list(api_version, kind)
                if o["metadata"]["name"] == name
                and o["metadata"].get("namespace", "") == (namespace or "")
            ),
            None,
        )

    def as_json(self) -> dict[str, Any]:
        return {"objects": self.objects}

    @staticmethod
    def from_json(doc: dict[str, Any]) -> Snapshot:
        return Snapshot({str(k): list(v) for k, v in doc["objects"].items()})


# (namespace, name) of a workload -> a reason: JSON has no tuple keys, so each is a row.
Reasons = dict[tuple[str, str], str]


def _rows(reasons: Reasons) -> list[list[str]]:
    return [[ns, name, why] for (ns, name), why in sorted(reasons.items())]


def _reasons(rows: list[list[str]]) -> Reasons:
    return {(ns, name): why for ns, name, why in rows}


@dataclass
class JobOutcome:
    """What the driver saw of the jobs it started, beyond what the API server lists: the pods it
    made or held in Volcano's stead, and Kueue's word on the Jobs it queues."""

    refused: Reasons = field(default_factory=dict)
    """(namespace, workload) -> why pods were not created (quota, Pod Security)."""
    gang: Reasons = field(default_factory=dict)
    """(namespace, Volcano Job) -> why its pods were held back as a gang that cannot start."""
    queued: Reasons = field(default_factory=dict)
    """(namespace, Job) -> why Kueue has not admitted it (its Workload's QuotaReserved)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "refused": _rows(self.refused),
            "gang": _rows(self.gang),
            "queued": _rows(self.queued),
        }

    @staticmethod
    def from_json(doc: dict[str, Any]) -> JobOutcome:
        return JobOutcome(_reasons(doc["refused"]), _reasons(doc["gang"]), _reasons(doc["queued"]))


@dataclass(frozen=True)
class Refusal:
    """An object of a unit the API server refused to apply (SIM012, said by the judge)."""

    unit: str
    """The unit's path (overlays/<env>/<unit>)."""
    api_version: str
    kind: str
    namespace: str
    name: str
    message: str

    @staticmethod
    def of(unit: str, obj: Obj, message: str) -> Refusal:
        meta = obj.get("metadata") or {}
        return Refusal(
            unit,
            str(obj.get("apiVersion")),
            str(obj.get("kind")),
            str(meta.get("namespace") or ""),
            str(meta.get("name")),
            message,
        )


@dataclass
class JobsRun:
    """The jobs started (all of them, or one alone) and the cluster once it settled."""

    outcome: JobOutcome
    state: Snapshot
    job: tuple[str, str] = ("", "")
    """(namespace, name) of the job run alone; ('', '') when every job ran."""

    def as_json(self) -> dict[str, Any]:
        return {
            "job": list(self.job),
            "outcome": self.outcome.as_json(),
            "state": self.state.as_json(),
        }

    @staticmethod
    def from_json(doc: dict[str, Any]) -> JobsRun:
        ns, name = doc["job"]
        return JobsRun(
            JobOutcome.from_json(doc["outcome"]), Snapshot.from_json(doc["state"]), (ns, name)
        )


@dataclass
class PhaseRun:
    """A migrating service at one phase of its walk (simulate --phases), settled: what the API
    server served then."""

    team: str
    service: str
    phase: str
    state: Snapshot

    def as_json(self) -> dict[str, Any]:
        return {
            "team": self.team,
            "service": self.service,
            "phase": self.phase,
            "state": self.state.as_json(),
        }

    @staticmethod
    def from_json(doc: dict[str, Any]) -> PhaseRun:
        return PhaseRun(
            str(doc["team"]),
            str(doc["service"]),
            str(doc["phase"]),
            Snapshot.from_json(doc["state"]),
        )


@dataclass
class EnvRun:
    """One environment driven on the control plane: what the judge reads, step by step."""

    env: str
    objects: int = 0
    """Objects applied (the report's count)."""
    refusals: list[Refusal] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    nodes: list[Obj] | None = None
    """The Nodes once nfd-master has run every rule on them, still cordoned (None: the
    environment has no node-config unit, so no node was judged)."""
    ignored_taints: list[str] = field(default_factory=list)
    """nfd-master's log lines about taints it refused to set ('ignoring taint')."""
    probes: list[Obj] = field(default_factory=list)
    """The probe pods, once the scheduler has placed what it could."""
    services: Snapshot | None = None
    """Every pod once the services (and every DaemonSet) settled, before any job."""
    jobs: JobsRun | None = None
    """Every job started beside the services, settled."""
    alone: list[JobsRun] = field(default_factory=list)
    """Each job that did not fully run beside the others, run again alone beside the services."""
    jobset_workloads: Snapshot | None = None
    """Kueue's Workloads once it has decided on every JobSet and TrainJob (None: Kueue does not
    run, or there are none)."""
    jobsets: Snapshot | None = None
    """The JobSets and TrainJobs beside the services, settled (None: there are none)."""
    phases: list[PhaseRun] = field(default_factory=list)
    """Each migrating service at each phase of its walk, the jobs gone (simulate --phases)."""

    def as_json(self) -> dict[str, Any]:
        def snap(s: Snapshot | None) -> dict[str, Any] | None:
            return None if s is None else s.as_json()

        return {
            "env": self.env,
            "objects": self.objects,
            "refusals": [vars(r) for r in self.refusals],
            "timings": self.timings,
            "nodes": self.nodes,
            "ignored_taints": self.ignored_taints,
            "probes": self.probes,
            "services": snap(self.services),
            "jobs": None if self.jobs is None else self.jobs.as_json(),
            "alone": [a.as_json() for a in self.alone],
            "jobset_workloads": snap(self.jobset_workloads),
            "jobsets": snap(self.jobsets),
            "phases": [p.as_json() for p in self.phases],
        }

    @staticmethod
    def from_json(doc: dict[str, Any]) -> EnvRun:
        def snap(d: dict[str, Any] | None) -> Snapshot | None:
            return None if d is None else Snapshot.from_json(d)

        return EnvRun(
            env=str(doc["env"]),
            objects=int(doc["objects"]),
            refusals=[Refusal(**r) for r in doc["refusals"]],
            timings=dict(doc["timings"]),
            nodes=doc["nodes"],
            ignored_taints=list(doc["ignored_taints"]),
            probes=list(doc["probes"]),
            services=snap(doc["services"]),
            jobs=None if doc["jobs"] is None else JobsRun.from_json(doc["jobs"]),
            alone=[JobsRun.from_json(a) for a in doc["alone"]],
            jobset_workloads=snap(doc["jobset_workloads"]),
            jobsets=snap(doc["jobsets"]),
            # Runs recorded before the walk existed have none.
            phases=[PhaseRun.from_json(p) for p in doc.get("phases", [])],
        )
