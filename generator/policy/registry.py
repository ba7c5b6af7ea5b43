"""The one policy registry: every values check and manifest rule, listed here and nowhere else.

Values checks run at render time on the resolved values (and the objects the builders make);
manifest rules run in validate on the objects as kustomize builds them. Adding a check is adding
it to its module's CHECKS (or RULES); this list of modules is the registry. Nothing registers
itself by being imported, so what runs is what this file says.
"""

from __future__ import annotations

from typing import TypeVar

from generator.builders.fleet import Build
from generator.findings import CodeInfo, Finding
from generator.policy import (
    allocation,
    fleet,
    manifest,
    manifest_scheduling,
    mirrors,
    monitoring,
    patches,
    platform,
    providers,
    scheduling,
    security,
    shared,
    workloads,
)
from generator.policy import checks as base
from generator.policy.checks import Check, ManifestRule
from generator.policy.context import Context
from generator.policy.memo import CheckMemo
from generator.values.model import Values
from generator.vocab.objects import Obj
from generator.vocab.units import Unit

T = TypeVar("T", Check, ManifestRule)


def _listed(items: tuple[T, ...]) -> dict[str, T]:
    """{code: item}; a code listed twice would hide one of them, so it is refused."""
    out: dict[str, T] = {}
    for item in items:
        if item.code in out:
            raise ValueError(f"code {item.code} is listed twice in the policy registry")
        out[item.code] = item
    return out


# Values checks, in the order they run (findings are sorted afterwards: order is not output).
CHECKS: dict[str, Check] = _listed(
    (
        *fleet.CHECKS,
        *workloads.CHECKS,
        *scheduling.CHECKS,
        *monitoring.CHECKS,
        *platform.CHECKS,
        *mirrors.CHECKS,
        *allocation.CHECKS,
        *providers.CHECKS,
        *security.CHECKS,
    )
)
# Manifest rules on built objects.
MANIFEST_RULES: dict[str, ManifestRule] = _listed(
    (*manifest.RULES, *manifest_scheduling.RULES, *patches.RULES, *security.RULES)
)


def run_checks(
    values: Values, builds: dict[str, Build], memo: CheckMemo | None = None
) -> list[Finding]:
    """Every registered values check on every layer of `values`, on each one's build (views
    `memo` knows: not again)."""
    return base.run_checks(values, builds, CHECKS.values(), memo)


def run_rules(ctx: Context, unit: Unit, objs: list[Obj]) -> list[Finding]:
    """Every registered manifest rule on one unit's built objects."""
    return base.run_rules(ctx, unit, objs, list(MANIFEST_RULES.values()))


def codes() -> list[CodeInfo]:
    """The codes of every check and rule: where each runs, its severity and summary."""
    out: dict[str, CodeInfo] = {}
    for code, chk in CHECKS.items():
        out[code] = CodeInfo(code, "values", chk.severity, chk.summary)
    for code, rule in MANIFEST_RULES.items():
        if code in out:  # a placement problem checked at render time and on the built objects
            out[code] = CodeInfo(code, "values, manifests", out[code].severity, out[code].summary)
        else:
            out[code] = CodeInfo(code, "manifests", rule.severity, rule.summary)
    for info in shared.CODES:  # across environments (policy/shared.py)
        out[info.code] = info
    return [out[c] for c in sorted(out)]
