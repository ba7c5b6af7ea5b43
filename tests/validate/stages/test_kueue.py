"""KUE001 (issue 12): Kueue's own admission webhooks (sigs.k8s.io/kueue v0.17.0 pkg/webhooks,
run by generator/toolchain/gotools/kueuecheck) on the Kueue objects as kustomize builds them, each refusal at the
values line behind it. The tool is the real one; nothing here copies Kueue's rules."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from generator.builders import scheduling
from generator.findings import Location
from generator.toolchain import registry
from generator.validate.stages import kueue
from generator.values import loader as values
from generator.vocab.units import Unit
from tests.example import use_backend
from tests.fixtures import FLEET, Write, build_of, invoke, kustomize_build, ml_tree, tool

# ---- the tool on hand-written objects -----------------------------------------------------------

CQ = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  %(cohort)s
  namespaceSelector: {matchLabels: {team: a}}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: nvidia-a100
      resources: [{name: nvidia.com/gpu, nominalQuota: 4, %(limits)s}]
"""

FLAVOR = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: nvidia-a100}
spec:
  nodeLabels: {nvidia.com/gpu.product: A100}
  nodeTaints:
  - {key: nvidia.com/gpu, value: present, effect: NoSchedule}
  - {key: nvidia.com/gpu, value: %(second)s, effect: %(effect)s}
"""


def kueuecheck(tmp_path: Path, *docs: str) -> list[dict[str, Any]]:
    path = tmp_path / "objects.yaml"
    path.write_text("---\n".join(docs), encoding="utf-8")
    proc = subprocess.run(
        [str(tool("kueuecheck")), str(path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def errors(result: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e["field"], e["detail"]) for e in result["errors"]]


def test_the_webhooks_accept_what_kueue_accepts(tmp_path: Path) -> None:
    cq = CQ % {"cohort": "cohortName: fleet", "limits": "borrowingLimit: 2, lendingLimit: 4"}
    flavor = FLAVOR % {"second": "present", "effect": "NoExecute"}
    local = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
    local += "metadata: {name: team-a, namespace: a}\nspec: {clusterQueue: team-a}\n"
    namespace = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n"
    out = kueuecheck(tmp_path, cq, flavor, local, namespace)
    assert [(r["kind"], r["webhook"] if r["checked"] else "", r["allowed"]) for r in out] == [
        ("ClusterQueue", "ClusterQueueWebhook", True),
        ("ResourceFlavor", "ResourceFlavorWebhook", True),
        # Kueue v0.17.0 registers no defaulter or validator for LocalQueue (webhooks.go).
        ("LocalQueue", "", True),
    ]
    assert all(r["kueueVersion"] == "v0.17.0" for r in out)


def test_the_cluster_queue_webhook_refuses_limits_the_crd_schema_allows(tmp_path: Path) -> None:
    # Without a cohort there is no one to borrow from or lend to; a team cannot lend more than
    # it has. The CRD's OpenAPI schema takes both (kubeconform passes them).
    cq = CQ % {"cohort": "", "limits": "borrowingLimit: 2, lendingLimit: 5"}
    (result,) = kueuecheck(tmp_path, cq)
    path = "spec.resourceGroups[0].flavors[0].resources[0]"
    assert errors(result) == [
        (f"{path}.borrowingLimit", "must be nil when cohort is empty"),
        (f"{path}.lendingLimit", "must be nil when cohort is empty"),
        (f"{path}.lendingLimit", "must be less than or equal to the nominalQuota"),
    ]
    assert not result["allowed"]
    with_cohort = kueuecheck(
        tmp_path, CQ % {"cohort": "cohortName: fleet", "limits": "lendingLimit: 5"}
    )
    assert errors(with_cohort[0]) == [
        (f"{path}.lendingLimit", "must be less than or equal to the nominalQuota")
    ]


def test_the_flavor_webhook_refuses_two_taints_with_one_key_and_effect(tmp_path: Path) -> None:
    (result,) = kueuecheck(tmp_path, FLAVOR % {"second": "reserved", "effect": "NoSchedule"})
    assert errors(result) == [
        ("spec.nodeTaints[1]", "taints must be unique by key and effect pair")
    ]


def test_a_cohort_and_another_kueue_version(tmp_path: Path) -> None:
    cohort = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: fleet}\nspec:\n"
    cohort += "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n    - name: general\n"
    cohort += "      resources: [{name: cpu, nominalQuota: 4, borrowingLimit: 2}]\n"
    old = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: x}\n"
    got_cohort, got_old = kueuecheck(tmp_path, cohort, old)
    assert got_cohort["webhook"] == "CohortWebhook"
    assert errors(got_cohort) == [
        (
            "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit",
            "must be nil when parent is empty",
        )
    ]
    assert [e["field"] for e in got_old["errors"]] == ["apiVersion"]


def test_unreadable_input_is_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("kind: [\n", encoding="utf-8")
    proc = subprocess.run([str(tool("kueuecheck")), str(path)], capture_output=True, text=True)
    assert proc.returncode == 2 and "bad.yaml" in proc.stderr
    assert subprocess.run([str(tool("kueuecheck"))], capture_output=True).returncode == 2


# ---- validate: KUE001 at the values line --------------------------------------------------------


def validate_json(values_dir: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    invoke("render", "--values", str(values_dir))  # what validate checks
    args = ["validate", "--values", str(values_dir), "--no-drift", "--output", "json", *extra]
    res = invoke(*args if extra else [*args, "--no-cache"])
    return res.exit_code, json.loads(res.output)


def coded(doc: dict[str, Any], code: str) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["code"] == code]


def test_the_example_fleet_under_kueue_passes_kueues_webhooks(
    values_dir: Path, write: Write
) -> None:
    use_backend(values_dir, write, "kueue")
    code, doc = validate_json(values_dir)
    assert code == 0, doc["findings"]
    assert coded(doc, "KUE001") == []
    # ... and every Kueue object was checked: one ResourceFlavor per pool and `general`, a
    # ClusterQueue per team and a LocalQueue per team namespace (staging: one cluster, every
    # pool).
    out = values_dir.parent
    files = {}
    for unit in ("scheduling", "team-ml-team", "team-inference"):
        docs = kueue.kueue_docs(kustomize_build(out / "overlays" / "staging" / unit))
        files[unit] = out / f"{unit}.yaml"
        files[unit].write_text("\n---\n".join(json.dumps(d) for d in docs), encoding="utf-8")
    results = kueue.check(files)
    assert {u: (r["objects"], r["refused"]) for u, r in results.items()} == {
        "scheduling": (8, []),  # 7 vendors with one pool each, and general
        "team-ml-team": (2, []),
        "team-inference": (2, []),
    }


DUPLICATE_TAINT = """\
pools:
  - name: a100
    model: A100
    devicesPerNode: 4
    nodes: [nvidia-node-01, nvidia-node-02]
taints:
  - {key: nvidia.com/gpu, value: present, effect: NoSchedule}
  - {key: nvidia.com/gpu, value: reserved, effect: NoSchedule}
"""


# A small tree under Kueue: NVIDIA (vendors/nvidia.yaml, the default unless given), team ml-team.
KUEUE = FLEET + "scheduling: {backend: kueue}\n"


def kueue_tree(tmp_path: Path, nvidia: str | None = None) -> Path:
    return ml_tree(tmp_path, {"vendors/nvidia.yaml": nvidia} if nvidia else {}, fleet=KUEUE)


POOL_DUPLICATE_TAINT = DUPLICATE_TAINT.replace("\ntaints:\n  -", "\n    taints:\n      -").replace(
    "\n  - {key", "\n      - {key"
)


@pytest.mark.parametrize(
    ("text", "path"),
    [(DUPLICATE_TAINT, "$.taints[1]"), (POOL_DUPLICATE_TAINT, "$.pools[0].taints[1]")],
)
def test_a_duplicate_taint_is_a_values_error_and_kueues_webhook_agrees(
    tmp_path: Path, text: str, path: str
) -> None:
    values_dir = kueue_tree(tmp_path, text)
    # The values check (NODE004) stops it before anything is rendered ...
    code, doc = validate_json(values_dir)
    assert code == 1
    node = coded(doc, "NODE004")
    assert [(f["file"], f["line"], f["path"]) for f in node] == [
        ("values/vendors/nvidia.yaml", 8, path)
    ]
    # ... and Kueue's own webhook refuses the ResourceFlavor those values would give, which
    # KUE001 reports at the same line.
    view = values.load(values_dir).envs["prod"]
    flavors = [
        o
        for c in scheduling.build(build_of(view))
        for o in c.objects
        if o["kind"] == "ResourceFlavor"
    ]
    file = tmp_path / "flavors.yaml"
    file.write_text("\n---\n".join(json.dumps(o) for o in flavors), encoding="utf-8")
    result = kueue.check({"scheduling": file})["scheduling"]
    assert [r["name"] for r in result["refused"]] == ["nvidia-a100"]
    unit = Unit("prod", "scheduling", "overlays/prod/scheduling", (), {})

    def no_committed_file(kind: str, name: str) -> Location:
        raise AssertionError("the values render it: no committed file is looked up")

    [found] = kueue.findings(view, unit, flavors, result, no_committed_file)
    assert (found.location.file, found.location.line, found.path) == (
        "values/vendors/nvidia.yaml",
        8,
        path,
    )
    assert "taints must be unique by key and effect pair" in found.message


def test_a_committed_flavor_that_kueue_refuses_is_found_and_cached(tmp_path: Path) -> None:
    # What Argo CD applies is the committed tree: a flavor there with a repeated taint (an
    # older render, a hand edit) is refused by Kueue's webhook though the values are clean.
    values_dir = kueue_tree(tmp_path)
    assert invoke("render", "--values", str(values_dir)).exit_code == 0
    flavor = values_dir.parent / "base/scheduling/kueue-flavors/resourceflavor-nvidia-a100.yaml"
    text = flavor.read_text(encoding="utf-8")
    taint = "  - effect: NoSchedule\n    key: feature.node.kubernetes.io/accelerator\n"
    assert taint in text
    flavor.write_text(text.replace(taint, taint + "    value: nvidia-gpu\n" + taint, 1))
    args = ["validate", "--values", str(values_dir), "--no-drift", "--output", "json"]
    cache = values_dir.parent / "cache"
    runs = [invoke(*args, "--cache-dir", str(cache)) for _ in range(2)]
    first, again = (json.loads(r.output) for r in runs)
    assert [r.exit_code for r in runs] == [1, 1]
    assert coded(first, "K8S001") == []  # the CRD schema takes it
    found = coded(first, "KUE001")
    assert len(found) == 1, found  # once, though both environments use the base
    assert "ResourceFlavor nvidia-a100" in found[0]["message"]
    assert "taints must be unique by key and effect pair" in found[0]["message"]
    assert found[0]["file"] == "values/vendors/nvidia.yaml"
    # The second run replays the result from the cache.
    assert again["stats"]["cached units"] == again["stats"]["units"] > 0, again["stats"]
    assert coded(again, "KUE001") == found
    # A values error does not hide it: then it is told at the committed file.
    (values_dir / "teams/broken.yaml").write_text("quota: {nvidia: -1}\n")
    res = invoke(*args, "--no-cache")
    doc = json.loads(res.output)
    assert res.exit_code == 1 and any(
        f["file"] == "values/teams/broken.yaml" for f in doc["findings"]
    )
    [hidden] = coded(doc, "KUE001")
    assert hidden["file"] == "base/scheduling/kueue-flavors/resourceflavor-nvidia-a100.yaml"
    assert "taints must be unique by key and effect pair" in hidden["message"]


def test_without_kueue_the_same_values_give_no_kueue_finding(tmp_path: Path) -> None:
    values_dir = ml_tree(tmp_path, {"vendors/nvidia.yaml": DUPLICATE_TAINT})
    _, doc = validate_json(values_dir)
    assert coded(doc, "KUE001") == []
    # The values check does not depend on the backend: a Node with those taints is refused.
    assert [f["path"] for f in coded(doc, "NODE004")] == ["$.taints[1]"]


def test_the_webhooks_are_the_kueue_whose_crd_schemas_kubeconform_uses() -> None:
    # One Kueue: the module kueuecheck is built from is the one the CRD schemas come from, by
    # version and by the module's checksum.
    lock = yaml.safe_load((registry.GOTOOLS / "schemas.lock.yaml").read_text(encoding="utf-8"))
    (pin,) = [m for m in lock["modules"] if m["module"] == "sigs.k8s.io/kueue"]
    gosum = (registry.GOTOOLS / "kueuecheck" / "go.sum").read_text(encoding="utf-8")
    assert f"sigs.k8s.io/kueue {pin['version']} {pin['sum']}" in gosum.splitlines()
    assert registry.TOOLS["kueuecheck"].pinned == pin["version"]
