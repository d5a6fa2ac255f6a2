package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
)

func TestJoinEndToEnd(t *testing.T) {
	n := newNode(t)
	if err := n.join(); err != nil {
		t.Fatalf("join: %v\n%s", err, n.log.String())
	}
	ctx := context.Background()
	for _, name := range []string{layout.ServiceContainerd, layout.ServiceKubelet, layout.ServiceFlanneld, layout.ServiceKubeProxy} {
		spec, state, err := n.host.Services().Get(ctx, name)
		if err != nil {
			t.Fatalf("service %s: %v", name, err)
		}
		if state != host.ServiceRunning || spec.StartType != host.StartAutomatic {
			t.Errorf("service %s is %s/%s, want Running/Automatic", name, state, spec.StartType)
		}
		if len(spec.RestartDelays) == 0 {
			t.Errorf("service %s has no restart-on-failure recovery actions", name)
		}
	}
	if _, _, err := n.host.Services().Get(ctx, layout.ServiceCSIProxy); err != nil {
		t.Errorf("install registers csi-proxy even when a node does not start it: %v", err)
	}

	events := n.host.Events()
	before := func(a, b string) {
		t.Helper()
		ia, ib := slices.Index(events, a), slices.Index(events, b)
		if ia < 0 || ib < 0 || ia > ib {
			t.Errorf("want %q before %q in %q", a, b, events)
		}
	}
	// The HNS network exists before the kubelet starts, and the adapter's
	// reset is over by then.
	before("create-network External", "start kubelet")
	before("start containerd", "start kubelet")
	before("start kubelet", "start flanneld")
	before("create-network vxlan0", "start kube-proxy")
	if got := n.host.AdapterResets(); got != 1 {
		t.Errorf("adapter resets: got %d, want 1 (the first HNS network only)", got)
	}

	spec, _, _ := n.host.Services().Get(ctx, layout.ServiceKubeProxy)
	cmd := strings.Join(spec.Command, " ")
	for _, want := range []string{"--source-vip=10.244.1.2", "--hostname-override=win1-md-q3zk5a", "--network-name=vxlan0"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("kube-proxy's command lacks %s: %s", want, cmd)
		}
	}
	if !slices.Contains(spec.Dependencies, layout.ServiceKubelet) {
		t.Errorf("kube-proxy does not depend on the kubelet: %v", spec.Dependencies)
	}
	// The source VIP is reserved where the CNI plugin allocates pod
	// addresses, so no pod gets it.
	if ok, _ := n.host.FS().Exists(layout.CNIDataDir + `\vxlan0\10.244.1.2`); !ok {
		t.Errorf("the source VIP is not reserved in host-local's store")
	}

	fsys := n.host.FS()
	if ok, _ := fsys.Exists(layout.SuccessSentinel); !ok {
		t.Errorf("%s is missing", layout.SuccessSentinel)
	}
	if ok, _ := fsys.Exists(layout.BootstrapKubeconfig); ok {
		t.Errorf("the bootstrap kubeconfig (with the token) is still on disk")
	}
	assertNoToken(t, n)
	if got, _ := fsys.ReadFile(`C:\etc\capwin\extra.txt`); string(got) != "hello" {
		t.Errorf("files: got %q", got)
	}
	if got := n.shellScripts(); !slices.Equal(got, []string{"Write-Output pre-1", "Write-Output pre-2", "Write-Output post-1"}) {
		t.Errorf("commands: got %q", got)
	}
	p, err := ReadProgress(fsys)
	if err != nil || p.State != ProgressJoined || len(p.Phases) != len(Phases()) {
		t.Errorf("progress: %+v, %v", p, err)
	}

	// A second join changes nothing.
	eventsBefore := len(n.host.Events())
	if err := n.join(); err != nil {
		t.Fatalf("second join: %v", err)
	}
	if got := n.host.Events()[eventsBefore:]; len(got) != 0 {
		t.Errorf("a second join acted on the host: %q", got)
	}
}

// assertNoToken fails if the bootstrap token's secret is anywhere on the
// node's disk but in the agent's memory.
func assertNoToken(t *testing.T, n *node) {
	t.Helper()
	secret := strings.Split(testToken, ".")[1]
	filepath.WalkDir(n.host.Root(), func(p string, d fs.DirEntry, err error) error { //nolint:errcheck
		if err != nil || d.IsDir() {
			return err
		}
		data, _ := os.ReadFile(p)
		if strings.Contains(string(data), secret) {
			t.Errorf("the bootstrap token is still in %s", p)
		}
		return nil
	})
}

var errKilled = errors.New("killed")

// TestJoinResumesAfterEveryPhase kills the agent after each phase's work
// and before it is recorded — the phase ran but the agent does not know —
// optionally reboots the machine, and runs join again: the end state is the
// one of an uninterrupted join, with nothing made or run twice.
func TestJoinResumesAfterEveryPhase(t *testing.T) {
	clean := newNode(t)
	if err := clean.join(); err != nil {
		t.Fatalf("join: %v", err)
	}
	want := snapshot(t, clean)
	for _, reboot := range []bool{false, true} {
		for _, phase := range Phases() {
			name := phase
			if reboot {
				name += "+reboot"
			}
			t.Run(name, func(t *testing.T) {
				n := newNode(t)
				if err := n.stopAfter(phase).Join(context.Background(), layout.NodeConfig); !errors.Is(err, errKilled) {
					t.Fatalf("first run: got %v, want the kill after %s", err, phase)
				}
				if reboot {
					// Automatic services that cannot start yet (the kubelet
					// without its kubeconfig) fail here as on a real boot.
					_ = n.host.Reboot(context.Background())
				}
				if err := n.join(); err != nil {
					t.Fatalf("resumed run: %v\n%s", err, n.log.String())
				}
				if diff := cmp.Diff(want, snapshot(t, n)); diff != "" {
					t.Errorf("end state differs from an uninterrupted join (-want +got):\n%s", diff)
				}
				assertNoToken(t, n)
			})
		}
	}
}

type nodeState struct {
	Services  map[string]host.ServiceSpec
	States    map[string]host.ServiceState
	Networks  []string
	Endpoints int
	Files     map[string]string
	Commands  []string
	Created   map[string]int
}

// snapshot is the node's state without identifiers and times.
func snapshot(t *testing.T, n *node) nodeState {
	t.Helper()
	ctx := context.Background()
	s := nodeState{Services: map[string]host.ServiceSpec{}, States: map[string]host.ServiceState{}, Files: map[string]string{}, Created: map[string]int{}}
	for _, name := range []string{layout.ServiceContainerd, layout.ServiceCSIProxy, layout.ServiceKubelet, layout.ServiceFlanneld, layout.ServiceKubeProxy} {
		spec, state, err := n.host.Services().Get(ctx, name)
		if err == nil {
			s.Services[name], s.States[name] = spec, state
		}
	}
	nets, _ := n.host.HNS().Networks(ctx)
	nonPersistent := map[string]bool{}
	for _, nw := range nets {
		s.Networks = append(s.Networks, nw.Name+" "+string(nw.Type)+" "+nw.AddressPrefix)
		nonPersistent["create-network "+nw.Name] = nw.NonPersistent
	}
	eps, _ := n.host.HNS().Endpoints(ctx)
	s.Endpoints = len(eps)
	root := n.host.Root()
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error { //nolint:errcheck
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch filepath.Base(rel) {
		case "agent.log", "commands.log", "status.json", "join-state.json", "lock":
			return nil // times, and host-local's lock file
		}
		data, _ := os.ReadFile(p)
		sum := sha256.Sum256(data)
		s.Files[rel] = hex.EncodeToString(sum[:8])
		return nil
	})
	s.Commands = n.shellScripts()
	for _, e := range n.host.Events() {
		if e == "reboot" {
			// Non-persistent networks made before a reboot are gone with it.
			for k := range s.Created {
				if nonPersistent[k] {
					delete(s.Created, k)
				}
			}
		}
		if strings.HasPrefix(e, "create-") {
			s.Created[e]++
		}
	}
	return s
}

func TestPreflightRefusesAnotherBuild(t *testing.T) {
	n := newNode(t, func(c *nodeconfig.Config) { c.WindowsBuild = "10.0.17763" })
	err := n.join()
	assertRefusedInPreflight(t, n, err)
	for _, want := range []string{"10.0.20348", "10.0.17763"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name build %s: %v", want, err)
		}
	}
}

func TestPreflightNeedsTheBundleAndFeatures(t *testing.T) {
	n := newNode(t)
	n.cfg.KubernetesVersion = "v1.35.0"
	n.writeConfig()
	if err := n.join(); err == nil || !strings.Contains(err.Error(), "bundle is for Kubernetes v1.36.3") {
		t.Errorf("another Kubernetes version: got %v", err)
	}
	n = newNode(t, func(c *nodeconfig.Config) { c.Containerd.Isolation = "HyperV" })
	if err := n.join(); err == nil || !strings.Contains(err.Error(), host.FeatureHyperV) {
		t.Errorf("Hyper-V isolation without Hyper-V: got %v", err)
	}
	n = newNode(t)
	if err := n.host.FS().Remove(layout.BinDir + `\kubelet.exe`); err != nil {
		t.Fatal(err)
	}
	if err := n.join(); err == nil || !strings.Contains(err.Error(), `kubelet.exe (missing)`) {
		t.Errorf("a missing kubelet.exe: got %v", err)
	}
}

func TestDiscoveryFailureIsRetryable(t *testing.T) {
	n := newNode(t)
	n.cp.discoverFn = func() error { return Retryable(errors.New("connection refused")) }
	err := n.join()
	if ExitCode(err) != ExitRetry {
		t.Fatalf("got %v (exit %d), want a retryable failure", err, ExitCode(err))
	}
	p, _ := ReadProgress(n.host.FS())
	if p.Phase != PhaseDiscovery || !p.Retryable || !strings.Contains(p.Message, "connection refused") {
		t.Errorf("progress: %+v", p)
	}
	n.cp.discoverFn = nil
	if err := n.join(); err != nil {
		t.Fatalf("second run: %v", err)
	}
	st, _ := LoadState(n.host.FS())
	if st.Phases[0].Name != PhasePreflight || len(st.Phases) != len(Phases()) {
		t.Errorf("phases: %+v", st.Phases)
	}
}

// exitCode is an error with an exit code, as os/exec's.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
func (e exitCode) ExitCode() int { return int(e) }

func TestCommandsRunOnce(t *testing.T) {
	n := newNode(t, func(c *nodeconfig.Config) { c.PreJoinCommands = []string{"a", "b", "c"} })
	failB := true
	n.host.SetShell(func(script string) ([]byte, error) {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.shell = append(n.shell, script)
		if script == "b" && failB {
			// As host/windows reports it: the output's tail in the message.
			return []byte("token=" + testToken), fmt.Errorf("PowerShell script failed with exit code 1; its output ends with: token=%s: %w", testToken, exitCode(1))
		}
		return nil, nil
	})
	err := n.join()
	if err == nil || !strings.Contains(err.Error(), "preJoinCommands[1] failed: exit code 1") {
		t.Fatalf("got %v", err)
	}
	secret := strings.Split(testToken, ".")[1]
	status, _ := n.host.FS().ReadFile(layout.Status)
	agentLog, _ := n.host.FS().ReadFile(layout.AgentLog)
	for what, text := range map[string]string{"the error": err.Error(), "status.json": string(status), "agent.log": string(agentLog), "the log": n.log.String()} {
		if strings.Contains(text, secret) {
			t.Errorf("a command's output reached %s", what)
		}
	}
	if commands, _ := n.host.FS().ReadFile(layout.CommandsLog); !strings.Contains(string(commands), "token="+testToken) {
		t.Errorf("the output is not in %s for a person on the node", layout.CommandsLog)
	}
	failB = false
	if err := n.join(); err != nil {
		t.Fatal(err)
	}
	if got := n.shellScripts(); !slices.Equal(got, []string{"a", "b", "b", "c", "Write-Output post-1"}) {
		t.Errorf("commands ran: %q", got)
	}
}

// TestHostileConfiguration puts shell and quoting metacharacters in every
// free-form string: each reaches a service only as one argument, and each
// command reaches PowerShell exactly as written.
func TestHostileConfiguration(t *testing.T) {
	evil := "a\"b' $(Remove-Item C:\\) `whoami`; & | \\\" \n\r\t ünï 😀"
	n := newNode(t, func(c *nodeconfig.Config) {
		c.Kubelet.ExtraArgs = []nodeconfig.Arg{{Name: "v", Value: evil}}
		c.KubeProxy.ExtraArgs = []nodeconfig.Arg{{Name: "v", Value: evil}}
		c.PreJoinCommands = []string{evil}
		c.Proxy = &nodeconfig.Proxy{HTTPProxy: "http://user:p%40ss@proxy:3128", NoProxy: []string{evil}}
	})
	if err := n.join(); err != nil {
		t.Fatalf("join: %v", err)
	}
	ctx := context.Background()
	for _, name := range []string{layout.ServiceKubelet, layout.ServiceKubeProxy} {
		spec, _, _ := n.host.Services().Get(ctx, name)
		line := host.CommandLine(spec.Command)
		if got := host.SplitCommandLine(line); !slices.Equal(got, spec.Command) {
			t.Errorf("%s: the command line does not split back:\n%q\n%q", name, got, spec.Command)
		}
		if !slices.ContainsFunc(spec.Command, func(a string) bool { return strings.Contains(a, evil) }) {
			t.Errorf("%s: the value is not in one argument: %q", name, spec.Command)
		}
	}
	if got := n.shellScripts(); got[0] != evil {
		t.Errorf("the command reached the shell as %q", got[0])
	}
	if v, _, _ := n.host.Environment().Get(ctx, "NO_PROXY"); !strings.Contains(v, evil) {
		t.Errorf("NO_PROXY: %q", v)
	}
	// Services see the machine environment of the last boot only: the
	// proxy must be in containerd's own environment to reach its pulls now.
	if spec, _, _ := n.host.Services().Get(ctx, layout.ServiceContainerd); !slices.Contains(spec.Environment, "HTTP_PROXY=http://user:p%40ss@proxy:3128") {
		t.Errorf("containerd's environment lacks the proxy: %q", spec.Environment)
	}
	if strings.Contains(n.log.String(), "p%40ss") {
		t.Errorf("the proxy password reached the log")
	}
}

func TestPreflightRefusesWhatCannotBeRendered(t *testing.T) {
	n := newNode(t, func(c *nodeconfig.Config) {
		c.Labels = map[string]string{"example.com/evil": "a,node.kubernetes.io/windows-build=10.0.17763"}
		c.Kubelet.ExtraArgs = []nodeconfig.Arg{{Name: "kubeconfig", Value: `C:\evil.conf`}}
	})
	err := n.join()
	for _, want := range []string{"labels: label \"example.com/evil\"", "kubelet.extraArgs[0]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to name %s", err, want)
		}
	}
}

func TestServicesRestartAfterACrash(t *testing.T) {
	n := newNode(t)
	if err := n.join(); err != nil {
		t.Fatal(err)
	}
	restarted, err := n.host.Crash(context.Background(), layout.ServiceKubelet)
	if err != nil || !restarted {
		t.Fatalf("the kubelet was not restarted after a crash: %v", err)
	}
	if n.host.Starts(layout.ServiceKubelet) != 2 {
		t.Errorf("kubelet starts: %d", n.host.Starts(layout.ServiceKubelet))
	}
	// After a reboot the automatic services come back in dependency order
	// and flannel recreates its network.
	if err := n.host.Reboot(context.Background()); err != nil {
		t.Fatalf("reboot: %v", err)
	}
	_, state, _ := n.host.Services().Get(context.Background(), layout.ServiceKubeProxy)
	if state != host.ServiceRunning {
		t.Errorf("kube-proxy after a reboot: %s", state)
	}
}

func TestResetThenJoinAgain(t *testing.T) {
	n := newNode(t, func(c *nodeconfig.Config) {
		c.Proxy = &nodeconfig.Proxy{HTTPSProxy: "http://proxy:3128"}
		c.Containerd.RegistryMirrors = []nodeconfig.RegistryMirror{{Registry: "docker.io", Endpoints: []string{"https://mirror.example.com"}}}
	})
	if err := n.join(); err != nil {
		t.Fatal(err)
	}
	// A pod's endpoint on flannel's network, as win-overlay makes one.
	nets, _ := n.host.HNS().Networks(context.Background())
	for _, nw := range nets {
		if nw.Name == "vxlan0" {
			if _, err := n.host.CreateEndpoint(host.Endpoint{Name: "pod", NetworkID: nw.ID, IPAddress: "10.244.1.9"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A stale source VIP file of the kind flannel's scripts left.
	if err := n.host.FS().WriteFile(`C:\k\sourceVip.json`, []byte(`{"ip":"10.244.9.2"}`), false); err != nil {
		t.Fatal(err)
	}
	if err := n.agent().Reset(context.Background()); err != nil {
		t.Fatalf("reset: %v", err)
	}
	ctx := context.Background()
	for _, name := range []string{layout.ServiceKubelet, layout.ServiceKubeProxy, layout.ServiceFlanneld, layout.ServiceContainerd} {
		spec, state, err := n.host.Services().Get(ctx, name)
		if err != nil || state != host.ServiceStopped || spec.StartType != host.StartDisabled {
			t.Errorf("%s after reset: %s %s %v", name, state, spec.StartType, err)
		}
	}
	if nets, _ := n.host.HNS().Networks(ctx); len(nets) != 0 {
		t.Errorf("HNS networks after reset: %+v", nets)
	}
	if eps, _ := n.host.HNS().Endpoints(ctx); len(eps) != 0 {
		t.Errorf("HNS endpoints after reset: %+v", eps)
	}
	if _, ok, _ := n.host.Environment().Get(ctx, "HTTPS_PROXY"); ok {
		t.Errorf("the proxy the join set is still in the machine environment")
	}
	for _, p := range []string{layout.KubeletKubeconfig, layout.KubeletConfig, layout.SuccessSentinel, layout.JoinState, `C:\k\sourceVip.json`, layout.CNIDataDir, layout.ContainerdCertsDir} {
		if ok, _ := n.host.FS().Exists(p); ok {
			t.Errorf("%s is still there after reset", p)
		}
	}
	n.writeConfig() // the stub writes a new configuration, with a token
	if err := n.join(); err != nil {
		t.Fatalf("join after reset: %v\n%s", err, n.log.String())
	}
	nets, _ = n.host.HNS().Networks(ctx)
	if len(nets) != 2 {
		t.Errorf("want External and vxlan0 once each, got %+v", nets)
	}
}

func TestStaleSourceVIPFilesRemovedOnJoin(t *testing.T) {
	n := newNode(t)
	for _, p := range append([]string{layout.SourceVIP}, layout.LegacySourceVIPFiles...) {
		if err := n.host.FS().WriteFile(p, []byte(`{"ip":"10.244.7.2"}`), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.join(); err != nil {
		t.Fatal(err)
	}
	for _, p := range layout.LegacySourceVIPFiles {
		if ok, _ := n.host.FS().Exists(p); ok {
			t.Errorf("%s survived the join", p)
		}
	}
	if got, _ := n.host.FS().ReadFile(layout.SourceVIP); !strings.Contains(string(got), "10.244.1.2") {
		t.Errorf("sourceVip.json: %s", got)
	}
}

func TestCSIProxyStartsBeforeTheKubelet(t *testing.T) {
	n := newNode(t, func(c *nodeconfig.Config) { c.CSIProxy = true })
	if err := n.join(); err != nil {
		t.Fatal(err)
	}
	ev := n.host.Events()
	if i, j := slices.Index(ev, "start csi-proxy"), slices.Index(ev, "start kubelet"); i < 0 || j < i {
		t.Errorf("csi-proxy must run before the kubelet: %q", ev)
	}
	spec, _, _ := n.host.Services().Get(context.Background(), layout.ServiceKubelet)
	if !slices.Contains(spec.Dependencies, layout.ServiceCSIProxy) {
		t.Errorf("the kubelet does not depend on csi-proxy: %v", spec.Dependencies)
	}
}

func TestOneCommandAtATime(t *testing.T) {
	n := newNode(t)
	unlock, err := n.agent().lock()
	if err != nil {
		t.Fatal(err)
	}
	err = n.join()
	if !errors.Is(err, errBusy) || ExitCode(err) != ExitRetry {
		t.Errorf("a join while another runs: %v (exit %d)", err, ExitCode(err))
	}
	if err := n.agent().Reset(context.Background()); !errors.Is(err, errBusy) {
		t.Errorf("a reset while a join runs: %v", err)
	}
	unlock()
	if err := n.join(); err != nil {
		t.Errorf("join after the other ended: %v", err)
	}
}

// TestKubeletPhaseRemakesTheExternalNetwork: the External network went
// missing after the hns-network phase (deleted by hand, or not kept by
// HNS); the kubelet phase makes it again before the kubelet starts.
func TestKubeletPhaseRemakesTheExternalNetwork(t *testing.T) {
	n := newNode(t)
	if err := n.stopAfter(PhaseDiscovery).Join(context.Background(), layout.NodeConfig); !errors.Is(err, errKilled) {
		t.Fatal(err)
	}
	ctx := context.Background()
	nets, _ := n.host.HNS().Networks(ctx)
	for _, nw := range nets {
		if err := n.host.HNS().DeleteNetwork(ctx, nw.ID); err != nil {
			t.Fatal(err)
		}
	}
	mark := len(n.host.Events())
	if err := n.join(); err != nil {
		t.Fatal(err)
	}
	ev := n.host.Events()[mark:]
	if i, j := slices.Index(ev, "create-network External"), slices.Index(ev, "start kubelet"); i < 0 || j < i {
		t.Errorf("External must be made again before the kubelet starts: %q", ev)
	}
}

// TestConfigurationChangedMidJoin: the join stopped after its services ran,
// and the node got a new configuration (a proxy and a mirror added, then
// removed). The services run with what the newest configuration says,
// nothing an older one set stays, and nothing is registered twice.
func TestConfigurationChangedMidJoin(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	if err := n.stopAfter(PhaseKubeProxy).Join(ctx, layout.NodeConfig); !errors.Is(err, errKilled) {
		t.Fatal(err)
	}

	proxy := "HTTPS_PROXY=http://proxy:3128"
	n.cfg.Proxy = &nodeconfig.Proxy{HTTPSProxy: "http://proxy:3128"}
	n.cfg.Containerd.RegistryMirrors = []nodeconfig.RegistryMirror{{Registry: "docker.io", Endpoints: []string{"https://mirror.example.com"}}}
	n.writeConfig()
	if err := n.stopAfter(PhaseKubeProxy).Join(ctx, layout.NodeConfig); !errors.Is(err, errKilled) {
		t.Fatal(err)
	}
	for _, name := range []string{layout.ServiceContainerd, layout.ServiceKubelet, layout.ServiceFlanneld, layout.ServiceKubeProxy} {
		spec, ok := n.host.RunningSpec(name)
		if !ok || !slices.Contains(spec.Environment, proxy) {
			t.Errorf("%s does not run with the new proxy: %v %q", name, ok, spec.Environment)
		}
	}
	if ok, _ := n.host.FS().Exists(layout.ContainerdCertsDir + `\docker.io\hosts.toml`); !ok {
		t.Error("the new mirror's hosts.toml is missing")
	}

	n.cfg.Proxy = nil
	n.cfg.Containerd.RegistryMirrors = nil
	n.writeConfig()
	if err := n.join(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{layout.ServiceContainerd, layout.ServiceKubelet, layout.ServiceKubeProxy} {
		if spec, _ := n.host.RunningSpec(name); slices.Contains(spec.Environment, proxy) {
			t.Errorf("%s still runs with the removed proxy", name)
		}
	}
	if _, ok, _ := n.host.Environment().Get(ctx, "HTTPS_PROXY"); ok {
		t.Error("the removed proxy is still in the machine environment")
	}
	if ok, _ := n.host.FS().Exists(layout.ContainerdCertsDir + `\docker.io`); ok {
		t.Error("the removed mirror's hosts.toml is still there")
	}
	for e, count := range snapshot(t, n).Created {
		if count != 1 {
			t.Errorf("%s happened %d times", e, count)
		}
	}
}

// TestL2BridgeReservesFlannelHostEndpoint: in l2bridge mode flannel gives
// its host endpoint the pod subnet's x.x.x.2, where host-local starts
// allocating; join reserves it so that no pod gets it, and refuses with a
// clear error when a pod holds it already.
func TestL2BridgeReservesFlannelHostEndpoint(t *testing.T) {
	l2bridge := func(c *nodeconfig.Config) { c.Network.Mode, c.Network.VXLANVNI, c.Network.VXLANPort = "l2bridge", 0, 0 }
	n := newNode(t, l2bridge)
	if err := n.join(); err != nil {
		t.Fatalf("join: %v\n%s", err, n.log.String())
	}
	fsys := n.host.FS()
	if ok, _ := fsys.Exists(layout.CNIDataDir + `\cbr0\10.244.1.2`); !ok {
		t.Fatal("flannel's host endpoint address 10.244.1.2 is not reserved in host-local's store")
	}
	if ok, _ := fsys.Exists(layout.CNIDataDir + `\vxlan0\10.244.1.2`); ok {
		t.Error("an overlay reservation was made in l2bridge mode")
	}
	// A second join keeps the reservation.
	if err := n.join(); err != nil {
		t.Fatalf("second join: %v", err)
	}

	// A pod got the address before the reservation (a node joined by an
	// older agent): the join says so.
	m := newNode(t, l2bridge)
	if err := m.host.FS().MkdirAll(layout.CNIDataDir + `\cbr0`); err != nil {
		t.Fatal(err)
	}
	if err := m.host.FS().WriteFile(layout.CNIDataDir+`\cbr0\10.244.1.2`, []byte("pod-container-id\r\neth0"), false); err != nil {
		t.Fatal(err)
	}
	err := m.join()
	if err == nil || !strings.Contains(err.Error(), "10.244.1.2, flannel's host endpoint on the l2bridge network, is already given to a pod") {
		t.Errorf("join with the host endpoint's address given to a pod: %v", err)
	}
}
