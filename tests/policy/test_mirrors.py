"""The mirror checks (generator/policy/mirrors.py): MIR001 a registry mirror that is not a
registry host and path, MIR002 a chart repository mirror that is not an http(s) URL or an OCI
registry path, MIR003 mirrors that a chart's shared image field cannot hold, MIR004 a chart
mirror of a repository no add-on uses. Each case is a values tree made for it, with the whole
finding written out at its file, line and column."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.policy import mirrors
from generator.policy.registry import CHECKS
from generator.values import loader as values
from tests.fixtures import PROD_FLEET, cli, context, tree

CASES: dict[str, tuple[str, list[str]]] = {
    # line 7: a key with a scheme; line 8: a mirror whose first part is no host.
    "MIR001": (
        """\
mirrors:
  registries:
    https://registry.k8s.io: mirror.example.cn/k8s
    nvcr.io: mirror/nvcr
""",
        [
            "values/fleet.yaml:7:5: MIR001 registry mirror 'https://registry.k8s.io': the "
            "registry 'https://registry.k8s.io' has a scheme: a registry is named without one "
            "(at $.mirrors.registries['https://registry.k8s.io']); write a registry host and "
            "optional path, without a scheme (e.g. registry.k8s.io, or mirror.example.cn/k8s)",
            "values/fleet.yaml:8:14: MIR001 registry mirror 'nvcr.io': the mirror 'mirror/nvcr' "
            "starts with 'mirror', which is no host (no '.' or ':', not localhost): an image "
            "named so is pulled from Docker Hub, docker.io/mirror/nvcr "
            "(at $.mirrors.registries['nvcr.io']); write a registry host and optional path, "
            "without a scheme (e.g. registry.k8s.io, or mirror.example.cn/k8s)",
        ],
    ),
    # line 7: an oci:// mirror; line 8: a key with upper-case path parts and a space.
    "MIR002": (
        """\
mirrors:
  charts:
    https://helm.ngc.nvidia.com/nvidia: oci://mirror.example.cn/nvidia
    registry.k8s.io/NFD charts: https://charts.example.cn/nfd
""",
        [
            "values/fleet.yaml:7:41: MIR002 chart repository mirror "
            "'https://helm.ngc.nvidia.com/nvidia': the mirror 'oci://mirror.example.cn/nvidia' "
            "starts with oci://, which Argo CD's Helm source does not take: it names an OCI "
            "repository by its registry path "
            "(at $.mirrors.charts['https://helm.ngc.nvidia.com/nvidia']); write an http(s) URL "
            "(https://charts.example.cn/nvidia) or an OCI registry path without oci:// "
            "(mirror.example.cn/charts)",
            "values/fleet.yaml:8:5: MIR002 chart repository mirror 'registry.k8s.io/NFD charts': "
            "the repository 'registry.k8s.io/NFD charts' is neither an http(s) URL nor an OCI "
            "registry path: it is not a registry host and path (a host of letters, digits, '-' "
            "and '.', an optional :port, then lower-case path parts separated by '/') "
            "(at $.mirrors.charts['registry.k8s.io/NFD charts']); write an http(s) URL "
            "(https://charts.example.cn/nvidia) or an OCI registry path without oci:// "
            "(mirror.example.cn/charts)",
        ],
    ),
    # Volcano's images share basic.image_registry; one of them mirrored to another host.
    "MIR003": (
        """\
platform:
  volcano: {provided: fleet}
mirrors:
  registries:
    docker.io: hub.example.cn/x
    docker.io/volcanosh/vc-scheduler: other.example.cn/vc-scheduler
""",
        [
            "values/fleet.yaml:9:5: MIR003 the mirrors give Volcano's images different values "
            "of basic.image_registry, one value its chart shares between them: "
            "'hub.example.cn', 'other.example.cn' (at $.mirrors.registries); mirror Volcano's "
            "images under one registry host (one mirror for the registry they come from)",
        ],
    ),
    # A trailing '/' after NGC's repository.
    "MIR004": (
        """\
mirrors:
  charts:
    https://helm.ngc.nvidia.com/nvidia/: https://charts.example.cn/nvidia
""",
        [
            "values/fleet.yaml:7:5: MIR004 warning: chart repository mirror "
            "'https://helm.ngc.nvidia.com/nvidia/': no add-on installs its chart from "
            "'https://helm.ngc.nvidia.com/nvidia/', so this mirror is never used "
            "(at $.mirrors.charts['https://helm.ngc.nvidia.com/nvidia/']); did you mean "
            "'https://helm.ngc.nvidia.com/nvidia'? the add-ons' chart repositories: "
            "ghcr.io/kubeflow/charts, https://helm.ngc.nvidia.com/nvidia, "
            "https://volcano-sh.github.io/helm-charts, registry.k8s.io/jobset/charts, "
            "registry.k8s.io/kueue/charts, registry.k8s.io/lws/charts, "
            "registry.k8s.io/nfd/charts",
        ],
    ),
}


def test_every_mirror_check_has_a_case() -> None:
    mine = {chk.code for chk in mirrors.CHECKS}
    assert mine == set(CASES) == {"MIR001", "MIR002", "MIR003", "MIR004"}
    assert {code for code in CHECKS if code.startswith("MIR")} == mine


@pytest.mark.parametrize("code", sorted(CASES))
def test_a_mirror_check_reports_its_code_at_the_values_line(code: str, tmp_path: Path) -> None:
    fleet, expected = CASES[code]
    view = values.load(tree(tmp_path, fleet=PROD_FLEET + fleet)).envs["prod"]
    found = [f for chk in mirrors.CHECKS for f in chk(context(view))]
    assert sorted(f.format() for f in found) == expected


def test_valid_mirrors_are_no_finding(tmp_path: Path) -> None:
    """Hosts with a port, localhost, an IP, a chart mirror to an OCI path and to an URL with
    a path: nothing to say."""
    fleet = """\
platform:
  volcano: {provided: fleet}
mirrors:
  registries:
    registry.k8s.io: localhost:5000/k8s
    docker.io: 10.0.0.7:5000
    nvcr.io/nvidia: mirror.example.cn/nvcr/nvidia
  charts:
    https://helm.ngc.nvidia.com/nvidia: mirror.example.cn/charts/nvidia
    https://volcano-sh.github.io/helm-charts: http://charts.example.cn:8080/volcano
    registry.k8s.io/nfd/charts: https://charts.example.cn/nfd
"""
    view = values.load(tree(tmp_path, fleet=PROD_FLEET + fleet)).envs["prod"]
    assert [f for chk in mirrors.CHECKS for f in chk(context(view))] == []


def test_a_mirror_set_by_an_environment_is_reported_in_its_file(tmp_path: Path) -> None:
    overrides = "fleet:\n  mirrors:\n    registries:\n      ghcr.io: ghcr_mirror\n"
    loaded = values.load(tree(tmp_path, {"environments/prod.yaml": overrides}, fleet=PROD_FLEET))
    found = [f for chk in mirrors.CHECKS for f in chk(context(loaded.envs["prod"]))]
    assert [(f.code, f.location.file, f.location.line, f.location.column) for f in found] == [
        ("MIR001", "values/environments/prod.yaml", 4, 16)
    ]


def test_render_refuses_an_invalid_mirror_and_writes_nothing(tmp_path: Path) -> None:
    fleet = "mirrors:\n  charts:\n    registry.k8s.io/nfd/charts: oci://mirror.example.cn/nfd\n"
    values_dir = tree(tmp_path, fleet=PROD_FLEET + fleet)
    code, out = cli("render", "--values", str(values_dir))
    assert code == 1
    assert (
        "values/fleet.yaml:7:33: MIR002 chart repository mirror 'registry.k8s.io/nfd/charts'"
        in (out)
    )
    assert not (tmp_path / "overlays").exists()
