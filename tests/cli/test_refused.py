"""Inputs that must be refused, each through the real CLI: the message, the values file's line and
column, exit 1 and an output folder left as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fixtures import FLEET, NVIDIA, render_refused, tree

# (file, its bytes, the finding line expected, in full)
YAML_CASES: list[tuple[str, bytes, str]] = [
    (
        "teams/ml.yaml",
        b"quota:\n  nvidia: 4\nowners: [a\x00b]\n",
        "values/teams/ml.yaml:3:11: YAML001 character U+0000 is not allowed in a values file; "
        "remove it",
    ),
    (
        "teams/ml.yaml",
        b"\xef\xbb\xbfquota:\n  nvidia: 4\n",
        "values/teams/ml.yaml:1:1: YAML001 the file starts with a byte order mark (U+FEFF); "
        "save the file as UTF-8 without a byte order mark",
    ),
    (
        "teams/ml.yaml",
        b"--- !team\nquota: {nvidia: 4}\n",
        "values/teams/ml.yaml:1:5: YAML001 tag '!team' is not allowed; values files hold plain "
        "strings, numbers, booleans, lists and maps",
    ),
    (
        "teams/ml.yaml",
        b"quota: {nvidia: 4}\nowners: [!!binary aGk=]\n",
        "values/teams/ml.yaml:2:10: YAML001 tag 'tag:yaml.org,2002:binary' is not allowed; "
        "values files hold plain strings, numbers, booleans, lists and maps",
    ),
    (
        "teams/ml.yaml",
        b"quota: !!omap [{nvidia: 4}]\n",
        "values/teams/ml.yaml:1:8: YAML001 tag 'tag:yaml.org,2002:omap' is not allowed; values "
        "files hold plain strings, numbers, booleans, lists and maps",
    ),
    (
        "teams/ml.yaml",
        b"quota:\n  !!str nvidia: 4\n",
        "values/teams/ml.yaml:2:3: YAML001 a tag on a mapping key is not allowed; keys are plain "
        "text: remove the tag",
    ),
    (
        "vendors/nvidia.yaml",
        b"pools:\n  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1, n2]}\n"
        b"since: !!timestamp 2024-01-01\n",
        "values/vendors/nvidia.yaml:3:8: YAML001 tag 'tag:yaml.org,2002:timestamp' is not "
        "allowed; values files hold plain strings, numbers, booleans, lists and maps",
    ),
    (
        "vendors/nvidia.yaml",
        b"pools:\n  - {name: a100, model: A100, devicesPerNode: 4, nodes: ["
        + b"n, " * 50_001
        + b"]}\n",
        "values/vendors/nvidia.yaml:2:150022: YAML001 more than 50000 values in one file",
    ),
]


@pytest.mark.parametrize(("rel", "data", "expected"), YAML_CASES)
def test_unsafe_yaml_is_refused_at_its_position(
    tmp_path: Path, rel: str, data: bytes, expected: str
) -> None:
    values = tree(tmp_path)
    (values / rel).write_bytes(data)
    assert expected in render_refused(values).splitlines()


# ---- YAML 1.1 types where the schema wants text ---------------------------------------------


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {"teams/ml.yaml": "podSecurity: on\nquota: {nvidia: 1}\n"},
            "values/teams/ml.yaml:1:14: VAL001 on is read by YAML 1.1 as the boolean true, not "
            "as the text 'on' (at $.podSecurity); quote it: 'on'",
        ),
        (
            {"vendors/nvidia.yaml": "nodeLabels: {gpu: yes}\n" + NVIDIA},
            "values/vendors/nvidia.yaml:1:19: VAL001 yes is read by YAML 1.1 as the boolean "
            "true, not as the text 'yes' (at $.nodeLabels.gpu); quote it: 'yes'",
        ),
        (
            {"vendors/nvidia.yaml": NVIDIA.replace("model: A100", "model: 0755")},
            "values/vendors/nvidia.yaml:2:25: VAL001 0755 is read by YAML 1.1 as the number "
            "493, not as the text '0755' (at $.pools[0].model); quote it: '0755'",
        ),
        (
            {"vendors/nvidia.yaml": "devicePlugin: {version: 1.10}\n" + NVIDIA},
            "values/vendors/nvidia.yaml:1:25: VAL001 1.10 is read by YAML 1.1 as the number 1.1, "
            "not as the text '1.10' (at $.devicePlugin.version); quote it: '1.10'",
        ),
        (
            {"fleet.yaml": FLEET.replace("[staging, prod]", "[staging, no]")},
            "values/fleet.yaml:3:25: VAL001 no is read by YAML 1.1 as the boolean false, not as "
            "the text 'no' (at $.environments[1]); quote it: 'no'",
        ),
    ],
)
def test_unquoted_yaml_11_booleans_and_numbers_are_refused_never_coerced(
    tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    assert expected in render_refused(tree(tmp_path, files)).splitlines()


# ---- paths ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "shown"),
    [("../other", "'../other'"), ("/srv/gitops", "'/srv/gitops'"), ("a/./b", "'a/./b'")],
)
def test_a_repository_path_outside_the_repository_is_refused(
    tmp_path: Path, path: str, shown: str
) -> None:
    fleet = FLEET.replace("targetRevision: main}", f"targetRevision: main, path: {path}}}")
    output = render_refused(tree(tmp_path, {"fleet.yaml": fleet}))
    line = next(line for line in output.splitlines() if "VAL001" in line)
    assert line.startswith("values/fleet.yaml:4:") and f"VAL001 {shown} does not match" in line
    assert line.endswith(
        "(at $.git.path); a relative folder inside the repository: no leading '/', no '.' or "
        "'..' part"
    )


def test_a_symbolic_link_to_a_file_outside_the_tree_is_not_followed(tmp_path: Path) -> None:
    values = tree(tmp_path)
    secret = tmp_path / "secret.yaml"
    secret.write_text("quota: {nvidia: 1}\n")
    (values / "teams" / "ops.yaml").symlink_to(secret)
    output = render_refused(values)
    assert (
        f"values/teams/ops.yaml: VAL002 symbolic link leads out of the values tree (to {secret}); "
        "values are read from inside the values tree only: copy the file in"
    ) in output.splitlines()


def test_a_symbolic_link_to_a_folder_outside_the_tree_is_not_followed(tmp_path: Path) -> None:
    values = tree(tmp_path, {"teams/ml.yaml": None})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "ml.yaml").write_text("quota: {nvidia: 1}\n")
    (values / "teams").symlink_to(elsewhere, target_is_directory=True)
    output = render_refused(values)
    assert (
        f"values/teams: VAL002 symbolic link leads out of the values tree (to {elsewhere}); "
        "values are read from inside the values tree only: copy the file in"
    ) in output.splitlines()


def test_a_symbolic_link_inside_the_tree_is_read(tmp_path: Path) -> None:
    from tests.fixtures import cli

    values = tree(tmp_path)
    (values / "teams" / "ml.yaml").rename(values / "teams" / "shared.yml.txt")
    (values / "teams" / "ml.yaml").symlink_to(values / "teams" / "shared.yml.txt")
    code, output = cli("render", "--values", str(values), "--out", str(tmp_path / "out"))
    # the link is followed; the stray target is reported as a file in the wrong place
    assert code == 1 and "values/teams/shared.yml.txt: VAL002 unexpected entry" in output
    assert "symbolic link" not in output


def test_a_symbolic_link_loop_inside_the_tree_is_refused(tmp_path: Path) -> None:
    values = tree(tmp_path)
    (values / "teams" / "loop.yaml").symlink_to(values / "teams" / "loop.yaml")
    output = render_refused(values)
    assert (
        "values/teams/loop.yaml: VAL002 symbolic link that loops or points to nothing; replace "
        "it with the file itself"
    ) in output.splitlines()


def test_a_values_tree_that_is_a_symbolic_link_loop_is_refused(tmp_path: Path) -> None:
    values = tmp_path / "values"
    os.symlink(values, values)
    output = render_refused(values)
    assert (
        "values: VAL002 the values tree is a symbolic link that loops or points to nothing; "
        "point --values at the folder itself"
    ) in output.splitlines()
