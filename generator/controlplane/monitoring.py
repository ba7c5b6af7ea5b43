"""The monitoring a site runs, beside the local control plane: kube-state-metrics, the Prometheus
Operator and Prometheus, the real binaries (`make tools-cluster`: kube-state-metrics v2.20.0,
gotools/ksm; prometheus-operator v0.85.0, gotools/promoperator; Prometheus from the module
promtool comes from, github.com/prometheus/prometheus v0.316.0, gotools/promtool).

What differs from a site's, and why (docs/simulation.md):
- The three run as processes on this machine with the plane's admin credentials (containers do
  not run on simulated nodes), so their RBAC is not exercised.
- The Prometheus resource: values name the site's Prometheus by its namespace and its four
  selectors (`monitoring.prometheus`, MON003); the simulation creates one with exactly those, and
  with short scrape and evaluation intervals (INTERVAL): how often, never what. Its replicas are
  0: the operator writes the configuration and the rule files as for a site
  (prometheus-operator v0.85.0 pkg/prometheus/server/operator.go, sync: the rule ConfigMaps and
  the configuration Secret before the StatefulSet), and Prometheus runs here as a process on them.
- That Prometheus reads a copy of the operator's configuration with two changes: its Kubernetes
  service discovery reaches the plane through the plane's kubeconfig (`kubeconfig_file`, not
  in-cluster), and its `rule_files` name the folder the operator's rule ConfigMaps are copied to.
- kube-state-metrics is scraped by a static job `kube-state-metrics` with its labels honoured, as
  kube-prometheus-stack's ServiceMonitor for it does: the site's scrape of it is not the fleet's
  to render.
- Each alert's `for:` is ALERT_HOLD in the copy of the rule files Prometheus loads here (the
  rendered PrometheusRule and the operator's ConfigMaps keep theirs): an alert whose condition
  holds fires within seconds, through Prometheus' own pending -> firing, instead of 5 to 15
  minutes. Nothing else of a rule changes.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import re
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from generator.controlplane.api import ApiClient, ApiError, Obj
from generator.controlplane.crds import pinned_crds
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
from generator.vocab.api import CORE, MONITORING

# The Prometheus the simulation creates from the values' selectors.
NAME = "accel-gitops-simulation"
# How often it scrapes and evaluates its rules (a site's is 30 s or more).
INTERVAL = "1s"
# How long an alert's condition must hold here before it fires (the rendered `for:` is 5 to 15
# minutes; the module docstring says what changes).
ALERT_HOLD = "2s"
ALERT_HOLD_SECONDS = 2.0
# The kinds kube-state-metrics lists: what the fleet's rules and alerts read (alerts.py,
# recording_rules.py cite each metric).
KSM_RESOURCES = ("daemonsets", "nodes", "pods", "resourcequotas")
KSM_JOB = "kube-state-metrics"
# The Prometheus Operator watches every kind of its API group: its CRDs as a site installs them
# (the pinned ones, gotools/schemas.lock.yaml: prometheus-operator v0.85.0).
CRD_GROUP = "monitoring.coreos.com"
CONFIG_KEY = "prometheus.yaml.gz"


@dataclass(frozen=True)
class Monitoring:
    """A running Prometheus over the plane: where to query it."""

    url: str
    logs: Path

    def get(self, path: str, **params: str) -> Any:
        """The `data` of a Prometheus HTTP API answer (api/v1/<path>)."""
        query = urllib.parse.urlencode(params)
        url = f"{self.url}/api/v1/{path}" + (f"?{query}" if query else "")
        with urllib.request.urlopen(url, timeout=30) as resp:
            body = json.loads(resp.read())
        if body.get("status") != "success":
            raise ControlPlaneError(f"prometheus {path}: {body.get('error', body)}")
        return body["data"]


def prometheus_object(namespace: str, selectors: dict[str, Any]) -> Obj:
    """The Prometheus resource values describe (`monitoring.prometheus`): its four selectors as
    they are (an unset one stays unset: the operator then selects nothing of that kind)."""
    spec: dict[str, Any] = {
        "replicas": 0,
        "scrapeInterval": INTERVAL,
        "evaluationInterval": INTERVAL,
        **selectors,
    }
    return {
        "apiVersion": MONITORING,
        "kind": "Prometheus",
        "metadata": {"name": NAME, "namespace": namespace},
        "spec": spec,
    }


def local_config(
    generated: dict[str, Any], kubeconfig: Path, rules_dir: Path, ksm: str
) -> dict[str, Any]:
    """The operator's configuration as the process here reads it (the module docstring says what
    changes and why)."""
    config = dict(generated)
    jobs = []
    for job in config.get("scrape_configs") or []:
        sds = [
            {
                **{k: v for k, v in sd.items() if k != "api_server"},
                "kubeconfig_file": str(kubeconfig),
            }
            for sd in job.get("kubernetes_sd_configs") or []
        ]
        jobs.append({**job, "kubernetes_sd_configs": sds} if sds else job)
    jobs.append({"job_name": KSM_JOB, "honor_labels": True, "static_configs": [{"targets": [ksm]}]})
    config["scrape_configs"] = jobs
    config["rule_files"] = [str(rules_dir / "*.yaml")]
    return config


# What the operator's config-reloader sidecar substitutes in the configuration before Prometheus
# reads it: `$(NAME)` from its container's environment (prometheus-operator v0.85.0
# pkg/operator/config_reloader.go: SHARD, the shard's number; POD_NAME), here shard 0 of one.
RELOADER_ENV = {"SHARD": "0", "POD_NAME": f"prometheus-{NAME}-0"}
ENV_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def _secret_config(api: ApiClient, namespace: str) -> dict[str, Any] | None:
    secret = api.get(CORE, "Secret", namespace, f"prometheus-{NAME}")
    data = (secret or {}).get("data") or {}
    if CONFIG_KEY not in data:
        return None
    text = gzip.decompress(base64.b64decode(data[CONFIG_KEY])).decode()
    text = ENV_REF.sub(lambda m: RELOADER_ENV.get(m.group(1), m.group(0)), text)
    loaded = yaml.safe_load(text)
    return loaded if isinstance(loaded, dict) else None


def held_briefly(text: str) -> str:
    """A rule file with each alert's `for:` set to ALERT_HOLD (the module docstring says why)."""
    doc = yaml.safe_load(text) or {}
    for group in doc.get("groups") or []:
        for rule in group.get("rules") or []:
            if "alert" in rule and "for" in rule:
                rule["for"] = ALERT_HOLD
    return yaml.safe_dump(doc, sort_keys=False)


def _rule_files(api: ApiClient, namespace: str, folder: Path) -> None:
    """The operator's rule ConfigMaps (prometheus-<name>-rulefiles-<n>), one file per key, each
    alert held ALERT_HOLD."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.yaml"):
        old.unlink()
    for cm in api.list(CORE, "ConfigMap", namespace):
        if cm["metadata"]["name"].startswith(f"prometheus-{NAME}-rulefiles-"):
            for key, text in (cm.get("data") or {}).items():
                (folder / key).write_text(held_briefly(text), encoding="utf-8")


def crds() -> list[Obj]:
    return [c for c in pinned_crds() if c["spec"]["group"] == CRD_GROUP]


@contextlib.contextmanager
def running(plane: ControlPlane, namespace: str, selectors: dict[str, Any]) -> Iterator[Monitoring]:
    """kube-state-metrics, the Prometheus Operator and Prometheus on `plane` until the block ends
    (then stopped; the Prometheus resource deleted while the operator still runs, so its
    finalizer goes with it)."""
    api = plane.client()
    api.apply_crds(crds())
    if api.get(CORE, "Namespace", "", namespace) is None:
        api.apply(
            sim_labelled({"apiVersion": CORE, "kind": "Namespace", "metadata": {"name": namespace}})
        )
    home = plane.workdir / "monitoring"
    rules_dir = home / "rules"
    # A Prometheus of its own per cluster, with nothing of the last one's series.
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    env = {"KUBECONFIG": str(plane.kubeconfig)}
    services: list[tool_process.Service] = []
    try:
        ksm_port = _free_port()
        services.append(
            tool_process.spawn(
                "kube-state-metrics",
                [
                    *("--kubeconfig", str(plane.kubeconfig), "--host", "127.0.0.1"),
                    *("--port", str(ksm_port), "--telemetry-host", "127.0.0.1"),
                    *("--telemetry-port", str(_free_port())),
                    "--resources=" + ",".join(KSM_RESOURCES),
                ],
                log=plane.logs() / "kube-state-metrics.log",
                env=env,
            )
        )
        services.append(
            tool_process.spawn(
                "prometheus-operator",
                ["--web.listen-address", f"127.0.0.1:{_free_port()}"],
                log=plane.logs() / "prometheus-operator.log",
                env=env,
            )
        )
        ksm = f"127.0.0.1:{ksm_port}"
        _wait(
            "kube-state-metrics", lambda: _http_ok(f"http://{ksm}/healthz"), services, READY_TIMEOUT
        )
        api.apply(sim_labelled(prometheus_object(namespace, selectors)))
        generated: dict[str, Any] = {}

        def configured() -> bool:
            got = _secret_config(api, namespace)
            if got is None:
                return False
            generated.update(got)
            return True

        _wait("prometheus-operator", configured, services, READY_TIMEOUT)
        _rule_files(api, namespace, rules_dir)
        config = local_config(generated, plane.kubeconfig, rules_dir, ksm)
        (home / "prometheus.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        port = _free_port()
        services.append(
            tool_process.spawn(
                "prometheus",
                [
                    f"--config.file={home / 'prometheus.yaml'}",
                    f"--storage.tsdb.path={home / 'data'}",
                    f"--web.listen-address=127.0.0.1:{port}",
                ],
                log=plane.logs() / "prometheus.log",
            )
        )
        url = f"http://127.0.0.1:{port}"
        _wait("prometheus", lambda: _http_ok(f"{url}/-/ready"), services, READY_TIMEOUT)
        yield Monitoring(url, plane.logs())
    finally:
        with contextlib.suppress(ApiError):
            api.delete(MONITORING, "Prometheus", namespace, NAME)
            deadline = time.monotonic() + READY_TIMEOUT
            while api.get(MONITORING, "Prometheus", namespace, NAME) is not None:
                if time.monotonic() > deadline:
                    api.merge_patch(
                        MONITORING,
                        "Prometheus",
                        namespace,
                        NAME,
                        {"metadata": {"finalizers": None}},
                    )
                time.sleep(0.2)
        for service in reversed(services):
            tool_process.terminate(service, STOP_GRACE)
