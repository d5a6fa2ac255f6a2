package render

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/node-components/nodeconfig/nodeconfigtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

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

func (n *node) calico() *node { n.c.Network.CNI = "calico"; return n }

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

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./render -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from the rendered output (go test ./render -update rewrites it):\n%s", path, got)
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
