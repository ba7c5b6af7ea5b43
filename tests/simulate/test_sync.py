"""What the simulation waits for (generator/simulate/sync.py): a pod is undecided until a
scheduler that runs here has looked at it; one asking for a scheduler that does not run here
(Volcano's) is not waited for, and its row says which scheduler it asked for. A pod made again
after a held-back gang waits for the quota controller however long a busy machine makes it."""

from __future__ import annotations

from typing import Any

import pytest

from generator.controlplane.api import ApiError
from generator.simulate import sync as simrun
from generator.simulate.pods import _unschedulable
from generator.simulate.sync import _behind, _create_again, _undecided

RUNNING = frozenset({"default-scheduler", "accel-packing"})


def pod(scheduler: str | None = None, **status: Any) -> dict[str, Any]:
    spec = {"schedulerName": scheduler} if scheduler else {}
    return {"spec": spec, "status": {"phase": "Pending", **status}}


def test_a_pending_pod_no_scheduler_has_seen_is_undecided_if_its_scheduler_runs() -> None:
    assert _undecided(pod())
    assert _undecided(pod("accel-packing"), RUNNING)
    assert _undecided(pod(), RUNNING)  # no name: the default scheduler's
    # Volcano's scheduler does not run here: nobody will look at it.
    assert not _undecided(pod("volcano"), RUNNING)
    assert _undecided(pod("volcano"))  # without the list, every pod is waited for
    seen = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    assert not _undecided(pod(conditions=seen), RUNNING)
    assert not _undecided({"spec": {"nodeName": "n1"}, "status": {"phase": "Pending"}}, RUNNING)
    assert not _undecided({"spec": {}, "status": {"phase": "Running"}}, RUNNING)


def test_a_pod_no_scheduler_looked_at_names_the_scheduler_it_asked_for() -> None:
    assert _unschedulable(pod("volcano")) == "not scheduled: it asks for scheduler 'volcano'"
    assert _unschedulable(pod()) == "not scheduled"
    refused = {"conditions": [{"type": "PodScheduled", "status": "False", "message": "0/3 nodes"}]}
    assert _unschedulable(pod("volcano", **refused)) == "0/3 nodes"


QUOTA = 'pods "w-0" is forbidden: exceeded quota: team, requested: requests.nvidia.com/gpu=2'


class Refusing:
    """An API server whose quota admission refuses the first `refusals` creations."""

    def __init__(self, refusals: int, error: ApiError | None = None) -> None:
        self.refusals = refusals
        self.error = error or ApiError(403, "Forbidden", QUOTA)
        self.created: list[str] = []
        self.tries = 0

    def create(self, obj: dict[str, Any]) -> None:
        self.tries += 1
        if self.tries <= self.refusals:
            raise self.error
        self.created.append(obj["metadata"]["name"])


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w-0"}, "spec": {}}


def test_a_pod_made_again_is_retried_while_the_quota_still_counts_the_deleted_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(simrun, "POLL", 0)
    api = Refusing(refusals=3)
    _create_again(api, POD)  # type: ignore[arg-type]
    assert (api.tries, api.created) == (4, ["w-0"])


def test_a_refusal_other_than_quota_is_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(simrun, "POLL", 0)
    for error in (ApiError(403, "Forbidden", "violates PodSecurity"), ApiError(422, "X", QUOTA)):
        api = Refusing(refusals=1, error=error)
        with pytest.raises(ApiError) as raised:
            _create_again(api, POD)  # type: ignore[arg-type]
        assert raised.value is error and api.tries == 1


def test_a_quota_that_never_frees_says_what_it_still_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bound is the control plane's settle bound, read when the wait starts (here made
    negative so that the first refusal is past it)."""
    monkeypatch.setattr(simrun, "POLL", 0)
    monkeypatch.setattr(simrun, "SETTLE_TIMEOUT", -1.0)
    with pytest.raises(ApiError) as raised:
        _create_again(Refusing(refusals=10**6), POD)  # type: ignore[arg-type]
    assert raised.value.reason == "Timeout"
    assert raised.value.message == (
        f"simulation: pod w-0 made again not reached after -1 s; the quota still says: {QUOTA}"
    )


def test_the_waits_for_controllers_share_the_settle_bound() -> None:
    """A Job's first pods, a gang's pods made again and what the add-on controllers make are
    waited for as long as the cluster is waited for to settle: a shorter bound made the outcome
    depend on the machine's load."""
    assert simrun.CREATE_TIMEOUT == simrun.MADE_TIMEOUT == simrun.SETTLE_TIMEOUT == 120.0


def owner(kind: str, generation: int = 2, want: int = 3, **status: Any) -> dict[str, Any]:
    return {
        "kind": kind,
        "metadata": {"name": "svc", "generation": generation},
        "spec": {"replicas": want},
        "status": status,
    }


def test_a_controller_that_has_not_seen_the_latest_spec_is_behind() -> None:
    for kind in ("Deployment", "ReplicaSet"):
        assert _behind(owner(kind))  # no status yet
        assert _behind(owner(kind, observedGeneration=1, replicas=3))
        assert not _behind(owner(kind, observedGeneration=2, replicas=3))
        assert not _behind(owner(kind, observedGeneration=3, replicas=3))


def test_a_replicaset_without_its_pods_is_behind_until_it_says_why() -> None:
    """The ReplicaSet controller records the generation before the pods it just made."""
    assert _behind(owner("ReplicaSet", observedGeneration=2, replicas=2))
    assert _behind(owner("ReplicaSet", observedGeneration=2, replicas=4))  # scaling down
    assert _behind(owner("ReplicaSet", observedGeneration=2))
    refused = {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate"}
    assert not _behind(owner("ReplicaSet", observedGeneration=2, replicas=2, conditions=[refused]))
    cleared = {**refused, "status": "False"}
    assert _behind(owner("ReplicaSet", observedGeneration=2, replicas=2, conditions=[cleared]))
    other = {**refused, "type": "Progressing"}
    assert _behind(owner("ReplicaSet", observedGeneration=2, replicas=2, conditions=[other]))
    # A Deployment's replica count is its ReplicaSets' business (rollouts surge past it).
    assert not _behind(owner("Deployment", observedGeneration=2, replicas=4))
    # Defaults: one replica, generation 1.
    bare = {"kind": "ReplicaSet", "metadata": {"name": "x"}, "status": {"observedGeneration": 1}}
    assert _behind(bare)
    assert not _behind({**bare, "status": {"observedGeneration": 1, "replicas": 1}})
