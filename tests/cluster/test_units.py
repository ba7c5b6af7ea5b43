"""The units simulate and dry-run apply to one cluster (generator/cluster/units.py): the cluster's
own units in Argo CD's order (its argocd unit among them), and of the hub's argocd unit only
what concerns that cluster."""

from __future__ import annotations

from pathlib import Path

from generator.cluster import units
from generator.simulate.addons import addon_application
from generator.values import loader
from tests.fixtures import PROD_FLEET, TWO_CLUSTERS, tree


def test_a_cluster_gets_its_units_and_only_its_own_applications_of_the_hub(
    tmp_path: Path,
) -> None:
    """TWO_CLUSTERS with NFD from the fleet: each cluster's NFD Application (and so the chart
    values simulate runs nfd-worker with) is its own, never the other cluster's."""
    fleet = PROD_FLEET + "platform: {nfd: {provided: fleet}}\n"
    loaded = loader.load(tree(tmp_path, TWO_CLUSTERS, fleet=fleet))
    destinations = {
        "main": {"server": "https://main.example.com:6443"},
        "domestic": {"name": "domestic"},
    }
    for cluster, destination in destinations.items():
        built, findings = units.build(loaded, f"prod/{cluster}")
        assert findings == []
        paths = {b.unit.path for b in built}
        assert "overlays/prod/argocd" in paths and f"overlays/prod/{cluster}/team-ml" in paths
        assert all(
            p.startswith(f"overlays/prod/{cluster}/") for p in paths - {"overlays/prod/argocd"}
        )
        [hub] = [b for b in built if b.unit.path == "overlays/prod/argocd"]
        apps = sorted(d["metadata"]["name"] for d in hub.docs if d["kind"] == "Application")
        assert apps == [f"mini-prod-{cluster}-root", "mini-prod-root"]  # not the other cluster's
        [own] = [b for b in built if b.unit.path == f"overlays/prod/{cluster}/argocd"]
        labelled = {d["metadata"]["labels"].get("accel-gitops.io/cluster") for d in own.docs}
        assert labelled == {cluster}
        nfd = addon_application(built, "nfd")
        assert nfd is not None
        assert {k: v for k, v in nfd["spec"]["destination"].items() if k != "namespace"} == (
            destination
        )
        assert nfd["metadata"]["name"] == f"mini-prod-{cluster}-nfd"
