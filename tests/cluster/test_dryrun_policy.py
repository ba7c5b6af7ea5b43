"""The dry-run's wait for the security profiles' admission policy (generator/cluster/dryrun.py
await_policy), on an API client that answers as told: no control plane. The policy on the real
kube-apiserver is tests/cluster/test_cluster.py's."""

from __future__ import annotations

from typing import Any

import pytest

from generator.cluster import dryrun
from generator.controlplane.api import ApiError
from generator.toolchain.errors import ToolError

POLICY = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy"}
BINDING = {**POLICY, "kind": "ValidatingAdmissionPolicyBinding"}
BOUND = {"metadata": {"name": "ml", "labels": {"accel-gitops.io/pod-security": "baseline"}}}
OTHER = {"metadata": {"name": "web", "labels": {"pod-security.kubernetes.io/enforce": "baseline"}}}
DENIED = (
    'pods "policy-probe" is forbidden: ValidatingAdmissionPolicy '
    "'accel-gitops-security-profiles' with binding 'accel-gitops-security-profiles' denied request"
)


class Api:
    """Admits the probe `admitted` times, then refuses it with `message`."""

    def __init__(self, admitted: int, message: str = DENIED) -> None:
        self.admitted = admitted
        self.message = message
        self.probes: list[dict[str, Any]] = []

    def create(self, obj: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        assert dry_run
        self.probes.append(obj)
        if len(self.probes) > self.admitted:
            raise ApiError(403, "Forbidden", self.message)
        return obj


def test_the_wait_ends_when_the_policy_refuses_a_probe_in_a_bound_namespace() -> None:
    api = Api(admitted=2)
    dryrun.await_policy(api, [OTHER, BOUND], [POLICY, BINDING])  # type: ignore[arg-type]
    assert len(api.probes) == 3
    assert api.probes[0]["metadata"] == {"name": "policy-probe", "namespace": "ml"}
    assert api.probes[0]["spec"]["hostIPC"] is True


def test_a_policy_the_server_never_enforces_stops_the_run() -> None:
    """Refused by something else (Pod Security), or admitted: not the policy's verdict."""
    api = Api(admitted=0, message='pods "policy-probe" is forbidden: violates PodSecurity')
    with pytest.raises(ToolError) as raised:
        dryrun.await_policy(api, [BOUND], [POLICY, BINDING], timeout=0.3)  # type: ignore[arg-type]
    assert str(raised.value) == (
        "the API server did not enforce accel-gitops-security-profiles within 0.3 s"
    )
    assert len(api.probes) >= 2


@pytest.mark.parametrize(
    ("namespaces", "policies"),
    [([BOUND], [POLICY]), ([OTHER], [POLICY, BINDING]), ([BOUND], [])],
)
def test_nothing_to_wait_for_without_a_binding_or_a_bound_namespace(
    namespaces: list[dict[str, Any]], policies: list[dict[str, Any]]
) -> None:
    api = Api(admitted=0)
    dryrun.await_policy(api, namespaces, policies)  # type: ignore[arg-type]
    assert api.probes == []
