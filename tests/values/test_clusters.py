"""An environment's clusters (generator/values/clusters.py): each pool, quota and workload goes to
one cluster, and what has no place or two is a finding at the line that placed it."""

from __future__ import annotations

import json
from pathlib import Path

from generator.builders import platform
from generator.findings import Finding
from generator.values import loader
from generator.values.model import FleetView
from generator.vocab import addons
from tests.fixtures import (
    ASCEND_910B,
    CAMBRICON_MLU370,
    FLEET,
    PROD_FLEET,
    SPLIT_NVIDIA,
    TWO_CLUSTERS,
    TWO_CLUSTERS_PROD,
    findings,
    invoke,
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
    # Each view is its environment's file, and its cluster is read where that file sets it (the
    # version check points at the cluster's own kubernetesVersion line).
    assert main.env_file == domestic.env_file == "values/environments/prod.yaml"
    assert str(domestic.cluster.doc.locate(("domestic", "kubernetesVersion"))) == (
        "values/environments/prod.yaml:7:24"
    )


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
        # The environment is named once, by the finding's layers (one environment here: none).
        "values/environments/prod.yaml:2:3: CLU001 pool ascend/910b is in no cluster "
        "(at $.clusters); add ascend/910b (or ascend) to the pools of the cluster its nodes are in"
    )


def test_a_pool_in_two_clusters_is_a_finding_at_the_second(tmp_path: Path) -> None:
    prod = TWO_CLUSTERS_PROD.replace("pools: [cambricon]", "pools: [cambricon, nvidia/a100]")
    [finding] = findings(two_clusters(tmp_path, environments__prod_yaml=prod))
    assert (finding.code, str(finding.location), finding.path) == (
        "CLU001",
        "values/environments/prod.yaml:9:24",
        "$.clusters.domestic.pools[1]",
    )
    assert finding.message == (
        "pool nvidia/a100 is listed by clusters 'main' and 'domestic': a pool is in one cluster"
    )
    assert finding.hint == (
        "split the pool in values/vendors/ (one pool per cluster) and list each part in its own "
        "cluster"
    )


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
    assert sorted(f.message for f in found if f.code == "CLU002") == [
        "cluster 'domestic' lists vendor 'nvidai', which has no enabled values/vendors/nvidai.yaml",
        "cluster 'main' lists pool 'ascend/910c': vendor 'ascend' has no pool '910c'",
    ]
    # The pool it meant is then in no cluster: said too, not hidden by the typo.
    assert [f.message for f in found if f.code == "CLU001"] == ["pool ascend/910b is in no cluster"]


def test_a_cluster_s_pools_after_an_unknown_vendor_or_pool_are_still_placed(
    tmp_path: Path,
) -> None:
    """The typo is the first entry of each cluster's list: the entries after it count."""
    prod = TWO_CLUSTERS_PROD.replace("[cambricon]", "[nvidai, cambricon]").replace(
        "[nvidia, ascend/910b]", "[ascend/910c, nvidia, ascend/910b]"
    )
    found = findings(two_clusters(tmp_path, environments__prod_yaml=prod))
    assert [(f.code, str(f.location), f.path) for f in found] == [
        ("CLU002", "values/environments/prod.yaml:4:13", "$.clusters.main.pools[0]"),
        ("CLU002", "values/environments/prod.yaml:9:13", "$.clusters.domestic.pools[0]"),
    ]


def test_a_pool_typo_s_hint_lists_the_vendor_s_pools(tmp_path: Path) -> None:
    prod = SPLIT_NVIDIA["environments/prod.yaml"].replace("nvidia/h100]", "nvidia/h10]")
    files = {**TWO_CLUSTERS, **SPLIT_NVIDIA, "environments/prod.yaml": prod}
    clu002 = [f for f in findings(tree(tmp_path, files, fleet=PROD_FLEET)) if f.code == "CLU002"]
    assert [(f.path, f.message, f.hint) for f in clu002] == [
        (
            "$.clusters.domestic.pools[1]",
            "cluster 'domestic' lists pool 'nvidia/h10': vendor 'nvidia' has no pool 'h10'",
            "did you mean 'h100'? nvidia's pools: a100, h100",
        )
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
    finding, volcano = findings(two_clusters(tmp_path, teams__ml_yaml=MIXED))
    # A root cause of its own, in the same run: the fleet does not declare Volcano, which the
    # job's kind needs (the base layer still has the job: it has no clusters).
    assert (volcano.code, volcano.path) == ("DEP001", "$.jobs.mixed.kind")
    assert (finding.code, str(finding.location), finding.path) == (
        "CLU003",
        "values/teams/ml.yaml:3:3",
        "$.jobs.mixed",
    )
    assert finding.message == (
        "job 'mixed' asks for nvidia, cambricon, and no cluster has pools for all of them"
    )
    assert finding.hint.startswith("list the pools it needs in one cluster")


def test_a_service_whose_tracks_are_in_two_clusters_without_cross_cluster_is_refused(
    tmp_path: Path,
) -> None:
    """Its tracks have their clusters, and nothing says how traffic crosses them: the hint
    names crossCluster."""
    prod = TWO_CLUSTERS_PROD.replace("[nvidia, ascend/910b]", "[nvidia]").replace(
        "[cambricon]", "[cambricon, ascend]"
    )
    [finding] = findings(two_clusters(tmp_path, environments__prod_yaml=prod))
    assert (finding.code, str(finding.location), finding.path) == (
        "CLU003",
        "values/teams/inference.yaml:3:3",
        "$.services['inference-service']",
    )
    assert finding.message == (
        "service 'inference-service' has its tracks in different clusters (ascend in domestic, "
        "nvidia in main) and does not say how its traffic crosses them"
    )
    assert finding.hint == (
        "add crossCluster: {routing: gateway, gateway: {parentRefs: [...]}} (an HTTPRoute on an "
        "ingress cluster over Multi-Cluster Services) or crossCluster: {routing: external, "
        "hostname: <name>} (weights for a global load balancer) to the service, or keep its "
        "tracks in one cluster (docs/multi-cluster.md)"
    )


# NVIDIA's models where SPLIT_NVIDIA puts them, as CLU008 lists them, and what its hint says.
NVIDIA_MODELS = "(models: A100 in main, H100 in domestic)"
ADD_B200 = "add a pool of model B200 to values/vendors/nvidia.yaml and list it in a cluster's pools"
SERVE = """\
quota: {nvidia: {domestic: 4}}
services:
  serve:
    images: {nvidia: r/s:cuda}
    tracks: {nvidia: {replicas: 1, model: B200}}
"""


def split_models(root: Path, **files: str) -> Path:
    """SPLIT_NVIDIA with team ml's quota split, and `files` as two_clusters takes them."""
    extra = {k.replace("__", "/").replace("_yaml", ".yaml"): v for k, v in files.items()}
    ml = "quota: {nvidia: {main: 4}}\n"
    return tree(
        root, {**TWO_CLUSTERS, **SPLIT_NVIDIA, "teams/ml.yaml": ml, **extra}, fleet=PROD_FLEET
    )


def test_a_model_no_pool_is_is_one_finding_at_the_model_with_each_model_s_cluster(
    tmp_path: Path,
) -> None:
    """NVIDIA has pools in two clusters and none is a B200: no cluster is to be found, and the
    one finding is at the model, with the models there are and their clusters. The pods' own
    POD003 (of the base layer, where the service still is) is not said again."""
    root = split_models(tmp_path, teams__inference_yaml=SERVE)
    [finding] = findings(root)
    assert (finding.code, str(finding.location), finding.path, finding.envs) == (
        "CLU008",
        "values/teams/inference.yaml:5:43",
        "$.services.serve.tracks.nvidia.model",
        (),
    )
    assert finding.message == (
        f"service 'serve' track 'nvidia' asks for model 'B200', which is none of nvidia's pools "
        f"{NVIDIA_MODELS}"
    )
    assert finding.hint == f"set it to A100 or H100, {ADD_B200.replace('add', 'or add')}"
    placed = loader.load_all(root).values.envs
    assert [
        sorted(t.doc.get("services", default={})) for v in placed.values() for t in v.teams
    ] == [
        [],
        [],
    ]
    # A job's model, misspelt: the likely one first.
    job = "quota: {nvidia: {main: 4}}\njobs:\n  j:\n    vendor: nvidia\n    model: A10\n"
    job += "    images: {nvidia: r/t}\n"
    [finding] = of_team(split_models(tmp_path / "job", teams__ml_yaml=job))
    assert (finding.code, str(finding.location), finding.path) == (
        "CLU008",
        "values/teams/ml.yaml:5:12",
        "$.jobs.j.model",
    )
    assert finding.message == (
        f"job 'j' asks for model 'A10', which is none of nvidia's pools {NVIDIA_MODELS}"
    )
    assert finding.hint == (
        "did you mean 'A100'? set it to A100 or H100, or add a pool of model A10 to "
        "values/vendors/nvidia.yaml and list it in a cluster's pools"
    )


def test_a_model_in_two_clusters_is_listed_once_with_both(tmp_path: Path) -> None:
    """A100 pools in main and in domestic, two of them in main: each model once, with each of
    its clusters once, in the order the vendor lists its pools."""
    nvidia = SPLIT_NVIDIA["vendors/nvidia.yaml"] + (
        "  - {name: a100b, model: A100, devicesPerNode: 4, nodes: [h2]}\n"
        "  - {name: a100c, model: A100, devicesPerNode: 4, nodes: [n3]}\n"
    )
    prod = (
        SPLIT_NVIDIA["environments/prod.yaml"]
        .replace("[nvidia/a100, ", "[nvidia/a100, nvidia/a100c, ")
        .replace("nvidia/h100]", "nvidia/h100, nvidia/a100b]")
    )
    root = split_models(
        tmp_path,
        vendors__nvidia_yaml=nvidia,
        environments__prod_yaml=prod,
        teams__inference_yaml=SERVE,
    )
    assert [f.message for f in findings(root)] == [
        "service 'serve' track 'nvidia' asks for model 'B200', which is none of nvidia's pools "
        "(models: A100 in main and domestic, H100 in domestic)"
    ]


def test_a_model_no_pool_is_is_said_beside_a_cluster_that_is_none(tmp_path: Path) -> None:
    job = "quota: {nvidia: {main: 4}}\njobs:\n  j:\n    vendor: nvidia\n    model: B200\n"
    job += "    cluster: mian\n    images: {nvidia: r/t}\n"
    found = of_team(split_models(tmp_path, teams__ml_yaml=job))
    assert [(f.code, f.path, f.hint) for f in found] == [
        ("CLU008", "$.jobs.j.model", f"set it to A100 or H100, or {ADD_B200}"),
        ("CLU003", "$.jobs.j.cluster", "did you mean 'main'? clusters: main, domestic"),
    ]


def test_a_model_only_an_environment_sets_is_said_at_its_override(tmp_path: Path) -> None:
    """The base layer's H100 is a pool's (its pods pick it): prod's override is what no pool
    is, and the one finding is there."""
    team = SERVE.replace("model: B200", "model: H100")
    prod = SPLIT_NVIDIA["environments/prod.yaml"] + (
        "teams:\n  inference:\n    services:\n      serve:\n        tracks: {nvidia: {model: B200}}\n"
    )
    root = split_models(tmp_path, teams__inference_yaml=team, environments__prod_yaml=prod)
    [finding] = findings(root)
    assert (finding.code, str(finding.location), finding.path) == (
        "CLU008",
        "values/environments/prod.yaml:14:34",
        "$.services.serve.tracks.nvidia.model",
    )
    assert finding.message == (
        f"service 'serve' track 'nvidia' asks for model 'B200', which is none of nvidia's pools "
        f"{NVIDIA_MODELS}"
    )


def test_a_model_missed_with_clusters_and_without_is_one_finding_with_each_offer(
    tmp_path: Path,
) -> None:
    """staging declares no clusters, prod declares two: the team file's B200 is none of
    NVIDIA's pools in either, one line and one mistake. One CLU008 there says what each
    environment offers; staging's pods' POD003 (and the base layer's) is not said again."""
    files = {**TWO_CLUSTERS, **SPLIT_NVIDIA, "teams/ml.yaml": "quota: {nvidia: {main: 4}}\n"}
    root = tree(tmp_path, {**files, "teams/inference.yaml": SERVE}, fleet=FLEET)
    # (Outside $.services: staging's RES003 and RES005 of the quotas split by cluster.)
    [finding] = [f for f in findings(root) if f.path.startswith("$.services")]
    assert (finding.code, str(finding.location), finding.path, finding.envs) == (
        "CLU008",
        "values/teams/inference.yaml:5:43",
        "$.services.serve.tracks.nvidia.model",
        (),
    )
    assert finding.message == (
        "service 'serve' track 'nvidia' asks for model 'B200', which is none of nvidia's pools "
        "(models in 'staging': A100, H100; in 'prod': A100 in main, H100 in domestic)"
    )
    assert finding.hint == (
        "set it to A100 or H100, or add a pool of model B200 to values/vendors/nvidia.yaml "
        "and, in 'prod', list it in a cluster's pools"
    )


# Team ml's Cambricon job asks for an MLU590; Cambricon's one pool is an MLU370.
MLU590 = TWO_CLUSTERS["teams/ml.yaml"].replace("devices: 2", "devices: 2\n    model: MLU590")


def test_the_one_finding_of_a_model_is_the_run_s_one_line_in_text_and_json(
    tmp_path: Path,
) -> None:
    root = tree(tmp_path, {**TWO_CLUSTERS, "teams/ml.yaml": MLU590}, fleet=FLEET)
    said = (
        "job 'mlu-train' asks for model 'MLU590', which is none of cambricon's pools (models "
        "in 'staging': MLU370; in 'prod': MLU370 in domestic)"
    )
    hint = (
        "set it to MLU370, or add a pool of model MLU590 to "
        "values/vendors/cambricon.yaml and, in 'prod', list it in a cluster's pools"
    )
    assert lines(root) == [
        f"values/teams/ml.yaml:6:12: CLU008 {said} (at $.jobs['mlu-train'].model); {hint}"
    ]
    result = invoke("check", "--values", str(root), "--output", "json")
    assert result.exit_code == 1
    [got] = json.loads(result.stdout)["findings"]
    assert {k: got[k] for k in ("code", "file", "line", "column", "message", "hint")} == {
        "code": "CLU008",
        "file": "values/teams/ml.yaml",
        "line": 6,
        "column": 12,
        "message": said,
        "hint": hint,
    }
    assert (got["environments"], got["clusters"]) == ([], [])


def test_environments_with_clusters_that_miss_a_model_name_each_offer_once(
    tmp_path: Path,
) -> None:
    """staging declares clusters too: where its cluster has prod's name, the two offer the
    same and it is listed once; under another name, each environment's is listed."""
    staging = (
        "clusters:\n  {}:\n    destination: {{name: s}}\n    pools: [nvidia, ascend, cambricon]\n"
    )
    found = {}
    for name in ("domestic", "lab"):
        files = {
            **TWO_CLUSTERS,
            "teams/ml.yaml": MLU590,
            "environments/staging.yaml": staging.format(name),
        }
        [found[name]] = findings(tree(tmp_path / name, files, fleet=FLEET))
    assert [(f.code, f.envs, f.message, f.hint) for f in found.values()] == [
        (
            "CLU008",
            (),
            "job 'mlu-train' asks for model 'MLU590', which is none of cambricon's pools "
            "(models: MLU370 in domestic)",
            "set it to MLU370, or add a pool of model MLU590 to values/vendors/cambricon.yaml "
            "and list it in a cluster's pools",
        ),
        (
            "CLU008",
            (),
            "job 'mlu-train' asks for model 'MLU590', which is none of cambricon's pools "
            "(models in 'staging': MLU370 in lab; in 'prod': MLU370 in domestic)",
            "set it to MLU370, or add a pool of model MLU590 to values/vendors/cambricon.yaml "
            "and list it in a cluster's pools",
        ),
    ]


def test_a_model_an_environment_without_clusters_sets_itself_keeps_its_pod_finding(
    tmp_path: Path,
) -> None:
    """staging's own MLU580 (its file's line) is another mistake than the team file's MLU590,
    which only prod reads: staging's pods say theirs (POD003, in staging alone), prod's CLU008
    names prod's offer alone, and the base layer's POD003 at the team file is not said."""
    staging = "teams:\n  ml:\n    jobs:\n      mlu-train: {model: MLU580}\n"
    files = {**TWO_CLUSTERS, "teams/ml.yaml": MLU590, "environments/staging.yaml": staging}
    found = findings(tree(tmp_path, files, fleet=FLEET))
    assert [(f.code, str(f.location), f.envs) for f in found] == [
        ("POD003", "values/environments/staging.yaml:4:26", ("staging",)),
        ("CLU008", "values/teams/ml.yaml:6:12", ("prod",)),
    ]
    assert found[1].message == (
        "job 'mlu-train' asks for model 'MLU590', which is none of cambricon's pools (models: "
        "MLU370 in domestic)"
    )


def test_a_pod_finding_of_another_cause_in_an_environment_the_model_finding_does_not_name_stays(
    tmp_path: Path,
) -> None:
    """staging's Cambricon has an MLU590 pool, so there the job's own nodeSelector is what picks
    no pool (POD003 at it); prod misses the model (CLU008). Two causes: the POD003 under the
    job CLU008 is about is said, as it holds where CLU008 does not."""
    team = MLU590.replace("model: MLU590", "model: MLU590\n    nodeSelector: {zone: x}")
    staging = (
        "vendors:\n  cambricon:\n    pools:\n"
        "      - {name: mlu590, model: MLU590, devicesPerNode: 8, nodes: [m9]}\n"
    )
    files = {**TWO_CLUSTERS, "teams/ml.yaml": team, "environments/staging.yaml": staging}
    found = findings(tree(tmp_path, files, fleet=FLEET))
    assert [(f.code, str(f.location), f.path, f.envs) for f in found] == [
        ("CLU008", "values/teams/ml.yaml:6:12", "$.jobs['mlu-train'].model", ("prod",)),
        (
            "POD003",
            "values/teams/ml.yaml:7:19",
            "$.jobs['mlu-train'].nodeSelector",
            ("", "staging"),
        ),
    ]


def test_a_model_no_pool_is_beside_its_vendor_s_pools_in_no_cluster_is_said_too(
    tmp_path: Path,
) -> None:
    """Cambricon's pool is in no cluster (CLU001, at the clusters) and the job's model is none
    of its pools (CLU008, at the model): two mistakes at two lines, each said, neither hidden
    until the other is fixed."""
    prod = TWO_CLUSTERS_PROD.split("  domestic:")[0]
    found = findings(two_clusters(tmp_path, teams__ml_yaml=MLU590, environments__prod_yaml=prod))
    assert [(f.code, str(f.location)) for f in found] == [
        ("CLU001", "values/environments/prod.yaml:2:3"),
        ("CLU008", "values/teams/ml.yaml:6:12"),
    ]
    assert found[1].message == (
        "job 'mlu-train' asks for model 'MLU590', which is none of cambricon's pools (models: "
        "MLU370 in no cluster)"
    )
    assert found[1].hint == (
        "set it to MLU370, or add a pool of model MLU590 to "
        "values/vendors/cambricon.yaml and list it in a cluster's pools"
    )


def test_a_model_no_pool_is_of_a_vendor_in_one_cluster_is_said_alike(tmp_path: Path) -> None:
    """Cambricon is in domestic alone: the same finding, whatever the number of clusters."""
    team = TWO_CLUSTERS["teams/ml.yaml"].replace("devices: 2", "devices: 2\n    model: MLU590")
    [finding] = findings(two_clusters(tmp_path, teams__ml_yaml=team))
    assert (finding.code, str(finding.location), finding.path, finding.message, finding.hint) == (
        "CLU008",
        "values/teams/ml.yaml:6:12",
        "$.jobs['mlu-train'].model",
        "job 'mlu-train' asks for model 'MLU590', which is none of cambricon's pools (models: "
        "MLU370 in domestic)",
        "set it to MLU370, or add a pool of model MLU590 to values/vendors/cambricon.yaml and "
        "list it in a cluster's pools",
    )
    # A fallback model missing too: each is said at its own line.
    team = team.replace("model: MLU590", "model: MLU590\n    fallbackModel: MLU580")
    found = findings(two_clusters(tmp_path / "fallback", teams__ml_yaml=team))
    assert [(f.code, f.path) for f in found] == [
        ("CLU008", "$.jobs['mlu-train'].model"),
        ("SCH005", "$.jobs['mlu-train'].fallbackModel"),
    ]
    assert found[1].message == (
        "job 'mlu-train': fallbackModel 'MLU580' names no pool of cambricon (models: MLU370)"
    )


def test_a_task_asks_for_its_job_s_model(tmp_path: Path) -> None:
    """A Volcano job's model holds for its tasks that name none (as its pods are built): said
    at the job's model, for the task."""
    team = (
        "quota: {cambricon: 4}\njobs:\n  gang:\n    kind: volcano\n    model: MLU590\n"
        "    images: {cambricon: r/t:mlu}\n    tasks:\n      w: {vendor: cambricon, replicas: 2}\n"
    )
    found = findings(two_clusters(tmp_path, teams__ml_yaml=team))
    # DEP001: the fleet does not declare Volcano, a root cause of its own.
    assert [(f.code, f.path) for f in found] == [
        ("DEP001", "$.jobs.gang.kind"),
        ("CLU008", "$.jobs.gang.model"),
    ]
    assert found[1].message == (
        "job 'gang' task 'w' asks for model 'MLU590', which is none of cambricon's pools "
        "(models: MLU370 in domestic)"
    )
    own = team.replace("{vendor: cambricon, replicas: 2}", "{vendor: cambricon, model: MLU370}")
    got = views(two_clusters(tmp_path / "own", teams__ml_yaml=own))
    assert summary(got["prod/domestic"])["teams"] == {"ml": ({"cambricon": 4}, ["gang"], [])}


def two_vendors(nvidia: str, ascend: str) -> str:
    """Team inference's service over NVIDIA and Ascend, each track with its model."""
    return (
        "quota: {nvidia: {main: 4, domestic: 4}, ascend: 4}\nservices:\n  serve:\n"
        "    images: {nvidia: r/s:cuda, ascend: r/s:npu}\n    vendorMounts: false\n"
        "    migration: {from: nvidia, to: ascend}\n    phase: validate\n    tracks:\n"
        f"      nvidia: {{replicas: 1, model: {nvidia}}}\n"
        f"      ascend: {{replicas: 1, model: {ascend}}}\n"
    )


def test_a_service_over_two_vendors_says_each_model_no_pool_is_and_no_other_track(
    tmp_path: Path,
) -> None:
    """Each track's model at its own line; a track whose model is a pool's is not said to pick
    none in a cluster without it (the service is in no cluster)."""
    root = split_models(tmp_path, teams__inference_yaml=two_vendors("H10", "910c"))
    assert [(f.code, str(f.location), f.message, f.hint) for f in findings(root)] == [
        (
            "CLU008",
            "values/teams/inference.yaml:9:36",
            f"service 'serve' track 'nvidia' asks for model 'H10', which is none of nvidia's "
            f"pools {NVIDIA_MODELS}",
            "did you mean 'H100'? set it to A100 or H100, or add a pool of model H10 to "
            "values/vendors/nvidia.yaml and list it in a cluster's pools",
        ),
        (
            "CLU008",
            "values/teams/inference.yaml:10:36",
            "service 'serve' track 'ascend' asks for model '910c', which is none of ascend's "
            "pools (models: 910b in main)",
            "did you mean '910b'? set it to 910b, or add a pool of model 910c to "
            "values/vendors/ascend.yaml and list it in a cluster's pools",
        ),
    ]
    root = split_models(tmp_path / "one", teams__inference_yaml=two_vendors("H100", "910c"))
    assert [(f.code, f.path) for f in findings(root)] == [
        ("CLU008", "$.services.serve.tracks.ascend.model")
    ]


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
    [finding] = findings(two_clusters(tmp_path / "typo", teams__ml_yaml=team))
    assert (finding.code, str(finding.location), finding.path) == (
        "CLU003",
        "values/teams/ml.yaml:7:14",
        "$.jobs['mlu-train'].cluster",
    )
    assert finding.message == (
        "job 'mlu-train' names cluster 'domestc', which is not one of the environment's clusters"
    )
    assert finding.hint == "did you mean 'domestic'? clusters: main, domestic"


# prod as three clusters: NVIDIA's a100 in main, its h100 in east, Cambricon in domestic.
THREE_CLUSTERS_PROD = """\
clusters:
  main:
    destination: {server: https://main.example.com:6443}
    pools: [nvidia/a100]
  east:
    destination: {name: east}
    pools: [nvidia/h100]
  domestic:
    destination: {name: domestic}
    pools: [cambricon]
"""


def test_a_cluster_named_without_the_vendor_s_pools_is_told_which_clusters_have_them(
    tmp_path: Path,
) -> None:
    """By a quota split and by a job's cluster; none when no cluster has them (no cluster has
    both NVIDIA and Cambricon). AMD is no vendor of prod: its quota is REF001's, whatever
    cluster it names, and no CLU004 says it twice."""
    team = """\
quota: {nvidia: {main: 4, domestic: 2}, cambricon: {domestic: 4}, amd: {main: 2}}
jobs:
  train:
    vendor: nvidia
    cluster: domestic
    images: {nvidia: r/t}
  mixed:
    kind: volcano
    cluster: main
    images: {nvidia: r/t:cuda, cambricon: r/t:mlu}
    tasks:
      gpu: {vendor: nvidia, devices: 1, replicas: 2}
      mlu: {vendor: cambricon, devices: 1, replicas: 2}
"""
    files = {
        "vendors/nvidia.yaml": SPLIT_NVIDIA["vendors/nvidia.yaml"],
        "vendors/cambricon.yaml": CAMBRICON_MLU370,
        "teams/ml.yaml": team,
        "environments/prod.yaml": THREE_CLUSTERS_PROD,
    }
    found = findings(tree(tmp_path, files, fleet=PROD_FLEET))
    others = [f for f in found if f.code in ("DEP001", "ALC005")]
    found = [f for f in found if f not in others]
    assert [(f.code, str(f.location), f.path, f.message, f.hint) for f in found] == [
        (
            "CLU004",
            "values/teams/ml.yaml:1:37",
            "$.quota.nvidia.domestic",
            "team ml: quota for nvidia names cluster 'domestic', which has no nvidia pools",
            "clusters with nvidia pools: main, east",
        ),
        (
            "REF001",
            "values/teams/ml.yaml:1:67",
            "$.quota.amd",
            "quota names vendor 'amd', which has no enabled values/vendors/amd.yaml",
            "add (or enable) values/vendors/amd.yaml: amd is in the catalog, so its pools are all "
            "the file needs; or name another vendor (known vendors: cambricon, nvidia)",
        ),
        (
            "CLU003",
            "values/teams/ml.yaml:5:14",
            "$.jobs.train.cluster",
            "job 'train' names cluster 'domestic', which has no pools for nvidia",
            "clusters that have them: main, east",
        ),
        (
            "CLU003",
            "values/teams/ml.yaml:9:14",
            "$.jobs.mixed.cluster",
            "job 'mixed' names cluster 'main', which has no pools for nvidia, cambricon",
            "clusters that have them: none",
        ),
    ]
    # Root causes of their own, from the base layer (no clusters: the job is there): the fleet
    # does not declare Volcano, and the gang's NVIDIA task names no model of two.
    assert [(f.code, f.path) for f in others] == [
        ("DEP001", "$.jobs.mixed.kind"),
        ("ALC005", "$.jobs.mixed.tasks.gpu"),
    ]


def split_nvidia(root: Path, team: str) -> Path:
    """SPLIT_NVIDIA (a100 in main, h100 in domestic), with team ml as `team` says."""
    return tree(root, {**TWO_CLUSTERS, **SPLIT_NVIDIA, "teams/ml.yaml": team}, fleet=PROD_FLEET)


def of_team(values_dir: Path, team: str = "ml") -> list[Finding]:
    return [f for f in findings(values_dir) if f.location.file == f"values/teams/{team}.yaml"]


def test_a_job_that_could_run_in_two_clusters_must_name_one(tmp_path: Path) -> None:
    team = "quota: {nvidia: {main: 4, domestic: 8}}\njobs:\n  j:\n    vendor: nvidia\n"
    team += "    images: {nvidia: r/t}\n"
    [finding] = of_team(split_nvidia(tmp_path, team))
    assert (finding.code, str(finding.location), finding.path) == (
        "CLU003",
        "values/teams/ml.yaml:3:3",
        "$.jobs.j",
    )
    assert finding.message == "job 'j' could run in clusters main, domestic: name one"
    assert finding.hint == "set cluster: <one of main, domestic> on it"
    got = views(split_nvidia(tmp_path, team + "    cluster: domestic\n"))
    assert summary(got["prod/domestic"])["teams"] == {"ml": ({"nvidia": 8}, ["j"], [])}
    assert summary(got["prod/main"])["teams"]["ml"] == ({"nvidia": 4}, [], [])  # type: ignore[index]
    # A model picks the cluster by itself.
    got = views(split_nvidia(tmp_path, team + "    model: H100\n"))
    assert summary(got["prod/domestic"])["teams"] == {"ml": ({"nvidia": 8}, ["j"], [])}


def test_a_quota_for_a_vendor_in_two_clusters_says_how_it_splits(tmp_path: Path) -> None:
    [finding] = of_team(split_nvidia(tmp_path, "quota: {nvidia: 8}\n"))
    # At the number, not at the vendor's key.
    assert (finding.code, str(finding.location), finding.path) == (
        "CLU004",
        "values/teams/ml.yaml:1:17",
        "$.quota.nvidia",
    )
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


def test_a_team_s_values_in_a_cluster_s_view_are_the_team_as_that_cluster_has_it(
    tmp_path: Path,
) -> None:
    """Its quota there, its workloads placed there, and its disabled workloads (in every cluster
    it is in); read from where the team's file writes them."""
    team = (
        "quota: {nvidia: {main: 4, domestic: 8}}\njobs:\n  j:\n    vendor: nvidia\n"
        "    images: {nvidia: r/t}\n    cluster: domestic\n  off:\n    enabled: false\n"
        "    vendor: nvidia\n    images: {nvidia: r/t}\n"
    )
    got = views(split_nvidia(tmp_path, team))
    for key, quota, jobs in (
        ("prod/main", {"nvidia": 4}, ["off"]),
        ("prod/domestic", {"nvidia": 8}, ["j", "off"]),
    ):
        [ml] = [t for t in got[key].teams if t.name == "ml"]
        assert ml.quota == ml.doc.get("quota") == quota, key
        assert sorted(ml.doc.get("jobs")) == jobs, key
        assert ml.doc.sources == ("values/teams/ml.yaml",)
        assert str(ml.doc.locate(("jobs", "off", "vendor"))) == "values/teams/ml.yaml:9:13"
    # A team without a quota gets none in its cluster's view.
    got = views(split_nvidia(tmp_path / "none", "jobs:\n" + team.split("jobs:\n")[1]))
    [ml] = [t for t in got["prod/domestic"].teams if t.name == "ml"]
    assert "quota" not in ml.doc.data and ml.quota == {}


def test_a_quota_per_model_goes_to_the_cluster_of_each_models_pools(tmp_path: Path) -> None:
    """A100 is in main, H100 in domestic: each cluster's team holds its model's quota, and the
    vendor's quota there is that model's (the map has no cluster's name: it is per model)."""
    got = views(split_nvidia(tmp_path, "quota: {nvidia: {H100: 6, A100: 2}}\n"))
    for key, quota, models in (
        ("prod/main", {"nvidia": 2}, {"nvidia": {"A100": 2}}),
        ("prod/domestic", {"nvidia": 6}, {"nvidia": {"H100": 6}}),
    ):
        [ml] = [t for t in got[key].teams if t.name == "ml"]
        assert (ml.quota, ml.models, ml.doc.get("quota")) == (quota, models, models), key


def test_a_quota_per_model_names_a_model_of_one_cluster(tmp_path: Path) -> None:
    """A model whose pools are in two clusters cannot go to one; a key that is neither a
    cluster nor a model is named with both lists."""
    nvidia = SPLIT_NVIDIA["vendors/nvidia.yaml"] + (
        "  - {name: a100b, model: A100, devicesPerNode: 4, nodes: [h2]}\n"
    )
    prod = SPLIT_NVIDIA["environments/prod.yaml"].replace(
        "nvidia/h100]", "nvidia/h100, nvidia/a100b]"
    )
    team = "quota: {nvidia: {A100: 2, B200: 1}}\n"
    root = tree(
        tmp_path,
        {
            **TWO_CLUSTERS,
            **SPLIT_NVIDIA,
            "vendors/nvidia.yaml": nvidia,
            "environments/prod.yaml": prod,
            "teams/ml.yaml": team,
        },
        fleet=PROD_FLEET,
    )
    assert [(f.code, str(f.location), f.path, f.message, f.hint) for f in of_team(root)] == [
        (
            "CLU004",
            "values/teams/ml.yaml:1:18",
            "$.quota.nvidia.A100",
            "team ml: quota for nvidia model 'A100', whose pools are in clusters main, domestic: "
            "a quota per model goes to the one cluster of its pools",
            "give nvidia devices per cluster instead, e.g. quota: {nvidia: {main: N, domestic: N}}",
        ),
        (
            "CLU004",
            "values/teams/ml.yaml:1:27",
            "$.quota.nvidia.B200",
            "team ml: quota for nvidia names 'B200', which is neither a cluster with nvidia pools "
            "nor a model of them",
            "clusters with nvidia pools: main, domestic; models of nvidia's pools: A100, H100",
        ),
    ]


def test_cluster_words_in_an_environment_without_clusters_are_findings(tmp_path: Path) -> None:
    """A workload that names a cluster; a quota map, which there is per model: `main` is no
    model of nvidia's pools (RES003, once the values load), and the hint says what a split by
    cluster needs."""
    team = "quota: {nvidia: 4}\njobs:\n  j:\n    vendor: nvidia\n    cluster: main\n"
    team += "    images: {nvidia: r/t}\n"
    team += "services:\n  s:\n    cluster: main\n    images: {nvidia: r/s}\n"
    team += "    tracks: {nvidia: {replicas: 1}}\n"
    found = findings(tree(tmp_path, {"teams/ml.yaml": team}, fleet=FLEET))
    assert [(f.code, str(f.location), f.path, f.envs) for f in found] == [
        ("CLU003", "values/teams/ml.yaml:5:14", "$.jobs.j.cluster", ()),
        ("CLU003", "values/teams/ml.yaml:9:14", "$.services.s.cluster", ()),
    ]
    remove = "remove cluster, or declare the clusters in the environment's file"
    assert [(f.message, f.hint) for f in found] == [
        ("job 'j' names cluster 'main', and the environment declares no clusters", remove),
        ("service 's' names cluster 'main', and the environment declares no clusters", remove),
    ]
    quota = tree(tmp_path / "quota", {"teams/ml.yaml": "quota: {nvidia: {main: 4}}\n"})
    assert [
        (f.code, str(f.location), f.message, f.hint) for f in findings(quota) if f.code == "RES003"
    ] == [
        (
            "RES003",
            "values/teams/ml.yaml:1:18",
            "team ml: quota for nvidia names model 'main', which no pool of nvidia has",
            "models of nvidia's pools: A100; a quota split by cluster needs the clusters "
            "declared in the environment's file",
        )
    ]


def test_a_track_naming_a_cluster_in_an_environment_without_clusters_is_a_finding(
    tmp_path: Path,
) -> None:
    """Each track of a service that names a cluster, where the environment declares none, is its
    own CLU005 at that track's `cluster:`; a track that names none is fine."""
    team = "quota: {nvidia: 4, ascend: 4}\nservices:\n  s:\n"
    team += "    images: {nvidia: r/s:cuda, ascend: r/s:cann}\n"
    team += "    migration: {from: nvidia, to: ascend}\n    tracks:\n"
    team += "      nvidia: {replicas: 1, cluster: main}\n"
    team += "      ascend: {replicas: 1, cluster: domestic}\n"
    team += "  t:\n    images: {nvidia: r/t}\n    tracks: {nvidia: {replicas: 1}}\n"
    found = findings(tree(tmp_path, {"teams/ml.yaml": team, "vendors/ascend.yaml": ASCEND_910B}))
    remove = "remove cluster, or declare the clusters in the environment's file"
    assert [(f.code, str(f.location), f.path, f.envs, f.message, f.hint) for f in found] == [
        (
            "CLU005",
            "values/teams/ml.yaml:7:38",
            "$.services.s.tracks.nvidia.cluster",
            (),
            "track nvidia of service 's' names cluster 'main', and the environment declares "
            "no clusters",
            remove,
        ),
        (
            "CLU005",
            "values/teams/ml.yaml:8:38",
            "$.services.s.tracks.ascend.cluster",
            (),
            "track ascend of service 's' names cluster 'domestic', and the environment declares "
            "no clusters",
            remove,
        ),
    ]


def test_a_cluster_declares_its_own_add_ons_over_its_environments(tmp_path: Path) -> None:
    """The site runs NFD in the domestic cluster and not in main: the fleet installs NFD in main
    alone, and the domestic cluster's declaration is read at its own line."""
    prod = TWO_CLUSTERS_PROD.replace(
        "    labels: {region: cn-north}\n",
        "    labels: {region: cn-north}\n    platform: {nfd: {provided: site}}\n",
    )
    root = tree(
        tmp_path,
        {**TWO_CLUSTERS, "environments/prod.yaml": prod},
        fleet=PROD_FLEET + "platform: {nfd: {provided: fleet}}\n",
    )
    got = views(root)
    nfd = addons.BY_KEY["nfd"]
    main, domestic = got["prod/main"], got["prod/domestic"]
    assert (platform.provided(main, nfd), platform.provided(domestic, nfd)) == ("fleet", "site")
    assert [a.key for a in platform.rendered(main)] == ["nfd"]
    assert platform.rendered(domestic) == []
    where = domestic.fleet.doc.locate(("platform", "nfd", "provided"))
    assert str(where) == "values/environments/prod.yaml:9:32"


def test_a_quota_split_by_cluster_is_no_quota_per_model_in_the_base_layer(
    tmp_path: Path,
) -> None:
    """The base layer is common to the environments that declare clusters: a map of clusters
    there is their split, not models named 'main' and 'domestic' (RES003) under a backend that
    counts no models (RES005)."""
    team = "quota: {nvidia: {main: 4, domestic: 2}}\n"
    assert of_team(split_nvidia(tmp_path, team)) == []
