package render

import (
	"slices"
	"strings"
	"testing"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
)

// allServices is every service render makes, for a flannel node: the
// node's, flanneld and kube-proxy. The services a node of each CNI runs, in
// order, are the cni package's golden files.
func allServices(cfg *nodeconfig.Config, iface host.Interface, vip string) []host.ServiceSpec {
	return append(Services(cfg, iface), FlanneldService(cfg, iface), KubeProxyService(cfg, iface, FlannelNetworkName(cfg), vip))
}

func names(svcs []host.ServiceSpec) []string {
	var n []string
	for _, s := range svcs {
		n = append(n, s.Name)
	}
	return n
}

func byName(svcs []host.ServiceSpec, name string) host.ServiceSpec {
	for _, s := range svcs {
		if s.Name == name {
			return s
		}
	}
	return host.ServiceSpec{}
}

func hasArg(argv []string, arg string) bool {
	for _, a := range argv {
		if a == arg {
			return true
		}
	}
	return false
}

// program is the argv the service host runs, after "--"; containerd, which
// is its own service, has no service host.
func program(s host.ServiceSpec) []string {
	for i, a := range s.Command {
		if a == "--" {
			return s.Command[i+1:]
		}
	}
	return s.Command
}

func TestServicesOrderAndShape(t *testing.T) {
	cfg := newNode().csiProxy().obj()
	want := []string{layout.ServiceContainerd, layout.ServiceCSIProxy, layout.ServiceKubelet}
	if got := names(Services(cfg, ethernet0)); !slices.Equal(got, want) {
		t.Fatalf("services = %v, want %v in start order", got, want)
	}
	svcs := allServices(cfg, ethernet0, sourceVIP)
	for _, s := range svcs {
		if s.StartType != host.StartAutomatic {
			t.Errorf("%s starts %s; a rebooted node must come back by itself", s.Name, s.StartType)
		}
		if len(s.RestartDelays) == 0 || s.ResetPeriod == 0 {
			t.Errorf("%s does not restart on failure", s.Name)
		}
		if got := host.SplitCommandLine(host.CommandLine(s.Command)); !slices.Equal(got, s.Command) {
			t.Errorf("%s: command line splits into %q, want %q", s.Name, got, s.Command)
		}
		if s.Name == layout.ServiceContainerd {
			continue
		}
		wantHost := []string{layout.Agent, "service", "run", "--name", s.Name, "--log-file", ServiceLog(s.Name), "--"}
		if !slices.Equal(s.Command[:len(wantHost)], wantHost) {
			t.Errorf("%s runs %q, want capwin's service host first", s.Name, s.Command)
		}
		if hasArg(program(s), "--windows-service") {
			t.Errorf("%s has --windows-service; the service host answers the service manager", s.Name)
		}
	}

	c := byName(svcs, layout.ServiceContainerd)
	for _, a := range []string{"--run-service", layout.ContainerdConfig, ServiceLog(layout.ServiceContainerd)} {
		if !hasArg(c.Command, a) {
			t.Errorf("containerd lacks %s: %q", a, c.Command)
		}
	}
	k := byName(svcs, layout.ServiceKubelet)
	if !slices.Equal(k.Dependencies, []string{layout.ServiceContainerd, layout.ServiceCSIProxy}) {
		t.Errorf("kubelet depends on %v", k.Dependencies)
	}
	for _, a := range []string{
		"--config=" + layout.KubeletConfig,
		"--bootstrap-kubeconfig=" + layout.BootstrapKubeconfig,
		"--kubeconfig=" + layout.KubeletKubeconfig,
		"--cert-dir=" + layout.KubeletPKIDir,
		"--hostname-override=win1-md-q3zk5a",
		"--node-ip=10.0.0.15",
		"--v=2",
	} {
		if !hasArg(program(k), a) {
			t.Errorf("kubelet lacks %s: %q", a, program(k))
		}
	}
	f := FlanneldService(cfg, ethernet0)
	if !slices.Equal(f.Dependencies, []string{layout.ServiceKubelet}) || !slices.Equal(f.Environment, []string{"NODE_NAME=win1-md-q3zk5a"}) {
		t.Errorf("flanneld depends on %v with environment %v", f.Dependencies, f.Environment)
	}
	for _, a := range []string{"--kube-subnet-mgr", "--kubeconfig-file=" + layout.KubeletKubeconfig, "--net-config-path=" + layout.FlannelNetConf, "--iface=10.0.0.15", "--ip-masq=false"} {
		if !hasArg(program(f), a) {
			t.Errorf("flanneld lacks %s: %q", a, program(f))
		}
	}
	if got := byName(Services(newNode().obj(), ethernet0), layout.ServiceKubelet).Dependencies; !slices.Equal(got, []string{layout.ServiceContainerd}) {
		t.Errorf("without csi-proxy the kubelet depends on %v", got)
	}
}

func TestNodeLabelsSorted(t *testing.T) {
	cfg := newNode().obj()
	cfg.Labels = map[string]string{"zone": "b", "a.example.com/x": "1", "m": ""}
	k := byName(Services(cfg, ethernet0), layout.ServiceKubelet)
	if !hasArg(program(k), "--node-labels=a.example.com/x=1,m=,zone=b") {
		t.Errorf("labels not sorted: %q", program(k))
	}
	cfg.Labels = nil
	for _, a := range program(byName(Services(cfg, ethernet0), layout.ServiceKubelet)) {
		if strings.HasPrefix(a, "--node-labels") {
			t.Errorf("no labels, yet %s", a)
		}
	}
}

func TestKubeProxyFlags(t *testing.T) {
	kubeProxy := func(cfg *nodeconfig.Config, vip string) []string {
		return program(KubeProxyService(cfg, ethernet0, FlannelNetworkName(cfg), vip))
	}
	overlay := kubeProxy(newNode().obj(), sourceVIP)
	for _, a := range []string{"--proxy-mode=kernelspace", "--hostname-override=win1-md-q3zk5a", "--kubeconfig=" + layout.KubeletKubeconfig, "--cluster-cidr=10.244.0.0/16", "--network-name=vxlan0", "--source-vip=" + sourceVIP} {
		if !hasArg(overlay, a) {
			t.Errorf("overlay kube-proxy lacks %s: %q", a, overlay)
		}
	}
	for _, a := range overlay {
		if strings.HasPrefix(a, "--enable-dsr") || strings.HasPrefix(a, "--feature-gates") {
			t.Errorf("without DSR on 1.36: %s", a)
		}
	}
	dual := newNode().l2bridge().obj()
	dual.Network.PodCIDRs = []string{"10.244.0.0/16", "fd00:10:244::/56"}
	l2 := kubeProxy(dual, "")
	if !hasArg(l2, "--cluster-cidr=10.244.0.0/16,fd00:10:244::/56") || !hasArg(l2, "--network-name=cbr0") {
		t.Errorf("l2bridge kube-proxy: %q", l2)
	}
	for _, a := range l2 {
		if strings.HasPrefix(a, "--source-vip") {
			t.Errorf("no source VIP given, yet %s", a)
		}
	}
	// WinDSR is GA and locked on since 1.34: a gate is passed only where it
	// was still off by default.
	if a := kubeProxy(newNode().dsr().obj(), sourceVIP); !hasArg(a, "--enable-dsr=true") || hasArg(a, "--feature-gates=WinDSR=true") {
		t.Errorf("1.36 with DSR: %q", a)
	}
	if a := kubeProxy(newNode().dsr().version("v1.32.9").obj(), sourceVIP); !hasArg(a, "--feature-gates=WinDSR=true") {
		t.Errorf("1.32 with DSR: %q", a)
	}
	if s := KubeProxyService(newNode().obj(), ethernet0, "vxlan0", sourceVIP); !slices.Equal(s.Dependencies, []string{layout.ServiceKubelet}) {
		t.Errorf("kube-proxy depends on %v", s.Dependencies)
	}
}

// The rule: ExtraArgs come after the agent's flags, so for the flags the
// agent does not depend on the user's value wins (flag parsing keeps the
// last); the flags it depends on are reserved — Check refuses them and the
// renderers drop them, however they are spelled.
func TestExtraArgsCannotOverrideAgentFlags(t *testing.T) {
	spellings := func(flag string) []nodeconfig.Arg {
		return []nodeconfig.Arg{
			{Name: flag, Value: `C:\evil`},
			{Name: strings.ReplaceAll(flag, "-", "_"), Value: `C:\evil`},
			{Name: strings.ToUpper(flag), Value: `C:\evil`},
			{Name: flag + `=C:\evil`, Value: ""},
			{Name: "--" + flag, Value: `C:\evil`},
			{Name: " " + flag, Value: `C:\evil`},
		}
	}
	for flag := range kubeletReservedFlags {
		cfg := newNode().kubeletArgs(spellings(flag)...).obj()
		if Check(cfg) == nil {
			t.Errorf("Check accepts kubelet.extraArgs overriding --%s", flag)
		}
		for _, a := range program(byName(Services(cfg, ethernet0), layout.ServiceKubelet)) {
			if strings.Contains(a, "evil") {
				t.Errorf("kubelet.extraArgs overrode --%s: %s", flag, a)
			}
		}
	}
	for flag := range kubeProxyReservedFlags {
		cfg := newNode().kubeProxyArgs(spellings(flag)...).obj()
		if Check(cfg) == nil {
			t.Errorf("Check accepts kubeProxy.extraArgs overriding --%s", flag)
		}
		for _, a := range program(KubeProxyService(cfg, ethernet0, FlannelNetworkName(cfg), sourceVIP)) {
			if strings.Contains(a, "evil") {
				t.Errorf("kubeProxy.extraArgs overrode --%s: %s", flag, a)
			}
		}
	}

	cfg := newNode().kubeletArgs(nodeconfig.Arg{Name: "v", Value: "4"}, nodeconfig.Arg{Name: "windows-priorityclass", Value: "HIGH_PRIORITY_CLASS"}).obj()
	if err := Check(cfg); err != nil {
		t.Fatalf("Check refuses tunable flags: %v", err)
	}
	argv := program(byName(Services(cfg, ethernet0), layout.ServiceKubelet))
	last := map[string]int{}
	for i, a := range argv {
		last[strings.SplitN(a, "=", 2)[0]] = i
	}
	if argv[last["--v"]] != "--v=4" || argv[last["--windows-priorityclass"]] != "--windows-priorityclass=HIGH_PRIORITY_CLASS" {
		t.Errorf("the user's values do not come last: %q", argv)
	}
}

func TestCheck(t *testing.T) {
	if err := Check(mirroredNode()); err != nil {
		t.Errorf("a valid configuration: %v", err)
	}
	cfg := newNode().obj()
	cfg.Labels = map[string]string{"ok": "yes", "bad": "a,node-role.kubernetes.io/control-plane=", "bad key=": "x"}
	err := Check(cfg)
	if err == nil || !strings.Contains(err.Error(), `"bad"`) || !strings.Contains(err.Error(), `"bad key="`) {
		t.Errorf("Check = %v, want both bad labels named", err)
	}
	argv := program(byName(Services(cfg, ethernet0), layout.ServiceKubelet))
	if !hasArg(argv, "--node-labels=ok=yes") {
		t.Errorf("a label value with ',' must not add labels: %q", argv)
	}
	cfg = newNode().mirrors(nodeconfig.RegistryMirror{Registry: `..\x`, Endpoints: []string{"https://m"}}).obj()
	if Check(cfg) == nil {
		t.Error("Check accepts a registry name that is a path")
	}
}
