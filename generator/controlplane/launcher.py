"""A throwaway Kubernetes control plane on loopback: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, KWOK (simulated kubelets) and nfd-master.

Everything is built by ``make tools`` from pinned Go modules (gotools/controlplane, gotools/kwok,
gotools/nfd). :func:`local_control_plane` starts the components on free loopback ports with a data
directory and credentials made for this run, waits until each is ready and always stops them:
on return, on any exception, on Ctrl-C and on SIGTERM (process groups, TERM then KILL; a
component also gets SIGTERM from Linux if the thread that started it dies).

Flags follow the tested recipe in docs/simulation.md; each choice that is not a default says why.

The plane knows nothing of the fleet that runs on it: which namespace nfd-master works in, and
what a reset clears beyond the plane's own rule (every namespace but the system ones, every node
but the control plane's), are the caller's (`ResetRules`).
"""

from __future__ import annotations

import base64
import contextlib
import secrets
import signal
import socket
import ssl
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Any

import yaml

from generator.controlplane.api import ApiClient, ApiError
from generator.controlplane.crds import nfd_crds
from generator.controlplane.sources import kwok_stages
from generator.toolchain import errors, process
from generator.toolchain.errors import ToolError
from generator.toolchain.process import Service
from generator.toolchain.registry import DEFAULT_MINOR, PLANES, plane_tool
from generator.vocab.api import CORE
from generator.vocab.kube import (
    ARCH_LABEL,
    CONTROL_PLANE_TAINT_KEY,
    HOSTNAME_LABEL,
    KWOK_NODE_ANNOTATION,
    NOT_READY_TAINT_KEY,
    OS_LABEL,
    SIM_LABEL,
    SYSTEM_NAMESPACES,
)

# Controllers the simulation needs. node-lifecycle-controller removes the not-ready taint that
# admission puts on every new Node (without it nothing schedules); the others create what the
# fleet's objects imply (ReplicaSets and pods, DaemonSet pods, Job pods, quota usage, the default
# ServiceAccount that admission requires, namespace deletion between runs; the binding of a
# team's declared PersistentVolumeClaim to its stand-in volume: simulate/external.py; name from
# kubernetes v1.36.3 cmd/kube-controller-manager/names/controller_names.go, which names each of
# them alike in v1.34.4, v1.35.4 and v1.37.2: the planes of every minor start with this list).
CONTROLLERS = (
    "deployment-controller",
    "replicaset-controller",
    "daemonset-controller",
    "job-controller",
    "resourcequota-controller",
    "namespace-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "garbage-collector-controller",
    "root-ca-certificate-publisher-controller",
    "node-lifecycle-controller",
    "disruption-controller",
    "persistentvolume-binder-controller",
    # LeaderWorkerSet's controller makes a StatefulSet per group (sigs.k8s.io/lws v0.8.0
    # pkg/controllers/leaderworkerset_controller.go); this one makes their pods.
    "statefulset-controller",
    # A pod's ResourceClaimTemplate becomes its ResourceClaim here, which the scheduler then
    # allocates (a vendor allocated by DRA).
    "resourceclaim-controller",
)

# nfd-master annotates the node it runs on at start (updateMasterNode in pkg/nfd-master): the
# control plane therefore has a control-plane Node, tainted like a kubeadm one.
CONTROL_PLANE_NODE = "accel-sim-control-plane"
CONTROL_PLANE_TAINT = {"key": CONTROL_PLANE_TAINT_KEY, "effect": "NoSchedule"}

READY_TIMEOUT = 90.0
# nfd-master's flags when the fleet does not render NFD (the site runs it): taints from
# NodeFeatureRules are applied only with -enable-taints, which docs/node-config.md asks the site
# for; simulate says that it assumed them (SIM011).
DEFAULT_NFD_ARGS: tuple[str, ...] = ("-enable-taints",)
# The service name of a second kube-scheduler (the fleet's packing scheduler, simulate).
SECOND_SCHEDULER = "kube-scheduler-second"
STOP_GRACE = 20.0


class ControlPlaneError(ToolError):
    """The control plane did not come up (a component exited or never became ready)."""


@dataclass
class ControlPlane:
    """A running control plane: where it listens and how to talk to it."""

    workdir: Path
    server: str
    token: str
    ca_file: Path
    kubeconfig: Path
    nfd_namespace: str
    """The namespace nfd-master works in (its NodeFeatures, its NodeFeatureRules' reach); ''
    when no nfd-master runs."""
    nfd_metrics: str
    """nfd-master's metrics URL ('' without NFD)."""
    services: list[Service] = field(default_factory=list)
    started_in: float = 0.0
    """Seconds from the first process to every component ready."""
    minor: str = DEFAULT_MINOR
    """The Kubernetes minor its etcd, kube-apiserver, kube-controller-manager and kube-scheduler
    are of (toolchain/registry.py PLANES)."""
    scheduler_port: int = 0
    scheduler_config: dict[str, Any] | None = None
    """The KubeSchedulerConfiguration kube-scheduler runs with (None: its defaults)."""

    def use_scheduler_config(self, config: dict[str, Any] | None) -> None:
        """Run kube-scheduler with this configuration (the fleet's own profile, when it renders
        one), restarting it when it differs from what runs now."""
        if config == self.scheduler_config:
            return
        old = next(s for s in self.services if s.name == "kube-scheduler")
        process.terminate(old, STOP_GRACE)
        new = _spawn_scheduler(
            self.workdir, self.kubeconfig, self.scheduler_port, config, self.minor
        )
        self.services[self.services.index(old)] = new
        self.scheduler_config = config
        _wait("kube-scheduler", lambda: _scheduler_ready(self.scheduler_port), [new], READY_TIMEOUT)

    nfd_args: tuple[str, ...] = DEFAULT_NFD_ARGS
    """nfd-master's flags besides its connection, port and config file."""
    nfd_conf: str = ""
    """nfd-master's configuration file (nfd-master.conf)."""

    @property
    def nfd(self) -> bool:
        """Whether nfd-master runs on this plane."""
        return bool(self.nfd_namespace)

    def use_nfd(self, args: tuple[str, ...], conf: str) -> None:
        """Run nfd-master with these flags and this configuration (what the caller gives it),
        restarting it when they differ from what runs now."""
        if not self.nfd or (args, conf) == (self.nfd_args, self.nfd_conf):
            return
        old = next(s for s in self.services if s.name == "nfd-master")
        process.terminate(old, STOP_GRACE)
        self.services.remove(old)
        self.nfd_args, self.nfd_conf = args, conf
        service, self.nfd_metrics = _spawn_nfd(
            self, f"--kubeconfig={self.kubeconfig}", self.services
        )
        self.services.append(service)

    controllers: dict[str, tuple[Any, int]] = field(default_factory=dict)
    """Controller managers that run beside the plane (controlplane/controllers.py): by name, the
    setup each runs with (a ControllerSetup) and the port its webhooks listen on."""

    second_scheduler: dict[str, Any] | None = None
    """The KubeSchedulerConfiguration a second kube-scheduler runs beside the first (under the
    name its profile gives), or None when none runs."""

    def use_second_scheduler(self, config: dict[str, Any] | None) -> None:
        """Run a second kube-scheduler with this configuration beside the untouched first (a
        scheduler of the caller's, as one runs beside a cluster's own); None stops it."""
        if config == self.second_scheduler:
            return
        old = next((s for s in self.services if s.name == SECOND_SCHEDULER), None)
        if old is not None:
            process.terminate(old, STOP_GRACE)
            self.services.remove(old)
        self.second_scheduler = config
        if config is None:
            return
        port = _free_port()
        new = _spawn_scheduler(
            self.workdir, self.kubeconfig, port, config, self.minor, SECOND_SCHEDULER
        )
        self.services.append(new)
        _wait(SECOND_SCHEDULER, lambda: _scheduler_ready(port), [new], READY_TIMEOUT)

    def client(self) -> ApiClient:
        return ApiClient(self.server, token=self.token, ca_file=self.ca_file)

    def check(self) -> None:
        """Raise ControlPlaneError when a component has exited."""
        for svc in self.services:
            try:
                svc.check()
            except errors.ToolExited as exc:
                raise ControlPlaneError(f"control plane component {svc.name} died: {exc}") from exc

    def logs(self) -> Path:
        return self.workdir / "logs"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait(
    what: str, ready: Callable[[], bool], services: Sequence[Service], timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        for svc in services:
            try:
                svc.check()
            except errors.ToolExited as exc:
                raise ControlPlaneError(f"{what}: {svc.name} exited: {exc.log_tail}") from exc
        try:
            if ready():
                return
        except (OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            tails = "; ".join(f"{s.name}: {s.log_tail(3)}" for s in services)
            raise ControlPlaneError(f"{what} not ready after {timeout:g} s ({tails})")
        time.sleep(0.1)


def _http_ok(url: str, *, token: str = "", context: ssl.SSLContext | None = None) -> bool:
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=2, context=context) as resp:
            return bool(resp.status == 200)
    except urllib.error.URLError:
        return False


def _insecure() -> ssl.SSLContext:
    # Health endpoints of KCM and the scheduler serve a self-signed certificate made at start.
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _kubeconfig(server: str, ca: bytes, token: str) -> dict[str, Any]:
    return {
        "apiVersion": CORE,
        "kind": "Config",
        "clusters": [
            {
                "name": "accel-sim",
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca).decode(),
                },
            }
        ],
        "users": [{"name": "accel-sim-admin", "user": {"token": token}}],
        "contexts": [
            {"name": "accel-sim", "context": {"cluster": "accel-sim", "user": "accel-sim-admin"}}
        ],
        "current-context": "accel-sim",
    }


@contextlib.contextmanager
def _stop_on_sigterm() -> Iterator[None]:
    """Turn SIGTERM into KeyboardInterrupt while the control plane runs, so that the cleanup
    below runs when a CI runner or a test timeout terminates us (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def local_control_plane(
    *,
    nfd_namespace: str | None = None,
    keep_dir: Path | None = None,
    minor: str = DEFAULT_MINOR,
) -> Iterator[ControlPlane]:
    """Start a control plane; stop it and remove its data when the block ends, however it ends.

    ``nfd_namespace``: also run nfd-master (with its CRDs), working in this namespace, which the
    plane creates. ``keep_dir``: put the data and logs there and keep them (debugging); default:
    a temporary directory, removed afterwards. ``minor``: the Kubernetes minor of its etcd,
    kube-apiserver, kube-controller-manager and kube-scheduler (one of registry.PLANES).
    """
    with contextlib.ExitStack() as stack:
        if keep_dir is not None:
            keep_dir.mkdir(parents=True, exist_ok=True)
            workdir = keep_dir
        else:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="accel-cp-")))
        stack.enter_context(_stop_on_sigterm())
        services: list[Service] = []

        def stop_all() -> None:
            # Reverse start order: clients first, etcd last.
            for svc in reversed(services):
                process.terminate(svc, STOP_GRACE)

        stack.callback(stop_all)
        plane = _start(workdir, services, nfd_namespace or "", minor)
        yield plane


def _spawn_own(name: str, minor: str, args: Sequence[str], log: Path) -> Service:
    """Start a tool of the plane's own minor, under its plain name (what `check` says)."""
    return replace(process.spawn(plane_tool(name, minor), args, log=log), name=name)


def _start(workdir: Path, services: list[Service], nfd_namespace: str, minor: str) -> ControlPlane:
    t0 = time.monotonic()
    logs = workdir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    certs = workdir / "certs"
    certs.mkdir(exist_ok=True)
    # Service-account signing key (ECDSA P-256): the apiserver signs pod tokens with it.
    sa_key = workdir / "sa.key"
    process.run(
        "openssl",
        ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(sa_key)],
        timeout=60,
    )
    token = secrets.token_hex(24)
    tokens = workdir / "tokens.csv"
    tokens.write_text(f'{token},accel-admin,accel-admin-uid,"system:masters"\n')
    tokens.chmod(0o600)

    etcd_port, peer_port, api_port = _free_port(), _free_port(), _free_port()
    etcd_url = f"http://127.0.0.1:{etcd_port}"
    services.append(
        _spawn_own(
            "etcd",
            minor,
            [
                "--name=accel",
                f"--data-dir={workdir / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-cluster=accel=http://127.0.0.1:{peer_port}",
                # A throwaway data dir: durability is not wanted, speed is.
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
            log=logs / "etcd.log",
        )
    )
    _wait("etcd", lambda: _http_ok(f"{etcd_url}/health"), services, READY_TIMEOUT)

    server = f"https://127.0.0.1:{api_port}"
    services.append(
        _spawn_own(
            "kube-apiserver",
            minor,
            [
                f"--etcd-servers={etcd_url}",
                f"--cert-dir={certs}",
                f"--secure-port={api_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                # kubeadm's default range: room for a Service per team and track.
                "--service-cluster-ip-range=10.96.0.0/12",
                "--authorization-mode=RBAC",
                "--allow-privileged=true",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={sa_key}",
                f"--service-account-signing-key-file={sa_key}",
                f"--token-auth-file={tokens}",
                # Webhook calls go to a Service's endpoints, not its ClusterIP: no kube-proxy
                # runs here (cmd/kube-apiserver/app/server.go buildServiceResolver, v1.36.3).
                # The controller managers' webhooks are reached so (controllers.py).
                "--enable-aggregator-routing=true",
                *PLANES[minor].apiserver_args,
            ],
            log=logs / "kube-apiserver.log",
        )
    )
    ca_file = certs / "apiserver.crt"
    _wait(
        "kube-apiserver",
        lambda: ca_file.is_file()
        and _http_ok(f"{server}/readyz", token=token, context=_insecure()),
        services,
        READY_TIMEOUT,
    )
    kubeconfig = workdir / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(_kubeconfig(server, ca_file.read_bytes(), token)))
    kubeconfig.chmod(0o600)
    kc = f"--kubeconfig={kubeconfig}"

    kcm_port, sched_port = _free_port(), _free_port()
    services.append(
        _spawn_own(
            "kube-controller-manager",
            minor,
            [
                kc,
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={kcm_port}",
                "--use-service-account-credentials=false",
                f"--service-account-private-key-file={sa_key}",
                f"--root-ca-file={ca_file}",
                "--controllers=" + ",".join(CONTROLLERS),
                # KWOK's heartbeats can lag on a busy machine with hundreds of nodes; a node
                # marked NotReady would have its pods marked unready (node health is not what
                # the simulation is about).
                "--node-monitor-grace-period=10m",
            ],
            log=logs / "kube-controller-manager.log",
        )
    )
    services.append(_spawn_scheduler(workdir, kubeconfig, sched_port, None, minor))
    stages = workdir / "kwok-stages.yaml"
    stages.write_text(kwok_stages())
    services.append(
        process.spawn(
            "kwok",
            [
                kc,
                f"--config={stages}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
                # A pod range apart from the service range above (kwok's default is 10.0.0.0/24).
                "--cidr=10.244.0.0/16",
                # Every simulated node's InternalIP, which is also the IP of its host-network
                # pods (kwok v0.8.0 pod_controller.go funcPodIPWith): without it such a pod (an
                # exporter on the host's network) has no IP, and Prometheus no target for it.
                f"--node-ip={NODE_IP}",
            ],
            log=logs / "kwok.log",
        )
    )
    plane = ControlPlane(
        workdir=workdir,
        server=server,
        token=token,
        ca_file=ca_file,
        kubeconfig=kubeconfig,
        nfd_namespace=nfd_namespace,
        nfd_metrics="",
        services=services,
        minor=minor,
        scheduler_port=sched_port,
    )
    api = plane.client()
    _wait(
        "kube-controller-manager",
        lambda: _http_ok(f"https://127.0.0.1:{kcm_port}/healthz", context=_insecure()),
        services,
        READY_TIMEOUT,
    )
    _wait("kube-scheduler", lambda: _scheduler_ready(sched_port), services, READY_TIMEOUT)
    # The control-plane Node: KWOK makes it Ready, node-lifecycle-controller then lifts the
    # not-ready taint; both prove those components work.
    api.create(
        fake_node(
            CONTROL_PLANE_NODE,
            labels={CONTROL_PLANE_TAINT_KEY: ""},
            taints=[CONTROL_PLANE_TAINT],
        )
    )
    _wait("kwok", lambda: node_ready(api.get_node(CONTROL_PLANE_NODE)), services, READY_TIMEOUT)
    # Admission needs the default ServiceAccount before it admits any pod.
    _wait(
        "serviceaccount-controller",
        lambda: api.exists(CORE, "ServiceAccount", "default", "default"),
        services,
        READY_TIMEOUT,
    )
    if nfd_namespace:
        plane.nfd_metrics = _start_nfd(plane, api, kc, services)
    plane.started_in = round(time.monotonic() - t0, 2)
    return plane


def _spawn_scheduler(
    workdir: Path,
    kubeconfig: Path,
    port: int,
    config: dict[str, Any] | None,
    minor: str,
    name: str = "kube-scheduler",
) -> Service:
    args = [
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
    ]
    if config is None:
        args += [f"--kubeconfig={kubeconfig}", "--leader-elect=false"]
    else:
        # With --config, kube-scheduler ignores --kubeconfig and --leader-elect: they go in the
        # file (the fleet's own profile, with this control plane's connection).
        doc = {
            **config,
            "clientConnection": {"kubeconfig": str(kubeconfig)},
            "leaderElection": {"leaderElect": False},
        }
        path = workdir / f"{name}-config.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        args.append(f"--config={path}")
    return replace(
        process.spawn(
            plane_tool("kube-scheduler", minor), args, log=workdir / "logs" / f"{name}.log"
        ),
        name=name,
    )


def _scheduler_ready(port: int) -> bool:
    return _http_ok(f"https://127.0.0.1:{port}/readyz", context=_insecure())


def _start_nfd(plane: ControlPlane, api: ApiClient, kc: str, services: list[Service]) -> str:
    api.apply_crds(nfd_crds())
    api.create({"apiVersion": CORE, "kind": "Namespace", "metadata": {"name": plane.nfd_namespace}})
    service, metrics = _spawn_nfd(plane, kc, services)
    services.append(service)
    return metrics


def _spawn_nfd(plane: ControlPlane, kc: str, services: list[Service]) -> tuple[Service, str]:
    """nfd-master with the plane's `nfd_args` and `nfd_conf`, on a port of its own; waits until
    it is healthy. (service, its metrics URL)."""
    port = _free_port()
    conf = plane.workdir / "nfd-master.conf"
    conf.write_text(plane.nfd_conf)
    service = process.spawn(
        "nfd-master",
        [kc, f"-port={port}", *plane.nfd_args, f"-config={conf}"],
        env={"NODE_NAME": CONTROL_PLANE_NODE, "KUBERNETES_NAMESPACE": plane.nfd_namespace},
        log=plane.workdir / "logs" / "nfd-master.log",
    )
    _wait(
        "nfd-master",
        lambda: _http_ok(f"http://127.0.0.1:{port}/healthz"),
        [*services, service],
        READY_TIMEOUT,
    )
    return service, f"http://127.0.0.1:{port}/metrics"


RESET_TIMEOUT = 120.0


def sim_labelled(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` marked as scaffolding (SIM_LABEL)."""
    obj.setdefault("metadata", {}).setdefault("labels", {})[SIM_LABEL] = "true"
    return obj


@dataclass(frozen=True)
class ResetRules:
    """What a reset clears beyond the plane's own rule (every namespace but the system ones and
    nfd-master's, every node but the control plane's), and what it keeps: the caller's, who knows
    what it put on the plane. Every rule is generic: namespaces, label selectors, kinds."""

    keep_namespaces: frozenset[str] = frozenset()
    """Namespaces that outlive a reset, besides the system ones and nfd-master's."""
    keep_pods: frozenset[str] = frozenset()
    """Kept namespaces whose pods stay too (in every other namespace, pods go)."""
    sweep: tuple[tuple[str, str], ...] = ()
    """(namespace, label selector): objects of every kind in a kept namespace that go."""
    cluster_selector: str = ""
    """Cluster-scoped objects of every kind with this label go, and the reset waits until they
    are gone ('': none go)."""
    purge: tuple[tuple[str, str, str], ...] = ()
    """(apiVersion, kind, namespace): every object of the kind in the namespace goes, where the
    API server serves the kind."""
    finalized: tuple[tuple[str, str], ...] = ()
    """(apiVersion, kind) of objects whose finalizers the reset strips once they are being
    deleted outside the kept namespaces: the controller that would remove them does not run
    here, or not in time."""


# The plane's own rule alone: nothing of its users' kept, no cluster-scoped object of theirs swept.
NO_RULES = ResetRules()


def reset(plane: ControlPlane, rules: ResetRules = NO_RULES) -> None:
    """Bring the control plane back to how it started, so the next run sees no trace of the
    last: every namespace but the system ones and the kept, every node but the control plane's,
    and what `rules` name. CRDs stay (the next run installs the same pinned ones)."""
    api = plane.client()
    api.refresh()
    own = {plane.nfd_namespace} - {""}
    keep = SYSTEM_NAMESPACES | own | rules.keep_namespaces
    for ns in api.list(CORE, "Namespace"):
        if ns["metadata"]["name"] not in keep:
            api.delete(CORE, "Namespace", "", ns["metadata"]["name"])
    for api_version, kind, space in rules.purge:
        if api.serves(api_version, kind):
            for obj in api.list(api_version, kind, space):
                api.delete(api_version, kind, space, obj["metadata"]["name"])
    deleted: list[tuple[str, str, str]] = []
    for (api_version, kind), res in sorted(api.resources().items()):
        if kind in ("Namespace", "Node", "Event") or not res.deletable:
            continue
        if res.namespaced:
            # What the rules sweep from namespaces that stay.
            for space, selector in rules.sweep:
                for obj in api.list(api_version, kind, space, selector=selector):
                    api.delete(api_version, kind, space, obj["metadata"]["name"], grace=0)
            continue
        if not rules.cluster_selector:
            continue
        for obj in api.list(api_version, kind, selector=rules.cluster_selector):
            api.delete(api_version, kind, "", obj["metadata"]["name"])
            deleted.append((api_version, kind, obj["metadata"]["name"]))
    pods_stay = SYSTEM_NAMESPACES | rules.keep_pods

    def clean() -> bool:
        # No kubelet confirms that a container stopped: pods go at once (grace period 0),
        # before their nodes, or the namespace controller waits for them for ever; in kept
        # namespaces too (no pod-GC controller runs to remove a pod whose node is gone).
        pods = [p for p in api.list(CORE, "Pod") if p["metadata"]["namespace"] not in pods_stay]
        for pod in pods:
            api.delete(CORE, "Pod", pod["metadata"]["namespace"], pod["metadata"]["name"], grace=0)
            _unfinalize(api, pod)
        for finalized in rules.finalized:
            if api.serves(*finalized):
                for obj in api.list(*finalized):
                    if obj["metadata"].get("namespace") not in keep:
                        _unfinalize(api, obj)
        if pods:
            return False
        # A cluster-scoped object still being deleted would take the next run's object of the
        # same name with it (a finalizer holds it).
        for version, kind_name, name in deleted:
            left = api.get(version, kind_name, "", name)
            if left is not None:
                _unfinalize(api, left)
                return False
        nodes = {n["metadata"]["name"] for n in api.list(CORE, "Node")}
        for name in nodes - {CONTROL_PLANE_NODE}:
            api.delete(CORE, "Node", "", name, grace=0)
        namespaces = {n["metadata"]["name"] for n in api.list(CORE, "Namespace")}
        if namespaces - keep and _emptied(api, namespaces - keep):
            for name in sorted(namespaces - keep):
                _finalize_namespace(api, name)
            namespaces = {n["metadata"]["name"] for n in api.list(CORE, "Namespace")}
        return namespaces <= keep and nodes == {CONTROL_PLANE_NODE}

    _wait("reset", clean, plane.services, RESET_TIMEOUT)
    api.refresh()


def _emptied(api: ApiClient, doomed: set[str]) -> bool:
    """Delete what is left in the namespaces being deleted; True once nothing is.

    The namespace controller would do the same, but it first waits 5 s after a namespace's
    deletion and then, while anything is left, half the estimate plus a second each round
    (kube-controller-manager v1.36: pkg/controller/namespace, namespaceDeletionGracePeriod and
    the worker's ResourcesRemainingError requeue): seconds per reset, every test of the
    control plane. The API server creates nothing new in a terminating namespace
    (NamespaceLifecycle admission), so once every listed kind is empty there, nothing is left to
    reappear when a namespace of that name is created again."""
    left = False
    for (api_version, kind), res in sorted(api.resources().items()):
        if not res.namespaced or not res.deletable:
            continue
        try:
            items = api.list(api_version, kind)
        except ApiError:
            return False  # a kind that cannot be listed now: the namespace controller's turn
        for obj in items:
            meta = obj["metadata"]
            if meta.get("namespace") not in doomed:
                continue
            left = True
            if meta.get("deletionTimestamp"):
                _unfinalize(api, obj)
            else:
                api.delete(api_version, kind, meta["namespace"], meta["name"], grace=0)
    return not left


def _finalize_namespace(api: ApiClient, name: str) -> None:
    """Remove the namespace controller's finalizer from an emptied namespace, as that
    controller does once it finds it empty (the namespace's `finalize` subresource)."""
    ns = api.get(CORE, "Namespace", "", name)
    if ns is None:
        return
    ns.setdefault("spec", {})["finalizers"] = []
    with contextlib.suppress(ApiError):
        api.request("PUT", api.path(CORE, "Namespace", "", name) + "/finalize", ns)


def _unfinalize(api: ApiClient, obj: dict[str, Any]) -> None:
    meta = obj["metadata"]
    if meta.get("finalizers") and meta.get("deletionTimestamp"):
        kind = (str(obj["apiVersion"]), str(obj["kind"]))
        with contextlib.suppress(ApiError):
            api.merge_patch(
                *kind, meta.get("namespace", ""), meta["name"], {"metadata": {"finalizers": None}}
            )


# The address kwok gives every node it manages (one for all: nothing here connects to it).
NODE_IP = "10.243.0.1"


def fake_node(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    capacity: dict[str, str] | None = None,
    unschedulable: bool = False,
) -> dict[str, Any]:
    """A Node that KWOK manages (it reports it Ready and keeps its status)."""
    cap = {"cpu": "64", "memory": "512Gi", "pods": "110", **(capacity or {})}
    node: dict[str, Any] = {
        "apiVersion": CORE,
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_NODE_ANNOTATION: "fake"},
            "labels": {
                HOSTNAME_LABEL: name,
                OS_LABEL: "linux",
                ARCH_LABEL: "amd64",
                "type": "kwok",
                **(labels or {}),
            },
        },
        "spec": {"taints": list(taints or []), "unschedulable": unschedulable},
        "status": {"capacity": cap, "allocatable": dict(cap)},
    }
    return node


def node_ready(node: dict[str, Any] | None) -> bool:
    if node is None:
        return False
    conditions = node.get("status", {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    taints = node.get("spec", {}).get("taints") or []
    return ready and not any(t.get("key") == NOT_READY_TAINT_KEY for t in taints)


def metrics(url: str) -> dict[str, float]:
    """Prometheus text exposition -> {'name{labels}': value} (enough for counters)."""
    with urllib.request.urlopen(url, timeout=5) as resp:
        text = resp.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            with contextlib.suppress(ValueError):
                out[key] = float(value)
    return out


__all__ = [
    "CONTROL_PLANE_NODE",
    "ControlPlane",
    "ControlPlaneError",
    "ResetRules",
    "fake_node",
    "local_control_plane",
    "metrics",
    "node_ready",
    "reset",
    "sim_labelled",
]
