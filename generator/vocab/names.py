"""The names the fleet gives its shared objects (Kubernetes' own are kube.py's)."""

from __future__ import annotations

# The ResourceQuota every team namespace gets (builders/teams.py).
QUOTA_NAME = "accelerators"
# The image of the packing scheduler the fleet runs beside the cluster's own (its tag is the
# fleet's Kubernetes version).
KUBE_SCHEDULER_IMAGE = "registry.k8s.io/kube-scheduler"
# The ValidatingAdmissionPolicy (and its binding) that keeps Pod Security baseline in team
# namespaces lifted to privileged for a security profile's capabilities (builders/security.py).
SECURITY_PROFILES_POLICY = "accel-gitops-security-profiles"
