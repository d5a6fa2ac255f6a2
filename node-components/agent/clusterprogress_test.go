package agent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/node-components/render"
)

// progressConfigMap is the join.progressConfigMap of these tests: the
// Machine's name, as the bootstrap provider sets it.
const progressConfigMap = "win1-md-0-7f9c4-x2b8q"

// clusterRecorder is an Agent.ClusterProgress that records what it was
// asked for and what its reporters were handed.
type clusterRecorder struct {
	mu          sync.Mutex
	configMaps  []string
	kubeconfigs [][]byte
	reports     []Progress
}

func (c *clusterRecorder) clusterProgress(kc []byte, configMap string) (Reporter, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.configMaps = append(c.configMaps, configMap)
	c.kubeconfigs = append(c.kubeconfigs, kc)
	return c, nil
}

func (c *clusterRecorder) Name() string { return "the recorder" }

func (c *clusterRecorder) Report(_ context.Context, p Progress) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reports = append(c.reports, p)
	return nil
}

func (c *clusterRecorder) last(t *testing.T) Progress {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.reports) == 0 {
		t.Fatal("nothing was reported to the cluster")
	}
	return c.reports[len(c.reports)-1]
}

func withProgressConfigMap(c *nodeconfig.Config) { c.Join.ProgressConfigMap = progressConfigMap }

func (n *node) reportingAgent(rec *clusterRecorder) *Agent {
	a := n.agent()
	a.ClusterProgress = rec.clusterProgress
	return a
}

// TestProgressGoesToTheConfiguredConfigMap: the cluster reporter writes to
// the configuration's progressConfigMap, not to a ConfigMap of the node's
// name, from discovery on, until Joined.
func TestProgressGoesToTheConfiguredConfigMap(t *testing.T) {
	n := newNode(t, withProgressConfigMap)
	rec := &clusterRecorder{}
	if err := n.reportingAgent(rec).Join(context.Background(), layout.NodeConfig); err != nil {
		t.Fatalf("join: %v\n%s", err, n.log.String())
	}
	if len(rec.configMaps) != 1 || rec.configMaps[0] != progressConfigMap {
		t.Errorf("ClusterProgress called for %q, want once for %q", rec.configMaps, progressConfigMap)
	}
	if p := rec.last(t); p.State != ProgressJoined {
		t.Errorf("last report %+v, want Joined", p)
	}
	if rec.reports[0].Phase != PhaseDiscovery {
		t.Errorf("the first report to the cluster is of phase %s, want %s (nothing before discovery proved the control plane)", rec.reports[0].Phase, PhaseDiscovery)
	}
	if n.cp.discovers != 1 {
		t.Errorf("discovery ran %d times, want 1", n.cp.discovers)
	}
}

// TestNoProgressConfigMapNoClusterReports: without progressConfigMap the
// node reports only on its disk, even when it fails before discovery.
func TestNoProgressConfigMapNoClusterReports(t *testing.T) {
	n := newNode(t, func(c *nodeconfig.Config) { c.WindowsBuild = "10.0.17763" })
	rec := &clusterRecorder{}
	err := n.reportingAgent(rec).Join(context.Background(), layout.NodeConfig)
	assertRefusedInPreflight(t, n, err)
	if len(rec.configMaps) != 0 || n.cp.discovers != 0 {
		t.Errorf("ClusterProgress called for %q, discovery ran %d times: want neither", rec.configMaps, n.cp.discovers)
	}

	n = newNode(t)
	if err := n.reportingAgent(rec).Join(context.Background(), layout.NodeConfig); err != nil {
		t.Fatalf("join: %v", err)
	}
	if len(rec.configMaps) != 0 {
		t.Errorf("ClusterProgress called for %q without a progressConfigMap", rec.configMaps)
	}
}

// TestPreflightFailureReachesTheCluster: a failure before the discovery
// phase runs discovery, writing nothing, only to report itself, and the
// join still fails as it would have: same phase, exit code, message.
func TestPreflightFailureReachesTheCluster(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(*node)
		want  string
	}{
		{"another build", func(n *node) { n.cfg.WindowsBuild = "10.0.17763"; n.writeConfig() }, "10.0.17763"},
		{"an invalid computer name", func(n *node) { n.host.SetComputerName("WIN_1") }, "WIN_1"},
		{"reservations over the memory", func(n *node) { n.host.SetMemory(1536 << 20) }, "kubelet.kubeReserved.memory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t, withProgressConfigMap)
			tt.setup(n)
			rec := &clusterRecorder{}
			err := n.reportingAgent(rec).Join(context.Background(), layout.NodeConfig)
			assertRefusedInPreflight(t, n, err)

			p := rec.last(t)
			if p.Phase != PhasePreflight || p.State != ProgressFailed || p.Retryable || !strings.Contains(p.Message, tt.want) {
				t.Errorf("reported %+v, want a permanent preflight failure naming %s", p, tt.want)
			}
			var pe *PhaseError
			if !errors.As(err, &pe) || p.Message != pe.Err.Error() {
				t.Errorf("reported %q, the join failed with %v", p.Message, err)
			}
			if len(rec.configMaps) != 1 || rec.configMaps[0] != progressConfigMap {
				t.Errorf("ClusterProgress called for %q, want once for %q", rec.configMaps, progressConfigMap)
			}
			if !strings.Contains(string(rec.kubeconfigs[0]), testToken) || !strings.Contains(string(rec.kubeconfigs[0]), "https://10.0.0.100:6443") {
				t.Errorf("the reporter's kubeconfig is not of the discovered server and the token")
			}
			if n.cp.discovers != 1 {
				t.Errorf("discovery ran %d times, want 1", n.cp.discovers)
			}
			for _, f := range []string{layout.BootstrapKubeconfig, layout.CACert, layout.KubeletConfig} {
				if ok, _ := n.host.FS().Exists(f); ok {
					t.Errorf("the discovery run to report wrote %s", f)
				}
			}
		})
	}
}

// TestPreflightFailureNotReportedWhenDiscoveryFails: no authenticated
// channel, nothing sent; the exit code is the preflight failure's.
func TestPreflightFailureNotReportedWhenDiscoveryFails(t *testing.T) {
	n := newNode(t, withProgressConfigMap, func(c *nodeconfig.Config) { c.WindowsBuild = "10.0.17763" })
	n.cp.discoverFn = func() error { return errors.New("the CA does not match") }
	rec := &clusterRecorder{}
	err := n.reportingAgent(rec).Join(context.Background(), layout.NodeConfig)
	assertRefusedInPreflight(t, n, err)
	if len(rec.configMaps) != 0 || len(rec.reports) != 0 {
		t.Errorf("reported %+v through %q after a failed discovery", rec.reports, rec.configMaps)
	}
	if !strings.Contains(n.log.String(), "not reported to the cluster") {
		t.Errorf("the log does not say the failure went unreported:\n%s", n.log.String())
	}
}

// TestFailedDiscoveryIsNotRunAgainToReport: discovery that failed is the
// channel that failed; it is not run a second time to report itself.
func TestFailedDiscoveryIsNotRunAgainToReport(t *testing.T) {
	if beforeDiscovery(PhaseDiscovery) || !beforeDiscovery(PhasePreflight) || !beforeDiscovery(PhaseHNS) || beforeDiscovery(PhaseKubelet) {
		t.Fatalf("beforeDiscovery: discovery %v, preflight %v, hns-network %v, kubelet %v; want false, true, true, false",
			beforeDiscovery(PhaseDiscovery), beforeDiscovery(PhasePreflight), beforeDiscovery(PhaseHNS), beforeDiscovery(PhaseKubelet))
	}
	n := newNode(t, withProgressConfigMap)
	n.cp.discoverFn = func() error { return errors.New("the API server did not answer") }
	rec := &clusterRecorder{}
	if err := n.reportingAgent(rec).Join(context.Background(), layout.NodeConfig); err == nil {
		t.Fatal("the join passed with a failing discovery")
	}
	if n.cp.discovers != 1 {
		t.Errorf("discovery ran %d times, want once", n.cp.discovers)
	}
}

// TestStaleBootstrapKubeconfigIsNotUsedToReport: a bootstrap kubeconfig
// that an earlier run wrote with a token since replaced does not carry
// this run's reports.
func TestStaleBootstrapKubeconfigIsNotUsedToReport(t *testing.T) {
	n := newNode(t, withProgressConfigMap)
	old, err := render.BootstrapKubeconfig("https://10.0.0.100:6443", []byte("ca"), "zyxwvu.9876543210zyxwvu")
	if err != nil {
		t.Fatal(err)
	}
	if old.Data == nil || strings.Contains(string(old.Data), testToken) {
		t.Fatal("the old kubeconfig must carry another token")
	}
	if err := n.host.FS().WriteFile(layout.BootstrapKubeconfig, old.Data, true); err != nil {
		t.Fatal(err)
	}
	rec := &clusterRecorder{}
	if err := n.reportingAgent(rec).Join(context.Background(), layout.NodeConfig); err != nil {
		t.Fatal(err)
	}
	for i, kc := range rec.kubeconfigs {
		if !strings.Contains(string(kc), testToken) {
			t.Errorf("reporter %d was made with another token's kubeconfig", i)
		}
	}
	if len(rec.kubeconfigs) == 0 {
		t.Error("nothing reported to the cluster")
	}
}
