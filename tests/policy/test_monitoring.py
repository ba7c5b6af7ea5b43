"""The monitoring checks (generator/policy/monitoring.py): MON001, a vendor's exporter section that
cannot give the unified series, and MON002, a vendor without exporter. Each check is run on one
environment of a values tree made for it; the whole finding (code, message, file:line, JSON path,
hint, severity) is written out here. How the exporter facts themselves are read is tested in
tests/builders/monitoring/test_sources.py."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from generator.findings import Finding, Location, Severity
from generator.policy.monitoring import (
    exporter_facts,
    no_exporter,
    prometheus_selects,
)
from generator.values import loader as values
from generator.values.model import FleetView
from tests.fixtures import NVIDIA, PROD_FLEET, context, tree

# MON003's hint, written out: a changed hint fails the tests.
MON003_HINT = (
    "label the fleet's monitoring objects with what the Prometheus selects "
    "(monitoring.prometheusSelectorLabels), or copy its selectors as they are into "
    "monitoring.prometheus; docs/monitoring.md"
)

# A vendor in no catalog, so its exporter section is exactly what a test appends (from line 16).
ACME = """\
resourceName: acme.com/xpu
pciVendor: "1e3e"
selectorLabel: accelerator
modelLabel: xpu-model
nodeLabels: {accelerator: acme-xpu}
taints: [{key: acme.com/xpu, value: present, effect: NoSchedule}]
devicePlugin:
  name: acme-device-plugin
  image: r/acme-plugin
  version: v1.0.0
  namespace: accelerator-plugins
  volumes: [{name: dp, hostPath: {path: /var/lib/kubelet/device-plugins}}]
  volumeMounts: [{name: dp, mountPath: /var/lib/kubelet/device-plugins}]
pools:
  - {name: x1, model: X1, devicesPerNode: 4, nodes: [acme-1], pciDevices: ["0001"]}
"""
# An exporter section that renders: the DaemonSet's image and version, and the metrics.
METRICS = """\
  metrics:
    utilization: {name: acme_util, unit: percent}
    memoryUsed: {name: acme_used, unit: MiB}
    memoryTotal: {name: acme_total, unit: GiB}
"""
RENDERED = "exporter:\n  daemonSet: {image: r/acme-exporter, version: v2}\n" + METRICS

MON001_HINT = "see docs/monitoring.md for the exporter keys"
MON002_HINT = "name its exporter (port, podLabels, labels, metrics); docs/monitoring.md"


def prod(tmp_path: Path, files: Mapping[str, str | None]) -> FleetView:
    """Environment prod of a tree with only `files` beside fleet.yaml."""
    return values.load(tree(tmp_path, files, fleet=PROD_FLEET, defaults=False)).envs["prod"]


# ---- MON001: exporter_facts ------------------------------------------------------------------


def test_an_exporter_without_image_is_reported_at_its_daemonset(tmp_path: Path) -> None:
    """The error the exporter facts raise becomes the finding, at the deepest key the file sets
    (daemonSet, line 17), with the JSON path of the missing key."""
    section = "exporter:\n  daemonSet: {version: v2}\n" + METRICS
    view = prod(tmp_path, {"vendors/acme.yaml": ACME + section})
    assert list(exporter_facts(context(view))) == [
        Finding(
            "MON001",
            "vendor acme: exporter.daemonSet.image is not set, so its exporter cannot be "
            "rendered; set it, or set exporter.render: false where the exporter is installed "
            "another way",
            Location("values/vendors/acme.yaml", 17, 3),
            "$.exporter.daemonSet.image",
            MON001_HINT,
            Severity.ERROR,
        )
    ]


def test_exporter_labels_that_swap_in_a_cycle_are_reported_at_the_labels(tmp_path: Path) -> None:
    """A cycle only the label mappings' order shows (the exporter itself reads fine): the finding
    points at `labels:` (line 4 of nvidia.yaml), not at `exporter:` above it."""
    nvidia = NVIDIA + "exporter:\n  labels: {node: device, device: node}\n"
    view = prod(tmp_path, {"vendors/nvidia.yaml": nvidia})
    assert [f.format() for f in exporter_facts(context(view))] == [
        "values/vendors/nvidia.yaml:4:3: MON001 vendor nvidia: exporter.labels swap labels in a "
        "cycle: node<-device, device<-node (at $.exporter.labels); " + MON001_HINT
    ]


def test_every_vendor_is_checked_and_sound_exporters_give_nothing(tmp_path: Path) -> None:
    """Two broken vendors give one finding each, in vendor order; a vendor whose exporter
    renders, and one with no exporter at all, give none."""
    files = {
        "vendors/acme.yaml": ACME + "exporter:\n  daemonSet: {image: r/x, version: v2}\n",
        "vendors/nvidia.yaml": NVIDIA + "exporter:\n  labels: {node: device, device: node}\n",
        "vendors/zeta.yaml": ACME.replace("acme", "zeta") + RENDERED,
        "vendors/bare.yaml": ACME.replace("acme", "bare"),
    }
    got = [
        (f.code, f.location, f.message[:40]) for f in exporter_facts(context(prod(tmp_path, files)))
    ]
    assert got == [
        (
            "MON001",
            Location("values/vendors/acme.yaml", 16, 1),
            "vendor acme: exporter.metrics needs util",
        ),
        (
            "MON001",
            Location("values/vendors/nvidia.yaml", 4, 3),
            "vendor nvidia: exporter.labels swap labe",
        ),
    ]


def test_a_custom_exporter_namespace_gives_the_same_verdict(tmp_path: Path) -> None:
    """The fleet's monitoring settings are read (a broken monitoring section would not be):
    the exporter namespace changes nothing in what is reported."""
    fleet = PROD_FLEET + "monitoring: {exporterNamespace: gpu-exporters}\n"
    section = "exporter:\n  daemonSet: {version: v2}\n" + METRICS
    root = tree(tmp_path, {"vendors/acme.yaml": ACME + section}, fleet=fleet, defaults=False)
    view = values.load(root).envs["prod"]
    assert [(f.code, f.location, f.path) for f in exporter_facts(context(view))] == [
        ("MON001", Location("values/vendors/acme.yaml", 17, 3), "$.exporter.daemonSet.image")
    ]


# ---- MON002: no_exporter ---------------------------------------------------------------------


def test_a_vendor_without_exporter_is_a_warning_at_the_top_of_its_file(tmp_path: Path) -> None:
    """Only the vendor without exporter is named; one whose exporter renders is not."""
    zeta = ACME.replace("acme", "zeta") + RENDERED
    view = prod(tmp_path, {"vendors/acme.yaml": ACME, "vendors/zeta.yaml": zeta})
    assert list(no_exporter(context(view))) == [
        Finding(
            "MON002",
            "vendor acme has no exporter section: no scrape config or rules for it",
            Location("values/vendors/acme.yaml", 1, 1),
            "$.exporter",
            MON002_HINT,
            Severity.WARNING,
        )
    ]


def test_an_empty_exporter_section_is_reported_where_it_is_written(tmp_path: Path) -> None:
    """`exporter: {}` names no exporter either; the warning points at that key (line 16)."""
    view = prod(tmp_path, {"vendors/acme.yaml": ACME + "exporter: {}\n"})
    assert [f.format() for f in no_exporter(context(view))] == [
        "values/vendors/acme.yaml:16:1: MON002 warning: vendor acme has no exporter section: no "
        "scrape config or rules for it (at $.exporter); " + MON002_HINT
    ]


# ---- MON003: prometheus_selects --------------------------------------------------------------

PROMETHEUS = """\
monitoring:
  prometheusSelectorLabels: {release: kps}
  prometheus:
    namespace: monitoring
    podMonitorSelector: {matchLabels: {release: kps}}
    podMonitorNamespaceSelector: {}
    ruleSelector: {matchLabels: {release: kps}}
    ruleNamespaceSelector: {}
"""


def nvidia_prod(tmp_path: Path, monitoring: str) -> FleetView:
    """Prod of a tree with the default NVIDIA vendor (dcgm-exporter: one PodMonitor and the
    recording rules) and `monitoring` appended to fleet.yaml (its lines from 5 on)."""
    files = {"vendors/nvidia.yaml": NVIDIA}
    values_dir = tree(tmp_path, files, fleet=PROD_FLEET + monitoring, defaults=False)
    return values.load(values_dir).envs["prod"]


def mon003(view: FleetView) -> list[tuple[str, str, Location]]:
    return [(f.message, f.severity.value, f.location) for f in prometheus_selects(context(view))]


def test_no_prometheus_named_checks_nothing(tmp_path: Path) -> None:
    assert mon003(nvidia_prod(tmp_path, "")) == []


def test_a_prometheus_whose_selectors_match_loads_everything(tmp_path: Path) -> None:
    assert mon003(nvidia_prod(tmp_path, PROMETHEUS)) == []


def test_labels_the_selector_misses_are_an_error_per_object(tmp_path: Path) -> None:
    """Without prometheusSelectorLabels the objects carry no release label: the PodMonitor and
    the rule are each reported whole, at monitoring.prometheus (line 6)."""
    view = nvidia_prod(
        tmp_path, PROMETHEUS.replace("  prometheusSelectorLabels: {release: kps}\n", "")
    )
    selector = '{"matchLabels": {"release": "kps"}}'
    assert list(prometheus_selects(context(view))) == [
        Finding(
            "MON003",
            "the Prometheus in 'monitoring' (monitoring.prometheus) does not load PodMonitor "
            f"accelerator-monitoring/dcgm-exporter: its podMonitorSelector {selector} does not "
            "match the PodMonitor's labels",
            Location("values/fleet.yaml", 6, 3),
            "$.monitoring.prometheus",
            MON003_HINT,
            Severity.ERROR,
        ),
        *(
            Finding(
                "MON003",
                "the Prometheus in 'monitoring' (monitoring.prometheus) does not load "
                f"PrometheusRule accelerator-monitoring/{name}: its ruleSelector {selector} does "
                "not match the PrometheusRule's labels",
                Location("values/fleet.yaml", 6, 3),
                "$.monitoring.prometheus",
                MON003_HINT,
                Severity.ERROR,
            )
            for name in ("accelerators-unified", "accelerators-alerts")
        ),
    ]


def test_an_unset_selector_selects_nothing_and_an_unset_namespace_selector_its_own(
    tmp_path: Path,
) -> None:
    """At prometheusSelectorLabels (line 6) since it is set; both reasons in one finding."""
    text = PROMETHEUS.replace("    podMonitorSelector: {matchLabels: {release: kps}}\n", "")
    text = text.replace("    podMonitorNamespaceSelector: {}\n", "")
    [(message, severity, location)] = mon003(nvidia_prod(tmp_path, text))
    assert message == (
        "the Prometheus in 'monitoring' (monitoring.prometheus) does not load PodMonitor "
        "accelerator-monitoring/dcgm-exporter: its podMonitorSelector is unset, which selects no "
        "PodMonitor; its podMonitorNamespaceSelector is unset, which means its own namespace "
        "'monitoring' only, and the PodMonitor is in 'accelerator-monitoring'"
    )
    assert (severity, location) == ("error", Location("values/fleet.yaml", 6, 3))


def test_an_unset_namespace_selector_is_fine_in_the_prometheus_namespace(tmp_path: Path) -> None:
    text = PROMETHEUS.replace("namespace: monitoring", "namespace: accelerator-monitoring")
    text = text.replace("    podMonitorNamespaceSelector: {}\n", "")
    text = text.replace("    ruleNamespaceSelector: {}\n", "")
    assert mon003(nvidia_prod(tmp_path, text)) == []


def test_namespace_selectors_see_the_rendered_labels_and_the_name_label(tmp_path: Path) -> None:
    """The API server's kubernetes.io/metadata.name label and the labels the fleet gives the
    namespace both count; an expression that excludes the namespace is reported."""
    by_name = "{matchLabels: {kubernetes.io/metadata.name: accelerator-monitoring}}"
    by_label = "{matchExpressions: [{key: pod-security.kubernetes.io/enforce, operator: Exists}]}"
    text = PROMETHEUS.replace(
        "podMonitorNamespaceSelector: {}", f"podMonitorNamespaceSelector: {by_name}"
    )
    text = text.replace("ruleNamespaceSelector: {}", f"ruleNamespaceSelector: {by_label}")
    assert mon003(nvidia_prod(tmp_path / "ok", text)) == []
    excluded = (
        "{matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, "
        "values: [accelerator-monitoring]}]}"
    )
    text = PROMETHEUS.replace("ruleNamespaceSelector: {}", f"ruleNamespaceSelector: {excluded}")
    # the recording rules and the alerting rules alike
    messages = [message for message, _, _ in mon003(nvidia_prod(tmp_path / "no", text))]
    assert len(messages) == 2
    for message, name in zip(
        messages, ("accelerators-unified", "accelerators-alerts"), strict=True
    ):
        assert message.endswith(
            f"PrometheusRule accelerator-monitoring/{name}: its ruleNamespaceSelector "
            '{"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", '
            '"values": ["accelerator-monitoring"]}]} does not match namespace '
            "'accelerator-monitoring'"
        )


def test_a_missed_selector_is_shown_as_its_spec_has_it(tmp_path: Path) -> None:
    """Keys sorted, ", " and ": " between them: the selector reads as JSON a user can search."""
    text = PROMETHEUS.replace(
        "podMonitorSelector: {matchLabels: {release: kps}}",
        "podMonitorSelector: {matchLabels: {team: gpu, release: kps}, "
        "matchExpressions: [{key: tier, operator: Exists}]}",
    )
    [(message, _, _)] = mon003(nvidia_prod(tmp_path, text))
    assert message.endswith(
        'its podMonitorSelector {"matchExpressions": [{"key": "tier", "operator": "Exists"}], '
        '"matchLabels": {"release": "kps", "team": "gpu"}} does not match the PodMonitor\'s '
        "labels"
    )
