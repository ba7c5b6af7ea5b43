"""ADM001: run JobSet's and LeaderWorkerSet's own admission webhooks on the JobSets and
LeaderWorkerSets as kustomize builds them.

kubeconform checks them against the CRD schemas only; the add-ons' webhooks refuse more
(sigs.k8s.io/jobset v0.11.1 pkg/webhooks/jobset_webhook.go: a failure policy rule's target that
is no replicated job, a job failure reason Kubernetes does not give, a JobSet name too long for
its pods' names; sigs.k8s.io/lws v0.8.0 pkg/webhooks/leaderworkerset_webhook.go: a group size
below 1, a rollout strategy out of range). workloadcheck (gotools/workloads, built on those
packages) applies each object's CRD defaults as the API server does, then runs the webhook's
defaulting and ValidateCreate; each error becomes a finding at the values behind it: a JobSet's
at its job (its failurePolicy, successPolicy or task where the error names one), a
LeaderWorkerSet's at its service's track (its groupSize where the error is the size's).

One workloadcheck process checks every unit of a run (a file per unit).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from generator import toolchain
from generator.builders.common import Unit
from generator.builders.workloads import TRACK_LABEL
from generator.findings import CodeInfo, Finding, Location
from generator.policy.manifest import origin
from generator.validate.stages import (
    Batch,
    UnitView,
    find_object,
    json_lines_per_unit,
    tool_salt,
)
from generator.values.merge import Doc
from generator.values.model import FleetView
from generator.values.yamlio import YamlPath, json_path
from generator.workloads.model import team_workloads

CODE = "ADM001"
SUMMARY = (
    "JobSet's or LeaderWorkerSet's admission webhook would refuse a rendered JobSet or "
    "LeaderWorkerSet"
)
GROUPS = ("jobset.x-k8s.io", "leaderworkerset.x-k8s.io")
TIMEOUT = 300
TOOL = "workloadcheck"


def workload_docs(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in docs if str(d.get("apiVersion", "")).split("/")[0] in GROUPS]


def check(files: dict[str, Path], crds: Path | None) -> dict[str, dict[str, Any]]:
    """workloadcheck's verdict per unit, from one run over every unit's file:
    {unit: {"objects": n, "refused": [result with errors, ...]}}. `crds`: the folder of pinned
    CRDs whose schema defaults apply first (None: the objects as written)."""
    flags = [f"-crds={crds}"] if crds else []
    return {
        unit: {"objects": len(items), "refused": [i for i in items if i["errors"]]}
        for unit, items in json_lines_per_unit(TOOL, files, flags, TIMEOUT).items()
    }


def crd_folder() -> Path | None:
    """The pinned CRD objects, when `tools install` has laid them out."""
    folder = toolchain.crd_manifests_dir()
    return folder if folder.is_dir() else None


def findings(
    view: FleetView | None,
    unit: Unit,
    docs: list[dict[str, Any]],
    result: dict[str, Any],
    committed: Callable[[str, str], Location],
) -> list[Finding]:
    """A finding per webhook error, at the values behind it; without values (they do not
    render), at the object's committed file (`committed(kind, name)`)."""
    out = []
    for item in result.get("refused") or []:
        obj = find_object(docs, item)
        name = f"{item.get('namespace')}/{item['name']}" if item.get("namespace") else item["name"]
        owner = "JobSet" if item["kind"] == "JobSet" else "LeaderWorkerSet"
        for err in item["errors"]:
            if view is not None:
                loc, path, hint = _locate(view, unit, obj, item, err)
            else:
                loc, path = committed(item["kind"], item["name"]), ""
                hint = "fix the values so that they render, then render again"
            out.append(
                Finding(
                    CODE,
                    f"{item['kind']} {name}: {owner} {item['version']}'s admission webhook "
                    f"would refuse it: {err['message']}",
                    loc,
                    path,
                    hint,
                )
            )
    return out


HINTS = {
    "failurePolicy": "a failure policy rule names tasks of this job and the job failure reasons "
    "Kubernetes gives (BackoffLimitExceeded, DeadlineExceeded, PodFailurePolicy, "
    "MaxFailedIndexesExceeded, FailedIndexes)",
    "successPolicy": "targetReplicatedJobs names tasks of this job",
    "tasks": "a shorter job or task name: the names of a JobSet's Jobs and pods "
    "(<job>-<task>-<index>...) must fit in 63 characters",
    "groupSize": "set the track's groupSize to what LeaderWorkerSet accepts",
}
OTHER = "fix the values that render this object"


_REPLICATED_JOB = re.compile(r"spec\.replicatedJobs\[(\d+)\]")
_SUCCESS_TARGET = "invalid replicatedJob name"


def _locate(
    view: FleetView, unit: Unit, obj: dict[str, Any], item: dict[str, Any], err: dict[str, Any]
) -> tuple[Location, str, str]:
    """(where in values, values path, hint) for one webhook error."""
    ns, name = item.get("namespace") or "", item["name"]
    text = f"{err.get('field', '')} {err.get('message', '')}"
    for team in view.teams:
        loaded = team_workloads(view, team)
        if item["kind"] == "JobSet":
            for job in loaded.jobs:
                if (job.namespace, job.name) != (ns, name):
                    continue
                path: YamlPath = job.path
                if "failure policy" in text:
                    path = (*job.path, "failurePolicy")
                elif text.strip().startswith(_SUCCESS_TARGET):
                    # The success policy's target check has no field and names no policy
                    # (pkg/webhooks/jobset_webhook.go ValidateCreate, v0.11.1); the failure
                    # policy's says "in failure policy", handled above.
                    path = (*job.path, "successPolicy")
                elif (m := _REPLICATED_JOB.search(text)) is not None:
                    rjobs = (obj.get("spec") or {}).get("replicatedJobs") or []
                    i = int(m.group(1))
                    if i < len(rjobs):
                        path = (*job.path, "tasks", str(rjobs[i].get("name")))
                return _at(team.doc, path)
        if item["kind"] == "LeaderWorkerSet":
            vendor = str(((obj.get("metadata") or {}).get("labels") or {}).get(TRACK_LABEL, ""))
            for svc in loaded.services:
                if svc.namespace != ns or f"{svc.name}-{vendor}" != name:
                    continue
                path = (*svc.path, "tracks", vendor)
                if "leaderWorkerTemplate.size" in text:
                    path = (*path, "groupSize")
                return _at(team.doc, path)
    return (origin(unit, obj) if obj else Location(unit.path)), "", OTHER


def _at(doc: Doc, path: YamlPath) -> tuple[Location, str, str]:
    """Where `path` is (or its nearest set parent), its JSON path, and the hint for the field
    it names (the task's for a path into `tasks`)."""
    key = path[-2] if len(path) >= 2 and path[-2] == "tasks" else str(path[-1])
    return doc.anchor(path), json_path(path), HINTS.get(str(key), OTHER)


class WorkloadStage:
    name = "workloads"
    order = 35
    codes = (CodeInfo(CODE, "manifests (workloadcheck)", "error", SUMMARY),)

    def salt(self, engine: str) -> str:
        return tool_salt(TOOL, stamped=True)

    def run(self, batch: Batch) -> dict[str, Any]:
        files = {}
        for path in batch.ok():
            docs = workload_docs(batch.built[path]["docs"])
            if docs:
                file = batch.scratch / (path.replace("/", "__") + ".workloads.built.yaml")
                file.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
                files[path] = file
        return check(files, crd_folder())

    def findings(self, unit: UnitView, result: Any) -> list[Finding]:
        return findings(unit.view, unit.unit, unit.docs, result, unit.at) if result else []


STAGE = WorkloadStage()
