"""Policy rules on the rendered objects, exactly as kustomize builds them for Argo CD.

Each rule has a code and a one-line summary, takes the environment's resolved values and one
unit's built objects, and yields findings located at the values that produced the object. The
pod placement rules (generator/placement.py) run here on every kind with a pod template, after
overlays and patches; at render time the same logic checks the workloads the builders make.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..builders.common import identity
from ..errors import Finding, Location
from ..layout import Unit
from ..model import FleetView
from ..placement import SUMMARIES, pod_problems, pod_templates

Obj = dict[str, Any]
RuleFn = Callable[[FleetView, Unit, list[Obj]], Iterable[Finding]]


@dataclass(frozen=True)
class ManifestRule:
    code: str
    summary: str
    fn: RuleFn


MANIFEST_RULES: dict[str, ManifestRule] = {}


def manifest_rule(code: str, summary: str) -> Callable[[RuleFn], RuleFn]:
    def register(fn: RuleFn) -> RuleFn:
        if code in MANIFEST_RULES:
            raise ValueError(f"rule code {code} registered twice")
        MANIFEST_RULES[code] = ManifestRule(code, summary, fn)
        return fn

    return register


def run_rules(view: FleetView, unit: Unit, objs: list[Obj]) -> list[Finding]:
    out: list[Finding] = []
    for rule in MANIFEST_RULES.values():
        out.extend(rule.fn(view, unit, objs))
    return out


def origin(unit: Unit, obj: Obj) -> Location:
    try:
        return unit.origins.get(identity(obj), Location(unit.path))
    except KeyError:
        return Location(unit.path)


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
    def rule(view: FleetView, unit: Unit, objs: list[Obj]) -> Iterable[Finding]:
        for obj in objs:
            for tpl in pod_templates(obj):
                for problem in pod_problems(view, tpl.spec):
                    if problem.code == code:
                        yield Finding(
                            code,
                            f"{describe(unit, obj)}: {problem.message}",
                            origin(unit, obj),
                            f"{tpl.where}.{problem.where}",
                            HINTS[code],
                        )

    return rule


for _code, _summary in SUMMARIES.items():
    manifest_rule(_code, _summary)(_placement_rule(_code))
