"""KSC001: run the kube-scheduler's own config decoding and validation on every
KubeSchedulerConfiguration a ConfigMap carries, as kustomize builds it.

kubeconform sees a ConfigMap's data as strings; the packing profile (builders/scheduling.py,
`kube_scheduler_configmap`) is a KubeSchedulerConfiguration inside one. schedcheck
(gotools/schedcheck, k8s.io/kubernetes v1.36.3) decodes each with the scheduler's strict,
defaulting decoder and runs ValidateKubeSchedulerConfiguration and ValidateNodeResourcesFitArgs,
what kube-scheduler --config refuses to start with: an unknown or misspelled field, a resource
weight outside 1..100, a profile without a name. A config is found by its content (a data value
whose `kind` is KubeSchedulerConfiguration), not by the ConfigMap's name, so a hand-added or
renamed one is checked too. Each error is a finding at the fleet's `scheduling.kubeScheduler`
(in the environment file where the environment sets it), the values that render the config; a
ConfigMap the values do not render is reported at its committed file.

One schedcheck process checks every config of a run (a file each).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from generator import Program
from generator.findings import CodeInfo, Finding, Location
from generator.toolchain import process
from generator.toolchain.errors import ToolFailed
from generator.validate.stages import Batch, UnitView, tool_salt
from generator.values.merge import Doc
from generator.values.model import FleetView
from generator.values.yamlio import YamlPath, json_path
from generator.vocab.api import CORE
from generator.vocab.units import Unit

CODE = "KSC001"
SUMMARY = "kube-scheduler would refuse a KubeSchedulerConfiguration that a ConfigMap carries"
TIMEOUT = 300
KIND = "KubeSchedulerConfiguration"
# `kind: KubeSchedulerConfiguration` in YAML, or `"kind": "KubeSchedulerConfiguration"` in JSON
# (kube-scheduler reads both); quoted or not.
_KIND = re.compile(r"""(?m)(?:^|[{,\s])["']?kind["']?\s*:\s*["']?KubeSchedulerConfiguration\b""")
SETTINGS: YamlPath = ("scheduling", "kubeScheduler")


def embedded(docs: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Every KubeSchedulerConfiguration in a ConfigMap's data, in object and key order:
    [{"namespace", "name", "key", "text"}]."""
    out = []
    for doc in docs:
        if doc.get("apiVersion") != CORE or doc.get("kind") != "ConfigMap":
            continue
        meta = doc.get("metadata") or {}
        data = doc.get("data") or {}
        for key in sorted(data) if isinstance(data, dict) else ():
            text = data[key]
            if isinstance(text, str) and KIND in text and _KIND.search(text):
                ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
                out.append({"namespace": ns, "name": name, "key": str(key), "text": text})
    return out


def check(configs: dict[str, list[dict[str, str]]], folder: Path) -> dict[str, dict[str, Any]]:
    """schedcheck's verdict per unit, from one run over every config of every unit:
    {unit: {"kubernetesVersion", "configs": [{"namespace", "name", "key", "errors"}]}}."""
    files: dict[str, tuple[str, int]] = {}
    for unit, found in configs.items():
        for i, config in enumerate(found):
            path = folder / f"{unit.replace('/', '__')}.{i}.kube-scheduler.yaml"
            path.write_text(config["text"], encoding="utf-8")
            files[str(path)] = (unit, i)
    if not files:
        return {}
    args = ["-json", *files]
    proc = process.run("schedcheck", args, timeout=TIMEOUT, check=False)
    if proc.returncode not in (0, 1):
        raise ToolFailed(["schedcheck", *args], proc.returncode, proc.stdout, proc.stderr)
    out: dict[str, dict[str, Any]] = {
        unit: {
            "kubernetesVersion": "",
            "configs": [{k: c[k] for k in ("namespace", "name", "key")} for c in found],
        }
        for unit, found in configs.items()
        if found
    }
    seen = set()
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        unit, i = files[item["file"]]
        out[unit]["kubernetesVersion"] = item["kubernetesVersion"]
        out[unit]["configs"][i]["errors"] = item["errors"]
        seen.add(item["file"])
    if seen != set(files):  # a config without a verdict is never passed as valid
        missing = b"not every file was reported"
        raise ToolFailed(["schedcheck", *args], proc.returncode, proc.stdout, missing)
    return out


def findings(
    view: FleetView | None,
    unit: Unit,
    result: dict[str, Any],
    committed: Callable[[str], Location],
    program: Program,
) -> list[Finding]:
    """A finding per error; `committed(name)` locates a ConfigMap the values do not render."""
    out = []
    version = result.get("kubernetesVersion", "")
    for config in result.get("configs") or []:
        ns, name, key = config["namespace"], config["name"], config["key"]
        rendered = view is not None and any(
            o.get("kind") == "ConfigMap"
            and (o.get("metadata") or {}).get("name") == name
            and str((o.get("metadata") or {}).get("namespace") or "") == ns
            for o in unit.objects
        )
        for err in config.get("errors") or []:
            fld = err.get("field") or ""
            if rendered and view is not None:
                loc, path = _locate(view.fleet.doc, fld)
            else:
                loc, path = committed(name), ""
            out.append(
                Finding(
                    CODE,
                    f"ConfigMap {ns + '/' if ns else ''}{name} ({unit.path}) key {key!r}: "
                    f"kube-scheduler {version} would refuse this {KIND}: {err['message']}",
                    loc,
                    path,
                    _hint(fld, rendered, program),
                )
            )
    return out


def _locate(fleet: Doc, fld: str) -> tuple[Location, str]:
    """The values behind a field: the setting that renders it, else `scheduling.kubeScheduler`
    itself (in the environment file when the environment sets it)."""
    paths: list[YamlPath] = []
    if fld.startswith("clientConnection"):
        paths.append((*SETTINGS, "kubeconfig"))
    if "schedulerName" in fld or fld.startswith("leaderElection"):
        paths.append((*SETTINGS, "schedulerName"))
    paths += [SETTINGS, SETTINGS[:1]]
    for path in paths:
        loc = fleet.keys.get(path)
        if loc is not None and loc.file in fleet.sources:
            return loc, json_path(path)
    return fleet.anchor(SETTINGS), json_path(SETTINGS)


def _hint(fld: str, rendered: bool, program: Program) -> str:
    if not rendered:
        return (
            "this ConfigMap is not in the values' render: fix or remove the committed file "
            "(or set scheduling.kubeScheduler and re-render)"
        )
    if "weight" in fld:
        return (
            "the profile weighs each accelerator resource by its vendor's binpackWeight, which "
            "kube-scheduler takes as 1..100; if the committed ConfigMap was edited by hand, "
            "re-render"
        )
    if not fld:  # the decoder refused it: a field kube-scheduler does not know, or bad YAML
        return (
            "the committed config is not what the values render (a hand edit or an older "
            f"render): re-render it with `{program.command('render')}`"
        )
    return "set scheduling.kubeScheduler to what kube-scheduler accepts, then re-render"


class SchedulerStage:
    name = "schedcheck"
    order = 40
    tools = ("schedcheck",)
    codes = (CodeInfo(CODE, "manifests (schedcheck)", "error", SUMMARY),)

    def salt(self, engine: str) -> str:
        return tool_salt("schedcheck", stamped=True)

    def run(self, batch: Batch) -> dict[str, Any]:
        configs = {path: embedded(batch.built[path]["docs"]) for path in batch.ok()}
        return check(configs, batch.scratch)

    def findings(self, unit: UnitView, result: Any) -> list[Finding]:
        if not result:
            return []
        return findings(
            unit.view, unit.unit, result, functools.partial(unit.at, "ConfigMap"), unit.program
        )


STAGE = SchedulerStage()
