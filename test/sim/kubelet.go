package sim

import (
	"fmt"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"
)

// kubelet is what a simulated node's kubelet was started with, and what it
// registers from it. It writes into its Node only what the kubelet
// (pkg/kubelet/kubelet_node_status.go, nodestatus.NodeAddress) writes with
// those flags: no provider ID without --provider-id, no addresses but its
// host name with --cloud-provider=external unless --node-ip is given.
type kubelet struct {
	// node is the Node as the flags and configuration describe it: name,
	// labels, taints, system information.
	node *corev1.Node
	// flags are the kubelet's command-line flags, the last value of each.
	flags map[string]string
	// hostIP is the address of the host's default route, which the
	// kubelet falls back on without --node-ip or a cloud provider.
	hostIP string
	// controlPlane is a node kubeadm marks as a control-plane node.
	controlPlane bool
}

// kubeletFlags reads --name=value flags, the last value of each, with
// names as the kubelet's flag parser normalises them ('_' is '-').
func kubeletFlags(argv []string) map[string]string {
	flags := map[string]string{}
	for _, a := range argv {
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			continue
		}
		name, value, _ := strings.Cut(name, "=")
		flags[strings.ReplaceAll(name, "_", "-")] = value
	}
	return flags
}

// check refuses flags the kubelet would refuse to start with.
func (k *kubelet) check() error {
	switch cp := k.flags["cloud-provider"]; cp {
	case "", "external":
	default:
		return fmt.Errorf("the kubelet refuses --cloud-provider=%s: only external is left since the in-tree cloud providers were removed", cp)
	}
	if ip, ok := k.flags["node-ip"]; ok && net.ParseIP(ip) == nil {
		return fmt.Errorf("the kubelet refuses --node-ip=%s: not an IP address", ip)
	}
	return nil
}

// register is the Node the kubelet creates (kubeadm marks a control-plane
// node afterwards: markControlPlane).
func (k *kubelet) register() *corev1.Node {
	n := k.node.DeepCopy()
	if id := k.flags["provider-id"]; id != "" {
		n.Spec.ProviderID = id
	}
	external := k.flags["cloud-provider"] == "external"
	nodeIP := k.flags["node-ip"]
	hostname := n.Name
	if external {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: cloudproviderapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule})
		if nodeIP != "" {
			n.Annotations = map[string]string{cloudproviderapi.AnnotationAlphaProvidedIPAddr: nodeIP}
		}
	}
	switch {
	case external && nodeIP == "":
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: hostname}}
	case nodeIP != "":
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: nodeIP}, {Type: corev1.NodeHostName, Address: hostname}}
	default:
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: k.hostIP}, {Type: corev1.NodeHostName, Address: hostname}}
	}
	n.CreationTimestamp = metav1.Time{}
	return n
}

func hasTaints(n *corev1.Node) bool { return n.Spec.Taints != nil }
