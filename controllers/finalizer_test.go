package controllers_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"sigs.k8s.io/cluster-api/controllers/clustercache"
	capisetup "sigs.k8s.io/cluster-api/core/setup"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/controllers"
	"github.com/capwin/capwin/platform/factory"
	"github.com/capwin/capwin/platform/vsphere"
	"github.com/capwin/capwin/platform/vsphere/vspheresim"
	"github.com/capwin/capwin/test/envtest/apiserver"
)

// finalizerWarning is in every warning the API server gives about a
// finalizer's name.
const finalizerWarning = "metadata.finalizers"

// The names capwin's finalizers had before they had a path, as objects
// written by an earlier capwin carry them.
const (
	legacyMachineFinalizer = "hybridmachine.infrastructure.cluster.x-k8s.io"
	legacyClusterFinalizer = "hybridcluster.infrastructure.cluster.x-k8s.io"
)

// startRecordedControllers runs the HybridCluster and HybridMachine
// reconcilers on namespace ns's objects, as startControllers does, with
// the API server's warnings to them recorded in the returned Warnings;
// stop ends them.
func startRecordedControllers(t testing.TB, ns string) (stop func(), warnings *apiserver.Warnings) {
	t.Helper()
	warnings = &apiserver.Warnings{}
	mgr, err := env.NewManager(func(o *manager.Options) {
		o.Cache.DefaultNamespaces = map[string]cache.Config{ns: {}}
		o.NewClient = warnings.NewClient
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := controller.Options{MaxConcurrentReconciles: 10}
	platforms := &factory.Factory{Client: mgr.GetClient(), ControllerNamespace: "capwin-system", VSphere: vsphere.NewSessions()}
	if err := (&controllers.HybridClusterReconciler{Client: mgr.GetClient(), Platforms: platforms}).SetupWithManager(mgr, opts); err != nil {
		t.Fatal(err)
	}
	secretClient, err := capisetup.CreateSecretCachingClient(mgr)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := clustercache.SetupWithManager(t.Context(), mgr, clustercache.Options{
		SecretClient: secretClient,
		Cache:        controllers.ClusterCacheOptions(),
		Client:       capisetup.ClusterCacheClientOptions("capwin-test", 100, 200),
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := apiserver.RetrySoon(cc); err != nil {
		t.Fatal(err)
	}
	if err := (&controllers.HybridMachineReconciler{Client: mgr.GetClient(), Platforms: platforms, ClusterCache: cc, ProgressPoll: time.Hour}).SetupWithManager(mgr, opts); err != nil {
		t.Fatal(err)
	}
	stopManager, err := env.StartManager(t.Context(), mgr)
	if err != nil {
		t.Fatal(err)
	}
	stop = sync.OnceFunc(func() {
		if err := stopManager(); err != nil {
			t.Errorf("the manager stopped with: %v", err)
		}
	})
	t.Cleanup(stop)
	return stop, warnings
}

// provisionedMachine makes a provisioned vSphere cluster with one
// provisioned machine, name, in a new namespace, whose controllers'
// warnings are recorded.
func provisionedMachine(t *testing.T, v *vspheresim.VCenter, name string) (ns string, stop func(), warnings *apiserver.Warnings) {
	t.Helper()
	ns = newNamespace(t)
	stop, warnings = startRecordedControllers(t, ns)
	cluster(t, v, ns, nil)
	markInfrastructureProvisioned(t, ns)
	machine(t, ns, name, "DC0_H0_VM0")
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(getHM(g, ns, name).Status.Initialization.Provisioned).To(Equal(ptr.To(true)))
	}, eventually).Should(Succeed())
	return ns, stop, warnings
}

func getHC(g Gomega, ns string) *infrav1.HybridCluster {
	hc := &infrav1.HybridCluster{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "win1"}, hc)).To(Succeed())
	return hc
}

// setFinalizers writes o's finalizers with c, as an earlier capwin wrote
// them.
func setFinalizers(t *testing.T, c client.Client, o client.Object, finalizers ...string) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(env.Client.Get(t.Context(), client.ObjectKeyFromObject(o), o)).To(Succeed())
	o.SetFinalizers(finalizers)
	g.Expect(c.Update(t.Context(), o)).To(Succeed())
}

// TestFinalizersAreDomainQualified: a new HybridCluster and HybridMachine
// get finalizers the API server does not warn about.
func TestFinalizersAreDomainQualified(t *testing.T) {
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	ns, _, warnings := provisionedMachine(t, v, "f1")

	g.Expect(warnings.About(finalizerWarning)).To(BeEmpty())
	g.Expect(getHC(g, ns).Finalizers).To(ConsistOf(infrav1.ClusterFinalizer))
	g.Expect(getHM(g, ns, "f1").Finalizers).To(ConsistOf(infrav1.MachineFinalizer))
}

// TestLegacyFinalizersAreMigrated: objects an earlier capwin gave the
// finalizers without a path get the new names in their place, and keep
// any other writer's finalizer.
func TestLegacyFinalizersAreMigrated(t *testing.T) {
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	ns, stop, _ := provisionedMachine(t, v, "f2")

	// The objects as an earlier capwin left them when it was upgraded.
	stop()
	const other = "example.com/keep"
	old := &apiserver.Warnings{}
	c, err := old.NewClient(env.Config, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	setFinalizers(t, c, getHC(g, ns), legacyClusterFinalizer, other)
	setFinalizers(t, c, getHM(g, ns, "f2"), legacyMachineFinalizer, other)
	g.Expect(old.About(finalizerWarning)).To(ConsistOf(
		ContainSubstring(legacyClusterFinalizer), ContainSubstring(legacyMachineFinalizer)),
		"the API server warns about the legacy names")

	_, warnings := startRecordedControllers(t, ns)
	g.Eventually(func(g Gomega) {
		g.Expect(getHC(g, ns).Finalizers).To(ConsistOf(infrav1.ClusterFinalizer, other))
		g.Expect(getHM(g, ns, "f2").Finalizers).To(ConsistOf(infrav1.MachineFinalizer, other))
	}, eventually).Should(Succeed())
	g.Expect(warnings.About(finalizerWarning)).To(BeEmpty())
}

// TestDeletedBeforeMigration: a HybridMachine and HybridCluster deleted
// while no controller ran, holding only the legacy finalizers, are cleaned
// up (the VM is deleted) and let go.
func TestDeletedBeforeMigration(t *testing.T) {
	g := NewWithT(t)
	v := vspheresim.StartT(t)
	ns, stop, _ := provisionedMachine(t, v, "f3")
	g.Expect(vmsOf(t, v, ns, "f3")["f3"]).To(Equal(1))

	stop()
	setFinalizers(t, env.Client, getHC(g, ns), legacyClusterFinalizer)
	setFinalizers(t, env.Client, getHM(g, ns, "f3"), legacyMachineFinalizer)
	g.Expect(env.Client.Delete(t.Context(), getHM(g, ns, "f3"))).To(Succeed())
	g.Expect(env.Client.Delete(t.Context(), getHC(g, ns))).To(Succeed())

	startRecordedControllers(t, ns)
	g.Eventually(func(g Gomega) {
		err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "f3"}, &infrav1.HybridMachine{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the HybridMachine is let go")
		err = env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "win1"}, &infrav1.HybridCluster{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the HybridCluster is let go")
	}, eventually).Should(Succeed())
	g.Expect(vmsOf(t, v, ns, "f3")["f3"]).To(BeZero(), "the VM is deleted")
}
