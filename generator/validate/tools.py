"""The external-tool stages: kustomize build per unit, kubeconform, promtool.

Results are plain JSON-able dicts so the cache can replay them; findings are made from them later
(with the values locations of the objects they concern).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from .. import toolchain
from ..toolchain import ToolError, ToolFailed

KUSTOMIZE_TIMEOUT = 300.0
KUBECONFORM_TIMEOUT = 900.0
PROMTOOL_TIMEOUT = 300.0


def jobs() -> int:
    return max(2, (os.cpu_count() or 2) * 2)


def kustomize_build(
    root: Path, unit_paths: Sequence[str], workers: int
) -> dict[str, dict[str, Any]]:
    """{unit_path: {"ok": bool, "output": text, "error": text}}, built in parallel."""

    def one(path: str) -> tuple[str, dict[str, Any]]:
        try:
            proc = toolchain.run(
                "kustomize", ["build", str(root / path)], timeout=KUSTOMIZE_TIMEOUT
            )
        except ToolFailed as exc:
            return path, {"ok": False, "output": "", "error": _text(exc.stderr).strip()}
        return path, {"ok": True, "output": _text(proc.stdout), "error": ""}

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(pool.map(one, unit_paths))


def kubeconform(files: dict[str, Path], kubernetes_version: str) -> dict[str, list[dict[str, Any]]]:
    """Validate built units with -strict against the offline schemas; a kind without a schema is
    an error, never a skip. Returns {unit_path: [kubeconform result for each non-valid object]}."""
    out: dict[str, list[dict[str, Any]]] = {u: [] for u in files}
    if not files:
        return out
    by_file = {str(p): u for u, p in files.items()}
    args = [
        "-strict",
        "-summary",
        "-output",
        "json",
        "-n",
        str(jobs()),
        "-kubernetes-version",
        toolchain.kubeconform_kubernetes_version(kubernetes_version),
        *toolchain.kubeconform_schema_args(),
        *sorted(by_file),
    ]
    proc = toolchain.run("kubeconform", args, timeout=KUBECONFORM_TIMEOUT, check=False)
    try:
        report = json.loads(proc.stdout or b"{}")
    except ValueError:
        raise ToolFailed(
            ["kubeconform", *args], proc.returncode, proc.stdout, proc.stderr
        ) from None
    if proc.returncode not in (0, 1):
        raise ToolFailed(["kubeconform", *args], proc.returncode, proc.stdout, proc.stderr)
    for res in report.get("resources", []):
        unit = by_file.get(res.get("filename", ""))
        if unit is not None and res.get("status") not in ("statusValid", "statusSkipped"):
            out[unit].append(
                {
                    k: res.get(k)
                    for k in ("kind", "name", "version", "status", "msg", "validationErrors")
                }
            )
    return out


def rule_files(unit_path: str, docs: list[dict[str, Any]], folder: Path) -> dict[str, Path]:
    """Write the rule groups of each PrometheusRule as a plain rules file promtool can read."""
    out: dict[str, Path] = {}
    for doc in docs:
        if doc.get("kind") != "PrometheusRule":
            continue
        name = f"{doc['metadata'].get('namespace', '')}/{doc['metadata']['name']}"
        path = folder / (unit_path.replace("/", "__") + "__" + name.replace("/", "__") + ".yaml")
        path.write_text(
            yaml.safe_dump({"groups": doc.get("spec", {}).get("groups", [])}), encoding="utf-8"
        )
        out[name] = path
    return out


def promtool_check(files: dict[str, Path]) -> dict[str, str]:
    """{name: problem} for each rules file promtool rejects (syntax, PromQL, lint)."""
    problems: dict[str, str] = {}
    for name, path in sorted(files.items()):
        proc = toolchain.run(
            "promtool",
            ["check", "rules", "--lint=all", "--lint-fatal", str(path)],
            timeout=PROMTOOL_TIMEOUT,
            check=False,
        )
        if proc.returncode != 0:
            text = (_text(proc.stdout) + _text(proc.stderr)).strip()
            lines = [
                ln.strip()
                for ln in text.splitlines()
                if ln.strip() and not ln.startswith("Checking ")
            ]
            problems[name] = "; ".join(lines) or f"promtool exited {proc.returncode}"
    return problems


def load_docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if isinstance(d, dict)]


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


__all__ = [
    "ToolError",
    "kubeconform",
    "kustomize_build",
    "load_docs",
    "promtool_check",
    "rule_files",
]
