"""An environment's clusters (generator/values/clusters.py): each pool, quota and workload goes to
one cluster, and what has no place or two is a finding at the line that placed it."""

from __future__ import annotations

from pathlib import Path

from generator.findings import Finding
from generator.values import loader
from generator.values.model import FleetView
from tests.fixtures import (
    FLEET,
    PROD_FLEET,
    SPLIT_NVIDIA,
    TWO_CLUSTERS,
    TWO_CLUSTERS_PROD,
    findings,
    lines,
    tree,
)


def two_clusters(root: Path, **files: str) -> Path:
    """TWO_CLUSTERS, with `files` (keys with '__' for '/': teams__ml_yaml is teams/ml.yaml)."""
    extra = {k.replace("__", "/").replace("_yaml", ".yaml"): v for k, v in files.items()}
    return tree(root, {**TWO_CLUSTERS, **extra}, fleet=PROD_FLEET)


def views(values_dir: Path) -> dict[str, FleetView]:
    return loader.load(values_dir).envs


def summary(view: FleetView) -> dict[str, object]:
    return {
        "vendors": {v.id: [p.name for p in v.pools] for v in view.vendors},
        "teams": {
            t.name: (
                t.quota,
                sorted(t.doc.get("jobs", default={}) or {}),
                sorted(t.doc.get("services", default={}) or {}),
            )
            for t in view.teams
        },
    }


def test_each_cluster_holds_its_pools_and_the_quotas_and_workloads_placed_there(
    tmp_path: Path,
) -> None:
    got = views(two_clusters(tmp_path))
    assert sorted(got) == ["prod/domestic", "prod/main"]
    assert summary(got["prod/main"]) == {
        "vendors": {"ascend": ["910b"], "nvidia": ["a100"]},
        "teams": {
            "inference": ({"ascend": 4, "nvidia": 4}, [], ["inference-service"]),
            "ml": ({"nvidia": 4}, [], []),
        },
    }
    assert summary(got["prod/domestic"]) == {
        "vendors": {"cambricon": ["mlu370"]},
        "teams": {"ml": ({"cambricon": 4}, ["mlu-train"], [])},
    }


def test_a_cluster_has_its_own_destination_version_and_labels(tmp_path: Path) -> None:
    got = views(two_clusters(tmp_path))
    main, domestic = got["prod/main"], got["prod/domestic"]
    assert main.fleet.destination == {"server": "https://main.example.com:6443"}
    assert domestic.fleet.destination == {"name": "domestic"}
    assert (main.fleet.kubernetes_version, domestic.fleet.kubernetes_version) == ("1.33", "1.34")
    assert domestic.cluster is not None and domestic.cluster.labels == {"region": "cn-north"}
    assert (main.key, main.env, domestic.key) == ("prod/main", "prod", "prod/domestic")


def test_an_environment_without_clusters_is_one_view_under_its_own_name(tmp_path: Path) -> None:
    loaded = loader.load(tree(tmp_path))
    assert sorted(loaded.envs) == ["prod", "staging"]
    assert loaded.envs["prod"].cluster is None and loaded.hubs["prod"] is loaded.envs["prod"]
    assert loaded.envs["prod"].fleet.destination == {"server": "https://kubernetes.default.svc"}


def test_views_of_selects_an_environment_s_clusters_or_one_of_them(tmp_path: Path) -> None:
    loaded = loader.load(two_clusters(tmp_path))
    assert [v.key for v in loaded.views_of("prod")] == ["prod/domestic", "prod/main"]
    assert [v.key for v in loaded.views_of("prod/main")] == ["prod/main"]
    assert [v.key for v in loaded.views_of(None)] == ["prod/domestic", "prod/main"]
    assert loaded.hubs["prod"].cluster is None and len(loaded.hubs["prod"].vendors) == 3


def test_a_pool_in_no_cluster_is_a_finding(tmp_path: Path) -> None:
    prod = TWO_CLUSTERS_PROD.replace("pools: [nvidia, ascend/910b]", "pools: [nvidia]")
    assert lines(two_clusters(tmp_path, environments__prod_yaml=prod))[0] == (
        "values/environments/prod.yaml:2:3: CLU001 pool ascend/910b is in no cluster of "
        "environment 'prod' (at $.clusters); add ascend/910b (or ascend) to the pools of the cluster its "
        "nodes are in"
    )


def test_a_pool_in_two_clusters_is_a_finding_at_the_second(tmp_path: Path) -> None:
    prod = TWO_CLUSTERS_PROD.replace("pools: [cambricon]", "pools: [cambricon, nvidia/a100]")
    [finding] = findings(two_clusters(tmp_path, environments__prod_yaml=prod))
    assert (finding.code, str(finding.location), finding.path) == (
        "CLU001",
        "values/environments/prod.yaml:9:24",
        "$.clusters.domestic.pools[1]",
    )
    assert "listed by clusters 'main' and 'domestic'" in finding.message


def test_a_cluster_naming_an_unknown_vendor_or_pool_is_a_finding_with_the_likely_one(
    tmp_path: Path,
) -> None:
    prod = TWO_CLUSTERS_PROD.replace("pools: [cambricon]", "pools: [cambricon, nvidai]").replace(
        "ascend/910b", "ascend/910c"
    )
    found = findings(two_clusters(tmp_path, environments__prod_yaml=prod))
    clu002 = sorted((f.path, f.hint) for f in found if f.code == "CLU002")
    assert clu002 == [
        (
            "$.clusters.domestic.pools[1]",
            "did you mean 'nvidia'? vendors: ascend, cambricon, nvidia",
        ),
        ("$.clusters.main.pools[1]", "did you mean '910b'? ascend's pools: 910b"),
    ]
    # The pool it meant is then in no cluster: said too, not hidden by the typo.
    assert [f.message for f in found if f.code == "CLU001"] == [
        "pool ascend/910b is in no cluster of environment 'prod'"
    ]


MIXED = """\
quota: {nvidia: 4, cambricon: 4}
jobs:
  mixed:
    kind: volcano
    images: {nvidia: r/t:cuda, cambricon: r/t:mlu}
    tasks:
      gpu: {vendor: nvidia, devices: 1, replicas: 2}
      mlu: {vendor: cambricon, devices: 1, replicas: 2}
"""


def test_a_job_over_vendors_in_two_clusters_has_no_cluster(tmp_path: Path) -> None:
    [finding] = findings(two_clusters(tmp_path, teams__ml_yaml=MIXED))
    assert (finding.code, str(finding.location), finding.path) == (
        "CLU003",
        "values/teams/ml.yaml:3:3",
        "$.jobs.mixed",
    )
    assert finding.message == (
        "job 'mixed' asks for nvidia, cambricon, and no cluster of environment 'prod' has pools "
        "for all of them"
    )
    assert finding.hint.startswith("list the pools it needs in one cluster")


def test_a_service_whose_tracks_are_in_two_clusters_is_refused_with_the_way_out(
    tmp_path: Path,
) -> None:
    prod = TWO_CLUSTERS_PROD.replace("[nvidia, ascend/910b]", "[nvidia]").replace(
        "[cambricon]", "[cambricon, ascend]"
    )
    [finding] = findings(two_clusters(tmp_path, environments__prod_yaml=prod))
    assert finding.code == "CLU003" and finding.path == "$.services['inference-service']"
    assert finding.message.startswith(
        "service 'inference-service' asks for ascend (910b), nvidia, and no cluster"
    )
    assert "a service's tracks run in one cluster" in finding.hint
    assert "docs/multi-cluster.md" in finding.hint


def test_a_model_missing_from_the_vendor_s_cluster_is_no_place(tmp_path: Path) -> None:
    team = TWO_CLUSTERS["teams/ml.yaml"].replace("devices: 2", "devices: 2\n    model: MLU590")
    [finding] = findings(two_clusters(tmp_path, teams__ml_yaml=team))
    assert finding.code == "CLU003" and "cambricon (MLU590)" in finding.message


def test_a_task_asks_for_its_job_s_model(tmp_path: Path) -> None:
    """A Volcano job's model holds for its tasks that name none (as its pods are built)."""
    team = (
        "quota: {cambricon: 4}\njobs:\n  gang:\n    kind: volcano\n    model: MLU590\n"
        "    images: {cambricon: r/t:mlu}\n    tasks:\n      w: {vendor: cambricon, replicas: 2}\n"
    )
    [finding] = findings(two_clusters(tmp_path, teams__ml_yaml=team))
    assert finding.code == "CLU003" and "asks for cambricon (MLU590)" in finding.message
    own = team.replace("{vendor: cambricon, replicas: 2}", "{vendor: cambricon, model: MLU370}")
    got = views(two_clusters(tmp_path / "own", teams__ml_yaml=own))
    assert summary(got["prod/domestic"])["teams"] == {"ml": ({"cambricon": 4}, ["gang"], [])}


def test_a_fallback_model_is_a_place(tmp_path: Path) -> None:
    team = TWO_CLUSTERS["teams/ml.yaml"].replace(
        "devices: 2", "devices: 2\n    model: MLU590\n    fallbackModel: MLU370"
    )
    got = views(two_clusters(tmp_path, teams__ml_yaml=team))
    assert summary(got["prod/domestic"])["teams"] == {"ml": ({"cambricon": 4}, ["mlu-train"], [])}


def test_a_named_cluster_must_exist_and_hold_what_the_workload_asks_for(tmp_path: Path) -> None:
    team = TWO_CLUSTERS["teams/ml.yaml"] + "    cluster: main\n"
    found = findings(two_clusters(tmp_path, teams__ml_yaml=team))
    assert [(f.code, f.path, f.message, f.hint) for f in found] == [
        (
            "CLU003",
            "$.jobs['mlu-train'].cluster",
            "job 'mlu-train' names cluster 'main', which has no pools for cambricon",
            "clusters that have them: domestic",
        )
    ]
    team = TWO_CLUSTERS["teams/ml.yaml"] + "    cluster: domestc\n"
    [finding] = findings(two_clusters(tmp_path, teams__ml_yaml=team))
    assert finding.code == "CLU003" and finding.hint.startswith("did you mean 'domestic'?")


def split_nvidia(root: Path, team: str) -> Path:
    """SPLIT_NVIDIA (a100 in main, h100 in domestic), with team ml as `team` says."""
    return tree(root, {**TWO_CLUSTERS, **SPLIT_NVIDIA, "teams/ml.yaml": team}, fleet=PROD_FLEET)


def of_team(values_dir: Path, team: str = "ml") -> list[Finding]:
    return [f for f in findings(values_dir) if f.location.file == f"values/teams/{team}.yaml"]


def test_a_job_that_could_run_in_two_clusters_must_name_one(tmp_path: Path) -> None:
    team = "quota: {nvidia: {main: 4, domestic: 8}}\njobs:\n  j:\n    vendor: nvidia\n"
    team += "    images: {nvidia: r/t}\n"
    [finding] = of_team(split_nvidia(tmp_path, team))
    assert (finding.code, finding.path) == ("CLU003", "$.jobs.j")
    assert finding.message == "job 'j' could run in clusters main, domestic: name one"
    got = views(split_nvidia(tmp_path, team + "    cluster: domestic\n"))
    assert summary(got["prod/domestic"])["teams"] == {"ml": ({"nvidia": 8}, ["j"], [])}
    assert summary(got["prod/main"])["teams"]["ml"] == ({"nvidia": 4}, [], [])  # type: ignore[index]
    # A model picks the cluster by itself.
    got = views(split_nvidia(tmp_path, team + "    model: H100\n"))
    assert summary(got["prod/domestic"])["teams"] == {"ml": ({"nvidia": 8}, ["j"], [])}


def test_a_quota_for_a_vendor_in_two_clusters_says_how_it_splits(tmp_path: Path) -> None:
    [finding] = of_team(split_nvidia(tmp_path, "quota: {nvidia: 8}\n"))
    assert (finding.code, finding.path) == ("CLU004", "$.quota.nvidia")
    assert finding.message == (
        "team ml: nvidia has pools in clusters main, domestic, and the quota does not say how it "
        "splits"
    )
    assert finding.hint == "give devices per cluster, e.g. quota: {nvidia: {main: N, domestic: N}}"


def test_a_quota_split_names_only_clusters_with_the_vendor(tmp_path: Path) -> None:
    team = "quota: {nvidia: {main: 4, domestic: 2}, cambricon: {main: 2}}\n"
    found = of_team(split_nvidia(tmp_path, team))
    assert [(f.code, f.path, f.hint) for f in found] == [
        ("CLU004", "$.quota.cambricon.main", "clusters with cambricon pools: domestic")
    ]


def test_a_team_with_neither_quota_nor_workloads_is_in_every_cluster(tmp_path: Path) -> None:
    got = views(two_clusters(tmp_path, teams__ops_yaml="owners: [ops@example.com]\n"))
    assert all("ops" in summary(v)["teams"] for v in got.values())  # type: ignore[operator]
    assert "inference" not in summary(got["prod/domestic"])["teams"]  # type: ignore[operator]


def test_a_disabled_workload_needs_no_place(tmp_path: Path) -> None:
    assert findings(two_clusters(tmp_path, teams__ml_yaml=MIXED + "    enabled: false\n")) == []


def test_cluster_words_in_an_environment_without_clusters_are_findings(tmp_path: Path) -> None:
    team = "quota: {nvidia: {main: 4}}\njobs:\n  j:\n    vendor: nvidia\n    cluster: main\n"
    team += "    images: {nvidia: r/t}\n"
    found = findings(tree(tmp_path, {"teams/ml.yaml": team}, fleet=FLEET))
    assert [(f.code, f.path, f.envs) for f in found] == [
        ("CLU004", "$.quota.nvidia", ()),
        ("CLU003", "$.jobs.j.cluster", ()),
    ]
