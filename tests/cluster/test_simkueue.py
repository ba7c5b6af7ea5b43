"""What the simulation takes from Kueue's chart and reads back from Kueue
(generator/cluster/simkueue.py), on hand-written objects. Kueue running on the control plane:
tests/cluster/test_simulate.py."""

from __future__ import annotations

import yaml

from generator.cluster.launcher import SIM_LABEL
from generator.cluster.simkueue import (
    KueueSetup,
    admission,
    endpoint_slice,
    local_config,
    pending,
)

CHART_CONFIG = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health: {healthProbeBindAddress: ':8081'}
metrics: {bindAddress: ':8443'}
webhook: {port: 9443}
leaderElection: {leaderElect: true, resourceName: c1f6bfd2.kueue.x-k8s.io}
internalCertManagement: {enable: true, webhookServiceName: kueue-webhook-service,
  webhookSecretName: kueue-webhook-server-cert}
integrations: {frameworks: [batch/job]}
"""


def test_the_local_configuration_changes_only_listeners_certificates_and_election() -> None:
    got = local_config(
        CHART_CONFIG, host="192.0.2.2", webhook_port=31000, health_port=31001, cert_dir="/c"
    )
    chart = yaml.safe_load(CHART_CONFIG)
    assert got == {
        **chart,
        "health": {"healthProbeBindAddress": "127.0.0.1:31001"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"port": 31000, "host": "192.0.2.2", "certDir": "/c"},
        "leaderElection": {"leaderElect": False, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
    }
    # The chart's certificate rotation stays on: Kueue writes and injects its own.
    assert got["internalCertManagement"] == chart["internalCertManagement"]


def test_the_webhook_service_gets_an_endpoint_slice_at_the_process() -> None:
    service = {
        "kind": "Service",
        "metadata": {"name": "kueue-webhook-service", "namespace": "kueue-system"},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 9443}]},
    }
    assert endpoint_slice(service, "192.0.2.2", 31000) == {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": "kueue-webhook-service-sim",
            "namespace": "kueue-system",
            "labels": {"kubernetes.io/service-name": "kueue-webhook-service", SIM_LABEL: "true"},
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["192.0.2.2"], "conditions": {"ready": True}}],
        "ports": [{"name": "https", "port": 31000, "protocol": "TCP"}],
    }


def test_the_setup_keeps_the_config_and_all_but_what_the_process_stands_in_for() -> None:
    objs = [
        {"kind": "ConfigMap", "data": {"controller_manager_config.yaml": CHART_CONFIG}},
        {"kind": "Deployment", "metadata": {"name": "m"}},
        {"kind": "APIService", "metadata": {"name": "v"}},
        {"kind": "Service", "metadata": {"name": "s"}},
        {"kind": "ValidatingWebhookConfiguration", "metadata": {"name": "w"}},
    ]
    setup = KueueSetup.from_chart(objs)
    assert setup is not None
    assert setup.config == CHART_CONFIG
    assert [d["kind"] for d in setup.docs()] == ["Service", "ValidatingWebhookConfiguration"]
    assert setup.integrations() == ["batch/job"]
    assert KueueSetup.from_chart(objs[1:]) is None


def workload(
    conditions: list[dict[str, str]], adm: dict[str, object] | None = None
) -> dict[str, object]:
    status: dict[str, object] = {"conditions": conditions}
    if adm is not None:
        status["admission"] = adm
    return {"status": status}


ADMITTED = {"type": "Admitted", "status": "True"}
SHORT = {
    "type": "QuotaReserved",
    "status": "False",
    "reason": "Pending",
    "message": "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu",
}


def test_an_admitted_workload_names_its_queue_and_flavors() -> None:
    adm = {
        "clusterQueue": "team-ml",
        "podSetAssignments": [
            {"flavors": {"nvidia.com/gpu": "nvidia-a100", "cpu": "general"}},
            {"flavors": {"nvidia.com/gpu": "nvidia-a100"}},
        ],
    }
    assert admission(workload([ADMITTED], adm)) == "team-ml (general, nvidia-a100)"
    assert admission(workload([ADMITTED], {"clusterQueue": "team-ml"})) == "team-ml"
    assert pending(workload([ADMITTED, SHORT], adm)) == ""


def test_a_workload_kueue_tried_and_did_not_admit_gives_kueues_reason() -> None:
    assert pending(workload([SHORT])) == SHORT["message"]
    assert admission(workload([SHORT])) == ""
    assert admission(workload([{**ADMITTED, "status": "False"}], {"clusterQueue": "q"})) == ""
    # Not tried yet, or reserved: no reason.
    assert pending(workload([])) == ""
    assert pending(workload([{**SHORT, "status": "True"}])) == ""
    assert pending(workload([{**SHORT, "message": ""}])) == ""
