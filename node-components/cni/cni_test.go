package cni

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/host/sim"
	gold "github.com/capwin/capwin/node-components/internal/golden"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/node-components/nodeconfig/nodeconfigtest"
	"github.com/capwin/capwin/node-components/render"
)

// worker is a flannel overlay worker of cluster win1, with the node name
// the agent resolved; change edits it.
func worker(change func(*nodeconfig.Config)) *nodeconfig.Config {
	cfg := nodeconfigtest.Worker()
	cfg.NodeName = nodeconfigtest.NodeName
	if change != nil {
		change(cfg)
	}
	return cfg
}

func l2bridge(c *nodeconfig.Config) {
	c.Network.Mode, c.Network.VXLANVNI, c.Network.VXLANPort = "l2bridge", 0, 0
}

func calicoDSR(c *nodeconfig.Config) { c.Network.CNI, c.KubeProxy.EnableDSR = "calico", true }

var ethernet0 = host.Interface{Name: "Ethernet0", IPv4: "10.0.0.15", Subnet: "10.0.0.0/24"}

func mustDriver(t *testing.T, cfg *nodeconfig.Config) Driver {
	t.Helper()
	d, err := For(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// describe renders services as the golden files show them: the service
// manager's view, with each command line exactly as it is registered.
func describe(svcs []host.ServiceSpec) []byte {
	var b strings.Builder
	for _, s := range svcs {
		fmt.Fprintf(&b, "[%s] %s — %s\n", s.Name, s.DisplayName, s.Description)
		fmt.Fprintf(&b, "start: %s; restart after %v, reset after %v\n", s.StartType, s.RestartDelays, s.ResetPeriod)
		if len(s.Dependencies) > 0 {
			fmt.Fprintf(&b, "depends on: %s\n", strings.Join(s.Dependencies, ", "))
		}
		for _, e := range s.Environment {
			fmt.Fprintf(&b, "environment: %s\n", e)
		}
		fmt.Fprintf(&b, "command line: %s\n\n", host.CommandLine(s.Command))
	}
	return []byte(b.String())
}

// Every service a node runs, in the order the join registers them: the
// node's own (render.Services), its CNI driver's, and kube-proxy on the
// driver's pod network with a source VIP on overlay.
//
// The flags were checked against each program's source: containerd
// cmd/containerd/command (service_windows.go, main.go), the kubelet's
// cmd/kubelet/app/options (osflags_windows.go), kube-proxy's
// cmd/kube-proxy/app (init_windows.go, options.go), flannel main.go and
// pkg/subnet/kube/kube.go, csi-proxy v1.3.0 cmd/csi-proxy/main.go; and
// against sig-windows-tools' flannel host-process scripts (flanneld
// --kube-subnet-mgr --iface <ip>; kube-proxy --proxy-mode=kernelspace
// --hostname-override --source-vip).
func TestNodeServicesGoldenAgainstUpstreamFlags(t *testing.T) {
	for name, cfg := range map[string]*nodeconfig.Config{
		"flannel-overlay":  worker(nil),
		"flannel-l2bridge": worker(l2bridge),
		"calico-dsr":       worker(calicoDSR),
		"csi-proxy":        worker(func(c *nodeconfig.Config) { c.CSIProxy = true }),
		"extra-args": worker(func(c *nodeconfig.Config) {
			c.Kubelet.ExtraArgs = []nodeconfig.Arg{{Name: "v", Value: "4"}, {Name: "cloud-provider", Value: "external"}}
			c.KubeProxy.ExtraArgs = []nodeconfig.Arg{{Name: "v", Value: "3"}}
		}),
		"flannel-overlay-dsr-v1.32": worker(func(c *nodeconfig.Config) { c.KubeProxy.EnableDSR, c.KubernetesVersion = true, "v1.32.9" }),
	} {
		t.Run(name, func(t *testing.T) {
			d := mustDriver(t, cfg)
			vip := ""
			if cfg.Network.Mode == "overlay" {
				vip = "10.244.3.2"
			}
			svcs := append(render.Services(cfg, ethernet0), d.Services(cfg, ethernet0)...)
			svcs = append(svcs, render.KubeProxyService(cfg, ethernet0, d.PodNetwork(cfg), vip))
			gold.Compare(t, "services-"+name+".txt", describe(svcs))
		})
	}
}

func TestForNamesTheField(t *testing.T) {
	for _, name := range []string{"flannel", "calico"} {
		if d := mustDriver(t, worker(func(c *nodeconfig.Config) { c.Network.CNI = name })); d.Name() != name {
			t.Errorf("For(%s) = %s", name, d.Name())
		}
	}
	if got := Names(); !slices.Equal(got, []string{"flannel", "calico"}) {
		t.Errorf("Names = %v", got)
	}
	for _, name := range []string{"", "Flannel", "none", "cilium"} {
		_, err := For(worker(func(c *nodeconfig.Config) { c.Network.CNI = name }))
		if err == nil || !strings.Contains(err.Error(), "network.cni") || !strings.Contains(err.Error(), "flannel, calico") {
			t.Errorf("For(%q) = %v, want an error naming network.cni and the CNIs there are", name, err)
		}
	}
}

// A driver owns what it makes: reset and a change of CNI find everything a
// join with it may leave.
func TestDriversOwnWhatTheyMake(t *testing.T) {
	for _, d := range All() {
		for _, change := range []func(*nodeconfig.Config){nil, l2bridge} {
			cfg := worker(func(c *nodeconfig.Config) {
				c.Network.CNI = d.Name()
				if change != nil {
					change(c)
				}
			})
			what := d.Name() + " " + cfg.Network.Mode
			files, err := d.Files(cfg, ethernet0)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			for _, f := range files {
				if !slices.Contains(d.OwnFiles(), f.Path) {
					t.Errorf("%s writes %s, which is not among its own files %v", what, f.Path, d.OwnFiles())
				}
			}
			for _, f := range d.OwnFiles() {
				if !slices.ContainsFunc(d.ResetPaths(), func(p string) bool { return p == f || strings.HasPrefix(f, p+`\`) }) {
					t.Errorf("%s: reset leaves %s (reset paths %v)", what, f, d.ResetPaths())
				}
			}
			for _, s := range d.Services(cfg, ethernet0) {
				if !slices.Contains(d.ServiceNames(), s.Name) {
					t.Errorf("%s runs %s, which is not among its services %v", what, s.Name, d.ServiceNames())
				}
			}
			nets := []string{d.PodNetwork(cfg)}
			for _, n := range d.Networks(cfg, ethernet0) {
				nets = append(nets, n.Name)
			}
			for _, n := range nets {
				if !slices.Contains(d.ResetNetworks(), n) {
					t.Errorf("%s: reset leaves the HNS network %s (%v)", what, n, d.ResetNetworks())
				}
			}
		}
	}
}

func TestCalicoWritesAndRunsNothing(t *testing.T) {
	cfg := worker(calicoDSR)
	d := mustDriver(t, cfg)
	files, err := d.Files(cfg, ethernet0)
	if err != nil || len(files) != 0 {
		t.Errorf("Calico's files = %v, %v; want none: calico-node writes its own", files, err)
	}
	if s := d.Services(cfg, ethernet0); len(s) != 0 || len(d.BundleFiles(cfg)) != 0 {
		t.Errorf("Calico runs %v from %v; capwin-node installs nothing of Calico yet", s, d.BundleFiles(cfg))
	}
	if d.PodNetwork(cfg) != layout.CalicoNetwork {
		t.Errorf("Calico's network is %q, want %q", d.PodNetwork(cfg), layout.CalicoNetwork)
	}
}

func TestFlannelBundleFilesByMode(t *testing.T) {
	d := flannel{}
	if got := d.BundleFiles(worker(nil)); !slices.Contains(got, "cni/win-overlay.exe") || slices.Contains(got, "cni/win-bridge.exe") || !slices.Contains(got, "bin/flanneld.exe") {
		t.Errorf("overlay needs %v", got)
	}
	if got := d.BundleFiles(worker(l2bridge)); !slices.Contains(got, "cni/win-bridge.exe") || slices.Contains(got, "cni/win-overlay.exe") {
		t.Errorf("l2bridge needs %v", got)
	}
}

// testNode is a join's node on a simulated host; Wait asks once, as a
// join whose time for waiting is up would.
type testNode struct{ h *sim.Host }

func (n testNode) Host() host.Host { return n.h }

func (n testNode) Wait(ctx context.Context, what string, cond func(context.Context) (bool, error)) error {
	ok, err := cond(ctx)
	if err != nil || ok {
		return err
	}
	return errors.New("waited in vain for " + what)
}

func (n testNode) WriteIfChanged(path string, data []byte, private bool) error {
	return n.h.FS().WriteFile(path, data, private)
}

func createNetwork(t *testing.T, h *sim.Host, name, prefix string) host.Network {
	t.Helper()
	nw, err := h.HNS().CreateNetwork(context.Background(), host.Network{Name: name, Type: host.Overlay, VSID: 4096, AddressPrefix: prefix, Gateway: strings.TrimSuffix(prefix, "0/24") + "1"})
	if err != nil {
		t.Fatal(err)
	}
	return nw
}

func TestFlannelSourceVIP(t *testing.T) {
	ctx := context.Background()
	h := sim.New(sim.Options{Root: t.TempDir()})
	nw := createNetwork(t, h, layout.FlannelOverlayNetwork, "10.244.3.0/24")
	cfg := worker(nil)
	vip, err := flannel{}.SourceVIP(ctx, testNode{h}, cfg, nw)
	if err != nil || vip != "10.244.3.2" {
		t.Fatalf("SourceVIP = %q, %v; want 10.244.3.2, the first address host-local would give a pod", vip, err)
	}
	if again, err := (flannel{}).SourceVIP(ctx, testNode{h}, cfg, nw); again != vip || err != nil {
		t.Errorf("a second call = %q, %v; want the same reservation", again, err)
	}
	if ok, _ := h.FS().Exists(layout.CNIDataDir + `\vxlan0\10.244.3.2`); !ok {
		t.Error("the source VIP is not reserved in host-local's store")
	}
	var rec struct{ IP, Network, Subnet string }
	data, err := h.FS().ReadFile(layout.SourceVIP)
	if err != nil || json.Unmarshal(data, &rec) != nil || rec.IP != vip || rec.Network != nw.Name || rec.Subnet != nw.AddressPrefix {
		t.Errorf("%s = %s (%v)", layout.SourceVIP, data, err)
	}

	// l2bridge: no source VIP, but flannel's host endpoint address kept
	// from pods.
	h = sim.New(sim.Options{Root: t.TempDir()})
	nw = createNetwork(t, h, layout.FlannelL2BridgeNetwork, "10.244.4.0/24")
	vip, err = flannel{}.SourceVIP(ctx, testNode{h}, worker(l2bridge), nw)
	if err != nil || vip != "" {
		t.Errorf("l2bridge SourceVIP = %q, %v; want none", vip, err)
	}
	if ok, _ := h.FS().Exists(layout.CNIDataDir + `\cbr0\10.244.4.2`); !ok {
		t.Error("flannel's bridge endpoint address is not reserved")
	}
	if ok, _ := h.FS().Exists(layout.SourceVIP); ok {
		t.Errorf("l2bridge wrote %s", layout.SourceVIP)
	}
}

func TestCalicoSourceVIPIsItsHostEndpoint(t *testing.T) {
	ctx := context.Background()
	h := sim.New(sim.Options{Root: t.TempDir()})
	other := createNetwork(t, h, "other", "10.9.0.0/24")
	nw := createNetwork(t, h, layout.CalicoNetwork, "10.244.5.0/24")
	cfg := worker(calicoDSR)
	if _, err := (calico{}).SourceVIP(ctx, testNode{h}, cfg, nw); err == nil || !strings.Contains(err.Error(), "Calico_ep") {
		t.Errorf("without Calico's endpoint: %v, want a wait for Calico_ep", err)
	}
	// An endpoint of that name on another network is not Calico's.
	if _, err := h.CreateEndpoint(host.Endpoint{Name: "Calico_ep", NetworkID: other.ID, IPAddress: "10.9.0.7"}); err != nil {
		t.Fatal(err)
	}
	if vip, err := (calico{}).SourceVIP(ctx, testNode{h}, cfg, nw); err == nil {
		t.Errorf("took %q from another network's endpoint", vip)
	}
	if _, err := h.CreateEndpoint(host.Endpoint{Name: "Calico_ep", NetworkID: nw.ID, IPAddress: "10.244.5.1"}); err != nil {
		t.Fatal(err)
	}
	if vip, err := (calico{}).SourceVIP(ctx, testNode{h}, cfg, nw); vip != "10.244.5.1" || err != nil {
		t.Errorf("SourceVIP = %q, %v; want Calico_ep's 10.244.5.1", vip, err)
	}
	cfg = worker(func(c *nodeconfig.Config) { calicoDSR(c); l2bridge(c) })
	if vip, err := (calico{}).SourceVIP(ctx, testNode{h}, cfg, nw); vip != "" || err != nil {
		t.Errorf("l2bridge SourceVIP = %q, %v; want none", vip, err)
	}
}

// The schema's values and the drivers agree: a configuration nodeconfig
// accepts has a driver, and every driver can be chosen.
func TestEveryCNIOfTheSchemaHasADriver(t *testing.T) {
	if !slices.Equal(Names(), nodeconfig.CNIs) {
		t.Errorf("drivers %v, network.cni values %v", Names(), nodeconfig.CNIs)
	}
}
