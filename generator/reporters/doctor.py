"""How `doctor` prints the tools: one row each, then the schemas, then what to run."""

from __future__ import annotations

from pathlib import Path

from generator.toolchain.doctor import ToolStatus
from generator.vocab.addons import Addon


def doctor_lines(
    statuses: list[ToolStatus], k8s_versions: list[str], crds: bool, schemas: Path, install: str
) -> tuple[list[str], bool]:
    """(the lines, whether everything every command needs is there at its pin). A missing
    optional tool (the control plane, test-only tools) is said, not failed."""
    ok = True
    width = max(len(st.name) for st in statuses) + 1  # one column, whatever the longest name
    lines = []
    for st in statuses:
        if st.path is None:
            if st.optional:
                lines.append(f"{st.name:{width}} {'not built':9} build it with {st.install_hint}")
                continue
            ok = False
            lines.append(
                f"{st.name:{width}} {'MISSING':9} pinned {st.pinned or '-'}; "
                f"install: {st.install_hint}"
            )
            continue
        state = "ok" if st.ok else "MISMATCH"
        ok = ok and st.ok
        pin = f" (pinned {st.pinned})" if st.pinned and not st.ok else ""
        lines.append(
            f"{st.name:{width}} {state:9} {st.version or '?'}{pin}  in {st.found_in}  "
            f"from {st.source}"
        )
    span = k8s_versions[0] + ".." + k8s_versions[-1] if k8s_versions else "-"
    lines.append(
        f"{'schemas':{width}} {'ok' if k8s_versions else 'MISSING':9} Kubernetes {span}; CRDs "
        f"{'present' if crds else 'missing'}  {schemas}"
    )
    ok = ok and bool(k8s_versions) and crds
    if not ok:
        lines.append(f"some tools are missing or not at their pinned version: run `{install}`")
    return lines, ok


def chart_lines(addons: tuple[Addon, ...]) -> list[str]:
    """What validate can check of each add-on chart the fleet may render: rendered offline from
    the Go module that ships it, or (no module here) only its Application."""
    out = []
    for addon in addons:
        chart = addon.chart
        if chart is None:
            continue
        what = f"chart {addon.key}: {chart.name} {chart.version}"
        if chart.module:
            out.append(
                f"{what} rendered offline from {chart.module}@{chart.module_version} "
                f"(gotools/{chart.tool_module}/go.mod)"
            )
        else:
            out.append(
                f"{what}: its Go module is not available here, so validate checks the "
                "Application, not the chart's objects (docs/platform.md)"
            )
    return out
