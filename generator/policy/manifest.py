"""Policy rules on the rendered objects, exactly as kustomize builds them for Argo CD.

Each rule has a code and a one-line summary, takes the environment's resolved values and one
unit's built objects, and yields findings located at the values that produced the object. The
pod placement rules (generator/policy/placement.py) run here on every kind with a pod template,
after overlays and patches; at render time the same logic checks the workloads the builders
make.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

from generator.builders.teams import NAMESPACE_SYNC_OPTIONS
from generator.findings import Finding, Location
from generator.policy.checks import ManifestRule, RuleFn
from generator.policy.context import Context
from generator.policy.placement import SUMMARIES, pod_templates
from generator.values.model import FleetView
from generator.values.schema import control_characters
from generator.values.security import HOST_CAPABILITIES, grant
from generator.vocab.labels import (
    COMPONENT_LABEL,
    OWNERS_ANNOTATION,
    PHASE_ANNOTATION,
    POD_SECURITY_POLICY_LABEL,
    PSA_ENFORCE,
    SOURCE_ANNOTATION,
    SYNC_OPTIONS,
    SYNC_WAVE,
    VENDOR_LABEL,
    VOLCANO_QUEUE_ANNOTATION,
)
from generator.vocab.objects import Obj, identity
from generator.vocab.units import PACKING_UNIT, Unit


def origin(unit: Unit, obj: Obj) -> Location:
    return unit.origins.get(identity(obj), Location(unit.path))


def describe(unit: Unit, obj: Obj) -> str:
    meta = obj.get("metadata", {})
    ns = meta.get("namespace")
    name = f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))
    return f"{obj.get('kind')} {name} ({unit.path})"


HINTS = {
    "POD001": "set limits to a whole number of devices and requests equal to it",
    "POD002": "split it into one workload per vendor",
    "POD003": "select the vendor's pools by its accelerator label (and an existing model)",
    "POD004": "add a toleration for the pool's taint",
    "POD005": "select one vendor's pools by its accelerator label",
}


def _placement_rule(code: str) -> RuleFn:
    def rule(ctx: Context, unit: Unit, objs: list[Obj]) -> Iterable[Finding]:
        for obj, tpl, problems in ctx.unit_problems(objs):
            for problem in problems:
                if problem.code == code:
                    yield Finding(
                        code,
                        f"{describe(unit, obj)}: {problem.message}",
                        origin(unit, obj),
                        f"{tpl.where}.{problem.where}",
                        HINTS[code],
                    )

    return rule


# One rule per placement problem code, over the same worked-out problems (_unit_problems).
PLACEMENT_RULES = tuple(
    ManifestRule(_code, _summary, _placement_rule(_code)) for _code, _summary in SUMMARIES.items()
)


# ---- names and labels ---------------------------------------------------------------------

# Matched whole (fullmatch): with `match` and `$`, a name ending in a newline would pass.
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_LABEL_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
# Kinds whose names must be DNS labels: the API server refuses longer or dotted names (a Job's
# name also becomes a label value on its pods).
_LABEL_KINDS = {"Namespace": _LABEL, "Service": _DNS1035, "Job": _LABEL, "CronJob": _LABEL}


def _control(text: str) -> str:
    bad = control_characters(text)
    return f" (it contains the control character {bad[0]})" if bad else ""


def _name_problem(kind: str, name: str) -> str:
    pattern = _LABEL_KINDS.get(kind)
    if pattern is not None:
        if len(name) > 63 or not pattern.fullmatch(name):
            what = "DNS-1035 label" if pattern is _DNS1035 else "DNS-1123 label"
            return (
                f"name {name!r} is not a valid {what} (lower-case, '-', at most 63){_control(name)}"
            )
    elif len(name) > 253 or not _SUBDOMAIN.fullmatch(name):
        return f"name {name!r} is not a valid DNS-1123 subdomain{_control(name)}"
    return ""


def _label_problem(key: str, value: object) -> str:
    if isinstance(value, str):  # the same few labels on every object: checked once each
        return _label_problem_str(key, value)
    return _label_problem_any(key, value)


@functools.lru_cache(maxsize=4096)
def _label_problem_str(key: str, value: str) -> str:
    return _label_problem_any(key, value)


def _label_problem_any(key: str, value: object) -> str:
    prefix, _, name = key.rpartition("/")
    if (
        (prefix and (len(prefix) > 253 or not _SUBDOMAIN.fullmatch(prefix)))
        or len(name) > 63
        or (not _LABEL_NAME.fullmatch(name))
    ):
        return f"label key {key!r} is not valid{_control(key)}"
    if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        shown = _control(value) if isinstance(value, str) else ""
        return f"label {key}={value!r}: not a valid label value (at most 63 characters){shown}"
    return ""


def names_and_labels(ctx: Context, unit: Unit, objs: list[Obj]) -> Iterable[Finding]:
    for obj in objs:
        meta = obj.get("metadata") or {}
        problem = _name_problem(str(obj.get("kind")), str(meta.get("name", "")))
        if problem:
            yield Finding(
                "NAME006",
                f"{describe(unit, obj)}: {problem}",
                origin(unit, obj),
                "$.metadata.name",
                "shorten or rename it in values",
            )
        labelled = [("$.metadata.labels", meta.get("labels") or {})]
        labelled += [
            (f"{t.where.removesuffix('.spec')}.metadata.labels", t.labels)
            for t in pod_templates(obj)
        ]
        for where, labels in labelled:
            for key, value in sorted(labels.items()):
                problem = _label_problem(key, value)
                if problem:
                    yield Finding(
                        "NAME006",
                        f"{describe(unit, obj)}: {problem}",
                        origin(unit, obj),
                        f"{where}[{key!r}]",
                        "shorten or rename it in values",
                    )


# ---- security posture (docs/security.md) ----------------------------------------------------
# Checked on what kustomize builds, in every unit of every environment: a hand edit of the
# committed tree, or a generator change, cannot weaken them unnoticed.

DIGEST = re.compile(r".+@sha256:[0-9a-f]{64}")
# What the generator itself writes on objects of a team's unit; teams set no annotations.
TEAM_ANNOTATIONS = frozenset(
    {
        SOURCE_ANNOTATION,
        OWNERS_ANNOTATION,
        PHASE_ANNOTATION,  # a migrating service's phase, for people (builders/workloads)
        SYNC_WAVE,
        VOLCANO_QUEUE_ANNOTATION,  # pods of the team's Volcano queue
    }
)
# The one sync option the generator sets on a team's objects: its Namespaces outlive the team's
# Application (builders/teams.py), with exactly this value.
TEAM_NAMESPACE_SYNC_OPTIONS = (
    "Namespace",
    SYNC_OPTIONS,
    NAMESPACE_SYNC_OPTIONS,
)


def _allowed_note(obj: Obj, key: str, value: object) -> bool:
    return key in TEAM_ANNOTATIONS or (obj.get("kind"), key, value) == TEAM_NAMESPACE_SYNC_OPTIONS


def pod_annotation_allowed(view: FleetView, key: str) -> bool:
    """Whether the fleet lets teams set annotation `key` on their pods (teamPodAnnotations)."""
    for allowed in view.fleet.doc.get("teamPodAnnotations", default=[]) or []:
        if key == allowed or (allowed.endswith("/*") and key.startswith(allowed[:-1])):
            return True
    return False


# Cluster-scoped kinds a team's unit may hold: its namespaces and its batch queue.
TEAM_CLUSTER_KINDS = frozenset({"Namespace", "ClusterQueue", "Queue"})
RISKY_VERBS = frozenset({"*", "escalate", "bind", "impersonate"})
POWERFUL_ROLES = frozenset({"cluster-admin", "admin", "edit"})


def _finding(code: str, unit: Unit, obj: Obj, problem: str, path: str, hint: str) -> Finding:
    return Finding(code, f"{describe(unit, obj)}: {problem}", origin(unit, obj), path, hint)


def plugin_namespace(ctx: Context, unit: Unit, objs: list[Obj]) -> Iterable[Finding]:
    privileged = {
        o["metadata"]["name"]
        for o in objs
        if o.get("kind") == "Namespace"
        and ((o["metadata"].get("labels") or {}).get(PSA_ENFORCE)) == "privileged"
    }
    for obj in objs:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        plugin = labels.get(COMPONENT_LABEL) == "device-plugin" or unit.name == "device-plugins"
        if obj.get("kind") != "DaemonSet" or not plugin:
            continue
        ns = obj["metadata"].get("namespace", "")
        if ns not in privileged:
            yield _finding(
                "SEC001",
                unit,
                obj,
                f"namespace {ns!r} is not a namespace of this unit labelled "
                f"{PSA_ENFORCE}=privileged: Pod Security would refuse the plugin's host paths, "
                "or grant them to every pod there",
                "$.metadata.namespace",
                "run device plugins in a namespace of their own that the device-plugins unit "
                "creates (devicePlugin.namespace)",
            )


def team_pod_security(ctx: Context, unit: Unit, objs: list[Obj]) -> Iterable[Finding]:
    if not unit.name.startswith("team-"):
        return
    team = ctx.team_of_unit(unit)
    # A namespace a security profile lifts to privileged is kept at baseline by the fleet's
    # admission policy, which selects it by its label (builders/security.py): allowed only
    # where the team's values grant that, and the label is there.
    kept = grant(ctx.view, team).kept_by_policy if team is not None else ""
    for obj in objs:
        if obj.get("kind") != "Namespace":
            continue
        labels = obj["metadata"].get("labels") or {}
        level = labels.get(PSA_ENFORCE)
        if level in ("baseline", "restricted"):
            continue
        if level == "privileged" and kept and labels.get(POD_SECURITY_POLICY_LABEL) == kept:
            continue
        yield _finding(
            "SEC002",
            unit,
            obj,
            f"{PSA_ENFORCE} is {level!r}; team namespaces enforce baseline or restricted",
            f"$.metadata.labels[{PSA_ENFORCE!r}]",
            "set podSecurity: baseline or restricted in the team's values",
        )


def _host_access(spec: dict[str, Any]) -> list[tuple[str, str]]:
    found = [(f, f"{f}: true") for f in ("hostNetwork", "hostPID", "hostIPC") if spec.get(f)]
    for i, vol in enumerate(spec.get("volumes") or []):
        if "hostPath" in vol:
            path = (vol.get("hostPath") or {}).get("path")
            found.append((f"volumes[{i}]", f"hostPath volume {path!r}"))
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for i, c in enumerate(spec.get(field) or []):
            sc = c.get("securityContext") or {}
            if sc.get("privileged"):
                found.append(
                    (f"{field}[{i}].securityContext", f"privileged container {c.get('name')!r}")
                )
            added = set((sc.get("capabilities") or {}).get("add") or [])
            if added & HOST_CAPABILITIES:
                shown = ", ".join(sorted(added))
                found.append((f"{field}[{i}].securityContext", f"capabilities added: {shown}"))
    return found


def team_host_access(ctx: Context, unit: Unit, objs: list[Obj]) -> Iterable[Finding]:
    if not unit.name.startswith("team-"):
        return
    for obj in objs:
        for tpl in pod_templates(obj):
            for where, what in _host_access(tpl.spec):
                yield _finding(
                    "SEC003",
                    unit,
                    obj,
                    f"{what}: a team workload gets no access to its node",
                    f"{tpl.where}.{where}",
                    "drop it; vendor drivers reach pods through the device plugin and the "
                    "container runtime (vendorMounts: false)",
                )


def _rbac_problems(rule: dict[str, Any]) -> list[str]:
    out = []
    for field in ("apiGroups", "resources", "verbs", "nonResourceURLs"):
        if "*" in (rule.get(field) or []) or any(
            str(v).endswith("/*") for v in rule.get(field) or []
        ):
            out.append(f"a wildcard in {field}")
    resources = {str(r).split("/")[0] for r in rule.get("resources") or []}
    if "secrets" in resources:
        out.append("access to secrets")
    risky = sorted(RISKY_VERBS & set(rule.get("verbs") or []) - {"*"})
    if risky:
        out.append("the verbs " + ", ".join(risky))
    return out


def rbac_least_privilege(ctx: Context, unit: Unit, objs: list[Obj]) -> Iterable[Finding]:
    for obj in objs:
        kind = obj.get("kind")
        if kind in ("ClusterRole", "Role"):
            if obj.get("aggregationRule"):
                yield _finding(
                    "SEC004",
                    unit,
                    obj,
                    "an aggregated role grants whatever other roles add to it",
                    "$.aggregationRule",
                    "list the rules the component needs",
                )
            for i, rule in enumerate(obj.get("rules") or []):
                for problem in _rbac_problems(rule):
                    yield _finding(
                        "SEC004",
                        unit,
                        obj,
                        f"rule {i} grants {problem}",
                        f"$.rules[{i}]",
                        "grant only the resources and verbs the component needs "
                        "(devicePlugin.rbac in the vendor's values)",
                    )
        elif kind in ("ClusterRoleBinding", "RoleBinding"):
            role = (obj.get("roleRef") or {}).get("name")
            if role in POWERFUL_ROLES:
                yield _finding(
                    "SEC004",
                    unit,
                    obj,
                    f"binds the built-in role {role!r}",
                    "$.roleRef.name",
                    "bind a role that lists what the component needs",
                )


def production(view: FleetView) -> bool:
    return view.env in (view.fleet.doc.get("productionEnvironments", default=[]) or [])


# Where a vendor's values set the image of each agent the fleet renders for it, by the agent's
# component label (builders/device_plugins.py, builders/monitoring/component.py): the tag is
# `version`, so that is the line a digest is added to.
AGENT_IMAGES: dict[str, tuple[str, ...]] = {
    "device-plugin": ("devicePlugin",),
    "exporter": ("exporter", "daemonSet"),
}
# The images fleet.yaml sets, by unit: the packing kube-scheduler's (scheduling.kubeScheduler
# image and version, builders/scheduling.py).
FLEET_IMAGES: dict[str, tuple[str, ...]] = {PACKING_UNIT: ("scheduling", "kubeScheduler")}


def _image_set_at(view: FleetView, unit: Unit, obj: Obj) -> tuple[Location, str, str]:
    """(where the values set an object's image, what set it, how to pin it there). A vendor
    agent's image is set by its `version` (or `image`) in a values file; when neither is, the
    built-in catalog set it, and the catalog is part of the program (no finding points into it):
    the user's line that asks for digests is then the `productionEnvironments` entry."""
    fleet_path = FLEET_IMAGES.get(unit.name)
    if fleet_path is not None:
        doc, key = view.fleet.doc, ".".join(fleet_path)
        for leaf in ("version", "image"):
            loc = doc.set_at((*fleet_path, leaf))
            if loc is not None:
                return loc, "", f"{key}.version: <tag>@sha256:<digest>"
        return (
            doc.locate(fleet_path, key=True),
            f" (its tag is v<kubernetesVersion> unless {key}.version says another)",
            f"{key}.version: <tag>@sha256:<digest>",
        )
    labels = (obj.get("metadata") or {}).get("labels") or {}
    path = AGENT_IMAGES.get(str(labels.get(COMPONENT_LABEL, "")))
    vendor = view.vendor(str(labels.get(VENDOR_LABEL, "")))
    if path is None or vendor is None:
        return origin(unit, obj), "", ""
    doc = vendor.doc
    key = ".".join(path)
    for leaf in ("version", "image"):
        loc = doc.set_at((*path, leaf))
        if loc is not None:
            return loc, "", f"{key}.version: <tag>@sha256:<digest>"
    envs = list(view.fleet.doc.get("productionEnvironments", default=[]) or [])
    file = doc.sources[0] if doc.sources else f"values/vendors/{vendor.id}.yaml"
    return (
        view.fleet.doc.locate(("productionEnvironments", envs.index(view.env))),
        f"; the built-in catalog sets it (vendor {vendor.id} sets neither {key}.image nor "
        f"{key}.version)",
        f"{key}.version: <tag>@sha256:<digest> in {file} (the catalog names the tag its upstream "
        "manifest ships: the digest is the one of the image your registry serves)",
    )


def image_digest(ctx: Context, unit: Unit, objs: list[Obj]) -> Iterable[Finding]:
    view = ctx.view
    if not production(view):
        return
    for obj in objs:
        where, by, pin = _image_set_at(view, unit, obj)
        for tpl in pod_templates(obj):
            for field in ("initContainers", "containers"):
                for i, c in enumerate(tpl.spec.get(field) or []):
                    image = str(c.get("image", ""))
                    if not DIGEST.fullmatch(image):
                        yield Finding(
                            "SEC005",
                            f"{describe(unit, obj)}: image {image!r} is not pinned by digest, and "
                            f"environment {view.env!r} is in productionEnvironments{by}",
                            where,
                            f"{tpl.where}.{field}[{i}].image",
                            f"pin it: {pin}"
                            if pin
                            else "pin it: <image>:<tag>@sha256:<digest> (for a vendor's agents: "
                            "devicePlugin.version or exporter.daemonSet.version "
                            "<tag>@sha256:<digest>; for a workload: its images)",
                        )


def team_annotations(ctx: Context, unit: Unit, objs: list[Obj]) -> Iterable[Finding]:
    view = ctx.view
    if not unit.name.startswith("team-"):
        return
    for obj in objs:
        notes_at = [("$.metadata", obj.get("metadata") or {})]
        for tpl in pod_templates(obj):
            where = f"{tpl.where.removesuffix('.spec')}.metadata"
            notes_at.append((where, _at(obj, where) or {}))
        for where, meta in notes_at:
            notes = meta.get("annotations") or {}
            on_pods = where != "$.metadata"
            for key in sorted(
                k
                for k in notes
                if not _allowed_note(obj, k, notes[k])
                and not (on_pods and pod_annotation_allowed(view, k))
            ):
                yield _finding(
                    "SEC006",
                    unit,
                    obj,
                    f"annotation {key!r} is not one a team's objects may carry (Argo CD sync "
                    "options, ingress snippets and the like change what the cluster does)",
                    f"{where}.annotations[{key!r}]",
                    "allowed: " + ", ".join(sorted(TEAM_ANNOTATIONS)) + f", and on Namespaces "
                    f"argocd.argoproj.io/sync-options: {NAMESPACE_SYNC_OPTIONS}; on pods, what "
                    "fleet.yaml's teamPodAnnotations lists",
                )


def _at(obj: Obj, where: str) -> Any:
    """The value at a JSON path such as $.spec.tasks[0].template.metadata (None if absent)."""
    node: Any = obj
    for name, index in _steps(where):
        if name:
            node = node.get(name) if isinstance(node, dict) else None
        else:
            node = node[int(index)] if isinstance(node, list) and int(index) < len(node) else None
    return node


@functools.lru_cache(maxsize=256)
def _steps(where: str) -> list[tuple[str, str]]:
    steps: list[tuple[str, str]] = re.findall(r"\.([A-Za-z]+)|\[(\d+)\]", where.removeprefix("$"))
    return steps


def team_boundary(ctx: Context, unit: Unit, objs: list[Obj]) -> Iterable[Finding]:
    team = ctx.team_of_unit(unit)
    if team is None:
        return
    queue = f"team-{team.name}"
    for obj in objs:
        meta = obj.get("metadata") or {}
        kind, name, ns = obj.get("kind"), meta.get("name"), meta.get("namespace")
        if ns is None:
            allowed = (kind == "Namespace" and name in team.namespaces) or (
                kind in TEAM_CLUSTER_KINDS - {"Namespace"} and name == queue
            )
            if not allowed:
                yield _finding(
                    "TEAM001",
                    unit,
                    obj,
                    f"a cluster-scoped {kind} in team {team.name!r}'s unit; a team's unit holds "
                    f"its namespaces, its queue {queue!r} and objects inside its namespaces",
                    "$.metadata",
                    "cluster-wide objects belong to the platform's units (values/fleet.yaml, "
                    "values/vendors/)",
                )
        elif ns not in team.namespaces:
            yield _finding(
                "TEAM001",
                unit,
                obj,
                f"namespace {ns!r} is not one of team {team.name!r}'s namespaces "
                f"({', '.join(team.namespaces)})",
                "$.metadata.namespace",
                "a team's objects live in its own namespaces",
            )


RULES: tuple[ManifestRule, ...] = (
    *PLACEMENT_RULES,
    ManifestRule(
        "NAME006",
        "an object's name or a label is not what the API server accepts",
        names_and_labels,
    ),
    ManifestRule(
        "SEC001",
        "a device-plugin DaemonSet runs outside a Pod Security privileged namespace",
        plugin_namespace,
    ),
    ManifestRule(
        "SEC002", "a team namespace enforces Pod Security weaker than baseline", team_pod_security
    ),
    ManifestRule(
        "SEC003",
        "a team workload is privileged or uses hostPath, hostNetwork, hostPID",
        team_host_access,
    ),
    ManifestRule(
        "SEC004",
        "RBAC grants a wildcard, secrets, escalate/bind/impersonate or an admin role",
        rbac_least_privilege,
    ),
    ManifestRule(
        "SEC005",
        "an image is not pinned by digest in an environment marked production",
        image_digest,
    ),
    ManifestRule(
        "SEC006",
        "an object of a team's unit carries an annotation outside the allow-list",
        team_annotations,
    ),
    ManifestRule(
        "TEAM001",
        "a team's unit holds an object outside its namespaces, or cluster-scoped",
        team_boundary,
    ),
)
