package reconciler_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/node-components/report"
)

// uniqueMachine names the world's Machine after its namespace: every world
// shares one workload API server, where the progress objects are named
// after the Machine.
func uniqueMachine(w *world) { w.machine.Name = w.ns + "-md-0" }

func progressKey(machine string) client.ObjectKey {
	return client.ObjectKey{Namespace: report.ConfigMapNamespace, Name: machine}
}

// expectProgressAccess checks the workload cluster's objects for machine:
// the ConfigMap, and a Role and RoleBinding that let exactly its token group
// get and patch exactly it.
func expectProgressAccess(g Gomega, machine string) {
	ctx := context.Background()
	g.Expect(workload.Client.Get(ctx, client.ObjectKey{Name: report.ConfigMapNamespace}, &corev1.Namespace{})).To(Succeed())
	labels := map[string]string{clusterv1.ClusterNameLabel: "win1", bootstrapv1.MachineLabel: machine}
	cm := &corev1.ConfigMap{}
	g.Expect(workload.Client.Get(ctx, progressKey(machine), cm)).To(Succeed())
	g.Expect(cm.Labels).To(Equal(labels))
	role := &rbacv1.Role{}
	g.Expect(workload.Client.Get(ctx, progressKey(machine), role)).To(Succeed())
	g.Expect(role.Labels).To(Equal(labels))
	g.Expect(role.Rules).To(Equal([]rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{machine}, Verbs: []string{"get", "patch"},
	}}))
	rb := &rbacv1.RoleBinding{}
	g.Expect(workload.Client.Get(ctx, progressKey(machine), rb)).To(Succeed())
	g.Expect(rb.Labels).To(Equal(labels))
	g.Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: machine}))
	g.Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: report.TokenGroup(machine)}}))
}

// expectTokenGroups checks that the token in the data Secret carries
// kubeadm's group and the Machine's progress group, and returns its ID.
func expectTokenGroups(g Gomega, w *world) string {
	s := w.dataSecret(g)
	cfg := nodeConfig(g, s)
	g.Expect(cfg.Join.ProgressConfigMap).To(Equal(w.machine.Name))
	id := strings.Split(cfg.Join.Token, ".")[0]
	g.Expect(s.Annotations).To(HaveKeyWithValue(bootstrapv1.TokenIDAnnotation, id))
	groups := strings.Split(string(workloadToken(g, id).Data[bootstrapapi.BootstrapTokenExtraGroupsKey]), ",")
	g.Expect(groups).To(ConsistOf("system:bootstrappers:kubeadm:default-node-token", report.TokenGroup(w.machine.Name)))
	return id
}

// TestNodeMayReportItsProgress: before the token, the reconciler makes the
// node's progress ConfigMap, Role and RoleBinding in the workload cluster;
// the token carries the group they grant, and the payload names the
// ConfigMap. A replacement token carries the group too, objects changed by
// hand are set right (what the node wrote stays), and deleting the config
// deletes them.
func TestNodeMayReportItsProgress(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	w := newWorld(t, bootstrapv1.WindowsKubeadmConfigSpec{}, true, uniqueMachine)
	machine := w.machine.Name
	var id string
	g.Eventually(func(g Gomega) {
		id = expectTokenGroups(g, w)
	}, eventually).Should(Succeed())
	expectProgressAccess(g, machine)
	cm := &corev1.ConfigMap{}
	g.Expect(workload.Client.Get(ctx, progressKey(machine), cm)).To(Succeed())
	g.Expect(cm.Data).NotTo(HaveKey(report.ConfigMapKey), "the node writes the progress, not the provider")

	// The node reports; someone widens the Role and rebinds the RoleBinding
	// to another group; the token goes missing.
	cm.Data = map[string]string{report.ConfigMapKey: `{"phase":"preflight","state":"Running"}`}
	g.Expect(workload.Client.Update(ctx, cm)).To(Succeed())
	role := &rbacv1.Role{}
	g.Expect(workload.Client.Get(ctx, progressKey(machine), role)).To(Succeed())
	role.Rules[0].Verbs = append(role.Rules[0].Verbs, "delete")
	role.Rules[0].ResourceNames = nil
	g.Expect(workload.Client.Update(ctx, role)).To(Succeed())
	rb := &rbacv1.RoleBinding{}
	g.Expect(workload.Client.Get(ctx, progressKey(machine), rb)).To(Succeed())
	rb.Subjects[0].Name = "system:bootstrappers:kubeadm:default-node-token"
	g.Expect(workload.Client.Update(ctx, rb)).To(Succeed())
	g.Expect(workload.Client.Delete(ctx, workloadToken(g, id))).To(Succeed())
	w.poke(t)
	g.Eventually(func(g Gomega) {
		g.Expect(expectTokenGroups(g, w)).NotTo(Equal(id))
		expectProgressAccess(g, machine)
	}, eventually).Should(Succeed())
	g.Expect(workload.Client.Get(ctx, progressKey(machine), cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKey(report.ConfigMapKey), "the node's report survives")

	g.Expect(mgmt.Client.Delete(ctx, w.getConfig(g))).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, o := range []client.Object{&corev1.ConfigMap{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}} {
			err := workload.Client.Get(ctx, progressKey(machine), o)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T: %v", o, err)
		}
	}, eventually).Should(Succeed())
	// Deleting again finds nothing to delete and is fine: the namespace,
	// which other nodes share, stays.
	g.Expect(workload.Client.Get(ctx, client.ObjectKey{Name: report.ConfigMapNamespace}, &corev1.Namespace{})).To(Succeed())
}

// TestMachineNameTooLongForItsGroup: a Machine name over 248 characters
// would make a token group the API server refuses; the config says so and
// no token is made.
func TestMachineNameTooLongForItsGroup(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, bootstrapv1.WindowsKubeadmConfigSpec{}, true, func(w *world) {
		w.machine.Name = strings.Repeat("m", nodeconfig.MaxProgressConfigMap+1)
	})
	g.Eventually(func(g Gomega) {
		cond := condition(g, w.getConfig(g), bootstrapv1.WindowsKubeadmConfigDataSecretAvailableCondition)
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cond.Reason).To(Equal(bootstrapv1.WindowsKubeadmConfigInvalidReason))
		g.Expect(cond.Message).To(And(ContainSubstring("at most 248 characters"), ContainSubstring("progress ConfigMap")))
	}, eventually).Should(Succeed())
	err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: w.ns, Name: w.config.Name}, &corev1.Secret{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no bootstrap data")
	err = workload.Client.Get(t.Context(), progressKey(w.machine.Name), &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no progress ConfigMap")
}
