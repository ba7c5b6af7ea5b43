"""`render.py plan`: the table, its JSON, and exit 1 when the workloads do not fit."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fixtures import cli, two_teams

# The plans below are of fixtures.two_teams: inference-service (two replicas a track) in phase
# shift-50 in staging and dual-run in prod; ml-team's largest jobs 4 GPUs and 8 NPUs.


def test_plan_text_shows_phases_tracks_and_devices(tmp_path: Path) -> None:
    values_dir = two_teams(tmp_path)
    code, out = cli("plan", "--values", str(values_dir))
    assert code == 0, out
    assert "environment staging" in out and "environment prod" in out
    assert out.index("environment staging") < out.index("environment prod")  # fleet order
    assert (
        "  service inference/inference-service (namespace inference): phase shift-50, "
        "routing service\n"
        "    track   replicas  devices  weight  traffic\n"
        "    nvidia  2         2        50      50%\n"
        "    ascend  2         2        50      50%\n"
        "  devices per team"
    ) in out
    assert "phase dual-run" in out
    assert "    ml-team    ml-team    ascend  0         8    8       8      yes   8\n" in out
    assert "    nvidia  devices     6       8         yes   6        no\n" in out
    assert out.endswith("plan fits\n")


def test_plan_json_for_one_environment(tmp_path: Path) -> None:
    values_dir = two_teams(tmp_path)
    code, out = cli("plan", "--values", str(values_dir), "--env", "prod", "--output", "json")
    assert code == 0, out
    data = json.loads(out)
    assert data["fits"] is True
    [env] = data["environments"]
    assert env["env"] == "prod"
    [svc] = env["services"]
    assert svc["phase"] == "dual-run"
    assert svc["tracks"] == [
        {
            "vendor": "nvidia",
            "replicas": 2,
            "weight": 100,
            "devices": 2,
            "traffic": 100.0,
            "cluster": "",
        },
        {
            "vendor": "ascend",
            "replicas": 2,
            "weight": 0,
            "devices": 2,
            "traffic": 0.0,
            "cluster": "",
        },
    ]
    quota = {(q["team"], q["vendor"]): q for q in env["quotas"]}
    assert quota[("ml-team", "nvidia")] == {
        "team": "ml-team",
        "namespace": "ml-team",
        "vendor": "nvidia",
        "services": 0,
        "largest_job": 4,
        "needed": 4,
        "quota": 8,
        "fits": True,
        "at_once": 4,
    }
    assert [f["code"] for f in data["findings"]] == []


def test_plan_that_does_not_fit_exits_1(tmp_path: Path) -> None:
    values_dir = two_teams(tmp_path)
    (values_dir / "environments/prod.yaml").write_text(
        "teams:\n  inference:\n    services:\n      inference-service:\n"
        "        replicas: {nvidia: 5}\n",
    )
    code, out = cli("plan", "--values", str(values_dir), "--env", "prod")
    assert code == 1, out
    assert "    inference  inference  nvidia  5         0    5       4      NO    5\n" in out
    assert "values/environments/prod.yaml:5:28: MIG004 team 'inference' needs 5 nvidia" in out
    assert out.endswith("plan does NOT fit\n")
    code, out = cli("plan", "--values", str(values_dir), "--env", "staging", "--output", "json")
    assert code == 0 and json.loads(out)["fits"] is True  # staging is not affected
    code, out = cli("plan", "--values", str(values_dir), "--output", "json")
    assert code == 1 and json.loads(out)["fits"] is False


def test_plan_usage_errors_exit_2(tmp_path: Path) -> None:
    values_dir = two_teams(tmp_path)
    assert cli("plan", "--values", str(values_dir), "--env", "qa")[0] == 2
    assert cli("plan", "--values", str(tmp_path / "nope"))[0] == 2


def _service(extra: str) -> str:
    return (
        "teams:\n  inference:\n    services:\n      inference-service:\n"
        "        phase: shift-10\n" + extra
    )


def test_plan_shows_the_split_pod_counts_give_with_routing_service(
    tmp_path: Path,
) -> None:
    """shift-10 asks for 90/10, but a Service spanning 2 + 2 ready pods splits 50/50."""
    values_dir = two_teams(tmp_path)
    (values_dir / "environments/prod.yaml").write_text(_service("        replicas: {ascend: 1}\n"))
    code, out = cli("plan", "--values", str(values_dir), "--env", "prod")
    assert code == 0, out
    assert (
        "    track   replicas  devices  weight  traffic\n"
        "    nvidia  2         2        90      66.7%\n"
        "    ascend  1         1        10      33.3%\n"
        "    routing service: the Service balances over ready pods, so traffic follows "
        "replicas, not weights; use routing gateway or istio for weights\n"
    ) in out
    assert "MIG006 warning: service 'inference-service' uses routing: service" in out
    data = json.loads(cli("plan", "--values", str(values_dir), "--output", "json")[1])
    prod = next(e for e in data["environments"] if e["env"] == "prod")
    assert [t["traffic"] for t in prod["services"][0]["tracks"]] == [66.7, 33.3]


def test_plan_traffic_is_the_weights_with_weighted_routing(tmp_path: Path) -> None:
    values_dir = two_teams(tmp_path)
    (values_dir / "environments/prod.yaml").write_text(
        _service(
            "        routing: gateway\n"
            "        gateway: {parentRefs: [{name: public, namespace: gateways}]}\n"
        ),
    )
    code, out = cli("plan", "--values", str(values_dir), "--env", "prod")
    assert code == 0, out
    assert (
        "    nvidia  2         2        90      90%\n    ascend  2         2        10      10%\n"
        in out
    )
    assert "routing service:" not in out


def test_plan_counts_every_track_the_service_selects(tmp_path: Path) -> None:
    """One track carrying all traffic: the Service selects only it, whatever the replicas."""
    values_dir = two_teams(tmp_path)
    (values_dir / "environments/prod.yaml").write_text(
        "teams:\n  inference:\n    services:\n      inference-service:\n"
        "        phase: primary-new\n",
    )
    code, out = cli("plan", "--values", str(values_dir), "--env", "prod")
    assert code == 0, out
    assert (
        "    nvidia  2         2        0       0%\n    ascend  2         2        100     100%\n"
        in out
    )
