"""The local control plane as the fleet uses it (generator/controlplane knows nothing of the
fleet): nfd-master in the namespace of the fleet's NFD chart, and the rules by which a reset
clears what a dry-run or a simulation of the fleet left, and keeps what outlives a run (the
add-on controller managers' namespaces, with the certificates their rotators wrote)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from generator.controlplane import launcher
from generator.controlplane.launcher import ControlPlane, ResetRules
from generator.toolchain.registry import DEFAULT_MINOR
from generator.vocab import addons
from generator.vocab.api import ARGOCD, CORE, KUEUE, NFD
from generator.vocab.kube import HELM_INSTANCE_LABEL, SIM_LABEL
from generator.vocab.labels import MANAGED_BY


def chart_namespace(key: str) -> str:
    """The namespace an add-on's chart installs into (builders/platform.py): where the simulation
    runs what stands in for it, and what a reset keeps."""
    chart = addons.BY_KEY[key].chart
    assert chart is not None
    return chart.namespace


NFD_NAMESPACE = chart_namespace("nfd")
NFD_RELEASE = getattr(addons.BY_KEY["nfd"].chart, "release", "")
KUEUE_NAMESPACE = chart_namespace("kueue")
# The add-ons whose controller managers run on the plane across runs (controlplane/controllers.py):
# their namespaces, which hold the Secrets their certificates rotate in, outlive a reset.
CONTROLLER_ADDONS = ("kueue", "jobset", "lws", "trainer")
CONTROLLER_NAMESPACES = frozenset(chart_namespace(key) for key in CONTROLLER_ADDONS)
MANAGED = f"app.kubernetes.io/managed-by={MANAGED_BY}"
NODE_FEATURE = (NFD, "NodeFeature")
# Objects whose finalizers a controller removes that a reset does not wait for, or that does not
# run here: Kueue's (on the pods it manages and on its Workloads), and the pv/pvc-protection
# finalizers of the claims and volumes simulate stands in for (simulate/external.py).
FINALIZED = (
    (KUEUE, "Workload"),
    (CORE, "PersistentVolumeClaim"),
    (CORE, "PersistentVolume"),
    # Argo CD's resources finalizer on the Applications of simulate's Argo CD step, which no
    # longer runs once its run ends (controlplane/argocd.py forgets them first; this is for a run
    # that ended half-way).
    (ARGOCD, "Application"),
)
RESET = ResetRules(
    # Add-on controllers that run on the plane across runs keep their namespaces, and their
    # pods; NFD's namespace stays (nfd-master works there), its pods go.
    keep_namespaces=frozenset({NFD_NAMESPACE}) | CONTROLLER_NAMESPACES,
    keep_pods=CONTROLLER_NAMESPACES,
    # What the fleet put into kube-system (the packing scheduler's objects) goes, and the NFD
    # chart's objects the simulation applied in NFD's namespace.
    sweep=(
        ("kube-system", MANAGED),
        (NFD_NAMESPACE, f"{SIM_LABEL}=true"),
        # NFD's chart as simulate's Argo CD step synced it (its nfd-worker DaemonSet would
        # otherwise make pods in the kept namespace for ever).
        (NFD_NAMESPACE, f"{HELM_INSTANCE_LABEL}={NFD_RELEASE}"),
    ),
    # Every cluster-scoped object the fleet (or the simulation's stand-ins) created.
    cluster_selector=MANAGED,
    # The NodeFeatures the simulation published for its nodes.
    purge=((*NODE_FEATURE, NFD_NAMESPACE),),
    finalized=FINALIZED,
)


def control_plane(
    *, nfd: bool = True, keep_dir: Path | None = None, minor: str = DEFAULT_MINOR
) -> contextlib.AbstractContextManager[ControlPlane]:
    """A local control plane for the fleet (`nfd`: with nfd-master, in NFD's chart namespace) of
    the Kubernetes `minor`."""
    return launcher.local_control_plane(
        nfd_namespace=NFD_NAMESPACE if nfd else None, keep_dir=keep_dir, minor=minor
    )


def reset(plane: ControlPlane) -> None:
    """The plane back to how it started, with no trace of the fleet's last run (RESET)."""
    launcher.reset(plane, RESET)
