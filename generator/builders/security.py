"""The security-profiles unit: the ValidatingAdmissionPolicy that keeps Pod Security baseline in
team namespaces a security profile lifts to privileged, and its binding (docs/security.md).

Pod Security admission enforces one level per namespace, and a capability outside baseline's
list (IPC_LOCK for RDMA) is admitted at `privileged` only, which lifts every other check with it.
Such a namespace is labelled `accel-gitops.io/pod-security: baseline` and
`capability.accel-gitops.io/<CAP>: granted` per granted capability (builders/teams.py); this
policy, bound to those namespaces, refuses what Pod Security baseline refuses, except the
granted capabilities. Each validation is one baseline check of k8s.io/pod-security-admission
v0.36.3 (policy/check_<name>.go, at its newest version), named in its message.

ValidatingAdmissionPolicy is admissionregistration.k8s.io/v1 since Kubernetes 1.30 (k8s.io/api
v0.36.3 admissionregistration/v1/types.go: prerelease-lifecycle-gen:introduced=1.30). Its CEL
has optional fields (`?.`, `orValue`) since 1.28 (k8s.io/apiserver v0.36.3
pkg/cel/environment/base.go, cel.OptionalTypes). The unit is rendered only where a team needs it.
"""

from __future__ import annotations

from generator.builders.common import metadata
from generator.values.model import FleetView
from generator.values.security import BASELINE_CAPABILITIES, KEPT_BY_POLICY, grant
from generator.vocab.api import ADMISSION, CORE
from generator.vocab.labels import CAPABILITY_LABEL_PREFIX, POD_SECURITY_POLICY_LABEL
from generator.vocab.names import SECURITY_PROFILES_POLICY
from generator.vocab.objects import Obj
from generator.vocab.units import SECURITY_UNIT, Component

# Safe sysctls (policy/check_sysctls.go v0.36.3, sysctlsAllowedV1Dot32).
SAFE_SYSCTLS = (
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
)
# SELinux types (policy/check_seLinuxOptions.go v0.36.3, selinuxAllowedTypes1_31).
SELINUX_TYPES = ("", "container_t", "container_init_t", "container_kvm_t", "container_engine_t")


def _cel_list(items: tuple[str, ...] | list[str]) -> str:
    return "[" + ", ".join(f"'{i}'" for i in items) + "]"


# Ephemeral containers are another type in CEL (EphemeralContainer): their security contexts are
# joined to the others' as SecurityContext values. They may have neither ports nor probes (API
# validation refuses them), so those checks read the other two lists.
VARIABLES = (
    ("containers", "object.spec.containers + object.spec.?initContainers.orValue([])"),
    (
        "contexts",
        "variables.containers.filter(c, has(c.securityContext)).map(c, c.securityContext) + "
        "object.spec.?ephemeralContainers.orValue([])"
        ".filter(c, has(c.securityContext)).map(c, c.securityContext)",
    ),
    ("labels", "namespaceObject.metadata.?labels.orValue({})"),
)

_PROBES = [
    f"c.?{probe}.?{handler}.?host.orValue('') == ''"
    for probe in ("livenessProbe", "readinessProbe", "startupProbe")
    for handler in ("httpGet", "tcpSocket")
] + [
    f"c.?lifecycle.?{hook}.?{handler}.?host.orValue('') == ''"
    for hook in ("postStart", "preStop")
    for handler in ("httpGet", "tcpSocket")
]

# (check file, expression, message): one per baseline check of Pod Security.
VALIDATIONS: tuple[tuple[str, str, str], ...] = (
    (
        "check_hostNamespaces.go",
        "!object.spec.?hostNetwork.orValue(false) && !object.spec.?hostPID.orValue(false) && "
        "!object.spec.?hostIPC.orValue(false)",
        "host namespaces (hostNetwork, hostPID, hostIPC)",
    ),
    (
        "check_privileged.go",
        "variables.contexts.all(s, !s.?privileged.orValue(false))",
        "privileged containers",
    ),
    (
        "check_capabilities_baseline.go",
        "variables.contexts.all(s, s.?capabilities.?add.orValue([]).all(c, c in "
        + _cel_list(sorted(BASELINE_CAPABILITIES))
        + f" || ('{CAPABILITY_LABEL_PREFIX}' + c) in variables.labels))",
        "capabilities beyond baseline's and the namespace's security profiles' "
        f"({CAPABILITY_LABEL_PREFIX}<capability> labels)",
    ),
    (
        "check_hostPathVolumes.go",
        "object.spec.?volumes.orValue([]).all(v, !has(v.hostPath))",
        "hostPath volumes",
    ),
    (
        "check_hostPorts.go",
        "variables.containers.all(c, c.?ports.orValue([]).all(p, p.?hostPort.orValue(0) == 0))",
        "host ports",
    ),
    (
        "check_appArmorProfile.go",
        "object.spec.?securityContext.?appArmorProfile.?type.orValue('RuntimeDefault') in "
        "['RuntimeDefault', 'Localhost'] && variables.contexts.all(s, "
        "s.?appArmorProfile.?type.orValue('RuntimeDefault') in ['RuntimeDefault', 'Localhost'])"
        " && object.metadata.?annotations.orValue({}).all(k, "
        "!k.startsWith('container.apparmor.security.beta.kubernetes.io/') || "
        "object.metadata.annotations[k] in ['', 'runtime/default'] || "
        "object.metadata.annotations[k].startsWith('localhost/'))",
        "AppArmor profiles other than RuntimeDefault and Localhost",
    ),
    (
        "check_seLinuxOptions.go",
        "((object.spec.?securityContext.?seLinuxOptions.hasValue() ? "
        "[object.spec.securityContext.seLinuxOptions] : []) + variables.contexts.filter(s, "
        "has(s.seLinuxOptions)).map(s, s.seLinuxOptions)).all(o, "
        f"o.?type.orValue('') in {_cel_list(SELINUX_TYPES)} && o.?user.orValue('') == '' && "
        "o.?role.orValue('') == '')",
        "SELinux types other than "
        + ", ".join(t for t in SELINUX_TYPES if t)
        + ", or an SELinux user or role",
    ),
    (
        "check_procMount_baseline.go",
        "!object.spec.?hostUsers.orValue(true) || variables.contexts.all(s, "
        "s.?procMount.orValue('Default') == 'Default')",
        "a procMount other than Default outside a user namespace",
    ),
    (
        "check_seccompProfile_baseline.go",
        "object.spec.?securityContext.?seccompProfile.?type.orValue('RuntimeDefault') in "
        "['RuntimeDefault', 'Localhost'] && variables.contexts.all(s, "
        "s.?seccompProfile.?type.orValue('RuntimeDefault') in ['RuntimeDefault', 'Localhost'])",
        "seccomp profiles other than RuntimeDefault and Localhost",
    ),
    (
        "check_sysctls.go",
        "object.spec.?securityContext.?sysctls.orValue([]).all(s, s.name in "
        + _cel_list(SAFE_SYSCTLS)
        + ")",
        "sysctls outside the safe set",
    ),
    (
        "check_windowsHostProcess.go",
        "!object.spec.?securityContext.?windowsOptions.?hostProcess.orValue(false) && "
        "variables.contexts.all(s, !s.?windowsOptions.?hostProcess.orValue(false))",
        "Windows HostProcess containers",
    ),
    (
        "check_hostProbesAndhostLifecycle.go",
        "variables.containers.all(c, " + " && ".join(_PROBES) + ")",
        "a host in probes or lifecycle handlers",
    ),
)


def policy(sources: list[str]) -> Obj:
    return {
        "apiVersion": ADMISSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": metadata(SECURITY_PROFILES_POLICY, sources=sources),
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": [CORE],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["pods", "pods/ephemeralcontainers"],
                    }
                ]
            },
            "variables": [{"name": n, "expression": e} for n, e in VARIABLES],
            "validations": [
                {
                    "expression": expression,
                    "message": f"Pod Security baseline, kept by the fleet in a namespace granted "
                    f"a security profile, forbids {what} (pod-security-admission {check})",
                }
                for check, expression, what in VALIDATIONS
            ],
        },
    }


def binding(sources: list[str]) -> Obj:
    return {
        "apiVersion": ADMISSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": metadata(SECURITY_PROFILES_POLICY, sources=sources),
        "spec": {
            "policyName": SECURITY_PROFILES_POLICY,
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {"matchLabels": {POD_SECURITY_POLICY_LABEL: KEPT_BY_POLICY}}
            },
        },
    }


def build(view: FleetView) -> list[Component]:
    if not any(grant(view, t).kept_by_policy for t in view.teams):
        return []
    origin = view.fleet.doc.anchor(("securityProfiles",))
    sources = list(view.fleet.doc.sources)
    return [
        Component(
            SECURITY_UNIT, "security/profiles", [policy(sources), binding(sources)], origin=origin
        )
    ]
