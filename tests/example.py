"""What the tests know about the example fleet (values/ at the repository root), in one place.

Tests that read the example copy it (the `values_dir` fixture in conftest.py) and edit the copy.
Every line the tests pin in the example's files, or in what it renders, is named here: an edit
of the example changes these constants, not the tests that use them.
"""

from __future__ import annotations

from pathlib import Path

from tests.fixtures import ROOT, Write

EXAMPLE_VALUES = ROOT / "values"

# teams/ml-team.yaml: the mixed Volcano job, as the file spells it.
MIXED = "  mixed-training-job:\n    kind: volcano\n"


def use_backend(values_dir: Path, write: Write, backend: str, extra: str = "") -> None:
    """The example fleet as a test values tree for one backend. Under Kueue the seed's mixed
    Volcano job is off: Kueue cannot account a Volcano Job (SCH002)."""
    fleet = (values_dir / "fleet.yaml").read_text()
    write("fleet.yaml", fleet + f"scheduling:\n  backend: {backend}\n{extra}")
    if backend == "kueue":
        ml = (values_dir / "teams/ml-team.yaml").read_text()
        assert MIXED in ml
        write("teams/ml-team.yaml", ml.replace(MIXED, MIXED + "    enabled: false\n"))


# environments/prod.yaml without its teams: (split there) plus this: a Gateway route for the
# inference service and an Istio route for a service of ml-team.
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
  ml-team:
    services:
      chat:
        routing: istio
        images: {nvidia: x:cuda}
        tracks:
          nvidia: {replicas: 1}
"""
