"""The plan (generator/plan.py): per service the replicas, weights and traffic of each track, the
devices per team against its quota and per vendor against its capacity, as data (`plan`), as
JSON (`Plan.as_json`) and as text (`format_text`); on values trees made for each behaviour.

The CLI's printing and exit codes are tested in tests/cli/test_plan.py.
"""

from __future__ import annotations

from pathlib import Path

from generator.plan import format_text, plan
from tests.fixtures import (
    ASCEND_910B,
    CROSS_EXTERNAL,
    DRA_NVIDIA,
    LWS_TEAM,
    MIG_NVIDIA,
    NVIDIA,
    PROD_FLEET,
    SHARED_NVIDIA,
    cross_clusters,
    tree,
)

# Team web in a prod-only fleet of NVIDIA (8 GPUs, nodes of 4) and Ascend (8 NPUs, one node):
# service chat moves from NVIDIA (5 replicas of 2 GPUs) to Ascend (8 replicas of 1 NPU) with
# routing: service, in phase shift-20.
WEB = """\
quota: {nvidia: 12, ascend: 8}
services:
  chat:
    images: {nvidia: r/chat:cuda, ascend: r/chat:cann}
    vendorMounts: false
    migration: {from: nvidia, to: ascend}
    phase: shift-20
    tracks:
      nvidia: {devicesPerReplica: 2, replicas: 5}
      ascend: {devicesPerReplica: 1, replicas: 8, model: 910b}
"""


def web_tree(root: Path, prod: str = "{}\n") -> Path:
    """The tree above; `prod` is environments/prod.yaml."""
    files = {
        "fleet.yaml": PROD_FLEET,
        "vendors/nvidia.yaml": NVIDIA,
        "vendors/ascend.yaml": ASCEND_910B,
        "teams/web.yaml": WEB,
        "environments/prod.yaml": prod,
    }
    return tree(root, files, defaults=False)


def test_text_of_a_plan_whose_capacity_is_exceeded(tmp_path: Path) -> None:
    """Every line of the text: 5 + 8 pods split 38.5 / 61.5 %, not 80 / 20; NVIDIA needs 10 of
    its 8 GPUs (its quota of 12 holds them), Ascend exactly its 8 NPUs, which fits."""
    result = plan(web_tree(tmp_path))
    assert format_text(result) == (
        "environment prod\n"
        "  service web/chat (namespace web): phase shift-20, routing service\n"
        "    track   replicas  devices  weight  traffic\n"
        "    nvidia  5         10       80      38.5%\n"
        "    ascend  8         8        20      61.5%\n"
        "    routing service: the Service balances over ready pods, so traffic follows "
        "replicas, not weights; use routing gateway or istio for weights\n"
        "  devices per team and vendor (services + largest job) vs quota, and what its jobs "
        "hold at once within the quota\n"
        "    team  namespace  vendor  services  job  needed  quota  fits  at once\n"
        "    web   web        ascend  8         0    8       8      yes   8\n"
        "    web   web        nvidia  10        0    10      12     yes   10\n"
        "  devices per vendor (all teams: services + largest job; at once: each team's jobs up "
        "to its quota) vs capacity\n"
        "    vendor  counted in  needed  capacity  fits  at once  jobs queue\n"
        "    ascend  devices     8       8         yes   8        no\n"
        "    nvidia  devices     10      8         NO    10       yes\n"
        "plan does NOT fit\n"
    )


def test_capacity_rows_fit_up_to_the_capacity_itself(tmp_path: Path) -> None:
    """Ascend's 8 NPUs needed of 8 fit; NVIDIA's 10 GPUs of 8 do not, and the plan fails."""
    result = plan(web_tree(tmp_path), "prod")
    [env] = result.envs
    got = [(c.vendor, c.needed, c.capacity, c.fits) for c in env.capacity]
    assert got == [("ascend", 8, 8, True), ("nvidia", 10, 8, False)]
    assert result.fits is False


def test_a_shared_vendor_is_counted_in_its_shares(tmp_path: Path) -> None:
    """SHARED_NVIDIA: 1 GPU shared 4 ways holds 4 shares; a team's 3 replicas need 3."""
    team = (
        "quota: {nvidia-shared: 4}\nservices:\n  embed:\n    images: {nvidia-shared: r/e:1}\n"
        "    tracks:\n      nvidia-shared: {devicesPerReplica: 1, replicas: 3}\n"
    )
    files = {
        "fleet.yaml": PROD_FLEET,
        "vendors/nvidia.yaml": NVIDIA,
        "vendors/nvidia-shared.yaml": SHARED_NVIDIA,
        "teams/web.yaml": team,
    }
    [env] = plan(tree(tmp_path, files, defaults=False)).envs
    got = [(c.vendor, c.unit, c.needed, c.capacity, c.fits) for c in env.capacity]
    assert got == [("nvidia-shared", "1/4 shares", 3, 4, True)]


def test_a_mig_vendor_is_counted_in_its_instances(tmp_path: Path) -> None:
    """MIG_NVIDIA: 2 GPUs, each two 3g.40gb instances, hold 4; a team's 3 replicas need 3."""
    team = (
        "quota: {nvidia-mig: 4}\nservices:\n  embed:\n    images: {nvidia-mig: r/e:1}\n"
        "    tracks:\n      nvidia-mig: {devicesPerReplica: 1, replicas: 3}\n"
    )
    files = {
        "fleet.yaml": PROD_FLEET,
        "vendors/nvidia-mig.yaml": MIG_NVIDIA,
        "teams/web.yaml": team,
    }
    [env] = plan(tree(tmp_path, files, defaults=False)).envs
    got = [(c.vendor, c.unit, c.needed, c.capacity, c.fits) for c in env.capacity]
    assert got == [("nvidia-mig", "MIG 3g.40gb instances (1/2)", 3, 4, True)]


def test_a_dra_vendor_is_counted_in_claimed_devices(tmp_path: Path) -> None:
    team = (
        "quota: {nvidia-dra: 8}\njobs:\n  t:\n    vendor: nvidia-dra\n    devices: 4\n"
        "    images: {nvidia-dra: r/t:1}\n"
    )
    files = {
        "fleet.yaml": PROD_FLEET.replace('"1.33"', '"1.36"'),
        "vendors/nvidia.yaml": NVIDIA,
        "vendors/nvidia-dra.yaml": DRA_NVIDIA,
        "teams/web.yaml": team,
    }
    [env] = plan(tree(tmp_path, files, defaults=False)).envs
    got = [(c.vendor, c.unit, c.needed, c.capacity, c.fits) for c in env.capacity]
    assert got == [("nvidia-dra", "claimed devices", 4, 8, True)]


def test_tracks_without_pods_get_no_traffic(tmp_path: Path) -> None:
    """Both tracks scaled to 0: the Service has no ready pod to send to, so each gets 0 %."""
    prod = "teams:\n  web:\n    services:\n      chat:\n        replicas: {nvidia: 0, ascend: 0}\n"
    result = plan(web_tree(tmp_path, prod))
    [env] = result.envs
    [svc] = env.services
    got = [(t.vendor, t.replicas, t.devices, t.weight, t.traffic) for t in svc.tracks]
    assert got == [("nvidia", 0, 0, 80, 0.0), ("ascend", 0, 0, 20, 0.0)]
    assert (
        "    track   replicas  devices  weight  traffic\n"
        "    nvidia  0         0        80      0%\n"
        "    ascend  0         0        20      0%\n"
    ) in format_text(result)


def test_json_findings_carry_code_severity_message_location_and_path(tmp_path: Path) -> None:
    """Both tracks at 0 replicas while the phase still sends them traffic: two MIG003 errors,
    at the replica counts on line 5 of environments/prod.yaml (columns 28 and 39). (The base
    layer's MIG006, 5 + 8 pods against 80 / 20, is not prod's and is left out.)"""
    prod = "teams:\n  web:\n    services:\n      chat:\n        replicas: {nvidia: 0, ascend: 0}\n"
    data = plan(web_tree(tmp_path, prod), "prod").as_json()
    assert data["fits"] is False
    assert data["findings"] == [
        {
            "code": "MIG003",
            "severity": "error",
            "message": "service 'chat' track 'nvidia' has 0 replicas but carries 80% of the "
            "traffic in phase 'shift-20'",
            "location": "values/environments/prod.yaml:5:28",
            "path": "$.services.chat.replicas.nvidia",
        },
        {
            "code": "MIG003",
            "severity": "error",
            "message": "service 'chat' track 'ascend' has 0 replicas but carries 20% of the "
            "traffic in phase 'shift-20'",
            "location": "values/environments/prod.yaml:5:39",
            "path": "$.services.chat.replicas.ascend",
        },
    ]


def test_a_multi_host_track_serves_through_one_leader_per_group(tmp_path: Path) -> None:
    """The LeaderWorkerSet track (one group of 2 pods) and the Deployment track (one pod): the
    Service selects serving pods only, so each gets half the traffic, as shift-50 asks; the
    group holds 2 x 8 NPUs."""
    fleet = PROD_FLEET + "platform: {lws: {provided: site}}\n"
    npu = "pools:\n  - {name: p1, model: 910b, devicesPerNode: 8, nodes: [npu-1, npu-2]}\n"
    values_dir = tree(
        tmp_path,
        {
            "fleet.yaml": fleet,
            "vendors/nvidia.yaml": NVIDIA,
            "vendors/ascend.yaml": npu,
            "teams/llm.yaml": LWS_TEAM,
        },
        defaults=False,
    )
    (svc,) = plan(values_dir).envs[0].services
    assert [(t.vendor, t.replicas, t.devices, t.traffic) for t in svc.tracks] == [
        ("nvidia", 1, 8, 50.0),
        ("ascend", 1, 16, 50.0),
    ]


def test_a_service_across_clusters_shows_its_phase_and_every_track_in_its_cluster(
    tmp_path: Path,
) -> None:
    """CROSS_TEAM's chat in shift-30: NVIDIA in main, Ascend in domestic, one phase; each
    cluster's section lists both tracks with their cluster, and its quota counts its own."""
    text = format_text(plan(cross_clusters(tmp_path, phase="shift-30"), "prod/domestic"))
    assert text.splitlines()[:5] == [
        "environment prod, cluster domestic",
        "  service inference/chat (namespace inference): phase shift-30, routing gateway across "
        "clusters (its HTTPRoute on cluster main)",
        "    track   cluster   replicas  devices  weight  traffic",
        "    nvidia  main      2         2        70      70%",
        "    ascend  domestic  2         2        30      30%",
    ]
    assert text.splitlines()[7] == (
        "    inference  inference  ascend  2         0    2       4      yes   2"
    )


def test_json_of_an_external_split_names_the_hostname_and_each_track_s_cluster(
    tmp_path: Path,
) -> None:
    got = plan(cross_clusters(tmp_path, phase="validate", cross=CROSS_EXTERNAL), "prod/main")
    [env] = got.as_json()["environments"]
    assert env["services"] == [
        {
            "team": "inference",
            "service": "chat",
            "namespace": "inference",
            "phase": "validate",
            "routing": "external",
            "tracks": [
                {
                    "vendor": "nvidia",
                    "replicas": 2,
                    "weight": 100,
                    "devices": 2,
                    "traffic": 100.0,
                    "cluster": "main",
                },
                {
                    "vendor": "ascend",
                    "replicas": 1,
                    "weight": 0,
                    "devices": 1,
                    "traffic": 0.0,
                    "cluster": "domestic",
                },
            ],
            "ingress_cluster": "",
            "hostname": "chat.example.com",
        }
    ]
    assert format_text(got).splitlines()[1] == (
        "  service inference/chat (namespace inference): phase validate, routing external "
        "across clusters (a global load balancer's, for chat.example.com: traffic/prod.json)"
    )
