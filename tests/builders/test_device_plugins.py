"""Device plugins as their upstream manifests ship them, in Kubernetes' own shapes (issue #8)."""

from __future__ import annotations

from pathlib import Path

from tests.fixtures import (
    PROD_FLEET,
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
