"""Exporter DaemonSets rendered from the catalog, and PodMonitors that select exactly their pods
(issue #8 items 4 and 13)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from generator.builders import agents
from generator.values import loader as values
from generator.values.model import Mirrors, NodeAgent
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


# ---- the agent helpers, in-process (generator/builders/agents.py) -------------------------------
#
# A node agent's objects in Kubernetes' own shapes (core/v1 Container, PodSpec, Toleration;
# apps/v1 DaemonSet; rbac.authorization.k8s.io/v1 ClusterRole and ClusterRoleBinding), written out
# by hand from a NodeAgent made for each test.

MANAGED = {"app.kubernetes.io/managed-by": "accel-gitops"}
AGENT_LABELS = {"app.kubernetes.io/name": "probe-agent", "accel-gitops.io/vendor": "acme"}
RULE = {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}


def agent_meta(namespace: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": "probe-agent"}
    if namespace:
        out["namespace"] = namespace
    out["labels"] = {**MANAGED, **AGENT_LABELS}
    out["annotations"] = {"accel-gitops.io/source": "values/vendors/acme.yaml"}
    return out


def test_rbac_objects_a_service_account_its_cluster_role_and_the_binding() -> None:
    """An agent with rules gets a ServiceAccount in its namespace, a ClusterRole with the rules
    and a ClusterRoleBinding of the two; one without rules gets none."""
    agent = NodeAgent(image="r/a", version="v1", rbac=(RULE,))
    sources = ("values/vendors/acme.yaml",)
    assert agents.rbac_objects("probe-agent", "agents", agent, sources, AGENT_LABELS) == [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": agent_meta("agents")},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": agent_meta(),
            "rules": [RULE],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": agent_meta(),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "probe-agent",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "probe-agent", "namespace": "agents"}],
        },
    ]
    bare = NodeAgent(image="r/a", version="v1")
    assert agents.rbac_objects("probe-agent", "agents", bare, sources, AGENT_LABELS) == []


def test_container_carries_every_field_the_agent_sets() -> None:
    """Image name:version pulled IfNotPresent, then command, args, env, ports, resources,
    securityContext, both probes and mounts as given."""
    probe = {"httpGet": {"path": "/healthz", "port": 9000}}
    agent = NodeAgent(
        image="r/a",
        version="v1",
        command=("/agent",),
        args=("--v=2",),
        env=({"name": "NODE_NAME", "value": "x"},),
        volume_mounts=({"name": "dev", "mountPath": "/dev"},),
        security_context={"privileged": True},
        resources={"requests": {"cpu": "1"}},
        liveness_probe=probe,
        readiness_probe={"tcpSocket": {"port": 9001}},
    )
    ports = [{"name": "metrics", "containerPort": 9400, "protocol": "TCP"}]
    assert agents.container("probe-agent", agent, ports, registry_mirrors=Mirrors()) == {
        "name": "probe-agent",
        "image": "r/a:v1",
        "imagePullPolicy": "IfNotPresent",
        "command": ["/agent"],
        "args": ["--v=2"],
        "env": [{"name": "NODE_NAME", "value": "x"}],
        "ports": ports,
        "resources": {"requests": {"cpu": "1"}},
        "securityContext": {"privileged": True},
        "livenessProbe": probe,
        "readinessProbe": {"tcpSocket": {"port": 9001}},
        "volumeMounts": [{"name": "dev", "mountPath": "/dev"}],
    }


def test_container_of_a_bare_agent_gets_the_default_requests_and_memory_limit() -> None:
    """Nothing set upstream: the request keeps the pod out of BestEffort, the limit bounds it."""
    bare = NodeAgent(image="r/a", version="v1")
    assert agents.container("probe-agent", bare, registry_mirrors=Mirrors()) == {
        "name": "probe-agent",
        "image": "r/a:v1",
        "imagePullPolicy": "IfNotPresent",
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
    }


ACME_VENDOR = """\
resourceName: acme.example/npu
pciVendor: "abcd"
selectorLabel: accelerator
modelLabel: npu-model
nodeLabels: {accelerator: acme-npu}
taints: [{key: acme.example/npu, value: present, effect: NoSchedule}]
devicePlugin:
  name: acme-device-plugin
  image: registry.example.com/acme/device-plugin
  version: v1
  namespace: accelerator-plugins
  volumes:
    - {name: device-plugin, hostPath: {path: /var/lib/kubelet/device-plugins}}
  volumeMounts:
    - {name: device-plugin, mountPath: /var/lib/kubelet/device-plugins}
pools:
  - {name: n1, model: n1, pciDevices: ['ff01'], devicesPerNode: 4, nodes: [acme-1]}
"""


def test_daemonset_on_the_vendors_pools_with_host_namespaces_and_dns_for_the_host_network(
    tmp_path: Path,
) -> None:
    """Selected by `match`, labelled `labels` (pods both), rolling updates, the vendor's node
    selector and taints plus CriticalAddonsOnly, host PID/IPC/network as the agent asks
    (ClusterFirstWithHostNet so a host-network pod still resolves Services), its service account."""
    values_dir = tree(
        tmp_path, {"vendors/acme.yaml": ACME_VENDOR}, fleet=PROD_FLEET, defaults=False
    )
    view = values.load(values_dir).envs["prod"]
    [vendor] = view.vendors
    agent = NodeAgent(
        image="r/a",
        version="v1",
        host_pid=True,
        host_ipc=True,
        host_network=True,
        rbac=(RULE,),
        priority_class="acme-critical",
        volumes=({"name": "dev", "hostPath": {"path": "/dev"}},),
    )
    ds = agents.daemonset(
        view,
        vendor,
        agent,
        name="probe-agent",
        namespace="agents",
        labels=AGENT_LABELS,
        match={"app": "probe"},
    )
    assert ds == {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": agent_meta("agents"),
        "spec": {
            "selector": {"matchLabels": {"app": "probe"}},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": {**AGENT_LABELS, "app": "probe"}},
                "spec": {
                    "nodeSelector": {"feature.node.kubernetes.io/accelerator": "acme-npu"},
                    "tolerations": [
                        {"key": "CriticalAddonsOnly", "operator": "Exists"},
                        {
                            "key": "acme.example/npu",
                            "operator": "Equal",
                            "value": "present",
                            "effect": "NoSchedule",
                        },
                    ],
                    "priorityClassName": "acme-critical",
                    "hostPID": True,
                    "hostIPC": True,
                    "hostNetwork": True,
                    "dnsPolicy": "ClusterFirstWithHostNet",
                    "serviceAccountName": "probe-agent",
                    "containers": [
                        {
                            "name": "probe-agent",
                            "image": "r/a:v1",
                            "imagePullPolicy": "IfNotPresent",
                            "resources": {
                                "requests": {"cpu": "50m", "memory": "64Mi"},
                                "limits": {"memory": "256Mi"},
                            },
                        }
                    ],
                    "volumes": [{"name": "dev", "hostPath": {"path": "/dev"}}],
                },
            },
        },
    }
    # Without RBAC, host namespaces, priority class or volumes: no token, none of those keys.
    bare = NodeAgent(image="r/a", version="v1", priority_class="")
    spec = agents.daemonset(
        view, vendor, bare, name="probe-agent", namespace="agents", labels={}, match={"app": "p"}
    )["spec"]["template"]["spec"]
    assert sorted(spec) == [
        "automountServiceAccountToken",
        "containers",
        "nodeSelector",
        "tolerations",
    ]
    assert spec["automountServiceAccountToken"] is False
