"""Team workloads resolved from a team's merged values: jobs, and services with their tracks.

Nothing in the workload schemas is `required` (environment overrides reuse them as partials), so
this module reports what a resolved workload lacks, with the file and line of the workload.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from generator.findings import CodeInfo, Finding, Severity
from generator.values.loader import missing_vendor_hint
from generator.values.model import Crossing, FleetView, Team
from generator.values.yamlio import YamlPath, json_path
from generator.workloads import podspec
from generator.workloads.podspec import PodExtras

SERVICE_PHASES = ("validate", "dual-run", "shift-N", "primary-new", "fallback")
# Job kinds made of named tasks (values `tasks`), each task its own pods on one vendor.
TASK_KINDS = ("volcano", "jobset")


@dataclass(frozen=True)
class PodDecl:
    """One kind of pod: its vendor, whole devices, image and extra container settings."""

    vendor: str  # "" for a pod without accelerators
    devices: int
    model: str
    image: str
    command: tuple[str, ...]
    args: tuple[str, ...]
    env: dict[str, str]
    resources: dict[str, dict[str, Any]]
    node_selector: dict[str, str]
    vendor_mounts: bool = True
    # A pool model the pod accepts when `model`'s pools are full: `model` becomes a preferred
    # node affinity, both models the required one (docs/scheduling.md).
    fallback_model: str = ""
    extras: PodExtras = field(default_factory=PodExtras)


@dataclass(frozen=True)
class Task:
    name: str
    replicas: int
    pod: PodDecl
    path: YamlPath  # values path of the task (or of the job for a batch/v1 Job)


@dataclass(frozen=True)
class Job:
    team: str
    name: str
    namespace: str
    kind: str  # job | volcano
    tasks: tuple[Task, ...]  # one task for a batch/v1 Job
    completions: int
    backoff_limit: int
    min_available: int
    path: YamlPath
    # A Volcano Job's `spec.networkTopology` as the values give it (mode, highestTierAllowed or
    # highestTierName; volcano.sh/apis v1.14.0 pkg/apis/batch/v1alpha1/job.go
    # NetworkTopologySpec); None when unset ({} is set: hard mode, the CRD's default). Set on a
    # batch/v1 Job it is refused (SCH008).
    network_topology: dict[str, Any] | None = None
    ttl_after_finished: int | None = None
    active_deadline: int | None = None
    # kind: jobset: the JobSet's spec.successPolicy and spec.failurePolicy as the values give
    # them (None: unset).
    success_policy: dict[str, Any] | None = None
    failure_policy: dict[str, Any] | None = None
    # kind: trainjob: the ClusterTrainingRuntime it names, and its processes per node (None:
    # the runtime's).
    runtime: str = ""
    procs_per_node: int | None = None

    @property
    def has_tasks(self) -> bool:
        """A Volcano Job or a JobSet: named tasks, each its own vendor (a batch Job has one)."""
        return self.kind in TASK_KINDS

    def devices(self) -> dict[str, int]:
        """Devices per vendor the whole job holds at once."""
        out: dict[str, int] = {}
        for task in self.tasks:
            if task.pod.vendor:
                out[task.pod.vendor] = (
                    out.get(task.pod.vendor, 0) + task.replicas * task.pod.devices
                )
        return out


@dataclass(frozen=True)
class Track:
    vendor: str
    replicas: int  # full size (groups, for a LeaderWorkerSet)
    min_available: int | None
    pod: PodDecl
    group_size: int = 1  # pods per replica: above 1, a LeaderWorkerSet
    # The cluster the track runs in, for a service across clusters ("" otherwise: the view's).
    cluster: str = ""

    @property
    def devices_per_replica(self) -> int:
        return self.pod.devices * self.group_size


@dataclass(frozen=True)
class CrossCluster:
    """How a service whose tracks run in different clusters splits its traffic (values
    `crossCluster`; docs/multi-cluster.md, "Moving a service across clusters"), and which of
    those clusters the view being built is."""

    routing: str  # gateway | external
    here: str  # the view's cluster
    ingress: str = ""  # gateway: the cluster whose Gateway routes
    gateway: dict[str, Any] = field(default_factory=dict)
    hostname: str = ""  # external: the name the global load balancer serves


@dataclass(frozen=True)
class Service:
    team: str
    name: str
    namespace: str
    tracks: tuple[Track, ...]  # sorted by vendor
    old: str  # migration.from ("" without a migration)
    new: str  # migration.to
    phase: str
    fallback_replicas: int
    explicit_replicas: dict[str, int]
    explicit_weights: dict[str, int]
    routing: str
    port: int
    container_port: int
    gateway: dict[str, Any] = field(default_factory=dict)
    istio: dict[str, Any] = field(default_factory=dict)
    replicas_follow_weights: bool = False
    # Set when the tracks run in different clusters: every track is in `tracks` (the phase's
    # weights are over all of them), each with its cluster; `routing` is then the layer that
    # routes between the clusters (gateway or external), not the in-cluster one.
    cross: CrossCluster | None = None

    @property
    def path(self) -> YamlPath:
        return ("services", self.name)

    @property
    def local_tracks(self) -> tuple[Track, ...]:
        """The tracks that run in the view's cluster: all of them, unless the service crosses
        clusters. What a cluster renders, holds and counts against its quota."""
        if self.cross is None:
            return self.tracks
        return tuple(t for t in self.tracks if t.cluster == self.cross.here)

    @property
    def routes_here(self) -> bool:
        """Whether the view's cluster renders the service's traffic split: its own (one
        cluster), or the ingress cluster's HTTPRoute over the tracks' ServiceImports."""
        if self.cross is None:
            return True
        return self.cross.routing == "gateway" and self.cross.ingress == self.cross.here

    def track(self, vendor: str) -> Track | None:
        return next((t for t in self.tracks if t.vendor == vendor), None)


@dataclass
class TeamWorkloads:
    team: Team
    jobs: list[Job]
    services: list[Service]
    findings: list[Finding]


def _finding(
    team: Team, code: str, message: str, path: YamlPath, hint: str, *, key: bool = False
) -> Finding:
    return Finding(code, message, team.doc.locate(path, key=key), json_path(path), hint)


class _Resolver:
    def __init__(self, view: FleetView, team: Team) -> None:
        self.view = view
        self.team = team
        self.findings: list[Finding] = []
        # The workload being read names a vendor whose values were refused: it is left out,
        # silently (the vendor's own findings say why; FleetView.refused).
        self.refused = False

    def err(self, code: str, message: str, path: YamlPath, hint: str, key: bool = False) -> None:
        self.findings.append(_finding(self.team, code, message, path, hint, key=key))

    def namespace(self, raw: dict[str, Any], path: YamlPath) -> str:
        ns = str(raw.get("namespace", self.team.namespaces[0]))
        if ns not in self.team.namespaces:
            self.err(
                "WKL003",
                f"namespace {ns!r} is not a namespace of team {self.team.name!r}",
                (*path, "namespace"),
                "known: " + ", ".join(self.team.namespaces),
            )
        return ns

    def vendor_ok(self, vendor: str, path: YamlPath) -> bool:
        if self.view.vendor(vendor) is None and vendor in self.view.refused:
            self.refused = True
            return False
        if self.view.vendor(vendor) is None:
            self.err(
                "WKL001",
                f"vendor {vendor!r} has no enabled values/vendors/{vendor}.yaml",
                path,
                missing_vendor_hint(vendor, [v.id for v in self.view.vendors]),
            )
            return False
        return True

    def pod(
        self,
        raw: dict[str, Any],
        part: dict[str, Any],
        vendor: str,
        devices: int,
        model: str,
        image_path: YamlPath,
    ) -> PodDecl:
        images = raw.get("images", {}) or {}
        image = part.get("image") or images.get(vendor, "")
        if not image:
            self.err(
                "WKL002",
                f"no image for vendor {vendor!r}",
                image_path,
                f"add images: {{{vendor}: <image>}} to the workload",
            )
        return PodDecl(
            vendor=vendor,
            devices=devices,
            model=model,
            image=str(image),
            command=tuple(part.get("command", raw.get("command", []))),
            args=tuple(part.get("args", raw.get("args", []))),
            env=podspec.plain_env(raw),
            resources={k: dict(v) for k, v in (raw.get("resources", {}) or {}).items()},
            node_selector=dict(raw.get("nodeSelector", {}) or {}),
            vendor_mounts=bool(raw.get("vendorMounts", True)),
            fallback_model=str(part.get("fallbackModel", raw.get("fallbackModel", "")) or ""),
            extras=podspec.extras(raw),
        )

    def pod_fields(self, raw: dict[str, Any], path: YamlPath) -> None:
        """Report what is wrong in the workload's Kubernetes pod fields (podspec.py)."""
        for problem in podspec.problems(raw, self.view.fleet.kubernetes_version):
            self.err("WKL006", problem.message, (*path, *problem.path), problem.hint, problem.key)

    def job(self, name: str, raw: dict[str, Any]) -> Job | None:
        path: YamlPath = ("jobs", name)
        before, self.refused = len(self.findings), False
        ns = self.namespace(raw, path)
        self.pod_fields(raw, path)
        tasks_raw = raw.get("tasks", {}) or {}
        kind = raw.get("kind", "volcano" if tasks_raw else "job")
        tasks: list[Task] = []
        if kind in TASK_KINDS:
            if not tasks_raw:
                what = "Volcano job" if kind == "volcano" else "JobSet"
                self.err("WKL005", f"{what} {name!r} has no tasks", path, "add tasks")
                return None
            for tname, traw in sorted(tasks_raw.items()):
                tpath: YamlPath = (*path, "tasks", tname)
                vendor = str(traw.get("vendor", ""))
                if not vendor:
                    self.err("WKL005", f"task {tname!r} names no vendor", tpath, "set vendor")
                    continue
                if not self.vendor_ok(vendor, (*tpath, "vendor")):
                    continue
                model = str(traw.get("model", raw.get("model", "")))
                pod = self.pod(raw, traw, vendor, int(traw.get("devices", 1)), model, tpath)
                tasks.append(Task(tname, int(traw.get("replicas", 1)), pod, tpath))
        else:
            if tasks_raw:
                what = "a TrainJob" if kind == "trainjob" else "a batch/v1 Job"
                self.err(
                    "WKL005",
                    f"job {name!r} is {what} but has tasks",
                    (*path, "tasks"),
                    "set kind: volcano or jobset, or use vendor and devices",
                )
                return None
            vendor = str(raw.get("vendor", ""))
            if not vendor:
                self.err("WKL005", f"job {name!r} names no vendor", path, "set vendor")
                return None
            if not self.vendor_ok(vendor, (*path, "vendor")):
                return None
            model = str(raw.get("model", ""))
            pod = self.pod(raw, raw, vendor, int(raw.get("devices", 1)), model, (*path, "images"))
            # A TrainJob's pods are its nodes; a batch Job's its parallelism.
            size = raw.get("numNodes", 1) if kind == "trainjob" else raw.get("parallelism", 1)
            tasks.append(Task("main", int(size), pod, path))
        if len(self.findings) > before or self.refused:
            return None
        replicas = sum(t.replicas for t in tasks)
        return Job(
            team=self.team.name,
            name=name,
            namespace=ns,
            kind=kind,
            tasks=tuple(tasks),
            completions=int(raw.get("completions", tasks[0].replicas if kind == "job" else 1)),
            backoff_limit=int(raw.get("backoffLimit", 3)),
            min_available=int(raw.get("minAvailable", replicas)),
            path=path,
            network_topology=(
                None if raw.get("networkTopology") is None else dict(raw["networkTopology"])
            ),
            ttl_after_finished=_optional_int(raw, "ttlSecondsAfterFinished"),
            active_deadline=_optional_int(raw, "activeDeadlineSeconds"),
            success_policy=_optional_dict(raw, "successPolicy"),
            failure_policy=_optional_dict(raw, "failurePolicy"),
            runtime=str(raw.get("runtime", "torch-distributed")) if kind == "trainjob" else "",
            procs_per_node=_optional_int(raw, "numProcPerNode"),
        )

    def service(self, name: str, raw: dict[str, Any]) -> Service | None:
        path: YamlPath = ("services", name)
        before, self.refused = len(self.findings), False
        ns = self.namespace(raw, path)
        self.pod_fields(raw, path)
        tracks_raw = raw.get("tracks", {}) or {}
        if not tracks_raw:
            self.err(
                "WKL005", f"service {name!r} has no tracks", path, "add tracks: {<vendor>: ...}"
            )
            return None
        # Where each track runs, when the tracks are in different clusters (values/clusters.py).
        crossing = self.team.crossing.get(name)
        placed = crossing.tracks if crossing else {}
        here = self.view.cluster.name if self.view.cluster else ""
        tracks = []
        for vendor, traw in sorted(tracks_raw.items()):
            tpath: YamlPath = (*path, "tracks", vendor)
            # A track in another cluster is that cluster's view's to check (its vendor is not
            # in this view): here it gives the phase its weights.
            remote = placed.get(vendor, here) != here
            if not remote and not self.vendor_ok(vendor, tpath):
                continue
            devices = int(traw.get("devicesPerReplica", 1))
            pod = self.pod(raw, traw, vendor, devices, str(traw.get("model", "")), tpath)
            min_av = traw.get("minAvailable")
            tracks.append(
                Track(
                    vendor,
                    int(traw.get("replicas", 1)),
                    None if min_av is None else int(min_av),
                    pod,
                    int(traw.get("groupSize", 1)),
                    placed.get(vendor, ""),
                )
            )
        if len(self.findings) > before or self.refused:
            return None
        migration = raw.get("migration", {}) or {}
        old, new = str(migration.get("from", "")), str(migration.get("to", ""))
        # The old track first, then the new one, then any others by vendor.
        tracks.sort(key=lambda t: ({old: 0, new: 1}.get(t.vendor, 2), t.vendor))
        for key, vendor in (("from", old), ("to", new)):
            if vendor and vendor not in tracks_raw:
                self.err(
                    "WKL005",
                    f"migration.{key} names {vendor!r}, which is not a track of {name!r}",
                    (*path, "migration", key),
                    "known tracks: " + ", ".join(sorted(tracks_raw)),
                )
                return None
        if len(tracks) > 1 and not (old and new) and not raw.get("weights"):
            self.err(
                "WKL005",
                f"service {name!r} has {len(tracks)} tracks but no migration (from, to) "
                "and no weights",
                path,
                "set migration: {from: <old vendor>, to: <new vendor>}",
            )
            return None
        cross = self.cross(raw, crossing)
        routing = cross.routing if cross else str(raw.get("routing", "service"))
        if (
            cross is None
            and routing == "gateway"
            and not (raw.get("gateway", {}) or {}).get("parentRefs")
        ):
            self.err(
                "WKL005",
                f"service {name!r} routes through a gateway but names none",
                (*path, "routing"),
                "set gateway.parentRefs: [{name: <gateway>, namespace: <its namespace>}]",
            )
            return None
        return Service(
            team=self.team.name,
            name=name,
            namespace=ns,
            tracks=tuple(tracks),
            old=old,
            new=new,
            phase=str(raw.get("phase", "validate")),
            fallback_replicas=int(raw.get("fallbackReplicas", 1)),
            explicit_replicas={k: int(v) for k, v in (raw.get("replicas", {}) or {}).items()},
            explicit_weights={k: int(v) for k, v in (raw.get("weights", {}) or {}).items()},
            routing=routing,
            port=int(raw.get("port", 80)),
            container_port=int(raw.get("containerPort", 8080)),
            gateway=dict(raw.get("gateway", {}) or {}),
            istio=dict(raw.get("istio", {}) or {}),
            replicas_follow_weights=bool(raw.get("replicasFollowWeights", False)),
            cross=cross,
        )

    def cross(self, raw: dict[str, Any], crossing: Crossing | None) -> CrossCluster | None:
        """The service's crossCluster, read in a cluster of its tracks or its ingress (the
        split placed it and checked it: CLU005-CLU007)."""
        if crossing is None or self.view.cluster is None:
            return None
        cross = raw.get("crossCluster", {}) or {}
        return CrossCluster(
            routing=str(cross.get("routing", "gateway")),
            here=self.view.cluster.name,
            ingress=crossing.ingress,
            gateway=dict(cross.get("gateway", {}) or {}),
            hostname=str(cross.get("hostname", "")),
        )


def _optional_int(raw: dict[str, Any], key: str) -> int | None:
    return None if raw.get(key) is None else int(raw[key])


def _optional_dict(raw: dict[str, Any], key: str) -> dict[str, Any] | None:
    return None if raw.get(key) is None else dict(raw[key])


class Workloads:
    """The workload model of one view: each team's jobs and services as its values declare
    them, read once per team when first asked for. The builders, the checks, plan and simulate
    read the same model through the view's build (builders/build.py), which holds one."""

    def __init__(self, view: FleetView) -> None:
        self.view = view
        self._teams: dict[str, TeamWorkloads] = {}

    def of(self, team: Team) -> TeamWorkloads:
        found = self._teams.get(team.name)
        if found is None:
            found = self._teams[team.name] = _team_workloads(self.view, team)
        return found


def _team_workloads(view: FleetView, team: Team) -> TeamWorkloads:
    r = _Resolver(view, team)
    jobs: list[Job] = []
    services: list[Service] = []
    for name, raw in sorted((team.doc.get("jobs", default={}) or {}).items()):
        if raw.get("enabled", True):
            job = r.job(name, raw)
            if job is not None:
                jobs.append(job)
    for name, raw in sorted((team.doc.get("services", default={}) or {}).items()):
        if raw.get("enabled", True):
            svc = r.service(name, raw)
            if svc is not None:
                services.append(svc)
    return TeamWorkloads(team, jobs, services, r.findings)


def warn(finding: Finding) -> Finding:
    return Finding(
        finding.code,
        finding.message,
        finding.location,
        finding.path,
        finding.hint,
        Severity.WARNING,
    )


# What reading a team's workloads can report (with WKL001's check, at render time).
CODES = (
    CodeInfo("WKL002", "values", "error", "a workload has no image for a vendor it runs on"),
    CodeInfo("WKL003", "values", "error", "a workload's namespace is not one of its team's"),
    CodeInfo("WKL005", "values", "error", "a Volcano job has no tasks, or a task names no vendor"),
    CodeInfo(
        "WKL006",
        "values",
        "error",
        "a workload's pod field is not valid Kubernetes, or mounts a volume it does not have",
    ),
)
