"""Where dry-run and simulate run: the local control plane, or a user's cluster (kubeconfig).

A user's cluster is reached through ``kubectl proxy`` on a free loopback port: kubectl (built
from the same pinned Kubernetes) reads the kubeconfig, so every authentication method it supports
(tokens, client certificates, exec plugins of cloud providers) works, and the API client only ever
speaks plain HTTP to loopback.
"""

from __future__ import annotations

import contextlib
import re
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.controlplane.api import ApiClient, ApiError
from generator.controlplane.launcher import ControlPlane, local_control_plane
from generator.toolchain import process
from generator.toolchain.errors import ToolError
from generator.toolchain.registry import DEFAULT_MINOR

PROXY_TIMEOUT = 30.0
_SERVING = re.compile(r"Starting to serve on 127\.0\.0\.1:(\d+)")


@dataclass
class Target:
    client: ApiClient
    local: bool
    """The throwaway local control plane (CRDs and namespaces may be created for real)."""
    version: str
    """The API server's version, e.g. v1.36.3."""
    plane: ControlPlane | None = None

    @property
    def minor(self) -> str:
        match = re.match(r"v?(\d+)\.(\d+)", self.version)
        return f"{match.group(1)}.{match.group(2)}" if match else ""


def server_version(client: ApiClient) -> str:
    info: dict[str, Any] = client.request("GET", "/version")
    return str(info.get("gitVersion", ""))


def on_plane(plane: ControlPlane) -> Target:
    client = plane.client()
    return Target(client, True, server_version(client), plane)


@contextlib.contextmanager
def local(minor: str = DEFAULT_MINOR) -> Iterator[Target]:
    """A local control plane of the Kubernetes `minor` (without nfd-master) for this block."""
    with local_control_plane(minor=minor) as plane:
        yield on_plane(plane)


@contextlib.contextmanager
def kubeconfig(path: Path, context: str | None = None) -> Iterator[Target]:
    """A user's cluster through ``kubectl proxy --kubeconfig PATH``."""
    if not path.is_file():
        raise ToolError(f"kubeconfig {path} does not exist")
    with contextlib.ExitStack() as stack:
        log_dir = Path(stack.enter_context(_tempdir()))
        args = ["proxy", f"--kubeconfig={path}", "--port=0", "--address=127.0.0.1"]
        if context:
            args.append(f"--context={context}")
        proxy = process.spawn("kubectl", args, log=log_dir / "kubectl-proxy.log")
        stack.callback(process.terminate, proxy, 5.0)
        deadline = time.monotonic() + PROXY_TIMEOUT
        port = ""
        while not port:
            proxy.check()
            match = _SERVING.search(proxy.log_tail(50))
            if match:
                port = match.group(1)
            elif time.monotonic() > deadline:
                raise ToolError(f"kubectl proxy did not start: {proxy.log_tail()}")
            else:
                time.sleep(0.05)
        client = ApiClient(f"http://127.0.0.1:{port}")
        try:
            version = server_version(client)
        except ApiError as exc:
            raise ToolError(f"cannot reach the cluster of {path}: {exc}") from exc
        yield Target(client, False, version)


@contextlib.contextmanager
def _tempdir() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="accel-proxy-") as tmp:
        yield tmp
