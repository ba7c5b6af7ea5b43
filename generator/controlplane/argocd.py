"""Argo CD beside the local control plane: its application controller and repo-server, the real
binaries of argo-cd v3.2.6 (`make tools-cluster`, gotools/argocd/go.mod), with an in-memory Redis,
installed as docs/argocd.md tells a site to install its own: the CRDs, the namespace, `argocd-cm`
with the Application health check restored, and a cluster Secret for each cluster an Application
names.

What differs from a site's Argo CD, and why (docs/simulation.md):
- The two run as processes on this machine, not as the release's Deployment and StatefulSet
  (containers do not run on simulated nodes), with the control plane's admin credentials, so
  Argo CD's RBAC is not exercised. The application controller reaches the cluster it runs in
  (`https://kubernetes.default.svc`) through the plane's kubeconfig: ARGOCD_FAKE_IN_CLUSTER, the
  switch argo-cd's own core mode sets (cmd/argocd/commands/headless/headless.go;
  pkg/apis/application/v1alpha1/types.go, Cluster.RawRestConfig).
- Redis is miniredis, in memory, as in Argo CD's core mode: nothing is kept between runs.
- No argocd-server, Dex, notifications or ApplicationSet controller: nothing the fleet renders
  needs them to sync.
- Resource health is kept in the Application's status (--persist-resource-health), which only
  changes where Argo CD stores what it decides, so that the simulation can say which resource
  keeps an Application from Healthy.
- GnuPG signature verification is off (ARGOCD_GPG_ENABLED=false): the fleet's Applications ask
  for none, and the release's keyring folder (/app/config/gpg) does not exist here.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from generator.controlplane.api import ApiClient, ApiError, Obj
from generator.controlplane.launcher import (
    READY_TIMEOUT,
    STOP_GRACE,
    ControlPlane,
    _free_port,
    _wait,
    sim_labelled,
)
from generator.toolchain import process as tool_process
from generator.toolchain.modules import module_dir
from generator.toolchain.registry import ARGOCD_MODULE, tools_dir
from generator.vocab.api import ARGOCD, CORE
from generator.vocab.kube import ARGOCD_PART_OF_LABEL, ARGOCD_SECRET_TYPE_LABEL

# argo-cd v3.2.6 manifests/crds: the two kinds the fleet renders (no ApplicationSets).
CRD_FILES = ("manifests/crds/application-crd.yaml", "manifests/crds/appproject-crd.yaml")
# The Application health check docs/argocd.md asks a site to add to argocd-cm (argo-cd
# docs/operator-manual/health.md, "Argocd App"): without it a wave of Applications does not wait
# for the one before it. tests/controlplane/test_argocd.py holds the two equal.
APPLICATION_HEALTH = """\
hs = {}
hs.status = "Progressing"
hs.message = ""
if obj.status ~= nil then
  if obj.status.health ~= nil then
    hs.status = obj.status.health.status
    if obj.status.health.message ~= nil then
      hs.message = obj.status.health.message
    end
  end
end
return hs
"""
HEALTH_KEY = "resource.customizations.health.argoproj.io_Application"
# argo-cd v3.2.6 common/common.go: what marks Argo CD's own ConfigMaps and Secrets, and a
# cluster Secret.
PART_OF = {ARGOCD_PART_OF_LABEL: "argocd"}


@dataclass(frozen=True)
class ArgoCD:
    """A running Argo CD: the namespace it watches and the address of its repo-server."""

    namespace: str
    repo_server: str
    logs: Path


def install_objects(namespace: str, clusters: dict[str, str], plane: ControlPlane) -> list[Obj]:
    """The namespace, ConfigMaps and Secrets Argo CD reads at start (argo-cd v3.2.6
    util/settings/settings.go: argocd-cm, argocd-secret with its server.secretkey, which the
    application controller refuses to work without), and a cluster Secret per name in `clusters`
    (registered name -> the plane's server URL: the plane stands in for that cluster)."""
    ca = base64.b64encode(plane.ca_file.read_bytes()).decode()
    out: list[Obj] = [
        {"apiVersion": CORE, "kind": "Namespace", "metadata": {"name": namespace}},
        {
            "apiVersion": CORE,
            "kind": "ConfigMap",
            "metadata": {"name": "argocd-cm", "namespace": namespace, "labels": PART_OF},
            "data": {HEALTH_KEY: APPLICATION_HEALTH},
        },
        {
            "apiVersion": CORE,
            "kind": "Secret",
            "metadata": {"name": "argocd-secret", "namespace": namespace, "labels": PART_OF},
            "stringData": {"server.secretkey": secrets.token_urlsafe(32)},
        },
    ]
    for name, server in sorted(clusters.items()):
        config = {"bearerToken": plane.token, "tlsClientConfig": {"caData": ca}}
        out.append(
            {
                "apiVersion": CORE,
                "kind": "Secret",
                "metadata": {
                    "name": f"cluster-{name}",
                    "namespace": namespace,
                    "labels": {ARGOCD_SECRET_TYPE_LABEL: "cluster"},
                },
                "stringData": {"name": name, "server": server, "config": json.dumps(config)},
            }
        )
    return out


def forget(api: ApiClient, namespace: str) -> None:
    """Every Application and AppProject gone, while Argo CD still runs, without the resources
    finalizer's cascade (what they deployed is the plane's reset's to remove): nothing of one
    run's Argo CD is left for the next to act on."""
    for kind in ("Application", "AppProject"):
        for obj in api.list(ARGOCD, kind, namespace):
            name = obj["metadata"]["name"]
            api.merge_patch(ARGOCD, kind, namespace, name, {"metadata": {"finalizers": None}})
            api.delete(ARGOCD, kind, namespace, name)


def crds() -> list[Obj]:
    root = module_dir("argocd", ARGOCD_MODULE)
    return [yaml.safe_load((root / rel).read_text(encoding="utf-8")) for rel in CRD_FILES]


def _listening(port: int) -> bool:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def running(plane: ControlPlane, namespace: str, clusters: dict[str, str]) -> Iterator[ArgoCD]:
    """Install Argo CD on `plane` and run it until the block ends (then stop it: nothing of it
    is kept for the next environment but what the plane's reset removes)."""
    api = plane.client()
    api.apply_crds(crds())
    for obj in install_objects(namespace, clusters, plane):
        api.apply(sim_labelled(obj))  # scaffolding: the plane's reset removes it
    home = plane.workdir / "argocd"
    for folder in ("home", "tls", "ssh"):
        (home / folder).mkdir(parents=True, exist_ok=True)
    # The repo-server runs git, kustomize and helm: the pinned ones first.
    path = f"{tools_dir() / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    common = {"PATH": path, "HOME": str(home / "home"), "ARGOCD_GPG_ENABLED": "false"}
    redis_port, repo_port = _free_port(), _free_port()
    redis = f"127.0.0.1:{redis_port}"
    services: list[tool_process.Service] = []
    try:
        services.append(
            tool_process.spawn(
                "argocd-redis", ["-addr", redis], log=plane.logs() / "argocd-redis.log"
            )
        )
        _wait("argocd-redis", lambda: _listening(redis_port), services, READY_TIMEOUT)
        services.append(
            tool_process.spawn(
                "argocd",
                [
                    *("--port", str(repo_port), "--metrics-port", str(_free_port())),
                    *("--disable-tls", "--redis", redis, "--logformat", "text"),
                ],
                log=plane.logs() / "argocd-repo-server.log",
                env={
                    **common,
                    "ARGOCD_BINARY_NAME": "argocd-repo-server",
                    "ARGOCD_TLS_DATA_PATH": str(home / "tls"),
                    "ARGOCD_SSH_DATA_PATH": str(home / "ssh"),
                },
            )
        )
        _wait("argocd-repo-server", lambda: _listening(repo_port), services, READY_TIMEOUT)
        services.append(
            tool_process.spawn(
                "argocd",
                [
                    *("--namespace", namespace, "--kubeconfig", str(plane.kubeconfig)),
                    *("--repo-server", f"127.0.0.1:{repo_port}", "--repo-server-plaintext"),
                    *("--redis", redis, "--metrics-port", str(_free_port())),
                    *("--logformat", "text"),
                    # Each resource's health in the Application's status, as before v3.0 (off
                    # by default since: argo-cd v3.2.6 docs/operator-manual/upgrading/
                    # 2.14-3.0.md): what the judge names when an Application is not Healthy.
                    "--persist-resource-health",
                ],
                log=plane.logs() / "argocd-application-controller.log",
                env={
                    **common,
                    "ARGOCD_BINARY_NAME": "argocd-application-controller",
                    "ARGOCD_FAKE_IN_CLUSTER": "true",
                    "KUBECONFIG": str(plane.kubeconfig),
                },
            )
        )
        yield ArgoCD(namespace, f"127.0.0.1:{repo_port}", plane.logs())
    finally:
        # However the block ended (a failed wait, a test's assertion), while Argo CD still runs.
        with contextlib.suppress(ApiError):
            forget(api, namespace)
        for service in reversed(services):
            tool_process.terminate(service, STOP_GRACE)
