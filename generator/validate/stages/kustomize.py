"""The build stage: `kustomize build` of every unit, and kubeconform -strict on what it gives.

Two engines, with the same results:

* `kbuild` (the default): the helper (gotools/kbuild) builds every unit in one process with
  kustomize's own krusty API and validates each build with kubeconform's validator package,
  streaming one JSON line per unit: no process start-up or schema loading per unit.
* `processes`: one pinned kustomize process per unit (generator/kustomize.py, the build show and
  diff use), then one kubeconform run over all outputs. The reference the helper is tested
  against, byte for byte (tests).

Codes: KUS001 (a unit does not build), K8S001 (an object does not match its schema), K8S002 (a
kind has no schema: never skipped), KVER002 (a built-in kind at an apiVersion that the cluster's
Kubernetes minor does not serve, though another minor's schemas have it: removed, or not yet
served; one for all the objects under one kubernetesVersion line: `unserved_once`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

from generator import kustomize as kustomize_build
from generator.findings import CodeInfo, Finding, Location
from generator.toolchain import process, registry, schemas
from generator.toolchain.errors import ToolFailed, ToolTimeout
from generator.validate.stages import Batch, UnitView, tool_salt
from generator.values import clusters

KBUILD_TIMEOUT = 1800.0
KUBECONFORM_TIMEOUT = 900.0
ENGINES = ("kbuild", "processes")

K8S001 = CodeInfo(
    "K8S001",
    "manifests (kubeconform)",
    "error",
    "an object does not match its Kubernetes or CRD schema (kubeconform -strict)",
)
K8S002 = CodeInfo(
    "K8S002",
    "manifests (kubeconform)",
    "error",
    "an object's kind has no schema (a kind without one is an error, never skipped)",
)
KVER002 = CodeInfo(
    "KVER002",
    "manifests (kubeconform)",
    "error",
    "the cluster's Kubernetes minor does not serve a rendered built-in kind at its apiVersion",
)


def cpus() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


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
        str(kustomize_build.jobs()),
        "-kubernetes-version",
        schemas.kubeconform_kubernetes_version(kubernetes_version),
        *schemas.kubeconform_schema_args(),
        *sorted(by_file),
    ]
    proc = process.run("kubeconform", args, timeout=KUBECONFORM_TIMEOUT, check=False)
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


def kbuild_args(kubernetes_version: str, workers: int, root: Path) -> list[str]:
    """The helper's flags: the kubeconform flags `kubeconform()` passes, and the build root."""
    return [
        "-root",
        str(root),
        "-workers",
        str(workers),
        "-strict",
        "-kubernetes-version",
        schemas.kubeconform_kubernetes_version(kubernetes_version),
        *schemas.kubeconform_schema_args(),
    ]


def kbuild(
    root: Path,
    unit_paths: Sequence[str],
    kubernetes_version: str,
    workers: int,
    on_unit: Callable[[str], None] | None = None,
    extra: Sequence[str] = (),
    stop: threading.Event | None = None,
    known: Collection[str] = (),
) -> dict[str, dict[str, Any]]:
    """Build and validate every unit with the helper. {unit: {"ok", "error", "docs", "schema",
    "valid", ...}}; `on_unit(unit)` is called as each result arrives (progress); setting `stop`
    kills the helper. `known`: documents (SHA-256 of their bytes, hex) a run with the same
    tools and schemas found valid, not validated again; "valid" lists those of each unit."""
    args = [*kbuild_args(kubernetes_version, workers, root), *extra]
    with tempfile.TemporaryDirectory(prefix="accel-kbuild-") as scratch:
        if known:
            listed = Path(scratch) / "valid-docs"
            listed.write_text("".join(f"{d}\n" for d in sorted(known)), encoding="ascii")
            args += ["-valid-docs", str(listed)]
        return _kbuild(args, unit_paths, on_unit, stop)


def _kbuild(
    args: list[str],
    unit_paths: Sequence[str],
    on_unit: Callable[[str], None] | None,
    stop: threading.Event | None,
) -> dict[str, dict[str, Any]]:
    argv = [str(registry.require("kbuild")), *args]
    out: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryFile() as errors:
        proc = process.popen("kbuild", args, stderr=errors)
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
            for line in proc.stdout:  # one JSON document per line (bytes: json reads UTF-8)
                res = json.loads(line)
                out[res["unit"]] = {
                    "ok": res["ok"],
                    "error": res["error"],
                    "docs": res["objects"],
                    "schema": res["schema"],
                    # a helper older than -valid-docs reports none (tools not rebuilt yet)
                    "valid": res.get("valid", []),
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
        stdin.write("".join(f"{u}\n" for u in unit_paths).encode())
        stdin.close()
    except BrokenPipeError:
        pass  # the helper died; its exit code says why


def with_processes(
    root: Path,
    paths: list[str],
    kube_version: str,
    workers: int,
    on_unit: Callable[[str], None] | None,
    stop: threading.Event | None,
) -> dict[str, dict[str, Any]]:
    """The reference engine: a kustomize process per unit, then one kubeconform run."""
    built = kustomize_build.kustomize(root, paths, workers, on_unit, stop)
    with tempfile.TemporaryDirectory(prefix="accel-validate-") as tmp:
        files: dict[str, Path] = {}
        for path in paths:
            b = built[path]
            if b["ok"]:
                file = Path(tmp) / (path.replace("/", "__") + ".yaml")
                file.write_text(b["output"], encoding="utf-8")
                files[path] = file
                b["docs"] = kustomize_build.objects(b["output"])
        schema = kubeconform(files, kube_version)
    for path in paths:
        built[path]["schema"] = schema.get(path, [])
        built[path].setdefault("docs", [])
    return built


class BuildStage:
    name = "build"
    order = 0
    tools = ("kustomize", "kubeconform", "kbuild")
    codes = (kustomize_build.KUS001, K8S001, K8S002, KVER002)

    def salt(self, engine: str) -> str:
        parts = [tool_salt("kustomize"), tool_salt("kubeconform"), schemas.schemas_salt()]
        if engine == "kbuild":
            parts.append(tool_salt("kbuild", stamped=True))
        return "\n".join(parts)

    def run(self, batch: Batch) -> dict[str, Any]:
        if batch.engine == "kbuild":
            built = kbuild(
                batch.root,
                batch.paths,
                batch.kube_version,
                batch.jobs or cpus(),
                batch.on_unit,
                extra=["-serial"] if batch.serial else [],
                stop=batch.stop,
                known=batch.known,
            )
        else:
            built = with_processes(
                batch.root,
                batch.paths,
                batch.kube_version,
                batch.jobs or kustomize_build.jobs(),
                batch.on_unit,
                batch.stop,
            )
        batch.built = {
            path: {
                "ok": b["ok"],
                "error": b["error"],
                "docs": b["docs"] if b["ok"] else [],
                "schema": b["schema"] if b["ok"] else [],
                # what the kbuild helper found valid, for the unit's next run (run.known_valid)
                **({"valid": b["valid"]} if b["ok"] and "valid" in b else {}),
            }
            for path, b in built.items()
        }
        return dict(batch.built)

    def findings(self, unit: UnitView, result: Any) -> list[Finding]:
        u = unit.unit
        if not result["ok"]:
            fallback = Location(f"{u.path}/kustomization.yaml")
            return [kustomize_build.build_failed(u, result["error"], fallback)]
        out: list[Finding] = []
        for item in result["schema"]:
            loc, what = unit.find(item.get("kind"), item.get("name"))
            errors = item.get("validationErrors") or []
            if item.get("status") == "statusError" and "could not find schema" in (
                item.get("msg") or ""
            ):
                unserved = _unserved(unit, what, str(item.get("version")), str(item.get("kind")))
                out.append(
                    unserved
                    if unserved is not None
                    else Finding(
                        K8S002.code,
                        f"{what}: no schema for {item.get('version')} {item.get('kind')}",
                        loc,
                        hint="every kind must have a schema: add its CRD to accel-gitops's "
                        "generator/toolchain/gotools/schemas.lock.yaml and run "
                        f"`{unit.program.command('tools install')}`",
                    )
                )
            elif errors:
                for err in errors:
                    said = str(err.get("msg"))
                    plain = _plain_duration(item, str(err.get("path") or ""), result["docs"])
                    out.append(
                        Finding(
                            K8S001.code,
                            f"{what}: {plain or said}",
                            loc,
                            "$" + str(err.get("path") or "").replace("/", "."),
                            _schema_hint(item),
                            # kubeconform's own words, the pattern's text with them, for a log
                            detail=said if plain else "",
                        )
                    )
            else:
                out.append(
                    Finding(K8S001.code, f"{what}: {item.get('msg')}", loc, hint=_schema_hint(item))
                )
        return [f.at_unit(u.path) for f in out]


# A duration's pattern in a CRD's schema: 0, or a number and a unit for each unit used, the
# units in one order (the Prometheus Operator's Duration type: prometheus-operator v0.85.0
# pkg/apis/monitoring/v1/types.go, its kubebuilder Pattern, which its CRDs' schemas carry). The
# shape of the pattern is recognised; its units are read from it, never listed here.
_UNIT = r"\(\(\[0-9\]\+\)([a-z]+)\)\?"
_DURATION_PATTERN = re.compile(rf"\^\(0\|(?:{_UNIT})+\)\$")


def _plain_duration(item: dict[str, Any], path: str, docs: list[dict[str, Any]]) -> str:
    """A value the schema's duration pattern refuses, said without the pattern: what was
    written and the form the pattern takes, read from the schema kubeconform validated the
    object against. "" when the field's schema has no such pattern, or the value matches it
    (then kubeconform's message is about something else)."""
    keys = [k for k in path.split("/") if k]
    node: Any = schemas.crd_schema(str(item.get("version")), str(item.get("kind")))
    for key in keys:
        if not isinstance(node, dict):
            return ""
        node = node.get("items") if key.isdigit() else (node.get("properties") or {}).get(key)
    pattern = node.get("pattern") if isinstance(node, dict) else None
    if not keys or not isinstance(pattern, str) or not _DURATION_PATTERN.fullmatch(pattern):
        return ""
    for doc in docs:
        if doc.get("kind") != item.get("kind") or doc["metadata"].get("name") != item.get("name"):
            continue
        value: Any = doc
        for key in keys:
            if isinstance(value, list) and key.isdigit() and int(key) < len(value):
                value = value[int(key)]
            else:
                value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, str) and not re.search(pattern, value):
            units = ", ".join(re.findall(_UNIT, pattern))
            return (
                f"{keys[-1]!r} is {value!r}, not a duration: 0, or whole numbers each "
                f"followed by its unit, the units in the order {units}, without spaces"
            )
    return ""


def _schema_hint(item: dict[str, Any]) -> str:
    """What to do about an object its schema refuses: the API server refuses it too, so Argo CD
    cannot sync the unit until the value is changed where it is written."""
    return (
        f"the API server refuses a {item.get('version')} {item.get('kind')} its schema refuses "
        "(Argo CD's sync of the unit fails): change that field where it is written, in the "
        "values or the committed file named here"
    )


def _minors(versions: list[str]) -> str:
    """['1.34.0', '1.35.0'] -> '1.34 to 1.35'; minors that are not a run: each, listed."""
    minors = [tuple(int(p) for p in v.split(".")[:2]) for v in versions]
    text = [f"{a}.{b}" for a, b in minors]
    run = all(m[1] == minors[0][1] + i and m[0] == minors[0][0] for i, m in enumerate(minors))
    return f"{text[0]} to {text[-1]}" if run and len(text) > 1 else ", ".join(text)


def _unserved(unit: UnitView, what: str, api_version: str, kind: str) -> Finding | None:
    """KVER002 when the kind kubeconform found no schema for is a built-in one that other
    Kubernetes minors serve at this apiVersion: the cluster's minor does not (removed, or not
    yet served), so the fix is the cluster's kubernetesVersion, not a CRD. None otherwise.
    One object's: `unserved_once` makes one finding of every object it holds for."""
    view = unit.view
    served = schemas.k8s_versions_serving(api_version, kind)
    if view is None or not served:
        return None
    loc, path = clusters.version_location(view)
    minor = ".".join(view.fleet.kubernetes_version.removeprefix("v").split(".")[:2])
    reason = (
        f"Kubernetes {minor} (this cluster's kubernetesVersion) does not serve {api_version} "
        f"{kind}; the pinned Kubernetes schemas have it in {_minors(served)}"
    )
    return _of_objects(
        Finding(
            KVER002.code,
            "",
            loc,
            path,
            f"set kubernetesVersion to a minor that serves {api_version} {kind} "
            f"({_minors(served)}), or drop what renders it from this cluster's values",
        ),
        reason,
        [(unit.unit.path, what)],
    )


# The units a KVER002 of several objects names before "and N more".
SHOWN_UNITS = 3


def _of_objects(base: Finding, reason: str, objects: list[tuple[str, str]]) -> Finding:
    """KVER002 `base` for `objects` ((unit, object as messages name it), sorted): one object as
    it is named, several counted with their units. The detail keeps the reason and every object
    as JSON, for `unserved_once` to join a shard's finding to another's (validate --merge)."""
    units = sorted({u for u, _ in objects})
    if len(objects) == 1:
        subject = objects[0][1]
    else:
        shown = units[:SHOWN_UNITS]
        named = ", ".join(shown[:-1]) + f" and {shown[-1]}" if len(shown) > 1 else shown[0]
        if len(units) > SHOWN_UNITS:
            named = f"{', '.join(shown)} and {len(units) - SHOWN_UNITS} more"
        subject = f"{len(objects)} objects in unit{'s' if len(units) > 1 else ''} {named}"
    detail = json.dumps({"reason": reason, "objects": objects}, sort_keys=True)
    return dataclasses.replace(
        base,
        message=f"{subject}: {reason}",
        detail=detail,
        unit=units[0] if len(units) == 1 else "",
    )


def unserved_once(findings: Iterable[Finding]) -> list[Finding]:
    """`findings` with one KVER002 per cluster version (its kubernetesVersion line), apiVersion
    and kind, for all the objects of every unit it holds for: they have one cause and one fix.
    Each unit's objects are found by the unit (its verdicts are cached by unit, and a shard has
    some units only); this joins them, in a run and in a merge of shards alike. The others keep
    their order; the joined ones follow."""
    out: list[Finding] = []
    groups: dict[tuple[object, ...], tuple[Finding, str, set[tuple[str, str]]]] = {}
    for f in findings:
        if f.code != KVER002.code:
            out.append(f)
            continue
        data = json.loads(f.detail)
        key = (f.location, f.path, f.hint, f.severity, f.envs, data["reason"])
        _, reason, objects = groups.setdefault(key, (f, data["reason"], set()))
        objects.update((str(u), str(w)) for u, w in data["objects"])
    for first, reason, objects in groups.values():
        out.append(_of_objects(first, reason, sorted(objects)))
    return out


STAGE = BuildStage()
