"""The render command: output, drift detection, atomicity, determinism, exit codes."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from generator.render.writer import read_tree
from tests.fixtures import ROOT, TWO_TEAMS_ML, cli, render_with_seed, tree, two_teams


def writer(values_dir: Path) -> Callable[[str, str], None]:
    """Write (or overwrite) a file of the values tree: write("teams/x.yaml", text)."""

    def write(rel: str, text: str) -> None:
        (values_dir / rel).write_text(text, encoding="utf-8")

    return write


def test_render_writes_base_and_overlays(tmp_path: Path) -> None:
    values_dir = two_teams(tmp_path)
    out = tmp_path / "out"
    code, output = cli("render", "--values", str(values_dir), "--out", str(out))
    assert code == 0, output
    tree = read_tree(out)
    assert (
        "base/device-plugins/nvidia/daemonset-accelerator-plugins-nvidia-device-plugin.yaml" in tree
    )
    for env in ("staging", "prod"):
        for unit in (
            "device-plugins",
            "node-config",
            "monitoring",
            "team-ml-team",
            "team-inference",
            "argocd",
        ):
            assert f"overlays/{env}/{unit}/kustomization.yaml" in tree
    assert "CAP001 warning" in output


def test_default_output_is_the_folder_holding_the_values(tmp_path: Path) -> None:
    values_dir = two_teams(tmp_path)
    code, output = cli("render", "--values", str(values_dir))
    assert code == 0, output
    assert (values_dir.parent / "overlays" / "prod" / "argocd" / "kustomization.yaml").is_file()


def test_findings_exit_1_and_write_nothing(tmp_path: Path) -> None:
    values_dir = two_teams(tmp_path)
    write = writer(values_dir)
    out = tmp_path / "out"
    assert cli("render", "--values", str(values_dir), "--out", str(out))[0] == 0
    before = read_tree(out)
    write("teams/ml-team.yaml", "quota:\n  nvidia: 8\n  nvidia: 8\n")
    write("teams/inference.yaml", "quota: {nvidia: -1}\n")
    code, output = cli("render", "--values", str(values_dir), "--out", str(out))
    assert code == 1
    assert "values/teams/ml-team.yaml:3:3: YAML001 duplicate key 'nvidia'" in output
    assert "values/teams/inference.yaml:1:17: VAL001 -1 is less than the minimum of 0" in output
    assert "nothing written" in output
    assert read_tree(out) == before


def test_quota_over_capacity_fails_with_file_and_line(
    tmp_path: Path,
) -> None:
    values_dir = two_teams(tmp_path)
    write = writer(values_dir)
    fleet = (values_dir / "fleet.yaml").read_text()
    write("fleet.yaml", fleet.replace("allowOvercommit: true", "allowOvercommit: false"))
    write("teams/ml-team.yaml", "quota:\n  ascend: 64\n")
    code, output = cli("render", "--values", str(values_dir), "--out", str(tmp_path / "o"))
    assert code == 1
    assert "values/teams/ml-team.yaml:2:11: CAP001 quotas for ascend" in output
    assert not (tmp_path / "o" / "base").exists()


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert cli("render", "--values", str(tmp_path / "nope"))[0] == 2
    assert cli("render", "--bogus")[0] == 2
    code, output = cli("render", "--values", str(tree(tmp_path)), "--env", "qa", "--check")
    assert code == 2 and "unknown environment 'qa'" in output


def test_check_passes_on_fresh_output_and_reports_every_kind_of_drift(
    tmp_path: Path,
) -> None:
    values_dir = two_teams(tmp_path)
    out = tmp_path / "out"
    cli("render", "--values", str(values_dir), "--out", str(out))
    assert cli("render", "--values", str(values_dir), "--out", str(out), "--check")[0] == 0
    quota = out / "base/teams/ml-team/resourcequota-ml-team-accelerators.yaml"
    # ml-team's 8 NPUs (TWO_TEAMS_ML), edited by hand
    quota.write_text(quota.read_text().replace("Ascend910: '8'", "Ascend910: '32'"))
    (out / "overlays/prod/extra.yaml").write_text("kind: ConfigMap\n")
    (out / "base/device-plugins/nvidia/kustomization.yaml").unlink()
    code, output = cli("render", "--values", str(values_dir), "--out", str(out), "--check")
    assert code == 1
    assert "changed: base/teams/ml-team/resourcequota-ml-team-accelerators.yaml" in output
    assert "-    requests.huawei.com/Ascend910: '32'" in output
    assert "stale: overlays/prod/extra.yaml" in output
    assert "missing: base/device-plugins/nvidia/kustomization.yaml" in output


def test_env_renders_one_environment_and_keeps_the_others(
    tmp_path: Path,
) -> None:
    values_dir = two_teams(tmp_path)
    write = writer(values_dir)
    out = tmp_path / "out"
    cli("render", "--values", str(values_dir), "--out", str(out))
    prod_before = {k: v for k, v in read_tree(out).items() if k.startswith("overlays/prod/")}
    write("environments/staging.yaml", "teams:\n  ml-team:\n    quota: {nvidia: 5}\n")
    write("environments/prod.yaml", "teams:\n  ml-team:\n    quota: {nvidia: 6}\n")
    assert cli("render", "--values", str(values_dir), "--out", str(out), "--env", "staging")[0] == 0
    after = read_tree(out)
    assert {k: v for k, v in after.items() if k.startswith("overlays/prod/")} == prod_before
    patch = after["overlays/staging/team-ml-team/patches/resourcequota-ml-team-accelerators.yaml"]
    assert "value: '5'" in patch


def test_output_is_byte_identical_whatever_the_hash_seed_or_file_order(tmp_path: Path) -> None:
    source = two_teams(tmp_path)
    a = render_with_seed(source, tmp_path / "a", "1")
    # Same values, files created in reverse order (directory order differs on most filesystems).
    shuffled = tmp_path / "shuffled" / "values"
    for src in sorted(source.rglob("*"), reverse=True):
        dest = shuffled / src.relative_to(source)
        if src.is_file():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
    b = render_with_seed(shuffled, tmp_path / "b", "12345")
    assert a == b


def test_committed_output_matches_a_fresh_render(request: pytest.FixtureRequest) -> None:
    """The golden output is the committed base/ and overlays/; --update-golden re-renders it."""
    if request.config.getoption("--update-golden"):
        assert cli("render", "--values", str(ROOT / "values"), "--out", str(ROOT))[0] == 0
        assert cli("schema", "--out", str(ROOT / "schemas"))[0] == 0
    code, output = cli("render", "--values", str(ROOT / "values"), "--out", str(ROOT), "--check")
    assert code == 0, output + "\n(run pytest --update-golden to accept the new output)"


def test_committed_schemas_match_the_code() -> None:
    from generator.values import schema

    for kind in schema.SCHEMA_KINDS:
        committed = (ROOT / "schemas" / f"{kind}.schema.json").read_text()
        assert committed == schema.schema_text(kind), f"schemas/{kind}.schema.json is stale"


def test_schema_command_prints_valid_json() -> None:
    import json

    code, output = cli("schema", "--kind", "team")
    assert code == 0
    assert json.loads(output)["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_example_values_files_point_editors_at_their_schema() -> None:
    for path in (ROOT / "values").rglob("*.yaml"):
        first = path.read_text().splitlines()[0]
        assert first.startswith("# yaml-language-server: $schema="), path
        target = (path.parent / first.split("=", 1)[1]).resolve()
        assert target.is_file(), f"{path}: {target} does not exist"


def test_every_rendered_object_names_its_values_file() -> None:
    import yaml

    for path in sorted((ROOT / "base").rglob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        obj = yaml.safe_load(path.read_text())
        source = obj["metadata"]["annotations"]["accel-gitops.io/source"]
        assert all((ROOT / s.strip()).is_file() for s in source.split(",")), path


def test_help_on_every_command() -> None:
    for cmd in ([], ["render"], ["schema"]):
        code, output = cli(*cmd, "--help")
        assert code == 0 and "Usage" in output


def test_every_rendered_object_knows_its_values_line(tmp_path: Path) -> None:
    """validate points findings at these: the workload's key, the team's quota, the vendor."""
    from generator.render.layout import render_tree
    from generator.values import loader as values

    rendered = render_tree(values.load(two_teams(tmp_path)))
    # TWO_TEAMS_ML: quota (3 lines), jobs:, then the key of cuda-training-job on line 5.
    assert TWO_TEAMS_ML.splitlines()[4] == "  cuda-training-job:"
    job_line = 5
    for unit in rendered.units:
        for obj in unit.objects:
            key = (
                obj["apiVersion"],
                obj["kind"],
                obj["metadata"].get("namespace", ""),
                obj["metadata"]["name"],
            )
            loc = unit.origins[key]
            assert loc.file.startswith("values/") and loc.line > 0, (unit.path, key)
            if obj["kind"] == "Job" and obj["metadata"]["name"] == "cuda-training-job":
                assert (loc.file, loc.line) == ("values/teams/ml-team.yaml", job_line)
