"""The escape hatch's limit (PATCH001): a workload's own `patch` may change anything but what the
generator owns, because the capacity, placement and queue checks, `plan` and the report read the
generator's objects, not what a patch makes of them.

Judged on the objects as kustomize builds them (the patch applied by kustomize, as Argo CD will)
against the same objects as the generator renders them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from generator.builders.workloads import patch_targets
from generator.findings import Finding
from generator.policy.checks import ManifestRule
from generator.policy.context import Context
from generator.policy.placement import pod_templates
from generator.values.yamlio import json_path
from generator.vocab.labels import QUEUE_LABEL, VOLCANO_QUEUE_ANNOTATION
from generator.vocab.objects import Obj, identity
from generator.vocab.units import Unit

# What a pod template's spec holds that the generator decides: the device request and every
# container's resources, where the pool's nodes are (selector, affinity, tolerations, runtime
# class), and which scheduler takes the pods.
OWNED_POD = ("nodeSelector", "affinity", "tolerations", "runtimeClassName", "schedulerName")
# What the object's spec holds that quota, capacity and `plan` count, and its queue.
OWNED_SPEC = ("replicas", "parallelism", "completions", "minAvailable", "queue")


def owned(obj: Obj) -> dict[str, Any]:
    """The fields of `obj` the generator owns, by JSON path."""
    spec = obj.get("spec") or {}
    out: dict[str, Any] = {f"$.spec.{k}": spec.get(k) for k in OWNED_SPEC}
    labels = (obj.get("metadata") or {}).get("labels") or {}
    out[f"$.metadata.labels[{QUEUE_LABEL!r}]"] = labels.get(QUEUE_LABEL)
    for i, task in enumerate(spec.get("tasks") or []):
        out[f"$.spec.tasks[{i}].replicas"] = task.get("replicas")
    out["$.spec.leaderWorkerTemplate.size"] = (spec.get("leaderWorkerTemplate") or {}).get("size")
    for i, rjob in enumerate(spec.get("replicatedJobs") or []):
        child = ((rjob or {}).get("template") or {}).get("spec") or {}
        out[f"$.spec.replicatedJobs[{i}].replicas"] = rjob.get("replicas")
        for key in ("parallelism", "completions"):
            out[f"$.spec.replicatedJobs[{i}].template.spec.{key}"] = child.get(key)
    for tpl in pod_templates(obj):
        for key in OWNED_POD:
            out[f"{tpl.where}.{key}"] = tpl.spec.get(key)
        meta = tpl.where.removesuffix(".spec") + ".metadata"
        notes = (_at_template(obj, tpl.where) or {}).get("annotations") or {}
        out[f"{meta}.annotations[{VOLCANO_QUEUE_ANNOTATION!r}]"] = notes.get(
            VOLCANO_QUEUE_ANNOTATION
        )
        for field in ("initContainers", "containers"):
            for c in tpl.spec.get(field) or []:
                out[f"{tpl.where}.{field}[{c.get('name')!r}].resources"] = c.get("resources")
    return out


def _at_template(obj: Obj, where: str) -> dict[str, Any] | None:
    """The metadata of the pod template whose spec is at `where` (pod_templates' paths)."""
    spec = obj.get("spec") or {}
    if where.startswith("$.spec.tasks["):
        i = int(where.removeprefix("$.spec.tasks[").split("]")[0])
        template = (spec.get("tasks") or [])[i].get("template") or {}
    elif where.startswith("$.spec.leaderWorkerTemplate."):
        key = where.removeprefix("$.spec.leaderWorkerTemplate.").split(".")[0]
        template = (spec.get("leaderWorkerTemplate") or {}).get(key) or {}
    elif where.startswith("$.spec.replicatedJobs["):
        i = int(where.removeprefix("$.spec.replicatedJobs[").split("]")[0])
        child = ((spec.get("replicatedJobs") or [])[i].get("template") or {}).get("spec") or {}
        template = child.get("template") or {}
    else:
        template = spec.get("template") or {}
    meta: dict[str, Any] | None = template.get("metadata")
    return meta


def owned_fields(ctx: Context, unit: Unit, objs: list[Obj]) -> Iterable[Finding]:
    team = ctx.team_of_unit(unit)
    if team is None:
        return
    built = {identity(o): o for o in objs}
    for path, target in patch_targets(ctx.build.workloads, team, list(unit.objects)):
        if team.doc.get(*path, "patch", default=None) is None:
            continue
        after = built.get(identity(target))
        if after is None:
            continue  # a patch that deletes its object fails the build or the object's rules
        mine, theirs = owned(target), owned(after)
        changed = sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))
        if not changed:
            continue
        at = (*path, "patch")
        yield Finding(
            "PATCH001",
            f"the patch changes what the generator owns in {target['kind']} "
            f"{target['metadata'].get('namespace')}/{target['metadata']['name']}: "
            + ", ".join(changed[:3])
            + (f" and {len(changed) - 3} more" if len(changed) > 3 else ""),
            team.doc.locate(at),
            json_path(at),
            "set it with the workload's own values (devices, resources, model, nodeSelector, "
            "tolerations, affinity, replicas), which the checks and plan count; the patch is for "
            "what values do not cover",
        )


RULES: tuple[ManifestRule, ...] = (
    ManifestRule(
        "PATCH001",
        "a workload's patch changes what the generator owns (resources, devices, placement, "
        "replicas, queue)",
        owned_fields,
    ),
)
