"""`render.py plan`: per environment and service, the phase, replicas and weights per track, and the
devices each team's workloads need per vendor against its quota and the vendor's capacity.

The core returns data (`plan`) and text (`format_text`); the CLI prints and picks the exit code.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import policy, values
from .errors import Finding, Severity, UsageError, sorted_findings
from .model import FleetView
from .workloads.model import team_workloads
from .workloads.phases import plan_service
from .workloads.usage import fleet_needs, vendor_usage

PLAN_CODES = ("WKL", "MIG", "POD")


@dataclass(frozen=True)
class TrackRow:
    vendor: str
    replicas: int
    weight: int
    devices: int


@dataclass(frozen=True)
class ServiceRow:
    team: str
    service: str
    namespace: str
    phase: str
    routing: str
    tracks: list[TrackRow]


@dataclass(frozen=True)
class QuotaRow:
    team: str
    namespace: str
    vendor: str
    services: int
    largest_job: int
    needed: int
    quota: int
    fits: bool


@dataclass(frozen=True)
class CapacityRow:
    vendor: str
    needed: int  # all teams' services + the largest job
    capacity: int
    fits: bool


@dataclass
class EnvPlan:
    env: str
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
                    "message": f.message,
                    "location": str(f.location),
                    "path": f.path,
                }
                for f in self.findings
            ],
        }


def env_plan(view: FleetView) -> EnvPlan:
    out = EnvPlan(view.env)
    for team in view.teams:
        for svc in team_workloads(view, team).services:
            tracks = [
                TrackRow(p.vendor, p.replicas, p.weight, p.devices) for p in plan_service(svc)
            ]
            out.services.append(
                ServiceRow(team.name, svc.name, svc.namespace, svc.phase, svc.routing, tracks)
            )
    for team in view.teams:
        for use in vendor_usage(view, team):
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
                )
            )
    needs = fleet_needs(view)
    for vendor in view.vendors:
        if vendor.id in needs:
            needed = needs[vendor.id].needed
            out.capacity.append(
                CapacityRow(vendor.id, needed, vendor.capacity, needed <= vendor.capacity)
            )
    return out


def plan(values_dir: Path, env: str | None = None) -> Plan:
    loaded = values.load(values_dir)
    if env is not None and env not in loaded.envs:
        raise UsageError(f"unknown environment {env!r}; known: " + ", ".join(sorted(loaded.envs)))
    order = [e for e in loaded.base.fleet.environments if env in (None, e)]
    envs = [env_plan(loaded.envs[e]) for e in order]
    findings = [f for f in policy.run_checks(loaded) if f.code.startswith(PLAN_CODES)]
    if env is not None:
        others = [e for e in loaded.envs if e != env]
        findings = [
            f for f in findings if not any(f"environment {o!r}" in f.message for o in others)
        ]
    return Plan(envs, sorted_findings(findings))


def _table(header: list[str], rows: list[list[str]], indent: str = "    ") -> list[str]:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]
    return [
        indent + "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in (header, *rows)
    ]


def format_text(result: Plan) -> str:
    lines: list[str] = []
    for e in result.envs:
        lines.append(f"environment {e.env}")
        for s in e.services:
            lines.append(
                f"  service {s.team}/{s.service} (namespace {s.namespace}): phase {s.phase}, "
                f"routing {s.routing}"
            )
            lines += _table(
                ["track", "replicas", "weight", "devices"],
                [[t.vendor, str(t.replicas), str(t.weight), str(t.devices)] for t in s.tracks],
            )
        if e.quotas:
            lines.append("  devices per team and vendor (services + largest job) vs quota")
            lines += _table(
                ["team", "namespace", "vendor", "services", "job", "needed", "quota", "fits"],
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
                    ]
                    for q in e.quotas
                ],
            )
        if e.capacity:
            lines.append("  devices per vendor (all teams) vs capacity")
            lines += _table(
                ["vendor", "needed", "capacity", "fits"],
                [
                    [c.vendor, str(c.needed), str(c.capacity), "yes" if c.fits else "NO"]
                    for c in e.capacity
                ],
            )
    lines.append("plan fits" if result.fits else "plan does NOT fit")
    return "\n".join(lines) + "\n"
