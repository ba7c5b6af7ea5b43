"""The API group and version of every kind the fleet renders, reads or serves to a control plane.

One name per group/version: a kind's apiVersion is spelled here only (a test holds that), so an
upgrade of an API is one line and every reader agrees with every writer.
"""

from __future__ import annotations

# Kubernetes' own (k8s.io/api v0.36.3).
CORE = "v1"
APPS = "apps/v1"
BATCH = "batch/v1"
POLICY = "policy/v1"
RBAC = "rbac.authorization.k8s.io/v1"
SCHEDULING = "scheduling.k8s.io/v1"
NODE = "node.k8s.io/v1"
# Dynamic Resource Allocation, stable (resource.k8s.io/v1) since Kubernetes v1.35.
RESOURCE = "resource.k8s.io/v1"
ADMISSION = "admissionregistration.k8s.io/v1"
APIEXTENSIONS = "apiextensions.k8s.io/v1"
DISCOVERY = "discovery.k8s.io/v1"
KUBE_SCHEDULER_CONFIG = "kubescheduler.config.k8s.io/v1"
KUSTOMIZE = "kustomize.config.k8s.io/v1beta1"

# Node Feature Discovery (sigs.k8s.io/node-feature-discovery v0.19.0 api/nfd/v1alpha1).
NFD = "nfd.k8s-sigs.io/v1alpha1"
# Kueue v1beta2 (sigs.k8s.io/kueue v0.17.0 apis/kueue/v1beta2, apis/config/v1beta2).
KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE = f"{KUEUE_GROUP}/v1beta2"
KUEUE_CONFIG = "config.kueue.x-k8s.io/v1beta2"
# JobSet (sigs.k8s.io/jobset v0.11.1 api/jobset/v1alpha2).
JOBSET_GROUP = "jobset.x-k8s.io"
JOBSET = f"{JOBSET_GROUP}/v1alpha2"
LWS_GROUP = "leaderworkerset.x-k8s.io"
LWS = f"{LWS_GROUP}/v1"  # sigs.k8s.io/lws v0.8.0 api/leaderworkerset/v1
# Kubeflow Trainer (github.com/kubeflow/trainer/v2 v2.2.0 pkg/apis/trainer/v1alpha1): the
# current API of Kubeflow's training jobs, one TrainJob kind for every framework; the
# training-operator's PyTorchJob is its predecessor (README.md: Trainer "is the evolution of
# the Kubeflow Training Operator").
TRAINER_GROUP = "trainer.kubeflow.org"
TRAINER = f"{TRAINER_GROUP}/v1alpha1"
# Volcano (volcano.sh/apis v1.14.0 pkg/apis/batch/v1alpha1, pkg/apis/scheduling/v1beta1).
VOLCANO_BATCH_GROUP = "batch.volcano.sh"
VOLCANO_BATCH = f"{VOLCANO_BATCH_GROUP}/v1alpha1"
VOLCANO_SCHEDULING = "scheduling.volcano.sh/v1beta1"
# The Prometheus Operator (github.com/prometheus-operator/prometheus-operator v0.85.0).
MONITORING = "monitoring.coreos.com/v1"
# NVIDIA's GPU Operator (NVIDIA/gpu-operator v25.3.4 api/nvidia/v1 clusterpolicy_types.go): its
# ClusterPolicy, cluster-scoped, which preflight reads of a site's Operator.
NVIDIA_GPU_OPERATOR = "nvidia.com/v1"
# Argo CD (argo-cd v3 pkg/apis/application/v1alpha1).
ARGOCD = "argoproj.io/v1alpha1"
# Traffic splitting: the Gateway API's HTTPRoute and Istio's VirtualService.
GATEWAY = "gateway.networking.k8s.io/v1"
ISTIO_NETWORKING = "networking.istio.io/v1"
# Multi-Cluster Services (sigs.k8s.io/mcs-api v0.5.2 config/crd/multicluster.x-k8s.io_service
# exports.yaml and _serviceimports.yaml: v1alpha1 served, v1beta1 the storage version). The
# fleet writes v1alpha1, the version every MCS implementation serves; a cross-cluster service's
# tracks are exported by a ServiceExport and routed to as ServiceImports (Gateway API v1.6.3
# geps/gep-1748, "ServiceImport as a Backend").
MCS_GROUP = "multicluster.x-k8s.io"
MCS = f"{MCS_GROUP}/v1alpha1"


# Kueue's integration per kind of team workload the fleet points at a queue (builders/workloads.py
# _wire_queue): batch/v1 Jobs, and Deployments, whose pods Kueue admits one by one through the
# pod integration that "deployment" enables with it (pkg/controller/jobs/deployment/
# deployment_controller.go ImplicitlyEnabledFrameworkNames, v0.17.0).
# A JobSet is admitted as one workload by the jobset integration (pkg/controller/jobs/jobset/
# jobset_controller.go FrameworkName "jobset.x-k8s.io/jobset", v0.17.0).
# A LeaderWorkerSet group is one workload of the leaderworkerset integration, which enables the
# pod integration with it (ImplicitlyEnabledFrameworkNames)
# (pkg/controller/jobs/leaderworkerset/leaderworkerset_controller.go FrameworkName, v0.17.0).
# A TrainJob is one workload of the trainjob integration (pkg/controller/jobs/trainjob/
# trainjob_controller.go FrameworkName, v0.17.0), which reads its pod sets from the JobSet its
# runtime describes.
KUEUE_FRAMEWORKS = {
    "job": "batch/job",
    "service": "deployment",
    "jobset": "jobset.x-k8s.io/jobset",
    "lws": "leaderworkerset.x-k8s.io/leaderworkerset",
    "trainjob": "trainer.kubeflow.org/trainjob",
}


def group(api_version: str) -> str:
    """The API group of an apiVersion ("" for the core group's "v1")."""
    return api_version.rpartition("/")[0]
