"""The shared pieces of every builder (generator/builders/common.py): object metadata with its
provenance annotation, Namespaces with their Pod Security admission labels, the identity of an
object, where a component's objects come from in values, what counts as a change beyond
provenance, and tolerations. Each expected value is written out by hand: the labels as Kubernetes
documents them (Pod Security admission: pod-security.kubernetes.io/<mode> with modes enforce,
audit and warn; tolerations: operator Equal with a value, Exists without)."""

from __future__ import annotations

from typing import Any

import pytest

from generator.builders.common import metadata, namespace, same_but_source, toleration
from generator.findings import Location
from generator.values.model import Taint
from generator.vocab.objects import identity
from generator.vocab.units import Component

MANAGED = {"app.kubernetes.io/managed-by": "accel-gitops"}
SOURCE = "accel-gitops.io/source"


# ---- metadata ------------------------------------------------------------------------------------


def test_metadata_names_the_object_its_manager_and_every_values_file() -> None:
    """Name, namespace, the managed-by label before the builder's labels, and the values files
    that made the object (comma-separated) before the builder's annotations."""
    meta = metadata(
        "plugin",
        sources=["values/fleet.yaml", "values/vendors/nvidia.yaml"],
        namespace="accelerator-plugins",
        labels={"accel-gitops.io/vendor": "nvidia"},
        annotations={"argocd.argoproj.io/sync-wave": "1"},
    )
    assert meta == {
        "name": "plugin",
        "namespace": "accelerator-plugins",
        "labels": {**MANAGED, "accel-gitops.io/vendor": "nvidia"},
        "annotations": {
            SOURCE: "values/fleet.yaml, values/vendors/nvidia.yaml",
            "argocd.argoproj.io/sync-wave": "1",
        },
    }
    assert list(meta) == ["name", "namespace", "labels", "annotations"]
    assert list(meta["labels"]) == ["app.kubernetes.io/managed-by", "accel-gitops.io/vendor"]
    assert list(meta["annotations"]) == [SOURCE, "argocd.argoproj.io/sync-wave"]


def test_metadata_of_a_cluster_scoped_object_has_no_namespace_key() -> None:
    """No namespace (or an empty one): the key is left out, as cluster-scoped objects have it."""
    expected = {"name": "n", "labels": MANAGED, "annotations": {SOURCE: "values/fleet.yaml"}}
    assert metadata("n", sources=["values/fleet.yaml"]) == expected
    assert metadata("n", sources=["values/fleet.yaml"], namespace="") == expected


def test_metadata_a_builders_label_or_annotation_wins_over_the_defaults() -> None:
    """A builder may set managed-by or the source itself: its value is the one written."""
    meta = metadata(
        "n",
        sources=["values/fleet.yaml"],
        labels={"app.kubernetes.io/managed-by": "someone"},
        annotations={SOURCE: "values/teams/ml.yaml"},
    )
    assert meta["labels"] == {"app.kubernetes.io/managed-by": "someone"}
    assert meta["annotations"] == {SOURCE: "values/teams/ml.yaml"}


# ---- namespace -----------------------------------------------------------------------------------


def psa(enforce: str, audit: str, warn: str) -> dict[str, str]:
    return {
        "pod-security.kubernetes.io/enforce": enforce,
        "pod-security.kubernetes.io/audit": audit,
        "pod-security.kubernetes.io/warn": warn,
    }


@pytest.mark.parametrize(
    ("level", "audit_and_warn"),
    [("restricted", "restricted"), ("baseline", "restricted"), ("privileged", "privileged")],
)
def test_namespace_enforces_its_level_and_warns_and_audits_restricted_unless_privileged(
    level: str, audit_and_warn: str
) -> None:
    """A restricted or baseline Namespace warns and audits at restricted (what a pod would need to
    tighten); a privileged one (node agents) at privileged, so its pods do not warn on every apply."""
    ns = namespace(
        "ml",
        sources=["values/teams/ml.yaml"],
        pod_security=level,
        labels={"accel-gitops.io/team": "ml"},
        annotations={"argocd.argoproj.io/sync-wave": "-2"},
    )
    assert ns == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "ml",
            "labels": {
                **MANAGED,
                **psa(level, audit_and_warn, audit_and_warn),
                "accel-gitops.io/team": "ml",
            },
            "annotations": {SOURCE: "values/teams/ml.yaml", "argocd.argoproj.io/sync-wave": "-2"},
        },
    }


def test_namespace_without_extra_labels_or_annotations() -> None:
    """Only the Pod Security labels and the provenance annotation."""
    ns = namespace("monitoring", sources=["values/fleet.yaml"], pod_security="restricted")
    assert ns == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "monitoring",
            "labels": {**MANAGED, **psa("restricted", "restricted", "restricted")},
            "annotations": {SOURCE: "values/fleet.yaml"},
        },
    }


# ---- identity ------------------------------------------------------------------------------------


def test_identity_is_api_version_kind_namespace_and_name() -> None:
    """Namespaced objects carry their namespace; cluster-scoped ones an empty string."""
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q", "namespace": "a"},
    }
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    assert identity(quota) == ("v1", "ResourceQuota", "a", "q")
    assert identity(node) == ("v1", "Node", "", "n1")


# ---- Component: add and origin_of ----------------------------------------------------------------


def test_an_object_added_with_an_origin_points_there_and_others_at_the_components() -> None:
    """Findings on an object name its own values line when it has one, else the component's."""
    own, top = Location("values/teams/ml.yaml", 3, 5), Location("values/teams/ml.yaml", 1, 1)
    comp = Component("team-ml", "teams/ml", origin=top)
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q", "namespace": "a"},
    }
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}
    assert comp.add(quota, own) is quota
    assert comp.add(ns) is ns
    assert comp.objects == [quota, ns]
    assert comp.origins == {("v1", "ResourceQuota", "a", "q"): own}
    assert comp.origin_of(quota) == own
    assert comp.origin_of(ns) == top
    # An object of the same identity (the environment's copy) is found by identity, not by id.
    assert comp.origin_of({**quota, "spec": {}}) == own


# ---- same_but_source -----------------------------------------------------------------------------


def obj(**meta: Any) -> dict[str, Any]:
    """A ConfigMap named c with `meta` beside its name and data {k: v}."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", **meta},
        "data": {"k": "v"},
    }


NOTES = {SOURCE: "values/fleet.yaml", "argocd.argoproj.io/sync-wave": "1"}
ENV_NOTES = {**NOTES, SOURCE: "values/fleet.yaml, values/environments/prod.yaml"}


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        pytest.param(obj(annotations=NOTES), obj(annotations=NOTES), True, id="identical"),
        pytest.param(obj(annotations=NOTES), obj(annotations=ENV_NOTES), True, id="only-source"),
        pytest.param(obj(), obj(), True, id="no-annotations"),
        pytest.param(obj(annotations=None), obj(annotations=None), True, id="null-annotations"),
        pytest.param(
            obj(annotations=NOTES),
            {**obj(annotations=NOTES), "data": {"k": "w"}},
            False,
            id="data-differs",
        ),
        pytest.param(
            obj(annotations=NOTES),
            {**obj(annotations=NOTES), "binaryData": {}},
            False,
            id="b-has-another-field",
        ),
        pytest.param(
            obj(annotations=NOTES),
            obj(annotations=NOTES, labels={"a": "b"}),
            False,
            id="b-has-labels",
        ),
        pytest.param(
            obj(annotations=NOTES, labels={"a": "b"}),
            obj(annotations=NOTES, labels={"a": "c"}),
            False,
            id="label-differs",
        ),
        pytest.param(
            obj(annotations=NOTES),
            obj(annotations={**NOTES, "argocd.argoproj.io/sync-wave": "2"}),
            False,
            id="annotation-differs",
        ),
        pytest.param(
            obj(annotations=NOTES),
            obj(annotations={SOURCE: "values/fleet.yaml"}),
            False,
            id="annotation-missing",
        ),
    ],
)
def test_same_but_source_ignores_only_the_provenance_annotation(
    a: dict[str, Any], b: dict[str, Any], same: bool
) -> None:
    """Layout keeps the base's object when the environment's differs only in the files it names;
    any other difference (a field, a label, another annotation) is a real change."""
    assert same_but_source(a, b) is same
    assert same_but_source(b, a) is same


# ---- toleration ----------------------------------------------------------------------------------


def test_a_taint_with_a_value_is_tolerated_by_equal_and_one_without_by_exists() -> None:
    """Kubernetes' toleration: operator Equal matches the taint's value; Exists any value."""
    assert toleration(Taint("nvidia.com/gpu", "NoSchedule", "present")) == {
        "key": "nvidia.com/gpu",
        "operator": "Equal",
        "value": "present",
        "effect": "NoSchedule",
    }
    assert toleration(Taint("amd.com/gpu", "NoExecute")) == {
        "key": "amd.com/gpu",
        "operator": "Exists",
        "effect": "NoExecute",
    }
