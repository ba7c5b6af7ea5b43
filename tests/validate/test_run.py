"""validate with the real kustomize, kubeconform and promtool: one report, every stage."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from generator.builders.common import metadata
from tests.example import hand_edit, use_backend, with_routes
from tests.fixtures import (
    Write,
    committed_at,
    invoke,
    ml_tree,
    render_committed,
    validate_committed,
)

# Team ml-team of the trees below: its `quota:` key, where findings on the objects the
# `extra_objects` fixture adds to its units point, is line 1, column 1. Its job needs 4 GPUs.
ML = """\
quota:
  nvidia: 4
jobs:
  train:
    vendor: nvidia
    devices: 4
    images: {nvidia: r/train:cuda}
    command: [python, train.py]
"""
QUOTA_AT = "values/teams/ml-team.yaml:1:1"
# Team inference: 2 NVIDIA GPUs, its committed quota file the one the drift tests edit.
INFERENCE = "quota:\n  nvidia: 2\n"
INFERENCE_QUOTA = "base/teams/inference/resourcequota-inference-accelerators.yaml"
ML_QUOTA = "base/teams/ml-team/resourcequota-ml-team-accelerators.yaml"


@pytest.fixture
def values(tmp_path: Path) -> Path:
    """A small tree (NVIDIA, 8 GPUs; teams ml-team and inference; staging and prod) under
    tmp_path/repo, rendered and committed there."""
    values = ml_tree(tmp_path, {"teams/ml-team.yaml": ML, "teams/inference.yaml": INFERENCE})
    assert render_committed(values) == 0
    return values


@pytest.mark.usefixtures("committed")
def test_example_fleet_is_clean(values_dir: Path) -> None:
    code, out = validate_committed(values_dir, "--no-cache")
    assert code == 0, out
    assert out.splitlines()[-1].startswith("validate: 0 error(s)")


def test_values_schema_error_stops_before_render(values: Path) -> None:
    (values / "teams/ml-team.yaml").write_text("quota:\n  nvidia: many\n")
    code, out = validate_committed(values, "--no-cache")
    assert code == 1
    assert "values/teams/ml-team.yaml:2:11: VAL001 'many' is not of type 'integer'" in out


def test_values_that_do_not_load_are_checked_beside_their_errors(values: Path) -> None:
    """A team file the schema refuses stops no check of the rest: ml-team's quota for a vendor
    the fleet does not have is told in the same run (docs/validate.md, "One finding per root
    cause"), and nothing after the checks reads the values."""
    (values / "teams/inference.yaml").write_text("quota: {nvidia: many}\n")
    (values / "teams/ml-team.yaml").write_text(
        ML.replace("  nvidia: 4\n", "  nvidia: 4\n  amd: 2\n")
    )
    code, out = validate_committed(values, "--no-cache")
    assert code == 1, out
    assert "values/teams/inference.yaml:1:17: VAL001 'many' is not of type 'integer'" in out
    assert (
        "values/teams/ml-team.yaml:3:3: REF001 quota names vendor 'amd', which has no enabled "
        "values/vendors/amd.yaml"
    ) in out
    assert "not run manifest rules (the values have errors: fix them first)" in out


def test_unknown_field_in_a_rendered_object(values: Path, extra_objects: list[Any]) -> None:
    extra_objects.append(
        (
            "team-ml-team",
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": metadata(
                    "broken", namespace="ml-team", sources=["values/teams/ml-team.yaml"]
                ),
                "data": {"a": "b"},
                "bogus": True,
            },
        )
    )
    code, out = validate_committed(values, "--no-cache", "--env", "prod")
    assert code == 1
    assert (
        f"{QUOTA_AT}: K8S001 ConfigMap ml-team/broken "
        "(overlays/prod/team-ml-team): additional properties 'bogus' not allowed"
    ) in out


def test_custom_kind_without_schema_is_an_error(values: Path, extra_objects: list[Any]) -> None:
    extra_objects.append(
        (
            "team-ml-team",
            {
                "apiVersion": "example.com/v1",
                "kind": "Widget",
                "metadata": metadata(
                    "w", namespace="ml-team", sources=["values/teams/ml-team.yaml"]
                ),
            },
        )
    )
    code, out = validate_committed(values, "--no-cache", "--env", "prod")
    assert code == 1
    assert (
        "K8S002 Widget ml-team/w (overlays/prod/team-ml-team): no schema for example.com/v1" in out
    )


def test_prometheus_rule_with_bad_promql(values: Path, extra_objects: list[Any]) -> None:
    extra_objects.append(
        (
            "team-ml-team",
            {
                "apiVersion": "monitoring.coreos.com/v1",
                "kind": "PrometheusRule",
                "metadata": metadata(
                    "bad", namespace="ml-team", sources=["values/teams/ml-team.yaml"]
                ),
                "spec": {
                    "groups": [
                        {
                            "name": "g",
                            "rules": [
                                {
                                    "record": "team:gpu:sum",
                                    "expr": "sum(rate(DCGM_FI_DEV_GPU_UTIL[5m]) by (node)",
                                }
                            ],
                        }
                    ]
                },
            },
        )
    )
    code, out = validate_committed(values, "--no-cache", "--env", "prod")
    assert code == 1
    line = next(ln for ln in out.splitlines() if "PROM001" in ln)
    assert line.startswith(
        f"{QUOTA_AT}: PROM001 PrometheusRule ml-team/bad "
        "(overlays/prod/team-ml-team): promtool check rules:"
    )
    assert "parse" in line or "unclosed" in line or "expected" in line


def test_a_bad_duration_in_a_prometheus_rule_is_one_finding(
    values: Path, extra_objects: list[Any]
) -> None:
    """The CRD's schema refuses `for: 5 minutes` (K8S001, at the field), and the API server would
    not take the object: promtool and the operator, which would say it again, check only the
    PrometheusRules the schema takes (another one in the unit still is)."""

    def prometheus_rule(name: str, rule: dict[str, str]) -> tuple[str, dict[str, Any]]:
        meta = metadata(name, namespace="ml-team", sources=["values/teams/ml-team.yaml"])
        spec = {"groups": [{"name": "g", "rules": [rule]}]}
        return (
            "team-ml-team",
            {
                "apiVersion": "monitoring.coreos.com/v1",
                "kind": "PrometheusRule",
                "metadata": meta,
                "spec": spec,
            },
        )

    extra_objects.append(
        prometheus_rule("late", {"alert": "Down", "expr": "up == 0", "for": "5 minutes"})
    )
    extra_objects.append(prometheus_rule("bad", {"record": "team:up:sum", "expr": "sum(up"}))
    code, out = validate_committed(values, "--no-cache", "--env", "prod")
    assert code == 1
    found = [ln for ln in out.splitlines() if " K8S" in ln or " PROM" in ln]
    assert [ln.split(" (overlays/")[0] for ln in found] == [
        f"{QUOTA_AT}: K8S001 PrometheusRule ml-team/late",
        f"{QUOTA_AT}: PROM001 PrometheusRule ml-team/bad",
    ]
    # What was written and the form a duration takes, read from the CRD's pattern: not the
    # pattern itself.
    assert found[0].endswith(
        "(overlays/prod/team-ml-team): 'for' is '5 minutes', not a duration: 0, or whole "
        "numbers each followed by its unit, the units in the order y, w, d, h, m, s, ms, without "
        "spaces (at $.spec.groups.0.rules.0.for); the API server refuses a "
        "monitoring.coreos.com/v1 PrometheusRule its schema refuses (Argo CD's sync of the unit "
        "fails): change that field where it is written, in the values or the committed file "
        "named here"
    )


def _deployment(
    name: str,
    resources: dict[str, Any],
    selector: dict[str, str],
    tolerations: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(name, namespace="ml-team", sources=["values/teams/ml-team.yaml"]),
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "nodeSelector": selector,
                    "tolerations": tolerations or [],
                    "containers": [{"name": "c", "image": "app:cuda", "resources": resources}],
                },
            },
        },
    }


NVIDIA = "feature.node.kubernetes.io/accelerator"
TOLERATE_NVIDIA = [
    {
        "key": "feature.node.kubernetes.io/accelerator",
        "operator": "Equal",
        "value": "nvidia-gpu",
        "effect": "NoSchedule",
    }
]


def test_unschedulable_pod(values: Path, extra_objects: list[Any]) -> None:
    extra_objects.append(
        (
            "team-ml-team",
            _deployment("lost", {"limits": {"nvidia.com/gpu": 1}}, {NVIDIA: "amd-gpu"}),
        )
    )
    code, out = validate_committed(values, "--no-cache", "--env", "prod")
    assert code == 1
    assert (
        f"{QUOTA_AT}: POD003 Deployment ml-team/lost "
        "(overlays/prod/team-ml-team): container 'c' requests nvidia.com/gpu but its "
        "nodeSelector {feature.node.kubernetes.io/accelerator=amd-gpu} picks no pool of nvidia"
    ) in out


def test_kustomize_failure_is_a_finding(values: Path, extra_objects: list[Any]) -> None:
    # An object without a name: kustomize refuses to load it. (Two objects with one identity are
    # refused earlier, at their values line: NAME008.)
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata("", namespace="ml-team", sources=["values/teams/ml-team.yaml"]),
    }
    extra_objects.append(("team-ml-team", cm))
    code, out = validate_committed(values, "--no-cache", "--env", "prod")
    assert code == 1
    assert "KUS001 kustomize build overlays/prod/team-ml-team failed" in out


def test_missing_tool_is_exit_2_naming_the_install_command(
    values: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCEL_GITOPS_TOOLS_DIR", str(tmp_path / "empty"))
    code, out = validate_committed(values, "--no-cache")
    assert code == 2
    assert "kustomize not found" in out and "install it with: accel-gitops tools install" in out


def test_unknown_environment_is_a_usage_error(values: Path) -> None:
    code, out = validate_committed(values, "--env", "qa")
    assert code == 2 and "unknown environment 'qa'" in out


@pytest.mark.usefixtures("committed")
@pytest.mark.parametrize("backend", ["quota", "volcano", "kueue"])
def test_every_custom_kind_passes_strict_schemas(
    backend: str, values_dir: Path, write: Write
) -> None:
    """Volcano or Kueue queues and scheduler configuration, HTTPRoute and VirtualService:
    kubeconform -strict accepts every unit under each backend."""
    use_backend(values_dir, write, backend, "  kubeScheduler: {packing: true}\n")
    write(
        "environments/prod.yaml", with_routes((values_dir / "environments/prod.yaml").read_text())
    )
    code, out = validate_committed(values_dir, "--no-cache", "--env", "prod", "--output", "json")
    doc = json.loads(out)
    assert code == 0, [f for f in doc["findings"] if f["severity"] == "error"]
    assert doc["stats"]["objects"] > 40


def test_doctor_lists_each_tool_with_its_version_and_origin() -> None:
    result = invoke("doctor")
    assert result.exit_code == 0, result.output
    # One row per tool; the column width follows the longest tool name.
    assert re.search(r"^kustomize +ok +v5\.8\.1 ", result.output, re.M)
    assert "sigs.k8s.io/kustomize/kustomize/v5@v5.8.1" in result.output
    assert re.search(r"^kubeconform +ok +v0\.7\.0 ", result.output, re.M)
    assert re.search(r"^schemas +ok ", result.output, re.M)


def test_doctor_says_how_to_install_a_missing_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCEL_GITOPS_TOOLS_DIR", str(tmp_path))
    result = invoke("doctor")
    assert result.exit_code == 2
    assert re.search(
        r"^kustomize +MISSING +pinned v5\.8\.1; install: accel-gitops tools install$",
        result.output,
        re.M,
    )


def test_committed_output_must_match_the_values(values: Path) -> None:
    repo = values.parent
    code, out = validate_committed(values, drift=True)
    assert code == 0, out
    # Where the hand edit below lands, and the line the values change below alters.
    quota_line = committed_at(repo, INFERENCE_QUOTA, "requests.nvidia.com/gpu: '2'")
    ml_line = committed_at(repo, ML_QUOTA, "requests.nvidia.com/gpu: '4'")
    # A hand edit, a stale file and a values change that was not re-rendered.
    quota_file = repo / INFERENCE_QUOTA
    quota_file.write_text(quota_file.read_text().replace("'2'", "'20'"))
    (repo / "overlays/prod/stray.yaml").write_text("kind: ConfigMap\n")
    text = (values / "teams/ml-team.yaml").read_text()
    (values / "teams/ml-team.yaml").write_text(text.replace("nvidia: 4", "nvidia: 6"))
    code, out = validate_committed(values, drift=True)
    assert code == 1
    # Each names the first line of the committed file that differs (the hand-edited '20').
    assert (
        f"{INFERENCE_QUOTA}:{quota_line}:1: DRIFT001 committed "
        "base/teams/inference/resourcequota-inference-accelerators.yaml differs from a fresh "
        "render of the values; run `accel-gitops render` and commit the result"
    ) in out
    assert (
        "overlays/prod/stray.yaml:1:1: DRIFT001 committed overlays/prod/stray.yaml is committed "
        "but no longer rendered from the values" in out
    )
    assert f"{ML_QUOTA}:{ml_line}:1: DRIFT001" in out
    # JSON carries the line and the diff.
    code, out = validate_committed(values, "--output", "json", drift=True)
    found = {f["file"]: f for f in json.loads(out)["findings"] if f["code"] == "DRIFT001"}
    quota = found["base/teams/inference/resourcequota-inference-accelerators.yaml"]
    assert (quota["line"], quota["column"]) == (quota_line, 1)
    assert (
        "-    requests.nvidia.com/gpu: '20'\n+    requests.nvidia.com/gpu: '2'\n" in quota["detail"]
    )
    assert quota["detail"].startswith(
        "--- committed/base/teams/inference/resourcequota-inference-accelerators.yaml\n"
    )
    assert "detail" not in found["overlays/prod/stray.yaml"]


def test_a_repository_never_rendered_is_drift_too(values: Path) -> None:
    for top in ("base", "overlays"):
        shutil.rmtree(values.parent / top)
    code, out = validate_committed(values, drift=True)
    assert code == 1
    assert (
        "DRIFT001 committed base/device-plugins/nvidia/kustomization.yaml is rendered from the "
        "values but not committed" in out
    )
    assert "more committed files differ from a fresh render" in out


@pytest.mark.parametrize("drift", [True, False])
def test_a_hand_edit_of_the_committed_tree_is_caught_with_and_without_drift(
    values: Path, tmp_path: Path, drift: bool
) -> None:
    repo = values.parent
    cache = str(tmp_path / "cache")
    args = ["--cache-dir", cache, "--env", "prod"] + ([] if drift else ["--no-drift"])
    assert validate_committed(values, *args, drift=True)[0] == 0  # fills the cache
    hand_edit(repo)
    code, out = validate_committed(values, *args, drift=True)
    assert code == 1, out
    # The tools ran on the committed tree, not on the fresh render (and not from the cache).
    assert (
        "K8S001 Namespace ml-team (overlays/prod/team-ml-team): additional properties 'bogus' "
        "not allowed"
    ) in out
    assert (
        "overlays/prod/team-ml-team/configmap-ml-team-hotfix.yaml: K8S001 ConfigMap hotfix "
        "(overlays/prod/team-ml-team): additional properties 'extra' not allowed"
    ) in out
    drifted = [ln for ln in out.splitlines() if "DRIFT001" in ln]
    if drift:
        assert sorted(ln.split(":")[0] for ln in drifted) == [
            "base/teams/ml-team/namespace-ml-team.yaml",
            "overlays/prod/team-ml-team/configmap-ml-team-hotfix.yaml",
            "overlays/prod/team-ml-team/kustomization.yaml",
        ]
    else:
        assert drifted == []


def test_drift_waits_for_values_the_checks_accept_and_says_so(values: Path) -> None:
    """A values error makes a render that is never written (render refuses it): the committed
    output differing from it is that error again, not a second one. DRIFT002 says drift did not
    run; once the values pass, a hand edit of the committed output is DRIFT001 as ever."""
    quota = values.parent / INFERENCE_QUOTA
    quota.write_text(quota.read_text().replace("'2'", "'20'"))  # a hand edit
    text = (values / "teams/ml-team.yaml").read_text()
    # MIG004: its job needs 4
    (values / "teams/ml-team.yaml").write_text(text.replace("nvidia: 4", "nvidia: 1"))
    code, out = validate_committed(values, "--no-cache", drift=True)
    assert code == 1
    assert "MIG004 team 'ml-team' needs 4 nvidia devices" in out
    assert "DRIFT001" not in out
    assert (
        "values: DRIFT002 warning: the committed output was not compared with a fresh render: "
        "the values' checks fail"
    ) in out
    assert "not run drift (the values' checks fail: fix them, then render)" in out
    (values / "teams/ml-team.yaml").write_text(text)
    code, out = validate_committed(values, "--no-cache", drift=True)
    assert code == 1
    assert (
        "DRIFT001 committed base/teams/inference/resourcequota-inference-accelerators.yaml "
        "differs from a fresh render of the values"
    ) in out


def test_values_that_do_not_load_still_get_the_committed_tree_checked(
    values: Path,
) -> None:
    hand_edit(values.parent)
    (values / "teams/inference.yaml").write_text("quota: {nvidia: many}\n")
    code, out = validate_committed(values, "--no-cache", "--env", "prod", drift=True)
    assert code == 1
    assert "values/teams/inference.yaml:1:17: VAL001 'many' is not of type 'integer'" in out
    assert (
        "values: DRIFT002 warning: the committed output was not compared with a fresh render: "
        "the values have errors"
    ) in out
    assert (
        "overlays/prod/team-ml-team/configmap-ml-team-hotfix.yaml: K8S001 ConfigMap hotfix "
        "(overlays/prod/team-ml-team): additional properties 'extra' not allowed"
    ) in out
    assert "not run drift and manifest rules (the values have errors: fix them first)" in out


def test_no_drift_with_nothing_committed_is_a_usage_error(values: Path) -> None:
    for top in ("base", "overlays"):
        shutil.rmtree(values.parent / top)
    result = invoke("validate", "--values", str(values), "--no-drift", "--no-cache")
    assert result.exit_code == 2
    assert "no rendered output in" in result.output
    assert "run `accel-gitops render` first, or pass --committed DIR" in result.output


def test_a_cache_that_validated_before_has_the_values_loaded_while_a_child_walks_the_tree(
    values: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first run starts the tools first (they have every unit to build) and loads the values
    while they run; where the cache folder validated before (its units' results kept), the
    values load first, while a child process walks the tree. Either way, the same report."""
    from generator.render import treeindex
    from generator.validate import planmemo, run

    order: list[str] = []
    real_load, real_plan = run._load, run._plan

    def load(*args: Any) -> Any:
        order.append("values")
        return real_load(*args)

    def plan(*args: Any) -> Any:
        walk = args[3] if len(args) > 3 else None
        order.append("plan, walked by a child" if isinstance(walk, treeindex.Walk) else "plan")
        return real_plan(*args)

    monkeypatch.setattr(run, "_load", load)
    monkeypatch.setattr(run, "_plan", plan)
    args = ["--cache-dir", str(tmp_path / "cache")]
    report = "validate: 0 error(s), 0 warning(s) (units 12, objects 46, cached units {})\n"
    assert validate_committed(values, *args, drift=True) == (0, report.format(0))
    assert order == ["plan", "values"]
    order.clear()
    assert validate_committed(values, *args, drift=True) == (0, report.format(12))
    assert order == ["values", "plan, walked by a child"]
    order.clear()
    # the memo said to be another version's (whose keys and parsed values would serve nothing):
    # the tools first; the memo is then this version's again
    (tmp_path / "cache" / planmemo.CODE).write_text("0" * 64)
    assert validate_committed(values, *args, drift=True) == (0, report.format(12))
    assert order == ["plan", "values"]
    order.clear()
    assert validate_committed(values, *args, drift=True) == (0, report.format(12))
    assert order == ["values", "plan, walked by a child"]
    order.clear()
    # `render --validate` hands validate the tree it wrote and the values it loaded (its cache
    # folder is the one beside the values)
    assert invoke("render", "--values", str(values), "--validate").exit_code == 0
    assert order == ["plan"]
