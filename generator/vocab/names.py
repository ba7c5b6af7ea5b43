"""The names the fleet gives its shared objects (Kubernetes' own are kube.py's)."""

from __future__ import annotations

# The ResourceQuota every team namespace gets (builders/teams.py).
QUOTA_NAME = "accelerators"
# The image of the packing scheduler the fleet runs beside the cluster's own (its tag is the
# fleet's Kubernetes version).
KUBE_SCHEDULER_IMAGE = "registry.k8s.io/kube-scheduler"
