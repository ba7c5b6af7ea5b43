"""Workloads as rendered (generator/builders/workloads.py): pod templates (requests, probes, and
a security context per Pod Security level, checked with Kubernetes' own admission code; issue #8
items 5 and 12), the seed jobs and services, and every team unit built with kustomize under each
scheduling backend and routing (issue 5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from generator.render.stage import RenderOptions, render
from tests.fixtures import (
    CAMBRICON_MLU370,
    FLEET,
    INFERENCE,
    PROD_FLEET,
    assert_units_build_exactly,
    build_unit,
    by_name,
    codes,
    find,
    kustomize_build,
    pod_security,
    render_into,
    tree,
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
    """NVIDIA (8 GPUs), Ascend (16 NPUs), Cambricon; team ml (TEAM_ML) and the migrating
    inference service (port 80); quotas may overcommit; `files` over these."""
    fleet = FLEET + f"capacity: {{allowOvercommit: true}}\nscheduling:\n  backend: {backend}\n"
    inference = INFERENCE.replace(
        "    vendorMounts: false\n",
        "    vendorMounts: false\n    containerPort: 8080\n    port: 80\n",
    )
    base = {
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
