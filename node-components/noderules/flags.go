package noderules

import (
	"fmt"
	"maps"
	"regexp"
	"strings"
)

// The flags the agent sets and depends on. An ExtraArgs entry naming one is
// refused by Check and dropped by the renderers (render.Services and
// render.KubeProxyService), so the agent's value always holds: a kubelet
// pointed at another kubeconfig, root directory or node name would join as
// something the agent does not watch, and --windows-service would make the
// program talk to the service manager that capwin's service host already
// answers.
var (
	kubeletReservedFlags = flagSet(
		"config", "config-dir", "bootstrap-kubeconfig", "kubeconfig", "cert-dir", "root-dir",
		"hostname-override", "node-ip", "node-labels",
		"container-runtime-endpoint", "image-service-endpoint", "windows-service",
	)
	kubeProxyReservedFlags = flagSet(
		// With --config kube-proxy ignores most flags, and --master
		// replaces the kubeconfig's server.
		"config", "kubeconfig", "master", "hostname-override",
		// The agent creates the network, reserves the source VIP and
		// renders the CNI's loopback DSR to match enable-dsr.
		"proxy-mode", "network-name", "source-vip", "enable-dsr", "windows-service",
	)
)

func flagSet(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// KubeletReservedFlags returns the kubelet flags the agent sets, by their
// normalised names (lower case, '-' for '_'), as a set of the caller's own.
func KubeletReservedFlags() map[string]bool { return maps.Clone(kubeletReservedFlags) }

// KubeProxyReservedFlags is KubeletReservedFlags for kube-proxy.
func KubeProxyReservedFlags() map[string]bool { return maps.Clone(kubeProxyReservedFlags) }

// flagName is the form of an ExtraArgs name: a flag without its dashes.
// Anything else ('=' in particular, which would let "kubeconfig=x" smuggle
// a reserved flag in) is refused.
var flagName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// normalizeFlag is the name as the Kubernetes components' flag parsing sees
// it: they treat '_' as '-' (component-base WordSepNormalizeFunc).
func normalizeFlag(name string) string {
	return strings.ToLower(strings.ReplaceAll(name, "_", "-"))
}

// ArgProblem says why an ExtraArgs entry named name (without dashes)
// cannot be rendered, or "": it is not a flag name, or it names one of
// reserved (normalised names, as KubeletReservedFlags returns them).
func ArgProblem(name string, reserved map[string]bool) string {
	if !flagName.MatchString(name) {
		return fmt.Sprintf("%q is not a flag name (letters, digits, '-', '_' and '.', without leading dashes)", name)
	}
	if reserved[normalizeFlag(name)] {
		return fmt.Sprintf("--%s is set by capwin-node and cannot be overridden", name)
	}
	return ""
}

// KubeletArgProblem says why a kubelet extra flag (named without dashes)
// cannot be passed, or "" when it can; KubeProxyArgProblem does the same for
// kube-proxy. Admission and the agent apply the same rule.
func KubeletArgProblem(name string) string {
	return ArgProblem(name, kubeletReservedFlags)
}

// KubeProxyArgProblem is KubeletArgProblem for kube-proxy.
func KubeProxyArgProblem(name string) string {
	return ArgProblem(name, kubeProxyReservedFlags)
}
