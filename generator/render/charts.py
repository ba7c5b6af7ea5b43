"""Charts of the add-ons the fleet renders, rendered offline: the chart inside the Go module a
tool module pins (builders/platform.py `Chart.module`), with the pinned helm (`helm template`),
as validate checks it (validate/stages/charts.py) and simulate runs it (simulate/addons.py)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml

from generator.errors import UsageError
from generator.toolchain import process
from generator.toolchain.modules import module_dir
from generator.vocab import addons, labels

HELM_TIMEOUT = 300


def helm_kube_version(kube_version: str) -> str:
    """helm's --kube-version for the fleet's kubernetesVersion ("1.36" or "1.36.3")."""
    return f"v{kube_version}" + (".0" if kube_version.count(".") == 1 else "")


def chart_dir(chart: addons.Chart) -> Path:
    return module_dir(chart.tool_module, chart.module) / chart.module_path


class ChartError(UsageError):
    """A chart that cannot be rendered here as the values ask (a dependency it needs is not in
    its module): a usage error (exit 2), fixed in the values, not a failure of helm."""


def _setting(values: dict[str, Any], defaults: dict[str, Any], dotted: str) -> Any:
    """A chart value by its dotted path: from `values`, else the chart's own values.yaml."""
    for source in (values, defaults):
        node: Any = source
        for part in dotted.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            return node
    return None


def disabled_dependencies(
    meta: dict[str, Any], values: dict[str, Any], defaults: dict[str, Any]
) -> None:
    """Check that every subchart the chart declares is switched off by `values`: a module holds
    the chart's source, without the subcharts its release packages (Helm fetches them into
    charts/ at `helm dependency build`). A subchart whose condition is off renders nothing
    (helm.sh/helm/v3 pkg/chartutil/dependencies.go processDependencyConditions: the first path
    of a comma-separated condition that is set decides)."""
    for dep in meta.get("dependencies") or []:
        condition = str(dep.get("condition") or "")
        first = next(
            (
                value
                for path in condition.split(",")
                if path and (value := _setting(values, defaults, path.strip())) is not None
            ),
            None,
        )
        if first is not False:
            raise ChartError(
                f"chart {meta.get('name')} needs its subchart {dep.get('name')}, which its Go "
                f"module does not ship: set {condition or 'its condition'} to false"
            )


def render_chart(chart: addons.Chart, values: dict[str, Any], kube_version: str) -> str:
    """`helm template` of the chart inside its module with `values`: every object, CRDs too."""
    source = chart_dir(chart)
    if _ships_subcharts(source):
        return _helm_template(chart, source, values, kube_version)
    with tempfile.TemporaryDirectory(prefix="chart-") as tmp:
        copy = Path(tmp) / source.name
        copy_chart(chart, values, copy)
        return _helm_template(chart, copy, values, kube_version)


def _meta(source: Path) -> dict[str, Any]:
    return yaml.safe_load((source / "Chart.yaml").read_text()) or {}


def _ships_subcharts(source: Path) -> bool:
    """A module that ships its subcharts in charts/ (the GPU Operator's NFD) renders as it is."""
    return all(
        (source / "charts" / str(d.get("name"))).is_dir()
        for d in _meta(source).get("dependencies") or []
    )


def copy_chart(chart: addons.Chart, values: dict[str, Any], dest: Path) -> None:
    """The chart inside its module, copied to `dest` as helm can render it with `values`: as it
    is when the module ships its subcharts; else without the subcharts' declarations, once every
    one is off (ChartError otherwise): helm refuses a chart whose declared subcharts are missing
    from charts/, even when their conditions are off, and without them it renders what the
    release does."""
    source = chart_dir(chart)
    shutil.copytree(source, dest, copy_function=shutil.copyfile)
    for folder in (dest, *(p for p in dest.rglob("*") if p.is_dir())):
        folder.chmod(0o755)  # the module cache's folders are read-only
    if _ships_subcharts(source):
        return
    meta = _meta(source)
    defaults = yaml.safe_load((source / "values.yaml").read_text()) or {}
    disabled_dependencies(meta, values, defaults)
    (dest / "Chart.yaml").write_text(
        yaml.safe_dump({k: v for k, v in meta.items() if k != "dependencies"})
    )


def _helm_template(
    chart: addons.Chart, folder: Path, values: dict[str, Any], kube_version: str
) -> str:
    args = [
        "template",
        chart.release,
        str(folder),
        "--namespace",
        chart.namespace,
        "--include-crds",
        "--kube-version",
        helm_kube_version(kube_version),
        "--values",
        "-",
    ]
    text = yaml.safe_dump(values, sort_keys=True).encode()
    proc = process.run("helm", args, timeout=HELM_TIMEOUT, input=text)
    return proc.stdout.decode("utf-8", "replace")


def addon_applications(docs: list[dict[str, Any]]) -> list[tuple[dict[str, Any], addons.Addon]]:
    """The add-on Applications among `docs` whose chart ships in a module (renderable here)."""
    out = []
    for doc in docs:
        key = ((doc.get("metadata") or {}).get("labels") or {}).get(labels.ADDON_LABEL)
        addon = addons.BY_KEY.get(str(key)) if doc.get("kind") == "Application" else None
        if addon is not None and addon.chart is not None and addon.chart.module:
            out.append((doc, addon))
    return out


def application_values(app: dict[str, Any]) -> dict[str, Any]:
    """The chart values an add-on Application carries (`spec.source.helm.valuesObject`)."""
    source = (app.get("spec") or {}).get("source") or {}
    values: dict[str, Any] = (source.get("helm") or {}).get("valuesObject") or {}
    return values
