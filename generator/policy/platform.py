"""Add-ons the fleet's objects need (code DEP; docs/platform.md).

Read from the objects the builders make, not from the backend: a team object whose API group an
add-on serves, or whose pods name an add-on's scheduler, needs that add-on on the cluster. When
values neither render it (`platform.<key>.provided: fleet`) nor declare it as the site's
(`provided: site`, or the fleet setting that names it), Argo CD's dry-run of the team's
Application fails on the unknown kind, and nothing of that Application is applied: not its
Namespace, its quota, or its other workloads.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from generator.builders import platform
from generator.builders.workloads import workload_origin
from generator.findings import Finding, Location
from generator.policy.checks import NO_TEAM, PER_TEAM, Check
from generator.policy.context import Context
from generator.policy.placement import pod_templates
from generator.values import clusters
from generator.values.model import Team
from generator.values.yamlio import YamlPath, json_path
from generator.vocab import addons
from generator.vocab.labels import NAME_LABEL
from generator.vocab.objects import Obj


def needs(obj: Obj) -> Iterator[tuple[addons.Addon, str, str]]:
    """(add-on, why, JSON path in the object) for each add-on `obj` needs on the cluster."""
    api = str(obj["apiVersion"])
    addon = addons.addon_of(obj)
    if addon is not None:
        yield (
            addon,
            f"its kind {obj.get('kind')} of {api} is served by {addon.title}",
            "$.apiVersion",
        )
        for key in addon.needs:
            yield (
                addons.BY_KEY[key],
                f"{addon.title} runs its kind {obj.get('kind')} as {addons.BY_KEY[key].title}'s "
                "objects",
                "$.apiVersion",
            )
    # A route's backend of an add-on's kind (an HTTPRoute over ServiceImports: the MCS API
    # makes them, Gateway API v1.6.3 geps/gep-1748) needs that add-on where the route is.
    for i, rule in enumerate((obj.get("spec") or {}).get("rules") or []):
        for j, ref in enumerate(rule.get("backendRefs") or []):
            backend = addons.addon_for_group(str(ref.get("group", "")))
            if backend is not None and backend is not addon:
                yield (
                    backend,
                    f"its backend {ref.get('kind')} {ref.get('name')} is served by {backend.title}",
                    f"$.spec.rules[{i}].backendRefs[{j}]",
                )
    # A Volcano Job names its scheduler in its spec (volcano.sh/apis v1.14.0
    # pkg/apis/batch/v1alpha1/job.go, JobSpec.SchedulerName); other kinds in their pod templates.
    named = [("$.spec", (obj.get("spec") or {}).get("schedulerName"))]
    named += [(tpl.where, tpl.spec.get("schedulerName")) for tpl in pod_templates(obj)]
    for where, name in named:
        runs = addons.addon_for_scheduler(str(name)) if name else None
        if runs is not None:
            yield runs, f"it names the scheduler {name!r}", f"{where}.schedulerName"


def _where(team: Team, obj: Obj) -> tuple[Location, YamlPath | None]:
    """The values line that chose what needs the add-on (the line to change): a job's `kind`, a
    service's `routing` (its route is named after it); else the workload."""
    name = str(obj["metadata"]["name"])
    service = str((obj["metadata"].get("labels") or {}).get(NAME_LABEL, name))
    chosen: dict[str, YamlPath] = {
        "Job": ("jobs", name, "kind"),
        "TrainJob": ("jobs", name, "kind"),
        "HTTPRoute": ("services", name, "routing"),
        "VirtualService": ("services", name, "routing"),
        # A track's export, and the route over the imports, of a service across clusters.
        "ServiceExport": ("services", service, "crossCluster", "routing"),
    }
    kind = str(obj.get("kind"))
    rules = (obj.get("spec") or {}).get("rules") or []
    if kind == "HTTPRoute" and any(
        ref.get("kind") == "ServiceImport" for r in rules for ref in r.get("backendRefs") or []
    ):
        kind = "ServiceExport"  # the route over a service's imports: chosen by crossCluster
    path = chosen.get(kind)
    if path is not None and team.doc.get(*path) is not None:
        return team.doc.locate(path), path
    return workload_origin(team, obj), None


def missing_addons(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    # One finding per add-on a values line needs: a service across clusters needs the MCS API
    # for its track's export and for its route's imports, one line to add.
    said: set[tuple[str, Location]] = set()
    for team in view.teams:
        objs = ctx.build.team(team).objects
        for obj in objs:
            reasons: dict[str, list[str]] = {}
            for addon, why, _path in needs(obj):
                if platform.provided(view, addon) is None:
                    reasons.setdefault(addon.key, []).append(why)
            for key, whys in reasons.items():
                addon = addons.BY_KEY[key]
                location, path = _where(team, obj)
                if (key, location) in said:
                    continue
                said.add((key, location))
                meta = obj["metadata"]
                fix = (
                    f"platform.{key}.provided: fleet in values/fleet.yaml (the fleet installs "
                    f"{addon.title} from its upstream chart), or platform.{key}.provided: site "
                    f"when the cluster already runs it"
                    if addon.chart is not None
                    else f"platform.{key}.provided: site in values/fleet.yaml once the cluster "
                    f"runs {addon.title}"
                )
                if addon.implied_by is not None:
                    setting, value = addon.implied_by
                    fix += f", or {'.'.join(setting)}: {value}"
                if view.cluster is not None and view.env_file:
                    fix += (
                        f" (or clusters.{view.cluster.name}.platform.{key} in "
                        f"{view.env_file}, for this cluster alone)"
                    )
                yield Finding(
                    "DEP001",
                    f"{obj.get('kind')} {meta.get('namespace')}/{meta.get('name')} needs "
                    f"{addon.title} ({'; '.join(whys)}), which this environment neither renders "
                    f"nor declares: on a cluster without it Argo CD's dry-run fails the whole "
                    f"team-{team.name} Application, so none of its objects are applied",
                    location,
                    json_path(path) if path is not None else "",
                    f"declare it: {fix}; or write the workload without it",
                )


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.removeprefix("v").split(".")[:2]
    return int(major), int(minor)


def unsupported_minor(ctx: Context) -> Iterable[Finding]:
    """KVER003: an add-on the fleet renders for a cluster whose Kubernetes minor its pinned
    version does not support, as its upstream states (vocab/addons.py `kubernetes`)."""
    view = ctx.view
    have = _minor(view.fleet.kubernetes_version)
    for addon in platform.rendered(view):
        if not addon.kubernetes or have >= _minor(addon.kubernetes):
            continue
        assert addon.chart is not None  # rendered: it has a chart
        location, path = clusters.version_location(view)
        yield Finding(
            "KVER003",
            f"the fleet renders {addon.title} {addon.chart.version} for this cluster, which its "
            f"upstream supports on Kubernetes {addon.kubernetes} and newer; this cluster's "
            f"kubernetesVersion is {'.'.join(map(str, have))}",
            location,
            path,
            f"set kubernetesVersion to {addon.kubernetes} or newer, or platform.{addon.key}."
            f"provided: site where the cluster runs a {addon.title} that supports its minor",
        )


CHECKS: tuple[Check, ...] = (
    Check(
        "DEP001",
        "a team object needs a cluster add-on that values neither render nor declare",
        missing_addons,
        scope=PER_TEAM,
    ),
    Check(
        "KVER003",
        "an add-on the fleet renders does not support the cluster's Kubernetes minor (upstream)",
        unsupported_minor,
        scope=NO_TEAM,
    ),
)
