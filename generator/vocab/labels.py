"""Well-known label and annotation keys: the fleet's own (accel-gitops.io/...) and those of
Kubernetes and the projects the fleet deploys, each with the source that defines it."""

from __future__ import annotations

# --- The fleet's own ---------------------------------------------------------------------------
# The value of app.kubernetes.io/managed-by on everything the fleet renders.
MANAGED_BY = "accel-gitops"
# Every rendered object names the values files it comes from (README: an environment file only
# where it changed the object).
SOURCE_ANNOTATION = "accel-gitops.io/source"
VENDOR_LABEL = "accel-gitops.io/vendor"
TEAM_LABEL = "accel-gitops.io/team"
OWNERS_ANNOTATION = "accel-gitops.io/owners"
# A service's track (the vendor a Deployment of a migration runs on).
TRACK_LABEL = "accel-gitops.io/track"
# On the pods of a service that take traffic, when the service has a multi-host track.
SERVING_LABEL = "accel-gitops.io/serving"
# The migration phase a service's objects were rendered for, on its Service over all tracks: a
# reviewer's diff and `kubectl get service -o yaml` say which phase an environment is at.
PHASE_ANNOTATION = "accel-gitops.io/phase"
# The label of an Application that deploys to one cluster of an environment with clusters.
CLUSTER_LABEL = "accel-gitops.io/cluster"
ENVIRONMENT_LABEL = "accel-gitops.io/environment"
UNIT_LABEL = "accel-gitops.io/unit"
# On what the first install applies by hand, and nothing else: the AppProjects and the root
# Application (`kubectl apply -k overlays/<env>/argocd -l accel-gitops.io/bootstrap=true`). The
# root then creates the other Applications wave by wave; applied with them, every Application
# would sync at once and the waves order nothing (docs/argocd.md, simulate/gitops.py).
BOOTSTRAP_LABEL = "accel-gitops.io/bootstrap"
# On a team Namespace whose Pod Security enforce level is lifted to privileged for a capability
# its security profiles grant: the level the fleet's ValidatingAdmissionPolicy keeps there in
# Pod Security's place (its binding selects these namespaces; builders/security.py).
POD_SECURITY_POLICY_LABEL = "accel-gitops.io/pod-security"
# On the same Namespace, one label per capability granted (`capability.accel-gitops.io/IPC_LOCK:
# granted`): what the policy lets containers there add beyond baseline's list.
CAPABILITY_LABEL_PREFIX = "capability.accel-gitops.io/"
CAPABILITY_GRANTED = "granted"
# The label that names the add-on an Application installs (what validate and simulate find).
ADDON_LABEL = "accel-gitops.io/addon"
CHART_SOURCE_ANNOTATION = "accel-gitops.io/chart-source"
# The node label that names a node's accelerator brand (NFD rules set it, prefixed).
BRAND_NODE_LABEL = "gpu-brand"
# The digest of a device plugin's config file on its pods: the plugin reads the file when it
# starts (and on SIGHUP, which nothing here sends), so a changed file must roll the pods.
CONFIG_DIGEST_ANNOTATION = "accel-gitops.io/device-plugin-config"
# The owner of the fleet's TrainJob runtime patch: patches are keyed by manager, and Kueue writes
# its own beside it (trainer v2.2.0 trainjob_types.go RuntimePatch.Manager; kueue v0.17.0
# trainjob_controller.go "kueue.x-k8s.io/manager").
TRAINER_PATCH_MANAGER = "accel-gitops.io/generator"

# --- Kubernetes (k8s.io/api v0.36.3 well_known_labels.go; kubernetes v1.36.3) ------------------
NAME_LABEL = "app.kubernetes.io/name"
COMPONENT_LABEL = "app.kubernetes.io/component"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
# The API server labels every Namespace with its own name (kubernetes pkg/registry/core/
# namespace/strategy.go, v1.36.3: LabelMetadataName), so namespace selectors may use it.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
# Pod Security admission's namespace labels (k8s.io/pod-security-admission api/constants.go).
PSA_ENFORCE = "pod-security.kubernetes.io/enforce"
PSA_AUDIT = "pod-security.kubernetes.io/audit"
PSA_WARN = "pod-security.kubernetes.io/warn"

# --- Argo CD (argo-cd v3 common/common.go) ----------------------------------------------------
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
# Asks an Application to compare with Git now (v3.2.6 pkg/apis/application/v1alpha1
# AnnotationKeyRefresh; "normal" or "hard"), as a Git webhook would.
REFRESH_ANNOTATION = "argocd.argoproj.io/refresh"

# --- Node Feature Discovery (sigs.k8s.io/node-feature-discovery v0.19.0) -----------------------
# nfd-master prefixes a rule's label key that has no prefix of its own with this.
NFD_PREFIX = "feature.node.kubernetes.io/"
# The node a NodeFeature object describes (pkg/apis/nfd/v1alpha1 NodeFeatureObjNodeNameLabel).
NFD_NODE_NAME_LABEL = "nfd.node.kubernetes.io/node-name"

# --- NVIDIA GPU Operator (github.com/NVIDIA/gpu-operator, module of 2025-09-17 d73a0086a6ba) ----
# The node label that deploys the operator's device plugin on a node: its DaemonSet selects
# "true" (assets/state-device-plugin/0500_daemonset.yaml nodeSelector), and the operator keeps
# a value already on the node (controllers/state_manager.go addGPUStateLabels: "If a required
# state label already exists on the node, honor the current value"), so "false" keeps it off.
GPU_OPERATOR_DEVICE_PLUGIN_LABEL = "nvidia.com/gpu.deploy.device-plugin"

# --- Kueue and Volcano -------------------------------------------------------------------------
# sigs.k8s.io/kueue v0.17.0 pkg/controller/constants/constants.go QueueLabel, read from the
# object's labels (jobframework/interface.go QueueNameForObject) for batch/v1 Jobs and, with the
# `deployment` integration, for Deployments (jobs/deployment/deployment_webhook.go).
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
# volcano.sh/apis v1.14.0 pkg/apis/scheduling/v1beta1/labels.go QueueNameAnnotationKey: the queue
# of a pod that is not part of a Volcano Job (volcano-sh/volcano v1.14.0
# pkg/controllers/podgroup/pg_controller_handler.go puts its PodGroup in that queue).
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
