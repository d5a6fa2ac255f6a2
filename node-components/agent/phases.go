package agent

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/capwin/capwin/node-components/bundle"
	"github.com/capwin/capwin/node-components/cni"
	"github.com/capwin/capwin/node-components/discovery"
	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/node-components/render"
)

func (j *join) preflight(ctx context.Context) (string, error) {
	// What validation accepts but no flag or file can carry faithfully.
	if err := render.Check(j.cfg); err != nil {
		return "", fmt.Errorf("the node configuration cannot be applied: %w", err)
	}
	facts := j.Host.Facts()
	build, err := facts.Build(ctx)
	if err != nil {
		return "", fmt.Errorf("reading the host's Windows build: %w", err)
	}
	if j.cfg.WindowsBuild != "" && !sameBuild(build, j.cfg.WindowsBuild) {
		return "", fmt.Errorf("the host runs Windows build %s but the configuration's windowsBuild is %s: Windows containers run only on a host of their own build; use an image of build %s or change windowsBuild", build, j.cfg.WindowsBuild, j.cfg.WindowsBuild)
	}
	memory, err := facts.TotalMemory(ctx)
	if err != nil {
		return "", fmt.Errorf("reading the host's memory: %w", err)
	}
	if err := checkReservedMemory(j.cfg.Kubelet, memory); err != nil {
		return "", err
	}
	if ok, err := facts.Feature(ctx, host.FeatureContainers); err != nil {
		return "", fmt.Errorf("checking the Windows feature %s: %w", host.FeatureContainers, err)
	} else if !ok {
		return "", fmt.Errorf("the Windows feature %s is not installed: the image must enable it (capwin-node install checks this at bake time)", host.FeatureContainers)
	}
	if j.cfg.Containerd.Isolation == "HyperV" {
		if ok, err := facts.Feature(ctx, host.FeatureHyperV); err != nil {
			return "", fmt.Errorf("checking the Windows feature %s: %w", host.FeatureHyperV, err)
		} else if !ok {
			return "", fmt.Errorf("containerd.isolation is HyperV but the Windows feature %s is not installed", host.FeatureHyperV)
		}
	}
	m, err := bundle.ReadInstalled(j.Host.FS())
	if err != nil {
		return "", err
	}
	if m.KubernetesVersion != j.cfg.KubernetesVersion {
		return "", fmt.Errorf("the image's node bundle is for Kubernetes %s but the node must run %s: use an image built with the bundle for %s", m.KubernetesVersion, j.cfg.KubernetesVersion, j.cfg.KubernetesVersion)
	}
	if err := bundle.CheckInstalled(j.Host.FS(), m, append(bundle.Needed(j.cfg), j.driver.BundleFiles(j.cfg)...)); err != nil {
		return "", err
	}
	if err := bundle.CheckVersions(m); err != nil {
		return "", err
	}
	iface, err := facts.PrimaryInterface(ctx)
	if err != nil {
		return "", fmt.Errorf("finding the primary network adapter: %w", err)
	}
	msg := fmt.Sprintf("Windows build %s, memory %s, adapter %s (%s), bundle for %s", build, mebibytes(memory), iface.Name, iface.IPv4, m.KubernetesVersion)
	if name, err := facts.ComputerName(ctx); err == nil && !strings.EqualFold(name, j.cfg.NodeName) {
		j.logf("The computer name %s is not the node name %s; the kubelet registers as %s", name, j.cfg.NodeName, j.cfg.NodeName)
	}
	return msg, nil
}

// nodeName is the name the node joins as: the configuration's nodeName when
// it has one; else, for a run of the configuration an earlier run started,
// the name that run used; else the computer name, lower case, as the
// infrastructure provider set it. A computer name that is not a valid node
// name fails the join before anything changes on the host.
func (a *Agent) nodeName(ctx context.Context, cfg *nodeconfig.Config, state *State) (string, error) {
	if cfg.NodeName != "" {
		return cfg.NodeName, nil
	}
	if state.NodeName != "" {
		return state.NodeName, nil
	}
	computerName, err := a.Host.Facts().ComputerName(ctx)
	if err != nil {
		return "", fmt.Errorf("nodeName is empty, so the node takes its computer name, which cannot be read: %w", err)
	}
	name := strings.ToLower(computerName)
	if err := nodeconfig.CheckNodeName(name); err != nil {
		return "", fmt.Errorf("nodeName is empty, so the node takes its computer name %q, which is not a valid node name: %w; give the VM another computer name or set nodeName", computerName, err)
	}
	return name, nil
}

// checkReservedMemory refuses reservations that leave the pods no memory:
// Windows has no OOM killer, and a kubelet whose systemReserved and
// kubeReserved memory add up to the machine's memory or more reports
// nothing allocatable.
func checkReservedMemory(k nodeconfig.Kubelet, total uint64) error {
	var sum resource.Quantity
	parts := make([]string, 0, 2)
	for _, r := range []struct {
		field string
		m     map[string]string
	}{{"kubelet.systemReserved", k.SystemReserved}, {"kubelet.kubeReserved", k.KubeReserved}} {
		v, ok := r.m["memory"]
		if !ok {
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("%s.memory: %q is not a quantity: %w", r.field, v, err)
		}
		sum.Add(q)
		parts = append(parts, r.field+".memory "+v)
	}
	if len(parts) == 0 || sum.Sign() <= 0 || uint64(sum.Value()) < total {
		return nil
	}
	return fmt.Errorf("the kubelet's reserved memory (%s) adds up to %s but this machine has %s: nothing would be left for pods; "+
		"the reserved memory must be below the machine's: lower spec.kubelet.systemReserved / kubeReserved of the WindowsKubeadmConfig or give the machine more memory",
		strings.Join(parts, " + "), sum.String(), mebibytes(total))
}

// mebibytes is a memory size in bytes as a Kubernetes quantity, in Mi
// (rounded down) unless it is exact.
func mebibytes(b uint64) string {
	if b%(1<<20) == 0 {
		return resource.NewQuantity(int64(b), resource.BinarySI).String()
	}
	return fmt.Sprintf("%dMi (%d bytes)", b>>20, b)
}

// sameBuild compares major.minor.build; a revision (the update build
// revision, UBR) does not matter for container compatibility.
func sameBuild(a, b string) bool {
	trim := func(s string) string {
		parts := strings.Split(s, ".")
		if len(parts) > 3 {
			parts = parts[:3]
		}
		return strings.Join(parts, ".")
	}
	return trim(a) == trim(b)
}

func (j *join) environment(ctx context.Context) (string, error) {
	env := j.Host.Environment()
	proxy := render.ProxyEnvironment(j.cfg)
	want := map[string]string{}
	for _, kv := range proxy {
		k, v, _ := strings.Cut(kv, "=")
		want[k] = v
	}
	// What an earlier configuration set and this one does not.
	for _, name := range slices.Clone(j.state.Environment) {
		if _, ok := want[name]; ok {
			continue
		}
		if err := env.Unset(ctx, name); err != nil {
			return "", fmt.Errorf("removing the machine environment variable %s: %w", name, err)
		}
		j.state.Environment = slices.DeleteFunc(j.state.Environment, func(n string) bool { return n == name })
	}
	if len(want) == 0 {
		return "no HTTP proxy configured", nil
	}
	var set []string
	for _, kv := range proxy {
		name, value, _ := strings.Cut(kv, "=")
		if err := env.Set(ctx, name, value); err != nil {
			return "", fmt.Errorf("setting the machine environment variable %s: %w", name, err)
		}
		set = append(set, name)
		if !slices.Contains(j.state.Environment, name) {
			j.state.Environment = append(j.state.Environment, name)
		}
	}
	// The values are never logged: a proxy URL may carry a password.
	return "set " + strings.Join(set, ", "), nil
}

func (j *join) files(context.Context) (string, error) {
	for i, f := range j.cfg.Files {
		data, err := base64.StdEncoding.DecodeString(f.Content)
		if err != nil {
			return "", fmt.Errorf("files[%d] (%s): content is not base64: %w", i, f.Path, err)
		}
		// Files may come from Secrets: only SYSTEM and Administrators read them.
		if err := j.writeIfChanged(f.Path, data, true); err != nil {
			return "", fmt.Errorf("files[%d]: %w", i, err)
		}
	}
	return fmt.Sprintf("%d files written", len(j.cfg.Files)), nil
}

func (j *join) preJoinCommands(ctx context.Context) (string, error) {
	return j.commands(ctx, "preJoinCommands", j.cfg.PreJoinCommands)
}

func (j *join) postJoinCommands(ctx context.Context) (string, error) {
	return j.commands(ctx, "postJoinCommands", j.cfg.PostJoinCommands)
}

// commands runs each command once: one that finished is recorded and never
// runs again, even when a later one fails and the join is run again.
func (j *join) commands(ctx context.Context, field string, cmds []string) (string, error) {
	ran := 0
	for i, c := range cmds {
		sum := sha256.Sum256([]byte(c))
		id := fmt.Sprintf("%s[%d]:%s", field, i, hex.EncodeToString(sum[:8]))
		if j.state.ran(id) {
			continue
		}
		out, err := j.Host.Shell().Run(ctx, c)
		// The output, and the shell's error (which may quote it), stay in
		// a log of their own on the node: they may hold anything.
		appendFile(j.Host.FS(), layout.CommandsLog, fmt.Sprintf("--- %s %s[%d]: %d bytes, error: %v ---\n%s\n--- end ---\n", j.now().UTC().Format(time.RFC3339), field, i, len(out), err, out))
		if err != nil {
			return "", fmt.Errorf("%s[%d] failed: %s (its output is in %s on the node)", field, i, commandFailure(err), layout.CommandsLog)
		}
		j.state.Commands = append(j.state.Commands, id)
		if err := saveState(j.Host.FS(), j.state); err != nil {
			return "", err
		}
		ran++
	}
	return fmt.Sprintf("%d of %d commands ran", ran, len(cmds)), nil
}

// commandFailure says how a command failed without the shell's message,
// which may quote its output.
func commandFailure(err error) string {
	var exit interface{ ExitCode() int }
	switch {
	case errors.As(err, &exit):
		return fmt.Sprintf("exit code %d", exit.ExitCode())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "stopped before it finished"
	}
	return "PowerShell did not run it"
}

func (j *join) pauseImage(ctx context.Context) (string, error) {
	if j.cfg.Containerd.PauseImage != "" {
		return j.cfg.Containerd.PauseImage, nil
	}
	build, err := j.Host.Facts().Build(ctx)
	if err != nil {
		return "", err
	}
	return render.PauseImage(build)
}

func (j *join) containerd(ctx context.Context) (string, error) {
	pause, err := j.pauseImage(ctx)
	if err != nil {
		return "", err
	}
	conf, err := render.ContainerdConfig(j.cfg, pause)
	if err != nil {
		return "", err
	}
	if err := j.writeIfChanged(layout.ContainerdConfig, conf, false); err != nil {
		return "", err
	}
	hosts, err := render.RegistryHosts(j.cfg)
	if err != nil {
		return "", err
	}
	if err := j.writeFiles(hosts); err != nil {
		return "", err
	}
	// Mirrors an earlier configuration had: containerd would go on using them.
	dirs, err := j.Host.FS().ReadDir(layout.ContainerdCertsDir)
	if err != nil {
		return "", fmt.Errorf("listing %s: %w", layout.ContainerdCertsDir, err)
	}
	for _, d := range dirs {
		dir := host.Join(layout.ContainerdCertsDir, d)
		if !slices.ContainsFunc(hosts, func(f render.File) bool { return strings.EqualFold(f.Path, host.Join(dir, "hosts.toml")) }) {
			if err := j.Host.FS().RemoveAll(dir); err != nil {
				return "", fmt.Errorf("removing the registry hosts %s of an earlier configuration: %w", dir, err)
			}
		}
	}
	iface, err := j.Host.Facts().PrimaryInterface(ctx)
	if err != nil {
		return "", err
	}
	spec, ok := serviceNamed(render.Services(j.cfg, iface), layout.ServiceContainerd)
	if !ok {
		return "", errors.New("no containerd service rendered")
	}
	if err := j.applyService(ctx, spec); err != nil {
		return "", err
	}
	if err := j.startService(ctx, layout.ServiceContainerd); err != nil {
		return "", err
	}
	return "pause image " + pause, nil
}

func (j *join) writeFiles(files []render.File) error {
	for _, f := range files {
		if err := j.writeIfChanged(f.Path, f.Data, f.Private); err != nil {
			return err
		}
	}
	return nil
}

func serviceNamed(specs []host.ServiceSpec, name string) (host.ServiceSpec, bool) {
	for _, s := range specs {
		if s.Name == name {
			return s, true
		}
	}
	return host.ServiceSpec{}, false
}

func (j *join) cni(ctx context.Context) (string, error) {
	fsys := j.Host.FS()
	// A source VIP recorded by an earlier join belongs to that join's pod
	// subnet: left in place it breaks kube-proxy on this one.
	removed := 0
	for _, f := range append([]string{layout.SourceVIP}, layout.LegacySourceVIPFiles...) {
		if ok, _ := fsys.Exists(f); ok {
			if err := fsys.Remove(f); err != nil {
				return "", fmt.Errorf("removing the stale source VIP file %s: %w", f, err)
			}
			removed++
		}
	}
	iface, err := j.Host.Facts().PrimaryInterface(ctx)
	if err != nil {
		return "", err
	}
	files, err := j.driver.Files(j.cfg, iface)
	if err != nil {
		return "", err
	}
	if err := j.writeFiles(files); err != nil {
		return "", err
	}
	// The other CNIs' files, of an earlier configuration (the node now on
	// another CNI).
	for _, d := range cni.All() {
		for _, f := range d.OwnFiles() {
			if !slices.ContainsFunc(files, func(r render.File) bool { return r.Path == f }) {
				if err := fsys.Remove(f); err != nil {
					return "", fmt.Errorf("removing %s of an earlier configuration: %w", f, err)
				}
			}
		}
	}
	msg := fmt.Sprintf("%s %s, %d files", j.cfg.Network.CNI, j.cfg.Network.Mode, len(files))
	if removed > 0 {
		msg += fmt.Sprintf(", %d stale source VIP files removed", removed)
	}
	return msg, nil
}

func (j *join) hnsNetwork(ctx context.Context) (string, error) {
	created, existed, err := j.ensureNetworks(ctx)
	if err != nil {
		return "", err
	}
	var parts []string
	if len(created) > 0 {
		parts = append(parts, "created HNS network "+strings.Join(created, ", "))
	}
	if len(existed) > 0 {
		parts = append(parts, "HNS network "+strings.Join(existed, ", ")+" exists")
	}
	if len(parts) == 0 {
		return "no HNS network to make", nil
	}
	return strings.Join(parts, "; "), nil
}

// ensureNetworks creates the CNI driver's networks (External) that do not
// exist, and returns the names of those it created and of those that
// existed.
func (j *join) ensureNetworks(ctx context.Context) (created, existed []string, err error) {
	iface, err := j.Host.Facts().PrimaryInterface(ctx)
	if err != nil {
		return nil, nil, err
	}
	want := j.driver.Networks(j.cfg, iface)
	if len(want) == 0 {
		return nil, nil, nil
	}
	hns := j.Host.HNS()
	nets, err := hns.Networks(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("listing HNS networks: %w", err)
	}
	for _, n := range want {
		if slices.ContainsFunc(nets, func(have host.Network) bool { return strings.EqualFold(have.Name, n.Name) }) {
			existed = append(existed, n.Name)
			continue
		}
		if _, err := hns.CreateNetwork(ctx, n); err != nil {
			return nil, nil, fmt.Errorf("creating the HNS network %s: %w", n.Name, err)
		}
		created = append(created, n.Name)
	}
	return created, existed, nil
}

func (j *join) discovery(ctx context.Context) (string, error) {
	start := j.now()
	d, err := j.ControlPlane.Discover(ctx, j.cfg.Join)
	j.waited += j.now().Sub(start)
	if err != nil {
		j.reporterForCAMismatch(err)
	}
	if discovery.Retryable(err) {
		return "", Retryable(err)
	}
	if err != nil {
		return "", err
	}
	if err := j.writeIfChanged(layout.CACert, d.CACert, false); err != nil {
		return "", err
	}
	kubeconfig, err := render.BootstrapKubeconfig(d.Server, d.CACert, j.cfg.Join.Token)
	if err != nil {
		return "", err
	}
	if err := j.writeFiles([]render.File{kubeconfig}); err != nil {
		return "", err
	}
	kc, err := render.KubeletConfig(d.KubeletConfig, j.cfg)
	if err != nil {
		return "", fmt.Errorf("the cluster's kubelet configuration: %w", err)
	}
	if err := j.writeIfChanged(layout.KubeletConfig, kc, false); err != nil {
		return "", err
	}
	return "control plane " + d.Server + " verified", nil
}

func (j *join) kubelet(ctx context.Context) (string, error) {
	// A reboot may have removed the network since the hns-network phase
	// (flannel's are non-persistent, and the simulation drops those too).
	if _, _, err := j.ensureNetworks(ctx); err != nil {
		return "", err
	}
	iface, err := j.Host.Facts().PrimaryInterface(ctx)
	if err != nil {
		return "", err
	}
	var started []string
	for _, spec := range append(render.Services(j.cfg, iface), j.driver.Services(j.cfg, iface)...) {
		if err := j.applyService(ctx, spec); err != nil {
			return "", err
		}
	}
	for _, name := range []string{layout.ServiceCSIProxy, layout.ServiceKubelet} {
		if name == layout.ServiceCSIProxy && !j.cfg.CSIProxy {
			continue
		}
		if err := j.startService(ctx, name); err != nil {
			return "", err
		}
		started = append(started, name)
	}
	return "started " + strings.Join(started, ", "), nil
}

func (j *join) nodeRegistration(ctx context.Context) (string, error) {
	fsys := j.Host.FS()
	// The kubelet writes its kubeconfig once its TLS bootstrap got it a
	// client certificate.
	err := j.wait(ctx, "the kubelet's TLS bootstrap ("+layout.KubeletKubeconfig+")", func(context.Context) (bool, error) {
		return fsys.Exists(layout.KubeletKubeconfig)
	})
	if err != nil {
		return "", err
	}
	kubeconfig, err := fsys.ReadFile(layout.KubeletKubeconfig)
	if err != nil {
		return "", err
	}
	start := j.now()
	wctx, cancel := context.WithTimeout(ctx, j.nodeTimeout())
	defer cancel()
	err = j.ControlPlane.WaitForNode(wctx, kubeconfig, fsys.ReadFile, j.cfg.NodeName)
	j.waited += j.now().Sub(start)
	if err != nil {
		return "", Retryable(fmt.Errorf("waiting for Node %s to register: %w", j.cfg.NodeName, err))
	}
	return "Node " + j.cfg.NodeName + " registered", nil
}

func (j *join) kubeProxy(ctx context.Context) (string, error) {
	iface, err := j.Host.Facts().PrimaryInterface(ctx)
	if err != nil {
		return "", err
	}
	for _, spec := range j.driver.Services(j.cfg, iface) {
		if err := j.startService(ctx, spec.Name); err != nil {
			return "", err
		}
	}
	network := j.driver.PodNetwork(j.cfg)
	var nw host.Network
	err = j.wait(ctx, "the pod network's HNS network "+network, func(ctx context.Context) (bool, error) {
		nets, err := j.Host.HNS().Networks(ctx)
		if err != nil {
			return false, err
		}
		for _, n := range nets {
			if strings.EqualFold(n.Name, network) {
				nw = n
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return "", err
	}
	vip, err := j.driver.SourceVIP(ctx, driverNode{j}, j.cfg, nw)
	if err != nil {
		return "", err
	}
	if err := j.applyService(ctx, render.KubeProxyService(j.cfg, iface, network, vip)); err != nil {
		return "", err
	}
	if err := j.startService(ctx, layout.ServiceKubeProxy); err != nil {
		return "", err
	}
	if vip != "" {
		return fmt.Sprintf("network %s, source VIP %s", network, vip), nil
	}
	return "network " + network, nil
}

func (j *join) complete(context.Context) (string, error) {
	fsys := j.Host.FS()
	if err := j.writeIfChanged(layout.SuccessSentinel, []byte("success\n"), false); err != nil {
		return "", err
	}
	// The kubelet has its own certificate now; the token must not outlive
	// the join on disk. (The sentinel comes first so that a restart between
	// the two can tell the join finished; a failure here leaves the sentinel
	// and a failed join, and the next run removes the token.)
	if err := removeToken(fsys, j.configPath); err != nil {
		return "", err
	}
	return "wrote " + layout.SuccessSentinel + "; bootstrap token removed from disk", nil
}

func marshalIndent(cfg *nodeconfig.Config) ([]byte, error) {
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}
