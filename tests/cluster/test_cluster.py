"""The fleet on a real control plane: kube-apiserver, kube-controller-manager, kube-scheduler,
etcd, KWOK and nfd-master, built by `make tools` from their pinned Go modules.

One control plane per test session (the `control_plane` fixture in conftest.py; every test here
is in one xdist group, so a parallel run starts one), reset to how it started after each test.
Each case that only the API server or the simulation can see has a values tree made for it.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from generator.builders import fleet as builders
from generator.builders.common import metadata
from generator.cluster import dryrun
from generator.cluster import plane as fleet_plane
from generator.controlplane import launcher
from generator.controlplane.launcher import ControlPlane
from generator.findings import Finding, Severity
from generator.policy import registry
from generator.reporters import simulation as simreport
from generator.simulate import sync
from generator.simulate.run import SimulationResult, simulate
from generator.toolchain import process
from generator.toolchain import registry as tool_registry
from generator.values import loader as values_loader
from generator.values.model import FleetView
from generator.vocab.units import Component
from tests.fixtures import (
    DRA_NVIDIA,
    MIG_NVIDIA,
    MPS_NVIDIA,
    PROD_FLEET,
    SIM_FLEET,
    TWO_CLUSTERS,
    VNPU_ASCEND,
    invoke,
)
from tests.fixtures import tree as values_tree
from tests.simulate.cases import TEAM, gang_tree, line_of, small_tree

pytestmark = pytest.mark.xdist_group("control-plane")

Tree = Callable[..., Path]


# ------------------------------------------------------------------------------------ helpers

FLEET = SIM_FLEET


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    """tree(fleet=..., vendors={...}, teams={...}): a small values tree; one NVIDIA pool with one
    node and a team with one 4-GPU job unless told otherwise (tests/simulate/cases.py)."""

    def make(
        fleet: dict[str, Any] | None = None,
        vendors: dict[str, Any] | None = None,
        teams: dict[str, Any] | None = None,
    ) -> Path:
        return small_tree(tmp_path, fleet, vendors, teams)

    return make


def sim(
    values: Path,
    plane: ControlPlane,
    env: str | None = None,
    *,
    argocd: bool = False,
    metrics: bool = False,
) -> SimulationResult:
    """Without Argo CD or the monitoring unless asked: tests/cluster/test_argocd.py and
    test_monitoring.py hold what they do."""
    return simulate(
        values,
        env,
        lambda _minor: contextlib.nullcontext(plane),
        argocd=argocd,
        watch_metrics=metrics,
    )


def codes(findings: list[Finding], severity: Severity = Severity.ERROR) -> set[str]:
    return {f.code for f in findings if f.severity is severity}


def where(findings: list[Finding], code: str) -> set[str]:
    return {f"{f.location.file}:{f.location.line}" for f in findings if f.code == code}


# ----------------------------------------------------------------------------------- launcher


def test_control_plane_runs_the_pinned_kubernetes(control_plane: ControlPlane) -> None:
    # The real kubectl, with the kubeconfig the launcher wrote: token auth and the CA it trusts.
    out = process.run(
        "kubectl", [f"--kubeconfig={control_plane.kubeconfig}", "version", "-o", "json"], timeout=60
    ).stdout
    version = json.loads(out)["serverVersion"]
    assert version["gitVersion"] == tool_registry.TOOLS["kube-apiserver"].pinned
    assert (version["major"], version["minor"]) == ("1", dryrun.control_plane_minor().split(".")[1])
    names = {s.name for s in control_plane.services}
    assert names == {
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kwok",
        "nfd-master",
    }
    control_plane.check()
    node = control_plane.client().get_node(launcher.CONTROL_PLANE_NODE)
    assert launcher.node_ready(node)  # KWOK's heartbeat and node-lifecycle-controller at work


def test_every_process_stops_when_the_block_fails() -> None:
    seen: dict[str, Any] = {}
    with (
        pytest.raises(RuntimeError, match="a failing test"),
        launcher.local_control_plane() as plane,
    ):
        seen["pids"] = [s.process.pid for s in plane.services]
        seen["dir"] = plane.workdir
        assert len(seen["pids"]) == 5
        raise RuntimeError("a failing test")
    for pid in seen["pids"]:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not seen["dir"].exists()


# ------------------------------------------------------------------------------------ dry-run


def test_example_fleet_passes_server_dry_run_in_every_environment(
    values_dir: Path, cluster: ControlPlane
) -> None:
    result = dryrun.dry_run(values_dir, None, plane=cluster)
    assert codes(result.findings) == set(), [f.format() for f in result.findings]
    # prod is two clusters (docs/multi-cluster.md): each is dry-run on its own
    assert set(result.timings) == {"prod/domestic", "prod/main", "staging"}
    assert result.objects > 80


# A pool of each way devices reach pods (docs/allocation.md), and a team with a workload on each.
# Time-slicing is the example fleet's (its dry-run test): its shares and MPS's are one resource,
# nvidia.com/gpu.shared, which one ResourceQuota cannot tell apart (RES002).
ALLOCATION_TEAM = """\
quota: {nvidia-mps: 2, nvidia-mig: 2, ascend-vnpu: 2, nvidia-dra: 2}
jobs:
  mps: {vendor: nvidia-mps, devices: 1, images: {nvidia-mps: r/t:1}}
  mig: {vendor: nvidia-mig, devices: 2, images: {nvidia-mig: r/t:1}}
  vnpu: {vendor: ascend-vnpu, devices: 1, images: {ascend-vnpu: r/t:1}}
  dra: {vendor: nvidia-dra, devices: 2, model: H100, images: {nvidia-dra: r/t:1}}
"""


def test_every_allocation_way_passes_validate_and_server_dry_run(
    tmp_path: Path, cluster: ControlPlane
) -> None:
    """MPS (its control daemon too), MIG, vNPU and DRA pools side by side: render,
    validate's every stage (kustomize, kubeconform with the resource.k8s.io v1 schemas, the
    upstream checkers, policy) and the API server's dry-run admit what is rendered."""
    files = {
        "fleet.yaml": yaml.safe_dump(SIM_FLEET, sort_keys=False),
        "vendors/nvidia-mps.yaml": MPS_NVIDIA,
        "vendors/nvidia-mig.yaml": MIG_NVIDIA,
        "vendors/ascend-vnpu.yaml": VNPU_ASCEND,
        "vendors/nvidia-dra.yaml": DRA_NVIDIA,
        "teams/ml.yaml": ALLOCATION_TEAM,
    }
    values = values_tree(tmp_path, files, defaults=False)
    assert invoke("render", "--values", str(values)).exit_code == 0
    static = invoke("validate", "--values", str(values), "--no-cache")
    assert static.exit_code == 0, static.output
    result = dryrun.dry_run(values, None, plane=cluster)
    assert codes(result.findings) == set(), [f.format() for f in result.findings]
    rendered = "".join(p.read_text() for p in (values.parent / "base").rglob("*.yaml"))
    for made in (
        "kind: DeviceClass",
        "kind: ResourceClaimTemplate",
        "name: nvidia-device-plugin-mps-mps-control-daemon",
        "migStrategy: mixed",
        "nvidia.com/mig.config: all-3g.40gb",
        "requests.huawei.com/Ascend910-6c.1cpu.16g",
    ):
        assert made in rendered, made


def test_crd_object_breaking_a_cel_rule_only_the_server_sees(
    tree: Tree, cluster: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kueue's ResourceFlavor CRD says, in CEL, that a toleration with operator Exists has no
    value. kubeconform does not run CEL (validate is clean); the API server does."""
    values = tree()
    flavor = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": metadata("a100", sources=["values/vendors/nvidia.yaml"]),
        "spec": {
            "nodeLabels": {"feature.node.kubernetes.io/accelerator": "nvidia-gpu"},
            "tolerations": [
                {
                    "key": "nvidia.com/gpu",
                    "operator": "Exists",
                    "value": "x",
                    "effect": "NoSchedule",
                }
            ],
        },
    }

    def extra(view: FleetView) -> list[Component]:
        vendor = view.vendors[0]
        return [Component("scheduling", "extra/flavor", [flavor], vendor.doc.anchor(("pools",)))]

    monkeypatch.setattr(builders, "BUILDERS", (*builders.BUILDERS, builders.of_view(extra)))
    assert invoke("render", "--values", str(values)).exit_code == 0
    static = invoke("validate", "--values", str(values), "--no-drift", "--no-cache")
    assert static.exit_code == 0, static.output

    result = dryrun.dry_run(values, None, plane=cluster)
    assert codes(result.findings) == {"DRY001"}
    (finding,) = result.findings
    assert "ResourceFlavor a100 (overlays/dev/scheduling)" in finding.message
    assert "a value must be empty when 'operator' is 'Exists'" in finding.message
    assert finding.location.file == "values/vendors/nvidia.yaml"
    assert finding.location.line == line_of(values / "vendors/nvidia.yaml", "pools:")


def test_object_in_a_namespace_no_unit_creates(
    tree: Tree, cluster: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Builders put every object in a namespace some unit creates, so values cannot place one
    elsewhere; a builder bug could (here: a ConfigMap made from the team's values). Schemas
    cannot know which namespaces will exist; the API server refuses it."""
    values = tree()
    stray = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata("settings", namespace="elsewhere", sources=["values/teams/ml.yaml"]),
        "data": {"a": "b"},
    }

    def extra(view: FleetView) -> list[Component]:
        team = view.teams[0]
        return [Component("team-ml", "extra/stray", [stray], team.doc.anchor(("quota",)))]

    monkeypatch.setattr(builders, "BUILDERS", (*builders.BUILDERS, builders.of_view(extra)))
    result = dryrun.dry_run(values, None, plane=cluster)
    assert codes(result.findings) == {"DRY003"}
    (finding,) = result.findings
    assert "ConfigMap elsewhere/settings (overlays/dev/team-ml)" in finding.message
    assert "namespace 'elsewhere' does not exist" in finding.message
    assert f"{finding.location.file}:{finding.location.line}" == (
        f"values/teams/ml.yaml:{line_of(values / 'teams/ml.yaml', 'quota:')}"
    )


def test_pod_security_that_will_refuse_a_workloads_pods(
    tree: Tree, cluster: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """WKL004 (host paths in a namespace whose Pod Security forbids them) removed: Pod Security
    admission warns on the Job at the namespace's enforce level, so its pods would be refused."""
    ascend = {
        # A site that mounts the driver from the host into every Ascend workload.
        "workloadMounts": [
            {"name": "ascend-driver", "path": "/usr/local/Ascend/driver", "readOnly": True}
        ],
        "pools": [{"name": "910b", "model": "910b", "devicesPerNode": 8, "nodes": ["npu-1"]}],
    }
    team = {
        "owners": ["ml@example.com"],
        "quota": {"ascend": 8},
        "jobs": {
            "train": {
                "vendor": "ascend",
                "devices": 8,
                "model": "910b",
                "images": {"ascend": "registry.example.com/train:ascend"},
            }
        },
    }
    values = tree(vendors={"ascend": ascend}, teams={"ml": team})
    monkeypatch.delitem(registry.CHECKS, "WKL004")
    result = dryrun.dry_run(values, None, plane=cluster)
    assert codes(result.findings) == {"DRY005"}, [f.format() for f in result.findings]
    (finding,) = result.findings
    assert "Job ml/train (overlays/dev/team-ml)" in finding.message
    assert "hostPath" in finding.message
    assert finding.location.line == line_of(values / "teams/ml.yaml", "train:")


def test_a_team_granted_ipc_lock_passes_dry_run_and_its_namespace_keeps_baseline(
    tree: Tree, cluster: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A team granted security profile rdma (IPC_LOCK, outside baseline's capabilities): its
    namespace enforces privileged and the fleet's ValidatingAdmissionPolicy keeps baseline there
    (builders/security.py). Its job adding IPC_LOCK passes the dry-run. With the values checks
    that would stop them first removed (SEC007, WKL004), a job adding SYS_NICE and one mounting
    a hostPath reach the API server: Pod Security at privileged admits both, the policy refuses
    them, each at its job's line."""
    fleet = {**SIM_FLEET, "securityProfiles": {"rdma": {"capabilities": ["IPC_LOCK"]}}}

    def job(**pod: Any) -> dict[str, Any]:
        return {"vendor": "nvidia", "devices": 4, "images": {"nvidia": "r/train:cuda"}, **pod}

    team = {
        "owners": ["ml@example.com"],
        "securityProfiles": ["rdma"],
        "quota": {"nvidia": 4},
        "jobs": {
            "train": job(capabilities=["IPC_LOCK"]),
            "nice": job(capabilities=["SYS_NICE"]),
            "host": job(
                volumes=[{"name": "data", "hostPath": {"path": "/data"}}],
                volumeMounts=[{"name": "data", "mountPath": "/data"}],
            ),
        },
    }
    values = tree(fleet=fleet, teams={"ml": team})
    monkeypatch.delitem(registry.CHECKS, "SEC007")
    monkeypatch.delitem(registry.CHECKS, "WKL004")
    result = dryrun.dry_run(values, None, plane=cluster)
    assert codes(result.findings) == {"DRY005"}, [f.format() for f in result.findings]
    refused = {f.location.line: f.message for f in result.findings}
    ml = values / "teams/ml.yaml"
    assert sorted(refused) == sorted([line_of(ml, "host:"), line_of(ml, "nice:")])
    policy = "ValidatingAdmissionPolicy 'accel-gitops-security-profiles'"
    assert policy in refused[line_of(ml, "nice:")]
    assert "check_capabilities_baseline.go" in refused[line_of(ml, "nice:")]
    assert policy in refused[line_of(ml, "host:")]
    assert "check_hostPathVolumes.go" in refused[line_of(ml, "host:")]
    namespace = cluster.client().get("v1", "Namespace", "", "ml")
    assert namespace is not None
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"


def test_a_security_profiles_policy_the_server_refuses_is_a_finding_not_a_crash(
    tree: Tree, cluster: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The policy is created for real on the local plane: where the API server refuses it (here
    a CEL rule that does not compile, as a generator bug would make), that is DRY001 at the
    policy, and the run goes on without waiting for it."""
    from generator.builders import security

    monkeypatch.setattr(security, "VALIDATIONS", (("check_x.go", "object.spec.(", "x"),))
    fleet = {**SIM_FLEET, "securityProfiles": {"rdma": {"capabilities": ["IPC_LOCK"]}}}
    team = {"owners": ["ml@example.com"], "securityProfiles": ["rdma"], "quota": {"nvidia": 4}}
    values = tree(fleet=fleet, teams={"ml": team})
    result = dryrun.dry_run(values, None, plane=cluster)
    assert codes(result.findings) == {"DRY001"}, [f.format() for f in result.findings]
    (finding,) = result.findings
    assert finding.message.startswith(
        "ValidatingAdmissionPolicy accel-gitops-security-profiles "
        "(overlays/dev/security-profiles): the API server refuses it (422 Invalid)"
    ), finding.message
    assert f"{finding.location.file}:{finding.location.line}" == (
        f"values/fleet.yaml:{line_of(values / 'fleet.yaml', 'securityProfiles:')}"
    )


def test_dry_run_against_a_kubeconfig_changes_nothing(tree: Tree, cluster: ControlPlane) -> None:
    values = tree()
    api = cluster.client()

    def state() -> tuple[Any, ...]:
        names = {
            k: sorted(o["metadata"]["name"] for o in api.list(*k))
            for k in (
                ("v1", "Namespace"),
                ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
                ("apps/v1", "DaemonSet"),
                ("rbac.authorization.k8s.io/v1", "ClusterRole"),
            )
        }
        return tuple(sorted(names.items()))

    before = state()
    result = dryrun.dry_run(values, None, kubeconfig=cluster.kubeconfig)
    assert state() == before
    # The team's and the plugins' namespaces do not exist there: said once per namespace.
    skipped = {f.message.split("'")[1] for f in result.findings if f.code == "DRY004"}
    assert {"ml", "accelerator-plugins"} <= skipped
    assert result.skipped > 0 and result.objects > 0


def test_a_kubernetes_minor_without_a_control_plane_is_a_finding_at_its_line(
    tree: Tree,
) -> None:
    values = tree(fleet={**FLEET, "kubernetesVersion": "1.33"})
    result = dryrun.dry_run(values, None)  # stops before starting anything
    (finding,) = result.findings
    assert finding.code == "KVER001"
    assert f"{finding.location.file}:{finding.location.line}" == "values/fleet.yaml:2"
    assert finding.message == (
        "server-side dry-run needs a control plane of the cluster's Kubernetes 1.33, but the "
        "project has control planes for 1.34, 1.35, 1.36, 1.37 only; a server-side dry-run on "
        "another minor is no proof"
    )
    assert (
        finding.hint
        == "set kubernetesVersion to one of 1.34, 1.35, 1.36, 1.37 (docs/simulation.md)"
    )
    sim_result = simulate(values, None, lambda _minor: pytest.fail("no control plane may start"))
    assert [f.code for f in sim_result.findings] == ["KVER001"]


def test_validate_dry_run_cli_on_its_own_local_control_plane(tree: Tree) -> None:
    values = tree()
    assert invoke("render", "--values", str(values)).exit_code == 0
    result = invoke(
        "validate",
        "--values",
        str(values),
        "--no-drift",
        "--no-cache",
        "--dry-run=server",
        "--local-apiserver",
    )
    assert result.exit_code == 0, result.output
    assert "dry-run objects" in result.output.splitlines()[-1]


def test_dry_run_options_need_dry_run(tree: Tree) -> None:
    values = tree()
    result = invoke("validate", "--values", str(values), "--local-apiserver")
    assert result.exit_code == 2
    assert "need --dry-run=server" in result.output


# --------------------------------------------------------------------------------- simulation


def test_a_quota_lower_than_a_job_needs_refuses_its_pods(
    tree: Tree, cluster: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MIG004 (quota below a job's devices) removed: the quota admission plugin refuses the pods."""
    values = tree(teams={"ml": {**TEAM, "quota": {"nvidia": 2}}})
    monkeypatch.delitem(registry.CHECKS, "MIG004")
    result = sim(values, cluster)
    refused = [f for f in result.findings if f.code == "SIM008"]
    assert len(refused) == 1, [f.format() for f in result.findings]
    assert "exceeded quota" in refused[0].message and "even alone" in refused[0].message
    assert refused[0].location.file == "values/teams/ml.yaml"
    assert refused[0].location.line == line_of(values / "teams/ml.yaml", "train:")
    (env,) = result.envs
    quota = env.quotas[0]
    assert quota["hard"]["requests.nvidia.com/gpu"] == "2"


def test_the_quota_controller_recounts_a_stale_used_before_the_steady_state_is_taken(
    cluster: ControlPlane,
) -> None:
    """A quota whose `used` is one pod short (as a recount racing quota admission leaves it, made
    here by writing the status) stays so: its controller ignores status changes and recounts
    only every 5 minutes. recount_quotas has it counted again from the pods, and leaves the spec
    as it was."""
    api = cluster.client()
    gpu = "requests.nvidia.com/gpu"
    api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "recount"}})
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "accelerators", "namespace": "recount"},
        "spec": {"hard": {gpu: "4", "pods": "10"}},
    }
    api.apply(quota)

    def status() -> dict[str, Any]:
        live = api.get("v1", "ResourceQuota", "recount", "accelerators") or {}
        return dict(live.get("status") or {})

    sync.wait(lambda: bool(status().get("used")), "the quota counted")
    container = {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    for name in ("a", "b"):
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "recount"},
        }
        api.create({**pod, "spec": {"containers": [container]}})
    assert status()["used"] == {gpu: "2", "pods": "2"}  # quota admission counted both
    live = api.get("v1", "ResourceQuota", "recount", "accelerators") or {}
    live["status"]["used"] = {gpu: "1", "pods": "1"}
    path = api.path("v1", "ResourceQuota", "recount", "accelerators") + "/status"
    api.request("PUT", path, live)
    assert status()["used"] == {gpu: "1", "pods": "1"}
    sync.recount_quotas(api)
    assert status() == {"hard": {gpu: "4", "pods": "10"}, "used": {gpu: "2", "pods": "2"}}
    after = api.get("v1", "ResourceQuota", "recount", "accelerators") or {}
    assert after["spec"] == {"hard": {gpu: "4", "pods": "10"}}


def test_jobs_that_compete_for_a_quota_start_in_a_stable_order(
    tree: Tree, cluster: ControlPlane
) -> None:
    """A Volcano job of four 1-GPU workers and a 4-GPU Job under a quota of 4: one runs, the
    other waits for it (SIM010). Jobs start in (namespace, name) order, each once its pods
    exist, so the Volcano job `alpha` gets the quota and the Job `zeta` is the one reported, on
    every run. Started at once, the Job controller's pod usually beat the Volcano job's pods
    (made here one by one) to the quota, and the report named `alpha` instead."""
    alpha = {
        "kind": "volcano",
        "images": {"nvidia": "registry.example.com/train:cuda"},
        "command": ["python", "train.py"],
        "tasks": {"workers": {"vendor": "nvidia", "devices": 1, "replicas": 4}},
    }
    zeta = copy.deepcopy(TEAM["jobs"]["train"])  # a copy: no YAML anchor
    fleet = {**FLEET, "platform": {"volcano": {"provided": "site"}}}
    values = tree(fleet=fleet, teams={"ml": {**TEAM, "jobs": {"alpha": alpha, "zeta": zeta}}})
    for _ in range(2):
        result = sim(values, cluster)
        waits = [f for f in result.findings if f.code == "SIM010"]
        assert [(f.message.split(" does not fully run")[0], f.envs) for f in waits] == [
            ("Job ml/zeta", ("dev",))
        ], [f.format() for f in result.findings]
        assert where(waits, "SIM010") == {
            f"values/teams/ml.yaml:{line_of(values / 'teams/ml.yaml', 'zeta:')}"
        }
        assert codes(result.findings) == set()
        # The rows of the job that waits say so; only an error is called a mismatch.
        (env,) = result.envs
        rows = [p for p in env.pods if not p.ok]
        assert [(p.workload, p.waits) for p in rows] == [("Job ml/zeta", True)]
        assert "MISMATCH" not in simreport.env_text(env)
        assert "waits" in simreport.env_text(env)


def test_a_volcano_gang_is_placed_all_or_none_and_held_back_it_holds_no_device(
    tmp_path: Path, cluster: ControlPlane
) -> None:
    """Two nodes of 4 GPUs. Job `alpha` (4 GPUs) takes one; Volcano job `beta` (three 2-GPU
    workers) could get two workers onto the other from kube-scheduler, but Volcano's gang plugin
    places none, so all three rows read Pending with the gang's reason; Job `gamma` (4 GPUs),
    started after it, runs on the node the gang did not hold. Alone, `beta` runs: it waits for
    the others (SIM010, a warning) and its rows read `waits`, never MISMATCH. (Each job is its
    own team's, a, b and c, in that order, so that no ResourceQuota stands in the gang's way:
    one team's quota of all 14 GPUs would be more than the 8 there are, CAP003.)"""
    values = gang_tree(tmp_path)
    result = sim(values, cluster)
    (env,) = result.envs
    reason = (
        "gang: only 2 of the 3 pods it needs at once (minAvailable) could be placed, so Volcano "
        "places none"
    )
    beta_rows = [(p.pod, p.node, p.reason, p.ok, p.waits) for p in env.pods if "beta" in p.pod]
    assert beta_rows == [(f"beta-workers-{i}", "", reason, False, True) for i in range(3)]
    placed = {p.workload: p.node for p in env.pods if p.ok}
    assert set(placed) == {"Job a/alpha", "Job c/gamma"}
    assert placed["Job a/alpha"] != placed["Job c/gamma"]
    assert [
        (f.code, f.message.split(" does not")[0]) for f in result.findings if f.code == "SIM010"
    ] == [("SIM010", "Job (volcano) task b/beta/workers")]
    assert codes(result.findings) == set() and result.errors == 0
    assert "MISMATCH" not in simreport.env_text(env)


def test_kueue_admits_a_job_pinned_to_each_model_on_its_quota_per_model(
    tree: Tree, cluster: ControlPlane
) -> None:
    """One vendor file with an A100 node (g1) and an H100 node (g2), 4 GPUs each; team ml's
    quota per model, 4 H100 and 4 A100, is one ClusterQueue flavor per pool with that model's
    nominal quota (and the ResourceQuota the sum, 8). Kueue's own controller admits the job
    pinned to A100 on the A100 flavor and the one pinned to H100 on the H100 flavor, and each
    pod runs on its model's node."""
    fleet = {
        **FLEET,
        "scheduling": {"backend": "kueue"},
        "platform": {"kueue": {"provided": "fleet"}},
    }
    nvidia = {
        "pools": [
            {"name": "a100", "model": "A100", "devicesPerNode": 4, "nodes": ["g1"]},
            {"name": "h100", "model": "H100", "devicesPerNode": 4, "nodes": ["g2"]},
        ]
    }
    team = {
        "quota": {"nvidia": {"H100": 4, "A100": 4}},
        "jobs": {
            # Each its own dicts: a shared one would be written as a YAML alias, which values
            # files refuse.
            f"on-{model.lower()}": {
                "vendor": "nvidia",
                "devices": 4,
                "model": model,
                "images": {"nvidia": "r/train:cuda"},
            }
            for model in ("A100", "H100")
        },
    }
    values = tree(fleet=fleet, vendors={"nvidia": nvidia}, teams={"ml": team})
    result = sim(values, cluster)
    (env,) = result.envs
    rows = {a["workload"]: a for a in env.admissions}
    assert sorted(rows) == ["Job ml/on-a100", "Job ml/on-h100"]
    for name, flavor, other in (
        ("on-a100", "nvidia-a100", "nvidia-h100"),
        ("on-h100", "nvidia-h100", "nvidia-a100"),
    ):
        row = rows[f"Job ml/{name}"]
        assert row["ok"] and row["admission"].startswith("1 of 1 admitted: team-ml ("), row
        assert flavor in row["admission"] and other not in row["admission"], row
    placed = {p.workload: (p.node, p.ok) for p in env.pods}
    assert placed == {"Job ml/on-a100": ("g1", True), "Job ml/on-h100": ("g2", True)}
    assert [q["hard"] for q in env.quotas] == [{"requests.nvidia.com/gpu": "8"}]
    assert codes(result.findings) == set(), [f.format() for f in result.findings]


def test_simulate_cli_json(
    tree: Tree, cluster: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = tree()

    @contextlib.contextmanager
    def shared(**_: Any) -> Iterator[ControlPlane]:
        yield cluster

    monkeypatch.setattr(fleet_plane, "control_plane", shared)
    result = invoke("simulate", "--values", str(values), "--output", "json", "--no-argocd")
    doc = json.loads(result.output)
    (env,) = doc["stats"]["environments"]
    assert env["env"] == "dev"
    assert {n["name"] for n in env["nodes"]} >= {"gpu-1", "general-purpose-01"}
    assert result.exit_code == (1 if doc["errors"] else 0)


def test_example_fleet_simulation_in_every_environment(
    values_dir: Path, cluster: ControlPlane
) -> None:
    """Every node gets exactly its pool's labels and taints from nfd-master, every vendor
    DaemonSet runs on exactly its vendor's nodes, no untolerating pod lands on an accelerator
    node, every track has the ready pods plan says, and every job is placed (the fleet's packing
    profile keeps whole nodes free for the 4-GPU and 8-NPU jobs). The mixed job only waits for
    the team's other jobs (a warning), since ml-team's jobs together need more GPUs than exist.
    Then Argo CD, bootstrapped as docs/argocd.md says, brings every Application of each cluster
    to Synced and Healthy in wave order, and none loops; Volcano's and the DRA driver's charts
    are in no module here, so their Applications are left out and named (SIM011)."""
    result = sim(values_dir, cluster, argocd=True)
    # prod is two clusters, each simulated on its own (docs/multi-cluster.md)
    assert [e.env for e in result.envs] == ["prod/domestic", "prod/main", "staging"]
    for env in result.envs:
        assert env.nodes and all(n.ok for n in env.nodes), env.nodes
        assert env.probes and all(p["ok"] for p in env.probes), env.probes
        assert env.plugins and all(p["ok"] for p in env.plugins), env.plugins
        assert all(t["ok"] for t in env.tracks), env.tracks
        assert "MISMATCH" not in simreport.env_text(env)
    by_env = {e.env: e for e in result.envs}
    units = [
        "jobset",
        "nfd",
        "node-config",
        "scheduling",
        "device-plugins",
        "monitoring",
        "packing-scheduler",
        "team-inference",
        "team-ml-team",
    ]
    assert {e: [a["application"] for a in by_env[e].applications] for e in by_env} == {
        "prod/domestic": [
            "accel-prod-domestic-root",
            "accel-prod-root",
            *(f"accel-prod-domestic-{u}" for u in units),
        ],
        "prod/main": [
            "accel-prod-main-root",
            "accel-prod-root",
            *(f"accel-prod-main-{u}" for u in units),
        ],
        "staging": ["accel-staging-root", *(f"accel-staging-{u}" for u in units)],
    }
    assert all(a["ok"] and a["sync"] == "Synced" for e in by_env.values() for a in e.applications)
    # inference-service runs where NVIDIA and Ascend are: staging and prod's main; chat's Hygon
    # track runs in domestic (its NVIDIA track in main: a service across clusters)
    assert [bool(by_env[e].tracks) for e in by_env] == [True, True, True]
    assert [t["track"] for t in by_env["prod/domestic"].tracks] == ["hygon"]
    # domestic runs the Cambricon job, on its Cambricon node
    [mlu] = [p for p in by_env["prod/domestic"].pods if "mlu-finetune-job" in p.workload]
    assert mlu.node == "mlu-node-01" and mlu.ok
    errors = [f.format() for f in result.findings if f.severity is Severity.ERROR]
    assert errors == []
    # SIM011: Volcano does not run here, and the packing profile ran as the only scheduler.
    assert codes(result.findings, Severity.WARNING) == {"SIM010", "SIM011"}
    # mixed-training-job is one gang (staging only: in prod its vendors are in two clusters):
    # none of its pods placed beside the other jobs
    gang = [p for p in by_env["staging"].pods if "mixed-training-job" in p.workload]
    assert gang and all(p.waits and not p.node for p in gang), gang


# The steps these tests leave out (sim's defaults) say so in a SIM011 of their own.
SKIPPED_STEPS = ("Argo CD did not run", "the monitoring did not run")


def scheduling_notes(result: SimulationResult) -> list[str]:
    """The SIM011 notes of a run but those of the steps left out, each to its first " ("."""
    return [
        f.message.split(" (")[0]
        for f in result.findings
        if f.code == "SIM011" and not f.message.startswith(SKIPPED_STEPS)
    ]


def test_the_simulation_runs_the_fleets_own_scheduler_profile(
    tree: Tree, cluster: ControlPlane
) -> None:
    """The profile for the control plane's own scheduler (runs: control-plane) becomes this
    control plane's scheduler configuration, and a SIM011 says that is the site's to ensure."""
    control_plane = {
        "packing": True,
        "runs": "control-plane",
        "kubeconfig": "/etc/kubernetes/scheduler.conf",
    }
    values = tree(fleet={**FLEET, "scheduling": {"kubeScheduler": control_plane}})
    result = sim(values, cluster)
    config = cluster.scheduler_config
    assert config is not None and config["kind"] == "KubeSchedulerConfiguration"
    (profile,) = config["profiles"]
    fit = next(p for p in profile["pluginConfig"] if p["name"] == "NodeResourcesFit")
    assert fit["args"]["scoringStrategy"]["type"] == "MostAllocated"
    assert scheduling_notes(result) == ["nfd-master is the site's", "the packing profile"]
    cluster.check()  # kube-scheduler accepted the fleet's file and runs
    sim(tree(), cluster)
    assert cluster.scheduler_config is None  # back to kube-scheduler's defaults


def test_the_fleets_packing_scheduler_runs_beside_an_untouched_default(
    tree: Tree, cluster: ControlPlane
) -> None:
    """runs: fleet (the default): the rendered scheduler runs as a second kube-scheduler with the
    rendered profile and name; the team's pods name it and are placed, which the default
    scheduler (left with its own configuration) never does for a pod naming another scheduler.
    Its Deployment and RBAC are applied like every other unit, and nothing says it was not
    simulated."""
    values = tree(fleet={**FLEET, "scheduling": {"kubeScheduler": {"packing": True}}})
    result = sim(values, cluster)
    assert cluster.scheduler_config is None
    assert cluster.second_scheduler is None  # stopped at the end of the run
    (env,) = result.envs
    assert [(p.workload, p.ok) for p in env.pods] == [("Job ml/train", True)]
    api = cluster.client()
    [pod] = api.list("v1", "Pod", "ml")
    assert pod["spec"]["schedulerName"] == "accel-packing-scheduler" and pod["spec"]["nodeName"]
    assert api.get("apps/v1", "Deployment", "kube-system", "accel-packing-scheduler")
    # Only nfd-master's assumed flags are not simulated (NFD is the site's in this tree).
    assert scheduling_notes(result) == ["nfd-master is the site's"]
    assert result.errors == 0


def test_each_cluster_is_held_to_its_own_kubernetes_version(tmp_path: Path) -> None:
    """TWO_CLUSTERS: domestic says 1.34, main the fleet's 1.33; the project has a control plane
    of 1.34 but none of 1.33, so a simulation of main is no proof (KVER001), said where its
    version is set; each runs on a plane of its own minor."""
    loaded = values_loader.load(values_tree(tmp_path, TWO_CLUSTERS, fleet=PROD_FLEET))
    found = dryrun.version_findings(loaded, None, "simulation", ["prod/domestic", "prod/main"])
    assert [(f.code, str(f.location), f.path) for f in found] == [
        ("KVER001", "values/fleet.yaml:2:20", "$.kubernetesVersion"),
    ]
    assert "Kubernetes 1.33, but the project has control planes for 1.34," in found[0].message
    assert dryrun.version_findings(loaded, None, "simulation", ["prod/domestic"]) == []
    assert dryrun.by_minor(loaded, ["prod/main", "prod/domestic"]) == {
        "1.33": ["prod/main"],
        "1.34": ["prod/domestic"],
    }


# What each baseline check of Pod Security refuses (k8s.io/pod-security-admission v0.36.3
# policy/check_*.go), one pod spec per check (the first container's fields are "c"'s).
BASELINE_VIOLATIONS: dict[str, dict[str, Any]] = {
    "hostNamespaces": {"hostPID": True},
    "privileged": {"containers": [{"securityContext": {"privileged": True}}]},
    "capabilities": {"containers": [{"securityContext": {"capabilities": {"add": ["SYS_NICE"]}}}]},
    "hostPathVolumes": {"volumes": [{"name": "h", "hostPath": {"path": "/etc"}}]},
    "hostPorts": {"containers": [{"ports": [{"containerPort": 80, "hostPort": 80}]}]},
    "appArmorProfile": {"securityContext": {"appArmorProfile": {"type": "Unconfined"}}},
    "appArmorAnnotation": {
        "annotations": {"container.apparmor.security.beta.kubernetes.io/c": "unconfined"}
    },
    "seLinuxOptions": {"containers": [{"securityContext": {"seLinuxOptions": {"user": "root"}}}]},
    "seLinuxType": {"securityContext": {"seLinuxOptions": {"type": "spc_t"}}},
    # No procMount case: the API server refuses Unmasked unless hostUsers is false (kubernetes
    # v1.36.3 pkg/apis/core/validation/validation.go), where baseline admits it (check_procMount_baseline.go).
    "seccompProfile": {
        "initContainers": [
            {
                "name": "i",
                "image": "x",
                "securityContext": {"seccompProfile": {"type": "Unconfined"}},
            }
        ]
    },
    "sysctls": {"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}},
    "windowsHostProcess": {
        "hostNetwork": True,
        "securityContext": {"windowsOptions": {"hostProcess": True}},
    },
    "hostProbes": {
        "containers": [{"livenessProbe": {"tcpSocket": {"port": 80, "host": "10.0.0.1"}}}]
    },
}


def _pod(namespace: str, name: str, violation: dict[str, Any]) -> dict[str, Any]:
    spec = copy.deepcopy(violation)
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if "annotations" in spec:
        meta["annotations"] = spec.pop("annotations")
    container = {"name": "c", "image": "x", **(spec.pop("containers", [{}])[0])}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {**spec, "containers": [container]},
    }


def _refusal(api: Any, pod: dict[str, Any]) -> str:
    try:
        api.create(pod, dry_run=True)
    except Exception as exc:  # the API server's refusal, whatever its admission
        return str(exc)
    return ""


def test_the_security_profiles_policy_refuses_what_pod_security_baseline_refuses(
    cluster: ControlPlane,
) -> None:
    """The fleet's ValidatingAdmissionPolicy in a namespace at privileged refuses each pod that
    Pod Security baseline refuses (one per baseline check), and admits what baseline admits plus
    the namespace's granted capability: the real kube-apiserver judges both namespaces."""
    from generator.builders import security

    api = cluster.client()
    psa = "pod-security.kubernetes.io/enforce"
    api.apply(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "base", "labels": {psa: "baseline"}},
        }
    )
    granted = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "granted",
            "labels": {
                psa: "privileged",
                "accel-gitops.io/pod-security": "baseline",
                "capability.accel-gitops.io/IPC_LOCK": "granted",
            },
        },
    }
    api.apply(granted)
    policies = [security.policy(["values/fleet.yaml"]), security.binding(["values/fleet.yaml"])]
    for obj in policies:
        api.apply(obj)
    dryrun.await_policy(api, [granted], policies)
    policy = "ValidatingAdmissionPolicy 'accel-gitops-security-profiles'"
    for check, violation in sorted(BASELINE_VIOLATIONS.items()):
        assert "violates PodSecurity" in _refusal(api, _pod("base", check.lower(), violation)), (
            check
        )
        refused = _refusal(api, _pod("granted", check.lower(), violation))
        assert policy in refused, (check, refused)
    ipc_lock = {
        "containers": [{"securityContext": {"capabilities": {"add": ["IPC_LOCK", "CHOWN"]}}}]
    }
    assert _refusal(api, _pod("granted", "rdma", ipc_lock)) == ""
    assert "violates PodSecurity" in _refusal(api, _pod("base", "rdma", ipc_lock))
    fine = {
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"securityContext": {"seLinuxOptions": {"type": "container_t"}}}],
    }
    assert _refusal(api, _pod("granted", "fine", fine)) == ""
    assert _refusal(api, _pod("base", "fine", fine)) == ""
