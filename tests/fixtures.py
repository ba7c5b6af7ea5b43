"""The one helper module of the tests: where the repository and the real tools are, values trees
made for one behaviour, the real CLI (in-process or as a process), `kustomize build`, findings,
and reading what a render wrote.

pytest fixtures (`values_dir`, `write`, `cluster`, ...) are in conftest.py; what the tests know
about the example fleet under values/ (its pinned lines, its backends) is in tests/example.py.
Test modules import from these three modules and never from one another.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from generator.builders import argocd as argocd_builder
from generator.builders.fleet import Build
from generator.cluster.dryrun import load
from generator.cluster.units import BuiltUnit, argocd_order, unit_waves
from generator.errors import FindingsError
from generator.findings import Finding
from generator.policy import memo as memo_module
from generator.policy.context import Context
from generator.render.layout import render_tree
from generator.render.stage import RenderOptions, load_and_check, render
from generator.render.writer import read_tree
from generator.simulate.nodes import SimNode, plan_nodes
from generator.values.model import FleetView
from generator.vocab.objects import identity
from generator.workloads.model import Workloads

if TYPE_CHECKING:
    from click.testing import Result

ROOT = Path(__file__).resolve().parent.parent

Write = Callable[[str, str], Path]
Obj = dict[str, Any]


# ---- a view's build, as render makes it ---------------------------------------------------------


def build_of(view: FleetView) -> Build:
    """The build of one view (render makes one per view and hands it on)."""
    return Build(view)


def workloads_of(view: FleetView) -> Workloads:
    """The workload model of one view."""
    return Workloads(view)


def context(view: FleetView) -> Context:
    """One view as the checks and manifest rules read it."""
    return Context(Build(view))


def team_objects(view: FleetView, team: Any) -> tuple[list[Obj], list[Any]]:
    """A team's workload objects and their pod templates, from a build of its view."""
    made = Build(view).team(team)
    return made.objects, made.pods


# ---- GitHub workflows ---------------------------------------------------------------------------

# A third-party action pinned by commit SHA, the tag it is noted after it (`# v7.0.1`).
PINNED_ACTION = re.compile(r"^[\w.-]+/[\w.-]+(?:/[\w./-]+)?@[0-9a-f]{40}$")


def workflow_uses(*files: Path) -> list[tuple[str, str]]:
    """(file name, `uses:` value) of every step and reusable-workflow call in the files."""
    found: list[tuple[str, str]] = []
    for path in files:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        steps = doc.get("runs", {}).get("steps", [])  # a composite action
        for job in (doc.get("jobs") or {}).values():
            if "uses" in job:
                found.append((path.name, str(job["uses"])))
            steps = [*steps, *job.get("steps", [])]
        found += [(path.name, str(step["uses"])) for step in steps if "uses" in step]
    return found


def unpinned(*files: Path) -> list[tuple[str, str]]:
    """What the files use that is neither local (./) nor pinned by commit SHA."""
    return [
        (f, u)
        for f, u in workflow_uses(*files)
        if not u.startswith("./") and not PINNED_ACTION.match(u)
    ]


def actionlint(*files: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """The pinned actionlint on the files. shellcheck and pyflakes are not pinned tools: their
    integrations stay off so that the verdict does not depend on what else a machine has."""
    return subprocess.run(
        [
            str(tool("actionlint")),
            "-no-color",
            "-oneline",
            "-shellcheck=",
            "-pyflakes=",
            *map(str, files),
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


# ---- the real tools ----------------------------------------------------------------------------


def tool(name: str) -> Path:
    """A pinned tool `tools install` built ($ACCEL_GITOPS_TOOLS_DIR/bin, else .tools/bin), else the
    one on PATH; a test that needs a missing tool fails, naming the command that installs it."""
    tools_dir = Path(os.environ.get("ACCEL_GITOPS_TOOLS_DIR") or ROOT / ".tools")
    local = tools_dir / "bin" / name
    if local.exists():
        return local
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: run `make tools`")
    return Path(found)


def promtool_rule_tests(
    folder: Path, groups: list[dict[str, Any]], tests: list[dict[str, Any]]
) -> str:
    """promtool's own rule unit tests (`promtool test rules`) of `tests` on the rule `groups`,
    written as a plain rules file in `folder`; asserts they pass, returns promtool's report."""
    (folder / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    doc = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests}
    (folder / "test.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    proc = subprocess.run(
        [str(tool("promtool")), "test", "rules", "test.yaml"],
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def kustomize_text(path: Path) -> str:
    """`kustomize build <path>` with the pinned kustomize: what Argo CD applies, as YAML text."""
    proc = subprocess.run(
        [str(tool("kustomize")), "build", str(path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, f"kustomize build {path} failed:\n{proc.stderr}"
    return proc.stdout


def kustomize_build(path: Path) -> list[Obj]:
    """`kustomize build <path>`: the objects it prints."""
    return [d for d in yaml.safe_load_all(kustomize_text(path)) if d]


def build_unit(out: Path, env: str, unit: str) -> list[Obj]:
    """What Argo CD applies for one unit: `kustomize build overlays/<env>/<unit>`."""
    return kustomize_build(out / "overlays" / env / unit)


def assert_units_build_exactly(out: Path, values_dir: Path) -> int:
    """Render `values_dir` into `out` and build every unit and base with kustomize: each unit
    builds to exactly the objects render meant for it. The number of units returned."""
    result = render(RenderOptions(values_dir=values_dir, out_dir=out))
    units = result.rendered.units
    with ThreadPoolExecutor(max_workers=4) as pool:
        built = list(pool.map(lambda u: kustomize_build(out / u.path), units))
        bases = list(pool.map(lambda b: kustomize_build(out / b), result.rendered.bases))
    for unit, docs in zip(units, built, strict=True):
        got = {identity(d): d for d in docs}
        want = {identity(o): o for o in unit.objects}
        assert sorted(got) == sorted(want), unit.path
        for key, obj in want.items():
            assert got[key] == obj, f"{unit.path}: {key} differs after kustomize build"
    assert all(bases)
    return len(units)


def volcano_conf(out: Path, env: str = "prod") -> Obj:
    """The Volcano scheduler configuration the scheduling unit of `env` applies."""
    [cm] = by_name(kustomize_build(out / f"overlays/{env}/scheduling"), "ConfigMap").values()
    assert (cm["metadata"]["namespace"], cm["metadata"]["name"]) == (
        "volcano-system",
        "volcano-scheduler-configmap",
    )
    conf: Obj = yaml.safe_load(cm["data"]["volcano-scheduler.conf"])
    return conf


def plugins(conf: Obj) -> dict[str, Obj]:
    """A Volcano scheduler configuration's plugins, by name."""
    return {p["name"]: p for tier in conf["tiers"] for p in tier["plugins"]}


def pod_security(objs: list[Obj], level: str = "restricted") -> list[Obj]:
    """Every pod template of `objs` checked by Kubernetes' own Pod Security admission code
    (generator/toolchain/gotools/podsecurity) at its namespace's enforce level (`level` where `objs` lack it)."""
    proc = subprocess.run(
        [str(tool("podsecurity")), f"-level={level}"],
        input=yaml.safe_dump_all(objs),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


# ---- values trees made for one behaviour -------------------------------------------------------

# The default fleet.yaml: two environments.
FLEET = """\
name: f
kubernetesVersion: "1.33"
environments: [staging, prod]
git: {repoURL: https://git.example.com/f.git, targetRevision: main}
"""
# A fleet.yaml with prod alone, for trees that say every vendor and team themselves.
PROD_FLEET = """\
name: mini
kubernetesVersion: "1.33"
environments: [prod]
git: {repoURL: https://git.example.com/mini.git, targetRevision: main}
"""
# fleet.yaml as a dict for the control-plane tests: one environment, the Kubernetes minor the
# local control plane runs (generator/controlplane).
SIM_FLEET: dict[str, Any] = {
    "name": "t",
    "kubernetesVersion": "1.36",
    "environments": ["dev"],
    "git": {"repoURL": "https://git.example.com/t.git", "targetRevision": "main"},
    "argocd": {"namespace": "argocd", "project": "t"},
}
NVIDIA = "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1, n2]}\n"
# A vendor file that reuses NVIDIA's catalog entry to claim its H100s through NVIDIA's DRA driver
# (docs/allocation.md): 8 GPUs on node n4.
DRA_NVIDIA = """\
catalog: nvidia
allocation: dra
nodeLabels: {accelerator: nvidia-gpu-dra}
exporter: {name: dcgm-exporter-dra}
pools:
  - {name: h100-dra, model: H100, devicesPerNode: 8, nodes: [n4]}
"""
# A vendor file that reuses NVIDIA's catalog entry to share its GPUs four ways by time-slicing
# (docs/allocation.md): one GPU on node n3, so 4 shares of nvidia.com/gpu.shared.
SHARED_NVIDIA = """\
catalog: nvidia
sharing:
  timeSlicing: {replicas: 4}
nodeLabels: {accelerator: nvidia-gpu-shared}
devicePlugin: {name: nvidia-device-plugin-shared}
exporter: {name: dcgm-exporter-shared}
pools:
  - {name: a100-shared, model: A100, devicesPerNode: 1, nodes: [n3]}
"""
# SHARED_NVIDIA's GPU shared four ways by MPS instead (docs/allocation.md): the plugin's MPS
# control daemon runs beside it; still 4 of nvidia.com/gpu.shared on n3.
MPS_NVIDIA = SHARED_NVIDIA.replace("timeSlicing: {replicas: 4}", "mps: {replicas: 4}").replace(
    "-shared", "-mps"
)
# A vendor file that reuses Ascend's catalog entry for 910B NPUs the site splits into static
# vNPUs (docs/allocation.md): 4 of template vir06_1c_16g on each of npu-v1's 2 chips, so 8 of
# huawei.com/Ascend910-6c.1cpu.16g.
VNPU_ASCEND = """\
catalog: ascend
sharing:
  vnpu: {template: vir06_1c_16g, perDevice: 4}
nodeLabels: {accelerator: huawei-npu-vnpu}
devicePlugin: {name: ascend-device-plugin-vnpu}
exporter: {name: npu-exporter-vnpu}
pools:
  - {name: 910b-vnpu, model: 910b, devicesPerNode: 2, nodes: [npu-v1]}
"""
# A vendor file that reuses NVIDIA's catalog entry to partition its GPUs into MIG instances
# (docs/allocation.md): two 80GB A100s on node n5, each two 3g.40gb instances, so 4 of
# nvidia.com/mig-3g.40gb. pciDevices keeps the pool to the 80GB A100s the profile is made for.
MIG_NVIDIA = """\
catalog: nvidia
sharing:
  mig: {profile: 3g.40gb}
nodeLabels: {accelerator: nvidia-gpu-mig}
devicePlugin: {name: nvidia-device-plugin-mig}
exporter: {name: dcgm-exporter-mig}
pools:
  - {name: a100-mig, model: A100, pciDevices: ["20b2", "20b5"], devicesPerNode: 2, nodes: [n5]}
"""
TEAM = "quota:\n  nvidia: 4\n"
# What `tree` writes beside fleet.yaml unless told `defaults=False`.
DEFAULTS = {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": TEAM}


def tree(
    root: Path,
    files: Mapping[str, str | None] | None = None,
    *,
    fleet: str = FLEET,
    defaults: bool = True,
    folder: str = "values",
) -> Path:
    """A values tree under root/<folder>, returned.

    fleet: the text of fleet.yaml (FLEET: environments staging and prod).
    defaults: also one NVIDIA vendor, 8 GPUs (vendors/nvidia.yaml) and team `ml` with 4 of them
      (teams/ml.yaml); False writes fleet.yaml alone before `files`.
    files: paths relative to the tree -> text, added or replacing what is above; None leaves
      that file out. The vendors/ folder exists even when no vendor file is written."""
    values = root / folder
    (values / "vendors").mkdir(parents=True, exist_ok=True)
    start: dict[str, str | None] = {"fleet.yaml": fleet, **(DEFAULTS if defaults else {})}
    for rel, text in {**start, **(files or {})}.items():
        if text is None:
            continue
        path = values / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return values


# Team inference with a service that migrates from NVIDIA to Ascend, two replicas a track, in
# phase validate (as the example's inference-service), and the Ascend vendor it needs.
ASCEND_910B = "pools:\n  - {name: 910b, model: 910b, devicesPerNode: 8, nodes: [npu-1]}\n"
INFERENCE = """\
quota: {nvidia: 4, ascend: 4}
services:
  inference-service:
    images: {nvidia: r/s:cuda, ascend: r/s:ascend}
    vendorMounts: false
    migration: {from: nvidia, to: ascend}
    phase: validate
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 2}
      ascend: {devicesPerReplica: 1, replicas: 2, model: 910b}
"""


# A training job with the pod fields a team's own job needs (docs/workloads.md, pod fields): a
# dataset PVC mounted read-only, a 16 GiB /dev/shm, a pull secret, a token from a Secret, a
# service account, a priority class the fleet renders (DATASET_FLEET), a TTL, a deadline, a
# toleration of its own, a spread constraint and a pod annotation the fleet allows; what it uses
# from the cluster declared under `external`. Line numbers matter to the tests.
DATASET_TEAM = """\
podSecurity: restricted
quota: {nvidia: 4}
external:
  persistentVolumeClaims: [imagenet]
  secrets: [registry-creds, hf]
  serviceAccounts: [trainer]
jobs:
  train:
    vendor: nvidia
    devices: 4
    images: {nvidia: registry.example.com/train:cuda}
    shmSize: 16Gi
    volumes:
      - name: dataset
        persistentVolumeClaim: {claimName: imagenet, readOnly: true}
    volumeMounts:
      - {name: dataset, mountPath: /data, readOnly: true}
    imagePullSecrets: [{name: registry-creds}]
    priorityClassName: training-high
    serviceAccountName: trainer
    ttlSecondsAfterFinished: 3600
    activeDeadlineSeconds: 86400
    env:
      MODE: train
      HF_TOKEN: {valueFrom: {secretKeyRef: {name: hf, key: token}}}
    tolerations: [{key: example.com/spot, operator: Exists, effect: NoSchedule}]
    topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: ScheduleAnyway
        labelSelector: {matchLabels: {app.kubernetes.io/name: train}}
    podAnnotations: {example.com/owner: vision}
"""
# What fleet.yaml adds for DATASET_TEAM: the priority class it names, the annotation it sets.
DATASET_FLEET: dict[str, Any] = {
    "teamPodAnnotations": ["example.com/*"],
    "scheduling": {"priorityClasses": {"training-high": {"value": 1000}}},
}


# A JobSet of an NVIDIA and a Cambricon replicated job (2 pods x 8 GPUs, 2 pods x 4 MLUs) with
# its success and failure policies, for team llm (quota: 16 GPUs, 8 MLUs); the fleet renders
# JobSet and Kueue (JOBSET_FLEET) beside CAMBRICON_MLU370 and the default NVIDIA pool.
JOBSET_TEAM = """\
quota: {nvidia: 16, cambricon: 8}
jobs:
  pretrain:
    kind: jobset
    images: {nvidia: r/train:cuda, cambricon: r/train:mlu}
    tasks:
      gpu: {vendor: nvidia, devices: 8, replicas: 2}
      mlu: {vendor: cambricon, devices: 4, replicas: 2}
    successPolicy: {operator: All, targetReplicatedJobs: [gpu]}
    failurePolicy: {maxRestarts: 3}
"""
JOBSET_FLEET: dict[str, Any] = {
    "scheduling": {"backend": "kueue"},
    "platform": {"kueue": {"provided": "fleet"}, "jobset": {"provided": "fleet"}},
}

# A Kubeflow Trainer TrainJob under Kueue (TRAINJOB_FLEET): 2 nodes x 8 GPUs of the default
# NVIDIA vendor's a100 pool, on the torch-distributed runtime the fleet's Trainer installs.
TRAINJOB_TEAM = """\
quota: {nvidia: 16}
jobs:
  finetune:
    kind: trainjob
    vendor: nvidia
    devices: 8
    numNodes: 2
    runtime: torch-distributed
    images: {nvidia: r/train:cuda}
    command: [torchrun, train.py]
"""
TRAINJOB_FLEET: dict[str, Any] = {
    "scheduling": {"backend": "kueue"},
    "platform": {
        "kueue": {"provided": "fleet"},
        "jobset": {"provided": "fleet"},
        "trainer": {"provided": "fleet"},
    },
}


# Team llm's service migrating to a multi-host Ascend track: one group of 2 pods x 8 NPUs (a
# LeaderWorkerSet) beside an NVIDIA Deployment of one 8-GPU replica, in shift-50.
LWS_TEAM = """\
quota: {ascend: 16, nvidia: 8}
services:
  llm:
    images: {ascend: r/serve:cann, nvidia: r/serve:cuda}
    vendorMounts: false
    migration: {from: nvidia, to: ascend}
    phase: shift-50
    tracks:
      nvidia: {devicesPerReplica: 8, replicas: 1}
      ascend: {devicesPerReplica: 8, replicas: 1, groupSize: 2}
"""


def migration(root: Path, prod: str) -> Path:
    """A values tree: the default NVIDIA vendor and team `ml`, Ascend, team inference and its
    migrating service; `prod` is environments/prod.yaml."""
    files = {"vendors/ascend.yaml": ASCEND_910B, "teams/inference.yaml": INFERENCE}
    return tree(root, {**files, "environments/prod.yaml": prod})


# AMD Instinct, and a Hygon DCU that advertises amd.com/gpu too (told apart from AMD by the
# catalog's selector labels): vendors/amd.yaml and vendors/hygon.yaml. Hygon's node is on line 8,
# column 9; the site builds Hygon's plugin and exporter images.
AMD_MI250X = "pools:\n  - {name: mi250x, model: MI250X, devicesPerNode: 8, nodes: [amd-1]}\n"
HYGON_Z100L = """\
resourceName: amd.com/gpu
devicePlugin: {image: r/dcu, version: v1}
pools:
  - name: z100l
    model: Z100L
    devicesPerNode: 8
    nodes:
      - dcu-1
exporter: {daemonSet: {image: r/dcu-exporter}}
"""

# Cambricon, whose plugin and exporter images the site builds (the catalog has none):
# vendors/cambricon.yaml.
CAMBRICON_MLU370 = """\
devicePlugin: {image: r/cambricon-device-plugin, version: v1}
pools:
  - {name: mlu370, model: MLU370, devicesPerNode: 8, nodes: [mlu-1]}
exporter: {daemonSet: {image: r/mlu-exporter}}
"""

# Under Kueue, n vendors each advertising an accelerator resource of its own (example.com/acc-01,
# acc-02, ...), from Cambricon's catalog entry, one node each: vendors/accNN.yaml, `resourceName`
# on line 2, and team ml with a quota of acc01 only. Every vendor is a resource group of each
# team's ClusterQueue (docs/scheduling.md). tree(root, many_resources(n), fleet=KUEUE_PROD_FLEET,
# defaults=False).
KUEUE_PROD_FLEET = PROD_FLEET + "scheduling: {backend: kueue}\n"


def many_resources(n: int) -> dict[str, str]:
    files = {"teams/ml.yaml": "quota: {acc01: 4}\n"}
    for i in range(1, n + 1):
        files[f"vendors/acc{i:02d}.yaml"] = (
            "catalog: cambricon\n"
            f"resourceName: example.com/acc-{i:02d}\n"
            f"nodeLabels: {{accelerator: acc-{i:02d}}}\n"
            f"devicePlugin: {{name: acc-{i:02d}-device-plugin, image: r/acc-plugin, version: v1}}\n"
            f"exporter: {{name: acc-{i:02d}-exporter, daemonSet: {{image: r/acc-exporter}}}}\n"
            "pools:\n"
            f"  - {{name: p{i:02d}, model: MLU370, devicesPerNode: 8, nodes: [acc-{i:02d}]}}\n"
        )
    return files


# The four vendors beside the default NVIDIA one (pool a100, 8 GPUs), one pool each, for trees
# where something is per vendor or per device resource (AMD and Hygon share amd.com/gpu).
OTHER_VENDORS = {
    "vendors/ascend.yaml": ASCEND_910B,
    "vendors/amd.yaml": AMD_MI250X,
    "vendors/hygon.yaml": HYGON_Z100L,
    "vendors/cambricon.yaml": CAMBRICON_MLU370,
}


# prod as two clusters (docs/multi-cluster.md): `main` (NVIDIA a100, 8 GPUs, and Ascend 910b, 8
# NPUs; by server) and `domestic` (Cambricon mlu370, 8 MLUs; by name, Kubernetes 1.34, a region
# label). Team ml holds 4 GPUs and 4 MLUs and runs a Cambricon job; team inference migrates
# inference-service from NVIDIA to Ascend (INFERENCE). tree(root, TWO_CLUSTERS, fleet=PROD_FLEET).
TWO_CLUSTERS_PROD = """\
clusters:
  main:
    destination: {server: https://main.example.com:6443}
    pools: [nvidia, ascend/910b]
  domestic:
    destination: {name: domestic}
    kubernetesVersion: "1.34"
    labels: {region: cn-north}
    pools: [cambricon]
"""
TWO_CLUSTERS_ML = """\
quota: {nvidia: 4, cambricon: 4}
jobs:
  mlu-train:
    vendor: cambricon
    devices: 2
    images: {cambricon: r/train:mlu}
"""
TWO_CLUSTERS = {
    "vendors/ascend.yaml": ASCEND_910B,
    "vendors/cambricon.yaml": CAMBRICON_MLU370,
    "teams/ml.yaml": TWO_CLUSTERS_ML,
    "teams/inference.yaml": INFERENCE,
    "environments/prod.yaml": TWO_CLUSTERS_PROD,
}


# TWO_CLUSTERS with NVIDIA in both clusters: a100 (8 GPUs) in main, a second pool h100 (8) in
# domestic; team inference's 4 GPUs in main. tree(root, {**TWO_CLUSTERS, **SPLIT_NVIDIA}, ...).
SPLIT_NVIDIA = {
    "vendors/nvidia.yaml": NVIDIA
    + "  - {name: h100, model: H100, devicesPerNode: 8, nodes: [h1]}\n",
    "environments/prod.yaml": TWO_CLUSTERS_PROD.replace(
        "[cambricon]", "[cambricon, nvidia/h100]"
    ).replace("[nvidia, ascend/910b]", "[nvidia/a100, ascend/910b]"),
    "teams/inference.yaml": INFERENCE.replace("{nvidia: 4,", "{nvidia: {main: 4},"),
}


# The fleet report's small tree (tree(root, REPORT_TREE, defaults=False)): two vendors, two
# environments. Team a has two namespaces, so its quota counts twice; team b migrates a service
# from NVIDIA to Ascend (shift-30 by default, primary-new in prod), and prod lowers team a's
# NVIDIA quota.
REPORT_TREE = {
    "fleet.yaml": """\
name: small
kubernetesVersion: "1.33"
environments: [dev, prod]
git: {repoURL: "https://git.example.com/small.git", targetRevision: main}
capacity: {allowOvercommit: true}
platform:
  gatewayAPI: {provided: site}
""",
    "vendors/nvidia.yaml": """\
pools:
  - {name: a100, model: A100, devicesPerNode: 4, nodes: [gpu-1]}
""",
    "vendors/ascend.yaml": """\
pools:
  - {name: 910b, model: 910b, devicesPerNode: 8, nodes: [npu-1, npu-2]}
costWeight: 0.5
""",
    "teams/a.yaml": """\
namespaces: [a1, a2]
quota: {nvidia: 2, ascend: 4}
""",
    "teams/b.yaml": """\
quota: {nvidia: 4, ascend: 3}
services:
  s:
    images: {nvidia: "x:cuda", ascend: "x:cann"}
    vendorMounts: false
    migration: {from: nvidia, to: ascend}
    phase: shift-30
    routing: gateway
    gateway: {parentRefs: [{name: gw, namespace: gw}]}
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 3}
      ascend: {devicesPerReplica: 1, replicas: 3}
""",
    "environments/dev.yaml": "{}\n",
    "environments/prod.yaml": """\
teams:
  a:
    quota: {nvidia: 1}
  b:
    services:
      s: {phase: primary-new}
""",
}


def render_into(values_dir: Path, out: Path) -> Path:
    """Render `values_dir` into `out` in-process; `out` returned."""
    render(RenderOptions(values_dir=values_dir, out_dir=out))
    return out


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under folder (hidden ones too), byte for byte."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def find(objs: list[Obj], kind: str, name: str | None = None) -> Obj:
    """The one object of `kind` (and `name`) among `objs`."""
    found = [o for o in objs if o["kind"] == kind and name in (None, o["metadata"]["name"])]
    assert len(found) == 1, f"{kind} {name}: {[o['metadata']['name'] for o in found]}"
    return found[0]


def by_name(docs: list[Obj], kind: str) -> dict[str, Obj]:
    """The objects of one kind, by name."""
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


# ---- findings of the values checks -------------------------------------------------------------


def findings(values_dir: Path) -> list[Finding]:
    """Every finding for a values tree (errors raise inside the pipeline; collect them)."""
    try:
        warnings = load_and_check(values_dir).findings
    except FindingsError as exc:
        return exc.findings
    return warnings


def lines(values_dir: Path) -> list[str]:
    return [f.format() for f in findings(values_dir)]


def codes(values_dir: Path) -> set[str]:
    return {f.code for f in findings(values_dir)}


# ---- the real CLI ------------------------------------------------------------------------------


def invoke(*args: str, env: Mapping[str, str] | None = None) -> Result:
    """The real CLI in-process (click's CliRunner): its result.

    `output` holds stdout and stderr as a terminal shows them; `stdout` and `stderr` each alone.
    """
    from click.testing import CliRunner

    from generator.cli.main import main

    return CliRunner().invoke(main, list(args), env=dict(env) if env is not None else None)


def cli(*args: str, env: Mapping[str, str] | None = None) -> tuple[int, str]:
    """The real CLI in-process: (exit code, stdout and stderr)."""
    result = invoke(*args, env=env)
    return result.exit_code, result.output


def cli_streams(*args: str) -> tuple[int, str, str]:
    """The real CLI in-process: (exit code, stdout, stderr)."""
    result = invoke(*args)
    return result.exit_code, result.stdout, result.stderr


def render_committed(values_dir: Path) -> int:
    """Render into the folder holding the values, as a user commits it: the exit code."""
    return invoke("render", "--values", str(values_dir)).exit_code


def validate_committed(
    values_dir: Path, *args: str, env: dict[str, str] | None = None, drift: bool = False
) -> tuple[int, str]:
    """Run `validate` on what is committed. Without `drift`, the test's values are rendered and
    committed first (when they render) and drift is not checked; with it, the test controls
    the committed output."""
    extra = [] if drift else ["--no-drift"]
    if not drift:
        render_committed(values_dir)  # values with errors write nothing: the last good render stays
    result = invoke("validate", "--values", str(values_dir), *extra, *args, env=env)
    return result.exit_code, result.output


def render_py_argv(*args: str) -> list[str]:
    """The command line that runs render.py in a Python process of its own."""
    return [sys.executable, str(ROOT / "render.py"), *args]


def render_py(
    *args: str, env: Mapping[str, str] | None = None, **kw: Any
) -> subprocess.CompletedProcess[Any]:
    """render.py as a process of its own (hash seeds, signals, terminals): the subprocess.run
    result; `env` replaces the environment, `kw` goes to subprocess.run."""
    return subprocess.run(render_py_argv(*args), env=env, **kw)


def render_with_seed(values: Path, out: Path, seed: str) -> dict[str, str]:
    """render.py in a process of its own with PYTHONHASHSEED=`seed`: the tree it wrote."""
    render_py(
        "render",
        "--values",
        str(values),
        "--out",
        str(out),
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONHASHSEED": seed},
        capture_output=True,
    )
    return read_tree(out)


def render_refused(values: Path) -> str:
    """Render `values` over a previous output; assert exit 1, a 'nothing written' summary and an
    untouched output folder; return what the CLI printed."""
    out = values.parent / "out"
    for top in ("base", "overlays"):
        (out / top).mkdir(parents=True, exist_ok=True)
        (out / top / "previous.yaml").write_text(f"# previous {top}\n", encoding="utf-8")
    before = snapshot(out)
    code, output = cli("render", "--values", str(values), "--out", str(out))
    assert code == 1, output
    assert "nothing written" in output
    assert snapshot(out) == before
    return output


# ---- trees-b: small trees for the validate, delivery, reporters, render and cli tests ----------

# Team ml-team, as the `extra_objects` fixture (conftest.py) needs it: its `quota:` key is on
# line 1, column 1 of values/teams/ml-team.yaml, where findings on its extra objects point.
ML_TEAM = "quota:\n  nvidia: 4\n"


def ml_tree(
    root: Path, files: Mapping[str, str | None] | None = None, *, fleet: str = FLEET
) -> Path:
    """tree(root / "repo", ...) with team ml-team (ML_TEAM) in place of team ml: the default NVIDIA
    vendor (8 GPUs), environments staging and prod. The values are root/repo/values, so a
    committed render lands in root/repo (base/, overlays/) and findings start `values/`."""
    return tree(
        root / "repo",
        {"teams/ml.yaml": None, "teams/ml-team.yaml": ML_TEAM, **(files or {})},
        fleet=fleet,
    )


def committed_at(repo: Path, rel: str, text: str) -> int:
    """The 1-based line of the first line holding `text` in repo/<rel> (a committed file)."""
    found = (repo / rel).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(found, 1) if text in line)


# A small fleet `f` (NVIDIA 8 GPUs, Ascend 16 NPUs; quotas are ceilings, overcommit allowed) for
# the delivery and CLI tests: team ml-team (8 GPUs, 4 in staging, and 8 NPUs; a 4-GPU job and an
# 8-NPU job), team inference whose service migrates from NVIDIA to Ascend, two replicas a track
# (shift-50 in staging, dual-run in prod); prod syncs the `prod` branch, staging main.
TWO_TEAMS_ASCEND = (
    "pools:\n  - {name: 910b, model: 910b, devicesPerNode: 8, nodes: [npu-1, npu-2]}\n"
)
TWO_TEAMS_ML = """\
quota:
  nvidia: 8
  ascend: 8
jobs:
  cuda-training-job:
    vendor: nvidia
    devices: 4
    images: {nvidia: r/train:cuda}
    command: [python, train.py]
  npu-training-job:
    vendor: ascend
    devices: 8
    images: {ascend: r/train:ascend}
    command: [python, train.py]
    vendorMounts: false
"""
TWO_TEAMS_STAGING = """\
teams:
  ml-team:
    quota:
      nvidia: 4
  inference:
    services:
      inference-service: {phase: shift-50}
"""
TWO_TEAMS_PROD = """\
fleet:
  git:
    targetRevision: prod
teams:
  inference:
    services:
      inference-service: {phase: dual-run}
"""


def two_teams(root: Path) -> Path:
    """The small fleet above under root/repo: 6 units in each environment (argocd,
    device-plugins, node-config, monitoring, team-ml-team, team-inference)."""
    files = {
        "teams/ml.yaml": None,
        "teams/ml-team.yaml": TWO_TEAMS_ML,
        "vendors/ascend.yaml": TWO_TEAMS_ASCEND,
        "teams/inference.yaml": INFERENCE,
        "environments/staging.yaml": TWO_TEAMS_STAGING,
        "environments/prod.yaml": TWO_TEAMS_PROD,
    }
    return tree(root / "repo", files, fleet=FLEET + "capacity: {allowOvercommit: true}\n")


# What every job adds to a target, in the Operator's spelling (camelCase keys): brand and vendor,
# the node the pod runs on, the exporter pod's own name and namespace moved aside, and the
# Operator's pod/namespace/container target labels dropped so the exporter's own win.
def operator_target_relabels(brand: str, vendor: str) -> list[dict[str, Any]]:
    return [
        {"action": "replace", "targetLabel": "gpu_brand", "replacement": brand},
        {"action": "replace", "targetLabel": "vendor", "replacement": vendor},
        {
            "action": "replace",
            "sourceLabels": ["__meta_kubernetes_pod_node_name"],
            "targetLabel": "node",
        },
        {
            "action": "replace",
            "sourceLabels": ["__meta_kubernetes_pod_name"],
            "targetLabel": "exporter_pod",
        },
        {
            "action": "replace",
            "sourceLabels": ["__meta_kubernetes_namespace"],
            "targetLabel": "exporter_namespace",
        },
        {"action": "labeldrop", "regex": "pod|namespace|container"},
    ]


def built_units(
    root: Path, files: Mapping[str, str], fleet: str
) -> tuple[FleetView, list[SimNode], list[BuiltUnit]]:
    """The view, nodes and units of environment dev (`fleet` must name it alone) as simulate
    has them: in Argo CD's order (the rendered objects: render guarantees kustomize builds each
    unit to exactly these)."""
    values = tree(root, files, fleet=fleet, defaults=False)
    loaded = load(values, "dev")[0].values
    view = loaded.envs["dev"]
    units = [u for u in render_tree(loaded).units if u.env == "dev"]
    waves = unit_waves(units)
    built = [BuiltUnit(u, waves[u.name], argocd_order(list(u.objects))) for u in units]
    return view, plan_nodes(view), sorted(built, key=lambda b: (b.wave, b.unit.name))


# The manager configuration of Kueue v0.17.0's chart (charts/kueue/values.yaml), as the chart
# renders it: what the control plane's Kueue setup starts from.
KUEUE_CHART_CONFIG = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health: {healthProbeBindAddress: ':8081', readinessEndpointName: readyz}
metrics: {bindAddress: ':8443', enableClusterQueueResources: true}
webhook: {port: 9443, certDir: /tmp/k8s-webhook-server/serving-certs}
leaderElection: {leaderElect: true, resourceName: c1f6bfd2.kueue.x-k8s.io}
internalCertManagement: {enable: true, webhookServiceName: kueue-webhook-service,
  webhookSecretName: kueue-webhook-server-cert}
integrations: {frameworks: [batch/job]}
"""


# prod as two clusters with team inference's service chat across them (docs/multi-cluster.md,
# "Moving a service across clusters"): NVIDIA a100 (8 GPUs) in `main`, Ascend 910b (8 NPUs) in
# `domestic`; chat migrates from NVIDIA (2 replicas of 1 GPU) to Ascend (2 replicas of 1 NPU) in
# phase {phase}, routed by an HTTPRoute on main's Gateway gw/gw over the tracks' ServiceImports
# (in one cluster, the base layer's, by an HTTPRoute on gw/gw over their Services).
# The fleet declares the Gateway API and the MCS API as the site's. {cross} replaces the
# crossCluster block (its lines indented by 4), {clusters} adds clusters to prod.yaml.
CROSS_FLEET = PROD_FLEET + "platform:\n  gatewayAPI: {provided: site}\n  mcs: {provided: site}\n"
CROSS_PROD = """\
clusters:
  main:
    destination: {{server: https://main.example.com:6443}}
    pools: [nvidia]
  domestic:
    destination: {{name: domestic}}
    pools: [ascend]
{clusters}"""
CROSS_TEAM = """\
quota: {{nvidia: 4, ascend: 4}}
services:
  chat:
    images: {{nvidia: r/chat:cuda, ascend: r/chat:cann}}
    vendorMounts: false
    migration: {{from: nvidia, to: ascend}}
    phase: {phase}
    port: 8000
    routing: gateway
    gateway: {{parentRefs: [{{name: gw, namespace: gw}}]}}
    tracks:
      nvidia: {{devicesPerReplica: 1, replicas: 2}}
      ascend: {{devicesPerReplica: 1, replicas: 2}}
{cross}"""
CROSS_GATEWAY = """\
    crossCluster:
      routing: gateway
      gateway: {parentRefs: [{name: gw, namespace: gw}], hostnames: [chat.example.com]}
"""
CROSS_EXTERNAL = """\
    crossCluster:
      routing: external
      hostname: chat.example.com
"""


def cross_clusters(
    root: Path,
    phase: str = "shift-30",
    cross: str = CROSS_GATEWAY,
    clusters: str = "",
    fleet: str = CROSS_FLEET,
    files: Mapping[str, str | None] | None = None,
) -> Path:
    """The values tree of CROSS_PROD and CROSS_TEAM (team inference); `files` as tree's."""
    base = {
        "vendors/ascend.yaml": ASCEND_910B,
        "teams/inference.yaml": CROSS_TEAM.format(phase=phase, cross=cross),
        "environments/prod.yaml": CROSS_PROD.format(clusters=clusters),
    }
    return tree(root, {**base, "teams/ml.yaml": None, **(files or {})}, fleet=fleet)


def spied_team_digests(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the teams whose digest is made (policy/memo.Digests: not recalled, nor
    made already this run) from now on, in order."""
    return _spied(monkeypatch, memo_module.Digests, "_team_digest", lambda _, team: team.name)


def spied_view_digests(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The layers whose view's digest is made (policy/memo.Digests: not recalled, nor made
    already this run) from now on, in order."""
    return _spied(monkeypatch, memo_module.Digests, "_view_digest", lambda _, view: view.key)


def spied_argocd_builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The environments whose argocd units are built (builders/argocd.py) from now on."""
    return _spied(monkeypatch, argocd_builder, "build", lambda hub, _: hub.key)


def _spied(
    monkeypatch: pytest.MonkeyPatch, owner: object, name: str, said: Callable[..., str]
) -> list[str]:
    """What `said` says of each call of `owner.name` from now on (the call made as before)."""
    calls: list[str] = []
    real = getattr(owner, name)

    def spy(*args: Any) -> Any:
        calls.append(said(*args))
        return real(*args)

    monkeypatch.setattr(owner, name, spy)
    return calls
