"""KSC001: the kube-scheduler's own config decoding and validation (k8s.io/kubernetes v1.36.3, run
by generator/toolchain/gotools/schedcheck) on every KubeSchedulerConfiguration a committed ConfigMap carries, each error
at the values line that renders the config. The tool is the real one; nothing here copies the
scheduler's rules."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from generator.toolchain import process
from generator.toolchain import process as tool_process
from generator.validate.cache import Cache, built_objects
from generator.validate.stages import kubescheduler
from tests.fixtures import FLEET, invoke, kustomize_build, ml_tree, tool

CONFIGMAP = "overlays/%s/packing-scheduler/configmap-kube-system-accel-kube-scheduler-config.yaml"
KEY = "kube-scheduler-config.yaml"

# An environment with the packing profile, run by the fleet's own scheduler (unit
# packing-scheduler): `kubeScheduler:` (where KSC001 points) is on line 3, column 5.
PACKING = """\
fleet:
  scheduling:
    kubeScheduler:
      packing: true
"""


def packed(tmp_path: Path, staging: str = PACKING) -> Path:
    """A small tree (NVIDIA, 8 GPUs; team ml-team) whose prod, and unless told otherwise staging,
    run the packing profile of the cluster's kube-scheduler."""
    return ml_tree(
        tmp_path, {"environments/prod.yaml": PACKING, "environments/staging.yaml": staging}
    )


def render(values_dir: Path) -> Path:
    res = invoke("render", "--values", str(values_dir))
    assert res.exit_code == 0, res.output
    return values_dir.parent


def validate(values_dir: Path, cache: Path) -> tuple[int, dict[str, Any]]:
    args = ["validate", "--values", str(values_dir), "--no-drift", "--output", "json"]
    res = invoke(*args, "--cache-dir", str(cache))
    return res.exit_code, json.loads(res.output)


def coded(doc: dict[str, Any], code: str) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["code"] == code]


def cached(cache: Path) -> list[dict[str, Any]]:
    """Every unit result in the validate cache (in folders named by two hex digits of the key)."""
    return [
        Cache(cache).get(p.name.removesuffix(".marshal")) or {}
        for p in sorted(cache.glob("??/*.marshal"))
    ]


def configmaps(result: dict[str, Any]) -> list[str]:
    return sorted(
        d["metadata"]["name"] for d in built_objects(result["build"]) if d["kind"] == "ConfigMap"
    )


def spy(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Record the arguments of every schedcheck run (the real tool still runs)."""
    calls: list[list[str]] = []
    real = process.run

    def run(name: str, args: Any, **kw: Any) -> Any:
        if name == "schedcheck":
            calls.append(list(args))
        return real(name, args, **kw)

    monkeypatch.setattr(tool_process, "run", run)
    return calls


# ---- the tool's JSON lines ----------------------------------------------------------------------


def test_schedcheck_json_gives_one_verdict_per_file_in_order(tmp_path: Path) -> None:
    out = render(packed(tmp_path))
    [config] = kubescheduler.embedded(kustomize_build(out / "overlays/prod/packing-scheduler"))
    text = config["text"]
    files = []
    for name, body in [
        ("ok", text),
        ("weight", text.replace("weight: 10\n", "weight: 101\n", 1)),
        ("typo", text.replace("scoringStrategy", "scoringStrategies")),
    ]:
        files.append(tmp_path / f"{name}.yaml")
        files[-1].write_text(body)
    proc = subprocess.run(
        [str(tool("schedcheck")), "-json", *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(r["file"], r["kubernetesVersion"]) for r in lines] == [
        (str(f), "v1.36.3") for f in files
    ]
    ok, weight, typo = (r["errors"] for r in lines)
    assert ok == []
    assert [(e["field"], e["type"]) for e in weight] == [
        (
            "profiles[0].pluginConfig[0].args.scoringStrategy.resources[2].weight",
            "FieldValueInvalid",
        )
    ]
    assert "resource weight of nvidia.com/gpu not in valid range (0, 100]" in weight[0]["message"]
    assert [e["field"] for e in typo] == [""]  # the strict decoder, before any field validation
    assert 'unknown field "scoringStrategies"' in typo[0]["message"]


def test_a_config_is_found_by_its_kind_not_by_its_configmap(tmp_path: Path) -> None:
    json_config = json.dumps(
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": kubescheduler.KIND}
    )
    docs = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "mine", "namespace": "x"},
            "data": {"b.json": json_config, "a.txt": "kind: KubeSchedulerConfigurationList\n"},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s"},
            "stringData": {"c": "kind: KubeSchedulerConfiguration\n"},
        },
    ]
    assert kubescheduler.embedded(docs) == [
        {"namespace": "x", "name": "mine", "key": "b.json", "text": json_config}
    ]
    # Volcano's scheduler ConfigMap is another scheduler's configuration: not one of these.
    out = render(ml_tree(tmp_path, fleet=FLEET + "scheduling: {backend: volcano}\n"))
    volcano = kustomize_build(out / "overlays/prod/scheduling")
    assert [d["metadata"]["name"] for d in volcano if d["kind"] == "ConfigMap"] == [
        "volcano-scheduler-configmap"
    ]
    assert kubescheduler.embedded(volcano) == []


# ---- validate: KSC001 at the values line --------------------------------------------------------


def test_the_example_fleet_packing_profile_passes_the_scheduler_check(
    values_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    render(values_dir)
    calls = spy(monkeypatch)
    cache = values_dir.parent / "cache"
    code, doc = validate(values_dir, cache)
    assert code == 0, doc["findings"]
    assert coded(doc, "KSC001") == []
    # One schedcheck process checked the profile of each cluster's scheduling unit (staging,
    # prod's main and domestic) ...
    assert len(calls) == 1 and calls[0][0] == "-json" and len(calls[0]) == 4, calls
    # ... and the unit's cached result holds the verdict: the profile, checked, no error.
    verdicts = [r["schedcheck"] for r in cached(cache) if r["schedcheck"] is not None]
    assert verdicts and all(
        v
        == {
            "kubernetesVersion": "v1.36.3",
            "configs": [
                {
                    "namespace": "kube-system",
                    "name": "accel-kube-scheduler-config",
                    "key": KEY,
                    "errors": [],
                }
            ],
        }
        for v in verdicts
    ), verdicts


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (
            ("weight: 10\n", "weight: 101\n"),
            "resource weight of nvidia.com/gpu not in valid range",
        ),
        (("defaultingType", "defaultingTyp"), 'unknown field "defaultingTyp"'),
    ],
)
def test_a_committed_config_kube_scheduler_refuses_is_found_at_the_values_and_cached(
    tmp_path: Path, edit: tuple[str, str], says: str
) -> None:
    values_dir = packed(tmp_path)
    out = render(values_dir)
    # A hand edit (or an older render) of prod's profile: kubeconform takes the ConfigMap.
    file = out / (CONFIGMAP % "prod")
    text = file.read_text()
    assert edit[0] in text
    file.write_text(text.replace(edit[0], edit[1], 1))
    cache = values_dir.parent / "cache"
    (code, first), (code2, again) = validate(values_dir, cache), validate(values_dir, cache)
    assert (code, code2) == (1, 1)
    assert coded(first, "K8S001") == []
    found = coded(first, "KSC001")
    assert len(found) == 1, found  # prod only: staging's profile is untouched
    # values/environments/prod.yaml (PACKING) sets fleet.scheduling.kubeScheduler at line 3,
    # column 5.
    where = (found[0]["file"], found[0]["line"], found[0]["column"], found[0]["path"])
    assert where == ("values/environments/prod.yaml", 3, 5, "$.scheduling.kubeScheduler")
    assert (
        "ConfigMap kube-system/accel-kube-scheduler-config (overlays/prod/packing-scheduler)"
        in (found[0]["message"])
    )
    assert "kube-scheduler v1.36.3 would refuse" in found[0]["message"]
    assert says in found[0]["message"]
    assert found[0]["hint"]
    # The second run replays the verdict from the cache.
    assert again["stats"]["cached units"] == again["stats"]["units"] > 0, again["stats"]
    assert coded(again, "KSC001") == found
    # A values error does not hide it: then it is told at the committed file.
    (values_dir / "teams" / "broken.yaml").write_text("quota: {nvidia: -1}\n")
    code, doc = validate(values_dir, cache)
    assert code == 1 and any(f["file"] == "values/teams/broken.yaml" for f in doc["findings"])
    [hidden] = coded(doc, "KSC001")
    assert (hidden["file"], hidden["path"]) == (CONFIGMAP % "prod", "")
    assert says in hidden["message"]


def test_a_hand_added_scheduler_config_is_found_at_its_committed_file(tmp_path: Path) -> None:
    values_dir = packed(tmp_path)
    out = render(values_dir)
    unit = out / "overlays/prod/team-ml-team"
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": kubescheduler.KIND,
        "profiles": [{"schedulerName": "x", "schedulerNam": "y"}],
    }
    added = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "my-scheduler", "namespace": "ml-team"},
        "data": {"config.json": json.dumps(config)},
    }
    (unit / "my-scheduler.yaml").write_text(json.dumps(added) + "\n")
    kustomization = unit / "kustomization.yaml"
    text = kustomization.read_text()
    assert "resources:\n" in text
    kustomization.write_text(text.replace("resources:\n", "resources:\n- my-scheduler.yaml\n", 1))
    code, doc = validate(values_dir, tmp_path / "cache")
    assert code == 1
    [found] = coded(doc, "KSC001")
    assert found["file"] == "overlays/prod/team-ml-team/my-scheduler.yaml"
    assert (
        "ConfigMap ml-team/my-scheduler (overlays/prod/team-ml-team) key 'config.json'"
        in (found["message"])
    )
    assert 'unknown field "profiles[0].schedulerNam"' in found["message"]


def test_only_units_with_a_scheduler_config_are_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Packing on in prod only: staging's units carry no KubeSchedulerConfiguration.
    values_dir = packed(tmp_path, staging=PACKING.replace("packing: true", "packing: false"))
    render(values_dir)
    calls = spy(monkeypatch)
    cache = values_dir.parent / "cache"
    code, doc = validate(values_dir, cache)
    assert code == 0, doc["findings"]
    # One run, on prod's profile alone ...
    [args] = calls
    assert len(args) == 2 and args[1].endswith(
        "overlays__prod__packing-scheduler.0.kube-scheduler.yaml"
    )
    # ... and every other unit's result says schedcheck did not run on it.
    results = cached(cache)
    checked = [r for r in results if r["schedcheck"] is not None]
    assert [configmaps(r) for r in checked] == [["accel-kube-scheduler-config"]]
    assert len(results) > len(checked) > 0
    assert all(
        "accel-kube-scheduler-config" not in configmaps(r)
        for r in results
        if r["schedcheck"] is None
    )
