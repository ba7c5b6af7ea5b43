"""What the tests know about the example fleet (values/ at the repository root), in one place.

Tests that read the example copy it (the `values_dir` fixture in conftest.py) and edit the copy.
Every line and column the tests pin in the example's files, or in what it renders, is named
here and read from the files themselves (the YAML's marks, the committed output): an edit of the
example moves these values, not the tests that use them.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.fixtures import ROOT, Write

EXAMPLE_VALUES = ROOT / "values"


# ---- positions in the example's files, read from the YAML's marks ----------------------------


def position(rel: str, *path: str | int, key: bool = False) -> tuple[int, int]:
    """(line, column), 1-based as findings print them, of the value at `path` in the example's
    values/<rel> (of its key with key=True): position("teams/ml-team.yaml", "quota", "nvidia")."""
    node = yaml.compose((EXAMPLE_VALUES / rel).read_text(encoding="utf-8"))
    for i, step in enumerate(path):
        if isinstance(node, yaml.SequenceNode):
            assert isinstance(step, int), (rel, path)
            node = node.value[step]
            continue
        assert isinstance(node, yaml.MappingNode), (rel, path)
        [(k, v)] = [(k, v) for k, v in node.value if k.value == step]
        node = k if key and i == len(path) - 1 else v
    return node.start_mark.line + 1, node.start_mark.column + 1


def at(rel: str, *path: str | int, key: bool = False) -> str:
    """`values/<rel>:line:column` of the value (or key) at `path`, as a finding starts."""
    line, column = position(rel, *path, key=key)
    return f"values/{rel}:{line}:{column}"


def committed_line(rel: str, text: str) -> int:
    """The 1-based line of the first line holding `text` in the example's committed output
    (base/ or overlays/ at the repository root, what the example renders)."""
    found = (ROOT / rel).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(found, 1) if text in line)


ML_TEAM = "teams/ml-team.yaml"
# quota.nvidia of ml-team (8): where CAP001 points when the fleet's NVIDIA quotas overflow.
ML_NVIDIA_QUOTA = at(ML_TEAM, "quota", "nvidia")
# The file's last line: what a test appends to ml-team.yaml starts on the line after it.
ML_TEAM_LAST_LINE = len((EXAMPLE_VALUES / ML_TEAM).read_text(encoding="utf-8").splitlines())
# The jobs of ml-team: cuda-training-job's key, and mixed-training-job's key and `kind: volcano`.
CUDA_JOB_LINE = position(ML_TEAM, "jobs", "cuda-training-job", key=True)[0]
MIXED_JOB_LINE = position(ML_TEAM, "jobs", "mixed-training-job", key=True)[0]
MIXED_KIND = at(ML_TEAM, "jobs", "mixed-training-job", "kind")
# A networkTopology inserted right after `kind: volcano` (MIXED + topology) starts on this line.
MIXED_TOPOLOGY_LINE = position(ML_TEAM, "jobs", "mixed-training-job", "kind")[0] + 1
# vendors/hygon.yaml: the node of pool z100l; vendors/ascend.yaml: pool 910b's unprefixed label.
HYGON_NODE = at("vendors/hygon.yaml", "pools", 0, "nodes", 0)
ASCEND_LABEL_KEY = at("vendors/ascend.yaml", "pools", 0, "labels", "accelerator-type", key=True)
# fleet.yaml: the fleet's name, which every Application name starts with.
FLEET_NAME = at("fleet.yaml", "name")

# The committed quota files of the example's render, and the lines the drift tests edit.
INFERENCE_QUOTA = "base/teams/inference/resourcequota-inference-accelerators.yaml"
INFERENCE_QUOTA_8_LINE = committed_line(INFERENCE_QUOTA, "'8'")
ML_QUOTA = "base/teams/ml-team/resourcequota-ml-team-accelerators.yaml"
ML_QUOTA_NVIDIA_LINE = committed_line(ML_QUOTA, "requests.nvidia.com/gpu")

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


def hand_edit(repo: Path) -> None:
    """What a hurried fix in the example's committed tree (a copy under `repo`) looks like: an
    unknown field in a base, and a whole new object in an overlay that no values produce."""
    ns = repo / "base/teams/ml-team/namespace-ml-team.yaml"
    ns.write_text(ns.read_text() + "bogus: true\n")
    unit = repo / "overlays/prod/team-ml-team"
    (unit / "configmap-ml-team-hotfix.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hotfix\n  namespace: ml-team\n"
        "data:\n  a: b\nextra: 1\n"
    )
    kust = unit / "kustomization.yaml"
    kust.write_text(
        kust.read_text().replace("resources:\n", "resources:\n- configmap-ml-team-hotfix.yaml\n")
    )
