"""Team security profiles (docs/security.md, "Security profiles"): what a grant renders (the
Namespace's labels, the container's capabilities, the admission policy that keeps baseline) and
what is refused (SEC007, SEC008, SEC009, SEC002), each on a values tree made for it. The policy
itself is judged by the real kube-apiserver in tests/cluster/test_cluster.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from generator.builders.fleet import Build
from generator.findings import Location
from generator.policy.registry import MANIFEST_RULES
from generator.render.layout import render_tree
from generator.values import loader as values
from generator.values.model import FleetView
from generator.vocab.objects import identity
from generator.vocab.units import Unit
from tests.fixtures import (
    FLEET,
    PROD_FLEET,
    context,
    lines,
    pod_security,
    render_with_seed,
    tree,
)

PROFILES = """\
securityProfiles:
  rdma:
    description: RDMA memory registration pins pages (ibv_reg_mr)
    capabilities: [IPC_LOCK]
  files:
    capabilities: [CHOWN]
  ports:
    capabilities: [NET_BIND_SERVICE]
"""
NVIDIA = "pools:\n  - {name: a100, model: A100, devicesPerNode: 8, nodes: [g1]}\n"
JOB = """\
quota: {nvidia: 4}
jobs:
  train:
    vendor: nvidia
    devices: 4
    images: {nvidia: r/train:1}
"""
GRANTED = "securityProfiles: [rdma]\n" + JOB + "    capabilities: [IPC_LOCK]\n"


def view_of(tmp_path: Path, team: str, fleet: str = PROD_FLEET + PROFILES) -> FleetView:
    files = {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": team}
    return values.load(tree(tmp_path, files, fleet=fleet, defaults=False)).envs["prod"]


def objects(view: FleetView, unit: str) -> list[dict[str, Any]]:
    return [o for c in Build(view).components if c.unit == unit for o in c.objects]


def by_kind(view: FleetView, unit: str, kind: str) -> list[dict[str, Any]]:
    return [o for o in objects(view, unit) if o["kind"] == kind]


def container_context(view: FleetView) -> dict[str, Any]:
    (job,) = [o for o in objects(view, "team-ml") if o["kind"] == "Job"]
    context: dict[str, Any] = job["spec"]["template"]["spec"]["containers"][0]["securityContext"]
    return context


# ---- what a grant renders -------------------------------------------------------------------


def test_a_capability_beyond_baseline_puts_the_namespace_under_the_fleets_policy(
    tmp_path: Path,
) -> None:
    view = view_of(tmp_path, GRANTED)
    (namespace,) = by_kind(view, "team-ml", "Namespace")
    assert namespace["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "accel-gitops",
        "pod-security.kubernetes.io/enforce": "privileged",
        "pod-security.kubernetes.io/audit": "restricted",
        "pod-security.kubernetes.io/warn": "restricted",
        "accel-gitops.io/team": "ml",
        "accel-gitops.io/pod-security": "baseline",
        "capability.accel-gitops.io/IPC_LOCK": "granted",
    }
    assert container_context(view) == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"add": ["IPC_LOCK"]},
    }
    policy, binding = objects(view, "security-profiles")
    assert (policy["kind"], policy["metadata"]["name"]) == (
        "ValidatingAdmissionPolicy",
        "accel-gitops-security-profiles",
    )
    assert binding["spec"] == {
        "policyName": "accel-gitops-security-profiles",
        "validationActions": ["Deny"],
        "matchResources": {
            "namespaceSelector": {"matchLabels": {"accel-gitops.io/pod-security": "baseline"}}
        },
    }
    rules = policy["spec"]["matchConstraints"]["resourceRules"]
    assert rules == [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["pods", "pods/ephemeralcontainers"],
        }
    ]
    assert policy["spec"]["failurePolicy"] == "Fail"
    # One validation per baseline check of k8s.io/pod-security-admission v0.36.3.
    assert [v["message"].rsplit(" ", 1)[-1] for v in policy["spec"]["validations"]] == [
        "check_hostNamespaces.go)",
        "check_privileged.go)",
        "check_capabilities_baseline.go)",
        "check_hostPathVolumes.go)",
        "check_hostPorts.go)",
        "check_appArmorProfile.go)",
        "check_seLinuxOptions.go)",
        "check_procMount_baseline.go)",
        "check_seccompProfile_baseline.go)",
        "check_sysctls.go)",
        "check_windowsHostProcess.go)",
        "check_hostProbesAndhostLifecycle.go)",
    ]


def test_a_capability_within_baseline_or_restricted_keeps_pod_security_as_it_is(
    tmp_path: Path,
) -> None:
    """CHOWN is in baseline's list, NET_BIND_SERVICE in restricted's: Pod Security admits them
    at the team's own level, and no policy is rendered."""
    files = "securityProfiles: [files]\n" + JOB + "    capabilities: [CHOWN]\n"
    view = view_of(tmp_path / "a", files)
    (namespace,) = by_kind(view, "team-ml", "Namespace")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
    assert "accel-gitops.io/pod-security" not in namespace["metadata"]["labels"]
    assert objects(view, "security-profiles") == []
    ports = "podSecurity: restricted\nsecurityProfiles: [ports]\n" + JOB
    view = view_of(tmp_path / "b", ports + "    capabilities: [NET_BIND_SERVICE]\n")
    assert container_context(view) == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]},
    }
    team = objects(view, "team-ml")
    assert [(r["kind"], r["allowed"]) for r in pod_security(team)] == [("Job", True)]
    assert [r["level"] for r in pod_security(team)] == ["restricted"]


def test_a_team_without_profiles_renders_as_without_any_profile_defined(tmp_path: Path) -> None:
    """Profiles fleet.yaml defines change nothing for a team that names none: the same files,
    byte for byte, as a fleet without the key (fleet.yaml's own text aside)."""
    plain = tree(tmp_path / "plain", {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": JOB})
    with_profiles = tree(
        tmp_path / "profiles",
        {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": JOB},
        fleet=FLEET + PROFILES,
    )
    assert render_tree(values.load(with_profiles)).tree == render_tree(values.load(plain)).tree


def test_a_grant_renders_byte_identical_across_hash_seeds(tmp_path: Path) -> None:
    """Sets of capabilities become sorted lists: the same files whatever the hash seed."""
    fleet = FLEET + PROFILES
    team = "securityProfiles: [rdma, files]\n" + JOB + "    capabilities: [IPC_LOCK, CHOWN]\n"
    values_dir = tree(tmp_path, {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": team}, fleet=fleet)
    first = render_with_seed(values_dir, tmp_path / "a", "0")
    assert render_with_seed(values_dir, tmp_path / "b", "4242") == first
    job = first["base/workloads/ml/job-ml-train.yaml"]
    assert (
        "          capabilities:\n            add:\n            - CHOWN\n            - IPC_LOCK\n"
        in job
    )


# ---- what is refused, at its values line ------------------------------------------------------

ML = """\
securityProfiles: [rdma, rmda]
quota: {nvidia: 4}
jobs:
  train:
    vendor: nvidia
    images: {nvidia: x:1}
    capabilities: [IPC_LOCK, SYS_NICE, CHOWN]
"""
WEB = """\
podSecurity: restricted
securityProfiles: [ports, files, rdma]
quota: {nvidia: 0}
"""


def test_capabilities_and_profiles_the_fleet_does_not_grant_are_findings_at_their_lines(
    tmp_path: Path,
) -> None:
    """SEC008 for a name fleet.yaml does not define; SEC007 for each capability outside the
    team's profiles (pointing at the profile that has it, or at fleet.yaml when none does);
    SEC009 for a restricted team's profile beyond restricted (NET_BIND_SERVICE is not)."""
    values_dir = tree(
        tmp_path, {"teams/ml.yaml": ML, "teams/web.yaml": WEB}, fleet=FLEET + PROFILES
    )
    fix_web = (
        "set podSecurity: baseline in the team's file (for a capability beyond baseline's, the "
        "fleet's admission policy keeps baseline's other checks in its namespaces), or drop the "
        "profile"
    )
    assert lines(values_dir) == [
        "values/teams/ml.yaml:1:26: SEC008 security profile 'rmda' is not defined in fleet.yaml "
        "(at $.securityProfiles[1]); did you mean 'rdma'? the platform team defines it under "
        "securityProfiles in fleet.yaml (defined: files, ports, rdma)",
        "values/teams/ml.yaml:7:30: SEC007 capability 'SYS_NICE' is not granted to team 'ml' by "
        "its security profiles (IPC_LOCK) (at $.jobs.train.capabilities[1]); no profile in "
        "fleet.yaml grants SYS_NICE (profiles: files: CHOWN; ports: NET_BIND_SERVICE; rdma: "
        "IPC_LOCK): the platform team defines one under securityProfiles, or remove the "
        "capability",
        "values/teams/ml.yaml:7:40: SEC007 capability 'CHOWN' is not granted to team 'ml' by its "
        "security profiles (IPC_LOCK) (at $.jobs.train.capabilities[2]); add files to the team's "
        "securityProfiles (a change the platform team reviews), or remove the capability",
        "values/teams/web.yaml:2:27: SEC009 security profile 'files' grants CHOWN, which Pod "
        "Security restricted refuses (it admits adding NET_BIND_SERVICE only), and the team's "
        f"podSecurity is restricted (at $.securityProfiles[1]); {fix_web}",
        "values/teams/web.yaml:2:34: SEC009 security profile 'rdma' grants IPC_LOCK, which Pod "
        "Security restricted refuses (it admits adding NET_BIND_SERVICE only), and the team's "
        f"podSecurity is restricted (at $.securityProfiles[2]); {fix_web}",
    ]


def test_a_profile_kept_by_the_policy_needs_a_kubernetes_that_serves_it(tmp_path: Path) -> None:
    """ValidatingAdmissionPolicy is admissionregistration.k8s.io/v1 from 1.30: on 1.29 the grant
    of IPC_LOCK (not CHOWN, which needs no policy) is refused where the team names it."""
    fleet = PROD_FLEET.replace('"1.33"', '"1.29"') + PROFILES
    team = "securityProfiles: [files, rdma]\n" + JOB + "    capabilities: [IPC_LOCK]\n"
    files = {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": team}
    assert lines(tree(tmp_path / "old", files, fleet=fleet, defaults=False)) == [
        "values/teams/ml.yaml:1:27: SEC009 security profile 'rdma' grants IPC_LOCK, beyond Pod "
        "Security baseline: the fleet keeps baseline for it with a ValidatingAdmissionPolicy, "
        "which Kubernetes serves from 1.30, and kubernetesVersion is 1.29 (at "
        "$.securityProfiles[1]); raise kubernetesVersion to 1.30 or later, or drop the profile",
    ]
    fleet = PROD_FLEET.replace('"1.33"', '"1.30"') + PROFILES
    assert lines(tree(tmp_path / "new", files, fleet=fleet, defaults=False)) == []


def test_a_capability_without_any_profile_is_a_finding(tmp_path: Path) -> None:
    values_dir = tree(tmp_path, {"teams/ml.yaml": JOB + "    capabilities: [IPC_LOCK]\n"})
    assert lines(values_dir) == [
        "values/teams/ml.yaml:7:20: SEC007 capability 'IPC_LOCK' is not granted to team 'ml' by "
        "its security profiles (none granted) (at $.jobs.train.capabilities[0]); no profile in "
        "fleet.yaml grants IPC_LOCK (profiles: none): the platform team defines one under "
        "securityProfiles, or remove the capability",
    ]


def test_a_profile_grants_capabilities_as_kubernetes_spells_them_never_the_nodes(
    tmp_path: Path,
) -> None:
    fleet = (
        FLEET + "securityProfiles:\n  debug:\n    capabilities: [IPC_LOCK, SYS_PTRACE, cap_chown]\n"
    )
    assert lines(tree(tmp_path, fleet=fleet)) == [
        "values/fleet.yaml:7:30: VAL001 'SYS_PTRACE' is not allowed here (at "
        "$.securityProfiles.debug.capabilities[1]); a capability that stays inside the "
        "container: never ALL, NET_ADMIN, SYS_ADMIN, SYS_PTRACE, which reach the node (SEC003)",
        "values/fleet.yaml:7:42: VAL001 'cap_chown' does not match '^[A-Z][A-Z0-9_]*$' (at "
        "$.securityProfiles.debug.capabilities[2]); a Linux capability as Kubernetes spells it: "
        "capitals without CAP_, e.g. IPC_LOCK",
    ]


# ---- the rendered objects, in validate ----------------------------------------------------------

ORIGIN = Location("values/teams/ml.yaml", 1, 1)


def found(view: FleetView, code: str, *objs: dict[str, Any]) -> list[tuple[str, str]]:
    unit = Unit(
        "prod", "team-ml", "overlays/prod/team-ml", objs, {identity(o): ORIGIN for o in objs}
    )
    return [(f.message, f.path) for f in MANIFEST_RULES[code].fn(context(view), unit, list(objs))]


def namespace(labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml", "labels": labels}}


def test_sec002_admits_privileged_only_where_the_values_grant_it_and_the_policy_binds(
    tmp_path: Path,
) -> None:
    privileged = {"pod-security.kubernetes.io/enforce": "privileged"}
    bound = {**privileged, "accel-gitops.io/pod-security": "baseline"}
    granted = view_of(tmp_path / "a", GRANTED)
    assert found(granted, "SEC002", namespace(bound)) == []
    refused = (
        "Namespace ml (overlays/prod/team-ml): pod-security.kubernetes.io/enforce is "
        "'privileged'; team namespaces enforce baseline or restricted",
        "$.metadata.labels['pod-security.kubernetes.io/enforce']",
    )
    assert found(granted, "SEC002", namespace(privileged)) == [refused]
    plain = view_of(tmp_path / "b", JOB)
    assert found(plain, "SEC002", namespace(bound)) == [refused]


def test_sec007_on_the_built_objects_allows_what_the_team_is_granted(tmp_path: Path) -> None:
    view = view_of(tmp_path, GRANTED)
    job = next(o for o in objects(view, "team-ml") if o["kind"] == "Job")
    assert found(view, "SEC007", job) == []
    ctr = job["spec"]["template"]["spec"]["containers"][0]
    ctr["securityContext"]["capabilities"]["add"] = ["IPC_LOCK", "SYS_NICE", "SYS_PTRACE"]
    assert found(view, "SEC007", job) == [
        (
            "Job ml/train (overlays/prod/team-ml): container 'train' adds SYS_NICE, which team "
            "'ml''s security profiles do not grant",
            "$.spec.template.spec.containers[0].securityContext.capabilities.add",
        )
    ]
