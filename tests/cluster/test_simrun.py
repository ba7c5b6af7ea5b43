"""What the simulation waits for (generator/cluster/simrun.py): a pod is undecided until a
scheduler that runs here has looked at it; one asking for a scheduler that does not run here
(Volcano's) is not waited for, and its row says which scheduler it asked for."""

from __future__ import annotations

from typing import Any

from generator.cluster.simpods import _unschedulable
from generator.cluster.simrun import _undecided

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
    seen = {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
    assert not _undecided(pod(**seen), RUNNING)
    assert not _undecided({"spec": {"nodeName": "n1"}, "status": {"phase": "Pending"}}, RUNNING)
    assert not _undecided({"spec": {}, "status": {"phase": "Running"}}, RUNNING)


def test_a_pod_no_scheduler_looked_at_names_the_scheduler_it_asked_for() -> None:
    assert _unschedulable(pod("volcano")) == "not scheduled: it asks for scheduler 'volcano'"
    assert _unschedulable(pod()) == "not scheduled"
    refused = {"conditions": [{"type": "PodScheduled", "status": "False", "message": "0/3 nodes"}]}
    assert _unschedulable(pod("volcano", **refused)) == "0/3 nodes"
