"""`diff` (generator/delivery/diff.py): env vs env and working tree vs a git ref, with real
kustomize and real git; its field changes and risks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from generator.delivery.diff import (
    RISKS,
    Risk,
    compare_objects,
    field_changes,
)
from tests import repos
from tests.fixtures import ROOT, TWO_TEAMS_PROD, TWO_TEAMS_STAGING, cli_streams, two_teams

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
        ("spec.args", "replace"),
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
    assert sorted(objs) == [("prod", "team-inference", "HTTPRoute/inference-service")]
    route = objs[("prod", "team-inference", "HTTPRoute/inference-service")]
    assert [(c["path"], c["old"], c["new"]) for c in route["changes"]] == [
        ("spec.rules[0].backendRefs[name=inference-service-ascend].weight", 10, 50),
        ("spec.rules[0].backendRefs[name=inference-service-nvidia].weight", 90, 50),
    ]
    assert {r["code"] for r in route["risks"]} == {"traffic-moves"}
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
    service = objs[("staging -> prod", "team-inference", "Service/inference-service")]
    assert [r["code"] for r in service["risks"]] == ["traffic-moves"]


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


def test_every_risk_is_documented() -> None:
    doc = (ROOT / "docs/gitops.md").read_text()
    for code in RISKS:
        assert f"| `{code}` |" in doc, code
