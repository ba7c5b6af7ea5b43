"""The pod fields a workload passes through as Kubernetes spells them (docs/workloads.md).

Volumes, volume mounts, env sources, image pull secrets, tolerations, affinity and topology
spread constraints are Kubernetes API objects: the values schema only says "a list of objects",
and this module checks each one against Kubernetes' own OpenAPI schema of the fleet's version
(the strict JSON Schemas kubernetes-validate ships, generated from the Kubernetes API; the same
files kubeconform reads), so a misspelt field is reported at its values line rather than by
kubeconform on the rendered object. What the schema cannot say is checked here too: a mount of a
volume the pod does not have, a volume name used twice, a toleration of another pool's taint.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import referencing
from jsonschema.exceptions import best_match

from generator.findings import did_you_mean
from generator.toolchain.crdschemas import kubernetes_validate_schema_dir
from generator.values.model import Taint
from generator.values.yamlio import YamlPath

CORE = "io.k8s.api.core.v1."
# Values key -> (Kubernetes definition, a list of them?). Keys as PodSpec and Container spell them.
K8S_FIELDS: dict[str, tuple[str, bool]] = {
    "volumes": (CORE + "Volume", True),
    "volumeMounts": (CORE + "VolumeMount", True),
    "envFrom": (CORE + "EnvFromSource", True),
    "imagePullSecrets": (CORE + "LocalObjectReference", True),
    "tolerations": (CORE + "Toleration", True),
    "topologySpreadConstraints": (CORE + "TopologySpreadConstraint", True),
    "affinity": (CORE + "Affinity", False),
}
ENV_SOURCE = CORE + "EnvVarSource"
# The volume the generator adds for `shmSize` (an emptyDir in memory at /dev/shm): container
# runtimes give a pod a 64 MiB /dev/shm, too small for PyTorch data loader workers.
SHM_VOLUME = "dshm"
SHM_PATH = "/dev/shm"


@dataclass(frozen=True)
class PodExtras:
    """What a workload adds to the pod spec the generator writes (all optional)."""

    volumes: tuple[dict[str, Any], ...] = ()
    volume_mounts: tuple[dict[str, Any], ...] = ()
    env_sources: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> valueFrom
    env_from: tuple[dict[str, Any], ...] = ()
    image_pull_secrets: tuple[dict[str, Any], ...] = ()
    service_account: str = ""
    priority_class: str = ""
    affinity: dict[str, Any] = field(default_factory=dict)
    tolerations: tuple[dict[str, Any], ...] = ()
    topology_spread: tuple[dict[str, Any], ...] = ()
    annotations: dict[str, str] = field(default_factory=dict)
    shm_size: str = ""
    capabilities: tuple[str, ...] = ()  # added to the container's, sorted


def extras(raw: dict[str, Any]) -> PodExtras:
    """A workload's pod extras from its merged values (after `problems` found none)."""
    env = raw.get("env") or {}
    return PodExtras(
        volumes=tuple(raw.get("volumes") or []),
        volume_mounts=tuple(raw.get("volumeMounts") or []),
        env_sources={
            k: dict(v["valueFrom"]) for k, v in sorted(env.items()) if isinstance(v, dict)
        },
        env_from=tuple(raw.get("envFrom") or []),
        image_pull_secrets=tuple(raw.get("imagePullSecrets") or []),
        service_account=str(raw.get("serviceAccountName") or ""),
        priority_class=str(raw.get("priorityClassName") or ""),
        affinity=dict(raw.get("affinity") or {}),
        tolerations=tuple(raw.get("tolerations") or []),
        topology_spread=tuple(raw.get("topologySpreadConstraints") or []),
        annotations=dict(sorted((raw.get("podAnnotations") or {}).items())),
        shm_size=str(raw.get("shmSize") or ""),
        capabilities=tuple(sorted(set(raw.get("capabilities") or []))),
    )


def plain_env(raw: dict[str, Any]) -> dict[str, str]:
    """The env entries given as text (the others are `valueFrom`)."""
    env = raw.get("env") or {}
    return {k: str(v) for k, v in sorted(env.items()) if not isinstance(v, dict)}


# ---- Kubernetes' own schema ------------------------------------------------------------------


@functools.cache
def schema_set(kubernetes_version: str) -> str:
    """The kubernetes-validate schema set for a fleet's version: its minor, else the newest
    shipped minor below it, else the oldest shipped (the schema check is then approximate and
    kubeconform, which refuses an unknown version, says so)."""
    root = kubernetes_validate_schema_dir()
    shipped = sorted(
        (tuple(int(x) for x in p.name[1:].split("-")[0].split(".")), p.name)
        for p in root.iterdir()
        if p.is_dir() and p.name.endswith("-local-strict")
    )
    try:
        want = tuple(int(x) for x in kubernetes_version.split(".")[:2])
    except ValueError:
        want = shipped[-1][0][:2]
    below = [name for ver, name in shipped if ver[:2] <= want]
    return below[-1] if below else shipped[0][1]


@functools.cache
def _definitions(schema_dir: str) -> referencing.Registry[Any]:
    path = kubernetes_validate_schema_dir() / schema_dir / "_definitions.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    resource: referencing.Resource[Any] = referencing.Resource.from_contents(doc)
    registry: referencing.Registry[Any] = referencing.Registry()
    return registry.with_resource("/api/_definitions.json", resource)  # type: ignore[no-any-return]


@functools.cache
def _validator(schema_dir: str, definition: str) -> jsonschema.protocols.Validator:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": f"/api/_definitions.json#/$defs/{definition}",
    }
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, registry=_definitions(schema_dir))  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Problem:
    """Something wrong in a workload's pod fields: where (relative to the workload), what, fix."""

    path: YamlPath
    message: str
    hint: str
    key: bool = False


_REQUIRED = re.compile(r"^'(.+)' is a required property$")


def _schema_problems(schema_dir: str, definition: str, value: Any, at: YamlPath) -> list[Problem]:
    name = definition.removeprefix(CORE)
    out: list[Problem] = []
    meant: set[tuple[YamlPath, str]] = set()  # (object path, field) a misspelt key stands for
    missing: list[tuple[YamlPath, str, Problem]] = []
    for error in _validator(schema_dir, definition).iter_errors(value):
        if error.context:
            error = best_match(error.context)
        path: YamlPath = (*at, *error.absolute_path)
        schema = error.schema if isinstance(error.schema, dict) else {}
        if str(error.validator) == "additionalProperties" and isinstance(error.instance, dict):
            known = sorted(schema.get("properties", {}))
            for extra in sorted(k for k in error.instance if k not in known):
                close = difflib.get_close_matches(extra, known, n=1, cutoff=0.7)
                meant.update((path, c) for c in close)
                out.append(
                    Problem(
                        (*path, extra),
                        f"{extra!r} is not a field of a Kubernetes {name} here",
                        did_you_mean(extra, known, "known fields: " + ", ".join(known)),
                        key=True,
                    )
                )
            continue
        problem = Problem(
            path,
            f"not a valid Kubernetes {name}: {error.message}",
            "spell it as the Kubernetes API does (kubectl explain pod.spec)",
        )
        if str(error.validator) == "required":
            # One error per missing field, named only in its message (jsonschema's `required`
            # validator: "'<field>' is a required property").
            named = _REQUIRED.match(str(error.message))
            missing.append((path, named.group(1) if named else "", problem))
            continue
        out.append(problem)
    # A required field reported missing because its key is misspelt: the misspelling says it.
    out += [problem for path, field_name, problem in missing if (path, field_name) not in meant]
    return out


def problems(raw: dict[str, Any], kubernetes_version: str) -> list[Problem]:
    """Every problem in a workload's pod fields, with paths relative to the workload."""
    schema_dir = schema_set(kubernetes_version)
    out: list[Problem] = []
    for key, (definition, is_list) in K8S_FIELDS.items():
        value = raw.get(key)
        if value is None:
            continue
        items: list[tuple[YamlPath, Any]] = (
            [((key, i), item) for i, item in enumerate(value)] if is_list else [((key,), value)]
        )
        for at, item in items:
            out += _schema_problems(schema_dir, definition, item, at)
    for name, value in sorted((raw.get("env") or {}).items()):
        if isinstance(value, dict):
            out += _schema_problems(
                schema_dir, ENV_SOURCE, value.get("valueFrom"), ("env", name, "valueFrom")
            )
    if out:
        return out  # the checks below read the fields as Kubernetes spells them
    return _volume_problems(raw)


def _volume_problems(raw: dict[str, Any]) -> list[Problem]:
    out: list[Problem] = []
    volumes = list(raw.get("volumes") or [])
    names: dict[str, int] = {}
    for i, vol in enumerate(volumes):
        name = str(vol.get("name"))
        if name in names:
            out.append(
                Problem(
                    ("volumes", i, "name"),
                    f"volume name {name!r} is used twice (volumes[{names[name]}] and [{i}])",
                    "give each volume its own name",
                )
            )
        names.setdefault(name, i)
        if name == SHM_VOLUME and raw.get("shmSize"):
            out.append(
                Problem(
                    ("volumes", i, "name"),
                    f"volume name {name!r} is the one shmSize adds",
                    "rename the volume, or drop shmSize and mount your own emptyDir",
                )
            )
    have = set(names) | ({SHM_VOLUME} if raw.get("shmSize") else set())
    for i, mount in enumerate(raw.get("volumeMounts") or []):
        name = str(mount.get("name"))
        if name not in have:
            out.append(
                Problem(
                    ("volumeMounts", i, "name"),
                    f"volume mount names {name!r}, which is not one of the workload's volumes",
                    did_you_mean(name, sorted(have), "add it to volumes, or fix the name"),
                )
            )
        if raw.get("shmSize") and str(mount.get("mountPath") or "").rstrip("/") == SHM_PATH:
            out.append(
                Problem(
                    ("volumeMounts", i, "mountPath"),
                    f"{SHM_PATH} is mounted twice: by shmSize and by this mount",
                    "keep one of them",
                )
            )
    return out


def host_path_volumes(raw: dict[str, Any]) -> list[tuple[int, str]]:
    """(index, path) of every hostPath volume a workload declares."""
    return [
        (i, str((vol.get("hostPath") or {}).get("path", "")))
        for i, vol in enumerate(raw.get("volumes") or [])
        if isinstance(vol, dict) and "hostPath" in vol
    ]


# ---- tolerations -----------------------------------------------------------------------------


def tolerates(toleration: dict[str, Any], taint: Taint) -> bool:
    """Whether a toleration tolerates a taint, as the scheduler decides: kubernetes v1.36.3
    staging/src/k8s.io/api/core/v1/toleration.go Toleration.ToleratesTaint (an empty effect or
    key matches any; operator "" is Equal; Lt and Gt compare integers, behind the alpha gate
    TaintTolerationComparisonOperators: taken as enabled, the cautious reading here)."""
    effect, key = toleration.get("effect") or "", toleration.get("key") or ""
    if effect and effect != taint.effect:
        return False
    if key and key != taint.key:
        return False
    op, value = toleration.get("operator") or "Equal", str(toleration.get("value") or "")
    if op == "Equal":
        return value == taint.value
    if op == "Exists":
        return True
    if op in ("Lt", "Gt") and _integer(value) and _integer(taint.value):
        a, b = int(taint.value), int(value)
        return a < b if op == "Lt" else a > b
    return False


# What strconv.ParseInt(s, 10, 64) accepts, as Lt and Gt parse both values (k8s.io/api v0.36.1
# core/v1/toleration.go compareNumericValues): an optional sign, decimal digits, within int64.
_INT64 = re.compile(r"[+-]?[0-9]+")


def _integer(text: str) -> bool:
    return _INT64.fullmatch(text) is not None and -(2**63) <= int(text) < 2**63


# ---- what the pods use from the cluster ------------------------------------------------------

# Team-namespaced objects a pod names, by the key of the team's `external` list that declares
# them. A reference marked `optional: true` is left out: the pod starts without it.
EXTERNAL_KINDS = {
    "persistentVolumeClaims": "PersistentVolumeClaim",
    "secrets": "Secret",
    "configMaps": "ConfigMap",
    "serviceAccounts": "ServiceAccount",
}


@dataclass(frozen=True)
class Reference:
    kind: str  # a key of EXTERNAL_KINDS, or "priorityClasses"
    name: str
    path: YamlPath  # relative to the workload


def references(raw: dict[str, Any]) -> list[Reference]:
    """Every object of the cluster a workload's pods name, where its values name it."""
    out: list[Reference] = []

    def add(kind: str, source: Any, key: str, at: YamlPath) -> None:
        if isinstance(source, dict) and source.get(key) and not source.get("optional"):
            out.append(Reference(kind, str(source[key]), (*at, key)))

    for i, vol in enumerate(raw.get("volumes") or []):
        at: YamlPath = ("volumes", i)
        add(
            "persistentVolumeClaims",
            vol.get("persistentVolumeClaim"),
            "claimName",
            (*at, "persistentVolumeClaim"),
        )
        add("secrets", vol.get("secret"), "secretName", (*at, "secret"))
        add("configMaps", vol.get("configMap"), "name", (*at, "configMap"))
        for j, src in enumerate((vol.get("projected") or {}).get("sources") or []):
            pj: YamlPath = (*at, "projected", "sources", j)
            add("secrets", src.get("secret"), "name", (*pj, "secret"))
            add("configMaps", src.get("configMap"), "name", (*pj, "configMap"))
    for name, value in sorted((raw.get("env") or {}).items()):
        if isinstance(value, dict):
            source = value.get("valueFrom") or {}
            at = ("env", name, "valueFrom")
            add("secrets", source.get("secretKeyRef"), "name", (*at, "secretKeyRef"))
            add("configMaps", source.get("configMapKeyRef"), "name", (*at, "configMapKeyRef"))
    for i, src in enumerate(raw.get("envFrom") or []):
        add("secrets", src.get("secretRef"), "name", ("envFrom", i, "secretRef"))
        add("configMaps", src.get("configMapRef"), "name", ("envFrom", i, "configMapRef"))
    for i, ref in enumerate(raw.get("imagePullSecrets") or []):
        add("secrets", ref, "name", ("imagePullSecrets", i))
    add("serviceAccounts", raw, "serviceAccountName", ())
    add("priorityClasses", raw, "priorityClassName", ())
    return out
