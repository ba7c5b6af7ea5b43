"""Device plugins as their upstream manifests ship them, in Kubernetes' own shapes (issue #8)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from generator.builders import device_plugins
from generator.findings import Location
from generator.values import loader as values
from generator.values.model import FleetView
from tests.fixtures import (
    AMD_MI250X,
    ASCEND_910B,
    CAMBRICON_MLU370,
    HYGON_Z100L,
    MIG_NVIDIA,
    MPS_NVIDIA,
    NVIDIA,
    PROD_FLEET,
    SHARED_NVIDIA,
    VNPU_ASCEND,
    Obj,
    build_unit,
    find,
    invoke,
    lines,
    pod_security,
    render_into,
    tree,
)

POOL = (
    "pools:\n  - {name: p1, model: m1, pciDevices: ['abcd'], devicesPerNode: 8, nodes: [node-01]}\n"
)
POOL2 = (
    "pools:\n  - {name: p1, model: m1, pciDevices: ['abcd'], devicesPerNode: 8, nodes: [node-02]}\n"
)

# A vendor outside the catalog, written as an upstream manifest would be: every shape the model
# must carry through unchanged.
ACME = """\
resourceName: acme.example/npu
pciVendor: "abcd"
selectorLabel: accelerator
modelLabel: npu-model
nodeLabels: {accelerator: acme-npu}
taints: [{key: acme.example/npu, value: present, effect: NoSchedule}]
devicePlugin:
  name: acme-device-plugin
  image: registry.example.com/acme/device-plugin
  version: v1.2.3
  namespace: accelerator-plugins
  command: [/bin/plugin]
  args: [--mode=default]
  env:
    - {name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: LOG_LEVEL, value: info}
  securityContext: {privileged: true, readOnlyRootFilesystem: true}
  resources:
    requests: {cpu: 100m, memory: 200Mi}
    limits: {memory: 400Mi}
  livenessProbe: {httpGet: {path: /healthz, port: 9000}, periodSeconds: 30}
  hostPID: true
  volumes:
    - {name: device-plugin, hostPath: {path: /var/lib/kubelet/device-plugins, type: Directory}}
    - {name: config, configMap: {name: acme-plugin-config, optional: true}}
    - {name: scratch, emptyDir: {sizeLimit: 1Gi}}
  volumeMounts:
    - {name: device-plugin, mountPath: /var/lib/kubelet/device-plugins}
    - {name: config, mountPath: /etc/acme, readOnly: true}
    - {name: scratch, mountPath: /tmp}
  rbac:
    - {apiGroups: [""], resources: [configmaps], verbs: [get, watch]}
    - {apiGroups: [""], resources: [events], verbs: [create]}
"""


def test_plugin_model_carries_upstream_shapes_unchanged(tmp_path: Path) -> None:
    values_dir = tree(
        tmp_path, {"vendors/acme.yaml": ACME + POOL}, fleet=PROD_FLEET, defaults=False
    )
    objs = build_unit(render_into(values_dir, tmp_path / "out"), "prod", "device-plugins")
    ds = find(objs, "DaemonSet", "acme-device-plugin")
    pod = ds["spec"]["template"]["spec"]
    [ctr] = pod["containers"]
    assert ctr["env"] == [
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "LOG_LEVEL", "value": "info"},
    ]
    assert ctr["command"] == ["/bin/plugin"] and ctr["args"] == ["--mode=default"]
    assert ctr["securityContext"] == {"privileged": True, "readOnlyRootFilesystem": True}
    assert ctr["resources"] == {
        "requests": {"cpu": "100m", "memory": "200Mi"},
        "limits": {"memory": "400Mi"},
    }
    assert ctr["livenessProbe"] == {
        "httpGet": {"path": "/healthz", "port": 9000},
        "periodSeconds": 30,
    }
    assert ctr["volumeMounts"][1] == {"name": "config", "mountPath": "/etc/acme", "readOnly": True}
    assert pod["volumes"] == [
        {
            "name": "device-plugin",
            "hostPath": {"path": "/var/lib/kubelet/device-plugins", "type": "Directory"},
        },
        {"name": "config", "configMap": {"name": "acme-plugin-config", "optional": True}},
        {"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}},
    ]
    assert pod["hostPID"] is True and "hostIPC" not in pod
    assert pod["serviceAccountName"] == "acme-device-plugin"
    role = find(objs, "ClusterRole", "acme-device-plugin")
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "watch"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    ]
    binding = find(objs, "ClusterRoleBinding", "acme-device-plugin")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "acme-device-plugin", "namespace": "accelerator-plugins"}
    ]
    # ... and kubeconform (strict) and the policy rules accept the result.
    committed = str(tmp_path / "out")  # validate checks what is committed
    result = invoke("validate", "--values", str(values_dir), "--committed", committed, "--no-drift")
    assert result.exit_code == 0, result.output


def test_a_plugin_with_no_upstream_resources_gets_requests(tmp_path: Path) -> None:
    values_dir = tree(tmp_path, {"vendors/nvidia.yaml": POOL}, fleet=PROD_FLEET, defaults=False)
    objs = build_unit(render_into(values_dir, tmp_path / "out"), "prod", "device-plugins")
    [ctr] = find(objs, "DaemonSet", "nvidia-device-plugin")["spec"]["template"]["spec"][
        "containers"
    ]
    assert ctr["resources"]["requests"] == {"cpu": "50m", "memory": "64Mi"}


def test_ascend_plugin_is_the_upstream_manifest(tmp_path: Path) -> None:
    """mind-cluster's build/ascendplugin-910.yaml: it exits without NODE_NAME, reads the
    kubelet's pod-resources socket, watches ConfigMaps, records events, needs 500Mi."""
    values_dir = tree(tmp_path, {"vendors/ascend.yaml": POOL}, fleet=PROD_FLEET, defaults=False)
    objs = build_unit(render_into(values_dir, tmp_path / "out"), "prod", "device-plugins")
    ds = find(objs, "DaemonSet", "ascend-device-plugin")
    pod = ds["spec"]["template"]["spec"]
    [ctr] = pod["containers"]
    assert {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}} in (
        ctr["env"]
    )
    mounts = {m["mountPath"]: m["name"] for m in ctr["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    for path in ("/var/lib/kubelet/pod-resources", "/var/lib/kubelet/device-plugins"):
        assert volumes[mounts[path]]["hostPath"]["path"] == path
    assert ctr["resources"]["limits"]["memory"] == "500Mi"
    assert ctr["image"] == (
        "swr.cn-south-1.myhuaweicloud.com/ascendhub/ascend-k8sdeviceplugin:v26.0.0"
    )
    rules = find(objs, "ClusterRole", "ascend-device-plugin")["rules"]
    verbs = {r: set(rule["verbs"]) for rule in rules for r in rule["resources"]}
    assert "watch" in verbs["configmaps"] and "create" in verbs["events"]
    assert pod["serviceAccountName"] == "ascend-device-plugin"


def test_cambricon_plugin_keeps_the_resource_name_it_advertises(tmp_path: Path) -> None:
    """--enable-device-type would advertise cambricon.com/<model>, not the catalog's name."""
    values_dir = tree(
        tmp_path,
        {
            "vendors/cambricon.yaml": "devicePlugin: {image: r.example/cambricon-dp}\n"
            "exporter: {render: false}\n" + POOL
        },
        fleet=PROD_FLEET,
        defaults=False,
    )
    objs = build_unit(render_into(values_dir, tmp_path / "out"), "prod", "device-plugins")
    pod = find(objs, "DaemonSet", "cambricon-device-plugin")["spec"]["template"]["spec"]
    assert "--enable-device-type" not in pod["containers"][0]["args"]
    assert pod["hostPID"] is True and pod["hostIPC"] is True


# ---- item 11: what a plugin needs outside the catalog ----------------------------------------


def test_a_vendor_outside_the_catalog_without_a_plugin_socket_mount_is_refused(
    tmp_path: Path,
) -> None:
    text = ACME.replace(
        "    - {name: device-plugin, mountPath: /var/lib/kubelet/device-plugins}\n", ""
    )
    values_dir = tree(
        tmp_path, {"vendors/acme.yaml": text + POOL}, fleet=PROD_FLEET, defaults=False
    )
    found = [line for line in lines(values_dir) if "VAL003" in line]
    assert len(found) == 1, found
    line = text.splitlines().index("  volumeMounts:") + 1
    assert found[0].startswith(f"values/vendors/acme.yaml:{line}:")
    assert "/var/lib/kubelet/device-plugins" in found[0] and "cannot register" in found[0]


def test_a_vendor_outside_the_catalog_without_taints_is_refused(tmp_path: Path) -> None:
    text = ACME.replace(
        "taints: [{key: acme.example/npu, value: present, effect: NoSchedule}]\n", ""
    )
    values_dir = tree(
        tmp_path, {"vendors/acme.yaml": text + POOL}, fleet=PROD_FLEET, defaults=False
    )
    found = [line for line in lines(values_dir) if "VAL003" in line]
    assert len(found) == 1, found
    assert found[0].startswith("values/vendors/acme.yaml:")
    assert "not in the built-in catalog and gives no taints" in found[0]


def test_a_vendor_outside_the_catalog_can_inherit_from_an_entry(tmp_path: Path) -> None:
    text = "catalog: nvidia\nnodeLabels: {accelerator: other-gpu}\n"
    values_dir = tree(
        tmp_path, {"vendors/other.yaml": text + POOL}, fleet=PROD_FLEET, defaults=False
    )
    assert not [line for line in lines(values_dir) if "VAL003" in line]


def test_an_override_that_drops_the_socket_mount_points_at_the_values_file(
    tmp_path: Path,
) -> None:
    text = "devicePlugin:\n  volumeMounts: []\n"
    values_dir = tree(
        tmp_path, {"vendors/nvidia.yaml": text + POOL}, fleet=PROD_FLEET, defaults=False
    )
    found = [line for line in lines(values_dir) if "VAL003" in line]
    assert len(found) == 1 and found[0].startswith("values/vendors/nvidia.yaml:2:"), found


def test_plugin_pods_are_admitted_by_their_namespaces_pod_security(tmp_path: Path) -> None:
    values_dir = tree(
        tmp_path,
        {"vendors/ascend.yaml": POOL, "vendors/acme.yaml": ACME + POOL2},
        fleet=PROD_FLEET,
        defaults=False,
    )
    objs = build_unit(render_into(values_dir, tmp_path / "out"), "prod", "device-plugins")
    results = pod_security(objs)
    assert {(r["name"], r["level"], r["allowed"]) for r in results} == {
        ("ascend-device-plugin", "privileged", True),
        ("acme-device-plugin", "privileged", True),
    }


# ---- build, in-process: each vendor's plugin objects written out by hand ------------------------
#
# Each DaemonSet is the vendor's upstream manifest as the catalog cites it
# (generator/values/catalog/<vendor>.yaml, `devicePlugin.sources`), placed by the fleet: on the
# vendor's pools (its selector label under NFD's prefix), tolerating its taints and
# CriticalAddonsOnly, at priority system-node-critical, in a privileged namespace.

MANAGED = {"app.kubernetes.io/managed-by": "accel-gitops"}
NFD = "feature.node.kubernetes.io/"
CRITICAL = {"key": "CriticalAddonsOnly", "operator": "Exists"}
DEFAULT_RESOURCES = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}}
PLUGIN_DIR = "/var/lib/kubelet/device-plugins"
PLUGINS_NS = "accelerator-plugins"


def prod_view(tmp_path: Path, files: dict[str, str]) -> FleetView:
    """The prod view of fleet mini with `files` alone."""
    return values.load(tree(tmp_path, files, fleet=PROD_FLEET, defaults=False)).envs["prod"]


def labels(name: str, vendor: str) -> dict[str, str]:
    """The labels of a plugin's objects and pods (its pods are selected by the name alone)."""
    return {
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/component": "device-plugin",
        "accel-gitops.io/vendor": vendor,
    }


def meta(name: str, vendor: str, namespace: str | None = PLUGINS_NS) -> Obj:
    out: Obj = {"name": name}
    if namespace:
        out["namespace"] = namespace
    out["labels"] = {**MANAGED, **labels(name, vendor)}
    out["annotations"] = {"accel-gitops.io/source": f"values/vendors/{vendor}.yaml"}
    return out


def taint_of(accelerator: str) -> Obj:
    """The toleration of the catalog's taint feature.node.kubernetes.io/accelerator=<value>."""
    return {"key": NFD + "accelerator", "operator": "Equal", "value": accelerator}


def plugin_daemonset(name: str, vendor: str, pod: Obj, namespace: str = PLUGINS_NS) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": meta(name, vendor, namespace),
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {"metadata": {"labels": labels(name, vendor)}, "spec": pod},
        },
    }


def plugins_namespace(name: str, sources: str) -> Obj:
    """A privileged Namespace (Pod Security enforce, audit and warn), synced before the plugins."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": {
                **MANAGED,
                "pod-security.kubernetes.io/enforce": "privileged",
                "pod-security.kubernetes.io/audit": "privileged",
                "pod-security.kubernetes.io/warn": "privileged",
            },
            "annotations": {
                "accel-gitops.io/source": sources,
                "argocd.argoproj.io/sync-wave": "-1",
            },
        },
    }


def test_nvidia_and_amd_plugins_are_their_static_manifests(tmp_path: Path) -> None:
    """NVIDIA/k8s-device-plugin nvidia-device-plugin.yml v0.17.1 and ROCm/k8s-device-plugin
    k8s-ds-amdgpu-dp.yaml v1.31.0.6: no RBAC (no service account token), upstream sets no
    resources (the fleet's requests and memory limit), a shared privileged namespace first."""
    # Neither file sets devicePlugin: findings on a plugin point at the top of its vendor file,
    # where the catalog's entry comes in (line 1), not at the pools (line 2 for NVIDIA).
    nvidia = "# the site's GPUs\n" + NVIDIA
    view = prod_view(tmp_path, {"vendors/nvidia.yaml": nvidia, "vendors/amd.yaml": AMD_MI250X})
    comps = device_plugins.build(view)
    assert [(c.unit, c.name, c.origin) for c in comps] == [
        ("device-plugins", "device-plugins/namespaces", None),
        ("device-plugins", "device-plugins/amd", Location("values/vendors/amd.yaml", 1, 1)),
        ("device-plugins", "device-plugins/nvidia", Location("values/vendors/nvidia.yaml", 1, 1)),
    ]
    assert [c.objects for c in comps] == [
        [plugins_namespace(PLUGINS_NS, "values/vendors/amd.yaml, values/vendors/nvidia.yaml")],
        [
            plugin_daemonset(
                "amdgpu-device-plugin",
                "amd",
                {
                    "nodeSelector": {NFD + "accelerator": "amd-gpu"},
                    "tolerations": [CRITICAL, {**taint_of("amd-gpu"), "effect": "NoSchedule"}],
                    "priorityClassName": "system-node-critical",
                    "automountServiceAccountToken": False,
                    "containers": [
                        {
                            "name": "amdgpu-device-plugin",
                            "image": "docker.io/rocm/k8s-device-plugin:1.31.0.6",
                            "imagePullPolicy": "IfNotPresent",
                            "resources": DEFAULT_RESOURCES,
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]},
                            },
                            "volumeMounts": [
                                {"name": "dp", "mountPath": PLUGIN_DIR},
                                {"name": "sys", "mountPath": "/sys"},
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "dp", "hostPath": {"path": PLUGIN_DIR}},
                        {"name": "sys", "hostPath": {"path": "/sys"}},
                    ],
                },
            )
        ],
        [
            plugin_daemonset(
                "nvidia-device-plugin",
                "nvidia",
                {
                    "nodeSelector": {NFD + "accelerator": "nvidia-gpu"},
                    "tolerations": [CRITICAL, {**taint_of("nvidia-gpu"), "effect": "NoSchedule"}],
                    "priorityClassName": "system-node-critical",
                    "automountServiceAccountToken": False,
                    "containers": [
                        {
                            "name": "nvidia-device-plugin",
                            "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.1",
                            "imagePullPolicy": "IfNotPresent",
                            "env": [{"name": "FAIL_ON_INIT_ERROR", "value": "false"}],
                            "resources": DEFAULT_RESOURCES,
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]},
                            },
                            "volumeMounts": [{"name": "device-plugin", "mountPath": PLUGIN_DIR}],
                        }
                    ],
                    "volumes": [{"name": "device-plugin", "hostPath": {"path": PLUGIN_DIR}}],
                },
            )
        ],
    ]
    # No vendor file sets devicePlugin: the Namespace points at the first vendor's file, every
    # plugin object at its own vendor's.
    assert comps[0].origins == {
        ("v1", "Namespace", "", PLUGINS_NS): Location("values/vendors/amd.yaml", 1, 1)
    }
    assert comps[1].origins == comps[2].origins == {}


def ascend_rbac(namespace: str) -> list[Obj]:
    """ascendplugin-910.yaml's ServiceAccount, ClusterRole and binding (mind-cluster v26.0.0)."""
    name = "ascend-device-plugin"
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(name, "ascend", namespace)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": meta(name, "ascend", None),
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["pods"],
                    "verbs": ["get", "list", "update", "watch", "patch"],
                },
                {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]},
                {"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]},
                {
                    "apiGroups": [""],
                    "resources": ["nodes/status"],
                    "verbs": ["get", "patch", "update"],
                },
                {
                    "apiGroups": [""],
                    "resources": ["configmaps"],
                    "verbs": ["get", "create", "update", "list", "watch"],
                },
                {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": meta(name, "ascend", None),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": name,
            },
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
        },
    ]


def test_ascend_plugin_is_ascendplugin_910_with_its_rbac(tmp_path: Path) -> None:
    """mind-cluster ascendplugin-910.yaml v26.0.0: command and args, NODE_NAME and HOST_IP,
    500m/500Mi, privileged with a read-only root, its host paths; its service account and rules."""
    comps = device_plugins.build(prod_view(tmp_path, {"vendors/ascend.yaml": ASCEND_910B}))
    assert [c.name for c in comps] == ["device-plugins/namespaces", "device-plugins/ascend"]
    pod = {
        "nodeSelector": {NFD + "accelerator": "huawei-npu"},
        "tolerations": [CRITICAL, {**taint_of("huawei-npu"), "effect": "NoSchedule"}],
        "priorityClassName": "system-node-critical",
        "serviceAccountName": "ascend-device-plugin",
        "containers": [
            {
                "name": "ascend-device-plugin",
                "image": "swr.cn-south-1.myhuaweicloud.com/ascendhub/ascend-k8sdeviceplugin:v26.0.0",
                "imagePullPolicy": "IfNotPresent",
                "command": ["/bin/bash", "-c", "--"],
                "args": [
                    "device-plugin -useAscendDocker=true"
                    " -logFile=/var/log/mindx-dl/devicePlugin/devicePlugin.log -logLevel=0"
                ],
                "env": [
                    {
                        "name": "NODE_NAME",
                        "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}},
                    },
                    {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
                ],
                "resources": {
                    "requests": {"cpu": "500m", "memory": "500Mi"},
                    "limits": {"cpu": "500m", "memory": "500Mi"},
                },
                "securityContext": {"privileged": True, "readOnlyRootFilesystem": True},
                "volumeMounts": [
                    {"name": "device-plugin", "mountPath": PLUGIN_DIR},
                    {"name": "pod-resource", "mountPath": "/var/lib/kubelet/pod-resources"},
                    {
                        "name": "hiai-driver",
                        "mountPath": "/usr/local/Ascend/driver",
                        "readOnly": True,
                    },
                    {"name": "log-path", "mountPath": "/var/log/mindx-dl/devicePlugin"},
                    {"name": "tmp", "mountPath": "/tmp"},
                    {"name": "lingqu-log", "mountPath": "/var/log/lingqu"},
                    {"name": "localtime", "mountPath": "/etc/localtime", "readOnly": True},
                    {
                        "name": "data-trace-file-dir",
                        "mountPath": "/user/cluster-info/datatrace-config",
                    },
                    {"name": "containerd", "mountPath": "/run/containerd", "readOnly": True},
                ],
            }
        ],
        "volumes": [
            {"name": "device-plugin", "hostPath": {"path": PLUGIN_DIR}},
            {"name": "pod-resource", "hostPath": {"path": "/var/lib/kubelet/pod-resources"}},
            {"name": "hiai-driver", "hostPath": {"path": "/usr/local/Ascend/driver"}},
            {
                "name": "log-path",
                "hostPath": {"path": "/var/log/mindx-dl/devicePlugin", "type": "Directory"},
            },
            {
                "name": "data-trace-file-dir",
                "hostPath": {
                    "path": "/user/cluster-info/datatrace-config",
                    "type": "DirectoryOrCreate",
                },
            },
            {"name": "tmp", "hostPath": {"path": "/tmp"}},
            {
                "name": "lingqu-log",
                "hostPath": {"path": "/var/log/lingqu", "type": "DirectoryOrCreate"},
            },
            {"name": "localtime", "hostPath": {"path": "/etc/localtime"}},
            {"name": "containerd", "hostPath": {"path": "/run/containerd"}},
        ],
    }
    assert comps[1].objects == [
        *ascend_rbac(PLUGINS_NS),
        plugin_daemonset("ascend-device-plugin", "ascend", pod),
    ]


def test_cambricon_plugin_is_the_example_daemonset_with_the_sites_image(tmp_path: Path) -> None:
    """cambricon-k8s-device-plugin's example DaemonSet v2.0.23 (args, liveness probe, hostPID and
    hostIPC, resources, host paths) and role.yml's rules; the image the vendor file names."""
    comps = device_plugins.build(prod_view(tmp_path, {"vendors/cambricon.yaml": CAMBRICON_MLU370}))
    name = "cambricon-device-plugin"
    assert comps[1].origin == Location("values/vendors/cambricon.yaml", 1, 1)
    role = comps[1].objects[1]
    assert role["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["nodes"],
            "verbs": ["get", "list", "watch", "update", "patch"],
        },
        {
            "apiGroups": [""],
            "resources": ["pods"],
            "verbs": ["get", "list", "watch", "update", "patch"],
        },
    ]
    assert [o["kind"] for o in comps[1].objects] == [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "DaemonSet",
    ]
    pod = {
        "nodeSelector": {NFD + "accelerator": "cambricon-mlu"},
        "tolerations": [CRITICAL, {**taint_of("cambricon-mlu"), "effect": "NoSchedule"}],
        "priorityClassName": "system-node-critical",
        "hostPID": True,
        "hostIPC": True,
        "serviceAccountName": name,
        "containers": [
            {
                "name": name,
                "image": "r/cambricon-device-plugin:v1",
                "imagePullPolicy": "IfNotPresent",
                "command": ["/usr/bin/k8s-device-plugin"],
                "args": [
                    "--mode=default",
                    "--virtualization-num=1",
                    "--mlulink-policy=best-effort",
                    "--cnmon-path=/usr/bin/cnmon",
                    "--log-level=info",
                ],
                "env": [
                    {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
                ],
                "resources": {
                    "requests": {"cpu": "30m", "memory": "64Mi"},
                    "limits": {"cpu": "1", "memory": "2Gi"},
                },
                "securityContext": {"privileged": True},
                "livenessProbe": {
                    "httpGet": {"path": "/healthz", "port": 30107},
                    "initialDelaySeconds": 60,
                    "failureThreshold": 6,
                    "periodSeconds": 30,
                },
                "volumeMounts": [
                    {"name": "device-plugin", "mountPath": PLUGIN_DIR},
                    {"name": "pod-resources", "mountPath": "/var/lib/kubelet/pod-resources"},
                    {"name": "dev", "mountPath": "/dev"},
                    {"name": "cndev-lib", "mountPath": "/host/usr/lib"},
                    {"name": "cndev-lib64", "mountPath": "/host/usr/lib64"},
                    {"name": "host-proc", "mountPath": "/host/proc"},
                ],
            }
        ],
        "volumes": [
            {"name": "device-plugin", "hostPath": {"path": PLUGIN_DIR}},
            {"name": "pod-resources", "hostPath": {"path": "/var/lib/kubelet/pod-resources"}},
            {"name": "dev", "hostPath": {"path": "/dev"}},
            {"name": "cndev-lib", "hostPath": {"path": "/usr/lib"}},
            {"name": "cndev-lib64", "hostPath": {"path": "/usr/lib64"}},
            {"name": "host-proc", "hostPath": {"path": "/proc"}},
        ],
    }
    assert comps[1].objects[3] == plugin_daemonset(name, "cambricon", pod)


def test_hygon_plugin_runs_the_sites_image_with_the_kubelets_plugin_socket(tmp_path: Path) -> None:
    """Hygon's catalog entry has no image: the vendor file's image and version, the kubelet's
    device-plugin directory (DevicePluginPath), the fleet's default resources."""
    comps = device_plugins.build(prod_view(tmp_path, {"vendors/hygon.yaml": HYGON_Z100L}))
    assert comps[1].origin == Location("values/vendors/hygon.yaml", 2, 1)
    pod = {
        "nodeSelector": {NFD + "accelerator": "hygon-dcu"},
        "tolerations": [CRITICAL, {**taint_of("hygon-dcu"), "effect": "NoSchedule"}],
        "priorityClassName": "system-node-critical",
        "automountServiceAccountToken": False,
        "containers": [
            {
                "name": "dcu-device-plugin",
                "image": "r/dcu:v1",
                "imagePullPolicy": "IfNotPresent",
                "resources": DEFAULT_RESOURCES,
                "volumeMounts": [{"name": "device-plugin", "mountPath": PLUGIN_DIR}],
            }
        ],
        "volumes": [{"name": "device-plugin", "hostPath": {"path": PLUGIN_DIR}}],
    }
    assert comps[1].objects == [plugin_daemonset("dcu-device-plugin", "hygon", pod)]


# A vendor outside the catalog whose plugin runs on the host network in kube-system, with a
# readiness probe, its own priority class and a taint without a value.
HOSTNET = """\
resourceName: acme.example/npu
pciVendor: "abcd"
selectorLabel: accelerator
modelLabel: npu-model
nodeLabels: {accelerator: acme-npu}
taints: [{key: acme.example/npu, effect: NoExecute}]
devicePlugin:
  name: acme-device-plugin
  image: registry.example.com/acme/device-plugin
  version: v1.2.3
  namespace: kube-system
  priorityClassName: acme-critical
  hostNetwork: true
  readinessProbe: {tcpSocket: {port: 9001}, periodSeconds: 10}
  volumes:
    - {name: device-plugin, hostPath: {path: /var/lib/kubelet/device-plugins}}
  volumeMounts:
    - {name: device-plugin, mountPath: /var/lib/kubelet/device-plugins}
"""


def test_a_host_network_plugin_resolves_cluster_dns_and_kube_system_is_not_rendered(
    tmp_path: Path,
) -> None:
    """hostNetwork pods need dnsPolicy ClusterFirstWithHostNet to resolve Services; a taint
    without a value is tolerated by Exists; kube-system is the cluster's, never a Namespace here."""
    view = prod_view(tmp_path, {"vendors/acme.yaml": HOSTNET + POOL})
    [comp] = device_plugins.build(view)
    assert (comp.name, comp.origin) == (
        "device-plugins/acme",
        Location("values/vendors/acme.yaml", 7, 1),
    )
    pod = {
        "nodeSelector": {NFD + "accelerator": "acme-npu"},
        "tolerations": [
            CRITICAL,
            {"key": "acme.example/npu", "operator": "Exists", "effect": "NoExecute"},
        ],
        "priorityClassName": "acme-critical",
        "hostNetwork": True,
        "dnsPolicy": "ClusterFirstWithHostNet",
        "automountServiceAccountToken": False,
        "containers": [
            {
                "name": "acme-device-plugin",
                "image": "registry.example.com/acme/device-plugin:v1.2.3",
                "imagePullPolicy": "IfNotPresent",
                "resources": DEFAULT_RESOURCES,
                "readinessProbe": {"tcpSocket": {"port": 9001}, "periodSeconds": 10},
                "volumeMounts": [{"name": "device-plugin", "mountPath": PLUGIN_DIR}],
            }
        ],
        "volumes": [{"name": "device-plugin", "hostPath": {"path": PLUGIN_DIR}}],
    }
    assert comp.objects == [plugin_daemonset("acme-device-plugin", "acme", pod, "kube-system")]


def test_each_plugin_namespace_names_the_files_and_the_line_that_ask_for_it(tmp_path: Path) -> None:
    """Namespaces sorted by name, each naming every vendor file that uses it (once), its findings
    at the devicePlugin.namespace line that asks for it; kube-system gets none."""
    files = {
        "vendors/acme.yaml": HOSTNET + POOL,
        "vendors/ascend.yaml": "devicePlugin: {namespace: npu-plugins}\n" + ASCEND_910B,
        "vendors/cambricon.yaml": CAMBRICON_MLU370,
        "vendors/nvidia.yaml": "devicePlugin:\n  namespace: npu-plugins\n" + NVIDIA,
    }
    comps = device_plugins.build(prod_view(tmp_path, files))
    names = [c.name for c in comps]
    assert names[0] == "device-plugins/namespaces"
    assert names[1:] == [f"device-plugins/{v}" for v in ("acme", "ascend", "cambricon", "nvidia")]
    accelerator, npu = (
        plugins_namespace(PLUGINS_NS, "values/vendors/cambricon.yaml"),
        (
            plugins_namespace(
                "npu-plugins", "values/vendors/ascend.yaml, values/vendors/nvidia.yaml"
            )
        ),
    )
    assert comps[0].objects == [accelerator, npu]
    assert comps[0].origin_of(accelerator) == Location("values/vendors/cambricon.yaml", 1, 1)
    assert comps[0].origin_of(npu) == Location("values/vendors/ascend.yaml", 1, 16)
    assert comps[3].objects[3]["metadata"]["namespace"] == PLUGINS_NS


def test_a_fleet_without_vendors_has_no_device_plugins(tmp_path: Path) -> None:
    """No vendor: nothing in the unit, not even a Namespace."""
    assert device_plugins.build(prod_view(tmp_path, {})) == []


# ---- shared devices (docs/allocation.md) --------------------------------------------------------


def test_a_shared_vendors_plugin_reads_its_time_slicing_config_file(tmp_path: Path) -> None:
    """The plugin's config file (NVIDIA/k8s-device-plugin api/config/v1 v0.17.1) in a ConfigMap,
    mounted read-only and named by CONFIG_FILE; the pods carry the file's digest, so a changed
    file rolls them (the plugin reads it when it starts). Otherwise nvidia's DaemonSet."""
    view = prod_view(tmp_path, {"vendors/nvidia-shared.yaml": SHARED_NVIDIA})
    (_, comp) = device_plugins.build(view)
    name = "nvidia-device-plugin-shared"
    config_map, ds = comp.objects
    text = (
        "sharing:\n  timeSlicing:\n    failRequestsGreaterThanOne: true\n"
        "    renameByDefault: true\n    resources:\n    - name: nvidia.com/gpu\n"
        "      replicas: 4\nversion: v1\n"
    )
    assert config_map == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        # Labelled as the plugin's objects are (its name), which its pods' selector ignores.
        "metadata": {
            **meta(f"{name}-config", "nvidia-shared"),
            "labels": {**MANAGED, **labels(name, "nvidia-shared")},
        },
        "data": {"config.yaml": text},
    }
    pod = ds["spec"]["template"]["spec"]
    assert ds["spec"]["template"]["metadata"]["annotations"] == {
        "accel-gitops.io/device-plugin-config": hashlib.sha256(text.encode()).hexdigest()
    }
    assert pod["nodeSelector"] == {NFD + "accelerator": "nvidia-gpu-shared"}
    (ctr,) = pod["containers"]
    assert ctr["env"] == [
        {"name": "FAIL_ON_INIT_ERROR", "value": "false"},
        {"name": "CONFIG_FILE", "value": "/etc/device-plugin/config.yaml"},
    ]
    assert ctr["volumeMounts"] == [
        {"name": "device-plugin", "mountPath": PLUGIN_DIR},
        {"name": "device-plugin-config", "mountPath": "/etc/device-plugin", "readOnly": True},
    ]
    assert pod["volumes"] == [
        {"name": "device-plugin", "hostPath": {"path": PLUGIN_DIR}},
        {"name": "device-plugin-config", "configMap": {"name": f"{name}-config"}},
    ]


def test_the_config_file_follows_the_replicas_and_a_whole_vendor_has_none(tmp_path: Path) -> None:
    view = prod_view(
        tmp_path,
        {
            "vendors/nvidia.yaml": NVIDIA,
            "vendors/nvidia-shared.yaml": SHARED_NVIDIA.replace("replicas: 4", "replicas: 7"),
        },
    )
    whole, shared = view.vendors
    assert device_plugins.plugin_config(whole) is None
    assert device_plugins.plugin_config(shared) == {
        "version": "v1",
        "sharing": {
            "timeSlicing": {
                "renameByDefault": True,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": "nvidia.com/gpu", "replicas": 7}],
            }
        },
    }
    (_, nvidia, _) = device_plugins.build(view)
    assert [o["kind"] for o in nvidia.objects] == ["DaemonSet"]
    assert "annotations" not in nvidia.objects[0]["spec"]["template"]["metadata"]


def test_a_mig_vendors_plugin_runs_the_mixed_strategy_from_its_config_file(
    tmp_path: Path,
) -> None:
    """MIG_NVIDIA: the plugin's config file sets flags.migStrategy (mixed, from the catalog), so
    it advertises each instance under the profile's own name; no sharing section. Mounted and
    named as a shared vendor's file is."""
    view = prod_view(tmp_path, {"vendors/nvidia-mig.yaml": MIG_NVIDIA})
    (_, comp) = device_plugins.build(view)
    config_map, ds = comp.objects
    text = "flags:\n  migStrategy: mixed\nversion: v1\n"
    assert config_map["data"] == {"config.yaml": text}
    assert config_map["metadata"]["name"] == "nvidia-device-plugin-mig-config"
    assert ds["spec"]["template"]["metadata"]["annotations"] == {
        "accel-gitops.io/device-plugin-config": hashlib.sha256(text.encode()).hexdigest()
    }
    (ctr,) = ds["spec"]["template"]["spec"]["containers"]
    assert {"name": "CONFIG_FILE", "value": "/etc/device-plugin/config.yaml"} in ctr["env"]


def test_a_mig_vendors_plugin_gets_the_env_and_capability_upstreams_chart_gives_under_mig(
    tmp_path: Path,
) -> None:
    """MIG_NVIDIA (catalog mig.plugin): as NVIDIA/k8s-device-plugin's chart v0.17.1 renders the
    plugin whenever a MIG strategy other than none is possible (_helpers.tpl requiresCapSysAdmin,
    daemonset-device-plugin.yml addMigMonitorDevices), its container gets
    NVIDIA_MIG_MONITOR_DEVICES=all after the static manifest's and the config file's env, and
    capabilities add [SYS_ADMIN] as its whole securityContext: no drop [ALL], no
    allowPrivilegeEscalation. Without the variable the plugin cannot read its MIG devices
    (issue #399) and crash-loops. Its namespace enforces Pod Security privileged."""
    view = prod_view(tmp_path, {"vendors/nvidia-mig.yaml": MIG_NVIDIA})
    (namespaces, comp) = device_plugins.build(view)
    _, ds = comp.objects
    (ctr,) = ds["spec"]["template"]["spec"]["containers"]
    assert ctr["env"] == [
        {"name": "FAIL_ON_INIT_ERROR", "value": "false"},
        {"name": "CONFIG_FILE", "value": "/etc/device-plugin/config.yaml"},
        {"name": "NVIDIA_MIG_MONITOR_DEVICES", "value": "all"},
    ]
    assert ctr["securityContext"] == {"capabilities": {"add": ["SYS_ADMIN"]}}
    (ns,) = namespaces.objects
    assert ns["metadata"]["name"] == ds["metadata"]["namespace"] == PLUGINS_NS
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"


def test_a_mig_plugins_pod_needs_its_namespaces_privileged_level(tmp_path: Path) -> None:
    """Kubernetes' own Pod Security code on the rendered MIG plugin: its namespace (privileged)
    admits it; baseline would refuse SYS_ADMIN (not among the capabilities baseline lets a
    container add) as it refuses every plugin's hostPath volume."""
    values_dir = tree(
        tmp_path, {"vendors/nvidia-mig.yaml": MIG_NVIDIA}, fleet=PROD_FLEET, defaults=False
    )
    objs = build_unit(render_into(values_dir, tmp_path / "out"), "prod", "device-plugins")
    assert {(r["name"], r["level"], r["allowed"]) for r in pod_security(objs)} == {
        ("nvidia-device-plugin-mig", "privileged", True)
    }
    (ds,) = [o for o in objs if o["kind"] == "DaemonSet"]
    del ds["metadata"]["namespace"]  # checked at the level given instead
    (baseline,) = pod_security([ds], "baseline")
    assert (baseline["allowed"], baseline["reasons"]) == (
        False,
        [
            'non-default capabilities: container "nvidia-device-plugin-mig" must not include '
            '"SYS_ADMIN" in securityContext.capabilities.add',
            'hostPath volumes: volume "device-plugin"',
        ],
    )


def test_the_plugins_of_vendors_not_partitioned_by_mig_keep_the_static_manifests_settings(
    tmp_path: Path,
) -> None:
    """Whole, time-sliced and MPS NVIDIA vendors beside a MIG one: each plugin keeps the static
    manifest's securityContext (drop [ALL], no SYS_ADMIN) and gets no
    NVIDIA_MIG_MONITOR_DEVICES; only the MIG vendor's plugin is changed."""
    files = {
        "vendors/nvidia.yaml": NVIDIA,
        "vendors/nvidia-shared.yaml": SHARED_NVIDIA,
        "vendors/nvidia-mps.yaml": MPS_NVIDIA,
        "vendors/nvidia-mig.yaml": MIG_NVIDIA,
    }
    view = prod_view(tmp_path, files)
    plugins = {
        ds["metadata"]["name"]: ds["spec"]["template"]["spec"]["containers"][0]
        for comp in device_plugins.build(view)
        for ds in comp.objects
        if ds["kind"] == "DaemonSet"
        and ds["metadata"]["labels"]["app.kubernetes.io/component"] == "device-plugin"
    }
    static = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    assert {name: ctr["securityContext"] for name, ctr in plugins.items()} == {
        "nvidia-device-plugin": static,
        "nvidia-device-plugin-shared": static,
        "nvidia-device-plugin-mps": static,
        "nvidia-device-plugin-mig": {"capabilities": {"add": ["SYS_ADMIN"]}},
    }
    assert {
        name: [e["name"] for e in ctr["env"] if e["name"] == "NVIDIA_MIG_MONITOR_DEVICES"]
        for name, ctr in plugins.items()
    } == {
        "nvidia-device-plugin": [],
        "nvidia-device-plugin-shared": [],
        "nvidia-device-plugin-mps": [],
        "nvidia-device-plugin-mig": ["NVIDIA_MIG_MONITOR_DEVICES"],
    }


def test_an_mps_vendor_runs_the_plugins_mps_control_daemon_beside_it(tmp_path: Path) -> None:
    """MPS_NVIDIA (catalog devicePlugin.configFile.mps, as upstream's chart v0.17.1 runs it):
    the config file shares by `mps`; the plugin gets MPS_ROOT and the host folder at /mps with
    its shm at /dev/shm; the MPS control daemon, privileged, from the plugin's image, on the
    vendor's nodes by the fleet's own selector, reads the same file (same digest) after its
    init container mounts its memory with Bidirectional propagation."""
    view = prod_view(tmp_path, {"vendors/nvidia-mps.yaml": MPS_NVIDIA})
    (_, comp) = device_plugins.build(view)
    config_map, daemon, plugin = comp.objects
    text = (
        "sharing:\n  mps:\n    failRequestsGreaterThanOne: true\n"
        "    renameByDefault: true\n    resources:\n    - name: nvidia.com/gpu\n"
        "      replicas: 4\nversion: v1\n"
    )
    assert config_map["data"] == {"config.yaml": text}
    digest = {"accel-gitops.io/device-plugin-config": hashlib.sha256(text.encode()).hexdigest()}
    image = "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"
    volumes = [
        {"name": "mps-root", "hostPath": {"path": "/run/nvidia/mps", "type": "DirectoryOrCreate"}},
        {"name": "mps-shm", "hostPath": {"path": "/run/nvidia/mps/shm"}},
    ]
    mounts = [
        {"name": "mps-shm", "mountPath": "/dev/shm"},
        {"name": "mps-root", "mountPath": "/mps"},
    ]
    config_volume = {
        "name": "device-plugin-config",
        "configMap": {"name": "nvidia-device-plugin-mps-config"},
    }
    config_mount = {
        "name": "device-plugin-config",
        "mountPath": "/etc/device-plugin",
        "readOnly": True,
    }
    config_env = {"name": "CONFIG_FILE", "value": "/etc/device-plugin/config.yaml"}

    pod = plugin["spec"]["template"]["spec"]
    (ctr,) = pod["containers"]
    assert ctr["env"] == [
        {"name": "FAIL_ON_INIT_ERROR", "value": "false"},
        config_env,
        {"name": "MPS_ROOT", "value": "/run/nvidia/mps"},
    ]
    assert ctr["volumeMounts"] == [
        {"name": "device-plugin", "mountPath": PLUGIN_DIR},
        config_mount,
        *mounts,
    ]
    assert pod["volumes"] == [
        {"name": "device-plugin", "hostPath": {"path": PLUGIN_DIR}},
        config_volume,
        *volumes,
    ]

    name = "nvidia-device-plugin-mps-mps-control-daemon"
    own = {
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/component": "mps-control-daemon",
        "accel-gitops.io/vendor": "nvidia-mps",
    }
    assert daemon == {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": name,
            "namespace": PLUGINS_NS,
            "labels": {**MANAGED, **own},
            "annotations": {"accel-gitops.io/source": "values/vendors/nvidia-mps.yaml"},
        },
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": own, "annotations": digest},
                "spec": {
                    "nodeSelector": {NFD + "accelerator": "nvidia-gpu-mps"},
                    "tolerations": [
                        CRITICAL,
                        {
                            "key": NFD + "accelerator",
                            "operator": "Equal",
                            "value": "nvidia-gpu",
                            "effect": "NoSchedule",
                        },
                    ],
                    "priorityClassName": "system-node-critical",
                    "automountServiceAccountToken": False,
                    "containers": [
                        {
                            "name": name,
                            "image": image,
                            "imagePullPolicy": "IfNotPresent",
                            "command": ["mps-control-daemon"],
                            "env": [
                                {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                                {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"},
                                config_env,
                            ],
                            "resources": DEFAULT_RESOURCES,
                            "securityContext": {"privileged": True},
                            "volumeMounts": [*mounts, config_mount],
                        }
                    ],
                    "volumes": [*volumes, config_volume],
                    "initContainers": [
                        {
                            "name": "mounts",
                            "image": image,
                            "imagePullPolicy": "IfNotPresent",
                            "command": ["mps-control-daemon", "mount-shm"],
                            "resources": DEFAULT_RESOURCES,
                            "securityContext": {"privileged": True},
                            "volumeMounts": [
                                {
                                    "name": "mps-root",
                                    "mountPath": "/mps",
                                    "mountPropagation": "Bidirectional",
                                }
                            ],
                        }
                    ],
                },
            },
        },
    }


def test_an_mps_daemon_without_env_of_its_own_still_reads_the_config_file(
    tmp_path: Path,
) -> None:
    """A vendor file that writes the config file's facts itself, with an empty daemon
    environment (its lists replace the catalog's): the daemon's container gets CONFIG_FILE
    alone."""
    mps = MPS_NVIDIA.replace(
        "devicePlugin: {name: nvidia-device-plugin-mps}",
        "devicePlugin:\n  name: nvidia-device-plugin-mps\n  configFile:\n"
        "    {env: CONFIG_FILE, version: v1, sharedSuffix: .shared, sharing: [mps], "
        "sources: ['a/b c d'], mps: {root: /run/nvidia/mps, containerRoot: /mps, env: MPS_ROOT, "
        "command: [mps-control-daemon], mountCommand: [mps-control-daemon, mount-shm], "
        "daemonEnv: [], maxReplicas: 48, sources: ['a/b c d']}}",
    )
    view = prod_view(tmp_path, {"vendors/nvidia-mps.yaml": mps})
    (_, comp) = device_plugins.build(view)
    (ctr,) = comp.objects[1]["spec"]["template"]["spec"]["containers"]
    assert ctr["env"] == [{"name": "CONFIG_FILE", "value": "/etc/device-plugin/config.yaml"}]


def test_a_time_sliced_vendor_runs_no_mps_daemon(tmp_path: Path) -> None:
    view = prod_view(tmp_path, {"vendors/nvidia-shared.yaml": SHARED_NVIDIA})
    (_, comp) = device_plugins.build(view)
    assert [o["kind"] for o in comp.objects] == ["ConfigMap", "DaemonSet"]
    env = comp.objects[1]["spec"]["template"]["spec"]["containers"][0]["env"]
    assert "MPS_ROOT" not in [e["name"] for e in env]


def test_a_vnpu_vendors_plugin_is_its_catalog_plugin_unchanged(tmp_path: Path) -> None:
    """VNPU_ASCEND: the site makes the vNPUs and Ascend's plugin finds them by itself
    (presetVirtualDevice, on by default): no config file, nothing mounted beyond the catalog's
    plugin; only its name and node selector are the vendor file's."""
    view = prod_view(
        tmp_path, {"vendors/ascend.yaml": ASCEND_910B, "vendors/ascend-vnpu.yaml": VNPU_ASCEND}
    )
    whole, split = (c for c in device_plugins.build(view) if c.objects[-1]["kind"] == "DaemonSet")
    kinds = [o["kind"] for o in split.objects]
    assert kinds == [o["kind"] for o in whole.objects]
    assert "ConfigMap" not in kinds
    ds, base = split.objects[-1], whole.objects[-1]
    pod, base_pod = ds["spec"]["template"]["spec"], base["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {NFD + "accelerator": "huawei-npu-vnpu"}
    assert pod["containers"][0]["args"] == base_pod["containers"][0]["args"]
    assert pod["volumes"] == base_pod["volumes"]
