"""Property-based tests (hypothesis): the reader and render never crash, output is deterministic,
and every value survives a YAML 1.1 round trip with its type.

Derandomized with bounded examples so CI runs the same cases every time, fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.render.writer import read_tree
from generator.values.yamlio import YamlInputError, dump, load_text
from tests.fixtures import FLEET, cli, render_with_seed, snapshot, tree

FAST = settings(derandomize=True, database=None, deadline=None, max_examples=300)
SLOW = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=150,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# Text made of what YAML syntax is made of, so the parser gets past its first character.
YAML_ALPHABET = st.sampled_from(
    [*"abcnyxz019 .:-_[]{},#&*!|>'\"%@`?\n\t", "\x00", "\ufeff", "\u202e", "é", "🙂"]
)
YAMLISH = st.text(YAML_ALPHABET, max_size=200)

TEAM_KEYS = [
    "quota", "namespaces", "owners", "podSecurity", "enabled", "jobs", "services", "nvidia",
    "vendor", "devices", "images", "tracks", "replicas", "weights", "phase", "migration",
    "from", "to", "routing", "kind", "tasks", "model", "namespace", "devicesPerReplica",
    "pools", "name", "devicesPerNode", "nodes", "teams", "vendors", "fleet", "exporter",
    "devicePlugin", "catalog", "taints", "environments", "git", "scheduling", "backend",
    "securityProfiles", "capabilities",
]  # fmt: skip
WORDS = [
    "nvidia", "ml", "baseline", "job", "volcano", "kueue", "shift-50", "", "x:1", "A100",
    "IPC_LOCK", "rdma",
]  # fmt: skip
SCALARS = st.none() | st.booleans() | st.integers(-3, 10) | st.sampled_from(WORDS)
TEAM_LIKE = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(TEAM_KEYS), inner, max_size=4),
    max_leaves=12,
)


def _parse(data: bytes) -> None:
    try:
        load_text(data, "values/teams/x.yaml")
    except YamlInputError as exc:
        assert exc.finding.code == "YAML001"
        assert exc.finding.location.file == "values/teams/x.yaml"


@FAST
@given(st.binary(max_size=300))
def test_the_reader_never_crashes_on_bytes(data: bytes) -> None:
    _parse(data)


@FAST
@given(YAMLISH)
def test_the_reader_never_crashes_on_yaml_like_text(text: str) -> None:
    _parse(text.encode("utf-8"))


VALUES_FILES = ["teams/ml.yaml", "vendors/nvidia.yaml", "environments/prod.yaml", "fleet.yaml"]


@SLOW
@given(
    st.sampled_from(VALUES_FILES),
    st.one_of(YAMLISH, TEAM_LIKE.map(lambda d: yaml.safe_dump(d, allow_unicode=True))),
)
def test_render_turns_any_values_file_into_findings_never_a_crash(
    tmp_path_factory: Any, rel: str, text: str
) -> None:
    root = tmp_path_factory.mktemp("prop")
    values = tree(root, {rel: text})
    out = root / "out"
    (out / "base").mkdir(parents=True)
    (out / "base" / "previous.yaml").write_text("# previous\n")
    before = snapshot(out)
    code, output = cli("render", "--values", str(values), "--out", str(out))
    assert code in (0, 1), output  # 2 a usage or tool error, 3 a crash (a bug)
    assert "internal error" not in output and "Traceback" not in output
    if code == 1:
        assert "nothing written" in output and snapshot(out) == before
        assert all(line.startswith("values/") for line in output.splitlines()[:-1]), (
            output
        )  # every finding names a values file


# ---- valid generated values: deterministic output ------------------------------------------

VALID_TEAM = st.fixed_dictionaries(
    {
        "namespaces": st.lists(
            st.sampled_from(["ml", "ml-a", "ml-b", "research"]), min_size=1, max_size=3, unique=True
        ),
        "quota": st.just({"nvidia": 2}),  # fits any job below, and 3 namespaces x 2 <= 8 GPUs
        "jobs": st.dictionaries(
            st.sampled_from(["train", "eval", "tune"]),
            st.fixed_dictionaries(
                {
                    "vendor": st.just("nvidia"),
                    "devices": st.integers(0, 2),
                    # A new mapping per job: one shared object would be dumped as a YAML
                    # anchor and alias, which values files refuse (YAML001).
                    "images": st.fixed_dictionaries(
                        {"nvidia": st.just("registry.example.com/t:1")}
                    ),
                }
            ),
            max_size=2,
        ),
    }
)


@settings(SLOW, max_examples=4)
@given(VALID_TEAM, st.sampled_from(["0", "1", "4242"]))
def test_valid_values_render_byte_identical_across_runs_and_hash_seeds(
    tmp_path_factory: Any, team: dict[str, Any], seed: str
) -> None:
    root = tmp_path_factory.mktemp("det")
    vendor = "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1, n2]}\n"
    values = tree(root, {"teams/ml.yaml": dump(team), "vendors/nvidia.yaml": vendor})
    first = root / "a"
    code, output = cli("render", "--values", str(values), "--out", str(first))
    assert code == 0, output
    second = root / "b"
    assert cli("render", "--values", str(values), "--out", str(second))[0] == 0
    assert read_tree(first) == read_tree(second)
    assert render_with_seed(values, root / "c", seed) == read_tree(first)


# ---- YAML 1.1 round trip -------------------------------------------------------------------

JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=30)
    | st.sampled_from(
        [
            "yes",
            "no",
            "on",
            "off",
            "y",
            "n",
            "0755",
            "1.10",
            "1e3",
            "~",
            "null",
            "0o17",
            "0x1F",
            "2024-01-01",
            "12:30",
            ".inf",
            "-",
            "? x",
            "#",
            "- a",
        ]
    ),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same type all the way down (True is not 1, '1' is not 1)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@settings(FAST, max_examples=200)
@given(JSONISH)
def test_every_value_survives_a_yaml_11_round_trip_with_its_type(value: Any) -> None:
    text = dump({"v": value})
    assert _same(yaml.safe_load(text), {"v": value}), text
    # and our own (safe, positioned) reader reads it back the same
    data, _ = load_text(text.encode("utf-8"), "f.yaml")
    assert _same(data, {"v": value}), text


def test_the_fleet_used_here_is_valid(tmp_path: Path) -> None:
    assert (
        cli(
            "render",
            "--values",
            str(tree(tmp_path, {"fleet.yaml": FLEET})),
            "--out",
            str(tmp_path / "o"),
        )[0]
        == 0
    )
