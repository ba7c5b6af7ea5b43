"""The one policy registry: every check and rule, with its code, stage and one-line summary.

Values checks (`checks.check`) run at render time on the resolved values and on the objects the
builders make; manifest rules (`validate.rules.manifest_rule`) run in validate on the objects as
kustomize builds them. Importing a module registers its checks, so every such module is imported
here.
"""

from __future__ import annotations

from generator.policy import fleet as checks
from generator.policy import monitoring as monitoring_checks
from generator.policy import scheduling as scheduling_checks
from generator.policy import workloads as workload_checks
from generator.policy.fleet import REGISTRY, run_checks

__all__ = [
    "REGISTRY",
    "all_rules",
    "checks",
    "monitoring_checks",
    "rules_table",
    "run_checks",
    "scheduling_checks",
    "workload_checks",
]


def all_rules() -> dict[str, tuple[str, str]]:
    """{code: (stages, summary)}, sorted by code."""
    from generator.policy.manifest import MANIFEST_RULES
    from generator.validate.stages import kubescheduler, kueue

    out: dict[str, tuple[str, str]] = {}
    for code, chk in REGISTRY.items():
        out[code] = ("values", chk.summary)
    for code, rule in MANIFEST_RULES.items():
        stages = "values, manifests" if code in out else "manifests"
        out[code] = (stages, out.get(code, ("", rule.summary))[1])
    # Upstream code run by validate on the built objects (tools/kueuecheck).
    out[kueue.CODE] = ("manifests (kueuecheck)", kueue.SUMMARY)
    # The kube-scheduler's own config decoding and validation (tools/schedcheck).
    out[kubescheduler.CODE] = ("manifests (schedcheck)", kubescheduler.SUMMARY)
    return dict(sorted(out.items()))


def rules_table() -> str:
    lines = ["| code | runs in | rule |", "|---|---|---|"]
    lines += [
        f"| {code} | {stages} | {summary} |" for code, (stages, summary) in all_rules().items()
    ]
    return "\n".join(lines) + "\n"
