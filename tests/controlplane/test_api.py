"""`ApiClient.apply_crds` (generator/controlplane/api.py): a CRD's kinds are used only once discovery
lists them, which the API server does some time after the CRD is applied. An API server
written here lists the group only from the third discovery read on."""

from __future__ import annotations

from typing import Any

import pytest

from generator.controlplane.api import ApiClient, ApiError, served_kind

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "jobsets.jobset.x-k8s.io"},
    "spec": {
        "group": "jobset.x-k8s.io",
        "names": {"kind": "JobSet", "plural": "jobsets"},
        "scope": "Namespaced",
        "versions": [
            {"name": "v1alpha2", "served": True},
            {"name": "v1alpha1", "served": False},
        ],
    },
}


class LateDiscovery(ApiClient):
    """The group in /apis only from discovery read ``listed_from`` on."""

    def __init__(self, listed_from: int | None) -> None:
        super().__init__("http://127.0.0.1:1")
        self.listed_from = listed_from
        self.discovery_reads = 0

    def _request_once(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        query: dict[str, str] | None = None,
    ) -> tuple[Any, list[str]]:
        crd_gv = {"groupVersion": "apiextensions.k8s.io/v1", "version": "v1"}
        listed = self.listed_from is not None and self.discovery_reads >= self.listed_from
        if path == "/apis":
            self.discovery_reads += 1
            groups = [{"name": "apiextensions.k8s.io", "versions": [crd_gv]}]
            if listed:
                versions = [{"groupVersion": "jobset.x-k8s.io/v1alpha2", "version": "v1alpha2"}]
                groups.append({"name": "jobset.x-k8s.io", "versions": versions})
            return {"groups": groups}, []
        if path == "/api/v1":
            return {"groupVersion": "v1", "resources": []}, []
        if path == "/apis/apiextensions.k8s.io/v1":
            crds = {"name": "customresourcedefinitions", "kind": "CustomResourceDefinition"}
            return {"groupVersion": path[6:], "resources": [crds | {"namespaced": False}]}, []
        if path == "/apis/jobset.x-k8s.io/v1alpha2":
            jobsets = {"name": "jobsets", "kind": "JobSet", "namespaced": True}
            return {"groupVersion": path[6:], "resources": [jobsets]}, []
        if path.startswith("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"):
            return CRD, []  # the apply
        raise AssertionError(f"unexpected {method} {path}")


def test_served_kind_is_every_served_version() -> None:
    assert served_kind(CRD) == {("jobset.x-k8s.io/v1alpha2", "JobSet")}


def test_apply_crds_waits_until_discovery_lists_the_kinds() -> None:
    api = LateDiscovery(listed_from=3)
    api.refresh()  # the client knew the server before the CRD was applied
    api.apply_crds([CRD])
    assert api.serves("jobset.x-k8s.io/v1alpha2", "JobSet")
    assert api.discovery_reads == 4  # the three without the group, then the one with it


def test_apply_crds_gives_up_at_its_deadline_naming_the_missing_kinds() -> None:
    api = LateDiscovery(listed_from=None)
    with pytest.raises(ApiError) as raised:
        api.apply_crds([CRD], timeout=0.0)
    assert "not in discovery" in raised.value.message
    assert "('jobset.x-k8s.io/v1alpha2', 'JobSet')" in raised.value.message
