"""What the simulation changes of the Prometheus Operator's output before its Prometheus reads it
(controlplane/monitoring.py): the discovery's way to the plane, the rule files' folder, the scrape
of kube-state-metrics, the config-reloader's substitutions and the alerts' hold. Each expected
document is written here by hand."""

from __future__ import annotations

from pathlib import Path

import yaml

from generator.controlplane import monitoring

# A scrape job as prometheus-operator v0.85.0 generates one for a PodMonitor (trimmed).
GENERATED = {
    "global": {"scrape_interval": "1s", "external_labels": {"prometheus_replica": "$(POD_NAME)"}},
    "rule_files": ["/etc/prometheus/rules/prometheus-x-rulefiles-0/*.yaml"],
    "scrape_configs": [
        {
            "job_name": "podMonitor/accelerator-monitoring/dcgm-exporter/0",
            "kubernetes_sd_configs": [
                {"role": "pod", "namespaces": {"names": ["accelerator-exporters"]}}
            ],
            "relabel_configs": [{"action": "keep", "regex": "$(SHARD);|.+;.+"}],
        },
        {"job_name": "static", "static_configs": [{"targets": ["a:1"]}]},
    ],
}


def test_discovery_reaches_the_plane_and_rules_are_read_from_the_copied_folder() -> None:
    config = monitoring.local_config(
        GENERATED, Path("/p/kubeconfig"), Path("/p/rules"), "127.0.0.1:9"
    )
    assert config["rule_files"] == ["/p/rules/*.yaml"]
    assert config["scrape_configs"] == [
        {
            "job_name": "podMonitor/accelerator-monitoring/dcgm-exporter/0",
            "kubernetes_sd_configs": [
                {
                    "role": "pod",
                    "namespaces": {"names": ["accelerator-exporters"]},
                    "kubeconfig_file": "/p/kubeconfig",
                }
            ],
            "relabel_configs": [{"action": "keep", "regex": "$(SHARD);|.+;.+"}],
        },
        {"job_name": "static", "static_configs": [{"targets": ["a:1"]}]},
        {
            "job_name": "kube-state-metrics",
            "honor_labels": True,
            "static_configs": [{"targets": ["127.0.0.1:9"]}],
        },
    ]
    assert GENERATED["rule_files"] == ["/etc/prometheus/rules/prometheus-x-rulefiles-0/*.yaml"]


def test_the_reloaders_variables_are_filled_as_for_shard_0() -> None:
    text = yaml.safe_dump(GENERATED)
    filled = monitoring.ENV_REF.sub(
        lambda m: monitoring.RELOADER_ENV.get(m.group(1), m.group(0)), text
    )
    doc = yaml.safe_load(filled)
    assert doc["scrape_configs"][0]["relabel_configs"][0]["regex"] == "0;|.+;.+"
    assert doc["global"]["external_labels"]["prometheus_replica"] == (
        "prometheus-accel-gitops-simulation-0"
    )


def test_each_alert_is_held_two_seconds_and_nothing_else_changes() -> None:
    text = """\
groups:
- name: g
  rules:
  - record: r
    expr: up
  - alert: A
    expr: up == 0
    for: 15m
    labels: {severity: warning}
  - alert: B
    expr: up == 1
"""
    assert yaml.safe_load(monitoring.held_briefly(text)) == {
        "groups": [
            {
                "name": "g",
                "rules": [
                    {"record": "r", "expr": "up"},
                    {
                        "alert": "A",
                        "expr": "up == 0",
                        "for": "2s",
                        "labels": {"severity": "warning"},
                    },
                    {"alert": "B", "expr": "up == 1"},
                ],
            }
        ]
    }
