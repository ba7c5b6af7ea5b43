"""Checks on how devices reach pods (docs/allocation.md): shared devices, DRA claims.

Each is a `Check` (policy/checks.py) listed in CHECKS below and in policy/registry.py.
"""

from __future__ import annotations

from collections.abc import Iterable

from generator.builders.workloads import backend
from generator.findings import Finding, Severity
from generator.policy.checks import EITHER, PER_TEAM, WARNING, Check
from generator.policy.context import Context
from generator.policy.placement import affinity_keys
from generator.policy.scheduling import devices_path
from generator.values.yamlio import json_path


def one_share_per_pod(ctx: Context) -> Iterable[Finding]:
    """A pod asking for more than one unit of a vendor whose plugin gives one at most (a share
    of a time-sliced or MPS GPU, a vNPU): the plugin refuses the allocation, so the kubelet's
    admission fails the pod on its node."""
    view = ctx.view
    for team in view.teams:
        for land in ctx.landings(team):
            sharing = land.vendor.sharing
            # What one unit is called and why a pod gets one at most: its mode's words.
            words = sharing.mode.one_per_pod if sharing else None
            if sharing is None or words is None or land.devices <= 1:
                continue
            one, why = words
            path = devices_path(team.doc, land.ref.path)
            yield Finding(
                "ALC002",
                f"{land.ref.kind} {land.ref.name!r} asks for {land.devices} "
                f"{land.vendor.resource_name} per pod, but {land.vendor.id}'s device plugin "
                f"gives a pod one {one} at most ({why}): the pod would fail admission on its "
                "node",
                team.doc.locate(path),
                json_path(path),
                f"ask for 1 (a {land.vendor.id} {one} is 1/{sharing.replicas} of a device), or "
                "use a vendor whose units are bigger, or whole devices",
            )


def models_apart(ctx: Context) -> Iterable[Finding]:
    """Pods of one template that may land on pools of different models of their vendor: a job's
    workers on A100s and H100s run at the slower one's pace, a service's replicas answer at two
    speeds. A workload that names no model may land on any model of its vendor's pools
    (docs/allocation.md); one that names a model, or a model and a fallbackModel, chose."""
    view = ctx.view
    for team in view.teams:
        for land in ctx.landings(team):
            # One model whatever its case (find_pci_model): A100 and a100 are not two.
            by_name = {
                p.model.casefold(): p.model for p in sorted(land.pools, key=lambda p: p.model)
            }
            models = sorted(by_name.values())
            if land.ref.count < 2 or len(models) < 2:
                continue
            key = view.fleet.label_key(land.vendor.model_label)
            spec = land.ref.spec
            if key in (spec.get("nodeSelector") or {}) or key in affinity_keys(spec):
                continue
            yield Finding(
                "ALC005",
                f"{land.ref.kind} {land.ref.name!r}: its {land.ref.count} pods name no model and "
                f"may land on {land.vendor.id} pools of {len(models)} models "
                f"({', '.join(models)}), so one workload may run on several",
                team.doc.locate(land.ref.path),
                json_path(land.ref.path),
                f"set model (one of {', '.join(models)}) on it, or a model and a fallbackModel "
                "if either will do",
                severity=Severity.WARNING,
            )


# What a queue backend would need to count a DRA vendor's claims, and what happens without it.
# Kueue counts them only with its alpha feature gate DynamicResourceAllocation, off by default,
# and deviceClassMappings in its configuration (sigs.k8s.io/kueue v0.17.0
# pkg/features/kube_features.go, apis/config/v1beta2/configuration_types.go), neither of which
# the fleet renders: it admits the jobs uncounted, and the namespace's ResourceQuota still bounds
# their claims (a warning). Volcano's scheduler, which places the pods under that backend,
# allocates claims only when installed with its DynamicResourceAllocation feature gate
# (volcano-sh/volcano docs/user-guide/how_to_enable_dra.md at commit
# 03972517b9d801866f41afac7b6b7c8da895844b), which the fleet does not set: the pods would not be
# placed (an error).
QUEUE_DRA = {
    "kueue": (
        "Kueue counts DRA devices only with its alpha feature gate DynamicResourceAllocation "
        "(off by default) and deviceClassMappings, which the fleet does not render; the "
        "namespace's ResourceQuota still bounds the claims",
        Severity.WARNING,
    ),
    "volcano": (
        "Volcano's scheduler allocates claims only when installed with its "
        "DynamicResourceAllocation feature gate, which the fleet does not set",
        Severity.ERROR,
    ),
}


def claims_under_a_queue(ctx: Context) -> Iterable[Finding]:
    """Workloads that claim a DRA vendor's devices under a queue backend: the queue would admit
    them without counting their devices, so the team's queue would not limit them."""
    view = ctx.view
    if backend(view) not in QUEUE_DRA:
        return
    reason, severity = QUEUE_DRA[backend(view)]
    for team in view.teams:
        for land in ctx.landings(team):
            if land.vendor.dra is None:
                continue
            path = devices_path(team.doc, land.ref.path)
            yield Finding(
                "ALC004",
                f"{land.ref.kind} {land.ref.name!r} claims {land.vendor.id} devices by DRA under "
                f"scheduling.backend {backend(view)}, which does not count them: {reason}",
                team.doc.locate(path),
                json_path(path),
                "run DRA vendors' workloads without a queue backend (the ResourceQuota counts "
                "their claims), or use a vendor with a device plugin",
                severity=severity,
            )


CHECKS = (
    Check(
        "ALC002",
        "a pod asks for more than one share of a shared device, which its plugin refuses",
        one_share_per_pod,
        scope=PER_TEAM,
    ),
    Check(
        "ALC005",
        "a workload's pods name no model and may land on several models of their vendor",
        models_apart,
        WARNING,
        scope=PER_TEAM,
    ),
    Check(
        "ALC004",
        "a workload claims a DRA vendor's devices under a queue backend that does not count them",
        claims_under_a_queue,
        EITHER,
        scope=PER_TEAM,
    ),
)
