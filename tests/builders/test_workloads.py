"""Workloads as rendered (generator/builders/workloads.py): pod templates (requests, probes, and
a security context per Pod Security level, checked with Kubernetes' own admission code; issue #8
items 5 and 12), the seed jobs and services, and every team unit built with kustomize under each
scheduling backend and routing (issue 5)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from generator.builders import scheduling, workloads
from generator.findings import Location
from generator.plan import env_plan
from generator.render.stage import RenderOptions, render
from generator.values import loader as values
from generator.values import schema
from generator.values.model import FleetView, Team, Vendor
from generator.vocab.objects import identity
from generator.workloads.model import PodDecl
from generator.workloads.phases import plan_service
from tests.fixtures import (
    AMD_MI250X,
    CAMBRICON_MLU370,
    DATASET_FLEET,
    DATASET_TEAM,
    DRA_NVIDIA,
    FLEET,
    HYGON_Z100L,
    INFERENCE,
    JOBSET_FLEET,
    JOBSET_TEAM,
    LWS_TEAM,
    PROD_FLEET,
    TRAINJOB_FLEET,
    TRAINJOB_TEAM,
    assert_units_build_exactly,
    build_of,
    build_unit,
    by_name,
    codes,
    find,
    kustomize_build,
    pod_security,
    render_into,
    team_objects,
    tree,
    workloads_of,
)

NVIDIA = "pools:\n  - {name: p1, model: A100, devicesPerNode: 8, nodes: [gpu-01]}\n"
ASCEND = "pools:\n  - {name: p1, model: 910b, devicesPerNode: 8, nodes: [npu-01]}\n"
JOB = """\
jobs:
  train:
    vendor: nvidia
    devices: 1
    images: {nvidia: registry.example.com/train:cuda}
services:
  serve:
    images: {nvidia: registry.example.com/serve:cuda}
    containerPort: 8080
    port: 80
    tracks:
      nvidia: {devicesPerReplica: 1, replicas: 1}
"""


def team(level: str, extra: str = "") -> str:
    return f"podSecurity: {level}\nquota: {{nvidia: 4}}\n{JOB}{extra}"


def pods(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        o["metadata"]["name"]: o["spec"]["template"]["spec"]
        for o in objs
        if o["kind"] in ("Job", "Deployment")
    }


def test_run_as_non_root_only_where_the_namespace_is_restricted(tmp_path: Path) -> None:
    values_dir = tree(
        tmp_path,
        {
            "vendors/nvidia.yaml": NVIDIA,
            "teams/base.yaml": team("baseline"),
            "teams/strict.yaml": team("restricted"),
        },
        fleet=PROD_FLEET,
        defaults=False,
    )
    out = render_into(values_dir, tmp_path / "out")
    for name, level in (("base", "baseline"), ("strict", "restricted")):
        objs = build_unit(out, "prod", f"team-{name}")
        results = pod_security(objs)
        assert {r["level"] for r in results} == {level}
        assert len(results) == 2 and all(r["allowed"] for r in results), results
        for spec in pods(objs).values():
            # A root CUDA image starts under baseline; restricted requires non-root.
            assert spec["securityContext"].get("runAsNonRoot") is (
                True if level == "restricted" else None
            )
    # The baseline pods would be refused under restricted: the level is what decides.
    base = build_unit(out, "prod", "team-base")
    ns = find(base, "Namespace", "base")
    strict_ns = {
        **ns,
        "metadata": {
            **ns["metadata"],
            "labels": {
                **ns["metadata"]["labels"],
                "pod-security.kubernetes.io/enforce": "restricted",
            },
        },
    }
    moved = [strict_ns, *[o for o in base if o["kind"] in ("Job", "Deployment")]]
    assert not any(r["allowed"] for r in pod_security(moved))


def test_workload_containers_request_cpu_and_memory(tmp_path: Path) -> None:
    extra = "    resources: {requests: {memory: 16Gi}}\n"
    text = team("baseline").replace(
        "    images: {nvidia: registry.example.com/train:cuda}\n",
        "    images: {nvidia: registry.example.com/train:cuda}\n" + extra,
    )
    values_dir = tree(
        tmp_path,
        {"vendors/nvidia.yaml": NVIDIA, "teams/t.yaml": text},
        fleet=PROD_FLEET,
        defaults=False,
    )
    specs = pods(build_unit(render_into(values_dir, tmp_path / "out"), "prod", "team-t"))
    train = specs["train"]["containers"][0]["resources"]["requests"]
    assert train == {"cpu": "1", "memory": "16Gi", "nvidia.com/gpu": 1}  # values win, per key
    serve = specs["serve-nvidia"]["containers"][0]["resources"]["requests"]
    assert serve == {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": 1}


def test_services_get_probes_by_default_and_from_values(tmp_path: Path) -> None:
    probe = "    readinessProbe: {httpGet: {path: /v1/health, port: http}, periodSeconds: 5}\n"
    text = team("restricted").replace(
        "    containerPort: 8080\n", "    containerPort: 8080\n" + probe
    )
    values_dir = tree(
        tmp_path,
        {"vendors/nvidia.yaml": NVIDIA, "teams/t.yaml": text},
        fleet=PROD_FLEET,
        defaults=False,
    )
    [ctr] = pods(build_unit(render_into(values_dir, tmp_path / "out"), "prod", "team-t"))[
        "serve-nvidia"
    ]["containers"]
    assert ctr["readinessProbe"] == {
        "httpGet": {"path": "/v1/health", "port": "http"},
        "periodSeconds": 5,
    }
    assert ctr["livenessProbe"]["tcpSocket"] == {"port": "http"}
    assert ctr["ports"][0]["name"] == "http"


def test_the_ascend_job_default_works_under_baseline(tmp_path: Path) -> None:
    """No hostPath by default: the Ascend Docker Runtime mounts the driver (item 12)."""
    text = (
        "quota: {ascend: 8}\njobs:\n  train:\n    vendor: ascend\n    devices: 8\n"
        "    images: {ascend: registry.example.com/train:cann}\n"
    )
    values_dir = tree(
        tmp_path,
        {"vendors/ascend.yaml": ASCEND, "teams/t.yaml": text},
        fleet=PROD_FLEET,
        defaults=False,
    )
    assert "WKL004" not in codes(values_dir)
    objs = build_unit(render_into(values_dir, tmp_path / "out"), "prod", "team-t")
    spec = pods(objs)["train"]
    assert "volumes" not in spec
    [result] = pod_security(objs)
    assert result["level"] == "baseline" and result["allowed"], result


# ---- rendered objects, built with kustomize ------------------------------------------------


def _container(template: dict[str, Any]) -> dict[str, Any]:
    [c] = template["spec"]["containers"]
    return c  # type: ignore[no-any-return]


# Team ml: a batch Job on NVIDIA, one on Ascend 910B (the driver mounted by the Ascend Docker
# Runtime), and a Volcano Job of NVIDIA and Cambricon workers.
TEAM_ML = """\
quota: {nvidia: 8, ascend: 16, cambricon: 2}
jobs:
  cuda-training-job:
    vendor: nvidia
    devices: 4
    images: {nvidia: r/train:cuda}
  npu-training-job:
    vendor: ascend
    devices: 8
    model: 910b
    images: {ascend: r/train:ascend}
    vendorMounts: false
  mixed-training-job:
    kind: volcano
    images: {nvidia: r/train:cuda, cambricon: r/train:mlu}
    tasks:
      nvidia-workers: {vendor: nvidia, devices: 1, replicas: 4}
      cambricon-workers: {vendor: cambricon, devices: 1, replicas: 2}
"""
# prod runs the migrating inference service dual-run, staging shift-50 (two replicas a track).
PHASES = {
    "environments/prod.yaml": "teams:\n  inference:\n    services:\n"
    "      inference-service: {phase: dual-run}\n",
    "environments/staging.yaml": "teams:\n  inference:\n    services:\n"
    "      inference-service: {phase: shift-50}\n",
}
# prod: a Gateway route for the inference service and an Istio route for a service of team ml.
GATEWAY = """\
teams:
  inference:
    services:
      inference-service:
        phase: shift-25
        routing: gateway
        gateway:
          parentRefs: [{name: public, namespace: gateways}]
          hostnames: [infer.example.com]
  ml:
    services:
      chat:
        routing: istio
        images: {nvidia: x:cuda}
        tracks:
          nvidia: {replicas: 1}
"""


def fleet_tree(root: Path, files: dict[str, str], backend: str = "quota") -> Path:
    """NVIDIA (12 GPUs: ml's jobs and the services run at once), Ascend (16 NPUs), Cambricon;
    team ml (TEAM_ML) and the migrating inference service (port 80); quotas may overcommit;
    `files` over these."""
    fleet = FLEET + f"capacity: {{allowOvercommit: true}}\nscheduling:\n  backend: {backend}\n"
    # TEAM_ML's mixed job is a Volcano Job, and environments may route through a Gateway or
    # Istio: the cluster runs them whatever the backend (DEP001).
    fleet += "platform:\n  volcano: {provided: site}\n"
    fleet += "  gatewayAPI: {provided: site}\n  istio: {provided: site}\n"
    inference = INFERENCE.replace(
        "    vendorMounts: false\n",
        "    vendorMounts: false\n    containerPort: 8080\n    port: 80\n",
    )
    base = {
        "vendors/nvidia.yaml": "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, "
        "nodes: [n1, n2, n3]}\n",
        "vendors/ascend.yaml": "pools:\n  - {name: 910b, model: 910b, devicesPerNode: 8, "
        "nodes: [npu-1, npu-2]}\n",
        "vendors/cambricon.yaml": CAMBRICON_MLU370,
        "teams/ml.yaml": TEAM_ML,
        "teams/inference.yaml": inference,
    }
    return tree(root, {**base, **files}, fleet=fleet)


def test_jobs_and_dual_track_service(tmp_path: Path) -> None:
    out = tmp_path / "out"
    render(RenderOptions(values_dir=fleet_tree(tmp_path, PHASES), out_dir=out))
    ml = kustomize_build(out / "overlays/prod/team-ml")
    jobs = by_name(ml, "Job")
    cuda = jobs["cuda-training-job"]
    assert cuda["apiVersion"] == "batch/v1"
    res = _container(cuda["spec"]["template"])["resources"]
    assert res == {
        "limits": {"nvidia.com/gpu": 4},
        "requests": {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": 4},
    }
    pod = cuda["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"feature.node.kubernetes.io/accelerator": "nvidia-gpu"}
    assert {
        "key": "feature.node.kubernetes.io/accelerator",
        "operator": "Equal",
        "value": "nvidia-gpu",
        "effect": "NoSchedule",
    } in pod["tolerations"]
    npu = jobs["npu-training-job"]["spec"]["template"]
    assert _container(npu)["resources"]["limits"] == {"huawei.com/Ascend910": 8}
    # vendorMounts: false: the Ascend Docker Runtime mounts the driver (see WKL004).
    assert "volumeMounts" not in _container(npu)
    assert npu["spec"]["nodeSelector"]["feature.node.kubernetes.io/npu-model"] == "910b"
    mixed = jobs["mixed-training-job"]
    assert mixed["apiVersion"] == "batch.volcano.sh/v1alpha1"
    assert mixed["spec"]["schedulerName"] == "volcano"
    tasks = {t["name"]: t for t in mixed["spec"]["tasks"]}
    assert tasks["nvidia-workers"]["replicas"] == 4
    assert tasks["cambricon-workers"]["replicas"] == 2
    assert _container(tasks["cambricon-workers"]["template"])["resources"]["limits"] == {
        "cambricon.com/mlu": 1
    }
    assert _container(tasks["cambricon-workers"]["template"])["image"].endswith(":mlu")

    for env, weights in (("staging", (2, 2)), ("prod", (2, 2))):
        docs = kustomize_build(out / f"overlays/{env}/team-inference")
        deps = by_name(docs, "Deployment")
        assert (
            deps["inference-service-nvidia"]["spec"]["replicas"],
            deps["inference-service-ascend"]["spec"]["replicas"],
        ) == weights
        ascend = _container(deps["inference-service-ascend"]["spec"]["template"])
        assert ascend["image"].endswith(":ascend") and "volumeMounts" not in ascend
        selector = by_name(docs, "Service")["inference-service"]["spec"]["selector"]
        # dual-run: only the old track serves; shift-50: both, by ready pods
        assert selector.get("accel-gitops.io/track") == ("nvidia" if env == "prod" else None)
        assert set(by_name(docs, "Service")) == {
            "inference-service",
            "inference-service-nvidia",
            "inference-service-ascend",
        }
        assert set(by_name(docs, "PodDisruptionBudget")) == {
            "inference-service-nvidia",
            "inference-service-ascend",
        }


@pytest.mark.parametrize("backend", ["quota", "volcano", "kueue"])
def test_every_unit_builds_under_each_backend_and_routing(backend: str, tmp_path: Path) -> None:
    files = {"environments/prod.yaml": GATEWAY}
    if backend == "kueue":  # Kueue cannot account a Volcano Job (SCH002): it is off there
        files["teams/ml.yaml"] = TEAM_ML.replace(
            "    kind: volcano\n", "    kind: volcano\n    enabled: false\n"
        )
    values_dir = fleet_tree(tmp_path / "repo", files, backend)
    out = tmp_path / "out"
    assert_units_build_exactly(out, values_dir)
    inf = kustomize_build(out / "overlays/prod/team-inference")
    [route] = by_name(inf, "HTTPRoute").values()
    assert route["spec"]["parentRefs"] == [
        {
            "group": "gateway.networking.k8s.io",
            "kind": "Gateway",
            "name": "public",
            "namespace": "gateways",
        }
    ]
    assert route["spec"]["rules"][0]["backendRefs"] == [
        {
            "group": "",
            "kind": "Service",
            "name": "inference-service-nvidia",
            "port": 80,
            "weight": 75,
        },
        {
            "group": "",
            "kind": "Service",
            "name": "inference-service-ascend",
            "port": 80,
            "weight": 25,
        },
    ]
    ml = kustomize_build(out / "overlays/prod/team-ml")
    [vs] = by_name(ml, "VirtualService").values()
    assert vs["spec"]["http"][0]["route"][0]["weight"] == 100
    cuda = by_name(ml, "Job")["cuda-training-job"]
    queue_label = cuda["metadata"]["labels"].get("kueue.x-k8s.io/queue-name")
    mixed = by_name(ml, "Job").get("mixed-training-job", {})
    if backend == "kueue":
        assert queue_label == "team-ml"
        cq = by_name(ml, "ClusterQueue")["team-ml"]
        groups = {g["coveredResources"][0]: g["flavors"] for g in cq["spec"]["resourceGroups"]}
        assert groups["nvidia.com/gpu"] == [
            {
                "name": "nvidia-a100",
                "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8, "borrowingLimit": 0}],
            }
        ]
        assert cq["spec"]["cohortName"] == "f"  # the fleet's name
        assert by_name(ml, "LocalQueue")["team-ml"]["spec"] == {"clusterQueue": "team-ml"}
        flavors = by_name(kustomize_build(out / "overlays/prod/scheduling"), "ResourceFlavor")
        assert flavors["ascend-910b"]["spec"]["nodeLabels"] == {
            "feature.node.kubernetes.io/accelerator": "huawei-npu",
            "feature.node.kubernetes.io/npu-model": "910b",
        }
        assert flavors["ascend-910b"]["spec"]["nodeTaints"] == [
            {
                "key": "feature.node.kubernetes.io/accelerator",
                "value": "huawei-npu",
                "effect": "NoSchedule",
            }
        ]
    else:
        assert queue_label is None
    if backend == "volcano":
        [queue] = by_name(ml, "Queue").values()
        assert queue["spec"]["capability"]["huawei.com/Ascend910"] == 16
        assert mixed["spec"]["queue"] == "team-ml"
    elif backend == "quota":
        assert mixed["spec"]["queue"] == "default"
    else:
        assert not mixed  # Kueue cannot account a Volcano Job (SCH002)


# ---- the builder functions on small trees: every object written out by hand -----------------
#
# The objects are compared as JSON text: render writes their keys in the order they are built
# (yamlio.dump, sort_keys=False), so a key moved is a changed file a reviewer sees.

MANAGED = {"app.kubernetes.io/managed-by": "accel-gitops"}
SOURCE = "accel-gitops.io/source"
WAVE = "argocd.argoproj.io/sync-wave"
TEAM_LABEL = "accel-gitops.io/team"
NFD = "feature.node.kubernetes.io/"
NVIDIA_TOLERATION = {
    "key": NFD + "accelerator",
    "operator": "Equal",
    "value": "nvidia-gpu",
    "effect": "NoSchedule",
}
RESTRICTED_POD = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
RESTRICTED_CTR = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
BASELINE_POD = {"seccompProfile": {"type": "RuntimeDefault"}}
BASELINE_CTR = {"allowPrivilegeEscalation": False}


def view_of(tmp_path: Path, files: dict[str, str], scheduling: str = "") -> FleetView:
    """The prod view of a tree holding PROD_FLEET (plus `scheduling`, a YAML line) and `files`
    alone; quotas may overcommit."""
    fleet = PROD_FLEET + "capacity: {allowOvercommit: true}\n" + scheduling
    return values.load(tree(tmp_path, files, fleet=fleet, defaults=False)).envs["prod"]


def written(obj: Any) -> str:
    """`obj` as text in the order of its keys, as render writes it."""
    return json.dumps(obj, indent=1)


def only_team(view: FleetView) -> Team:
    [team] = view.teams
    return team


def meta(name: str, namespace: str | None = None, **labels: str) -> dict[str, Any]:
    """metadata of a team ml object from values/teams/ml.yaml."""
    out: dict[str, Any] = {"name": name}
    if namespace:
        out["namespace"] = namespace
    out["labels"] = {**MANAGED, TEAM_LABEL: "ml", **labels}
    out["annotations"] = {SOURCE: "values/teams/ml.yaml"}
    return out


def queue_meta(namespace: str | None = None) -> dict[str, Any]:
    """metadata of team ml's queues: synced one wave before the workloads (wave -1)."""
    out = meta("team-ml", namespace)
    out["annotations"][WAVE] = "-1"
    return out


def template_labels(job: str, vendor: str) -> dict[str, str]:
    return {TEAM_LABEL: "ml", "app.kubernetes.io/name": job, "accel-gitops.io/vendor": vendor}


# ---- _pod_spec, security_contexts, workload_mounts: a batch/v1 Job's pod -----------------------

# Two NVIDIA pools: A100 (vendor taint) and H100 with a taint of its own; the vendor's
# workloadMounts, one read-only.
NVIDIA_MOUNTS = """\
pools:
  - {name: a100, model: A100, devicesPerNode: 8, nodes: [g1]}
  - name: h100
    model: H100
    devicesPerNode: 8
    nodes: [g2]
    taints: [{key: example.com/h100, effect: NoSchedule}]
workloadMounts:
  - {name: driver, path: /usr/local/driver, readOnly: true}
  - {name: scratch, path: /scratch}
"""
FULL_JOB = """\
podSecurity: restricted
namespaces: [ml-a, ml-b]
quota: {nvidia: 8}
jobs:
  train:
    vendor: nvidia
    devices: 2
    model: A100
    namespace: ml-b
    parallelism: 3
    completions: 6
    backoffLimit: 5
    command: [python, train.py]
    args: [--epochs, "3"]
    env: {B: "2", A: "1"}
    resources: {requests: {memory: 8Gi}, limits: {memory: 16Gi}}
    nodeSelector: {zone: z1}
    images: {nvidia: r/train:cuda}
"""


def test_batch_job_written_out_with_every_pod_setting(tmp_path: Path) -> None:
    """A batch/v1 Job under the quota backend: the job's settings, its pod's container (command,
    args, env sorted, requests over the defaults, limits, the devices in both, restricted
    contexts, the vendor's mounts), the vendor and model in the nodeSelector with the job's own
    label (NFD prefixes), a toleration per pool taint, restartPolicy Never."""
    view = view_of(tmp_path, {"vendors/nvidia.yaml": NVIDIA_MOUNTS, "teams/ml.yaml": FULL_JOB})
    objs, _ = team_objects(view, only_team(view))
    container = {
        "name": "train",
        "image": "r/train:cuda",
        "command": ["python", "train.py"],
        "args": ["--epochs", "3"],
        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
        "resources": {
            "requests": {"cpu": "1", "memory": "8Gi", "nvidia.com/gpu": 2},
            "limits": {"memory": "16Gi", "nvidia.com/gpu": 2},
        },
        "securityContext": RESTRICTED_CTR,
        "volumeMounts": [
            {"name": "driver", "mountPath": "/usr/local/driver", "readOnly": True},
            {"name": "scratch", "mountPath": "/scratch", "readOnly": False},
        ],
    }
    pod = {
        "containers": [container],
        "nodeSelector": {
            NFD + "accelerator": "nvidia-gpu",
            NFD + "gpu-model": "A100",
            NFD + "zone": "z1",
        },
        "restartPolicy": "Never",
        "securityContext": RESTRICTED_POD,
        "tolerations": [
            NVIDIA_TOLERATION,
            {"key": "example.com/h100", "operator": "Exists", "effect": "NoSchedule"},
        ],
        "volumes": [
            {"name": "driver", "hostPath": {"path": "/usr/local/driver", "type": "Directory"}},
            {"name": "scratch", "hostPath": {"path": "/scratch", "type": "Directory"}},
        ],
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta("train", "ml-b"),
        "spec": {
            "parallelism": 3,
            "completions": 6,
            "backoffLimit": 5,
            "template": {"metadata": {"labels": template_labels("train", "nvidia")}, "spec": pod},
        },
    }
    assert written(objs) == written([job])


def test_baseline_pod_without_settings_gets_defaults_and_no_optional_keys(
    tmp_path: Path,
) -> None:
    """Pod Security baseline: seccomp and no privilege escalation only (root images start); no
    command, args, env, limits beyond the devices; a node-patch fleet labels nodes without the
    NFD prefix; completions default to parallelism, backoffLimit to 3."""
    text = (
        "podSecurity: baseline\nquota: {nvidia: 4}\n"
        "jobs:\n  train:\n    vendor: nvidia\n    images: {nvidia: r/t:1}\n"
    )
    view = view_of(
        tmp_path,
        {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": text},
        "nodeConfig: {method: node-patch}\n",
    )
    [job] = team_objects(view, only_team(view))[0]
    pod = {
        "containers": [
            {
                "name": "train",
                "image": "r/t:1",
                "resources": {
                    "requests": {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": 1},
                    "limits": {"nvidia.com/gpu": 1},
                },
                "securityContext": BASELINE_CTR,
            }
        ],
        "nodeSelector": {"accelerator": "nvidia-gpu"},
        "restartPolicy": "Never",
        "securityContext": BASELINE_POD,
        "tolerations": [NVIDIA_TOLERATION],
    }
    assert written(job["spec"]) == written(
        {
            "parallelism": 1,
            "completions": 1,
            "backoffLimit": 3,
            "template": {"metadata": {"labels": template_labels("train", "nvidia")}, "spec": pod},
        }
    )
    assert job["metadata"] == meta("train", "ml")


def test_vendor_mounts_only_for_pods_with_devices_that_accept_them(tmp_path: Path) -> None:
    """The vendor's workloadMounts go to pods that request devices (docs/workloads.md); a pod
    without devices requests no accelerator and has no limits; `vendorMounts: false` opts out."""
    text = """\
quota: {nvidia: 4}
jobs:
  cpu-only:
    vendor: nvidia
    devices: 0
    images: {nvidia: r/t:1}
  opted-out:
    vendor: nvidia
    vendorMounts: false
    images: {nvidia: r/t:1}
"""
    view = view_of(tmp_path, {"vendors/nvidia.yaml": NVIDIA_MOUNTS, "teams/ml.yaml": text})
    specs = pods(team_objects(view, only_team(view))[0])
    for name in ("cpu-only", "opted-out"):
        assert "volumes" not in specs[name]
        assert "volumeMounts" not in specs[name]["containers"][0]
    assert specs["cpu-only"]["containers"][0]["resources"] == {
        "requests": {"cpu": "1", "memory": "2Gi"}
    }
    assert specs["opted-out"]["containers"][0]["resources"] == {
        "requests": {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": 1},
        "limits": {"nvidia.com/gpu": 1},
    }


def test_workload_mounts_of_a_vendor_as_its_file_lists_them(tmp_path: Path) -> None:
    """workload_mounts: the vendor's `workloadMounts` list as written; none for a vendor
    without the key or with an empty list."""
    files = {
        "vendors/nvidia.yaml": NVIDIA_MOUNTS,
        "vendors/ascend.yaml": ASCEND + "workloadMounts: []\n",
        "vendors/amd.yaml": AMD_MI250X,
        "teams/ml.yaml": "quota: {}\n",
    }
    view = view_of(tmp_path, files)
    by_id = {v.id: workloads.workload_mounts(v) for v in view.vendors}
    assert by_id == {
        "amd": [],
        "ascend": [],
        "nvidia": [
            {"name": "driver", "path": "/usr/local/driver", "readOnly": True},
            {"name": "scratch", "path": "/scratch"},
        ],
    }


def test_security_contexts_per_pod_security_level() -> None:
    """restricted: non-root, RuntimeDefault seccomp, no escalation, every capability dropped
    (what that level requires); baseline: seccomp and no escalation only."""
    assert written(workloads.security_contexts("restricted")) == written(
        [RESTRICTED_POD, RESTRICTED_CTR]
    )
    assert written(workloads.security_contexts("baseline")) == written([BASELINE_POD, BASELINE_CTR])


# ---- model_affinity: a preferred pool model with a fallback ------------------------------------

NVIDIA_TWO_MODELS = """\
pools:
  - {name: h100, model: H100, devicesPerNode: 8, nodes: [g1]}
  - {name: a100, model: A100, devicesPerNode: 4, nodes: [g2]}
"""


def model_terms(key: str, *models: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": list(models)}]}


def test_a_fallback_model_makes_the_model_a_preferred_node_affinity(tmp_path: Path) -> None:
    """docs/scheduling.md "Placement preferences": no model in the nodeSelector; required: the
    model or the fallback; preferred: the model, weight 100 (the most the API allows)."""
    text = """\
quota: {nvidia: 8}
jobs:
  train:
    vendor: nvidia
    model: H100
    fallbackModel: A100
    images: {nvidia: r/t:1}
"""
    view = view_of(tmp_path, {"vendors/nvidia.yaml": NVIDIA_TWO_MODELS, "teams/ml.yaml": text})
    spec = pods(team_objects(view, only_team(view))[0])["train"]
    key = NFD + "gpu-model"
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [model_terms(key, "H100", "A100")]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "preference": model_terms(key, "H100")}
            ],
        }
    }
    assert written(spec) == written(
        {
            "affinity": affinity,
            "containers": spec["containers"],
            "nodeSelector": {NFD + "accelerator": "nvidia-gpu"},
            "restartPolicy": "Never",
            "securityContext": BASELINE_POD,
            "tolerations": [NVIDIA_TOLERATION],
        }
    )


def test_a_teams_build_holds_what_it_uses_of_each_vendor_and_each_pool_model(
    tmp_path: Path,
) -> None:
    """Beside its objects, a team's build holds what its workloads hold per vendor (MIG004/5/7,
    plan) and the parts pinned to pool models (SCH006): worked out with it, kept with it."""
    text = """\
quota: {nvidia: 8}
jobs:
  train:
    vendor: nvidia
    devices: 2
    model: H100
    fallbackModel: A100
    images: {nvidia: r/t:1}
"""
    view = view_of(tmp_path, {"vendors/nvidia.yaml": NVIDIA_TWO_MODELS, "teams/ml.yaml": text})
    built = workloads.team_build(workloads_of(view), only_team(view))
    assert [(u.vendor, u.services, u.largest_job, u.quota, u.detail) for u in built.usage] == [
        ("nvidia", 0, 2, 8, "job train=2")
    ]
    assert [(p.models, p.devices, p.is_job, p.label) for p in built.pinned] == [
        (("H100", "A100"), 2, True, "job train")
    ]


def test_model_affinity_without_a_preferred_model_requires_the_fallback_only(
    tmp_path: Path,
) -> None:
    """No preferred model: the fallback is required and nothing is preferred; the model label is
    the node's (no NFD prefix under node-patch)."""
    view = view_of(
        tmp_path,
        {"vendors/nvidia.yaml": NVIDIA_TWO_MODELS, "teams/ml.yaml": "quota: {}\n"},
        "nodeConfig: {method: node-patch}\n",
    )
    [nvidia] = view.vendors
    assert written(workloads.model_affinity(view, nvidia, "", "A100")) == written(
        {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [model_terms("gpu-model", "A100")]
                }
            }
        }
    )


# ---- _job: Volcano Jobs, and batch/v1 Jobs pointed at a queue backend (_wire_queue) -----------

MIXED_JOB = """\
podSecurity: restricted
quota: {nvidia: 4, ascend: 8}
jobs:
  mixed:
    images: {nvidia: r/t:cuda, ascend: r/t:cann}
    tasks:
      nvidia-workers: {vendor: nvidia, devices: 1, replicas: 2}
      ascend-workers: {vendor: ascend, devices: 8, model: 910b}
"""

GPU_REQUESTS = {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": 1}


def task_pod(name: str, image: str, requests: dict[str, Any], resource: str) -> dict[str, Any]:
    """A restricted pod of one container with `requests`, the devices of `resource` its limit."""
    return {
        "containers": [
            {
                "name": name,
                "image": image,
                "resources": {"requests": requests, "limits": {resource: requests[resource]}},
                "securityContext": RESTRICTED_CTR,
            }
        ],
    }


def mixed_tasks() -> list[dict[str, Any]]:
    """MIXED_JOB's tasks, by name: an Ascend 910B worker and two NVIDIA workers."""
    # requests and limits are sorted by resource name
    ascend_requests = {"cpu": "1", "huawei.com/Ascend910": 8, "memory": "2Gi"}
    ascend = task_pod("ascend-workers", "r/t:cann", ascend_requests, "huawei.com/Ascend910")
    ascend["nodeSelector"] = {NFD + "accelerator": "huawei-npu", NFD + "npu-model": "910b"}
    ascend["restartPolicy"] = "Never"
    ascend["securityContext"] = RESTRICTED_POD
    ascend["tolerations"] = [{**NVIDIA_TOLERATION, "value": "huawei-npu"}]
    nvidia = task_pod("nvidia-workers", "r/t:cuda", GPU_REQUESTS, "nvidia.com/gpu")
    nvidia["nodeSelector"] = {NFD + "accelerator": "nvidia-gpu"}
    nvidia["restartPolicy"] = "Never"
    nvidia["securityContext"] = RESTRICTED_POD
    nvidia["tolerations"] = [NVIDIA_TOLERATION]
    return [
        {
            "name": "ascend-workers",
            "replicas": 1,
            "template": {
                "metadata": {"labels": template_labels("mixed", "ascend")},
                "spec": ascend,
            },
        },
        {
            "name": "nvidia-workers",
            "replicas": 2,
            "template": {
                "metadata": {"labels": template_labels("mixed", "nvidia")},
                "spec": nvidia,
            },
        },
    ]


def test_volcano_job_under_the_quota_backend_goes_to_volcanos_default_queue(
    tmp_path: Path,
) -> None:
    """Without a Volcano backend there is no team Queue: the job names Volcano's `default`;
    the gang is every replica (minAvailable 3), maxRetry is backoffLimit (3), an evicted pod
    restarts the whole job; one task per values task, sorted by name, restartPolicy Never."""
    files = {
        "vendors/nvidia.yaml": NVIDIA,
        "vendors/ascend.yaml": ASCEND,
        "teams/ml.yaml": MIXED_JOB,
    }
    view = view_of(tmp_path, files)
    objs, _ = team_objects(view, only_team(view))
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": meta("mixed", "ml"),
        "spec": {
            "schedulerName": "volcano",
            "queue": "default",
            "minAvailable": 3,
            "maxRetry": 3,
            "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
            "tasks": mixed_tasks(),
        },
    }
    assert written(objs) == written([job])


def test_volcano_backend_jobs_name_the_team_queue(tmp_path: Path) -> None:
    """Backend volcano: the Volcano Job names the team's Queue and carries its network
    topology, its gang size and retries as set; a batch/v1 Job's pods are scheduled by Volcano
    and name the queue in the annotation Volcano's PodGroup controller reads."""
    text = MIXED_JOB.replace(
        "    images: {nvidia: r/t:cuda, ascend: r/t:cann}\n",
        "    images: {nvidia: r/t:cuda, ascend: r/t:cann}\n    minAvailable: 2\n"
        "    backoffLimit: 1\n    networkTopology: {mode: soft, highestTierAllowed: 2}\n",
    ) + ("  train:\n    vendor: nvidia\n    images: {nvidia: r/t:cuda}\n")
    files = {"vendors/nvidia.yaml": NVIDIA, "vendors/ascend.yaml": ASCEND, "teams/ml.yaml": text}
    view = view_of(tmp_path, files, "scheduling: {backend: volcano}\n")
    objs, _ = team_objects(view, only_team(view))
    assert [o["kind"] for o in objs] == ["Queue", "Job", "Job"]
    mixed = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": meta("mixed", "ml"),
        "spec": {
            "schedulerName": "volcano",
            "queue": "team-ml",
            "minAvailable": 2,
            "maxRetry": 1,
            "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
            "networkTopology": {"mode": "soft", "highestTierAllowed": 2},
            "tasks": mixed_tasks(),
        },
    }
    pod = task_pod("train", "r/t:cuda", GPU_REQUESTS, "nvidia.com/gpu")
    pod["nodeSelector"] = {NFD + "accelerator": "nvidia-gpu"}
    pod["restartPolicy"] = "Never"
    pod["securityContext"] = RESTRICTED_POD
    pod["tolerations"] = [NVIDIA_TOLERATION]
    pod["schedulerName"] = "volcano"
    train = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta("train", "ml"),
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "backoffLimit": 3,
            "template": {
                "metadata": {
                    "labels": template_labels("train", "nvidia"),
                    "annotations": {"scheduling.volcano.sh/queue-name": "team-ml"},
                },
                "spec": pod,
            },
        },
    }
    assert written(objs[1:]) == written([mixed, train])


def test_volcano_task_pods_follow_the_teams_pod_security_level(tmp_path: Path) -> None:
    """A baseline team's Volcano task pods get the baseline contexts (root images start)."""
    text = MIXED_JOB.replace("podSecurity: restricted", "podSecurity: baseline")
    files = {"vendors/nvidia.yaml": NVIDIA, "vendors/ascend.yaml": ASCEND, "teams/ml.yaml": text}
    view = view_of(tmp_path, files)
    [job] = team_objects(view, only_team(view))[0]
    contexts = [
        (t["template"]["spec"]["securityContext"], c["securityContext"])
        for t in job["spec"]["tasks"]
        for c in t["template"]["spec"]["containers"]
    ]
    assert contexts == [(BASELINE_POD, BASELINE_CTR)] * 2


def test_a_named_kube_scheduler_profile_schedules_the_team_pods(tmp_path: Path) -> None:
    """Backend quota with kubeScheduler.schedulerName: the pods name that profile; no queue
    label, no queue annotation, no queue objects."""
    text = "quota: {nvidia: 4}\njobs:\n  train:\n    vendor: nvidia\n    images: {nvidia: r/t:1}\n"
    view = view_of(
        tmp_path,
        {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": text},
        "scheduling: {kubeScheduler: {packing: true, schedulerName: packer}}\n",
    )
    [job] = team_objects(view, only_team(view))[0]
    assert job["metadata"] == meta("train", "ml")
    assert job["spec"]["template"]["metadata"] == {"labels": template_labels("train", "nvidia")}
    assert list(job["spec"]["template"]["spec"])[-1] == "schedulerName"
    assert job["spec"]["template"]["spec"]["schedulerName"] == "packer"


# ---- _queues, team_devices, team_capability, _wave, cohort: the team's queues ------------------

# AMD and a Hygon DCU both advertise amd.com/gpu: the queue adds them up on that one resource.
QUEUE_TEAM = """\
namespaces: [ml-a, ml-b]
quota: {nvidia: 2, amd: 1, hygon: 3}
borrowing: {nvidia: 1, hygon: 2}
"""
QUEUE_VENDORS = {
    "vendors/nvidia.yaml": NVIDIA,
    "vendors/amd.yaml": AMD_MI250X,
    "vendors/hygon.yaml": HYGON_Z100L,
    "teams/ml.yaml": QUEUE_TEAM,
}


def test_volcano_queue_deserves_the_team_share_and_caps_it_with_borrowing(tmp_path: Path) -> None:
    """Volcano `capacity` policy: one cluster-wide Queue (wave -1), weight 1, reclaimable;
    deserved = quota x namespaces per resource (amd.com/gpu: (1 + 3) x 2 = 8, nvidia: 2 x 2 = 4),
    capability = deserved + borrowing (amd.com/gpu: 8 + 2, nvidia: 4 + 1)."""
    view = view_of(tmp_path, QUEUE_VENDORS, "scheduling: {backend: volcano}\n")
    objs, pods_ = team_objects(view, only_team(view))
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": queue_meta(),
        "spec": {
            "weight": 1,
            "reclaimable": True,
            "capability": {"amd.com/gpu": 10, "nvidia.com/gpu": 5},
            "deserved": {"amd.com/gpu": 8, "nvidia.com/gpu": 4},
        },
    }
    assert (written(objs), pods_) == (written([queue]), [])


def test_volcano_proportion_policy_queue_has_no_deserved(tmp_path: Path) -> None:
    """Volcano `proportion` policy: the queue's share comes from its weight, so no deserved."""
    view = view_of(
        tmp_path,
        QUEUE_VENDORS,
        "scheduling: {backend: volcano, volcano: {queuePolicy: proportion}}\n",
    )
    [queue] = team_objects(view, only_team(view))[0]
    assert written(queue["spec"]) == written(
        {"weight": 1, "reclaimable": True, "capability": {"amd.com/gpu": 10, "nvidia.com/gpu": 5}}
    )


def test_team_devices_and_capability_add_vendors_sharing_a_resource(tmp_path: Path) -> None:
    """Per resource name, sorted: the team's own devices and its ceiling with borrowing (under
    a queue backend), AMD and Hygon on amd.com/gpu together."""
    view = view_of(tmp_path, QUEUE_VENDORS, "scheduling: {backend: kueue}\n")
    team = only_team(view)
    assert written(workloads.team_devices(view, team)) == written(
        {"amd.com/gpu": 8, "nvidia.com/gpu": 4}
    )
    assert written(workloads.team_capability(view, team)) == written(
        {"amd.com/gpu": 10, "nvidia.com/gpu": 5}
    )


# NVIDIA A100 (one node of 4) then H100 (one node of 8); Ascend 910B (8).
KUEUE_VENDORS = {
    "vendors/nvidia.yaml": """\
pools:
  - {name: a100, model: A100, devicesPerNode: 4, nodes: [g1]}
  - {name: h100, model: H100, devicesPerNode: 8, nodes: [g2]}
""",
    "vendors/ascend.yaml": ASCEND,
}
KUEUE_TEAM = """\
namespaces: [ml-a, ml-b]
quota: {nvidia: 8, ascend: 1}
borrowing: {nvidia: 20}
jobs:
  train:
    vendor: nvidia
    parallelism: 3
    images: {nvidia: r/t:1}
"""


def flavor(name: str, resource: str, nominal: int | str, borrowing: int) -> dict[str, Any]:
    quota = {"name": resource, "nominalQuota": nominal, "borrowingLimit": borrowing}
    return {"name": name, "resources": [quota]}


def test_kueue_cluster_queue_fills_pools_in_order_and_covers_cpu_and_memory(
    tmp_path: Path,
) -> None:
    """Kueue: a ClusterQueue in the fleet's cohort (its name by default) for the team's
    namespaces, reclaiming lent quota; per resource (sorted) a flavor per pool, filled in
    order with the last taking what remains (NVIDIA: share 16 and borrowing 20 give A100 4 and
    4, H100 12 and 16 though it has 8); cpu and memory on the `general` flavor as much as the
    pods ask (3 pods x 1 cpu, x 2Gi); a LocalQueue per namespace; all wave -1. The Job names its
    LocalQueue in the label Kueue reads."""
    view = view_of(
        tmp_path, {**KUEUE_VENDORS, "teams/ml.yaml": KUEUE_TEAM}, "scheduling: {backend: kueue}\n"
    )
    objs, _ = team_objects(view, only_team(view))
    cluster_queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": queue_meta(),
        "spec": {
            "cohortName": "mini",
            "namespaceSelector": {"matchLabels": {TEAM_LABEL: "ml"}},
            "preemption": {"reclaimWithinCohort": "Any"},
            "resourceGroups": [
                {
                    "coveredResources": ["huawei.com/Ascend910"],
                    "flavors": [flavor("ascend-p1", "huawei.com/Ascend910", 2, 0)],
                },
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        flavor("nvidia-a100", "nvidia.com/gpu", 4, 4),
                        flavor("nvidia-h100", "nvidia.com/gpu", 12, 16),
                    ],
                },
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        {
                            "name": "general",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "3", "borrowingLimit": 0},
                                {"name": "memory", "nominalQuota": "6Gi", "borrowingLimit": 0},
                            ],
                        }
                    ],
                },
            ],
        },
    }
    local = [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": queue_meta(ns),
            "spec": {"clusterQueue": "team-ml"},
        }
        for ns in ("ml-a", "ml-b")
    ]
    assert written(objs[:3]) == written([cluster_queue, *local])
    job = objs[3]
    assert job["metadata"] == meta("train", "ml-a", **{"kueue.x-k8s.io/queue-name": "team-ml"})
    assert list(job["metadata"]["labels"])[-1] == "kueue.x-k8s.io/queue-name"
    assert "schedulerName" not in job["spec"]["template"]["spec"]
    assert "annotations" not in job["spec"]["template"]["metadata"]


# Two A100 pools (4 and 4 devices) and an H100 pool (8) of one vendor file.
MODEL_POOLS = """\
pools:
  - {name: a100, model: A100, devicesPerNode: 4, nodes: [g1]}
  - {name: h100, model: H100, devicesPerNode: 8, nodes: [g2]}
  - {name: a100b, model: A100, devicesPerNode: 4, nodes: [g3]}
"""


def test_kueue_quota_per_model_is_each_models_nominal_quota_on_its_own_pools(
    tmp_path: Path,
) -> None:
    """quota: {nvidia: {H100: 3, a100: 5}} in two namespaces: H100's 6 on its one pool; A100's
    10 (its spelling in the team file aside) over the two A100 pools in pool order, 4 then the
    last taking the rest, 6. A vendor quota of 8 would have filled a100 4, h100 8, a100b 4.
    The borrowing limit (2) goes over all the vendor's pools in order, as before."""
    team = """\
namespaces: [ml-a, ml-b]
quota: {nvidia: {H100: 3, a100: 5}}
borrowing: {nvidia: 2}
"""
    view = view_of(
        tmp_path,
        {"vendors/nvidia.yaml": MODEL_POOLS, "teams/ml.yaml": team},
        "scheduling: {backend: kueue}\n",
    )
    objs, _ = team_objects(view, only_team(view))
    [cluster_queue] = [o for o in objs if o["kind"] == "ClusterQueue"]
    assert cluster_queue["spec"]["resourceGroups"] == [
        {
            "coveredResources": ["nvidia.com/gpu"],
            "flavors": [
                flavor("nvidia-a100", "nvidia.com/gpu", 4, 2),
                flavor("nvidia-h100", "nvidia.com/gpu", 6, 0),
                flavor("nvidia-a100b", "nvidia.com/gpu", 6, 0),
            ],
        }
    ]


def test_kueue_quota_per_model_puts_a_pinned_job_on_its_models_pool_first(
    tmp_path: Path,
) -> None:
    """A job pinned to A100 needing 8 devices at once: of A100's 10, the first A100 pool large
    enough takes 8 (a100b has 4 and a100 4: none is, so the first, a100), then the rest in
    pool order. A model the team gives nothing (H100) has nominal 0."""
    team = """\
namespaces: [ml-a, ml-b]
quota: {nvidia: {A100: 5}}
jobs:
  train:
    vendor: nvidia
    model: A100
    parallelism: 8
    images: {nvidia: r/t:1}
"""
    view = view_of(
        tmp_path,
        {"vendors/nvidia.yaml": MODEL_POOLS, "teams/ml.yaml": team},
        "scheduling: {backend: kueue}\n",
    )
    objs, _ = team_objects(view, only_team(view))
    [cluster_queue] = [o for o in objs if o["kind"] == "ClusterQueue"]
    assert cluster_queue["spec"]["resourceGroups"][0]["flavors"] == [
        flavor("nvidia-a100", "nvidia.com/gpu", 8, 0),
        flavor("nvidia-h100", "nvidia.com/gpu", 0, 0),
        flavor("nvidia-a100b", "nvidia.com/gpu", 2, 0),
    ]


def test_kueue_cohort_from_the_fleets_scheduling_settings(tmp_path: Path) -> None:
    """scheduling.cohort names the cohort the team ClusterQueues share (docs/scheduling.md)."""
    view = view_of(
        tmp_path,
        {**KUEUE_VENDORS, "teams/ml.yaml": KUEUE_TEAM},
        "scheduling: {backend: kueue, cohort: shared-gpus}\n",
    )
    assert workloads.cohort(view) == "shared-gpus"
    [cluster_queue] = by_name(team_objects(view, only_team(view))[0], "ClusterQueue").values()
    assert cluster_queue["spec"]["cohortName"] == "shared-gpus"


def test_kueue_cohort_defaults_to_the_fleet_name(tmp_path: Path) -> None:
    """Without scheduling.cohort every team ClusterQueue is in the cohort named after the fleet."""
    view = view_of(
        tmp_path, {**KUEUE_VENDORS, "teams/ml.yaml": KUEUE_TEAM}, "scheduling: {backend: kueue}\n"
    )
    assert workloads.cohort(view) == "mini"


# ---- team_objects, _team_objects: the objects and the pod templates the checks read -----------

POD_TEAM = """\
quota: {nvidia: 8, ascend: 8}
jobs:
  train:
    vendor: nvidia
    parallelism: 3
    images: {nvidia: r/t:1}
  mixed:
    images: {nvidia: r/t:1, ascend: r/t:2}
    tasks:
      workers: {vendor: nvidia, replicas: 4}
      npu: {vendor: ascend}
services:
  serve:
    images: {nvidia: r/s:1}
    tracks:
      nvidia: {replicas: 2}
"""


def test_pod_templates_name_their_workload_values_path_and_pod_count(tmp_path: Path) -> None:
    """Every pod template once, as the object holds it: a batch/v1 Job's (its parallelism), a
    Volcano Job's per task (its replicas, the task's values path), a Deployment's per track
    (its replicas, the track's path); made once per build."""
    files = {
        "vendors/nvidia.yaml": NVIDIA,
        "vendors/ascend.yaml": ASCEND,
        "teams/ml.yaml": POD_TEAM,
    }
    view = view_of(tmp_path, files)
    team = only_team(view)
    build = build_of(view)
    objs, refs = build.team(team).objects, build.team(team).pods
    assert build.team(team).objects is objs
    found = [(r.team, r.kind, r.name, r.path, r.count) for r in refs]
    assert found == [
        (team, "Job (volcano) task", "mixed/npu", ("jobs", "mixed", "tasks", "npu"), 1),
        (team, "Job (volcano) task", "mixed/workers", ("jobs", "mixed", "tasks", "workers"), 4),
        (team, "Job", "train", ("jobs", "train"), 3),
        (team, "Deployment", "serve-nvidia", ("services", "serve", "tracks", "nvidia"), 2),
    ]
    jobs = by_name(objs, "Job")
    [deployment] = by_name(objs, "Deployment").values()
    specs = [t["template"]["spec"] for t in jobs["mixed"]["spec"]["tasks"]]
    specs += [jobs["train"]["spec"]["template"]["spec"], deployment["spec"]["template"]["spec"]]
    assert all(r.spec is s for r, s in zip(refs, specs, strict=True))


# ---- build, _origin: the team's workloads component and where its objects come from ----------

ORIGIN_TEAM = """\
podSecurity: baseline
quota: {nvidia: 8}
jobs:
  train:
    vendor: nvidia
    images: {nvidia: r/t:1}
services:
  serve:
    images: {nvidia: r/s:1}
    tracks:
      nvidia: {replicas: 1}
"""


def test_workloads_component_points_each_object_at_its_workload(tmp_path: Path) -> None:
    """One component per team with workloads, in unit team-<team>; findings on a job's object
    point at the job's key (line 4), on a service's objects (`serve`, `serve-<vendor>`) at the
    service's (line 8), on the queues at the team's quota (line 2). Under a queue backend a team
    without workloads has a component for its queues."""
    files = {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": ORIGIN_TEAM}
    files["teams/idle.yaml"] = "quota: {nvidia: 1}\n"
    view = view_of(tmp_path, files, "scheduling: {backend: kueue}\n")
    idle, component = workloads.build(build_of(view))
    # A team without workloads still has its queues under a queue backend.
    assert (idle.unit, idle.name) == ("team-idle", "workloads/idle")
    assert [o["kind"] for o in idle.objects] == ["ClusterQueue", "LocalQueue"]
    assert idle.origin == Location("values/teams/idle.yaml", 1, 1)
    ml = view.teams[1]
    assert (component.unit, component.name) == ("team-ml", "workloads/ml")
    assert component.objects == team_objects(view, ml)[0]
    file = "values/teams/ml.yaml"
    quota, train, serve = Location(file, 2, 1), Location(file, 4, 3), Location(file, 8, 3)
    assert component.origin == quota
    assert [
        (o["kind"], o["metadata"]["name"], component.origins.get(identity(o)))
        for o in component.objects
    ] == [
        ("ClusterQueue", "team-ml", quota),
        ("LocalQueue", "team-ml", quota),
        ("Job", "train", train),
        ("Deployment", "serve-nvidia", serve),
        ("Service", "serve-nvidia", serve),
        ("PodDisruptionBudget", "serve-nvidia", serve),
        ("Service", "serve", serve),
    ]


def test_objects_whose_name_starts_with_another_workloads_point_at_their_own(
    tmp_path: Path,
) -> None:
    """Service `train-api`'s objects start with job `train`'s name, service `chat-big`'s with
    service `chat`'s: each still points at its own workload's key (a finding on a Deployment
    must name the service that declares it)."""
    text = """\
quota: {nvidia: 8}
jobs:
  train:
    vendor: nvidia
    images: {nvidia: r/t:1}
services:
  chat:
    images: {nvidia: r/s:1}
    tracks:
      nvidia: {replicas: 1}
  chat-big:
    images: {nvidia: r/s:1}
    tracks:
      nvidia: {replicas: 1}
  train-api:
    images: {nvidia: r/s:1}
    tracks:
      nvidia: {replicas: 1}
"""
    view = view_of(tmp_path, {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": text})
    [component] = workloads.build(build_of(view))
    file = "values/teams/ml.yaml"
    train, chat = Location(file, 3, 3), Location(file, 7, 3)
    chat_big, train_api = Location(file, 11, 3), Location(file, 15, 3)
    found = [(o["kind"], o["metadata"]["name"], component.origin_of(o)) for o in component.objects]
    assert found == [
        ("Job", "train", train),
        ("Deployment", "chat-nvidia", chat),
        ("Service", "chat-nvidia", chat),
        ("PodDisruptionBudget", "chat-nvidia", chat),
        ("Service", "chat", chat),
        ("Deployment", "chat-big-nvidia", chat_big),
        ("Service", "chat-big-nvidia", chat_big),
        ("PodDisruptionBudget", "chat-big-nvidia", chat_big),
        ("Service", "chat-big", chat_big),
        ("Deployment", "train-api-nvidia", train_api),
        ("Service", "train-api-nvidia", train_api),
        ("PodDisruptionBudget", "train-api-nvidia", train_api),
        ("Service", "train-api", train_api),
    ]


# ---- pinned_needs, flavor_split: a Kueue ClusterQueue's share per pool ------------------------

SPLIT_POOLS = """\
pools:
  - {name: a100, model: A100, devicesPerNode: 4, nodes: [a1, a2]}
  - {name: h100, model: H100, devicesPerNode: 8, nodes: [h1]}
  - {name: h100-big, model: H100, devicesPerNode: 8, nodes: [h2, h3]}
"""


def split_view(root: Path, team: str) -> tuple[FleetView, Team, Vendor]:
    fleet = FLEET + "capacity: {allowOvercommit: true}\nscheduling: {backend: kueue}\n"
    view = values.load(
        tree(root, {"teams/ml.yaml": team, "vendors/nvidia.yaml": SPLIT_POOLS}, fleet=fleet)
    ).envs["prod"]
    [team_] = view.teams
    vendor = view.vendor("nvidia")
    assert vendor is not None
    return view, team_, vendor


def test_pinned_needs_are_the_largest_single_workload_per_model(tmp_path: Path) -> None:
    """A Job's pods together (parallelism x devices); a service's pods one each; Volcano Jobs
    and unpinned workloads count for nothing; models compared without case."""
    team = """\
quota: {nvidia: 8}
jobs:
  big: {vendor: nvidia, devices: 4, parallelism: 2, model: h100, images: {nvidia: x:1}}
  small: {vendor: nvidia, devices: 2, model: H100, images: {nvidia: x:1}}
  free: {vendor: nvidia, devices: 8, images: {nvidia: x:1}}
  gang:
    kind: volcano
    images: {nvidia: x:1}
    tasks:
      w: {vendor: nvidia, devices: 4, replicas: 4, model: A100}
services:
  s:
    images: {nvidia: x:1}
    tracks:
      nvidia: {devicesPerReplica: 3, replicas: 4, model: A100}
"""
    view, team_, vendor = split_view(tmp_path, team)
    assert workloads.pinned_needs(workloads_of(view), team_, vendor) == {"a100": 3, "h100": 8}


def test_flavor_split_gives_pinned_needs_first_on_a_pool_large_enough(tmp_path: Path) -> None:
    """Share 20, borrowing 6: A100 needs 3 (on a100), H100 needs 16 (more than pool h100's 8: on
    h100-big); the last 1 fills the pools in order (a100: 4). Borrowing: first what the share
    left short of each need (nothing), then in pool order (a100, up to its 8)."""
    view, team_, vendor = split_view(tmp_path, "quota: {nvidia: 20}\nborrowing: {nvidia: 6}\n")
    split = workloads.flavor_split(team_, vendor, {"a100": 3, "h100": 16})
    assert split == [(4, 6), (0, 0), (16, 0)]
    # A share too small: the first model (by name) gets what there is, the rest get 0, and the
    # borrowing goes to what fell short (a100 3 short 0, h100 16 short 16: 6 of it) first.
    view, team_, vendor = split_view(
        tmp_path / "small", "quota: {nvidia: 3}\nborrowing: {nvidia: 6}\n"
    )
    assert workloads.flavor_split(team_, vendor, {"a100": 3, "h100": 16}) == [
        (3, 0),
        (0, 0),
        (0, 6),
    ]
    # No pool of a model needed: nothing reserved for it; the last pool takes what remains.
    view, team_, vendor = split_view(tmp_path / "none", "quota: {nvidia: 30}\n")
    assert workloads.flavor_split(team_, vendor, {"v100": 4}) == [(8, 0), (8, 0), (14, 0)]


def test_flavor_split_fills_a_pool_only_up_to_what_its_pinned_need_left(tmp_path: Path) -> None:
    """Share 12. A100 needs 4 of a100's 8: a100 gets its 4, then 4 more up to its capacity, and
    h100 the last 4. A100 needs 10, more than any A100 pool holds: the first A100 pool takes it
    all, is then full (nothing more, not even 1), and h100 gets the 2 left."""
    view, team_, vendor = split_view(tmp_path, "quota: {nvidia: 12}\n")
    assert workloads.flavor_split(team_, vendor, {"a100": 4}) == [(8, 0), (4, 0), (0, 0)]
    assert workloads.flavor_split(team_, vendor, {"a100": 10}) == [(10, 0), (2, 0), (0, 0)]


# ---- pod fields (issue 21) -------------------------------------------------------------------


def test_a_job_carries_the_pod_fields_its_values_give(tmp_path: Path) -> None:
    fleet = PROD_FLEET + yaml.safe_dump(DATASET_FLEET)
    values_dir = tree(
        tmp_path,
        {"vendors/nvidia.yaml": NVIDIA, "teams/vision.yaml": DATASET_TEAM},
        fleet=fleet,
        defaults=False,
    )
    out = render_into(values_dir, tmp_path / "out")
    objs = build_unit(out, "prod", "team-vision")
    job = find(objs, "Job", "train")
    assert (job["spec"]["ttlSecondsAfterFinished"], job["spec"]["activeDeadlineSeconds"]) == (
        3600,
        86400,
    )
    template = job["spec"]["template"]
    assert template["metadata"]["annotations"] == {"example.com/owner": "vision"}
    spec = template["spec"]
    assert spec["volumes"] == [
        {"name": "dataset", "persistentVolumeClaim": {"claimName": "imagenet", "readOnly": True}},
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}},
    ]
    (ctr,) = spec["containers"]
    assert ctr["volumeMounts"] == [
        {"name": "dataset", "mountPath": "/data", "readOnly": True},
        {"name": "dshm", "mountPath": "/dev/shm"},
    ]
    assert ctr["env"] == [
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
        {"name": "MODE", "value": "train"},
    ]
    assert spec["imagePullSecrets"] == [{"name": "registry-creds"}]
    assert (spec["serviceAccountName"], spec["priorityClassName"]) == ("trainer", "training-high")
    # The pool's toleration stays first; the job's own is added, never in its place.
    assert spec["tolerations"] == [
        {
            "key": "feature.node.kubernetes.io/accelerator",
            "operator": "Equal",
            "value": "nvidia-gpu",
            "effect": "NoSchedule",
        },
        {"key": "example.com/spot", "operator": "Exists", "effect": "NoSchedule"},
    ]
    assert spec["topologySpreadConstraints"][0]["topologyKey"] == "kubernetes.io/hostname"
    # Kubernetes' own Pod Security admission code passes it at the team's level.
    (result,) = pod_security(objs)
    assert (result["level"], result["allowed"]) == ("restricted", True), result
    # The priority class it names is the fleet's own.
    (pc,) = [o for o in build_unit(out, "prod", "scheduling") if o["kind"] == "PriorityClass"]
    assert (pc["metadata"]["name"], pc["value"]) == ("training-high", 1000)
    assert not codes(values_dir)


def test_a_batch_job_without_lifetime_fields_has_none() -> None:
    """ttlSecondsAfterFinished and activeDeadlineSeconds only when the values give them."""
    decl = PodDecl("", 0, "", "x:1", (), (), {}, {}, {})
    view = FleetView("prod", None, (), ())  # type: ignore[arg-type]
    spec = workloads._pod_spec(view, "j", decl, restart="Never")
    assert "activeDeadlineSeconds" not in spec
    assert workloads._pod_spec(view, "j", decl, active_deadline=60)["activeDeadlineSeconds"] == 60


def test_the_workloads_node_affinity_holds_together_with_a_fallback_models() -> None:
    """Each of the user's required terms gets the model's expressions (terms are ORed, a term's
    expressions ANDed); preferred terms add up; pod anti-affinity is passed on."""
    model = {"key": "m", "operator": "In", "values": ["A100", "H100"]}
    mine = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [model]}]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": 1}],
        }
    }
    zone_a = {"key": "zone", "operator": "In", "values": ["a"]}
    rack = {"key": "rack", "operator": "Exists"}
    anti = {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "h"}]}
    user = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [zone_a]},
                    {"matchFields": [rack]},
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "preference": 2}],
        },
        "podAntiAffinity": anti,
    }
    got = workloads.combine_affinity(mine, user)
    node = got["nodeAffinity"]
    assert node["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchExpressions": [zone_a, model]},
        {"matchExpressions": [model], "matchFields": [rack]},
    ]
    assert [p["weight"] for p in node["preferredDuringSchedulingIgnoredDuringExecution"]] == [
        100,
        5,
    ]
    assert got["podAntiAffinity"] == anti
    # One side alone is kept as it is.
    assert workloads.combine_affinity(mine, {"podAntiAffinity": anti}) == {
        **mine,
        "podAntiAffinity": anti,
    }
    assert workloads.combine_affinity({}, user) == user
    # The user's node affinity only prefers: the model stays required, the preferences add up.
    prefers = {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "preference": 2}]}
    assert workloads.combine_affinity(mine, {"nodeAffinity": prefers}) == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [model]}]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "preference": 1},
                {"weight": 5, "preference": 2},
            ],
        }
    }


# ---- JobSet (issue 21) -------------------------------------------------------------------------


def jobset_tree(tmp_path: Path, backend: str) -> Path:
    fleet = {**JOBSET_FLEET, "scheduling": {"backend": backend}}
    if backend == "volcano":
        fleet["platform"] = {"jobset": {"provided": "fleet"}}
    return tree(
        tmp_path,
        {
            "fleet.yaml": PROD_FLEET + yaml.safe_dump(fleet),
            "vendors/nvidia.yaml": "pools:\n  - {name: a100, model: A100, devicesPerNode: 8, "
            "nodes: [g1, g2]}\n",
            "vendors/cambricon.yaml": CAMBRICON_MLU370,
            "teams/llm.yaml": JOBSET_TEAM,
        },
        defaults=False,
        fleet=PROD_FLEET,
    )


def test_a_jobset_has_a_replicated_job_per_task_queued_by_kueue(tmp_path: Path) -> None:
    values_dir = jobset_tree(tmp_path, "kueue")
    assert not codes(values_dir)
    objs = build_unit(render_into(values_dir, tmp_path / "out"), "prod", "team-llm")
    jobset = find(objs, "JobSet", "pretrain")
    assert jobset["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
    assert jobset["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-llm"
    spec = jobset["spec"]
    assert spec["successPolicy"] == {"operator": "All", "targetReplicatedJobs": ["gpu"]}
    assert spec["failurePolicy"] == {"maxRestarts": 3}
    got = [
        (
            r["name"],
            r["replicas"],
            r["template"]["spec"]["parallelism"],
            r["template"]["spec"]["completions"],
            r["template"]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"],
            r["template"]["spec"]["template"]["spec"]["nodeSelector"],
        )
        for r in spec["replicatedJobs"]
    ]
    assert got == [
        (
            "gpu",
            1,
            2,
            2,
            {"nvidia.com/gpu": 8},
            {"feature.node.kubernetes.io/accelerator": "nvidia-gpu"},
        ),
        (
            "mlu",
            1,
            2,
            2,
            {"cambricon.com/mlu": 4},
            {"feature.node.kubernetes.io/accelerator": "cambricon-mlu"},
        ),
    ]
    # Kueue admits it through its jobset integration, which the fleet's Kueue chart enables.
    assert "jobset.x-k8s.io/jobset" in scheduling.kueue_integrations(
        workloads_of(values.load(values_dir).envs["prod"])
    )
    # The fleet renders JobSet's chart at the pinned version, with the released image.
    apps = {
        o["metadata"]["labels"].get("accel-gitops.io/addon"): o
        for o in build_unit(tmp_path / "out", "prod", "argocd")
        if o["kind"] == "Application"
    }
    source = apps["jobset"]["spec"]["source"]
    assert (source["repoURL"], source["chart"], source["targetRevision"]) == (
        "registry.k8s.io/jobset/charts",
        "jobset",
        "0.11.1",
    )
    assert source["helm"]["valuesObject"]["image"]["tag"] == "v0.11.1"


def test_a_jobset_under_volcano_points_its_pods_at_the_teams_queue(tmp_path: Path) -> None:
    values_dir = jobset_tree(tmp_path, "volcano")
    objs = build_unit(render_into(values_dir, tmp_path / "out"), "prod", "team-llm")
    jobset = find(objs, "JobSet", "pretrain")
    assert "kueue.x-k8s.io/queue-name" not in jobset["metadata"]["labels"]
    for rjob in jobset["spec"]["replicatedJobs"]:
        template = rjob["template"]["spec"]["template"]
        assert template["spec"]["schedulerName"] == "volcano"
        assert template["metadata"]["annotations"] == {
            "scheduling.volcano.sh/queue-name": "team-llm"
        }


# ---- Kubeflow Trainer TrainJobs (issue 21) -----------------------------------------------------


def trainjob_tree(tmp_path: Path, team: str = TRAINJOB_TEAM) -> Path:
    return tree(
        tmp_path,
        {
            "fleet.yaml": PROD_FLEET + yaml.safe_dump(TRAINJOB_FLEET),
            "vendors/nvidia.yaml": "pools:\n  - {name: a100, model: A100, devicesPerNode: 8, "
            "nodes: [g1, g2]}\n",
            "teams/llm.yaml": team,
        },
        defaults=False,
        fleet=PROD_FLEET,
    )


def test_a_trainjob_carries_its_devices_in_the_trainer_and_its_placement_in_a_patch(
    tmp_path: Path,
) -> None:
    extra = (
        "    numProcPerNode: 4\n    activeDeadlineSeconds: 600\n    env: {EPOCHS: '3'}\n"
        "    serviceAccountName: trainer\n    imagePullSecrets: [{name: regcred}]\n"
        "    shmSize: 8Gi\n"
    )
    declared = "external: {secrets: [regcred], serviceAccounts: [trainer]}\n"
    values_dir = trainjob_tree(tmp_path, declared + TRAINJOB_TEAM + extra)
    assert not codes(values_dir)
    objs = build_unit(render_into(values_dir, tmp_path / "out"), "prod", "team-llm")
    train = find(objs, "TrainJob", "finetune")
    assert train["apiVersion"] == "trainer.kubeflow.org/v1alpha1"
    assert train["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-llm"
    spec = train["spec"]
    assert spec["runtimeRef"] == {
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
        "name": "torch-distributed",
    }
    assert spec["activeDeadlineSeconds"] == 600
    assert spec["trainer"] == {
        "image": "r/train:cuda",
        "command": ["torchrun", "train.py"],
        "env": [{"name": "EPOCHS", "value": "3"}],
        "numNodes": 2,
        "numProcPerNode": 4,
        "resourcesPerNode": {
            "requests": {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": 8},
            "limits": {"nvidia.com/gpu": 8},
        },
    }
    (patch,) = spec["runtimePatches"]
    assert patch["manager"] == "accel-gitops.io/generator"
    (step,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    assert step["name"] == "node"
    template = step["template"]["spec"]["template"]
    assert template["metadata"]["labels"]["accel-gitops.io/vendor"] == "nvidia"
    pod = template["spec"]
    # Only the fields a runtime patch may carry: the pool's placement, volumes and identity.
    assert sorted(pod) == [
        "containers",
        "imagePullSecrets",
        "nodeSelector",
        "securityContext",
        "serviceAccountName",
        "tolerations",
        "volumes",
    ]
    assert pod["nodeSelector"] == {"feature.node.kubernetes.io/accelerator": "nvidia-gpu"}
    assert pod["tolerations"] == [NVIDIA_TOLERATION]
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    (container,) = pod["containers"]
    assert container["name"] == "node"
    assert container["volumeMounts"] == [{"name": "dshm", "mountPath": "/dev/shm"}]
    assert sorted(container) == ["name", "securityContext", "volumeMounts"]
    # Kueue admits it through its trainjob integration; the fleet's Trainer installs exactly the
    # runtime it names, and not its own JobSet.
    view = values.load(values_dir).envs["prod"]
    assert "trainer.kubeflow.org/trainjob" in scheduling.kueue_integrations(workloads_of(view))
    assert scheduling.trainer_chart_values(workloads_of(view)) == {
        "jobset": {"install": False},
        "runtimes": {"torchDistributed": {"enabled": True}},
    }
    apps = {
        o["metadata"]["labels"].get("accel-gitops.io/addon"): o
        for o in build_unit(tmp_path / "out", "prod", "argocd")
        if o["kind"] == "Application"
    }
    source = apps["trainer"]["spec"]["source"]
    assert (source["repoURL"], source["chart"], source["targetRevision"]) == (
        "ghcr.io/kubeflow/charts",
        "kubeflow-trainer",
        "2.2.0",
    )


def test_the_trainer_chart_installs_the_runtimes_the_trainjobs_name(tmp_path: Path) -> None:
    jax = TRAINJOB_TEAM.replace("finetune", "a") + (
        "  b:\n    kind: trainjob\n    vendor: nvidia\n    runtime: jax-distributed\n"
        "    images: {nvidia: r/jax}\n"
        "  c:\n    kind: jobset\n    images: {nvidia: r/x}\n"
        "    tasks: {w: {vendor: nvidia}}\n"
    )
    view = values.load(trainjob_tree(tmp_path, jax)).envs["prod"]
    assert scheduling.trainer_runtimes(workloads_of(view)) == [
        "jax-distributed",
        "torch-distributed",
    ]
    assert scheduling.trainer_chart_values(workloads_of(view))["runtimes"] == {
        "jaxDistributed": {"enabled": True},
        "torchDistributed": {"enabled": True},
    }
    # every runtime values may name has its chart switch
    assert sorted(scheduling.TRAINER_RUNTIMES) == sorted(schema.TRAINER_RUNTIMES)


# ---- LeaderWorkerSet tracks (issue 21) ---------------------------------------------------------


def test_a_multi_host_track_is_a_leaderworkerset_whose_leaders_serve(tmp_path: Path) -> None:
    fleet = {
        "scheduling": {"backend": "kueue"},
        "platform": {"kueue": {"provided": "fleet"}, "lws": {"provided": "fleet"}},
    }
    values_dir = tree(
        tmp_path,
        {
            "fleet.yaml": PROD_FLEET + yaml.safe_dump(fleet),
            "vendors/nvidia.yaml": NVIDIA,
            "vendors/ascend.yaml": "pools:\n  - {name: p1, model: 910b, devicesPerNode: 8, nodes: [npu-1, npu-2]}\n",
            "teams/llm.yaml": LWS_TEAM,
        },
        defaults=False,
    )
    objs = build_unit(render_into(values_dir, tmp_path / "out"), "prod", "team-llm")
    lws = find(objs, "LeaderWorkerSet", "llm-ascend")
    assert lws["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-llm"
    spec = lws["spec"]
    group = spec["leaderWorkerTemplate"]
    assert (spec["replicas"], group["size"], group["restartPolicy"]) == (
        1,
        2,
        "RecreateGroupOnPodRestart",
    )
    # what LWS's defaulting webhook would set, written out
    assert spec["rolloutStrategy"]["type"] == "RollingUpdate"
    assert (spec["startupPolicy"], spec["networkConfig"]) == (
        "LeaderCreated",
        {"subdomainPolicy": "Shared"},
    )
    leader, worker = group["leaderTemplate"], group["workerTemplate"]
    # every pod of the group asks for its NPUs; only the leader serves, probed on its port
    for tpl in (leader, worker):
        assert tpl["spec"]["containers"][0]["resources"]["limits"] == {"huawei.com/Ascend910": 8}
    assert leader["metadata"]["labels"]["accel-gitops.io/serving"] == "true"
    assert "accel-gitops.io/serving" not in worker["metadata"]["labels"]
    assert "readinessProbe" in leader["spec"]["containers"][0]
    assert "readinessProbe" not in worker["spec"]["containers"][0]
    # the other track stays a Deployment; its pods serve too
    dep = find(objs, "Deployment", "llm-nvidia")
    assert dep["spec"]["template"]["metadata"]["labels"]["accel-gitops.io/serving"] == "true"
    assert "accel-gitops.io/serving" not in dep["spec"]["selector"]["matchLabels"]
    # every Service of the service selects serving pods: a group's workers get no traffic
    for name in ("llm", "llm-nvidia", "llm-ascend"):
        assert find(objs, "Service", name)["spec"]["selector"]["accel-gitops.io/serving"] == "true"
    view = values.load(values_dir).envs["prod"]
    # Kueue admits a group through its leaderworkerset integration, the Deployment's pods
    # through the pod integration that `deployment` enables.
    assert scheduling.kueue_integrations(workloads_of(view)) == [
        "batch/job",
        "deployment",
        "leaderworkerset.x-k8s.io/leaderworkerset",
    ]
    # A group of 2 pods x 8 NPUs holds 16.
    team = next(t for t in view.teams if t.name == "llm")
    (svc,) = workloads_of(view).of(team).services
    assert {p.vendor: p.devices for p in plan_service(svc)} == {"nvidia": 8, "ascend": 16}
    # plan: one serving pod per group (its leader), one per Deployment replica: 50/50
    (row,) = env_plan(build_of(view)).services
    assert {t.vendor: t.traffic for t in row.tracks} == {"nvidia": 50.0, "ascend": 50.0}


# ---- _jobset: a whole JobSet, written out by hand ----------------------------------------------

JOBSET_WHOLE = """\
podSecurity: restricted
quota: {nvidia: 16}
jobs:
  pretrain:
    kind: jobset
    images: {nvidia: r/train:cuda}
    command: [torchrun, train.py]
    backoffLimit: 2
    activeDeadlineSeconds: 7200
    ttlSecondsAfterFinished: 3600
    tasks:
      gpu: {vendor: nvidia, devices: 8, replicas: 2}
      eval: {vendor: nvidia, devices: 1}
    successPolicy: {operator: All, targetReplicatedJobs: [gpu]}
    failurePolicy: {maxRestarts: 3}
"""
NVIDIA_TWO_NODES = "pools:\n  - {name: a100, model: A100, devicesPerNode: 8, nodes: [g1, g2]}\n"
KUEUE_JOBSET = (
    "scheduling: {backend: kueue}\n"
    "platform: {kueue: {provided: fleet}, jobset: {provided: fleet}}\n"
)


def jobset_child(task: str, replicas: int, devices: int) -> dict[str, Any]:
    """A replicated job of JOBSET_WHOLE: one batch Job of `replicas` pods, the job's backoff and
    deadline on it, each pod a container named after the task, restricted as its team is."""
    container = {
        "name": task,
        "image": "r/train:cuda",
        "command": ["torchrun", "train.py"],
        "resources": {
            "requests": {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": devices},
            "limits": {"nvidia.com/gpu": devices},
        },
        "securityContext": RESTRICTED_CTR,
    }
    pod = {
        "containers": [container],
        "nodeSelector": {NFD + "accelerator": "nvidia-gpu"},
        "restartPolicy": "Never",
        "securityContext": RESTRICTED_POD,
        "tolerations": [NVIDIA_TOLERATION],
    }
    child = {
        "parallelism": replicas,
        "completions": replicas,
        "backoffLimit": 2,
        "activeDeadlineSeconds": 7200,
        "template": {"metadata": {"labels": template_labels("pretrain", "nvidia")}, "spec": pod},
    }
    return {"name": task, "replicas": 1, "template": {"spec": child}}


def test_a_jobset_written_out_with_every_setting(tmp_path: Path) -> None:
    """A JobSet under Kueue: the queue label on the JobSet (not on its pods), its success and
    failure policies and TTL as the values give them, one replicated job per task in name order,
    each a single Job of the task's replicas with the job's backoffLimit and deadline."""
    files = {"vendors/nvidia.yaml": NVIDIA_TWO_NODES, "teams/ml.yaml": JOBSET_WHOLE}
    view = view_of(tmp_path, files, KUEUE_JOBSET)
    objs, _ = team_objects(view, only_team(view))
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": meta("pretrain", "ml", **{"kueue.x-k8s.io/queue-name": "team-ml"}),
        "spec": {
            "successPolicy": {"operator": "All", "targetReplicatedJobs": ["gpu"]},
            "failurePolicy": {"maxRestarts": 3},
            "ttlSecondsAfterFinished": 3600,
            "replicatedJobs": [jobset_child("eval", 1, 1), jobset_child("gpu", 2, 8)],
        },
    }
    assert written([o for o in objs if o["kind"] == "JobSet"]) == written([jobset])


def test_a_jobset_without_optional_settings_writes_none_of_them(tmp_path: Path) -> None:
    """No policies, TTL or deadline in the values: none in the JobSet (the controller's defaults
    apply); backoffLimit is the generator's default, 3."""
    bare = "quota: {nvidia: 8}\njobs:\n  j:\n    kind: jobset\n    images: {nvidia: r/t:1}\n"
    bare += "    tasks: {w: {vendor: nvidia, devices: 1}}\n"
    view = view_of(tmp_path, {"vendors/nvidia.yaml": NVIDIA_TWO_NODES, "teams/ml.yaml": bare})
    objs, _ = team_objects(view, only_team(view))
    (jobset,) = [o for o in objs if o["kind"] == "JobSet"]
    assert list(jobset["spec"]) == ["replicatedJobs"]
    (child,) = jobset["spec"]["replicatedJobs"]
    assert list(child["template"]["spec"]) == [
        "parallelism",
        "completions",
        "backoffLimit",
        "template",
    ]
    assert child["template"]["spec"]["backoffLimit"] == 3


# ---- patch_targets, user_patches: the objects a workload's `patch` applies to ------------------

PATCHED_TEAM = (
    LWS_TEAM.replace("quota: {ascend: 16, nvidia: 8}", "quota: {ascend: 16, nvidia: 12}")
    + "    patch:\n      json6902: [{op: add, path: /metadata/annotations/x, value: y}]\n"
    + "  web:\n    images: {nvidia: r/web:1}\n"
    + "    tracks: {nvidia: {devicesPerReplica: 1, replicas: 1}}\n"
    + "jobs:\n"
    + "  train:\n    vendor: nvidia\n    devices: 1\n    images: {nvidia: r/t:1}\n"
    + "    patch: {strategicMerge: {metadata: {annotations: {owner: ml}}}}\n"
    + "  eval:\n    vendor: nvidia\n    devices: 1\n    images: {nvidia: r/t:1}\n"
)


def test_a_patch_targets_its_own_workloads_objects_only(tmp_path: Path) -> None:
    """Each job's Job (not another job's), each track's Deployment or LeaderWorkerSet of a service
    (not another service's); every workload is a target, patched or not."""
    files = {"vendors/nvidia.yaml": NVIDIA, "vendors/ascend.yaml": ASCEND}
    files["teams/ml.yaml"] = PATCHED_TEAM
    view = view_of(tmp_path, files, "platform: {lws: {provided: fleet}}\n")
    team = only_team(view)
    objs, _ = team_objects(view, team)
    targets = workloads.patch_targets(workloads_of(view), team, objs)
    assert [(path, o["kind"], o["metadata"]["name"]) for path, o in targets] == [
        (("jobs", "eval"), "Job", "eval"),
        (("jobs", "train"), "Job", "train"),
        (("services", "llm"), "Deployment", "llm-nvidia"),
        (("services", "llm"), "LeaderWorkerSet", "llm-ascend"),
        (("services", "web"), "Deployment", "web-nvidia"),
    ]
    patches = workloads.user_patches(workloads_of(view), team, objs)
    got = [(p.target["kind"], p.target["metadata"]["name"], p.patch) for p in patches]
    json_patch = [{"op": "add", "path": "/metadata/annotations/x", "value": "y"}]
    assert got == [
        ("Job", "train", {"metadata": {"annotations": {"owner": "ml"}}}),
        ("Deployment", "llm-nvidia", json_patch),
        ("LeaderWorkerSet", "llm-ascend", json_patch),
    ]


def test_a_team_that_patches_nothing_has_no_patch_without_its_model_resolved(
    tmp_path: Path,
) -> None:
    """Its workload model is not asked for (at 1,000 teams, every team of a changed view was
    resolved again for this); with one patch, a job's, it is patched."""
    files = {"vendors/nvidia.yaml": NVIDIA, "vendors/ascend.yaml": ASCEND}
    service_patch = (
        "    patch:\n      json6902: [{op: add, path: /metadata/annotations/x, value: y}]\n"
    )
    job_patch = "    patch: {strategicMerge: {metadata: {annotations: {owner: ml}}}}\n"
    one = PATCHED_TEAM.replace(service_patch, "")
    files["teams/ml.yaml"] = one.replace(job_patch, "")
    view = view_of(tmp_path, files, "platform: {lws: {provided: fleet}}\n")
    team = only_team(view)
    objs, _ = team_objects(view, team)
    model = workloads_of(view)
    asked: list[str] = []
    real_of = model.of

    def of(t: Team) -> Any:
        asked.append(t.name)
        return real_of(t)

    model.of = of  # type: ignore[method-assign,assignment]
    assert (workloads.user_patches(model, team, objs), asked) == ([], [])
    files["teams/ml.yaml"] = one
    view = view_of(tmp_path, files, "platform: {lws: {provided: fleet}}\n")
    team = only_team(view)
    objs, _ = team_objects(view, team)
    patches = workloads.user_patches(workloads_of(view), team, objs)
    assert [p.target["metadata"]["name"] for p in patches] == ["train"]


# ---- _team_objects: the pod templates of JobSets, TrainJobs and LeaderWorkerSets -------------

GROUPED_TEAM = (
    LWS_TEAM.replace("quota: {ascend: 16, nvidia: 8}", "quota: {ascend: 16, nvidia: 32}").replace(
        "services:", "podSecurity: restricted\nnamespaces: [llm, train]\nservices:"
    )
    + "jobs:\n"
    + "  pre:\n    kind: jobset\n    images: {nvidia: r/t:1}\n"
    + "    tasks:\n      b: {vendor: nvidia}\n      a: {vendor: nvidia, replicas: 2}\n"
    + "  tune:\n    kind: trainjob\n    vendor: nvidia\n    devices: 8\n    numNodes: 2\n"
    + "    namespace: train\n    images: {nvidia: r/t:1}\n    command: [torchrun]\n"
    + "    args: [train.py, --fast]\n"
)


def test_pod_templates_of_jobsets_trainjobs_and_leaderworkersets(tmp_path: Path) -> None:
    """A JobSet's per replicated job (the task's replicas and path), a TrainJob's trainer pod
    (its nodes), a LeaderWorkerSet's leader template (replicas x group size, the track's path):
    each as the checks read them, the pod the team's Pod Security level allows."""
    files = {"vendors/nvidia.yaml": NVIDIA, "vendors/ascend.yaml": ASCEND}
    files["teams/ml.yaml"] = GROUPED_TEAM
    view = view_of(tmp_path, files, "platform: {lws: {provided: fleet}}\n")
    team = only_team(view)
    objs, refs = team_objects(view, team)
    assert [(r.team, r.kind, r.name, r.path, r.count) for r in refs] == [
        (team, "JobSet task", "pre/a", ("jobs", "pre", "tasks", "a"), 2),
        (team, "JobSet task", "pre/b", ("jobs", "pre", "tasks", "b"), 1),
        (team, "TrainJob", "tune", ("jobs", "tune"), 2),
        (team, "Deployment", "llm-nvidia", ("services", "llm", "tracks", "nvidia"), 1),
        (team, "LeaderWorkerSet", "llm-ascend", ("services", "llm", "tracks", "ascend"), 2),
    ]
    jobset = find(objs, "JobSet", "pre")
    for ref, rjob in zip(refs[:2], jobset["spec"]["replicatedJobs"], strict=True):
        assert ref.spec is rjob["template"]["spec"]["template"]["spec"]
    lws = find(objs, "LeaderWorkerSet", "llm-ascend")
    assert refs[4].spec is lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
    # The TrainJob's pod: the trainer step's container, restricted, with the job's devices.
    trainer = refs[2].spec
    (container,) = trainer["containers"]
    assert (container["name"], container["securityContext"]) == ("node", RESTRICTED_CTR)
    assert trainer["securityContext"] == RESTRICTED_POD
    assert container["resources"]["limits"] == {"nvidia.com/gpu": 8}
    # The TrainJob itself: in the job's namespace, with its command and arguments.
    train = find(objs, "TrainJob", "tune")
    assert train["metadata"]["namespace"] == "train"
    assert (train["spec"]["trainer"]["command"], train["spec"]["trainer"]["args"]) == (
        ["torchrun"],
        ["train.py", "--fast"],
    )


def test_a_leaderworkerset_under_volcano_points_leader_and_workers_at_the_queue(
    tmp_path: Path,
) -> None:
    files = {"vendors/nvidia.yaml": NVIDIA, "vendors/ascend.yaml": ASCEND}
    files["teams/ml.yaml"] = LWS_TEAM
    view = view_of(tmp_path, files, "scheduling: {backend: volcano}\n")
    objs, _ = team_objects(view, only_team(view))
    group = find(objs, "LeaderWorkerSet", "llm-ascend")["spec"]["leaderWorkerTemplate"]
    for template in (group["leaderTemplate"], group["workerTemplate"]):
        assert template["spec"]["schedulerName"] == "volcano"
        assert template["metadata"]["annotations"] == {
            "scheduling.volcano.sh/queue-name": "team-ml"
        }


def test_a_volcano_job_carries_its_ttl_and_each_pod_the_jobs_deadline(tmp_path: Path) -> None:
    """Volcano's JobSpec has ttlSecondsAfterFinished but no deadline: each task pod gets it."""
    text = (
        "quota: {nvidia: 8}\njobs:\n  gang:\n    kind: volcano\n    images: {nvidia: r/t:1}\n"
        "    ttlSecondsAfterFinished: 600\n    activeDeadlineSeconds: 3600\n"
        "    tasks:\n      a: {vendor: nvidia}\n      b: {vendor: nvidia}\n"
    )
    view = view_of(tmp_path, {"vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": text})
    objs, _ = team_objects(view, only_team(view))
    spec = find(objs, "Job", "gang")["spec"]
    assert spec["ttlSecondsAfterFinished"] == 600
    assert "activeDeadlineSeconds" not in spec
    assert [t["template"]["spec"]["activeDeadlineSeconds"] for t in spec["tasks"]] == [3600, 3600]


# ---- _pod_spec: a pod's own affinity, tolerations and envFrom beside the generator's ----------

USER_AFFINITY = """    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
            - matchExpressions: [{key: zone, operator: In, values: [a]}]
      podAntiAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 10
            podAffinityTerm: {topologyKey: kubernetes.io/hostname}
"""
ZONE_A = {"key": "zone", "operator": "In", "values": ["a"]}
ANTI = {
    "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}
    ]
}


def test_a_pods_own_affinity_tolerations_and_env_from_join_the_generators(
    tmp_path: Path,
) -> None:
    """Job `fallback` has a fallback model: its zone term gets the generator's model expression
    (both hold) and the preferred model stays preferred. Job `plain` has none: its affinity is
    its own. Either's tolerations come after the pool's, its envFrom as written."""
    jobs = "".join(
        f"  {name}:\n    vendor: nvidia\n{model}    images: {{nvidia: r/t:1}}\n"
        "    envFrom: [{configMapRef: {name: cfg}}]\n"
        "    tolerations: [{key: example.com/spot, operator: Exists, effect: NoSchedule}]\n"
        + USER_AFFINITY
        for name, model in (
            ("fallback", "    model: H100\n    fallbackModel: A100\n"),
            ("plain", ""),
        )
    )
    text = "quota: {nvidia: 8}\nexternal: {configMaps: [cfg]}\njobs:\n" + jobs
    view = view_of(tmp_path, {"vendors/nvidia.yaml": NVIDIA_TWO_MODELS, "teams/ml.yaml": text})
    specs = pods(team_objects(view, only_team(view))[0])
    key = NFD + "gpu-model"
    (model_expr,) = model_terms(key, "H100", "A100")["matchExpressions"]
    assert specs["fallback"]["affinity"] == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [ZONE_A, model_expr]}]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "preference": model_terms(key, "H100")}
            ],
        },
        "podAntiAffinity": ANTI,
    }
    assert specs["plain"]["affinity"] == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [ZONE_A]}]
            }
        },
        "podAntiAffinity": ANTI,
    }
    spot = {"key": "example.com/spot", "operator": "Exists", "effect": "NoSchedule"}
    for spec in specs.values():
        assert spec["tolerations"] == [NVIDIA_TOLERATION, spot]
        assert spec["containers"][0]["envFrom"] == [{"configMapRef": {"name": "cfg"}}]


# ---- _claim_templates: a DRA claim template for every pod template that names one ----------


def test_tasks_of_a_jobset_on_a_dra_pool_get_their_claim_templates(tmp_path: Path) -> None:
    """Pod templates in a list (a JobSet's replicated jobs) are found too: one template per
    shape and namespace, named after the vendor's DeviceClass, model and count."""
    text = (
        "quota: {nvidia-dra: 8}\njobs:\n  pre:\n    kind: jobset\n"
        "    images: {nvidia-dra: r/t:1}\n"
        "    tasks:\n      a: {vendor: nvidia-dra, devices: 2, model: H100}\n"
        "      b: {vendor: nvidia-dra, devices: 4, model: H100}\n"
    )
    files = {"vendors/nvidia-dra.yaml": DRA_NVIDIA, "teams/ml.yaml": text}
    view = view_of(tmp_path, files)
    objs, _ = team_objects(view, only_team(view))
    templates = [
        (o["metadata"]["namespace"], o["metadata"]["name"])
        for o in objs
        if o["kind"] == "ResourceClaimTemplate"
    ]
    assert templates == [("ml", "nvidia-dra-h100-x2"), ("ml", "nvidia-dra-h100-x4")]


def test_a_baseline_teams_jobset_and_trainjob_pods_are_baseline(tmp_path: Path) -> None:
    """The team's Pod Security level reaches a JobSet's and a TrainJob's pods (restricted would
    add runAsNonRoot, which a root CUDA image cannot start under)."""
    text = GROUPED_TEAM.replace("podSecurity: restricted", "podSecurity: baseline")
    files = {"vendors/nvidia.yaml": NVIDIA, "vendors/ascend.yaml": ASCEND, "teams/ml.yaml": text}
    view = view_of(tmp_path, files, "platform: {lws: {provided: fleet}}\n")
    _, refs = team_objects(view, only_team(view))
    for ref in refs:
        assert ref.spec["securityContext"] == BASELINE_POD, ref.name
        assert ref.spec["containers"][0]["securityContext"] == BASELINE_CTR, ref.name
