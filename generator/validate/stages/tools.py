"""The external-tool stages: kustomize build and kubeconform, promtool.

Two ways to build and validate units, with the same results:

* `kbuild`: the helper (tools/kbuild) builds every unit in one process with kustomize's own
  krusty API and validates each build with kubeconform's validator package, streaming one JSON
  line per unit. This is the default: no process start-up or schema loading per unit.
* `kustomize_build` + `kubeconform`: one pinned kustomize process per unit, then one kubeconform
  run over all outputs. The reference the helper is tested against (tests/test_kbuild.py).

promtool checks every extracted rule file of a run in a few batched processes. Results are plain
JSON-able dicts so the cache can replay them; findings are made from them later (with the values
locations of the objects they concern).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from generator import toolchain
from generator.toolchain import ToolError, ToolFailed, ToolMissing, ToolTimeout

KUSTOMIZE_TIMEOUT = 300.0
KBUILD_TIMEOUT = 1800.0
PROMTOOL_BATCH = 200  # rule files per promtool process (keeps argv short)
KUBECONFORM_TIMEOUT = 900.0
PROMTOOL_TIMEOUT = 300.0


def jobs() -> int:
    return max(2, (os.cpu_count() or 2) * 2)


def kustomize_build(
    root: Path,
    unit_paths: Sequence[str],
    workers: int,
    on_unit: Callable[[str], None] | None = None,
    stop: threading.Event | None = None,
) -> dict[str, dict[str, Any]]:
    """{unit_path: {"ok": bool, "output": text, "error": text}}, one kustomize process per
    unit, in parallel; once `stop` is set the remaining units are not built."""

    def one(path: str) -> tuple[str, dict[str, Any]]:
        if stop is not None and stop.is_set():
            return path, {"ok": False, "output": "", "error": "cancelled"}
        try:
            proc = toolchain.run(
                "kustomize", ["build", str(root / path)], timeout=KUSTOMIZE_TIMEOUT
            )
        except ToolFailed as exc:
            # cobra prints "Error: " before the message the helper reports as it is.
            error = _text(exc.stderr).strip().removeprefix("Error: ")
            result = {"ok": False, "output": "", "error": error}
        else:
            result = {"ok": True, "output": _text(proc.stdout), "error": ""}
        if on_unit is not None:
            on_unit(path)
        return path, result

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
        # libyaml's emitter: the same bytes as yaml.safe_dump, 4x faster on the 1.6 MB of rules
        # of the monitoring unit at 361 teams.
        groups = {"groups": doc.get("spec", {}).get("groups", [])}
        path.write_text(yaml.dump(groups, Dumper=yaml.CSafeDumper), encoding="utf-8")
        out[name] = path
    return out


def promtool_check(files: dict[str, Path]) -> dict[str, str]:
    """{name: problem} for each rules file promtool rejects (syntax, PromQL, lint), one promtool
    process per batch of files."""
    problems: dict[str, str] = {}
    items = sorted(files.items())
    for start in range(0, len(items), PROMTOOL_BATCH):
        problems.update(_promtool_batch(dict(items[start : start + PROMTOOL_BATCH])))
    return problems


def _promtool_batch(files: dict[str, Path]) -> dict[str, str]:
    """promtool prints `Checking FILE` on stdout, then FAILED and the errors on stderr, in file
    order (unbuffered writes): with both streams on one pipe, each file's block is its own."""
    paths = {str(p): name for name, p in files.items()}
    args = ["check", "rules", "--lint=all", "--lint-fatal", *paths]
    code, text = _run_merged("promtool", args, PROMTOOL_TIMEOUT)
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        header = line.removeprefix("Checking ")
        if line.startswith("Checking ") and header in paths:
            current = blocks.setdefault(header, [])
        elif current is not None:
            current.append(line)
    problems: dict[str, str] = {}
    for path, name in paths.items():
        lines = blocks.get(path)
        if lines is None:  # promtool stopped before this file: say so rather than pass it
            if code != 0:
                problems[name] = f"promtool exited {code} before checking it: {text.strip()}"
            continue
        if any(ln.strip().startswith("SUCCESS") for ln in lines):
            continue
        detail = [ln.strip() for ln in lines if ln.strip() and ln.strip() != "FAILED:"]
        problems[name] = "; ".join(detail) or f"promtool exited {code}"
    return problems


def _require(tool: str) -> Path:
    path = toolchain.find(tool)
    if path is None:
        spec = toolchain.TOOLS[tool]
        raise ToolMissing(tool, spec.install_hint, [str(toolchain.tools_dir() / "bin")])
    return path


def _run_merged(tool: str, args: list[str], timeout: float) -> tuple[int, str]:
    """Run a tool with stderr on the same pipe as stdout (one ordered stream)."""
    argv = [str(_require(tool)), *args]
    try:
        proc = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ToolTimeout(argv, timeout, _as_bytes(exc.stdout), b"") from None
    return proc.returncode, _text(proc.stdout)


def _as_bytes(data: bytes | str | None) -> bytes:
    if data is None:
        return b""
    return data.encode() if isinstance(data, str) else data


def kbuild_args(kubernetes_version: str, workers: int, root: Path) -> list[str]:
    """The helper's flags: the kubeconform flags `kubeconform()` passes, and the build root."""
    return [
        "-root",
        str(root),
        "-workers",
        str(workers),
        "-strict",
        "-kubernetes-version",
        toolchain.kubeconform_kubernetes_version(kubernetes_version),
        *toolchain.kubeconform_schema_args(),
    ]


def kbuild(
    root: Path,
    unit_paths: Sequence[str],
    kubernetes_version: str,
    workers: int,
    on_unit: Callable[[str], None] | None = None,
    extra: Sequence[str] = (),
    stop: threading.Event | None = None,
) -> dict[str, dict[str, Any]]:
    """Build and validate every unit with the helper. {unit: {"ok", "error", "docs", "schema",
    ...}}; `on_unit(unit)` is called as each result arrives (progress); setting `stop` kills
    the helper."""
    argv = [str(_require("kbuild")), *kbuild_args(kubernetes_version, workers, root), *extra]
    out: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, text=True
        )
        timed_out, done = threading.Event(), threading.Event()
        deadline = time.monotonic() + KBUILD_TIMEOUT

        def watch() -> None:  # kill the helper on timeout, or when the caller gives up
            while not done.wait(0.1):
                if time.monotonic() > deadline:
                    timed_out.set()
                if timed_out.is_set() or (stop is not None and stop.is_set()):
                    proc.kill()
                    return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            assert proc.stdin is not None and proc.stdout is not None
            # Written from a thread: the helper starts streaming results before it has read all.
            feeder = threading.Thread(target=_feed, args=(proc.stdin, unit_paths), daemon=True)
            feeder.start()
            for line in proc.stdout:
                res = json.loads(line)
                out[res["unit"]] = {
                    "ok": res["ok"],
                    "error": res["error"],
                    "docs": res["objects"],
                    "schema": res["schema"],
                    **({"output": res["yaml"]} if "yaml" in res else {}),
                }
                if on_unit is not None:
                    on_unit(res["unit"])
            feeder.join()
            code = proc.wait()
        finally:
            done.set()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        errors.seek(0)
        stderr = errors.read()
    if timed_out.is_set():
        raise ToolTimeout(argv, KBUILD_TIMEOUT, b"", stderr)
    if code != 0 or set(out) != set(unit_paths):
        raise ToolFailed(argv, code, b"", stderr or b"not every unit was reported")
    return out


def _feed(stdin: Any, unit_paths: Sequence[str]) -> None:
    try:
        stdin.write("".join(f"{u}\n" for u in unit_paths))
        stdin.close()
    except BrokenPipeError:
        pass  # the helper died; its exit code says why


def load_docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if isinstance(d, dict)]


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


__all__ = [
    "ToolError",
    "kbuild",
    "kubeconform",
    "kustomize_build",
    "load_docs",
    "promtool_check",
    "rule_files",
]
