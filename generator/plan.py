"""`render.py plan`: per environment and service, the phase, replicas, weights and the traffic each
track really gets, and the devices each team's workloads need per vendor against its quota and the
vendor's capacity.

The traffic column is read from the rendered objects, not from the phase: with `routing: service`
the Service spreads requests over the ready pods it selects, so a `shift-10` phase with two pods
per track sends 50 %, not 10 %, to the new track. Only `gateway` and `istio` apply the weights.

The core returns data (`plan`) and text (`format_text`); the CLI prints and picks the exit code.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from generator.builders.fleet import Build, build_values
from generator.findings import Finding, Severity, concerns, layer_selected, sorted_findings
from generator.policy import registry as policy
from generator.values import loader as values
from generator.values.allocation.dra import DRA
from generator.values.model import FleetView, Values, Vendor
from generator.vocab.labels import TRACK_LABEL
from generator.vocab.objects import Obj
from generator.workloads.model import Service
from generator.workloads.phases import plan_service
from generator.workloads.usage import fleet_needs, vendor_usage

PLAN_CODES = ("WKL", "MIG", "POD")


@dataclass(frozen=True)
class TrackRow:
    vendor: str
    replicas: int
    weight: int  # what the phase (or explicit weights) asks for
    devices: int
    traffic: float  # percent of the requests the track really gets, as rendered
    cluster: str = ""  # the track's cluster, for a service across clusters


@dataclass(frozen=True)
class ServiceRow:
    team: str
    service: str
    namespace: str
    phase: str
    routing: str
    tracks: list[TrackRow]  # all of them, wherever they run (each with its cluster)
    # A service across clusters: the cluster whose HTTPRoute splits its traffic (routing
    # gateway), or the name the global load balancer serves (routing external).
    ingress_cluster: str = ""
    hostname: str = ""

    @property
    def follows_pods(self) -> bool:
        """Whether traffic differs from the weights because routing follows ready pods."""
        return any(t.traffic != t.weight for t in self.tracks)


@dataclass(frozen=True)
class QuotaRow:
    team: str
    namespace: str
    vendor: str
    services: int
    largest_job: int
    needed: int  # services + the largest job: what the quota must hold
    quota: int
    fits: bool
    at_once: int = 0  # services + the jobs the quota lets run side by side


@dataclass(frozen=True)
class CapacityRow:
    vendor: str
    needed: int  # all teams' services + the largest job: what must fit for everything to run
    capacity: int
    fits: bool
    at_once: int = 0  # services + each team's jobs up to its quota, side by side
    # What the numbers count: "devices", "1/4 shares" of a vendor that shares its devices, or
    # "claimed devices" of a vendor allocated by DRA.
    unit: str = "devices"


@dataclass
class EnvPlan:
    env: str
    cluster: str = ""  # "" for an environment that declares no clusters
    services: list[ServiceRow] = field(default_factory=list)
    quotas: list[QuotaRow] = field(default_factory=list)
    capacity: list[CapacityRow] = field(default_factory=list)


@dataclass
class Plan:
    envs: list[EnvPlan]
    findings: list[Finding]  # workload findings (errors and warnings) of the shown environments

    @property
    def fits(self) -> bool:
        rows_fit = all(q.fits for e in self.envs for q in e.quotas) and all(
            c.fits for e in self.envs for c in e.capacity
        )
        return rows_fit and not any(f.severity is Severity.ERROR for f in self.findings)

    def as_json(self) -> dict[str, Any]:
        return {
            "fits": self.fits,
            "environments": [asdict(e) for e in self.envs],
            "findings": [
                {
                    "code": f.code,
                    "severity": f.severity.value,
                    "message": f.text,
                    "location": str(f.location),
                    "path": f.path,
                }
                for f in self.findings
            ],
        }


def _traffic(svc: Service, objects: list[Obj]) -> dict[str, float]:
    """Percent of the requests per track, from the rendered objects.

    Weighted routes (HTTPRoute, VirtualService) apply the weights. Otherwise the Service
    `<service>` balances over the ready pods its selector matches: each track gets its share of
    the replicas of the Deployments (and the leaders of the LeaderWorkerSet groups) whose pod
    labels the selector matches.
    """
    if svc.routing != "service":
        return {p.vendor: float(p.weight) for p in plan_service(svc)}
    mine = [o for o in objects if o["metadata"].get("namespace") == svc.namespace]
    service = next(o for o in mine if o["kind"] == "Service" and o["metadata"]["name"] == svc.name)
    selector = service["spec"]["selector"].items()
    pods: dict[str, int] = {}
    for obj in mine:
        if obj["kind"] == "Deployment":
            template = obj["spec"]["template"]
        elif obj["kind"] == "LeaderWorkerSet":
            # One serving pod per group: its leader (the workers are not selected).
            template = obj["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
        else:
            continue
        labels = template["metadata"]["labels"]
        track = str(labels.get(TRACK_LABEL, ""))
        if track and selector <= labels.items():
            pods[track] = pods.get(track, 0) + int(obj["spec"]["replicas"])
    total = sum(pods.values())
    return {
        t.vendor: round(100 * pods.get(t.vendor, 0) / total, 1) if total else 0.0
        for t in svc.tracks
    }


def env_plan(build: Build) -> EnvPlan:
    """The migration, quota and capacity rows of one cluster, from its build: the workload
    objects `plan` reads traffic from are the ones render lays out."""
    view = build.view
    out = EnvPlan(view.env, view.cluster.name if view.cluster else "")
    for team in view.teams:
        objects = build.team(team).objects
        for svc in build.workloads.of(team).services:
            traffic = _traffic(svc, objects)
            tracks = [
                TrackRow(p.vendor, p.replicas, p.weight, p.devices, traffic[p.vendor], p.cluster)
                for p in plan_service(svc)
            ]
            cross = svc.cross
            out.services.append(
                ServiceRow(
                    team.name,
                    svc.name,
                    svc.namespace,
                    svc.phase,
                    svc.routing,
                    tracks,
                    cross.ingress if cross else "",
                    cross.hostname if cross else "",
                )
            )
    for team in view.teams:
        for use in vendor_usage(build, team):
            out.quotas.append(
                QuotaRow(
                    team.name,
                    use.namespace,
                    use.vendor,
                    use.services,
                    use.largest_job,
                    use.needed,
                    use.quota,
                    use.needed <= use.quota,
                    use.at_once,
                )
            )
    needs = fleet_needs(build)
    for vendor in view.vendors:
        if vendor.id in needs:
            need = needs[vendor.id]
            out.capacity.append(
                CapacityRow(
                    vendor.id,
                    need.needed,
                    vendor.capacity,
                    need.needed <= vendor.capacity,
                    need.at_once,
                    counted_in(vendor),
                )
            )
    return out


def counted_in(vendor: Vendor) -> str:
    """What a vendor's capacity and quotas count, for a table: devices, shares, MIG instances."""
    if vendor.sharing:
        return vendor.sharing.counted_in
    return DRA.counted_in if vendor.dra else "devices"


def views(loaded: Values, env: str | None) -> list[FleetView]:
    """The cluster views `--env` selects, environments in fleet.yaml's order."""
    return [
        v
        for e in loaded.base.fleet.environments
        for v in loaded.views_of(e)
        if layer_selected(v.key, env)
    ]


def plan(values_dir: Path, env: str | None = None) -> Plan:
    loaded = values.load(values_dir)
    loaded.require_env(env)
    builds = build_values(loaded)
    envs = [env_plan(builds[v.key]) for v in views(loaded, env)]
    findings = [f for f in policy.run_checks(loaded, builds) if f.code.startswith(PLAN_CODES)]
    if env is not None:
        # A finding named for other environments (or clusters) only is not about this one.
        findings = [f for f in findings if concerns(f, env)]
    return Plan(envs, sorted_findings(findings))


def _table(header: list[str], rows: list[list[str]], indent: str = "    ") -> list[str]:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]
    return [
        indent + "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in (header, *rows)
    ]


def _percent(value: float) -> str:
    return f"{value:g}%"


def format_text(result: Plan) -> str:
    lines: list[str] = []
    for e in result.envs:
        lines.append(f"environment {e.env}" + (f", cluster {e.cluster}" if e.cluster else ""))
        for s in e.services:
            across = ""
            if s.ingress_cluster:
                across = f" across clusters (its HTTPRoute on cluster {s.ingress_cluster})"
            elif s.hostname:
                across = (
                    f" across clusters (a global load balancer's, for {s.hostname}: "
                    f"traffic/{e.env}.json)"
                )
            lines.append(
                f"  service {s.team}/{s.service} (namespace {s.namespace}): phase {s.phase}, "
                f"routing {s.routing}{across}"
            )
            # A service across clusters lists every track with its cluster: the phase is one,
            # and each cluster runs its track's replicas.
            crossing = any(t.cluster for t in s.tracks)
            lines += _table(
                [
                    "track",
                    *(["cluster"] if crossing else []),
                    "replicas",
                    "devices",
                    "weight",
                    "traffic",
                ],
                [
                    [
                        t.vendor,
                        *([t.cluster] if crossing else []),
                        str(t.replicas),
                        str(t.devices),
                        str(t.weight),
                        _percent(t.traffic),
                    ]
                    for t in s.tracks
                ],
            )
            if s.follows_pods:
                lines.append(
                    "    routing service: the Service balances over ready pods, so traffic "
                    "follows replicas, not weights; use routing gateway or istio for weights"
                )
        if e.quotas:
            lines.append(
                "  devices per team and vendor (services + largest job) vs quota, and what its "
                "jobs hold at once within the quota"
            )
            lines += _table(
                [
                    "team",
                    "namespace",
                    "vendor",
                    "services",
                    "job",
                    "needed",
                    "quota",
                    "fits",
                    "at once",
                ],
                [
                    [
                        q.team,
                        q.namespace,
                        q.vendor,
                        str(q.services),
                        str(q.largest_job),
                        str(q.needed),
                        str(q.quota),
                        "yes" if q.fits else "NO",
                        str(q.at_once),
                    ]
                    for q in e.quotas
                ],
            )
        if e.capacity:
            lines.append(
                "  devices per vendor (all teams: services + largest job; at once: each team's "
                "jobs up to its quota) vs capacity"
            )
            lines += _table(
                ["vendor", "counted in", "needed", "capacity", "fits", "at once", "jobs queue"],
                [
                    [
                        c.vendor,
                        c.unit,
                        str(c.needed),
                        str(c.capacity),
                        "yes" if c.fits else "NO",
                        str(c.at_once),
                        "yes" if c.at_once > c.capacity else "no",
                    ]
                    for c in e.capacity
                ],
            )
    lines.append("plan fits" if result.fits else "plan does NOT fit")
    return "\n".join(lines) + "\n"
