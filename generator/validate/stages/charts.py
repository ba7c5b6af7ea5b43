"""The charts stage: the add-ons the fleet renders, rendered from their charts and validated like
every other unit (CHART001, CHART002).

An add-on the fleet renders is an Argo CD Application of the upstream chart at a pinned version,
with values generated from the fleet (builders/platform.py). Where that chart ships inside a Go
module a tool module pins (NFD's, in sigs.k8s.io/node-feature-discovery), this stage renders it
offline with the pinned helm (`helm template`, the values the committed Application carries),
and checks every object it gives with kubeconform -strict against the same Kubernetes and CRD
schemas as the units. The Application must name the version the module carries: what Argo CD
installs is then what was checked here. An add-on whose chart is not available here (Volcano's
module is not served) is checked as an Application only; docs/platform.md says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from generator.builders import mirrors
from generator.findings import CodeInfo, Finding, Severity
from generator.render.charts import addon_applications, application_values, render_chart
from generator.toolchain import errors
from generator.toolchain.schemas import schemas_salt
from generator.validate.stages import Batch, UnitView, tool_salt
from generator.validate.stages.kustomize import kubeconform
from generator.values.model import FleetView
from generator.vocab import addons

CHART001 = CodeInfo(
    "CHART001",
    "manifests (helm, kubeconform)",
    "error",
    "an add-on's chart, rendered with the values its Application carries, fails or gives an "
    "object its schema refuses",
)
CHART003 = CodeInfo(
    "CHART003",
    "manifests (helm)",
    "warning",
    "an add-on chart's objects that only the API server's CRD defaulting makes valid were not "
    "schema-checked offline",
)
CHART004 = CodeInfo(
    "CHART004",
    "manifests (helm)",
    "error",
    "an add-on chart's Secret that its controller fills is not left to it: Argo CD's self-heal "
    "would empty it again and again",
)
CHART002 = CodeInfo(
    "CHART002",
    "manifests",
    "error",
    "an add-on's Application names another chart, version or repository (the catalogue's, or "
    "its mirror) than validate renders",
)


def fought_secrets(app: dict[str, Any], docs: list[dict[str, Any]]) -> list[str]:
    """The Secrets `docs` (a chart's objects) give with an empty data value, something else's to
    fill, whose data the Application `app` does not leave to the cluster: an ignoreDifferences
    entry for the Secret's /data and RespectIgnoreDifferences=true (without it a sync applies
    the chart's empty values: argo-cd v3.2.6 controller/sync.go)."""
    spec = app.get("spec") or {}
    respects = "RespectIgnoreDifferences=true" in (spec.get("syncPolicy") or {}).get(
        "syncOptions", []
    )
    ignored = {
        (entry.get("namespace", ""), entry.get("name", ""))
        for entry in spec.get("ignoreDifferences") or []
        if entry.get("kind") == "Secret" and "/data" in (entry.get("jsonPointers") or [])
    }
    home = (spec.get("destination") or {}).get("namespace", "")
    out = []
    for doc in docs:
        if doc.get("kind") != "Secret" or not any(
            v in ("", None) for v in (doc.get("data") or {}).values()
        ):
            continue
        meta = doc.get("metadata") or {}
        where = (meta.get("namespace") or home, meta.get("name", ""))
        if not respects or where not in ignored:
            out.append(f"{where[0]}/{where[1]}")
    return sorted(out)


def _named(app: dict[str, Any]) -> list[Any]:
    """The repository, chart and version the Application installs."""
    source = app.get("spec", {}).get("source") or {}
    return [source.get("repoURL"), source.get("chart"), source.get("targetRevision")]


def _version_problem(named: list[Any], chart: addons.Chart, view: FleetView | None) -> str:
    """What the Application installs that is not what validate renders: another chart or version,
    or another repository than the catalogue's or the one values mirror it to (a mirror holds
    the same chart: builders/mirrors.py)."""
    repo = mirrors.chart_repo(view.fleet.mirrors, chart) if view is not None else chart.repo_url
    pinned = [repo, chart.name, chart.version]
    if named == pinned:
        return ""
    return (
        f"it installs chart {named[1]!r} {named[2]!r} from {named[0]!r}, but what validate "
        f"renders is {pinned[1]!r} {pinned[2]!r} ({chart.module}@{chart.module_version}), "
        f"from {repo!r}"
    )


class ChartsStage:
    name = "charts"
    order = 12
    tools = ("helm", "kubeconform")
    codes = (CHART001, CHART002, CHART003, CHART004)

    def salt(self, engine: str) -> str:
        return "\n".join([tool_salt("helm"), tool_salt("kubeconform"), schemas_salt()])

    def run(self, batch: Batch) -> dict[str, Any]:
        out: dict[str, list[dict[str, Any]]] = {}
        files: dict[str, Path] = {}
        for path in batch.ok():
            for app, addon in addon_applications(batch.built[path]["docs"]):
                chart = addon.chart
                assert chart is not None  # addon_apps keeps only add-ons with a chart
                values = application_values(app)
                verdict: dict[str, Any] = {
                    "app": app["metadata"]["name"],
                    "addon": addon.key,
                    "named": _named(app),
                    "objects": 0,
                    "error": "",
                    "refused": [],
                    "unchecked": [],
                    "fought": [],
                }
                out.setdefault(path, []).append(verdict)
                try:
                    text = render_chart(chart, values, batch.kube_version)
                except errors.ToolFailed as exc:
                    lines = exc.stderr.decode("utf-8", "replace").split("\n")
                    detail = "; ".join(ln.strip() for ln in lines if ln.strip())
                    verdict["error"] = detail or f"helm exited {exc.returncode}"
                    continue
                docs = [d for d in yaml.safe_load_all(text) if d]
                verdict["objects"] = len(docs)
                verdict["fought"] = fought_secrets(app, docs)
                aside = [d for d in docs if d.get("kind") in chart.server_defaulted]
                verdict["unchecked"] = [f"{d['kind']} {d['metadata']['name']}" for d in aside]
                checked = [d for d in docs if d.get("kind") not in chart.server_defaulted]
                key = f"{path}\0{addon.key}"
                file = batch.scratch / (key.replace("/", "__").replace("\0", "__") + ".yaml")
                file.write_text(yaml.safe_dump_all(checked, sort_keys=False), encoding="utf-8")
                files[key] = file
        for key, refused in kubeconform(files, batch.kube_version).items():
            path, _, addon_key = key.partition("\0")
            for verdict in out[path]:
                if verdict["addon"] == addon_key:
                    verdict["refused"] = [
                        f"{r.get('kind')} {r.get('name')}: {r.get('msg')}" for r in refused
                    ]
        return out

    def findings(self, unit: UnitView, result: Any) -> list[Finding]:
        out = []
        for verdict in result:
            loc, what = unit.find("Application", verdict["app"])
            addon = addons.BY_KEY[verdict["addon"]]
            title = addon.title
            assert addon.chart is not None  # run() judged only add-ons with a chart
            wrong = _version_problem(verdict["named"], addon.chart, unit.view)
            if wrong:
                out.append(
                    Finding(
                        CHART002.code,
                        f"{what}: {wrong}",
                        loc,
                        "$.spec.source",
                        "re-render: the Application names the chart the catalog pins",
                        unit=unit.unit.path,
                    )
                )
            if verdict.get("unchecked"):
                out.append(
                    Finding(
                        CHART003.code,
                        f"{what}: {title}'s chart gives {', '.join(verdict['unchecked'])}, which "
                        "only the API server makes valid (its CRD's defaults fill fields the "
                        "chart leaves out, and it prunes nulls): not schema-checked offline",
                        loc,
                        "$.spec.source.helm.valuesObject",
                        "check it on a cluster: Argo CD's sync, or a server-side dry-run of the "
                        "chart (docs/platform.md)",
                        severity=Severity.WARNING,
                        unit=unit.unit.path,
                    )
                )
            for secret in verdict.get("fought", []):
                out.append(
                    Finding(
                        CHART004.code,
                        f"{what}: {title}'s chart ships Secret {secret} with empty data, which "
                        "its controller fills (a webhook certificate); the Application does not "
                        "ignore that data, so Argo CD sees the filled Secret as OutOfSync, "
                        "self-heal empties it and the controller mints a new certificate, again "
                        "and again",
                        loc,
                        "$.spec.ignoreDifferences",
                        "list the Secret in the add-on's Chart.filled_secrets "
                        "(generator/vocab/addons.py) and re-render: the Application then ignores "
                        "its data and syncs with RespectIgnoreDifferences=true",
                        unit=unit.unit.path,
                    )
                )
            problems = [verdict["error"]] if verdict["error"] else verdict["refused"]
            for problem in problems:
                out.append(
                    Finding(
                        CHART001.code,
                        f"{what}: {title}'s chart with these values: {problem}",
                        loc,
                        "$.spec.source.helm.valuesObject",
                        f"fix platform.{verdict['addon']} or what its values are made from "
                        "(docs/platform.md)",
                        unit=unit.unit.path,
                    )
                )
        return out


STAGE = ChartsStage()
