"""The objects a team's workloads use from its namespaces that the fleet does not render: the
Secrets, ConfigMaps, PersistentVolumeClaims and ServiceAccounts its values declare
(`external`). preflight checks them on the live cluster (PRE007); simulate creates stand-ins
for them and says so (SIM011)."""

from __future__ import annotations

from dataclasses import dataclass

from generator.values.model import Team
from generator.values.yamlio import YamlPath
from generator.workloads import podspec
from generator.workloads.model import Workloads


@dataclass(frozen=True)
class ExternalUse:
    """A declared external object a workload uses: in which namespace, where in values."""

    kind: str  # PersistentVolumeClaim, Secret, ConfigMap, ServiceAccount
    namespace: str
    name: str
    team: Team
    path: YamlPath


def external_uses(workloads: Workloads) -> list[ExternalUse]:
    out = []
    for team in workloads.view.teams:
        declared = team.doc.get("external") or {}
        loaded = workloads.of(team)
        for path, ns in [(j.path, j.namespace) for j in loaded.jobs] + [
            (s.path, s.namespace) for s in loaded.services
        ]:
            raw = team.doc.get(*path) or {}
            for ref in podspec.references(raw):
                if ref.name in (declared.get(ref.kind) or []):
                    kind = podspec.EXTERNAL_KINDS[ref.kind]
                    out.append(ExternalUse(kind, ns, ref.name, team, (*path, *ref.path)))
    return out
