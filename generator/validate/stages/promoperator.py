"""PROM002: the Prometheus Operator's own check of every PrometheusRule as kustomize builds it.

promtool (PROM001) checks the rule groups as Prometheus reads a rule file. The operator, which
turns PrometheusRules into those files, refuses more: operator.ValidateRule
(github.com/prometheus-operator/prometheus-operator v0.85.0 pkg/operator/rules.go) rejects a
PrometheusRule whose spec, serialised as the operator writes it, is over MaxConfigMapDataSize
(half of a Secret's 1 MiB: 524,288 bytes), and parses the rest with Prometheus's rulefmt under
legacy label names, where promtool accepts UTF-8 ones. Its reconciler skips a rule it rejects
(a Warning event, and a count in prometheus_operator_managed_resources{state="rejected"}; the
other rules load), so on a cluster the rules would silently not load; its admission webhook,
where a site runs it, refuses the object. promrulecheck (gotools/promoperator/promrulecheck,
linking that package) runs ValidateRule itself; its comment cites both callers.

One promrulecheck process checks every unit of a run (a file per unit with PrometheusRules). The
promtool stage runs it beside promtool: the operator's rulefmt refuses what promtool refuses
too, so an object promtool refuses gets only the size check's verdict here (one finding per root
cause: fixing the rule comes first, and the next run says whether the operator then takes it).
"""

from __future__ import annotations

import json
import re
from typing import Any

from generator.findings import CodeInfo, Finding
from generator.validate.stages import Batch, UnitView, json_lines_per_unit
from generator.vocab.api import MONITORING

TOOL = "promrulecheck"
TIMEOUT = 300.0
PROM002 = CodeInfo(
    "PROM002",
    "manifests (promrulecheck)",
    "error",
    "the Prometheus Operator rejects a PrometheusRule (its rule file over 512 KiB, or rules "
    "its rulefmt refuses)",
)
# How ValidateRule (v0.85.0 pkg/operator/rules.go) begins the message of its size check: the
# one rejection whose fix is to split the object, not to edit a rule.
SIZE_MESSAGE = "the length of rendered Prometheus Rule is "


def rule_docs(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        d for d in docs if d.get("apiVersion") == MONITORING and d.get("kind") == "PrometheusRule"
    ]


def check(batch: Batch, built: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """promrulecheck's verdict per unit that has PrometheusRules (in `built`: each unit's objects
    it checks), from one run over every such unit's file: {unit: {"version", "objects": n,
    "rejected": [line with errors, ...]}}."""
    files = {}
    for path, objects in built.items():
        docs = rule_docs(objects)
        if docs:
            file = batch.scratch / (path.replace("/", "__") + ".prometheusrules.yaml")
            # JSON, one document a line: a large fleet's rules are tens of megabytes, which
            # json writes about 12 times faster than libyaml's emitter (45 MB at 20 x 500: 1.7 s
            # against 20 s). Separators only between documents: the YAML reader keeps a leading
            # one in the first document, which would then not be JSON.
            text = "---\n".join(json.dumps(d, separators=(",", ":")) + "\n" for d in docs)
            file.write_text(text, encoding="utf-8")
            files[path] = file
    return {
        unit: {
            "version": items[-1]["version"] if items else "",
            "objects": len(items),
            "rejected": [i for i in items if i["errors"]],
        }
        for unit, items in json_lines_per_unit(TOOL, files, [], TIMEOUT).items()
    }


def findings(
    unit: UnitView, result: dict[str, Any], promtool_refused: dict[str, list[str]]
) -> list[Finding]:
    """A finding per distinct error of each rejected PrometheusRule (rulefmt may say one twice),
    at the values that render it, but those promtool has said (`promtool_refused`: its problems
    by "namespace/name", PROM001): the operator's rulefmt refuses what promtool refuses, so of a
    rule promtool refused (its group and number in promtool's words) the operator's words are
    left out, and so are the errors about no rule that promtool said; the size check's, and
    those about the rules promtool passed (a legacy label name beside another rule's bad
    expression), are the operator's own."""
    out = []
    for item in result.get("rejected") or []:
        loc, what = unit.find(item["kind"], item["name"])
        said = promtool_refused.get(f"{item.get('namespace') or ''}/{item['name']}", [])
        for message in dict.fromkeys(e["message"] for e in item["errors"]):
            if said and not message.startswith(SIZE_MESSAGE) and _said(message, said):
                continue
            out.append(
                Finding(
                    PROM002.code,
                    f"{what}: the Prometheus Operator {result['version']} rejects it: {message}",
                    loc,
                    hint=_hint(message, item["maxBytes"]),
                    unit=unit.unit.path,
                )
            )
    return out


# rulefmt's words about a rule (prometheus model/rulefmt/rulefmt.go, Error.Error, the same in
# the operator's v0.305.0 and promtool's v0.316.0): the rule's line and column in the file (two
# of them when both `record` and `alert` are set), then its group, Go-quoted, and its number.
POSITION = re.compile(r"^(?:\d+:\d+: ){1,2}")
RULE_WORDS = re.compile(r'^(group "(?:[^"\\]|\\.)*", rule \d+), ')


def _said(message: str, said: list[str]) -> bool:
    """Whether promtool said the problem of the operator's `message`: a problem of the same
    rule, or, of an error about no rule (a value decoding stops at), the same words."""
    words = POSITION.sub("", message, count=1)
    rule = RULE_WORDS.match(words)
    if rule is None:
        return any(p.endswith(words) for p in said)
    return any(p.startswith(rule.group(1) + ", ") for p in said)


# The legacy names (github.com/prometheus/common v0.65.0, the operator's: model/labels.go
# LabelNameRE, model/metric.go MetricNameRE), which the operator's init in pkg/operator/rules.go
# sets for every name it validates.
def _hint(message: str, max_bytes: int) -> str:
    if message.startswith(SIZE_MESSAGE):
        return (
            f"the operator loads no rule file over {max_bytes} bytes (512 KiB): split the rule "
            "groups over several PrometheusRules, fewer rules in each"
        )
    return (
        "fix the rule: the operator reads it with Prometheus's rulefmt and allows only legacy "
        "label and metric names (letters, digits, underscores; colons in metric names), where "
        "promtool allows any UTF-8 name"
    )
