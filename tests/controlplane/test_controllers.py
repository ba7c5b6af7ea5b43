"""What the simulation takes from an add-on chart to run its controller manager
(generator/controlplane/controllers.py), on hand-written objects. The managers running on the
control plane: tests/simulate/test_run.py."""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from generator.controlplane import controllers
from generator.controlplane.controllers import (
    ControllerSetup,
    _ca_injected,
    _cert_dir,
    _in_release,
    _listening,
    _mount_secret,
    _unhook,
    _wrap,
    endpoint_address,
    endpoint_slice,
    host_address,
    local_config,
    webhook_service,
)
from generator.controlplane.launcher import ControlPlaneError
from tests.fixtures import KUEUE_CHART_CONFIG


def test_the_local_configuration_changes_only_listeners_certificates_and_election() -> None:
    got = local_config(
        KUEUE_CHART_CONFIG, host="192.0.2.2", webhook_port=31000, health_port=31001, cert_dir="/c"
    )
    chart = yaml.safe_load(KUEUE_CHART_CONFIG)
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


def test_the_endpoint_port_is_named_after_the_service_port_the_webhooks_call() -> None:
    service = {
        "kind": "Service",
        "metadata": {"name": "s", "namespace": "n"},
        "spec": {
            "ports": [
                {"name": "monitoring-port", "port": 8443},
                {"name": "webhook-server", "port": 443},
            ]
        },
    }
    assert endpoint_slice(service, "192.0.2.2", 1)["ports"][0]["name"] == "webhook-server"
    assert endpoint_slice(service, "192.0.2.2", 1, 8443)["ports"][0]["name"] == "monitoring-port"
    # none of its ports the one called: the first
    assert endpoint_slice(service, "192.0.2.2", 1, 9000)["ports"][0]["name"] == "monitoring-port"


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
            "labels": {
                "kubernetes.io/service-name": "kueue-webhook-service",
                "accel-gitops.io/simulation": "true",
            },
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
    def service(name: str, ns: str) -> dict[str, Any]:
        return {"kind": "Service", "metadata": {"name": name, "namespace": ns}}

    hook: dict[str, Any] = {
        "kind": "MutatingWebhookConfiguration",
        "webhooks": [{"clientConfig": {"service": {"name": "hooks", "namespace": "b"}}}],
    }
    docs = [service("metrics", "b"), service("hooks", "a"), hook, service("hooks", "b")]
    assert webhook_service(docs) == (service("hooks", "b"), 443)
    hook["webhooks"][0]["clientConfig"]["service"]["port"] = 8443
    assert webhook_service(docs) == (service("hooks", "b"), 8443)


# ---- the helpers around a running manager, on a stand-in API client ----------------------------


class FakeApi:
    """The calls the helpers make of an ApiClient, on objects held in memory."""

    def __init__(self, objects: dict[tuple[str, str, str, str], dict[str, object]]) -> None:
        self.objects = objects
        self.deleted: list[tuple[str, str, str]] = []
        self.patched: list[tuple[str, dict[str, object]]] = []

    def get(self, api: str, kind: str, ns: str, name: str) -> dict[str, object] | None:
        return self.objects.get((api, kind, ns, name))

    def delete(self, api: str, kind: str, ns: str, name: str) -> None:
        self.deleted.append((kind, ns, name))

    def merge_patch(
        self, api: str, kind: str, ns: str, name: str, patch: dict[str, object]
    ) -> None:
        self.patched.append((name, patch))


HOOK_API = "admissionregistration.k8s.io/v1"
CRD_API = "apiextensions.k8s.io/v1"


def chart_setup(*docs: dict[str, Any], service: str = "lws") -> ControllerSetup:
    config = {"kind": "ConfigMap", "data": {"controller_manager_config.yaml": "kind: C\n"}}
    setup = ControllerSetup.from_chart(service, f"{service}-system", [config, *docs])
    assert setup is not None
    return setup


def hooks(kind: str, name: str, *bundles: str) -> dict[str, object]:
    return {
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": [{"clientConfig": {"caBundle": b} if b else {}} for b in bundles],
    }


def test_the_ca_is_injected_only_when_every_webhook_of_every_configuration_has_one() -> None:
    setup = chart_setup(
        hooks("MutatingWebhookConfiguration", "m", ""),
        hooks("ValidatingWebhookConfiguration", "v", ""),
        {"kind": "Service", "metadata": {"name": "s", "namespace": "lws-system"}},
    )
    live = {
        (HOOK_API, "MutatingWebhookConfiguration", "", "m"): hooks(
            "MutatingWebhookConfiguration", "m", "Q0E=", "Q0E="
        ),
        (HOOK_API, "ValidatingWebhookConfiguration", "", "v"): hooks(
            "ValidatingWebhookConfiguration", "v", "Q0E=", ""
        ),
    }
    api = FakeApi(live)
    assert not _ca_injected(api, setup)  # type: ignore[arg-type]
    live[(HOOK_API, "ValidatingWebhookConfiguration", "", "v")] = hooks(
        "ValidatingWebhookConfiguration", "v", "Q0E="
    )
    assert _ca_injected(api, setup)  # type: ignore[arg-type]
    # A configuration not on the cluster yet, or with no webhooks, is not injected.
    del live[(HOOK_API, "MutatingWebhookConfiguration", "", "m")]
    assert not _ca_injected(api, setup)  # type: ignore[arg-type]
    live[(HOOK_API, "MutatingWebhookConfiguration", "", "m")] = hooks(
        "MutatingWebhookConfiguration", "m"
    )
    assert not _ca_injected(api, setup)  # type: ignore[arg-type]


def test_the_secret_is_mounted_only_once_the_rotator_filled_every_key(tmp_path: Path) -> None:
    key = ("v1", "Secret", "lws-system", "cert")
    empty: dict[str, object] = {"data": {"tls.crt": "", "tls.key": ""}}
    api = FakeApi({key: empty})
    _mount_secret(api, "lws-system", "cert", tmp_path)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []  # the chart's empty keys: nothing yet
    api.objects[key] = {"data": {"tls.crt": base64.b64encode(b"C").decode(), "tls.key": ""}}
    _mount_secret(api, "lws-system", "cert", tmp_path)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []  # half filled: still nothing
    filled = {
        "tls.crt": base64.b64encode(b"CRT").decode(),
        "tls.key": base64.b64encode(b"K").decode(),
    }
    api.objects[key] = {"data": filled}
    _mount_secret(api, "lws-system", "cert", tmp_path)  # type: ignore[arg-type]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tls.crt", "tls.key"]
    assert (tmp_path / "tls.crt").read_bytes() == b"CRT"
    # No Secret, or no name: nothing changes.
    _mount_secret(api, "lws-system", "", tmp_path)  # type: ignore[arg-type]
    _mount_secret(api, "other", "cert", tmp_path)  # type: ignore[arg-type]
    assert (tmp_path / "tls.key").read_bytes() == b"K"


def test_unhooking_removes_the_charts_webhooks_and_conversion_webhooks_only() -> None:
    crd = {"kind": "CustomResourceDefinition", "metadata": {"name": "a.x"}, "spec": {"group": "x"}}
    plain = {
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "b.x"},
        "spec": {"group": "x"},
    }
    setup = chart_setup(hooks("MutatingWebhookConfiguration", "m", ""), crd, plain)
    api = FakeApi(
        {
            (CRD_API, "CustomResourceDefinition", "", "a.x"): {
                "spec": {"conversion": {"strategy": "Webhook"}}
            },
            (CRD_API, "CustomResourceDefinition", "", "b.x"): {
                "spec": {"conversion": {"strategy": "None"}}
            },
        }
    )
    _unhook(api, setup)  # type: ignore[arg-type]
    assert api.deleted == [("MutatingWebhookConfiguration", "", "m")]
    assert api.patched == [("a.x", {"spec": {"conversion": {"strategy": "None", "webhook": None}}})]


def test_a_manager_with_no_secret_named_uses_its_default_and_others_none() -> None:
    named = "internalCertManagement: {webhookSecretName: mine}\n"
    config = {"kind": "ConfigMap", "data": {"controller_manager_config.yaml": named}}
    setup = ControllerSetup.from_chart("lws", "lws-system", [config])
    assert setup is not None and setup.cert_secret() == "mine"
    for service, default in (
        ("kueue", "kueue-webhook-server-cert"),
        ("jobset", "jobset-webhook-server-cert"),
        ("lws", "lws-webhook-server-cert"),
        ("trainer", ""),
    ):
        assert chart_setup(service=service).cert_secret() == default


def test_something_listening_is_told_from_nothing() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert _listening("127.0.0.1", port)
    assert not _listening("127.0.0.1", port)


def test_a_certificate_folder_is_the_planes_own_and_starts_empty(tmp_path: Path) -> None:
    plane = SimpleNamespace(workdir=tmp_path)
    folder = tmp_path / "jobset-certs"
    folder.mkdir()
    (folder / "tls.crt").write_text("stale")
    assert _cert_dir(plane, "jobset") == folder  # type: ignore[arg-type]
    assert list(folder.iterdir()) == []  # a stale certificate would pass for this run's
    assert _cert_dir(plane, "lws") == tmp_path / "lws-certs"  # type: ignore[arg-type]
    assert (tmp_path / "lws-certs").is_dir()


def test_managers_with_a_fixed_folder_run_in_a_mount_namespace_of_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """JobSet's and Trainer's rotators insist on one folder: each sees its own certificate
    there, mounted from its plane's folder, and the machine's folder stays untouched."""
    fixed = tmp_path / "tmp" / "k8s-webhook-server" / "serving-certs"
    monkeypatch.setattr(controllers, "FIXED_CERT_DIR", fixed)
    assert _wrap("kueue", tmp_path) == [] and _wrap("lws", tmp_path) == []
    assert not fixed.exists()  # made only for a manager that needs it
    for service in ("jobset", "trainer"):
        wrap = _wrap(service, tmp_path / service)
        assert wrap[-2:] == [str(tmp_path / service), str(fixed)]
    assert fixed.is_dir()  # the mount point, with its parents
    # Run for real: two wrapped commands each read their own file at the fixed path.
    for name in ("a", "b"):
        mine = tmp_path / name
        mine.mkdir()
        (mine / "tls.crt").write_text(name)
        argv = [*_wrap("jobset", mine), "cat", str(fixed / "tls.crt")]
        assert subprocess.run(argv, capture_output=True, text=True, check=True).stdout == name
    assert list(fixed.iterdir()) == []


def test_a_manager_not_run_as_root_maps_itself_to_root_in_a_user_namespace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(controllers, "FIXED_CERT_DIR", tmp_path / "fixed")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    wrap = _wrap("jobset", tmp_path)
    assert wrap[1:5] == ["--user", "--map-root-user", "--mount", "--propagation"]
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert _wrap("jobset", tmp_path)[1:3] == ["--mount", "--propagation"]


def test_without_unshare_a_fixed_folder_manager_cannot_run_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(controllers, "FIXED_CERT_DIR", tmp_path / "fixed")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(ControlPlaneError, match=r"trainer's controller manager needs unshare"):
        _wrap("trainer", tmp_path)


def test_each_manager_names_its_certificate_secret_in_its_own_section() -> None:
    def setup(service: str, config: str) -> ControllerSetup:
        return ControllerSetup(service, "ns", config)

    # Trainer v2.2.0: certManagement; the others: internalCertManagement.
    assert setup("trainer", "certManagement: {webhookSecretName: t-cert}\n").cert_secret() == (
        "t-cert"
    )
    assert setup("trainer", "internalCertManagement: {webhookSecretName: x}\n").cert_secret() == ""
    assert setup("jobset", "certManagement: {webhookSecretName: x}\n").cert_secret() == (
        "jobset-webhook-server-cert"
    )
    assert setup("lws", "").cert_secret() == "lws-webhook-server-cert"
    assert setup("kueue", "").cert_secret() == "kueue-webhook-server-cert"


def test_a_configuration_without_a_certificate_folder_field_gets_none() -> None:
    got = local_config(
        "webhook: {port: 9443, host: ''}\n",
        host="192.0.2.2",
        webhook_port=31000,
        health_port=31001,
        cert_dir=None,
    )
    assert got["webhook"] == {"port": 31000, "host": "192.0.2.2"}
    # what else the chart's webhook section says is kept, its folder too when not replaced
    kept = local_config(
        "webhook: {port: 9443, certDir: /c}\n",
        host="h",
        webhook_port=1,
        health_port=2,
        cert_dir=None,
    )
    assert kept["webhook"] == {"port": 1, "certDir": "/c", "host": "h"}


def test_a_chart_object_without_a_namespace_goes_into_the_release_namespace() -> None:
    class Api:
        def resource(self, api_version: str, kind: str) -> SimpleNamespace:
            known = {("rbac.authorization.k8s.io/v1", "Role"): True}
            return SimpleNamespace(namespaced=known.get((api_version, kind), False))

    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"}}
    got = _in_release(Api(), role, "rel")  # type: ignore[arg-type]
    assert got["metadata"] == {"name": "r", "namespace": "rel"}
    placed = {**role, "metadata": {"name": "r", "namespace": "other"}}
    assert _in_release(Api(), placed, "rel") == placed  # type: ignore[arg-type]
    crole = {**role, "kind": "ClusterRole"}
    assert _in_release(Api(), crole, "rel") == crole  # type: ignore[arg-type]
