package render

import (
	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/node-components/nodeconfig/nodeconfigtest"
)

// node is a builder for the node configurations the tests render: a
// flannel overlay worker, as the bootstrap provider renders one for cluster
// win1, with the node name the agent resolved (the renderers are given
// configurations whose nodeName is always set).
type node struct{ c nodeconfig.Config }

func newNode() *node {
	n := &node{c: *nodeconfigtest.Worker()}
	n.c.NodeName = nodeconfigtest.NodeName
	return n
}

func (n *node) l2bridge() *node {
	n.c.Network.Mode, n.c.Network.VXLANVNI, n.c.Network.VXLANPort = "l2bridge", 0, 0
	return n
}

func (n *node) hyperV() *node { n.c.Containerd.Isolation = "HyperV"; return n }

func (n *node) csiProxy() *node { n.c.CSIProxy = true; return n }

func (n *node) dsr() *node { n.c.KubeProxy.EnableDSR = true; return n }

func (n *node) version(v string) *node { n.c.KubernetesVersion = v; return n }

func (n *node) mirrors(m ...nodeconfig.RegistryMirror) *node {
	n.c.Containerd.RegistryMirrors = m
	return n
}

func (n *node) kubeletArgs(a ...nodeconfig.Arg) *node { n.c.Kubelet.ExtraArgs = a; return n }

func (n *node) kubeProxyArgs(a ...nodeconfig.Arg) *node { n.c.KubeProxy.ExtraArgs = a; return n }

func (n *node) obj() *nodeconfig.Config {
	c := n.c
	return &c
}

// ethernet0 is the node's primary adapter.
var ethernet0 = host.Interface{Name: "Ethernet0", IPv4: "10.0.0.15", Subnet: "10.0.0.0/24"}

// sourceVIP is what the agent reserves on the node's pod subnet.
const sourceVIP = "10.244.3.2"

// testCAPEM is a fixed CA for the kubeconfig golden file; its content is not
// parsed, only carried.
var testCAPEM = []byte("-----BEGIN CERTIFICATE-----\nMIIBdzCCAR2gAwIBAgIBADAKBggqhkjOPQQDAjAVMRMwEQYDVQQDEwprdWJlcm5ldGVz\n-----END CERTIFICATE-----\n")
