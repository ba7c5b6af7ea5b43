"""validate's cache (generator/validate/cache.py): only the units whose inputs changed run again,
units with equal inputs are built once, a failed build is not shared, and a cached run of an
edited tree equals an uncached one."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from generator.builders.common import metadata
from generator.validate.cache import Cache, built_objects, object_count
from tests.example import hand_edit
from tests.fixtures import (
    PROD_FLEET,
    TWO_CLUSTERS,
    ml_tree,
    render_committed,
    tree,
    validate_committed,
)


@pytest.fixture
def values(tmp_path: Path) -> Path:
    """A small tree (NVIDIA, 8 GPUs; teams ml-team and inference, 2 GPUs; staging and prod)
    under tmp_path/repo, rendered and committed there."""
    values = ml_tree(tmp_path, {"teams/inference.yaml": "quota:\n  nvidia: 2\n"})
    assert render_committed(values) == 0
    return values


def test_cache_reruns_only_the_units_whose_inputs_changed(values: Path, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")

    def stats() -> dict[str, Any]:
        code, out = validate_committed(values, "--cache-dir", cache, "--output", "json")
        assert code == 0, out
        return dict(json.loads(out)["stats"])

    first = stats()
    assert first["cached units"] == 0
    assert stats()["cached units"] == first["units"]
    text = (values / "teams/inference.yaml").read_text()
    (values / "teams/inference.yaml").write_text(text.replace("nvidia: 2", "nvidia: 1"))
    third = stats()
    assert third["cached units"] == first["units"] - 2  # team-inference in staging and prod


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The unit paths of each call that builds units with the tools, in order."""
    from generator.validate import run as core

    calls: list[list[str]] = []
    run_stages = core._run_stages

    def spy(root: Path, paths: list[str], *args: Any) -> dict[str, dict[str, Any]]:
        calls.append(list(paths))
        return run_stages(root, paths, *args)

    monkeypatch.setattr(core, "_run_stages", spy)
    return calls


def test_units_with_equal_inputs_are_built_once_and_each_reported(
    values: Path, extra_objects: list[Any], built: list[list[str]]
) -> None:
    # device-plugins is the same unit in staging and prod (same files at the same relative
    # paths): one build serves both, and each unit still gets its own findings.
    broken = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata("broken", namespace="kube-system", sources=["values/fleet.yaml"]),
        "data": {"a": "b"},
        "bogus": True,
    }
    extra_objects.append(("device-plugins", broken))
    code, out = validate_committed(values, "--no-cache")
    assert code == 1, out
    units = ("overlays/staging/device-plugins", "overlays/prod/device-plugins")
    assert len(built) == 1 and sum(u in built[0] for u in units) == 1
    for unit in units:
        assert f"K8S001 ConfigMap kube-system/broken ({unit}): additional properties" in out


def test_a_failed_build_is_not_shared_with_its_twin(
    values: Path, extra_objects: list[Any], built: list[list[str]]
) -> None:
    # kustomize's message can name the folders it read: each twin of a failed unit is built itself.
    nameless = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata("", namespace="kube-system", sources=["values/fleet.yaml"]),
    }
    extra_objects.append(("device-plugins", nameless))
    code, out = validate_committed(values, "--no-cache")
    assert code == 1, out
    assert len(built) == 2 and len(built[1]) == 1  # the twin, after its first failed
    for env in ("staging", "prod"):
        line = next(ln for ln in out.splitlines() if f"build overlays/{env}/device-plugins" in ln)
        other = "prod" if env == "staging" else "staging"
        assert "KUS001" in line and f"/{other}/" not in line, line


def test_a_cached_run_of_an_edited_tree_equals_an_uncached_one(
    values: Path, tmp_path: Path
) -> None:
    # The cache (filled before the edits) and the units built once for every environment must
    # give exactly the findings, drift and counts of a run that builds every unit itself.
    cache = str(tmp_path / "cache")
    assert validate_committed(values, "--cache-dir", cache, "--output", "json", drift=True)[0] == 0
    text = (values / "teams/inference.yaml").read_text()
    (values / "teams/inference.yaml").write_text(text.replace("nvidia: 2", "nvidia: 1"))
    render_committed(values)
    hand_edit(values.parent)  # a base shared by both environments, and one overlay
    runs, cached = [], []
    for args in (["--cache-dir", cache], ["--cache-dir", cache], ["--no-cache"]):
        code, out = validate_committed(values, *args, "--output", "json", drift=True)
        doc = json.loads(out)
        cached.append(doc["stats"]["cached units"])
        stats = {k: v for k, v in doc["stats"].items() if k not in ("cached units", "timings")}
        runs.append((code, doc["findings"], stats))
    assert runs[0][0] == 1 and any(f["code"] == "K8S001" for f in runs[0][1])
    assert any(f["code"] == "DRIFT001" for f in runs[0][1])
    assert 0 < cached[0] < cached[1] == doc["stats"]["units"] and cached[2] == 0
    assert runs[0] == runs[1] == runs[2]


def test_each_cluster_s_units_are_checked_against_its_own_kubernetes_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TWO_CLUSTERS: the fleet is 1.33, cluster domestic 1.34. The schemas are the version's, so
    a unit is a cache miss when only its cluster's version changes."""
    from generator.validate import run as core

    checked: dict[str, str] = {}
    run_stages = core._run_stages

    def spy(root: Path, paths: list[str], version: str, *args: Any) -> dict[str, dict[str, Any]]:
        checked.update(dict.fromkeys(paths, version))
        return run_stages(root, paths, version, *args)

    monkeypatch.setattr(core, "_run_stages", spy)
    values = tree(tmp_path / "repo", TWO_CLUSTERS, fleet=PROD_FLEET)
    cache = str(tmp_path / "cache")
    code, out = validate_committed(values, "--cache-dir", cache)
    assert code == 0, out
    assert {p: v for p, v in checked.items() if p.endswith(("team-ml", "argocd"))} == {
        "overlays/prod/argocd": "1.33",
        "overlays/prod/domestic/argocd": "1.34",
        "overlays/prod/domestic/team-ml": "1.34",
        "overlays/prod/main/argocd": "1.33",
        "overlays/prod/main/team-ml": "1.33",
    }
    checked.clear()
    prod = values / "environments/prod.yaml"
    prod.write_text(prod.read_text().replace('"1.34"', '"1.35"'))
    code, out = validate_committed(values, "--cache-dir", cache)
    assert code == 0, out
    assert set(checked.values()) == {"1.35"}
    assert sorted(checked) == [
        "overlays/prod/domestic/argocd",
        "overlays/prod/domestic/device-plugins",
        "overlays/prod/domestic/monitoring",
        "overlays/prod/domestic/node-config",
        "overlays/prod/domestic/team-ml",
    ]


def test_unit_inputs_follow_every_reference_of_every_kustomization_it_reaches() -> None:
    from generator.validate.cache import UnitInputs

    tree = {
        "base/a/kustomization.yaml": "resources:\n- x.yaml\n- ../b\n",
        "base/a/x.yaml": "x",
        "base/b/kustomization.yaml": "resources:\n- y.yaml\n",
        "base/b/y.yaml": "y",
        "base/c/kustomization.yaml": "resources:\n- z.yaml\n",
        "base/c/z.yaml": "z",
        "overlays/e/u/kustomization.yaml": (
            "resources:\n- ../../../base/a\n- https://example.com/remote\n- /abs/path\n"
            "- missing.yaml\npatches:\n- path: patches/p.yaml\n- path: '../shared.yaml'\n"
        ),
        "overlays/e/u/patches/p.yaml": "p",
        "overlays/e/shared.yaml": "s",
        "overlays/e/v/kustomization.yaml": "resources:\n- ../../../base/a\n- ../../../base/c\n",
    }
    reads = UnitInputs(tree)
    assert reads("overlays/e/u") == [
        "base/a/kustomization.yaml",
        "base/a/x.yaml",
        "base/b/kustomization.yaml",
        "base/b/y.yaml",
        "overlays/e/shared.yaml",
        "overlays/e/u/kustomization.yaml",
        "overlays/e/u/patches/p.yaml",
    ]
    # A second unit reading the same base gets its files too, and its own base beside them.
    assert reads("overlays/e/v") == [
        "base/a/kustomization.yaml",
        "base/a/x.yaml",
        "base/b/kustomization.yaml",
        "base/b/y.yaml",
        "base/c/kustomization.yaml",
        "base/c/z.yaml",
        "overlays/e/v/kustomization.yaml",
    ]


class Reads(dict[str, str]):
    """A tree that counts the texts read from it."""

    def __init__(self, files: dict[str, str]) -> None:
        super().__init__(files)
        self.read: list[str] = []

    def __getitem__(self, rel: str) -> str:
        self.read.append(rel)
        return super().__getitem__(rel)


def test_unit_inputs_parse_only_the_kustomizations_that_changed_since_the_last_run(
    tmp_path: Path,
) -> None:
    from generator.validate.cache import UnitInputs, load_refs, save_refs

    v1 = {
        "base/a/kustomization.yaml": "resources:\n- x.yaml\n",
        "base/a/x.yaml": "x",
        "base/a/y.yaml": "y",
        "overlays/e/u/kustomization.yaml": "resources:\n- ../../../base/a\n",
    }
    first = UnitInputs(v1, known=load_refs(tmp_path))
    assert first("overlays/e/u") == [
        "base/a/kustomization.yaml",
        "base/a/x.yaml",
        "base/a/y.yaml",
        "overlays/e/u/kustomization.yaml",
    ]
    save_refs(tmp_path, first)
    # The unit now patches the base with a file of its own: its kustomization is parsed again,
    # the base's is not read at all; a file of the base that is gone is no longer an input.
    v2 = Reads(
        {
            **v1,
            "overlays/e/u/kustomization.yaml": (
                "resources:\n- ../../../base/a\npatches:\n- path: p.yaml\n"
            ),
            "overlays/e/u/p.yaml": "p",
        }
    )
    del v2["base/a/y.yaml"]

    def digest_of(rel: str) -> bytes:  # as the stat index knows it: without reading the file
        return hashlib.sha256(dict.__getitem__(v2, rel).encode()).digest()

    second = UnitInputs(v2, digest_of, load_refs(tmp_path))
    assert second("overlays/e/u") == [
        "base/a/kustomization.yaml",
        "base/a/x.yaml",
        "overlays/e/u/kustomization.yaml",
        "overlays/e/u/p.yaml",
    ]
    assert "base/a/kustomization.yaml" not in v2.read
    assert "overlays/e/u/kustomization.yaml" in v2.read


FOLDERS = ["base/a", "base/a/b", "base", "overlays/prod/main/team-ml", "overlays/prod/argocd"]


@pytest.mark.parametrize("start", FOLDERS)
@pytest.mark.parametrize("folder", [*FOLDERS, "overlays/prod/main/team-ml/patches", "base/ab"])
def test_relpath_is_posixpath_s_for_folders_of_the_tree(folder: str, start: str) -> None:
    import posixpath

    from generator.validate.cache import _relpath

    assert _relpath(folder, start) == posixpath.relpath(folder, start)


@pytest.mark.parametrize(
    "ref",
    ["x.yaml", "./x.yaml", "../b", "../../base/a", "patches//p.yaml", ".", "..", "../..", "a/../b"],
)
def test_join_is_posixpath_s_normalised_join_inside_the_tree(ref: str) -> None:
    import posixpath

    from generator.validate.cache import join

    for folder in ("base/a", "overlays/e/u"):
        assert join(folder, ref) == posixpath.normpath(posixpath.join(folder, ref))


def test_join_of_a_reference_out_of_the_tree_is_no_path() -> None:
    from generator.validate.cache import join

    assert join("base/a", "../../../x") == ""
    assert join("base/a", "../../..") == ""


def test_the_manifest_rules_run_again_only_on_the_units_of_a_changed_view(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TWO_CLUSTERS: an edit of the job team ml runs in domestic changes prod/domestic's view and
    prod's (the hub's, which holds the whole environment), not prod/main's: main's units get the
    rules' findings from the memo, and the run equals one without any cache."""
    from generator.policy import registry

    values = tree(tmp_path / "repo", TWO_CLUSTERS, fleet=PROD_FLEET)
    assert render_committed(values) == 0
    ran: list[str] = []
    run_rules = registry.run_rules

    def spy(ctx: Any, unit: Any, objs: Any) -> Any:
        ran.append(unit.path)
        return run_rules(ctx, unit, objs)

    monkeypatch.setattr(registry, "run_rules", spy)
    cache = str(tmp_path / "cache")

    def once(*args: str) -> tuple[list[str], Any]:
        ran.clear()
        code, out = validate_committed(values, *args, "--output", "json")
        assert code in (0, 1), out
        doc = json.loads(out)
        return sorted(ran), (code, doc["findings"], doc["stats"]["units"])

    first, _ = once("--cache-dir", cache)
    assert len(first) == 12  # every unit: 5 in main, 4 in domestic, 3 argocd units
    assert once("--cache-dir", cache)[0] == []
    text = (values / "teams/ml.yaml").read_text()
    assert "devices: 2" in text
    (values / "teams/ml.yaml").write_text(text.replace("devices: 2", "devices: 3"))
    assert render_committed(values) == 0
    again, warm = once("--cache-dir", cache)
    assert again == ["overlays/prod/argocd"] + [
        f"overlays/prod/domestic/{u}"
        for u in ("argocd", "device-plugins", "monitoring", "node-config", "team-ml")
    ]
    everything, cold = once("--no-cache")
    assert len(everything) == 12 and warm == cold


def test_a_verdict_made_before_a_crds_schema_was_laid_out_is_not_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kubeconform's verdicts depend on the schemas laid out under the tools folder: a unit
    validated while a CRD's schema was missing (K8S002) gets another cache key once it is
    there, for the stages that run kubeconform."""
    from generator.toolchain.registry import tools_dir
    from generator.validate.stages.charts import STAGE as CHARTS
    from generator.validate.stages.kustomize import STAGE as KUSTOMIZE

    crds = tmp_path / "tools" / "schemas" / "crds"
    crds.mkdir(parents=True)
    (tmp_path / "tools" / "bin").symlink_to(tools_dir() / "bin")  # the same built tools
    monkeypatch.setenv("ACCEL_GITOPS_TOOLS_DIR", str(tmp_path / "tools"))
    before = (KUSTOMIZE.salt("kustomize"), CHARTS.salt("kustomize"))
    (crds / "index.json").write_text('{"kinds": ["nfd.k8s-sigs.io/NodeFeatureRule"]}\n')
    after = (KUSTOMIZE.salt("kustomize"), CHARTS.salt("kustomize"))
    assert [b != a for b, a in zip(before, after, strict=True)] == [True, True]


def test_a_cached_result_holds_its_objects_parsed_only_when_read(tmp_path: Path) -> None:
    """An entry gives back each stage's verdicts as they were put, and the build's objects as a
    blob that `built_objects` parses to the objects put (their count known without parsing);
    the run's own result is left as it was."""
    docs = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ml"}},
    ]
    result: dict[str, Any] = {
        "build": {"ok": True, "error": "", "docs": docs, "schema": [["ConfigMap", "a", "bad"]]},
        "kueue": {"refused": [["ClusterQueue", "q", "no flavor"]]},
        "nfd": None,
    }
    key = "ab" + "0" * 62
    cache = Cache(tmp_path)
    cache.put(key, result)
    got = cache.get(key)
    assert got is not None
    assert got["kueue"] == {"refused": [["ClusterQueue", "q", "no flavor"]]}
    assert got["nfd"] is None
    build = got["build"]
    assert (build["ok"], build["error"], build["schema"]) == (True, "", [["ConfigMap", "a", "bad"]])
    assert isinstance(build["docs"], bytes)
    assert object_count(build) == 2
    assert built_objects(build) == docs
    assert result["build"]["docs"] is docs
    assert built_objects(result["build"]) is docs
    assert object_count(result["build"]) == 2
    assert Cache(tmp_path).get("cd" + "0" * 62) is None
    (tmp_path / "ab" / f"{key}.marshal").write_bytes(b"\x00garbage")
    assert cache.get(key) is None


def test_a_failed_build_is_cached_without_objects(tmp_path: Path) -> None:
    result = {"build": {"ok": False, "error": "kustomize: no such file", "docs": []}}
    cache = Cache(tmp_path)
    cache.put("ef" + "1" * 62, result)
    got = cache.get("ef" + "1" * 62)
    assert got is not None and got["build"]["error"] == "kustomize: no such file"
    assert (object_count(got["build"]), built_objects(got["build"])) == (0, [])


def test_the_rules_of_a_changed_view_read_the_objects_a_cached_unit_built(tmp_path: Path) -> None:
    """A values edit not rendered yet: the committed units are the bytes they were, so every
    tool verdict (and the objects built) comes from the cache, but the view changed (its pool
    gained a taint), so the rules run again on the objects the cache kept: the job's pod does
    not tolerate the taint (POD004), as a run without any cache finds."""
    job = (
        "quota:\n  nvidia: 4\njobs:\n  train:\n    vendor: nvidia\n    devices: 1\n"
        "    images: {nvidia: registry.example.com/train:cuda}\n"
    )
    values = ml_tree(tmp_path, {"teams/ml-team.yaml": job})
    assert render_committed(values) == 0
    cache = str(tmp_path / "cache")

    def once(*args: str) -> tuple[int, Any, Any]:
        code, out = validate_committed(values, *args, "--output", "json", drift=True)
        doc = json.loads(out)
        return code, doc["findings"], doc["stats"]

    assert once("--cache-dir", cache)[0] == 0
    tainted = (
        "pools:\n  - name: a100\n    model: A100\n    devicesPerNode: 8\n    nodes: [n1]\n"
        "    taints: [{key: dedicated, value: ml, effect: NoSchedule}]\n"
    )
    (values / "vendors/nvidia.yaml").write_text(tainted)
    code, warm, stats = once("--cache-dir", cache)
    assert code == 1
    assert stats["cached units"] == stats["units"]
    tolerations = [(f["code"], f["unit"]) for f in warm if f["code"] == "POD004"]
    assert tolerations == [
        ("POD004", "overlays/prod/team-ml-team"),
        ("POD004", "overlays/staging/team-ml-team"),
    ]
    assert once("--no-cache")[1] == warm


def test_the_folder_index_holds_each_kustomization_folders_files_at_any_depth() -> None:
    from generator.kustomize import folder_index

    tree = {
        "base/a/kustomization.yaml": "",
        "base/a/x.yaml": "",
        "base/a/deep/er/y.yaml": "",
        "base/a-b/kustomization.yaml": "",  # sorts between base/a/... and base/a0
        "base/a-b/z.yaml": "",
        "base/ab/kustomization.yaml": "",
        "base/ab/w.yaml": "",
        "base/a.yaml": "",
        "base/plain/v.yaml": "",  # no kustomization: not a folder of the index
        "overlays/e/u/kustomization.yaml": "",
        "overlays/e/u/patches/p.yaml": "",
    }
    index = folder_index(tree)
    assert list(index) == ["base/a", "base/a-b", "base/ab", "overlays/e/u"]
    assert len(index) == 4
    assert index["base/a"] == [
        "base/a/deep/er/y.yaml",
        "base/a/kustomization.yaml",
        "base/a/x.yaml",
    ]
    assert index["base/a-b"] == ["base/a-b/kustomization.yaml", "base/a-b/z.yaml"]
    assert index.get("overlays/e/u") == [
        "overlays/e/u/kustomization.yaml",
        "overlays/e/u/patches/p.yaml",
    ]
    assert "base/plain" not in index and index.get("base/plain", []) == []
    assert "base" not in index and "" not in index
    with pytest.raises(KeyError):
        index["base/plain"]


def _documents(root: Path, unit: str, kbuild: Any) -> set[str]:
    """The SHA-256 of each document of the unit's build, as kubeconform splits the output (a
    document before a separator without its last newline)."""
    output = kbuild(root, [unit], "1.33", 1, extra=["-yaml"])[unit]["output"]
    return {hashlib.sha256(doc.encode()).hexdigest() for doc in output.split("\n---\n")}


def test_the_documents_of_a_changed_unit_that_did_not_change_are_not_validated_again(
    values: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The helper is handed the documents the unit's last result found valid (made with the
    same tools and schemas): after a quota edit it validates the ResourceQuota alone, and a
    document that changed is validated whatever the unit's last verdicts said."""
    from generator.validate.stages import kustomize as tools

    real = tools.kbuild
    calls: list[tuple[list[str], set[str]]] = []

    def spy(root: Path, paths: list[str], *args: Any, **kwargs: Any) -> Any:
        calls.append((list(paths), set(kwargs.get("known", ()))))
        return real(root, paths, *args, **kwargs)

    monkeypatch.setattr(tools, "kbuild", spy)
    root, unit, cache = values.parent, "overlays/prod/team-inference", str(tmp_path / "cache")
    before = _documents(root, unit, real)
    assert validate_committed(values, "--cache-dir", cache)[0] == 0
    assert [known for _, known in calls] == [set()]  # nothing known on a first run

    calls.clear()
    text = (values / "teams/inference.yaml").read_text()
    (values / "teams/inference.yaml").write_text(text.replace("nvidia: 2", "nvidia: 1"))
    assert validate_committed(values, "--cache-dir", cache)[0] == 0  # renders, then validates
    after = _documents(root, unit, real)
    ((paths, known),) = calls
    assert unit in paths or "overlays/staging/team-inference" in paths  # twins: built once
    assert known == before  # staging's and prod's documents are the same
    (changed,) = after - known
    changed_text = next(
        d
        for d in real(root, [unit], "1.33", 1, extra=["-yaml"])[unit]["output"].split("\n---\n")
        if hashlib.sha256(d.encode()).hexdigest() == changed
    )
    assert "kind: ResourceQuota" in changed_text and 'requests.nvidia.com/gpu: "1"' in changed_text

    # A hand edit the schema refuses, in a document the last run found valid in another form.
    calls.clear()
    quota = root / "base/teams/inference/resourcequota-inference-accelerators.yaml"
    quota.write_text(quota.read_text() + "  bogus: 1\n")
    code, out = validate_committed(values, "--cache-dir", cache, "--output", "json", drift=True)
    assert code == 1
    found = [f for f in json.loads(out)["findings"] if f["code"] == "K8S001"]
    assert found and all("ResourceQuota" in f["message"] for f in found), found
    ((_, known),) = calls
    assert known == after  # the edited document's new bytes are not among them


def test_the_documents_known_valid_come_from_built_results_of_the_unit_s_version(
    tmp_path: Path,
) -> None:
    """run.known_valid: per Kubernetes version, the digests the last results of the re-keyed
    units hold, from a build that succeeded; anything else such an entry holds is left out (a
    damaged entry costs the reuse, never the batch)."""
    from generator.validate.run import known_valid
    from generator.validate.stages import BUILD

    cache = Cache(tmp_path)
    good, other = "a" * 64, "b" * 64
    cache.put("k1" + "0" * 62, {BUILD: {"ok": True, "docs": [], "valid": [good, "not-hex", 7]}})
    cache.put("k2" + "0" * 62, {BUILD: {"ok": False, "docs": [], "valid": [other]}})
    cache.put("k3" + "0" * 62, {BUILD: {"ok": True, "docs": [], "valid": [other]}})
    previous = {"u1": "k1" + "0" * 62, "u2": "k2" + "0" * 62, "u3": "k3" + "0" * 62, "u4": "gone"}
    versions = {"u1": "1.33", "u2": "1.33", "u3": "1.34", "u4": "1.33"}
    assert known_valid(cache, previous, versions) == {"1.33": {good}, "1.34": {other}}
