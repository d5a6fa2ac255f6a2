package agent

import (
	"errors"
	"strings"
	"testing"

	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
)

// A node whose configuration changes CNI keeps none of the other CNI's
// files: a flannel conf left beside Calico's would shadow it (the kubelet
// takes the first conf by name).
func TestChangeOfCNIRemovesTheOtherDriversFiles(t *testing.T) {
	n := newNode(t)
	if err := n.stopAfter(PhaseCNI).Join(t.Context(), layout.NodeConfig); !errors.Is(err, errKilled) {
		t.Fatal(err)
	}
	fsys := n.host.FS()
	for _, f := range []string{layout.FlannelCNIConf, layout.FlannelNetConf} {
		if ok, _ := fsys.Exists(f); !ok {
			t.Fatalf("flannel's %s is missing", f)
		}
	}

	n.cfg.Network.CNI = "calico"
	n.writeConfig()
	if err := n.stopAfter(PhaseCNI).Join(t.Context(), layout.NodeConfig); !errors.Is(err, errKilled) {
		t.Fatal(err)
	}
	for _, f := range []string{layout.FlannelCNIConf, layout.FlannelNetConf} {
		if ok, _ := fsys.Exists(f); ok {
			t.Errorf("flannel's %s stays on a Calico node", f)
		}
	}
}

// Nothing installs Calico's Windows node yet: a Calico join waits for the
// network Calico makes and fails, saying so.
func TestCalicoJoinWaitsForCalicosNetwork(t *testing.T) {
	n := newNode(t, func(c *nodeconfig.Config) { c.Network.CNI = "calico" })
	a := n.agent()
	a.NodeTimeout = 1e8
	err := a.Join(t.Context(), layout.NodeConfig)
	var pe *PhaseError
	if !errors.As(err, &pe) || pe.Phase != PhaseKubeProxy || !strings.Contains(err.Error(), "HNS network "+layout.CalicoNetwork) {
		t.Errorf("Calico join = %v, want the kube-proxy phase waiting for the HNS network %s", err, layout.CalicoNetwork)
	}
	if ok, _ := n.host.FS().Exists(layout.FlannelCNIConf); ok {
		t.Error("a Calico node got flannel's CNI configuration")
	}
	if _, running := n.host.RunningSpec(layout.ServiceFlanneld); running {
		t.Error("flanneld runs on a Calico node")
	}
}
