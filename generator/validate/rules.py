"""Policy rules on the rendered objects, exactly as kustomize builds them for Argo CD.

Each rule has a code and a one-line summary, takes the environment's resolved values and one
unit's built objects, and yields findings located at the values that produced the object. The
pod placement rules (generator/placement.py) run here on every kind with a pod template, after
overlays and patches; at render time the same logic checks the workloads the builders make.
"""

from __future__ import annotations

import re
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


# ---- names and labels ---------------------------------------------------------------------

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
# Kinds whose names must be DNS labels: the API server refuses longer or dotted names (a Job's
# name also becomes a label value on its pods).
_LABEL_KINDS = {"Namespace": _LABEL, "Service": _DNS1035, "Job": _LABEL, "CronJob": _LABEL}


def _name_problem(kind: str, name: str) -> str:
    pattern = _LABEL_KINDS.get(kind)
    if pattern is not None:
        if len(name) > 63 or not pattern.match(name):
            what = "DNS-1035 label" if pattern is _DNS1035 else "DNS-1123 label"
            return f"name {name!r} is not a valid {what} (lower-case, '-', at most 63)"
    elif len(name) > 253 or not _SUBDOMAIN.match(name):
        return f"name {name!r} is not a valid DNS-1123 subdomain"
    return ""


def _label_problem(key: str, value: object) -> str:
    prefix, _, name = key.rpartition("/")
    if (
        (prefix and (len(prefix) > 253 or not _SUBDOMAIN.match(prefix)))
        or len(name) > 63
        or (not _LABEL_NAME.match(name))
    ):
        return f"label key {key!r} is not valid"
    if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
        return f"label {key}={value!r}: not a valid label value (at most 63 characters)"
    return ""


@manifest_rule("NAME006", "an object's name or a label is not what the API server accepts")
def names_and_labels(view: FleetView, unit: Unit, objs: list[Obj]) -> Iterable[Finding]:
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


# Rules of other concerns register themselves in their own modules.
from . import scheduling_rules  # noqa: E402,F401
