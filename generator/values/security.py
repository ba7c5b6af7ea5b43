"""Team security profiles: named sets of Linux capabilities fleet.yaml defines (`securityProfiles`)
and a team is granted by naming them (its `securityProfiles`), and the Pod Security a grant
implies (docs/security.md, "Security profiles").

Pod Security admission has one level per namespace: a capability outside baseline's list needs
the namespace at `privileged`, which would lift every other baseline check too. So such a
namespace is labelled for the fleet's ValidatingAdmissionPolicy (builders/security.py), which
keeps baseline's other checks and allows only the capabilities the team was granted.
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.values.model import FleetView, Team

# The capabilities Pod Security baseline lets a container add (k8s.io/pod-security-admission
# v0.36.3 policy/check_capabilities_baseline.go, capabilities_allowed_1_0).
BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
# What restricted lets a container add, after it drops ALL (policy/check_capabilities_restricted.go
# v0.36.3, capabilityNetBindService).
RESTRICTED_CAPABILITIES = frozenset({"NET_BIND_SERVICE"})

# Capabilities that reach past the container to its node: no team workload adds them, whatever
# its profiles (SEC003; fleet.yaml's schema refuses them in a profile).
HOST_CAPABILITIES = frozenset({"ALL", "SYS_ADMIN", "NET_ADMIN", "SYS_PTRACE"})


def profiles(view: FleetView) -> dict[str, tuple[str, ...]]:
    """fleet.yaml's profiles: name -> the capabilities it grants (sorted)."""
    raw = view.fleet.doc.get("securityProfiles", default={}) or {}
    return {
        name: tuple(sorted(set(spec.get("capabilities") or [])))
        for name, spec in sorted(raw.items())
    }


def implied_level(capabilities: frozenset[str]) -> str:
    """The strictest Pod Security level whose own checks admit adding `capabilities`."""
    if capabilities <= RESTRICTED_CAPABILITIES:
        return "restricted"
    if capabilities <= BASELINE_CAPABILITIES:
        return "baseline"
    return "privileged"


# The level the fleet's admission policy keeps where Pod Security is lifted to privileged: its
# rules are baseline's (builders/security.py), so a restricted team cannot be lifted (SEC009).
KEPT_BY_POLICY = "baseline"


@dataclass(frozen=True)
class Grant:
    """What a team's profiles grant it, and the Pod Security its namespaces enforce for that."""

    capabilities: frozenset[str]
    # The namespace's pod-security.kubernetes.io/enforce level.
    enforce: str
    # The level the fleet's admission policy keeps in Pod Security's place ("": none needed).
    kept_by_policy: str = ""


def grant(view: FleetView, team: Team) -> Grant:
    """The team's grant. Profiles fleet.yaml does not define grant nothing (SEC008 says so); a
    restricted team granted more than restricted admits stays restricted (SEC009 says so)."""
    defined = profiles(view)
    caps = frozenset(c for p in team.security_profiles for c in defined.get(p, ()))
    if implied_level(caps) != "privileged" or team.pod_security == "restricted":
        return Grant(caps, team.pod_security)
    return Grant(caps, "privileged", kept_by_policy=KEPT_BY_POLICY)
