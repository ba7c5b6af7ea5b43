"""Stand-ins for the objects teams declare as their own (`external`: Secrets, ConfigMaps,
PersistentVolumeClaims, ServiceAccounts), so that the simulation runs the workloads that use
them: a declared object is what the team says the real cluster has, and preflight checks that it
does (PRE007). The stand-ins are empty: what a Secret holds or a volume stores is not
simulated, and the run says so (SIM011).
"""

from __future__ import annotations

from generator.controlplane.api import Obj
from generator.findings import Finding, Severity
from generator.vocab.api import CORE
from generator.vocab.kube import SIM_LABEL
from generator.vocab.labels import MANAGED_BY, MANAGED_BY_LABEL
from generator.workloads.external import ExternalUse, external_uses
from generator.workloads.model import Workloads

# Labelled as the simulation's own objects, which reset removes (a PersistentVolume is
# cluster-scoped: reset deletes those the generator manages).
LABELS = {MANAGED_BY_LABEL: MANAGED_BY, SIM_LABEL: "true"}
# A PersistentVolume the stand-in claim is bound to up front (spec.volumeName and the volume's
# claimRef): no provisioner runs here. The size is nominal; nothing is written to it.
PV_SIZE = "1Gi"


def _meta(name: str, namespace: str | None = None) -> Obj:
    meta: Obj = {"name": name, "labels": dict(LABELS)}
    if namespace:
        meta["namespace"] = namespace
    return meta


def stand_ins(use: ExternalUse) -> list[Obj]:
    """The objects that stand in for one declared external object."""
    meta = _meta(use.name, use.namespace)
    if use.kind == "Secret":
        return [{"apiVersion": CORE, "kind": "Secret", "metadata": meta, "type": "Opaque"}]
    if use.kind == "ConfigMap":
        return [{"apiVersion": CORE, "kind": "ConfigMap", "metadata": meta}]
    if use.kind == "ServiceAccount":
        return [{"apiVersion": CORE, "kind": "ServiceAccount", "metadata": meta}]
    volume = f"sim-{use.namespace}-{use.name}"[:253]
    return [
        {
            "apiVersion": CORE,
            "kind": "PersistentVolume",
            "metadata": _meta(volume),
            "spec": {
                "capacity": {"storage": PV_SIZE},
                "accessModes": ["ReadWriteMany", "ReadOnlyMany", "ReadWriteOnce"],
                "storageClassName": "",
                "claimRef": {"namespace": use.namespace, "name": use.name},
                "hostPath": {"path": f"/var/lib/accel-gitops-sim/{volume}"},
            },
        },
        {
            "apiVersion": CORE,
            "kind": "PersistentVolumeClaim",
            "metadata": meta,
            "spec": {
                "accessModes": ["ReadOnlyMany"],
                "storageClassName": "",
                "volumeName": volume,
                "resources": {"requests": {"storage": PV_SIZE}},
            },
        },
    ]


def _by_team(workloads: Workloads) -> tuple[list[ExternalUse], dict[str, list[ExternalUse]]]:
    """Every declared use, and each object once per team that declares it."""
    uses = external_uses(workloads)
    seen: set[tuple[str, str, str]] = set()
    by_team: dict[str, list[ExternalUse]] = {}
    for use in uses:
        key = (use.kind, use.namespace, use.name)
        if key in seen:
            continue
        seen.add(key)
        by_team.setdefault(use.team.name, []).append(use)
    return uses, by_team


def stand_in_objects(workloads: Workloads) -> list[Obj]:
    """What the simulation creates before the team units, in order: the namespaces of the
    declared objects, then the stand-ins, team by team."""
    uses, by_team = _by_team(workloads)
    out: list[Obj] = [
        {"apiVersion": CORE, "kind": "Namespace", "metadata": {"name": ns}}
        for ns in sorted({u.namespace for u in uses})
    ]
    for _, team_uses in sorted(by_team.items()):
        for use in team_uses:
            out += stand_ins(use)
    return out


def said(workloads: Workloads) -> list[Finding]:
    """A SIM011 warning per team that has stand-ins, naming them."""
    _, by_team = _by_team(workloads)
    out = []
    for team, team_uses in sorted(by_team.items()):
        shown = ", ".join(sorted(f"{u.kind} {u.namespace}/{u.name}" for u in team_uses))
        first = team_uses[0]
        out.append(
            Finding(
                "SIM011",
                f"team {team!r} declares objects of its own (external) that its workloads use: "
                f"the simulation created empty stand-ins for them ({shown}); what they hold was "
                "not simulated, and whether the real cluster has them is preflight's check",
                first.team.doc.locate(("external",)),
                hint="run preflight against the cluster (docs/workloads.md#external-objects)",
                severity=Severity.WARNING,
            )
        )
    return out
