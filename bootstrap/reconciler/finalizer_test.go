package reconciler_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
)

// legacyFinalizer is the finalizer's name before it had a path, as configs
// written by an earlier capwin carry it.
const legacyFinalizer = "windowskubeadmconfig.bootstrap.cluster.x-k8s.io"

// TestFinalizerIsDomainQualified: a new config gets a finalizer the API
// server does not warn about. The reconciler's client has heard no such
// warning for any config of these tests.
func TestFinalizerIsDomainQualified(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, bootstrapv1.WindowsKubeadmConfigSpec{}, true)
	g.Eventually(func(g Gomega) {
		g.Expect(w.getConfig(g).Status.DataSecretName).To(Equal(w.config.Name))
	}, eventually).Should(Succeed())
	g.Expect(warnings.About("metadata.finalizers")).To(BeEmpty())
	g.Expect(w.getConfig(g).Finalizers).To(ConsistOf(bootstrapv1.ConfigFinalizer))
}

// TestLegacyFinalizerIsMigrated: a config an earlier capwin gave the
// finalizer without a path gets the new name in its place, keeps any other
// writer's finalizer, and is reconciled on.
func TestLegacyFinalizerIsMigrated(t *testing.T) {
	g := NewWithT(t)
	const other = "example.com/keep"
	w := newWorld(t, bootstrapv1.WindowsKubeadmConfigSpec{}, true, func(w *world) {
		w.config.Finalizers = []string{legacyFinalizer, other}
	})
	g.Eventually(func(g Gomega) {
		c := w.getConfig(g)
		g.Expect(c.Finalizers).To(ConsistOf(bootstrapv1.ConfigFinalizer, other))
		g.Expect(c.Status.DataSecretName).To(Equal(w.config.Name))
	}, eventually).Should(Succeed())
}

// TestDeletedBeforeMigrationRevokesToken: a config deleted while no
// reconciler looked at it, holding only the legacy finalizer, has its
// bootstrap token revoked and is let go.
func TestDeletedBeforeMigrationRevokesToken(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, bootstrapv1.WindowsKubeadmConfigSpec{}, true)
	id := w.tokenID(g)
	workloadToken(g, id)

	// The reconciler of this package's tests runs throughout; it waits on
	// a config no Machine owns, as it would not look at all while it was
	// down for an upgrade. So the config loses its owner while it is
	// given the legacy finalizer and deleted, and gets it back after.
	c := w.getConfig(g)
	owners := c.OwnerReferences
	before := c.DeepCopy()
	c.OwnerReferences = nil
	c.Finalizers = []string{legacyFinalizer}
	g.Expect(mgmt.Client.Patch(t.Context(), c, client.MergeFrom(before))).To(Succeed())
	g.Expect(mgmt.Client.Delete(t.Context(), c)).To(Succeed())
	c = w.getConfig(g)
	g.Expect(c.DeletionTimestamp.IsZero()).To(BeFalse())
	g.Expect(c.Finalizers).To(ConsistOf(legacyFinalizer))
	before = c.DeepCopy()
	c.OwnerReferences = owners
	g.Expect(mgmt.Client.Patch(t.Context(), c, client.MergeFrom(before))).To(Succeed())

	g.Eventually(func(g Gomega) {
		err := mgmt.Client.Get(t.Context(), client.ObjectKeyFromObject(w.config), &bootstrapv1.WindowsKubeadmConfig{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the config is let go")
		err = workload.Client.Get(t.Context(), client.ObjectKey{Namespace: "kube-system", Name: "bootstrap-token-" + id}, &corev1.Secret{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the bootstrap token is revoked")
	}, eventually).Should(Succeed())
}
