"""What the simulation takes from an add-on chart to run its controller manager
(generator/cluster/simcontrollers.py), on hand-written objects. The managers running on the
control plane: tests/cluster/test_simulate.py."""

from __future__ import annotations

import pytest
import yaml

from generator.cluster.launcher import SIM_LABEL, ControlPlaneError
from generator.cluster.simcontrollers import (
    ControllerSetup,
    endpoint_address,
    endpoint_slice,
    host_address,
    local_config,
    webhook_service,
)

CHART_CONFIG = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health: {healthProbeBindAddress: ':8081', readinessEndpointName: readyz}
metrics: {bindAddress: ':8443', enableClusterQueueResources: true}
webhook: {port: 9443, certDir: /tmp/k8s-webhook-server/serving-certs}
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
        # Every other field of each section stays the chart's.
        "health": {"healthProbeBindAddress": "127.0.0.1:31001", "readinessEndpointName": "readyz"},
        "metrics": {"bindAddress": "0", "enableClusterQueueResources": True},
        "webhook": {"port": 31000, "host": "192.0.2.2", "certDir": "/c"},
        "leaderElection": {"leaderElect": False, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
    }
    # The chart's certificate rotation stays on: Kueue writes and injects its own.
    assert got["internalCertManagement"] == chart["internalCertManagement"]


def test_an_unnamed_service_port_gives_an_unnamed_endpoint_port() -> None:
    service = {
        "kind": "Service",
        "metadata": {"name": "s", "namespace": "n"},
        "spec": {"ports": [{"port": 443}]},
    }
    assert endpoint_slice(service, "192.0.2.2", 1)["ports"] == [
        {"name": "", "port": 1, "protocol": "TCP"}
    ]


def test_the_endpoint_address_is_the_first_an_endpoint_may_have() -> None:
    assert endpoint_address(["127.0.0.1", "169.254.3.4", "0.0.0.0", "192.0.2.2", "10.1.1.1"]) == (
        "192.0.2.2"
    )
    with pytest.raises(ControlPlaneError, match=r"has none \(127.0.0.1, 169.254.3.4\)"):
        endpoint_address(["127.0.0.1", "169.254.3.4"])
    # This machine's own: simulate's add-on controllers need one (docs/simulation.md).
    assert endpoint_address([host_address()]) == host_address()


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


def test_a_setup_keeps_the_config_the_crd_groups_and_the_certificate_secret() -> None:
    config = (
        "internalCertManagement: {enable: true, webhookSecretName: jobset-webhook-server-cert}\n"
    )
    objs = [
        {"kind": "ConfigMap", "data": {"controller_manager_config.yaml": config}},
        {"kind": "Deployment", "metadata": {"name": "m"}},
        {"kind": "CustomResourceDefinition", "spec": {"group": "jobset.x-k8s.io"}},
        {"kind": "Secret", "metadata": {"name": "jobset-webhook-server-cert"}},
    ]
    setup = ControllerSetup.from_chart("jobset", "jobset-system", objs)
    assert setup is not None
    assert [d["kind"] for d in setup.docs()] == ["CustomResourceDefinition", "Secret"]
    assert setup.groups() == {"jobset.x-k8s.io"}
    assert setup.cert_secret() == "jobset-webhook-server-cert"
    assert setup.args == ()
    # A setup compares by content: the same chart twice does not restart the manager.
    assert ControllerSetup.from_chart("jobset", "jobset-system", objs) == setup
    assert ControllerSetup.from_chart("jobset", "jobset-system", objs[1:]) is None


def test_the_webhook_service_is_the_one_the_first_webhook_calls() -> None:
    def service(name: str, ns: str) -> dict[str, object]:
        return {"kind": "Service", "metadata": {"name": name, "namespace": ns}}

    hook = {
        "kind": "MutatingWebhookConfiguration",
        "webhooks": [{"clientConfig": {"service": {"name": "hooks", "namespace": "b"}}}],
    }
    docs = [service("metrics", "b"), service("hooks", "a"), hook, service("hooks", "b")]
    assert webhook_service(docs) == service("hooks", "b")
