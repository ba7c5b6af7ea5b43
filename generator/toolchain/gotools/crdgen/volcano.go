// Package crdgen pins the Go API types whose CRDs are generated here with controller-gen
// (Volcano ships no CRD YAML in any module the Go module proxy serves).
package crdgen

import (
	_ "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	_ "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)
