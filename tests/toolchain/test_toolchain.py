"""Real tests of generator.toolchain: the pinned tools and schemas that `make tools` installs.

Nothing here mocks a tool: kustomize, kubeconform and promtool are run for real, and kubeconform
validates against the offline schemas under .tools/schemas.
"""

from __future__ import annotations

import json
import mmap
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from generator.toolchain import (
    buildinfo,
    crdschemas,
    doctor,
    gobuild,
    install,
    process,
    registry,
    schemas,
)
from generator.toolchain.errors import ToolFailed, ToolMissing, ToolTimeout

REPO = registry.repo_root()
K8S_VERSION = "1.37.0"


# ------------------------------------------------------------------------------------ helpers


def kubeconform(tmp_path: Path, docs: list[dict[str, Any]], *extra: str) -> dict[str, Any]:
    """Validate docs with kubeconform -strict against the offline schemas; return its JSON report."""
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    proc = process.run(
        "kubeconform",
        [
            "-strict",
            "-summary",
            "-output",
            "json",
            "-kubernetes-version",
            K8S_VERSION,
            *schemas.kubeconform_schema_args(),
            *extra,
            str(manifest),
        ],
        timeout=120,
        check=False,
    )
    report: dict[str, Any] = json.loads(proc.stdout)
    report["returncode"] = proc.returncode
    return report


def meta(name: str, namespace: str | None = "default") -> dict[str, Any]:
    m: dict[str, Any] = {"name": name}
    if namespace:
        m["namespace"] = namespace
    return m


DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": meta("web"),
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {
                        "name": "web",
                        "image": "nginx:1.27",
                        "ports": [{"containerPort": 80}],
                        "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": "500m"}},
                    }
                ]
            },
        },
    },
}

ARGO_SPEC: dict[str, Any] = {
    "project": "default",
    "source": {
        "repoURL": "https://git.example.com/fleet.git",
        "path": "a",
        "targetRevision": "HEAD",
    },
    "destination": {"server": "https://kubernetes.default.svc", "namespace": "team-a"},
}

# One valid instance of every CRD kind the generator emits (generator/toolchain/gotools/schemas.lock.yaml `expect`).
CRD_SAMPLES: dict[str, dict[str, Any]] = {
    "PrometheusRule": {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": meta("accel"),
        "spec": {"groups": [{"name": "g", "rules": [{"record": "a:b", "expr": "sum(up)"}]}]},
    },
    "PodMonitor": {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": meta("dcgm"),
        "spec": {
            "selector": {"matchLabels": {"app": "dcgm"}},
            "podMetricsEndpoints": [{"port": "metrics"}],
        },
    },
    "ServiceMonitor": {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": meta("exporter"),
        "spec": {"selector": {"matchLabels": {"app": "x"}}, "endpoints": [{"port": "metrics"}]},
    },
    "Application": {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": meta("team-a", "argocd"),
        "spec": ARGO_SPEC,
    },
    "ApplicationSet": {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": meta("teams", "argocd"),
        "spec": {
            "generators": [{"list": {"elements": [{"team": "a"}]}}],
            "template": {"metadata": {"name": "team-{{team}}"}, "spec": ARGO_SPEC},
        },
    },
    "AppProject": {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": meta("fleet", "argocd"),
        "spec": {"sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": "*"}]},
    },
    "NodeFeatureRule": {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeatureRule",
        "metadata": meta("nvidia", None),
        "spec": {
            "rules": [
                {
                    "name": "nvidia gpu",
                    "labels": {"accel.example.com/vendor": "nvidia"},
                    "matchFeatures": [
                        {
                            "feature": "pci.device",
                            "matchExpressions": {"vendor": {"op": "In", "value": ["10de"]}},
                        }
                    ],
                }
            ]
        },
    },
    "HTTPRoute": {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": meta("inference"),
        "spec": {
            "parentRefs": [{"name": "gw"}],
            "rules": [{"backendRefs": [{"name": "svc", "port": 80}]}],
        },
    },
    "VirtualService": {
        "apiVersion": "networking.istio.io/v1",
        "kind": "VirtualService",
        "metadata": meta("inference"),
        "spec": {"hosts": ["svc"], "http": [{"route": [{"destination": {"host": "svc"}}]}]},
    },
    # sigs.k8s.io/mcs-api v0.5.2: a track's export, and the import a cross-cluster route
    # names (the fleet renders the export only; the MCS implementation makes the import).
    "ServiceExport": {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ServiceExport",
        "metadata": meta("chat-nvidia"),
        "spec": {},
    },
    "ServiceImport": {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ServiceImport",
        "metadata": meta("chat-nvidia"),
        "spec": {"type": "ClusterSetIP", "ports": [{"port": 80, "protocol": "TCP"}]},
    },
    "Job": {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": meta("train"),
        "spec": {
            "minAvailable": 1,
            "schedulerName": "volcano",
            "queue": "default",
            "tasks": [
                {
                    "name": "worker",
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
                }
            ],
        },
    },
    "Queue": {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": meta("gpu", None),
        "spec": {"weight": 1, "capability": {"nvidia.com/gpu": 8}},
    },
}

for _v in ("v1beta1", "v1beta2"):
    CRD_SAMPLES[f"ResourceFlavor/{_v}"] = {
        "apiVersion": f"kueue.x-k8s.io/{_v}",
        "kind": "ResourceFlavor",
        "metadata": meta("a100", None),
        "spec": {"nodeLabels": {"accel.example.com/model": "a100"}},
    }
    CRD_SAMPLES[f"ClusterQueue/{_v}"] = {
        "apiVersion": f"kueue.x-k8s.io/{_v}",
        "kind": "ClusterQueue",
        "metadata": meta("gpu", None),
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": "a100",
                            "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}],
                        }
                    ],
                }
            ],
        },
    }
    CRD_SAMPLES[f"LocalQueue/{_v}"] = {
        "apiVersion": f"kueue.x-k8s.io/{_v}",
        "kind": "LocalQueue",
        "metadata": meta("team-a"),
        "spec": {"clusterQueue": "gpu"},
    }


# The training and multi-host inference kinds (issue 21), each with one worker pod template.
POD = {"spec": {"containers": [{"name": "train", "image": "r/t:1"}], "restartPolicy": "Never"}}
CRD_SAMPLES["JobSet"] = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "metadata": meta("train"),
    "spec": {
        "replicatedJobs": [
            {"name": "workers", "replicas": 2, "template": {"spec": {"template": POD}}}
        ],
        "failurePolicy": {"maxRestarts": 3},
    },
}
CRD_SAMPLES["LeaderWorkerSet"] = {
    "apiVersion": "leaderworkerset.x-k8s.io/v1",
    "kind": "LeaderWorkerSet",
    "metadata": meta("serve"),
    "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 2, "workerTemplate": POD}},
}
CRD_SAMPLES["TrainJob"] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": meta("train"),
    "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 2}},
}


def with_unknown_field(doc: dict[str, Any]) -> dict[str, Any]:
    bad: dict[str, Any] = json.loads(json.dumps(doc))
    bad["spec"]["bogusField"] = True
    return bad


# ------------------------------------------------------------------------------- doctor & pins


CONTROL_PLANE = ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "etcd"]


@pytest.mark.parametrize(
    "name",
    [
        "kustomize",
        "kubeconform",
        "promtool",
        "promrulecheck",
        "nfd-master",
        "nfd-rulecheck",
        "kueuecheck",
        "workloadcheck",
        "trainjobcheck",
        *CONTROL_PLANE,
        "kwok",
        "jobset",
        "lws",
    ],
)
def test_doctor_finds_pinned_tool(name: str) -> None:
    status = {s.name: s for s in doctor.doctor()}[name]
    assert status.path is not None, status
    assert status.path.parent == registry.tools_dir() / "bin"
    assert status.version == registry.TOOLS[name].pinned
    assert status.ok
    if name in (*CONTROL_PLANE, "kwok", "nfd-master", "jobset", "lws"):  # not built by make demo
        assert status.optional
        assert status.install_hint == (
            "accel-gitops tools install --only cluster (simulate and validate --dry-run=server "
            "build it on first use)"
        )
    else:
        assert not status.optional
        assert status.install_hint == "accel-gitops tools install"


def test_doctor_reports_git_and_go() -> None:
    status = {s.name: s for s in doctor.doctor()}
    assert status["git"].ok and status["git"].version
    assert status["go"].ok and status["go"].version and status["go"].version.startswith("go1.")


def _go_mod_requires(path: Path) -> dict[str, str]:
    found = re.findall(r"^\s*(?:require\s+)?(\S+)\s+(v\S+)", path.read_text(), flags=re.M)
    return dict(found)


@pytest.mark.parametrize(
    ("name", "gomod"),
    [
        ("kustomize", "generator/toolchain/gotools/kustomize/go.mod"),
        ("kubeconform", "generator/toolchain/gotools/kustomize/go.mod"),
        ("promtool", "generator/toolchain/gotools/promtool/go.mod"),
        ("promrulecheck", "generator/toolchain/gotools/promoperator/go.mod"),
        ("nfd-master", "generator/toolchain/gotools/nfd/go.mod"),
        ("nfd-rulecheck", "generator/toolchain/gotools/nfd/go.mod"),
        ("kueuecheck", "generator/toolchain/gotools/kueuecheck/go.mod"),
        ("workloadcheck", "generator/toolchain/gotools/workloads/go.mod"),
        ("trainjobcheck", "generator/toolchain/gotools/kueuecheck/go.mod"),
        ("trainer", "generator/toolchain/gotools/kueuecheck/go.mod"),
        ("jobset", "generator/toolchain/gotools/workloads/go.mod"),
        ("lws", "generator/toolchain/gotools/workloads/go.mod"),
        *[(name, "generator/toolchain/gotools/controlplane/go.mod") for name in CONTROL_PLANE],
        ("kwok", "generator/toolchain/gotools/kwok/go.mod"),
        *[
            (f"{name}-{minor}", f"generator/toolchain/gotools/controlplane-{minor}/go.mod")
            for minor in ("1.34", "1.35", "1.37")
            for name in ("kube-apiserver", "kube-scheduler", "kubectl", "etcd")
        ],
    ],
)
def test_registry_pins_match_go_mod(name: str, gomod: str) -> None:
    tool = registry.TOOLS[name]
    assert tool.go_module is not None
    requires = _go_mod_requires(REPO / gomod)
    assert requires[tool.go_module] == tool.pinned
    assert f"{tool.go_module}@{tool.pinned}" in tool.source


@pytest.mark.parametrize(
    ("folder", "release", "etcd"),
    [
        ("controlplane-1.34", "v1.34.4", "v3.6.4"),
        ("controlplane-1.35", "v1.35.4", "v3.6.5"),
        ("controlplane", "v1.36.3", "v3.6.8"),
        ("controlplane-1.37", "v1.37.2", "v3.7.0"),
    ],
)
def test_control_plane_is_one_kubernetes_with_its_staging_modules_at_the_same_release(
    folder: str, release: str, etcd: str
) -> None:
    # k8s.io/kubernetes points its staging modules at ./staging; each must be replaced by the
    # published v0.X.Y of the same release (v1.36.3 -> v0.36.3), or the binaries mix releases;
    # etcd is at the version that release's go.mod requires.
    gomod = (REPO / f"generator/toolchain/gotools/{folder}/go.mod").read_text()
    requires = _go_mod_requires(REPO / f"generator/toolchain/gotools/{folder}/go.mod")
    assert (requires["k8s.io/kubernetes"], requires["go.etcd.io/etcd/server/v3"]) == (release, etcd)
    staging = "v0." + release.removeprefix("v1.")
    replaced = re.findall(r"^\s*(k8s\.io/\S+) => (k8s\.io/\S+) (v\S+)$", gomod, flags=re.M)
    assert len(replaced) >= 30
    assert all(a == b and v == staging for a, b, v in replaced), replaced


def test_kube_apiserver_is_stamped_with_its_version() -> None:
    out = process.run("kube-apiserver", ["--version"], timeout=60).stdout.decode()
    assert out.split() == ["Kubernetes", registry.TOOLS["kube-apiserver"].pinned]


def test_nfd_master_reports_its_pinned_version() -> None:
    # NFD stamps its version at link time (-X .../pkg/version.version); `tools install` must too,
    # or `nfd-master -version` says "undefined" and NFD's version annotation on the node is wrong.
    out = process.run("nfd-master", ["-version"], timeout=60).stdout.decode()
    assert out.split() == ["nfd-master", registry.TOOLS["nfd-master"].pinned]
    assert registry.TOOLS["nfd-master"].pinned == install.NFD_VERSION


def test_go_build_info_of_kubeconform() -> None:
    path = registry.find("kubeconform")
    assert path is not None
    info = buildinfo.go_build_info(path)
    assert info is not None
    assert info.path == "github.com/yannh/kubeconform/cmd/kubeconform"
    assert info.go_version.startswith("go1.")


def _build_info_blob(go_version: str, main: str) -> bytes:
    """Go's build info as a binary embeds it (strings inline, flag 2), 16-byte aligned."""
    mod = "0" * 16 + f"path\t{main}\nmod\t{main}\tv1.2.3\t\n" + "1" * 16
    assert mod[-17] == "\n"
    out = b"\xff Go buildinf:" + b"\x08\x02" + b"\0" * 16
    for text in (go_version, mod):
        out += bytes([len(text)]) + text.encode()  # lengths under 128: a one-byte uvarint
    return out + b"\0" * (-len(out) % 16)


def _elf(sections: dict[str, bytes], before: bytes = b"") -> bytes:
    """A 64-bit little-endian ELF file holding `before` after its header (padded to 16) and
    then `sections`, with a section name table: what _elf_section reads of a Go binary."""
    names = b"\0" + b"".join(n.encode() + b"\0" for n in [*sections, ".shstrtab"])
    body = bytearray(64) + before + b"\0" * (-len(before) % 16)
    headers = [bytes(64)]  # section 0: SHN_UNDEF
    for name, data in [*sections.items(), (".shstrtab", names)]:
        at = len(body)
        body += data + b"\0" * (-len(data) % 16)
        header = bytearray(64)
        header[0:4] = names.index(name.encode() + b"\0").to_bytes(4, "little")
        header[0x18:0x20] = at.to_bytes(8, "little")
        header[0x20:0x28] = len(data).to_bytes(8, "little")
        headers.append(bytes(header))
    shoff = len(body)
    body[0:6] = b"\x7fELF\x02\x01"
    body[0x28:0x30] = shoff.to_bytes(8, "little")
    body[0x3A:0x3C] = (64).to_bytes(2, "little")
    body[0x3C:0x3E] = len(headers).to_bytes(2, "little")
    body[0x3E:0x40] = (len(headers) - 1).to_bytes(2, "little")
    return bytes(body) + b"".join(headers)


def test_go_build_info_is_read_where_go_reads_it(tmp_path: Path) -> None:
    """In an ELF binary, at its .go.buildinfo section, as Go's debug/buildinfo reads it (an
    aligned build-info-like blob earlier in the file is not it); in a file that is not ELF, or
    has no such section, the first aligned blob of the file."""
    real = _build_info_blob("go1.26.8", "example.com/real")
    decoy = _build_info_blob("go1.0-decoy", "example.com/decoy")
    elf = tmp_path / "tool"
    elf.write_bytes(_elf({".text": b"\x90" * 48, ".go.buildinfo": real}, before=decoy))
    info = buildinfo.go_build_info(elf)
    assert info is not None
    assert (info.go_version, info.path) == ("go1.26.8", "example.com/real")
    assert info.modules == {"example.com/real": "v1.2.3"}
    other = tmp_path / "other"
    other.write_bytes(_elf({".data": real}, before=decoy))
    found = buildinfo.go_build_info(other)
    assert found is not None and found.path == "example.com/decoy"
    plain = tmp_path / "plain"
    plain.write_bytes(b"\0" * 32 + real)
    found = buildinfo.go_build_info(plain)
    assert found is not None and found.path == "example.com/real"


@pytest.mark.parametrize("tool", ["kubeconform", "kbuild", "promtool"])
def test_a_pinned_tools_build_info_section_is_where_its_build_info_is(tool: str) -> None:
    """On the tools this repository builds, the .go.buildinfo section starts at the first
    aligned build info of the file (what reading the whole file found before)."""
    path = registry.find(tool)
    assert path is not None
    data = path.read_bytes()
    first = data.find(b"\xff Go buildinf:")
    while first % 16:
        first = data.find(b"\xff Go buildinf:", first + 1)
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        assert buildinfo._elf_section(buf, b".go.buildinfo") == first


# ----------------------------------------------------------------------------------- kustomize


def test_kustomize_builds(tmp_path: Path) -> None:
    (tmp_path / "deploy.yaml").write_text(yaml.safe_dump(DEPLOYMENT))
    (tmp_path / "kustomization.yaml").write_text(
        "resources: [deploy.yaml]\nnamespace: team-a\ncommonLabels: {fleet: demo}\n"
    )
    out = process.run("kustomize", ["build", str(tmp_path)], timeout=120).stdout
    doc = yaml.safe_load(out)
    assert doc["metadata"]["namespace"] == "team-a"
    assert doc["metadata"]["labels"] == {"fleet": "demo"}


# --------------------------------------------------------------------------------- kubeconform


def test_schema_locations() -> None:
    k8s = schemas.k8s_schema_location()
    crds = schemas.crd_schema_location()
    assert k8s.endswith(
        "/k8s/{{.NormalizedKubernetesVersion}}-local{{.StrictSuffix}}"
        "/{{.ResourceKind}}{{.KindSuffix}}.json"
    )
    assert crds.endswith("/crds/{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json")
    assert K8S_VERSION in schemas.k8s_schema_versions()
    assert schemas.kubeconform_kubernetes_version("1.33") == "1.33.0"
    assert schemas.kubeconform_kubernetes_version("v1.37.2") == "1.37.0"


def test_kubeconform_accepts_valid_deployment(tmp_path: Path) -> None:
    report = kubeconform(tmp_path, [DEPLOYMENT])
    assert report["returncode"] == 0, report
    assert report["summary"]["valid"] == 1


def test_kubeconform_rejects_unknown_field_in_deployment(tmp_path: Path) -> None:
    bad = with_unknown_field(DEPLOYMENT)
    bad["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    report = kubeconform(tmp_path, [bad])
    assert report["returncode"] == 1
    assert report["summary"]["invalid"] == 1, report
    text = json.dumps(report["resources"])
    assert "bogusField" in text and "imagePullPolicyy" in text


@pytest.mark.parametrize("k8s_version", ["1.25.0", "1.33.0", "1.37.0"])
def test_kubeconform_builtin_schemas_resolve_offline_per_version(
    tmp_path: Path, k8s_version: str
) -> None:
    docs = [
        DEPLOYMENT,
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": meta("gpu", "team-a"),
            "spec": {"hard": {"requests.nvidia.com/gpu": "4"}},
        },
    ]
    manifest = tmp_path / "m.yaml"
    manifest.write_text(yaml.safe_dump_all(docs))
    proc = process.run(
        "kubeconform",
        [
            "-strict",
            "-summary",
            "-kubernetes-version",
            k8s_version,
            *schemas.kubeconform_schema_args(),
            str(manifest),
        ],
        timeout=120,
    )
    assert b"Valid: 3, Invalid: 0, Errors: 0" in proc.stdout


def test_kubeconform_accepts_every_crd_sample(tmp_path: Path) -> None:
    report = kubeconform(tmp_path, list(CRD_SAMPLES.values()))
    assert report["returncode"] == 0, json.dumps(report["resources"], indent=1)
    assert report["summary"]["valid"] == len(CRD_SAMPLES)


@pytest.mark.parametrize("sample", sorted(CRD_SAMPLES))
def test_kubeconform_rejects_unknown_field_in_crd(tmp_path: Path, sample: str) -> None:
    report = kubeconform(tmp_path, [with_unknown_field(CRD_SAMPLES[sample])])
    assert report["returncode"] == 1
    assert report["summary"]["invalid"] == 1, report
    (resource,) = report["resources"]
    assert resource["status"] == "statusInvalid"
    assert "bogusField" in resource["msg"]


def test_kubeconform_checks_types_in_crd(tmp_path: Path) -> None:
    doc = json.loads(json.dumps(CRD_SAMPLES["PrometheusRule"]))
    doc["spec"]["groups"][0]["rules"][0]["for"] = 5  # must be a duration string
    report = kubeconform(tmp_path, [doc])
    assert report["summary"]["invalid"] == 1


def test_kind_without_schema_is_an_error(tmp_path: Path) -> None:
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta("w")}
    report = kubeconform(tmp_path, [widget])
    assert report["returncode"] == 1
    assert report["summary"]["errors"] == 1
    assert "could not find schema" in report["resources"][0]["msg"]
    # ...and is skipped only when explicitly asked for.
    report = kubeconform(tmp_path, [widget], "-ignore-missing-schemas")
    assert report["returncode"] == 0
    assert report["summary"]["skipped"] == 1


# ------------------------------------------------------------------------------------ promtool


VALID_RULES = """\
groups:
  - name: accel
    rules:
      - record: accel:gpu_utilization:avg
        expr: avg by (vendor) (accel_gpu_utilization_ratio)
      - alert: AccelGPUDown
        expr: up{job="dcgm"} == 0
        for: 5m
        labels:
          severity: warning
        annotations:
          summary: GPU exporter down
"""

INVALID_RULES = """\
groups:
  - name: accel
    rules:
      - record: accel:gpu_utilization:avg
        expr: avg by (vendor) (accel_gpu_utilization_ratio
"""


def test_promtool_accepts_valid_rules(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(VALID_RULES)
    proc = process.run(
        "promtool", ["check", "rules", "--lint=all", "--lint-fatal", str(rules)], timeout=120
    )
    assert b"SUCCESS: 2 rules found" in proc.stdout


def test_promtool_rejects_invalid_rules(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(INVALID_RULES)
    with pytest.raises(ToolFailed) as info:
        process.run("promtool", ["check", "rules", str(rules)], timeout=120)
    err = info.value
    assert err.returncode == 1
    assert err.argv[-1] == str(rules)
    assert b"FAILED" in err.stdout + err.stderr


# ------------------------------------------------------------------------------ missing/timeout


@pytest.fixture
def no_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    empty = tmp_path / "empty-tools"
    empty.mkdir()
    monkeypatch.setenv(registry.ENV_TOOLS_DIR, str(empty))
    monkeypatch.setenv("PATH", "")
    return empty


@pytest.mark.parametrize("name", ["kustomize", "kubeconform", "promtool"])
def test_tool_missing_names_install_command(no_tools: Path, name: str) -> None:
    assert registry.find(name) is None
    with pytest.raises(ToolMissing, match=r"install it with: accel-gitops tools install$") as info:
        process.run(name, ["--help"], timeout=10)
    assert info.value.tool == name
    assert str(no_tools / "bin") in str(info.value)
    status = {s.name: s for s in doctor.doctor()}[name]
    assert status.path is None and status.version is None and not status.ok


def test_git_missing_names_apt(no_tools: Path) -> None:
    with pytest.raises(ToolMissing, match=r"apt-get install git"):
        gobuild.version("git")


def test_schemas_missing(no_tools: Path) -> None:
    with pytest.raises(ToolMissing, match=r"accel-gitops tools install"):
        schemas.k8s_schema_location()
    with pytest.raises(ToolMissing, match=r"accel-gitops tools install"):
        schemas.crd_schema_location()


def test_unknown_tool_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown tool"):
        process.run("not-a-tool", [], timeout=1)


def test_tool_timeout(tmp_path: Path) -> None:
    # kubeconform blocks opening a FIFO that nobody writes to: the timeout must kill it.
    fifo = tmp_path / "never-written.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ToolTimeout) as info:
        process.run("kubeconform", ["-summary", str(fifo)], timeout=0.5)
    assert info.value.timeout == 0.5
    assert "timed out" in str(info.value)


def test_tool_failed_without_check_returns_process(tmp_path: Path) -> None:
    proc = process.run("kustomize", ["build", str(tmp_path / "nope")], timeout=60, check=False)
    assert proc.returncode != 0
    assert proc.stderr


# ------------------------------------------------------------------- crdschemas.py rules


# A schema set as kubernetes-validate ships it: a kind whose refs are absolute, and definitions
# that refer to each other inside `_definitions.json`. `Limits` uses a keyword of draft 2020-12
# only (dependentRequired): kubeconform reads a file without `$schema` as draft 4, which ignores
# it, so the split files must carry the set's dialect.
WIDGET_SET = {
    "widget-v1.json": {
        "$id": "https://kubernetes.io/api/widget/v1",
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {"$ref": "/api/_definitions.json#/$defs/io.example.v1.WidgetSpec"},
        },
        "additionalProperties": False,
        "x-kubernetes-group-version-kind": [{"group": "", "kind": "Widget", "version": "v1"}],
    },
    "_definitions.json": {
        "$id": "https://kubernetes.io/api/_definitions.json",
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": {
            "io.example.v1.WidgetSpec": {
                "type": "object",
                "properties": {
                    "size": {"type": "integer"},
                    "limits": {"$ref": "#/$defs/io.example.v1.Limits"},
                },
                "additionalProperties": False,
            },
            "io.example.v1.Limits": {
                "type": "object",
                "properties": {"max": {"type": "integer"}, "min": {"type": "integer"}},
                "dependentRequired": {"max": ["min"]},
            },
            "io.example.v1.Unused": {"type": "string"},
            "io.example.v1.Either": {"anyOf": [{"$ref": "#/$defs/io.example.v1.Limits"}, {}]},
        },
    },
}


def test_k8s_set_is_laid_out_with_a_file_per_definition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = tmp_path / "shipped"
    for suffix in ("-local", "-local-strict"):
        (shipped / f"v1.34.0{suffix}").mkdir(parents=True)
        for name, doc in WIDGET_SET.items():
            (shipped / f"v1.34.0{suffix}" / name).write_text(json.dumps(doc))
    monkeypatch.setattr(crdschemas, "kubernetes_validate_schema_dir", lambda: shipped)
    lock = crdschemas.Lock(("1.34.0",), (), (), ())
    out = tmp_path / "k8s"
    assert crdschemas.build_k8s(lock, out) == ["v1.34.0"]
    laid = out / "v1.34.0-local-strict"
    assert sorted(p.name for p in laid.iterdir()) == ["_definitions", "widget-v1.json"]
    assert sorted(p.name for p in (laid / "_definitions").iterdir()) == [
        "io.example.v1.Either.json",
        "io.example.v1.Limits.json",
        "io.example.v1.Unused.json",
        "io.example.v1.WidgetSpec.json",
    ]
    kind = json.loads((laid / "widget-v1.json").read_text())
    assert "$id" not in kind
    assert kind["properties"]["spec"] == {"$ref": "_definitions/io.example.v1.WidgetSpec.json"}
    spec = json.loads((laid / "_definitions" / "io.example.v1.WidgetSpec.json").read_text())
    assert spec["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert spec["properties"]["limits"] == {"$ref": "io.example.v1.Limits.json"}
    assert (out / "v1.34.0-local" / "_definitions" / "io.example.v1.Limits.json").is_file()
    # compact, and a ref inside a list rewritten too
    assert (laid / "_definitions" / "io.example.v1.Either.json").read_text() == (
        '{"$schema":"https://json-schema.org/draft/2020-12/schema",'
        '"anyOf":[{"$ref":"io.example.v1.Limits.json"},{}]}'
    )
    assert (
        (laid / "widget-v1.json")
        .read_text()
        .startswith('{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",')
    )

    # kubeconform resolves the files offline and applies the definitions' 2020-12 keyword
    docs = [
        {"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "ok"}, "spec": {"size": 1}},
        {
            "apiVersion": "v1",
            "kind": "Widget",
            "metadata": {"name": "big"},
            "spec": {"limits": {"max": 3}},
        },
        {"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "odd"}, "spec": {"size": "x"}},
    ]
    manifest = tmp_path / "widgets.yaml"
    manifest.write_text(yaml.safe_dump_all(docs))
    location = f"{out}/{{{{.NormalizedKubernetesVersion}}}}-local{{{{.StrictSuffix}}}}"
    proc = process.run(
        "kubeconform",
        [
            "-strict",
            "-output",
            "json",
            "-kubernetes-version",
            "1.34.0",
            "-schema-location",
            location + "/{{.ResourceKind}}{{.KindSuffix}}.json",
            str(manifest),
        ],
        timeout=120,
        check=False,
    )
    verdicts = {r["name"]: r for r in json.loads(proc.stdout)["resources"]}
    assert sorted(verdicts) == ["big", "odd"]  # the valid one is not listed
    assert "at '/spec/limits': properties 'min' required, if 'max' exists" in verdicts["big"]["msg"]
    assert "at '/spec/size': got string, want integer" in verdicts["odd"]["msg"]


def test_k8s_set_with_a_ref_it_cannot_place_is_refused() -> None:
    refused = crdschemas.SchemaBuildError
    # a ref of another form, a part of a definition, a definition that is not there
    with pytest.raises(refused, match="widget-v1.json: unexpected \\$ref 'other.json#/x'"):
        crdschemas.rewrite_k8s_schema('{"$ref": "other.json#/x"}', {"a"}, "widget-v1.json")
    with pytest.raises(refused, match="unexpected \\$ref '/api/_definitions.json#/\\$defs/a/x'"):
        crdschemas.rewrite_k8s_schema('{"$ref": "/api/_definitions.json#/$defs/a/x"}', {"a"}, "w")
    with pytest.raises(refused, match="_definitions.json#a: unexpected \\$ref '#/\\$defs/b'"):
        crdschemas.split_k8s_definitions(
            '{"$defs": {"a": {"$ref": "#/$defs/b"}}}', "_definitions.json"
        )
    # a name that is no plain file name of its folder
    for name in ("a/b", "a:b", "a#b", "a%b", ".a"):
        with pytest.raises(refused, match=f"unexpected definition '{name}'"):
            crdschemas.split_k8s_definitions(json.dumps({"$defs": {name: {"type": "string"}}}), "d")
    # the names kept, dots, dashes and underscores included
    split = crdschemas.split_k8s_definitions(
        '{"$defs": {"io.k8s-x_1.A": {"$ref": "#/$defs/B"}, "B": {}}}', "d"
    )
    assert split == {"io.k8s-x_1.A": '{"$ref":"B.json"}', "B": "{}"}
    assert crdschemas.split_k8s_definitions('{"$schema": "s"}', "d") == {}
    # the file and the place of a ref nested in objects and lists
    nested = '{"properties": {"a": {"allOf": [{}, {"$ref": "#/x"}]}}}'
    with pytest.raises(refused, match="^kind.json: unexpected \\$ref '#/x'$"):
        crdschemas.rewrite_k8s_schema(nested, {"a"}, "kind.json")
    with pytest.raises(refused, match="^d#a: unexpected \\$ref '#/x'$"):
        crdschemas.split_k8s_definitions(json.dumps({"$defs": {"a": json.loads(nested)}}), "d")


CRD_FILE = """\
# a List of two CRDs, something else, and a CRD alone
apiVersion: v1
kind: List
items:
  - apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: widgets.example.com}
    spec:
      group: example.com
      names: {kind: Widget}
      versions:
        - name: v0
        - name: v1
          schema:
            openAPIV3Schema:
              type: object
              properties:
                spec:
                  type: object
                  properties: {size: {type: integer}}
        - name: v2
        - name: v3
          schema:
            openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: not-a-crd}
  - just a string
---
- a list, not an object
---
no: kind
---
kind: Bucket
items:
  - apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: hidden.example.com}
    spec: {group: example.com, names: {kind: Hidden}, versions: [{name: v1}]}
---
metadata: {name: gadgets.example.org}
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
spec:
  group: example.org
  names: {kind: Gadget}
  validation:
    openAPIV3Schema:
      type: object
      x-kubernetes-preserve-unknown-fields: true
      properties:
        apiVersion: {type: string}
        kind: {type: string}
  versions:
    - name: v1alpha1
"""


def test_crd_conversion_of_int_or_string_nullable_and_lists() -> None:
    int_or_string = {
        "x-kubernetes-int-or-string": True,
        "type": "string",
        "format": "int-or-string",
        "anyOf": [{"type": "integer"}],
        "oneOf": [{"type": "string"}],
        "pattern": "^[0-9]+%?$",
    }
    assert crdschemas.to_strict(int_or_string) == {
        "pattern": "^[0-9]+%?$",
        "oneOf": [{"type": "string"}, {"type": "integer"}],
    }
    assert crdschemas.to_strict({"type": ["string", "integer"], "nullable": True}) == {
        "type": ["string", "integer", "null"]
    }
    assert crdschemas.to_strict({"type": ["string", "null"], "nullable": True}) == {
        "type": ["string", "null"]
    }
    assert crdschemas.to_strict({"type": "string", "nullable": False}) == {"type": "string"}
    # an object's own additionalProperties is kept; lists are converted item by item
    kept = {"properties": {"a": {}}, "additionalProperties": {"type": "string"}}
    assert crdschemas.to_strict(kept) == kept
    assert crdschemas.to_strict([{"properties": {}}, "x"]) == [
        {"properties": {}, "additionalProperties": False},
        "x",
    ]


def test_crd_files_give_a_strict_schema_per_version_and_the_crds(tmp_path: Path) -> None:
    crds = tmp_path / "crds.yaml"
    crds.write_text(CRD_FILE)
    out = tmp_path / "out"
    assert crdschemas.write_crd_schemas([crds], out) == [
        "example.com/v1 Widget",
        "example.com/v3 Widget",
        "example.org/v1alpha1 Gadget",
    ]
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*.json")) == [
        "example.com/widget_v1.json",
        "example.com/widget_v3.json",
        "example.org/gadget_v1alpha1.json",
        "manifests/gadgets.example.org.json",
        "manifests/widgets.example.com.json",
    ]
    # closed at the root, which gets apiVersion, kind and metadata with the CRD's enums
    widget = (out / "example.com" / "widget_v1.json").read_text()
    assert json.loads(widget) == {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string", "enum": ["example.com/v1"]},
            "kind": {"type": "string", "enum": ["Widget"]},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "properties": {"size": {"type": "integer"}},
                "additionalProperties": False,
            },
        },
        "additionalProperties": False,
    }
    assert widget.startswith('{\n "additionalProperties": false,\n "properties": {')
    # the legacy schema of every version; an open root gets no properties, enums on its own
    assert json.loads((out / "example.org" / "gadget_v1alpha1.json").read_text()) == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": {
            "apiVersion": {"type": "string", "enum": ["example.org/v1alpha1"]},
            "kind": {"type": "string", "enum": ["Gadget"]},
        },
    }
    # an open root without properties stays as it is
    assert json.loads((out / "example.com" / "widget_v3.json").read_text()) == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    # the CRD object as pinned, for the local control plane, its keys sorted
    gadget = (out / "manifests" / "gadgets.example.org.json").read_text()
    assert gadget.startswith('{\n "apiVersion": "apiextensions.k8s.io/v1beta1",\n "kind"')
    manifest = (out / "manifests" / "widgets.example.com.json").read_text()
    assert manifest.endswith("}\n") and manifest.startswith('{\n "apiVersion": ')
    assert json.loads(manifest)["spec"]["versions"][2] == {"name": "v2"}


def test_schema_lock_is_read_as_written(tmp_path: Path) -> None:
    lock = tmp_path / "gotools" / "schemas.lock.yaml"
    lock.parent.mkdir()
    lock.write_text(
        "kubernetes:\n"
        "  versions: [1.33.0, v1.37.0]\n"
        "modules:\n"
        "  - module: example.com/ops\n"
        "    version: v1.2.3\n"
        '    sum: "h1:abc="\n'
        "    files: [config/crd/*.yaml, extra.yaml]\n"
        "generated:\n"
        "  - name: widgets\n"
        "    gomod_dir: crdgen\n"
        "    options: crd:allowDangerousTypes=true\n"
        "    packages: [example.com/api/v1, example.com/api/v2]\n"
        "expect:\n"
        "  - example.com/v1 Widget\n"
        "  - v1 ConfigMap\n"
    )
    assert crdschemas.load_lock(lock) == crdschemas.Lock(
        ("1.33.0", "v1.37.0"),
        (
            crdschemas.ModuleSource(
                "example.com/ops", "v1.2.3", "h1:abc=", ("config/crd/*.yaml", "extra.yaml")
            ),
        ),
        (
            crdschemas.GeneratedSource(
                "widgets",
                tmp_path / "gotools" / "crdgen",
                "crd:allowDangerousTypes=true",
                ("example.com/api/v1", "example.com/api/v2"),
            ),
        ),
        (("example.com/v1", "Widget"), ("v1", "ConfigMap")),
    )
    # "all", or no kubernetes key at all: every set the package ships; no sources
    for text in ("kubernetes:\n  versions: all\n", "{}\n", "kubernetes: {}\n"):
        lock.write_text(text)
        assert crdschemas.load_lock(lock) == crdschemas.Lock(None, (), (), ())


def test_k8s_sets_laid_out_are_the_lock_s_or_all_shipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = tmp_path / "shipped"
    for name in ("v1.33.0-local", "v1.33.0-local-strict", "v1.34.0-local", "v1.34.0-local-strict"):
        (shipped / name).mkdir(parents=True)
        (shipped / name / "_definitions.json").write_text('{"$defs": {}}')
    (shipped / "v1.35.0-local").write_text("a file, not a set")
    (shipped / "other").mkdir()
    monkeypatch.setattr(crdschemas, "kubernetes_validate_schema_dir", lambda: shipped)
    out = tmp_path / "k8s"
    assert crdschemas.build_k8s(crdschemas.Lock(None, (), (), ()), out) == ["v1.33.0", "v1.34.0"]
    assert sorted(p.name for p in out.iterdir()) == [
        "v1.33.0-local",
        "v1.33.0-local-strict",
        "v1.34.0-local",
        "v1.34.0-local-strict",
    ]
    # the lock's versions, with or without their v; what was laid out before is replaced
    assert crdschemas.build_k8s(crdschemas.Lock(("v1.34.0",), (), (), ()), out) == ["v1.34.0"]
    assert sorted(p.name for p in out.iterdir()) == ["v1.34.0-local", "v1.34.0-local-strict"]
    with pytest.raises(
        crdschemas.SchemaBuildError, match="^kubernetes-validate has no schema set v1.36.0-local$"
    ):
        crdschemas.build_k8s(crdschemas.Lock(("1.36.0",), (), (), ()), out)
    (shipped / "v1.33.0-local-strict" / "_definitions.json").unlink()
    with pytest.raises(
        crdschemas.SchemaBuildError,
        match="^kubernetes-validate's v1.33.0-local-strict has no _definitions.json$",
    ):
        crdschemas.build_k8s(crdschemas.Lock(("1.33.0",), (), (), ()), out)
    # a refused file is named by its path
    (shipped / "v1.34.0-local" / "widget-v1.json").write_text('{"$ref": "#/y"}')
    bad = shipped / "v1.34.0-local" / "widget-v1.json"
    with pytest.raises(crdschemas.SchemaBuildError, match=f"^{bad}: unexpected"):
        crdschemas.build_k8s(crdschemas.Lock(("1.34.0",), (), (), ()), out)
    (shipped / "v1.34.0-local" / "_definitions.json").write_text(
        '{"$defs": {"a": {"$ref": "#/y"}}}'
    )
    defs = shipped / "v1.34.0-local" / "_definitions.json"
    with pytest.raises(crdschemas.SchemaBuildError, match=f"^{defs}#a: unexpected"):
        crdschemas.build_k8s(crdschemas.Lock(("1.34.0",), (), (), ()), out)
    assert sorted(p.name for p in out.iterdir()) == ["v1.34.0-local", "v1.34.0-local-strict"]


def test_crd_conversion_rules() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "port": {
                        "anyOf": [{"type": "integer"}, {"type": "string"}],
                        "x-kubernetes-int-or-string": True,
                        "pattern": "^[a-z0-9]+$",
                    },
                    "old": {"format": "int-or-string"},
                    "free": {
                        "type": "object",
                        "properties": {"a": {"type": "string"}},
                        "x-kubernetes-preserve-unknown-fields": True,
                    },
                    "maybe": {"type": "string", "nullable": True},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            }
        },
    }
    out = crdschemas.to_strict(schema)
    spec = out["properties"]["spec"]
    assert out["additionalProperties"] is False
    assert spec["additionalProperties"] is False
    assert spec["properties"]["port"] == {
        "pattern": "^[a-z0-9]+$",
        "oneOf": [{"type": "string"}, {"type": "integer"}],
    }
    assert spec["properties"]["old"] == {"oneOf": [{"type": "string"}, {"type": "integer"}]}
    assert "additionalProperties" not in spec["properties"]["free"]
    assert spec["properties"]["maybe"]["type"] == ["string", "null"]
    assert spec["properties"]["labels"]["additionalProperties"] == {"type": "string"}


def test_crd_schema_has_api_version_and_kind_enums() -> None:
    path = Path(schemas.crd_schema_location().split("{{")[0]) / "argoproj.io"
    schema = json.loads((path / "application_v1alpha1.json").read_text())
    assert schema["properties"]["apiVersion"]["enum"] == ["argoproj.io/v1alpha1"]
    assert schema["properties"]["kind"]["enum"] == ["Application"]
