"""ADM001: run JobSet's, LeaderWorkerSet's and Kubeflow Trainer's own admission checks on the
JobSets, LeaderWorkerSets and TrainJobs as kustomize builds them.

kubeconform checks them against the CRD schemas only; the add-ons' webhooks refuse more
(sigs.k8s.io/jobset v0.11.1 pkg/webhooks/jobset_webhook.go: a failure policy rule's target that
is no replicated job, a job failure reason Kubernetes does not give, a JobSet name too long for
its pods' names; sigs.k8s.io/lws v0.8.0 pkg/webhooks/leaderworkerset_webhook.go: a group size
below 1, a rollout strategy out of range). workloadcheck (gotools/workloads, built on those
packages) applies each object's CRD defaults as the API server does, then runs the webhook's
defaulting and ValidateCreate; each error becomes a finding at the values behind it: a JobSet's
at its job (its failurePolicy, successPolicy or task where the error names one), a
LeaderWorkerSet's at its service's track (its groupSize where the error is the size's).

TrainJobs go to trainjobcheck (gotools/kueuecheck/trainjobcheck, built on Trainer v2.2.0's
runtimes), with the ClusterTrainingRuntimes they name as Trainer's chart installs them: Trainer's
validation looks the runtime up and lets each framework plugin check the TrainJob against it
(github.com/kubeflow/trainer/v2 v2.2.0 pkg/runtime/framework/plugins/torch: env that torchrun
reserves). Its errors land at the job's `env`, `runtime` or the job.

One process of each checker checks every unit of a run (a file per unit).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from generator.builders.fleet import Build
from generator.builders.scheduling import named_runtimes, trainer_values
from generator.findings import CodeInfo, Finding, Location
from generator.policy.manifest import origin
from generator.render.charts import render_chart
from generator.toolchain import registry
from generator.validate.stages import (
    Batch,
    UnitView,
    find_object,
    json_lines_per_unit,
    tool_salt,
)
from generator.values.merge import Doc
from generator.values.yamlio import YamlPath, json_path
from generator.vocab import addons
from generator.vocab.api import TRAINER_GROUP
from generator.vocab.labels import TRACK_LABEL
from generator.vocab.units import Unit

CODE = "ADM001"
SUMMARY = (
    "JobSet's, LeaderWorkerSet's or Kubeflow Trainer's admission webhook would refuse a rendered "
    "JobSet, LeaderWorkerSet or TrainJob"
)
GROUPS = ("jobset.x-k8s.io", "leaderworkerset.x-k8s.io")
TIMEOUT = 300
TOOL = "workloadcheck"
TRAINER_TOOL = "trainjobcheck"
# Whose webhook decides each kind, as findings name it.
OWNERS = {"JobSet": "JobSet", "LeaderWorkerSet": "LeaderWorkerSet", "TrainJob": "Kubeflow Trainer"}


def _group(doc: dict[str, Any]) -> str:
    return str(doc.get("apiVersion", "")).split("/")[0]


def workload_docs(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in docs if _group(d) in GROUPS]


def trainjob_docs(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in docs if _group(d) == TRAINER_GROUP and d.get("kind") == "TrainJob"]


def check(files: dict[str, Path], crds: Path | None) -> dict[str, dict[str, Any]]:
    """workloadcheck's verdict per unit, from one run over every unit's file:
    {unit: {"objects": n, "refused": [result with errors, ...]}}. `crds`: the folder of pinned
    CRDs whose schema defaults apply first (None: the objects as written)."""
    flags = [f"-crds={crds}"] if crds else []
    return {
        unit: {"objects": len(items), "refused": [i for i in items if i["errors"]]}
        for unit, items in json_lines_per_unit(TOOL, files, flags, TIMEOUT).items()
    }


def check_trainjobs(files: dict[str, Path], runtimes: Path) -> dict[str, dict[str, Any]]:
    """trainjobcheck's verdict per unit, as check()'s, against the ClusterTrainingRuntimes in
    `runtimes`."""
    lines = json_lines_per_unit(TRAINER_TOOL, files, [f"-runtimes={runtimes}"], TIMEOUT)
    return {
        unit: {"objects": len(items), "refused": [i for i in items if i["errors"]]}
        for unit, items in lines.items()
    }


def trainer_runtimes(names: set[str], kube_version: str) -> str:
    """The ClusterTrainingRuntimes `names` as Trainer's chart (builders/platform.py, its pinned
    version, from its module) installs them, as YAML: what the fleet's Trainer installs for its
    TrainJobs (builders/scheduling.py trainer_values). A name the chart has no runtime of stays
    out, and the check says it is not found."""
    chart = addons.BY_KEY["trainer"].chart
    assert chart is not None
    text = render_chart(chart, trainer_values(names), kube_version)
    docs = [d for d in yaml.safe_load_all(text) if d and d.get("kind") == "ClusterTrainingRuntime"]
    return yaml.safe_dump_all(docs, sort_keys=False)


def crd_folder() -> Path | None:
    """The pinned CRD objects, when `tools install` has laid them out."""
    folder = registry.crd_manifests_dir()
    return folder if folder.is_dir() else None


def findings(
    build: Build | None,
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
        owner = OWNERS.get(str(item["kind"]), str(item["kind"]))
        for err in item["errors"]:
            if build is not None:
                loc, path, hint = _locate(build, unit, obj, item, err)
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
    "env": "leave out what the runtime sets itself (torchrun's PET_* variables: Trainer sets "
    "them from numNodes and numProcPerNode)",
    "runtime": "name a runtime the fleet's Kubeflow Trainer installs (docs/workloads.md)",
}
# A TrainJob error's field -> the job's values key it comes from.
TRAINJOB_FIELDS = {
    "spec.trainer.env": "env",
    "spec.runtimeref": "runtime",
    "spec.trainer.numnodes": "numNodes",
    "spec.trainer.numprocpernode": "numProcPerNode",
}
OTHER = "fix the values that render this object"


_REPLICATED_JOB = re.compile(r"spec\.replicatedJobs\[(\d+)\]")
_SUCCESS_TARGET = "invalid replicatedJob name"


def _locate(
    build: Build, unit: Unit, obj: dict[str, Any], item: dict[str, Any], err: dict[str, Any]
) -> tuple[Location, str, str]:
    """(where in values, values path, hint) for one webhook error."""
    view = build.view
    ns, name = item.get("namespace") or "", item["name"]
    text = f"{err.get('field', '')} {err.get('message', '')}"
    for team in view.teams:
        loaded = build.workloads.of(team)
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
        if item["kind"] == "TrainJob":
            for job in loaded.jobs:
                if (job.namespace, job.name) == (ns, name):
                    key = TRAINJOB_FIELDS.get(str(err.get("field", "")).lower())
                    if key is None and "runtime" in str(err.get("message", "")):
                        key = "runtime"  # "unsupported runtime: ...", an error without a field
                    return _at(team.doc, (*job.path, key) if key else job.path)
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
    tools = (TOOL, TRAINER_TOOL)
    codes = (CodeInfo(CODE, "manifests (workloadcheck)", "error", SUMMARY),)

    def salt(self, engine: str) -> str:
        chart = addons.BY_KEY["trainer"].chart
        assert chart is not None
        return "\n".join(
            (tool_salt(TOOL, stamped=True), tool_salt(TRAINER_TOOL, stamped=True), chart.source)
        )

    def run(self, batch: Batch) -> dict[str, Any]:
        files, trains = {}, {}
        names: set[str] = set()
        for path in batch.ok():
            built = batch.built[path]["docs"]
            base = batch.scratch / path.replace("/", "__")
            docs = workload_docs(built)
            if docs:
                files[path] = base.with_suffix(".workloads.built.yaml")
                files[path].write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
            train = trainjob_docs(built)
            if train:
                trains[path] = base.with_suffix(".trainjobs.built.yaml")
                trains[path].write_text(
                    yaml.safe_dump_all(train, sort_keys=False), encoding="utf-8"
                )
                names |= named_runtimes(train)
        out = check(files, crd_folder())
        if trains:
            runtimes = batch.scratch / "trainer-runtimes.yaml"
            runtimes.write_text(trainer_runtimes(names, batch.kube_version), encoding="utf-8")
            for unit, verdict in check_trainjobs(trains, runtimes).items():
                mine = out.setdefault(unit, {"objects": 0, "refused": []})
                mine["objects"] += verdict["objects"]
                mine["refused"] += verdict["refused"]
        return out

    def findings(self, unit: UnitView, result: Any) -> list[Finding]:
        return findings(unit.build, unit.unit, unit.docs, result, unit.at) if result else []


STAGE = WorkloadStage()
