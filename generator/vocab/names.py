"""Well-known object names: Kubernetes' own and those the fleet gives its shared objects."""

from __future__ import annotations

# Kubernetes' own scheduler: every cluster runs it under this name, and a pod whose spec names no
# scheduler gets it (k8s.io/api core/v1 DefaultSchedulerName, v0.36.3).
DEFAULT_SCHEDULER = "default-scheduler"
# Namespaces every cluster has and no team may own.
UNSHARED_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease", "default"})
# The ResourceQuota every team namespace gets (builders/teams.py).
QUOTA_NAME = "accelerators"
# The image of the packing scheduler the fleet runs beside the cluster's own (its tag is the
# fleet's Kubernetes version).
KUBE_SCHEDULER_IMAGE = "registry.k8s.io/kube-scheduler"
