"""JSON Schemas (draft 2020-12) of every kind of values file: the single source of truth.

`render.py schema` writes them to schemas/ for editors (the example values files point at them);
the loader validates with the same dicts. Unknown keys are errors everywhere.
"""

from __future__ import annotations

import functools
import json
import unicodedata
from typing import Any

import regress

from generator.values.allocation import registry
from generator.values.schemakit import (
    DNS_SUBDOMAIN,
    ENV_VAR,
    LABEL_KEY,
    LABEL_VALUE,
    NODE_PATH,
    QUANTITY,
    SECURITY_CONTEXT,
    SOURCES,
    Schema,
)

# Short names for the helpers this module calls some 250 times.
from generator.values.schemakit import array as _list
from generator.values.schemakit import obj as _obj
from generator.values.schemakit import string as _str
from generator.values.security import HOST_CAPABILITIES
from generator.vocab import addons

DIALECT = "https://json-schema.org/draft/2020-12/schema"
BASE_ID = "https://accel-gitops.example/schemas/"

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
RESOURCE_NAME = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
# An image reference or tag: no white space, control or bidi/format characters anywhere.
IMAGE = r"^[^\s\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]+$"
# A folder inside the repository: relative, no '.' or '..' segment, no empty segment.
REPO_PATH = r"^(?!(.*/)?\.{1,2}(/|$))[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$"
# An HTTP path: starts with '/', printable ASCII without spaces.
URL_PATH = r"^/[!-~]*$"

# A resource a node offers besides cpu and memory, named as core/v1 names it (kubernetes/api
# core/v1/types.go v0.36.3: ResourceEphemeralStorage "ephemeral-storage",
# ResourceHugePagesPrefix "hugepages-") or as an extended resource, <domain>/<name>.
NODE_RESOURCE = (
    r"^(ephemeral-storage|hugepages-[0-9]+(Ki|Mi|Gi)|"
    r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$"
)

# What a value that does not match a pattern should look like, for the finding's hint.
PATTERN_HINTS = {
    DNS_LABEL: "lower-case letters, digits and '-', at most 63 characters",
    IMAGE: "an image reference without spaces or control characters",
    REPO_PATH: "a relative folder inside the repository: no leading '/', no '.' or '..' part",
    NODE_PATH: "an absolute path on the node, without '.' or '..' parts",
    NODE_RESOURCE: "ephemeral-storage, hugepages-<size> or an extended resource <domain>/<name>, "
    "e.g. rdma/ib",
}


# ---- patterns with the semantics JSON Schema gives them ------------------------------------
# JSON Schema patterns are ECMA-262 regular expressions (JSON Schema 2020-12 core, "Regular
# Expressions"). Python's `re` differs where it matters here: `$` also matches before a
# trailing newline, so "ml-team\n" would pass ^[a-z-]+$. Every schema pattern is therefore run
# with regress, an ECMA-262 engine (Python bindings to the Rust `regress` crate), by the loader's
# validator and by every other check that reuses a pattern from this module.


@functools.cache
def _gateway_block() -> dict[str, Any]:
    """A Gateway API route's parents and hostnames: the same shape in a service's in-cluster
    `gateway` and in its `crossCluster.gateway`."""
    return _obj(
        {
            "parentRefs": _list(
                _obj(
                    {
                        "name": _str(DNS_LABEL),
                        "namespace": _str(DNS_LABEL),
                        "sectionName": _str(DNS_LABEL),
                    },
                    ("name",),
                )
            ),
            "hostnames": _list(_str(minLength=1)),
        }
    )


def ecma(pattern: str) -> regress.Regex:
    return regress.Regex(pattern)


def matches(pattern: str, text: str) -> bool:
    """Whether `pattern` matches somewhere in `text`, as a JSON Schema validator must decide."""
    return ecma(pattern).find(text) is not None


def control_characters(text: str) -> list[str]:
    """The control and format characters in `text` (newlines, NUL, bidi overrides), as U+XXXX."""
    return [f"U+{ord(c):04X}" for c in text if unicodedata.category(c) in ("Cc", "Cf")]


def _addon(provided: list[str], **more: Schema) -> Schema:
    return _obj(
        {
            "provided": {
                "enum": provided,
                "description": "fleet: rendered as an Argo CD Application of the upstream chart; "
                "site: the cluster already runs it",
            },
            **more,
        },
        ("provided",),
    )


def _selector() -> Schema:
    """A metav1.LabelSelector: matchLabels and matchExpressions."""
    return _obj(
        {
            "matchLabels": _labels(),
            "matchExpressions": _list(
                _obj(
                    {
                        "key": _str(minLength=1),
                        "operator": {"enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                        "values": _list(_str()),
                    },
                    ("key", "operator"),
                )
            ),
        }
    )


def _labels() -> Schema:
    return {
        "type": "object",
        "propertyNames": {"pattern": LABEL_KEY, "maxLength": 317},
        "additionalProperties": _str(LABEL_VALUE, maxLength=63),
    }


TAINT = _obj(
    {
        "key": _str(LABEL_KEY),
        "value": _str(LABEL_VALUE, maxLength=63),
        "effect": {"enum": ["NoSchedule", "PreferNoSchedule", "NoExecute"]},
    },
    ("key", "effect"),
)

METRIC = _obj(
    {
        "name": _str(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$", description="metric name the exporter emits"),
        "unit": {"enum": ["percent", "ratio", "bytes", "KiB", "MiB", "GiB", "KB", "MB", "GB"]},
    },
    ("name", "unit"),
)

# A device health or error series of an exporter, and how a bad device shows in it.
HEALTH_METRIC = _obj(
    {
        "metric": _str(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$", description="metric name the exporter emits"),
        "kind": {
            "enum": ["flag", "nonzero", "increase", "newvalue"],
            "description": "flag: 1 healthy, 0 not; nonzero: any value above 0 is a fault; "
            "increase: a count whose rise is a fault; newvalue: the last fault's code, a fault "
            "when it changes to a value above 0",
        },
        "what": _str(minLength=1, description="the fault, in words, for the alert's summary"),
        "source": _str(minLength=1, description="where upstream says so (repository path version)"),
    },
    ("metric", "kind", "what", "source"),
)

# ---- Kubernetes-native shapes (a subset of core/v1, same field names), so a plugin or exporter
# manifest can be copied from upstream. kubeconform checks the rendered objects in full. (EnvVar
# is in schemakit: the MPS daemon's catalog facts use it too.)
KEY_TO_PATH = _list(
    _obj({"key": _str(), "path": _str(), "mode": {"type": "integer"}}, ("key", "path"))
)
HOST_PATH_TYPES = [
    "",
    "DirectoryOrCreate",
    "Directory",
    "FileOrCreate",
    "File",
    "Socket",
    "CharDevice",
    "BlockDevice",
]
VOLUME = _obj(
    {
        "name": _str(DNS_LABEL),
        "hostPath": _obj({"path": _str(NODE_PATH), "type": {"enum": HOST_PATH_TYPES}}, ("path",)),
        "configMap": _obj(
            {
                "name": _str(DNS_LABEL),
                "items": KEY_TO_PATH,
                "defaultMode": {"type": "integer"},
                "optional": {"type": "boolean"},
            }
        ),
        "secret": _obj(
            {
                "secretName": _str(),
                "items": KEY_TO_PATH,
                "defaultMode": {"type": "integer"},
                "optional": {"type": "boolean"},
            }
        ),
        "emptyDir": _obj({"medium": {"enum": ["", "Memory"]}, "sizeLimit": QUANTITY}),
    },
    ("name",),
    description="a Kubernetes Volume (hostPath, configMap, secret or emptyDir)",
    minProperties=2,
    maxProperties=2,
)
VOLUME_MOUNT = _obj(
    {
        "name": _str(DNS_LABEL),
        "mountPath": _str("^/"),
        "readOnly": {"type": "boolean"},
        "subPath": _str(),
        "mountPropagation": {"enum": ["None", "HostToContainer", "Bidirectional"]},
    },
    ("name", "mountPath"),
    description="a Kubernetes VolumeMount",
)
RESOURCES = _obj(
    {
        k: {"type": "object", "propertyNames": {"minLength": 1}, "additionalProperties": QUANTITY}
        for k in ("requests", "limits")
    },
    description="Kubernetes ResourceRequirements (cpu, memory)",
)
PORT_REF = {"type": ["integer", "string"]}
PROBE = _obj(
    {
        "httpGet": _obj(
            {"path": _str(), "port": PORT_REF, "scheme": {"enum": ["HTTP", "HTTPS"]}}, ("port",)
        ),
        "tcpSocket": _obj({"port": PORT_REF}, ("port",)),
        "exec": _obj({"command": _list(_str())}, ("command",)),
        **{
            k: {"type": "integer", "minimum": 0}
            for k in (
                "initialDelaySeconds",
                "periodSeconds",
                "timeoutSeconds",
                "failureThreshold",
                "successThreshold",
            )
        },
    },
    description="a Kubernetes Probe",
)

POLICY_RULE = _obj(
    {
        "apiGroups": _list(_str()),
        "resources": _list(_str()),
        "verbs": _list(_str()),
    },
    ("resources", "verbs"),
)

# What a node agent (device plugin, exporter) runs: one container, as upstream ships it.
AGENT_PROPS: dict[str, Any] = {
    "image": _str(IMAGE, description="image repository, without the tag"),
    "version": _str(IMAGE, description="image tag; `<tag>@sha256:<digest>` pins it by digest"),
    "command": _list(_str()),
    "args": _list(_str()),
    "env": _list(ENV_VAR, description="Kubernetes EnvVar list (value or valueFrom)"),
    "volumes": _list(VOLUME),
    "volumeMounts": _list(VOLUME_MOUNT),
    "securityContext": SECURITY_CONTEXT,
    "resources": RESOURCES,
    "livenessProbe": PROBE,
    "readinessProbe": PROBE,
    "hostPID": {"type": "boolean"},
    "hostIPC": {"type": "boolean"},
    "hostNetwork": {"type": "boolean"},
    "rbac": _list(POLICY_RULE, description="cluster RBAC rules; empty means no account"),
    "priorityClassName": _str(),
    "sources": SOURCES,
}

# What the catalog knows of a device plugin's config file (docs/allocation.md): where the plugin
# reads it, its format version, and the suffix of a shared resource's name. Catalog data, cited.
PLUGIN_CONFIG = _obj(
    {
        "env": _str(
            r"^[A-Za-z_][A-Za-z0-9_]*$",
            description="the environment variable naming the file's path",
        ),
        "version": _str(minLength=1, description="the file's `version`"),
        "sharedSuffix": _str(
            minLength=1, description="appended to resourceName when devices are shared"
        ),
        "sharing": _list(
            {"enum": registry.plugin_file_modes()},
            uniqueItems=True,
            description="the sharing strategies the plugin's file accepts",
        ),
        **registry.plugin_file_props(),
        "sources": SOURCES,
    },
    ("env", "version", "sharedSuffix", "sharing", "sources"),
)

PROVIDED = {
    "enum": list(addons.PROVIDERS),
    "description": "who provides it: fleet (rendered here, the default), operator (the "
    "vendor's operator, by the catalog's operator contract) or site (installed another way, by "
    "the contract given here); docs/brownfield.md",
}

DEVICE_PLUGIN = _obj(
    {
        "provided": PROVIDED,
        "name": _str(DNS_LABEL),
        "namespace": _str(DNS_LABEL),
        **AGENT_PROPS,
        "configFile": PLUGIN_CONFIG,
    },
    description="the device plugin DaemonSet (docs/vendors.md)",
)

# A vendor whose devices are shared between pods (docs/allocation.md): one mode, each with its
# settings' schema in its own module of values/allocation/.
SHARING = _obj(
    registry.sharing_settings(),
    description="share every device of the vendor's pools between pods; one strategy",
    minProperties=1,
    maxProperties=1,
)

EXPORTER = _obj(
    {
        "name": _str(DNS_LABEL),
        "provided": PROVIDED,
        "render": {
            "type": "boolean",
            "description": "render the exporter DaemonSet (default true); false: scrape one "
            "installed another way, selected by podLabels",
        },
        "port": {"type": "integer", "minimum": 1, "maximum": 65535},
        "portName": _str(
            r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
            maxLength=15,
            description="the container port name of an exporter installed another way",
        ),
        "path": _str(URL_PATH),
        "namespace": _str(DNS_LABEL, description="namespace of an exporter installed another way"),
        "podLabels": _labels(),
        "daemonSet": _obj(AGENT_PROPS, description="the exporter DaemonSet rendered by default"),
        "labels": _obj(
            {
                k: _str(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
                for k in ("node", "device", "partition", "model", "pod", "namespace")
            },
            description="exporter label that carries each unified label",
        ),
        "metrics": _obj(
            {k: METRIC for k in ("utilization", "memoryUsed", "memoryTotal", "memoryFree")}
            | {
                "memoryReserved": {
                    **METRIC,
                    "description": "added to used + free where the exporter ships no total",
                }
            }
        ),
        "health": _list(
            HEALTH_METRIC,
            description="the exporter's device health and error series an alert watches "
            "(docs/alerts.md); none: the exporter gives none",
        ),
        "sources": SOURCES,
    }
)

HOST_PATH = _obj(
    {"name": _str(DNS_LABEL), "path": _str(NODE_PATH), "readOnly": {"type": "boolean"}},
    ("name", "path"),
)

PCI_ID = r"^[0-9a-f]{4}$"
PCI_MODEL = _obj(
    {
        "classes": _list(
            _str(r"^[0-9a-f]{2}([0-9a-f]{2})?$"),
            minItems=1,
            description="PCI class as NFD reports it (4 hex digits), or its base class (2)",
        ),
        "devices": _list(_str(PCI_ID), minItems=1, description="PCI device IDs of the model"),
        "source": _str(minLength=1, description="where the IDs come from"),
    },
    ("classes", "devices", "source"),
)

# A node's shape as its kubelet reports it in the Node's capacity (docs/simulation.md, "The
# site's hardware"): quantities of cpu, memory and the other resources (NODE_RESOURCE).
NODE_QUANTITY = {
    "type": ["string", "integer"],
    "minimum": 0,
    "pattern": r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$",
}
NODE_SHAPE = _obj(
    {
        "cpu": {**NODE_QUANTITY, "description": "CPUs the node's kubelet reports, e.g. 192"},
        "memory": {**NODE_QUANTITY, "description": "memory the kubelet reports, e.g. 900Gi"},
        "resources": {
            "type": "object",
            "propertyNames": {"pattern": NODE_RESOURCE},
            "additionalProperties": NODE_QUANTITY,
            "description": "other resources the node offers, e.g. rdma/ib: 8, hugepages-1Gi: 64Gi "
            "(not the vendor's accelerators: their plugin's count comes from devicesPerNode)",
        },
    },
    description="the node's capacity as its kubelet reports it; simulate registers nodes so",
)

POOL = _obj(
    {
        "name": _str(DNS_LABEL, description="pool name, unique within the vendor"),
        "model": _str(
            LABEL_VALUE,
            minLength=1,
            maxLength=63,
            description="model label value, e.g. A100, 910b, Z100L",
        ),
        "devicesPerNode": {"type": "integer", "minimum": 1, "maximum": 1024},
        "nodes": _list(_str(), uniqueItems=True, description="node names in the pool"),
        "nodeCount": {
            "type": "integer",
            "minimum": 0,
            "description": "node count when nodes are not listed by name",
        },
        "pciDevices": _list(
            _str(PCI_ID),
            minItems=1,
            description="PCI device IDs the pool's NFD rule matches; default: the model's in "
            "pciModels",
        ),
        "labels": _labels(),
        "taints": _list(TAINT, description="replaces the vendor's taints for this pool"),
        "serverType": _str(
            DNS_LABEL,
            description="the PCI inventory of the pool's servers: values/inventories/<serverType>"
            ".yaml, else a built-in one; default: the built-in one of the vendor's model",
        ),
        "node": {
            **NODE_SHAPE,
            "description": "the pool's node shape, over its server type's (docs/simulation.md)",
        },
    },
    ("name", "model", "devicesPerNode"),
)

# Device topologies of a vendor's nodes (docs/scheduling.md): the pool label that names a node's
# topology, and per value the devices one pod may request there, as upstream's allocator decides.
TOPOLOGY = _obj(
    {
        "label": _str(LABEL_KEY, description="pool label whose value names the node's topology"),
        "readBy": _obj(
            {
                "name": _str(description="what reads that label on the nodes itself"),
                "source": _str(description="upstream repository, path and version"),
            },
            ("name", "source"),
            description="NODE003 names it when nfd-master would prefix the label",
        ),
        "shapes": {
            "type": "object",
            "propertyNames": {"pattern": LABEL_VALUE, "maxLength": 63},
            "additionalProperties": _obj(
                {
                    "podDevices": _list(
                        {"type": "integer", "minimum": 1},
                        minItems=1,
                        uniqueItems=True,
                        description="device counts one pod may request on such a node",
                    ),
                    "description": _str(),
                    "source": _str(description="upstream repository, path and version"),
                },
                ("podDevices",),
            ),
        },
    },
    ("label", "shapes"),
)

# The contract of a vendor's operator (catalog `operator`, docs/brownfield.md): for each node
# component it can provide, the node label it reads to run that operand on a node and the labels
# of the operand's pods. Catalog data, cited; a vendor file may override it for its own install.
OPERATOR_PART = _obj(
    {
        "deployLabel": _str(
            LABEL_KEY,
            description="node label the operator reads to run this operand on a node; the "
            'fleet sets it to "false" on the nodes where another provider has the component',
        ),
        "daemonSet": _str(DNS_LABEL, description="the operand's DaemonSet"),
        "configLabel": _str(
            LABEL_KEY,
            description="node label whose value names the operand's config (a key of the "
            "operator's config ConfigMap)",
        ),
        "podLabels": _labels(),
        "port": {"type": "integer", "minimum": 1, "maximum": 65535},
        "portName": _str(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", maxLength=15),
        "sources": SOURCES,
    },
    ("deployLabel", "daemonSet", "podLabels", "sources"),
)
OPERATOR = _obj(
    {
        "addon": {
            "enum": [a.key for a in addons.ADDONS if a.operator],
            "description": "the platform add-on that is this vendor's operator",
        },
        "runtimeClass": _str(DNS_LABEL, description="the RuntimeClass the operator creates"),
        "tolerations": _list(
            {"type": "object"},
            description="what the operator's chart gives every operand by default (Kubernetes "
            "Tolerations); the fleet adds its taints' to these",
        ),
        "devicePlugin": OPERATOR_PART,
        "exporter": OPERATOR_PART,
        "sources": SOURCES,
    },
    ("addon", "sources"),
    description="what the vendor's operator provides, and how its operands are found",
)

# The properties a vendor file and the built-in catalog share.
VENDOR_PROPS: dict[str, Any] = {
    "catalog": _str(DNS_LABEL, description="catalog entry to start from; default: file name"),
    "enabled": {"type": "boolean"},
    "displayName": _str(),
    "resourceName": _str(RESOURCE_NAME, maxLength=253),
    "pciVendor": _str(PCI_ID),
    "pciModels": {
        "type": "object",
        "description": "accelerator models with their PCI class and device IDs (NFD matching)",
        "propertyNames": {"pattern": LABEL_VALUE, "minLength": 1},
        "additionalProperties": PCI_MODEL,
    },
    "selectorLabel": _str(LABEL_KEY, description="node label key whose value picks the vendor"),
    "modelLabel": _str(LABEL_KEY),
    "nodeLabels": _labels(),
    "taints": _list(TAINT),
    "costWeight": {"type": "number", "minimum": 0},
    "costWeights": {
        "type": "object",
        "description": "cost of one device per model of the vendor's pools, where a model is "
        "priced apart from costWeight (docs/monitoring.md)",
        "propertyNames": {"pattern": LABEL_VALUE, "minLength": 1},
        "additionalProperties": {"type": "number", "minimum": 0},
    },
    "sources": SOURCES,
    "devicePlugin": DEVICE_PLUGIN,
    "sharing": SHARING,
    "allocation": {
        "enum": registry.allocation_words(),
        "description": "how the vendor's devices reach pods: its device plugin's extended "
        "resource (default), or ResourceClaims through its DRA driver (docs/allocation.md)",
    },
    **registry.catalog_props(),
    "exporter": EXPORTER,
    "operator": OPERATOR,
    "pools": _list(POOL),
    "workloadMounts": _list(HOST_PATH, description="host paths every workload pod mounts"),
    "binpackWeight": {
        "type": "integer",
        "minimum": 1,
        "maximum": 100,
        "description": "how strongly schedulers pack this vendor's devices (docs/scheduling.md)",
    },
    "topology": TOPOLOGY,
    "runtime": _obj(
        {
            "handler": _str(
                DNS_LABEL,
                description="the vendor's container runtime as containerd's configuration "
                "names it (a RuntimeClass's handler)",
            ),
            "source": _str(),
        },
        ("handler",),
    ),
    "runtimeClass": _str(
        DNS_LABEL,
        description="the vendor's runtime is not the node's default: render this RuntimeClass "
        "(handler: runtime.handler) and make every pod of the vendor name it",
    ),
}

# ---- workloads (docs/workloads.md): maps keyed by name, so an environment overrides one key.
# Nothing is `required` inside them: environment partials reuse these schemas as they are, and
# generator/workloads/ reports what a resolved workload lacks, with its file and line.
VENDOR_MAP_INT = {
    "type": "object",
    "propertyNames": {"pattern": DNS_LABEL},
    "additionalProperties": {"type": "integer", "minimum": 0},
}
IMAGES = {
    "type": "object",
    "description": "image per vendor (vendor file name), declared once per workload",
    "propertyNames": {"pattern": DNS_LABEL},
    "additionalProperties": _str(IMAGE, minLength=1),
}
CONTAINER_RESOURCES = _obj(
    {
        k: {
            "type": "object",
            "additionalProperties": {"type": ["string", "integer", "number"]},
        }
        for k in ("requests", "limits")
    },
    description="extra container resources (cpu, memory); accelerators come from vendor/devices",
)
# A DNS subdomain (RFC 1123): a service account's or a priority class's name.


def _k8s(kind: str, description: str, *, many: bool = True) -> Schema:
    """A field that is a Kubernetes API object (or a list of them) as Kubernetes spells it: only
    its shape here; generator/workloads/podspec.py checks it against Kubernetes' own schema of
    the fleet's version, at its values line."""
    text = f"{description} (Kubernetes {kind}, checked against the fleet's Kubernetes version)"
    if many:
        return _list({"type": "object"}, description=text)
    return {"type": "object", "description": text}


# A Linux capability as Kubernetes' Capability spells it (k8s.io/api v0.36.3 core/v1 types.go:
# "POSIX capabilities type"), without the CAP_ prefix Pod Security's lists do not have.
CAPABILITY_PATTERN = r"^[A-Z][A-Z0-9_]*$"
CAPABILITY = _str(CAPABILITY_PATTERN)
PATTERN_HINTS[CAPABILITY_PATTERN] = (
    "a Linux capability as Kubernetes spells it: capitals without CAP_, e.g. IPC_LOCK"
)

WORKLOAD_COMMON: dict[str, Any] = {
    "enabled": {"type": "boolean"},
    "namespace": _str(DNS_LABEL, description="one of the team's namespaces; default: the first"),
    "cluster": _str(
        DNS_LABEL,
        description="the cluster it runs in, in an environment that declares clusters; default: "
        "the one cluster with pools of its vendors and models (docs/multi-cluster.md)",
    ),
    "images": IMAGES,
    "command": _list(_str()),
    "args": _list(_str()),
    "env": {
        "type": "object",
        "description": "environment variables by name: a text value, or {valueFrom: ...} as "
        "Kubernetes spells an EnvVarSource (a Secret's key, a field of the pod)",
        "additionalProperties": {
            "anyOf": [_str(), _obj({"valueFrom": {"type": "object"}}, ("valueFrom",))]
        },
        "propertyNames": {"pattern": r"^[A-Za-z_][A-Za-z0-9_]*$"},
    },
    "envFrom": _k8s("EnvFromSource", "whole ConfigMaps or Secrets as environment variables"),
    "resources": CONTAINER_RESOURCES,
    "nodeSelector": _labels(),
    "vendorMounts": {
        "type": "boolean",
        "description": "mount the vendor's workloadMounts (host paths); default true",
    },
    "volumes": _k8s("Volume", "pod volumes: persistentVolumeClaim, configMap, secret, emptyDir"),
    "volumeMounts": _k8s("VolumeMount", "mounts of the workload's container"),
    "capabilities": _list(
        CAPABILITY,
        uniqueItems=True,
        description="Linux capabilities the workload's container adds (securityContext."
        "capabilities.add), e.g. IPC_LOCK for RDMA; each granted by one of the team's "
        "securityProfiles (SEC007)",
    ),
    "shmSize": {
        **QUANTITY,
        "description": "size of /dev/shm (an emptyDir in memory, counted in the container's "
        "memory), e.g. 16Gi; the container runtime's default is 64 MiB",
    },
    "imagePullSecrets": _k8s("LocalObjectReference", "Secrets to pull the images with"),
    "serviceAccountName": _str(DNS_SUBDOMAIN, maxLength=253),
    "priorityClassName": _str(DNS_SUBDOMAIN, maxLength=253),
    "affinity": _k8s(
        "Affinity",
        "node and pod (anti-)affinity, combined with the pool's own (never replacing it)",
        many=False,
    ),
    "tolerations": _k8s(
        "Toleration", "tolerations beside the pool's own; never of another pool's taints"
    ),
    "topologySpreadConstraints": _k8s("TopologySpreadConstraint", "how pods spread over nodes"),
    "patch": _obj(
        {
            "strategicMerge": {
                "type": "object",
                "description": "a strategic merge patch of the workload's object (spec: ...), "
                "as kubectl and kustomize apply it",
            },
            "json6902": _list(
                _obj(
                    {
                        "op": {"enum": ["add", "remove", "replace", "move", "copy", "test"]},
                        "path": _str("^/"),
                        "from": _str("^/"),
                        "value": {},
                    },
                    ("op", "path"),
                ),
                minItems=1,
                description="an RFC 6902 JSON patch of the workload's object",
            ),
        },
        description="the escape hatch: one patch applied by kustomize after the generator's "
        "fields (a service's: to each track's Deployment); it may not change what the "
        "generator owns (PATCH001)",
        minProperties=1,
        maxProperties=1,
    ),
    "podAnnotations": {
        "type": "object",
        "description": "annotations on the pods (not on the workload object)",
        "propertyNames": {"pattern": LABEL_KEY, "maxLength": 317},
        "additionalProperties": _str(),
    },
}
# Fields of a job (not of a service): they end a run. batch/v1 JobSpec spells them so.
JOB_LIFETIME: dict[str, Any] = {
    "ttlSecondsAfterFinished": {
        "type": "integer",
        "minimum": 0,
        "description": "delete the finished job (and its pods) after this many seconds",
    },
    "activeDeadlineSeconds": {
        "type": "integer",
        "minimum": 1,
        "description": "fail the job when it has run this long",
    },
}
FALLBACK_MODEL = _str(
    LABEL_VALUE,
    minLength=1,
    description="a pool model of the same vendor the pods accept when `model`'s pools are full "
    "(model becomes a preference)",
)
JOB_TASK = _obj(
    {
        "vendor": _str(DNS_LABEL),
        "devices": {"type": "integer", "minimum": 0, "description": "devices per pod"},
        "replicas": {"type": "integer", "minimum": 1},
        "model": _str(LABEL_VALUE, minLength=1, description="pool model to run on"),
        "fallbackModel": FALLBACK_MODEL,
        "image": _str(IMAGE, minLength=1, description="default: the job's images[vendor]"),
        "command": _list(_str()),
        "args": _list(_str()),
    }
)
# A Volcano Job's spec.networkTopology: volcano.sh/apis v1.14.0 pkg/apis/batch/v1alpha1/job.go
# NetworkTopologySpec (mode enum hard|soft, highestTierAllowed minimum 0, highestTierName a DNS
# subdomain of at most 253 characters). Which combinations Volcano honours is checked on the
# merged values by SCH008 (an override may set one key and the team file the other).
NETWORK_TOPOLOGY = _obj(
    {
        "mode": {
            "enum": ["hard", "soft"],
            "description": "hard: the job's pods stay within one HyperNode of at most the highest "
            "tier, or wait; soft: as close as possible. Default hard",
        },
        "highestTierAllowed": {
            "type": "integer",
            "minimum": 0,
            "description": "the highest HyperNode tier the job may span (hard mode)",
        },
        "highestTierName": _str(
            r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
            maxLength=253,
            description="the highest tier by its name in the HyperNode tiers (instead of "
            "highestTierAllowed)",
        ),
    },
    description="Volcano Job (kind: volcano) only: network-topology-aware scheduling over "
    "Volcano HyperNodes, rendered as spec.networkTopology; needs scheduling.backend: volcano, "
    "which enables the scheduler's network-topology-aware plugin (docs/scheduling.md)",
)
# A JobSet's success and failure policies as sigs.k8s.io/jobset v0.11.1
# api/jobset/v1alpha2/jobset_types.go spells them (SuccessPolicy, FailurePolicy,
# FailurePolicyRule and their kubebuilder enums); names of replicated jobs are the job's tasks.
JOBSET_SUCCESS = _obj(
    {
        "operator": {"enum": ["All", "Any"]},
        "targetReplicatedJobs": _list(_str(DNS_LABEL), description="task names; default all"),
    },
    ("operator",),
    description="kind: jobset: when the JobSet succeeds (All or Any of the target tasks' Jobs)",
)
JOBSET_FAILURE = _obj(
    {
        "maxRestarts": {"type": "integer", "minimum": 0},
        "restartStrategy": {"enum": ["Recreate", "BlockingRecreate"]},
        "rules": _list(
            _obj(
                {
                    "name": _str(DNS_LABEL),
                    "action": {
                        "enum": ["FailJobSet", "RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts"]
                    },
                    "onJobFailureReasons": _list(_str()),
                    "onJobFailureMessagePatterns": _list(_str()),
                    "targetReplicatedJobs": _list(_str(DNS_LABEL)),
                },
                ("name", "action"),
            )
        ),
    },
    description="kind: jobset: how often the whole JobSet restarts when a Job fails",
)
# The ClusterTrainingRuntimes a `kind: trainjob` may name: those Kubeflow Trainer's chart installs
# whose trainer step is one replicated job, "node" (github.com/kubeflow/trainer/v2 v2.2.0
# charts/kubeflow-trainer/templates/runtimes/{torch,jax,xgboost}-distributed.yaml);
# builders/scheduling.py TRAINER_RUNTIMES switches them on in the chart.
TRAINER_RUNTIMES = ("torch-distributed", "jax-distributed", "xgboost-distributed")
JOB = _obj(
    {
        **WORKLOAD_COMMON,
        "kind": {
            "enum": ["job", "volcano", "jobset", "trainjob"],
            "description": "batch/v1 Job, Volcano Job, JobSet (a replicated Job per task), or "
            "Kubeflow Trainer TrainJob",
        },
        "runtime": {
            "enum": list(TRAINER_RUNTIMES),
            "description": "kind: trainjob: the ClusterTrainingRuntime it runs on (installed by "
            "the fleet's Kubeflow Trainer); default torch-distributed",
        },
        "numNodes": {
            "type": "integer",
            "minimum": 1,
            "description": "kind: trainjob: training nodes (pods), each with `devices` devices",
        },
        "numProcPerNode": {
            "type": "integer",
            "minimum": 1,
            "description": "kind: trainjob: training processes per node; default: the runtime's",
        },
        "vendor": _str(DNS_LABEL, description="batch/v1 Job: the vendor it runs on"),
        "devices": {"type": "integer", "minimum": 0, "description": "devices per pod"},
        "model": _str(LABEL_VALUE, minLength=1, description="pool model to run on"),
        "fallbackModel": FALLBACK_MODEL,
        "parallelism": {"type": "integer", "minimum": 1},
        "completions": {"type": "integer", "minimum": 1},
        "backoffLimit": {"type": "integer", "minimum": 0},
        **JOB_LIFETIME,
        "minAvailable": {"type": "integer", "minimum": 1, "description": "Volcano gang size"},
        "networkTopology": NETWORK_TOPOLOGY,
        "successPolicy": JOBSET_SUCCESS,
        "failurePolicy": JOBSET_FAILURE,
        "tasks": {
            "type": "object",
            "description": "Volcano tasks, or JobSet replicated jobs, by name, each on its own "
            "vendor",
            "propertyNames": {"pattern": DNS_LABEL},
            "additionalProperties": JOB_TASK,
        },
    }
)
PHASE_PATTERN = r"^(validate|dual-run|shift-([1-9]|[1-9][0-9])|primary-new|fallback)$"
PHASE = _str(
    PHASE_PATTERN,
    description="validate, dual-run, shift-N (1..99, percent to the new track), primary-new, "
    "fallback",
)
# Patterns that spell a fixed set of values: every value, so a typo gets "did you mean".
CHOICES: dict[str, tuple[str, ...]] = {
    PHASE_PATTERN: (
        "validate",
        "dual-run",
        *(f"shift-{n}" for n in range(1, 100)),
        "primary-new",
        "fallback",
    )
}
TRACK = _obj(
    {
        "image": _str(IMAGE, minLength=1, description="default: the service's images[vendor]"),
        "devicesPerReplica": {"type": "integer", "minimum": 0},
        "replicas": {"type": "integer", "minimum": 0, "description": "full-size replicas"},
        "model": _str(LABEL_VALUE, minLength=1),
        "fallbackModel": FALLBACK_MODEL,
        "minAvailable": {
            "type": "integer",
            "minimum": 0,
            "description": "PodDisruptionBudget minAvailable; default: maxUnavailable 1",
        },
        "groupSize": {
            "type": "integer",
            "minimum": 1,
            "description": "pods per replica for multi-host inference: above 1, the track is a "
            "LeaderWorkerSet of groups of this many pods (a leader and its workers), each pod "
            "with devicesPerReplica devices; default 1 (a Deployment)",
        },
        "cluster": _str(
            DNS_LABEL,
            description="the cluster the track runs in, in an environment that declares "
            "clusters; default: the one cluster with pools of its vendor and model. Tracks in "
            "different clusters need crossCluster (docs/multi-cluster.md)",
        ),
    }
)
SERVICE = _obj(
    {
        **WORKLOAD_COMMON,
        "readinessProbe": {
            **PROBE,
            "description": "the serving container's readiness probe; default: TCP on its port",
        },
        "livenessProbe": {
            **PROBE,
            "description": "the serving container's liveness probe; default: TCP on its port "
            "after 120 s",
        },
        "port": {"type": "integer", "minimum": 1, "maximum": 65535},
        "containerPort": {"type": "integer", "minimum": 1, "maximum": 65535},
        "tracks": {
            "type": "object",
            "description": "one track per vendor (vendor file name)",
            "propertyNames": {"pattern": DNS_LABEL},
            "additionalProperties": TRACK,
        },
        "migration": _obj(
            {"from": _str(DNS_LABEL), "to": _str(DNS_LABEL)},
            description="the old and the new track",
        ),
        "phase": PHASE,
        "fallbackReplicas": {"type": "integer", "minimum": 1},
        "replicas": {**VENDOR_MAP_INT, "description": "explicit replicas per track"},
        "weights": {
            **VENDOR_MAP_INT,
            "description": "explicit traffic weights per track (percent, sum 100)",
        },
        "routing": {"enum": ["service", "gateway", "istio"]},
        "replicasFollowWeights": {
            "type": "boolean",
            "description": "routing: service only: give the tracks that carry traffic replicas "
            "in proportion to the phase's weights (traffic follows ready pods); `plan` shows "
            "them. Required in production for a phase that splits traffic (MIG006)",
        },
        "gateway": _gateway_block(),
        "istio": _obj({"hosts": _list(_str(minLength=1)), "gateways": _list(_str(minLength=1))}),
        "crossCluster": _obj(
            {
                "routing": {
                    "enum": ["gateway", "external"],
                    "description": "gateway: an HTTPRoute on the ingress cluster whose backends "
                    "are the tracks' Multi-Cluster Services ServiceImports; external: the "
                    "weights written to traffic/<env>.json for a global load balancer",
                },
                "ingressCluster": _str(
                    DNS_LABEL,
                    description="routing: gateway: the cluster whose Gateway routes; default: "
                    "the cluster of migration.from",
                ),
                "gateway": _gateway_block(),
                "hostname": _str(
                    minLength=1,
                    description="routing: external: the name the global load balancer serves",
                ),
            },
            ("routing",),
            description="how traffic is split when the tracks run in different clusters of an "
            "environment (used only then; docs/multi-cluster.md)",
        ),
    }
)

TEAM_PROPS: dict[str, Any] = {
    "enabled": {"type": "boolean"},
    "namespaces": _list(
        _str(DNS_LABEL), minItems=1, uniqueItems=True, description="default: the team name"
    ),
    "owners": _list(_str(minLength=1), uniqueItems=True),
    "podSecurity": {"enum": ["baseline", "restricted"]},
    "securityProfiles": _list(
        _str(DNS_LABEL),
        uniqueItems=True,
        description="security profiles of fleet.yaml granted to the team, by name (SEC008): "
        "the capabilities its workloads may add",
    ),
    "quota": {
        "type": "object",
        "description": "devices per vendor (vendor file name), per namespace; devices per "
        "model of the vendor's pools (docs/values.md); where a vendor has pools in several "
        "clusters, devices per cluster (docs/multi-cluster.md)",
        "propertyNames": {"pattern": DNS_LABEL},
        "additionalProperties": {
            "anyOf": [
                {"type": "integer", "minimum": 0},
                {
                    "type": "object",
                    "description": "devices per model of the vendor's pools, or per cluster",
                    # A cluster name is a DNS label, which is a label value too; a model is
                    # the pools' `model`, a label value.
                    "propertyNames": {"pattern": LABEL_VALUE, "minLength": 1},
                    "additionalProperties": {"type": "integer", "minimum": 0},
                    "minProperties": 1,
                },
            ]
        },
    },
    "borrowing": {
        "type": "object",
        "description": "devices per vendor the team may borrow from the fleet above its quota, "
        "team-wide (Volcano and Kueue backends; docs/scheduling.md)",
        "propertyNames": {"pattern": DNS_LABEL},
        "additionalProperties": {"type": "integer", "minimum": 0},
    },
    "external": _obj(
        {
            kind: _list(
                _str(DNS_SUBDOMAIN, maxLength=253),
                uniqueItems=True,
                description=f"{what} the team creates in its namespaces outside the fleet "
                "(preflight checks they exist)",
            )
            for kind, what in (
                ("persistentVolumeClaims", "PersistentVolumeClaims (datasets, checkpoints)"),
                ("secrets", "Secrets (pull secrets, tokens)"),
                ("configMaps", "ConfigMaps"),
                ("serviceAccounts", "ServiceAccounts"),
            )
        },
        description="objects the team's workloads use that the fleet does not render",
    ),
    "jobs": {
        "type": "object",
        "description": "training jobs by name (docs/workloads.md)",
        "propertyNames": {"pattern": DNS_LABEL},
        "additionalProperties": JOB,
    },
    "services": {
        "type": "object",
        "description": "inference services by name, one track per vendor (docs/workloads.md)",
        "propertyNames": {"pattern": DNS_LABEL},
        "additionalProperties": SERVICE,
    },
}

FLEET_PROPS: dict[str, Any] = {
    "name": _str(DNS_LABEL),
    "kubernetesVersion": _str(
        r"^1\.[0-9]+(\.[0-9]+)?$", description="target Kubernetes version, e.g. '1.33' (quote it)"
    ),
    "environments": _list(_str(DNS_LABEL), minItems=1, uniqueItems=True),
    "teamPodAnnotations": _list(
        _str(
            r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(\*|[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$"
        ),
        uniqueItems=True,
        description="annotation keys teams may set on their pods (podAnnotations); "
        "'example.com/*' allows every key of that prefix. Default: none (SEC006)",
    ),
    "securityProfiles": {
        "type": "object",
        "description": "named sets of Linux capabilities a team may be granted (its "
        "securityProfiles), reviewed by the platform team; a capability outside Pod Security "
        "baseline's list puts the team's namespaces under the fleet's admission policy, which "
        "keeps baseline's other checks (docs/security.md)",
        "propertyNames": {"pattern": DNS_LABEL},
        "additionalProperties": _obj(
            {
                "capabilities": _list(
                    {
                        **CAPABILITY,
                        "not": {"enum": sorted(HOST_CAPABILITIES)},
                        "description": "a capability that stays inside the container: never "
                        + ", ".join(sorted(HOST_CAPABILITIES))
                        + ", which reach the node (SEC003)",
                    },
                    minItems=1,
                    uniqueItems=True,
                    description="capabilities the profile grants",
                ),
                "description": _str(minLength=1, description="why the profile exists"),
            },
            ("capabilities",),
        ),
    },
    "productionEnvironments": _list(
        _str(DNS_LABEL),
        uniqueItems=True,
        description="environments that run production: every image there is pinned by digest "
        "(SEC005)",
    ),
    "git": _obj(
        {
            "repoURL": _str(minLength=1),
            "targetRevision": _str(minLength=1),
            "path": _str(
                REPO_PATH, description="folder of the rendered output inside the repository"
            ),
        },
        ("repoURL", "targetRevision"),
    ),
    "argocd": _obj(
        {
            "namespace": _str(DNS_LABEL),
            "project": _str(DNS_LABEL),
            "destinationServer": _str(minLength=1),
            "automatedSync": {"type": "boolean"},
            "instance": {
                **_str(DNS_LABEL),
                "description": "the Argo CD that syncs this environment, by a name of your "
                "choice: environments that name the same one share it, and must not render "
                "AppProjects or Applications of one name (docs/argocd.md); default: each "
                "environment its own",
            },
            "version": {
                "type": "string",
                "pattern": r"^v\d+\.\d+\.\d+$",
                "description": "the Argo CD version the site runs (e.g. v3.2.6): preflight "
                "compares it with the live one; simulate runs v3.2.6 and says how the two differ "
                "(docs/argocd.md)",
            },
        }
    ),
    "nodeConfig": _obj({"method": {"enum": ["nfd", "node-patch"]}}),
    "capacity": _obj(
        {
            "allowOvercommit": {
                "type": "boolean",
                "description": "quotas may add up to any multiple of capacity (a warning); "
                "prefer overcommitRatio, which bounds it",
            },
            "overcommitRatio": {
                "type": "number",
                "minimum": 1,
                "description": "quotas may add up to this multiple of a vendor's capacity in a "
                "cluster (a warning above capacity, an error above the ratio)",
            },
        }
    ),
    "platform": _obj(
        {
            "volcano": _addon(["fleet", "site"]),
            "kueue": _addon(["fleet", "site"]),
            "nfd": _addon(["fleet", "site"]),
            "jobset": _addon(["fleet", "site"]),
            "lws": _addon(["fleet", "site"]),
            "trainer": _addon(["fleet", "site"]),
            "gpuOperator": _addon(
                ["fleet", "site"],
                tolerations=_list(
                    {"type": "object"},
                    description="provided: site: the tolerations the site's install gives the "
                    "Operator's operands (its chart's daemonsets.tolerations; default: the "
                    "chart's own), as simulate models them (docs/brownfield.md)",
                ),
            ),
            "nvidiaDraDriver": _addon(["fleet", "site"]),
            "gatewayAPI": _addon(["site"]),
            "istio": _addon(["site"]),
            "mcs": _addon(["site"]),
        },
        description="cluster add-ons the fleet's objects need: rendered by the fleet as an "
        "Argo CD Application of the upstream chart (fleet) or already on the cluster (site); "
        "docs/platform.md",
    ),
    "mirrors": _obj(
        {
            "registries": {
                "type": "object",
                "description": "image registry (or a path in one) -> the registry path that "
                "mirrors it, e.g. registry.k8s.io: mirror.example.cn/k8s; applied to every image "
                "of the add-ons' charts, the vendors' node agents and the fleet's kube-scheduler, "
                "and to the add-on charts in OCI registries (MIR001)",
                "additionalProperties": _str(minLength=1),
            },
            "charts": {
                "type": "object",
                "description": "chart repository of an add-on (its URL, or its OCI registry "
                "path) -> the repository Argo CD installs the chart from instead (MIR002)",
                "additionalProperties": _str(minLength=1),
            },
        },
        description="mirrors of the registries and chart repositories the fleet installs from, "
        'for clusters that cannot reach them (docs/values.md, "Mirrors")',
    ),
    "scheduling": _obj(
        {
            "backend": {"enum": ["quota", "volcano", "kueue"]},
            "cohort": _str(DNS_LABEL, description="Kueue cohort of the team ClusterQueues"),
            "priorityClasses": {
                "type": "object",
                "description": "PriorityClasses the fleet renders, by name; a workload's "
                "priorityClassName names one of them (docs/workloads.md)",
                "propertyNames": {"pattern": DNS_SUBDOMAIN, "maxLength": 253},
                "additionalProperties": _obj(
                    {
                        # scheduling.k8s.io/v1 PriorityClass: value is an int32; values above
                        # one billion are the system classes' (kubernetes v1.36.3
                        # pkg/apis/scheduling/types.go HighestUserDefinablePriority).
                        "value": {"type": "integer", "minimum": -2147483648, "maximum": 10**9},
                        "preemptionPolicy": {"enum": ["PreemptLowerPriority", "Never"]},
                        "description": _str(),
                    },
                    ("value",),
                ),
            },
            "volcano": _obj(
                {
                    "namespace": _str(DNS_LABEL, description="default volcano-system"),
                    "configMap": _str(
                        DNS_LABEL,
                        description="scheduler ConfigMap; default volcano-scheduler-configmap",
                    ),
                    "queuePolicy": {
                        "enum": ["capacity", "proportion"],
                        "description": "capacity (default): deserved = quota, borrow up to "
                        "capability; proportion: deserved by weight",
                    },
                    "binpackWeight": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "binpack.weight, the binpack plugin's weight; default 10",
                    },
                },
                description="Volcano scheduler configuration (backend volcano)",
            ),
            "kubeScheduler": _obj(
                {
                    "packing": {
                        "type": "boolean",
                        "description": "render a kube-scheduler profile that packs "
                        "(NodeResourcesFit MostAllocated); default false",
                    },
                    "schedulerName": _str(
                        DNS_LABEL,
                        description="the profile's name, set on the team's pods when it is not "
                        "default-scheduler",
                    ),
                    "namespace": _str(
                        DNS_LABEL, description="of its ConfigMap; default kube-system"
                    ),
                    "kubeconfig": _str(
                        minLength=1,
                        description="clientConnection.kubeconfig of the profile (runs: "
                        "control-plane only; required there)",
                    ),
                    "runs": {
                        "enum": ["fleet", "control-plane"],
                        "description": "fleet (default): a second kube-scheduler the fleet "
                        "renders; control-plane: the cluster's own, started with the profile",
                    },
                    "image": _str(
                        minLength=1, description="default registry.k8s.io/kube-scheduler"
                    ),
                    "version": _str(
                        minLength=1,
                        description="image tag; default v<kubernetesVersion> (.0 for a minor)",
                    ),
                },
                description="default scheduler (backends quota and kueue)",
            ),
        }
    ),
    "monitoring": _obj(
        {
            "namespace": _str(DNS_LABEL, description="where PodMonitors, rules and dashboard go"),
            "exporterNamespace": _str(
                DNS_LABEL,
                description="where rendered exporters run (Pod Security 'privileged')",
            ),
            "prometheusSelectorLabels": _labels(),
            "prometheus": _obj(
                {
                    "namespace": _str(DNS_LABEL, description="the Prometheus object's namespace"),
                    **{
                        key: {**_selector(), "description": what}
                        for key, what in (
                            ("podMonitorSelector", "as the Prometheus spec has it; omitted: none"),
                            (
                                "podMonitorNamespaceSelector",
                                "as the Prometheus spec has it; omitted: its own namespace only",
                            ),
                            ("ruleSelector", "as the Prometheus spec has it; omitted: none"),
                            (
                                "ruleNamespaceSelector",
                                "as the Prometheus spec has it; omitted: its own namespace only",
                            ),
                        )
                    },
                },
                ("namespace",),
                description="the Prometheus (Prometheus Operator) that scrapes the fleet: its "
                "namespace and selectors, copied from its spec (MON003 proves it selects the "
                "fleet's PodMonitors and rules)",
            ),
            "grafanaFolder": _str(minLength=1, description="Grafana sidecar folder annotation"),
            "alerts": _obj(
                {
                    "enabled": {
                        "type": "boolean",
                        "description": "render the alerting rules; default true",
                    },
                    "pendingMinutes": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "minutes an accelerator pod may stay Pending; default 15",
                    },
                    "quotaUsedRatio": {
                        "type": "number",
                        "exclusiveMinimum": 0,
                        "maximum": 1,
                        "description": "share of a team's quota above which it is nearly used; "
                        "default 0.9",
                    },
                    "severity": _obj(
                        {
                            k: {"enum": ["critical", "warning", "info"]}
                            for k in ("device", "agent", "pending", "quota", "capacity")
                        },
                        description="severity label per class of alert (docs/alerts.md)",
                    ),
                    "labels": {
                        **_labels(),
                        "description": "labels added to every alert, for Alertmanager's routing",
                    },
                },
                description="alerting rules (docs/alerts.md)",
            ),
            "costCurrency": _str(minLength=1, description="unit of the cost series' legend"),
        },
        description="unified accelerator monitoring (docs/monitoring.md)",
    ),
}


def _schema(name: str, title: str, body: Schema) -> Schema:
    return {"$schema": DIALECT, "$id": f"{BASE_ID}{name}.schema.json", "title": title, **body}


def _optional(schema: Schema) -> Schema:
    """The same object schema with nothing required at any map level (an override sets only
    what it changes). List items keep their required keys: a list replaces the whole list."""
    if schema.get("type") != "object" or "properties" not in schema:
        return schema
    out = {k: v for k, v in schema.items() if k != "required"}
    out["properties"] = {k: _optional(v) for k, v in schema["properties"].items()}
    return out


def _partial(props: dict[str, Any]) -> Schema:
    return _optional(_obj(props))


# A pool of a cluster: `vendor` (all its pools) or `vendor/pool`.
POOL_REF = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$"
CLUSTER = _obj(
    {
        "destination": _obj(
            {
                "server": _str(minLength=1, description="the cluster's API server URL"),
                "name": _str(minLength=1, description="the cluster's name in Argo CD"),
            },
            description="where Argo CD deploys the cluster's units: server or name, not both",
            minProperties=1,
            maxProperties=1,
        ),
        "kubernetesVersion": _str(
            r"^1\.[0-9]+(\.[0-9]+)?$",
            description="the cluster's Kubernetes version; default: the fleet's",
        ),
        "labels": {**_labels(), "description": "the cluster's own labels, e.g. region"},
        "platform": {
            **FLEET_PROPS["platform"],
            "description": "the cluster's add-ons where they differ from the environment's "
            "(one key replaces that add-on's entry); docs/multi-cluster.md",
        },
        "pools": _list(
            _str(POOL_REF),
            minItems=1,
            uniqueItems=True,
            description="the pools in this cluster: `vendor` (all its pools) or `vendor/pool`",
        ),
    },
    ("destination", "pools"),
)

# A server type's PCI inventory (values/inventories/<server type>.yaml), in the built-in
# inventories' format (generator/values/inventories/hygon-dcu-z100l.yaml describes it).
PCI_HEX = r"^[0-9a-f]{4}$"
INVENTORY_PROPS: dict[str, Any] = {
    "serverType": _str(DNS_LABEL, description="the file's name without .yaml"),
    "description": _str(minLength=1, description="what kind of machine it is"),
    "accelerator": {
        "type": ["object", "null"],
        "additionalProperties": False,
        "required": ["vendor", "model", "count"],
        "properties": {
            "vendor": _str(DNS_LABEL, description="the vendor file (or catalog entry) id"),
            "model": _str(LABEL_VALUE, minLength=1, description="as a pool's `model` names it"),
            "count": {"type": "integer", "minimum": 1, "description": "accelerator functions"},
        },
        "description": "the accelerator the machine carries; null for a CPU-only server",
    },
    "sources": _list(
        _str(minLength=1), minItems=1, description="where the IDs come from (lspci, pci.ids)"
    ),
    "devices": _list(
        _obj(
            {
                "class": _str(
                    PCI_HEX, description="base class and subclass, as nfd-worker cuts it"
                ),
                "vendor": _str(PCI_HEX),
                "device": _str(PCI_HEX),
                "subsystem_vendor": _str(PCI_HEX),
                "subsystem_device": _str(PCI_HEX),
                "sriov_totalvfs": _str(r"^[0-9]+$"),
                "iommu_group/type": _str(minLength=1),
                "iommu/intel-iommu/version": _str(minLength=1),
            },
            ("class", "vendor", "device", "subsystem_vendor", "subsystem_device"),
        ),
        minItems=1,
        description="every PCI function of the machine with the attributes NFD v0.19.0 publishes "
        "for a pci.device feature (source/pci/utils.go), lower-case hex without 0x",
    ),
    "node": NODE_SHAPE,
}

SCHEMAS: dict[str, Schema] = {
    "fleet": _schema(
        "fleet",
        "Fleet values (values/fleet.yaml)",
        _obj(FLEET_PROPS, ("name", "kubernetesVersion", "environments", "git")),
    ),
    "vendor": _schema(
        "vendor",
        "Vendor values (values/vendors/<vendor>.yaml)",
        _obj(VENDOR_PROPS, ("pools",)),
    ),
    "team": _schema("team", "Team values (values/teams/<team>.yaml)", _obj(TEAM_PROPS)),
    "environment": _schema(
        "environment",
        "Environment overrides (values/environments/<env>.yaml)",
        _obj(
            {
                "fleet": _partial(
                    {
                        k: v
                        for k, v in FLEET_PROPS.items()
                        if k
                        in (
                            "git",
                            "argocd",
                            "nodeConfig",
                            "capacity",
                            "platform",
                            "mirrors",
                            "scheduling",
                            "monitoring",
                        )
                    }
                ),
                "clusters": {
                    "type": "object",
                    "description": "the environment's clusters, when it has more than one "
                    "(docs/multi-cluster.md); default: one, at fleet.argocd.destinationServer",
                    "propertyNames": {"pattern": DNS_LABEL},
                    "additionalProperties": CLUSTER,
                    "minProperties": 1,
                },
                "vendors": {
                    "type": "object",
                    "propertyNames": {"pattern": DNS_LABEL},
                    "additionalProperties": _partial(VENDOR_PROPS),
                },
                "teams": {
                    "type": "object",
                    "propertyNames": {"pattern": DNS_LABEL},
                    "additionalProperties": _partial(TEAM_PROPS),
                },
            }
        ),
    ),
    "inventory": _schema(
        "inventory",
        "A server type's PCI inventory (values/inventories/<server type>.yaml)",
        _obj(INVENTORY_PROPS, ("description", "accelerator", "sources", "devices")),
    ),
    "catalog": _schema("catalog", "Built-in vendor catalog entry", _obj(VENDOR_PROPS)),
}

# Kinds a user writes (the catalog schema is internal).
USER_KINDS = ("fleet", "vendor", "team", "environment", "inventory")

# What render writes for other programs to read: traffic/<env>.json, the split of each service
# across clusters that a global load balancer routes (render/traffic.py; docs/multi-cluster.md).
_COUNT = {"type": "integer", "minimum": 0}
SCHEMAS["traffic"] = _schema(
    "traffic",
    "An environment's traffic split across clusters for a global load balancer "
    "(traffic/<env>.json, written by render)",
    _obj(
        {
            "format": {"const": 1, "description": "raised when a field changes meaning or goes"},
            "environment": _str(DNS_LABEL),
            "services": _list(
                _obj(
                    {
                        "team": _str(DNS_LABEL),
                        "namespace": _str(DNS_LABEL),
                        "service": _str(DNS_LABEL),
                        "hostname": _str(
                            minLength=1, description="the name the load balancer serves"
                        ),
                        "phase": PHASE,
                        "tracks": _list(
                            _obj(
                                {
                                    "vendor": _str(DNS_LABEL),
                                    "cluster": _str(DNS_LABEL),
                                    "destination": {
                                        "type": "object",
                                        "description": "the cluster as Argo CD reaches it: "
                                        "its API server (server) or its name in Argo CD (name)",
                                        "oneOf": [
                                            _obj({"server": _str(minLength=1)}, ("server",)),
                                            _obj({"name": _str(minLength=1)}, ("name",)),
                                        ],
                                    },
                                    "service": _obj(
                                        {
                                            "name": _str(DNS_LABEL),
                                            "namespace": _str(DNS_LABEL),
                                            "port": {
                                                "type": "integer",
                                                "minimum": 1,
                                                "maximum": 65535,
                                            },
                                        },
                                        ("name", "namespace", "port"),
                                        description="the track's Service in its cluster",
                                    ),
                                    "replicas": _COUNT,
                                    "weight": {
                                        "type": "integer",
                                        "minimum": 0,
                                        "maximum": 100,
                                        "description": "percent of the service's requests",
                                    },
                                },
                                (
                                    "vendor",
                                    "cluster",
                                    "destination",
                                    "service",
                                    "replicas",
                                    "weight",
                                ),
                            ),
                            minItems=2,
                        ),
                    },
                    ("team", "namespace", "service", "hostname", "phase", "tracks"),
                )
            ),
        },
        ("format", "environment", "services"),
    ),
)
# Every schema `render.py schema` writes to schemas/.
SCHEMA_KINDS = (*USER_KINDS, "traffic")


def schema_text(kind: str) -> str:
    return json.dumps(SCHEMAS[kind], indent=2, sort_keys=True) + "\n"
