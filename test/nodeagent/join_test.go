package nodeagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/capwin/capwin/node-components/agent"
	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/host/sim"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/node-components/nodeconfig/nodeconfigtest"
	"github.com/capwin/capwin/test/kubeadm"
)

// windowsNode is an in-memory Windows host with the bundle installed and
// the stub's node configuration written, whose kubelet acts as a real one
// would with what the agent gave it:
//
//   - it reads the bootstrap kubeconfig and, authenticated by the bootstrap
//     token, posts a client CSR for system:node:<name>;
//   - the cluster's CSR approver and signer (test/kubeadm) approve and sign
//     it, and the kubelet writes the certificate and its kubeconfig as the
//     real one does after its TLS bootstrap (kubeadm.KubeletTLSBootstrap;
//     here within the service's start, where the real kubelet does it in
//     the background);
//   - with those credentials it registers its Node, with the labels of its
//     --node-labels flag, the node.kubernetes.io/windows-build label of its
//     host's build (the real kubelet's getOSSpecificLabels) and the taints
//     of its configuration.
type windowsNode struct {
	host *sim.Host
	cfg  *nodeconfig.Config
	log  strings.Builder
	csr  *certificatesv1.CertificateSigningRequest
}

// newWindowsNode is a node whose computer name is name in upper case, as
// Windows shows it; its configuration, like the bootstrap provider's, has no
// nodeName, so it joins as name.
func newWindowsNode(t *testing.T, join nodeconfig.Join, name string) *windowsNode {
	g := NewWithT(t)
	n := &windowsNode{host: sim.New(sim.Options{Root: t.TempDir(), ComputerName: strings.ToUpper(name)})}
	n.cfg = nodeconfigtest.Worker()
	n.cfg.Join = join
	data, err := json.Marshal(n.cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.host.FS().WriteFile(layout.NodeConfig, data, true)).To(Succeed())
	bundleDir := t.TempDir()
	g.Expect(sim.WriteStandInBundle(bundleDir, n.cfg.KubernetesVersion)).To(Succeed())
	g.Expect(n.agent().Install(context.Background(), agent.InstallOptions{Bundle: bundleDir})).To(Succeed())
	n.host.OnStart(layout.ServiceKubelet, n.kubelet)
	n.host.OnStart(layout.ServiceFlanneld, sim.Flanneld("10.244.7.0/24"))
	return n
}

func (n *windowsNode) agent() *agent.Agent {
	return &agent.Agent{Host: n.host, ControlPlane: agent.KubeadmControlPlane{Options: fast}, Log: &n.log, NodeTimeout: 20 * time.Second, PollInterval: 100 * time.Millisecond}
}

func (n *windowsNode) join() error { return n.agent().Join(context.Background(), layout.NodeConfig) }

// kubelet is the simulated kubelet's start.
func (n *windowsNode) kubelet(ctx context.Context, h *sim.Host, spec host.ServiceSpec) error {
	fsys := h.FS()
	flags := flagValues(spec.Command)
	name := flags["hostname-override"]
	if ok, _ := fsys.Exists(layout.KubeletKubeconfig); !ok {
		bootstrap, err := fsys.ReadFile(flags["bootstrap-kubeconfig"])
		if err != nil {
			return fmt.Errorf("kubelet: no kubeconfig and no bootstrap kubeconfig: %w", err)
		}
		csr, err := kubeadm.KubeletTLSBootstrap(ctx, fsys, bootstrap, flags["kubeconfig"], name)
		if err != nil {
			return fmt.Errorf("kubelet: %w", err)
		}
		n.csr = csr
	}
	cs, err := kubeadm.KubeletClient(fsys, flags["kubeconfig"])
	if err != nil {
		return err
	}
	build, err := h.Facts().Build(ctx)
	if err != nil {
		return err
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		corev1.LabelOSStable: "windows", corev1.LabelWindowsBuild: build,
	}}}
	for _, kv := range strings.Split(flags["node-labels"], ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			node.Labels[k] = v
		}
	}
	kc, err := fsys.ReadFile(flags["config"])
	if err != nil {
		return err
	}
	var kubeletConfig struct {
		RegisterWithTaints []corev1.Taint `json:"registerWithTaints"`
	}
	if err := yaml.Unmarshal(kc, &kubeletConfig); err != nil {
		return err
	}
	node.Spec.Taints = kubeletConfig.RegisterWithTaints
	_, err = cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	return err
}

// flagValues reads --name=value flags from a service's command.
func flagValues(cmd []string) map[string]string {
	out := map[string]string{}
	for _, a := range cmd {
		if k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "="); ok && strings.HasPrefix(a, "--") {
			out[k] = v
		}
	}
	return out
}

func TestJoinAgainstKubeadmCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	tok, err := cluster.CreateToken(ctx, time.Hour)
	g.Expect(err).NotTo(HaveOccurred())
	n := newWindowsNode(t, cluster.Join(tok), "win-join-1")

	start := time.Now()
	err = n.join()
	t.Logf("join took %s", time.Since(start).Round(time.Millisecond))
	g.Expect(err).NotTo(HaveOccurred(), n.log.String())

	node := &corev1.Node{}
	g.Expect(cluster.Env.Client.Get(ctx, client.ObjectKey{Name: "win-join-1"}, node)).To(Succeed())
	g.Expect(node.Labels).To(HaveKeyWithValue(corev1.LabelWindowsBuild, "10.0.20348"))
	g.Expect(node.Spec.Taints).To(ContainElement(HaveField("Key", "os")))
	// The kubelet authenticated its CSR with the token the agent wrote into
	// its bootstrap kubeconfig, with the server discovery proved.
	g.Expect(n.csr).NotTo(BeNil())
	g.Expect(n.csr.Spec.Username).To(Equal(bootstrapUser(tok)))
	g.Expect(n.csr.Spec.Groups).To(ContainElement(kubeadm.NodeBootstrapTokenGroup))

	fsys := n.host.FS()
	ca, err := fsys.ReadFile(layout.CACert)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ca).To(Equal(cluster.CA))
	kc, err := fsys.ReadFile(layout.KubeletConfig)
	g.Expect(err).NotTo(HaveOccurred())
	// The cluster's kubelet configuration, with the Windows overrides.
	g.Expect(string(kc)).To(ContainSubstring("clusterDomain: cluster.local"))
	g.Expect(string(kc)).To(ContainSubstring("containerRuntimeEndpoint: npipe:////./pipe/containerd-containerd"))
	g.Expect(fsys.Exists(layout.BootstrapKubeconfig)).To(BeFalse(), "the token must not outlive the join on disk")
	g.Expect(fsys.Exists(layout.SuccessSentinel)).To(BeTrue())
	assertSecretNotOnDisk(t, n.host.Root(), tok.Secret)

	st, err := n.agent().Status(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Joined).NotTo(BeNil())
	g.Expect(st.Phases).To(HaveLen(len(agent.Phases())))
	var waited, total time.Duration
	for _, p := range st.Phases {
		waited += p.Waited
		total += p.Duration
	}
	t.Logf("phases took %s, of which %s waiting on the API server, the kubelet and flannel", total.Round(time.Millisecond), waited.Round(time.Millisecond))
}

func TestJoinRefusesAControlPlaneItCannotPin(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	tok, err := cluster.CreateToken(ctx, time.Hour)
	g.Expect(err).NotTo(HaveOccurred())
	join := cluster.Join(tok)
	wrong := "sha256:" + strings.Repeat("0", 64)
	join.CACertHashes = []string{wrong}
	n := newWindowsNode(t, join, "win-join-2")

	err = n.join()
	var pe *agent.PhaseError
	g.Expect(errors.As(err, &pe)).To(BeTrue(), "%v", err)
	g.Expect(pe.Phase).To(Equal(agent.PhaseDiscovery))
	g.Expect(agent.ExitCode(err)).To(Equal(agent.ExitFailed), "a CA mismatch does not pass by retrying")
	g.Expect(err.Error()).To(ContainSubstring(wrong))
	g.Expect(err.Error()).To(ContainSubstring(cluster.CAHash))
	p, err := agent.ReadProgress(n.host.FS())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.State).To(Equal(agent.ProgressFailed))
	g.Expect(p.Message).To(ContainSubstring(wrong))
	g.Expect(n.host.Events()).NotTo(ContainElement("start kubelet"))
	g.Expect(strings.Contains(n.log.String(), tok.Secret)).To(BeFalse(), "the log shows the token's secret")
}

func TestJoinWithAnExpiredToken(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	tok, err := cluster.CreateToken(ctx, -time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	n := newWindowsNode(t, cluster.Join(tok), "win-join-3")
	err = n.join()
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("kubelet-config"))
	g.Expect(agent.ExitCode(err)).To(Equal(agent.ExitFailed))
	g.Expect(n.host.Events()).NotTo(ContainElement("start kubelet"))
	g.Expect(slices.Contains(n.host.Events(), "start containerd")).To(BeTrue(), "the phases before discovery ran")
}

func assertSecretNotOnDisk(t *testing.T, root, secret string) {
	t.Helper()
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(data), secret) {
			t.Errorf("the token's secret is still in %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("looking for the token's secret under %s: %v", root, err)
	}
}
