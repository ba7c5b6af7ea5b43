"""`show` (generator/delivery/show.py): the built manifests, exactly what the real kustomize builds
from the values as they are now."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.fixtures import PROD_FLEET, TWO_CLUSTERS, cli_streams, kustomize_text, tree, two_teams

# ---- show --------------------------------------------------------------------------------------


def test_show_prints_exactly_what_kustomize_builds(tmp_path: Path) -> None:
    values_dir = two_teams(tmp_path)
    repo = values_dir.parent
    assert cli_streams("render", "--values", str(values_dir))[0] == 0
    code, out, _ = cli_streams(
        "show", "--values", str(values_dir), "--env", "staging", "--unit", "team-ml-team"
    )
    assert code == 0
    assert out == kustomize_text(repo / "overlays/staging/team-ml-team")
    code, out, _ = cli_streams("show", "--values", str(values_dir), "--env", "prod")
    assert code == 0
    units = sorted(p.name for p in (repo / "overlays/prod").iterdir())
    assert out == "---\n".join(
        f"# overlays/prod/{u}\n" + kustomize_text(repo / "overlays/prod" / u) for u in units
    )
    assert len([d for d in yaml.safe_load_all(out) if d]) == sum(
        len([d for d in yaml.safe_load_all(kustomize_text(repo / "overlays/prod" / u)) if d])
        for u in units
    )


def test_show_renders_the_values_as_they_are_now(tmp_path: Path) -> None:
    """No render needed first: an edited quota shows at once."""
    values_dir = two_teams(tmp_path)
    text = (values_dir / "teams/ml-team.yaml").read_text().replace("nvidia: 8", "nvidia: 6")
    (values_dir / "teams/ml-team.yaml").write_text(text)
    code, out, _ = cli_streams(
        "show", "--values", str(values_dir), "--env", "prod", "--unit", "team-ml-team"
    )
    assert code == 0
    quota = next(d for d in yaml.safe_load_all(out) if d["kind"] == "ResourceQuota")
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu"] == "6"


def test_show_unknown_unit_or_env_is_a_usage_error(tmp_path: Path) -> None:
    values_dir = two_teams(tmp_path)
    code, _, err = cli_streams(
        "show", "--values", str(values_dir), "--env", "prod", "--unit", "team-x"
    )
    assert code == 2
    assert "environment 'prod' has no unit 'team-x'; its units: argocd, device-plugins" in err
    code, _, err = cli_streams("show", "--values", str(values_dir), "--env", "qa")
    assert code == 2 and "unknown environment 'qa'; known: prod, staging" in err


def test_show_prints_one_cluster_and_refuses_a_stream_of_several(tmp_path: Path) -> None:
    """An environment with clusters: each cluster is its own destination, so `--env prod` (with
    or without a unit of the clusters) is refused with the clusters to choose from, and
    `--env prod/<cluster>` prints that cluster's units alone; the hub's own unit stays reachable."""
    values_dir = tree(tmp_path / "repo", TWO_CLUSTERS, fleet=PROD_FLEET)
    repo = values_dir.parent
    assert cli_streams("render", "--values", str(values_dir))[0] == 0
    refusal = (
        "environment 'prod' has clusters, each its own destination: one stream of their "
        "manifests would be no cluster's; show one cluster: --env prod/domestic, --env "
        "prod/main; the hub's own unit: --env prod --unit argocd"
    )
    for unit in ([], ["--unit", "team-ml"]):
        code, out, err = cli_streams("show", "--values", str(values_dir), "--env", "prod", *unit)
        assert (code, out) == (2, "")
        assert refusal in " ".join(err.split())
    code, out, _ = cli_streams(
        "show", "--values", str(values_dir), "--env", "prod/domestic", "--unit", "team-ml"
    )
    assert code == 0
    assert out == kustomize_text(repo / "overlays/prod/domestic/team-ml")
    namespaces = [
        d["metadata"]["name"] for d in yaml.safe_load_all(out) if d["kind"] == "Namespace"
    ]
    assert namespaces == ["ml"]
    code, out, _ = cli_streams("show", "--values", str(values_dir), "--env", "prod/main")
    assert code == 0
    # The cluster's argocd unit is the hub's to apply: not in the cluster's stream, but by name.
    units = sorted(p.name for p in (repo / "overlays/prod/main").iterdir())
    assert "argocd" in units
    assert out == "---\n".join(
        f"# overlays/prod/main/{u}\n" + kustomize_text(repo / "overlays/prod/main" / u)
        for u in units
        if u != "argocd"
    )
    code, out, _ = cli_streams(
        "show", "--values", str(values_dir), "--env", "prod/main", "--unit", "argocd"
    )
    assert (code, out) == (0, kustomize_text(repo / "overlays/prod/main/argocd"))
    code, out, _ = cli_streams(
        "show", "--values", str(values_dir), "--env", "prod", "--unit", "argocd"
    )
    assert code == 0
    assert out == kustomize_text(repo / "overlays/prod/argocd")
