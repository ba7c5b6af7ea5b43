"""Workload pod templates: requests, probes, and a security context per Pod Security level,
checked with Kubernetes' own admission code (issue #8 items 5 and 12)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fixtures import PROD_FLEET, build_unit, codes, find, pod_security, render_into, tree

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
