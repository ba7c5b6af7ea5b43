"""What the tests know about the example fleet (values/ at the repository root), in one place.

Only the example's own tests read it (does it load, render, validate and simulate with just its
deliberate warnings, under each backend): they copy it (the `values_dir` fixture in conftest.py)
and edit the copy. Behaviour tests build trees of their own (tests/fixtures.py `tree`). No test
pins a line or column of the example.
"""

from __future__ import annotations

from pathlib import Path

from tests.fixtures import ROOT, Write

EXAMPLE_VALUES = ROOT / "values"


# teams/ml-team.yaml: the mixed Volcano job, as the file spells it.
MIXED = "  mixed-training-job:\n    kind: volcano\n"
# teams/ml-team.yaml: the job that claims H100s by DRA (vendors/nvidia-dra.yaml).
DRA_JOB = "  h100-pretrain-job:\n    vendor: nvidia-dra\n"


def use_backend(values_dir: Path, write: Write, backend: str, extra: str = "") -> None:
    """The example fleet as a test values tree for one backend. Under Kueue the seed's mixed
    Volcano job is off: Kueue cannot account a Volcano Job (SCH002). Under either queue backend
    the job that claims devices by DRA is off: neither counts claims (ALC004)."""
    fleet = (values_dir / "fleet.yaml").read_text()
    section = f"scheduling:\n  backend: {backend}\n{extra}"
    # the example's own scheduling section (its priority classes) takes the backend too
    assert fleet.count("\nscheduling:\n") <= 1
    if "\nscheduling:\n" in fleet:
        write("fleet.yaml", fleet.replace("\nscheduling:\n", "\n" + section, 1))
    else:
        write("fleet.yaml", fleet + section)
    ml = (values_dir / "teams/ml-team.yaml").read_text()
    if backend in ("kueue", "volcano"):
        assert DRA_JOB in ml
        ml = ml.replace(DRA_JOB, DRA_JOB + "    enabled: false\n")
    if backend == "kueue":
        assert MIXED in ml
        ml = ml.replace(MIXED, MIXED + "    enabled: false\n")
    write("teams/ml-team.yaml", ml)


def with_routes(prod: str) -> str:
    """environments/prod.yaml's text with its teams: replaced by GATEWAY, and the Gateway API and
    Istio declared as the site's (a route needs them on the cluster: DEP001)."""
    fleet = prod.split("teams:")[0]
    assert fleet.startswith("fleet:\n") or "\nfleet:\n" in fleet
    routes = "    gatewayAPI: {provided: site}\n    istio: {provided: site}\n"
    # prod's fleet: may declare a platform: of its own already (the MCS API of chat's split)
    if "\n  platform:\n" in fleet:
        fleet = fleet.replace("\n  platform:\n", "\n  platform:\n" + routes, 1)
    else:
        fleet = fleet.replace("fleet:\n", "fleet:\n  platform:\n" + routes, 1)
    return fleet + GATEWAY


# environments/prod.yaml's teams: a Gateway route for the inference service and an Istio route for
# a service of ml-team (with_routes).
GATEWAY = """\
teams:
  inference:
    services:
      inference-service:
        phase: shift-25
        routing: gateway
        gateway:
          parentRefs: [{name: public, namespace: gateways}]
          hostnames: [infer.example.com]
      # As the example's prod.yaml: chat's tracks are in main and domestic.
      chat:
        phase: shift-10
        crossCluster:
          routing: gateway
          ingressCluster: main
          gateway:
            parentRefs: [{name: inference-gateway, namespace: gateway-system}]
            hostnames: [chat.example.com]
  ml-team:
    jobs:
      # As the example's prod.yaml: NVIDIA and Cambricon are in different clusters there.
      mixed-training-job: {enabled: false}
      pretrain-jobset: {enabled: false}
      # chat's GPU beside inference-service's and the training job: the 8 GPUs are full.
      finetune-job: {enabled: false}
    services:
      chat:
        routing: istio
        images: {nvidia: x:cuda}
        tracks:
          nvidia: {replicas: 1}
"""


def hand_edit(repo: Path) -> None:
    """What a hurried fix in the example's committed tree (a copy under `repo`) looks like: an
    unknown field in a base, and a whole new object in an overlay that no values produce."""
    ns = repo / "base/teams/ml-team/namespace-ml-team.yaml"
    ns.write_text(ns.read_text() + "bogus: true\n")
    # The example's prod is two clusters (team-ml-team's unit in main); a one-cluster prod has
    # the unit right under overlays/prod.
    unit = next(
        u
        for u in (repo / "overlays/prod/main/team-ml-team", repo / "overlays/prod/team-ml-team")
        if u.is_dir()
    )
    (unit / "configmap-ml-team-hotfix.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hotfix\n  namespace: ml-team\n"
        "data:\n  a: b\nextra: 1\n"
    )
    kust = unit / "kustomization.yaml"
    kust.write_text(
        kust.read_text().replace("resources:\n", "resources:\n- configmap-ml-team-hotfix.yaml\n")
    )
