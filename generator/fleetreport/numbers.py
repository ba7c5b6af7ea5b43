"""The report's numbers, per environment, taken from the code the checks and `plan` run.

- capacity and promised devices per vendor: `capacity.quota_totals` (the CAP001 check);
- what the workloads need per vendor: `plan.env_plan` (its capacity rows, as MIG005 counts them);
- replicas and traffic per track of each service: `plan.env_plan` (`workloads.phases`);
- cost weights: each vendor's `costWeight` from values (catalog default, vendor file, environment).

Nothing here recounts what those modules count; it only arranges and weights their results.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from generator import plan
from generator.builders.fleet import Build, build_values
from generator.errors import UsageError
from generator.findings import BASE_LAYER, Finding, concerns, sorted_findings, split_layer
from generator.policy import registry as policy
from generator.policy.capacity import quota_totals, team_devices
from generator.policy.context import Context
from generator.values import loader as values
from generator.values.model import FleetView, unit_cost

# The migration ladder of docs/workloads.md, in the order a service climbs it.
PHASE_STEPS = ("validate", "dual-run", "shift-N", "primary-new", "fallback")
CAP_CODES = ("CAP",)


@dataclass(frozen=True)
class VendorRow:
    vendor: str
    display_name: str
    resource: str
    capacity: int
    promised: int  # the teams' quotas times their namespaces
    needed: int | None  # what the workloads need at once (plan); None when none uses the vendor
    cost_weight: float
    unit: str = "devices"  # what capacity, quotas and needs count (plan.counted_in)

    @property
    def occupancy(self) -> float | None:
        """Percent of the capacity the workloads need at once; None when none uses the vendor
        or it has no capacity."""
        if self.needed is None or not self.capacity:
            return None
        return 100 * self.needed / self.capacity

    @property
    def overcommitted(self) -> bool:
        return self.promised > self.capacity

    @property
    def over_by(self) -> int:
        return max(0, self.promised - self.capacity)


@dataclass(frozen=True)
class TeamCost:
    team: str
    devices: dict[str, int]  # vendor -> devices promised (quota x namespaces)
    weighted: float  # sum of devices x the vendor's costWeight
    baseline: float  # the same devices (a share: its part of one) at the baseline's costWeight

    @property
    def total_devices(self) -> int:
        return sum(self.devices.values())

    @property
    def saving(self) -> float:
        return self.baseline - self.weighted

    @property
    def saving_pct(self) -> float:
        return 100.0 * self.saving / self.baseline if self.baseline else 0.0


@dataclass(frozen=True)
class Migration:
    row: plan.ServiceRow  # phase, routing, replicas, weights and devices per track, as plan prints
    old: str  # migration.from ("" when weights are set without a migration)
    new: str  # migration.to

    @property
    def step(self) -> int:
        """Index of the phase in PHASE_STEPS."""
        phase = "shift-N" if self.row.phase.startswith("shift-") else self.row.phase
        return PHASE_STEPS.index(phase)

    @property
    def new_traffic(self) -> float:
        """Percent of the traffic the migration's target track really gets as rendered (plan's
        traffic column: with `routing: service` it follows ready pods, not the phase's weight)."""
        return sum(t.traffic for t in self.row.tracks if t.vendor == self.new)


@dataclass
class EnvReport:
    env: str  # the layer: `env`, or `env/cluster` for a cluster of an environment with clusters
    vendors: list[VendorRow]
    teams: list[TeamCost]  # sorted by team name
    baseline_vendor: str
    baseline_weight: float
    migrations: list[Migration]
    cap_findings: list[Finding]  # the CAP checks on this environment's view
    plan: plan.EnvPlan = field(repr=False)
    cluster_labels: dict[str, str] = field(default_factory=dict)  # values clusters.<c>.labels

    @property
    def slug(self) -> str:
        """The layer as an HTML id part (no '/')."""
        return self.env.replace("/", "-")

    @property
    def title(self) -> str:
        """`Environment prod`, or `Environment prod, cluster main`."""
        env, cluster = split_layer(self.env)
        labels = ", ".join(f"{k}={v}" for k, v in sorted(self.cluster_labels.items()))
        return (
            f"Environment {env}"
            + (f", cluster {cluster}" if cluster else "")
            + (f" ({labels})" if labels else "")
        )

    @property
    def vendor_ids(self) -> list[str]:
        return [v.vendor for v in self.vendors]

    @property
    def weighted(self) -> float:
        return sum(t.weighted for t in self.teams)

    @property
    def baseline(self) -> float:
        return sum(t.baseline for t in self.teams)

    @property
    def saving(self) -> float:
        return self.baseline - self.weighted

    @property
    def saving_pct(self) -> float:
        return 100.0 * self.saving / self.baseline if self.baseline else 0.0


@dataclass
class FleetNumbers:
    fleet: str
    envs: list[EnvReport]
    findings: list[Finding]  # every values and object check of the run, as render reports them


def baseline_weight(view: FleetView, vendor_id: str) -> float:
    """The baseline vendor's costWeight in the environment of `view` (its unsplit view, which
    holds the vendors of all its clusters): from the fleet's values, else from the catalog."""
    vendor = view.vendor(vendor_id)
    if vendor is not None:
        return vendor.cost_weight
    entry = values.catalog().get(vendor_id)
    if entry is None or "costWeight" not in entry[0]:
        known = sorted({v.id for v in view.vendors} | set(values.catalog()))
        raise UsageError(
            f"baseline vendor {vendor_id!r} has no costWeight; known: {', '.join(known)}"
        )
    return float(entry[0]["costWeight"])


def team_costs(view: FleetView, weight: float) -> list[TeamCost]:
    out = []
    for team in view.teams:
        devices = {v.id: team_devices(team, v.id) for v in view.vendors if team.quota.get(v.id)}
        weighted = sum(n * unit_cost(team, v) for v in view.vendors if (n := devices.get(v.id, 0)))
        # A share is its part of a device at the baseline too (a quarter of an A100 there).
        baseline = sum(
            n * weight * v.unit_size for v in view.vendors if (n := devices.get(v.id, 0))
        )
        out.append(TeamCost(team.name, devices, weighted, baseline))
    return out


def migrations(build: Build, rows: list[plan.ServiceRow]) -> list[Migration]:
    """The services with two or more tracks, in plan's order, with their migration's ends."""
    teams = build.view.teams
    services = {(t.name, s.name): s for t in teams for s in build.workloads.of(t).services}
    out = []
    for row in rows:
        if len(row.tracks) < 2:
            continue
        svc = services[(row.team, row.service)]
        out.append(Migration(row, svc.old, svc.new))
    return out


def env_report(build: Build, baseline_vendor: str, weight: float) -> EnvReport:
    """One layer's numbers; `weight` the baseline vendor's costWeight in its environment."""
    view = build.view
    planned = plan.env_plan(build)
    needs = {c.vendor: c.at_once for c in planned.capacity}
    vendors = [
        VendorRow(
            q.vendor.id,
            q.vendor.display_name,
            q.vendor.resource_name,
            q.capacity,
            q.total,
            needs.get(q.vendor.id),
            q.vendor.cost_weight,
            plan.counted_in(q.vendor),
        )
        for q in quota_totals(view)
    ]
    ctx = Context(build)
    cap = [
        replace(f, envs=(view.key,))
        for code, chk in policy.CHECKS.items()
        if code.startswith(CAP_CODES)
        for f in chk(ctx)
    ]
    return EnvReport(
        env=view.key,
        vendors=vendors,
        teams=team_costs(view, weight),
        baseline_vendor=baseline_vendor,
        baseline_weight=weight,
        migrations=migrations(build, planned.services),
        cap_findings=sorted_findings(cap),
        plan=planned,
        cluster_labels=dict(view.cluster.labels) if view.cluster is not None else {},
    )


def compute(
    values_dir: Path, env: str | None = None, baseline_vendor: str = "nvidia"
) -> FleetNumbers:
    loaded = values.load(values_dir)
    loaded.require_env(env)
    builds = build_values(loaded)
    findings = policy.run_checks(loaded, builds)
    if env is not None:
        # The report names base-layer findings too: every environment builds on the base.
        findings = [f for f in findings if concerns(f, env) or BASE_LAYER in f.envs]
    views = plan.views(loaded, env)
    # One baseline per environment, from the environment's values: a cluster without the
    # baseline vendor prices its devices at the weight its environment gives that vendor, as
    # the clusters that have it do, not at the catalog's.
    hubs = {v.env: loaded.hub_of(v) for v in views}
    weights = {e: baseline_weight(hub, baseline_vendor) for e, hub in hubs.items()}
    return FleetNumbers(
        loaded.base.fleet.name,
        [env_report(builds[v.key], baseline_vendor, weights[v.env]) for v in views],
        sorted_findings(findings),
    )
