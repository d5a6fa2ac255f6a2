package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr/funcr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/tree"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/test/envtest"
	"github.com/capwin/capwin/test/sim"
)

const devUsage = `usage: capwin dev [flags]

Runs a cluster with a Linux control plane and Windows workers on simulators:
two envtest API servers (management and workload), vcsim as the vCenter
(--platform=vsphere) or a simulated Azure subscription (--platform=azure),
the real Cluster API core controllers, capwin's controllers and a guest
simulator that registers each VM's Node. It applies the platform's flavor,
templates/cluster-template-<platform>-windows.yaml, scales the Windows
MachineDeployment 0 -> 3 -> 1, prints the cluster, and keeps running so
that you can kubectl it; Ctrl-C tears it all down. With
--flavor=clusterclass-vsphere-windows the cluster is made from the
ClusterClass by Cluster API's topology controller, and the Windows workers
are scaled through the Cluster's topology. Run it from the source tree
(make dev; make dev DEV_ARGS=--platform=azure;
make dev DEV_ARGS=--flavor=clusterclass-vsphere-windows).

flags:`

type devOptions struct {
	once      bool
	name      string
	namespace string
	bootDelay time.Duration
	timeout   time.Duration
	dir       string
	platform  string
	// flavor is the flavor's name (templates/cluster-template-<flavor>.yaml);
	// <platform>-windows when empty.
	flavor string
}

func dev(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("capwin dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, devUsage); fs.PrintDefaults() }
	o := devOptions{}
	fs.BoolVar(&o.once, "once", false, "run the demo, tear down and exit (for scripts and CI)")
	fs.StringVar(&o.name, "cluster-name", "dev", "the cluster's name")
	fs.StringVar(&o.namespace, "namespace", "default", "the cluster's namespace")
	fs.DurationVar(&o.bootDelay, "boot-delay", 2*time.Second, "how long a simulated VM takes from power-on to a Ready node")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long each step may take")
	fs.StringVar(&o.platform, "platform", sim.PlatformVSphere, "where the VMs run: vsphere (vcsim) or azure (a simulated Azure subscription)")
	fs.StringVar(&o.flavor, "flavor", "", "the flavor (templates/cluster-template-<flavor>.yaml): <platform>-windows when empty, or clusterclass-vsphere-windows, made by Cluster API's topology controller")
	fs.StringVar(&o.dir, "dir", "", "where kubeconfigs and the controllers' log go (a new temporary directory when empty)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	go func() {
		<-ctx.Done()
		cancel() // a second Ctrl-C during the teardown ends the process
	}()
	err := runDev(ctx, o, stdout)
	switch {
	case err != nil && ctx.Err() != nil:
		fmt.Fprintln(stderr, "capwin dev: interrupted")
		return 130
	case err != nil:
		fmt.Fprintln(stderr, "capwin dev:", err)
		return 1
	}
	return 0
}

func runDev(ctx context.Context, o devOptions, out io.Writer) (err error) {
	started := time.Now()
	if o.dir == "" {
		if o.dir, err = os.MkdirTemp("", "capwin-dev-"); err != nil {
			return err
		}
		// The directory holds admin kubeconfigs of clusters that are gone
		// once this returns; kept, with the log, when something failed.
		defer func() {
			if err == nil {
				_ = os.RemoveAll(o.dir)
			} else {
				fmt.Fprintf(out, "The controllers' log is kept in %s\n", o.dir)
			}
		}()
	} else if err := os.MkdirAll(o.dir, 0o700); err != nil {
		return err
	}
	logPath := filepath.Join(o.dir, "controllers.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }()
	log := funcr.New(func(prefix, args string) {
		fmt.Fprintln(logFile, time.Now().Format(time.RFC3339Nano), prefix, args)
	}, funcr.Options{Verbosity: 1})

	template, err := devTemplate(o)
	if err != nil {
		return err
	}
	topology := strings.HasPrefix(filepath.Base(template), "cluster-template-clusterclass-")
	cloud, cloudSim := "a vCenter", "vcsim"
	if o.platform == sim.PlatformAzure {
		cloud, cloudSim = "an Azure subscription", "a simulated Azure"
	}
	fmt.Fprintf(out, "capwin dev: a management cluster, a workload cluster and %s, all simulated\n", cloud)
	fmt.Fprintf(out, "  starting 2 kube-apiservers (envtest), %s, Cluster API's and capwin's controllers, the guests...", cloudSim)
	step := time.Now()
	s, err := sim.Start(ctx, sim.Options{BootDelay: o.bootDelay, Log: log, Platform: o.platform})
	if err != nil {
		fmt.Fprintln(out)
		return err
	}
	fmt.Fprintf(out, " %s\n", since(step))
	defer func() {
		fmt.Fprintf(out, "Tearing down...")
		t := time.Now()
		if stopErr := s.Stop(); stopErr != nil && err == nil {
			err = stopErr
		}
		fmt.Fprintf(out, " done (%s)\n", since(t))
	}()
	fmt.Fprintf(out, "  controller logs: %s\n", logPath)
	mgmtKubeconfig, workloadKubeconfig, err := s.WriteKubeconfigs(o.dir)
	if err != nil {
		return err
	}

	co := sim.ClusterOptions{Namespace: o.namespace, Name: o.name, Template: template}
	rel, _ := filepath.Rel(mustWd(), template)
	fmt.Fprintf(out, "Generating cluster %q from %s (clusterctl's variable substitution)\n", o.name, rel)
	objs, err := s.CreateCluster(ctx, co)
	if err != nil {
		return err
	}
	kinds := map[string]int{}
	for _, obj := range objs {
		kinds[obj.GetKind()]++
	}
	fmt.Fprintf(out, "  applied %d objects to namespace %q: %s\n", len(objs), o.namespace, countList(kinds))
	if topology {
		fmt.Fprintln(out, "  Cluster API's topology controller makes the cluster's objects from its ClusterClass; the control plane's KubeadmControlPlane is played by the simulation's stand-in for its controller, which makes one Linux machine (the real one needs etcd)")
	} else {
		fmt.Fprintln(out, "  the control plane is a Linux Machine of the flavor's control-plane template (KubeadmControlPlane needs a real etcd)")
	}

	fmt.Fprintf(out, "Waiting for the control plane...")
	step = time.Now()
	if err := waitFor(ctx, o.timeout, func() (bool, error) {
		c := &clusterv1.Cluster{}
		if err := s.Management.Client.Get(ctx, client.ObjectKey{Namespace: o.namespace, Name: o.name}, c); err != nil {
			return false, err
		}
		return conditions.IsTrue(c, clusterv1.ClusterControlPlaneInitializedCondition), nil
	}); err != nil {
		fmt.Fprintln(out)
		return fmt.Errorf("the control plane did not come up: %w (see %s)", err, logPath)
	}
	fmt.Fprintf(out, " initialised (%s)\n", since(step))

	for _, n := range []int32{3, 1} {
		if err := scaleAndWatch(ctx, s, co, n, o.timeout, out); err != nil {
			return fmt.Errorf("%w (see %s)", err, logPath)
		}
	}
	fmt.Fprintln(out)
	if err := printTree(ctx, s.Management.Client, co, out); err != nil {
		return err
	}
	fmt.Fprintln(out)
	if r := s.Guests.Rejected(); len(r) > 0 {
		return guestsRefused{r}
	}
	fmt.Fprintf(out, "Everything above took %s.\n", since(started))
	if o.once {
		return nil
	}

	kubectl, err := envtest.Kubectl(ctx)
	if err != nil {
		return err
	}
	fmt.Fprint(out, tryCommands(kubectl, mgmtKubeconfig, workloadKubeconfig, o.namespace, co.Name+"-windows"))
	<-ctx.Done()
	fmt.Fprintln(out)
	return nil
}

// tryCommands are the commands `make dev` offers while the clusters run,
// with the kubectl built with the envtest control plane (kubectl), so that
// they work on a machine with only Go.
func tryCommands(kubectl, mgmtKubeconfig, workloadKubeconfig, namespace, md string) string {
	return fmt.Sprintf(`The clusters keep running. In another terminal (kubectl %s, built with the envtest control plane):
  export KUBECONFIG=%s PATH=%s:$PATH
  kubectl get machines -n %s -w
  kubectl scale machinedeployment %s -n %s --replicas 5
  kubectl --kubeconfig %s get nodes -L node.kubernetes.io/windows-build
Ctrl-C tears everything down.
`, kubectl, mgmtKubeconfig, filepath.Dir(kubectl), namespace, md, namespace, workloadKubeconfig)
}

// scaleAndWatch scales the Windows MachineDeployment to n and shows its
// Machines by phase until exactly n are Running and Ready.
func scaleAndWatch(ctx context.Context, s *sim.Sim, co sim.ClusterOptions, n int32, timeout time.Duration, out io.Writer) error {
	c := s.Management.Client
	key := client.ObjectKey{Namespace: co.Namespace, Name: co.Name + "-windows"}
	md := &clusterv1.MachineDeployment{}
	// A topology's MachineDeployments are made once its control plane is.
	if err := waitFor(ctx, timeout, func() (bool, error) {
		err := c.Get(ctx, key, md)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}); err != nil {
		return fmt.Errorf("MachineDeployment %s: %w", key.Name, err)
	}
	from := ptr.Deref(md.Spec.Replicas, 0)
	via, err := setWindowsReplicas(ctx, c, co, md, n)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Scaling MachineDeployment %s %d -> %d%s\n", key.Name, from, n, via)
	start := time.Now()
	tty := isTerminal(out)
	last := ""
	err = waitFor(ctx, timeout, func() (bool, error) {
		l := &clusterv1.MachineList{}
		if err := c.List(ctx, l, client.InNamespace(co.Namespace), client.MatchingLabels{clusterv1.MachineDeploymentNameLabel: key.Name}); err != nil {
			return false, err
		}
		hms := &infrav1.HybridMachineList{}
		if err := c.List(ctx, hms, client.InNamespace(co.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: co.Name}); err != nil {
			return false, err
		}
		byName := make(map[string]*infrav1.HybridMachine, len(hms.Items))
		for i := range hms.Items {
			byName[hms.Items[i].Name] = &hms.Items[i]
		}
		phases, joins := map[string]int{}, map[string]int{}
		ready := 0
		for i := range l.Items {
			m := &l.Items[i]
			p := m.Status.Phase
			if !m.DeletionTimestamp.IsZero() {
				p = string(clusterv1.MachinePhaseDeleting)
			}
			if p == "" {
				p = string(clusterv1.MachinePhasePending)
			}
			phases[p]++
			isReady := p == string(clusterv1.MachinePhaseRunning) && conditions.IsTrue(m, clusterv1.MachineReadyCondition)
			if isReady {
				ready++
			}
			hm := byName[m.Spec.InfrastructureRef.Name]
			if j := joinStep(m, hm, isReady); j != "" {
				joins[j]++
			}
			if err := joinFailed(m, hm, isReady); err != nil {
				return false, err
			}
		}
		if r := s.Guests.Rejected(); len(r) > 0 {
			return false, guestsRefused{r}
		}
		summary := phaseList(phases)
		if len(joins) > 0 {
			summary += "; join: " + countList(joins)
		}
		line := fmt.Sprintf("  [%6s] Windows machines: %s", since(start), summary)
		if tty {
			fmt.Fprintf(out, "\r\033[K%s", line)
		} else if summary != last {
			fmt.Fprintln(out, line)
		}
		last = summary
		return len(l.Items) == int(n) && ready == int(n), nil
	})
	if tty {
		fmt.Fprintln(out)
	}
	if err != nil {
		return fmt.Errorf("scaling to %d: %w", n, err)
	}
	noun := "machines"
	if n == 1 {
		noun = "machine"
	}
	fmt.Fprintf(out, "%d Windows %s Running (%s)\n", n, noun, since(start))
	return nil
}

// windowsTopology is the name of the Windows workers' MachineDeployment in
// the topology of the ClusterClass flavors' Clusters.
const windowsTopology = "windows"

// setWindowsReplicas scales the Windows MachineDeployment md to n: through
// the Cluster's topology when it has one (Cluster API's topology
// controller sets the MachineDeployment's replicas from it, and would undo
// a change made to the MachineDeployment), on md otherwise. It returns how,
// for the progress line.
func setWindowsReplicas(ctx context.Context, c client.Client, co sim.ClusterOptions, md *clusterv1.MachineDeployment, n int32) (string, error) {
	cluster := &clusterv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: co.Namespace, Name: co.Name}, cluster); err != nil {
		return "", err
	}
	if !cluster.Spec.Topology.IsDefined() {
		patch := client.MergeFrom(md.DeepCopy())
		md.Spec.Replicas = &n
		return "", c.Patch(ctx, md, patch)
	}
	patch := client.MergeFrom(cluster.DeepCopy())
	for i := range cluster.Spec.Topology.Workers.MachineDeployments {
		if t := &cluster.Spec.Topology.Workers.MachineDeployments[i]; t.Name == windowsTopology {
			t.Replicas = &n
			return fmt.Sprintf(" (Cluster/%s's spec.topology.workers.machineDeployments[%d].replicas)", co.Name, i), c.Patch(ctx, cluster, patch)
		}
	}
	return "", fmt.Errorf("the topology of Cluster %s has no MachineDeployment %q", co.Name, windowsTopology)
}

// devTemplate is the file of the flavor o asks for.
func devTemplate(o devOptions) (string, error) {
	platform := cmp.Or(o.platform, sim.PlatformVSphere)
	flavor := cmp.Or(o.flavor, platform+"-windows")
	if !strings.Contains(flavor, platform) {
		return "", fmt.Errorf("--flavor=%s: not a flavor of --platform=%s", flavor, platform)
	}
	if strings.HasPrefix(flavor, "clusterclass-") && platform != sim.PlatformVSphere {
		return "", fmt.Errorf("--flavor=%s: the simulation runs Cluster API's topology controller with the vSphere ClusterClass only (clusterclass-vsphere-windows)", flavor)
	}
	path := sim.FlavorTemplate(flavor)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("--flavor=%s: %w", flavor, err)
	}
	return path, nil
}

// joinStep is where a Windows machine's join stands, as its HybridMachine
// reports it (status.nodeBootstrap, read from the node's own report): the
// agent's phase ("complete" once joined), "<phase> failed", or "waiting
// for report" for a provisioned VM whose node has not reported yet. Empty
// for a machine that is Ready, being deleted, not yet running, or has no
// HybridMachine.
func joinStep(m *clusterv1.Machine, hm *infrav1.HybridMachine, ready bool) string {
	if hm == nil || ready || !m.DeletionTimestamp.IsZero() {
		return ""
	}
	nb := hm.Status.NodeBootstrap
	switch nb.State {
	case infrav1.NodeBootstrapFailed:
		return nb.Phase + " failed"
	case infrav1.NodeBootstrapJoined, infrav1.NodeBootstrapRunning:
		return nb.Phase
	}
	if ptr.Deref(m.Status.Initialization.InfrastructureProvisioned, false) {
		return "waiting for report"
	}
	return ""
}

// joinFailed ends the wait when the node of a machine that is neither
// Ready nor being deleted reported a join failure that will not pass by
// itself (the stub does not run it again), with what the node said.
func joinFailed(m *clusterv1.Machine, hm *infrav1.HybridMachine, ready bool) error {
	if hm == nil || ready || !m.DeletionTimestamp.IsZero() {
		return nil
	}
	nb := hm.Status.NodeBootstrap
	if nb.State != infrav1.NodeBootstrapFailed || ptr.Deref(nb.Retryable, false) {
		return nil
	}
	return fmt.Errorf("HybridMachine %s: the node's join failed in phase %s and will not be retried: %s", hm.Name, nb.Phase, nb.Message)
}

var phaseOrder = []clusterv1.MachinePhase{
	clusterv1.MachinePhasePending, clusterv1.MachinePhaseProvisioning, clusterv1.MachinePhaseProvisioned,
	clusterv1.MachinePhaseRunning, clusterv1.MachinePhaseDeleting, clusterv1.MachinePhaseUnknown,
}

func phaseList(phases map[string]int) string {
	var parts []string
	for _, p := range phaseOrder {
		if n := phases[string(p)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, p))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func countList(kinds map[string]int) string {
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%d %s", kinds[k], k))
	}
	return strings.Join(parts, ", ")
}

// printTree prints the cluster as `clusterctl describe cluster` finds it
// (clusterctl's own discovery), with each object's Ready condition.
func printTree(ctx context.Context, c client.Client, co sim.ClusterOptions, out io.Writer) error {
	t, err := tree.Discovery(ctx, c, co.Namespace, co.Name, tree.DiscoverOptions{ShowMachineSets: true, Echo: true})
	if err != nil {
		return fmt.Errorf("describing the cluster: %w", err)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tAVAILABLE\tREADY\tREASON\tSINCE")
	var walk func(obj client.Object, prefix, childPrefix string)
	walk = func(obj client.Object, prefix, childPrefix string) {
		name := obj.GetObjectKind().GroupVersionKind().Kind + "/" + obj.GetName()
		switch {
		case tree.IsVirtualObject(obj):
			name = obj.GetName()
		case tree.GetMetaName(obj) != "":
			name = tree.GetMetaName(obj) + " - " + name
		}
		available, ready, reason, sinceStr := "", "", "", ""
		if cond := tree.GetAvailableCondition(obj); cond != nil {
			available, reason = string(cond.Status), cond.Reason
			sinceStr = since(cond.LastTransitionTime.Time) + " ago"
		}
		if cond := tree.GetReadyCondition(obj); cond != nil {
			ready, reason = string(cond.Status), cond.Reason
			sinceStr = since(cond.LastTransitionTime.Time) + " ago"
		}
		fmt.Fprintf(w, "%s%s\t%s\t%s\t%s\t%s\n", prefix, name, available, ready, reason, sinceStr)
		children := t.GetObjectsByParent(obj.GetUID())
		sort.SliceStable(children, func(i, j int) bool {
			if zi, zj := tree.GetZOrder(children[i]), tree.GetZOrder(children[j]); zi != zj {
				return zi > zj
			}
			return children[i].GetName() < children[j].GetName()
		})
		for i, child := range children {
			branch, next := "├─", "│ "
			if i == len(children)-1 {
				branch, next = "└─", "  "
			}
			walk(child, childPrefix+branch, childPrefix+next)
		}
	}
	walk(t.GetRoot(), "", "")
	if err := w.Flush(); err != nil {
		return err
	}
	// A Cluster not Available says why in its condition's message, which
	// the table has no room for.
	if cond := tree.GetAvailableCondition(t.GetRoot()); cond != nil && cond.Status != metav1.ConditionTrue {
		fmt.Fprintln(out, notAvailable(ctx, c, co, cond))
	}
	return nil
}

// notAvailable says in one line why the Cluster is not Available: the
// message of Cluster API's condition, or, when the only reason is the
// control plane of a Cluster without a control-plane provider (the
// simulation's control plane is a stand-alone Machine), that.
func notAvailable(ctx context.Context, c client.Client, co sim.ClusterOptions, cond *metav1.Condition) string {
	reasons := messageLines(cond.Message)
	cluster := &clusterv1.Cluster{}
	standalone := c.Get(ctx, client.ObjectKey{Namespace: co.Namespace, Name: co.Name}, cluster) == nil && !cluster.Spec.ControlPlaneRef.IsDefined()
	onlyControlPlane := len(reasons) > 0
	for _, r := range reasons {
		onlyControlPlane = onlyControlPlane && strings.HasPrefix(r, clusterv1.ClusterControlPlaneAvailableCondition+":")
	}
	if standalone && onlyControlPlane {
		return fmt.Sprintf("Cluster/%s's Available is %s only for its control plane: a stand-alone Machine here, with no control-plane provider (no spec.controlPlaneRef), for which Cluster API reports ControlPlaneAvailable as %q; every other condition Available sums up is met", co.Name, cond.Status, strings.TrimPrefix(reasons[0], clusterv1.ClusterControlPlaneAvailableCondition+": "))
	}
	if len(reasons) == 0 {
		reasons = []string{"no message"}
	}
	return fmt.Sprintf("Cluster/%s is not Available (%s): %s", co.Name, cond.Reason, strings.Join(reasons, "; "))
}

// messageLines are a condition message's lines (Cluster API writes one
// per condition it sums up, as "* Name: why"), without their bullets.
func messageLines(msg string) []string {
	var lines []string
	for line := range strings.Lines(msg) {
		if line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "*")); line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// guestsRefused is the guest simulator refusing a VM's user data, as a node
// would: the wait is over.
type guestsRefused struct{ vms map[string]string }

func (e guestsRefused) Error() string {
	names := make([]string, 0, len(e.vms))
	for vm := range e.vms {
		names = append(names, vm)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, vm := range names {
		parts = append(parts, vm+": "+e.vms[vm])
	}
	return "a node refused its bootstrap data: " + strings.Join(parts, "; ")
}

// waitFor calls done until it returns true, a guestsRefused error, or the
// timeout; other errors are taken as transient and the last one is
// reported with the timeout.
func waitFor(ctx context.Context, timeout time.Duration, done func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	var last error
	for {
		ok, err := done()
		var refused guestsRefused
		if errors.As(err, &refused) {
			return err
		}
		if err != nil {
			last = err
		}
		if ok && err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("%w (last error: %w)", ctx.Err(), last)
			}
			return ctx.Err()
		case <-t.C:
		}
	}
}

func since(t time.Time) string {
	return time.Since(t).Round(100 * time.Millisecond).String()
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func mustWd() string {
	wd, err := os.Getwd()
	if err != nil {
		return "/"
	}
	return wd
}
