package reconciler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	"github.com/capwin/capwin/node-components/report"
)

// TestTokenOfUnwrittenDataIsDeleted: when the data Secret cannot be
// written after the node's bootstrap token was created, the token is
// deleted, on every failed try; once the Secret can be written, the
// workload cluster holds the one token it names and no other for the
// node.
func TestTokenOfUnwrittenDataIsDeleted(t *testing.T) {
	for _, tc := range []struct {
		name string
		// block makes writing the world's data Secret fail, and returns
		// what lets it succeed again.
		block func(t *testing.T, w *world) (unblock func())
	}{
		{"an admission policy denies it", denyBootstrapData},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld(t, bootstrapv1.WindowsKubeadmConfigSpec{}, false, uniqueMachine)
			unblock := tc.block(t, w)
			w.setClusterStatus(t, true)

			// Each try makes a token, then fails to write the data.
			g.Eventually(func() int { return failedWrites(w.ns) }, eventually).Should(BeNumerically(">=", 2))
			g.Expect(logs.String()).NotTo(ContainSubstring("Failed to delete a bootstrap token"))

			unblock()
			var id string
			g.Eventually(func(g Gomega) {
				w.poke(t)
				s := w.dataSecret(g)
				g.Expect(metav1.IsControlledBy(s, w.getConfig(g))).To(BeTrue())
				id = s.Annotations[bootstrapv1.TokenIDAnnotation]
				g.Expect(id).NotTo(BeEmpty())
			}, eventually, 500*time.Millisecond).Should(Succeed())
			g.Expect(tokensOf(g, report.TokenGroup(w.machine.Name))).To(ConsistOf(id),
				"the workload cluster holds only the token the data Secret names")
			secretHalf := strings.Split(nodeConfig(g, w.dataSecret(g)).Join.Token, ".")[1]
			g.Expect(strings.Contains(logs.String(), secretHalf)).To(BeFalse(), "the log shows the token's secret")
		})
	}
}

// TestDataSecretOfAnotherControllerIsNotTaken: a Secret of the config's
// name that another object controls is neither reported as the config's
// data (Cluster API would hand it to a VM) nor written over, and no token
// is made for it; the condition names it. Once it is gone, the config's
// own data is written.
func TestDataSecretOfAnotherControllerIsNotTaken(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, bootstrapv1.WindowsKubeadmConfigSpec{}, false, uniqueMachine)
	unblock := takeDataSecretName(t, w)
	w.setClusterStatus(t, true)
	g.Eventually(func(g Gomega) {
		w.poke(t)
		c := w.getConfig(g)
		cond := conditions.Get(c, bootstrapv1.WindowsKubeadmConfigDataSecretAvailableCondition)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(bootstrapv1.WindowsKubeadmConfigDataSecretConflictReason))
		g.Expect(cond.Message).To(ContainSubstring("is controlled by KubeadmConfig"))
	}, eventually, 500*time.Millisecond).Should(Succeed())
	c := w.getConfig(g)
	g.Expect(c.Status.DataSecretName).To(BeEmpty())
	g.Expect(ptr.Deref(c.Status.Initialization.DataSecretCreated, false)).To(BeFalse())
	g.Expect(tokensOf(g, report.TokenGroup(w.machine.Name))).To(BeEmpty(), "a token was made for a Secret that is not the config's")

	// The config's own data needs a token in the workload cluster.
	w.connected(t)
	unblock()
	g.Eventually(func(g Gomega) {
		w.poke(t)
		g.Expect(metav1.IsControlledBy(w.dataSecret(g), w.getConfig(g))).To(BeTrue())
	}, eventually, 500*time.Millisecond).Should(Succeed())
}

// TestUncontrolledSecretNotWrittenByCapwinIsNotTaken: a Secret of the
// config's name that nothing controls and that capwin did not write (no
// bootstrap data type and token annotation) is not adopted as the config's
// data; the condition says why. Once it is gone, the config's own data is
// written.
func TestUncontrolledSecretNotWrittenByCapwinIsNotTaken(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, bootstrapv1.WindowsKubeadmConfigSpec{}, false, uniqueMachine)
	foreign := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: w.config.Name},
		Data:       map[string][]byte{"value": []byte("someone's")},
	}
	g.Expect(mgmt.Client.Create(t.Context(), foreign)).To(Succeed())
	w.setClusterStatus(t, true)
	g.Eventually(func(g Gomega) {
		w.poke(t)
		cond := conditions.Get(w.getConfig(g), bootstrapv1.WindowsKubeadmConfigDataSecretAvailableCondition)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(bootstrapv1.WindowsKubeadmConfigDataSecretConflictReason))
		g.Expect(cond.Message).To(ContainSubstring("was not written by capwin"))
	}, eventually, 500*time.Millisecond).Should(Succeed())
	g.Expect(w.getConfig(g).Status.DataSecretName).To(BeEmpty())
	g.Expect(metav1.GetControllerOf(w.dataSecret(g))).To(BeNil(), "the foreign Secret was adopted")
	g.Expect(tokensOf(g, report.TokenGroup(w.machine.Name))).To(BeEmpty(), "a token was made for a Secret that is not the config's")

	// The config's own data needs a token in the workload cluster.
	w.connected(t)
	g.Expect(mgmt.Client.Delete(t.Context(), foreign)).To(Succeed())
	g.Eventually(func(g Gomega) {
		w.poke(t)
		g.Expect(metav1.IsControlledBy(w.dataSecret(g), w.getConfig(g))).To(BeTrue())
	}, eventually, 500*time.Millisecond).Should(Succeed())
}

// failedWrites counts the reconciles of namespace ns's config that failed
// to write the data Secret.
func failedWrites(ns string) int {
	n := 0
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "writing the bootstrap data Secret") && strings.Contains(line, `"`+ns+`"`) {
			n++
		}
	}
	return n
}

// tokensOf returns the IDs of the workload cluster's bootstrap tokens that
// carry group among their extra groups.
func tokensOf(g Gomega, group string) []string {
	list := &corev1.SecretList{}
	g.Expect(workload.Client.List(context.Background(), list, client.InNamespace(metav1.NamespaceSystem))).To(Succeed())
	var ids []string
	for _, s := range list.Items {
		if s.Type != bootstrapapi.SecretTypeBootstrapToken {
			continue
		}
		for _, gr := range strings.Split(string(s.Data[bootstrapapi.BootstrapTokenExtraGroupsKey]), ",") {
			if gr == group {
				ids = append(ids, string(s.Data[bootstrapapi.BootstrapTokenIDKey]))
			}
		}
	}
	return ids
}

// denyBootstrapData makes the management cluster refuse bootstrap data
// Secrets in the world's namespace, as an admission policy of the
// platform team might: a ValidatingAdmissionPolicy, which the API server
// itself enforces. It waits until the policy is in force.
func denyBootstrapData(t *testing.T, w *world) func() {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	name := "deny-bootstrap-data-" + w.ns
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets"}},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: `object.type != "` + string(clusterv1.ClusterSecretType) + `"`,
				Message:    "bootstrap data is not allowed in this namespace",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: w.ns},
			}},
		},
	}
	g.Expect(mgmt.Client.Create(ctx, policy)).To(Succeed())
	g.Expect(mgmt.Client.Create(ctx, binding)).To(Succeed())
	unblock := func() {
		g.Expect(client.IgnoreNotFound(mgmt.Client.Delete(context.Background(), binding))).To(Succeed())
		g.Expect(client.IgnoreNotFound(mgmt.Client.Delete(context.Background(), policy))).To(Succeed())
	}
	t.Cleanup(unblock)

	probe := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "probe"}, Type: clusterv1.ClusterSecretType}
	g.Eventually(func() error {
		return mgmt.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll)
	}, eventually).Should(MatchError(ContainSubstring("bootstrap data is not allowed")))
	return unblock
}

// takeDataSecretName puts a Secret of the data Secret's name in the
// world's namespace, controlled by another object: the data of a
// KubeadmConfig of the same name, say, left from the Machine's former
// bootstrap provider.
func takeDataSecretName(t *testing.T, w *world) func() {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	other := &unstructured.Unstructured{}
	other.SetAPIVersion("bootstrap.cluster.x-k8s.io/v1beta2")
	other.SetKind("KubeadmConfig")
	other.SetNamespace(w.ns)
	other.SetName(w.config.Name)
	g.Expect(mgmt.Client.Create(ctx, other)).To(Succeed())
	taken := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: w.config.Name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: other.GetAPIVersion(), Kind: other.GetKind(), Name: other.GetName(), UID: other.GetUID(), Controller: ptr.To(true),
		}}},
		Type: clusterv1.ClusterSecretType,
		Data: map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("cloud-config")},
	}
	g.Expect(mgmt.Client.Create(ctx, taken)).To(Succeed())
	return func() {
		g.Expect(mgmt.Client.Delete(context.Background(), taken)).To(Succeed())
	}
}

// TestDeletedConfigLeavesAnothersToken: a config whose name another
// object's Secret holds, naming a bootstrap token, is deleted while the
// workload cluster is reachable: the token is not the config's to revoke,
// and stays.
func TestDeletedConfigLeavesAnothersToken(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	w := newWorld(t, bootstrapv1.WindowsKubeadmConfigSpec{}, false, uniqueMachine)
	id := "z" + w.ns[len(w.ns)-5:]
	token := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "bootstrap-token-" + id},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		StringData: map[string]string{
			bootstrapapi.BootstrapTokenIDKey: id, bootstrapapi.BootstrapTokenSecretKey: "0123456789abcdef",
			bootstrapapi.BootstrapTokenUsageAuthentication: "true",
		},
	}
	g.Expect(workload.Client.Create(ctx, token)).To(Succeed())
	t.Cleanup(func() { _ = workload.Client.Delete(context.Background(), token) })
	takeDataSecretName(t, w)
	taken := w.dataSecret(g)
	taken.Annotations = map[string]string{bootstrapv1.TokenIDAnnotation: id}
	g.Expect(mgmt.Client.Update(ctx, taken)).To(Succeed())
	w.setClusterStatus(t, true)
	g.Eventually(func(g Gomega) {
		w.poke(t)
		c := w.getConfig(g)
		g.Expect(c.Finalizers).To(ContainElement(bootstrapv1.ConfigFinalizer))
		g.Expect(condition(g, c, bootstrapv1.WindowsKubeadmConfigDataSecretAvailableCondition).Reason).To(Equal(bootstrapv1.WindowsKubeadmConfigDataSecretConflictReason))
		_, err := clusterCache.GetClient(ctx, client.ObjectKeyFromObject(w.cluster))
		g.Expect(err).NotTo(HaveOccurred(), "the workload cluster is reachable, so a token could be revoked")
		g.Expect(managerCache.Get(ctx, client.ObjectKeyFromObject(taken), &corev1.Secret{})).To(Succeed())
	}, eventually, 500*time.Millisecond).Should(Succeed())

	g.Expect(mgmt.Client.Delete(ctx, w.config)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(w.config), &bootstrapv1.WindowsKubeadmConfig{}))
	}, eventually).Should(BeTrue(), "the config is let go")
	g.Expect(workload.Client.Get(ctx, client.ObjectKeyFromObject(token), &corev1.Secret{})).To(Succeed(), "another's bootstrap token was revoked")
}
