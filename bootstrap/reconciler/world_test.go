package reconciler_test

import (
	"context"
	"encoding/base64"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/kubeconfig"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	"github.com/capwin/capwin/node-components/nodeconfig"
)

// world is one cluster with one Windows Machine and its WindowsKubeadmConfig,
// in a namespace of its own. The Machine's infrastructureRef names a
// HybridMachine that does not exist: the bootstrap provider never reads it.
type world struct {
	ns      string
	cluster *clusterv1.Cluster
	machine *clusterv1.Machine
	config  *bootstrapv1.WindowsKubeadmConfig
	caPEM   []byte
}

// newWorld creates the objects; initialized says whether the Cluster's
// control plane is initialized already.
func newWorld(t *testing.T, spec bootstrapv1.WindowsKubeadmConfigSpec, initialized bool, mutate ...func(*world)) *world {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	ns, err := mgmt.CreateNamespace(ctx, "bootstrap")
	g.Expect(err).NotTo(HaveOccurred())
	w := &world{ns: ns.Name}

	w.cluster = &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "win1", Namespace: w.ns},
		Spec: clusterv1.ClusterSpec{
			ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "10.0.0.100", Port: 6443},
			ClusterNetwork: clusterv1.ClusterNetwork{
				Pods:     clusterv1.NetworkRanges{CIDRBlocks: []string{"10.244.0.0/16"}},
				Services: clusterv1.NetworkRanges{CIDRBlocks: []string{"10.96.0.0/12"}},
			},
		},
	}
	w.config = &bootstrapv1.WindowsKubeadmConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "win1-md-0-abcde", Namespace: w.ns, Labels: map[string]string{clusterv1.ClusterNameLabel: "win1"}},
		Spec:       spec,
	}
	w.machine = &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: "win1-md-0-abcde", Namespace: w.ns, Labels: map[string]string{clusterv1.ClusterNameLabel: "win1"}},
		Spec: clusterv1.MachineSpec{
			ClusterName: "win1",
			Version:     "v1.36.3",
			Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: bootstrapv1.GroupVersion.Group, Kind: "WindowsKubeadmConfig", Name: w.config.Name}},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "HybridMachine", Name: "win1-md-0-abcde"},
		},
	}
	for _, m := range mutate {
		m(w)
	}
	g.Expect(mgmt.Client.Create(ctx, w.cluster)).To(Succeed())

	w.caPEM = newCA(t)
	g.Expect(mgmt.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "win1-ca", Namespace: w.ns, Labels: map[string]string{clusterv1.ClusterNameLabel: "win1"}},
		Data:       map[string][]byte{"tls.crt": w.caPEM, "tls.key": []byte("unused")},
	})).To(Succeed())
	g.Expect(mgmt.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "win1-kubeconfig", Namespace: w.ns, Labels: map[string]string{clusterv1.ClusterNameLabel: "win1"}},
		Data:       map[string][]byte{"value": kubeconfig.FromEnvTestConfig(workload.Config, w.cluster)},
	})).To(Succeed())
	// The ClusterCache tries to connect as soon as the infrastructure is
	// provisioned, reading the kubeconfig Secret through the manager's
	// cache, and tries again only after a while (apiserver.RetrySoon): the
	// cache holds the Secret before the status says so.
	g.Eventually(func() error {
		return managerCache.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "win1-kubeconfig"}, &corev1.Secret{})
	}, eventually).Should(Succeed())
	w.setClusterStatus(t, initialized)

	g.Expect(mgmt.Client.Create(ctx, w.machine)).To(Succeed())
	w.config.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: w.machine.Name, UID: w.machine.UID, Controller: ptr.To(true),
	}}
	g.Expect(mgmt.Client.Create(ctx, w.config)).To(Succeed())
	// The world's config and Cluster go with its test: each Cluster left
	// behind kept a ClusterCache connection to the workload API server,
	// with its caches and a health probe every 10 s, and the later tests of
	// the package waited behind them for their own connections.
	t.Cleanup(func() {
		ctx := context.Background()
		_ = mgmt.Client.Delete(ctx, &bootstrapv1.WindowsKubeadmConfig{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: w.config.Name}})
		_ = mgmt.Client.Delete(ctx, &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: w.cluster.Name}})
	})
	return w
}

// connected waits until the ClusterCache holds a connection to the world's
// workload cluster: a test whose next step needs it (a token to create or
// revoke) waits for it here, where the wait says what it is for.
func (w *world) connected(t *testing.T) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		_, err := clusterCache.GetClient(t.Context(), client.ObjectKeyFromObject(w.cluster))
		return err
	}, eventually, 100*time.Millisecond).Should(Succeed(), "the ClusterCache's connection to the workload cluster")
}

func (w *world) setClusterStatus(t *testing.T, controlPlaneInitialized bool) {
	t.Helper()
	g := NewWithT(t)
	c := &clusterv1.Cluster{}
	g.Expect(mgmt.Client.Get(t.Context(), client.ObjectKeyFromObject(w.cluster), c)).To(Succeed())
	c.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	c.Status.Initialization.ControlPlaneInitialized = ptr.To(controlPlaneInitialized)
	g.Expect(mgmt.Client.Status().Update(t.Context(), c)).To(Succeed())
}

// pokes numbers the pokes: each changes the config, so each makes an
// event. (The fake clock's time, which they wrote before, stands still
// unless a test moves it: a poke then changed nothing, made no event, and
// a config the reconciler had requeued a minute later waited that minute,
// whatever the test did meanwhile.)
var pokes atomic.Int64

// poke makes the reconciler look at the config again now, as its requeue
// would after the fake clock's time has passed.
func (w *world) poke(t *testing.T) {
	t.Helper()
	c := &bootstrapv1.WindowsKubeadmConfig{}
	g := NewWithT(t)
	g.Expect(mgmt.Client.Get(t.Context(), client.ObjectKeyFromObject(w.config), c)).To(Succeed())
	patch := client.MergeFrom(c.DeepCopy())
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations["test.capwin.io/poke"] = strconv.FormatInt(pokes.Add(1), 10)
	g.Expect(mgmt.Client.Patch(t.Context(), c, patch)).To(Succeed())
}

func (w *world) getConfig(g Gomega) *bootstrapv1.WindowsKubeadmConfig {
	c := &bootstrapv1.WindowsKubeadmConfig{}
	g.Expect(mgmt.Client.Get(context.Background(), client.ObjectKeyFromObject(w.config), c)).To(Succeed())
	return c
}

func (w *world) dataSecret(g Gomega) *corev1.Secret {
	s := &corev1.Secret{}
	g.Expect(mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: w.config.Name}, s)).To(Succeed())
	return s
}

// tokenID waits for the data Secret and returns the ID of the token it
// names.
func (w *world) tokenID(g Gomega) string {
	var id string
	g.Eventually(func(g Gomega) {
		id = w.dataSecret(g).Annotations[bootstrapv1.TokenIDAnnotation]
		g.Expect(id).NotTo(BeEmpty())
	}, eventually).Should(Succeed())
	return id
}

// nodeConfig decodes the node configuration out of the data Secret's script.
func nodeConfig(g Gomega, s *corev1.Secret) *nodeconfig.Config {
	m := regexp.MustCompile(`(?m)^\$NodeConfig = '([A-Za-z0-9+/=]+)'$`).FindSubmatch(s.Data["value"])
	g.Expect(m).NotTo(BeNil(), "no node configuration in the script")
	data, err := base64.StdEncoding.DecodeString(string(m[1]))
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := nodeconfig.Parse(data)
	g.Expect(err).NotTo(HaveOccurred())
	return cfg
}

func workloadToken(g Gomega, id string) *corev1.Secret {
	s := &corev1.Secret{}
	g.Expect(workload.Client.Get(context.Background(), client.ObjectKey{Namespace: "kube-system", Name: "bootstrap-token-" + id}, s)).To(Succeed())
	return s
}

func expiration(g Gomega, s *corev1.Secret) time.Time {
	t, err := time.Parse(time.RFC3339, string(s.Data[bootstrapapi.BootstrapTokenExpirationKey]))
	g.Expect(err).NotTo(HaveOccurred())
	return t
}

func condition(g Gomega, c *bootstrapv1.WindowsKubeadmConfig, t string) *metav1.Condition {
	cond := conditions.Get(c, t)
	g.Expect(cond).NotTo(BeNil(), "condition %s is not set; conditions: %v", t, c.Status.Conditions)
	return cond
}
