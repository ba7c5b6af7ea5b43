"""What `doctor` says of the add-on charts (generator/reporters/doctor.py chart_lines)."""

from __future__ import annotations

from generator.reporters.doctor import chart_lines
from generator.vocab import addons


def test_doctor_says_which_charts_are_checked_offline_and_which_only_as_applications() -> None:
    assert chart_lines(addons.ADDONS) == [
        "chart volcano: volcano 1.14.0: its Go module is not available here, so validate checks "
        "the Application, not the chart's objects (docs/platform.md)",
        "chart kueue: kueue 0.17.0 rendered offline from sigs.k8s.io/kueue@v0.17.0 "
        "(gotools/kueuecheck/go.mod)",
        "chart nfd: node-feature-discovery 0.19.0 rendered offline from "
        "sigs.k8s.io/node-feature-discovery@v0.19.0 (gotools/nfd/go.mod)",
        "chart jobset: jobset 0.11.1 rendered offline from sigs.k8s.io/jobset@v0.11.1 "
        "(gotools/kueuecheck/go.mod)",
        "chart lws: lws 0.8.0 rendered offline from sigs.k8s.io/lws@v0.8.0 "
        "(gotools/kueuecheck/go.mod)",
        "chart trainer: kubeflow-trainer 2.2.0 rendered offline from "
        "github.com/kubeflow/trainer/v2@v2.2.0 (gotools/kueuecheck/go.mod)",
        # the tag v25.3.4's commit: the module has no tag the Go proxy serves
        "chart gpuOperator: gpu-operator v25.3.4 rendered offline from "
        "github.com/NVIDIA/gpu-operator@v0.0.0-20250917190837-d73a0086a6ba "
        "(gotools/charts/go.mod)",
        "chart nvidiaDraDriver: nvidia-dra-driver-gpu 25.12.0: its Go module is not available "
        "here, so validate checks the Application, not the chart's objects (docs/platform.md)",
    ]
