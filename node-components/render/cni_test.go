package render

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/capwin/capwin/node-components/host"
	gold "github.com/capwin/capwin/node-components/internal/golden"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
)

// cniDoc is the flannel CNI configuration as the plugins read it.
type cniDoc struct {
	CNIVersion   string          `json:"cniVersion"`
	Name         string          `json:"name"`
	Type         string          `json:"type"`
	SubnetFile   string          `json:"subnetFile"`
	Capabilities map[string]bool `json:"capabilities"`
	Delegate     struct {
		Type        string `json:"type"`
		APIVersion  int    `json:"apiVersion"`
		Name        string `json:"name"`
		IPAM        any    `json:"ipam"`
		LoopbackDSR bool   `json:"loopbackDSR"`
		Policies    []struct {
			Name  string `json:"name"`
			Value struct {
				Type     string
				Settings struct {
					Exceptions        []string
					DestinationPrefix string
					NeedEncap         bool
				}
			} `json:"value"`
		} `json:"policies"`
	} `json:"delegate"`
}

type netConfDoc struct {
	Network string
	Backend struct {
		Type string
		Name string
		VNI  int
		Port int
	}
}

func renderCNI(t *testing.T, cfg *nodeconfig.Config, iface host.Interface) (cniDoc, netConfDoc, []File) {
	t.Helper()
	files, err := FlannelCNI(cfg, iface)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Path != layout.FlannelCNIConf || files[1].Path != layout.FlannelNetConf {
		t.Fatalf("files = %v, want the CNI conf and net-conf.json", paths(files))
	}
	var c cniDoc
	if err := json.Unmarshal(files[0].Data, &c); err != nil {
		t.Fatalf("the CNI conf does not parse: %v", err)
	}
	var n netConfDoc
	if err := json.Unmarshal(files[1].Data, &n); err != nil {
		t.Fatalf("net-conf.json does not parse: %v", err)
	}
	return c, n, files
}

func paths(files []File) []string {
	var p []string
	for _, f := range files {
		p = append(p, f.Path)
	}
	return p
}

// Overlay: semantics checked against containernetworking/plugins
// plugins/main/windows/win-overlay/sample-v2.conf (HCN policies: OutBoundNAT
// exceptions, SDNRoute with NeedEncap for the service CIDR) and
// sig-windows-tools' flannel host-process conf (hostprocess/flannel/
// flanneld/flannel-overlay.yml before commit 729ae7c: type flannel with
// capabilities dns and portMappings); net-conf.json against flannel
// Documentation/backends.md (vxlan on Windows: VNI 4096, port 4789, Name).
//
// L2bridge: against win-bridge/sample-v2.conf, which is itself a flannel
// conf delegating to win-bridge with SDNRoutes for the service CIDR and the
// node's own /32.
func TestFlannelCNIGoldenAgainstUpstreamSamples(t *testing.T) {
	for name, cfg := range map[string]*nodeconfig.Config{
		"flannel-overlay":     newNode().obj(),
		"flannel-l2bridge":    newNode().l2bridge().obj(),
		"flannel-overlay-dsr": newNode().dsr().obj(),
	} {
		t.Run(name, func(t *testing.T) {
			_, _, files := renderCNI(t, cfg, ethernet0)
			gold.Compare(t, "cni-"+name+".conf", files[0].Data)
			if !cfg.KubeProxy.EnableDSR {
				gold.Compare(t, "net-conf-"+name+".json", files[1].Data)
			}
		})
	}
}

func TestFlannelCNIOverlayFacts(t *testing.T) {
	cfg := newNode().obj()
	c, n, files := renderCNI(t, cfg, ethernet0)
	for _, f := range files {
		if f.Private {
			t.Errorf("%s is private; it holds no secret", f.Path)
		}
	}
	if n.Backend.Type != "vxlan" || n.Backend.VNI != 4096 || n.Backend.Port != 4789 {
		t.Errorf("backend = %+v, want vxlan VNI 4096 port 4789 (the only ones Windows accepts)", n.Backend)
	}
	if n.Network != "10.244.0.0/16" {
		t.Errorf("flannel network = %q, want the pod CIDR", n.Network)
	}
	// win-overlay finds the HNS network by the conf's name, and flannel
	// creates it under the backend's Name: they must agree.
	if c.Name != n.Backend.Name || c.Name != layout.FlannelOverlayNetwork || FlannelNetworkName(cfg) != c.Name {
		t.Errorf("conf name %q, backend name %q, network %q: must all be %q", c.Name, n.Backend.Name, FlannelNetworkName(cfg), layout.FlannelOverlayNetwork)
	}
	if c.Type != "flannel" || c.Delegate.Type != "win-overlay" || c.Delegate.APIVersion != 2 {
		t.Errorf("type %q delegating to %q API %d, want flannel → win-overlay with HCN (API 2)", c.Type, c.Delegate.Type, c.Delegate.APIVersion)
	}
	if c.Delegate.Name != "" || c.Delegate.IPAM != nil {
		t.Error("the delegate sets name or ipam, which flannel refuses")
	}
	if !c.Capabilities["dns"] || !c.Capabilities["portMappings"] {
		t.Errorf("capabilities = %v, want dns and portMappings", c.Capabilities)
	}
	if c.SubnetFile != layout.FlannelSubnetEnv {
		t.Errorf("subnetFile = %q, want flanneld's %q", c.SubnetFile, layout.FlannelSubnetEnv)
	}
	if c.Delegate.LoopbackDSR {
		t.Error("loopback DSR without DSR")
	}
	p := c.Delegate.Policies
	if len(p) != 2 {
		t.Fatalf("policies = %+v, want OutBoundNAT and one SDNRoute", p)
	}
	if p[0].Value.Type != "OutBoundNAT" || !slices.Equal(p[0].Value.Settings.Exceptions, cfg.Network.OutboundNATExceptions) {
		t.Errorf("first policy = %+v, want OutBoundNAT excepting %v", p[0].Value, cfg.Network.OutboundNATExceptions)
	}
	if r := p[1].Value; r.Type != "SDNRoute" || r.Settings.DestinationPrefix != "10.96.0.0/12" || !r.Settings.NeedEncap {
		t.Errorf("second policy = %+v, want an encapsulated route to the service CIDR", r)
	}

	c, _, _ = renderCNI(t, newNode().dsr().obj(), ethernet0)
	if !c.Delegate.LoopbackDSR {
		t.Error("DSR without loopback DSR: a pod could not reach a service it backs")
	}
}

func TestFlannelCNIL2BridgeFacts(t *testing.T) {
	cfg := newNode().l2bridge().obj()
	c, n, _ := renderCNI(t, cfg, ethernet0)
	if n.Backend.Type != "host-gw" || n.Backend.Name != layout.FlannelL2BridgeNetwork || n.Backend.VNI != 0 || n.Backend.Port != 0 {
		t.Errorf("backend = %+v, want host-gw named %s", n.Backend, layout.FlannelL2BridgeNetwork)
	}
	if c.Name != layout.FlannelL2BridgeNetwork || FlannelNetworkName(cfg) != c.Name {
		t.Errorf("conf name %q, network %q, want %s", c.Name, FlannelNetworkName(cfg), layout.FlannelL2BridgeNetwork)
	}
	if c.Delegate.Type != "win-bridge" || c.Delegate.APIVersion != 2 {
		t.Errorf("delegate %q API %d, want win-bridge API 2", c.Delegate.Type, c.Delegate.APIVersion)
	}
	var routes []string
	for _, p := range c.Delegate.Policies {
		if p.Value.Type == "SDNRoute" {
			if !p.Value.Settings.NeedEncap {
				t.Errorf("route to %s is not encapsulated", p.Value.Settings.DestinationPrefix)
			}
			routes = append(routes, p.Value.Settings.DestinationPrefix)
		}
	}
	if !slices.Equal(routes, []string{"10.96.0.0/12", "10.0.0.15/32"}) {
		t.Errorf("routes = %v, want the service CIDR and the node's own /32", routes)
	}
	if _, err := FlannelCNI(cfg, host.Interface{Name: "Ethernet0"}); err == nil {
		t.Error("l2bridge rendered without the node's address")
	}
}

// Checked against sig-windows-tools kubeadm/KubeClusterHelper.psm1
// CreateExternalNetwork (removed in ee59f5d) and Calico's node-service.ps1:
// a 192.168.255.0/30 network named External on the adapter, with VSID 9999
// for overlay.
func TestExternalNetworkAgainstSigWindowsTools(t *testing.T) {
	n := ExternalNetwork(newNode().obj(), ethernet0)
	want := host.Network{Name: "External", Type: host.Overlay, AdapterName: "Ethernet0", AddressPrefix: "192.168.255.0/30", Gateway: "192.168.255.1", VSID: 9999}
	if n != want {
		t.Errorf("overlay: %+v, want %+v", n, want)
	}
	n = ExternalNetwork(newNode().l2bridge().obj(), ethernet0)
	want = host.Network{Name: "External", Type: host.L2Bridge, AdapterName: "Ethernet0", AddressPrefix: "192.168.255.0/30", Gateway: "192.168.255.1"}
	if n != want {
		t.Errorf("l2bridge: %+v, want %+v", n, want)
	}
}
