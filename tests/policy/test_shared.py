"""ARG001: environments that share one Argo CD (argocd.instance) and would own one AppProject or
root Application (policy/shared.py)."""

from __future__ import annotations

from pathlib import Path

from tests.fixtures import FLEET, lines, tree

SHARED = FLEET + "argocd: {instance: central, project: gpu}\n"


def test_two_environments_on_one_argo_cd_with_one_project_name_are_told_once_where_it_is_set(
    tmp_path: Path,
) -> None:
    """staging and prod name Argo CD `central` and keep fleet.yaml's project: prod (the later in
    fleet.yaml) is told, once for the project name that makes both AppProjects, at that name."""
    values = tree(tmp_path, fleet=SHARED)
    found = [ln for ln in lines(values) if " ARG001 " in ln]
    assert found == [
        # prod is named once (it was twice: in the message, and by the finding's layers).
        "values/fleet.yaml:5:38: ARG001 Argo CD 'central' also syncs environment 'staging', which "
        "renders AppProject argocd/gpu, AppProject argocd/gpu-platform too: each root "
        "Application would take them over from the other on every sync (and prune what the "
        "other added) in environment 'prod' (at $.argocd.project); give each environment its "
        "own names: set fleet.argocd.project in values/environments/prod.yaml (e.g. 'gpu-prod')"
    ]


def test_a_project_per_environment_or_an_argo_cd_each_is_fine(tmp_path: Path) -> None:
    """prod names its own project: nothing to say; nor when the two name different Argo CDs."""
    own = {"environments/prod.yaml": "fleet:\n  argocd: {project: gpu-prod}\n"}
    assert not [ln for ln in lines(tree(tmp_path / "a", own, fleet=SHARED)) if "ARG001" in ln]
    apart = {"environments/prod.yaml": "fleet:\n  argocd: {instance: prod-argocd}\n"}
    assert not [ln for ln in lines(tree(tmp_path / "b", apart, fleet=SHARED)) if "ARG001" in ln]


def test_without_argocd_instance_each_environment_has_its_own(tmp_path: Path) -> None:
    values = tree(tmp_path, fleet=FLEET + "argocd: {project: gpu}\n")
    assert not [ln for ln in lines(values) if "ARG001" in ln]
