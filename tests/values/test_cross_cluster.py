"""The findings of a service across clusters (values/clusters.py, policy/platform.py): each at
the line to change, one per root cause."""

from __future__ import annotations

from pathlib import Path

from tests.fixtures import (
    CAMBRICON_MLU370,
    CROSS_GATEWAY,
    CROSS_PROD,
    CROSS_TEAM,
    PROD_FLEET,
    cross_clusters,
    findings,
)


def tracks_override(tracks: str) -> str:
    """prod's override of team inference's service chat (an environment's teams: section, after
    its clusters): `tracks`, its lines under `tracks:`."""
    return "teams:\n  inference:\n    services:\n      chat:\n        tracks:\n" + tracks


def test_a_track_that_names_a_cluster_without_its_vendor_s_pools(tmp_path: Path) -> None:
    override = tracks_override("          ascend: {cluster: main}\n")
    [finding] = findings(cross_clusters(tmp_path, clusters=override))
    assert (finding.code, str(finding.location), finding.path) == (
        "CLU005",
        "values/environments/prod.yaml:13:29",
        "$.services.chat.tracks.ascend.cluster",
    )
    assert finding.message == (
        "track ascend of service 'chat' names cluster 'main', which has no pools for ascend"
    )
    assert finding.hint == "clusters with ascend: domestic"


def test_every_misplaced_track_is_its_own_finding(tmp_path: Path) -> None:
    """Both tracks name a cluster without their vendor's pools: two CLU005, neither hiding the
    other (the second used to show only once the first was fixed)."""
    override = tracks_override(
        "          ascend: {cluster: main}\n          nvidia: {cluster: domestic}\n"
    )
    got = findings(cross_clusters(tmp_path, clusters=override))
    assert [(f.code, str(f.location), f.message) for f in got] == [
        (
            "CLU005",
            "values/environments/prod.yaml:13:29",
            "track ascend of service 'chat' names cluster 'main', which has no pools for ascend",
        ),
        (
            "CLU005",
            "values/environments/prod.yaml:14:29",
            "track nvidia of service 'chat' names cluster 'domestic', which has no pools for "
            "nvidia",
        ),
    ]


def test_an_unknown_ingress_and_no_gateway_are_two_findings(tmp_path: Path) -> None:
    cross = "    crossCluster: {routing: gateway, ingressCluster: mian}\n"
    got = findings(cross_clusters(tmp_path, cross=cross))
    assert [(f.code, f.path, f.hint) for f in got] == [
        (
            "CLU007",
            "$.services.chat.crossCluster",
            "set crossCluster.gateway.parentRefs: [{name: <gateway>, namespace: <its namespace>}]",
        ),
        (
            "CLU006",
            "$.services.chat.crossCluster.ingressCluster",
            "did you mean 'main'? clusters: main, domestic",
        ),
    ]


def test_an_ingress_cluster_the_environment_does_not_have(tmp_path: Path) -> None:
    cross = CROSS_GATEWAY + "      ingressCluster: mian\n"
    [finding] = findings(cross_clusters(tmp_path, cross=cross))
    assert (finding.code, str(finding.location), finding.path) == (
        "CLU006",
        "values/teams/inference.yaml:17:23",
        "$.services.chat.crossCluster.ingressCluster",
    )
    assert finding.message == (
        "service 'chat': crossCluster.ingressCluster names 'mian', which is not one of the "
        "environment's clusters"
    )
    assert finding.hint == "did you mean 'main'? clusters: main, domestic"


def test_an_external_split_without_a_hostname(tmp_path: Path) -> None:
    cross = "    crossCluster: {routing: external}\n"
    [finding] = findings(cross_clusters(tmp_path, cross=cross))
    assert (finding.code, str(finding.location), finding.path) == (
        "CLU007",
        "values/teams/inference.yaml:14:5",
        "$.services.chat.crossCluster",
    )
    assert finding.message == (
        "service 'chat' routes across clusters by an external load balancer but names no "
        "hostname for it"
    )


def test_a_gateway_split_that_names_no_gateway(tmp_path: Path) -> None:
    cross = "    crossCluster: {routing: gateway}\n"
    [finding] = findings(cross_clusters(tmp_path, cross=cross))
    assert (finding.code, finding.path) == ("CLU007", "$.services.chat.crossCluster")
    assert finding.hint == (
        "set crossCluster.gateway.parentRefs: [{name: <gateway>, namespace: <its namespace>}] "
        "(a Gateway of cluster main)"
    )


def test_a_cluster_without_the_mcs_api_is_one_finding_per_cluster_at_crosscluster(
    tmp_path: Path,
) -> None:
    """main needs the MCS API for its track's export and for the route's imports: one line
    to add there, one finding; domestic for its export."""
    fleet = PROD_FLEET + "platform:\n  gatewayAPI: {provided: site}\n"
    main, domestic = sorted(findings(cross_clusters(tmp_path, fleet=fleet)), key=lambda f: f.envs)[
        ::-1
    ]
    assert [(f.code, str(f.location), f.path, f.envs) for f in (main, domestic)] == [
        (
            "DEP001",
            "values/teams/inference.yaml:15:16",
            "$.services.chat.crossCluster.routing",
            ("prod/main",),
        ),
        (
            "DEP001",
            "values/teams/inference.yaml:15:16",
            "$.services.chat.crossCluster.routing",
            ("prod/domestic",),
        ),
    ]
    # The route over the imports needs it too, at the same line: not said twice.
    assert main.message.startswith(
        "ServiceExport inference/chat-nvidia needs the Multi-Cluster Services API (its kind "
        "ServiceExport of multicluster.x-k8s.io/v1alpha1 is served by the Multi-Cluster Services "
        "API)"
    )
    assert domestic.hint == (
        "declare it: platform.mcs.provided: site in values/fleet.yaml once the cluster runs the "
        "Multi-Cluster Services API (or clusters.domestic.platform.mcs in "
        "values/environments/prod.yaml, for this cluster alone); or write the workload without it"
    )


def test_a_cluster_that_declares_the_mcs_api_is_clean(tmp_path: Path) -> None:
    fleet = PROD_FLEET + "platform:\n  gatewayAPI: {provided: site}\n"
    both = "    platform: {mcs: {provided: site}}\n"
    prod_clusters = cross_clusters(tmp_path, fleet=fleet)
    prod = prod_clusters / "environments" / "prod.yaml"
    text = prod.read_text()
    text = text.replace("    pools: [nvidia]\n", "    pools: [nvidia]\n" + both).replace(
        "    pools: [ascend]\n", "    pools: [ascend]\n" + both
    )
    prod.write_text(text)
    assert findings(prod_clusters) == []


def test_an_ingress_cluster_without_a_track_needs_the_mcs_api_for_the_route_s_imports(
    tmp_path: Path,
) -> None:
    """Cluster edge runs neither track: its HTTPRoute routes to the imports, which the MCS API
    makes there. main and domestic declare it; edge does not."""
    fleet = PROD_FLEET + "platform:\n  gatewayAPI: {provided: site}\n"
    mcs = "    platform: {mcs: {provided: site}}\n"
    edge = "  edge:\n    destination: {name: edge}\n    pools: [cambricon]\n"
    cross = (
        "    crossCluster:\n      routing: gateway\n      ingressCluster: edge\n"
        "      gateway: {parentRefs: [{name: gw, namespace: gw}]}\n"
    )
    values_dir = cross_clusters(
        tmp_path,
        cross=cross,
        clusters=edge,
        fleet=fleet,
        files={"vendors/cambricon.yaml": CAMBRICON_MLU370},
    )
    prod = values_dir / "environments" / "prod.yaml"
    prod.write_text(
        prod.read_text()
        .replace("    pools: [nvidia]\n", "    pools: [nvidia]\n" + mcs)
        .replace("    pools: [ascend]\n", "    pools: [ascend]\n" + mcs)
    )
    [finding] = findings(values_dir)
    assert (finding.code, str(finding.location), finding.envs) == (
        "DEP001",
        "values/teams/inference.yaml:15:16",
        ("prod/edge",),
    )
    assert finding.message.startswith(
        "HTTPRoute inference/chat needs the Multi-Cluster Services API (its backend "
        "ServiceImport chat-nvidia is served by the Multi-Cluster Services API; its backend "
        "ServiceImport chat-ascend is served by the Multi-Cluster Services API)"
    )


def test_each_cluster_s_quota_holds_only_the_track_that_runs_there(tmp_path: Path) -> None:
    """Team inference's Ascend quota (in domestic) is 1 device and chat's Ascend track needs 2
    at shift-30: MIG004 in domestic alone; main's NVIDIA quota holds its track and is not
    asked for the other."""
    values_dir = cross_clusters(tmp_path, phase="shift-30")
    team = values_dir / "teams" / "inference.yaml"
    team.write_text(team.read_text().replace("ascend: 4}", "ascend: 1}"))
    [finding] = findings(values_dir)
    assert (finding.code, finding.envs, finding.path) == (
        "MIG004",
        ("prod/domestic",),
        "$.services.chat.tracks.ascend.replicas",
    )
    assert finding.message == (
        "team 'inference' needs 2 ascend devices in namespace 'inference' (service chat 2x1=2) "
        "but its quota is 1"
    )


def test_a_track_that_names_no_cluster_of_the_environment(tmp_path: Path) -> None:
    override = tracks_override("          ascend: {cluster: domestc}\n")
    [finding] = findings(cross_clusters(tmp_path, clusters=override))
    assert (finding.code, str(finding.location), finding.path) == (
        "CLU005",
        "values/environments/prod.yaml:13:29",
        "$.services.chat.tracks.ascend.cluster",
    )
    assert finding.message == (
        "track ascend of service 'chat' names cluster 'domestc', which is not one of the "
        "environment's clusters"
    )
    assert finding.hint == "did you mean 'domestic'? clusters with ascend: domestic"


def test_a_track_whose_vendor_is_in_two_clusters_must_name_one(tmp_path: Path) -> None:
    """nvidia's track names main; ascend has a pool in each cluster and its track names none:
    one CLU005 at the track, listing both (the team's ascend quota says how it splits)."""
    ascend = "pools:\n" + "".join(
        f"  - {{name: {p}, model: 910b, devicesPerNode: 8, nodes: [{n}]}}\n"
        for p, n in (("910b", "npu-1"), ("910c", "npu-2"))
    )
    override = tracks_override("          nvidia: {cluster: main}\n")
    prod = CROSS_PROD.replace("pools: [nvidia]", "pools: [nvidia, ascend/910c]").replace(
        "pools: [ascend]", "pools: [ascend/910b]"
    )
    team = CROSS_TEAM.format(phase="shift-30", cross=CROSS_GATEWAY).replace(
        "ascend: 4}", "ascend: {main: 2, domestic: 2}}"
    )
    files = {
        "vendors/ascend.yaml": ascend,
        "environments/prod.yaml": prod.format(clusters=override),
        "teams/inference.yaml": team,
    }
    [finding] = findings(cross_clusters(tmp_path, files=files))
    assert (finding.code, str(finding.location), finding.path) == (
        "CLU005",
        "values/teams/inference.yaml:13:7",
        "$.services.chat.tracks.ascend",
    )
    assert finding.message == (
        "track ascend of service 'chat' could run in clusters main, domestic: name one"
    )
    assert finding.hint == "set cluster: <one of main, domestic> on the track"
