"""The add-on check (generator/policy/platform.py): DEP001, a team object that needs a cluster
add-on that values neither render nor declare. Each case is one environment of a values tree made
for it, with the whole finding written out; the add-on Applications the fleet renders are tested
in tests/builders/test_platform.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.findings import Finding, Location, Severity
from generator.policy.platform import missing_addons, needs, unsupported_minor
from generator.values import loader as values
from generator.values.model import FleetView
from generator.vocab import addons
from tests.fixtures import PROD_FLEET, Obj, context, tree

# A batch Job and a Volcano Job (line 9 sets its kind) of team ml, on the default NVIDIA pools.
TEAM = """\
quota: {nvidia: 4}
jobs:
  plain:
    vendor: nvidia
    devices: 1
    images: {nvidia: r/t:1}
  gang:
    vendor: nvidia
    kind: volcano
    images: {nvidia: r/t:1}
    tasks:
      workers: {vendor: nvidia, devices: 1, replicas: 2}
"""
# A service routed through a Gateway (line 5 chooses it).
ROUTED = """\
quota: {nvidia: 4}
services:
  web:
    images: {nvidia: r/w:1}
    routing: gateway
    gateway: {parentRefs: [{name: edge, namespace: gateways}]}
    tracks:
      nvidia: {replicas: 1}
"""
VOLCANO_HINT = (
    "declare it: platform.volcano.provided: fleet in values/fleet.yaml (the fleet installs "
    "Volcano from its upstream chart), or platform.volcano.provided: site when the cluster "
    "already runs it, or scheduling.backend: volcano; or write the workload without it"
)


def prod(tmp_path: Path, team: str, fleet: str = "") -> FleetView:
    loaded = values.load(tree(tmp_path, {"teams/ml.yaml": team}, fleet=PROD_FLEET + fleet))
    return loaded.envs["prod"]


def test_a_volcano_job_under_the_quota_backend_is_reported_at_its_kind(tmp_path: Path) -> None:
    """Only the Volcano Job: the batch Job beside it needs nothing; both reasons in one finding."""
    view = prod(tmp_path, TEAM)
    assert list(missing_addons(context(view))) == [
        Finding(
            "DEP001",
            "Job ml/gang needs Volcano (its kind Job of batch.volcano.sh/v1alpha1 is served by "
            "Volcano; it names the scheduler 'volcano'), which this environment neither renders "
            "nor declares: on a cluster without it Argo CD's dry-run fails the whole team-ml "
            "Application, so none of its objects are applied",
            Location("values/teams/ml.yaml", 9, 11),
            "$.jobs.gang.kind",
            VOLCANO_HINT,
            Severity.ERROR,
        )
    ]


@pytest.mark.parametrize(
    "fleet",
    [
        "platform:\n  volcano: {provided: fleet}\n",
        "platform:\n  volcano: {provided: site}\n",
        "scheduling: {backend: volcano}\n",
    ],
)
def test_volcano_rendered_or_declared_or_the_backend_satisfies_it(
    fleet: str, tmp_path: Path
) -> None:
    assert list(missing_addons(context(prod(tmp_path, TEAM, fleet)))) == []


def test_another_backend_does_not_declare_volcano(tmp_path: Path) -> None:
    found = list(missing_addons(context(prod(tmp_path, TEAM, "scheduling: {backend: kueue}\n"))))
    assert [(f.code, f.location.line) for f in found] == [("DEP001", 9)]


def test_a_gateway_route_needs_the_gateway_api_declared(tmp_path: Path) -> None:
    """Reported at the service's `routing` (no chart the fleet renders: the hint says `site`
    only); once declared, nothing."""
    view = prod(tmp_path, ROUTED)
    assert list(missing_addons(context(view))) == [
        Finding(
            "DEP001",
            "HTTPRoute ml/web needs Gateway API (its kind HTTPRoute of "
            "gateway.networking.k8s.io/v1 is served by Gateway API), which this environment "
            "neither renders nor declares: on a cluster without it Argo CD's dry-run fails the "
            "whole team-ml Application, so none of its objects are applied",
            Location("values/teams/ml.yaml", 5, 14),
            "$.services.web.routing",
            "declare it: platform.gatewayAPI.provided: site in values/fleet.yaml once the cluster "
            "runs Gateway API; or write the workload without it",
            Severity.ERROR,
        )
    ]
    declared = "platform:\n  gatewayAPI: {provided: site}\n"
    assert list(missing_addons(context(prod(tmp_path / "declared", ROUTED, declared)))) == []


def test_an_istio_route_needs_istio_not_the_gateway_api(tmp_path: Path) -> None:
    team = ROUTED.replace(
        "routing: gateway\n    gateway: {parentRefs: [{name: edge, namespace: gateways}]}",
        "routing: istio\n    istio: {hosts: [web.example.com]}",
    )
    gateway_only = "platform:\n  gatewayAPI: {provided: site}\n"
    found = list(missing_addons(context(prod(tmp_path, team, gateway_only))))
    assert [(f.code, f.message.split(" (")[0]) for f in found] == [
        ("DEP001", "VirtualService ml/web needs Istio")
    ]
    declared = "platform:\n  istio: {provided: site}\n"
    assert list(missing_addons(context(prod(tmp_path / "declared", team, declared)))) == []


# ---- needs: what an object asks of the cluster, read from the object -----------------------


def test_needs_reads_groups_and_scheduler_names_where_each_kind_keeps_them() -> None:
    volcano = addons.BY_KEY["volcano"]
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "spec": {"template": {"spec": {"schedulerName": "volcano", "containers": []}}},
    }
    assert list(needs(deployment)) == [
        (volcano, "it names the scheduler 'volcano'", "$.spec.template.spec.schedulerName")
    ]
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "spec": {}}
    assert [(a.key, p) for a, _, p in needs(queue)] == [("volcano", "$.apiVersion")]
    core: list[Obj] = [
        {"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": {"spec": {}}}},
        {"apiVersion": "v1", "kind": "Pod", "spec": {"schedulerName": "default-scheduler"}},
        # a group that only ends like Volcano's is not Volcano's
        {"apiVersion": "notvolcano.sh/v1", "kind": "X"},
    ]
    assert [list(needs(o)) for o in core] == [[], [], []]


def test_addon_lookups() -> None:
    assert addons.addon_for_group("kueue.x-k8s.io") is addons.BY_KEY["kueue"]
    assert addons.addon_for_group("nfd.k8s-sigs.io") is addons.BY_KEY["nfd"]
    assert addons.addon_for_group("topology.volcano.sh") is addons.BY_KEY["volcano"]
    assert addons.addon_for_group("apps") is None
    assert addons.addon_for_scheduler("volcano") is addons.BY_KEY["volcano"]
    assert addons.addon_for_scheduler("default-scheduler") is None


# A TrainJob (line 5 sets its kind) under Kueue, whose Trainer the fleet installs.
TRAINJOB = """\
quota: {nvidia: 4}
jobs:
  tune:
    vendor: nvidia
    kind: trainjob
    images: {nvidia: r/t:1}
"""
KUEUE_TRAINER = "scheduling: {backend: kueue}\nplatform:\n  trainer: {provided: fleet}\n"


def test_a_trainjob_needs_jobset_too_because_trainer_runs_it_as_a_jobset(tmp_path: Path) -> None:
    view = prod(tmp_path, TRAINJOB, KUEUE_TRAINER)
    (finding,) = missing_addons(context(view))
    assert (finding.code, finding.location, finding.path) == (
        "DEP001",
        Location("values/teams/ml.yaml", 5, 11),
        "$.jobs.tune.kind",
    )
    assert finding.message.startswith(
        "TrainJob ml/tune needs JobSet (Kubeflow Trainer runs its kind TrainJob as JobSet's "
        "objects), which this environment neither renders nor declares"
    )


def test_a_trainjob_with_trainer_and_jobset_declared_needs_nothing_more(tmp_path: Path) -> None:
    fleet = KUEUE_TRAINER + "  jobset: {provided: site}\n"
    assert list(missing_addons(context(prod(tmp_path, TRAINJOB, fleet)))) == []
    # and without either, a finding for each
    bare = "scheduling: {backend: kueue}\n"
    found = missing_addons(context(prod(tmp_path / "bare", TRAINJOB, bare)))
    assert [f.message.split(" (")[0] for f in found] == [
        "TrainJob ml/tune needs Kubeflow Trainer",
        "TrainJob ml/tune needs JobSet",
    ]


def test_an_istio_route_is_reported_at_the_services_routing(tmp_path: Path) -> None:
    """Like the Gateway API's HTTPRoute, Istio's VirtualService is chosen by the service's
    `routing` (line 5): the finding points there, with its JSON path."""
    team = ROUTED.replace(
        "routing: gateway\n    gateway: {parentRefs: [{name: edge, namespace: gateways}]}",
        "routing: istio\n    istio: {hosts: [web.example.com]}",
    )
    view = prod(tmp_path, team, "platform:\n  gatewayAPI: {provided: site}\n")
    assert list(missing_addons(context(view))) == [
        Finding(
            "DEP001",
            "VirtualService ml/web needs Istio (its kind VirtualService of networking.istio.io/v1 "
            "is served by Istio), which this environment neither renders nor declares: on a "
            "cluster without it Argo CD's dry-run fails the whole team-ml Application, so none "
            "of its objects are applied",
            Location("values/teams/ml.yaml", 5, 14),
            "$.services.web.routing",
            "declare it: platform.istio.provided: site in values/fleet.yaml once the cluster "
            "runs Istio; or write the workload without it",
            Severity.ERROR,
        )
    ]


# A JobSet (its kind on line 4), under Kueue, which declares Kueue but not JobSet.
JOBSET = """\
quota: {nvidia: 4}
jobs:
  gang:
    kind: jobset
    images: {nvidia: r/t:1}
    tasks:
      workers: {vendor: nvidia, devices: 1, replicas: 2}
"""


def test_a_kind_no_values_line_chooses_is_reported_at_its_workload(tmp_path: Path) -> None:
    """A JobSet is neither a Job's kind nor a service's routing: the finding points at the job
    (`gang:`, line 3) with no JSON path, and the hint names the chart the fleet can install."""
    view = prod(tmp_path, JOBSET, "scheduling: {backend: kueue}\n")
    assert list(missing_addons(context(view))) == [
        Finding(
            "DEP001",
            "JobSet ml/gang needs JobSet (its kind JobSet of jobset.x-k8s.io/v1alpha2 is served "
            "by JobSet), which this environment neither renders nor declares: on a cluster "
            "without it Argo CD's dry-run fails the whole team-ml Application, so none of its "
            "objects are applied",
            Location("values/teams/ml.yaml", 3, 3),
            "",
            "declare it: platform.jobset.provided: fleet in values/fleet.yaml (the fleet "
            "installs JobSet from its upstream chart), or platform.jobset.provided: site when "
            "the cluster already runs it; or write the workload without it",
            Severity.ERROR,
        )
    ]


def test_needs_points_at_what_asks_for_each_addon() -> None:
    """A Volcano Job names its scheduler in its spec, not in a pod template; a TrainJob needs
    Trainer by its group and JobSet through Trainer, both read from its apiVersion."""
    volcano, trainer, jobset = (addons.BY_KEY[k] for k in ("volcano", "trainer", "jobset"))
    gang = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "spec": {"schedulerName": "volcano", "tasks": []},
    }
    assert list(needs(gang)) == [
        (
            volcano,
            "its kind Job of batch.volcano.sh/v1alpha1 is served by Volcano",
            "$.apiVersion",
        ),
        (volcano, "it names the scheduler 'volcano'", "$.spec.schedulerName"),
    ]
    tune = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "spec": {}}
    assert list(needs(tune)) == [
        (
            trainer,
            "its kind TrainJob of trainer.kubeflow.org/v1alpha1 is served by Kubeflow Trainer",
            "$.apiVersion",
        ),
        (jobset, "Kubeflow Trainer runs its kind TrainJob as JobSet's objects", "$.apiVersion"),
    ]


# ---- KVER003: an add-on the fleet renders on a minor its upstream does not support -----------


@pytest.mark.parametrize(
    ("version", "platform", "found"),
    [
        # Kueue v0.17.0 requires Kubernetes 1.29 or newer (its README).
        ("1.28", "kueue", ["Kueue 0.17.0", "Kubernetes 1.29 and newer", "is 1.28"]),
        ("1.29", "kueue", []),
        # JobSet v0.11.1's chart asks for Kubernetes >= 1.27; NFD v0.19.0 for v1.24 and later.
        ("1.26", "jobset", ["JobSet 0.11.1", "Kubernetes 1.27 and newer", "is 1.26"]),
        ("1.27", "jobset", []),
        ("1.25", "nfd", []),
    ],
)
def test_an_add_on_on_a_minor_its_upstream_does_not_support_is_found_at_the_version(
    tmp_path: Path, version: str, platform: str, found: list[str]
) -> None:
    fleet = PROD_FLEET.replace('"1.33"', f'"{version}"') + (
        f"platform:\n  {platform}: {{provided: fleet}}\n"
    )
    loaded = values.load(tree(tmp_path, fleet=fleet))
    got = list(unsupported_minor(context(loaded.envs["prod"])))
    if not found:
        assert got == []
        return
    (finding,) = got
    assert (finding.code, str(finding.location), finding.path) == (
        "KVER003",
        "values/fleet.yaml:2:20",
        "$.kubernetesVersion",
    )
    for words in found:
        assert words in finding.message
    minimum = found[1].split()[1]
    assert finding.hint == (
        f"set kubernetesVersion to {minimum} or newer, or platform.{platform}.provided: site where "
        f"the cluster runs a {found[0].split()[0]} that supports its minor"
    )


def test_an_add_on_the_site_provides_is_not_held_to_the_pinned_versions_minors(
    tmp_path: Path,
) -> None:
    fleet = PROD_FLEET.replace('"1.33"', '"1.28"') + "platform:\n  kueue: {provided: site}\n"
    loaded = values.load(tree(tmp_path, fleet=fleet))
    assert list(unsupported_minor(context(loaded.envs["prod"]))) == []
