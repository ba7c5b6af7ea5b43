"""Findings that never hide each other (docs/validate.md, "One finding per root cause").

Loading, the cluster split and the checks run to completion side by side: each broken tree
below gets every root cause in one run, each once, and nothing that a refused object would
make up (a placement finding for a vendor that is gone, a 'did you mean' for a vendor file the
schema refused, a pod finding that restates a vendor clash). The trees are TWO_CLUSTERS (prod
as clusters main and domestic; team ml's quota and job on Cambricon, which only domestic has)
in a fleet of staging and prod, staging without clusters.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from generator.findings import Finding
from tests.fixtures import (
    ASCEND_910B,
    CAMBRICON_MLU370,
    DRA_NVIDIA,
    FLEET,
    TWO_CLUSTERS,
    TWO_CLUSTERS_PROD,
    findings,
    tree,
)


def broken(root: Path, files: Mapping[str, str | None], fleet: str = FLEET) -> list[Finding]:
    return findings(tree(root, {**TWO_CLUSTERS, **files}, fleet=fleet))


def where(found: list[Finding]) -> list[tuple[str, str, str, tuple[str, ...]]]:
    """(code, file:line:column, JSON path, layers) of each finding, in report order."""
    return [(f.code, str(f.location), f.path, f.envs) for f in found]


def test_the_trees_are_clean_before_they_are_broken(tmp_path: Path) -> None:
    assert broken(tmp_path / "two", {}) == []
    assert broken(tmp_path / "dra", DRA, fleet=DRA_FLEET) == []


def test_a_deleted_vendor_is_said_where_it_is_named_and_sends_no_one_to_another_cluster(
    tmp_path: Path,
) -> None:
    """vendors/cambricon.yaml deleted while prod's domestic cluster lists it: the cluster's list,
    the team's quota and the team's job each say so once, and no CLU003 asks to name a cluster
    for a job whose vendor is gone (before: CLU002 and that CLU003 alone)."""
    found = broken(tmp_path, {"vendors/cambricon.yaml": None})
    assert where(found) == [
        ("CLU002", "values/environments/prod.yaml:9:13", "$.clusters.domestic.pools[0]", ("prod",)),
        ("REF001", "values/teams/ml.yaml:1:20", "$.quota.cambricon", ()),
        # In every layer: the job is in each of prod's clusters, as the quota is.
        ("WKL001", "values/teams/ml.yaml:4:13", "$.jobs['mlu-train'].vendor", ()),
    ]
    assert [f.text for f in found] == [
        "cluster 'domestic' lists vendor 'cambricon', which has no enabled "
        "values/vendors/cambricon.yaml in environment 'prod'",
        "quota names vendor 'cambricon', which has no enabled values/vendors/cambricon.yaml",
        "vendor 'cambricon' has no enabled values/vendors/cambricon.yaml",
    ]
    assert [f.hint for f in found] == [
        "vendors: ascend, nvidia",
        # cambricon is in the catalog: its file is named, not a close vendor
        *[
            "add (or enable) values/vendors/cambricon.yaml: cambricon is in the catalog, so its "
            "pools are all the file needs; or name another vendor (known vendors: ascend, nvidia)"
        ]
        * 2,
    ]


def test_a_service_on_a_deleted_vendor_is_told_only_where_its_other_track_would_run(
    tmp_path: Path,
) -> None:
    """vendors/ascend.yaml deleted: inference-service's Ascend track is WKL001 once, checked in
    main (where its NVIDIA track is) and never in domestic, which would call NVIDIA missing too."""
    found = broken(tmp_path, {"vendors/ascend.yaml": None})
    assert where(found) == [
        ("CLU002", "values/environments/prod.yaml:4:21", "$.clusters.main.pools[1]", ("prod",)),
        ("REF001", "values/teams/inference.yaml:1:20", "$.quota.ascend", ()),
        (
            "WKL001",
            "values/teams/inference.yaml:10:15",
            "$.services['inference-service'].tracks.ascend",
            ("", "prod/main", "staging"),
        ),
    ]
    assert found[2].text == (
        "vendor 'ascend' has no enabled values/vendors/ascend.yaml in environments 'prod' "
        "(cluster 'main'), 'staging'"
    )
    # Named into domestic, which lacks its NVIDIA track's pools: a root cause of its own, said of
    # what the environment has (NVIDIA, in main), not of the vendor that is gone.
    prod = TWO_CLUSTERS_PROD + (
        "teams:\n  inference:\n    services:\n      inference-service: {cluster: domestic}\n"
    )
    found = broken(
        tmp_path / "named", {"vendors/ascend.yaml": None, "environments/prod.yaml": prod}
    )
    assert [(f.code, f.envs) for f in found] == [
        ("CLU002", ("prod",)),
        ("CLU003", ("prod",)),
        ("REF001", ()),
        ("WKL001", ("", "staging")),
    ]
    assert (found[1].message, found[1].hint) == (
        "service 'inference-service' names cluster 'domestic', which has no pools for nvidia",
        "clusters that have them: main",
    )


# NVIDIA's DRA clone (its name one edit from 'nvidia') in prod's main cluster, with a team of
# its own; the fleet installs the DRA driver it needs.
DRA_FLEET = FLEET + "platform: {nvidiaDraDriver: {provided: fleet}}\n"
DRA = {
    "vendors/nvidia-dra.yaml": DRA_NVIDIA,
    "environments/prod.yaml": TWO_CLUSTERS_PROD.replace(
        "[nvidia, ascend/910b]", "[nvidia, nvidia-dra, ascend/910b]"
    ),
    "teams/h100.yaml": "quota: {nvidia-dra: 8}\njobs:\n  h100:\n    vendor: nvidia-dra\n"
    "    images: {nvidia-dra: r/h}\n",
}


def test_a_vendor_file_the_schema_refuses_is_its_one_finding(tmp_path: Path) -> None:
    """An unknown key in vendors/nvidia-dra.yaml: VAL001, and nothing of what names the vendor
    (before: also CLU002 'did you mean nvidia?' at the cluster's list, and a CLU003)."""
    files = {**DRA, "vendors/nvidia-dra.yaml": DRA_NVIDIA + "costWieght: 1.6\n"}
    found = broken(tmp_path, files, fleet=DRA_FLEET)
    assert where(found) == [("VAL001", "values/vendors/nvidia-dra.yaml:7:1", "$.costWieght", ())]
    assert found[0].message == "unknown key 'costWieght'"
    assert found[0].hint.startswith("did you mean 'costWeight'?")
    # Only the job on the refused vendor is left out: the team's next job is still checked
    # (NVIDIA devices it has no quota for: MIG004).
    team = (
        DRA["teams/h100.yaml"]
        + "  zz:\n    vendor: nvidia\n    devices: 2\n    images: {nvidia: r/z}\n"
    )
    found = broken(tmp_path / "next", {**files, "teams/h100.yaml": team}, fleet=DRA_FLEET)
    assert [(f.code, f.path) for f in found] == [
        ("MIG004", "$.jobs.zz"),
        ("VAL001", "$.costWieght"),
    ]


def test_a_vendor_that_does_not_resolve_is_its_one_finding(tmp_path: Path) -> None:
    """Cambricon's plugin image left out (the catalog has none): VAL003, and neither the
    cluster's list nor the team's quota and job call the vendor missing."""
    cambricon = TWO_CLUSTERS["vendors/cambricon.yaml"].replace(
        "image: r/cambricon-device-plugin, ", ""
    )
    found = broken(tmp_path, {"vendors/cambricon.yaml": cambricon})
    assert where(found) == [
        ("VAL003", "values/vendors/cambricon.yaml:1:1", "$.devicePlugin.image", ())
    ]
    assert found[0].message == "devicePlugin.image is not set"


# NVIDIA's catalog entry under another name that kept NVIDIA's node label, with a team that
# uses it; its pool is not (yet) in a cluster of prod.
CLONE = {
    "vendors/nvidia-clone.yaml": "catalog: nvidia\n"
    "devicePlugin: {name: nvidia-device-plugin-clone}\nexporter: {name: dcgm-exporter-clone}\n"
    "pools:\n  - {name: a100-clone, model: A100, devicesPerNode: 4, nodes: [n9]}\n",
    "teams/clone.yaml": "quota: {nvidia-clone: 4}\njobs:\n  j:\n    vendor: nvidia-clone\n"
    "    images: {nvidia-clone: r/j}\n",
}


def test_a_clashing_clone_is_one_res001_beside_its_unplaced_pool(tmp_path: Path) -> None:
    """Two root causes, each once: the clone's pool is in no cluster of prod (CLU001), and its
    selector matches NVIDIA's pool (RES001, where the clone is: the base layer and staging).
    Before, CLU001 alone until the pool was placed; RES001 was said from both vendors' side,
    and every NVIDIA workload got a POD005 for the same clash. The team's quota and job on the
    clone wait for its pool in prod (CLU001 says why)."""
    found = broken(tmp_path, CLONE)
    assert where(found) == [
        ("CLU001", "values/environments/prod.yaml:2:3", "$.clusters", ("prod",)),
        (
            "RES001",
            "values/vendors/nvidia-clone.yaml:1:1",
            "$.nodeLabels.accelerator",
            ("", "staging"),
        ),
    ]
    assert [f.text for f in found] == [
        "pool nvidia-clone/a100-clone is in no cluster in environment 'prod'",
        "nvidia-clone and nvidia both advertise nvidia.com/gpu, and nvidia-clone's selector "
        "accelerator=nvidia-gpu also matches nvidia's pool 'a100' in environment 'staging'",
    ]
    # Placed in main, the clash holds in prod too: still one RES001, and no POD005.
    prod = TWO_CLUSTERS_PROD.replace("[nvidia, ascend/910b]", "[nvidia, nvidia-clone, ascend/910b]")
    found = broken(tmp_path / "placed", {**CLONE, "environments/prod.yaml": prod})
    assert [(f.code, f.envs) for f in found] == [("RES001", ("", "prod/main", "staging"))]


def test_the_environment_is_named_once(tmp_path: Path) -> None:
    """The cluster split's findings leave the environment to the finding's layers, which the
    text names (they said "in environment 'prod' in environment 'prod'")."""
    prod = TWO_CLUSTERS_PROD.replace("[cambricon]", "[cambricon, nvidai]") + (
        "teams:\n  ml:\n    jobs:\n      mlu-train: {cluster: domestc}\n"
        "  inference:\n    services:\n      inference-service: {cluster: domestic}\n"
    )
    texts = [f.text for f in broken(tmp_path, {"environments/prod.yaml": prod})]
    assert texts == [
        "cluster 'domestic' lists vendor 'nvidai', which has no enabled "
        "values/vendors/nvidai.yaml in environment 'prod'",
        "job 'mlu-train' names cluster 'domestc', which is not one of the environment's "
        "clusters in environment 'prod'",
        "service 'inference-service' names cluster 'domestic', which has no pools for ascend "
        "(910b), nvidia in environment 'prod'",
    ]
    assert all(t.count("'prod'") == 1 for t in texts)


def test_a_quota_for_a_refused_vendor_hides_no_other_vendor_s_finding(tmp_path: Path) -> None:
    """MIG004 leaves a workload on a vendor without quota to REF001 when the team's quota has a
    misspelt vendor key (it may be the key meant). A vendor whose file is refused is no
    misspelling: the job on Ascend, which the team has no quota for, is still told."""
    team = (
        "quota: {nvidia: 4, cambricon: 4}\njobs:\n  npu:\n    vendor: ascend\n    devices: 2\n"
        "    images: {ascend: r/npu}\n"
    )
    files = {
        "vendors/ascend.yaml": ASCEND_910B,
        "vendors/cambricon.yaml": CAMBRICON_MLU370 + "bogus: 1\n",
        "teams/ml.yaml": team,
    }
    found = findings(tree(tmp_path, files))
    assert where(found) == [
        ("MIG004", "values/teams/ml.yaml:4:5", "$.jobs.npu", ()),
        ("VAL001", "values/vendors/cambricon.yaml:5:1", "$.bogus", ()),
    ]
    assert found[0].message == (
        "team 'ml' needs 2 ascend devices in namespace 'ml' (job npu=2) but its quota is 0"
    )
