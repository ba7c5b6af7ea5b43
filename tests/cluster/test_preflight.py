"""`preflight` (generator/cluster/preflight.py): a live cluster against what the values say the
site provides. Each check on a cluster state written out here (PRE001..PRE015); then the command
on the local control plane with every site add-on present, and each one removed in turn, and
read_cluster's DaemonSet pods on a pool's node (PRE011) and exporter pods (PRE014)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from generator.cluster import plane as fleet_plane
from generator.cluster.preflight import (
    ClusterState,
    argocd_version,
    check,
    cross_cluster_apis,
    dra_devices,
    dra_plugin_placement,
    pool_nodes,
    prometheus_loads,
    read_cluster,
    scraped_exporters,
    second_plugins,
    served_apis,
    site_gpu_operator,
    site_kueue,
    site_nfd,
    site_partitions,
    untolerated_taints,
)
from generator.controlplane.crds import needed_crds
from generator.controlplane.launcher import ControlPlane
from generator.findings import Finding, Location, Severity
from generator.render.layout import render_tree
from generator.values import loader as values
from generator.values.model import FleetView
from generator.vocab.units import Unit
from tests.fixtures import (
    DRA_NVIDIA,
    MIG_NVIDIA,
    SIM_FLEET,
    VNPU_ASCEND,
    Obj,
    build_of,
    cross_clusters,
    invoke,
    tree,
    workloads_of,
)

# Every PRE finding's hint ends with this, written out: a changed hint fails the tests.
HINT = "docs/platform.md says what the site provides and how preflight checks it"
NVIDIA = {"pools": [{"name": "a100", "model": "A100", "devicesPerNode": 4, "nodes": ["gpu-1"]}]}
TEAM = {"quota": {"nvidia": 4}}
PROMETHEUS = {
    "namespace": "monitoring",
    "podMonitorSelector": {"matchLabels": {"release": "kps"}},
    "podMonitorNamespaceSelector": {},
    "ruleSelector": {"matchLabels": {"release": "kps"}},
    "ruleNamespaceSelector": {},
}
FLEET: dict[str, Any] = {
    **SIM_FLEET,
    "nodeConfig": {"method": "nfd"},
    "monitoring": {"prometheusSelectorLabels": {"release": "kps"}, "prometheus": PROMETHEUS},
}
# fleet.yaml as make_tree writes FLEET (yaml.safe_dump, keys in order): nodeConfig.method on
# line 12, column 3; monitoring.prometheus on line 16, column 3.
NFD_AT = Location("values/fleet.yaml", 12, 3)
PROMETHEUS_AT = Location("values/fleet.yaml", 16, 3)
# As the pool's nodes carry them under NFD (the catalog's NVIDIA labels and taint).
GPU_LABELS = {
    "feature.node.kubernetes.io/accelerator": "nvidia-gpu",
    "feature.node.kubernetes.io/gpu-brand": "nvidia",
    "feature.node.kubernetes.io/gpu-model": "A100",
}
GPU_TAINT = {
    "key": "feature.node.kubernetes.io/accelerator",
    "value": "nvidia-gpu",
    "effect": "NoSchedule",
}


def make_tree(root: Path, fleet: dict[str, Any] = FLEET, team: dict[str, Any] = TEAM) -> Path:
    docs = {"fleet.yaml": fleet, "vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": team}
    files = {rel: yaml.safe_dump(doc, sort_keys=False) for rel, doc in docs.items()}
    return tree(root, files, defaults=False)


def env_of(
    root: Path, fleet: dict[str, Any] = FLEET, team: dict[str, Any] = TEAM
) -> tuple[FleetView, list[Unit]]:
    loaded = values.load(make_tree(root, fleet, team))
    return loaded.envs["dev"], [u for u in render_tree(loaded).units if u.env == "dev"]


def nfd_master(args: list[str]) -> dict[str, Any]:
    return {
        "kind": "Deployment",
        "metadata": {"name": "nfd-master", "namespace": "nfd"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "m",
                            "image": "registry.k8s.io/nfd/node-feature-discovery:v0.19.0",
                            "command": ["nfd-master"],
                            "args": args,
                        }
                    ]
                }
            }
        },
    }


def nfd_worker(tolerations: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "kind": "DaemonSet",
        "metadata": {"name": "nfd-worker", "namespace": "nfd"},
        "spec": {
            "template": {
                "spec": {
                    "tolerations": tolerations,
                    "containers": [
                        {
                            "name": "w",
                            "image": "registry.k8s.io/nfd/node-feature-discovery:v0.19.0",
                            "command": ["nfd-worker"],
                            "args": [],
                        }
                    ],
                }
            }
        },
    }


def node(labels: dict[str, str], taints: list[dict[str, str]]) -> dict[str, Any]:
    return {"metadata": {"name": "gpu-1", "labels": labels}, "spec": {"taints": taints}}


def everything(units: list[Unit]) -> ClusterState:
    """A cluster with every site add-on as the values declare it."""
    served = {str(o["apiVersion"]) for u in units for o in u.objects}
    return ClusterState(
        served=served,
        nodes={"gpu-1": node(GPU_LABELS, [GPU_TAINT])},
        workloads=[
            nfd_master(["-enable-taints"]),
            nfd_worker([{"key": "feature.node.kubernetes.io/accelerator", "operator": "Exists"}]),
        ],
        prometheuses=[
            {"metadata": {"name": "kps", "namespace": "monitoring"}, "spec": dict(PROMETHEUS)}
        ],
    )


def test_a_cluster_with_everything_the_site_provides_passes(tmp_path: Path) -> None:
    view, units = env_of(tmp_path)
    assert check(build_of(view), units, everything(units)) == []


def test_an_api_the_site_should_serve_is_reported_at_the_values_that_declare_it(
    tmp_path: Path,
) -> None:
    """nfd.k8s-sigs.io (NodeFeatureRule): declared by nodeConfig.method's default, nfd; once the
    fleet renders NFD, it installs the CRDs itself and nothing is asked of the cluster."""
    view, units = env_of(tmp_path)
    state = everything(units)
    state.served.discard("nfd.k8s-sigs.io/v1alpha1")
    assert served_apis(view, units, state) == [
        Finding(
            "PRE001",
            "the cluster does not serve nfd.k8s-sigs.io/v1alpha1 (NodeFeatureRule of unit "
            "node-config; values declare that the site runs Node Feature Discovery): Argo CD's "
            "dry-run would fail the unit's whole Application",
            NFD_AT,
            hint="install it on the cluster (its CRDs), or let the fleet render it "
            "(platform.<add-on>.provided: fleet); " + HINT,
        )
    ]
    fleet = {**FLEET, "platform": {"nfd": {"provided": "fleet"}}}
    view, units = env_of(tmp_path / "fleet", fleet)
    assert served_apis(view, units, state) == []


def test_a_missing_api_of_no_addon_is_reported_at_the_object(tmp_path: Path) -> None:
    view, units = env_of(tmp_path)
    state = everything(units)
    state.served.discard("monitoring.coreos.com/v1")
    [found] = served_apis(view, units, state)
    # At the values of the first object of that version (the monitoring unit's, at
    # monitoring in fleet.yaml), no add-on named.
    assert (found.message, found.location) == (
        "the cluster does not serve monitoring.coreos.com/v1 (PodMonitor of unit monitoring): "
        "Argo CD's dry-run would fail the unit's whole Application",
        Location("values/fleet.yaml", 13, 1),
    )


def test_the_sites_nfd_master_must_run_and_apply_taints(tmp_path: Path) -> None:
    view, units = env_of(tmp_path)
    state = everything(units)
    state.workloads[0] = nfd_master([])
    hint = (
        "set master.enableTaints: true in NFD's chart (in the GPU Operator's chart, whose NFD is "
        "a subchart: node-feature-discovery.master.enableTaints), or platform.nfd.provided: "
        "fleet; "
    )
    assert site_nfd(view, state) == [
        Finding(
            "PRE002",
            "nfd-master (nfd/nfd-master) runs without -enable-taints: it ignores the taints of "
            "the fleet's NodeFeatureRules, and every pod may land on the accelerator nodes",
            NFD_AT,
            hint=hint + HINT,
        )
    ]
    state.workloads = state.workloads[1:]
    assert site_nfd(view, state) == [
        Finding(
            "PRE002",
            "no Deployment runs nfd-master: nothing labels or taints the pools' nodes",
            NFD_AT,
            hint="install NFD (or platform.nfd.provided: fleet); " + HINT,
        )
    ]
    # A DaemonSet running nfd-master is not the master's Deployment; nor is a Deployment of
    # something else whose image merely starts like it.
    state.workloads = [
        {**nfd_master(["-enable-taints"]), "kind": "DaemonSet"},
        nfd_worker([{"operator": "Exists"}]),
    ]
    assert [f.message.split(":")[0] for f in site_nfd(view, state)] == [
        "no Deployment runs nfd-master"
    ]
    # Not asked when the fleet renders NFD, nor under node-patch.
    for i, fleet in enumerate(
        (
            {**FLEET, "platform": {"nfd": {"provided": "fleet"}}},
            {**FLEET, "nodeConfig": {"method": "node-patch"}},
        )
    ):
        view, _ = env_of(tmp_path / str(i), fleet)
        assert site_nfd(view, state) == []


def test_the_sites_nfd_worker_must_tolerate_every_pool_taint(tmp_path: Path) -> None:
    """Every missing taint named, in order (a second pool with a taint of its own); a worker
    tolerating every taint (operator Exists, no key) passes; a Deployment is no worker."""
    nvidia = {
        "pools": [
            *NVIDIA["pools"],
            {
                "name": "h100",
                "model": "H100",
                "devicesPerNode": 8,
                "nodes": ["gpu-2"],
                "taints": [{"key": "example.com/a", "value": "x", "effect": "NoSchedule"}],
            },
        ]
    }
    docs = {"fleet.yaml": FLEET, "vendors/nvidia.yaml": nvidia, "teams/ml.yaml": TEAM}
    files = {rel: yaml.safe_dump(doc, sort_keys=False) for rel, doc in docs.items()}
    loaded = values.load(tree(tmp_path, files, defaults=False))
    view = loaded.envs["dev"]
    state = everything([u for u in render_tree(loaded).units if u.env == "dev"])
    state.workloads[1] = nfd_worker([{"key": "other", "operator": "Exists"}])
    assert site_nfd(view, state) == [
        Finding(
            "PRE003",
            "nfd-worker (nfd/nfd-worker) does not tolerate example.com/a=x:NoSchedule, "
            "feature.node.kubernetes.io/accelerator=nvidia-gpu:NoSchedule: it does not run on "
            "those nodes, so nothing publishes their devices and the rules never label or taint "
            "them",
            NFD_AT,
            hint="add the tolerations to NFD's worker.tolerations (in the GPU Operator's chart: "
            "node-feature-discovery.worker.tolerations), or platform.nfd.provided: fleet; " + HINT,
        )
    ]
    state.workloads[1] = nfd_worker([{"operator": "Exists"}])
    assert site_nfd(view, state) == []
    state.workloads[1] = {**nfd_worker([]), "kind": "Deployment"}
    assert site_nfd(view, state) == []


def test_the_named_prometheus_must_exist_and_load_the_fleets_objects(tmp_path: Path) -> None:
    view, units = env_of(tmp_path)
    state = everything(units)
    state.prometheuses[0]["spec"]["ruleSelector"] = {"matchLabels": {"release": "other"}}
    # A Prometheus of another namespace is not the one named.
    state.prometheuses.append({"metadata": {"name": "other", "namespace": "elsewhere"}, "spec": {}})
    hint = (
        "copy the live Prometheus's selectors into monitoring.prometheus, then label the "
        "fleet's objects to match (MON003 checks it offline); "
    )
    # the alerting rules as well as the recording rules
    assert prometheus_loads(view, units, state) == [
        Finding(
            "PRE004",
            "Prometheus monitoring/kps on the cluster does not load PrometheusRule "
            f'accelerator-monitoring/{name}: its ruleSelector {{"matchLabels": '
            '{"release": "other"}} does not match the PrometheusRule\'s labels',
            PROMETHEUS_AT,
            hint=hint + HINT,
        )
        for name in ("accelerators-unified", "accelerators-alerts")
    ]
    state.prometheuses = state.prometheuses[1:]
    assert prometheus_loads(view, units, state) == [
        Finding(
            "PRE004",
            "no Prometheus in namespace 'monitoring' (monitoring.prometheus): nothing loads the "
            "fleet's PodMonitors and rules",
            PROMETHEUS_AT,
            hint="name the namespace of the Prometheus that scrapes the fleet; " + HINT,
        )
    ]
    # Nothing named: nothing to check.
    plain = {k: v for k, v in FLEET.items() if k != "monitoring"}
    view, units = env_of(tmp_path / "plain", plain)
    assert prometheus_loads(view, units, state) == []


def test_a_pool_node_missing_is_a_warning_and_one_without_its_labels_an_error(
    tmp_path: Path,
) -> None:
    view, units = env_of(tmp_path)
    state = everything(units)
    pool_at = Location("values/vendors/nvidia.yaml", 5, 3)  # pools[0].nodes
    state.nodes = {
        "gpu-1": node({**GPU_LABELS, "feature.node.kubernetes.io/gpu-model": "H100"}, [])
    }
    assert pool_nodes(view, state) == [
        Finding(
            "PRE005",
            "node gpu-1 of pool nvidia/a100 lacks label feature.node.kubernetes.io/gpu-model=A100 "
            "(it has 'H100'), taint feature.node.kubernetes.io/accelerator=nvidia-gpu:NoSchedule",
            pool_at,
            hint="check nfd-master (and nfd-worker on that node), or the node's PCI devices "
            "against the pool's model; " + HINT,
        )
    ]
    # A taint with another value is not the pool's taint.
    state.nodes = {"gpu-1": node(GPU_LABELS, [{**GPU_TAINT, "value": "other"}])}
    assert [f.message.rsplit("lacks ", 1)[1] for f in pool_nodes(view, state)] == [
        "taint feature.node.kubernetes.io/accelerator=nvidia-gpu:NoSchedule"
    ]
    state.nodes = {}
    assert pool_nodes(view, state) == [
        Finding(
            "PRE005",
            "node gpu-1 of pool nvidia/a100 is not in the cluster (yet): its devices are not there",
            pool_at,
            hint="join the node, or take it out of the pool's nodes",
            severity=Severity.WARNING,
        )
    ]


def test_before_the_first_sync_a_pool_nodes_missing_labels_are_what_the_sync_will_apply(
    tmp_path: Path,
) -> None:
    """The cluster serves NodeFeatureRules but has not the fleet's accel-nvidia yet: the node
    lacks the pool's labels and taint because nothing applied them, which the first sync does.
    A warning saying so, not an error; once the rule is there, the same node is an error."""
    view, units = env_of(tmp_path)
    state = everything(units)
    pool_at = Location("values/vendors/nvidia.yaml", 5, 3)  # pools[0].nodes
    state.nodes = {"gpu-1": node({}, [])}
    state.rules = {"some-site-rule"}
    lacks = (
        "node gpu-1 of pool nvidia/a100 lacks label feature.node.kubernetes.io/accelerator="
        "nvidia-gpu (it has none), label feature.node.kubernetes.io/gpu-brand=nvidia (it has "
        "none), label feature.node.kubernetes.io/gpu-model=A100 (it has none), taint "
        "feature.node.kubernetes.io/accelerator=nvidia-gpu:NoSchedule"
    )
    assert pool_nodes(view, state) == [
        Finding(
            "PRE005",
            lacks + ": not applied yet, the fleet's NodeFeatureRule accel-nvidia is not on the "
            "cluster (the first sync applies it)",
            pool_at,
            hint="nothing to do before the first sync; run preflight again after it, when a node "
            "that still lacks them is an error; " + HINT,
            severity=Severity.WARNING,
        )
    ]
    state.rules = {"accel-nvidia"}
    [after] = pool_nodes(view, state)
    assert (after.message, after.severity) == (lacks, Severity.ERROR)


def pool_view(root: Path, pool: dict[str, Any]) -> FleetView:
    """FLEET with one NVIDIA pool: `pool`."""
    docs = {"fleet.yaml": FLEET, "vendors/nvidia.yaml": {"pools": [pool]}, "teams/ml.yaml": TEAM}
    files = {rel: yaml.safe_dump(doc, sort_keys=False) for rel, doc in docs.items()}
    return values.load(tree(root, files, defaults=False)).envs["dev"]


def test_a_pool_taint_without_a_value_is_met_by_a_node_taint_without_one(tmp_path: Path) -> None:
    """Pool a100's own taint dedicated:NoSchedule has no value; gpu-1 carries it as the API
    writes it, without a value field."""
    pool = {
        "name": "a100",
        "model": "A100",
        "devicesPerNode": 4,
        "nodes": ["gpu-1"],
        "taints": [{"key": "dedicated", "effect": "NoSchedule"}],
    }
    state = ClusterState(
        nodes={"gpu-1": node(GPU_LABELS, [{"key": "dedicated", "effect": "NoSchedule"}])}
    )
    assert pool_nodes(pool_view(tmp_path, pool), state) == []


def test_a_pool_node_missing_leaves_the_nodes_after_it_checked(tmp_path: Path) -> None:
    """gpu-0 is not in the cluster; gpu-1, after it, lacks the pool's taint."""
    pool = {"name": "a100", "model": "A100", "devicesPerNode": 4, "nodes": ["gpu-0", "gpu-1"]}
    state = ClusterState(nodes={"gpu-1": node(GPU_LABELS, [])})
    nodes_at = Location("values/vendors/nvidia.yaml", 5, 3)
    assert pool_nodes(pool_view(tmp_path, pool), state) == [
        Finding(
            "PRE005",
            "node gpu-0 of pool nvidia/a100 is not in the cluster (yet): its devices are not there",
            nodes_at,
            hint="join the node, or take it out of the pool's nodes",
            severity=Severity.WARNING,
        ),
        Finding(
            "PRE005",
            "node gpu-1 of pool nvidia/a100 lacks taint "
            "feature.node.kubernetes.io/accelerator=nvidia-gpu:NoSchedule",
            nodes_at,
            hint="check nfd-master (and nfd-worker on that node), or the node's PCI devices "
            "against the pool's model; " + HINT,
        ),
    ]


# ---- on the local control plane -------------------------------------------------------------

pytestmark = pytest.mark.xdist_group("control-plane")


def test_preflight_on_a_cluster_with_every_addon_and_with_each_removed(
    tmp_path: Path, cluster: ControlPlane
) -> None:
    """The site's add-ons as a cluster has them: the CRDs, an nfd-master Deployment with
    -enable-taints, an nfd-worker DaemonSet that tolerates the pool's taint, the Prometheus,
    Kueue with the integrations the team's job and service need, and the pool's node. Passes;
    then each removed in turn is named."""
    fleet_plane.reset(cluster)
    api = cluster.client()
    values_dir = make_tree(tmp_path, KUEUE_FLEET, QUEUED_TEAM)
    view, units = env_of(tmp_path / "units", KUEUE_FLEET, QUEUED_TEAM)
    api.apply_crds(needed_crds([o for u in units for o in u.objects]))
    api.apply_crds(needed_crds([{"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus"}]))
    for ns in ("site-nfd", "monitoring", "kueue-system"):
        api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    manager = kueue_manager()
    manager["apiVersion"] = "apps/v1"
    manager["spec"]["selector"] = {"matchLabels": {"app": "kueue"}}
    manager["spec"]["template"]["metadata"] = {"labels": {"app": "kueue"}}
    api.apply(manager)

    def kueue_configmap(frameworks: list[str]) -> dict[str, Any]:
        [((ns, name), data)] = kueue_config(frameworks).items()
        meta = {"name": name, "namespace": ns}
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}

    api.apply(kueue_configmap(["batch/job", "deployment"]))
    selector = {"matchLabels": {"app": "nfd"}}
    template = {"metadata": {"labels": {"app": "nfd"}}}
    master = nfd_master(["-enable-taints"])
    worker = nfd_worker([{"key": "feature.node.kubernetes.io/accelerator", "operator": "Exists"}])
    for obj in (master, worker):
        obj["apiVersion"] = "apps/v1"
        obj["metadata"]["namespace"] = "site-nfd"
        obj["spec"]["selector"] = selector
        obj["spec"]["template"].update(template)
        api.apply(obj)
    prometheus = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "Prometheus",
        "metadata": {"name": "kps", "namespace": "monitoring"},
        "spec": {k: v for k, v in PROMETHEUS.items() if k != "namespace"},
    }
    api.apply(prometheus)
    api.apply({"apiVersion": "v1", "kind": "Node", **node(GPU_LABELS, [GPU_TAINT])})

    def run() -> tuple[int, list[str]]:
        result = invoke(
            "preflight",
            "--values",
            str(values_dir),
            "--kubeconfig",
            str(cluster.kubeconfig),
            "--output",
            "json",
        )
        doc = json.loads(result.output)
        return result.exit_code, [f["code"] for f in doc["findings"]]

    assert run() == (0, [])
    api.delete("apps/v1", "Deployment", "site-nfd", "nfd-master")
    assert run() == (1, ["PRE002"])
    api.apply(master)
    intolerant = nfd_worker([])
    intolerant.update(apiVersion="apps/v1", metadata=worker["metadata"])
    intolerant["spec"].update(selector=selector)
    intolerant["spec"]["template"].update(template)
    api.apply(intolerant)
    assert run() == (1, ["PRE003"])
    api.apply(worker)
    api.delete("monitoring.coreos.com/v1", "Prometheus", "monitoring", "kps")
    assert run() == (1, ["PRE004"])
    api.apply(prometheus)
    api.apply(kueue_configmap(["batch/job"]))
    assert run() == (1, ["PRE006"])  # the service's pods would run unadmitted
    api.delete("v1", "ConfigMap", "kueue-system", "kueue-manager-config")
    assert run() == (0, ["PRE006"])  # a configuration it cannot read: a warning
    api.delete("apps/v1", "Deployment", "kueue-system", "kueue-controller-manager")
    assert run() == (1, ["PRE006"])
    api.apply(manager)
    api.apply(kueue_configmap(["batch/job", "deployment"]))
    api.delete("v1", "Node", "", "gpu-1")
    assert run() == (0, ["PRE005"])  # a node not joined yet is a warning
    # kueue-system outlives a reset (simulate's Kueue runs there): what this test put there goes.
    api.delete("apps/v1", "Deployment", "kueue-system", "kueue-controller-manager")
    api.delete("v1", "ConfigMap", "kueue-system", "kueue-manager-config")
    fleet_plane.reset(cluster)


# ---- PRE006: the site's Kueue ------------------------------------------------------------------

KUEUE_FLEET = {**FLEET, "scheduling": {"backend": "kueue"}}
# fleet.yaml as make_tree writes KUEUE_FLEET: scheduling.backend on line 27, column 3.
KUEUE_AT = Location("values/fleet.yaml", 27, 3)
QUEUED_TEAM = {
    "quota": {"nvidia": 4},
    "jobs": {"train": {"vendor": "nvidia", "devices": 1, "images": {"nvidia": "r/t:1"}}},
    "services": {
        "serve": {
            "images": {"nvidia": "r/s:1"},
            "tracks": {"nvidia": {"devicesPerReplica": 1, "replicas": 1}},
        }
    },
}


def kueue_manager(image: str = "registry.k8s.io/kueue/kueue:v0.17.0") -> dict[str, Any]:
    return {
        "kind": "Deployment",
        "metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "manager", "image": image, "command": ["/manager"]}],
                    "volumes": [
                        {"name": "cert", "secret": {"secretName": "kueue-webhook-server-cert"}},
                        {"name": "manager-config", "configMap": {"name": "kueue-manager-config"}},
                    ],
                }
            }
        },
    }


def kueue_config(frameworks: list[str] | None) -> dict[tuple[str, str], dict[str, str]]:
    doc: dict[str, Any] = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration"}
    if frameworks is not None:
        doc["integrations"] = {"frameworks": frameworks}
    return {
        ("kueue-system", "kueue-manager-config"): {
            "controller_manager_config.yaml": yaml.safe_dump(doc)
        }
    }


def kueue_env(root: Path) -> tuple[FleetView, ClusterState]:
    docs = {"fleet.yaml": KUEUE_FLEET, "vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": QUEUED_TEAM}
    files = {rel: yaml.safe_dump(doc, sort_keys=False) for rel, doc in docs.items()}
    view = values.load(tree(root, files, defaults=False)).envs["dev"]
    state = ClusterState(
        workloads=[kueue_manager()], configmaps=kueue_config(["batch/job", "deployment"])
    )
    return view, state


def test_the_sites_kueue_must_run_with_the_integrations_the_fleet_needs(tmp_path: Path) -> None:
    view, state = kueue_env(tmp_path)
    assert site_kueue(workloads_of(view), state) == []
    # Without `deployment`, the services' pods would run unadmitted.
    state.configmaps = kueue_config(["batch/job", "pod"])
    assert site_kueue(workloads_of(view), state) == [
        Finding(
            "PRE006",
            "Kueue (kueue-system/kueue-controller-manager) does not manage deployment (its "
            "integrations: batch/job, pod): those workloads of the fleet would run without "
            "being admitted, outside every team's ClusterQueue",
            KUEUE_AT,
            hint="add them to integrations.frameworks of Kueue's manager configuration (or "
            "platform.kueue.provided: fleet); " + HINT,
        )
    ]
    # No integrations named: Kueue's default, batch/job alone.
    state.configmaps = kueue_config(None)
    [default] = site_kueue(workloads_of(view), state)
    assert "does not manage deployment (its integrations: batch/job)" in default.message
    # A configuration preflight cannot read is said, as a warning.
    state.configmaps = {}
    [unread] = site_kueue(workloads_of(view), state)
    assert (unread.code, unread.severity) == ("PRE006", Severity.WARNING)
    assert unread.message.startswith("Kueue (kueue-system/kueue-controller-manager) mounts no ")


def test_the_sites_kueue_is_found_by_its_image_alone(tmp_path: Path) -> None:
    view, state = kueue_env(tmp_path)
    missing = Finding(
        "PRE006",
        "no Deployment runs Kueue (image registry.k8s.io/kueue/kueue): nothing admits the "
        "fleet's queued Jobs, which stay suspended",
        KUEUE_AT,
        hint="install Kueue (or platform.kueue.provided: fleet); " + HINT,
    )
    for other in ("registry.k8s.io/kueue/kueueviz-backend:v0.17.0", "example.com/not-kueue:1"):
        state.workloads = [kueue_manager(other)]
        assert site_kueue(workloads_of(view), state) == [missing]
    state.workloads = [{**kueue_manager(), "kind": "DaemonSet"}]
    assert site_kueue(workloads_of(view), state) == [missing]
    state.workloads = [kueue_manager("kueue@sha256:0123")]
    assert site_kueue(workloads_of(view), state) == []
    # Not asked when the fleet renders Kueue, nor when nothing uses it.
    for i, fleet in enumerate(
        ({**KUEUE_FLEET, "platform": {"kueue": {"provided": "fleet"}}}, FLEET)
    ):
        other_view, _ = env_of(tmp_path / str(i), fleet)
        assert site_kueue(workloads_of(other_view), ClusterState()) == []


def test_every_kueue_manager_is_judged_and_each_finding_says_it_whole(tmp_path: Path) -> None:
    fleet = {**KUEUE_FLEET, "platform": {"kueue": {"provided": "site"}}}
    docs = {"fleet.yaml": fleet, "vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": QUEUED_TEAM}
    files = {rel: yaml.safe_dump(doc, sort_keys=False) for rel, doc in docs.items()}
    view = values.load(tree(tmp_path, files, defaults=False)).envs["dev"]
    # platform.kueue is declared: the findings are there (fleet.yaml line 29), not at the backend.
    at = Location("values/fleet.yaml", 29, 3)
    unread = kueue_manager()
    unread["metadata"] = {"name": "first", "namespace": "elsewhere"}
    state = ClusterState(workloads=[unread, kueue_manager()], configmaps=kueue_config(["pod"]))
    assert site_kueue(workloads_of(view), state) == [
        Finding(
            "PRE006",
            "Kueue (elsewhere/first) mounts no controller_manager_config.yaml preflight can read: "
            "whether it manages batch/job, deployment is not checked",
            at,
            hint=HINT,
            severity=Severity.WARNING,
        ),
        Finding(
            "PRE006",
            "Kueue (kueue-system/kueue-controller-manager) does not manage batch/job, deployment "
            "(its integrations: pod): those workloads of the fleet would run without being "
            "admitted, outside every team's ClusterQueue",
            at,
            hint="add them to integrations.frameworks of Kueue's manager configuration (or "
            "platform.kueue.provided: fleet); " + HINT,
        ),
    ]


# PRE007: what a team declares as its own (external) and a workload uses

EXTERNAL_TEAM = {
    "quota": {"nvidia": 4},
    "namespaces": ["ml", "ml-b"],
    "external": {"secrets": ["tok", "unused"], "persistentVolumeClaims": ["data"]},
    "jobs": {
        "j": {
            "vendor": "nvidia",
            "namespace": "ml-b",
            "images": {"nvidia": "r/t:1"},
            "imagePullSecrets": [{"name": "tok"}],
            "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
            "volumeMounts": [{"name": "d", "mountPath": "/data"}],
        }
    },
}


def test_a_declared_object_a_workload_uses_must_exist_in_the_workloads_namespace(
    tmp_path: Path,
) -> None:
    view, units = env_of(tmp_path, team=EXTERNAL_TEAM)
    state = everything(units)
    # The claim exists, but in the team's other namespace; the unused Secret is not asked for.
    state.team_objects = {("Secret", "ml-b", "tok"), ("PersistentVolumeClaim", "ml", "data")}
    (finding,) = check(build_of(view), units, state)
    assert (finding.code, finding.message, finding.path) == (
        "PRE007",
        "PersistentVolumeClaim ml-b/data does not exist: the team declares it (external) and "
        "its workload uses it, so its pods would not start",
        "$.jobs.j.volumes[0].persistentVolumeClaim.claimName",
    )
    assert finding.location.file == "values/teams/ml.yaml"
    assert finding.hint == "create it in namespace 'ml-b' before Argo CD syncs the team"
    state.team_objects.add(("PersistentVolumeClaim", "ml-b", "data"))
    assert check(build_of(view), units, state) == []


def test_preflight_reads_the_objects_of_the_namespaces_that_use_them(
    tmp_path: Path, cluster: ControlPlane
) -> None:
    fleet_plane.reset(cluster)
    api = cluster.client()
    view, _ = env_of(tmp_path, team=EXTERNAL_TEAM)
    for ns in ("ml", "ml-b"):
        api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        api.apply(
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tok", "namespace": ns}}
        )
    api.apply(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ml-b"}}
    )
    state = read_cluster(api, workloads_of(view))
    # Secrets and claims of ml-b only (the job's namespace); ConfigMaps are not asked for.
    assert state.team_objects == {("Secret", "ml-b", "tok")}


# Two TrainJobs on the site's Kubeflow Trainer (and JobSet); the second names its runtime on
# line 14 (make_tree writes the keys in this order).
TRAINJOBS = {
    "quota": {"nvidia": 4},
    "jobs": {
        "a": {"kind": "trainjob", "vendor": "nvidia", "images": {"nvidia": "r/t"}},
        "b": {
            "kind": "trainjob",
            "vendor": "nvidia",
            "images": {"nvidia": "r/t"},
            "runtime": "jax-distributed",
        },
    },
}
SITE_TRAINER = {
    **FLEET,
    "platform": {"trainer": {"provided": "site"}, "jobset": {"provided": "site"}},
}


def test_the_sites_trainer_must_have_the_runtimes_the_trainjobs_name(tmp_path: Path) -> None:
    view, units = env_of(tmp_path, SITE_TRAINER, TRAINJOBS)
    state = everything(units)
    state.training_runtimes = {"torch-distributed"}
    (finding,) = check(build_of(view), units, state)
    assert (finding.code, finding.path, str(finding.location)) == (
        "PRE008",
        "$.jobs.b.runtime",
        "values/teams/ml.yaml:14:5",
    )
    assert finding.message == (
        "TrainJob ml/b names ClusterTrainingRuntime 'jax-distributed', which the site's Kubeflow "
        "Trainer does not have (it has: torch-distributed): Trainer's webhook refuses the TrainJob"
    )
    state.training_runtimes = {"torch-distributed", "jax-distributed"}
    assert check(build_of(view), units, state) == []
    # a cluster that does not serve the kind: PRE001's, not this check's
    state.training_runtimes = None
    assert [f.code for f in check(build_of(view), units, state)] == []
    # the fleet's own Trainer installs what its TrainJobs name: nothing to check
    fleet = {
        **FLEET,
        "platform": {"trainer": {"provided": "fleet"}, "jobset": {"provided": "site"}},
    }
    view, units = env_of(tmp_path / "fleet", fleet, TRAINJOBS)
    state = everything(units)
    state.training_runtimes = set()
    assert [f.code for f in check(build_of(view), units, state)] == []


# ---- PRE009: a DRA vendor's devices, published by the site's driver ----------------------------


def dra_slice(node: str, driver: str, devices: list[tuple[str, str]], qualified: bool) -> Obj:
    """A ResourceSlice of `devices` (type, productName), the attribute names with the driver's
    domain or without."""

    def name(attr: str) -> str:
        return f"{driver}/{attr}" if qualified else attr

    return {
        "spec": {
            "driver": driver,
            "nodeName": node,
            "devices": [
                {
                    "name": f"gpu-{i}",
                    "attributes": {
                        name("type"): {"string": kind},
                        name("productName"): {"string": product},
                    },
                }
                for i, (kind, product) in enumerate(devices)
            ],
        }
    }


def test_each_dra_pool_node_must_publish_its_devices_by_the_sites_driver(tmp_path: Path) -> None:
    """Pool h100-dra names d1, d2 and d3 (2 H100s each): d1's two H100s are there (one slice
    writes the driver's domain, one does not: the same attributes); d2 has one H100, an A100 and
    a MIG device, and another driver's H100; d3 is not in the cluster (PRE005's)."""
    dra = DRA_NVIDIA.replace(
        "devicesPerNode: 8, nodes: [n4]", "devicesPerNode: 2, nodes: [d1, d2, d3]"
    )
    files = {"vendors/nvidia-dra.yaml": dra, "fleet.yaml": yaml.safe_dump(SIM_FLEET)}
    view = values.load(tree(tmp_path, files)).envs["dev"]
    h100 = ("gpu", "NVIDIA H100 80GB HBM3")
    state = ClusterState(
        nodes={"d1": {}, "d2": {}},
        slices=[
            dra_slice("d1", "gpu.nvidia.com", [h100], qualified=False),
            dra_slice("d1", "gpu.nvidia.com", [h100], qualified=True),
            dra_slice(
                "d2",
                "gpu.nvidia.com",
                [h100, ("gpu", "NVIDIA A100-SXM4-40GB"), ("mig", "NVIDIA H100 80GB HBM3")],
                qualified=False,
            ),
            dra_slice("d2", "example.com", [h100], qualified=False),
        ],
    )
    assert dra_devices(view, state) == [
        Finding(
            "PRE009",
            "node d2 of pool nvidia-dra/h100-dra publishes 1 whole H100 devices by DRA driver "
            "gpu.nvidia.com (3 devices in its ResourceSlices), the pool holds 2",
            Location("values/vendors/nvidia-dra.yaml", 6, 54),
            hint="check that the site's gpu.nvidia.com driver runs on the node and its "
            "productName starts with 'NVIDIA H100'; docs/platform.md says what the site "
            "provides and how preflight checks it",
        )
    ]
    # Whole vendors are not asked for slices.
    assert dra_devices(env_of(tmp_path / "whole")[0], state) == []


def dra_pool_view(root: Path) -> FleetView:
    """DRA_NVIDIA's pool h100-dra on nodes d1 and d2, 2 H100s each."""
    dra = DRA_NVIDIA.replace("devicesPerNode: 8, nodes: [n4]", "devicesPerNode: 2, nodes: [d1, d2]")
    files = {"vendors/nvidia-dra.yaml": dra, "fleet.yaml": yaml.safe_dump(SIM_FLEET)}
    return values.load(tree(root, files)).envs["dev"]


# d2 with no ResourceSlice: the site's driver does not run there.
D2_UNPUBLISHED = Finding(
    "PRE009",
    "node d2 of pool nvidia-dra/h100-dra publishes 0 whole H100 devices by DRA driver "
    "gpu.nvidia.com (0 devices in its ResourceSlices), the pool holds 2",
    Location("values/vendors/nvidia-dra.yaml", 6, 54),
    hint="check that the site's gpu.nvidia.com driver runs on the node and its productName "
    "starts with 'NVIDIA H100'; " + HINT,
)


def test_a_dra_pool_node_missing_leaves_the_nodes_after_it_checked(tmp_path: Path) -> None:
    """d1 is not in the cluster (PRE005's); d2, after it, publishes nothing."""
    state = ClusterState(nodes={"d2": {}})
    assert dra_devices(dra_pool_view(tmp_path), state) == [D2_UNPUBLISHED]


def test_preflight_checks_each_dra_pools_nodes(tmp_path: Path) -> None:
    """check runs PRE009: d1 publishes its two H100s, d2 nothing."""
    h100 = ("gpu", "NVIDIA H100 80GB HBM3")
    state = ClusterState(
        nodes={"d1": {"metadata": {}}, "d2": {"metadata": {}}},
        slices=[dra_slice("d1", "gpu.nvidia.com", [h100, h100], qualified=False)],
    )
    found = check(build_of(dra_pool_view(tmp_path)), [], state)
    assert [f for f in found if f.code == "PRE009"] == [D2_UNPUBLISHED]


# ---- PRE010: a MIG pool's layout, applied by the site's MIG manager --------------------------------


def mig_node(state: str | None, allocatable: str | None) -> Obj:
    labels = {} if state is None else {"nvidia.com/mig.config.state": state}
    status = {} if allocatable is None else {"nvidia.com/mig-3g.40gb": allocatable}
    return {"metadata": {"labels": labels}, "status": {"allocatable": status}}


def test_each_mig_pool_node_must_have_its_layout_applied_and_advertise_it(tmp_path: Path) -> None:
    """Pool a100-mig names m1..m6 (2 GPUs, each two 3g.40gb instances: 4 per node). m1 is
    ready with 4; m2 is still rebooting; m3 reports success but advertises 3 (a GPU lost);
    m4 has no state label (no MIG manager there); m5 advertises 5 (more is fine); m6 is not in
    the cluster (PRE005's)."""
    mig = MIG_NVIDIA.replace("nodes: [n5]", "nodes: [m1, m2, m3, m4, m5, m6]")
    files = {"vendors/nvidia-mig.yaml": mig, "fleet.yaml": yaml.safe_dump(SIM_FLEET)}
    view = values.load(tree(tmp_path, files)).envs["dev"]
    state = ClusterState(
        nodes={
            "m1": mig_node("success", "4"),
            "m2": mig_node("rebooting", "0"),
            "m3": mig_node("success", "3"),
            "m4": mig_node(None, None),
            "m5": mig_node("success", "5"),
        }
    )
    where = Location("values/vendors/nvidia-mig.yaml", 8, 84)
    hint = (
        "check that the site's MIG manager runs on the node and knows the layout all-3g.40gb "
        "(it sets nvidia.com/mig.config.state=success once applied), then restart the fleet's "
        "device plugin there (the MIG manager restarts only the GPU Operator's); " + HINT
    )
    tail = (
        ": the pool counts 4 nvidia.com/mig-3g.40gb on it (2 devices, each partitioned into 2 "
        "MIG 3g.40gb instances by the layout all-3g.40gb)"
    )
    assert site_partitions(view, state) == [
        Finding(
            "PRE010",
            "node m2 of pool nvidia-mig/a100-mig reports nvidia.com/mig.config.state=rebooting"
            + tail,
            where,
            hint=hint,
        ),
        Finding(
            "PRE010", "node m3 of pool nvidia-mig/a100-mig advertises 3" + tail, where, hint=hint
        ),
        Finding(
            "PRE010",
            "node m4 of pool nvidia-mig/a100-mig has no label nvidia.com/mig.config.state (no "
            "MIG manager has reported there)" + tail,
            where,
            hint=hint,
        ),
    ]
    # The pool's nodes are asked for the layout label as for any pool label (PRE005).
    assert [f.message for f in pool_nodes(view, state) if "m1" in f.message] == [
        "node m1 of pool nvidia-mig/a100-mig lacks label "
        "feature.node.kubernetes.io/accelerator=nvidia-gpu-mig (it has none), "
        "label feature.node.kubernetes.io/gpu-brand=nvidia (it has none), "
        "label feature.node.kubernetes.io/gpu-model=A100 (it has none), "
        "label nvidia.com/mig.config=all-3g.40gb (it has none), "
        "taint feature.node.kubernetes.io/accelerator=nvidia-gpu:NoSchedule"
    ]
    # Vendors that are not partitioned are not asked.
    assert site_partitions(env_of(tmp_path / "whole")[0], state) == []


# ---- PRE010: a vNPU pool's vNPUs, created by the site with npu-smi -----------------------------

VNPU = "huawei.com/Ascend910-6c.1cpu.16g"


def vnpu_node(allocatable: str | None) -> Obj:
    status = {} if allocatable is None else {VNPU: allocatable}
    return {"metadata": {"labels": {}}, "status": {"allocatable": status}}


def test_each_vnpu_pool_node_must_advertise_its_vnpus(tmp_path: Path) -> None:
    """Pool 910b-vnpu names v1..v4 (2 NPUs, each 4 vNPUs of vir06_1c_16g: 8 per node). v1
    advertises 8, with no label at all (no manager reports vNPUs); v2 is not in the cluster
    (PRE005's); v3 advertises 7 (a vNPU missing); v4 advertises none (the site made none)."""
    vnpu = VNPU_ASCEND.replace("nodes: [npu-v1]", "nodes: [v1, v2, v3, v4]")
    files = {"vendors/ascend-vnpu.yaml": vnpu, "fleet.yaml": yaml.safe_dump(SIM_FLEET)}
    view = values.load(tree(tmp_path, files)).envs["dev"]
    state = ClusterState(nodes={"v1": vnpu_node("8"), "v3": vnpu_node("7"), "v4": vnpu_node(None)})
    hint = (
        "create the vNPUs on the node (npu-smi set -t create-vnpu ... -f vir06_1c_16g) and "
        "restart the device plugin there; " + HINT
    )
    assert site_partitions(view, state) == [
        Finding(
            "PRE010",
            f"node {name} of pool ascend-vnpu/910b-vnpu advertises {count} {VNPU}: the pool "
            "counts 8 on it (2 NPUs, each split into 4 vNPUs of template vir06_1c_16g)",
            Location("values/vendors/ascend-vnpu.yaml", 8, 55),
            hint=hint,
        )
        for name, count in (("v3", "7"), ("v4", "0"))
    ]


def test_a_partitioned_nodes_count_that_is_not_a_whole_number_counts_none(tmp_path: Path) -> None:
    """Pool a100-mig of one 80GB A100 as one 7g.80gb instance: 1 per node. m1's allocatable
    reads 500m, half an instance, which is none: not the 1 the pool counts."""
    mig = MIG_NVIDIA.replace("3g.40gb", "7g.80gb").replace("devicesPerNode: 2", "devicesPerNode: 1")
    files = {
        "vendors/nvidia-mig.yaml": mig.replace("nodes: [n5]", "nodes: [m1]"),
        "fleet.yaml": yaml.safe_dump(SIM_FLEET),
    }
    view = values.load(tree(tmp_path, files)).envs["dev"]
    node = {
        "metadata": {"labels": {"nvidia.com/mig.config.state": "success"}},
        "status": {"allocatable": {"nvidia.com/mig-7g.80gb": "500m"}},
    }
    assert site_partitions(view, ClusterState(nodes={"m1": node})) == [
        Finding(
            "PRE010",
            "node m1 of pool nvidia-mig/a100-mig advertises 500m: the pool counts 1 "
            "nvidia.com/mig-7g.80gb on it (1 devices, each partitioned into 1 MIG 7g.80gb "
            "instances by the layout all-7g.80gb)",
            Location("values/vendors/nvidia-mig.yaml", 8, 84),
            hint="check that the site's MIG manager runs on the node and knows the layout "
            "all-7g.80gb (it sets nvidia.com/mig.config.state=success once applied), then "
            "restart the fleet's device plugin there (the MIG manager restarts only the GPU "
            "Operator's); " + HINT,
        )
    ]


def test_a_partitioned_nodes_count_is_read_as_a_quantity(tmp_path: Path) -> None:
    """A node that advertises 1k vNPUs (a quantity's suffix) has 1000, more than the pool's 8:
    nothing to say; one that advertises 7 is short."""
    vnpu = VNPU_ASCEND.replace("nodes: [npu-v1]", "nodes: [v1, v2]")
    files = {"vendors/ascend-vnpu.yaml": vnpu, "fleet.yaml": yaml.safe_dump(SIM_FLEET)}
    view = values.load(tree(tmp_path, files)).envs["dev"]
    resource = "huawei.com/Ascend910-6c.1cpu.16g"
    state = ClusterState(
        nodes={
            "v1": {"metadata": {}, "status": {"allocatable": {resource: "1k"}}},
            "v2": {"metadata": {}, "status": {"allocatable": {resource: "7"}}},
        }
    )
    assert [f.message.split(":")[0] for f in site_partitions(view, state)] == [
        f"node v2 of pool ascend-vnpu/910b-vnpu advertises 7 {resource}"
    ]


def test_preflight_checks_each_partitioned_pools_nodes(tmp_path: Path) -> None:
    """check runs PRE010: MIG_NVIDIA's node n5, its layout not applied yet."""
    files = {"vendors/nvidia-mig.yaml": MIG_NVIDIA, "fleet.yaml": yaml.safe_dump(SIM_FLEET)}
    view = values.load(tree(tmp_path, files)).envs["dev"]
    state = ClusterState(nodes={"n5": mig_node("pending", "0")})
    assert [
        (f.code, f.message) for f in check(build_of(view), [], state) if f.code == "PRE010"
    ] == [
        (
            "PRE010",
            "node n5 of pool nvidia-mig/a100-mig reports nvidia.com/mig.config.state=pending: "
            "the pool counts 4 nvidia.com/mig-3g.40gb on it (2 devices, each partitioned into 2 "
            "MIG 3g.40gb instances by the layout all-3g.40gb)",
        )
    ]


# ---- PRE011..PRE013: the site's DaemonSets on the nodes the fleet labels and taints --------------

GPU_TOLERATION = {**GPU_TAINT, "operator": "Equal"}
GPU_TOLERATION_YAML = (
    "{key: feature.node.kubernetes.io/accelerator, operator: Equal, value: nvidia-gpu, "
    "effect: NoSchedule}"
)
TOLERATION_VALUES = (
    "GPU Operator: daemonsets.tolerations, and node-feature-discovery.worker.tolerations for "
    "its NFD; NFD: worker.tolerations; NVIDIA DRA driver: kubeletPlugin.tolerations"
)
# The vendor file's top: where the catalog's taints and device plugin land (values/loader.py
# _catalog_doc), the line that includes them.
NVIDIA_TOP = Location("values/vendors/nvidia.yaml", 1, 1)


def daemonset(
    ns: str,
    name: str,
    *,
    tolerations: list[dict[str, str]] | None = None,
    host_paths: tuple[str, ...] = (),
    affinity: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
) -> Obj:
    """A DaemonSet whose one container mounts `host_paths` from the node."""
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "c",
                "image": "example.com/agent:1",
                "volumeMounts": [
                    {"name": f"v{i}", "mountPath": f"/host/{i}"} for i in range(len(host_paths))
                ],
            }
        ],
        "volumes": [{"name": f"v{i}", "hostPath": {"path": p}} for i, p in enumerate(host_paths)],
    }
    if tolerations is not None:
        spec["tolerations"] = tolerations
    if affinity is not None:
        spec["affinity"] = affinity
    meta = {"name": name, "namespace": ns, "labels": labels or {}}
    return {"kind": "DaemonSet", "metadata": meta, "spec": {"template": {"spec": spec}}}


def two_pool_view(root: Path) -> FleetView:
    """NVIDIA with pool a100 on gpu-1 and gpu-2 (the catalog's taint) and pool h100 on gpu-3,
    whose own taints (line 13 of the vendor file) replace it with a NoExecute one."""
    nvidia = {
        "pools": [
            {"name": "a100", "model": "A100", "devicesPerNode": 4, "nodes": ["gpu-1", "gpu-2"]},
            {
                "name": "h100",
                "model": "H100",
                "devicesPerNode": 8,
                "nodes": ["gpu-3"],
                "taints": [{"key": "example.com/h100", "value": "x", "effect": "NoExecute"}],
            },
        ]
    }
    docs = {"fleet.yaml": FLEET, "vendors/nvidia.yaml": nvidia, "teams/ml.yaml": TEAM}
    files = {rel: yaml.safe_dump(doc, sort_keys=False) for rel, doc in docs.items()}
    return values.load(tree(root, files, defaults=False)).envs["dev"]


def test_a_site_daemonset_on_a_pool_node_must_tolerate_the_fleets_taints(tmp_path: Path) -> None:
    """gpu-operator/nvidia-dcgm runs on gpu-1 and does not tolerate the pool's taint: its pod
    stays, but none comes back once it restarts. With the toleration, nothing to say; nor for a
    DaemonSet with no pod on a pool's node, nor for the fleet's own."""
    view, units = env_of(tmp_path)
    state = everything(units)
    state.workloads.append(daemonset("gpu-operator", "nvidia-dcgm", tolerations=[]))
    state.daemon_pods = {("gpu-operator", "nvidia-dcgm"): {"gpu-1"}}
    expected = Finding(
        "PRE011",
        "gpu-operator/nvidia-dcgm runs on gpu-1 (pool nvidia/a100) and does not tolerate "
        "feature.node.kubernetes.io/accelerator=nvidia-gpu:NoSchedule, which the fleet adds: its "
        "pod stays until it restarts, then none comes back",
        NVIDIA_TOP,
        hint=f"add {GPU_TOLERATION_YAML} to the chart value that sets its tolerations "
        f"({TOLERATION_VALUES}); " + HINT,
    )
    assert untolerated_taints(build_of(view), state) == [expected]
    assert check(build_of(view), units, state) == [expected]
    state.workloads[-1] = daemonset("gpu-operator", "nvidia-dcgm", tolerations=[GPU_TOLERATION])
    assert untolerated_taints(build_of(view), state) == []
    # No pod on a pool's node: nothing the fleet's taint changes.
    state.workloads[-1] = daemonset("gpu-operator", "nvidia-dcgm", tolerations=[])
    state.daemon_pods = {("gpu-operator", "nvidia-dcgm"): {"cpu-1"}}
    assert untolerated_taints(build_of(view), state) == []


def test_the_fleets_own_daemonsets_are_not_the_sites(tmp_path: Path) -> None:
    """Labelled as the fleet labels what it renders, named as one of its build's DaemonSets, or
    in the namespace of an add-on chart the fleet renders (NFD here): none is reported, though
    none tolerates the taint."""
    fleet = {**FLEET, "platform": {"nfd": {"provided": "fleet"}}}
    view, units = env_of(tmp_path, fleet)
    state = everything(units)
    state.workloads = [
        daemonset("site", "labelled", labels={"app.kubernetes.io/managed-by": "accel-gitops"}),
        daemonset("accelerator-exporters", "dcgm-exporter"),
        daemonset("node-feature-discovery", "nfd-worker"),
        daemonset("site", "other"),
    ]
    state.daemon_pods = {
        (str(w["metadata"]["namespace"]), str(w["metadata"]["name"])): {"gpu-1"}
        for w in state.workloads
    }
    assert [f.message.split(" runs")[0] for f in untolerated_taints(build_of(view), state)] == [
        "site/other"
    ]


def test_one_finding_per_daemonset_names_each_pool_its_nodes_and_taints(tmp_path: Path) -> None:
    """A DaemonSet on the nodes of two pools: one finding, its nodes by pool, every taint it
    does not tolerate; a NoExecute taint evicts its pod (the DaemonSet controller deletes it).
    At the first pool's taints (the catalog's: the vendor file's top); on h100 alone, at that
    pool's own taints."""
    view = two_pool_view(tmp_path)
    state = ClusterState(
        workloads=[daemonset("hami", "hami-device-plugin")],
        daemon_pods={("hami", "hami-device-plugin"): {"gpu-3", "gpu-2", "gpu-1", "cpu-1"}},
    )
    assert untolerated_taints(build_of(view), state) == [
        Finding(
            "PRE011",
            "hami/hami-device-plugin runs on gpu-1, gpu-2 (pool nvidia/a100), gpu-3 (pool "
            "nvidia/h100) and does not tolerate "
            "feature.node.kubernetes.io/accelerator=nvidia-gpu:NoSchedule, "
            "example.com/h100=x:NoExecute, which the fleet adds: NoExecute evicts its pod, and "
            "none comes back",
            NVIDIA_TOP,
            hint=f"add {GPU_TOLERATION_YAML}, {{key: example.com/h100, operator: Equal, value: "
            f"x, effect: NoExecute}} to the chart value that sets its tolerations "
            f"({TOLERATION_VALUES}); " + HINT,
        )
    ]
    state.daemon_pods = {("hami", "hami-device-plugin"): {"gpu-3"}}
    [found] = untolerated_taints(build_of(view), state)
    assert found.location == Location("values/vendors/nvidia.yaml", 13, 3)
    # A toleration of the key alone (operator Exists) tolerates every value of it.
    state.workloads = [
        daemonset(
            "hami",
            "hami-device-plugin",
            tolerations=[{"key": "example.com/h100", "operator": "Exists"}],
        )
    ]
    assert untolerated_taints(build_of(view), state) == []


DEVICE_PLUGINS = "/var/lib/kubelet/device-plugins"
PRE012_HINT = (
    "set devicePlugin.provided: operator (or site) in values/vendors/nvidia.yaml, and the fleet "
    "renders none; or turn that plugin off on these nodes (GPU Operator: node label "
    "nvidia.com/gpu.deploy.device-plugin=false); " + HINT
)


def test_a_site_device_plugin_on_the_fleet_plugins_nodes_is_a_second_plugin(
    tmp_path: Path,
) -> None:
    """The GPU Operator's device plugin (it mounts the kubelet's device-plugin directory, here
    written with a trailing slash) runs on gpu-1, where the fleet renders NVIDIA's plugin. The
    fleet's own plugin, which mounts it too, is not a second one; a DaemonSet that mounts other
    host directories is no plugin."""
    view, units = env_of(tmp_path)
    state = everything(units)
    operator = daemonset(
        "gpu-operator",
        "nvidia-device-plugin-daemonset",
        tolerations=[GPU_TOLERATION],
        host_paths=(DEVICE_PLUGINS + "/",),
    )
    [own] = [
        o
        for c in build_of(view).components
        for o in c.objects
        if o["kind"] == "DaemonSet" and o["metadata"]["name"] == "nvidia-device-plugin"
    ]
    assert any(
        (v.get("hostPath") or {}).get("path") == DEVICE_PLUGINS
        for v in own["spec"]["template"]["spec"]["volumes"]
    )
    other = daemonset(
        "site", "node-exporter", tolerations=[GPU_TOLERATION], host_paths=("/var/lib/kubelet",)
    )
    state.workloads += [operator, own, other]
    state.daemon_pods = {
        ("gpu-operator", "nvidia-device-plugin-daemonset"): {"gpu-1"},
        ("accelerator-plugins", "nvidia-device-plugin"): {"gpu-1"},
        ("site", "node-exporter"): {"gpu-1"},
    }
    expected = Finding(
        "PRE012",
        "gpu-operator/nvidia-device-plugin-daemonset runs on gpu-1 (pool nvidia/a100) and "
        "mounts the kubelet's device-plugin directory /var/lib/kubelet/device-plugins: a second "
        "device plugin on the nodes of vendor nvidia, whose device plugin the fleet renders "
        "(devicePlugin.provided: fleet); the kubelet keeps one plugin per resource name, the "
        "last to register",
        NVIDIA_TOP,
        hint=PRE012_HINT,
    )
    assert second_plugins(build_of(view), state) == [expected]
    assert check(build_of(view), units, state) == [expected]
    # The same plugin mounted by an init container only still registers there.
    spec = operator["spec"]["template"]["spec"]
    spec["initContainers"], spec["containers"] = spec["containers"], []
    assert second_plugins(build_of(view), state) == [expected]
    # Not mounted by any container: a volume alone is no plugin.
    spec["initContainers"] = []
    assert second_plugins(build_of(view), state) == []


def test_a_second_plugin_is_at_devicePlugin_provided_and_gone_once_the_fleet_renders_none(
    tmp_path: Path,
) -> None:
    """devicePlugin.provided: fleet written (line 8 of the vendor file): the finding is there;
    provided: operator, the fleet renders no plugin, and nothing is second."""
    state = ClusterState(
        workloads=[daemonset("hami", "hami-device-plugin", host_paths=(DEVICE_PLUGINS,))],
        daemon_pods={("hami", "hami-device-plugin"): {"gpu-1"}},
    )
    for i, provided in enumerate(("fleet", "operator", "site")):
        nvidia = {**NVIDIA, "devicePlugin": {"provided": provided}}
        docs = {"fleet.yaml": FLEET, "vendors/nvidia.yaml": nvidia, "teams/ml.yaml": TEAM}
        files = {rel: yaml.safe_dump(doc, sort_keys=False) for rel, doc in docs.items()}
        view = values.load(tree(tmp_path / str(i), files, defaults=False)).envs["dev"]
        found = [(f.code, f.location) for f in second_plugins(build_of(view), state)]
        assert found == (
            [("PRE012", Location("values/vendors/nvidia.yaml", 8, 3))] if i == 0 else []
        )


# NVIDIA's DRA driver's kubelet plugin as its chart renders it by default (k8s-dra-driver-gpu
# deployments/helm/nvidia-dra-driver-gpu values.yaml kubeletPlugin: tolerations [], the affinity
# below; templates/kubeletplugin.yaml mounts plugins_registry and plugins).
DRA_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {
                            "key": "feature.node.kubernetes.io/pci-10de.present",
                            "operator": "In",
                            "values": ["true"],
                        }
                    ]
                },
                {
                    "matchExpressions": [
                        {"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}
                    ]
                },
            ]
        }
    }
}
DRA_PATHS = ("/var/lib/kubelet/plugins_registry", "/var/lib/kubelet/plugins")
DRA_PLUGIN = ("nvidia-dra-driver-gpu", "nvidia-dra-driver-gpu-kubelet-plugin")
DRA_AT = Location("values/vendors/nvidia-dra.yaml", 1, 1)
DRA_TOLERATIONS = f"kubeletPlugin.tolerations: [{GPU_TOLERATION_YAML}]"
DRA_SELECTING = (
    "kubeletPlugin.affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
    "{nodeSelectorTerms: [{matchExpressions: [{key: feature.node.kubernetes.io/accelerator, "
    "operator: In, values: [nvidia-gpu-dra]}]}]}}}"
)
DRA_HINT_TAIL = (
    " in the DRA driver's chart values (NVIDIA DRA driver; another driver: the values of its "
    "kubelet plugin DaemonSet); " + HINT
)


def test_each_dra_pool_node_must_get_a_pod_of_the_sites_kubelet_plugin(tmp_path: Path) -> None:
    """DRA_NVIDIA's pool on d1 (NFD's PCI label there) and d2 (none): the chart's default
    kubelet plugin tolerates nothing, so neither node gets its pod once tainted, and d2 is not
    selected either. A CSI node plugin (its own directory under plugins) is no DRA plugin."""
    view = dra_pool_view(tmp_path)
    csi = daemonset(
        "kube-system",
        "ebs-csi-node",
        tolerations=[{"operator": "Exists"}],
        host_paths=(DRA_PATHS[0], "/var/lib/kubelet/plugins/ebs.csi.aws.com/"),
    )
    state = ClusterState(
        nodes={
            "d1": {"metadata": {"labels": {"feature.node.kubernetes.io/pci-10de.present": "true"}}},
            "d2": {"metadata": {}},
        },
        workloads=[csi, daemonset(*DRA_PLUGIN, affinity=DRA_AFFINITY, host_paths=DRA_PATHS)],
    )
    head = (
        "of pool nvidia-dra/h100-dra would get no pod of the site's gpu.nvidia.com kubelet "
        "plugin once the fleet labels and taints it: nvidia-dra-driver-gpu/"
        "nvidia-dra-driver-gpu-kubelet-plugin "
    )
    untolerated = (
        "does not tolerate feature.node.kubernetes.io/accelerator=nvidia-gpu:NoSchedule; nothing "
        "would publish its devices (PRE009)"
    )
    assert dra_plugin_placement(build_of(view), state) == [
        Finding(
            "PRE013",
            "node d1 " + head + untolerated,
            DRA_AT,
            hint="set " + DRA_TOLERATIONS + DRA_HINT_TAIL,
        ),
        Finding(
            "PRE013",
            "node d2 " + head + "needs node affinity feature.node.kubernetes.io/pci-10de.present "
            "In (true) or nvidia.com/gpu.present In (true) and " + untolerated,
            DRA_AT,
            hint="set " + DRA_TOLERATIONS + " and " + DRA_SELECTING + DRA_HINT_TAIL,
        ),
    ]
    # The chart's values as the hint says: the plugin selects both nodes, by the pool's label
    # as NFD lands it, and tolerates the taint.
    selecting = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "feature.node.kubernetes.io/accelerator",
                                "operator": "In",
                                "values": ["nvidia-gpu-dra"],
                            }
                        ]
                    }
                ]
            }
        }
    }
    fixed = daemonset(
        *DRA_PLUGIN, tolerations=[GPU_TOLERATION], affinity=selecting, host_paths=DRA_PATHS
    )
    state.workloads = [csi, fixed]
    assert dra_plugin_placement(build_of(view), state) == []
    assert [f.code for f in check(build_of(view), [], state) if f.code == "PRE013"] == []


def test_no_dra_kubelet_plugin_at_all_is_said_once_for_the_pools_nodes(tmp_path: Path) -> None:
    """No DaemonSet mounts the plugin directories: one finding for d1 and d2, whose hint sets
    both the tolerations and the affinity. check runs it beside PRE009, which sees no slice."""
    view = dra_pool_view(tmp_path)
    state = ClusterState(nodes={"d1": {"metadata": {}}, "d2": {"metadata": {}}})
    expected = Finding(
        "PRE013",
        "nodes d1, d2 of pool nvidia-dra/h100-dra would get no pod of the site's gpu.nvidia.com "
        "kubelet plugin once the fleet labels and taints it: no DaemonSet mounts "
        "/var/lib/kubelet/plugins_registry and /var/lib/kubelet/plugins (or "
        "/var/lib/kubelet/plugins/gpu.nvidia.com); nothing would publish its devices (PRE009)",
        DRA_AT,
        hint="set " + DRA_TOLERATIONS + " and " + DRA_SELECTING + DRA_HINT_TAIL,
    )
    assert dra_plugin_placement(build_of(view), state) == [expected]
    found = check(build_of(view), [], state)
    assert [f for f in found if f.code == "PRE013"] == [expected]
    assert [f.code for f in found if f.code == "PRE009"] == ["PRE009", "PRE009"]
    # A plugin of the driver's own directory counts; one selecting no node is said for it.
    own = daemonset(
        *DRA_PLUGIN,
        tolerations=[{"operator": "Exists"}],
        host_paths=(DRA_PATHS[0], "/var/lib/kubelet/plugins/gpu.nvidia.com"),
    )
    state.workloads = [own]
    assert dra_plugin_placement(build_of(view), state) == []
    own["spec"]["template"]["spec"]["nodeSelector"] = {"example.com/gpu": "yes"}
    [unselected] = dra_plugin_placement(build_of(view), state)
    assert (unselected.message.split(": ", 1)[1], unselected.location, unselected.hint) == (
        "nvidia-dra-driver-gpu/nvidia-dra-driver-gpu-kubelet-plugin needs nodeSelector "
        "example.com/gpu=yes; nothing would publish its devices (PRE009)",
        Location("values/vendors/nvidia-dra.yaml", 6, 54),
        "set " + DRA_SELECTING + DRA_HINT_TAIL,
    )


def test_preflight_reads_the_daemonset_pods_on_a_pools_nodes(
    tmp_path: Path, cluster: ControlPlane
) -> None:
    """A site DaemonSet without the pool's toleration whose pod is on gpu-1 (bound there, as
    before the fleet tainted the node): read_cluster finds the pod, check says PRE011; with the
    toleration, nothing. A pod of another node is not read."""
    fleet_plane.reset(cluster)
    api = cluster.client()
    view, units = env_of(tmp_path)
    api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "site-gpu"}})
    api.apply(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "default", "namespace": "site-gpu"},
        }
    )
    for name in ("gpu-1", "cpu-1"):
        api.apply(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": GPU_LABELS},
                "spec": {"taints": [GPU_TAINT]},
            }
        )

    def apply(tolerations: list[dict[str, str]]) -> Obj:
        ds = daemonset("site-gpu", "gpu-agent", tolerations=tolerations)
        ds["apiVersion"] = "apps/v1"
        ds["spec"]["selector"] = {"matchLabels": {"app": "gpu-agent"}}
        ds["spec"]["template"]["metadata"] = {"labels": {"app": "gpu-agent"}}
        return api.apply(ds)

    uid = apply([])["metadata"]["uid"]
    owner = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "name": "gpu-agent",
        "uid": uid,
        "controller": True,
    }
    for name in ("gpu-1", "cpu-1"):
        api.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"gpu-agent-{name}",
                    "namespace": "site-gpu",
                    "labels": {"app": "gpu-agent"},
                    "ownerReferences": [owner],
                },
                "spec": {
                    "nodeName": name,
                    "containers": [{"name": "c", "image": "example.com/agent:1"}],
                },
            }
        )
    state = read_cluster(api, workloads_of(view))
    assert state.daemon_pods == {("site-gpu", "gpu-agent"): {"gpu-1"}}
    assert [
        (f.code, f.message) for f in check(build_of(view), units, state) if f.code == "PRE011"
    ] == [
        (
            "PRE011",
            "site-gpu/gpu-agent runs on gpu-1 (pool nvidia/a100) and does not tolerate "
            "feature.node.kubernetes.io/accelerator=nvidia-gpu:NoSchedule, which the fleet adds: "
            "its pod stays until it restarts, then none comes back",
        )
    ]
    apply([GPU_TOLERATION])
    state = read_cluster(api, workloads_of(view))
    assert [f for f in check(build_of(view), units, state) if f.code == "PRE011"] == []


# ---- PRE014: the pods an operator's or a site's exporter is scraped from ----------------------

OPERATOR_FLEET = {**FLEET, "platform": {"gpuOperator": {"provided": "site"}}}
# fleet.yaml as make_tree writes OPERATOR_FLEET: platform.gpuOperator on line 27, column 3.
GPU_OPERATOR_AT = Location("values/fleet.yaml", 27, 3)
OPERATOR_POOL = {"name": "a100", "model": "A100", "devicesPerNode": 4, "nodes": ["gpu-1", "gpu-2"]}
# The GPU Operator's exporter pods (its contract: nvidia.yaml `operator.exporter`).
DCGM = {"app": "nvidia-dcgm-exporter"}


def operator_view(root: Path, exporter: dict[str, Any], plugin: str = "operator") -> FleetView:
    """NVIDIA's pool a100 on gpu-1 and gpu-2, its plugin and exporter handed over as given, on a
    fleet that declares the GPU Operator the site's. The vendor file's devicePlugin.provided is
    on line 9, its exporter block from line 10."""
    nvidia = {"pools": [OPERATOR_POOL], "devicePlugin": {"provided": plugin}, "exporter": exporter}
    docs = {"fleet.yaml": OPERATOR_FLEET, "vendors/nvidia.yaml": nvidia, "teams/ml.yaml": TEAM}
    files = {rel: yaml.safe_dump(doc, sort_keys=False) for rel, doc in docs.items()}
    return values.load(tree(root, files, defaults=False)).envs["dev"]


def pod(
    node: str,
    labels: dict[str, str] = DCGM,
    *,
    ns: str = "gpu-operator",
    ports: list[dict[str, Any]] | None = None,
    phase: str = "Running",
) -> Obj:
    """An exporter pod as read_cluster keeps it."""
    ports = [{"name": "metrics", "containerPort": 9400}] if ports is None else ports
    return {
        "metadata": {"namespace": ns, "name": f"exporter-{node}", "labels": labels},
        "spec": {"nodeName": node, "containers": [{"name": "e", "ports": ports}]},
        "status": {"phase": phase},
    }


def pool_state() -> ClusterState:
    return ClusterState(nodes={n: {"metadata": {"name": n}} for n in ("gpu-1", "gpu-2", "cpu-1")})


PRE014_TAIL = "; nothing exports its devices' metrics there"
OPERATOR_EXPORTER_HINT = (
    "list the pods with `kubectl get pods -A -l app=nvidia-dcgm-exporter -o wide` and check "
    "their container port named metrics; the operator's exporter (nvidia-dcgm-exporter) must "
    "run on those nodes (node label nvidia.com/gpu.deploy.dcgm-exporter=true), or set "
    "exporter.provided: site with the podLabels and portName of the exporter that runs, in "
    "values/vendors/nvidia.yaml; " + HINT
)


def test_the_operators_exporter_must_run_on_each_pool_node(tmp_path: Path) -> None:
    """exporter.provided: operator (line 11): its PodMonitor selects app: nvidia-dcgm-exporter
    on port metrics, in any namespace. No such pod: both nodes said, once; one on gpu-1 only:
    gpu-2 said; one on each: nothing. A node the cluster lacks is PRE005's."""
    view = operator_view(tmp_path, {"provided": "operator"})
    state = pool_state()
    where = Location("values/vendors/nvidia.yaml", 11, 3)
    expected = Finding(
        "PRE014",
        "the PodMonitor of vendor nvidia selects no running exporter pod on gpu-1, gpu-2 (pool "
        "nvidia/a100): no pod carries app=nvidia-dcgm-exporter" + PRE014_TAIL,
        where,
        hint=OPERATOR_EXPORTER_HINT,
    )
    assert scraped_exporters(view, state) == [expected]
    assert [f for f in check(build_of(view), [], state) if f.code == "PRE014"] == [expected]
    state.exporter_pods = [pod("gpu-1")]
    assert scraped_exporters(view, state) == [
        Finding(
            "PRE014",
            "the PodMonitor of vendor nvidia selects no running exporter pod on gpu-2 (pool "
            "nvidia/a100): no pod with app=nvidia-dcgm-exporter runs there" + PRE014_TAIL,
            where,
            hint=OPERATOR_EXPORTER_HINT,
        )
    ]
    state.exporter_pods.append(pod("gpu-2", ns="elsewhere"))
    assert scraped_exporters(view, state) == []
    del state.nodes["gpu-2"]
    state.exporter_pods = [pod("gpu-1")]
    assert scraped_exporters(view, state) == []


def test_the_fleets_own_exporter_is_not_asked_of_the_cluster(tmp_path: Path) -> None:
    view = operator_view(tmp_path, {"provided": "fleet"}, plugin="fleet")
    assert scraped_exporters(view, pool_state()) == []


def test_a_site_exporters_pods_elsewhere_without_the_port_or_not_running_are_said(
    tmp_path: Path,
) -> None:
    """exporter.provided: site with podLabels (line 12) that the site's exporter pods carry on
    other nodes only (its podLabels written for another install: the reason names where they
    run), then on the pool's nodes without the port, then not Running; a pod of another
    namespace than the one given is not the PodMonitor's. By port number when no portName."""
    exporter = {
        "provided": "site",
        "podLabels": {"app": "dcgm-exporter"},
        "namespace": "monitoring",
        "portName": "metrics",
    }
    view = operator_view(tmp_path, exporter)
    labels = {"app": "dcgm-exporter"}
    state = pool_state()
    state.exporter_pods = [pod("cpu-1", labels, ns="monitoring"), pod("gpu-1", labels)]
    hint = (
        "list the pods with `kubectl get pods -n monitoring -l app=dcgm-exporter -o wide` and "
        "check their container port named metrics; set exporter.podLabels and "
        "exporter.portName (or port) in values/vendors/nvidia.yaml to those of the exporter's "
        "pods; " + HINT
    )
    head = (
        "the PodMonitor of vendor nvidia selects no running exporter pod on gpu-1, gpu-2 (pool "
        "nvidia/a100): "
    )
    assert scraped_exporters(view, state) == [
        Finding(
            "PRE014",
            head + "the pods with app=dcgm-exporter in namespace monitoring run on no node of "
            "its pools (they run on cpu-1)" + PRE014_TAIL,
            Location("values/vendors/nvidia.yaml", 12, 3),
            hint=hint,
        )
    ]
    http: list[dict[str, Any]] = [{"name": "http", "containerPort": 9400}, {"containerPort": 9500}]
    state.exporter_pods = [pod(n, labels, ns="monitoring", ports=http) for n in ("gpu-1", "gpu-2")]
    [found] = scraped_exporters(view, state)
    assert found.message == (
        head + "the pods with app=dcgm-exporter in namespace monitoring there have no container "
        "port named metrics (their ports: 9500, http 9400)" + PRE014_TAIL
    )
    state.exporter_pods = [
        pod(n, labels, ns="monitoring", phase="Pending") for n in ("gpu-1", "gpu-2")
    ]
    [found] = scraped_exporters(view, state)
    assert found.message == (
        head + "the pods with app=dcgm-exporter in namespace monitoring there are not Running "
        "(phase Pending)" + PRE014_TAIL
    )
    state.exporter_pods = [pod(n, labels, ns="monitoring") for n in ("gpu-1", "gpu-2")]
    assert scraped_exporters(view, state) == []


def test_a_site_exporter_without_a_port_name_is_selected_by_its_number(tmp_path: Path) -> None:
    """AMD's catalog names no exporter port: the PodMonitor selects port number 5000."""
    amd = {
        "pools": [{"name": "mi", "model": "MI250X", "devicesPerNode": 8, "nodes": ["gpu-1"]}],
        "exporter": {"provided": "site", "podLabels": {"app": "amd-exporter"}},
    }
    docs = {"fleet.yaml": FLEET, "vendors/amd.yaml": amd, "teams/ml.yaml": {"quota": {"amd": 8}}}
    files = {rel: yaml.safe_dump(doc, sort_keys=False) for rel, doc in docs.items()}
    view = values.load(tree(tmp_path, files, defaults=False)).envs["dev"]
    labels = {"app": "amd-exporter"}
    state = pool_state()
    state.exporter_pods = [pod("gpu-1", labels, ports=[{"name": "m", "containerPort": 5000}])]
    assert scraped_exporters(view, state) == []
    state.exporter_pods = [pod("gpu-1", labels)]
    [found] = scraped_exporters(view, state)
    assert found.message == (
        "the PodMonitor of vendor amd selects no running exporter pod on gpu-1 (pool amd/mi): "
        "the pods with app=amd-exporter there have no container port numbered 5000 (their "
        "ports: metrics 9400)" + PRE014_TAIL
    )


# ---- PRE015: the site's GPU Operator's ClusterPolicy ------------------------------------------

DEFAULT_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def cluster_policy(spec: dict[str, Any], state: str = "ready") -> Obj:
    return {"metadata": {"name": "cluster-policy"}, "spec": spec, "status": {"state": state}}


def test_an_operand_the_vendor_hands_to_the_operator_must_be_enabled(tmp_path: Path) -> None:
    """The site's ClusterPolicy disables the device plugin and the exporter, which the vendor
    file hands to the Operator: one finding each, at its `provided` line. `enabled` absent or
    true: on (clusterpolicy_types.go IsEnabled). A component that is the fleet's: the
    Operator's switch is not the fleet's concern."""
    view = operator_view(tmp_path, {"provided": "operator"})
    tolerated = {"daemonsets": {"tolerations": [DEFAULT_TOLERATION, GPU_TOLERATION]}}
    spec: dict[str, Any] = {
        **tolerated,
        "devicePlugin": {"enabled": False},
        "dcgmExporter": {"enabled": False},
    }
    state = ClusterState(cluster_policies=[cluster_policy(spec)])
    expected = [
        Finding(
            "PRE015",
            "ClusterPolicy cluster-policy of the site's GPU Operator disables its device plugin "
            "(spec.devicePlugin.enabled: false), which vendor nvidia hands to the Operator "
            "(devicePlugin.provided: operator): nothing advertises nvidia.com/gpu on the pools' "
            "nodes, and the pods that request it stay Pending",
            Location("values/vendors/nvidia.yaml", 9, 3),
            hint="set devicePlugin.enabled: true in the GPU Operator's chart values (the chart "
            "writes it into its ClusterPolicy), or devicePlugin.provided: fleet in "
            "values/vendors/nvidia.yaml and the fleet renders it; " + HINT,
        ),
        Finding(
            "PRE015",
            "ClusterPolicy cluster-policy of the site's GPU Operator disables its DCGM exporter "
            "(spec.dcgmExporter.enabled: false), which vendor nvidia hands to the Operator "
            "(exporter.provided: operator): no exporter pod runs on the pools' nodes: the cause "
            "of PRE014",
            Location("values/vendors/nvidia.yaml", 11, 3),
            hint="set dcgmExporter.enabled: true in the GPU Operator's chart values (the chart "
            "writes it into its ClusterPolicy), or exporter.provided: fleet in "
            "values/vendors/nvidia.yaml and the fleet renders it; " + HINT,
        ),
    ]
    assert site_gpu_operator(view, state) == expected
    assert [f for f in check(build_of(view), [], state) if f.code == "PRE015"] == expected
    spec["devicePlugin"] = {"enabled": True}
    del spec["dcgmExporter"]
    assert site_gpu_operator(view, state) == []
    spec.update(devicePlugin={"enabled": False}, dcgmExporter={"enabled": False})
    view = operator_view(tmp_path / "fleet", {"provided": "fleet"}, plugin="fleet")
    assert site_gpu_operator(view, state) == []


def test_the_operators_cluster_policy_must_tolerate_the_fleets_taints(tmp_path: Path) -> None:
    """No daemonsets.tolerations: each operand keeps its own (nvidia.com/gpu only), and the
    pool's taint is not tolerated; the chart's default alone, the same. One finding at
    platform.gpuOperator, the cause of PRE011 on the operand DaemonSets, with the whole list to
    set; once set, nothing. A ClusterPolicy the Operator ignores, a cluster that does not serve
    the kind, or an Operator the fleet renders: nothing to say."""
    view = operator_view(tmp_path, {"provided": "operator"})
    spec: dict[str, Any] = {}
    state = ClusterState(cluster_policies=[cluster_policy(spec)])
    message = (
        "ClusterPolicy cluster-policy of the site's GPU Operator does not tolerate "
        "feature.node.kubernetes.io/accelerator=nvidia-gpu:NoSchedule ({}), which the fleet "
        "puts on pool nvidia/a100: the operands' pods there stay until they restart, then none "
        "comes back; the cause of PRE011 on its operand DaemonSets"
    )
    hint = (
        "set daemonsets.tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: "
        f"NoSchedule}}, {GPU_TOLERATION_YAML}] in the GPU Operator's chart values (the chart "
        "writes them into its ClusterPolicy; the list replaces the chart's default, kept "
        "first); " + HINT
    )
    unset = "spec.daemonsets.tolerations is unset: each operand keeps its own"
    assert site_gpu_operator(view, state) == [
        Finding("PRE015", message.format(unset), GPU_OPERATOR_AT, hint=hint)
    ]
    spec["daemonsets"] = {"tolerations": [DEFAULT_TOLERATION]}
    assert site_gpu_operator(view, state) == [
        Finding("PRE015", message.format("spec.daemonsets.tolerations"), GPU_OPERATOR_AT, hint=hint)
    ]
    spec["daemonsets"] = {"tolerations": [DEFAULT_TOLERATION, GPU_TOLERATION]}
    assert site_gpu_operator(view, state) == []
    spec["daemonsets"] = {}
    state.cluster_policies = [cluster_policy(spec, state="ignored")]
    assert site_gpu_operator(view, state) == []
    state.cluster_policies = None
    assert site_gpu_operator(view, state) == []
    fleet = {**FLEET, "platform": {"gpuOperator": {"provided": "fleet"}}}
    nvidia = {"pools": [OPERATOR_POOL], "exporter": {"provided": "operator"}}
    docs = {"fleet.yaml": fleet, "vendors/nvidia.yaml": nvidia, "teams/ml.yaml": TEAM}
    files = {rel: yaml.safe_dump(doc, sort_keys=False) for rel, doc in docs.items()}
    rendered = values.load(tree(tmp_path / "rendered", files, defaults=False)).envs["dev"]
    state.cluster_policies = [cluster_policy(spec)]
    assert site_gpu_operator(rendered, state) == []


def test_preflight_reads_the_pods_an_exporters_podmonitor_selects(
    tmp_path: Path, cluster: ControlPlane
) -> None:
    """The GPU Operator's exporter pod (its labels, port metrics) Running on gpu-1: the
    operator's exporter passes there; a pod of other labels is not read. The same pods with a
    vendor file whose podLabels name another install's: PRE014. The cluster serves no
    ClusterPolicy: PRE015 has nothing to read."""
    fleet_plane.reset(cluster)
    api = cluster.client()
    one_node = {**OPERATOR_POOL, "nodes": ["gpu-1"]}
    api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gpu-operator"}})
    api.apply(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "default", "namespace": "gpu-operator"},
        }
    )
    api.apply({"apiVersion": "v1", "kind": "Node", **node(GPU_LABELS, [GPU_TAINT])})
    for name, labels in (("nvidia-dcgm-exporter-1", DCGM), ("other", {"app": "other"})):
        meta = {"name": name, "namespace": "gpu-operator", "labels": labels}
        container = {
            "name": "e",
            "image": "example.com/exporter:1",
            "ports": [{"name": "metrics", "containerPort": 9400}],
        }
        spec = {"nodeName": "gpu-1", "containers": [container]}
        api.create({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
        # No kubelet runs the pod: its status is written as the kubelet would.
        api.request(
            "PATCH",
            api.path("v1", "Pod", "gpu-operator", name) + "/status",
            {"status": {"phase": "Running"}},
            content_type="application/merge-patch+json",
        )

    def findings(exporter: dict[str, Any], root: Path) -> tuple[list[str], list[str]]:
        nvidia = {"pools": [one_node], "exporter": exporter}
        docs = {"fleet.yaml": OPERATOR_FLEET, "vendors/nvidia.yaml": nvidia, "teams/ml.yaml": TEAM}
        files = {rel: yaml.safe_dump(doc, sort_keys=False) for rel, doc in docs.items()}
        view = values.load(tree(root, files, defaults=False)).envs["dev"]
        state = read_cluster(api, workloads_of(view))
        assert state.cluster_policies is None
        read = [str(p["metadata"]["name"]) for p in state.exporter_pods]
        return read, [
            f.message for f in check(build_of(view), [], state) if f.code in ("PRE014", "PRE015")
        ]

    assert findings({"provided": "operator"}, tmp_path / "operator") == (
        ["nvidia-dcgm-exporter-1"],
        [],
    )
    wrong = {"provided": "site", "podLabels": {"app": "dcgm-exporter"}, "portName": "metrics"}
    assert findings(wrong, tmp_path / "site") == (
        [],
        [
            "the PodMonitor of vendor nvidia selects no running exporter pod on gpu-1 (pool "
            "nvidia/a100): no pod carries app=dcgm-exporter" + PRE014_TAIL
        ],
    )


def test_a_dra_driver_the_fleet_installs_is_not_asked_of_the_site(tmp_path: Path) -> None:
    """platform.nvidiaDraDriver.provided: fleet: before the first sync nothing publishes the
    H100s and no kubelet plugin runs, which is no fault of the site's (the sync installs the
    driver with the tolerations and affinity the pools need; simulate shows where it lands):
    neither PRE009 nor PRE013. Once its DaemonSet is there, its slices are checked (PRE009)."""
    dra = DRA_NVIDIA.replace("devicesPerNode: 8, nodes: [n4]", "devicesPerNode: 2, nodes: [d1, d2]")
    fleet = {**SIM_FLEET, "platform": {"nvidiaDraDriver": {"provided": "fleet"}}}
    files = {"vendors/nvidia-dra.yaml": dra, "fleet.yaml": yaml.safe_dump(fleet)}
    view = values.load(tree(tmp_path, files)).envs["dev"]
    state = ClusterState(nodes={"d1": {}, "d2": {}})
    assert (dra_devices(view, state), dra_plugin_placement(build_of(view), state)) == ([], [])
    # After the sync: the fleet's driver runs in its chart's namespace, and d2 publishes nothing.
    state.workloads = [daemonset(*DRA_PLUGIN, affinity=DRA_AFFINITY, host_paths=DRA_PATHS)]
    assert [f.message.split(" publishes")[0] for f in dra_devices(view, state)] == [
        "node d1 of pool nvidia-dra/h100-dra",
        "node d2 of pool nvidia-dra/h100-dra",
    ]
    assert dra_plugin_placement(build_of(view), state) == []


def test_a_dra_driver_the_fleet_installs_is_there_once_its_own_daemonset_is(
    tmp_path: Path,
) -> None:
    """Before the first sync the cluster runs other DaemonSets (kube-proxy) and may hold the
    driver's namespace with something else in it: neither is the fleet's install, so PRE009
    still waits for it."""
    dra = DRA_NVIDIA.replace("devicesPerNode: 8, nodes: [n4]", "devicesPerNode: 2, nodes: [d1]")
    fleet = {**SIM_FLEET, "platform": {"nvidiaDraDriver": {"provided": "fleet"}}}
    files = {"vendors/nvidia-dra.yaml": dra, "fleet.yaml": yaml.safe_dump(fleet)}
    view = values.load(tree(tmp_path, files)).envs["dev"]
    controller = {**daemonset("nvidia-dra-driver-gpu", "controller"), "kind": "Deployment"}
    state = ClusterState(
        nodes={"d1": {}}, workloads=[daemonset("kube-system", "kube-proxy"), controller]
    )
    assert dra_devices(view, state) == []


def test_a_kubelet_plugin_that_mounts_a_folder_of_its_drivers_plugin_directory(
    tmp_path: Path,
) -> None:
    """The site's kubelet plugin mounts the registry and a folder under its driver's own plugin
    directory (/var/lib/kubelet/plugins/gpu.nvidia.com/data), not the whole: it is the driver's
    plugin, and with the tolerations and affinity the pool needs, nothing to say."""
    view = dra_pool_view(tmp_path)
    selecting = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "feature.node.kubernetes.io/accelerator",
                                "operator": "In",
                                "values": ["nvidia-gpu-dra"],
                            }
                        ]
                    }
                ]
            }
        }
    }
    paths = (DRA_PATHS[0], "/var/lib/kubelet/plugins/gpu.nvidia.com/data")
    plugin = daemonset(
        *DRA_PLUGIN, tolerations=[GPU_TOLERATION], affinity=selecting, host_paths=paths
    )
    state = ClusterState(nodes={"d1": {"metadata": {}}, "d2": {"metadata": {}}}, workloads=[plugin])
    assert dra_plugin_placement(build_of(view), state) == []


def test_an_operand_two_vendor_files_hand_to_the_operator_names_both(tmp_path: Path) -> None:
    """Vendor files nvidia and nvidia-h100 both hand their device plugin and exporter to the
    site's GPU Operator, whose ClusterPolicy disables both (and tolerates every pool's taint):
    one finding per operand, naming both vendors, at the first one's `provided` line."""
    h100 = {
        "catalog": "nvidia",
        "nodeLabels": {"accelerator": "nvidia-h100"},
        "taints": [
            {
                "key": "feature.node.kubernetes.io/accelerator",
                "value": "nvidia-h100",
                "effect": "NoSchedule",
            }
        ],
        "devicePlugin": {"provided": "operator"},
        "exporter": {"provided": "operator", "name": "dcgm-exporter-h100"},
        "pools": [{"name": "h100", "model": "H100", "devicesPerNode": 8, "nodes": ["gpu-3"]}],
    }
    nvidia = {
        "pools": [OPERATOR_POOL],
        "devicePlugin": {"provided": "operator"},
        "exporter": {"provided": "operator"},
    }
    docs = {
        "fleet.yaml": OPERATOR_FLEET,
        "vendors/nvidia.yaml": nvidia,
        "vendors/nvidia-h100.yaml": h100,
        "teams/ml.yaml": TEAM,
    }
    files = {rel: yaml.safe_dump(doc, sort_keys=False) for rel, doc in docs.items()}
    view = values.load(tree(tmp_path, files, defaults=False)).envs["dev"]
    h100_toleration = {**GPU_TOLERATION, "value": "nvidia-h100"}
    spec = {
        "daemonsets": {"tolerations": [DEFAULT_TOLERATION, GPU_TOLERATION, h100_toleration]},
        "devicePlugin": {"enabled": False},
        "dcgmExporter": {"enabled": False},
    }
    state = ClusterState(cluster_policies=[cluster_policy(spec)])
    assert site_gpu_operator(view, state) == [
        Finding(
            "PRE015",
            "ClusterPolicy cluster-policy of the site's GPU Operator disables its device plugin "
            "(spec.devicePlugin.enabled: false), which vendors nvidia, nvidia-h100 hand to the "
            "Operator (devicePlugin.provided: operator): nothing advertises nvidia.com/gpu on "
            "the pools' nodes, and the pods that request it stay Pending",
            Location("values/vendors/nvidia.yaml", 9, 3),
            hint="set devicePlugin.enabled: true in the GPU Operator's chart values (the chart "
            "writes it into its ClusterPolicy), or devicePlugin.provided: fleet in "
            "values/vendors/nvidia.yaml and the fleet renders it; " + HINT,
        ),
        Finding(
            "PRE015",
            "ClusterPolicy cluster-policy of the site's GPU Operator disables its DCGM exporter "
            "(spec.dcgmExporter.enabled: false), which vendors nvidia, nvidia-h100 hand to the "
            "Operator (exporter.provided: operator): no exporter pod runs on the pools' nodes: "
            "the cause of PRE014",
            Location("values/vendors/nvidia.yaml", 11, 3),
            hint="set dcgmExporter.enabled: true in the GPU Operator's chart values (the chart "
            "writes it into its ClusterPolicy), or exporter.provided: fleet in "
            "values/vendors/nvidia.yaml and the fleet renders it; " + HINT,
        ),
    ]


def test_a_partitioned_nodes_count_of_a_fraction_or_no_quantity_counts_none(
    tmp_path: Path,
) -> None:
    """8500m vNPUs is not 8 whole ones, and `lots` no quantity at all: both nodes count none,
    short of the pool's 8."""
    vnpu = VNPU_ASCEND.replace("nodes: [npu-v1]", "nodes: [v1, v2]")
    files = {"vendors/ascend-vnpu.yaml": vnpu, "fleet.yaml": yaml.safe_dump(SIM_FLEET)}
    view = values.load(tree(tmp_path, files)).envs["dev"]
    resource = "huawei.com/Ascend910-6c.1cpu.16g"
    state = ClusterState(
        nodes={
            "v1": {"metadata": {}, "status": {"allocatable": {resource: "8500m"}}},
            "v2": {"metadata": {}, "status": {"allocatable": {resource: "lots"}}},
        }
    )
    assert [f.message.split(":")[0] for f in site_partitions(view, state)] == [
        f"node v1 of pool ascend-vnpu/910b-vnpu advertises 8500m {resource}",
        f"node v2 of pool ascend-vnpu/910b-vnpu advertises lots {resource}",
    ]


def test_a_missing_api_of_an_addon_values_declare_the_sites_is_at_its_platform_entry(
    tmp_path: Path,
) -> None:
    """JobSet is the site's (platform.jobset.provided: site; no other setting implies it): a
    cluster that does not serve its API is told at that entry."""
    fleet = {**FLEET, "platform": {"jobset": {"provided": "site"}}}
    team = {
        "quota": {"nvidia": 4},
        "jobs": {
            "pretrain": {
                "kind": "jobset",
                "images": {"nvidia": "r/train:cuda"},
                "tasks": {"gpu": {"vendor": "nvidia", "devices": 4, "replicas": 1}},
            }
        },
    }
    view, units = env_of(tmp_path, fleet, team)
    state = everything(units)
    state.served.discard("jobset.x-k8s.io/v1alpha2")
    assert [(f.message, f.location) for f in served_apis(view, units, state)] == [
        (
            "the cluster does not serve jobset.x-k8s.io/v1alpha2 (JobSet of unit team-ml; values "
            "declare that the site runs JobSet): Argo CD's dry-run would fail the unit's whole "
            "Application",
            Location("values/fleet.yaml", 27, 3),
        )
    ]


def test_a_cluster_policy_that_misses_a_noexecute_taint_and_disables_the_exporter(
    tmp_path: Path,
) -> None:
    """The pool's own taint is NoExecute: the operands' pods are evicted. The ClusterPolicy
    leaves the device plugin on (`enabled` absent) and turns the exporter off: the exporter's
    finding is still said after the plugin's switch is found on."""
    pool = {**OPERATOR_POOL, "taints": [{"key": "example.com/gpu", "effect": "NoExecute"}]}
    nvidia = {
        "pools": [pool],
        "devicePlugin": {"provided": "operator"},
        "exporter": {"provided": "operator"},
    }
    docs = {"fleet.yaml": OPERATOR_FLEET, "vendors/nvidia.yaml": nvidia, "teams/ml.yaml": TEAM}
    files = {rel: yaml.safe_dump(doc, sort_keys=False) for rel, doc in docs.items()}
    view = values.load(tree(tmp_path, files, defaults=False)).envs["dev"]
    spec = {"daemonsets": {"tolerations": [DEFAULT_TOLERATION]}, "dcgmExporter": {"enabled": False}}
    state = ClusterState(cluster_policies=[cluster_policy(spec)])
    assert [(f.message, f.location) for f in site_gpu_operator(view, state)] == [
        (
            "ClusterPolicy cluster-policy of the site's GPU Operator disables its DCGM exporter "
            "(spec.dcgmExporter.enabled: false), which vendor nvidia hands to the Operator "
            "(exporter.provided: operator): no exporter pod runs on the pools' nodes: the cause "
            "of PRE014",
            Location("values/vendors/nvidia.yaml", 14, 3),
        ),
        (
            "ClusterPolicy cluster-policy of the site's GPU Operator does not tolerate "
            "example.com/gpu:NoExecute (spec.daemonsets.tolerations), which the fleet puts on "
            "pool nvidia/a100: NoExecute evicts the operands' pods there, and none comes back; "
            "the cause of PRE011 on its operand DaemonSets",
            GPU_OPERATOR_AT,
        ),
    ]


def argocd_statefulset(image: str) -> dict[str, Any]:
    """Argo CD's application controller as its release installs it (argo-cd v3.2.6
    manifests/base/application-controller/argocd-application-controller-statefulset.yaml)."""
    labels = {"app.kubernetes.io/name": "argocd-application-controller"}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "argocd-application-controller", "namespace": "argocd"},
        "spec": {
            "serviceName": "argocd-application-controller",
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "argocd-application-controller", "image": image}]},
            },
        },
    }


def test_preflight_reads_the_argo_cd_version_the_cluster_runs_against_argocd_version(
    tmp_path: Path, cluster: ControlPlane
) -> None:
    """PRE016 (a warning at argocd.version): the site says v3.4.1, the cluster's application
    controller runs v3.2.6; none when they agree; none unless argocd.version is set."""
    fleet = {**FLEET, "argocd": {**FLEET["argocd"], "version": "v3.4.1"}}
    view, _ = env_of(tmp_path / "a", fleet)
    api = cluster.client()
    api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "argocd"}})
    api.apply(argocd_statefulset("quay.io/argoproj/argocd:v3.2.6"))
    try:
        state = read_cluster(api, workloads_of(view))
    finally:
        api.delete("v1", "Namespace", "", "argocd")
    assert state.argocd_images == ["quay.io/argoproj/argocd:v3.2.6"]
    [found] = argocd_version(view, state)
    assert (found.code, found.severity, found.location.file) == (
        "PRE016",
        Severity.WARNING,
        "values/fleet.yaml",
    )
    assert found.message == (
        "argocd.version says the site's Argo CD is v3.4.1, but its StatefulSet "
        "argocd/argocd-application-controller runs quay.io/argoproj/argocd:v3.2.6"
    )
    assert argocd_version(view, ClusterState(argocd_images=["r/argocd:v3.4.1"])) == []
    [absent] = argocd_version(view, ClusterState(argocd_images=[]))
    assert absent.message.endswith("no StatefulSet argocd/argocd-application-controller is there")
    plain, _ = env_of(tmp_path / "b")
    assert read_cluster(api, workloads_of(plain)).argocd_images is None


# ---- a service across clusters (PRE017) ------------------------------------------------------

MCS_API = "multicluster.x-k8s.io/v1alpha1"
ROUTE_API = "gateway.networking.k8s.io/v1"


def _cross_view(tmp_path: Path, layer: str) -> Any:
    return workloads_of(values.load(cross_clusters(tmp_path)).envs[layer])


def test_the_ingress_cluster_without_the_serviceimport_kind(tmp_path: Path) -> None:
    """main runs the NVIDIA track and routes: it serves ServiceExport and HTTPRoute, not the
    ServiceImport CRD (a group served is not every kind of it)."""
    state = ClusterState(
        served={MCS_API, ROUTE_API},
        kinds={(MCS_API, "ServiceExport"), (ROUTE_API, "HTTPRoute")},
    )
    [finding] = cross_cluster_apis(_cross_view(tmp_path, "prod/main"), state)
    assert (finding.code, str(finding.location), finding.path) == (
        "PRE017",
        "values/teams/inference.yaml:14:5",
        "$.services.chat.crossCluster",
    )
    assert finding.message == (
        "the cluster does not serve ServiceImport (multicluster.x-k8s.io/v1alpha1), which the "
        "service across clusters inference/chat needs there: its HTTPRoute here routes to the "
        "tracks' ServiceImports"
    )
    assert finding.hint == (
        "install the ServiceImport CRD on the cluster (the site's Multi-Cluster Services "
        "implementation); " + HINT
    )


def test_a_track_s_cluster_needs_serviceexport_and_not_the_route(tmp_path: Path) -> None:
    domestic = _cross_view(tmp_path, "prod/domestic")
    # Only ServiceImport's CRD installed: the group is served, ServiceExport is not.
    state = ClusterState(served={MCS_API}, kinds={(MCS_API, "ServiceImport")})
    [finding] = cross_cluster_apis(domestic, state)
    assert finding.message.startswith("the cluster does not serve ServiceExport")
    # No MCS group at all: PRE001 says so of the rendered ServiceExport, not this check.
    assert cross_cluster_apis(domestic, ClusterState()) == []
    every = {(MCS_API, "ServiceExport"), (MCS_API, "ServiceImport"), (ROUTE_API, "HTTPRoute")}
    assert cross_cluster_apis(domestic, ClusterState(served={MCS_API}, kinds=every)) == []


def test_preflight_finds_the_ingress_cluster_s_missing_serviceimport_crd(
    tmp_path: Path, cluster: ControlPlane
) -> None:
    """Cluster main of CROSS_PROD (chat's NVIDIA track and its HTTPRoute) on the local control
    plane: with the CRDs of what its units hold (ServiceExport, HTTPRoute) and not the
    ServiceImport one, PRE017; with it, none."""
    fleet_plane.reset(cluster)
    api = cluster.client()
    values_dir = cross_clusters(tmp_path)
    rendered = render_tree(values.load(values_dir))
    units = [u for u in rendered.units if u.env == "prod/main"]
    api.apply_crds(needed_crds([o for u in units for o in u.objects]))

    def found() -> list[str]:
        result = invoke(
            "preflight",
            "--values",
            str(values_dir),
            "--env",
            "prod/main",
            "--kubeconfig",
            str(cluster.kubeconfig),
            "--output",
            "json",
        )
        doc = json.loads(result.output)
        return [f["message"] for f in doc["findings"] if f["code"] in ("PRE001", "PRE017")]

    assert found() == [
        "the cluster does not serve ServiceImport (multicluster.x-k8s.io/v1alpha1), which the "
        "service across clusters inference/chat needs there: its HTTPRoute here routes to the "
        "tracks' ServiceImports in environment 'prod' (cluster 'main')"
    ]
    imports = {"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceImport"}
    api.apply_crds(needed_crds([imports]))
    assert found() == []
    fleet_plane.reset(cluster)
