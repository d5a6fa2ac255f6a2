package noderules

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// LabelProblem says why key=value is not a valid Kubernetes label, or "".
// The renderers leave such a label out of --node-labels: a ',' or '=' in
// it would let it add labels of its own, and the kubelet refuses invalid
// labels anyway.
func LabelProblem(key, value string) string {
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return fmt.Sprintf("label key %q: %s", key, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
		return fmt.Sprintf("label %q value %q: %s", key, value, strings.Join(errs, "; "))
	}
	return ""
}
