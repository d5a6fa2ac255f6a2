package nodeagent

import (
	"context"
	"encoding/json"
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
	"github.com/capwin/capwin/node-components/render"
)

// allowProgress sets up, as the management side is to (docs/node-agent.md,
// "Progress"), the node's progress ConfigMap and a Role that lets only the
// node's own token group patch it.
func allowProgress(ctx context.Context, g Gomega, node string) {
	c := cluster.Env.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: discovery.ProgressNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		g.Expect(err).NotTo(HaveOccurred())
	}
	meta := metav1.ObjectMeta{Name: node, Namespace: discovery.ProgressNamespace}
	g.Expect(c.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta})).To(Succeed())
	g.Expect(c.Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{node}, Verbs: []string{"get", "patch"},
	}}})).To(Succeed())
	g.Expect(c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta,
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: node},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: discovery.ProgressGroup(node)}},
	})).To(Succeed())
}

func readProgress(ctx context.Context, g Gomega, node string) *agent.Progress {
	cm := &corev1.ConfigMap{}
	g.Expect(cluster.Env.Client.Get(ctx, client.ObjectKey{Namespace: discovery.ProgressNamespace, Name: node}, cm)).To(Succeed())
	p := &agent.Progress{}
	g.Expect(json.Unmarshal([]byte(cm.Data[discovery.ProgressKey]), p)).To(Succeed(), "data: %v", cm.Data)
	return p
}

// TestProgressReachesTheCluster joins a node whose token may report: the
// last report, sent after the token left the disk, says Joined with every
// phase, and the node's token cannot write another node's progress.
func TestProgressReachesTheCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	allowProgress(ctx, g, "win-progress-1")
	allowProgress(ctx, g, "win-progress-2")
	tok, err := cluster.CreateToken(ctx, time.Hour, discovery.ProgressGroup("win-progress-1"))
	g.Expect(err).NotTo(HaveOccurred())
	n := newWindowsNode(t, cluster.Join(tok), "win-progress-1")
	a := n.agent()
	a.ClusterProgress = agent.ReportToCluster
	g.Expect(a.Join(ctx, layout.NodeConfig)).To(Succeed(), n.log.String())
	g.Expect(n.log.String()).NotTo(ContainSubstring("Reporting progress"), "no report failed")

	p := readProgress(ctx, g, "win-progress-1")
	g.Expect(p.State).To(Equal(agent.ProgressJoined))
	g.Expect(p.NodeName).To(Equal("win-progress-1"))
	g.Expect(p.Phases).To(HaveLen(len(agent.Phases())))

	// The same token on another node's ConfigMap: refused.
	kc, err := render.BootstrapKubeconfig(cluster.Server, cluster.CA, tok.String())
	g.Expect(err).NotTo(HaveOccurred())
	w, err := discovery.NewProgressWriter(kc.Data, "win-progress-2")
	g.Expect(err).NotTo(HaveOccurred())
	err = w.Write(ctx, []byte(`{"state":"Joined"}`))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "another node's progress: %v", err)
}

// TestFailureReachesTheCluster: a join that fails after discovery (the
// kubelet never registers) says so in the cluster, with the phase.
func TestFailureReachesTheCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	allowProgress(ctx, g, "win-progress-3")
	tok, err := cluster.CreateToken(ctx, time.Hour, discovery.ProgressGroup("win-progress-3"))
	g.Expect(err).NotTo(HaveOccurred())
	n := newWindowsNode(t, cluster.Join(tok), "win-progress-3")
	// A kubelet that runs but never gets through its TLS bootstrap.
	n.host.OnStart(layout.ServiceKubelet, nil)
	a := n.agent()
	a.NodeTimeout = 500 * time.Millisecond
	a.ClusterProgress = agent.ReportToCluster
	err = a.Join(ctx, layout.NodeConfig)
	g.Expect(agent.ExitCode(err)).To(Equal(agent.ExitRetry), "%v", err)

	p := readProgress(ctx, g, "win-progress-3")
	g.Expect(p.State).To(Equal(agent.ProgressFailed))
	g.Expect(p.Phase).To(Equal(agent.PhaseNodeRegistration))
	g.Expect(p.Retryable).To(BeTrue())
	g.Expect(p.Message).To(ContainSubstring("TLS bootstrap"))
}
