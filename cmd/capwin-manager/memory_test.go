package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/test/benchdata"
	"github.com/capwin/capwin/test/builder"
	"github.com/capwin/capwin/webhooks"
)

// memoryGoal is the most resident memory capwin-manager may use while it
// holds a fleet of fleetSize machines.
const (
	fleetSize  = 1000
	memoryGoal = 200 << 20
)

// BenchmarkManagerMemory1000Machines runs the capwin-manager binary, as a
// process of its own, against an API server holding one cluster of 1,000
// Windows machines: for each a Machine, a HybridMachine and a
// WindowsKubeadmConfig as the webhooks default them, with statuses written
// by their controllers' field managers, and a 4 KiB bootstrap data Secret.
// The Cluster is paused, so the manager caches every object and reconciles
// each machine and config once, as far as the pause, but calls no vCenter
// and connects to no workload cluster: the workload cluster's Nodes and
// progress ConfigMaps, which the manager also caches, are not in the
// figure. It reports the manager's peak and final
// resident memory once every machine and config has been reconciled, and
// fails when the peak passes 200 MiB.
func BenchmarkManagerMemory1000Machines(b *testing.B) {
	ctx := b.Context()
	bin := buildManager(b)
	ns, err := env.CreateNamespace(ctx, "memory")
	if err != nil {
		b.Fatal(err)
	}
	created := time.Now()
	if err := createFleet(ctx, env.Client, ns.Name, "fleet", fleetSize); err != nil {
		b.Fatal(err)
	}
	b.Logf("created %d machines' objects in %s", fleetSize, time.Since(created).Round(time.Second))
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	if err := writeKubeconfig(env.Config, kubeconfig); err != nil {
		b.Fatal(err)
	}
	var peak, final int
	var samples []benchdata.MemorySample
	for b.Loop() {
		peak, samples = runManagerUntilReconciled(b, bin, kubeconfig, fleetSize)
		final = int(samples[len(samples)-1].RSSMiB * (1 << 10))
	}
	b.ReportMetric(float64(peak)/(1<<10), "peak-RSS-MiB")
	b.ReportMetric(float64(final)/(1<<10), "RSS-MiB")
	benchdata.Write(b, "manager-memory.json", benchdata.MemoryRun{Machines: fleetSize, GoalMiB: memoryGoal >> 20, PeakMiB: float64(peak) / (1 << 10), Samples: samples})
	if peak<<10 > memoryGoal {
		b.Errorf("capwin-manager's peak RSS holding %d machines is %d MiB, over the goal of %d MiB", fleetSize, peak>>10, memoryGoal>>20)
	}
}

// buildManager builds this command into a temporary directory.
func buildManager(b *testing.B) string {
	bin := filepath.Join(b.TempDir(), "capwin-manager")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runManagerUntilReconciled runs the manager until its HybridMachine and
// WindowsKubeadmConfig controllers have each reconciled n objects and their
// queues are empty, and two seconds more. It returns the process's peak RSS
// in KiB and its RSS sampled every 250 ms from its start.
func runManagerUntilReconciled(b *testing.B, bin, kubeconfig string, n int) (peak int, samples []benchdata.MemorySample) {
	metrics := freeAddress(b)
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--namespace=capwin-system",
		"--webhook-port=0", "--health-addr=0", "--metrics-bind-address="+metrics)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	logs := &lockedWriter{w: &strings.Builder{}}
	cmd.Stdout, cmd.Stderr = io.Discard, logs
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	started, pid := time.Now(), strconv.Itoa(cmd.Process.Pid)
	sample := func() {
		samples = append(samples, benchdata.MemorySample{Seconds: time.Since(started).Seconds(), RSSMiB: float64(status(pid, "VmRSS:")) / (1 << 10)})
	}
	defer func() {
		cancel()
		if err := <-exited; err != nil {
			b.Logf("the manager exited: %v", err)
		}
	}()
	scrape := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		// The manager serves metrics with a certificate it makes itself.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a local process's own certificate
	}}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if time.Now().After(deadline) {
			b.Fatalf("the manager did not reconcile %d machines and configs in 5 minutes; its log:\n%s", n, logs.tail(4000))
		}
		select {
		case err := <-exited:
			exited <- err // for the deferred wait
			b.Fatalf("the manager stopped (%v); its log:\n%s", err, logs.tail(4000))
		default:
		}
		m, err := scrapeMetrics(scrape, "https://"+metrics+"/metrics")
		if err == nil && m.reconciled("hybridmachine") >= n && m.reconciled("windowskubeadmconfig") >= n &&
			m.depth("hybridmachine") == 0 && m.depth("windowskubeadmconfig") == 0 {
			break
		}
		sample()
		time.Sleep(250 * time.Millisecond)
	}
	for range 8 {
		sample()
		time.Sleep(250 * time.Millisecond)
	}
	sample()
	return status(pid, "VmHWM:"), samples
}

// metricSamples holds the controller metrics the benchmark waits on.
type metricSamples map[string]float64

func (m metricSamples) reconciled(controller string) int {
	return int(m[`controller_runtime_reconcile_total{controller="`+controller+`"}`])
}

func (m metricSamples) depth(controller string) int {
	return int(m[`workqueue_depth{controller="`+controller+`"}`])
}

// scrapeMetrics reads the manager's reconcile counts, summed over results,
// and its work queues' depths.
func scrapeMetrics(c *http.Client, url string) (metricSamples, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	m := metricSamples{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, "{")
		if !ok || (name != "controller_runtime_reconcile_total" && name != "workqueue_depth") {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		for l := range strings.SplitSeq(labels, ",") {
			if strings.HasPrefix(l, "controller=") || strings.HasPrefix(l, "name=") {
				c := strings.TrimPrefix(strings.TrimPrefix(l, "controller="), "name=")
				m[name+`{controller=`+c+`}`] += v
			}
		}
	}
	return m, sc.Err()
}

// createFleet creates a paused Cluster with its vSphere HybridCluster and n
// Windows machines, with the statuses their controllers would have written.
func createFleet(ctx context.Context, c client.Client, ns, cluster string, n int) error {
	cl := builder.Cluster(ns, cluster).Build()
	cl.Spec.Paused = ptr.To(true)
	if err := c.Create(ctx, cl); err != nil {
		return err
	}
	if err := c.Create(ctx, builder.VSphereCluster(ns, cluster).WithServer("vcenter.example.com").WithOwner(cl).Build()); err != nil {
		return err
	}
	work := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range work {
				errs <- createMachine(ctx, c, ns, cluster, i)
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// createMachine creates machine i: its bootstrap data Secret, its
// WindowsKubeadmConfig, its Machine and its HybridMachine, each with a
// status as its controller writes it.
func createMachine(ctx context.Context, c client.Client, ns, cluster string, i int) error {
	name := fmt.Sprintf("%s-windows-%05d", cluster, i)
	labels := map[string]string{clusterv1.ClusterNameLabel: cluster, clusterv1.MachineDeploymentNameLabel: cluster + "-windows"}
	now := metav1.Now()
	conds := func(types ...string) []metav1.Condition {
		var cs []metav1.Condition
		for _, t := range types {
			cs = append(cs, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t, Message: "", LastTransitionTime: now, ObservedGeneration: 1})
		}
		return cs
	}

	secret := builder.BootstrapDataSecret(ns, name, "cloud-config", strings.Repeat("capwin-bootstrap-", 4096/17+1)[:4096])
	secret.Labels = map[string]string{clusterv1.ClusterNameLabel: cluster}
	config := &bootstrapv1.WindowsKubeadmConfig{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}}
	if err := (&webhooks.WindowsKubeadmConfig{}).Default(ctx, config); err != nil {
		return err
	}
	machine := builder.Machine(ns, name, cluster).WithBootstrapDataSecret(name).Build()
	machine.Labels = labels
	machine.Spec.Bootstrap.ConfigRef = clusterv1.ContractVersionedObjectReference{APIGroup: bootstrapv1.GroupVersion.Group, Kind: "WindowsKubeadmConfig", Name: name}
	machine.Spec.Version = "v1.36.3"
	// The Machine first: its config is its, as Cluster API sets it, so
	// that the config's reconcile goes as far as the paused Cluster.
	for _, o := range []client.Object{secret, machine} {
		if err := c.Create(ctx, o, client.FieldOwner("capi-manager")); err != nil {
			return fmt.Errorf("creating %s: %w", o.GetName(), err)
		}
	}
	config.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: machine.Name, UID: machine.UID, Controller: ptr.To(true)}}
	if err := c.Create(ctx, config, client.FieldOwner("capi-manager")); err != nil {
		return fmt.Errorf("creating %s: %w", name, err)
	}
	hm := builder.WindowsVSphereMachine(ns, name).WithOwner(machine).Build()
	hm.Labels = labels
	if err := (&webhooks.HybridMachine{}).Default(ctx, hm); err != nil {
		return err
	}
	if err := c.Create(ctx, hm, client.FieldOwner("capi-manager")); err != nil {
		return fmt.Errorf("creating %s: %w", name, err)
	}

	address := fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
	config.Status.Initialization.DataSecretCreated = ptr.To(true)
	config.Status.DataSecretName = name
	config.Status.Conditions = conds("Ready", "DataSecretAvailable", "CertificatesAvailable")
	hm.Spec.ProviderID = "vsphere://4213" + fmt.Sprintf("%04x", i) + "-0000-0000-0000-000000000000"
	hm.Status.Initialization.Provisioned = ptr.To(true)
	hm.Status.Addresses = []clusterv1.MachineAddress{{Type: clusterv1.MachineInternalIP, Address: address}, {Type: clusterv1.MachineHostName, Address: name}}
	hm.Status.NodeBootstrap = infrav1.NodeBootstrapStatus{Phase: "Joined", State: infrav1.NodeBootstrapJoined, Message: "the node joined"}
	hm.Status.Conditions = conds("Ready", "VMProvisioned", "BootstrapDataApplied", "NodeJoined", "Paused")
	machine.Spec.ProviderID = hm.Spec.ProviderID
	machine.Status.Phase = string(clusterv1.MachinePhaseRunning)
	machine.Status.NodeRef = clusterv1.MachineNodeReference{Name: name}
	machine.Status.Addresses = hm.Status.Addresses
	machine.Status.Conditions = conds("Available", "Ready", "UpToDate", "BootstrapConfigReady", "InfrastructureReady", "NodeReady", "NodeHealthy", "Deleting", "Paused")
	if err := c.Update(ctx, hm, client.FieldOwner("capwin-manager")); err != nil {
		return err
	}
	if err := c.Update(ctx, machine, client.FieldOwner("capi-manager")); err != nil {
		return err
	}
	for _, o := range []client.Object{config, hm, machine} {
		if err := c.Status().Update(ctx, o, client.FieldOwner(statusOwner(o))); err != nil {
			return fmt.Errorf("writing the status of %s: %w", o.GetName(), err)
		}
	}
	return nil
}

func statusOwner(o client.Object) string {
	if _, ok := o.(*clusterv1.Machine); ok {
		return "capi-manager"
	}
	return "capwin-manager"
}

// writeKubeconfig writes a kubeconfig for cfg.
func writeKubeconfig(cfg *rest.Config, path string) error {
	c := clientcmdapi.NewConfig()
	c.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	c.AuthInfos["envtest"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	c.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "envtest"}
	c.CurrentContext = "envtest"
	return clientcmd.WriteToFile(*c, path)
}

// freeAddress is a local address no one listens on.
func freeAddress(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// status is a "Vm...:" figure of process pid in KiB.
func status(pid, field string) int {
	data, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return 0
}

// lockedWriter keeps the manager's log; tail reads it while it writes.
type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

// tail is the last n bytes written.
func (l *lockedWriter) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.w.String()
	return s[max(0, len(s)-n):]
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
