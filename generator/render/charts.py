"""Charts of the add-ons the fleet renders, rendered offline: the chart inside the Go module a
tool module pins (builders/platform.py `Chart.module`), with the pinned helm (`helm template`),
as validate checks it (validate/stages/charts.py) and simulate runs it (cluster/simulate.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from generator import toolchain
from generator.builders import platform
from generator.toolchain.modules import module_dir

HELM_TIMEOUT = 300


def helm_kube_version(kube_version: str) -> str:
    """helm's --kube-version for the fleet's kubernetesVersion ("1.36" or "1.36.3")."""
    return f"v{kube_version}" + (".0" if kube_version.count(".") == 1 else "")


def chart_dir(chart: platform.Chart) -> Path:
    return module_dir(chart.tool_module, chart.module) / chart.module_path


def render_chart(chart: platform.Chart, values: dict[str, Any], kube_version: str) -> str:
    """`helm template` of the chart inside its module with `values`: every object, CRDs too."""
    args = [
        "template",
        chart.release,
        str(chart_dir(chart)),
        "--namespace",
        chart.namespace,
        "--include-crds",
        "--kube-version",
        helm_kube_version(kube_version),
        "--values",
        "-",
    ]
    text = yaml.safe_dump(values, sort_keys=True).encode()
    proc = toolchain.run("helm", args, timeout=HELM_TIMEOUT, input=text)
    return proc.stdout.decode("utf-8", "replace")


def addon_applications(docs: list[dict[str, Any]]) -> list[tuple[dict[str, Any], platform.Addon]]:
    """The add-on Applications among `docs` whose chart ships in a module (renderable here)."""
    out = []
    for doc in docs:
        key = ((doc.get("metadata") or {}).get("labels") or {}).get(platform.ADDON_LABEL)
        addon = platform.BY_KEY.get(str(key)) if doc.get("kind") == "Application" else None
        if addon is not None and addon.chart is not None and addon.chart.module:
            out.append((doc, addon))
    return out


def application_values(app: dict[str, Any]) -> dict[str, Any]:
    """The chart values an add-on Application carries (`spec.source.helm.valuesObject`)."""
    source = (app.get("spec") or {}).get("source") or {}
    values: dict[str, Any] = (source.get("helm") or {}).get("valuesObject") or {}
    return values
