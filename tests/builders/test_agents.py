"""Exporter DaemonSets rendered from the catalog, and PodMonitors that select exactly their pods
(issue #8 items 4 and 13)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fixtures import PROD_FLEET, build_unit, find, lines, pod_security, render_into, tree


def pool(node: str) -> str:
    return f"pools:\n  - {{name: p1, model: m1, pciDevices: ['abcd'], devicesPerNode: 8, nodes: [{node}]}}\n"


POOL = pool("node-01")
IMAGE = "exporter:\n  daemonSet: {image: registry.example.com/site/exporter}\n"
VENDORS = {
    "vendors/nvidia.yaml": pool("gpu-01"),
    "vendors/amd.yaml": pool("amd-01"),
    "vendors/ascend.yaml": pool("npu-01"),
    "vendors/cambricon.yaml": "devicePlugin: {image: registry.example.com/site/dp}\n"
    + IMAGE
    + pool("mlu-01"),
}


def selects(monitor: dict[str, Any], pod_ns: str, pod_labels: dict[str, str]) -> bool:
    spec = monitor["spec"]
    names = spec["namespaceSelector"].get("matchNames")
    wanted = spec["selector"]["matchLabels"]
    return (names is None or pod_ns in names) and wanted.items() <= pod_labels.items()


def test_each_pod_monitor_selects_exactly_the_exporter_pods_it_renders(tmp_path: Path) -> None:
    values_dir = tree(tmp_path, VENDORS, fleet=PROD_FLEET, defaults=False)
    objs = build_unit(render_into(values_dir, tmp_path / "out"), "prod", "monitoring")
    monitors = [o for o in objs if o["kind"] == "PodMonitor"]
    sets = [o for o in objs if o["kind"] == "DaemonSet"]
    assert len(monitors) == len(sets) == 4
    for monitor in monitors:
        picked = [
            ds
            for ds in sets
            if selects(
                monitor, ds["metadata"]["namespace"], ds["spec"]["template"]["metadata"]["labels"]
            )
        ]
        assert len(picked) == 1, monitor["metadata"]["name"]
        [ds] = picked
        vendor = monitor["metadata"]["labels"]["accel-gitops.io/vendor"]
        assert ds["metadata"]["labels"]["accel-gitops.io/vendor"] == vendor
        # The DaemonSet's own selector is the PodMonitor's: same pods, no more.
        assert ds["spec"]["selector"]["matchLabels"] == monitor["spec"]["selector"]["matchLabels"]
        endpoint = monitor["spec"]["podMetricsEndpoints"][0]
        [ctr] = ds["spec"]["template"]["spec"]["containers"]
        assert {
            "name": endpoint["port"],
            "containerPort": ctr["ports"][0]["containerPort"],
        }.items() <= (ctr["ports"][0].items())


def test_exporters_are_rendered_as_upstream_ships_them(tmp_path: Path) -> None:
    values_dir = tree(tmp_path, VENDORS, fleet=PROD_FLEET, defaults=False)
    objs = build_unit(render_into(values_dir, tmp_path / "out"), "prod", "monitoring")
    dcgm = find(objs, "DaemonSet", "dcgm-exporter")["spec"]["template"]["spec"]
    [ctr] = dcgm["containers"]
    assert ctr["image"] == "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-distroless"
    assert {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}} in (
        ctr["env"]
    )
    assert ctr["securityContext"]["capabilities"] == {"add": ["SYS_ADMIN"], "drop": ["ALL"]}
    assert ctr["ports"] == [{"name": "metrics", "containerPort": 9400, "protocol": "TCP"}]
    assert dcgm["automountServiceAccountToken"] is False
    amd = find(objs, "DaemonSet", "device-metrics-exporter")["spec"]["template"]["spec"]
    assert amd["serviceAccountName"] == "device-metrics-exporter"
    assert amd["containers"][0]["args"] == ["-monitor-gpu=true", "-monitor-nic=false"]
    rules = find(objs, "ClusterRole", "device-metrics-exporter")["rules"]
    assert {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]} in rules
    npu = find(objs, "DaemonSet", "npu-exporter")["spec"]["template"]["spec"]
    assert "-containerMode=containerd" in npu["containers"][0]["args"][0]
    mlu = find(objs, "DaemonSet", "mlu-exporter")["spec"]["template"]["spec"]
    assert mlu["containers"][0]["image"] == "registry.example.com/site/exporter:v2.0.22"
    # On the vendor's pools only, tolerating its taints.
    assert dcgm["nodeSelector"] == {"feature.node.kubernetes.io/accelerator": "nvidia-gpu"}


def test_exporter_pods_are_admitted_by_their_namespaces_pod_security(tmp_path: Path) -> None:
    values_dir = tree(tmp_path, VENDORS, fleet=PROD_FLEET, defaults=False)
    out = render_into(values_dir, tmp_path / "out")
    objs = build_unit(out, "prod", "monitoring")
    results = pod_security(objs)
    assert len(results) == 4
    assert all(r["namespace"] == "accelerator-exporters" for r in results)
    assert [r for r in results if not r["allowed"]] == []
    ns = find(objs, "Namespace", "accelerator-exporters")
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    # The check can fail: the same pods in the (baseline) monitoring namespace are refused.
    moved = [
        {**o, "metadata": {**o["metadata"], "namespace": "accelerator-monitoring"}}
        for o in objs
        if o["kind"] == "DaemonSet"
    ]
    monitoring_ns = find(objs, "Namespace", "accelerator-monitoring")
    refused = [r for r in pod_security([monitoring_ns, *moved]) if not r["allowed"]]
    assert len(refused) == 4 and all("hostPath" in " ".join(r["reasons"]) for r in refused)


def test_exporters_installed_another_way_are_selected_by_upstream_labels(tmp_path: Path) -> None:
    off = "exporter: {render: false}\n"
    values_dir = tree(
        tmp_path,
        {
            "vendors/nvidia.yaml": off + pool("gpu-01"),
            "vendors/amd.yaml": "exporter: {render: false, namespace: kube-amd-gpu}\n"
            + pool("a-1"),
            "vendors/cambricon.yaml": "devicePlugin: {image: r.example/dp}\n" + off + pool("m-1"),
        },
        fleet=PROD_FLEET,
        defaults=False,
    )
    objs = build_unit(render_into(values_dir, tmp_path / "out"), "prod", "monitoring")
    assert not [o for o in objs if o["kind"] in ("DaemonSet", "ServiceAccount")]
    assert not [o for o in objs if o["metadata"]["name"] == "accelerator-exporters"]
    spec = {
        o["metadata"]["labels"]["accel-gitops.io/vendor"]: o["spec"]
        for o in objs
        if o["kind"] == "PodMonitor"
    }
    # dcgm-exporter's static manifest and chart: app.kubernetes.io/name, port "metrics".
    assert spec["nvidia"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": "dcgm-exporter"}
    assert spec["nvidia"]["podMetricsEndpoints"][0]["port"] == "metrics"
    assert spec["nvidia"]["namespaceSelector"] == {"any": True}
    # The AMD chart's pods: app.kubernetes.io/name=metrics-exporter, an unnamed port 5000.
    assert spec["amd"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": "metrics-exporter"}
    assert spec["amd"]["podMetricsEndpoints"][0]["portNumber"] == 5000
    assert spec["amd"]["namespaceSelector"] == {"matchNames": ["kube-amd-gpu"]}
    # Cambricon's mlu-exporter DaemonSet labels its pods app=mlu-monitoring.
    assert spec["cambricon"]["selector"]["matchLabels"] == {"app": "mlu-monitoring"}


def test_a_rendered_exporter_without_an_image_points_at_the_vendor_file(tmp_path: Path) -> None:
    values_dir = tree(
        tmp_path,
        {"vendors/cambricon.yaml": "devicePlugin: {image: r.example/dp}\n" + POOL},
        fleet=PROD_FLEET,
        defaults=False,
    )
    found = [line for line in lines(values_dir) if "MON001" in line]
    assert len(found) == 1 and found[0].startswith("values/vendors/cambricon.yaml:"), found
    assert "exporter.daemonSet.image is not set" in found[0] and "render: false" in found[0]


def test_fleet_can_name_the_exporter_namespace(tmp_path: Path) -> None:
    values_dir = tree(
        tmp_path,
        {"vendors/nvidia.yaml": POOL},
        fleet=PROD_FLEET + "monitoring: {exporterNamespace: gpu-exporters}\n",
        defaults=False,
    )
    objs = build_unit(render_into(values_dir, tmp_path / "out"), "prod", "monitoring")
    assert find(objs, "DaemonSet", "dcgm-exporter")["metadata"]["namespace"] == "gpu-exporters"
    monitor = find(objs, "PodMonitor", "dcgm-exporter")
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["gpu-exporters"]}
