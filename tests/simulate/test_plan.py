"""The simulation's plan, made before anything runs: what it expects of the workloads' pods is
what kustomize built, a values `patch` of the workload included (no control plane here)."""

from __future__ import annotations

from pathlib import Path

from generator.cluster.dryrun import load
from generator.cluster.units import build
from generator.findings import Finding, Location, Severity
from generator.simulate.plan import SimPlan, make_plan
from tests.fixtures import FLEET, tree

# A Job, a JobSet task and a Deployment, each patched to ask for a zone the builders never set.
TEAM = """\
quota: {nvidia: 8}
jobs:
  train:
    vendor: nvidia
    devices: 1
    images: {nvidia: r/train:1}
    patch:
      strategicMerge: {spec: {template: {spec: {nodeSelector: {zone: a}}}}}
  gang:
    kind: jobset
    images: {nvidia: r/train:1}
    tasks:
      gpu: {vendor: nvidia, devices: 1, replicas: 2}
    patch:
      json6902:
        - {op: add, path: /spec/replicatedJobs/0/template/spec/template/spec/nodeSelector/zone, value: b}
services:
  serve:
    images: {nvidia: r/serve:1}
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 1}
    patch:
      strategicMerge: {spec: {template: {spec: {nodeSelector: {zone: c}}}}}
"""


# A site's H200 server, as lspci would list two of its functions (the IDs of an H200 are not
# the point here: the pool names this file, so nothing is matched by model).
H200_SERVER = """\
description: HGX H200 8-GPU
accelerator: {vendor: nvidia, model: H200, count: 8}
sources: ["lspci -nn of one of our servers"]
devices:
  - {class: "0300", vendor: "1a03", device: "2000", subsystem_vendor: "1a03", subsystem_device: "2000"}
  - {class: "0302", vendor: "10de", device: "2335", subsystem_vendor: "10de", subsystem_device: "18be"}
"""


def plan_of(tmp_path: Path, files: dict[str, str], fleet: str = FLEET) -> SimPlan:
    """The plan of environment prod of a values tree, made as `simulate` makes it."""
    values = tree(tmp_path, {**files, "fleet.yaml": fleet})
    checked, _ = load(values, "prod")
    built, found = build(checked.values, "prod", builds=checked.builds)
    assert found == []
    return make_plan(checked.values, checked.builds["prod"], built, found)


def test_the_plan_expects_the_pods_as_kustomize_built_them_patches_included(
    tmp_path: Path,
) -> None:
    fleet = FLEET + "platform: {jobset: {provided: site}}\n"
    values = tree(tmp_path, {"teams/ml.yaml": TEAM, "fleet.yaml": fleet})
    checked, _ = load(values, "prod")
    built, found = build(checked.values, "prod", builds=checked.builds)
    assert found == []
    plan = make_plan(checked.values, checked.builds["prod"], built, found)
    zones = {key: ref.spec["nodeSelector"].get("zone") for key, ref in plan.refs.items()}
    assert zones == {
        ("ml", "Job", "train"): "a",
        ("ml", "JobSet task", "gang/gpu"): "b",
        ("ml", "Deployment", "serve-nvidia"): "c",
    }
    # What the builders wrote is still there beside the patch.
    job = plan.refs[("ml", "Job", "train")].spec
    assert job["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1}


def test_the_groups_leader_and_the_volcano_task_are_expected_as_patched(tmp_path: Path) -> None:
    """A LeaderWorkerSet's pods are its leader template's, a Volcano task's its task template's:
    each as the values `patch` left it."""
    lws = """\
quota: {nvidia: 4}
services:
  serve:
    images: {nvidia: r/serve:1}
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 2, groupSize: 2}
    patch:
      json6902:
        - {op: add, path: /spec/leaderWorkerTemplate/leaderTemplate/spec/nodeSelector/zone, value: d}
"""
    volcano = """\
quota: {nvidia: 4}
jobs:
  beta:
    kind: volcano
    images: {nvidia: r/train:1}
    tasks:
      workers: {vendor: nvidia, devices: 1, replicas: 3}
    patch:
      json6902:
        - {op: add, path: /spec/tasks/0/template/spec/nodeSelector/zone, value: e}
"""
    fleet = FLEET + "platform: {lws: {provided: site}, volcano: {provided: site}}\n"
    plan = plan_of(tmp_path, {"teams/ml.yaml": lws, "teams/vc.yaml": volcano}, fleet)
    selectors = {key: ref.spec["nodeSelector"] for key, ref in plan.refs.items()}
    gpu = {"feature.node.kubernetes.io/accelerator": "nvidia-gpu"}
    assert selectors == {
        ("ml", "LeaderWorkerSet", "serve-nvidia"): {**gpu, "zone": "d"},
        ("vc", "Job (volcano) task", "beta/workers"): {**gpu, "zone": "e"},
    }


def test_a_patch_that_renames_a_jobset_task_leaves_the_builders_pod_template(
    tmp_path: Path,
) -> None:
    """The built JobSet has no replicated job of the task's name any more: the plan expects the
    task's pods as the builders made them (the patch's zone is on another job)."""
    team = """\
quota: {nvidia: 8}
jobs:
  gang:
    kind: jobset
    images: {nvidia: r/train:1}
    tasks:
      gpu: {vendor: nvidia, devices: 1, replicas: 2}
    patch:
      json6902:
        - {op: replace, path: /spec/replicatedJobs/0/name, value: other}
        - {op: add, path: /spec/replicatedJobs/0/template/spec/template/spec/nodeSelector/zone, value: b}
"""
    fleet = FLEET + "platform: {jobset: {provided: site}}\n"
    plan = plan_of(tmp_path, {"teams/ml.yaml": team}, fleet)
    assert {key: ref.spec["nodeSelector"] for key, ref in plan.refs.items()} == {
        ("ml", "JobSet task", "gang/gpu"): {"feature.node.kubernetes.io/accelerator": "nvidia-gpu"}
    }


def test_the_fleets_packing_scheduler_runs_beside_the_default_one(tmp_path: Path) -> None:
    fleet = FLEET + "scheduling:\n  kubeScheduler: {packing: true, schedulerName: accel-packing}\n"
    plan = plan_of(tmp_path, {}, fleet)
    assert plan.profile is not None
    assert plan.profile["profiles"][0]["schedulerName"] == "accel-packing"
    assert plan.beside is True
    assert plan.schedulers == {"default-scheduler", "accel-packing"}
    # The fleet renders that scheduler: its running is simulated, nothing to say.
    assert [f for f in plan.findings if "packing" in f.message] == []


def test_a_profile_for_the_control_planes_scheduler_replaces_its_configuration(
    tmp_path: Path,
) -> None:
    fleet = FLEET + (
        "scheduling:\n  kubeScheduler: {packing: true, runs: control-plane, "
        "kubeconfig: /etc/kubernetes/scheduler.conf}\n"
    )
    # A service's Deployment in another unit is not a packing scheduler.
    team = "quota: {nvidia: 4}\nservices:\n  serve:\n    images: {nvidia: r/s:1}\n"
    team += "    tracks: {nvidia: {devicesPerReplica: 1, replicas: 1}}\n"
    plan = plan_of(tmp_path, {"teams/ml.yaml": team}, fleet)
    assert ("ml", "Deployment", "serve-nvidia") in plan.refs
    assert plan.profile is not None
    assert plan.profile["profiles"][0]["schedulerName"] == "default-scheduler"
    assert plan.beside is False
    assert plan.schedulers == {"default-scheduler"}
    # The control plane's scheduler is not the fleet's to start with the profile: SIM011 says so.
    assert [f.message for f in plan.findings if "packing" in f.message] == [
        "the packing profile (scheduling.kubeScheduler, runs: control-plane) is for the "
        "control plane's own kube-scheduler, which the fleet does not render: the simulation "
        "ran it, but that the cluster's scheduler is started with it is not simulated "
        "(docs/scheduling.md)"
    ]


def test_without_packing_the_control_planes_scheduler_runs_with_its_defaults(
    tmp_path: Path,
) -> None:
    plan = plan_of(tmp_path, {})
    assert plan.profile is None
    assert plan.beside is False
    assert plan.schedulers == {"default-scheduler"}
    assert [f for f in plan.findings if "packing" in f.message] == []


def test_a_pool_whose_server_type_has_no_inventory_is_said_once_at_the_pool(
    tmp_path: Path,
) -> None:
    """H200s have PCI IDs in the catalog but no server inventory: nfd-master has nothing to
    match on their nodes. One SIM009 for the pool of two nodes, at the pool, saying where to
    declare the inventory; its nodes carry the pool's labels and taints as declared."""
    vendor = "pools:\n  - {name: h200, model: H200, devicesPerNode: 4, nodes: [n9, n10]}\n"
    plan = plan_of(tmp_path, {"vendors/nvidia.yaml": vendor})
    assert [f for f in plan.findings if f.code == "SIM009"] == [
        Finding(
            "SIM009",
            "pool nvidia/h200 (model H200; nodes n9, n10): no PCI inventory for its server type, "
            "so nfd-master has nothing to match: its nodes were registered with the pool's labels "
            "and taints as declared, and whether its NodeFeatureRule matches the hardware is not "
            "simulated",
            Location("values/vendors/nvidia.yaml", 2, 5),
            "$.pools[0]",
            hint="declare the server's PCI functions in values/inventories/<server type>.yaml "
            "(accelerator: the vendor and this model) and name it in the pool's serverType "
            "(docs/node-config.md)",
            severity=Severity.WARNING,
        )
    ]
    assert [(n.name, n.declared) for n in plan.nodes if n.role == "pool"] == [
        ("n9", True),
        ("n10", True),
    ]


def test_a_pool_with_the_sites_own_inventory_is_not_said_to_lack_one(tmp_path: Path) -> None:
    """The H200 server declared in the fleet's values (values/inventories/) and named by the
    pool: its nodes publish it, and nothing says it is missing."""
    vendor = (
        "pools:\n"
        "  - {name: h200, model: H200, devicesPerNode: 4, nodes: [n9], serverType: hgx-h200}\n"
    )
    plan = plan_of(
        tmp_path, {"vendors/nvidia.yaml": vendor, "inventories/hgx-h200.yaml": H200_SERVER}
    )
    assert [f for f in plan.findings if f.code == "SIM009"] == []
    (node,) = [n for n in plan.nodes if n.role == "pool"]
    assert (node.declared, node.inventory.file if node.inventory else None) == (
        False,
        "values/inventories/hgx-h200.yaml",
    )


def test_the_kustomize_builds_findings_stay_with_the_plan(tmp_path: Path) -> None:
    """What the build of the units found comes first among the plan's findings, and the list
    handed in is not the plan's own."""
    values = tree(tmp_path)
    checked, _ = load(values, "prod")
    built, _ = build(checked.values, "prod", builds=checked.builds)
    found = [Finding("KUS001", "unit team-ml does not build", Location("overlays/prod/team-ml"))]
    plan = make_plan(checked.values, checked.builds["prod"], built, found)
    assert plan.findings[0] == Finding(
        "KUS001", "unit team-ml does not build", Location("overlays/prod/team-ml")
    )
    assert len(found) == 1


SITE_NFD = (
    "nfd-master is the site's (platform.nfd is not provided by the fleet): the simulation ran it "
    "with -enable-taints and an empty configuration, what docs/node-config.md asks of the site; "
    "the site's own flags were not simulated"
)


def test_the_fleets_nfd_chart_runs_nfd_master_as_rendered(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, {}, FLEET + "platform: {nfd: {provided: fleet}}\n")
    assert plan.nfd == (("-enable-taints",), "null")
    applied = {(o["kind"], o["metadata"]["name"]) for o in plan.nfd_objects}
    assert ("DaemonSet", "nfd-node-feature-discovery-worker") in applied
    assert ("Deployment", "nfd-node-feature-discovery-gc") in applied
    assert [f for f in plan.findings if f.message == SITE_NFD] == []


def test_the_sites_nfd_master_is_said_assumed_only_where_nfd_labels_the_nodes(
    tmp_path: Path,
) -> None:
    site = plan_of(tmp_path / "nfd", {})
    assert (site.nfd, site.nfd_objects) == (None, [])
    assert [f.code for f in site.findings if f.message == SITE_NFD] == ["SIM011"]
    patched = plan_of(tmp_path / "patch", {}, FLEET + "nodeConfig: {method: node-patch}\n")
    assert patched.nfd is None
    assert [f for f in patched.findings if f.message == SITE_NFD] == []


def test_kueues_controller_manager_brings_its_own_crds(tmp_path: Path) -> None:
    """Under Kueue (the site's), its controller manager runs with its chart's integrations, and
    its chart's CRDs are used, not the pinned copies."""
    plan = plan_of(tmp_path / "kueue", {}, FLEET + "scheduling: {backend: kueue}\n")
    assert plan.kueue is True and plan.charted is True
    assert {k for k, setup in plan.controllers.items() if setup is not None} == {"kueue"}
    pinned = sorted(c["metadata"]["name"] for c in plan.crds)
    assert pinned == [
        "applications.argoproj.io",
        "appprojects.argoproj.io",
        "nodefeaturerules.nfd.k8s-sigs.io",
        "podmonitors.monitoring.coreos.com",
        "prometheusrules.monitoring.coreos.com",
    ]
    [said] = [f.message for f in plan.findings if f.message.startswith("Kueue is the site's")]
    assert "(integrations: batch/job, kubeflow.org/mpijob, " in said
    assert ", leaderworkerset.x-k8s.io/leaderworkerset); " in said
    quota = plan_of(tmp_path / "quota", {})
    assert quota.kueue is False and quota.charted is False
    assert all(setup is None for setup in quota.controllers.values())
    assert quota.namespaces == ["argocd"]


def test_the_waves_hold_back_the_jobs_and_check_argo_cds_applications_only(
    tmp_path: Path,
) -> None:
    """Units sync wave by wave; a team's Job and JobSet are left out of its sync, to run after
    the services (the Job first); Argo CD's unit is applied as a dry run, whole."""
    team = """\
quota: {nvidia: 4}
jobs:
  train:
    vendor: nvidia
    devices: 1
    images: {nvidia: r/t:1}
  gang:
    kind: jobset
    images: {nvidia: r/train:1}
    tasks:
      gpu: {vendor: nvidia, devices: 1, replicas: 2}
services:
  serve:
    images: {nvidia: r/s:1}
    tracks: {nvidia: {devicesPerReplica: 1, replicas: 2}}
"""
    fleet = FLEET + "platform: {jobset: {provided: site}}\n"
    other = """\
quota: {nvidia: 4}
jobs:
  sweep:
    kind: jobset
    images: {nvidia: r/train:1}
    tasks:
      gpu: {vendor: nvidia, devices: 1, replicas: 2}
"""
    plan = plan_of(tmp_path, {"teams/ml.yaml": team, "teams/ai.yaml": other}, fleet)
    waves = [
        (
            [(unit.unit.name, [o["kind"] for o in objs], dry) for unit, objs, dry in wave.syncs],
            [unit.unit.name for unit in wave.node_config],
        )
        for wave in plan.waves
    ]
    apps = ["AppProject"] + ["Application"] * 6
    monitoring = ["Namespace", "Namespace", "ConfigMap", "ConfigMap", "DaemonSet"]
    monitoring += ["PrometheusRule", "PrometheusRule", "PodMonitor"]
    ml = ["Namespace", "ResourceQuota", "PodDisruptionBudget", "Service", "Service", "Deployment"]
    assert waves == [
        ([("argocd", apps, True)], []),
        ([("node-config", ["NodeFeatureRule"], False)], ["node-config"]),
        (
            [
                ("device-plugins", ["Namespace", "DaemonSet"], False),
                ("monitoring", monitoring, False),
                ("team-ai", ["Namespace", "ResourceQuota"], False),
                ("team-ml", ml, False),
            ],
            [],
        ),
    ]
    jobs = [(u.unit.name, o["kind"], o["metadata"]["name"]) for u, o in plan.team_jobs]
    assert jobs == [("team-ml", "Job", "train")]
    jobsets = [(u.unit.name, o["kind"], o["metadata"]["name"]) for u, o in plan.jobsets]
    assert jobsets == [("team-ai", "JobSet", "sweep"), ("team-ml", "JobSet", "gang")]
    queued = [(t.name, job.name, kind) for t, job, kind in plan.queued]
    assert queued == [("ai", "sweep", "JobSet"), ("ml", "gang", "JobSet")]
    assert sorted(plan.refs) == [
        ("ai", "JobSet task", "sweep/gpu"),
        ("ml", "Deployment", "serve-nvidia"),
        ("ml", "Job", "train"),
        ("ml", "JobSet task", "gang/gpu"),
    ]


def test_a_controller_manager_the_fleets_chart_runs_is_not_said_to_be_the_sites(
    tmp_path: Path,
) -> None:
    plan = plan_of(tmp_path, {}, FLEET + "platform: {jobset: {provided: fleet}}\n")
    assert plan.controllers["jobset"] is not None
    said = [f.message.split(" (")[0] for f in plan.findings if f.message.startswith("JobSet")]
    assert said == ["JobSet's controller manager"]


def test_a_teams_own_secret_gets_a_stand_in_and_a_word(tmp_path: Path) -> None:
    team = """\
quota: {nvidia: 4}
jobs:
  train:
    vendor: nvidia
    devices: 1
    images: {nvidia: r/t:1}
    imagePullSecrets: [{name: registry-creds}]
external:
  secrets: [registry-creds]
"""
    plan = plan_of(tmp_path, {"teams/ml.yaml": team})
    labels = {"app.kubernetes.io/managed-by": "accel-gitops", "accel-gitops.io/simulation": "true"}
    assert plan.stand_ins == [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "registry-creds", "labels": labels, "namespace": "ml"},
            "type": "Opaque",
        },
    ]
    said = [(f.code, str(f.location)) for f in plan.findings if "(external)" in f.message]
    assert said == [("SIM011", "values/teams/ml.yaml:9:3")]


def test_a_pool_beside_the_gpu_operator_must_end_up_with_the_operators_switches_off(
    tmp_path: Path,
) -> None:
    """The fleet's own plugin and exporter on a cluster that runs the GPU Operator: the
    simulated node must carry the labels that keep the Operator's off it (SIM001 checks what
    nfd-master applied against these)."""
    from generator.simulate.nodes import plan_nodes
    from generator.values import loader

    fleet = FLEET + "platform: {gpuOperator: {provided: site}}\n"
    view = loader.load(tree(tmp_path, {}, fleet=fleet)).envs["prod"]
    gpus = [n for n in plan_nodes(view) if n.vendor is not None]
    assert [n.name for n in gpus] == ["n1", "n2"]  # the default NVIDIA pool's
    assert (
        gpus[0].labels
        == gpus[1].labels
        == {
            "feature.node.kubernetes.io/accelerator": "nvidia-gpu",
            "feature.node.kubernetes.io/gpu-brand": "nvidia",
            "feature.node.kubernetes.io/gpu-model": "A100",
            "nvidia.com/gpu.deploy.dcgm-exporter": "false",
            "nvidia.com/gpu.deploy.device-plugin": "false",
        }
    )
