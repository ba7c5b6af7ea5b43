"""What a simulation reports: per environment, one row per node, DaemonSet, probe pod, workload
pod, quota and track, and the findings (with the hint of each SIM code)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from generator.findings import CodeInfo, Finding, Severity

HINTS = {
    "SIM001": "fix the pool's labels, or the NodeFeatureRule match (PCI class and device IDs)",
    "SIM002": "use a taint key NFD accepts (prefixed, e.g. feature.node.kubernetes.io/...)",
    "SIM003": "the DaemonSet must select exactly its vendor's nodes: fix its selector or the rules",
    "SIM004": "the scheduler's reason says what is missing: capacity (a simulated node has the "
    "CPU, memory and resources its pool's node shape declares, else 64 CPUs and 512Gi: "
    "docs/values.md, the site's hardware), a label, or a toleration",
    "SIM005": "select the vendor's pools (and model) in the workload",
    "SIM006": "taint the pool's nodes (with a key nfd-master accepts)",
    "SIM007": "replicas per track must be what plan says: check capacity, quota and placement",
    "SIM008": "the API server's reason says what refused the pods: quota or Pod Security",
    "SIM009": "declare the server's PCI functions in values/inventories/<server type>.yaml "
    "(accelerator: the vendor and this model) and name it in the pool's serverType "
    "(docs/node-config.md)",
    "SIM010": "the job waits for the team's other jobs: fine for a queue, or raise the quota",
    "SIM011": "check what was not simulated on a cluster that runs it (docs/simulation.md)",
    "SIM014": "nfd-worker must tolerate every pool's taint (the fleet's NFD chart values do: "
    "worker.tolerations)",
    "SIM013": "Kueue's reason says what is short: raise the team's quota for that flavor "
    "(quota, or the model's share of it), or let its queue borrow",
}


@dataclass
class NodeResult:
    name: str
    what: str
    want_labels: dict[str, str]
    labels: dict[str, str]
    want_taints: list[str]
    taints: list[str]
    ok: bool


@dataclass
class PodResult:
    team: str
    workload: str
    pod: str
    vendor: str
    phase: str
    node: str
    reason: str
    ok: bool
    # Not running beside the other jobs, but running alone (SIM010, a warning): the row says
    # "waits", never MISMATCH, since only an error finding is called a mismatch.
    waits: bool = False
    # The devices allocated to the pod's DRA claims, `pool/device` each ("" without claims).
    devices: str = ""


@dataclass
class EnvReport:
    env: str
    nodes: list[NodeResult] = field(default_factory=list)
    plugins: list[dict[str, Any]] = field(default_factory=list)
    probes: list[dict[str, Any]] = field(default_factory=list)
    pods: list[PodResult] = field(default_factory=list)
    quotas: list[dict[str, Any]] = field(default_factory=list)
    """Each quota as read while the services and Jobs ran."""
    jobset_quotas: list[dict[str, Any]] = field(default_factory=list)
    """Each quota as read while the services and JobSets (and TrainJobs) ran; none without."""
    tracks: list[dict[str, Any]] = field(default_factory=list)
    phases: list[dict[str, Any]] = field(default_factory=list)
    """Each track of this cluster at each phase of its service's walk (simulate --phases)."""
    admissions: list[dict[str, Any]] = field(default_factory=list)
    """Kueue's verdict per queued workload (simulate/kueue.py), when Kueue runs."""
    applications: list[dict[str, Any]] = field(default_factory=list)
    """What Argo CD did with each Application (simulate/gitops.py)."""
    metrics: list[dict[str, Any]] = field(default_factory=list)
    """What Prometheus recorded per team x vendor, and each alert's instances (simulate/
    monitoring.py)."""
    findings: list[Finding] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    objects: int = 0
    kubernetes: str = ""
    """The version the control plane's API server reported (/version), e.g. v1.34.4: the
    cluster's own minor (KVER001 otherwise)."""


@dataclass
class SimulationResult:
    envs: list[EnvReport]
    findings: list[Finding]
    started_in: float = 0.0

    @property
    def errors(self) -> int:
        return sum(f.severity is Severity.ERROR for f in self.findings)


# What `simulate` can report.
CODES = (
    CodeInfo("SIM001", "simulate", "error", "nfd-master does not set a pool's labels on its node"),
    CodeInfo("SIM002", "simulate", "error", "a node does not get its pool's taints"),
    CodeInfo(
        "SIM003",
        "simulate",
        "error",
        "a device-plugin or exporter DaemonSet does not run on exactly its vendor's nodes",
    ),
    CodeInfo("SIM004", "simulate", "error", "a workload pod stays Pending"),
    CodeInfo(
        "SIM005", "simulate", "error", "a workload pod lands on a node of another vendor or model"
    ),
    CodeInfo(
        "SIM006",
        "simulate",
        "error",
        "a pod without tolerations lands on an accelerator node: the pool is not tainted",
    ),
    CodeInfo(
        "SIM007", "simulate", "error", "a migration track has other ready replicas than plan says"
    ),
    CodeInfo("SIM008", "simulate", "error", "the API server refuses a workload's pods"),
    CodeInfo(
        "SIM009",
        "simulate",
        "warning",
        "a pool's server type has no PCI inventory: its nodes carry the pool's labels and "
        "taints as declared",
    ),
    CodeInfo(
        "SIM010",
        "simulate",
        "warning",
        "a job runs alone but not beside the team's other jobs: it waits for them",
    ),
    CodeInfo(
        "SIM011",
        "simulate",
        "warning",
        "the environment deploys what the simulation does not run (Volcano, Kueue): named",
    ),
    CodeInfo("SIM012", "simulate", "error", "the API server refuses an object simulate applies"),
    CodeInfo(
        "SIM013",
        "simulate",
        "error",
        "Kueue's controller does not admit a workload: its ClusterQueue cannot hold it",
    ),
    CodeInfo(
        "SIM014",
        "simulate",
        "error",
        "nfd-worker of the fleet's NFD chart does not run on a node (a taint it does not tolerate)",
    ),
)
