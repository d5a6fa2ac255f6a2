package nodeagent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwin/capwin/node-components/agent"
	"github.com/capwin/capwin/node-components/discovery"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/node-components/render"
	"github.com/capwin/capwin/test/kubeadm"
)

// allowProgress sets up, as the bootstrap provider does
// (docs/bootstrap.md), the progress ConfigMap configMap and a Role that
// lets only the token group of that ConfigMap get and patch it.
func allowProgress(ctx context.Context, g Gomega, configMap string) {
	c := cluster.Env.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: discovery.ProgressNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		g.Expect(err).NotTo(HaveOccurred())
	}
	meta := metav1.ObjectMeta{Name: configMap, Namespace: discovery.ProgressNamespace}
	g.Expect(c.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta})).To(Succeed())
	g.Expect(c.Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{configMap}, Verbs: []string{"get", "patch"},
	}}})).To(Succeed())
	g.Expect(c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta,
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: configMap},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: discovery.ProgressGroup(configMap)}},
	})).To(Succeed())
}

func readProgress(ctx context.Context, g Gomega, configMap string) *agent.Progress {
	cm := &corev1.ConfigMap{}
	g.Expect(cluster.Env.Client.Get(ctx, client.ObjectKey{Namespace: discovery.ProgressNamespace, Name: configMap}, cm)).To(Succeed())
	p := &agent.Progress{}
	g.Expect(json.Unmarshal([]byte(cm.Data[discovery.ProgressKey]), p)).To(Succeed(), "data: %v", cm.Data)
	return p
}

// noProgress asserts that nothing was reported to configMap.
func noProgress(ctx context.Context, g Gomega, configMap string) {
	cm := &corev1.ConfigMap{}
	g.Expect(cluster.Env.Client.Get(ctx, client.ObjectKey{Namespace: discovery.ProgressNamespace, Name: configMap}, cm)).To(Succeed())
	g.Expect(cm.Data).NotTo(HaveKey(discovery.ProgressKey))
}

// progressNode is a node whose configuration names configMap for its
// progress, and whose token carries that ConfigMap's group, as the
// bootstrap provider makes them; mutate changes the configuration first.
func progressNode(t *testing.T, ctx context.Context, configMap, name string, mutate ...func(*nodeconfig.Config)) (*windowsNode, kubeadm.Token) {
	g := NewWithT(t)
	allowProgress(ctx, g, configMap)
	tok, err := cluster.CreateToken(ctx, time.Hour, discovery.ProgressGroup(configMap))
	g.Expect(err).NotTo(HaveOccurred())
	join := cluster.Join(tok)
	join.ProgressConfigMap = configMap
	n := newWindowsNode(t, join, name)
	if len(mutate) > 0 {
		for _, m := range mutate {
			m(n.cfg)
		}
		data, err := json.Marshal(n.cfg)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n.host.FS().WriteFile(layout.NodeConfig, data, true)).To(Succeed())
	}
	return n, tok
}

func (n *windowsNode) reportingAgent() *agent.Agent {
	a := n.agent()
	a.ClusterProgress = agent.ReportToCluster
	return a
}

// TestProgressReachesTheCluster joins a node whose token may report: the
// progress goes to the ConfigMap its configuration names (the Machine's
// name, not the node's), the last report, sent after the token left the
// disk, says Joined with every phase, and the node's token cannot write
// another node's progress.
func TestProgressReachesTheCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// A dotted name: its group has colons, which the API server accepts.
	n, tok := progressNode(t, ctx, "win1-md-0.progress-1", "win-progress-1")
	allowProgress(ctx, g, "win1-md-0.progress-2")
	g.Expect(n.reportingAgent().Join(ctx, layout.NodeConfig)).To(Succeed(), n.log.String())
	g.Expect(n.log.String()).NotTo(ContainSubstring("Reporting progress"), "no report failed")

	p := readProgress(ctx, g, "win1-md-0.progress-1")
	g.Expect(p.State).To(Equal(agent.ProgressJoined))
	g.Expect(p.NodeName).To(Equal("win-progress-1"))
	g.Expect(p.Phases).To(HaveLen(len(agent.Phases())))

	// The same token, without the other ConfigMap's group, on that
	// ConfigMap: refused.
	kc, err := render.BootstrapKubeconfig(cluster.Server, cluster.CA, tok.String())
	g.Expect(err).NotTo(HaveOccurred())
	w, err := discovery.NewProgressWriter(kc.Data, "win1-md-0.progress-2")
	g.Expect(err).NotTo(HaveOccurred())
	err = w.Write(ctx, []byte(`{"state":"Joined"}`))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "another node's progress: %v", err)
	noProgress(ctx, g, "win1-md-0.progress-2")
}

// TestFailureReachesTheCluster: a join that fails after discovery (the
// kubelet never registers) says so in the cluster, with the phase.
func TestFailureReachesTheCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	n, _ := progressNode(t, ctx, "win1-md-0-progress-3", "win-progress-3")
	// A kubelet that runs but never gets through its TLS bootstrap.
	n.host.OnStart(layout.ServiceKubelet, nil)
	a := n.reportingAgent()
	a.NodeTimeout = 500 * time.Millisecond
	err := a.Join(ctx, layout.NodeConfig)
	g.Expect(agent.ExitCode(err)).To(Equal(agent.ExitRetry), "%v", err)

	p := readProgress(ctx, g, "win1-md-0-progress-3")
	g.Expect(p.State).To(Equal(agent.ProgressFailed))
	g.Expect(p.Phase).To(Equal(agent.PhaseNodeRegistration))
	g.Expect(p.Retryable).To(BeTrue())
	g.Expect(p.Message).To(ContainSubstring("TLS bootstrap"))
}

// TestWrongCAHashReachesTheCluster: the token's signature on cluster-info
// verifies but its CA is not the pinned one. The agent reports that, with
// both hashes, to the server cluster-info names over TLS verified against
// its CA (safe: whoever signed it knew the token already). With a wrong
// token secret as well the signature does not verify, and nothing is sent.
func TestWrongCAHashReachesTheCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	wrong := caHashOf(g, newCA(g, "not-this-cluster"))
	n, tok := progressNode(t, ctx, "win1-md-0-progress-4", "win-progress-4", func(c *nodeconfig.Config) {
		c.Join.CACertHashes = []string{wrong}
	})
	err := n.reportingAgent().Join(ctx, layout.NodeConfig)
	g.Expect(agent.ExitCode(err)).To(Equal(agent.ExitFailed), "%v", err)

	p := readProgress(ctx, g, "win1-md-0-progress-4")
	g.Expect(p.State).To(Equal(agent.ProgressFailed))
	g.Expect(p.Phase).To(Equal(agent.PhaseDiscovery))
	g.Expect(p.Message).To(And(ContainSubstring(wrong), ContainSubstring(cluster.CAHash)))
	g.Expect(n.host.Events()).NotTo(ContainElement("start kubelet"))
	g.Expect(n.host.FS().Exists(layout.BootstrapKubeconfig)).To(BeFalse(), "the pin still refuses the cluster")
	g.Expect(strings.Contains(n.log.String(), tok.Secret)).To(BeFalse(), "the log shows the token's secret")

	badSecret := kubeadm.Token{ID: tok.ID, Secret: kubeadm.NewToken().Secret}
	n, _ = progressNode(t, ctx, "win1-md-0-progress-5", "win-progress-5", func(c *nodeconfig.Config) {
		c.Join.CACertHashes = []string{wrong}
		c.Join.Token = badSecret.String()
	})
	err = n.reportingAgent().Join(ctx, layout.NodeConfig)
	g.Expect(discovery.ReasonOf(err)).To(Equal(discovery.ReasonBadSignature), "%v", err)
	noProgress(ctx, g, "win1-md-0-progress-5")
}

// TestBuildMismatchReachesTheCluster: preflight refuses a host of another
// build than the configuration's windowsBuild; the agent runs discovery
// only to report that, and the kubelet never starts.
func TestBuildMismatchReachesTheCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	n, _ := progressNode(t, ctx, "win1-md-0-progress-6", "win-progress-6", func(c *nodeconfig.Config) {
		c.WindowsBuild = "10.0.17763" // the simulated host runs 10.0.20348
	})
	err := n.reportingAgent().Join(ctx, layout.NodeConfig)
	var pe *agent.PhaseError
	g.Expect(errors.As(err, &pe)).To(BeTrue(), "%v", err)
	g.Expect(pe.Phase).To(Equal(agent.PhasePreflight))
	g.Expect(agent.ExitCode(err)).To(Equal(agent.ExitFailed))

	p := readProgress(ctx, g, "win1-md-0-progress-6")
	g.Expect(p.State).To(Equal(agent.ProgressFailed))
	g.Expect(p.Phase).To(Equal(agent.PhasePreflight))
	g.Expect(p.Message).To(And(ContainSubstring("10.0.17763"), ContainSubstring("10.0.20348")))
	g.Expect(n.host.Events()).NotTo(ContainElement("start kubelet"))
	g.Expect(n.host.FS().Exists(layout.BootstrapKubeconfig)).To(BeFalse())
}
