"""KUE001 (issue 12): Kueue's own admission webhooks (sigs.k8s.io/kueue v0.17.0 pkg/webhooks,
run by tools/kueuecheck) on the Kueue objects as kustomize builds them, each refusal at the
values line behind it. The tool is the real one; nothing here copies Kueue's rules."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from generator import toolchain
from generator.cli import main
from generator.validate import kueue
from tests.conftest import ROOT, tool
from tests.test_kustomize import build
from tests.test_scheduling import use_backend

Write = Callable[[str, str], Path]

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
    CliRunner().invoke(main, ["render", "--values", str(values_dir)])  # what validate checks
    args = ["validate", "--values", str(values_dir), "--no-drift", "--output", "json", *extra]
    res = CliRunner().invoke(main, args if extra else [*args, "--no-cache"])
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
    # ClusterQueue per team and a LocalQueue per team namespace.
    out = values_dir.parent
    files = {}
    for unit in ("scheduling", "team-ml-team", "team-inference"):
        docs = kueue.kueue_docs(build(out / "overlays" / "prod" / unit))
        files[unit] = out / f"{unit}.yaml"
        files[unit].write_text("\n---\n".join(json.dumps(d) for d in docs), encoding="utf-8")
    results = kueue.check(files)
    assert {u: (r["objects"], r["refused"]) for u, r in results.items()} == {
        "scheduling": (6, []),  # 5 vendors with one pool each, and general
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


def test_a_vendors_duplicate_taint_is_refused_by_kueue_at_its_line(
    values_dir: Path, write: Write
) -> None:
    use_backend(values_dir, write, "kueue")
    write("vendors/nvidia.yaml", DUPLICATE_TAINT)
    code, doc = validate_json(values_dir)
    assert code == 1
    # The CRD schema takes it (nodeTaints is an atomic list): only Kueue's webhook refuses it.
    assert coded(doc, "K8S001") == []
    found = coded(doc, "KUE001")
    assert len(found) == 1, found  # once, though both environments render the flavor
    assert (found[0]["file"], found[0]["line"], found[0]["path"]) == (
        "values/vendors/nvidia.yaml",
        8,
        "$.taints[1]",
    )
    assert "ResourceFlavor nvidia-a100" in found[0]["message"]
    assert "taints must be unique by key and effect pair" in found[0]["message"]

    # The result is cached with the unit: a second run replays it from the cache.
    cache = values_dir.parent / "cache"
    first = validate_json(values_dir, "--cache-dir", str(cache))[1]
    code, again = validate_json(values_dir, "--cache-dir", str(cache))
    assert again["stats"]["cached units"] == again["stats"]["units"] > 0, again["stats"]
    assert code == 1 and coded(again, "KUE001") == coded(first, "KUE001") == found


def test_a_pools_own_duplicate_taint_is_reported_at_the_pool(
    values_dir: Path, write: Write
) -> None:
    use_backend(values_dir, write, "kueue")
    pool = DUPLICATE_TAINT.replace("\ntaints:\n  -", "\n    taints:\n      -").replace(
        "\n  - {key", "\n      - {key"
    )
    write("vendors/nvidia.yaml", pool)
    code, doc = validate_json(values_dir)
    found = coded(doc, "KUE001")
    assert code == 1 and len(found) == 1, found
    assert (found[0]["file"], found[0]["line"], found[0]["path"]) == (
        "values/vendors/nvidia.yaml",
        8,
        "$.pools[0].taints[1]",
    )


def test_without_kueue_the_same_values_give_no_kueue_finding(
    values_dir: Path, write: Write
) -> None:
    write("vendors/nvidia.yaml", DUPLICATE_TAINT)
    _, doc = validate_json(values_dir)
    assert coded(doc, "KUE001") == []


def test_the_webhooks_are_the_kueue_whose_crd_schemas_kubeconform_uses() -> None:
    # One Kueue: the module kueuecheck is built from is the one the CRD schemas come from, by
    # version and by the module's checksum.
    lock = yaml.safe_load((ROOT / "tools" / "schemas.lock.yaml").read_text(encoding="utf-8"))
    (pin,) = [m for m in lock["modules"] if m["module"] == "sigs.k8s.io/kueue"]
    gosum = (ROOT / "tools" / "kueuecheck" / "go.sum").read_text(encoding="utf-8")
    assert f"sigs.k8s.io/kueue {pin['version']} {pin['sum']}" in gosum.splitlines()
    assert toolchain.TOOLS["kueuecheck"].pinned == pin["version"]
