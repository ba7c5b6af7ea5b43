"""Pod placement (generator/policy/placement.py) on hand-written pod specs and a small fleet.

Where a behaviour is Kubernetes' own (node selection by nodeSelector and required node affinity,
toleration matching), the expected answers are the Kubernetes API's: k8s.io/component-helpers
scheduling/corev1 (nodeaffinity, Toleration.ToleratesTaint) and apimachinery's label selector
operators.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from generator.policy.placement import (
    SUMMARIES,
    PodTemplate,
    Pools,
    Problem,
    pod_problems,
    pod_templates,
    selects,
    tolerates,
    unselected,
)
from generator.values import loader as values
from generator.values.model import FleetView, Taint
from tests.fixtures import AMD_MI250X, ASCEND_910B, FLEET, HYGON_Z100L, tree

HOST = "kubernetes.io/hostname"
ACCEL = "feature.node.kubernetes.io/accelerator"
MODEL = "feature.node.kubernetes.io/gpu-model"

# NVIDIA with three pools: a100 on nodes n1 and n2, h100 on n3 with a pool label, and l4 counted
# (3 nodes, none named) with taints of its own in place of the vendor's.
NVIDIA = """\
pools:
  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1, n2]}
  - {name: h100, model: H100, devicesPerNode: 8, nodes: [n3], labels: {zone: west}}
  - name: l4
    model: L4
    devicesPerNode: 2
    nodeCount: 3
    taints:
      - {key: dedicated, value: inference, effect: NoSchedule}
      - {key: example.com/maintenance, effect: NoExecute}
      - {key: example.com/soft, value: x, effect: PreferNoSchedule}
"""


@pytest.fixture(scope="module")
def prod(tmp_path_factory: pytest.TempPathFactory) -> FleetView:
    """NVIDIA (pools a100, h100, l4), Ascend (910b on npu-1), AMD (amd-1) and Hygon (dcu-1), the
    last two on amd.com/gpu; node labels get NFD's prefix."""
    files = {
        "fleet.yaml": FLEET + "nodeConfig: {method: nfd}\n",
        "vendors/nvidia.yaml": NVIDIA,
        "vendors/ascend.yaml": ASCEND_910B,
        "vendors/amd.yaml": AMD_MI250X,
        "vendors/hygon.yaml": HYGON_Z100L,
    }
    return values.load(tree(tmp_path_factory.mktemp("placement"), files)).envs["prod"]


def names(found: Sequence[tuple[Any, Any]]) -> list[tuple[str, str]]:
    return [(vendor.id, pool.name) for vendor, pool in found]


def required(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    """A pod spec whose required node affinity has these terms (each a list of expressions)."""
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]
                }
            }
        }
    }


def with_terms(*terms: dict[str, Any]) -> dict[str, Any]:
    """A pod spec whose required node affinity has these nodeSelectorTerms, as written."""
    affinity = {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
    }
    return {"affinity": {"nodeAffinity": affinity}}


def expr(key: str, operator: str, *vals: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if vals:
        out["values"] = list(vals)
    return out


def container(resources: dict[str, Any], name: str | None = "c") -> dict[str, Any]:
    out: dict[str, Any] = {"image": "i", "resources": resources}
    if name is not None:
        out["name"] = name
    return out


def tolerate(*accelerators: str) -> list[dict[str, str]]:
    return [
        {"key": ACCEL, "operator": "Equal", "value": a, "effect": "NoSchedule"}
        for a in accelerators
    ]


# ---- pod_templates -----------------------------------------------------------------------------

SPEC = {"containers": [{"name": "c", "image": "i"}]}
TEMPLATE = {"metadata": {"labels": {"app": "w"}}, "spec": SPEC}


@pytest.mark.parametrize(
    ("kind", "pods"),
    [("Deployment", 1), ("StatefulSet", 1), ("DaemonSet", None), ("ReplicaSet", 1), ("Job", 1)],
)
def test_workload_kinds_carry_their_template(kind: str, pods: int | None) -> None:
    """With their pods as the API defaults them (one); a DaemonSet's are its nodes'."""
    obj = {"apiVersion": "apps/v1", "kind": kind, "spec": {"template": TEMPLATE}}
    assert list(pod_templates(obj)) == [
        PodTemplate("$.spec.template.spec", SPEC, {"app": "w"}, pods)
    ]


@pytest.mark.parametrize(
    ("kind", "spec", "pods"),
    [
        ("Deployment", {"replicas": 3}, 3),
        ("StatefulSet", {"replicas": 0}, 0),
        ("ReplicaSet", {"replicas": None}, 1),
        ("Job", {"parallelism": 4, "completions": 8}, 4),
        ("DaemonSet", {"replicas": 2}, None),
    ],
)
def test_a_templates_pods_are_its_objects_replicas_or_parallelism(
    kind: str, spec: dict[str, Any], pods: int | None
) -> None:
    obj = {"apiVersion": "apps/v1", "kind": kind, "spec": {**spec, "template": TEMPLATE}}
    assert [t.pods for t in pod_templates(obj)] == [pods]


def test_a_bare_pod_is_its_own_template_without_template_labels() -> None:
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "b"}}, "spec": SPEC}
    assert list(pod_templates(obj)) == [PodTemplate("$.spec", SPEC, {}, 1)]


def test_a_bare_pod_without_spec_has_an_empty_one() -> None:
    assert list(pod_templates({"apiVersion": "v1", "kind": "Pod"})) == [
        PodTemplate("$.spec", {}, {}, 1)
    ]


def test_a_cronjob_carries_the_template_of_its_job() -> None:
    obj = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"template": TEMPLATE}}},
    }
    assert list(pod_templates(obj)) == [
        PodTemplate("$.spec.jobTemplate.spec.template.spec", SPEC, {"app": "w"}, 1)
    ]


def test_a_cronjob_without_job_template_has_an_empty_template() -> None:
    specs: tuple[dict[str, Any], ...] = (
        {"schedule": "@daily"},
        {"jobTemplate": {}},
        {"jobTemplate": {"spec": None}},
    )
    for spec in specs:
        obj = {"apiVersion": "batch/v1", "kind": "CronJob", "spec": spec}
        assert list(pod_templates(obj)) == [
            PodTemplate("$.spec.jobTemplate.spec.template.spec", {}, {}, 1)
        ]


def test_a_volcano_job_carries_one_template_per_task() -> None:
    other = {"containers": [{"name": "d", "image": "j"}]}
    obj = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "spec": {
            "tasks": [
                {"name": "a", "template": TEMPLATE, "replicas": 3},
                {"name": "b", "template": {"spec": other}},
                {"name": "c"},
            ]
        },
    }
    assert list(pod_templates(obj)) == [
        PodTemplate("$.spec.tasks[0].template.spec", SPEC, {"app": "w"}, 3),
        PodTemplate("$.spec.tasks[1].template.spec", other, {}, 1),
        PodTemplate("$.spec.tasks[2].template.spec", {}, {}, 1),
    ]


def test_a_volcano_job_is_told_from_a_batch_job_by_its_api_version() -> None:
    # A Volcano Job has tasks, not spec.template: the template beside them is not its pod.
    obj = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "spec": {"template": TEMPLATE, "tasks": []},
    }
    assert list(pod_templates(obj)) == []
    assert list(pod_templates({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"})) == []


def test_templates_with_missing_parts_are_empty() -> None:
    for template in (None, {}, {"metadata": None, "spec": None}, {"metadata": {"labels": None}}):
        obj = {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": template}}
        assert list(pod_templates(obj)) == [PodTemplate("$.spec.template.spec", {}, {}, 1)]
    assert list(pod_templates({"apiVersion": "apps/v1", "kind": "Deployment", "spec": None})) == [
        PodTemplate("$.spec.template.spec", {}, {}, 1)
    ]


def test_kinds_without_a_pod_template_have_none() -> None:
    for kind in ("Service", "ConfigMap", "PodTemplate", None):
        obj = {"apiVersion": "v1", "kind": kind, "spec": {"template": TEMPLATE}}
        assert list(pod_templates(obj)) == []
    assert list(pod_templates({"kind": "Deployment", "spec": {"template": TEMPLATE}})) == [
        PodTemplate("$.spec.template.spec", SPEC, {"app": "w"}, 1)
    ]


# ---- selects: nodeSelector and required node affinity ------------------------------------------

NODE = {"a": "1", "b": "2", "n": "8"}


def test_unselected_says_what_keeps_a_pod_off_a_node() -> None:
    """Each nodeSelector pair the node lacks; when no affinity term matches, each term's failing
    requirements (the terms ORed, a term's requirements ANDed); nothing when the pod selects
    it."""
    spec = {
        "nodeSelector": {"a": "1", "b": "3"},
        **required([expr("a", "In", "1"), expr("c", "Exists")], [expr("n", "Gt", "9")]),
    }
    assert unselected(spec, NODE) == [
        "nodeSelector b=3",
        "node affinity c Exists or n Gt (9)",
    ]
    assert unselected({"nodeSelector": {"a": "1"}, **required([expr("b", "In", "2")])}, NODE) == []
    by_name = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchFields": [expr("metadata.name", "In", "gpu-2")]},
                        {},
                    ]
                }
            }
        }
    }
    assert unselected(by_name, {**NODE, "kubernetes.io/hostname": "gpu-1"}) == [
        "node affinity metadata.name In (gpu-2) or an empty term"
    ]


def test_no_selector_and_no_affinity_select_every_node() -> None:
    assert selects({}, NODE)
    assert selects({}, {})
    assert selects({"nodeSelector": None, "affinity": None}, NODE)


def test_node_selector_entries_must_all_match() -> None:
    assert selects({"nodeSelector": {"a": "1", "b": "2"}}, NODE)
    assert not selects({"nodeSelector": {"a": "1", "b": "3"}}, NODE)
    assert not selects({"nodeSelector": {"b": "3", "a": "1"}}, NODE)
    assert not selects({"nodeSelector": {"a": "1", "c": "1"}}, NODE)
    assert not selects({"nodeSelector": {"a": ""}}, {})


def test_affinity_in() -> None:
    assert selects(required([expr("a", "In", "0", "1")]), NODE)
    assert not selects(required([expr("a", "In", "0", "2")]), NODE)
    assert not selects(required([expr("missing", "In", "1")]), NODE)
    assert not selects(required([expr("a", "In")]), NODE)


def test_affinity_not_in_matches_nodes_without_the_label() -> None:
    assert selects(required([expr("a", "NotIn", "0", "2")]), NODE)
    assert not selects(required([expr("a", "NotIn", "0", "1")]), NODE)
    assert selects(required([expr("missing", "NotIn", "1")]), NODE)


def test_affinity_exists_and_does_not_exist_look_at_the_key_only() -> None:
    assert selects(required([expr("a", "Exists")]), NODE)
    assert selects(required([expr("e", "Exists")]), {"e": ""})
    assert not selects(required([expr("missing", "Exists")]), NODE)
    assert selects(required([expr("missing", "DoesNotExist")]), NODE)
    assert not selects(required([expr("a", "DoesNotExist")]), NODE)
    assert not selects(required([expr("e", "DoesNotExist")]), {"e": ""})


def test_affinity_gt_and_lt_do_not_match_a_missing_or_non_integer_label() -> None:
    # Kubernetes: Gt/Lt need the label, parsed as an integer, strictly above/below the value.
    for op in ("Gt", "Lt"):
        assert not selects(required([expr("missing", op, "4")]), NODE)
        assert not selects(required([expr("word", op, "4")]), {"word": "many"})
    assert not selects(required([expr("n", "Gt", "8")]), NODE)
    assert not selects(required([expr("n", "Gt", "9")]), NODE)
    assert not selects(required([expr("n", "Lt", "8")]), NODE)
    assert not selects(required([expr("n", "Lt", "7")]), NODE)


def test_affinity_gt_and_lt_compare_the_label_and_the_value_as_integers() -> None:
    # Kubernetes (apimachinery labels.Requirement.Matches): 8 > 7 and 8 < 9; 10 > 9 as integers
    # ("10" < "9" as strings); exactly one value.
    assert selects(required([expr("n", "Gt", "7")]), NODE)
    assert selects(required([expr("n", "Lt", "9")]), NODE)
    assert selects(required([expr("m", "Gt", "9")]), {"m": "10"})
    assert not selects(required([expr("m", "Lt", "9")]), {"m": "10"})
    assert not selects(required([expr("n", "Gt", "7", "1")]), NODE)
    assert not selects(required([expr("n", "Gt", "seven")]), NODE)


def test_an_empty_node_selector_term_matches_no_node() -> None:
    # Kubernetes (core/v1 NodeSelectorTerm): "A null or empty node selector term matches no
    # objects"; the other terms still count (terms are ORed).
    assert not selects(with_terms({}), NODE)
    assert not selects(with_terms({"matchExpressions": [], "matchFields": []}), NODE)
    assert selects(with_terms({}, {"matchExpressions": [expr("a", "In", "1")]}), NODE)


def test_match_fields_name_the_node() -> None:
    named = {**NODE, HOST: "n1"}
    field = {"matchFields": [expr("metadata.name", "In", "n1")]}
    assert selects(with_terms(field), named)
    assert not selects(with_terms(field), {**NODE, HOST: "n2"})
    assert not selects(with_terms(field), NODE)  # a node whose name is not known
    both = {"matchExpressions": [expr("a", "In", "2")], **field}
    assert not selects(with_terms(both), named)  # ANDed with the term's expressions


def test_affinity_with_an_unknown_operator_matches_nothing() -> None:
    assert not selects(required([expr("a", "Equals", "1")]), NODE)
    assert not selects(required([{"key": "a", "values": ["1"]}]), NODE)


def test_expressions_of_a_term_are_anded() -> None:
    assert selects(required([expr("a", "In", "1"), expr("b", "In", "2")]), NODE)
    assert not selects(required([expr("a", "In", "1"), expr("b", "In", "3")]), NODE)
    assert not selects(required([expr("a", "In", "0"), expr("b", "In", "2")]), NODE)


def test_terms_are_ored() -> None:
    assert selects(required([expr("a", "In", "0")], [expr("b", "In", "2")]), NODE)
    assert selects(required([expr("a", "In", "1")], [expr("b", "In", "0")]), NODE)
    assert not selects(required([expr("a", "In", "0")], [expr("b", "In", "0")]), NODE)


def test_node_selector_and_affinity_must_both_match() -> None:
    both = {"nodeSelector": {"a": "1"}, **required([expr("b", "In", "2")])}
    assert selects(both, NODE)
    assert not selects({**both, "nodeSelector": {"a": "0"}}, NODE)
    assert not selects({"nodeSelector": {"a": "1"}, **required([expr("b", "In", "0")])}, NODE)


def test_preferred_affinity_does_not_restrict_the_nodes() -> None:
    preferred = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": [expr("a", "In", "0")]}}
            ]
        }
    }
    assert selects({"affinity": preferred}, NODE)
    assert selects({"affinity": {"podAffinity": {}}}, NODE)
    assert selects({"affinity": {"nodeAffinity": None}}, NODE)
    no_terms = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": None}}
    assert selects({"affinity": no_terms}, NODE)


# ---- tolerates ---------------------------------------------------------------------------------

TAINT = Taint("accelerator", "NoSchedule", "gpu")


def tol(**fields: str) -> dict[str, Any]:
    return {"tolerations": [fields]}


def test_a_prefer_no_schedule_taint_never_keeps_a_pod_off() -> None:
    assert tolerates({}, Taint("k", "PreferNoSchedule", "v"))
    assert tolerates(
        tol(key="other", value="x", effect="NoSchedule"), Taint("k", "PreferNoSchedule")
    )


def test_no_tolerations_tolerate_no_taint() -> None:
    assert not tolerates({}, TAINT)
    assert not tolerates({"tolerations": None}, TAINT)
    assert not tolerates({"tolerations": []}, Taint("k", "NoExecute"))


def test_equal_needs_the_same_key_and_value() -> None:
    assert tolerates(tol(key="accelerator", operator="Equal", value="gpu"), TAINT)
    assert tolerates(tol(key="accelerator", value="gpu"), TAINT)  # the default operator
    assert not tolerates(tol(key="accelerator", operator="Equal", value="npu"), TAINT)
    assert not tolerates(tol(key="other", operator="Equal", value="gpu"), TAINT)
    assert not tolerates(tol(key="accelerator", operator="Equal"), TAINT)


def test_equal_without_value_tolerates_a_taint_without_value() -> None:
    bare = Taint("maintenance", "NoExecute")
    assert tolerates(tol(key="maintenance", operator="Equal"), bare)
    assert tolerates(tol(key="maintenance", operator="Equal", value=""), bare)
    assert not tolerates(tol(key="maintenance", operator="Equal", value="x"), bare)


def test_exists_tolerates_any_value_of_its_key() -> None:
    assert tolerates(tol(key="accelerator", operator="Exists"), TAINT)
    assert tolerates(tol(key="maintenance", operator="Exists"), Taint("maintenance", "NoExecute"))
    assert not tolerates(tol(key="other", operator="Exists"), TAINT)


def test_exists_without_key_tolerates_every_taint() -> None:
    assert tolerates(tol(operator="Exists"), TAINT)
    assert tolerates(tol(key="", operator="Exists"), Taint("k", "NoExecute", "v"))


def test_an_effect_must_match_and_no_effect_matches_all() -> None:
    for effect in ("NoSchedule", "NoExecute"):
        taint = Taint("accelerator", effect, "gpu")
        assert tolerates(tol(key="accelerator", value="gpu"), taint)
        assert tolerates(tol(key="accelerator", value="gpu", effect=""), taint)
        assert tolerates(tol(key="accelerator", value="gpu", effect=effect), taint)
        assert tolerates(tol(operator="Exists", effect=effect), taint)
    assert not tolerates(tol(key="accelerator", value="gpu", effect="NoExecute"), TAINT)
    assert not tolerates(tol(key="accelerator", operator="Exists", effect="NoExecute"), TAINT)
    assert not tolerates(tol(operator="Exists", effect="NoExecute"), TAINT)


def test_any_one_toleration_is_enough() -> None:
    spec = {
        "tolerations": [
            {"key": "accelerator", "value": "gpu", "effect": "NoExecute"},
            {"key": "accelerator", "value": "npu"},
            {"key": "other", "operator": "Exists"},
            {"key": "accelerator", "value": "gpu", "effect": "NoSchedule"},
        ]
    }
    assert tolerates(spec, TAINT)
    assert not tolerates({"tolerations": spec["tolerations"][:3]}, TAINT)
    exists_later = [
        {"key": "x", "operator": "Exists"},
        {"key": "accelerator", "operator": "Exists"},
    ]
    assert tolerates({"tolerations": exists_later}, TAINT)


# ---- Pools.picked ------------------------------------------------------------------------------


def test_pools_are_selected_by_their_node_labels_in_view_order(prod: FleetView) -> None:
    assert names(Pools(prod).picked({})) == [
        ("amd", "mi250x"),
        ("ascend", "910b"),
        ("hygon", "z100l"),
        ("nvidia", "a100"),
        ("nvidia", "h100"),
        ("nvidia", "l4"),
    ]
    nvidia = {"nodeSelector": {ACCEL: "nvidia-gpu"}}
    assert names(Pools(prod).picked(nvidia)) == [
        ("nvidia", "a100"),
        ("nvidia", "h100"),
        ("nvidia", "l4"),
    ]
    h100 = {"nodeSelector": {ACCEL: "nvidia-gpu", MODEL: "H100"}}
    assert names(Pools(prod).picked(h100)) == [("nvidia", "h100")]
    # Pool labels land on nodes with the NFD prefix.
    west = {"nodeSelector": {"feature.node.kubernetes.io/zone": "west"}}
    assert names(Pools(prod).picked(west)) == [("nvidia", "h100")]
    assert Pools(prod).picked({"nodeSelector": {"zone": "west"}}) == []
    # Asked twice, same answer (the pools' labels are kept in the view).
    assert names(Pools(prod).picked(h100)) == [("nvidia", "h100")]


def test_one_views_pools_answer_each_selection_by_its_node_selector_and_affinity(
    prod: FleetView,
) -> None:
    """One Pools answers many pod specs (a view's checks ask it thousands of times): each
    answer is its own selection's, whatever was asked before, and specs that differ only
    outside the selection (containers, tolerations) share one answer."""
    pools = Pools(prod)
    nvidia = {"nodeSelector": {ACCEL: "nvidia-gpu"}}
    assert names(pools.picked(nvidia)) == [("nvidia", "a100"), ("nvidia", "h100"), ("nvidia", "l4")]
    ascend = {"nodeSelector": {ACCEL: "huawei-npu"}}
    assert names(pools.picked(ascend)) == [("ascend", "910b")]
    # The same nodeSelector with a required affinity: the affinity narrows it.
    narrowed = {**nvidia, **required([expr(MODEL, "In", "L4")])}
    assert names(pools.picked(narrowed)) == [("nvidia", "l4")]
    # The same nodeSelector naming a node: picked node by node.
    named = {"nodeSelector": {ACCEL: "nvidia-gpu", HOST: "n3"}}
    assert names(pools.picked(named)) == [("nvidia", "h100")]
    other = {**nvidia, "containers": [{"name": "x"}], "tolerations": tolerate("nvidia")}
    assert pools.picked(other) is pools.picked(nvidia)


def test_pools_are_selected_by_node_affinity(prod: FleetView) -> None:
    spec = required([expr(MODEL, "In", "A100", "L4"), expr(ACCEL, "Exists")])
    assert names(Pools(prod).picked(spec)) == [("nvidia", "a100"), ("nvidia", "l4")]
    spec = required([expr(MODEL, "NotIn", "A100", "L4", "H100")])
    assert names(Pools(prod).picked(spec)) == [
        ("amd", "mi250x"),
        ("ascend", "910b"),
        ("hygon", "z100l"),
    ]


def test_a_hostname_in_the_node_selector_picks_the_pool_holding_that_node(
    prod: FleetView,
) -> None:
    assert names(Pools(prod).picked({"nodeSelector": {HOST: "n2"}})) == [("nvidia", "a100")]
    assert names(Pools(prod).picked({"nodeSelector": {HOST: "n3"}})) == [("nvidia", "h100")]
    assert names(Pools(prod).picked({"nodeSelector": {HOST: "npu-1"}})) == [("ascend", "910b")]
    assert Pools(prod).picked({"nodeSelector": {HOST: "n9"}}) == []
    # Both must hold on one node: n1 carries no H100.
    spec = {"nodeSelector": {HOST: "n1", MODEL: "H100"}}
    assert Pools(prod).picked(spec) == []


def test_a_hostname_in_node_affinity_picks_the_pools_holding_those_nodes(
    prod: FleetView,
) -> None:
    spec = required([expr(HOST, "In", "n1", "dcu-1")])
    assert names(Pools(prod).picked(spec)) == [("hygon", "z100l"), ("nvidia", "a100")]
    spec = required([expr(HOST, "NotIn", "n1", "n2", "n3", "amd-1", "npu-1", "dcu-1")])
    # Every named node is excluded; the l4 pool's nodes have no names, so nothing excludes them.
    assert names(Pools(prod).picked(spec)) == [("nvidia", "l4")]
    spec = required([expr(HOST, "NotIn", "n1")])
    assert ("nvidia", "a100") in names(Pools(prod).picked(spec))


def test_match_fields_pick_the_pool_holding_the_named_node(prod: FleetView) -> None:
    spec = with_terms({"matchFields": [expr("metadata.name", "In", "npu-1")]})
    assert names(Pools(prod).picked(spec)) == [("ascend", "910b")]


def test_a_hostname_selects_no_pool_whose_nodes_have_no_names(prod: FleetView) -> None:
    spec = {"nodeSelector": {HOST: "l4-1", MODEL: "L4"}}
    assert Pools(prod).picked(spec) == []
    spec = required([expr(HOST, "Exists"), expr(MODEL, "In", "L4")])
    assert Pools(prod).picked(spec) == []


def test_without_nfd_the_labels_keep_their_keys(tmp_path: Path) -> None:
    fleet = FLEET + "nodeConfig: {method: node-patch}\n"
    view = values.load(tree(tmp_path, {"fleet.yaml": fleet})).envs["prod"]
    assert names(Pools(view).picked({"nodeSelector": {"accelerator": "nvidia-gpu"}})) == [
        ("nvidia", "a100")
    ]
    assert Pools(view).picked({"nodeSelector": {ACCEL: "nvidia-gpu"}}) == []


# ---- pod_problems ------------------------------------------------------------------------------

NV_TAINT = f"{ACCEL}=nvidia-gpu:NoSchedule"


def pod(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"containers": list(containers), **spec}


def test_the_summaries_name_the_five_codes() -> None:
    assert sorted(SUMMARIES) == ["POD001", "POD002", "POD003", "POD004", "POD005"]


def test_a_pod_on_its_pools_with_their_tolerations_has_no_problem(prod: FleetView) -> None:
    spec = pod(
        container({"limits": {"nvidia.com/gpu": 2}, "requests": {"nvidia.com/gpu": "2"}}),
        nodeSelector={ACCEL: "nvidia-gpu", MODEL: "A100"},
        tolerations=tolerate("nvidia-gpu"),
    )
    assert pod_problems(Pools(prod), spec) == []
    # No devices asked: nothing to check, wherever it lands.
    assert pod_problems(Pools(prod), pod(container({"limits": {"cpu": "1"}}))) == []
    assert pod_problems(Pools(prod), {}) == []


def test_devices_must_be_whole_limits_with_equal_requests(prod: FleetView) -> None:
    ok = {"nodeSelector": {ACCEL: "huawei-npu"}, "tolerations": tolerate("huawei-npu")}
    npu = "huawei.com/Ascend910"
    cases: list[tuple[dict[str, Any], str]] = [
        ({"limits": {npu: "500m"}}, "requests None, limits '500m'"),
        ({"limits": {npu: 1.5}}, "requests None, limits 1.5"),
        ({"limits": {npu: True}}, "requests None, limits True"),
        ({"limits": {npu: "-1"}}, "requests None, limits '-1'"),
        ({"requests": {npu: 1}}, "requests 1, limits None"),
        ({"requests": {npu: 1}, "limits": {npu: 2}}, "requests 1, limits 2"),
        ({"requests": {npu: "2"}, "limits": {npu: "1"}}, "requests '2', limits '1'"),
    ]
    for resources, shown in cases:
        assert pod_problems(Pools(prod), pod(container(resources), **ok)) == [
            Problem(
                "POD001",
                f"container 'c' requests {npu}: {shown}; devices are whole numbers in limits, "
                "with equal requests",
                "containers[0].resources",
            )
        ], resources
    for resources in (
        {"limits": {npu: 1}},
        {"limits": {npu: "8"}},
        {"limits": {npu: 0}},
        {"limits": {npu: 2}, "requests": {npu: 2}},
        {"limits": {npu: "2"}, "requests": {npu: 2}},
        {"limits": {npu: 2}, "requests": {"cpu": "500m"}},
    ):
        assert pod_problems(Pools(prod), pod(container(resources), **ok)) == [], resources


def test_a_fractional_device_is_still_placed(prod: FleetView) -> None:
    # POD001 does not stop the other checks of the container: no toleration, so POD004 too.
    spec = pod(container({"limits": {"nvidia.com/gpu": "0.5"}}), nodeSelector={MODEL: "A100"})
    assert [p.code for p in pod_problems(Pools(prod), spec)] == ["POD001", "POD004"]


def test_two_vendors_at_once_is_one_problem_and_no_placement(prod: FleetView) -> None:
    spec = pod(
        container({"limits": {"nvidia.com/gpu": 1, "huawei.com/Ascend910": 1, "cpu": "2"}}, "x")
    )
    assert pod_problems(Pools(prod), spec) == [
        Problem(
            "POD002",
            "container 'x' requests huawei.com/Ascend910 and nvidia.com/gpu at once",
            "containers[0].resources",
        )
    ]
    # A request of one and a limit of the other count as both; a bad one is also POD001.
    spec = pod(
        container({"requests": {"nvidia.com/gpu": 1}, "limits": {"huawei.com/Ascend910": 1}})
    )
    assert [p.code for p in pod_problems(Pools(prod), spec)] == ["POD001", "POD002"]


def test_a_device_on_no_pool_of_its_vendor(prod: FleetView) -> None:
    spec = pod(
        container({"limits": {"huawei.com/Ascend910": 1}}),
        nodeSelector={ACCEL: "nvidia-gpu", MODEL: "A100"},
        tolerations=tolerate("nvidia-gpu"),
    )
    assert pod_problems(Pools(prod), spec) == [
        Problem(
            "POD003",
            f"container 'c' requests huawei.com/Ascend910 but its nodeSelector {{{ACCEL}=nvidia-gpu, "
            f"{MODEL}=A100}} picks no pool of ascend",
            "nodeSelector",
        )
    ]


def test_no_pool_of_a_shared_resource_names_both_vendors_and_the_affinity(
    prod: FleetView,
) -> None:
    spec = pod(
        container({"limits": {"amd.com/gpu": 1}}),
        **required([expr(ACCEL, "In", "nvidia-gpu")]),
    )
    assert pod_problems(Pools(prod), spec) == [
        Problem(
            "POD003",
            "container 'c' requests amd.com/gpu but its nodeSelector {} and node affinity picks "
            "no pool of amd or hygon",
            "nodeSelector",
        )
    ]


def test_a_shared_resource_on_pools_of_both_vendors(prod: FleetView) -> None:
    spec = pod(
        container({"limits": {"amd.com/gpu": 1}}),
        tolerations=tolerate("amd-gpu", "hygon-dcu"),
    )
    problem = Problem(
        "POD005",
        "container 'c' requests amd.com/gpu, which amd and hygon both advertise, and its "
        "nodeSelector {} picks pools of both",
        "nodeSelector",
        ("amd", "hygon"),
    )
    assert pod_problems(Pools(prod), spec) == [problem]
    hygon = {**spec, "nodeSelector": {ACCEL: "hygon-dcu"}}
    assert pod_problems(Pools(prod), hygon) == []
    both = {**spec, **required([expr(ACCEL, "In", "amd-gpu", "hygon-dcu")])}
    assert pod_problems(Pools(prod), both) == [
        Problem(
            "POD005",
            "container 'c' requests amd.com/gpu, which amd and hygon both advertise, and its "
            "nodeSelector {} and node affinity picks pools of both",
            "nodeSelector",
            ("amd", "hygon"),
        )
    ]


def test_every_untolerated_taint_of_every_selected_pool(prod: FleetView) -> None:
    spec = pod(container({"limits": {"nvidia.com/gpu": 1}}), nodeSelector={ACCEL: "nvidia-gpu"})
    assert pod_problems(Pools(prod), spec) == [
        Problem(
            "POD004",
            f"container 'c' does not tolerate taint {NV_TAINT} of pool 'a100'",
            "tolerations",
        ),
        Problem(
            "POD004",
            f"container 'c' does not tolerate taint {NV_TAINT} of pool 'h100'",
            "tolerations",
        ),
        Problem(
            "POD004",
            "container 'c' does not tolerate taint dedicated=inference:NoSchedule of pool 'l4'",
            "tolerations",
        ),
        Problem(
            "POD004",
            "container 'c' does not tolerate taint example.com/maintenance=:NoExecute of pool 'l4'",
            "tolerations",
        ),
    ]
    spec["tolerations"] = [*tolerate("nvidia-gpu"), {"key": "dedicated", "operator": "Exists"}]
    assert pod_problems(Pools(prod), spec) == [
        Problem(
            "POD004",
            "container 'c' does not tolerate taint example.com/maintenance=:NoExecute of pool 'l4'",
            "tolerations",
        ),
    ]
    spec["tolerations"].append({"key": "example.com/maintenance", "effect": "NoExecute"})
    assert pod_problems(Pools(prod), spec) == []


def test_problems_are_per_container_init_containers_first(prod: FleetView) -> None:
    spec = pod(
        container({"limits": {"nvidia.com/gpu": 1}}, "main"),
        container({"limits": {"cpu": "1"}}, "sidecar"),
        container({"limits": {"huawei.com/Ascend910": "1"}}, None),
        initContainers=[container({"limits": {"nvidia.com/gpu": "half"}}, "init")],
        nodeSelector={MODEL: "A100"},
    )
    assert pod_problems(Pools(prod), spec) == [
        Problem(
            "POD001",
            "container 'init' requests nvidia.com/gpu: requests None, limits 'half'; devices are "
            "whole numbers in limits, with equal requests",
            "initContainers[0].resources",
        ),
        Problem(
            "POD004",
            f"container 'init' does not tolerate taint {NV_TAINT} of pool 'a100'",
            "tolerations",
        ),
        Problem(
            "POD004",
            f"container 'main' does not tolerate taint {NV_TAINT} of pool 'a100'",
            "tolerations",
        ),
        Problem(
            "POD003",
            f"container '?' requests huawei.com/Ascend910 but its nodeSelector {{{MODEL}=A100}} "
            "picks no pool of ascend",
            "nodeSelector",
        ),
    ]


def test_later_containers_are_checked_after_one_that_asks_two_vendors(prod: FleetView) -> None:
    spec = pod(
        container({"limits": {"nvidia.com/gpu": 1, "amd.com/gpu": 1}}, "both"),
        container({"limits": {"huawei.com/Ascend910": 1}}, "npu"),
        nodeSelector={ACCEL: "huawei-npu"},
    )
    assert pod_problems(Pools(prod), spec) == [
        Problem(
            "POD002",
            "container 'both' requests amd.com/gpu and nvidia.com/gpu at once",
            "containers[0].resources",
        ),
        Problem(
            "POD004",
            f"container 'npu' does not tolerate taint {ACCEL}=huawei-npu:NoSchedule of pool '910b'",
            "tolerations",
        ),
    ]


def test_a_pod_on_one_named_node(prod: FleetView) -> None:
    spec = pod(container({"limits": {"nvidia.com/gpu": 1}}), nodeSelector={HOST: "n3"})
    assert pod_problems(Pools(prod), spec) == [
        Problem(
            "POD004",
            f"container 'c' does not tolerate taint {NV_TAINT} of pool 'h100'",
            "tolerations",
        ),
    ]
    spec = pod(container({"limits": {"amd.com/gpu": 1}}), nodeSelector={HOST: "n3"})
    assert pod_problems(Pools(prod), spec) == [
        Problem(
            "POD003",
            f"container 'c' requests amd.com/gpu but its nodeSelector {{{HOST}=n3}} picks no pool "
            "of amd or hygon",
            "nodeSelector",
        )
    ]


def test_a_trainjob_carries_its_patch_templates_with_the_trainers_image_and_resources() -> None:
    """Trainer puts the TrainJob's image and resources on the trainer container "node"; other
    containers, and the pod fields of the patch, are the patch's."""
    resources = {"limits": {"nvidia.com/gpu": 8}}
    patch_pod = {
        "nodeSelector": {"a": "b"},
        "containers": [{"name": "node", "volumeMounts": []}, {"name": "side"}],
    }
    step = {"name": "node", "template": {"spec": {"template": {**TEMPLATE, "spec": patch_pod}}}}
    obj = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "spec": {
            "trainer": {"image": "r/t", "resourcesPerNode": resources},
            "runtimePatches": [
                {"manager": "m"},
                {"trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [step]}}}},
            ],
        },
    }
    where = (
        "$.spec.runtimePatches[1].trainingRuntimeSpec.template.spec.replicatedJobs[0]"
        ".template.spec.template.spec"
    )
    spec = {
        "nodeSelector": {"a": "b"},
        "containers": [
            {"name": "node", "volumeMounts": [], "image": "r/t", "resources": resources},
            {"name": "side"},
        ],
    }
    assert list(pod_templates(obj)) == [PodTemplate(where, spec, {"app": "w"})]
    # another group's TrainJob is not Trainer's
    assert list(pod_templates({**obj, "apiVersion": "example.com/v1"})) == []


# ---- the pod templates of each workload kind


def _pod(name: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"role": name}}, "spec": {"containers": [{"name": name}]}}


def _found(obj: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(t.where, t.spec["containers"][0]["name"], t.labels) for t in pod_templates(obj)]


def test_a_leader_worker_set_gives_its_leader_template_when_it_has_one_and_its_worker() -> None:
    where = "$.spec.leaderWorkerTemplate"
    group = {"leaderTemplate": _pod("leader"), "workerTemplate": _pod("worker")}
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet"}
    assert _found({**lws, "spec": {"leaderWorkerTemplate": group}}) == [
        (f"{where}.leaderTemplate.spec", "leader", {"role": "leader"}),
        (f"{where}.workerTemplate.spec", "worker", {"role": "worker"}),
    ]
    only = {"workerTemplate": _pod("worker")}
    assert _found({**lws, "spec": {"leaderWorkerTemplate": only}}) == [
        (f"{where}.workerTemplate.spec", "worker", {"role": "worker"})
    ]
    # The same shape under another API group is no LeaderWorkerSet.
    other = {"apiVersion": "example.com/v1", "kind": "LeaderWorkerSet"}
    assert _found({**other, "spec": {"leaderWorkerTemplate": group}}) == []


def test_a_job_set_gives_each_replicated_jobs_pod_template() -> None:
    jobs = [{"template": {"spec": {"template": _pod(n)}}} for n in ("driver", "workers")]
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet"}
    assert _found({**jobset, "spec": {"replicatedJobs": jobs}}) == [
        ("$.spec.replicatedJobs[0].template.spec.template.spec", "driver", {"role": "driver"}),
        ("$.spec.replicatedJobs[1].template.spec.template.spec", "workers", {"role": "workers"}),
    ]
    # Its API group with another kind, or its kind in another group, is not one.
    assert _found({**jobset, "kind": "Other", "spec": {"replicatedJobs": jobs}}) == []
    assert _found({"apiVersion": "x/v1", "kind": "JobSet", "spec": {"replicatedJobs": jobs}}) == []


def test_a_train_job_gives_its_runtime_patches_templates_with_the_trainers_image() -> None:
    node = {"metadata": {}, "spec": {"containers": [{"name": "node"}, {"name": "side"}]}}
    patch = {
        "trainingRuntimeSpec": {
            "template": {"spec": {"replicatedJobs": [{"template": {"spec": {"template": node}}}]}}
        }
    }
    spec = {
        "trainer": {"image": "r/t:cuda", "resourcesPerNode": {"limits": {"nvidia.com/gpu": 8}}},
        "runtimePatches": [patch],
    }
    trainjob = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "spec": spec}
    [found] = pod_templates(trainjob)
    assert found.where == (
        "$.spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0]"
        ".template.spec.template.spec"
    )
    assert found.spec["containers"] == [
        {"name": "node", "image": "r/t:cuda", "resources": {"limits": {"nvidia.com/gpu": 8}}},
        {"name": "side"},
    ]
    assert list(pod_templates({**trainjob, "kind": "Other"})) == []
    assert list(pod_templates({**trainjob, "apiVersion": "x/v1"})) == []
