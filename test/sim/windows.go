package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/capwin/capwin/bootstrap/payload"
	"github.com/capwin/capwin/node-components/agent"
	"github.com/capwin/capwin/node-components/discovery"
	"github.com/capwin/capwin/node-components/host"
	nodesim "github.com/capwin/capwin/node-components/host/sim"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/test/kubeadm"
)

// How the simulated Windows node's agent waits. Discovery's timeout on an
// API server that does not answer is 5 minutes on a real node, and the
// node timeout 10; the simulation gives up sooner (docs/simulation.md,
// "Time"). The refusal grace is the real one.
var (
	simDiscovery    = discovery.Options{Timeout: 3 * time.Second, RetryInterval: 200 * time.Millisecond}
	simNodeTimeout  = 30 * time.Second
	simPollInterval = 100 * time.Millisecond
	simNodePoll     = 200 * time.Millisecond
)

// windowsGuest is a Windows VM's operating system: an in-memory Windows
// host (node-components/host/sim) with capwin's bundle installed, as an
// image bakes it, whose kubelet service is a simulated kubelet.
type windowsGuest struct {
	host *nodesim.Host
	// kubeletCancel stops the running kubelet process.
	mu            sync.Mutex
	kubeletCancel context.CancelFunc
}

// Fault is what a Windows guest does wrong on purpose, for tests.
type Fault int

const (
	// NoFault means the guest runs its user data as a real one would.
	NoFault Fault = iota
	// WrongCAHash means the node configuration the stub writes pins a CA hash
	// that is not the cluster's, as a payload made for another cluster's
	// CA would.
	WrongCAHash
	// CrashMidJoin means the machine loses power while the agent waits for its
	// Node (phase node-registration) on its first run, and boots again.
	CrashMidJoin
)

// SetFault decides, by node name (the VM's host name in lower case), the
// fault of Windows guests that boot from now on; nil: none.
func (g *Guests) SetFault(f func(nodeName string) Fault) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f == nil {
		f = func(string) Fault { return NoFault }
	}
	g.fault = f
}

// bootWindows brings up a Windows VM's machine: its disk (a directory of
// its own), its build (its image's), its computer name (set at first boot
// from vSphere's metadata or Azure's osProfile), its primary adapter's
// address, its firmware's facts, and the bundle, installed.
func (g *Guests) bootWindows(gs *guest, build, hostname, ip string, hw host.Hardware) error {
	root := filepath.Join(g.dir, strings.ReplaceAll(gs.vmID, "/", "_")) // an Azure VM's ID is a path
	if err := os.MkdirAll(root, 0o700); err != nil {
		return err
	}
	w := &windowsGuest{host: nodesim.New(nodesim.Options{
		Root: root, Build: build, ComputerName: hostname, Hardware: hw,
		Interface: host.Interface{Name: windowsNIC, IPv4: ip, Subnet: ip + "/32"},
	})}
	a := &agent.Agent{Host: w.host, Log: logWriter{g.log.WithValues("vm", gs.vmName)}}
	if err := a.Install(context.Background(), agent.InstallOptions{Bundle: g.bundleDir}); err != nil {
		return fmt.Errorf("the image's capwin-node install: %w", err)
	}
	w.host.OnStart(layout.ServiceKubelet, g.windowsKubelet(gs, w))
	w.host.OnStart(layout.ServiceFlanneld, nodesim.Flanneld(g.podSubnet()))
	gs.win = w
	return nil
}

// podSubnet is the next node's pod subnet from the flavor's pod CIDR.
func (g *Guests) podSubnet() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.subnets++
	return fmt.Sprintf("10.244.%d.0/24", g.subnets%250+1)
}

// stubRun is one run of the bootstrap stub by cloudbase-init: the stub
// decodes the node configuration from the user data cloudbase-init read
// from guestinfo at this boot, writes it where the agent reads it and runs
// capwin-node join. It returns the join's error, or errCrashed when the
// machine went down during the join.
func (g *Guests) stubRun(ctx context.Context, gs *guest, userData []byte, run int) error {
	data, err := payload.ParseScript(userData)
	if err != nil {
		return &agent.PhaseError{Phase: agent.PhasePreflight, Err: fmt.Errorf("the bootstrap stub: %w", err)}
	}
	if gs.fault == WrongCAHash {
		if data, err = wrongCAHash(data); err != nil {
			return err
		}
	}
	fsys := gs.win.host.FS()
	if err := fsys.WriteFile(layout.NodeConfig, data, true); err != nil {
		return err
	}
	jctx, crash := context.WithCancelCause(ctx)
	defer crash(nil)
	a := &agent.Agent{
		Host: gs.win.host,
		ControlPlane: agent.KubeadmControlPlane{
			Options:  discovery.Options{Timeout: simDiscovery.Timeout, RetryInterval: simDiscovery.RetryInterval, DialContext: g.dialer(gs.nodeName, run)},
			NodePoll: simNodePoll,
		},
		ClusterProgress: agent.ReportToCluster,
		Log:             logWriter{g.log.WithValues("vm", gs.vmName)},
		NodeTimeout:     simNodeTimeout,
		PollInterval:    simPollInterval,
	}
	if gs.fault == CrashMidJoin && run == 1 {
		a.Reporters = append(a.Reporters, crashAt{phase: agent.PhaseNodeRegistration, crash: crash})
	}
	err = a.Join(jctx, layout.NodeConfig)
	if errors.Is(context.Cause(jctx), errCrashed) {
		return errCrashed
	}
	return err
}

// errCrashed is a run the machine did not survive: cloudbase-init had not
// recorded the plugin as done, so it runs the stub again at the next boot.
var errCrashed = errors.New("the machine went down during the join")

// crashAt pulls the plug when the join reports phase running.
type crashAt struct {
	phase string
	crash context.CancelCauseFunc
}

func (crashAt) Name() string { return "the simulation's power switch" }

func (c crashAt) Report(_ context.Context, p agent.Progress) error {
	if p.Phase == c.phase && p.State == agent.ProgressRunning {
		c.crash(errCrashed)
	}
	return nil
}

// wrongCAHash replaces a node configuration's CA pins with one that is
// not the cluster's.
func wrongCAHash(data []byte) ([]byte, error) {
	cfg, err := nodeconfig.Parse(data)
	if err != nil {
		return nil, err
	}
	cfg.Join.CACertHashes = []string{"sha256:" + strings.Repeat("0", 64)}
	return json.Marshal(cfg)
}

// dialer is the simulated network between a node and its control plane:
// every address routes to the workload API server (the control-plane VIP
// stands for it), and while SetAPIServerUnreachable says so for the node's
// run, nothing answers.
func (g *Guests) dialer(nodeName string, run int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		if g.unreachableNow(nodeName, run) {
			return nil, fmt.Errorf("dial %s: connect: connection timed out (the simulation's API server is unreachable)", network)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, g.apiServer)
	}
}

// windowsKubelet is the kubelet service's process: it starts with the
// flags the agent registered, checks them as the kubelet does, and then, in
// the background as the real one, does its TLS bootstrap if it has no
// client certificate yet and runs (kubelet.run).
func (g *Guests) windowsKubelet(gs *guest, w *windowsGuest) nodesim.Behaviour {
	return func(_ context.Context, h *nodesim.Host, spec host.ServiceSpec) error {
		// A start is a new process: the one before, if any, is gone (the
		// service restarted, or the machine rebooted). A stop without a
		// start is not seen: host/sim has no stop hook, so a kubelet whose
		// service only stopped keeps running until the VM is destroyed.
		w.mu.Lock()
		if w.kubeletCancel != nil {
			w.kubeletCancel()
			w.kubeletCancel = nil
		}
		w.mu.Unlock()
		_, argv, _ := cutArgs(spec.Command)
		k, err := g.windowsKubeletFrom(gs, h, kubeletFlags(argv))
		if err != nil {
			return err
		}
		ctx, cancel := context.WithCancel(gs.ctx)
		w.mu.Lock()
		w.kubeletCancel = cancel
		w.mu.Unlock()
		gs.procs.Go(func() { g.runWindowsKubelet(ctx, gs, h, k) })
		return nil
	}
}

// windowsKubeletFrom is the kubelet the flags describe, refused as the
// kubelet refuses to start with them.
func (g *Guests) windowsKubeletFrom(gs *guest, h *nodesim.Host, flags map[string]string) (*kubelet, error) {
	name := flags["hostname-override"]
	if name == "" {
		return nil, errors.New("kubelet: the simulation needs --hostname-override")
	}
	build, err := h.Facts().Build(context.Background())
	if err != nil {
		return nil, err
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		corev1.LabelHostname: name, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "windows", corev1.LabelWindowsBuild: build,
	}}}
	for _, kv := range strings.Split(flags["node-labels"], ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			if !kubeletMaySet(k) {
				// cmd/kubelet/app: the kubelet exits at once.
				return nil, fmt.Errorf("kubelet: unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [%s]", k)
			}
			node.Labels[k] = v
		}
	}
	kc, err := h.FS().ReadFile(flags["config"])
	if err != nil {
		return nil, fmt.Errorf("kubelet: reading --config: %w", err)
	}
	var config struct {
		RegisterWithTaints []corev1.Taint `json:"registerWithTaints"`
	}
	if err := yaml.Unmarshal(kc, &config); err != nil {
		return nil, fmt.Errorf("kubelet: --config: %w", err)
	}
	node.Spec.Taints = config.RegisterWithTaints
	node.Status.NodeInfo = corev1.NodeSystemInfo{OperatingSystem: "windows", Architecture: "amd64", KubeletVersion: gs.kubeletVersion, KernelVersion: build}
	k := &kubelet{node: node, flags: flags, hostIP: gs.ip}
	return k, k.check()
}

func (g *Guests) runWindowsKubelet(ctx context.Context, gs *guest, h *nodesim.Host, k *kubelet) {
	log := g.log.WithValues("vm", gs.vmName, "node", k.node.Name)
	cs, err := tlsBootstrap(ctx, h.FS(), k.flags, k.node.Name)
	if err != nil {
		if ctx.Err() == nil {
			log.Info("The kubelet's TLS bootstrap failed", "err", err.Error())
		}
		return
	}
	k.run(ctx, cs, gs.failure, func(*corev1.Node) {
		log.Info("Node registered by its kubelet", "ready", gs.failure != NeverReady)
	}, log)
}

// tlsBootstrap is the kubelet's client: with kubelet.conf there, the
// credentials it holds; otherwise those of its TLS bootstrap with the
// bootstrap kubeconfig the agent wrote (kubeadm.KubeletTLSBootstrap).
func tlsBootstrap(ctx context.Context, fsys host.FS, flags map[string]string, name string) (kubernetes.Interface, error) {
	if ok, _ := fsys.Exists(flags["kubeconfig"]); !ok {
		bootstrap, err := fsys.ReadFile(flags["bootstrap-kubeconfig"])
		if err != nil {
			return nil, fmt.Errorf("no kubeconfig and no bootstrap kubeconfig: %w", err)
		}
		if _, err := kubeadm.KubeletTLSBootstrap(ctx, fsys, bootstrap, flags["kubeconfig"], name); err != nil {
			return nil, err
		}
	}
	return kubeadm.KubeletClient(fsys, flags["kubeconfig"])
}

// linuxKubeletClient is the credentials kubeadm gives a Linux node's
// kubelet (kubelet.conf, a client certificate of the cluster CA for
// system:node:<name>): kubeadm init writes it itself, and the simulation
// does the same for every Linux node.
func (g *Guests) linuxKubeletClient(name string) (kubernetes.Interface, error) {
	cfg, err := g.addUser("system:node:"+name, "system:nodes")
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// logWriter is the agent's log, into the simulation's.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.V(1).Info(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
