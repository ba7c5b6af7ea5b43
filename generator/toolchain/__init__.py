"""The single wrapper around the external tools this project runs.

Every subprocess call to kustomize, kubeconform, promtool, the NFD tools, go or git goes through
:func:`run`, which finds the pinned binary, applies a timeout, and turns every failure into a
:class:`ToolError` (long-running tools, the local control plane's components, go through
:func:`spawn` and :func:`terminate` instead):

* :class:`ToolMissing` -- the tool is not installed; the message names the install command;
* :class:`ToolFailed` -- it exited non-zero (carries argv, exit code, stdout and stderr);
* :class:`ToolTimeout` -- it ran longer than the timeout (and was killed).

Where tools are looked for: first ``<tools dir>/bin`` -- the tools dir is ``.tools`` in the
repository root (the parent of the ``generator`` package directory), or ``$ACCEL_GITOPS_TOOLS_DIR``
when set -- then, for promtool, go and git only, ``PATH``. kustomize, kubeconform and the NFD tools
are used only from the tools dir: they are pinned in ``tools/*/go.mod`` and built by ``make tools``.

The same tools dir holds the JSON Schemas kubeconform validates against (``schemas/k8s`` and
``schemas/crds``, built by ``make tools`` from ``tools/schemas.lock.yaml``); see
:func:`k8s_schema_location` and :func:`crd_schema_location`.

This module never prints and never exits the process.
"""

from __future__ import annotations

import mmap
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from generator.errors import GeneratorError

__all__ = [
    "ENV_TOOLS_DIR",
    "INSTALL_COMMAND",
    "TOOLS",
    "GoBuildInfo",
    "Service",
    "Tool",
    "ToolError",
    "ToolExited",
    "ToolFailed",
    "ToolMissing",
    "ToolStatus",
    "ToolTimeout",
    "crd_schema_location",
    "doctor",
    "find",
    "go_build_info",
    "k8s_schema_location",
    "k8s_schema_versions",
    "kubeconform_kubernetes_version",
    "kubeconform_schema_args",
    "popen",
    "repo_root",
    "require",
    "run",
    "spawn",
    "terminate",
    "tools_dir",
    "version",
]

ENV_TOOLS_DIR = "ACCEL_GITOPS_TOOLS_DIR"
INSTALL_COMMAND = "make tools"


# ---------------------------------------------------------------------------------------- errors


class ToolError(GeneratorError):
    """Base class of every failure to run an external tool."""


class ToolMissing(ToolError):
    """The tool (or the schema set) is not installed where it is looked for."""

    def __init__(self, tool: str, install_hint: str, looked_in: Sequence[str] = ()) -> None:
        self.tool = tool
        self.install_hint = install_hint
        self.looked_in = tuple(looked_in)
        where = f" (looked in {', '.join(self.looked_in)})" if self.looked_in else ""
        super().__init__(f"{tool} not found{where}; install it with: {install_hint}")


class ToolFailed(ToolError):
    """The tool ran and exited with a non-zero code."""

    def __init__(self, argv: Sequence[str], returncode: int, stdout: bytes, stderr: bytes) -> None:
        self.argv = tuple(argv)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        detail = (
            stderr.decode("utf-8", "replace").strip() or stdout.decode("utf-8", "replace").strip()
        )
        if len(detail) > 2000:
            detail = detail[:2000] + " [...]"
        super().__init__(f"{' '.join(self.argv)} exited with {returncode}: {detail}")


class ToolTimeout(ToolError):
    """The tool ran longer than its timeout and was killed."""

    def __init__(self, argv: Sequence[str], timeout: float, stdout: bytes, stderr: bytes) -> None:
        self.argv = tuple(argv)
        self.timeout = timeout
        self.stdout = stdout
        self.stderr = stderr
        super().__init__(f"{' '.join(self.argv)} timed out after {timeout:g} s")


# -------------------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class Tool:
    """How one external tool is pinned, obtained and found."""

    name: str
    pinned: str
    """Pinned version ('' when any version is accepted)."""
    source: str
    """Where the pinned build comes from."""
    install_hint: str
    search_path: bool
    """Whether PATH is searched after the tools dir."""
    go_module: str | None = None
    """Module whose version the binary's Go build info must report (Go-built tools)."""


def _go(
    name: str,
    module: str,
    version: str,
    folder: str,
    *,
    built_from: str = "",
    search_path: bool = False,
) -> Tool:
    """A tool built by `make tools` from a Go module pinned in tools/<folder>/go.mod; its build
    info must report `module` at `version`."""
    where = f"{module}@{version} (tools/{folder}/go.mod)"
    return Tool(
        name=name,
        pinned=version,
        source=f"{built_from} on Go module {where}" if built_from else f"Go module {where}",
        install_hint=INSTALL_COMMAND,
        search_path=search_path,
        go_module=module,
    )


def _system(name: str, source: str, install_hint: str) -> Tool:
    """A tool taken from PATH at whatever version is installed."""
    return Tool(name, "", source, install_hint, search_path=True)


_K8S = ("k8s.io/kubernetes", "v1.36.3")
_NFD = ("sigs.k8s.io/node-feature-discovery", "v0.19.0")

TOOLS: Mapping[str, Tool] = {
    tool.name: tool
    for tool in (
        _go("kustomize", "sigs.k8s.io/kustomize/kustomize/v5", "v5.8.1", "kustomize"),
        _go("kubeconform", "github.com/yannh/kubeconform", "v0.7.0", "kustomize"),
        _go(
            "promtool", "github.com/prometheus/prometheus", "v0.316.0", "promtool", search_path=True
        ),
        # kustomize's build API (kustomize v5.8.1's) and kubeconform v0.7.0 in one process.
        _go(
            "kbuild",
            "sigs.k8s.io/kustomize/api",
            "v0.21.1",
            "kbuild",
            built_from="tools/kbuild with github.com/yannh/kubeconform@v0.7.0",
        ),
        # The control plane behind `validate --dry-run=server` and `simulate` (generator/cluster).
        *(
            _go(name, *_K8S, "controlplane")
            for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
        ),
        _go("etcd", "go.etcd.io/etcd/server/v3", "v3.6.8", "controlplane"),
        _go("kwok", "sigs.k8s.io/kwok", "v0.8.0", "kwok"),
        # Lints this repository's GitHub workflows (make test); the generator never runs it.
        _go("actionlint", "github.com/rhysd/actionlint", "v1.7.12", "actionlint"),
        _go("nfd-master", *_NFD, "nfd"),
        _go("nfd-rulecheck", *_NFD, "nfd", built_from="tools/nfd/cmd/nfd-rulecheck"),
        # Kueue's admission webhooks on rendered Kueue objects (KUE001, generator/validate/kueue).
        _go(
            "kueuecheck",
            "sigs.k8s.io/kueue",
            "v0.17.0",
            "kueuecheck",
            built_from="tools/kueuecheck",
        ),
        _system(
            "openssl",
            "PATH (Debian package openssl; makes the local control plane's signing key)",
            "apt-get install openssl",
        ),
        _go("schedcheck", *_K8S, "schedcheck"),
        _system(
            "go",
            "PATH (Go >= 1.26.7 needed to build the pinned tools)",
            "install Go >= 1.26.7 and put it on PATH",
        ),
        _system("git", "PATH (Debian package git)", "apt-get install git"),
    )
}

# Where go usually lives when it is not on PATH.
_EXTRA_LOCATIONS: Mapping[str, tuple[Path, ...]] = {"go": (Path("/usr/local/go/bin/go"),)}


def repo_root() -> Path:
    """The repository root: the parent of the ``generator`` package directory."""
    return Path(__file__).resolve().parent.parent.parent


def tools_dir() -> Path:
    """``$ACCEL_GITOPS_TOOLS_DIR`` if set, else ``<repo root>/.tools``."""
    override = os.environ.get(ENV_TOOLS_DIR)
    return Path(override) if override else repo_root() / ".tools"


def _tool(name: str) -> Tool:
    try:
        return TOOLS[name]
    except KeyError:
        raise ValueError(f"unknown tool {name!r}; known: {', '.join(sorted(TOOLS))}") from None


def _candidates(tool: Tool) -> tuple[list[Path], list[str]]:
    """(explicit paths to try, descriptions of where we look)."""
    bin_dir = tools_dir() / "bin"
    paths = [bin_dir / tool.name]
    looked = [str(bin_dir)]
    if tool.search_path:
        looked.append("PATH")
    return paths, looked


def find(name: str) -> Path | None:
    """Path of the tool's executable, or None when it is not installed."""
    tool = _tool(name)
    paths, _ = _candidates(tool)
    for p in paths:
        if p.is_file() and os.access(p, os.X_OK):
            return p
    if tool.search_path:
        found = shutil.which(tool.name)
        if found:
            return Path(found)
        for p in _EXTRA_LOCATIONS.get(tool.name, ()):
            if p.is_file() and os.access(p, os.X_OK):
                return p
    return None


def _require(name: str) -> Path:
    tool = _tool(name)
    path = find(name)
    if path is None:
        raise ToolMissing(name, tool.install_hint, _candidates(tool)[1])
    return path


# ------------------------------------------------------------------------------------------- run


def run(
    tool: str,
    args: Sequence[str],
    *,
    timeout: float,
    cwd: Path | None = None,
    input: bytes | None = None,
    check: bool = True,
    merge_stderr: bool = False,
) -> subprocess.CompletedProcess[bytes]:
    """Run a registered tool with ``args``; capture stdout/stderr as bytes.

    Raises ToolMissing if the tool is not installed, ToolTimeout if it runs longer than ``timeout``
    seconds (it is killed), and -- when ``check`` -- ToolFailed on a non-zero exit code.
    Standard input is ``input``, or empty (never the caller's terminal). With ``merge_stderr``
    stderr goes to the same pipe as stdout (one ordered stream, in ``stdout``).
    """
    argv = [str(_require(tool)), *args]
    try:
        proc = subprocess.run(
            argv,
            cwd=cwd,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ToolTimeout(argv, timeout, _as_bytes(exc.stdout), _as_bytes(exc.stderr)) from None
    if check and proc.returncode != 0:
        raise ToolFailed(argv, proc.returncode, proc.stdout, proc.stderr)
    return proc


def popen(tool: str, args: Sequence[str], *, stderr: IO[bytes]) -> subprocess.Popen[str]:
    """Start a registered tool that streams: text pipes on stdin and stdout, stderr to a file.
    The caller feeds, reads, applies its own deadline and waits (validate's kbuild helper)."""
    argv = [str(_require(tool)), *args]
    return subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True
    )


def require(tool: str) -> Path:
    """The tool's executable; ToolMissing (with the install command) when it is not installed."""
    return _require(tool)


# ------------------------------------------------------------------------------ long-running tools


class ToolExited(ToolError):
    """A long-running tool (a control-plane component) exited when it should still run."""

    def __init__(self, argv: Sequence[str], returncode: int, log_tail: str) -> None:
        self.argv = tuple(argv)
        self.returncode = returncode
        self.log_tail = log_tail
        super().__init__(f"{Path(argv[0]).name} exited with {returncode}: {log_tail}")


@dataclass
class Service:
    """A long-running tool started by :func:`spawn`: its own process group, output in a log."""

    name: str
    argv: tuple[str, ...]
    process: subprocess.Popen[bytes]
    log: Path

    def check(self) -> None:
        """Raise ToolExited when the process is no longer running."""
        code = self.process.poll()
        if code is not None:
            raise ToolExited(self.argv, code, self.log_tail())

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.strip().splitlines()[-lines:])


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask Linux to SIGTERM the child when the thread that started it dies (PR_SET_PDEATHSIG),
    so that even a SIGKILLed caller leaves no control-plane process behind."""
    import contextlib
    import ctypes
    import signal

    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)


def spawn(
    tool: str,
    args: Sequence[str],
    *,
    log: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Service:
    """Start a registered tool in the background, in a process group of its own (so that
    :func:`terminate` reaches everything it starts and a Ctrl-C at the terminal does not), with
    stdout and stderr appended to ``log``. Raises ToolMissing when it is not installed."""
    argv = [str(_require(tool)), *args]
    with log.open("ab") as out:
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env={**os.environ, **env} if env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
    return Service(tool, tuple(argv), process, log)


def terminate(service: Service, grace: float = 20.0) -> None:
    """Stop a service's whole process group: SIGTERM, then SIGKILL after ``grace`` seconds."""
    import signal

    proc = service.process
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _as_bytes(data: bytes | str | None) -> bytes:
    if data is None:
        return b""
    return data.encode() if isinstance(data, str) else data


# --------------------------------------------------------------------------------------- version


@dataclass(frozen=True)
class GoBuildInfo:
    """What a Go binary records about how it was built (as ``go version -m`` shows)."""

    go_version: str
    path: str
    """Import path of the main package."""
    modules: Mapping[str, str]
    """Module path -> version, for the main module and every dependency."""


_BUILDINFO_MAGIC = b"\xff Go buildinf:"


def _uvarint(buf: bytes | mmap.mmap, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def go_build_info(binary: Path) -> GoBuildInfo | None:
    """Read the Go build info embedded in a binary (Go >= 1.18 format), or None if it has none."""
    try:
        with binary.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            start = buf.find(_BUILDINFO_MAGIC)
            while start != -1 and start % 16:
                start = buf.find(_BUILDINFO_MAGIC, start + 1)
            if start == -1 or not buf[start + 15] & 0x2:  # flag 2: strings inline
                return None
            pos = start + 32
            n, pos = _uvarint(buf, pos)
            go_version = buf[pos : pos + n].decode("utf-8", "replace")
            pos += n
            n, pos = _uvarint(buf, pos)
            modinfo = buf[pos : pos + n].decode("utf-8", "replace")
    except (OSError, ValueError, IndexError):
        return None
    if len(modinfo) >= 33 and modinfo[-17] == "\n":
        modinfo = modinfo[16:-16]  # strip the sentinels
    main_path = ""
    modules: dict[str, str] = {}
    for line in modinfo.splitlines():
        fields = line.split("\t")
        if fields[0] == "path" and len(fields) > 1:
            main_path = fields[1]
        elif fields[0] in ("mod", "dep") and len(fields) > 2:
            modules[fields[1]] = fields[2]
        elif fields[0] == "=>" and len(fields) > 2 and modules:
            modules[list(modules)[-1]] = fields[2]
    return GoBuildInfo(go_version=go_version, path=main_path, modules=modules)


_VERSION_RE = re.compile(r"v?\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.+~-]*)?")


def version(tool: str) -> str:
    """Version of the installed tool (e.g. ``v5.8.1``, ``2.42.0+ds``, ``go1.26.8``).

    Go-built tools report the version of their module recorded in the binary's build info, which
    is what the pin is about; other tools are asked with their version command.
    """
    spec = _tool(tool)
    path = _require(tool)
    if spec.go_module is not None:
        info = go_build_info(path)
        if info is not None and info.modules.get(spec.go_module, "(devel)") != "(devel)":
            return info.modules[spec.go_module]
    if tool == "go":
        out = run("go", ["env", "GOVERSION"], timeout=60).stdout.decode().strip()
        return out
    argv = {"kustomize": ["version"], "kubeconform": ["-v"], "openssl": ["version"]}.get(
        tool, ["--version"]
    )
    proc = run(tool, argv, timeout=60, check=False)
    text = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    match = _VERSION_RE.search(text)
    return match.group(0) if match else text.strip().splitlines()[0] if text.strip() else ""


# ---------------------------------------------------------------------------------------- doctor


@dataclass(frozen=True)
class ToolStatus:
    """What :func:`doctor` found for one tool."""

    name: str
    path: Path | None
    version: str | None
    """Installed version, or None when the tool is missing or its version cannot be read."""
    pinned: str
    source: str
    """Where the pinned tool comes from, or where this one was found if it is not the pinned one."""
    install_hint: str

    @property
    def ok(self) -> bool:
        """Installed and, if pinned, at the pinned version."""
        if self.path is None or self.version is None:
            return False
        return not self.pinned or self.version == self.pinned


def doctor() -> list[ToolStatus]:
    """Status of every registered tool; never raises for a missing or broken tool."""
    statuses: list[ToolStatus] = []
    for name, spec in TOOLS.items():
        path = find(name)
        found_version: str | None = None
        source = spec.source
        if path is not None:
            try:
                found_version = version(name)
            except ToolError:
                found_version = None
            if path.parent != tools_dir() / "bin":
                source = f"PATH ({path})" if spec.pinned else spec.source
        statuses.append(
            ToolStatus(
                name=name,
                path=path,
                version=found_version,
                pinned=spec.pinned,
                source=source,
                install_hint=spec.install_hint,
            )
        )
    return statuses


# ----------------------------------------------------------------------------- kubeconform schemas


def _schemas_dir() -> Path:
    return tools_dir() / "schemas"


def k8s_schema_versions() -> list[str]:
    """Kubernetes versions (``1.37.0``) whose built-in schemas are laid out, oldest first."""
    base = _schemas_dir() / "k8s"
    if not base.is_dir():
        return []
    found = [
        p.name.removeprefix("v").removesuffix("-local-strict")
        for p in base.iterdir()
        if p.is_dir() and p.name.endswith("-local-strict")
    ]
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".")))


def k8s_schema_location() -> str:
    """kubeconform ``-schema-location`` template for the built-in Kubernetes kinds.

    Pass ``-kubernetes-version X.Y.0`` (see :func:`kubeconform_kubernetes_version`) with it.
    """
    base = _schemas_dir() / "k8s"
    if not k8s_schema_versions():
        raise ToolMissing("Kubernetes JSON schemas", INSTALL_COMMAND, [str(base)])
    return (
        f"{base}/{{{{.NormalizedKubernetesVersion}}}}-local{{{{.StrictSuffix}}}}"
        "/{{.ResourceKind}}{{.KindSuffix}}.json"
    )


def crd_schema_location() -> str:
    """kubeconform ``-schema-location`` template for the pinned CRDs' schemas."""
    base = _schemas_dir() / "crds"
    if not (base / "index.json").is_file():
        raise ToolMissing("CRD JSON schemas", INSTALL_COMMAND, [str(base)])
    return f"{base}/{{{{.Group}}}}/{{{{.ResourceKind}}}}_{{{{.ResourceAPIVersion}}}}.json"


def kubeconform_schema_args() -> list[str]:
    """``-schema-location`` arguments for kubeconform: built-in kinds first, then CRDs."""
    return ["-schema-location", k8s_schema_location(), "-schema-location", crd_schema_location()]


def kubeconform_kubernetes_version(kubernetes_version: str) -> str:
    """Map a fleet's ``kubernetesVersion`` (``'1.33'`` or ``'1.33.2'``) to the schema set name that
    kubeconform's ``-kubernetes-version`` must get (``'1.33.0'``); schemas exist per minor only."""
    parts = kubernetes_version.removeprefix("v").split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        raise ValueError(f"not a Kubernetes version: {kubernetes_version!r}")
    return f"{int(parts[0])}.{int(parts[1])}.0"
