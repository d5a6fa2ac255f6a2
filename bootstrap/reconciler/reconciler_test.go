package reconciler_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/core/setup"
	"sigs.k8s.io/cluster-api/util/conditions"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	"github.com/capwin/capwin/bootstrap/payload"
	"github.com/capwin/capwin/bootstrap/reconciler"
	"github.com/capwin/capwin/controllers"
	"github.com/capwin/capwin/test/envtest/apiserver"
)

const ttl = 45 * time.Minute

var (
	mgmt     *apiserver.Environment // the management cluster
	workload *apiserver.Environment // stands in for every workload cluster
	clock    = &fakeClock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	logs     = &logBuffer{}
	// warnings are the management API server's warnings to the reconciler.
	warnings = &apiserver.Warnings{}
	// managerCache is what the reconciler and the ClusterCache read from.
	managerCache client.Reader
	// clusterCache is the reconciler's connections to workload clusters.
	clusterCache clustercache.ClusterCache
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) write(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(&l.buf, prefix, args)
}

func (l *logBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.String() }

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// newScheme holds the types the bootstrap provider reads and writes: like
// Cluster API's kubeadm bootstrap provider, none of the infrastructure's.
func newScheme() *kruntime.Scheme {
	s := kruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(clusterv1.AddToScheme(s))
	utilruntime.Must(bootstrapv1.AddToScheme(s))
	return s
}

func run(m *testing.M) int {
	ctx := context.Background()
	var err error
	if mgmt, err = apiserver.Start(ctx, apiserver.Options{Scheme: newScheme()}); err != nil {
		println("starting the management envtest:", err.Error())
		return 1
	}
	defer stop("management", mgmt)
	if workload, err = apiserver.Start(ctx, apiserver.Options{WithoutCRDs: true}); err != nil {
		println("starting the workload envtest:", err.Error())
		return 1
	}
	defer stop("workload", workload)

	logger := funcr.New(logs.write, funcr.Options{Verbosity: 5})
	// What logs outside the manager's logger (the ClusterCache's caches of
	// the workload cluster) logs here too, instead of controller-runtime
	// printing a stack to say no logger was set.
	ctrl.SetLogger(logger)
	mgr, err := mgmt.NewManager(func(o *manager.Options) {
		o.Logger = logger
		o.NewClient = warnings.NewClient
	})
	if err != nil {
		println(err.Error())
		return 1
	}
	managerCache = mgr.GetCache()
	secretClient, err := setup.CreateSecretCachingClient(mgr)
	if err != nil {
		println(err.Error())
		return 1
	}
	cc, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient: secretClient,
		Cache:        controllers.ClusterCacheOptions(),
		Client:       setup.ClusterCacheClientOptions("capwin-test", 100, 200),
	}, controller.Options{MaxConcurrentReconciles: 5})
	if err != nil {
		println(err.Error())
		return 1
	}
	if err := apiserver.RetrySoon(cc); err != nil {
		println(err.Error())
		return 1
	}
	clusterCache = cc
	r := &reconciler.Reconciler{Client: mgr.GetClient(), ClusterCache: cc, TokenTTL: ttl, Now: clock.Now}
	if err := r.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: 5}); err != nil {
		println(err.Error())
		return 1
	}
	// The manager stops before the API servers do, or they wait for its
	// connections to drain.
	stopManager, err := mgmt.StartManager(ctx, mgr)
	defer func() {
		if err := stopManager(); err != nil {
			println("the manager stopped with:", err.Error())
		}
	}()
	// Deleting the Clusters makes the ClusterCache close its connections to
	// the workload API server, which otherwise waits for them as it stops.
	defer disconnectAll(ctx, cc)
	if err != nil {
		println(err.Error())
		return 1
	}
	return m.Run()
}

func disconnectAll(ctx context.Context, cc clustercache.ClusterCache) {
	clusters := &clusterv1.ClusterList{}
	if err := mgmt.Client.List(ctx, clusters); err != nil {
		return
	}
	for i := range clusters.Items {
		_ = mgmt.Client.Delete(ctx, &clusters.Items[i])
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, c := range clusters.Items {
		for time.Now().Before(deadline) {
			if _, err := cc.GetClient(ctx, client.ObjectKeyFromObject(&c)); err != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

const eventually = 30 * time.Second

func TestWaitsForControlPlaneThenWritesData(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, bootstrapv1.WindowsKubeadmConfigSpec{}, false)

	g.Eventually(func(g Gomega) {
		cond := condition(g, w.getConfig(g), bootstrapv1.WindowsKubeadmConfigDataSecretAvailableCondition)
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cond.Reason).To(Equal(bootstrapv1.WindowsKubeadmConfigWaitingForControlPlaneInitializedReason))
	}, eventually).Should(Succeed())
	err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: w.ns, Name: w.config.Name}, &corev1.Secret{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no data Secret before the control plane is initialized")

	w.setClusterStatus(t, true)
	g.Eventually(func(g Gomega) {
		c := w.getConfig(g)
		g.Expect(c.Status.DataSecretName).To(Equal(w.config.Name))
		g.Expect(c.Status.Initialization.DataSecretCreated).To(Equal(ptr.To(true)))
		g.Expect(condition(g, c, bootstrapv1.WindowsKubeadmConfigReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	}, eventually).Should(Succeed())

	// The Secret as the contract wants it.
	s := w.dataSecret(g)
	g.Expect(s.Type).To(Equal(clusterv1.ClusterSecretType))
	g.Expect(s.Labels).To(HaveKeyWithValue(clusterv1.ClusterNameLabel, "win1"))
	g.Expect(s.Data).To(HaveKeyWithValue("format", []byte(payload.Format)))
	g.Expect(s.OwnerReferences).To(ConsistOf(HaveField("Name", w.config.Name)))
	g.Expect(*s.OwnerReferences[0].Controller).To(BeTrue())

	// The payload: a valid node configuration with the Cluster's facts.
	cfg := nodeConfig(g, s)
	g.Expect(cfg.Join.APIServerEndpoint).To(Equal("10.0.0.100:6443"))
	hash, err := payload.CACertHash(w.caPEM)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Join.CACertHashes).To(Equal([]string{hash}))
	g.Expect(cfg.Network.OutboundNATExceptions).To(ContainElements("10.244.0.0/16", "10.96.0.0/12"))
	// The node names itself after the computer name the infrastructure
	// provider gave it, and the kubelet labels the Node with its build.
	g.Expect(cfg.NodeName).To(BeEmpty())
	g.Expect(cfg.WindowsBuild).To(BeEmpty())
	g.Expect(cfg.Labels).NotTo(HaveKey(corev1.LabelWindowsBuild))

	// The token in the payload exists in the workload cluster, lives TTL.
	id := strings.Split(cfg.Join.Token, ".")[0]
	g.Expect(s.Annotations).To(HaveKeyWithValue(bootstrapv1.TokenIDAnnotation, id))
	tok := workloadToken(g, id)
	g.Expect(string(tok.Data[bootstrapapi.BootstrapTokenSecretKey])).To(Equal(strings.Split(cfg.Join.Token, ".")[1]))
	g.Expect(expiration(g, tok)).To(BeTemporally("~", clock.Now().Add(ttl), time.Second))

	// Neither the token's secret half nor the payload reaches a log line.
	g.Expect(logs.String()).To(ContainSubstring("Wrote the bootstrap data Secret"))
	g.Expect(strings.Contains(logs.String(), strings.Split(cfg.Join.Token, ".")[1])).To(BeFalse(), "the log shows the token's secret")
	g.Expect(logs.String()).NotTo(ContainSubstring("ps1_sysnative"))
}

// TestStandaloneControlPlaneMachines: a cluster whose control plane is
// stand-alone Machines has no control-plane provider to set
// status.initialization.controlPlaneInitialized; Cluster API sets only the
// ControlPlaneInitialized condition, and that is enough.
func TestStandaloneControlPlaneMachines(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, bootstrapv1.WindowsKubeadmConfigSpec{}, false)
	c := &clusterv1.Cluster{}
	g.Expect(mgmt.Client.Get(t.Context(), client.ObjectKeyFromObject(w.cluster), c)).To(Succeed())
	c.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	c.Status.Initialization.ControlPlaneInitialized = nil
	conditions.Set(c, metav1.Condition{Type: clusterv1.ClusterControlPlaneInitializedCondition, Status: metav1.ConditionTrue, Reason: clusterv1.ClusterControlPlaneInitializedReason})
	g.Expect(mgmt.Client.Status().Update(t.Context(), c)).To(Succeed())
	g.Expect(c.Status.Initialization.ControlPlaneInitialized).To(BeNil())

	g.Eventually(func(g Gomega) {
		g.Expect(w.getConfig(g).Status.DataSecretName).To(Equal(w.config.Name))
	}, eventually).Should(Succeed())
}

func TestTokenRefreshedUntilNodeJoins(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, bootstrapv1.WindowsKubeadmConfigSpec{}, true)
	id := w.tokenID(g)
	first := expiration(g, workloadToken(g, id))

	// Half the lifetime passes with the VM still booting: refreshed.
	clock.Advance(ttl / 2)
	w.poke(t)
	g.Eventually(func(g Gomega) {
		g.Expect(expiration(g, workloadToken(g, id))).To(BeTemporally("~", clock.Now().Add(ttl), time.Second))
	}, eventually).Should(Succeed())
	refreshed := expiration(g, workloadToken(g, id))
	g.Expect(refreshed.After(first)).To(BeTrue())

	// The node joins: no more refreshes, the token runs out.
	m := &clusterv1.Machine{}
	g.Expect(mgmt.Client.Get(t.Context(), client.ObjectKeyFromObject(w.machine), m)).To(Succeed())
	m.Status.NodeRef = clusterv1.MachineNodeReference{Name: "win1-md-q3zk5a"}
	g.Expect(mgmt.Client.Status().Update(t.Context(), m)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cond := condition(g, w.getConfig(g), bootstrapv1.WindowsKubeadmConfigBootstrapTokenCondition)
		g.Expect(cond.Reason).To(Equal(bootstrapv1.WindowsKubeadmConfigTokenNotNeededReason))
	}, eventually).Should(Succeed())
	clock.Advance(ttl / 2)
	w.poke(t)
	g.Consistently(func(g Gomega) {
		g.Expect(expiration(g, workloadToken(g, id))).To(Equal(refreshed))
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())
}

func TestMissingTokenIsReplaced(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, bootstrapv1.WindowsKubeadmConfigSpec{}, true)
	id := w.tokenID(g)
	g.Expect(workload.Client.Delete(t.Context(), workloadToken(g, id))).To(Succeed())
	w.poke(t)
	g.Eventually(func(g Gomega) {
		s := w.dataSecret(g)
		newID := s.Annotations[bootstrapv1.TokenIDAnnotation]
		g.Expect(newID).NotTo(Equal(id))
		g.Expect(strings.Split(nodeConfig(g, s).Join.Token, ".")[0]).To(Equal(newID))
		workloadToken(g, newID)
	}, eventually).Should(Succeed())
}

func TestDeletionRevokesToken(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, bootstrapv1.WindowsKubeadmConfigSpec{}, true)
	var id string
	g.Eventually(func(g Gomega) {
		c := w.getConfig(g)
		g.Expect(c.Finalizers).To(ContainElement(bootstrapv1.ConfigFinalizer))
		id = w.dataSecret(g).Annotations[bootstrapv1.TokenIDAnnotation]
		g.Expect(id).NotTo(BeEmpty())
	}, eventually).Should(Succeed())

	g.Expect(mgmt.Client.Delete(t.Context(), w.getConfig(g))).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := mgmt.Client.Get(t.Context(), client.ObjectKeyFromObject(w.config), &bootstrapv1.WindowsKubeadmConfig{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the config is gone once its finalizer is removed")
		err = workload.Client.Get(t.Context(), client.ObjectKey{Namespace: "kube-system", Name: "bootstrap-token-" + id}, &corev1.Secret{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the bootstrap token is revoked")
	}, eventually).Should(Succeed())
}

func TestPausedClusterChangesNothing(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, bootstrapv1.WindowsKubeadmConfigSpec{}, true, func(w *world) {
		w.cluster.Spec.Paused = ptr.To(true)
	})
	g.Eventually(func(g Gomega) {
		cond := condition(g, w.getConfig(g), clusterv1.PausedCondition)
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
	}, eventually).Should(Succeed())
	g.Consistently(func(g Gomega) {
		err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: w.ns, Name: w.config.Name}, &corev1.Secret{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a paused cluster gets no bootstrap data")
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())
}

func TestOversizedPayloadWritesNoSecret(t *testing.T) {
	g := NewWithT(t)
	big := strings.Repeat("x", 30000)
	tokensBefore := &corev1.SecretList{}
	g.Expect(workload.Client.List(t.Context(), tokensBefore, client.InNamespace("kube-system"))).To(Succeed())

	w := newWorld(t, bootstrapv1.WindowsKubeadmConfigSpec{Files: []bootstrapv1.File{
		{Path: `C:\a.txt`, Content: big}, {Path: `C:\b.txt`, Content: big},
	}}, true)
	g.Eventually(func(g Gomega) {
		cond := condition(g, w.getConfig(g), bootstrapv1.WindowsKubeadmConfigDataSecretAvailableCondition)
		g.Expect(cond.Reason).To(Equal(bootstrapv1.WindowsKubeadmConfigPayloadTooLargeReason))
		g.Expect(cond.Message).To(ContainSubstring("65535 byte user-data limit"))
	}, eventually).Should(Succeed())
	err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: w.ns, Name: w.config.Name}, &corev1.Secret{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	tokensAfter := &corev1.SecretList{}
	g.Expect(workload.Client.List(t.Context(), tokensAfter, client.InNamespace("kube-system"))).To(Succeed())
	g.Expect(tokensAfter.Items).To(HaveLen(len(tokensBefore.Items)), "no token is created for a payload that cannot be sent")
}

// TestFileSecretCreatedLaterIsFound: a Secret that spec.files names and
// that does not exist yet (applied after the cluster, as GitOps tools may)
// is waited for with retries, since nothing watches it, and its content
// reaches the payload once it exists.
func TestFileSecretCreatedLaterIsFound(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, bootstrapv1.WindowsKubeadmConfigSpec{Files: []bootstrapv1.File{{
		Path: `C:\etc\late.txt`, ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretKeyReference{Name: "late", Key: "content"}},
	}}}, true)
	g.Eventually(func(g Gomega) {
		cond := condition(g, w.getConfig(g), bootstrapv1.WindowsKubeadmConfigDataSecretAvailableCondition)
		g.Expect(cond.Reason).To(Equal(bootstrapv1.WindowsKubeadmConfigWaitingForInputsReason))
		g.Expect(cond.Message).To(ContainSubstring("Secret late"))
	}, eventually).Should(Succeed())

	late := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "late"}, Data: map[string][]byte{"content": []byte("arrived")}}
	g.Expect(mgmt.Client.Create(t.Context(), late)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(w.getConfig(g).Status.DataSecretName).To(Equal(w.config.Name))
	}, eventually).Should(Succeed())
	g.Expect(nodeConfig(g, w.dataSecret(g)).Files).To(ContainElement(HaveField("Content", base64.StdEncoding.EncodeToString([]byte("arrived")))))
}

// TestMachineSizeIsTheNodesToCheck: reservations over any VM's memory still
// get bootstrap data; capwin-node's preflight refuses them on the machine,
// where its memory is known. The Machine's infrastructure may be of any
// kind.
func TestMachineSizeIsTheNodesToCheck(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, bootstrapv1.WindowsKubeadmConfigSpec{Kubelet: bootstrapv1.KubeletSpec{
		SystemReserved: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Ti")},
	}}, true, func(w *world) {
		w.machine.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{
			APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "DockerMachine", Name: "elsewhere"}
	})
	g.Eventually(func(g Gomega) {
		c := w.getConfig(g)
		g.Expect(c.Status.DataSecretName).To(Equal(w.config.Name))
		g.Expect(condition(g, c, bootstrapv1.WindowsKubeadmConfigReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	}, eventually).Should(Succeed())
	cfg := nodeConfig(g, w.dataSecret(g))
	g.Expect(cfg.Kubelet.SystemReserved).To(HaveKeyWithValue("memory", "1Ti"))
}

func newCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kubernetes"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func stop(name string, e *apiserver.Environment) {
	if err := e.Stop(); err != nil {
		println("stopping the", name, "envtest:", err.Error())
	}
}
