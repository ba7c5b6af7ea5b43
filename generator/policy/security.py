"""Security profiles (values/security.py): what a team's workloads add is what its profiles grant.

SEC007 is checked twice, like the placement codes: on the values at render time (the
`capabilities` line of the workload), and on the built objects in validate (a capability a patch
adds, or a hand edit). SEC003 keeps the capabilities that reach the node away in any case.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from generator.findings import Finding, did_you_mean
from generator.policy.checks import PER_TEAM, Check, ManifestRule
from generator.policy.context import Context
from generator.policy.manifest import describe, origin
from generator.policy.placement import pod_templates
from generator.values.model import FleetView, Team
from generator.values.security import (
    HOST_CAPABILITIES,
    RESTRICTED_CAPABILITIES,
    grant,
    implied_level,
    profiles,
)
from generator.values.yamlio import YamlPath, json_path
from generator.vocab.objects import Obj
from generator.vocab.units import Unit

CONTAINER_FIELDS = ("initContainers", "containers", "ephemeralContainers")


def _defined(view: FleetView) -> str:
    shown = [f"{name}: {', '.join(caps)}" for name, caps in profiles(view).items()]
    return "; ".join(shown) if shown else "none"


def _hint(view: FleetView, cap: str) -> str:
    granting = [name for name, caps in profiles(view).items() if cap in caps]
    if granting:
        return (
            f"add {' or '.join(granting)} to the team's securityProfiles (a change the platform "
            "team reviews), or remove the capability"
        )
    return (
        f"no profile in fleet.yaml grants {cap} (profiles: {_defined(view)}): the platform team "
        "defines one under securityProfiles, or remove the capability"
    )


def _workloads(ctx: Context, team: Team) -> Iterable[tuple[YamlPath, dict[str, Any]]]:
    loaded = ctx.build.workloads.of(team)
    for path in [j.path for j in loaded.jobs] + [s.path for s in loaded.services]:
        yield path, team.doc.get(*path, default={}) or {}


def ungranted_values(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    for team in view.teams:
        granted = grant(view, team).capabilities
        for path, raw in _workloads(ctx, team):
            for i, cap in enumerate(raw.get("capabilities") or []):
                if cap in granted:
                    continue
                at = (*path, "capabilities", i)
                yield Finding(
                    "SEC007",
                    f"capability {cap!r} is not granted to team {team.name!r} by its security "
                    f"profiles ({', '.join(sorted(granted)) or 'none granted'})",
                    team.doc.locate(at),
                    json_path(at),
                    _hint(view, cap),
                )


def ungranted_manifest(ctx: Context, unit: Unit, objs: list[Obj]) -> Iterable[Finding]:
    team = ctx.team_of_unit(unit)
    if team is None:
        return
    granted = grant(ctx.view, team).capabilities
    for obj in objs:
        for tpl in pod_templates(obj):
            for field in CONTAINER_FIELDS:
                for i, c in enumerate(tpl.spec.get(field) or []):
                    sc = c.get("securityContext") or {}
                    added = (sc.get("capabilities") or {}).get("add") or []
                    extra = sorted(set(added) - granted - HOST_CAPABILITIES)
                    if extra:
                        yield Finding(
                            "SEC007",
                            f"{describe(unit, obj)}: container {c.get('name')!r} adds "
                            f"{', '.join(extra)}, which team {team.name!r}'s security profiles "
                            "do not grant",
                            origin(unit, obj),
                            f"{tpl.where}.{field}[{i}].securityContext.capabilities.add",
                            _hint(ctx.view, extra[0]),
                        )


def undefined_profiles(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    defined = sorted(profiles(view))
    for team in view.teams:
        for i, name in enumerate(team.security_profiles):
            if name in defined:
                continue
            at: YamlPath = ("securityProfiles", i)
            yield Finding(
                "SEC008",
                f"security profile {name!r} is not defined in fleet.yaml",
                team.doc.locate(at),
                json_path(at),
                did_you_mean(
                    name,
                    defined,
                    "the platform team defines it under securityProfiles in fleet.yaml"
                    + (f" (defined: {', '.join(defined)})" if defined else ""),
                ),
            )


# ValidatingAdmissionPolicy is served as admissionregistration.k8s.io/v1 from Kubernetes 1.30
# (k8s.io/api v0.36.3 admissionregistration/v1/types.go, prerelease-lifecycle-gen:introduced).
POLICY_MINOR = (1, 30)


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def unhonoured_profiles(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    yield from _restricted(view)
    if _minor(view.fleet.kubernetes_version) >= POLICY_MINOR:
        return
    defined = profiles(view)
    for team in view.teams:
        if not grant(view, team).kept_by_policy:
            continue
        for i, name in enumerate(team.security_profiles):
            caps = frozenset(defined.get(name, ()))
            if implied_level(caps) != "privileged":
                continue
            at: YamlPath = ("securityProfiles", i)
            yield Finding(
                "SEC009",
                f"security profile {name!r} grants {', '.join(sorted(caps))}, beyond Pod "
                "Security baseline: the fleet keeps baseline for it with a "
                "ValidatingAdmissionPolicy, which Kubernetes serves from 1.30, and "
                f"kubernetesVersion is {view.fleet.kubernetes_version}",
                team.doc.locate(at),
                json_path(at),
                "raise kubernetesVersion to 1.30 or later, or drop the profile",
            )


def _restricted(view: FleetView) -> Iterable[Finding]:
    defined = profiles(view)
    for team in view.teams:
        if team.pod_security != "restricted":
            continue
        for i, name in enumerate(team.security_profiles):
            caps = frozenset(defined.get(name, ()))
            beyond = sorted(caps - RESTRICTED_CAPABILITIES)
            if implied_level(caps) == "restricted":
                continue
            at: YamlPath = ("securityProfiles", i)
            yield Finding(
                "SEC009",
                f"security profile {name!r} grants {', '.join(beyond)}, which Pod Security "
                "restricted refuses (it admits adding NET_BIND_SERVICE only), and the team's "
                "podSecurity is restricted",
                team.doc.locate(at),
                json_path(at),
                "set podSecurity: baseline in the team's file (for a capability beyond "
                "baseline's, the fleet's admission policy keeps baseline's other checks in its "
                "namespaces), or drop the profile",
            )


CHECKS: tuple[Check, ...] = (
    Check(
        "SEC007",
        "a workload adds a capability its team's security profiles do not grant",
        ungranted_values,
        scope=PER_TEAM,
    ),
    Check(
        "SEC008",
        "a team names a security profile fleet.yaml does not define",
        undefined_profiles,
        scope=PER_TEAM,
    ),
    Check(
        "SEC009",
        "a team is granted a security profile its Pod Security level (restricted) or its "
        "Kubernetes version (before 1.30) cannot honour",
        unhonoured_profiles,
        scope=PER_TEAM,
    ),
)

RULES: tuple[ManifestRule, ...] = (
    ManifestRule(
        "SEC007",
        "a workload adds a capability its team's security profiles do not grant",
        ungranted_manifest,
    ),
)
