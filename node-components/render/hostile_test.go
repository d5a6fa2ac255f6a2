package render

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	toml "github.com/pelletier/go-toml/v2"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/nodeconfig"
)

// hostile are values a configuration could carry to break out of the
// argument, string or document they are written into.
var hostile = []string{
	`a"b`,
	`"quoted"`,
	`$(Remove-Item -Recurse C:\)`,
	"`whoami`",
	`a;b`,
	`a & calc.exe`,
	"line1\nline2\r\n",
	"  spaces  ",
	`back\slash\`,
	`\\`,
	`a\"b`,
	`a\\"b`,
	`trailing\\`,
	"tab\tstop",
	`%PATH% ^& |pipe <in >out`,
	`'single' ''`,
	"😀𝄞 — ünïcode",
	"]]\n[evil]\nx = 1",
	"key: value\n- item\n{flow}",
	"",
}

func hostileIndex(i int) string { return hostile[i%len(hostile)] }

// hostileNode sets every string of a configuration to hostile values, but
// for the node name (which validation restricts to a computer name) and the
// enumerations the renderers switch on.
func hostileNode(mode string) *nodeconfig.Config {
	cfg := newNode().obj()
	if mode == "l2bridge" {
		cfg = newNode().l2bridge().obj()
	}
	cfg.KubernetesVersion = hostile[2]
	cfg.WindowsBuild = hostile[3]
	cfg.Join = nodeconfig.Join{APIServerEndpoint: hostile[0], Token: hostile[1], CACertHashes: hostile}
	cfg.Labels = map[string]string{}
	cfg.Taints = nil
	cfg.Kubelet.SystemReserved = map[string]string{}
	cfg.Kubelet.KubeReserved = map[string]string{}
	cfg.Kubelet.ExtraArgs = nil
	cfg.KubeProxy.ExtraArgs = nil
	for i, h := range hostile {
		cfg.Labels[fmt.Sprintf("l%d", i)] = h
		cfg.Labels[h] = "v"
		cfg.Taints = append(cfg.Taints, nodeconfig.Taint{Key: h, Value: hostileIndex(i + 1), Effect: hostileIndex(i + 2)})
		cfg.Kubelet.SystemReserved[fmt.Sprintf("r%d", i)] = h
		cfg.Kubelet.KubeReserved[h] = hostileIndex(i + 3)
		cfg.Kubelet.ExtraArgs = append(cfg.Kubelet.ExtraArgs, nodeconfig.Arg{Name: fmt.Sprintf("flag%d", i), Value: h}, nodeconfig.Arg{Name: h, Value: h})
		cfg.KubeProxy.ExtraArgs = append(cfg.KubeProxy.ExtraArgs, nodeconfig.Arg{Name: fmt.Sprintf("flag%d", i), Value: h}, nodeconfig.Arg{Name: h, Value: h})
	}
	cfg.Containerd.PauseImage = hostile[4]
	cfg.Containerd.Isolation = "HyperV"
	cfg.Containerd.RegistryMirrors = []nodeconfig.RegistryMirror{{Registry: "docker.io", Endpoints: hostile[:len(hostile)-1]}}
	cfg.Network.PodCIDRs = hostile
	cfg.Network.ServiceCIDRs = hostile
	cfg.Network.NodeSubnet = hostile[5]
	cfg.Network.OutboundNATExceptions = hostile
	cfg.Proxy = &nodeconfig.Proxy{HTTPProxy: hostile[6], NoProxy: hostile}
	cfg.PreJoinCommands = hostile
	return cfg
}

var hostileIface = host.Interface{Name: hostile[7], IPv4: hostile[8], Subnet: hostile[9]}

func TestHostileConfigCommandLinesSplitBack(t *testing.T) {
	for _, mode := range []string{"overlay", "l2bridge"} {
		cfg := hostileNode(mode)
		cfg.CSIProxy = true
		for vi, vip := range hostile {
			for _, s := range allServices(cfg, hostileIface, vip) {
				line := host.CommandLine(s.Command)
				if got := host.SplitCommandLine(line); !slices.Equal(got, s.Command) {
					t.Fatalf("%s %s: %s\nsplits into %q\nwant       %q", mode, s.Name, line, got, s.Command)
				}
				if s.Name == "kube-proxy" && vip != "" && !hasArg(program(s), "--source-vip="+vip) {
					t.Errorf("source VIP %d is not one argument: %q", vi, program(s))
				}
			}
		}
		svcs := allServices(cfg, hostileIface, hostile[10])
		kubelet, proxy := program(svcs[2]), program(svcs[len(svcs)-1])
		if !hasArg(kubelet, "--node-ip="+hostileIface.IPv4) {
			t.Errorf("the node IP is not one argument: %q", kubelet)
		}
		for i, h := range hostile {
			// A value reaches its flag whole, in one argument.
			if !hasArg(kubelet, fmt.Sprintf("--flag%d=%s", i, h)) || !hasArg(proxy, fmt.Sprintf("--flag%d=%s", i, h)) {
				t.Errorf("extra arg value %q is not one argument", h)
			}
		}
		for _, a := range append(kubelet, proxy...) {
			// A hostile name never becomes a flag, and no hostile label
			// reaches --node-labels.
			for _, h := range hostile {
				if h != "" && strings.HasPrefix(a, "--"+h+"=") {
					t.Errorf("hostile flag name rendered: %q", a)
				}
			}
			// Of the labels only l19, whose value is empty, is a valid one.
			if strings.HasPrefix(a, "--node-labels=") && a != "--node-labels=l19=" {
				t.Errorf("hostile labels rendered: %q", a)
			}
		}
		if Check(cfg) == nil {
			t.Error("Check accepts the hostile configuration")
		}
	}
}

func TestHostileConfigDocumentsParseBack(t *testing.T) {
	for _, mode := range []string{"overlay", "l2bridge"} {
		cfg := hostileNode(mode)
		t.Run(mode, func(t *testing.T) {
			// config.toml
			for _, pause := range hostile[:len(hostile)-1] {
				d := parseContainerd(t, must(ContainerdConfig(cfg, pause)))
				if got := d.Plugins.Images.PinnedImages["sandbox"]; got != pause {
					t.Errorf("sandbox image %q came back as %q", pause, got)
				}
			}

			// hosts.toml
			files, err := RegistryHosts(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var hd hostsDoc
			if err := toml.Unmarshal(files[0].Data, &hd); err != nil {
				t.Fatalf("hosts.toml does not parse: %v\n%s", err, files[0].Data)
			}
			want := cfg.Containerd.RegistryMirrors[0].Endpoints
			if len(hd.Host) != len(want) {
				t.Errorf("hosts.toml has %d hosts, want %d", len(hd.Host), len(want))
			}
			for _, e := range want {
				if _, ok := hd.Host[e]; !ok {
					t.Errorf("mirror %q did not come back", e)
				}
			}

			// The CNI conf and net-conf.json
			for _, iface := range []host.Interface{hostileIface, {IPv4: `"},{"evil":1`}} {
				c, n, _ := renderCNI(t, cfg, iface)
				p := c.Delegate.Policies
				if !slices.Equal(p[0].Value.Settings.Exceptions, hostile) {
					t.Errorf("exceptions came back as %q", p[0].Value.Settings.Exceptions)
				}
				var routes []string
				for _, r := range p[1:] {
					routes = append(routes, r.Value.Settings.DestinationPrefix)
				}
				wantRoutes := append([]string{}, hostile...)
				if mode == "l2bridge" {
					wantRoutes = append(wantRoutes, iface.IPv4+"/32")
				}
				if !slices.Equal(routes, wantRoutes) {
					t.Errorf("routes came back as %q", routes)
				}
				if n.Network != hostile[0] {
					t.Errorf("flannel network came back as %q", n.Network)
				}
			}

			// The kubelet configuration, with hostile values in the
			// cluster's document too.
			clusterDoc, err := json.Marshal(map[string]any{"clusterDomain": hostile[11], "clusterDNS": hostile, hostile[12]: hostile[13]})
			if err != nil {
				t.Fatal(err)
			}
			m := parseYAML(t, must(KubeletConfig(clusterDoc, cfg)))
			if m["clusterDomain"] != hostile[11] || m[hostile[12]] != hostile[13] {
				t.Errorf("the cluster's values changed: %q, %q", m["clusterDomain"], m[hostile[12]])
			}
			if dns, _ := m["clusterDNS"].([]any); len(dns) != len(hostile) || dns[1] != hostile[1] {
				t.Errorf("clusterDNS came back as %q", m["clusterDNS"])
			}
			sr, _ := m["systemReserved"].(map[string]any)
			kr, _ := m["kubeReserved"].(map[string]any)
			for k, v := range cfg.Kubelet.SystemReserved {
				if sr[k] != v {
					t.Errorf("systemReserved[%q] = %q, want %q", k, sr[k], v)
				}
			}
			for k, v := range cfg.Kubelet.KubeReserved {
				if kr[k] != v {
					t.Errorf("kubeReserved[%q] = %q, want %q", k, kr[k], v)
				}
			}
			taints, _ := m["registerWithTaints"].([]any)
			if len(taints) != len(cfg.Taints) {
				t.Fatalf("%d taints came back, want %d", len(taints), len(cfg.Taints))
			}
			for i, tt := range cfg.Taints {
				got, _ := taints[i].(map[string]any)
				value, _ := got["value"].(string)
				if got["key"] != tt.Key || value != tt.Value || got["effect"] != tt.Effect {
					t.Errorf("taint %d came back as %q, want %+v", i, got, tt)
				}
			}

			// The bootstrap kubeconfig
			ca := []byte(strings.Join(hostile, "\x00"))
			for _, token := range hostile[:len(hostile)-1] {
				f, err := BootstrapKubeconfig("https://api.example.com:6443", ca, token)
				if err != nil {
					t.Fatal(err)
				}
				kc, err := clientcmd.Load(f.Data)
				if err != nil {
					t.Fatalf("the kubeconfig does not parse: %v\n%s", err, f.Data)
				}
				if got := kc.AuthInfos[bootstrapUser].Token; got != token {
					t.Errorf("token %q came back as %q", token, got)
				}
				if got := kc.Clusters[bootstrapCluster].CertificateAuthorityData; string(got) != string(ca) {
					t.Errorf("CA data changed")
				}
			}
		})
	}
}

// Invalid UTF-8 would be replaced silently by the encoders; the renderers
// refuse it instead.
func TestInvalidUTF8Refused(t *testing.T) {
	const bad = "a\xffb"
	if _, err := ContainerdConfig(newNode().obj(), bad); err == nil {
		t.Error("config.toml rendered an invalid pause image")
	}
	cfg := newNode().obj()
	cfg.Network.OutboundNATExceptions = []string{bad}
	if _, err := FlannelCNI(cfg, ethernet0); err == nil {
		t.Error("the CNI conf rendered an invalid exception")
	}
	cfg = newNode().obj()
	cfg.Taints = []nodeconfig.Taint{{Key: bad, Effect: "NoSchedule"}}
	if _, err := KubeletConfig(nil, cfg); err == nil {
		t.Error("the kubelet configuration rendered an invalid taint")
	}
	if _, err := BootstrapKubeconfig("10.0.0.100:6443", testCAPEM, bad); err == nil {
		t.Error("the bootstrap kubeconfig rendered an invalid token")
	}
}
