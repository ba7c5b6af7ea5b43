"""The helper (generator/toolchain/gotools/kbuild) gives exactly what the pinned binaries give, so the speed-up can never
change a verdict: every unit and base of the example fleet and of a synthetic fleet, plus units
broken on purpose, built by `kustomize build` and by the helper, validated by `kubeconform` and
by the helper."""

from __future__ import annotations

import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.fleet import make_values
from generator import CONSOLE
from generator.findings import Location
from generator.toolchain import buildinfo, registry, schemas
from generator.validate.stages import UnitView
from generator.validate.stages import kustomize as tools
from generator.vocab.units import Unit
from tests.fixtures import ROOT, invoke, tool

K8S = "1.33"

BROKEN = {
    # an unknown field (kubeconform -strict refuses it), a kind without a schema, a duplicate key
    "overlays/zz/invalid/kustomization.yaml": "resources:\n- objects.yaml\n",
    "overlays/zz/invalid/objects.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: x\nbogus: 1\n---\n"
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n---\n"
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\nspec:\n  ports:\n  - port: x\n"
    ),
    # an output past half of kubeconform's 4 MB read buffer (3 MB), then more documents; in a
    # few long values, as kustomize's time grows with the keys of a map, not with its bytes
    "overlays/zz/large/kustomization.yaml": "resources:\n- big.yaml\n- ../invalid\n",
    "overlays/zz/large/big.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: aa-big\n  namespace: x\ndata:\n"
        + "".join(f"  k{i:04d}: {'v' * 5000}\n" for i in range(600))
    ),
    # a build that fails
    "overlays/zz/missing/kustomization.yaml": "resources:\n- nothere.yaml\n",
    # a strategic merge patch and a JSON patch on a base, as hand edits write them
    "overlays/zz/patched/kustomization.yaml": (
        "resources:\n- ../invalid\npatches:\n- patch: |-\n    - op: add\n      path: /data\n"
        "      value: {k: v}\n  target: {kind: ConfigMap, name: a}\n"
    ),
}


# One team per vendor of the synthetic fleet (benchmarks/fleet.py: nvidia, amd, ascend, hygon,
# cambricon), each environment's overrides included: every kind of unit it makes, once.
SYNTHETIC_TEAMS = 5


def units_of(root: Path) -> list[str]:
    """Every folder holding a kustomization: the units and the bases."""
    found = [p for top in ("base", "overlays") for p in (root / top).rglob("kustomization.yaml")]
    return sorted(p.parent.relative_to(root).as_posix() for p in found)


def binary_build(root: Path, unit: str) -> dict[str, Any]:
    proc = subprocess.run(
        [str(tool("kustomize")), "build", str(root / unit)], capture_output=True, timeout=300
    )
    if proc.returncode:
        return {"ok": False, "error": proc.stderr.decode().strip().removeprefix("Error: ")}
    return {"ok": True, "output": proc.stdout.decode()}


def binary_kubeconform(outputs: dict[str, Path]) -> dict[str, list[dict[str, Any]]]:
    args = [
        str(tool("kubeconform")),
        "-strict",
        "-output",
        "json",
        "-kubernetes-version",
        schemas.kubeconform_kubernetes_version(K8S),
        *schemas.kubeconform_schema_args(),
        *(str(p) for p in outputs.values()),
    ]
    report = json.loads(subprocess.run(args, capture_output=True, timeout=600).stdout)
    by_file = {str(p): u for u, p in outputs.items()}
    found: dict[str, list[dict[str, Any]]] = {u: [] for u in outputs}
    for res in report["resources"]:
        res = dict(res)
        found[by_file[res.pop("filename")]].append(res)
    return found


def canonical(results: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True) for r in results)


def assert_same(root: Path, tmp_path: Path) -> int:
    units = units_of(root)
    helper = tools.kbuild(root, units, K8S, 2, extra=["-yaml"])
    with ThreadPoolExecutor(4) as pool:
        reference = dict(zip(units, pool.map(lambda u: binary_build(root, u), units), strict=True))
    tmp_path.mkdir(parents=True, exist_ok=True)
    outputs: dict[str, Path] = {}
    for unit in units:
        ref, got = reference[unit], helper[unit]
        assert got["ok"] == ref["ok"], (unit, got["error"], ref.get("error"))
        if not ref["ok"]:
            assert got["error"] == ref["error"], unit
            continue
        assert got["output"] == ref["output"], unit  # byte for byte
        docs = [d for d in yaml.load_all(ref["output"], Loader=yaml.CSafeLoader) if d]
        assert got["docs"] == docs, unit  # the objects the policy rules see
        outputs[unit] = tmp_path / (unit.replace("/", "__") + ".yaml")
        outputs[unit].write_text(ref["output"])
    verdicts = binary_kubeconform(outputs)
    for unit in outputs:
        assert canonical(helper[unit]["schema"]) == canonical(verdicts[unit]), unit
    return len(units)


def test_the_example_fleet_builds_byte_identical(tmp_path: Path) -> None:
    assert assert_same(ROOT, tmp_path) > 25  # 12 units, their bases


def test_a_synthetic_fleet_and_broken_units_build_byte_identical(tmp_path: Path) -> None:
    values = tmp_path / "fleet" / "values"
    make_values(values, SYNTHETIC_TEAMS)
    code = invoke("render", "--values", str(values)).exit_code
    assert code == 0
    root = values.parent
    for rel, text in BROKEN.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    assert assert_same(root, tmp_path / "out") == 63  # 59 units and bases, 4 broken units
    # The broken units really exercise the failure paths.
    helper = tools.kbuild(root, sorted({r.rsplit("/", 1)[0] for r in BROKEN}), K8S, 2)
    assert not helper["overlays/zz/missing"]["ok"]
    statuses = {(r["kind"], r["status"]) for r in helper["overlays/zz/invalid"]["schema"]}
    assert statuses == {
        ("ConfigMap", "statusInvalid"),
        ("Widget", "statusError"),
        ("Service", "statusInvalid"),
    }


@pytest.fixture
def openapi_tree(tmp_path: Path) -> Path:
    """A unit that sets kustomize's global OpenAPI schema (the helper then builds one unit at a
    time from a reset schema), next to one that does not."""
    for unit in ("a", "b"):
        (tmp_path / unit).mkdir()
        (tmp_path / unit / "cm.yaml").write_text(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"
        )
    (tmp_path / "a" / "kustomization.yaml").write_text(
        "openapi:\n  version: v1.21.2\nresources:\n- cm.yaml\n"
    )
    (tmp_path / "b" / "kustomization.yaml").write_text("resources:\n- cm.yaml\n")
    return tmp_path


def test_a_unit_that_sets_the_openapi_schema_builds_byte_identical(
    openapi_tree: Path,
) -> None:
    # -serial: what validate passes when a unit of the batch reads such a kustomization
    helper = tools.kbuild(openapi_tree, ["a", "b"], K8S, 2, extra=["-yaml", "-serial"])
    for unit in ("a", "b"):
        assert helper[unit]["output"] == binary_build(openapi_tree, unit)["output"]


CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {}\n  namespace: x\n"


def test_validate_builds_one_at_a_time_exactly_when_a_unit_it_builds_reads_an_openapi_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The helper is told -serial when a unit of the batch, or a base it reads, sets openapi:;
    a batch of other units builds in parallel, however many such kustomizations the tree has."""
    from generator.validate.run import ValidateOptions, validate

    values = tmp_path / "fleet" / "values"
    make_values(values, 1)
    assert invoke("render", "--values", str(values)).exit_code == 0
    root = values.parent
    files = {
        "base/zz-openapi/kustomization.yaml": (
            "openapi:\n  version: v1.21.2\nresources:\n- cm.yaml\n"
        ),
        "base/zz-openapi/cm.yaml": CONFIG_MAP.format("from-base"),
        "overlays/zz/reads-base/kustomization.yaml": "resources:\n- ../../../base/zz-openapi\n",
        "overlays/zz/plain/kustomization.yaml": "resources:\n- cm.yaml\n",
        "overlays/zz/plain/cm.yaml": CONFIG_MAP.format("plain"),
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    calls: list[tuple[list[str], list[str]]] = []
    kbuild = tools.kbuild

    def spy(root: Path, paths: list[str], *args: Any, **kwargs: Any) -> Any:
        calls.append((list(paths), list(kwargs.get("extra", []))))
        return kbuild(root, paths, *args, **kwargs)

    monkeypatch.setattr(tools, "kbuild", spy)
    opts = ValidateOptions(values, drift=False, cache_dir=tmp_path / "cache")
    first = validate(opts)
    assert first.errors == 0 and "overlays/zz/reads-base" in first.checked
    assert len(calls) == 1 and calls[0][1] == ["-serial"]  # every unit misses, one reads it

    calls.clear()
    (root / "overlays/zz/plain/cm.yaml").write_text(CONFIG_MAP.format("plain-edited"))
    validate(opts)
    assert calls == [(["overlays/zz/plain"], [])]  # the openapi base is in the tree, unread

    calls.clear()
    (root / "base/zz-openapi/cm.yaml").write_text(CONFIG_MAP.format("from-base-edited"))
    validate(opts)
    assert calls == [(["overlays/zz/reads-base"], ["-serial"])]  # its base sets it


def test_validate_reports_the_same_with_either_engine(tmp_path: Path) -> None:
    from generator.validate.run import ValidateOptions, validate

    values = tmp_path / "fleet" / "values"
    make_values(values, SYNTHETIC_TEAMS)
    assert invoke("render", "--values", str(values)).exit_code == 0
    for rel, text in BROKEN.items():
        (values.parent / rel).parent.mkdir(parents=True, exist_ok=True)
        (values.parent / rel).write_text(text)
    reports = []
    for engine in ("kbuild", "processes"):
        result = validate(ValidateOptions(values, drift=False, engine=engine))
        reports.append((result.units, result.objects, [f.format() for f in result.findings]))
    assert reports[0] == reports[1]
    assert any("K8S002 Widget w (overlays/zz/invalid)" in f for f in reports[0][2])
    assert any("KUS001 kustomize build overlays/zz/missing failed" in f for f in reports[0][2])


def test_the_helper_is_built_from_the_modules_the_binaries_are_built_from() -> None:
    """Same kustomize API, kyaml, kubeconform and every shared dependency, at the same versions:
    read from the binaries' Go build info, not from the go.mod files."""
    helper = buildinfo.go_build_info(tool("kbuild"))
    assert helper is not None
    kustomize = buildinfo.go_build_info(tool("kustomize"))
    kubeconform = buildinfo.go_build_info(tool("kubeconform"))
    assert kustomize is not None and kubeconform is not None
    assert (
        helper.modules["sigs.k8s.io/kustomize/api"]
        == kustomize.modules["sigs.k8s.io/kustomize/api"]
    )
    assert helper.modules["github.com/yannh/kubeconform"] == registry.TOOLS["kubeconform"].pinned
    for reference in (kustomize, kubeconform):
        shared = set(helper.modules) & set(reference.modules)
        assert {m: helper.modules[m] for m in shared} == {m: reference.modules[m] for m in shared}
    assert len(set(helper.modules) & set(kustomize.modules)) > 10


def test_the_helpers_own_go_tests_pass() -> None:
    # generator/toolchain/gotools/kbuild/*_test.go: e.g. each kind's schema is compiled by one worker, not by each.
    go = registry.find("go")
    assert go is not None, "the Go toolchain is needed: see `make tools`"
    proc = subprocess.run(
        [str(go), "test", "-count=1", "."],
        cwd=registry.GOTOOLS / "kbuild",
        env={**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_duration_the_crd_pattern_refuses_is_said_without_the_pattern() -> None:
    """K8S001 of a PrometheusRule's `for: 5 minutes` says what was written and the form the
    schema's pattern takes, its units read from the laid-out CRD schema; kubeconform's words go
    to the detail. An error at a field whose schema has no duration pattern (a group's name)
    keeps kubeconform's message."""
    pattern = (
        "^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?"
        "(([0-9]+)ms)?)$"
    )
    rule = {"alert": "Down", "expr": "up == 0", "for": "5 minutes"}
    doc = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "late", "namespace": "m"},
        "spec": {"groups": [{"name": 7, "rules": [rule]}]},
    }
    said = f"'5 minutes' does not match pattern '{pattern}'"
    item = {
        "kind": "PrometheusRule",
        "name": "late",
        "version": "monitoring.coreos.com/v1",
        "status": "statusInvalid",
        "validationErrors": [
            {"path": "/spec/groups/0/rules/0/for", "msg": said},
            {"path": "/spec/groups/0/name", "msg": "expected string, but got number"},
        ],
    }
    unit = UnitView(
        Unit("prod", "monitoring", "overlays/prod/monitoring", (), {}),
        None,
        lambda: [],  # no committed objects (UnitView.objects reads them when asked)
        lambda kind, name: (Location("values/fleet.yaml", 3, 5), f"{kind} m/{name} (u)"),
        CONSOLE,
    )
    found = tools.STAGE.findings(unit, {"ok": True, "schema": [item], "docs": [doc]})
    assert [(f.code, f.message, f.path, f.detail) for f in found] == [
        (
            "K8S001",
            "PrometheusRule m/late (u): 'for' is '5 minutes', not a duration: 0, or whole "
            "numbers each followed by its unit, the units in the order y, w, d, h, m, s, ms, "
            "without spaces",
            "$.spec.groups.0.rules.0.for",
            said,
        ),
        (
            "K8S001",
            "PrometheusRule m/late (u): expected string, but got number",
            "$.spec.groups.0.name",
            "",
        ),
    ]
