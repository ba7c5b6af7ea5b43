"""What a simulation says it did not exercise (generator/simulate/scope.py, SIM011), read from
the units an environment deploys; and the gang size the simulation holds a Volcano Job to
(sync.min_available). The gang on a real control plane: tests/cluster/test_cluster.py."""

from __future__ import annotations

from pathlib import Path

from generator.findings import Finding, Location, Severity
from generator.simulate.scope import not_simulated
from generator.simulate.sync import min_available
from generator.vocab.addons import FLEET as FLEET_KUEUE
from generator.vocab.addons import SITE
from tests.fixtures import (
    DRA_NVIDIA,
    MIG_NVIDIA,
    MPS_NVIDIA,
    SHARED_NVIDIA,
    VNPU_ASCEND,
    built_units,
)

FLEET = """\
name: t
kubernetesVersion: "1.36"
environments: [dev]
git: {repoURL: https://git.example.com/t.git, targetRevision: main}
"""
# SIM011's hint, written out: a changed hint fails the tests.
HINT = "check what was not simulated on a cluster that runs it (docs/simulation.md)"
NVIDIA = "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, nodes: [gpu-1]}\n"
# Team ml: a batch Job, and Volcano Jobs `gang` and `pair` (line 9 on).
TEAM = """\
quota: {nvidia: 4}
jobs:
  plain:
    vendor: nvidia
    devices: 1
    images: {nvidia: r/t:1}
  gang:
    kind: volcano
    images: {nvidia: r/t:1}
    tasks:
      workers: {vendor: nvidia, devices: 1, replicas: 2}
  pair:
    kind: volcano
    images: {nvidia: r/t:1}
    tasks:
      workers: {vendor: nvidia, devices: 1, replicas: 2}
"""
VOLCANO = (
    "Volcano's scheduler, controllers and admission do not run here: the task pods of Volcano "
    "Job ml/gang, Volcano Job ml/pair were made by the simulation as Volcano's job controller "
    "makes them and placed by kube-scheduler, all or none as Volcano's gang plugin decides; "
    "Volcano's queues, capability, reclaim and binpack were not exercised"
)


def scope(tmp_path: Path, fleet: str, team: str = TEAM, packing: bool = False) -> list[Finding]:
    files = {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": team}
    view, _, built = built_units(tmp_path, files, FLEET + fleet)
    return not_simulated(view, built, packing)


def test_volcano_jobs_are_named_at_the_platform_line(tmp_path: Path) -> None:
    found = scope(tmp_path, "platform:\n  volcano: {provided: site}\n")
    assert found == [
        Finding(
            "SIM011",
            VOLCANO,
            Location("values/fleet.yaml", 6, 3),
            hint=HINT,
            severity=Severity.WARNING,
        )
    ]


def test_kueue_the_fleet_renders_ran_and_what_of_it_did_not_is_named(tmp_path: Path) -> None:
    team = TEAM.split("  gang:")[0]
    files = {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": team}
    fleet = FLEET + "scheduling: {backend: kueue}\nplatform:\n  kueue: {provided: fleet}\n"
    view, _, built = built_units(tmp_path, files, fleet)
    # No Volcano Job: nothing of Volcano is named; Kueue ran, and what of it did not is said.
    assert not_simulated(view, built, False) == []
    assert not_simulated(view, built, False, controllers={"kueue": FLEET_KUEUE}) == [
        Finding(
            "SIM011",
            "Kueue's controller manager (sigs.k8s.io/kueue v0.17.0) ran with the configuration, "
            "CRDs, webhooks and certificate rotation of the fleet's Kueue chart, as a process "
            "with the control plane's admin credentials reached through an EndpointSlice the "
            "simulation wrote: the chart's Deployment and RBAC, and Kueue's visibility API "
            "(off), were not exercised",
            Location("values/fleet.yaml", 7, 3),
            hint=HINT,
            severity=Severity.WARNING,
        )
    ]


def test_the_sites_kueue_is_said_to_be_assumed_with_its_integrations(tmp_path: Path) -> None:
    team = TEAM.split("  gang:")[0]
    files = {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": team}
    view, _, built = built_units(tmp_path, files, FLEET + "scheduling: {backend: kueue}\n")
    [found] = not_simulated(
        view, built, False, controllers={"kueue": SITE}, integrations=("batch/job", "pod")
    )
    assert found == Finding(
        "SIM011",
        "Kueue is the site's (platform.kueue is not provided by the fleet): the simulation ran "
        "Kueue v0.17.0 with its chart's default configuration (integrations: batch/job, pod); "
        "the site's own version and configuration were not simulated",
        Location("values/fleet.yaml", 5, 14),
        hint=HINT,
        severity=Severity.WARNING,
    )


def test_nothing_is_said_when_nothing_unsimulated_is_deployed(tmp_path: Path) -> None:
    team = TEAM.split("  gang:")[0]
    assert scope(tmp_path, "", team) == []


def test_the_packing_profile_is_named_when_it_ran(tmp_path: Path) -> None:
    team = TEAM.split("  gang:")[0]
    fleet = (
        "scheduling:\n  kubeScheduler: {packing: true, runs: control-plane, "
        "kubeconfig: /etc/kubernetes/scheduler.conf}\n"
    )
    assert scope(tmp_path, fleet, team, packing=True) == [
        Finding(
            "SIM011",
            "the packing profile (scheduling.kubeScheduler, runs: control-plane) is for the "
            "control plane's own kube-scheduler, which the fleet does not render: the simulation "
            "ran it, but that the cluster's scheduler is started with it is not simulated "
            "(docs/scheduling.md)",
            Location("values/fleet.yaml", 6, 3),
            hint=HINT,
            severity=Severity.WARNING,
        )
    ]


def volcano_jobs(count: int) -> str:
    jobs = "".join(
        f"  j{i}:\n    kind: volcano\n    images: {{nvidia: r/t:1}}\n"
        f"    tasks:\n      w: {{vendor: nvidia, devices: 1, replicas: 1}}\n"
        for i in range(count)
    )
    return "quota: {nvidia: 4}\njobs:\n" + jobs


def test_up_to_four_objects_are_listed_and_more_are_counted(tmp_path: Path) -> None:
    fleet = "platform:\n  volcano: {provided: site}\n"
    [four] = scope(tmp_path / "four", fleet, volcano_jobs(4))
    listed = "Volcano Job ml/j0, Volcano Job ml/j1, Volcano Job ml/j2, Volcano Job ml/j3"
    assert f"task pods of {listed} were made" in four.message
    [five] = scope(tmp_path / "five", fleet, volcano_jobs(5))
    assert f"task pods of {listed} and 1 more were made" in five.message


def test_min_available_is_the_jobs_else_what_volcanos_webhook_defaults() -> None:
    tasks = [{"replicas": 4}, {"replicas": 2, "minAvailable": 1}]
    assert min_available({"spec": {"minAvailable": 3, "tasks": tasks}}) == 3
    assert min_available({"spec": {"tasks": tasks}}) == 5
    assert min_available({"spec": {"minAvailable": 0, "tasks": [{}]}}) == 1
    assert min_available({"spec": {"tasks": [{"replicas": 2, "minAvailable": 0}]}}) == 0


def test_the_sites_nfd_master_is_named_when_its_flags_were_assumed(tmp_path: Path) -> None:
    """At nodeConfig.method (fleet.yaml line 5, its key) when the fleet does not render NFD."""
    team = TEAM.split("  gang:")[0]
    files = {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": team}
    view, _, built = built_units(tmp_path, files, FLEET + "nodeConfig: {method: nfd}\n")
    assert not_simulated(view, built, packing=False, site_nfd=True) == [
        Finding(
            "SIM011",
            "nfd-master is the site's (platform.nfd is not provided by the fleet): the "
            "simulation ran it with -enable-taints and an empty configuration, what "
            "docs/node-config.md asks of the site; the site's own flags were not simulated",
            Location("values/fleet.yaml", 5, 14),
            hint=HINT,
            severity=Severity.WARNING,
        )
    ]
    assert not_simulated(view, built, packing=False) == []


def test_the_sites_nfd_master_is_named_at_the_platform_line_when_values_declare_it(
    tmp_path: Path,
) -> None:
    team = TEAM.split("  gang:")[0]
    files = {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": team}
    fleet = FLEET + "nodeConfig: {method: nfd}\nplatform:\n  nfd: {provided: site}\n"
    view, _, built = built_units(tmp_path, files, fleet)
    [found] = not_simulated(view, built, packing=False, site_nfd=True)
    assert found.location == Location("values/fleet.yaml", 7, 3)


def test_jobsets_and_leaderworkersets_controllers_ran_and_what_of_them_did_not_is_named(
    tmp_path: Path,
) -> None:
    """Each add-on controller manager that ran, the fleet's or the site's, at its platform line,
    with what of it did not run."""
    team = (
        "quota: {nvidia: 4}\njobs:\n  js:\n    kind: jobset\n    images: {nvidia: r/t:1}\n"
        "    tasks:\n      w: {vendor: nvidia, devices: 1, replicas: 2}\n"
        "services:\n  llm:\n    images: {nvidia: r/s:1}\n"
        "    tracks:\n      nvidia: {devicesPerReplica: 1, replicas: 1, groupSize: 2}\n"
    )
    fleet = (
        "scheduling: {backend: kueue}\nplatform:\n  jobset: {provided: site}\n"
        "  lws: {provided: fleet}\n"
    )
    files = {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": team}
    view, _, built = built_units(tmp_path, files, FLEET + fleet)
    # Nothing is said of a controller that did not run.
    assert not_simulated(view, built, False) == []
    found = not_simulated(view, built, False, controllers={"jobset": SITE, "lws": FLEET_KUEUE})
    assert found == [
        Finding(
            "SIM011",
            "JobSet is the site's (platform.jobset is not provided by the fleet): the "
            "simulation ran sigs.k8s.io/jobset v0.11.1 with its chart's default configuration; "
            "the site's own version and configuration were not simulated; its child Jobs and "
            "their pods were made and scheduled, but none ran to an end here, so the JobSets' "
            "success and failure policies were not exercised",
            Location("values/fleet.yaml", 7, 3),
            hint=HINT,
            severity=Severity.WARNING,
        ),
        Finding(
            "SIM011",
            "LeaderWorkerSet's controller manager (sigs.k8s.io/lws v0.8.0) ran with the "
            "configuration, CRDs, webhooks and certificate rotation of the fleet's "
            "LeaderWorkerSet chart, as a process with the control plane's admin credentials "
            "reached through an EndpointSlice the simulation wrote: the chart's Deployment and "
            "RBAC were not exercised; its groups' pods were made and scheduled, but none failed "
            "or was updated here, so group restarts and rolling updates were not exercised",
            Location("values/fleet.yaml", 8, 3),
            hint=HINT,
            severity=Severity.WARNING,
        ),
    ]


def test_trainers_controller_says_no_training_ran_and_for_the_sites_which_runtimes(
    tmp_path: Path,
) -> None:
    team = (
        "quota: {nvidia: 4}\njobs:\n  t:\n    kind: trainjob\n    vendor: nvidia\n"
        "    images: {nvidia: r/t:1}\n"
    )
    fleet = (
        "scheduling: {backend: kueue}\nplatform:\n  jobset: {provided: fleet}\n"
        "  trainer: {provided: site}\n"
    )
    files = {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": team}
    view, _, built = built_units(tmp_path, files, FLEET + fleet)
    site, fleet_run = (
        not_simulated(view, built, False, controllers={"trainer": by})[0]
        for by in (SITE, FLEET_KUEUE)
    )
    assert site.location == Location("values/fleet.yaml", 8, 3)
    assert site.message == (
        "Kubeflow Trainer is the site's (platform.trainer is not provided by the fleet): the "
        "simulation ran github.com/kubeflow/trainer/v2 v2.2.0 with its chart's default "
        "configuration and the ClusterTrainingRuntimes its TrainJobs name as that chart defines "
        "them (preflight checks that the site has them, PRE008); the site's own version and "
        "configuration were not simulated, nor its runtimes' own content; it made each "
        "TrainJob's JobSet from its ClusterTrainingRuntime, whose pods were made and scheduled, "
        "but no training process ran here, so the TrainJobs' progress, completion and the "
        "status server were not exercised"
    )
    assert fleet_run.message.startswith(
        "Kubeflow Trainer's controller manager (github.com/kubeflow/trainer/v2 v2.2.0) ran with "
        "the configuration, CRDs, webhooks and certificate rotation of the fleet's Kubeflow "
        "Trainer chart"
    )
    assert fleet_run.message.endswith("completion and the status server were not exercised")


def test_volcano_implied_by_the_backend_is_named_at_the_backend(tmp_path: Path) -> None:
    """No platform.volcano line: the finding is at scheduling.backend (line 5)."""
    [found] = scope(tmp_path, "scheduling: {backend: volcano}\n")
    assert found.message == VOLCANO
    assert found.location == Location("values/fleet.yaml", 5, 14)


def test_the_sites_kueue_with_no_integrations_says_none(tmp_path: Path) -> None:
    team = TEAM.split("  gang:")[0]
    files = {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": team}
    view, _, built = built_units(tmp_path, files, FLEET + "scheduling: {backend: kueue}\n")
    [found] = not_simulated(view, built, False, controllers={"kueue": SITE})
    assert "(integrations: none);" in found.message


def test_a_shared_vendors_plugin_is_named_as_stood_in_for_by_its_nodes(tmp_path: Path) -> None:
    """One warning per vendor that shares, at its `sharing` strategy; nvidia's whole GPUs need
    none (the plugin's allocation of whole devices is what every simulated node stands for)."""
    files = {
        "vendors/nvidia.yaml": NVIDIA,
        "vendors/nvidia-shared.yaml": SHARED_NVIDIA,
        "teams/ml.yaml": "quota: {nvidia: 4}\n",
    }
    view, _, built = built_units(tmp_path, files, FLEET)
    assert not_simulated(view, built, False) == [
        Finding(
            "SIM011",
            "vendor nvidia-shared shares its devices by timeSlicing: its simulated nodes "
            "advertised 4 nvidia.com/gpu.shared per device, as its device plugin would with the "
            "config file rendered for it, and the real scheduler placed pods by them; the plugin "
            "itself does not run here, so its reading of that file, which device each share is, "
            "and how the pods of one device share its time and memory were not exercised",
            Location("values/vendors/nvidia-shared.yaml", 3, 3),
            hint="check what was not simulated on a cluster that runs it (docs/simulation.md)",
            severity=Severity.WARNING,
        )
    ]


def test_a_mig_vendors_manager_and_plugin_are_named_as_stood_in_for(tmp_path: Path) -> None:
    """The MIG manager (the site's) and the plugin's finding the instances: neither ran, the
    nodes' capacity stood in for both. At the vendor's `sharing.mig`."""
    files = {
        "vendors/nvidia.yaml": NVIDIA,
        "vendors/nvidia-mig.yaml": MIG_NVIDIA,
        "teams/ml.yaml": "quota: {nvidia: 4}\n",
    }
    view, _, built = built_units(tmp_path, files, FLEET)
    assert not_simulated(view, built, False) == [
        Finding(
            "SIM011",
            "vendor nvidia-mig partitions its devices into MIG 3g.40gb instances: its simulated "
            "nodes advertised 2 nvidia.com/mig-3g.40gb per device, as its device plugin would "
            "once the site's MIG manager had applied the layout their label "
            "nvidia.com/mig.config names, and the real scheduler placed pods by them; neither "
            "the MIG manager (the layout applied, the device's reconfiguration) nor the plugin "
            "(its finding the instances) runs here, so those were not exercised",
            Location("values/vendors/nvidia-mig.yaml", 3, 3),
            hint="check what was not simulated on a cluster that runs it (docs/simulation.md)",
            severity=Severity.WARNING,
        )
    ]


def test_an_mps_vendors_daemon_is_named_as_not_run(tmp_path: Path) -> None:
    files = {
        "vendors/nvidia.yaml": NVIDIA,
        "vendors/nvidia-mps.yaml": MPS_NVIDIA,
        "teams/ml.yaml": "quota: {nvidia: 4}\n",
    }
    view, _, built = built_units(tmp_path, files, FLEET)
    assert not_simulated(view, built, False) == [
        Finding(
            "SIM011",
            "vendor nvidia-mps shares its devices by MPS: its simulated nodes advertised 4 "
            "nvidia.com/gpu.shared per device, as its device plugin would with the config file "
            "rendered for it, and the real scheduler placed pods by them; neither the plugin "
            "nor its MPS control daemon runs here (their pods are placed, not run), so the "
            "daemon's start, its limit of each pod to 1/4 of a device's memory and compute, and "
            "the plugin's waiting for it were not exercised",
            Location("values/vendors/nvidia-mps.yaml", 3, 3),
            hint="check what was not simulated on a cluster that runs it (docs/simulation.md)",
            severity=Severity.WARNING,
        )
    ]


def test_a_dra_vendors_driver_is_named_as_stood_in_for_by_its_slices(tmp_path: Path) -> None:
    files = {
        "vendors/nvidia.yaml": NVIDIA,
        "vendors/nvidia-dra.yaml": DRA_NVIDIA,
        "teams/ml.yaml": "quota: {nvidia: 4}\n",
    }
    view, _, built = built_units(tmp_path, files, FLEET)
    assert not_simulated(view, built, False) == [
        Finding(
            "SIM011",
            "vendor nvidia-dra is allocated by DRA: its driver (gpu.nvidia.com) is installed by "
            "the site and does not run here. The simulation published for each of its nodes the "
            "ResourceSlice the driver would, with only the attributes the fleet's DeviceClass "
            "reads (type, and productName set to the start the catalog records for the model), "
            "and the real scheduler allocated the claims from them; the driver's other "
            "attributes, its preparing the devices on the node, and the DeviceClasses its own "
            "chart installs were not exercised",
            Location("values/vendors/nvidia-dra.yaml", 2, 1),
            hint="check what was not simulated on a cluster that runs it (docs/simulation.md)",
            severity=Severity.WARNING,
        )
    ]


def test_a_vnpu_vendors_vnpus_are_named_as_made_by_the_site(tmp_path: Path) -> None:
    """VNPU_ASCEND: the vNPUs the site creates with npu-smi, and the plugin's finding them: the
    nodes' capacity stood in for both. At the vendor's `sharing.vnpu`."""
    files = {
        "vendors/nvidia.yaml": NVIDIA,
        "vendors/ascend-vnpu.yaml": VNPU_ASCEND,
        "teams/ml.yaml": "quota: {nvidia: 4}\n",
    }
    view, _, built = built_units(tmp_path, files, FLEET)
    assert not_simulated(view, built, False) == [
        Finding(
            "SIM011",
            "vendor ascend-vnpu splits its NPUs into vNPUs of template vir06_1c_16g: its "
            "simulated nodes advertised 4 huawei.com/Ascend910-6c.1cpu.16g per NPU, as its "
            "device plugin would once the site had created them with npu-smi, and the real "
            "scheduler placed pods by them; creating the vNPUs and the plugin finding them were "
            "not exercised",
            Location("values/vendors/ascend-vnpu.yaml", 3, 3),
            hint="check what was not simulated on a cluster that runs it (docs/simulation.md)",
            severity=Severity.WARNING,
        )
    ]
