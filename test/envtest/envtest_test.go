package envtest_test

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/capwin/capwin/test/envtest"
)

var env *envtest.Environment

func TestMain(m *testing.M) {
	os.Exit(envtest.Run(m, &env, envtest.Options{}, nil))
}

func TestClusterRoundTrip(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns, err := env.CreateNamespace(ctx, "smoke")
	g.Expect(err).NotTo(HaveOccurred())

	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "win1", Namespace: ns.Name},
		Spec: clusterv1.ClusterSpec{
			ClusterNetwork: clusterv1.ClusterNetwork{
				Pods: clusterv1.NetworkRanges{CIDRBlocks: []string{"10.244.0.0/16"}},
			},
		},
	}
	g.Expect(env.Client.Create(ctx, cluster)).To(Succeed())

	got := &clusterv1.Cluster{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cluster), got)).To(Succeed())
	g.Expect(got.Spec.ClusterNetwork.Pods.CIDRBlocks).To(Equal([]string{"10.244.0.0/16"}))
	g.Expect(got.UID).NotTo(BeEmpty())
}

func TestCRDValidationIsLive(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns, err := env.CreateNamespace(ctx, "smoke")
	g.Expect(err).NotTo(HaveOccurred())

	// A Cluster whose controlPlaneEndpoint port is out of range: the Cluster
	// CRD's schema rejects it in the API server.
	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": clusterv1.GroupVersion.String(),
		"kind":       "Cluster",
		"metadata":   map[string]any{"name": "bad", "namespace": ns.Name},
		"spec": map[string]any{
			"controlPlaneEndpoint": map[string]any{"host": "10.0.0.1", "port": int64(70000)},
		},
	}}
	err = env.Client.Create(ctx, bad)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected Invalid, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec.controlPlaneEndpoint.port"))

	// And one of capwin's own CRDs is installed and validating.
	hm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1",
		"kind":       "HybridMachine",
		"metadata":   map[string]any{"name": "bad", "namespace": ns.Name},
		"spec":       map[string]any{"os": map[string]any{"type": "Plan9"}},
	}}
	err = env.Client.Create(ctx, hm)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected Invalid, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec.os.type"))
}

func TestCoreReconcilersRun(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	mgr, err := env.NewManager()
	g.Expect(err).NotTo(HaveOccurred())
	_, err = envtest.SetupCoreReconcilers(ctx, mgr)
	g.Expect(err).NotTo(HaveOccurred())
	stop, err := env.StartManager(ctx, mgr)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(stop()).To(Succeed()) }()

	ns, err := env.CreateNamespace(ctx, "core")
	g.Expect(err).NotTo(HaveOccurred())
	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: ns.Name},
		Spec: clusterv1.ClusterSpec{ClusterNetwork: clusterv1.ClusterNetwork{
			Pods: clusterv1.NetworkRanges{CIDRBlocks: []string{"10.244.0.0/16"}},
		}},
	}
	g.Expect(env.Client.Create(ctx, cluster)).To(Succeed())

	// The real Cluster reconciler adds its finalizer and reports conditions.
	g.Eventually(func(g Gomega) {
		got := &clusterv1.Cluster{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cluster), got)).To(Succeed())
		g.Expect(got.Finalizers).To(ContainElement(clusterv1.ClusterFinalizer))
		g.Expect(got.Status.Conditions).NotTo(BeEmpty())
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}
