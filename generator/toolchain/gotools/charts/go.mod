// charts, pinned: Go modules whose only use here is the Helm chart they ship, rendered offline
// by the pinned helm (render/charts.py) like every add-on's chart. Nothing is built from this
// module; it pins the versions, and go.sum checks what the module cache holds.
module accel-gitops/tools/charts

go 1.26.0

// NVIDIA GPU Operator v25.3.4: the release tag's commit d73a0086a6ba (the module has no
// semver tags the Go proxy serves; its tags lack the /v25 suffix), deployments/gpu-operator.
require github.com/NVIDIA/gpu-operator v0.0.0-20250917190837-d73a0086a6ba
