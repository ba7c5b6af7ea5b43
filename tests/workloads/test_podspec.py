"""The Kubernetes pod fields a workload passes through (generator/workloads/podspec.py): checked
against Kubernetes' own schema at the values path, the checks the schema cannot make, what the
pods use from the cluster, and whether a toleration tolerates a taint as the scheduler decides."""

from __future__ import annotations

from typing import Any

import pytest

from generator.toolchain.crdschemas import kubernetes_validate_schema_dir
from generator.values.model import Taint
from generator.workloads import podspec
from generator.workloads.podspec import Problem, Reference


def problems(raw: dict[str, Any]) -> list[tuple[tuple[Any, ...], str]]:
    return [(p.path, p.message) for p in podspec.problems(raw, "1.36")]


def test_a_field_kubernetes_does_not_know_is_named_at_its_key_with_the_one_it_meant() -> None:
    raw = {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimNmae": "x"}}]}
    (problem,) = podspec.problems(raw, "1.36")
    assert problem == Problem(
        ("volumes", 0, "persistentVolumeClaim", "claimNmae"),
        "'claimNmae' is not a field of a Kubernetes Volume here",
        "did you mean 'claimName'? known fields: claimName, readOnly",
        key=True,
    )


def test_a_value_of_the_wrong_type_is_named_at_its_path() -> None:
    raw = {"tolerations": [{"key": "k", "tolerationSeconds": "soon"}]}
    ((path, message),) = problems(raw)
    assert path == ("tolerations", 0, "tolerationSeconds")
    assert message.startswith("not a valid Kubernetes Toleration: 'soon' is not of type")


def test_each_field_is_checked_as_its_own_kind() -> None:
    # The same mistake in every field, each named after its kind; env's valueFrom too.
    raw = {
        "volumes": [{"name": "v", "bogus": 1}],
        "volumeMounts": [{"name": "v", "mountPath": "/v", "bogus": 1}],
        "envFrom": [{"bogus": 1}],
        "imagePullSecrets": [{"bogus": 1}],
        "tolerations": [{"bogus": 1}],
        "topologySpreadConstraints": [{"bogus": 1}],
        "affinity": {"bogus": 1},
        "env": {"A": {"valueFrom": {"bogus": 1}}},
    }
    kinds = {
        path[0]: message.split("Kubernetes ")[1].split(" ")[0].rstrip(":")
        for path, message in problems(raw)
    }
    assert kinds == {
        "volumes": "Volume",
        "volumeMounts": "VolumeMount",
        "envFrom": "EnvFromSource",
        "imagePullSecrets": "LocalObjectReference",
        "tolerations": "Toleration",
        "topologySpreadConstraints": "TopologySpreadConstraint",
        "affinity": "Affinity",
        "env": "EnvVarSource",
    }


def test_valid_fields_of_every_kind_have_no_problem() -> None:
    """An object field (affinity) is checked whole, a list field item by item, and env's
    valueFrom as an EnvVarSource."""
    raw = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]}
                    ]
                }
            }
        },
        "tolerations": [{"key": "k", "operator": "Exists"}],
        "env": {"A": {"valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}, "B": "b"},
    }
    assert podspec.problems(raw, "1.36") == []


def test_a_problem_in_envs_value_from_is_at_its_path() -> None:
    raw = {"env": {"TOKEN": {"valueFrom": {"secretKeyRef": {"name": "s", "ky": "t"}}}}}
    # 'ky' stands for the required 'key', which is then not told as missing
    assert [p.path for p in podspec.problems(raw, "1.36")] == [
        ("env", "TOKEN", "valueFrom", "secretKeyRef", "ky")
    ]


def test_a_key_only_loosely_like_a_required_field_does_not_stand_for_it() -> None:
    """difflib's ratio of 'topKeys' to 'topologyKey' is 0.67, under the 0.7 that makes a key a
    misspelling of a required field: the field is still told as missing."""
    spread = {"maxSkew": 1, "topKeys": "x", "whenUnsatisfiable": "DoNotSchedule"}
    got = problems({"topologySpreadConstraints": [spread]})
    assert [path for path, _ in got] == [
        ("topologySpreadConstraints", 0, "topKeys"),
        ("topologySpreadConstraints", 0),
    ]
    assert "'topologyKey' is a required property" in got[1][1]


def test_a_host_path_volume_is_listed_with_its_path_or_none() -> None:
    raw = {"volumes": [{"name": "a", "emptyDir": {}}, {"name": "h", "hostPath": {}}, "x"]}
    assert podspec.host_path_volumes(raw) == [(1, "")]
    raw = {"volumes": [{"name": "h", "hostPath": {"path": "/mnt"}}]}
    assert podspec.host_path_volumes(raw) == [(0, "/mnt")]


def test_a_required_field_kubernetes_asks_for_is_reported() -> None:
    ((path, message),) = problems({"volumeMounts": [{"name": "v"}]})
    assert path == ("volumeMounts", 0)
    assert "'mountPath' is a required property" in message


def test_volumes_used_twice_or_mounted_without_being_declared() -> None:
    raw = {
        "shmSize": "8Gi",
        "volumes": [{"name": "a", "emptyDir": {}}, {"name": "a", "emptyDir": {}}],
        "volumeMounts": [
            {"name": "b", "mountPath": "/b"},
            {"name": "dshm", "mountPath": "/dev/shm/"},
        ],
    }
    assert problems(raw) == [
        (("volumes", 1, "name"), "volume name 'a' is used twice (volumes[0] and [1])"),
        (
            ("volumeMounts", 0, "name"),
            "volume mount names 'b', which is not one of the workload's volumes",
        ),
        (
            ("volumeMounts", 1, "mountPath"),
            "/dev/shm is mounted twice: by shmSize and by this mount",
        ),
    ]
    # shmSize's own volume name is taken
    assert problems({"shmSize": "1Gi", "volumes": [{"name": "dshm", "emptyDir": {}}]}) == [
        (("volumes", 0, "name"), "volume name 'dshm' is the one shmSize adds")
    ]
    # a path that only starts like /dev/shm is another path
    assert not problems(
        {
            "shmSize": "1Gi",
            "volumes": [{"name": "x", "emptyDir": {}}],
            "volumeMounts": [{"name": "x", "mountPath": "/dev/shmX"}],
        }
    )
    # without shmSize, dshm is a name like any other, and /dev/shm a path like any other
    assert not problems(
        {
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
            "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
        }
    )


def test_each_volume_problem_says_how_to_fix_it() -> None:
    raw = {
        "shmSize": "8Gi",
        "volumes": [{"name": "data", "emptyDir": {}}, {"name": "data"}, {"name": "dshm"}],
        "volumeMounts": [
            {"name": "dat", "mountPath": "/d"},
            {"name": "x", "mountPath": "/dev/shm"},
        ],
    }
    hints = {p.path: p.hint for p in podspec.problems(raw, "1.36")}
    assert hints[("volumes", 1, "name")] == "give each volume its own name"
    assert hints[("volumes", 2, "name")] == (
        "rename the volume, or drop shmSize and mount your own emptyDir"
    )
    assert (
        hints[("volumeMounts", 0, "name")]
        == "did you mean 'data'? add it to volumes, or fix the name"
    )
    assert hints[("volumeMounts", 1, "name")] == "add it to volumes, or fix the name"
    assert hints[("volumeMounts", 1, "mountPath")] == "keep one of them"
    # Without shmSize its volume is not there to mount.
    assert problems({"volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]}) == [
        (
            ("volumeMounts", 0, "name"),
            "volume mount names 'dshm', which is not one of the workload's volumes",
        )
    ]


def test_each_missing_field_is_told_once_unless_a_misspelt_key_stands_for_it() -> None:
    """Two required fields missing: two problems. One of them misspelt: the misspelling is told,
    and only the other field as missing (an earlier version hid both behind the misspelling)."""
    spread = "topologySpreadConstraints"
    required = "not a valid Kubernetes TopologySpreadConstraint: '{}' is a required property"
    assert problems({spread: [{"maxSkew": 1}]}) == [
        ((spread, 0), required.format("topologyKey")),
        ((spread, 0), required.format("whenUnsatisfiable")),
    ]
    got = podspec.problems({spread: [{"maxSkew": 1, "topologyKy": "x"}]}, "1.36")
    assert [(p.path, p.message, p.key) for p in got] == [
        (
            (spread, 0, "topologyKy"),
            "'topologyKy' is not a field of a Kubernetes TopologySpreadConstraint here",
            True,
        ),
        ((spread, 0), required.format("whenUnsatisfiable"), False),
    ]
    assert got[0].hint.startswith("did you mean 'topologyKey'? known fields: labelSelector,")
    assert got[1].hint == "spell it as the Kubernetes API does (kubectl explain pod.spec)"


def test_a_value_of_several_allowed_types_is_told_by_its_closest_match() -> None:
    """A quantity is a string or a number (oneOf): the error named is the branch's own."""
    raw = {"volumes": [{"name": "a", "emptyDir": {"sizeLimit": True}}]}
    assert problems(raw) == [
        (
            ("volumes", 0, "emptyDir", "sizeLimit"),
            "not a valid Kubernetes Volume: True is not of type 'string', 'null'",
        )
    ]


def test_the_schema_set_is_the_fleets_minor_or_the_newest_below_it() -> None:
    shipped = sorted(
        p.name
        for p in kubernetes_validate_schema_dir().iterdir()
        if p.name.endswith("-local-strict")
    )
    assert podspec.schema_set("1.36") == "v1.36.0-local-strict"
    assert podspec.schema_set("1.36.4") == "v1.36.0-local-strict"
    newest = max(shipped, key=lambda n: tuple(int(x) for x in n[1:].split("-")[0].split(".")))
    assert podspec.schema_set("1.99") == newest
    oldest = min(shipped, key=lambda n: tuple(int(x) for x in n[1:].split("-")[0].split(".")))
    assert podspec.schema_set("1.0") == oldest


def test_every_object_of_the_cluster_the_pods_name_is_found_where_the_values_name_it() -> None:
    raw = {
        "volumes": [
            {"name": "d", "persistentVolumeClaim": {"claimName": "data"}},
            {"name": "s", "secret": {"secretName": "certs"}},
            {"name": "o", "secret": {"secretName": "maybe", "optional": True}},
            {"name": "c", "configMap": {"name": "conf"}},
            {
                "name": "p",
                "projected": {
                    "sources": [{"secret": {"name": "ps"}}, {"configMap": {"name": "pc"}}]
                },
            },
        ],
        "env": {
            "A": "text",
            "B": {"valueFrom": {"secretKeyRef": {"name": "tok", "key": "k"}}},
            "C": {"valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}},
        },
        "envFrom": [{"secretRef": {"name": "all"}}, {"configMapRef": {"name": "allc"}}],
        "imagePullSecrets": [{"name": "pull"}],
        "serviceAccountName": "sa",
        "priorityClassName": "high",
    }
    assert podspec.references(raw) == [
        Reference(
            "persistentVolumeClaims", "data", ("volumes", 0, "persistentVolumeClaim", "claimName")
        ),
        Reference("secrets", "certs", ("volumes", 1, "secret", "secretName")),
        Reference("configMaps", "conf", ("volumes", 3, "configMap", "name")),
        Reference("secrets", "ps", ("volumes", 4, "projected", "sources", 0, "secret", "name")),
        Reference(
            "configMaps", "pc", ("volumes", 4, "projected", "sources", 1, "configMap", "name")
        ),
        Reference("secrets", "tok", ("env", "B", "valueFrom", "secretKeyRef", "name")),
        Reference("configMaps", "cm", ("env", "C", "valueFrom", "configMapKeyRef", "name")),
        Reference("secrets", "all", ("envFrom", 0, "secretRef", "name")),
        Reference("configMaps", "allc", ("envFrom", 1, "configMapRef", "name")),
        Reference("secrets", "pull", ("imagePullSecrets", 0, "name")),
        Reference("serviceAccounts", "sa", ("serviceAccountName",)),
        Reference("priorityClasses", "high", ("priorityClassName",)),
    ]


GPU = Taint("nvidia.com/gpu", "NoSchedule", "present")
GPU_BARE = Taint("nvidia.com/gpu", "NoSchedule")
SIZED = Taint("size", "NoSchedule", "8")


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        ({"operator": "Exists"}, GPU, True),  # no key, no effect: every taint
        ({"key": "nvidia.com/gpu", "operator": "Exists"}, GPU, True),
        ({"key": "other", "operator": "Exists"}, GPU, False),
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, GPU, False),
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, GPU, True),
        ({"key": "nvidia.com/gpu", "value": "present"}, GPU, True),  # "" operator is Equal
        ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "absent"}, GPU, False),
        ({"key": "nvidia.com/gpu", "operator": "Equal"}, GPU_BARE, True),
        ({"key": "nvidia.com/gpu", "operator": "Equal"}, GPU, False),
        ({"operator": "Equal", "value": "present"}, GPU, True),  # empty key: any key
        ({"key": "size", "operator": "Lt", "value": "9"}, SIZED, True),
        ({"key": "size", "operator": "Lt", "value": "8"}, SIZED, False),
        ({"key": "size", "operator": "Gt", "value": "7"}, SIZED, True),
        ({"key": "size", "operator": "Gt", "value": "8"}, SIZED, False),
        ({"key": "size", "operator": "Gt", "value": "x"}, SIZED, False),
        # as strconv.ParseInt reads them: a sign, then digits, within int64
        ({"key": "size", "operator": "Gt", "value": "-3"}, SIZED, True),
        ({"key": "size", "operator": "Lt", "value": "+9"}, SIZED, True),
        ({"key": "size", "operator": "Gt", "value": "--3"}, SIZED, False),
        ({"key": "size", "operator": "Gt", "value": "-9223372036854775808"}, SIZED, True),
        ({"key": "size", "operator": "Gt", "value": "-9223372036854775809"}, SIZED, False),
        ({"key": "size", "operator": "Lt", "value": "9223372036854775807"}, SIZED, True),
        ({"key": "size", "operator": "Lt", "value": "9223372036854775808"}, SIZED, False),
        ({"key": "size", "operator": "Sometimes", "value": "8"}, SIZED, False),
    ],
)
def test_a_toleration_tolerates_a_taint_as_the_scheduler_decides(
    toleration: dict[str, Any], taint: Taint, expected: bool
) -> None:
    assert podspec.tolerates(toleration, taint) is expected


def test_the_extras_carry_every_field_as_written_and_nothing_when_absent() -> None:
    raw: dict[str, Any] = {
        "volumes": [{"name": "data", "emptyDir": {}}],
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
        "env": {
            "MODE": "train",
            "TOKEN": {"valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        },
        "envFrom": [{"configMapRef": {"name": "cfg"}}],
        "imagePullSecrets": [{"name": "pull"}],
        "serviceAccountName": "trainer",
        "priorityClassName": "high",
        "affinity": {"podAntiAffinity": {}},
        "tolerations": [{"key": "spot", "operator": "Exists"}],
        "topologySpreadConstraints": [{"maxSkew": 1}],
        "podAnnotations": {"b": "2", "a": "1"},
        "shmSize": "16Gi",
    }
    got = podspec.extras(raw)
    assert got.volumes == ({"name": "data", "emptyDir": {}},)
    assert got.volume_mounts == ({"name": "data", "mountPath": "/data"},)
    assert got.env_sources == {"TOKEN": {"secretKeyRef": {"name": "s", "key": "k"}}}
    assert podspec.plain_env(raw) == {"MODE": "train"}
    assert got.env_from == ({"configMapRef": {"name": "cfg"}},)
    assert got.image_pull_secrets == ({"name": "pull"},)
    assert (got.service_account, got.priority_class, got.shm_size) == ("trainer", "high", "16Gi")
    assert got.affinity == {"podAntiAffinity": {}}
    assert got.tolerations == ({"key": "spot", "operator": "Exists"},)
    assert got.topology_spread == ({"maxSkew": 1},)
    assert list(got.annotations.items()) == [("a", "1"), ("b", "2")]  # sorted: stable output
    empty = podspec.extras({"env": None, "affinity": None})
    assert empty == podspec.extras({})
    assert (empty.volumes, empty.env_from, empty.affinity, empty.annotations, empty.shm_size) == (
        (),
        (),
        {},
        {},
        "",
    )
    assert podspec.plain_env({}) == {}
