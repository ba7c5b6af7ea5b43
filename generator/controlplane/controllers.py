"""Controller managers beside the local control plane: Kueue's, JobSet's, LeaderWorkerSet's and
Kubeflow Trainer's, each the real binary built from its pinned module (`make tools-cluster`), run
with the configuration, CRDs, webhooks, Services and Secret of a rendered chart, which the caller
gives as data (`ControllerSetup`): which chart, and with what values, is the caller's business.

The four are controller-runtime managers that share one shape (a `Configuration` file with
webhook, health, metrics and leader-election sections, and internal certificate rotation by
open-policy-agent/cert-controller), so one runner serves them, with what differs as data
(`Shape`):
- kueue v0.17.0 apis/config/v1beta2/configuration_types.go;
- jobset v0.11.1 api/config/v1alpha1/configuration_types.go and pkg/config/config.go (addTo);
- lws v0.8.0 api/config/v1alpha1/configuration_types.go and pkg/config/config.go (addTo);
- trainer v2.2.0 pkg/apis/config/v1alpha1/configuration_types.go and pkg/config/config.go.

Each runs as on a cluster, certificate rotation included: it writes its webhook certificate for
`<webhook service>.<namespace>.svc` into the chart's Secret and injects the CA into the chart's
webhook configurations. What differs, and why (docs/simulation.md):
- The manager runs as a process here, not as the chart's Deployment: containers do not run on
  simulated nodes. It runs with the control plane's admin credentials, so the chart's RBAC is
  applied but not exercised.
- No pod backs the webhook Service, so the simulation writes its EndpointSlice, pointing at the
  process on this machine's own address; the API server routes webhook calls to endpoints
  (launcher.py, --enable-aggregator-routing), as no kube-proxy runs here. Endpoints may not be
  loopback addresses (k8s.io/kubernetes v1.36.3 pkg/apis/core/validation ValidateEndpointIP).
- The kubelet would mount the chart's Secret at the certificate folder; here the simulation
  copies the Secret's keys into the folder the process reads (`_mount_secret`). A manager whose
  rotator insists on a fixed folder runs in a mount namespace of its own with that folder
  mounted from the plane's (`_wrap`).
- Its health server listens on a free loopback port; metrics are off; leader election is off
  (one replica).
"""

from __future__ import annotations

import base64
import fcntl
import ipaddress
import os
import shutil
import socket
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from generator.controlplane.api import ApiClient, Obj
from generator.controlplane.launcher import (
    READY_TIMEOUT,
    STOP_GRACE,
    ControlPlane,
    ControlPlaneError,
    _free_port,
    _http_ok,
    _wait,
    sim_labelled,
)
from generator.toolchain import process as tool_process
from generator.vocab.api import ADMISSION, APIEXTENSIONS, CORE, DISCOVERY
from generator.vocab.kube import SERVICE_NAME_LABEL, SIM_LABEL

# The folder some managers' webhook certificate must be in: JobSet v0.11.1 pkg/util/cert/cert.go
# and Kubeflow Trainer v2.2.0 pkg/util/cert/cert.go hard-code it for their rotators (the charts'
# Deployments mount the Secret there). Both run here at once, so each runs in a mount namespace
# of its own with its plane's folder mounted there, as the kubelet mounts a volume (`_wrap`).
FIXED_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")


@dataclass(frozen=True)
class Shape:
    """How a manager's configuration file spells what the simulation sets, where the four
    differ."""

    # The section that names the certificate Secret: kueue v0.17.0, jobset v0.11.1 and lws
    # v0.8.0 `internalCertManagement`; trainer v2.2.0 `certManagement`
    # (pkg/apis/config/v1alpha1/configuration_types.go).
    cert_section: str = "internalCertManagement"
    # The Secret the rotator writes to when the configuration names none (DefaultWebhook-
    # SecretName: kueue v0.17.0 apis/config/v1beta2/defaults.go, jobset v0.11.1 and lws v0.8.0
    # api/config/v1alpha1/defaults.go; LeaderWorkerSet's chart names none).
    default_secret: str = ""
    # Whether the webhook section has a certDir: Trainer's has none, and it reads its file
    # strictly (pkg/config/config.go EnableStrict), so its webhook server keeps controller-
    # runtime's default folder, under $TMPDIR, which the simulation sets to /tmp.
    cert_dir_field: bool = True
    fixed_cert_dir: bool = False


SHAPES = {
    "kueue": Shape(default_secret="kueue-webhook-server-cert"),
    "jobset": Shape(default_secret="jobset-webhook-server-cert", fixed_cert_dir=True),
    "lws": Shape(default_secret="lws-webhook-server-cert"),
    "trainer": Shape(cert_section="certManagement", cert_dir_field=False, fixed_cert_dir=True),
}
CONFIG_KEY = "controller_manager_config.yaml"  # the key of each of the three charts' ConfigMap
WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
WEBHOOK_API = ADMISSION
CRD_API = (APIEXTENSIONS, "CustomResourceDefinition")
# What of a chart is not applied: the Deployment (the process stands in for it) and the
# ConfigMap (the process reads the configuration, with this machine's listeners, from a file).
NOT_APPLIED = ("Deployment", "ConfigMap")


@dataclass(frozen=True)
class ControllerSetup:
    """What the simulation takes from a rendered add-on chart to run its controller manager."""

    service: str
    """The tool that runs (kueue, jobset, lws) and the name of its process."""
    namespace: str
    """The chart's release namespace: where the manager's Secret and webhook Service are."""
    config: str
    """The manager's configuration file, as the chart's ConfigMap holds it."""
    objects: tuple[str, ...] = field(default=())
    """The chart's objects the simulation applies, each as YAML (hashable, comparable)."""
    args: tuple[str, ...] = field(default=())
    """Flags beyond --config (Kueue's feature gates)."""

    @staticmethod
    def from_chart(
        service: str,
        namespace: str,
        objs: list[Obj],
        *,
        not_applied: tuple[str, ...] = NOT_APPLIED,
        args: tuple[str, ...] = (),
    ) -> ControllerSetup | None:
        """From the objects of a rendered chart; None when it has no manager configuration."""
        config = next(
            (
                str((o.get("data") or {})[CONFIG_KEY])
                for o in objs
                if o.get("kind") == "ConfigMap" and CONFIG_KEY in (o.get("data") or {})
            ),
            None,
        )
        if config is None:
            return None
        keep = tuple(yaml.safe_dump(o) for o in objs if o.get("kind") not in not_applied)
        return ControllerSetup(service, namespace, config, keep, args)

    def docs(self) -> list[Obj]:
        return [yaml.safe_load(t) for t in self.objects]

    def groups(self) -> set[str]:
        """The API groups of the chart's CRDs: the simulation does not apply its pinned copies
        of these over the chart's (which may wire a conversion webhook)."""
        return {str(d["spec"]["group"]) for d in self.docs() if d.get("kind") == CRD_API[1]}

    def cert_secret(self) -> str:
        """The Secret the manager's rotator writes its webhook certificate into: the one the
        chart's configuration names, else the manager's default."""
        shape = SHAPES[self.service]
        doc = yaml.safe_load(self.config) or {}
        named = (doc.get(shape.cert_section) or {}).get("webhookSecretName")
        return str(named or shape.default_secret)


def local_config(
    config: str, *, host: str, webhook_port: int, health_port: int, cert_dir: str | None
) -> dict[str, Any]:
    """The chart's manager configuration with this machine's listeners and its certificate
    folder (None: the configuration has no field for it); every other field, internal
    certificate management included, is the chart's."""
    doc: dict[str, Any] = dict(yaml.safe_load(config) or {})
    webhook = {**(doc.get("webhook") or {}), "host": host, "port": webhook_port}
    if cert_dir is not None:
        webhook["certDir"] = cert_dir
    doc["webhook"] = webhook
    doc["health"] = {
        **(doc.get("health") or {}),
        "healthProbeBindAddress": f"127.0.0.1:{health_port}",
    }
    doc["metrics"] = {**(doc.get("metrics") or {}), "bindAddress": "0"}  # "0": off
    doc["leaderElection"] = {**(doc.get("leaderElection") or {}), "leaderElect": False}
    return doc


def host_address() -> str:
    """This machine's first IPv4 address that an endpoint may have: where the API server reaches
    the managers' webhooks."""
    siocgifaddr = 0x8915  # Linux <linux/sockios.h>
    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for _, name in socket.if_nameindex():
            try:
                packed = fcntl.ioctl(sock.fileno(), siocgifaddr, struct.pack("256s", name.encode()))
            except OSError:
                continue  # no IPv4 address on this interface
            found.append(str(ipaddress.IPv4Address(packed[20:24])))  # struct ifreq's sin_addr
    return endpoint_address(found)


def endpoint_address(addresses: list[str]) -> str:
    """The first of `addresses` an endpoint may have: not loopback, link-local or unspecified
    (k8s.io/kubernetes v1.36.3 pkg/apis/core/validation ValidateEndpointIP)."""
    for text in addresses:
        ip = ipaddress.IPv4Address(text)
        if not (ip.is_loopback or ip.is_link_local or ip.is_unspecified):
            return text
    raise ControlPlaneError(
        "the add-ons' webhooks need a network address other than loopback (an endpoint may not "
        f"be 127.0.0.0/8), and this machine has none ({', '.join(addresses) or 'no IPv4 address'})"
    )


# The Service port a webhook calls when its clientConfig names none (k8s.io/api v0.36.3
# admissionregistration/v1 ServiceReference.Port: "Defaults to 443").
WEBHOOK_SERVICE_PORT = 443


def endpoint_slice(
    service: Obj, address: str, port: int, service_port: int = WEBHOOK_SERVICE_PORT
) -> Obj:
    """The EndpointSlice a pod would give `service`'s port `service_port` (else its first):
    at `address`:`port`. An endpoint port goes with the Service port of its name."""
    meta = service["metadata"]
    ports = (service.get("spec") or {}).get("ports") or [{}]
    first = next((p for p in ports if p.get("port") == service_port), ports[0])
    return {
        "apiVersion": DISCOVERY,
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{meta['name']}-sim",
            "namespace": meta["namespace"],
            "labels": {SERVICE_NAME_LABEL: meta["name"], SIM_LABEL: "true"},
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
        "ports": [{"name": first.get("name", ""), "port": port, "protocol": "TCP"}],
    }


def webhook_service(docs: list[Obj]) -> tuple[Obj, int]:
    """The Service the chart's webhooks call, and the port of it they call."""
    hooks = [d for d in docs if d.get("kind") in WEBHOOK_KINDS]
    ref = hooks[0]["webhooks"][0]["clientConfig"]["service"]
    service = next(
        d
        for d in docs
        if d.get("kind") == "Service"
        and d["metadata"]["name"] == ref["name"]
        and d["metadata"].get("namespace") == ref["namespace"]
    )
    return service, int(ref.get("port") or WEBHOOK_SERVICE_PORT)


def _ca_injected(api: ApiClient, setup: ControllerSetup) -> bool:
    """Whether every webhook of the chart's webhook configurations carries a CA bundle (the
    manager's rotator injects it): before that the API server cannot verify the webhooks."""
    for doc in setup.docs():
        if doc.get("kind") not in WEBHOOK_KINDS:
            continue
        live = api.get(WEBHOOK_API, str(doc["kind"]), "", doc["metadata"]["name"]) or {}
        hooks = live.get("webhooks") or []
        if not hooks or not all((h.get("clientConfig") or {}).get("caBundle") for h in hooks):
            return False
    return True


def _listening(host: str, port: int) -> bool:
    """Whether something accepts TCP connections at host:port."""
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def _mount_secret(api: ApiClient, namespace: str, name: str, folder: Path) -> None:
    """Write the Secret's keys as files into `folder`, as a secret volume gives them."""
    secret = api.get(CORE, "Secret", namespace, name) if name else None
    data = (secret or {}).get("data") or {}
    if not data or not all(data.values()):
        # The chart's Secret holds empty keys until the rotator fills it: a webhook server that
        # read an empty certificate would stop ("failed to find any PEM data").
        return
    for key, value in data.items():
        target = folder / key
        data = base64.b64decode(value)
        if not target.is_file() or target.read_bytes() != data:
            tmp = folder / f".{key}.tmp"
            tmp.write_bytes(data)
            tmp.replace(target)


def _unhook(api: ApiClient, setup: ControllerSetup) -> None:
    """Leave nothing on the plane that calls a manager that no longer runs: its chart's webhook
    configurations go, and its chart's CRDs convert between versions without a webhook (a list
    of a version that is not stored would fail otherwise; the next start applies the chart's
    CRDs again)."""
    docs = setup.docs()
    for doc in docs:
        if doc.get("kind") in WEBHOOK_KINDS:
            api.delete(WEBHOOK_API, str(doc["kind"]), "", doc["metadata"]["name"])
    for doc in docs:
        if doc.get("kind") != CRD_API[1]:
            continue
        live = api.get(*CRD_API, "", doc["metadata"]["name"])
        if ((live or {}).get("spec") or {}).get("conversion", {}).get("strategy") == "Webhook":
            patch = {"spec": {"conversion": {"strategy": "None", "webhook": None}}}
            api.merge_patch(*CRD_API, "", doc["metadata"]["name"], patch)


def _cert_dir(plane: ControlPlane, service: str) -> Path:
    """An empty folder of the plane's for the manager's webhook certificate: a certificate left
    by an earlier run would pass for this run's (the rotators only check that the file exists)
    and be served with another CA."""
    folder = plane.workdir / f"{service}-certs"
    folder.mkdir(exist_ok=True)
    for old in folder.iterdir():
        if old.is_file():
            old.unlink()
    return folder


def _wrap(service: str, cert_dir: Path) -> list[str]:
    """The command that starts a manager whose rotator insists on FIXED_CERT_DIR in a mount
    namespace of its own (util-linux unshare(1)), where `cert_dir` is mounted over that folder:
    what the manager sees there is its own certificate, and another manager's elsewhere. As
    root, a private mount namespace; otherwise a user namespace too, mapped to root, where
    mounting is allowed (user_namespaces(7))."""
    if not SHAPES[service].fixed_cert_dir:
        return []
    FIXED_CERT_DIR.mkdir(parents=True, exist_ok=True)  # the mount point; nothing is written to it
    unshare = shutil.which("unshare")
    if unshare is None:
        raise ControlPlaneError(
            f"{service}'s controller manager needs unshare(1) (util-linux) here: its webhook "
            f"certificate must be at {FIXED_CERT_DIR}, which each manager sees on its own"
        )
    user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    mount = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
    return [
        unshare,
        *user,
        "--mount",
        "--propagation",
        "private",
        "--",
        "sh",
        "-c",
        mount,
        "sh",
        str(cert_dir),
        str(FIXED_CERT_DIR),
    ]


def _in_release(api: ApiClient, doc: Obj, namespace: str) -> Obj:
    """A chart object as Helm or Argo CD applies it: a namespaced one that names no namespace
    goes into the release's."""
    meta = doc.get("metadata") or {}
    if (
        meta.get("namespace")
        or not api.resource(str(doc["apiVersion"]), str(doc["kind"])).namespaced
    ):
        return doc
    return {**doc, "metadata": {**meta, "namespace": namespace}}


def use_controller(plane: ControlPlane, service: str, setup: ControllerSetup | None) -> None:
    """Run `service`'s controller manager with `setup` (None: none runs), restarting it when the
    setup differs from what runs now; the chart's objects are (re)applied every time, since a
    reset or the pinned CRDs may have been applied over them."""
    api = plane.client()
    running = next((s for s in plane.services if s.name == service), None)
    old, port = plane.controllers.get(service, (None, 0))
    if running is not None and setup != old:
        # Unhooked first: with failurePolicy Fail, a webhook whose server is gone refuses the
        # objects it covers.
        _unhook(api, old)
        tool_process.terminate(running, STOP_GRACE)
        plane.services.remove(running)
        running = None
    if setup is None:
        if old is not None:
            _unhook(api, old)
        plane.controllers.pop(service, None)
        return
    host = host_address()
    if running is None:
        port = _free_port()
    plane.controllers[service] = (setup, port)
    docs = setup.docs()
    api.apply_crds(sim_labelled(d) for d in docs if d.get("kind") == CRD_API[1])
    api.apply({"apiVersion": CORE, "kind": "Namespace", "metadata": {"name": setup.namespace}})
    for doc in docs:
        # The certificate Secret is the running manager's own once it has filled it: applied
        # again with the chart's empty keys, it would take the certificate away.
        mine = doc.get("kind") == "Secret" and doc["metadata"]["name"] == setup.cert_secret()
        if doc.get("kind") != CRD_API[1] and not (mine and running is not None):
            api.apply(sim_labelled(_in_release(api, doc, setup.namespace)))
    hooked, hooked_port = webhook_service(docs)
    api.apply(endpoint_slice(hooked, host, port, hooked_port))
    if running is not None:
        return
    health = _free_port()
    shape = SHAPES[service]
    cert_dir = _cert_dir(plane, service)
    # Where the manager itself finds the folder: the fixed one is `cert_dir` mounted (_wrap).
    seen = FIXED_CERT_DIR if shape.fixed_cert_dir else cert_dir
    conf = plane.workdir / f"{service}-config.yaml"
    doc = local_config(
        setup.config,
        host=host,
        webhook_port=port,
        health_port=health,
        cert_dir=str(seen) if shape.cert_dir_field else None,
    )
    conf.write_text(yaml.safe_dump(doc, sort_keys=False))
    process = tool_process.spawn(
        service,
        [f"--config={conf}", *setup.args],
        # TMPDIR: controller-runtime's default certificate folder is under it (webhook/server.go
        # os.TempDir), and FIXED_CERT_DIR is under /tmp.
        env={"KUBECONFIG": str(plane.kubeconfig), "TMPDIR": "/tmp"},
        log=plane.logs() / f"{service}.log",
        wrap=_wrap(service, cert_dir),
    )
    plane.services.append(process)
    secret = setup.cert_secret()

    def ready() -> bool:
        # Ready when its webhooks can be called (listening, their CA injected by its rotator),
        # not when its readiness endpoint says so:
        # LeaderWorkerSet v0.8.0's /readyz is a ping that passes before its certificate is in
        # place and its webhook server listens (cmd/main.go setupHealthzAndReadyzCheck).
        _mount_secret(api, setup.namespace, secret, cert_dir)
        return (
            _http_ok(f"http://127.0.0.1:{health}/readyz")
            and _listening(host, port)
            and _ca_injected(api, setup)
        )

    _wait(service, ready, [process], READY_TIMEOUT)
