"""The pieces JSON Schemas of values are built from: object, string and array helpers, the
patterns several kinds share, and the Kubernetes-native and source shapes the catalog copies.

values/schema.py assembles the schema of each kind from these and from the allocation modes'
fragments (values/allocation/); the modes build their fragments from these too, which is why
the pieces live below both rather than in values/schema.py.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]

DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
LABEL_KEY = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$"
# An absolute path on a node: no '.' or '..' segment, no empty segment, no trailing '/'.
NODE_PATH = r"^(?!.*/\.{1,2}(/|$))(/[A-Za-z0-9._@+-]+)+$"


def obj(props: dict[str, Any], required: tuple[str, ...] = (), **extra: Any) -> Schema:
    out: Schema = {"type": "object", "additionalProperties": False, "properties": props}
    if required:
        out["required"] = list(required)
    out.update(extra)
    return out


def string(pattern: str | None = None, **extra: Any) -> Schema:
    out: Schema = {"type": "string", **extra}
    if pattern:
        out["pattern"] = pattern
    return out


def array(items: Schema, **extra: Any) -> Schema:
    return {"type": "array", "items": items, **extra}


# "<owner>/<repo> <path> <version>[: what it says]": where an upstream fact was read, pinned.
SOURCE = r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+ \S+ \S+(: .+)?$"
SOURCES = array(
    string(SOURCE),
    minItems=1,
    description="upstream sources of these facts: '<owner/repo> <path> <version>[: what]'",
)

# ---- Kubernetes-native shapes (a subset of core/v1, same field names), so a plugin or exporter
# manifest can be copied from upstream. kubeconform checks the rendered objects in full.
QUANTITY = {"type": ["string", "integer", "number"]}
ENV_VAR = obj(
    {
        "name": string(r"^[A-Za-z_][A-Za-z0-9_.-]*$"),
        "value": string(),
        "valueFrom": obj(
            {
                "fieldRef": obj(
                    {"fieldPath": string(minLength=1), "apiVersion": string()}, ("fieldPath",)
                ),
                "resourceFieldRef": obj(
                    {"resource": string(), "containerName": string(), "divisor": QUANTITY},
                    ("resource",),
                ),
                "configMapKeyRef": obj(
                    {"name": string(), "key": string(), "optional": {"type": "boolean"}},
                    ("key",),
                ),
                "secretKeyRef": obj(
                    {"name": string(), "key": string(), "optional": {"type": "boolean"}},
                    ("key",),
                ),
            }
        ),
    },
    ("name",),
    description="a Kubernetes EnvVar",
)
SECURITY_CONTEXT = obj(
    {
        "privileged": {"type": "boolean"},
        "allowPrivilegeEscalation": {"type": "boolean"},
        "readOnlyRootFilesystem": {"type": "boolean"},
        "runAsNonRoot": {"type": "boolean"},
        "runAsUser": {"type": "integer", "minimum": 0},
        "runAsGroup": {"type": "integer", "minimum": 0},
        "capabilities": obj({"add": array(string()), "drop": array(string())}),
        "seccompProfile": obj(
            {
                "type": {"enum": ["RuntimeDefault", "Localhost", "Unconfined"]},
                "localhostProfile": string(),
            },
            ("type",),
        ),
    },
    description="a Kubernetes container SecurityContext",
)
