"""validate with the real kustomize, kubeconform and promtool: one report, every stage."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from generator import builders
from generator.builders.common import Component, metadata
from generator.values.model import FleetView
from tests.example import (
    GATEWAY,
    INFERENCE_QUOTA,
    INFERENCE_QUOTA_8_LINE,
    ML_QUOTA,
    ML_QUOTA_NVIDIA_LINE,
    use_backend,
)
from tests.fixtures import Write, invoke


def quota_at(values_dir: Path) -> str:
    """`values/teams/ml-team.yaml:L:1`, L being the line of its `quota:` key."""
    lines = (values_dir / "teams/ml-team.yaml").read_text().splitlines()
    return f"values/teams/ml-team.yaml:{lines.index('quota:') + 1}:1"


def render(values_dir: Path) -> int:
    """Render into the folder holding the values, as a user commits it."""
    return invoke("render", "--values", str(values_dir)).exit_code


@pytest.fixture(autouse=True)
def committed(values_dir: Path) -> None:
    """Every test starts from a committed render of its values copy, as a repository does."""
    assert render(values_dir) == 0


def validate(
    values_dir: Path, *args: str, env: dict[str, str] | None = None, drift: bool = False
) -> tuple[int, str]:
    """Run the CLI on what is committed. Without `drift`, the test's values are rendered and
    committed first (when they render) and drift is not checked; with it, the test controls
    the committed output."""
    extra = [] if drift else ["--no-drift"]
    if not drift:
        render(values_dir)  # values with errors write nothing: the last good render stays
    result = invoke("validate", "--values", str(values_dir), *extra, *args, env=env)
    return result.exit_code, result.output


@pytest.fixture
def extra_objects(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """Objects (unit, object) added to every environment as if a builder made them from the
    ml-team values: the way to feed validate a broken manifest the values cannot express."""
    added: list[tuple[str, dict[str, Any]]] = []

    def extra(view: FleetView) -> list[Component]:
        team = next(t for t in view.teams if t.name == "ml-team")
        return [
            Component(unit, f"extra/{i}", [obj], origin=team.doc.anchor(("quota",)))
            for i, (unit, obj) in enumerate(added)
        ]

    monkeypatch.setattr(builders, "BUILDERS", (*builders.BUILDERS, extra))
    yield added


def test_example_fleet_is_clean(values_dir: Path) -> None:
    code, out = validate(values_dir, "--no-cache")
    assert code == 0, out
    assert out.splitlines()[-1].startswith("validate: 0 error(s)")


def test_values_schema_error_stops_before_render(values_dir: Path, write: Write) -> None:
    write("teams/ml-team.yaml", "quota:\n  nvidia: many\n")
    code, out = validate(values_dir, "--no-cache")
    assert code == 1
    assert "values/teams/ml-team.yaml:2:11: VAL001 'many' is not of type 'integer'" in out


def test_unknown_field_in_a_rendered_object(values_dir: Path, extra_objects: list[Any]) -> None:
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
    code, out = validate(values_dir, "--no-cache", "--env", "prod")
    assert code == 1
    assert (
        f"{quota_at(values_dir)}: K8S001 ConfigMap ml-team/broken "
        "(overlays/prod/team-ml-team): additional properties 'bogus' not allowed"
    ) in out


def test_custom_kind_without_schema_is_an_error(values_dir: Path, extra_objects: list[Any]) -> None:
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
    code, out = validate(values_dir, "--no-cache", "--env", "prod")
    assert code == 1
    assert (
        "K8S002 Widget ml-team/w (overlays/prod/team-ml-team): no schema for example.com/v1" in out
    )


def test_prometheus_rule_with_bad_promql(values_dir: Path, extra_objects: list[Any]) -> None:
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
    code, out = validate(values_dir, "--no-cache", "--env", "prod")
    assert code == 1
    line = next(ln for ln in out.splitlines() if "PROM001" in ln)
    assert line.startswith(
        f"{quota_at(values_dir)}: PROM001 PrometheusRule ml-team/bad "
        "(overlays/prod/team-ml-team): promtool check rules:"
    )
    assert "parse" in line or "unclosed" in line or "expected" in line


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


def test_unschedulable_pod(values_dir: Path, extra_objects: list[Any]) -> None:
    extra_objects.append(
        (
            "team-ml-team",
            _deployment("lost", {"limits": {"nvidia.com/gpu": 1}}, {NVIDIA: "amd-gpu"}),
        )
    )
    code, out = validate(values_dir, "--no-cache", "--env", "prod")
    assert code == 1
    assert (
        f"{quota_at(values_dir)}: POD003 Deployment ml-team/lost "
        "(overlays/prod/team-ml-team): container 'c' requests nvidia.com/gpu but its "
        "nodeSelector {feature.node.kubernetes.io/accelerator=amd-gpu} picks no pool of nvidia"
    ) in out


def test_kustomize_failure_is_a_finding(values_dir: Path, extra_objects: list[Any]) -> None:
    # An object without a name: kustomize refuses to load it. (Two objects with one identity are
    # refused earlier, at their values line: NAME008.)
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata("", namespace="ml-team", sources=["values/teams/ml-team.yaml"]),
    }
    extra_objects.append(("team-ml-team", cm))
    code, out = validate(values_dir, "--no-cache", "--env", "prod")
    assert code == 1
    assert "KUS001 kustomize build overlays/prod/team-ml-team failed" in out


def test_cache_reruns_only_the_units_whose_inputs_changed(
    values_dir: Path, write: Write, tmp_path: Path
) -> None:
    cache = str(tmp_path / "cache")

    def stats() -> dict[str, Any]:
        code, out = validate(values_dir, "--cache-dir", cache, "--output", "json")
        assert code == 0, out
        return dict(json.loads(out)["stats"])

    first = stats()
    assert first["cached units"] == 0
    assert stats()["cached units"] == first["units"]
    text = (values_dir / "teams/inference.yaml").read_text()
    write("teams/inference.yaml", text.replace("nvidia: 4", "nvidia: 3"))
    third = stats()
    assert third["cached units"] == first["units"] - 2  # team-inference in staging and prod


def test_json_report(values_dir: Path, write: Write) -> None:
    write("teams/ml-team.yaml", "quota:\n  nvidia: many\n")
    code, out = validate(values_dir, "--output", "json")
    doc = json.loads(out)
    assert code == 1 and doc["errors"] == 1
    assert doc["findings"][0] | {"message": ""} == {
        "code": "VAL001",
        "severity": "error",
        "message": "",
        "file": "values/teams/ml-team.yaml",
        "line": 2,
        "column": 11,
        "path": "$.quota.nvidia",
        "hint": "",
        "environments": [],
    }


def test_github_report_annotates_and_writes_the_step_summary(
    values_dir: Path, write: Write, tmp_path: Path
) -> None:
    write("teams/ml-team.yaml", "quota:\n  nvidia: many\n")
    summary = tmp_path / "summary.md"
    code, out = validate(
        values_dir, "--output", "github", env={"GITHUB_STEP_SUMMARY": str(summary)}
    )
    assert code == 1
    assert (
        "::error file=values/teams/ml-team.yaml,line=2,col=11,title=VAL001::'many' is not of "
        "type 'integer' (at $.quota.nvidia)"
    ) in out
    text = summary.read_text()
    assert "### validate: 1 error(s)" in text and "`values/teams/ml-team.yaml:2:11`" in text


def test_junit_report(values_dir: Path, write: Write) -> None:
    write("teams/ml-team.yaml", "quota:\n  nvidia: many\n")
    code, out = validate(values_dir, "--output", "junit")
    assert code == 1
    suite = ET.fromstring(out).find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    # The committed units are still checked (a passing case each); the values error fails one.
    case = next(c for c in suite.iter("testcase") if c.get("classname") == "VAL001")
    failure = case.find("failure")
    assert failure is not None and "values/teams/ml-team.yaml:2:11" in (failure.text or "")


def test_junit_report_when_clean_has_a_passing_case_per_unit(values_dir: Path) -> None:
    code, out = validate(values_dir, "--output", "junit")
    assert code == 0
    suite = ET.fromstring(out).find("testsuite")
    assert suite is not None and suite.get("failures") == "0" and suite.get("tests") == "16"
    units = [c.get("name") for c in suite.iter("testcase") if c.get("classname") == "validate"]
    assert len(units) == 14 and "overlays/prod/team-ml-team" in units
    assert all(c.find("failure") is None for c in suite.iter("testcase"))
    # The warnings (two CAP001, one NODE003) are cases of their own, passing, text in system-out.
    cap = [c for c in suite.iter("testcase") if c.get("classname") == "CAP001"]
    assert [c.get("name") for c in cap] == ["values/teams/ml-team.yaml"]


def test_junit_unit_case_fails_with_the_findings_about_its_objects(
    values_dir: Path, extra_objects: list[Any]
) -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata("broken", namespace="ml-team", sources=["values/teams/ml-team.yaml"]),
        "spec": {"nope": True},
    }
    extra_objects.append(("team-ml-team", obj))
    code, out = validate(values_dir, "--output", "junit", "--no-cache")
    assert code == 1
    suite = ET.fromstring(out).find("testsuite")
    assert suite is not None
    cases = {c.get("name"): c for c in suite.iter("testcase") if c.get("classname") == "validate"}
    failed = sorted(n for n, c in cases.items() if c.find("failure") is not None)
    assert failed == ["overlays/prod/team-ml-team", "overlays/staging/team-ml-team"]
    assert suite.get("failures") == "2"
    assert "K8S001 ConfigMap ml-team/broken" in (cases[failed[0]].find("failure").text or "")  # type: ignore[union-attr]
    assert cases["overlays/prod/argocd"].find("system-out").text == "no finding"  # type: ignore[union-attr]


def test_missing_tool_is_exit_2_naming_the_install_command(
    values_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCEL_GITOPS_TOOLS_DIR", str(tmp_path / "empty"))
    code, out = validate(values_dir, "--no-cache")
    assert code == 2
    assert "kustomize not found" in out and "make tools" in out


def test_unknown_environment_is_a_usage_error(values_dir: Path) -> None:
    code, out = validate(values_dir, "--env", "qa")
    assert code == 2 and "unknown environment 'qa'" in out


@pytest.mark.parametrize("backend", ["quota", "volcano", "kueue"])
def test_every_custom_kind_passes_strict_schemas(
    backend: str, values_dir: Path, write: Write
) -> None:
    """Volcano or Kueue queues and scheduler configuration, HTTPRoute and VirtualService:
    kubeconform -strict accepts every unit under each backend."""
    use_backend(values_dir, write, backend, "  kubeScheduler: {packing: true}\n")
    prod = (values_dir / "environments/prod.yaml").read_text().split("teams:")[0]
    write("environments/prod.yaml", prod + GATEWAY)
    code, out = validate(values_dir, "--no-cache", "--env", "prod", "--output", "json")
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
        r"^kustomize +MISSING +pinned v5\.8\.1; install: make tools$", result.output, re.M
    )


def test_committed_output_must_match_the_values(values_dir: Path, write: Write) -> None:
    repo = values_dir.parent
    code, out = validate(values_dir, drift=True)
    assert code == 0, out
    # A hand edit, a stale file and a values change that was not re-rendered.
    quota = repo / "base/teams/inference/resourcequota-inference-accelerators.yaml"
    quota.write_text(quota.read_text().replace("'8'", "'80'"))
    (repo / "overlays/prod/stray.yaml").write_text("kind: ConfigMap\n")
    text = (values_dir / "teams/ml-team.yaml").read_text()
    write("teams/ml-team.yaml", text.replace("nvidia: 8", "nvidia: 6"))
    code, out = validate(values_dir, drift=True)
    assert code == 1
    # Each names the first line of the committed file that differs (the hand-edited '80').
    assert (
        f"{INFERENCE_QUOTA}:{INFERENCE_QUOTA_8_LINE}:1: DRIFT001 committed "
        "base/teams/inference/resourcequota-inference-accelerators.yaml differs from a fresh "
        "render of the values; run `python render.py render` and commit the result"
    ) in out
    assert (
        "overlays/prod/stray.yaml:1:1: DRIFT001 committed overlays/prod/stray.yaml is committed "
        "but no longer rendered from the values" in out
    )
    assert f"{ML_QUOTA}:{ML_QUOTA_NVIDIA_LINE}:1: DRIFT001" in out
    # JSON carries the line and the diff.
    code, out = validate(values_dir, "--output", "json", drift=True)
    found = {f["file"]: f for f in json.loads(out)["findings"] if f["code"] == "DRIFT001"}
    quota = found["base/teams/inference/resourcequota-inference-accelerators.yaml"]
    assert (quota["line"], quota["column"]) == (INFERENCE_QUOTA_8_LINE, 1)
    assert "-    requests.amd.com/gpu: '80'\n+    requests.amd.com/gpu: '8'\n" in quota["detail"]
    assert quota["detail"].startswith(
        "--- committed/base/teams/inference/resourcequota-inference-accelerators.yaml\n"
    )
    assert "detail" not in found["overlays/prod/stray.yaml"]


def test_a_repository_never_rendered_is_drift_too(values_dir: Path) -> None:
    for top in ("base", "overlays"):
        shutil.rmtree(values_dir.parent / top)
    code, out = validate(values_dir, drift=True)
    assert code == 1
    assert (
        "DRIFT001 committed base/device-plugins/amd/kustomization.yaml is rendered from the "
        "values but not committed" in out
    )
    assert "more committed files differ from a fresh render" in out


def _hand_edit(repo: Path) -> None:
    """What a hurried fix in the committed tree looks like: an unknown field in a base, and a
    whole new object in an overlay that no values produce."""
    ns = repo / "base/teams/ml-team/namespace-ml-team.yaml"
    ns.write_text(ns.read_text() + "bogus: true\n")
    unit = repo / "overlays/prod/team-ml-team"
    (unit / "configmap-ml-team-hotfix.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hotfix\n  namespace: ml-team\n"
        "data:\n  a: b\nextra: 1\n"
    )
    kust = unit / "kustomization.yaml"
    kust.write_text(
        kust.read_text().replace("resources:\n", "resources:\n- configmap-ml-team-hotfix.yaml\n")
    )


@pytest.mark.parametrize("drift", [True, False])
def test_a_hand_edit_of_the_committed_tree_is_caught_with_and_without_drift(
    values_dir: Path, tmp_path: Path, drift: bool
) -> None:
    repo = values_dir.parent
    cache = str(tmp_path / "cache")
    args = ["--cache-dir", cache, "--env", "prod"] + ([] if drift else ["--no-drift"])
    assert validate(values_dir, *args, drift=True)[0] == 0  # fills the cache
    _hand_edit(repo)
    code, out = validate(values_dir, *args, drift=True)
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


def test_drift_is_reported_when_the_values_checks_fail(values_dir: Path, write: Write) -> None:
    repo = values_dir.parent
    quota = repo / "base/teams/inference/resourcequota-inference-accelerators.yaml"
    quota.write_text(quota.read_text().replace("'8'", "'80'"))
    text = (values_dir / "teams/ml-team.yaml").read_text()
    write("teams/ml-team.yaml", text.replace("nvidia: 8", "nvidia: 1"))  # MIG004: jobs need 4
    code, out = validate(values_dir, "--no-cache", drift=True)
    assert code == 1
    assert "MIG004 team 'ml-team' needs 4 nvidia devices" in out
    assert (
        "DRIFT001 committed base/teams/inference/resourcequota-inference-accelerators.yaml "
        "differs from a fresh render of the values"
    ) in out


def test_values_that_do_not_load_still_get_the_committed_tree_checked(
    values_dir: Path, write: Write
) -> None:
    _hand_edit(values_dir.parent)
    write("teams/inference.yaml", "quota: {nvidia: many}\n")
    code, out = validate(values_dir, "--no-cache", "--env", "prod", drift=True)
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


def test_no_drift_with_nothing_committed_is_a_usage_error(values_dir: Path) -> None:
    for top in ("base", "overlays"):
        shutil.rmtree(values_dir.parent / top)
    result = invoke("validate", "--values", str(values_dir), "--no-drift", "--no-cache")
    assert result.exit_code == 2
    assert "no rendered output in" in result.output
    assert "run `render.py render` first, or pass --committed DIR" in result.output


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The unit paths of each call that builds units with the tools, in order."""
    from generator.validate import run as core

    calls: list[list[str]] = []
    run_tools = core._run_tools

    def spy(root: Path, paths: list[str], *args: Any) -> dict[str, dict[str, Any]]:
        calls.append(list(paths))
        return run_tools(root, paths, *args)

    monkeypatch.setattr(core, "_run_tools", spy)
    return calls


def test_units_with_equal_inputs_are_built_once_and_each_reported(
    values_dir: Path, extra_objects: list[Any], built: list[list[str]]
) -> None:
    # device-plugins is the same unit in staging and prod (same files at the same relative
    # paths): one build serves both, and each unit still gets its own findings.
    broken = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata("broken", namespace="kube-system", sources=["values/fleet.yaml"]),
        "data": {"a": "b"},
        "bogus": True,
    }
    extra_objects.append(("device-plugins", broken))
    code, out = validate(values_dir, "--no-cache")
    assert code == 1, out
    units = ("overlays/staging/device-plugins", "overlays/prod/device-plugins")
    assert len(built) == 1 and sum(u in built[0] for u in units) == 1
    for unit in units:
        assert f"K8S001 ConfigMap kube-system/broken ({unit}): additional properties" in out


def test_a_failed_build_is_not_shared_with_its_twin(
    values_dir: Path, extra_objects: list[Any], built: list[list[str]]
) -> None:
    # kustomize's message can name the folders it read: each twin of a failed unit is built itself.
    nameless = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata("", namespace="kube-system", sources=["values/fleet.yaml"]),
    }
    extra_objects.append(("device-plugins", nameless))
    code, out = validate(values_dir, "--no-cache")
    assert code == 1, out
    assert len(built) == 2 and len(built[1]) == 1  # the twin, after its first failed
    for env in ("staging", "prod"):
        line = next(ln for ln in out.splitlines() if f"build overlays/{env}/device-plugins" in ln)
        other = "prod" if env == "staging" else "staging"
        assert "KUS001" in line and f"/{other}/" not in line, line


def test_a_cached_run_of_an_edited_tree_equals_an_uncached_one(
    values_dir: Path, write: Write, tmp_path: Path
) -> None:
    # The cache (filled before the edits) and the units built once for every environment must
    # give exactly the findings, drift and counts of a run that builds every unit itself.
    cache = str(tmp_path / "cache")
    assert validate(values_dir, "--cache-dir", cache, "--output", "json", drift=True)[0] == 0
    text = (values_dir / "teams/inference.yaml").read_text()
    write("teams/inference.yaml", text.replace("nvidia: 4", "nvidia: 3"))
    render(values_dir)
    _hand_edit(values_dir.parent)  # a base shared by both environments, and one overlay
    runs, cached = [], []
    for args in (["--cache-dir", cache], ["--cache-dir", cache], ["--no-cache"]):
        code, out = validate(values_dir, *args, "--output", "json", drift=True)
        doc = json.loads(out)
        cached.append(doc["stats"]["cached units"])
        stats = {k: v for k, v in doc["stats"].items() if k not in ("cached units", "timings")}
        runs.append((code, doc["findings"], stats))
    assert runs[0][0] == 1 and any(f["code"] == "K8S001" for f in runs[0][1])
    assert any(f["code"] == "DRIFT001" for f in runs[0][1])
    assert 0 < cached[0] < cached[1] == doc["stats"]["units"] and cached[2] == 0
    assert runs[0] == runs[1] == runs[2]
