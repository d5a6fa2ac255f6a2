package sim

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// cutArgs splits a service host's command line at "--": the program's own
// command line follows.
func cutArgs(command []string) (host, program []string, ok bool) {
	i := slices.Index(command, "--")
	if i < 0 {
		return command, nil, false
	}
	return command[:i], command[i+1:], true
}

// kubeletMaySet is whether a kubelet may put label key on its own Node
// (--node-labels, as the NodeRestriction admission plugin allows).
func kubeletMaySet(key string) bool {
	domain, _, ok := strings.Cut(key, "/")
	if !ok {
		return true
	}
	if !strings.HasSuffix(domain, "kubernetes.io") && !strings.HasSuffix(domain, "k8s.io") {
		return true
	}
	for _, d := range []string{"kubelet.kubernetes.io", "node.kubernetes.io"} {
		if domain == d || strings.HasSuffix(domain, "."+d) {
			return true
		}
	}
	switch key {
	case corev1.LabelHostname, corev1.LabelInstanceType, corev1.LabelInstanceTypeStable, corev1.LabelOSStable, corev1.LabelArchStable,
		corev1.LabelTopologyRegion, corev1.LabelTopologyZone, corev1.LabelFailureDomainBetaRegion, corev1.LabelFailureDomainBetaZone, corev1.LabelWindowsBuild:
		return true
	}
	return false
}
