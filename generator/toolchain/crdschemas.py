"""Build the offline JSON Schemas that kubeconform validates rendered manifests against.

Two builds, both driven by gotools/schemas.lock.yaml (run by `accel-gitops tools install`,
generator/toolchain/install.py):

:func:`build_crds` (OUT)
    Downloads each pinned Go module with ``go mod download -json MODULE@VERSION`` (Go module
    proxy, checked against the pinned h1 sum), runs controller-gen for the CRDs that exist only as
    Go types, and converts every CRD version's ``openAPIV3Schema`` to a strict JSON Schema, the way
    kubeconform's scripts/openapi2jsonschema.py does, written as
    ``OUT/{group}/{kind}_{version}.json`` (lowercase kind), matching the kubeconform location
    ``OUT/{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json``; the CRD objects themselves
    go to ``OUT/manifests/<crd name>.json`` for the local control plane to install.

:func:`build_k8s` (OUT)
    Copies the built-in Kubernetes schema sets that the PyPI package kubernetes-validate ships
    (``vX.Y.0-local`` and ``vX.Y.0-local-strict``) to ``OUT``, with each definition of their
    ``_definitions.json`` in a file of its own (``_definitions/<name>.json``) and every ref
    rewritten from the absolute ``/api/_definitions.json#/$defs/<name>`` (which resolves to
    https://kubernetes.io/...) to that file, relative, so that kubeconform resolves them offline
    and compiles a kind from the definitions it uses (:func:`split_k8s_definitions`).

Conversion rules (strict):
  * every object schema with ``properties`` and no ``additionalProperties`` gets
    ``additionalProperties: false`` (including the root), except objects marked
    ``x-kubernetes-preserve-unknown-fields: true``, which stay open;
  * ``x-kubernetes-int-or-string: true`` / ``format: int-or-string`` become
    ``oneOf: [{type: string}, {type: integer}]`` (other keywords such as ``pattern`` are kept);
  * ``nullable: true`` adds ``"null"`` to the type;
  * the root is closed too; it gets apiVersion, kind and metadata properties where the CRD
    omits them, and ``apiVersion``/``kind`` get an ``enum`` of the CRD's group/version
    and kind.

Only the standard library and PyYAML are used (and the toolchain's error root, so a failure is
a tool error).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from generator.toolchain.errors import ToolError

# The lock and the controller-gen module (crdgen) ship inside the package, beside the tool modules.
GOTOOLS = Path(__file__).resolve().parent / "gotools"
DEFAULT_LOCK = GOTOOLS / "schemas.lock.yaml"

JSON = dict[str, Any]


class SchemaBuildError(ToolError):
    """A pinned source is unavailable, changed, or lacks the expected CRDs: a tool error (exit 2),
    as when the Go toolchain that fetches and builds them fails."""


# --------------------------------------------------------------------------------------------------
# Lock file


@dataclass(frozen=True)
class ModuleSource:
    module: str
    version: str
    sum: str
    files: tuple[str, ...]


@dataclass(frozen=True)
class GeneratedSource:
    name: str
    gomod_dir: Path
    options: str
    packages: tuple[str, ...]


@dataclass(frozen=True)
class Lock:
    kubernetes_versions: tuple[str, ...] | None  # None = all shipped
    modules: tuple[ModuleSource, ...]
    generated: tuple[GeneratedSource, ...]
    expect: tuple[tuple[str, str], ...]  # (apiVersion, kind)


def load_lock(path: Path) -> Lock:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    k8s_versions = raw.get("kubernetes", {}).get("versions", "all")
    versions = None if k8s_versions == "all" else tuple(str(v) for v in k8s_versions)
    modules = tuple(
        ModuleSource(
            module=str(m["module"]),
            version=str(m["version"]),
            sum=str(m["sum"]),
            files=tuple(str(f) for f in m["files"]),
        )
        for m in raw.get("modules", [])
    )
    generated = tuple(
        GeneratedSource(
            name=str(g["name"]),
            gomod_dir=path.parent / str(g["gomod_dir"]),
            options=str(g["options"]),
            packages=tuple(str(p) for p in g["packages"]),
        )
        for g in raw.get("generated", [])
    )
    expect = []
    for item in raw.get("expect", []):
        api_version, kind = str(item).split()
        expect.append((api_version, kind))
    return Lock(versions, modules, generated, tuple(expect))


# --------------------------------------------------------------------------------------------------
# Sources


def go_env() -> dict[str, str]:
    """The caller's environment, with go's usual install dir appended to PATH."""
    env = dict(os.environ)
    env["PATH"] = env.get("PATH", "") + os.pathsep + "/usr/local/go/bin"
    return env


def download_module(src: ModuleSource) -> Path:
    """`go mod download` one pinned module version; return its directory in the module cache."""
    with tempfile.TemporaryDirectory() as tmp:  # outside any go.mod
        proc = subprocess.run(
            ["go", "mod", "download", "-json", f"{src.module}@{src.version}"],
            cwd=tmp,
            env=go_env(),
            capture_output=True,
            text=True,
            check=False,
        )
    try:
        info = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise SchemaBuildError(
            f"go mod download {src.module}@{src.version} failed: {proc.stderr.strip()}"
        ) from None
    if "Error" in info:
        raise SchemaBuildError(f"{src.module}@{src.version}: {info['Error']}")
    if info.get("Sum") != src.sum:
        raise SchemaBuildError(
            f"{src.module}@{src.version}: module sum {info.get('Sum')} != pinned {src.sum}"
        )
    return Path(info["Dir"])


def module_files(src: ModuleSource, mod_dir: Path) -> list[Path]:
    found: list[Path] = []
    for pattern in src.files:
        matches = sorted(p for p in mod_dir.glob(pattern) if p.is_file())
        if not matches:
            raise SchemaBuildError(f"{src.module}@{src.version}: no file matches {pattern!r}")
        found.extend(matches)
    return found


def generate_crds(gen: GeneratedSource, out_dir: Path) -> list[Path]:
    """Run the controller-gen pinned in gen.gomod_dir's go.mod (`go tool controller-gen`)."""
    argv = ["go", "tool", "controller-gen", gen.options]
    argv += [f"paths={p}" for p in gen.packages]
    argv.append(f"output:crd:dir={out_dir}")
    proc = subprocess.run(
        argv, cwd=gen.gomod_dir, env=go_env(), capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SchemaBuildError(f"controller-gen for {gen.name} failed: {proc.stderr.strip()}")
    files = sorted(out_dir.glob("*.yaml"))
    if not files:
        raise SchemaBuildError(f"controller-gen for {gen.name} wrote no CRD")
    return files


# --------------------------------------------------------------------------------------------------
# Conversion


def _construct_value(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    # Keys like "=" are tagged tag:yaml.org,2002:value by PyYAML; keep them as strings.
    if not isinstance(node, yaml.ScalarNode):
        raise yaml.constructor.ConstructorError(
            None, None, f"expected a scalar, found {type(node).__name__}", node.start_mark
        )
    return str(node.value)


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    pass


_Loader.add_constructor("tag:yaml.org,2002:value", _construct_value)


def iter_crds(path: Path) -> Iterator[JSON]:
    with path.open(encoding="utf-8") as fh:
        for doc in yaml.load_all(fh, Loader=_Loader):
            if not isinstance(doc, dict):
                continue
            items = doc.get("items") if doc.get("kind", "").endswith("List") else None
            for obj in items if isinstance(items, list) else [doc]:
                if isinstance(obj, dict) and obj.get("kind") == "CustomResourceDefinition":
                    yield obj


# Folder (inside OUT) with every CRD object as it is pinned, one JSON file per CRD.
MANIFESTS = "manifests"

INT_OR_STRING: JSON = {"oneOf": [{"type": "string"}, {"type": "integer"}]}


def to_strict(node: Any) -> Any:
    """Return a strict JSON Schema copy of an OpenAPI v3 (structural) schema node."""
    if isinstance(node, list):
        return [to_strict(x) for x in node]
    if not isinstance(node, dict):
        return node
    if node.get("x-kubernetes-int-or-string") is True or node.get("format") == "int-or-string":
        out: JSON = {
            k: to_strict(v)
            for k, v in node.items()
            if k not in ("anyOf", "oneOf", "type", "format", "x-kubernetes-int-or-string")
        }
        out.update(json.loads(json.dumps(INT_OR_STRING)))
        return out
    out = {k: to_strict(v) for k, v in node.items()}
    if out.pop("nullable", False) is True and "type" in out:
        types = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = [*types, "null"] if "null" not in types else types
    open_object = node.get("x-kubernetes-preserve-unknown-fields") is True
    if "properties" in out and "additionalProperties" not in out and not open_object:
        out["additionalProperties"] = False
    return out


def crd_version_schemas(crd: JSON) -> Iterator[tuple[str, str, str, JSON]]:
    """Yield (group, version, kind, strict schema) for each version with a schema."""
    spec = crd["spec"]
    group = str(spec["group"])
    kind = str(spec["names"]["kind"])
    for ver in spec.get("versions") or []:
        legacy = (spec.get("validation") or {}).get("openAPIV3Schema")
        raw = (ver.get("schema") or {}).get("openAPIV3Schema") or legacy
        if not raw:
            continue
        name = str(ver["name"])
        schema = to_strict(raw)
        if schema.get("additionalProperties") is False:
            # The root is closed: every object has apiVersion, kind and metadata even where the
            # CRD (e.g. Istio's) leaves them out of its schema, as the API server adds them.
            props = schema["properties"]
            props.setdefault("apiVersion", {"type": "string"})
            props.setdefault("kind", {"type": "string"})
            props.setdefault("metadata", {"type": "object"})
        props = schema.get("properties", {})
        if isinstance(props.get("apiVersion"), dict):
            props["apiVersion"]["enum"] = [f"{group}/{name}"]
        if isinstance(props.get("kind"), dict):
            props["kind"]["enum"] = [kind]
        yield group, name, kind, schema


def write_crd_schemas(files: list[Path], out: Path) -> list[str]:
    written: list[str] = []
    for path in files:
        for crd in iter_crds(path):
            # The CRD itself too: the local control plane (generator/controlplane) installs it.
            manifest = out / MANIFESTS / f"{crd['metadata']['name']}.json"
            manifest.parent.mkdir(parents=True, exist_ok=True)
            manifest.write_text(json.dumps(crd, indent=1, sort_keys=True) + "\n")
            for group, version, kind, schema in crd_version_schemas(crd):
                target = out / group / f"{kind.lower()}_{version}.json"
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n")
                written.append(f"{group}/{version} {kind}")
    return written


def _staging(out: Path) -> Path:
    """A new folder beside `out` to lay a schema set out in before it replaces `out`: its own
    for each run, so two installs at once (a test's and a command's) never write into each
    other's (a shared name left one with a set half of whose kinds the other had removed)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    staging.chmod(0o755)  # as a folder made by mkdir is: mkdtemp's own is private
    return staging


def build_crds(lock: Lock, out: Path) -> list[str]:
    staging = _staging(out)
    written: list[str] = []
    sources: list[str] = []
    for src in lock.modules:
        mod_dir = download_module(src)
        written += write_crd_schemas(module_files(src, mod_dir), staging)
        sources.append(f"{src.module}@{src.version}")
    for gen in lock.generated:
        with tempfile.TemporaryDirectory() as tmp:
            written += write_crd_schemas(generate_crds(gen, Path(tmp)), staging)
        sources.append(f"generated:{gen.name}")
    have = set(written)
    missing = [f"{a} {k}" for a, k in lock.expect if f"{a} {k}" not in have]
    if missing:
        shutil.rmtree(staging, ignore_errors=True)
        raise SchemaBuildError("no schema for expected kinds: " + ", ".join(missing))
    index = {"sources": sources, "kinds": sorted(have)}
    (staging / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)
    return sorted(have)


# --------------------------------------------------------------------------------------------------
# Built-in Kubernetes schemas


def kubernetes_validate_schema_dir() -> Path:
    try:
        import kubernetes_validate  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError as exc:
        raise SchemaBuildError(
            "kubernetes-validate is not installed in this Python (a dependency of accel-gitops)"
        ) from exc
    return Path(kubernetes_validate.__file__).resolve().parent / "kubernetes-json-schema"


ABS_DEFS_REF = "/api/_definitions.json#/$defs/"
LOCAL_DEFS_REF = "#/$defs/"
# Each definition of a set's `_definitions.json` in a file of its own, in this folder.
DEFS_DIR = "_definitions"


# A definition's name as a file name of its folder: what every shipped name is, and nothing
# that would change a relative URL (`/`, `:`, `#`, `?`, `%`).
_DEF_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _refs_to_files(node: Any, prefix: str, folder: str, names: Collection[str], where: str) -> None:
    """Rewrite every `$ref` under `node` that names a definition (`prefix` + one of `names`) to
    the definition's own file (`folder` + name + ``.json``), relative to the referring file.
    Any other ref (a part of a definition, one that is not there) is refused: kubeconform
    would skip a kind whose schema does not compile, and report it as having no schema."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                name = value.removeprefix(prefix)
                if not value.startswith(prefix) or name not in names:
                    raise SchemaBuildError(f"{where}: unexpected $ref {value!r}")
                node[key] = f"{folder}{name}.json"
            else:
                _refs_to_files(value, prefix, folder, names, where)
    elif isinstance(node, list):
        for item in node:
            _refs_to_files(item, prefix, folder, names, where)


def rewrite_k8s_schema(text: str, names: Collection[str], where: str) -> str:
    """A kind's schema whose refs name each definition's own file under DEFS_DIR (`names`: the
    set's definitions), without the `$id` (refs then resolve against the file's own location,
    offline)."""
    doc = json.loads(text)
    if isinstance(doc, dict):
        doc.pop("$id", None)
    _refs_to_files(doc, ABS_DEFS_REF, DEFS_DIR + "/", names, where)
    return json.dumps(doc, separators=(",", ":"))


def split_k8s_definitions(text: str, where: str) -> dict[str, str]:
    """`_definitions.json` as one file per definition (by definition name), each with the set's
    `$schema` and its refs to the others made file-relative. The `$schema` is needed: kubeconform
    sets `DefaultDraft(jsonschema.Draft4)` (validator.go `downloadSchema`), and jsonschema v6.0.1
    takes a referenced file's draft from its own `$schema` or that default, not from the file
    that refers to it (loader.go `getDraft`, roots.go `addRoot`).

    Why: kubeconform v0.7.0 compiles each kind with a new compiler (pkg/validator/validator.go,
    `downloadSchema`), which loads, parses and checks against the meta-schema every file the
    kind's refs reach. With one `_definitions.json` (1.2 MB at 1.34, as laid out) that is the
    whole file for every kind (about 0.1 s each); with a file per definition it is what the
    kind uses (a ConfigMap 5 definitions, a Deployment about 120). The schemas are the same
    subschemas, so the verdicts are too."""
    doc = json.loads(text)
    dialect = doc.get("$schema")
    defs = doc.get("$defs", {})
    out = {}
    for name, schema in defs.items():
        if not isinstance(schema, dict) or not _DEF_NAME.fullmatch(name):
            raise SchemaBuildError(f"{where}: unexpected definition {name!r}")
        _refs_to_files(schema, LOCAL_DEFS_REF, "", defs.keys(), f"{where}#{name}")
        if dialect is not None:
            schema = {"$schema": dialect, **schema}
        out[name] = json.dumps(schema, separators=(",", ":"))
    return out


def build_k8s(lock: Lock, out: Path) -> list[str]:
    src_root = kubernetes_validate_schema_dir()
    if lock.kubernetes_versions is None:
        versions = sorted(
            p.name.removesuffix("-local")
            for p in src_root.iterdir()
            if p.is_dir() and p.name.endswith("-local")
        )
    else:
        versions = ["v" + v.lstrip("v") for v in lock.kubernetes_versions]
    staging = _staging(out)
    for version in versions:
        for suffix in ("-local", "-local-strict"):
            src = src_root / f"{version}{suffix}"
            if not src.is_dir():
                raise SchemaBuildError(f"kubernetes-validate has no schema set {src.name}")
            dst = staging / src.name
            dst.mkdir(parents=True)
            (dst / DEFS_DIR).mkdir()
            shipped = src / "_definitions.json"
            if not shipped.is_file():
                raise SchemaBuildError(f"kubernetes-validate's {src.name} has no {shipped.name}")
            defs = split_k8s_definitions(shipped.read_text(encoding="utf-8"), str(shipped))
            for name, text in defs.items():
                (dst / DEFS_DIR / f"{name}.json").write_text(text)
            for f in src.iterdir():
                if f != shipped and fnmatch.fnmatch(f.name, "*.json"):
                    text = rewrite_k8s_schema(f.read_text(encoding="utf-8"), defs.keys(), str(f))
                    (dst / f.name).write_text(text)
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)
    return versions
