"""`validate --dry-run=server`: every object of every unit, server-side applied with dry-run.

On the local control plane the pinned CRDs are installed for real (and must become Established)
and the namespaces the units create are created for real, because a dry-run of a Namespace does
not make it exist for the objects after it; everything else is applied with ``dryRun=All`` in
Argo CD's order. Against a user's cluster (``--kubeconfig``) nothing at all is changed: CRDs must
already be installed (a kind the cluster does not serve is a finding) and objects in a namespace
that does not exist there yet cannot be checked (one warning per namespace says so).

What only the API server sees: CEL and enum rules of CRDs, admission (Pod Security warnings at the
namespace's enforce level, quota and limit objects), defaulting, immutable fields against what
is already in a user's cluster, and namespaces that will not exist.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from generator.cluster.plane import reset
from generator.cluster.units import BuiltUnit, build, version_location
from generator.controlplane import target
from generator.controlplane.api import ApiClient, ApiError, UnknownKind
from generator.controlplane.crds import needed_crds
from generator.controlplane.launcher import ControlPlane
from generator.controlplane.target import Target
from generator.errors import FindingsError
from generator.findings import CodeInfo, Finding, Location, Severity, sorted_findings
from generator.policy.manifest import describe, origin
from generator.policy.placement import pod_templates
from generator.render.stage import Checked, load_and_check
from generator.toolchain import registry
from generator.toolchain.errors import ToolError
from generator.values.model import Values
from generator.vocab.api import ADMISSION, CORE
from generator.vocab.kube import SYSTEM_NAMESPACES
from generator.vocab.labels import POD_SECURITY_POLICY_LABEL
from generator.vocab.names import SECURITY_PROFILES_POLICY
from generator.vocab.objects import Obj

WORKERS = 8

HINTS = {
    "DRY001": "fix the value that sets this field (the server's message names the field)",
    "DRY002": "install the CRD (the add-on that owns the kind) on the cluster, or fix apiVersion",
    "DRY003": "create the namespace in values (a team's namespaces), or move the object",
    "DRY004": "sync the unit that creates the namespace first, then dry-run again",
    "DRY005": "make the pod template meet the namespace's Pod Security level (where a security "
    "profile lifts it to privileged: baseline, and the profile's capabilities)",
    "KVER001": "set kubernetesVersion to a minor the project has a control plane for",
}


@dataclass
class DryRunResult:
    findings: list[Finding]
    units: int = 0
    objects: int = 0
    skipped: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    """Per cluster view, the version of the API server it was dry-run on (/version)."""


def control_plane_minor() -> str:
    """The Kubernetes minor of the default control plane (gotools/controlplane), e.g. '1.36'."""
    pinned = registry.TOOLS["kube-apiserver"].pinned
    major, minor = pinned.removeprefix("v").split(".")[:2]
    return f"{major}.{minor}"


def _minor(version: str) -> str:
    parts = version.removeprefix("v").split(".")
    return ".".join(parts[:2])


def _minor_key(minor: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else -1 for p in minor.split("."))


def supported_minors() -> list[str]:
    """The minors the project has a control plane for, oldest first."""
    return sorted(registry.PLANES, key=_minor_key)


def by_minor(loaded: Values, envs: list[str]) -> dict[str, list[str]]:
    """The cluster views `envs` grouped by their cluster's Kubernetes minor, oldest minor first,
    each group in the order given: each group runs on a control plane of its minor."""
    groups: dict[str, list[str]] = {}
    for name in envs:
        groups.setdefault(_minor(loaded.envs[name].fleet.kubernetes_version), []).append(name)
    return {m: groups[m] for m in sorted(groups, key=_minor_key)}


def version_findings(
    loaded: Values, target: Target | None, what: str, layers: list[str] | None = None
) -> list[Finding]:
    """KVER001: a dry-run or simulation against another Kubernetes minor proves nothing. Each
    cluster of `layers` (default: all) is checked against its own kubernetesVersion: locally,
    a minor the project has no control plane for; on a user's cluster, a minor other than the
    cluster's. A finding points where that version is set (the cluster's, else fleet.yaml's)."""
    chosen = [loaded.envs[k] for k in (layers if layers is not None else sorted(loaded.envs))]
    out: list[Finding] = []
    seen: set[tuple[str, Location]] = set()
    for view in chosen:
        want = _minor(view.fleet.kubernetes_version)
        loc, path = version_location(loaded, view)
        if (want, loc) in seen:
            continue
        seen.add((want, loc))
        out += _version_findings(want, loc, path, target, what)
    return out


def _version_findings(
    want: str, loc: Location, path: str, target: Target | None, what: str
) -> list[Finding]:
    if target is None or target.local:
        if want not in registry.PLANES:
            have = supported_minors()
            return [
                Finding(
                    "KVER001",
                    f"{what} needs a control plane of the cluster's Kubernetes {want}, but the "
                    f"project has control planes for {', '.join(have)} only; a {what} on another "
                    "minor is no proof",
                    loc,
                    path,
                    f"set kubernetesVersion to one of {', '.join(have)} (docs/simulation.md)",
                )
            ]
        return []
    if target.minor and target.minor != want:
        return [
            Finding(
                "KVER001",
                f"the cluster runs Kubernetes {target.version}, the fleet says {want}",
                loc,
                path,
                "set kubernetesVersion to the cluster's minor",
                Severity.WARNING,
            )
        ]
    return []


def load(values_dir: Path, env: str | None) -> tuple[Checked, list[str]]:
    """The values checked (with each view's build), and the cluster views `env` selects."""
    checked = load_and_check(values_dir)
    checked.values.require_env(env)
    return checked, [v.key for v in checked.values.views_of(env)]


def addon_namespaces(loaded: Values, env: str) -> list[str]:
    """Namespaces the fleet expects add-ons to have made (Argo CD's own)."""
    return [loaded.envs[env].fleet.argocd_namespace]


def dry_run(
    values_dir: Path,
    env: str | None,
    *,
    kubeconfig: Path | None = None,
    context: str | None = None,
    plane: ControlPlane | None = None,
    prepare: Callable[[str], None] = lambda _minor: None,
) -> DryRunResult:
    """Dry-run the fleet on ``kubeconfig``'s cluster, or locally: each cluster on a control
    plane of its own Kubernetes minor, ``plane`` for the clusters of its minor, one started for
    this run (and stopped after it) for each other minor, ``prepare(minor)`` first (the command
    builds that minor's tools)."""
    try:
        checked, envs = load(values_dir, env)
        loaded = checked.values
    except FindingsError as exc:
        return DryRunResult(exc.findings)
    if kubeconfig is not None:
        with target.kubeconfig(kubeconfig, context) as tgt:
            found = version_findings(loaded, tgt, "server-side dry-run", envs)
            return _run(checked, envs, tgt, found)
    findings = version_findings(loaded, None, "server-side dry-run", envs)
    if findings:
        return DryRunResult(findings)
    result = DryRunResult([])
    for minor, views in by_minor(loaded, envs).items():
        if plane is not None and plane.minor == minor:
            part = _run(checked, views, target.on_plane(plane), [])
        else:
            prepare(minor)
            with target.local(minor) as tgt:
                part = _run(checked, views, tgt, [])
        result.findings += part.findings
        result.units += part.units
        result.objects += part.objects
        result.skipped += part.skipped
        result.timings.update(part.timings)
        result.versions.update(part.versions)
    result.findings = sorted_findings(result.findings)
    return result


def _run(checked: Checked, envs: list[str], tgt: Target, findings: list[Finding]) -> DryRunResult:
    loaded = checked.values
    result = DryRunResult(list(findings))
    for i, name in enumerate(envs):
        if i and tgt.local and tgt.plane is not None:
            reset(tgt.plane)  # no namespace of one environment may help the next
        t1 = time.perf_counter()
        built, build_findings = build(loaded, name, builds=checked.builds)
        result.findings += build_findings
        if tgt.local:
            tgt.client.apply_crds(needed_crds([o for b in built for o in b.docs]))
        _dry_run_env(loaded, name, built, tgt, result)
        result.timings[name] = round(time.perf_counter() - t1, 3)
        result.versions[name] = tgt.version
    result.findings = sorted_findings(result.findings)
    return result


def _dry_run_env(
    loaded: Values, env: str, built: list[BuiltUnit], target: Target, result: DryRunResult
) -> None:
    api = target.client
    created = {
        str(o["metadata"]["name"]): o
        for b in built
        for o in b.docs
        if o.get("kind") == "Namespace" and o.get("apiVersion") == CORE
    }
    existing: set[str]
    policies = [(b, o) for b in built for o in b.docs if _admission_policy(o)]
    if target.local:
        for name in addon_namespaces(loaded, env):
            api.apply({"apiVersion": CORE, "kind": "Namespace", "metadata": {"name": name}})
        # Real: a dry-run Namespace would not exist for the objects in it.
        for ns_obj in created.values():
            api.apply(ns_obj)
        # Real too: a dry-run admission policy would not judge the pods dry-run after it, and
        # on the cluster its unit syncs before any team's (UNIT_WAVES).
        refused = []
        for unit, policy in policies:
            try:
                api.apply(policy)
            except ApiError as exc:
                refused.append(_finding(unit, policy, exc))
        result.findings += refused
        if not refused:
            await_policy(api, list(created.values()), [o for _, o in policies])
        existing = set(created) | SYSTEM_NAMESPACES | set(addon_namespaces(loaded, env))
    else:
        existing = {n["metadata"]["name"] for n in api.list(CORE, "Namespace")}
    skipped: dict[str, list[BuiltUnit]] = {}
    for unit in built:
        result.units += 1
        todo: list[Obj] = []
        for obj in unit.docs:
            ns = str(obj.get("metadata", {}).get("namespace") or "")
            if (obj.get("kind") == "Namespace" or _admission_policy(obj)) and target.local:
                result.objects += 1
                continue  # created for real above
            if not target.local and ns and ns not in existing and ns in created:
                result.skipped += 1
                skipped.setdefault(ns, []).append(unit)
                continue
            todo.append(obj)
        result.objects += len(todo)
        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            outcomes = list(pool.map(lambda o: _apply(api, o), todo))
        for obj, (error, refusals) in zip(todo, outcomes, strict=True):
            if error is not None:
                result.findings.append(_finding(unit, obj, error))
            result.findings += _refusal_findings(unit, obj, refusals)
    for ns, units in sorted(skipped.items()):
        names = sorted({u.unit.path for u in units})
        result.findings.append(
            Finding(
                "DRY004",
                f"namespace {ns!r} does not exist on the cluster yet: {len(units)} object(s) of "
                f"{', '.join(names)} could not be dry-run (the server refuses objects in a "
                "namespace that does not exist, and this run changes nothing)",
                origin(units[0].unit, created[ns]),
                hint=HINTS["DRY004"],
                severity=Severity.WARNING,
            )
        )


def _admission_policy(obj: Obj) -> bool:
    return obj.get("apiVersion") == ADMISSION and str(obj.get("kind", "")).startswith(
        "ValidatingAdmissionPolicy"
    )


# How the API server names the policy in its refusal (k8s.io/apiserver v0.36.3
# pkg/admission/plugin/policy/validating/dispatcher.go: "ValidatingAdmissionPolicy '%s' with
# binding '%s' denied request").
POLICY_DENIAL = f"ValidatingAdmissionPolicy '{SECURITY_PROFILES_POLICY}'"
# A pod the security profiles' policy refuses wherever it is bound (hostIPC: baseline's
# check_hostNamespaces.go), and that Pod Security at privileged admits.
PROBE_SPEC: Obj = {"hostIPC": True, "containers": [{"name": "probe", "image": "probe"}]}


def await_policy(
    api: ApiClient, namespaces: list[Obj], policies: list[Obj], timeout: float = 30.0
) -> None:
    """Wait until the API server enforces the security profiles' policy just created: it loads
    policies and bindings from its informers, after the create returned. The proof is a pod
    dry-run in a namespace the binding selects being refused by it."""
    if not any(p.get("kind") == "ValidatingAdmissionPolicyBinding" for p in policies):
        return
    bound = [
        n["metadata"]["name"]
        for n in namespaces
        if (n["metadata"].get("labels") or {}).get(POD_SECURITY_POLICY_LABEL)
    ]
    if not bound:
        return
    probe = {
        "apiVersion": CORE,
        "kind": "Pod",
        "metadata": {"name": "policy-probe", "namespace": bound[0]},
        "spec": PROBE_SPEC,
    }
    deadline = time.monotonic() + timeout
    while True:
        try:
            api.create(probe, dry_run=True)
        except ApiError as exc:
            if POLICY_DENIAL in exc.message:
                return
        if time.monotonic() > deadline:
            raise ToolError(
                f"the API server did not enforce {SECURITY_PROFILES_POLICY} within {timeout:g} s"
            )
        time.sleep(0.2)


def _policy_refusal(message: str) -> bool:
    """Whether the API server's words are Pod Security's refusal, or that of the policy that
    keeps it in namespaces a security profile lifts to privileged (builders/security.py)."""
    return "violates PodSecurity" in message or POLICY_DENIAL in message


@dataclass(frozen=True)
class PodRefusal:
    """Pod Security refuses the pods of one of an object's pod templates."""

    where: str  # the template's JSON path in the object
    message: str  # the API server's words


def _apply(api: ApiClient, obj: Obj) -> tuple[Exception | None, list[PodRefusal]]:
    """Dry-run one object; then each of its pod templates as a Pod, so that Pod Security
    admission judges it at the namespace's enforce level: for a workload object it only warns at
    the warn level (k8s.io/pod-security-admission v0.36.3 admission/admission.go,
    ValidatePodController evaluates with enforce=false), but it refuses the pods."""
    try:
        api.apply_warned(obj, dry_run=True)
    except (ApiError, UnknownKind) as exc:
        return exc, []
    ns = obj.get("metadata", {}).get("namespace")
    refusals = []
    for tpl in pod_templates(obj) if ns else ():
        pod = {
            "apiVersion": CORE,
            "kind": "Pod",
            "metadata": {
                "name": f"{obj['metadata']['name']}-dry-run",
                "namespace": ns,
                "labels": dict(tpl.labels),
            },
            "spec": tpl.spec,
        }
        try:
            api.create(pod, dry_run=True)
        except ApiError as exc:
            # Only Pod Security's verdict: other pod admission (a ServiceAccount that exists
            # only as a dry-run) is not what a dry-run can judge.
            if _policy_refusal(exc.message):
                refusals.append(PodRefusal(tpl.where, exc.message))
    return None, refusals


def _finding(unit: BuiltUnit, obj: Obj, error: Exception) -> Finding:
    loc = origin(unit.unit, obj)
    what = describe(unit.unit, obj)
    if isinstance(error, UnknownKind):
        return Finding(
            "DRY002",
            f"{what}: the API server does not serve {error.kind} in {error.api_version}",
            loc,
            hint=HINTS["DRY002"],
        )
    assert isinstance(error, ApiError)
    details = error.body.get("details") or {}
    if error.status == 404 and details.get("kind") == "namespaces":
        return Finding(
            "DRY003",
            f"{what}: namespace {details.get('name')!r} does not exist: no unit of this "
            "environment creates it",
            loc,
            "$.metadata.namespace",
            HINTS["DRY003"],
        )
    fields = [str(c.get("field")) for c in error.causes if c.get("field")]
    path = "$." + fields[0] if fields else ""
    return Finding(
        "DRY001",
        f"{what}: the API server refuses it ({error.status} {error.reason}): {error.message}",
        loc,
        path,
        HINTS["DRY001"],
    )


def _refusal_findings(unit: BuiltUnit, obj: Obj, refusals: Iterable[PodRefusal]) -> list[Finding]:
    return [
        Finding(
            "DRY005",
            f"{describe(unit.unit, obj)}: Pod Security will refuse its pods: {r.message}",
            origin(unit.unit, obj),
            r.where,
            HINTS["DRY005"],
        )
        for r in refusals
    ]


__all__ = [
    "HINTS",
    "DryRunResult",
    "by_minor",
    "control_plane_minor",
    "dry_run",
    "supported_minors",
    "version_findings",
]


# What `validate --dry-run=server` (and simulate, for KVER001) can report.
CODES = (
    CodeInfo("DRY001", "dry-run", "error", "the API server refuses a field of a rendered object"),
    CodeInfo("DRY002", "dry-run", "error", "the cluster does not serve an object's kind (no CRD)"),
    CodeInfo(
        "DRY003", "dry-run", "error", "an object's namespace exists nowhere: no unit creates it"
    ),
    CodeInfo(
        "DRY004",
        "dry-run",
        "warning",
        "an object's namespace does not exist yet, so the object could not be dry-run",
    ),
    CodeInfo(
        "DRY005",
        "dry-run",
        "error",
        "Pod Security, or the policy that keeps it for security profiles, would refuse a "
        "workload's pods",
    ),
    CodeInfo(
        "KVER001",
        "dry-run, simulate",
        "error or warning",
        "no control plane of the cluster's Kubernetes minor (or the user's cluster runs another)",
    ),
)
