"""The keys Kubernetes and the controllers beside it put on what they make (nodes, pods,
endpoints) and that the local control plane and the simulation read or set, each with the source
that defines it. The fleet's own words are labels.py's; the control plane imports only these (it
knows nothing of the fleet: pyproject.toml's contracts)."""

from __future__ import annotations

# --- Kubernetes (k8s.io/api v0.36.3 well_known_labels.go, well_known_taints.go) ----------------
# Kubernetes' own scheduler: every cluster runs it under this name, and a pod whose spec names no
# scheduler gets it (k8s.io/api core/v1 DefaultSchedulerName).
DEFAULT_SCHEDULER = "default-scheduler"
# The namespaces every cluster has (kubernetes v1.36.3 pkg/controlplane: the system namespaces,
# and `default`): no team may own one, and a reset of the local control plane keeps them.
SYSTEM_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease", "default"})
HOSTNAME_LABEL = "kubernetes.io/hostname"
OS_LABEL = "kubernetes.io/os"
ARCH_LABEL = "kubernetes.io/arch"
# kubeadm's taint on a control-plane node (k8s.io/api core/v1 well_known_taints.go is silent on
# it; kubernetes v1.36.3 cmd/kubeadm/app/constants LabelNodeRoleControlPlane).
CONTROL_PLANE_TAINT_KEY = "node-role.kubernetes.io/control-plane"
NOT_READY_TAINT_KEY = "node.kubernetes.io/not-ready"  # well_known_taints.go TaintNodeNotReady
# An EndpointSlice's Service (k8s.io/api discovery/v1 well_known_labels.go LabelServiceName).
SERVICE_NAME_LABEL = "kubernetes.io/service-name"

# --- KWOK (sigs.k8s.io/kwok v0.8.0) --------------------------------------------------------------
# KWOK manages only Nodes with this annotation (never a real node, should the kubeconfig ever
# point elsewhere).
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"

# --- the pods of batch controllers ---------------------------------------------------------------
# JobSet's on every pod of a replicated job (sigs.k8s.io/jobset v0.11.1
# api/jobset/v1alpha2/jobset_types.go JobSetNameKey, ReplicatedJobNameKey) and LeaderWorkerSet's
# on every pod of its groups (sigs.k8s.io/lws v0.8.0 api/leaderworkerset/v1
# leaderworkerset_types.go SetNameLabelKey, GroupIndexLabelKey).
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_NAME_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
# Volcano's on the pods of a Job's tasks (volcano.sh/apis v1.14.0 pkg/apis/batch/v1alpha1
# labels.go JobNameKey, TaskSpecKey).
VOLCANO_JOB_NAME_LABEL = "volcano.sh/job-name"
VOLCANO_TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"
# The scheduling gate Kueue's pod integration puts on the pods it manages until their workload is
# admitted (sigs.k8s.io/kueue v0.17.0 pkg/controller/jobs/pod/constants/constants.go).
KUEUE_ADMISSION_GATE = "kueue.x-k8s.io/admission"
# Helm's hook annotation (helm.sh/helm/v3 pkg/release/hook.go): hooks run at install or delete,
# not as part of what stays deployed.
HELM_HOOK_ANNOTATION = "helm.sh/hook"

# --- the local control plane's own ----------------------------------------------------------------
# What the throwaway control plane makes itself (nodes, webhook endpoints, stand-ins) carries
# this label: scaffolding, never an object of the fleet, swept by a reset.
SIM_LABEL = "accel-gitops.io/simulation"
# The scheduling gate the simulation puts on the pods of a Volcano gang it holds back: they stay
# unscheduled (Kubernetes "Pod Scheduling Readiness", stable since v1.30) and hold no devices.
GANG_GATE = "accel-gitops.io/volcano-gang"

# Argo CD's own keys, which the simulation's Argo CD install writes (controlplane/argocd.py).
# A cluster Secret: argo-cd v3.2.6 common/common.go LabelKeySecretType, value "cluster".
ARGOCD_SECRET_TYPE_LABEL = "argocd.argoproj.io/secret-type"
# What Argo CD reads its own ConfigMaps and Secrets by (argo-cd v3.2.6 util/settings/settings.go,
# partOfArgoCDSelector "app.kubernetes.io/part-of=argocd").
ARGOCD_PART_OF_LABEL = "app.kubernetes.io/part-of"
# The release a Helm chart's objects belong to (Helm's recommended labels; NFD v0.19.0
# deployment/helm/node-feature-discovery/templates/_helpers.tpl sets it on every object).
HELM_INSTANCE_LABEL = "app.kubernetes.io/instance"
