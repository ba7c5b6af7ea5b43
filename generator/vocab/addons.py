"""The catalogue of cluster add-ons the fleet's objects may need (docs/platform.md): which
add-on serves an API group or a scheduler name, and the upstream chart at a pinned version the
fleet installs it from when it renders it. Each add-on is a data entry.

Whether an environment has an add-on (`platform.<key>.provided: fleet` or `site`, or a fleet
setting that implies it) is values' business: builders/platform.py reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from generator.vocab import api
from generator.vocab.objects import Obj

FLEET, SITE = "fleet", "site"
# Who provides a vendor's node component (its device plugin, its exporter): the fleet renders it;
# the vendor's operator does (its operands, by the contract the catalog's `operator` gives); or
# the site installed it some other way (by the contract the vendor file gives).
OPERATOR = "operator"
PROVIDERS = (FLEET, OPERATOR, SITE)


@dataclass(frozen=True)
class ChartImage:
    """An image a chart deploys, as its values name it: where a registry mirror (values
    `mirrors.registries`, builders/mirrors.py) writes the mirrored reference. `default` is the
    reference, without its tag, that the published chart at the pinned version deploys (with the
    image values the fleet already gives it). The chart joins the fields it has with "/":
    `registry` (its first part: a host), `repository`, and `name` (its last part); a chart with
    one field holds the whole reference in `repository`."""

    repository: tuple[str, ...]
    default: str
    registry: tuple[str, ...] = ()
    name: tuple[str, ...] = ()


@dataclass(frozen=True)
class Chart:
    """An upstream Helm chart at a pinned version: what an add-on Application installs."""

    repo_url: str
    name: str
    version: str
    namespace: str
    release: str
    source: str
    # The same chart inside a Go module a tool module pins (gotools/<tool_module>/go.mod): validate
    # renders it from there, offline, with the values the Application carries. Empty: the
    # chart's module is not available here, and only the Application itself is checked.
    module: str = ""
    module_version: str = ""
    module_path: str = ""
    tool_module: str = ""
    # Kinds of the chart's own objects that only the API server makes valid: its CRD's defaults
    # fill fields the chart leaves out, and nulls are pruned, which kubeconform does not do.
    # validate leaves them out of its offline schema check and says so (CHART003).
    server_defaulted: tuple[str, ...] = ()
    # Secrets of the chart (in its namespace) that the chart ships with empty `data` for the
    # add-on's controller to fill (its webhook certificate rotator). Argo CD would see the filled
    # Secret as OutOfSync and self-heal would empty it again, and the rotator mint a new CA, over
    # and over: the Application ignores their `data` and respects that when it syncs
    # (builders/platform.py). validate renders the chart and refuses any such Secret left out
    # (CHART004).
    filled_secrets: tuple[str, ...] = ()
    # Every image the chart's values name: a registry mirror reaches them all. Images its
    # templates spell out, which no value changes, docs/platform.md lists ("Mirrors").
    images: tuple[ChartImage, ...] = ()


def _gpu_operator_images() -> tuple[ChartImage, ...]:
    """NVIDIA/gpu-operator v25.3.4 deployments/gpu-operator/values.yaml: each operand is a
    `repository` (registry and path) and an `image` (its name); templates/clusterpolicy.yaml
    copies both into the ClusterPolicy, from which the operator runs its operands, and
    templates/operator.yaml joins them for the operator's own Deployment (_helpers.tpl
    gpu-operator.fullimage). vgpuManager has no default repository (the site builds that image)
    and is left out. The NFD subchart (charts/node-feature-discovery v0.17.3) names its image
    in one `image.repository`."""
    nvidia, native, k8s = "nvcr.io/nvidia", "nvcr.io/nvidia/cloud-native", "nvcr.io/nvidia/k8s"
    operands = (
        ("validator", native, "gpu-operator-validator"),
        ("operator", nvidia, "gpu-operator"),
        ("operator.initContainer", nvidia, "cuda"),
        ("driver", nvidia, "driver"),
        ("driver.manager", native, "k8s-driver-manager"),
        ("toolkit", k8s, "container-toolkit"),
        ("devicePlugin", nvidia, "k8s-device-plugin"),
        ("dcgm", native, "dcgm"),
        ("dcgmExporter", k8s, "dcgm-exporter"),
        ("gfd", nvidia, "k8s-device-plugin"),
        ("migManager", native, "k8s-mig-manager"),
        ("nodeStatusExporter", native, "gpu-operator-validator"),
        ("gds", native, "nvidia-fs"),
        ("gdrcopy", native, "gdrdrv"),
        ("vgpuManager.driverManager", native, "k8s-driver-manager"),
        ("vgpuDeviceManager", native, "vgpu-device-manager"),
        ("vfioManager", nvidia, "cuda"),
        ("vfioManager.driverManager", native, "k8s-driver-manager"),
        ("kataManager", native, "k8s-kata-manager"),
        ("sandboxDevicePlugin", nvidia, "kubevirt-gpu-device-plugin"),
        ("ccManager", native, "k8s-cc-manager"),
    )
    return (
        *(
            ChartImage(
                repository=(*key.split("."), "repository"),
                name=(*key.split("."), "image"),
                default=f"{repo}/{name}",
            )
            for key, repo, name in operands
        ),
        ChartImage(
            repository=("node-feature-discovery", "image", "repository"),
            default="registry.k8s.io/nfd/node-feature-discovery",
        ),
    )


def _volcano_images() -> tuple[ChartImage, ...]:
    """volcano-sh/volcano v1.14.0 installer/helm/chart/volcano: every component's image is
    `{{ basic.image_registry }}/{{ basic.<component>_image_name }}` (templates/*.yaml), the
    registry docker.io and each name volcanosh/vc-<component> (values.yaml)."""
    names = (
        ("controller", "vc-controller-manager"),
        ("scheduler", "vc-scheduler"),
        ("agent_scheduler", "vc-agent-scheduler"),
        ("admission", "vc-webhook-manager"),
        ("agent", "vc-agent"),
    )
    return tuple(
        ChartImage(
            registry=("basic", "image_registry"),
            repository=("basic", f"{key}_image_name"),
            default=f"docker.io/volcanosh/{name}",
        )
        for key, name in names
    )


def _trainer_images() -> tuple[ChartImage, ...]:
    """github.com/kubeflow/trainer/v2 v2.2.0 charts/kubeflow-trainer/values.yaml: the manager's
    `image` and the runtimes' images are a `registry` (ghcr.io) and a `repository`, joined by
    templates/_helpers.tpl (trainer.image, trainer.runtimeImage)."""
    named = (
        (("image",), "kubeflow/trainer/trainer-controller-manager"),
        (("dataCache", "cacheImage"), "kubeflow/trainer/data-cache"),
        (("runtimes", "deepspeedDistributed", "image"), "kubeflow/trainer/deepspeed-runtime"),
        (("runtimes", "mlxDistributed", "image"), "kubeflow/trainer/mlx-runtime"),
        (("runtimes", "xgboostDistributed", "image"), "kubeflow/trainer/xgboost-runtime"),
        (("runtimes", "torchtuneDistributed", "image"), "kubeflow/trainer/torchtune-trainer"),
    )
    return tuple(
        ChartImage(
            registry=(*path, "registry"),
            repository=(*path, "repository"),
            default=f"ghcr.io/{repo}",
        )
        for path, repo in named
    )


@dataclass(frozen=True)
class Addon:
    key: str  # under `platform:` in values
    title: str
    groups: tuple[str, ...]  # API groups it serves; "*.x" matches every subgroup of x
    schedulers: tuple[str, ...]  # scheduler names it runs
    # (values path, value) of the fleet setting that declares the add-on as the site's.
    implied_by: tuple[tuple[str, ...], str] | None
    chart: Chart | None  # None: the fleet cannot render it yet; `provided: site` only
    source: str
    # Add-ons whose objects this add-on's controller makes, so whatever needs this one needs
    # them too (policy/platform.py).
    needs: tuple[str, ...] = ()
    # A vendor's operator: it provides node components of a vendor's pools (a catalog entry's
    # `operator` names it), which vendor files hand to it with `provided: operator`.
    operator: bool = False
    # Installed for a vendor's pools only (the GPU Operator, a DRA driver): the fleet renders it
    # in a cluster that holds a vendor whose catalog entry names it, not in every cluster.
    for_pools: bool = False

    # The Pod Security level its namespace must enforce for the chart's pods to be admitted, as
    # its Application labels the namespace Argo CD creates (builders/platform.py); "" for a
    # chart whose pods (at the pinned version, with the values the fleet gives) ask for no host
    # access (hostPath, hostNetwork, privileged), whose namespace keeps the cluster's default.
    pod_security: str = ""

    # The oldest Kubernetes minor its upstream says the pinned version supports (cited at each
    # entry); "" where the upstream states none at that version (the fleet then claims none).
    # No upstream here states a newest minor. policy/platform.py holds a cluster to it (KVER003).
    kubernetes: str = ""

    @property
    def name(self) -> str:
        """The key as a Kubernetes object name takes it (gpuOperator: gpu-operator)."""
        return re.sub(r"(?<!^)([A-Z])", r"-\1", self.key).lower()


ADDONS: tuple[Addon, ...] = (
    Addon(
        key="volcano",
        title="Volcano",
        # volcano.sh/apis v1.14.0 pkg/apis/*/register.go: every group is a subdomain of volcano.sh.
        groups=("*.volcano.sh",),
        # volcano-sh/volcano v1.14.0 cmd/scheduler/app/options/options.go: scheduler-name
        # defaults to "volcano".
        schedulers=("volcano",),
        implied_by=(("scheduling", "backend"), "volcano"),
        chart=Chart(
            # volcano-sh/volcano v1.14.0 README.md ("helm repo add volcano-sh
            # https://volcano-sh.github.io/helm-charts"); installer/helm/chart/volcano/Chart.yaml
            # version "1.14.0".
            repo_url="https://volcano-sh.github.io/helm-charts",
            name="volcano",
            version="1.14.0",
            namespace="volcano-system",
            release="volcano",
            source="volcano-sh/volcano installer/helm/chart/volcano v1.14.0",
            images=_volcano_images(),
        ),
        source="volcano-sh/volcano v1.14.0",
    ),
    Addon(
        key="kueue",
        title="Kueue",
        # sigs.k8s.io/kueue v0.17.0 README.md, Installation: "Requires Kubernetes 1.29 or newer".
        kubernetes="1.29",
        groups=("kueue.x-k8s.io",),  # sigs.k8s.io/kueue v0.17.0 apis/kueue/v1beta2
        schedulers=(),
        implied_by=(("scheduling", "backend"), "kueue"),
        chart=Chart(
            # sigs.k8s.io/kueue v0.17.0 charts/kueue/README.md installs the chart from
            # oci://registry.k8s.io/kueue/charts/kueue, version 0.17.0, into kueue-system (Argo
            # CD's form of a public OCI chart: as NFD's below). charts/kueue/Chart.yaml in the
            # module says 0.17.0.
            repo_url="registry.k8s.io/kueue/charts",
            name="kueue",
            version="0.17.0",
            namespace="kueue-system",
            release="kueue",
            source="kubernetes-sigs/kueue charts/kueue v0.17.0",
            module="sigs.k8s.io/kueue",
            module_version="v0.17.0",
            module_path="charts/kueue",
            tool_module="kueuecheck",
            # charts/kueue/values.yaml names the staging images; the release writes
            # registry.k8s.io/kueue/<image> (hack/helm-chart-package.sh, IMAGE_REGISTRY; the
            # fleet's values name the released manager image: builders/scheduling.py).
            images=tuple(
                ChartImage(repository=(*path, "image", "repository"), default=default)
                for path, default in (
                    (("controllerManager", "manager"), "registry.k8s.io/kueue/kueue"),
                    (("kueueViz", "backend"), "registry.k8s.io/kueue/kueueviz-backend"),
                    (("kueueViz", "frontend"), "registry.k8s.io/kueue/kueueviz-frontend"),
                )
            ),
        ),
        source="sigs.k8s.io/kueue v0.17.0",
    ),
    Addon(
        key="nfd",
        title="Node Feature Discovery",
        # sigs.k8s.io/node-feature-discovery v0.19.0 docs/reference/versions.md, Kubernetes
        # compatibility: "compatible with Kubernetes v1.24 and later".
        kubernetes="1.24",
        groups=("nfd.k8s-sigs.io",),  # sigs.k8s.io/node-feature-discovery v0.19.0 api/nfd
        schedulers=(),
        implied_by=(("nodeConfig", "method"), "nfd"),
        chart=Chart(
            # kubernetes-sigs/node-feature-discovery v0.19.0
            # deployment/helm/node-feature-discovery/README.md installs the chart from the OCI
            # registry oci://registry.k8s.io/nfd/charts/node-feature-discovery, version 0.19.0
            # (the HTTP repository it also names is the legacy one, "will be deprecated"). Argo
            # CD names a public OCI chart by its registry path without oci:// and the chart
            # apart (argo-cd v3.5.7 docs/user-guide/helm.md). The Chart.yaml inside the module
            # says 0.2.1, a placeholder the release replaces (hack/prepare-release.sh packages
            # it with --version): its templates are what 0.19.0 is.
            repo_url="registry.k8s.io/nfd/charts",
            name="node-feature-discovery",
            version="0.19.0",
            namespace="node-feature-discovery",
            release="nfd",
            source="kubernetes-sigs/node-feature-discovery deployment/helm/node-feature-discovery "
            "v0.19.0",
            module="sigs.k8s.io/node-feature-discovery",
            module_version="v0.19.0",
            module_path="deployment/helm/node-feature-discovery",
            tool_module="nfd",
            # values.yaml image.repository, used by every template (master, worker, gc,
            # topology updater, post-delete job).
            images=(
                ChartImage(
                    repository=("image", "repository"),
                    default="registry.k8s.io/nfd/node-feature-discovery",
                ),
            ),
        ),
        source="sigs.k8s.io/node-feature-discovery v0.19.0",
        # deployment/helm/node-feature-discovery/templates/worker.yaml v0.19.0: the worker
        # DaemonSet mounts hostPath volumes unconditionally (/boot, /etc/os-release, /sys,
        # /usr/lib, /lib, /proc/swaps and features.d; /usr/src with worker.mountUsrSrc), which
        # Pod Security baseline refuses. The other charts here ask for no host access with the
        # values the fleet gives them (at their pinned versions: volcano's only hostPath and
        # hostNetwork pod is templates/agent.yaml, behind custom.colocation_enable, default
        # false; jobset's controller.hostNetwork defaults to false; kueue, lws and
        # kubeflow-trainer have none outside their CRDs).
        pod_security="privileged",
    ),
    Addon(
        key="jobset",
        title="JobSet",
        # sigs.k8s.io/jobset v0.11.1 charts/jobset/README.md, Prerequisites: "Kubernetes >= 1.27".
        kubernetes="1.27",
        groups=("jobset.x-k8s.io",),  # sigs.k8s.io/jobset v0.11.1 api/jobset/v1alpha2
        schedulers=(),
        implied_by=None,
        chart=Chart(
            # sigs.k8s.io/jobset v0.11.1 charts/jobset/README.md: "helm install
            # oci://registry.k8s.io/jobset/charts/jobset --version 0.11.1"; Chart.yaml says
            # 0.11.1; the project's own manifests install into jobset-system
            # (config/default/kustomization.yaml). The version Kueue v0.17.0 requires.
            repo_url="registry.k8s.io/jobset/charts",
            name="jobset",
            version="0.11.1",
            namespace="jobset-system",
            release="jobset",
            source="kubernetes-sigs/jobset charts/jobset v0.11.1",
            module="sigs.k8s.io/jobset",
            module_version="v0.11.1",
            module_path="charts/jobset",
            tool_module="kueuecheck",
            # templates/webhook/secret.yaml: ca.crt, ca.key, tls.crt, tls.key all "" unless
            # certManager.enable; named "<fullname>-webhook-server-cert" (webhook/_helpers.tpl),
            # the fullname being the release name, which contains the chart's.
            filled_secrets=("jobset-webhook-server-cert",),
            # The released image the fleet's values name (builders/scheduling.py).
            images=(
                ChartImage(
                    repository=("image", "repository"), default="registry.k8s.io/jobset/jobset"
                ),
            ),
        ),
        source="sigs.k8s.io/jobset v0.11.1",
    ),
    Addon(
        key="lws",
        title="LeaderWorkerSet",
        groups=("leaderworkerset.x-k8s.io",),  # sigs.k8s.io/lws v0.8.0 api/leaderworkerset/v1
        schedulers=(),
        implied_by=None,
        chart=Chart(
            # sigs.k8s.io/lws v0.8.0 charts/lws/README.md: the charts at
            # oci://registry.k8s.io/lws/charts/lws; the Makefile's CHART_VERSION is the release
            # without its "v" (0.8.0; "Version used for Helm"), and the project installs into
            # lws-system (config/default/kustomization.yaml). Chart.yaml's 0.1.0 is a placeholder
            # the release replaces (hack/push-chart.sh packages it with --version). The version
            # Kueue v0.17.0 requires.
            repo_url="registry.k8s.io/lws/charts",
            name="lws",
            version="0.8.0",
            namespace="lws-system",
            release="lws",
            source="kubernetes-sigs/lws charts/lws v0.8.0",
            module="sigs.k8s.io/lws",
            module_version="v0.8.0",
            module_path="charts/lws",
            tool_module="kueuecheck",
            # The released image the fleet's values name (builders/scheduling.py).
            images=(
                ChartImage(
                    repository=("image", "manager", "repository"), default="registry.k8s.io/lws/lws"
                ),
            ),
        ),
        source="sigs.k8s.io/lws v0.8.0",
    ),
    Addon(
        key="trainer",
        title="Kubeflow Trainer",
        # github.com/kubeflow/trainer/v2 v2.2.0 charts/kubeflow-trainer/README.md, Prerequisites:
        # "Kubernetes >= 1.29".
        kubernetes="1.29",
        # github.com/kubeflow/trainer/v2 v2.2.0 pkg/apis/trainer/v1alpha1/groupversion_info.go
        groups=("trainer.kubeflow.org",),
        schedulers=(),
        implied_by=None,
        chart=Chart(
            # github.com/kubeflow/trainer/v2 v2.2.0 charts/kubeflow-trainer/README.md: "helm
            # install kubeflow-trainer oci://ghcr.io/kubeflow/charts/kubeflow-trainer" into
            # kubeflow-system; Chart.yaml says 2.2.0. Its manager finds its own namespace from
            # its service account, else kubeflow-system (pkg/util/cert/cert.go). The version
            # Kueue v0.17.0 requires (its go.mod), so the chart is in kueuecheck's modules.
            repo_url="ghcr.io/kubeflow/charts",
            name="kubeflow-trainer",
            version="2.2.0",
            namespace="kubeflow-system",
            release="kubeflow-trainer",
            source="kubeflow/trainer charts/kubeflow-trainer v2.2.0",
            module="github.com/kubeflow/trainer/v2",
            module_version="v2.2.0",
            module_path="charts/kubeflow-trainer",
            tool_module="kueuecheck",
            # templates/webhook/secret.yaml: ca.crt, ca.key, tls.crt, tls.key all "", always (the
            # chart has no cert-manager mode); named "<chart name>-webhook-cert"
            # (webhook/_helpers.tpl).
            filled_secrets=("kubeflow-trainer-webhook-cert",),
            images=_trainer_images(),
        ),
        source="github.com/kubeflow/trainer/v2 v2.2.0",
        # A TrainJob runs as a JobSet its controller makes (pkg/runtime/framework/plugins/
        # jobset, v2.2.0); the chart's own JobSet subchart is off (scheduling.py).
        needs=("jobset",),
    ),
    Addon(
        key="gpuOperator",
        title="NVIDIA GPU Operator",
        # NVIDIA/gpu-operator v25.3.4 api/nvidia/v1/groupversion_info.go: ClusterPolicy and
        # NVIDIADriver are in group nvidia.com.
        groups=("nvidia.com",),
        schedulers=(),
        implied_by=None,
        chart=Chart(
            # NVIDIA/gpu-operator v25.3.4 scripts/gpu-operator-nvaie.sh: `helm repo add nvidia
            # https://helm.ngc.nvidia.com/nvidia`, `helm upgrade --install gpu-operator
            # nvidia/gpu-operator -n gpu-operator --version=<release>`. The Chart.yaml in the tree
            # says v1.0.0-devel, a placeholder the release replaces with its tag.
            repo_url="https://helm.ngc.nvidia.com/nvidia",
            name="gpu-operator",
            version="v25.3.4",
            namespace="gpu-operator",
            release="gpu-operator",
            source="NVIDIA/gpu-operator deployments/gpu-operator v25.3.4",
            # The tag's commit: the module has no tag the Go proxy serves (gotools/charts).
            module="github.com/NVIDIA/gpu-operator",
            module_version="v0.0.0-20250917190837-d73a0086a6ba",
            module_path="deployments/gpu-operator",
            tool_module="charts",
            # crds/nvidia.com_clusterpolicies.yaml requires spec.operator.defaultRuntime, with
            # `default: docker`, which templates/clusterpolicy.yaml never writes; and it renders
            # migManager.config.name and validator.plugin as null. The API server defaults the
            # one and prunes the others (non-nullable nulls); kubeconform refuses all three.
            server_defaulted=("ClusterPolicy",),
            images=_gpu_operator_images(),
        ),
        source="NVIDIA/gpu-operator v25.3.4",
        operator=True,
        for_pools=True,
        # Its operands run privileged with host paths (the driver, the toolkit, the plugin), and
        # its own install script labels the namespace so (scripts/gpu-operator-nvaie.sh
        # apply_psa_labels: pod-security.kubernetes.io/enforce=privileged).
        pod_security="privileged",
    ),
    Addon(
        key="nvidiaDraDriver",
        title="NVIDIA DRA driver",
        # It serves no API group the fleet renders: the fleet's DeviceClass and claims are
        # Kubernetes' own resource.k8s.io (its ComputeDomain kind the fleet does not use).
        groups=(),
        schedulers=(),
        implied_by=None,
        chart=Chart(
            # NVIDIA/k8s-dra-driver-gpu v25.12.0 tests/bats/setup_suite.bash: `helm repo add
            # nvidia https://helm.ngc.nvidia.com/nvidia`; demo/clusters/kind/install-dra-driver-
            # gpu.sh installs release nvidia-dra-driver-gpu into namespace nvidia-dra-driver-gpu;
            # deployments/helm/nvidia-dra-driver-gpu/Chart.yaml says 25.12.0. Its Go module is not
            # served here: validate checks the Application, not the chart's objects.
            repo_url="https://helm.ngc.nvidia.com/nvidia",
            name="nvidia-dra-driver-gpu",
            version="25.12.0",
            namespace="nvidia-dra-driver-gpu",
            release="nvidia-dra-driver-gpu",
            source="NVIDIA/k8s-dra-driver-gpu deployments/helm/nvidia-dra-driver-gpu v25.12.0",
            # values.yaml image.repository, joined with the tag by templates/_helpers.tpl
            # (nvidia-dra-driver-gpu.fullimage) for every container.
            images=(
                ChartImage(
                    repository=("image", "repository"),
                    default="nvcr.io/nvidia/k8s-dra-driver-gpu",
                ),
            ),
        ),
        source="NVIDIA/k8s-dra-driver-gpu v25.12.0",
        for_pools=True,
        # Its kubelet plugin's containers are privileged and mount the kubelet's plugin folders
        # (values.yaml kubeletPlugin.containers.gpus.securityContext.privileged: true;
        # templates/kubeletplugin.yaml hostPath volumes plugins-registry, plugins, cdi).
        pod_security="privileged",
    ),
    Addon(
        key="gatewayAPI",
        title="Gateway API",
        groups=("gateway.networking.k8s.io",),  # sigs.k8s.io/gateway-api apis/v1
        schedulers=(),
        implied_by=None,
        chart=None,
        source="sigs.k8s.io/gateway-api",
    ),
    Addon(
        # The Multi-Cluster Services API: site infrastructure (Submariner, Cilium ClusterMesh, a
        # cloud's fleet) that exports a Service to the cluster set and imports it elsewhere; the
        # fleet renders none (docs/multi-cluster.md, "Moving a service across clusters").
        key="mcs",
        title="the Multi-Cluster Services API",
        groups=(api.MCS_GROUP,),  # sigs.k8s.io/mcs-api v0.5.2 pkg/apis/v1alpha1
        schedulers=(),
        implied_by=None,
        chart=None,
        source="sigs.k8s.io/mcs-api",
    ),
    Addon(
        key="istio",
        title="Istio",
        groups=("networking.istio.io",),  # istio/api networking/v1
        schedulers=(),
        implied_by=None,
        chart=None,
        source="istio/api",
    ),
)
BY_KEY = {a.key: a for a in ADDONS}


def serves(pattern: str, group: str) -> bool:
    """Whether an add-on's group pattern ("*.x": every subgroup of x) covers `group`."""
    if pattern.startswith("*."):
        return group.endswith(pattern[1:])
    return group == pattern


def addon_for_group(group: str) -> Addon | None:
    """The add-on that serves an API group; None for Kubernetes' own groups."""
    return next((a for a in ADDONS if any(serves(p, group) for p in a.groups)), None)


def addon_of(obj: Obj) -> Addon | None:
    """The add-on that serves a rendered object's API group; None for Kubernetes' own."""
    return addon_for_group(api.group(str(obj["apiVersion"])))


def addon_for_scheduler(name: str) -> Addon | None:
    return next((a for a in ADDONS if name in a.schedulers), None)
