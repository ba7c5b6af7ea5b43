"""A small Kubernetes API client over the standard library: discovery, server-side apply (with or
without dry-run), get, list, create, delete.

Why not kubectl per object: a fleet of thousands of objects would spend minutes starting kubectl;
one keep-alive HTTPS connection per thread applies an object in milliseconds, and every refusal
comes back as a structured Status naming the object. A user's cluster is reached through
``kubectl proxy`` (generator/controlplane/target.py), so every kubeconfig authentication method that
kubectl supports works, and this client only ever speaks to loopback.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import time
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.toolchain.errors import ToolError
from generator.vocab.api import CORE
from generator.vocab.objects import Obj

FIELD_MANAGER = "accel-gitops"
TIMEOUT = 60.0


# How long a request answered 429 is tried again (ApiClient.request_warned).
TOO_MANY_REQUESTS_WAIT = 30.0


class ApiError(ToolError):
    """The API server refused a request (or could not be reached)."""

    def __init__(self, status: int, reason: str, message: str, body: Obj | None = None) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body or {}
        super().__init__(f"{status} {reason}: {message}")

    @property
    def causes(self) -> list[Obj]:
        details = self.body.get("details") or {}
        causes: list[Obj] = details.get("causes") or []
        return causes


class UnknownKind(ToolError):
    """The API server serves no resource for an apiVersion and kind."""

    def __init__(self, api_version: str, kind: str) -> None:
        self.api_version = api_version
        self.kind = kind
        super().__init__(f"the API server does not serve {kind} in {api_version}")


@dataclass(frozen=True)
class Resource:
    plural: str
    namespaced: bool
    deletable: bool = True


class ApiClient:
    def __init__(self, server: str, *, token: str = "", ca_file: Path | None = None) -> None:
        url = urllib.parse.urlsplit(server)
        self._https = url.scheme == "https"
        self._host = url.hostname or "127.0.0.1"
        self._port = url.port or (443 if self._https else 80)
        self._token = token
        self._ssl: ssl.SSLContext | None = None
        if self._https:
            self._ssl = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
            # The local apiserver's self-signed certificate names 127.0.0.1 as an IP SAN.
        self._local = threading.local()
        self._resources: dict[tuple[str, str], Resource] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------------ transport

    def _conn(self) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._https:
                conn = http.client.HTTPSConnection(
                    self._host, self._port, timeout=TIMEOUT, context=self._ssl
                )
            else:
                conn = http.client.HTTPConnection(self._host, self._port, timeout=TIMEOUT)
            self._local.conn = conn
        return conn

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        query: dict[str, str] | None = None,
    ) -> Any:
        """Send one request; return the decoded JSON body; raise ApiError on a non-2xx status."""
        return self.request_warned(method, path, body, content_type=content_type, query=query)[0]

    def request_warned(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        query: dict[str, str] | None = None,
    ) -> tuple[Any, list[str]]:
        """:meth:`request`, and the server's warnings (Warning headers: Pod Security...). A 429
        (the API server's "storage is (re)initializing" for a kind whose watch cache restarts,
        as after a CRD change) is tried again, up to TOO_MANY_REQUESTS_WAIT seconds."""
        deadline = time.monotonic() + TOO_MANY_REQUESTS_WAIT
        while True:
            try:
                return self._request_once(
                    method, path, body, content_type=content_type, query=query
                )
            except ApiError as exc:
                if exc.status != 429 or time.monotonic() > deadline:
                    raise
            time.sleep(0.5)

    def _request_once(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        query: dict[str, str] | None = None,
    ) -> tuple[Any, list[str]]:
        if query:
            path = f"{path}?{urllib.parse.urlencode(query)}"
        headers = {"Accept": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        for attempt in (1, 2):
            conn = self._conn()
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
                warnings = [_warning_text(w) for w in resp.headers.get_all("Warning") or []]
                break
            except (http.client.HTTPException, ConnectionError, TimeoutError, OSError) as exc:
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    raise ApiError(0, "Unreachable", f"{method} {path}: {exc}") from exc
        try:
            decoded = json.loads(raw) if raw else {}
        except ValueError:
            decoded = {"message": raw.decode("utf-8", "replace")}
        if resp.status >= 300:
            message = decoded.get("message", "") if isinstance(decoded, dict) else str(decoded)
            reason = decoded.get("reason", resp.reason) if isinstance(decoded, dict) else ""
            raise ApiError(resp.status, str(reason), str(message), decoded)
        return decoded, warnings

    # ------------------------------------------------------------------------------ discovery

    def refresh(self) -> None:
        """Re-read what the API server serves (after CRDs became Established)."""
        found: dict[tuple[str, str], Resource] = {}
        groups = self.request("GET", "/apis").get("groups", [])
        paths = ["/api/v1"] + [f"/apis/{v['groupVersion']}" for g in groups for v in g["versions"]]
        for path in paths:
            try:
                listing = self.request("GET", path)
            except ApiError:
                continue  # an aggregated API that is not available
            gv = listing.get("groupVersion", CORE)
            for res in listing.get("resources", []):
                if "/" in res["name"]:
                    continue  # subresources
                verbs = set(res.get("verbs") or [])
                found[(gv, res["kind"])] = Resource(
                    res["name"], bool(res["namespaced"]), {"list", "delete"} <= verbs
                )
        with self._lock:
            self._resources = found

    def resources(self) -> dict[tuple[str, str], Resource]:
        if not self._resources:
            self.refresh()
        return dict(self._resources)

    def resource(self, api_version: str, kind: str) -> Resource:
        if not self._resources:
            self.refresh()
        res = self._resources.get((api_version, kind))
        if res is None:
            raise UnknownKind(api_version, kind)
        return res

    def serves(self, api_version: str, kind: str) -> bool:
        try:
            self.resource(api_version, kind)
        except UnknownKind:
            return False
        return True

    def path(self, api_version: str, kind: str, namespace: str = "", name: str = "") -> str:
        res = self.resource(api_version, kind)
        prefix = "/api/v1" if api_version == CORE else f"/apis/{api_version}"
        parts = [prefix]
        if res.namespaced and namespace:
            parts.append(f"namespaces/{urllib.parse.quote(namespace)}")
        parts.append(res.plural)
        if name:
            parts.append(urllib.parse.quote(name))
        return "/".join(parts)

    def _obj_path(self, obj: Obj, with_name: bool = True) -> str:
        meta = obj.get("metadata") or {}
        res = self.resource(str(obj.get("apiVersion")), str(obj.get("kind")))
        ns = str(meta.get("namespace") or ("default" if res.namespaced else ""))
        return self.path(
            str(obj["apiVersion"]), str(obj["kind"]), ns, str(meta["name"]) if with_name else ""
        )

    # ------------------------------------------------------------------------------- verbs

    def apply(self, obj: Obj, *, dry_run: bool = False, force: bool = True) -> Obj:
        """Server-side apply (what Argo CD does with ServerSideApply=true)."""
        return self.apply_warned(obj, dry_run=dry_run, force=force)[0]

    def apply_warned(
        self, obj: Obj, *, dry_run: bool = False, force: bool = True
    ) -> tuple[Obj, list[str]]:
        query = {"fieldManager": FIELD_MANAGER, "force": "true" if force else "false"}
        if dry_run:
            query["dryRun"] = "All"
        result, warnings = self.request_warned(
            "PATCH",
            self._obj_path(obj),
            obj,
            content_type="application/apply-patch+yaml",
            query=query,
        )
        return result, warnings

    def create(self, obj: Obj, *, dry_run: bool = False) -> Obj:
        query = {"fieldManager": FIELD_MANAGER}
        if dry_run:
            query["dryRun"] = "All"
        result: Obj = self.request("POST", self._obj_path(obj, with_name=False), obj, query=query)
        return result

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Obj | None:
        try:
            result: Obj = self.request("GET", self.path(api_version, kind, namespace, name))
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise
        return result

    def exists(self, api_version: str, kind: str, namespace: str, name: str) -> bool:
        return self.get(api_version, kind, namespace, name) is not None

    def get_node(self, name: str) -> Obj | None:
        return self.get(CORE, "Node", "", name)

    def list(
        self, api_version: str, kind: str, namespace: str = "", *, selector: str = ""
    ) -> list[Obj]:
        query = {"labelSelector": selector} if selector else None
        items: list[Obj] = self.request(
            "GET", self.path(api_version, kind, namespace), query=query
        ).get("items", [])
        for item in items:
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
        return items

    def delete(
        self, api_version: str, kind: str, namespace: str, name: str, *, grace: int | None = None
    ) -> None:
        body = {"propagationPolicy": "Background"}
        if grace is not None:
            body["gracePeriodSeconds"] = grace  # type: ignore[assignment]
        try:
            self.request("DELETE", self.path(api_version, kind, namespace, name), body)
        except ApiError as exc:
            if exc.status != 404:
                raise

    def merge_patch(
        self, api_version: str, kind: str, namespace: str, name: str, patch: Obj
    ) -> Obj:
        result: Obj = self.request(
            "PATCH",
            self.path(api_version, kind, namespace, name),
            patch,
            content_type="application/merge-patch+json",
        )
        return result

    # -------------------------------------------------------------------------------- CRDs

    def apply_crds(self, crds: Iterable[Obj], timeout: float = 60.0) -> None:
        """Apply CRDs for real and wait until discovery lists every kind they serve.

        Not only until each is Established: the discovery documents are rebuilt after the
        condition, by controllers that work from their own queues, and list Established CRDs
        only (k8s.io/apiextensions-apiserver v0.36.3 pkg/apiserver/
        customresource_discovery_controller.go; k8s.io/kubernetes v1.36.3
        pkg/controlplane/controller/crdregistration registers the group with the aggregator that
        serves /apis). So a kind discovery lists is one the server serves."""
        applied = list(crds)
        for crd in applied:
            self.apply(crd)
        deadline = time.monotonic() + timeout
        wanted = {pair for crd in applied for pair in served_kind(crd)}
        while True:
            self.refresh()
            missing = wanted - set(self._resources)
            if not missing:
                return
            if time.monotonic() > deadline:
                raise ApiError(
                    0, "Timeout", f"CRDs not in discovery after {timeout:g} s: {sorted(missing)}"
                )
            time.sleep(0.1)


def served_kind(crd: Obj) -> set[tuple[str, str]]:
    """(apiVersion, kind) pairs a CRD serves."""
    spec = crd["spec"]
    return {
        (f"{spec['group']}/{v['name']}", str(spec["names"]["kind"]))
        for v in spec.get("versions", [])
        if v.get("served", True)
    }


def _warning_text(header: str) -> str:
    """RFC 7234 Warning header value `299 - "text"` -> text."""
    code, _, rest = header.partition(" ")
    _, _, quoted = rest.partition(" ")
    text = quoted.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1].replace('\\"', '"')
    return text if code.isdigit() else header


__all__ = [
    "FIELD_MANAGER",
    "ApiClient",
    "ApiError",
    "Obj",
    "Resource",
    "UnknownKind",
    "served_kind",
]
