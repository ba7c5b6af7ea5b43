"""`diff` (generator/delivery/diff.py): env vs env and working tree vs a git ref, with real
kustomize and real git; its field changes and risks."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from generator.delivery import git as gitutil
from generator.delivery.diff import (
    ABSENT,
    RISKS,
    FieldChange,
    ObjectDiff,
    Risk,
    _against_rendered,
    _container_entry,
    _in_env,
    _renamed,
    against_ref,
    between_envs,
    compare_objects,
    devices,
    field_changes,
    format_path,
    quantity,
    tree_diff,
)
from generator.errors import GeneratorError, UsageError
from generator.render.layout import Rendered, render_tree
from generator.render.stage import load_and_check
from generator.render.texts import Texts
from generator.vocab.units import Unit
from tests import repos
from tests.fixtures import (
    ASCEND_910B,
    CAMBRICON_MLU370,
    DRA_NVIDIA,
    FLEET,
    NVIDIA,
    ROOT,
    TEAM,
    TWO_CLUSTERS,
    TWO_TEAMS_PROD,
    TWO_TEAMS_STAGING,
    cli_streams,
    tree,
    two_teams,
)

# ---- diff: field changes and formats -------------------------------------------------------------


def test_field_changes_match_named_list_entries_and_keep_the_rest_whole() -> None:
    old = {
        "spec": {
            "containers": [{"name": "a", "image": "x:1"}, {"name": "b", "image": "y:1"}],
            "args": ["--one"],
            "hard": {"nvidia.com/gpu": "8"},
        }
    }
    new = {
        "spec": {
            "containers": [{"name": "b", "image": "y:2"}, {"name": "a", "image": "x:1"}],
            "args": ["--one", "--two"],
            "hard": {},
        }
    }
    got = [(c.where, c.op, c.old, c.new) for c in field_changes(old, new)]
    assert [g[:2] for g in got] == [
        # An added item of a scalar list is said alone (its value is its identity).
        ("spec.args[value=--two]", "add"),
        ("spec.containers[name=b].image", "replace"),
        ('spec.hard["nvidia.com/gpu"]', "remove"),
    ]
    assert got[1][2:] == ("y:1", "y:2")


def _git_fleet(values_dir: Path, *, commit_output: bool = True) -> Path:
    """The fleet as a git repository on main: values and (usually) its rendered output."""
    repo = values_dir.parent
    if commit_output:
        assert cli_streams("render", "--values", str(values_dir))[0] == 0
    repos.init(repo)
    repos.commit_all(repo, "fleet")
    return repo


def _diff(values_dir: Path, *args: str) -> dict[str, Any]:
    code, out, err = cli_streams("diff", "--values", str(values_dir), "--output", "json", *args)
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def _objects(data: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(o["environment"], o["unit"], f"{o['kind']}/{o['name']}"): o for o in data["objects"]}


def test_diff_base_quota_change(tmp_path: Path) -> None:
    values_dir = two_teams(tmp_path)
    _git_fleet(values_dir)
    text = (values_dir / "teams/ml-team.yaml").read_text().replace("nvidia: 8", "nvidia: 6")
    (values_dir / "teams/ml-team.yaml").write_text(text)
    data = _diff(values_dir, "--base", "main")
    assert data["old"].startswith("main (") and data["old"].endswith(", committed output)")
    objs = _objects(data)
    # staging overrides the quota (4): only prod changes.
    assert sorted(objs) == [("prod", "team-ml-team", "ResourceQuota/accelerators")]
    quota = objs[("prod", "team-ml-team", "ResourceQuota/accelerators")]
    assert quota["status"] == "changed"
    assert quota["changes"] == [
        {"path": 'spec.hard["requests.nvidia.com/gpu"]', "op": "replace", "old": "8", "new": "6"},
    ]
    assert [r["code"] for r in quota["risks"]] == ["quota-down"]
    assert data["summary"] == {
        "units": 12,
        "changed_units": 1,
        "added": 0,
        "removed": 0,
        "changed": 1,
        "risky": 1,
    }
    code, out, _ = cli_streams("diff", "--values", str(values_dir), "--base", "main")
    assert code == 0
    assert (
        "prod/team-ml-team: 0 added, 0 removed, 1 changed, 1 risky\n"
        "  ~ ResourceQuota ml-team/accelerators (v1)\n"
        '  !     quota-down: spec.hard["requests.nvidia.com/gpu"]: 8 -> 6\n'
    ) in out
    assert (
        '  -     spec.hard["requests.nvidia.com/gpu"]: "8"\n  +     spec.hard["requests.nvidia.com/gpu"]: "6"\n'
        in out
    )
    assert cli_streams("diff", "--values", str(values_dir), "--base", "main", "--exit-code")[0] == 1


GATEWAY = """\
fleet:
  platform:
    gatewayAPI: {{provided: site}}
teams:
  inference:
    services:
      inference-service:
        phase: {phase}
        routing: gateway
        gateway:
          parentRefs: [{{name: public, namespace: gateways}}]
"""


def test_diff_base_weight_change(tmp_path: Path) -> None:
    values_dir = two_teams(tmp_path)
    prod = values_dir / "environments/prod.yaml"
    prod.write_text(GATEWAY.format(phase="shift-10"))
    _git_fleet(values_dir)
    prod.write_text(GATEWAY.format(phase="shift-50"))
    data = _diff(values_dir, "--base", "main", "--env", "prod")
    objs = _objects(data)
    assert sorted(objs) == [
        ("prod", "team-inference", "HTTPRoute/inference-service"),
        ("prod", "team-inference", "Service/inference-service"),
    ]
    route = objs[("prod", "team-inference", "HTTPRoute/inference-service")]
    assert [(c["path"], c["old"], c["new"]) for c in route["changes"]] == [
        ("spec.rules[0].backendRefs[name=inference-service-ascend].weight", 10, 50),
        ("spec.rules[0].backendRefs[name=inference-service-nvidia].weight", 90, 50),
    ]
    # The move is said once, in words, on the service: not once per weight.
    service = objs[("prod", "team-inference", "Service/inference-service")]
    assert [(c["path"], c["old"], c["new"]) for c in service["changes"]] == [
        ('metadata.annotations["accel-gitops.io/phase"]', "shift-10", "shift-50")
    ]
    assert route["risks"] == []
    assert service["risks"] == [
        {
            "code": "traffic-moves",
            "message": "ascend track: 10% -> 50% of traffic; nvidia track: 90% -> 50% of traffic",
        }
    ]
    # The same change, seen from staging: nothing there.
    assert _diff(values_dir, "--base", "main", "--env", "staging")["objects"] == []


def test_diff_base_deleted_team(tmp_path: Path) -> None:
    values_dir = two_teams(tmp_path)
    _git_fleet(values_dir)
    (values_dir / "teams/inference.yaml").unlink()
    (values_dir / "environments/prod.yaml").write_text(TWO_TEAMS_PROD.split("teams:")[0])
    (values_dir / "environments/staging.yaml").write_text(
        TWO_TEAMS_STAGING.split("  inference:")[0]
    )
    data = _diff(values_dir, "--base", "main", "--env", "prod")
    objs = _objects(data)
    removed = {k for k, o in objs.items() if o["status"] == "removed"}
    assert ("prod", "team-inference", "Namespace/inference") in removed
    assert ("prod", "argocd", "Application/f-prod-team-inference") in removed
    assert objs[("prod", "argocd", "Application/f-prod-team-inference")]["risks"] == [
        {"code": "object-deleted", "message": "deleted, and with it everything it deployed"}
    ]
    # Team Namespaces carry Prune=false: Argo CD keeps them, and the diff says so.
    assert objs[("prod", "team-inference", "Namespace/inference")]["risks"] == [
        {
            "code": "namespace-deleted",
            "message": "no longer rendered; Argo CD keeps it (Prune=false): delete it by hand",
        }
    ]
    deployment = objs[("prod", "team-inference", "Deployment/inference-service-nvidia")]
    assert deployment["object"]["spec"]["replicas"] == 2
    assert {r["code"] for r in deployment["risks"]} == {"object-deleted"}
    assert all(o["status"] == "removed" for k, o in objs.items() if k[1] == "team-inference")
    assert data["summary"]["removed"] == len(removed)
    md = cli_streams("diff", "--values", str(values_dir), "--base", "main", "--output", "markdown")[
        1
    ]
    assert "| `namespace-deleted` | `prod/team-inference` | Namespace inference |" in md


def test_diff_base_without_committed_output_renders_the_ref(tmp_path: Path) -> None:
    """A fleet repository that publishes elsewhere commits only values: the ref is rendered."""
    values_dir = two_teams(tmp_path)
    _git_fleet(values_dir, commit_output=False)
    text = (values_dir / "teams/ml-team.yaml").read_text().replace("nvidia: 8", "nvidia: 6")
    (values_dir / "teams/ml-team.yaml").write_text(text)
    data = _diff(values_dir, "--base", "main")
    assert data["old"].endswith(", values rendered by this generator)")
    assert sorted(_objects(data)) == [("prod", "team-ml-team", "ResourceQuota/accelerators")]


def test_diff_base_devices_down_zero_replicas_and_plugin_image(tmp_path: Path) -> None:
    values_dir = two_teams(tmp_path)
    _git_fleet(values_dir)
    (values_dir / "environments/prod.yaml").write_text(
        "vendors:\n  nvidia:\n    devicePlugin: {version: v0.17.0}\n"
        "teams:\n  inference:\n    services:\n      inference-service:\n"
        "        phase: dual-run\n        replicas: {ascend: 0}\n"
        "  ml-team:\n    jobs:\n      cuda-training-job: {devices: 2}\n",
    )
    objs = _objects(_diff(values_dir, "--base", "main", "--env", "prod"))
    risks = {k: {r["code"]: r["message"] for r in o["risks"]} for k, o in objs.items()}
    assert risks[("prod", "team-inference", "Deployment/inference-service-ascend")] == {
        "zero-replicas": "Deployment inference/inference-service-ascend goes from 2 to 0 replicas",
        "devices-down": "huawei.com/Ascend910: 2 -> 0 in total",
    }
    assert risks[("prod", "team-ml-team", "Job/cuda-training-job")] == {
        "devices-down": "nvidia.com/gpu: 4 -> 2 in total"
    }
    plugin = risks[("prod", "device-plugins", "DaemonSet/nvidia-device-plugin")]
    assert plugin["plugin-image"].startswith("spec.template.spec.containers[name=")
    assert plugin["plugin-image"].endswith(":v0.17.0")


def test_diff_between_environments(tmp_path: Path) -> None:
    values_dir = two_teams(tmp_path)
    data = _diff(values_dir, "staging", "prod")
    objs = _objects(data)
    quota = objs[("staging -> prod", "team-ml-team", "ResourceQuota/accelerators")]
    assert quota["changes"][0] == {
        "path": 'spec.hard["requests.nvidia.com/gpu"]',
        "op": "replace",
        "old": "4",
        "new": "8",
    }
    # Applications named after their environment are one object with a new name, not two.
    app = objs[("staging -> prod", "argocd", "Application/f-prod-team-ml-team")]
    assert app["status"] == "changed"
    assert {
        "path": "spec.source.targetRevision",
        "op": "replace",
        "old": "main",
        "new": "prod",
    } in app["changes"]
    # Two environments at different phases: the phase, and the traffic it moves, in words.
    service = objs[("staging -> prod", "team-inference", "Service/inference-service")]
    assert service["changes"][0] == {
        "path": 'metadata.annotations["accel-gitops.io/phase"]',
        "op": "replace",
        "old": "shift-50",
        "new": "dual-run",
    }
    assert service["risks"] == [
        {
            "code": "traffic-moves",
            "message": "ascend track: 50% -> 0% of traffic; nvidia track: 50% -> 100% of traffic",
        }
    ]


def test_a_namespace_argo_cd_prunes_is_deleted_with_everything_in_it() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "plugins"}}
    [d] = compare_objects("prod", "device-plugins", {("v1", "Namespace", "", "plugins"): ns}, {})
    assert (d.status, d.risks) == (
        "removed",
        [Risk("namespace-deleted", "deleted, with everything in it")],
    )


def test_diff_usage_errors(tmp_path: Path) -> None:
    values_dir = two_teams(tmp_path)
    assert cli_streams("diff", "--values", str(values_dir))[0] == 2
    assert cli_streams("diff", "--values", str(values_dir), "staging", "qa")[0] == 2
    code, _, err = cli_streams("diff", "--values", str(values_dir), "--base", "main")
    assert code == 2 and "is not inside a git repository" in err
    _git_fleet(values_dir)
    code, _, err = cli_streams("diff", "--values", str(values_dir), "--base", "no-such-branch")
    assert code == 2 and "'no-such-branch' names no commit" in err
    # The temporary worktree is gone after each run.
    assert repos.git(values_dir.parent, "worktree", "list").count("\n") == 0


# Team llm runs one workload of each kind that asks for devices: a JobSet (task gpu: 2 pods x 4
# GPUs), a TrainJob (2 nodes x 4 GPUs), a Job claiming 8 H100s by DRA, and a LeaderWorkerSet
# track (2 groups of 2 pods x 2 NPUs); prod halves each, and drops Cambricon's taint.
DEVICES_FLEET = FLEET + (
    "capacity: {allowOvercommit: true}\n"
    "scheduling: {backend: kueue}\n"
    "platform:\n"
    "  kueue: {provided: fleet}\n"
    "  jobset: {provided: fleet}\n"
    "  trainer: {provided: fleet}\n"
    "  lws: {provided: fleet}\n"
)
DEVICES_TEAM = """\
quota: {nvidia: 8, cambricon: 8, ascend: 8, nvidia-dra: 8}
jobs:
  pretrain:
    kind: jobset
    images: {nvidia: r/train:cuda, cambricon: r/train:mlu}
    tasks:
      gpu: {vendor: nvidia, devices: 4, replicas: 2}
      mlu: {vendor: cambricon, devices: 4, replicas: 2}
  finetune:
    kind: trainjob
    vendor: nvidia
    devices: 4
    numNodes: 2
    images: {nvidia: r/train:cuda}
  claim:
    vendor: nvidia-dra
    devices: 8
    images: {nvidia-dra: r/train:cuda}
services:
  llm:
    images: {ascend: r/serve:cann}
    vendorMounts: false
    tracks:
      ascend: {devicesPerReplica: 2, replicas: 2, groupSize: 2}
"""
DEVICES_PROD = """\
teams:
  llm:
    jobs:
      pretrain: {tasks: {gpu: {replicas: 1}}}
      finetune: {numNodes: 1}
      claim: {devices: 4}
    services:
      llm: {replicas: {ascend: 1}}
vendors:
  cambricon:
    taints: []
"""


def test_devices_down_of_every_workload_kind_and_a_taint_moved_across_nodes(
    tmp_path: Path,
) -> None:
    values_dir = tree(
        tmp_path,
        {
            "fleet.yaml": DEVICES_FLEET,
            "vendors/nvidia.yaml": NVIDIA,
            "vendors/nvidia-dra.yaml": DRA_NVIDIA,
            "vendors/ascend.yaml": ASCEND_910B,
            "vendors/cambricon.yaml": CAMBRICON_MLU370,
            "teams/ml.yaml": None,
            "teams/llm.yaml": DEVICES_TEAM,
            "environments/prod.yaml": DEVICES_PROD,
        },
    )
    nodes = (
        "nodes labelled feature.node.kubernetes.io/accelerator=cambricon-mlu, "
        "feature.node.kubernetes.io/gpu-brand=cambricon, feature.node.kubernetes.io/mlu-model=MLU370"
    )
    taint = "feature.node.kubernetes.io/accelerator=cambricon-mlu:NoSchedule"
    risks = {
        (o["unit"], f"{o['kind']}/{o['name']}", r["code"], r["message"])
        for o in _diff(values_dir, "staging", "prod")["objects"]
        for r in o["risks"]
        if r["code"] in ("devices-down", "taint-moves")
    }
    assert risks == {
        ("team-llm", "JobSet/pretrain", "devices-down", "nvidia.com/gpu: 8 -> 4 in total"),
        ("team-llm", "TrainJob/finetune", "devices-down", "nvidia.com/gpu: 8 -> 4 in total"),
        ("team-llm", "Job/claim", "devices-down", "DeviceClass nvidia-dra: 8 -> 4 in total"),
        (
            "team-llm",
            "LeaderWorkerSet/llm-ascend",
            "devices-down",
            "huawei.com/Ascend910: 8 -> 4 in total",
        ),
        (
            "node-config",
            "NodeFeatureRule/accel-cambricon",
            "taint-moves",
            f"rule cambricon-mlu370: taint {taint} taken off {nodes}: pods that do not tolerate "
            "it may land there",
        ),
    }
    back = [
        (o["unit"], f"{o['kind']}/{o['name']}", r["message"])
        for o in _diff(values_dir, "prod", "staging")["objects"]
        for r in o["risks"]
        if r["code"] in ("devices-down", "taint-moves")
    ]
    assert back == [
        (
            "node-config",
            "NodeFeatureRule/accel-cambricon",
            f"rule cambricon-mlu370: taint {taint} put on {nodes}: pods there without its "
            "toleration no longer schedule (NoExecute: are evicted)",
        )
    ]


def test_every_risk_is_documented() -> None:
    doc = (ROOT / "docs/gitops.md").read_text()
    for code in RISKS:
        assert f"| `{code}` |" in doc, code


# ---- field changes, paths and risks on hand-written objects ------------------------------------

SOURCE = "accel-gitops.io/source"
SYNC = "argocd.argoproj.io/sync-options"
GPU_LIMIT = ("spec", "template", "spec", "containers", ("name", "serve"), "resources", "limits")


def _key(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = obj["metadata"]
    return (obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])


def _compare(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[ObjectDiff]:
    """compare_objects on one object, before and after (None: not there)."""
    key = _key(old or new or {})
    return compare_objects("prod", "team-ml", {key: old} if old else {}, {key: new} if new else {})


def _deployment(
    replicas: int | None = 2,
    gpus: Any = 1,
    *,
    kind: str = "Deployment",
    image: str = "r/serve:1",
    app: str = "serve",
    history: int = 10,
) -> dict[str, Any]:
    """A workload (Deployment by default) in namespace ml, one container `serve` with a GPU
    limit (gpus None: no GPU limit)."""
    limits: dict[str, Any] = {"cpu": "4", "memory": "16Gi"}
    if gpus is not None:
        limits["nvidia.com/gpu"] = gpus
    spec: dict[str, Any] = {
        "revisionHistoryLimit": history,
        "selector": {"matchLabels": {"app": app}},
        "template": {
            "metadata": {"labels": {"app": app}},
            "spec": {
                "containers": [
                    {
                        "name": "serve",
                        "image": image,
                        "ports": [{"name": "http", "containerPort": 8080}],
                        "resources": {"limits": limits, "requests": {"cpu": "4", "memory": "16Gi"}},
                    }
                ]
            },
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": "serve", "namespace": "ml", "labels": {"app": app}},
        "spec": spec,
    }


def test_a_gpu_limit_going_up_is_one_field_change_and_no_risk() -> None:
    [d] = _compare(_deployment(gpus=1), _deployment(gpus=2))
    assert (d.env, d.unit, d.key, d.status, d.obj) == (
        "prod",
        "team-ml",
        ("apps/v1", "Deployment", "ml", "serve"),
        "changed",
        None,
    )
    assert d.title == "Deployment ml/serve"
    assert d.changes == [FieldChange((*GPU_LIMIT, "nvidia.com/gpu"), 1, 2)]
    assert [(c.where, c.op) for c in d.changes] == [
        ('spec.template.spec.containers[name=serve].resources.limits["nvidia.com/gpu"]', "replace")
    ]
    assert d.risks == []


def test_a_gpu_limit_going_down_flags_the_devices_in_total() -> None:
    [d] = _compare(_deployment(replicas=2, gpus=2), _deployment(replicas=2, gpus="1"))
    assert d.changes == [FieldChange((*GPU_LIMIT, "nvidia.com/gpu"), 2, "1")]
    assert d.risks == [Risk("devices-down", "nvidia.com/gpu: 4 -> 2 in total")]


def test_a_gpu_limit_removed_counts_as_zero_devices() -> None:
    [d] = _compare(_deployment(replicas=1, gpus=1), _deployment(replicas=1, gpus=None))
    assert d.changes == [FieldChange((*GPU_LIMIT, "nvidia.com/gpu"), 1, ABSENT)]
    assert d.changes[0].op == "remove"
    assert d.risks == [Risk("devices-down", "nvidia.com/gpu: 1 -> 0 in total")]


def test_a_deployment_going_to_zero_replicas() -> None:
    [d] = _compare(_deployment(replicas=2, gpus=1), _deployment(replicas=0, gpus=1))
    assert d.changes == [FieldChange(("spec", "replicas"), 2, 0)]
    assert d.risks == [
        Risk("zero-replicas", "Deployment ml/serve goes from 2 to 0 replicas"),
        Risk("devices-down", "nvidia.com/gpu: 2 -> 0 in total"),
    ]


def test_a_deployment_without_replicas_runs_one_pod_and_going_to_zero_says_so() -> None:
    [d] = _compare(_deployment(replicas=None, gpus=1), _deployment(replicas=0, gpus=1))
    assert d.risks == [
        Risk("zero-replicas", "Deployment ml/serve goes from 1 to 0 replicas"),
        Risk("devices-down", "nvidia.com/gpu: 1 -> 0 in total"),
    ]


def test_a_statefulset_going_to_zero_replicas_flags_only_its_devices() -> None:
    old = _deployment(replicas=2, gpus=1, kind="StatefulSet")
    [d] = _compare(old, _deployment(replicas=0, gpus=1, kind="StatefulSet"))
    assert d.risks == [Risk("devices-down", "nvidia.com/gpu: 2 -> 0 in total")]


def test_quiet_deployment_changes_flag_nothing() -> None:
    """A new image, a new selector, a history limit of 0 and the same devices in total (2 x 1 ->
    1 x 2): nothing a reviewer must look at twice."""
    old = _deployment(replicas=2, gpus=1, image="r/serve:1", app="serve", history=10)
    new = _deployment(replicas=1, gpus=2, image="r/serve:2", app="serve-v2", history=0)
    [d] = _compare(old, new)
    assert [c.where for c in d.changes] == [
        "metadata.labels.app",
        "spec.replicas",
        "spec.revisionHistoryLimit",
        "spec.selector.matchLabels.app",
        "spec.template.metadata.labels.app",
        "spec.template.spec.containers[name=serve].image",
        'spec.template.spec.containers[name=serve].resources.limits["nvidia.com/gpu"]',
    ]
    assert d.changes[2] == FieldChange(("spec", "revisionHistoryLimit"), 10, 0)
    assert d.risks == []


def test_a_service_selector_change_moves_traffic() -> None:
    def service(selector: dict[str, str], tier: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "serve", "namespace": "ml", "labels": {"tier": tier}},
            "spec": {"selector": selector, "ports": [{"name": "http", "port": 80}]},
        }

    old = service({"app": "serve", "track": "a", "zone": "z1"}, tier="web")
    new = service({"app": "serve", "track": "b", "tier": "x"}, tier="api")
    [d] = _compare(old, new)
    assert d.changes == [
        FieldChange(("metadata", "labels", "tier"), "web", "api"),
        FieldChange(("spec", "selector", "tier"), ABSENT, "x"),
        FieldChange(("spec", "selector", "track"), "a", "b"),
        FieldChange(("spec", "selector", "zone"), "z1", ABSENT),
    ]
    assert [c.op for c in d.changes] == ["replace", "add", "replace", "remove"]
    assert d.risks == [
        Risk("traffic-moves", "spec.selector.tier: (none) -> x"),
        Risk("traffic-moves", "spec.selector.track: a -> b"),
        Risk("traffic-moves", "spec.selector.zone: z1 -> (none)"),
    ]
    # A label alone moves nothing.
    [d] = _compare(old, service(old["spec"]["selector"], tier="api"))
    assert (len(d.changes), d.risks) == (1, [])


def _route(weights: dict[str, int], team: str = "ml", kind: str = "HTTPRoute") -> dict[str, Any]:
    refs = [{"name": n, "port": 80, "weight": w} for n, w in weights.items()]
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": "serve", "namespace": "ml", "labels": {"team": team}},
        "spec": {
            "parentRefs": [{"name": "public", "namespace": "gateways"}],
            "rules": [{"backendRefs": refs}],
        },
    }


def test_a_route_weight_change_moves_traffic() -> None:
    old = _route({"serve-a": 90, "serve-b": 10})
    new = _route({"serve-a": 50, "serve-b": 40, "serve-c": 10}, team="ops")
    [d] = _compare(old, new)
    refs = ("spec", "rules", 0, "backendRefs")
    assert d.changes == [
        FieldChange(("metadata", "labels", "team"), "ml", "ops"),
        FieldChange((*refs, ("name", "serve-a"), "weight"), 90, 50),
        FieldChange((*refs, ("name", "serve-b"), "weight"), 10, 40),
        FieldChange(
            (*refs, ("name", "serve-c")), ABSENT, {"name": "serve-c", "port": 80, "weight": 10}
        ),
    ]
    assert d.risks == [
        Risk("traffic-moves", "spec.rules[0].backendRefs[name=serve-a].weight: 90 -> 50"),
        Risk("traffic-moves", "spec.rules[0].backendRefs[name=serve-b].weight: 10 -> 40"),
        Risk(
            "traffic-moves",
            "spec.rules[0].backendRefs[name=serve-c]: (none) -> "
            "{'name': 'serve-c', 'port': 80, 'weight': 10}",
        ),
    ]
    [d] = _compare(_route({"a": 1}, kind="VirtualService"), _route({"a": 2}, kind="VirtualService"))
    assert d.risks == [Risk("traffic-moves", "spec.rules[0].backendRefs[name=a].weight: 1 -> 2")]


def test_a_route_added_or_deleted_moves_traffic() -> None:
    route = _route({"serve-a": 100})
    [added] = _compare(None, route)
    assert (added.env, added.unit, added.key, added.status) == (
        "prod",
        "team-ml",
        ("gateway.networking.k8s.io/v1", "HTTPRoute", "ml", "serve"),
        "added",
    )
    assert (added.obj, added.changes) == (route, [])
    assert added.risks == [Risk("traffic-moves", "a new route")]
    [removed] = _compare(route, None)
    assert (removed.status, removed.obj, removed.changes) == ("removed", route, [])
    assert removed.risks == [
        Risk("object-deleted", "deleted"),
        Risk("traffic-moves", "the route is deleted"),
    ]


def test_an_added_object_other_than_a_route_is_no_risk() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}
    [d] = _compare(None, ns)
    assert (d.status, d.obj, d.risks) == ("added", ns, [])


def test_deleted_objects_and_what_argo_cd_does_with_them() -> None:
    keep = {SYNC: "ServerSideApply=true,Prune=false"}
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml", "annotations": keep}}
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "ml", "annotations": keep},
        "spec": {"resources": {"requests": {"storage": "1Ti"}}},
    }
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "ml", "annotations": {SYNC: "Replace=true"}},
        "data": {"k": "v"},
    }
    kept = "no longer rendered; Argo CD keeps it (Prune=false): delete it by hand"
    assert _compare(ns, None)[0].risks == [Risk("namespace-deleted", kept)]
    assert _compare(pvc, None)[0].risks == [Risk("object-deleted", kept)]
    assert _compare(cm, None)[0].risks == [Risk("object-deleted", "deleted")]
    # An object without metadata (or annotations) is deleted all the same.
    bare = {"apiVersion": "v1", "kind": "ConfigMap", "data": {}}
    key = ("v1", "ConfigMap", "ml", "bare")
    [d] = compare_objects("prod", "team-ml", {key: bare}, {})
    assert (d.status, d.risks) == ("removed", [Risk("object-deleted", "deleted")])


def _quota(hard: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "accelerators", "namespace": "ml"},
        "spec": {"hard": hard},
    }


def test_a_quota_going_down_is_flagged_and_nothing_else_in_it() -> None:
    old = _quota(
        {
            "limits.memory": "1Gi",
            "pods": "10",
            "requests.cpu": "4",
            "requests.nvidia.com/gpu": "8",
        }
    )
    new = _quota(
        {
            "limits.memory": "1024Mi",  # the same quantity, written otherwise
            "requests.amd.com/gpu": "4",  # a new resource
            "requests.cpu": "8",  # up
            "requests.nvidia.com/gpu": "6",  # down
        }
    )  # and no pods limit any more
    [d] = _compare(old, new)
    assert [(c.where, c.op) for c in d.changes] == [
        ('spec.hard["limits.memory"]', "replace"),
        ("spec.hard.pods", "remove"),
        ('spec.hard["requests.amd.com/gpu"]', "add"),
        ('spec.hard["requests.cpu"]', "replace"),
        ('spec.hard["requests.nvidia.com/gpu"]', "replace"),
    ]
    assert d.risks == [Risk("quota-down", 'spec.hard["requests.nvidia.com/gpu"]: 8 -> 6')]


def test_kueue_and_volcano_quotas_going_down() -> None:
    def cluster_queue(gpus: int) -> dict[str, Any]:
        resources = [{"name": "nvidia.com/gpu", "nominalQuota": gpus}]
        return {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ClusterQueue",
            "metadata": {"name": "ml"},
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": ["nvidia.com/gpu"],
                        "flavors": [{"name": "a100", "resources": resources}],
                    }
                ]
            },
        }

    [d] = _compare(cluster_queue(8), cluster_queue(4))
    assert d.title == "ClusterQueue ml"
    assert d.risks == [
        Risk(
            "quota-down",
            "spec.resourceGroups[0].flavors[name=a100].resources[name=nvidia.com/gpu]"
            ".nominalQuota: 8 -> 4",
        )
    ]
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "ml"},
        "spec": {"capability": {"nvidia.com/gpu": 8}},
    }
    less = {**queue, "spec": {"capability": {"nvidia.com/gpu": "7500m"}}}
    [d] = _compare(queue, less)
    assert d.risks == [Risk("quota-down", 'spec.capability["nvidia.com/gpu"]: 8 -> 7500m')]


def _daemonset(image: str, tolerate: str = "nvidia.com/gpu") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "nvidia-device-plugin", "namespace": "accelerator-plugins"},
        "spec": {
            "selector": {"matchLabels": {"app": "plugin"}},
            "template": {
                "metadata": {"labels": {"app": "plugin"}},
                "spec": {
                    "tolerations": [{"key": tolerate, "operator": "Exists"}],
                    "containers": [{"name": "plugin", "image": image}],
                },
            },
        },
    }


def test_a_device_plugin_image_change_restarts_it_on_every_node() -> None:
    [d] = _compare(_daemonset("r/plugin:v1"), _daemonset("r/plugin:v2"))
    assert d.risks == [
        Risk(
            "plugin-image",
            "spec.template.spec.containers[name=plugin].image: r/plugin:v1 -> r/plugin:v2",
        )
    ]
    [d] = _compare(_daemonset("r/plugin:v1"), _daemonset("r/plugin:v1", tolerate="amd.com/gpu"))
    assert d.changes == [
        FieldChange(
            ("spec", "template", "spec", "tolerations", 0, "key"), "nvidia.com/gpu", "amd.com/gpu"
        )
    ]
    assert d.risks == []


def test_a_device_plugin_container_renamed_with_a_new_image_is_flagged() -> None:
    old = _daemonset("r/plugin:v1")
    new = _daemonset("r/plugin:v2")
    new["spec"]["template"]["spec"]["containers"][0]["name"] = "device-plugin"
    [d] = _compare(old, new)
    assert d.risks == [
        Risk(
            "plugin-image",
            "spec.template.spec.containers[name=device-plugin]: (none) -> r/plugin:v2",
        ),
        Risk("plugin-image", "spec.template.spec.containers[name=plugin]: r/plugin:v1 -> (none)"),
    ]


def test_a_container_entry_is_a_named_item_of_containers_or_init_containers() -> None:
    pod = ("spec", "template", "spec")
    assert _container_entry((*pod, "containers", ("name", "plugin")))
    assert _container_entry((*pod, "initContainers", ("name", "init")))
    assert _container_entry(("containers", ("name", "plugin")))
    assert not _container_entry((*pod, "containers", 0))
    assert not _container_entry((*pod, "volumes", ("name", "plugin")))
    assert not _container_entry((*pod, "initcontainers", ("name", "init")))
    assert not _container_entry((("name", "plugin"),))
    assert not _container_entry(("containers",))


def test_the_provenance_annotation_is_not_a_change() -> None:
    def cm(source: str, tier: str, notes: dict[str, str], value: str) -> dict[str, Any]:
        meta = {"name": "c", "namespace": "ml", "labels": {"tier": tier}}
        meta["annotations"] = {SOURCE: source, **notes}
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": value}}

    # Only the source differs: no diff at all.
    assert _compare(cm("values/a.yaml", "a", {}, "1"), cm("values/b.yaml", "a", {}, "1")) == []
    [d] = _compare(
        cm("values/a.yaml", "a", {"note": "x"}, "1"), cm("values/b.yaml", "b", {"note": "y"}, "1")
    )
    assert d.changes == [
        FieldChange(("metadata", "annotations", "note"), "x", "y"),
        FieldChange(("metadata", "labels", "tier"), "a", "b"),
    ]
    [d] = _compare(cm("values/a.yaml", "a", {"note": "x"}, "1"), cm("values/b.yaml", "a", {}, "2"))
    assert d.changes == [
        FieldChange(("data", "k"), "1", "2"),
        FieldChange(("metadata", "annotations"), {"note": "x"}, ABSENT),
    ]
    # Objects without metadata compare too.
    key = ("v1", "List", "", "l")
    old, new = (
        {"apiVersion": "v1", "kind": "List", "items": [1]},
        {"apiVersion": "v1", "kind": "List", "items": [2]},
    )
    [d] = compare_objects("prod", "u", {key: old}, {key: new})
    assert d.changes == [FieldChange(("items", 0), 1, 2)]


def test_compare_objects_in_key_order() -> None:
    def cm(name: str, value: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name},
            "data": {"k": value},
        }

    old = {("v1", "ConfigMap", "", "c"): cm("c", "1"), ("v1", "ConfigMap", "", "a"): cm("a", "1")}
    new = {("v1", "ConfigMap", "", "b"): cm("b", "1"), ("v1", "ConfigMap", "", "c"): cm("c", "2")}
    got = compare_objects("prod", "u", old, new)
    assert [(d.title, d.status) for d in got] == [
        ("ConfigMap a", "removed"),
        ("ConfigMap b", "added"),
        ("ConfigMap c", "changed"),
    ]


def test_devices_of_each_workload_kind() -> None:
    def pod(*limits: dict[str, Any]) -> dict[str, Any]:
        return {
            "containers": [
                {"name": f"c{i}", "image": "r/x:1", "resources": {"limits": lim}}
                for i, lim in enumerate(limits)
            ]
        }

    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ml"},
        "spec": {  # no replicas: one
            "template": {
                "spec": pod(
                    {"nvidia.com/gpu": "1", "cpu": "500m", "memory": "1Gi"},
                    {"nvidia.com/gpu": 2, "example.com/fpga": "lots"},
                )
            }
        },
    }
    assert devices(deployment) == {"nvidia.com/gpu": 3.0}
    sts = {
        "kind": "StatefulSet",
        "spec": {"replicas": 2, "template": {"spec": pod({"amd.com/gpu": 1})}},
    }
    assert devices(sts) == {"amd.com/gpu": 2.0}
    rs = {
        "kind": "ReplicaSet",
        "spec": {"replicas": 3, "template": {"spec": pod({"amd.com/gpu": 2})}},
    }
    assert devices(rs) == {"amd.com/gpu": 6.0}
    assert devices({"kind": "Deployment", "spec": {"replicas": 2}}) == {}
    volcano = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {
            "tasks": [
                {"name": "master", "replicas": 2, "template": {"spec": pod({"nvidia.com/gpu": 2})}},
                {
                    "name": "worker",
                    "template": {"spec": pod({"nvidia.com/gpu": 1, "huawei.com/Ascend910": 4})},
                },
                {"name": "ps", "replicas": 4, "template": {}},
                {"name": "idle", "replicas": 2},
            ]
        },
    }
    assert devices(volcano) == {"nvidia.com/gpu": 5.0, "huawei.com/Ascend910": 4.0}
    assert devices({"kind": "Job", "spec": {"tasks": None}}) == {}
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "spec": {"parallelism": 4, "template": {"spec": pod({"nvidia.com/gpu": 1})}},
    }
    assert devices(job) == {"nvidia.com/gpu": 4.0}
    one = {"kind": "Job", "spec": {"template": {"spec": pod({"nvidia.com/gpu": 1})}}}
    assert devices(one) == {"nvidia.com/gpu": 1.0}
    assert devices({"kind": "Job", "spec": {"parallelism": 2}}) == {}
    ds = {"kind": "DaemonSet", "spec": {"template": {"spec": pod({"nvidia.com/gpu": 1})}}}
    assert devices(ds) == {}


def _pod(gpus: int, *claims: dict[str, str]) -> dict[str, Any]:
    limits = {"nvidia.com/gpu": gpus} if gpus else {}
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"limits": limits}}]}
    if claims:
        spec["resourceClaims"] = list(claims)
    return {"spec": spec}


def test_devices_of_distributed_kinds_count_every_pod() -> None:
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "spec": {
            "replicatedJobs": [
                {
                    "name": "a",
                    "replicas": 3,
                    "template": {"spec": {"parallelism": 2, "template": _pod(2)}},
                },
                {"name": "b", "template": {"spec": {"template": _pod(1)}}},
            ]
        },
    }
    assert devices(jobset) == {"nvidia.com/gpu": 13.0}  # 3 x 2 x 2 + 1 x 1 x 1
    lws = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "spec": {
            "replicas": 2,
            "leaderWorkerTemplate": {
                "size": 4,
                "leaderTemplate": _pod(1),
                "workerTemplate": _pod(2),
            },
        },
    }
    assert devices(lws) == {"nvidia.com/gpu": 14.0}  # 2 x (1 + 3 x 2)
    no_leader = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "spec": {"leaderWorkerTemplate": {"size": 3, "workerTemplate": _pod(2)}},
    }
    assert devices(no_leader) == {"nvidia.com/gpu": 6.0}  # 1 group x 3 pods x 2
    step = {"containers": [{"name": "node"}]}
    trainjob: dict[str, Any] = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "spec": {
            "trainer": {"numNodes": 3, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 4}}},
            "runtimePatches": [
                {
                    "trainingRuntimeSpec": {
                        "template": {
                            "spec": {
                                "replicatedJobs": [
                                    {
                                        "name": "node",
                                        "template": {"spec": {"template": {"spec": step}}},
                                    },
                                    {"name": "init", "template": {"spec": {"template": _pod(1)}}},
                                ]
                            }
                        }
                    }
                }
            ],
        },
    }
    # The trainer's pods are numNodes; how many the runtime's other steps run is not known.
    assert devices(trainjob) == {"nvidia.com/gpu": 12.0}
    del trainjob["spec"]["trainer"]["numNodes"]
    assert devices(trainjob) == {}
    cron = {
        "kind": "CronJob",
        "spec": {"jobTemplate": {"spec": {"parallelism": 2, "template": _pod(1)}}},
    }
    assert devices(cron) == {"nvidia.com/gpu": 2.0}
    assert devices({"kind": "Pod", **_pod(3)}) == {"nvidia.com/gpu": 3.0}


def test_devices_claimed_by_dra_templates_per_pod_and_shared_claims_once() -> None:
    def claim(kind: str, name: str, *requests: dict[str, Any]) -> dict[str, Any]:
        devices_ = {"devices": {"requests": list(requests)}}
        spec = {"spec": devices_} if kind == "ResourceClaimTemplate" else devices_
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": name, "namespace": "ml"},
            "spec": spec,
        }

    x4 = claim(
        "ResourceClaimTemplate",
        "x4",
        {
            "name": "d",
            "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 4},
        },
        {"name": "e", "exactly": {"deviceClassName": "fpga"}},  # count unset: one
        {"name": "f", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}},
        {"name": "g", "firstAvailable": [{"name": "s", "deviceClassName": "gpu", "count": 9}]},
    )
    shared = claim(
        "ResourceClaim", "shared", {"name": "d", "exactly": {"deviceClassName": "gpu", "count": 2}}
    )
    job: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ml"},
        "spec": {
            "parallelism": 3,
            "template": _pod(
                1,
                {"name": "a", "resourceClaimTemplateName": "x4"},
                {"name": "b", "resourceClaimName": "shared"},
                {"name": "c", "resourceClaimTemplateName": "elsewhere"},
            ),
        },
    }
    from generator.delivery.diff import claims_of

    known = claims_of([x4, shared, job])
    assert known == {
        ("ml", "ResourceClaimTemplate", "x4"): {"DeviceClass gpu": 4.0, "DeviceClass fpga": 1.0},
        ("ml", "ResourceClaim", "shared"): {"DeviceClass gpu": 2.0},
    }
    # 3 pods x (1 GPU limit, 4 + 1 claimed each), and the shared claim's 2 once.
    assert devices(job, known) == {
        "nvidia.com/gpu": 3.0,
        "DeviceClass gpu": 14.0,
        "DeviceClass fpga": 3.0,
    }
    assert devices(job) == {"nvidia.com/gpu": 3.0}
    # A claim template asking for fewer devices in place is flagged on itself, per claim.
    fewer = copy.deepcopy(x4)
    fewer["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    [d] = _compare(x4, fewer)
    assert d.risks == [Risk("devices-down", "DeviceClass gpu: 4 -> 2 per claim")]
    # A workload moved to a smaller template: its total, from each side's own templates (the
    # shared claim is on neither side here).
    x2 = claim(
        "ResourceClaimTemplate",
        "x2",
        {"name": "d", "exactly": {"deviceClassName": "gpu", "count": 2}},
    )
    small = copy.deepcopy(job)
    small["spec"]["template"]["spec"]["resourceClaims"] = [
        {"name": "a", "resourceClaimTemplateName": "x2"}
    ]
    old = {_key(o): o for o in (x4, job)}
    new = {_key(o): o for o in (x2, small)}
    found = {d.key[3]: d.risks for d in compare_objects("prod", "team-ml", old, new)}
    assert found["j"] == [
        Risk("devices-down", "DeviceClass fpga: 3 -> 0 in total"),
        Risk("devices-down", "DeviceClass gpu: 12 -> 6 in total"),
    ]


def test_a_node_feature_rule_taint_put_on_or_taken_off_its_nodes() -> None:
    def rule_set(*rules: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
            "kind": "NodeFeatureRule",
            "metadata": {"name": "accel"},
            "spec": {"rules": list(rules)},
        }

    gpu = {"key": "example.com/gpu", "value": "a100", "effect": "NoSchedule"}
    evict = {"key": "example.com/drain", "effect": "NoExecute"}
    a100 = {"name": "a100", "labels": {"example.com/model": "A100"}, "taints": [gpu]}
    bare = {"name": "bare", "taints": [evict]}
    [d] = _compare(rule_set(a100), rule_set({**a100, "taints": [gpu, evict]}, bare))
    put = "pods there without its toleration no longer schedule (NoExecute: are evicted)"
    assert d.risks == [
        Risk(
            "taint-moves",
            f"rule a100: taint example.com/drain:NoExecute put on nodes labelled example.com/model=A100: {put}",
        ),
        Risk(
            "taint-moves",
            f"rule bare: taint example.com/drain:NoExecute put on the nodes it matches: {put}",
        ),
    ]
    [d] = _compare(rule_set(a100), rule_set({**a100, "labels": {"example.com/model": "H100"}}))
    assert d.risks == []  # the same taint, on other nodes by their labels: not a taint change
    [d] = _compare(rule_set(a100), None)
    assert d.risks[0] == Risk(
        "taint-moves",
        "rule a100: taint example.com/gpu=a100:NoSchedule taken off nodes labelled "
        "example.com/model=A100: pods that do not tolerate it may land there",
    )
    [d] = _compare(None, rule_set(a100))
    assert [r.code for r in d.risks] == ["taint-moves"]


def test_quantity() -> None:
    assert quantity("4") == 4.0 and isinstance(quantity("4"), float)
    assert quantity(8) == 8.0 and isinstance(quantity(8), float)
    assert quantity("500m") == 0.5
    assert quantity("2Gi") == 2147483648.0
    assert quantity("lots") is None
    assert quantity(ABSENT) is None
    assert quantity(True) is None


def test_format_path() -> None:
    assert format_path(()) == ""
    assert format_path(("spec",)) == "spec"
    assert format_path(("spec", "template", "_x", "a-b_9")) == "spec.template._x.a-b_9"
    assert (
        format_path(("data", "9lives", "nvidia.com/gpu", "a b"))
        == 'data["9lives"]["nvidia.com/gpu"]["a b"]'
    )
    assert format_path(("spec", "containers", ("name", "a"), "ports", 0, "port")) == (
        "spec.containers[name=a].ports[0].port"
    )
    assert format_path((0, "a")) == "[0].a"
    assert format_path((("name", "x"), "image")) == "[name=x].image"


def test_field_changes_of_lists() -> None:
    a = {"name": "a", "value": "1"}
    b = {"name": "b", "value": "2"}
    c = {"name": "c", "value": "3"}
    # Named entries: one removed, one added, one changed.
    got = field_changes({"env": [a, b]}, {"env": [{"name": "a", "value": "9"}, c]})
    assert got == [
        FieldChange(("env", ("name", "a"), "value"), "1", "9"),
        FieldChange(("env", ("name", "b")), b, ABSENT),
        FieldChange(("env", ("name", "c")), ABSENT, c),
    ]
    assert [g.op for g in got] == ["replace", "remove", "add"]
    # The same entries in another order: the list as a whole.
    assert field_changes({"env": [a, b]}, {"env": [b, a]}) == [
        FieldChange(("env",), [a, b], [b, a])
    ]
    # Lists that are not of named entries, one length: item by item.
    assert field_changes([1, 2, 3], [4, 2, 5]) == [FieldChange((0,), 1, 4), FieldChange((2,), 3, 5)]
    # Not named (a name missing, twice, or not a string; not all maps): item by item.
    for old, new in (
        ([{"name": "a", "v": 1}, {"v": 2}], [{"name": "a", "v": 1}, {"v": 3}]),
        (
            [{"name": "a", "v": 1}, {"name": "a", "v": 2}],
            [{"name": "a", "v": 1}, {"name": "a", "v": 3}],
        ),
        ([{"name": 1, "v": 1}, {"name": 2, "v": 2}], [{"name": 1, "v": 1}, {"name": 2, "v": 3}]),
        ([{"name": "a", "v": 1}, "x", 2], [{"name": "a", "v": 1}, "x", 3]),
    ):
        last = len(old) - 1
        want = (last, "v") if isinstance(old[last], dict) else (last,)
        assert [c.path for c in field_changes(old, new)] == [want], old
    # Scalars of other lengths: the item added or removed, by its value.
    assert field_changes([1], [1, 2]) == [FieldChange((("value", "2"),), ABSENT, 2)]
    assert field_changes(["a", "b"], ["b"]) == [FieldChange((("value", "a"),), "a", ABSENT)]
    # A repeated scalar has no identity: whole.
    assert field_changes([1, 1], [1]) == [FieldChange((), [1, 1], [1])]
    # An empty list has no entries to match: whole.
    assert field_changes({"env": []}, {"env": [a]}) == [FieldChange(("env",), [], [a])]
    assert field_changes({"env": [a]}, {"env": []}) == [FieldChange(("env",), [a], [])]
    # One side not a list (or not a map): whole.
    assert field_changes({"args": ["x"]}, {"args": "x"}) == [FieldChange(("args",), ["x"], "x")]
    assert field_changes({"s": {"a": 1}}, {"s": "a"}) == [FieldChange(("s",), {"a": 1}, "a")]
    assert field_changes({"s": "a"}, {"s": {"a": 1}}) == [FieldChange(("s",), "a", {"a": 1})]
    assert field_changes([a], [a]) == []
    assert field_changes("x", "x") == []


def test_field_changes_of_maps_keep_the_removed_and_added_values() -> None:
    got = field_changes({"a": {"x": 1}, "b": 2, "d": 4}, {"b": 3, "c": [5], "d": 4})
    assert got == [
        FieldChange(("a",), {"x": 1}, ABSENT),
        FieldChange(("b",), 2, 3),
        FieldChange(("c",), ABSENT, [5]),
    ]
    assert [g.op for g in got] == ["remove", "replace", "add"]
    assert repr(ABSENT) == "(absent)"


# ---- unit by unit: renamed objects, rendered trees, committed trees ----------------------------


def test_renamed_keys_an_object_by_its_name_in_the_new_environment() -> None:
    def k(name: str, ns: str = "argocd") -> tuple[str, str, str, str]:
        return ("argoproj.io/v1alpha1", "Application", ns, name)

    old = {k("f-staging-ml"): {"o": 1}, k("shared"): {"o": 2}, k("f-staging-gone"): {"o": 3}}
    new: dict[tuple[str, str, str, str], dict[str, Any]] = {k("f-prod-ml"): {}, k("shared"): {}}
    assert _renamed(old, new, "staging", "prod") == {
        k("f-prod-ml"): {"o": 1},
        k("shared"): {"o": 2},
        k("f-staging-gone"): {"o": 3},  # no twin in the new environment: stays
    }
    # The namespace too.
    assert _renamed({k("a", "t-staging"): {}}, {k("a", "t-prod"): {}}, "staging", "prod") == {
        k("a", "t-prod"): {}
    }
    # An object the new environment has under its old name too stays itself, and so does one
    # whose twin the old environment has as well.
    old = {k("f-staging-x"): {"o": 1}}
    both: dict[tuple[str, str, str, str], dict[str, Any]] = {
        k("f-staging-x"): {},
        k("f-prod-x"): {},
    }
    assert _renamed(old, both, "staging", "prod") == {k("f-staging-x"): {"o": 1}}
    old = {k("f-staging-y"): {"o": 1}, k("f-prod-y"): {"o": 2}}
    assert _renamed(old, {k("f-prod-y"): {}}, "staging", "prod") == old


def _unit(path: str, *objs: dict[str, Any]) -> Unit:
    _, env, name = path.split("/")
    return Unit(env, name, path, tuple(objs), {})


def _cm(name: str, value: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ml"},
        "data": {"k": value},
    }


def test_against_rendered_compares_the_units_of_one_environment() -> None:
    old = Rendered(
        Texts(),
        [
            _unit("overlays/prod/a", _cm("x", "1")),
            _unit("overlays/prod/gone", _cm("y", "1")),
            _unit("overlays/staging/a", _cm("x", "1")),
            _unit("overlays/staging/old", _cm("s", "1")),
        ],
        [],
    )
    new = Rendered(
        Texts(),
        [
            _unit("overlays/prod/a", _cm("x", "2")),
            _unit("overlays/prod/new", _cm("z", "1")),
            _unit("overlays/staging/a", _cm("x", "3")),
            _unit("overlays/staging/new", _cm("t", "1")),
        ],
        [],
    )
    got = _against_rendered(old, new, "prod")
    assert [(d.env, d.unit, d.title, d.status) for d in got] == [
        ("prod", "a", "ConfigMap ml/x", "changed"),
        ("prod", "gone", "ConfigMap ml/y", "removed"),
        ("prod", "new", "ConfigMap ml/z", "added"),
    ]
    assert got[0].changes == [FieldChange(("data", "k"), "1", "2")]
    got = _against_rendered(old, new, None)
    assert [(d.env, d.unit, d.title, d.status) for d in got] == [
        ("prod", "a", "ConfigMap ml/x", "changed"),
        ("prod", "gone", "ConfigMap ml/y", "removed"),
        ("prod", "new", "ConfigMap ml/z", "added"),
        ("staging", "a", "ConfigMap ml/x", "changed"),
        ("staging", "new", "ConfigMap ml/t", "added"),
        ("staging", "old", "ConfigMap ml/s", "removed"),
    ]
    # A ref that predates the fleet: everything is new.
    got = _against_rendered(None, new, "staging")
    assert [(d.unit, d.title, d.status) for d in got] == [
        ("a", "ConfigMap ml/x", "added"),
        ("new", "ConfigMap ml/t", "added"),
    ]


def test_in_env_matches_whole_environment_names() -> None:
    assert _in_env("overlays/prod/argocd", "prod")
    assert not _in_env("overlays/prod-eu/argocd", "prod")
    assert _in_env("overlays/prod-eu/argocd", None)


def _blob_id(text: str) -> str:
    data = text.encode()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class _Reads(dict[str, str]):
    """A committed tree that records which files were read."""

    def __init__(self, files: Mapping[str, str]) -> None:
        super().__init__(files)
        self.read: set[str] = set()

    def __getitem__(self, path: str) -> str:
        self.read.add(path)
        return super().__getitem__(path)


def test_tree_diff_builds_only_the_units_whose_files_differ(tmp_path: Path) -> None:
    """prod before: team ml (4 GPUs) and team old; after: ml with 2, old gone, ops new."""
    before = tree(tmp_path / "a", {"teams/old.yaml": "quota:\n  nvidia: 2\n"})
    after = tree(tmp_path / "b", {"teams/ml.yaml": "quota:\n  nvidia: 2\n", "teams/ops.yaml": TEAM})
    committed = _Reads(render_tree(load_and_check(before).values).tree)
    ids = {path: _blob_id(text) for path, text in committed.items()}
    got = tree_diff(committed, render_tree(load_and_check(after).values), "prod", ids)
    units = [
        "overlays/prod/argocd",
        "overlays/prod/monitoring",  # its rules name each team
        "overlays/prod/team-ml",
        "overlays/prod/team-old",
        "overlays/prod/team-ops",
    ]
    assert got.built_units == units
    assert got.changed_units == units
    assert got.old_counts == {
        "overlays/prod/argocd": 7,  # the AppProject, the root and 5 units' Applications
        "overlays/prod/monitoring": 8,
        "overlays/prod/team-ml": 2,  # Namespace, ResourceQuota
        "overlays/prod/team-old": 2,
        "overlays/prod/team-ops": 0,
    }
    summary = [(d.unit, d.title, d.status, [r.code for r in d.risks]) for d in got.objects]
    assert summary == [
        ("argocd", "AppProject argocd/f", "changed", []),
        ("argocd", "Application argocd/f-prod-team-old", "removed", ["object-deleted"]),
        ("argocd", "Application argocd/f-prod-team-ops", "added", []),
        ("monitoring", "PrometheusRule accelerator-monitoring/accelerators-unified", "changed", []),
        ("team-ml", "ResourceQuota ml/accelerators", "changed", ["quota-down"]),
        ("team-old", "Namespace old", "removed", ["namespace-deleted"]),
        ("team-old", "ResourceQuota old/accelerators", "removed", ["object-deleted"]),
        ("team-ops", "Namespace ops", "added", []),
        ("team-ops", "ResourceQuota ops/accelerators", "added", []),
    ]
    assert {d.env for d in got.objects} == {"prod"}
    # With the blob ids known, the files of units that did not change are not read (only the
    # kustomizations, to know what each unit reads).
    read = {p for p in committed.read if not p.endswith("/kustomization.yaml")}
    assert read
    changed = ("base/monitoring/", "base/teams/ml/", "base/teams/old/", "overlays/prod/argocd/")
    assert [p for p in read if not p.startswith(changed)] == []


def test_between_envs_with_a_team_in_one_environment_only(tmp_path: Path) -> None:
    values_dir = tree(
        tmp_path,
        {
            "teams/ml.yaml": "quota:\n  nvidia: 8\n",
            "environments/staging.yaml": "teams:\n  ml: {enabled: false}\n",
        },
        fleet=FLEET + "capacity: {allowOvercommit: true}\n",
    )
    got = between_envs(values_dir, "staging", "prod")
    assert (got.old, got.new, got.units) == ("environment staging", "environment prod", 5)
    assert got.findings == []
    assert [(d.env, d.unit, d.title, d.status) for d in got.objects] == [
        ("staging -> prod", "argocd", "AppProject argocd/f", "changed"),
        ("staging -> prod", "argocd", "Application argocd/f-prod-device-plugins", "changed"),
        ("staging -> prod", "argocd", "Application argocd/f-prod-monitoring", "changed"),
        ("staging -> prod", "argocd", "Application argocd/f-prod-node-config", "changed"),
        ("staging -> prod", "argocd", "Application argocd/f-prod-root", "changed"),
        ("staging -> prod", "argocd", "Application argocd/f-prod-team-ml", "added"),
        # the team's quota alert: a team runs in prod only
        (
            "staging -> prod",
            "monitoring",
            "PrometheusRule accelerator-monitoring/accelerators-alerts",
            "changed",
        ),
        (
            "staging -> prod",
            "monitoring",
            "PrometheusRule accelerator-monitoring/accelerators-unified",
            "changed",
        ),
        ("staging -> prod", "team-ml", "Namespace ml", "added"),
        ("staging -> prod", "team-ml", "ResourceQuota ml/accelerators", "added"),
    ]
    assert [(c.where, c.old, c.new) for c in got.objects[1].changes] == [
        ('metadata.labels["accel-gitops.io/environment"]', "staging", "prod"),
        ("metadata.name", "f-staging-device-plugins", "f-prod-device-plugins"),
        ("spec.source.path", "overlays/staging/device-plugins", "overlays/prod/device-plugins"),
    ]
    back = between_envs(values_dir, "prod", "staging")
    assert (back.old, back.new, back.units) == ("environment prod", "environment staging", 5)
    removed = [(d.unit, d.title, d.risks) for d in back.objects if d.status == "removed"]
    kept = "no longer rendered; Argo CD keeps it (Prune=false): delete it by hand"
    assert removed == [
        (
            "argocd",
            "Application argocd/f-prod-team-ml",
            [Risk("object-deleted", "deleted, and with it everything it deployed")],
        ),
        ("team-ml", "Namespace ml", [Risk("namespace-deleted", kept)]),
        ("team-ml", "ResourceQuota ml/accelerators", [Risk("object-deleted", "deleted")]),
    ]


OVERCOMMIT = FLEET + "capacity: {allowOvercommit: true}\n"


def test_against_ref_with_the_fleet_in_a_subfolder(tmp_path: Path, monkeypatch: Any) -> None:
    """The fleet lives in fleet/ of its repository (values and committed output): a quota down,
    a new team, and a warning of the working tree's values."""
    repo = tmp_path / "repo"
    values_dir = tree(repo / "fleet", {"teams/ml.yaml": "quota:\n  nvidia: 8\n"}, fleet=OVERCOMMIT)
    assert cli_streams("render", "--values", str(values_dir))[0] == 0
    assert (repo / "fleet/overlays/prod/team-ml/kustomization.yaml").is_file()
    repos.init(repo)
    commit = repos.commit_all(repo, "fleet")
    (values_dir / "teams/ml.yaml").write_text("quota:\n  nvidia: 6\n")
    (values_dir / "teams/ops.yaml").write_text(TEAM)  # 6 + 4 on 8 GPUs: CAP001, a warning
    read: list[str] = []

    class Blobs(gitutil.BlobTree):
        def __getitem__(self, path: str) -> str:
            read.append(path)
            return super().__getitem__(path)

    monkeypatch.setattr(gitutil, "BlobTree", Blobs)
    got = against_ref(values_dir, "main", "prod")
    assert (got.old, got.new) == (f"main ({commit[:12]}, committed output)", "working tree")
    assert got.units == 6  # prod's 5 and team-ops
    assert [(f.code, f.path, f.envs) for f in got.findings] == [("CAP001", "$.quota.nvidia", ())]
    assert [(d.env, d.unit, d.title, d.status) for d in got.objects] == [
        ("prod", "argocd", "AppProject argocd/f", "changed"),
        ("prod", "argocd", "Application argocd/f-prod-team-ops", "added"),
        (
            "prod",
            "monitoring",
            "PrometheusRule accelerator-monitoring/accelerators-unified",
            "changed",
        ),
        ("prod", "team-ml", "ResourceQuota ml/accelerators", "changed"),
        ("prod", "team-ops", "Namespace ops", "added"),
        ("prod", "team-ops", "ResourceQuota ops/accelerators", "added"),
    ]
    assert got.objects[3].risks == [
        Risk("quota-down", 'spec.hard["requests.nvidia.com/gpu"]: 8 -> 6')
    ]
    # Only the changed units' files are read from git (and the kustomizations).
    unchanged = ("base/node-config/", "base/device-plugins/", "overlays/prod/node-config/")
    assert read
    assert [
        p for p in read if p.startswith(unchanged) and not p.endswith("/kustomization.yaml")
    ] == []
    # Every environment: both environments' units, team-ops twice.
    assert against_ref(values_dir, "main").units == 12


def test_against_ref_renders_a_ref_without_output_in_one_environment(tmp_path: Path) -> None:
    values_dir = tree(tmp_path / "repo")
    repos.init(tmp_path / "repo")
    commit = repos.commit_all(tmp_path / "repo", "values only")
    (values_dir / "teams/ml.yaml").write_text("quota:\n  nvidia: 3\n")
    got = against_ref(values_dir, "main", "staging")
    assert got.old == f"main ({commit[:12]}, values rendered by this generator)"
    assert got.units == 5
    assert [(d.env, d.unit, d.title, d.risks) for d in got.objects] == [
        (
            "staging",
            "team-ml",
            "ResourceQuota ml/accelerators",
            [Risk("quota-down", 'spec.hard["requests.nvidia.com/gpu"]: 4 -> 3')],
        ),
    ]
    with pytest.raises(UsageError, match="^unknown environment 'qa'; known: prod, staging$"):
        against_ref(values_dir, "main", "qa")


def test_against_ref_whose_values_do_not_load(tmp_path: Path) -> None:
    values_dir = tree(tmp_path / "repo", {"teams/ml.yaml": "quota:\n  nvidia: many\n"})
    repos.init(tmp_path / "repo")
    repos.commit_all(tmp_path / "repo", "broken values")
    (values_dir / "teams/ml.yaml").write_text(TEAM)
    with pytest.raises(GeneratorError) as exc:
        against_ref(values_dir, "main")
    assert str(exc.value) == (
        "the values at main do not load (1 finding(s), first: values/teams/ml.yaml:2:11: "
        "VAL001 'many' is not of type 'integer' (at $.quota.nvidia))"
    )


def test_rules_destinations_and_kinds_are_matched_by_their_identity() -> None:
    """An added rule, destination or allowed kind is shown alone, not as two whole lists."""
    rec = {"record": "accel:gpu:used", "expr": "sum(x)"}
    alert = {"alert": "PluginDown", "expr": "up == 0"}
    new_alert = {"alert": "NoDevices", "expr": "absent(y)"}
    got = field_changes(
        {"rules": [rec, alert]}, {"rules": [rec, {**alert, "expr": "up < 1"}, new_alert]}
    )
    assert [(c.where, c.op) for c in got] == [
        ("rules[alert=NoDevices]", "add"),
        ("rules[alert=PluginDown].expr", "replace"),
    ]
    # Recording and alerting rules in one group are one family; a rule removed is said alone.
    assert [(c.where, c.op) for c in field_changes([rec, alert], [alert])] == [
        ("[record=accel:gpu:used]", "remove")
    ]
    server = "https://kubernetes.default.svc"
    dests = [{"server": server, "namespace": "ml"}]
    more = [*dests, {"server": server, "namespace": "inference"}]
    assert [
        (c.where, c.op, c.new)
        for c in field_changes({"destinations": dests}, {"destinations": more})
    ] == [(f"destinations[server+namespace={server},inference]", "add", more[1])]
    kinds = [{"group": "", "kind": "Namespace"}]
    wider = [*kinds, {"group": "node.k8s.io", "kind": "RuntimeClass"}]
    assert [c.where for c in field_changes(kinds, wider)] == [
        "[group+kind=node.k8s.io,RuntimeClass]"
    ]
    # Entries of different families, other lengths: the lists whole.
    names = [{"name": "x"}, {"name": "y"}]
    assert field_changes([rec], names) == [FieldChange((), [rec], names)]
    assert field_changes(names[:1], more) == [FieldChange((), names[:1], more)]
    # A `name` comes first: a named entry with a record is matched by its name.
    named = [{"name": "g", "record": "r"}]
    assert [c.where for c in field_changes(named, [{"name": "g", "record": "s"}])] == [
        "[name=g].record"
    ]


def test_between_an_environment_and_one_of_clusters_cluster_by_cluster(tmp_path: Path) -> None:
    """staging is one cluster, prod two (TWO_CLUSTERS): staging is compared with each of prod's
    clusters, and an Application is the same one renamed (<fleet>-staging-<unit> ->
    <fleet>-prod-<cluster>-<unit>), not one removed and another added."""
    values_dir = tree(tmp_path, TWO_CLUSTERS)
    got = between_envs(values_dir, "staging", "prod")
    labels = sorted({d.env for d in got.objects})
    assert labels == ["staging -> prod/domestic", "staging -> prod/main"]
    apps = {
        (d.env, d.title, d.status)
        for d in got.objects
        if d.unit == "argocd" and d.title.endswith("team-ml")
    }
    assert apps == {
        ("staging -> prod/domestic", "Application argocd/f-prod-domestic-team-ml", "changed"),
        ("staging -> prod/main", "Application argocd/f-prod-main-team-ml", "changed"),
    }
    # Two clusters of one environment, side by side: domestic has no NVIDIA plugin.
    across = between_envs(values_dir, "prod/main", "prod/domestic")
    plugins = {(d.title, d.status) for d in across.objects if d.unit == "device-plugins"}
    assert ("DaemonSet accelerator-plugins/nvidia-device-plugin", "removed") in plugins
