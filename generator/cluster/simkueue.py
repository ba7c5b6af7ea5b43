"""Kueue on the local control plane: its real controller manager (sigs.k8s.io/kueue v0.17.0
cmd/kueue, built by `make tools-cluster` from gotools/kueuecheck/go.mod), with the configuration,
CRDs, webhooks, Services and Secret of the Kueue chart the fleet deploys, so that Jobs are
suspended, admitted by their ClusterQueues, given a flavor's node selector and unsuspended as
Kueue decides.

It runs as on a cluster, internal certificate rotation included: Kueue writes its webhook
certificate for `kueue-webhook-service.kueue-system.svc` into the chart's Secret and injects the
CA into the chart's webhook configurations and CRDs (pkg/util/cert/cert.go). What differs, and why
(docs/simulation.md):
- The manager runs as a process here, not as the chart's Deployment: containers do not run on
  simulated nodes. It runs with the control plane's admin credentials, so the chart's RBAC is
  applied but not exercised.
- No pod backs the webhook Service, so the simulation writes its EndpointSlice, pointing at the
  process on this machine's own address; the API server routes webhook calls to endpoints
  (launcher.py, --enable-aggregator-routing), as no kube-proxy runs here. Endpoints may not be
  loopback addresses (k8s.io/kubernetes v1.36.3 pkg/apis/core/validation ValidateEndpointIP).
- Its health server listens on a free loopback port; metrics are off, and so is the visibility
  server (FEATURE_GATES), whose APIService from the chart is not applied; leader election is off
  (one replica).
"""

from __future__ import annotations

import base64
import fcntl
import ipaddress
import socket
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from generator import toolchain
from generator.builders.workloads import PodRef
from generator.cluster.api import ApiClient, Obj
from generator.cluster.launcher import (
    KUEUE_NAMESPACE,
    READY_TIMEOUT,
    SIM_LABEL,
    STOP_GRACE,
    ControlPlane,
    ControlPlaneError,
    _free_port,
    _http_ok,
    _wait,
    sim_labelled,
)
from generator.cluster.simresult import HINTS, EnvReport
from generator.findings import Finding
from generator.values.model import FleetView
from generator.values.yamlio import json_path
from generator.workloads.model import team_workloads

SERVICE = "kueue"
NAMESPACE = KUEUE_NAMESPACE  # the chart's release namespace (builders/platform.py)
CONFIG_KEY = "controller_manager_config.yaml"  # charts/kueue/templates/manager/manager-config.yaml
WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
WEBHOOK_API = "admissionregistration.k8s.io/v1"
# What of the chart is not applied: the Deployment (the process stands in for it) and the
# visibility APIService (no pod serves it; an unavailable APIService degrades discovery).
NOT_APPLIED = ("Deployment", "APIService", "ConfigMap")
# The visibility API server is off: it writes a self-signed certificate to the fixed folder
# /visibility (sigs.k8s.io/kueue v0.17.0 pkg/visibility/server.go), which a process here cannot,
# and its APIService is not applied. A beta gate, default on (pkg/features/kube_features.go).
FEATURE_GATES = "VisibilityOnDemand=false"
# The scheduling gate Kueue's pod integration puts on the pods it manages until their workload is
# admitted (sigs.k8s.io/kueue v0.17.0 pkg/controller/jobs/pod/constants/constants.go).
ADMISSION_GATE = "kueue.x-k8s.io/admission"
KUEUE_GROUP = "kueue.x-k8s.io"
WORKLOAD_API = f"{KUEUE_GROUP}/v1beta2"


@dataclass(frozen=True)
class KueueSetup:
    """What the simulation takes from a rendered Kueue chart."""

    config: str
    """The manager's configuration file, as the chart's ConfigMap holds it."""
    objects: tuple[str, ...] = field(default=())
    """The chart's objects the simulation applies, each as YAML (hashable, comparable)."""

    @staticmethod
    def from_chart(objs: list[Obj]) -> KueueSetup | None:
        """From the objects of a rendered Kueue chart; None when it has no manager config."""
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
        keep = tuple(yaml.safe_dump(o) for o in objs if o.get("kind") not in NOT_APPLIED)
        return KueueSetup(config, keep)

    def integrations(self) -> list[str]:
        doc = yaml.safe_load(self.config) or {}
        return [str(f) for f in (doc.get("integrations") or {}).get("frameworks") or []]

    def docs(self) -> list[Obj]:
        return [yaml.safe_load(t) for t in self.objects]


def local_config(
    config: str, *, host: str, webhook_port: int, health_port: int, cert_dir: str
) -> dict[str, Any]:
    """The chart's manager configuration with this machine's listeners and a writable certificate
    folder (sigs.k8s.io/kueue v0.17.0 apis/config/v1beta2/configuration_types.go); every other
    field, internal certificate management included, is the chart's."""
    doc: dict[str, Any] = dict(yaml.safe_load(config) or {})
    doc["webhook"] = {
        **(doc.get("webhook") or {}),
        "host": host,
        "port": webhook_port,
        "certDir": cert_dir,
    }
    doc["health"] = {
        **(doc.get("health") or {}),
        "healthProbeBindAddress": f"127.0.0.1:{health_port}",
    }
    doc["metrics"] = {**(doc.get("metrics") or {}), "bindAddress": "0"}  # "0": off
    doc["leaderElection"] = {**(doc.get("leaderElection") or {}), "leaderElect": False}
    return doc


def host_address() -> str:
    """This machine's first IPv4 address that an endpoint may have: where the API server reaches
    Kueue's webhooks."""
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
        "Kueue's webhooks need a network address other than loopback (an endpoint may not be "
        f"127.0.0.0/8), and this machine has none ({', '.join(addresses) or 'no IPv4 address'})"
    )


def endpoint_slice(service: Obj, address: str, port: int) -> Obj:
    """The EndpointSlice a pod would give `service`: its first port, at `address`:`port`."""
    meta = service["metadata"]
    first = (service.get("spec") or {}).get("ports", [{}])[0]
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{meta['name']}-sim",
            "namespace": meta["namespace"],
            "labels": {"kubernetes.io/service-name": meta["name"], SIM_LABEL: "true"},
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
        "ports": [{"name": first.get("name", ""), "port": port, "protocol": "TCP"}],
    }


def _webhook_service(docs: list[Obj]) -> Obj:
    """The Service the chart's webhooks call."""
    hooks = [d for d in docs if d.get("kind") in WEBHOOK_KINDS]
    ref = hooks[0]["webhooks"][0]["clientConfig"]["service"]
    return next(
        d for d in docs if d.get("kind") == "Service" and d["metadata"]["name"] == ref["name"]
    )


def _cert_secret(setup: KueueSetup) -> str:
    """The Secret Kueue's rotator writes its webhook certificate into (the chart's manager
    configuration, internalCertManagement.webhookSecretName)."""
    doc = yaml.safe_load(setup.config) or {}
    return str((doc.get("internalCertManagement") or {}).get("webhookSecretName", ""))


def _mount_secret(api: ApiClient, name: str, folder: Path) -> None:
    """Write the Secret's keys as files into `folder`, as a secret volume gives them."""
    secret = api.get("v1", "Secret", NAMESPACE, name) if name else None
    for key, value in ((secret or {}).get("data") or {}).items():
        target = folder / key
        data = base64.b64decode(value)
        if not target.is_file() or target.read_bytes() != data:
            tmp = folder / f".{key}.tmp"
            tmp.write_bytes(data)
            tmp.replace(target)


def _unhook(api: ApiClient) -> None:
    """Leave nothing on the plane that calls a Kueue that no longer runs: its webhook
    configurations go, and its CRDs convert between versions without a webhook (a list of a
    version that is not stored would fail otherwise; the next start applies the chart's CRDs
    again)."""
    for kind in WEBHOOK_KINDS:
        for obj in api.list(WEBHOOK_API, kind, selector=f"{SIM_LABEL}=true"):
            api.delete(WEBHOOK_API, kind, "", obj["metadata"]["name"])
    crd = ("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    for obj in api.list(*crd, selector=f"{SIM_LABEL}=true"):
        if ((obj.get("spec") or {}).get("conversion") or {}).get("strategy") == "Webhook":
            patch = {"spec": {"conversion": {"strategy": "None", "webhook": None}}}
            api.merge_patch(*crd, "", obj["metadata"]["name"], patch)


def use_kueue(plane: ControlPlane, setup: KueueSetup | None) -> None:
    """Run Kueue's controller manager with `setup` (None: none runs), restarting it when the
    setup differs from what runs now; the chart's objects are (re)applied every time, since a
    reset or the pinned CRDs may have been applied over them."""
    api = plane.client()
    running = next((s for s in plane.services if s.name == SERVICE), None)
    if running is not None and setup != plane.kueue:
        # Unhooked first: with failurePolicy Fail, a webhook whose server is gone refuses the
        # objects it covers.
        _unhook(api)
        toolchain.terminate(running, STOP_GRACE)
        plane.services.remove(running)
        running = None
    plane.kueue = setup
    if setup is None:
        _unhook(api)
        return
    host = host_address()
    if running is None:
        plane.kueue_port = _free_port()
    docs = setup.docs()
    api.apply_crds(sim_labelled(d) for d in docs if d.get("kind") == "CustomResourceDefinition")
    api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    for doc in docs:
        if doc.get("kind") != "CustomResourceDefinition":
            api.apply(sim_labelled(doc))
    api.apply(endpoint_slice(_webhook_service(docs), host, plane.kueue_port))
    if running is None:
        health = _free_port()
        cert_dir = plane.workdir / "kueue-certs"
        cert_dir.mkdir(exist_ok=True)
        conf = plane.workdir / "kueue-config.yaml"
        doc = local_config(
            setup.config,
            host=host,
            webhook_port=plane.kueue_port,
            health_port=health,
            cert_dir=str(cert_dir),
        )
        conf.write_text(yaml.safe_dump(doc, sort_keys=False))
        service = toolchain.spawn(
            SERVICE,
            [f"--config={conf}", f"--feature-gates={FEATURE_GATES}"],
            env={"KUBECONFIG": str(plane.kubeconfig)},
            log=plane.logs() / "kueue.log",
        )
        plane.services.append(service)
        secret = _cert_secret(setup)

        def ready() -> bool:
            # The kubelet mounts the Secret Kueue writes its certificate into at the certificate
            # folder; here the simulation does, and Kueue's rotator waits for it.
            _mount_secret(api, secret, cert_dir)
            return _http_ok(f"http://127.0.0.1:{health}/readyz")

        _wait("kueue", ready, [service], READY_TIMEOUT)


# ---- what Kueue decided ------------------------------------------------------------------------


def _condition(obj: Obj, kind: str) -> dict[str, Any]:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return {}


def admission(workload: Obj) -> str:
    """How Kueue placed an admitted workload: "<ClusterQueue> (<flavor>, ...)"; "" when not."""
    if _condition(workload, "Admitted").get("status") != "True":
        return ""
    # An admitted workload has status.admission, whose clusterQueue is always serialized (no
    # omitempty: kueue v0.17.0 apis/kueue/v1beta2 workload_types.go Admission).
    adm = workload["status"]["admission"]
    flavors = sorted(
        {
            str(f)
            for ps in adm.get("podSetAssignments") or []
            for f in (ps.get("flavors") or {}).values()
        }
    )
    queue = str(adm["clusterQueue"])
    return f"{queue} ({', '.join(flavors)})" if flavors else queue


def pending(workload: Obj) -> str:
    """Kueue's reason for not admitting a workload it has tried ("" when admitted or untried):
    the QuotaReserved condition's message (sigs.k8s.io/kueue v0.17.0 pkg/workload
    UnsetQuotaReservationWithCondition, reason Pending)."""
    if _condition(workload, "Admitted").get("status") == "True":
        return ""
    cond = _condition(workload, "QuotaReserved")
    if cond.get("status") == "False" and cond.get("message"):
        return str(cond["message"])
    return ""


def workloads_by_owner(api: ApiClient, namespace: str = "") -> dict[tuple[str, str, str], Obj]:
    """(namespace, owner kind, owner name) -> its Kueue Workload (a Job's, or a pod's: Kueue's
    pod integration makes one workload per pod of a Deployment); {} where Kueue is not
    installed."""
    if not api.serves(WORKLOAD_API, "Workload"):
        return {}
    out: dict[tuple[str, str, str], Obj] = {}
    for wl in api.list(WORKLOAD_API, "Workload", namespace):
        meta = wl["metadata"]
        for ref in meta.get("ownerReferences") or []:
            out[(str(meta.get("namespace", "")), str(ref.get("kind")), str(ref.get("name")))] = wl
    return out


def check_admissions(
    api: ApiClient, refs: dict[tuple[str, str, str], PodRef], report: EnvReport
) -> None:
    """Kueue's verdict on every queued workload, read from the cluster's Workloads."""
    admission_verdicts(workloads_by_owner(api), refs, report)


def admission_verdicts(
    workloads: dict[tuple[str, str, str], Obj],
    refs: dict[tuple[str, str, str], PodRef],
    report: EnvReport,
) -> None:
    """One row per queued workload: what Kueue decided, against the values line that declared
    it (a Job is one Workload; a Deployment's pods, as the report's pod rows name them, are one
    Workload each). Nothing when Kueue made no Workload."""
    if not workloads:
        return
    pods: dict[str, list[str]] = {}
    for row in report.pods:
        pods.setdefault(row.workload, []).append(row.pod)
    for (ns, kind, name), ref in sorted(refs.items()):
        if kind == "Job":
            found = [workloads.get((ns, "Job", name))]
        elif kind == "Deployment":
            found = [workloads.get((ns, "Pod", p)) for p in pods.get(f"{kind} {ns}/{name}", [])]
        else:
            continue  # Volcano's tasks: Kueue has no Volcano integration (SCH002)
        got = [w for w in found if w is not None]
        if not got:
            continue
        admitted = sorted({admission(w) for w in got if admission(w)})
        waiting = sorted({pending(w) for w in got if pending(w)})
        done = sum(bool(admission(w)) for w in got)
        verdict = f"{done} of {len(got)} admitted" + (
            f": {', '.join(admitted)}" if admitted else ""
        )
        if waiting:
            verdict += f"; pending: {waiting[0]}"
        report.admissions.append(
            {
                "workload": f"{kind} {ns}/{name}",
                "values": str(ref.team.doc.anchor(ref.path)),
                "queue": str((got[0].get("spec") or {}).get("queueName", "")),
                "admission": verdict,
                "ok": done == len(got),
            }
        )


# ---- JobSets: Kueue admits them; their controller does not run here ----------------------------

JOBSET_DECIDED_TIMEOUT = 60.0  # seconds for Kueue to admit each JobSet or say why not


def jobset_admissions(api: ApiClient, view: FleetView, report: EnvReport) -> None:
    """Kueue's verdict on every JobSet the teams queue: a row each, and SIM013 at the job's
    values line for one Kueue does not admit. Kueue's jobset integration makes one Workload per
    JobSet and admits it whole (kueue v0.17.0 pkg/controller/jobs/jobset); JobSet's own
    controller does not run here (simscope.py says so), so no pod follows the admission."""
    queued = [
        (team, job)
        for team in view.teams
        for job in team_workloads(view, team).jobs
        if job.kind == "jobset"
    ]
    if not queued or not api.serves(WORKLOAD_API, "Workload"):
        return

    def decided() -> bool:
        found = workloads_by_owner(api)
        return all(
            (w := found.get((job.namespace, "JobSet", job.name))) is not None
            and (admission(w) or pending(w))
            for _, job in queued
        )

    deadline = time.monotonic() + JOBSET_DECIDED_TIMEOUT
    while not decided() and time.monotonic() < deadline:
        time.sleep(0.2)  # what is undecided then is reported as such
    found = workloads_by_owner(api)
    for team, job in queued:
        wl = found.get((job.namespace, "JobSet", job.name))
        placed = admission(wl) if wl is not None else ""
        why = (pending(wl) if wl is not None else "") or "Kueue made no decision"
        if wl is None:
            why = "Kueue made no Workload for it"
        verdict = f"admitted: {placed}" if placed else f"pending: {why}"
        where = team.doc.anchor(job.path)
        report.admissions.append(
            {
                "workload": f"JobSet {job.namespace}/{job.name}",
                "values": str(where),
                "queue": str(((wl or {}).get("spec") or {}).get("queueName", "")),
                "admission": verdict,
                "ok": bool(placed),
            }
        )
        if not placed:
            report.findings.append(
                Finding(
                    "SIM013",
                    f"JobSet {job.namespace}/{job.name}: not admitted by Kueue: {why}",
                    where,
                    json_path(job.path),
                    HINTS["SIM013"],
                )
            )
