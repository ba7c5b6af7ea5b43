"""Verdicts that must be right and point at the right line: each through the real CLI, on a
values tree made for it, with the exit code and an untouched output."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.values import schema
from tests.fixtures import FLEET, NVIDIA, cli, context, render_refused, tree
from tests.repos import commit_all, init


def test_a_warning_in_one_layer_never_hides_an_error_in_another(tmp_path: Path) -> None:
    values = tree(
        tmp_path,
        {
            "fleet.yaml": FLEET + "capacity: {allowOvercommit: true}\n",
            "teams/ml.yaml": "quota:\n  nvidia: 8\n",
            "teams/b.yaml": "quota:\n  nvidia: 8\n",
            "environments/prod.yaml": "fleet:\n  capacity: {allowOvercommit: false}\n",
        },
    )
    output = render_refused(values)
    assert (
        "values/teams/ml.yaml:2:11: CAP001 warning: quotas for nvidia (nvidia.com/gpu) add up to "
        "16 devices (b 8, ml 8) but its pools hold 8 (overcommit allowed by "
        "capacity.allowOvercommit) in environment 'staging' (at $.quota.nvidia)\n"
    ) in output
    assert (
        "values/teams/ml.yaml:2:11: CAP001 quotas for nvidia (nvidia.com/gpu) add up to 16 "
        "devices (b 8, ml 8) but its pools hold 8 in environment 'prod' (at $.quota.nvidia); "
        "lower the quotas"
    ) in output
    assert "1 error(s), 1 warning(s)" in output


def test_a_finding_names_every_environment_it_holds_in(tmp_path: Path) -> None:
    # Two of three environments shrink the pool to one node: the quotas of 4 and 4 no longer
    # fit (each fits alone: one quota over the pools alone would be CAP003's).
    smaller = "vendors:\n  nvidia:\n    pools:\n      - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1]}\n"
    values = tree(
        tmp_path,
        {
            "fleet.yaml": FLEET.replace("[staging, prod]", "[dev, staging, prod]"),
            "teams/ml.yaml": "quota:\n  nvidia: 4\n",
            "teams/b.yaml": "quota:\n  nvidia: 4\n",
            "environments/prod.yaml": smaller,
            "environments/staging.yaml": smaller,
        },
    )
    output = render_refused(values)
    assert [line for line in output.splitlines() if "CAP001" in line] == [
        "values/teams/ml.yaml:2:11: CAP001 quotas for nvidia (nvidia.com/gpu) add up to 8 devices "
        "(b 4, ml 4) but its pools hold 4 in environments 'prod', 'staging' (at $.quota.nvidia); lower "
        "the quotas, add nodes to the vendor's pools, or allow a bounded overcommit with "
        "capacity.overcommitRatio (e.g. 1.5) in values/fleet.yaml"
    ]


def test_one_problem_in_every_layer_is_reported_once_without_naming_them(tmp_path: Path) -> None:
    both = {"teams/ml.yaml": "quota:\n  nvidia: 6\n", "teams/b.yaml": "quota:\n  nvidia: 6\n"}
    values = tree(tmp_path, both)
    output = render_refused(values)
    assert [line for line in output.splitlines() if "CAP001" in line] == [
        "values/teams/ml.yaml:2:11: CAP001 quotas for nvidia (nvidia.com/gpu) add up to 12 devices "
        "(b 6, ml 6) but its pools hold 8 (at $.quota.nvidia); lower the quotas, add nodes to the "
        "vendor's pools, or allow a bounded overcommit with capacity.overcommitRatio (e.g. 1.5) "
        "in values/fleet.yaml"
    ]


# ---- JSON Schema patterns mean what they mean in ECMA-262 -----------------------------------


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {"teams/ml.yaml": 'namespaces: ["ml\\n"]\nquota: {nvidia: 4}\n'},
            "values/teams/ml.yaml:1:14: VAL001 'ml\\n' contains the control character U+000A "
            "(at $.namespaces[0]); lower-case letters, digits and '-', at most 63 characters",
        ),
        (
            {"vendors/nvidia.yaml": 'nodeLabels: {accelerator: "nvidia-gpu\\n"}\n' + NVIDIA},
            "values/vendors/nvidia.yaml:1:27: VAL001 'nvidia-gpu\\n' contains the control "
            "character U+000A (at $.nodeLabels.accelerator)",
        ),
        (
            {"teams/ml.yaml": 'quota: {"nvidia\\n": 4}\n'},
            "values/teams/ml.yaml:1:9: VAL001 invalid name 'nvidia\\n': 'nvidia\\n' contains the "
            "control character U+000A (at $.quota['nvidia\\n']); lower-case letters, digits and '-', at most 63 characters",
        ),
        (
            {"fleet.yaml": FLEET.replace('"1.33"', '"1.33\\n"')},
            "values/fleet.yaml:2:20: VAL001 '1.33\\n' contains the control character U+000A "
            "(at $.kubernetesVersion)",
        ),
        (
            {"vendors/nvidia.yaml": 'devicePlugin: {version: "v1\\u202e"}\n' + NVIDIA},
            "values/vendors/nvidia.yaml:1:25: VAL001 'v1\\u202e' contains the control character "
            "U+202E (at $.devicePlugin.version); an image reference without spaces or control "
            "characters",
        ),
    ],
)
def test_a_trailing_newline_or_control_character_never_passes_a_pattern(
    tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    output = render_refused(tree(tmp_path, files))
    assert expected in output.splitlines(), output


def test_every_schema_pattern_is_an_ecma_262_pattern_run_by_regress() -> None:
    patterns: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            assert "patternProperties" not in node  # would run with Python's re
            if isinstance(node.get("pattern"), str):
                patterns.append(node["pattern"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema.SCHEMAS)
    assert len(patterns) > 20
    for pattern in patterns:
        schema.ecma(pattern)  # compiles as ECMA-262
        # anchored at the end, a newline after a matching text does not match
        if pattern.endswith("$") and schema.matches(pattern, "a"):
            assert not schema.matches(pattern, "a\n"), pattern


def test_a_file_name_with_a_control_character_is_refused(tmp_path: Path) -> None:
    output = render_refused(tree(tmp_path, {"teams/ml\t.yaml": "quota: {nvidia: 1}\n"}))
    assert (
        "values/teams/ml\t.yaml: NAME001 file name 'ml\\t' is not a valid DNS-1123 label: it "
        "contains the control character U+0009; use lower-case letters, digits and '-'"
    ) in output.splitlines()


def test_name006_refuses_a_name_or_label_ending_in_a_newline(tmp_path: Path) -> None:
    from generator.policy.registry import run_rules
    from generator.values import loader as values
    from generator.vocab.units import Unit
    from tests.fixtures import ml_tree

    prod = values.load(ml_tree(tmp_path)).envs["prod"]
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm\n", "namespace": "ml-team", "labels": {"team": "ml\n"}},
    }
    unit = Unit("prod", "team-ml-team", "overlays/prod/team-ml-team", (obj,), {})
    assert [
        (f.code, f.message.split(": ", 1)[1]) for f in run_rules(context(prod), unit, [obj])
    ] == [
        (
            "NAME006",
            "name 'cm\\n' is not a valid DNS-1123 subdomain (it contains the control character "
            "U+000A)",
        ),
        (
            "NAME006",
            "label team='ml\\n': not a valid label value (at most 63 characters) (it contains "
            "the control character U+000A)",
        ),
    ]


# ---- reserved namespaces --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("namespace", "owner"),
    [
        ("kube-system", "Kubernetes system components"),
        ("default", "objects created without a namespace"),
        ("kube-public", "Kubernetes public cluster information"),
        ("kube-node-lease", "node heartbeats"),
        ("gitops", "Argo CD"),
        ("accelerator-plugins", "nvidia's device plugin"),
        ("metrics", "the fleet's monitoring"),
    ],
)
def test_a_team_cannot_claim_a_reserved_namespace(
    tmp_path: Path, namespace: str, owner: str
) -> None:
    fleet = FLEET + "argocd: {namespace: gitops}\nmonitoring: {namespace: metrics}\n"
    team = f"namespaces:\n  - ml\n  - {namespace}\nquota: {{nvidia: 2}}\n"
    output = render_refused(tree(tmp_path, {"fleet.yaml": fleet, "teams/ml.yaml": team}))
    assert (
        f"values/teams/ml.yaml:3:5: NAME007 team 'ml' claims namespace {namespace!r}, which "
        f"belongs to {owner} (at $.namespaces[1]); give the team its own namespace"
    ) in output.splitlines()


def test_a_team_named_after_a_reserved_namespace_is_refused_at_its_file(tmp_path: Path) -> None:
    output = render_refused(tree(tmp_path, {"teams/kube-system.yaml": "quota: {nvidia: 1}\n"}))
    assert (
        "values/teams/kube-system.yaml:1:1: NAME007 team 'kube-system' claims namespace "
        "'kube-system' (its file name, the default namespace), which belongs to Kubernetes "
        "system components (at $.namespaces[0]); give the team its own namespace in "
        "namespaces:, or rename the file"
    ) in output.splitlines()


def test_an_environment_that_moves_argocd_onto_a_team_namespace_is_refused(
    tmp_path: Path,
) -> None:
    output = render_refused(
        tree(tmp_path, {"environments/prod.yaml": "fleet:\n  argocd: {namespace: ml}\n"})
    )
    assert (
        "values/teams/ml.yaml:1:1: NAME007 team 'ml' claims namespace 'ml' (its file name, the "
        "default namespace), which belongs to Argo CD in environment 'prod' (at "
        "$.namespaces[0]); give the team its own namespace in namespaces:, or rename the file"
    ) in output.splitlines()


# ---- objects that collide in the output -----------------------------------------------------

CLONE = "catalog: nvidia\npools:\n  - {name: h100, model: H100, devicesPerNode: 8, nodes: [h1]}\n"


def test_a_catalog_clone_that_collides_is_refused_at_its_own_file(tmp_path: Path) -> None:
    output = render_refused(tree(tmp_path, {"vendors/nvidia-h100.yaml": CLONE}))
    found = [line for line in output.splitlines() if "NAME008" in line]
    assert found == [
        "values/vendors/nvidia-h100.yaml:1:1: NAME008 DaemonSet "
        "accelerator-exporters/dcgm-exporter would be emitted twice, by vendor 'nvidia' "
        "(values/vendors/nvidia.yaml:1:1) and by vendor 'nvidia-h100': Argo CD would apply one "
        "over the other; give one of them a name of its own (devicePlugin.name, exporter.name), "
        "or drop the duplicate",
        "values/vendors/nvidia-h100.yaml:1:1: NAME008 DaemonSet "
        "accelerator-plugins/nvidia-device-plugin would be emitted twice, by vendor 'nvidia' "
        "(values/vendors/nvidia.yaml:1:1) and by vendor 'nvidia-h100': Argo CD would apply one "
        "over the other; give one of them a name of its own (devicePlugin.name, exporter.name), "
        "or drop the duplicate",
        "values/vendors/nvidia-h100.yaml:1:1: NAME008 PodMonitor "
        "accelerator-monitoring/dcgm-exporter would be emitted twice, by vendor 'nvidia' "
        "(values/vendors/nvidia.yaml:1:1) and by vendor 'nvidia-h100': Argo CD would apply one "
        "over the other; give one of them a name of its own (devicePlugin.name, exporter.name), "
        "or drop the duplicate",
    ]
    # Nothing points into the installed package, whatever the check.
    assert "generator/" not in output


def test_renaming_the_clones_plugin_and_exporter_points_at_those_keys(tmp_path: Path) -> None:
    clone = (
        "catalog: nvidia\ndevicePlugin:\n  name: nvidia-device-plugin\n" + CLONE.split("\n", 1)[1]
    )
    output = render_refused(tree(tmp_path, {"vendors/nvidia-h100.yaml": clone}))
    assert any(
        line.startswith("values/vendors/nvidia-h100.yaml:3:3: NAME008 DaemonSet ")
        for line in output.splitlines()
    ), output


def test_two_workloads_that_emit_one_object_are_refused(tmp_path: Path) -> None:
    team = """\
quota: {nvidia: 4}
services:
  web:
    images: {nvidia: registry.example.com/web:1}
    tracks: {nvidia: {replicas: 1}}
  web-nvidia:
    images: {nvidia: registry.example.com/web:1}
    tracks: {nvidia: {replicas: 1}}
"""
    output = render_refused(tree(tmp_path, {"teams/ml.yaml": team}))
    assert [line for line in output.splitlines() if "NAME008" in line] == [
        "values/teams/ml.yaml:3:3: NAME008 Service ml/web-nvidia would be emitted twice, by "
        "workloads/ml: Argo CD would apply one over the other; rename one of the two workloads, "
        "or drop the duplicate"
    ]


# ---- pods larger than any node --------------------------------------------------------------


def test_a_track_whose_pods_outgrow_every_node_is_refused(tmp_path: Path) -> None:
    team = """\
quota: {nvidia: 8}
services:
  web:
    images: {nvidia: registry.example.com/web:1}
    tracks:
      nvidia: {devicesPerReplica: 5, replicas: 1}
"""
    # SCH004 (generator/workloads/scheduling_checks.py) refuses it at the track's line.
    output = render_refused(tree(tmp_path, {"teams/ml.yaml": team}))
    assert output.splitlines() == [
        "values/teams/ml.yaml:6:35: SCH004 Deployment 'web-nvidia' asks for 5 nvidia devices per "
        "pod, but a node of pool 'a100' has 4 (at $.services.web.tracks.nvidia.devicesPerReplica); "
        "ask for at most 4 devices per pod (more pods for more devices), or pick a model whose "
        "nodes have enough",
        "render: 1 error(s), 0 warning(s); nothing written",
    ]


def test_a_pod_that_fits_the_pool_of_its_model_passes(tmp_path: Path) -> None:
    vendor = NVIDIA + "  - {name: h100, model: H100, devicesPerNode: 8, nodes: [h1]}\n"
    team = (
        "quota: {nvidia: 8}\njobs:\n  train:\n    vendor: nvidia\n    devices: 8\n    model: H100\n"
    )
    team += "    images: {nvidia: registry.example.com/train:1}\n"
    values = tree(tmp_path, {"vendors/nvidia.yaml": vendor, "teams/ml.yaml": team})
    code, output = cli("render", "--values", str(values), "--out", str(tmp_path / "out"))
    assert code == 0, output


# ---- kubernetesVersion ----------------------------------------------------------------------


@pytest.mark.parametrize("version", ["1.24", "1.99", "1.38.2"])
def test_a_kubernetes_version_without_schemas_is_one_finding_at_its_line(
    tmp_path: Path, version: str
) -> None:
    from generator.toolchain import schemas

    versions = schemas.k8s_schema_versions()
    lo, hi = versions[0].removesuffix(".0"), versions[-1].removesuffix(".0")
    assert (lo, hi) == ("1.25", "1.37")  # the pinned kubernetes-validate's schema sets
    values = tree(tmp_path, {"fleet.yaml": FLEET.replace('"1.33"', f'"{version}"')})
    output = render_refused(values)
    assert output.splitlines() == [
        f"values/fleet.yaml:2:20: VER001 kubernetesVersion {version!r} is outside the versions "
        f"the pinned schemas cover ({lo} to {hi}) (at $.kubernetesVersion); set a version from "
        f"{lo} to {hi} (the Kubernetes versions this accel-gitops has schemas for)",
        "render: 1 error(s), 0 warning(s); nothing written",
    ]
    # validate stops there: no finding per object from kubeconform
    code, out = cli("validate", "--values", str(values), "--no-drift", "--no-cache")
    assert code == 1
    assert [line.split(" ")[1] for line in out.splitlines() if line.startswith("values/")] == [
        "VER001"
    ]


def test_a_pull_request_sees_a_sum_over_capacity_at_the_line_it_changed(tmp_path: Path) -> None:
    """8 GPUs, overcommit allowed. The base has ml 8 and b 1; the pull request raises b to 2.
    CAP001 is at ml's quota (the largest) in a plain run, and at b's line, the one the pull
    request changed, with --changed-since the base."""
    repo = init(tmp_path / "fleet")
    fleet = FLEET + "capacity: {allowOvercommit: true}\n"
    values = tree(repo, {"fleet.yaml": fleet, "teams/ml.yaml": "quota:\n  nvidia: 8\n"})
    (values / "teams/b.yaml").write_text("owners: [b@example.com]\nquota:\n  nvidia: 1\n")
    assert cli("render", "--values", str(values))[0] == 0
    commit_all(repo, "base")
    (values / "teams/b.yaml").write_text("owners: [b@example.com]\nquota:\n  nvidia: 2\n")
    assert cli("render", "--values", str(values))[0] == 0
    args = ("validate", "--values", str(values), "--no-cache")
    _, plain = cli(*args)
    assert "values/teams/ml.yaml:2:11: CAP001 warning: quotas for nvidia" in plain
    code, changed = cli(*args, "--changed-since", "HEAD")
    assert code == 0, changed
    assert "values/teams/b.yaml:3:11: CAP001 warning: quotas for nvidia" in changed
    assert "values/teams/ml.yaml:2:11: CAP001" not in changed
    code, refused = cli(*args, "--changed-since", "no-such-branch")
    assert code == 2
    assert "'no-such-branch' names no commit" in refused
