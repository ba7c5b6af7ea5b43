"""Devices promised per vendor: each team's quota times its namespaces, summed against capacity.

One computation for the CAP001 check and the fleet report, so the two can never disagree.
A ResourceQuota is per namespace, so a team with quota q and n namespaces is promised q x n.
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.findings import Place
from generator.values.model import FleetView, Team, Vendor


def team_devices(team: Team, vendor_id: str) -> int:
    """Devices of one vendor promised to a team: its per-namespace quota times its namespaces."""
    return team.quota.get(vendor_id, 0) * len(team.namespaces)


@dataclass(frozen=True)
class VendorQuota:
    vendor: Vendor
    parts: tuple[tuple[Team, int], ...]  # teams with quota for the vendor and their devices

    @property
    def total(self) -> int:
        return sum(n for _, n in self.parts)

    @property
    def capacity(self) -> int:
        return self.vendor.capacity

    @property
    def overcommitted(self) -> bool:
        return self.total > self.capacity


def quota_totals(view: FleetView) -> list[VendorQuota]:
    """Every enabled vendor (in view order) with the teams' promised devices."""
    return [
        VendorQuota(
            vendor,
            tuple(
                (team, team_devices(team, vendor.id))
                for team in view.teams
                if team.quota.get(vendor.id)
            ),
        )
        for vendor in view.vendors
    ]


def quota_line(view: FleetView, team: Team, vendor_id: str) -> Place:
    """Where a team's quota for a vendor is in this view: this cluster's share of a quota split
    by cluster, else the quota."""
    path: tuple[str, ...] = ("quota", vendor_id)
    share = (*path, view.cluster.name) if view.cluster is not None else path
    return team.doc.place(share if share in team.doc.values else path)


def pool_lines(vendor: Vendor) -> tuple[Place, ...]:
    """Where each of the vendor's pools in this view is written: where its capacity is set."""
    return tuple(vendor.doc.place(("pools", p.index)) for p in vendor.pools)
