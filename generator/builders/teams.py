"""Team units: namespaces at Pod Security baseline or stricter (or privileged under the fleet's
policy that keeps baseline, for a security profile's capabilities), and a quota per vendor
resource.

Every vendor resource of the environment gets a quota line (`requests.<resource>`), 0 where the
team has none, so a team cannot use a vendor it was not given: a missing line means "unlimited".
"""

from __future__ import annotations

from generator.builders.common import metadata, namespace
from generator.builders.scheduling import accounted_devices
from generator.values.model import FleetView, Team
from generator.values.security import BASELINE_CAPABILITIES, grant
from generator.vocab.api import CORE
from generator.vocab.labels import (
    CAPABILITY_GRANTED,
    CAPABILITY_LABEL_PREFIX,
    OWNERS_ANNOTATION,
    POD_SECURITY_POLICY_LABEL,
    SYNC_OPTIONS,
    SYNC_WAVE,
    TEAM_LABEL,
)
from generator.vocab.objects import Obj
from generator.vocab.units import Component

# A team's Namespace holds what Git does not (PVCs, Secrets, running pods): disabling or renaming
# the team must not delete it. Prune=false: a sync never prunes it (argo-cd docs/user-guide/
# sync-options.md v3.5.7); Delete=false: deleting the team's Application (its resources
# finalizer) leaves it (controller/appcontroller.go v3.5.7, shouldBeDeleted). docs/argocd.md.
NAMESPACE_SYNC_OPTIONS = "Prune=false,Delete=false"


def unit_name(team: str) -> str:
    return f"team-{team}"


def build(view: FleetView) -> list[Component]:
    return [
        Component(
            unit_name(t.name),
            f"teams/{t.name}",
            _objects(view, t),
            origin=t.doc.anchor(("quota",), ("namespaces",)),
        )
        for t in view.teams
    ]


def quota_hard(view: FleetView, team: Team) -> dict[str, str]:
    # One accounting per backend: with a queue backend the queue limits the team and this quota
    # is sized to the queue's ceiling (builders/scheduling.py accounted_devices).
    devices: dict[str, int] = {}
    for vendor in view.vendors:
        # Only `requests.<resource>` is counted for an extended resource: a `limits.` line is
        # accepted by validation but never used (kubernetes pkg/quota/v1/evaluator/core/pods.go
        # v1.36.3, isExtendedResourceNameForQuota and podComputeUsageHelper). Pods must set
        # requests equal to limits for extended resources anyway, so one line caps both. A DRA
        # vendor's line counts the devices its pods' claims ask of its DeviceClass
        # (Vendor.quota_key).
        devices.setdefault(vendor.quota_key, 0)
        devices[vendor.quota_key] += accounted_devices(view, team, vendor)
    return {key: str(count) for key, count in sorted(devices.items())}


def _objects(view: FleetView, team: Team) -> list[Obj]:
    sources = team.doc.sources
    labels = {TEAM_LABEL: team.name}
    notes = {OWNERS_ANNOTATION: ", ".join(team.owners)} if team.owners else {}
    objs: list[Obj] = []
    hard = quota_hard(view, team)
    granted = grant(view, team)
    ns_labels = dict(labels)
    if granted.kept_by_policy:
        # Pod Security enforces privileged so that the granted capabilities are admitted; the
        # fleet's admission policy keeps baseline's other checks here (builders/security.py).
        # Audit and warn stay restricted, as in every team namespace.
        ns_labels[POD_SECURITY_POLICY_LABEL] = granted.kept_by_policy
        for cap in sorted(granted.capabilities - BASELINE_CAPABILITIES):
            ns_labels[CAPABILITY_LABEL_PREFIX + cap] = CAPABILITY_GRANTED
    for ns in team.namespaces:
        objs.append(
            namespace(
                ns,
                sources=sources,
                pod_security=granted.enforce,
                labels=ns_labels,
                annotations={SYNC_WAVE: "-2", SYNC_OPTIONS: NAMESPACE_SYNC_OPTIONS, **notes},
                reports="restricted",
            )
        )
        if hard:
            objs.append(
                {
                    "apiVersion": CORE,
                    "kind": "ResourceQuota",
                    "metadata": metadata(
                        "accelerators",
                        namespace=ns,
                        sources=sources,
                        labels=labels,
                        annotations={SYNC_WAVE: "-1"},
                    ),
                    "spec": {"hard": hard},
                }
            )
    return objs
