package reconciler

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	"github.com/capwin/capwin/node-components/report"
)

// fieldOwner is the server-side apply field manager of what the
// reconciler writes in the workload cluster.
const fieldOwner = client.FieldOwner("capwin-bootstrap")

// ensureProgressAccess makes, in the workload cluster, what a joining node
// needs to report its progress (docs/node-agent.md, "Progress"): the
// namespace report.ConfigMapNamespace, the ConfigMap named after the
// Machine (the node patches its "progress" key), and a Role and
// RoleBinding named alike that let the token group
// report.TokenGroup(machine) get and patch that one ConfigMap.
//
// Everything is server-side applied: an object that is right is left as
// it is, one that is not is fixed, and nothing is read through the
// ClusterCache's cache (which would watch every Role and RoleBinding of
// the workload cluster). The ConfigMap's data is not the reconciler's:
// applying its labels never touches what the node wrote.
func ensureProgressAccess(ctx context.Context, c client.Client, cluster, machine string) error {
	labels := map[string]string{clusterv1.ClusterNameLabel: cluster, bootstrapv1.MachineLabel: machine}
	ns := report.ConfigMapNamespace
	if err := c.Apply(ctx, corev1ac.Namespace(ns), fieldOwner, client.ForceOwnership); err != nil {
		return fmt.Errorf("applying Namespace %s: %w", ns, err)
	}
	if err := c.Apply(ctx, corev1ac.ConfigMap(machine, ns).WithLabels(labels), fieldOwner, client.ForceOwnership); err != nil {
		return fmt.Errorf("applying ConfigMap %s/%s: %w", ns, machine, err)
	}
	role := rbacv1ac.Role(machine, ns).WithLabels(labels).WithRules(rbacv1ac.PolicyRule().
		WithAPIGroups("").WithResources("configmaps").WithResourceNames(machine).WithVerbs("get", "patch"))
	if err := c.Apply(ctx, role, fieldOwner, client.ForceOwnership); err != nil {
		return fmt.Errorf("applying Role %s/%s: %w", ns, machine, err)
	}
	return applyProgressRoleBinding(ctx, c, machine, labels)
}

// applyProgressRoleBinding binds the Role to the Machine's token group. A
// RoleBinding's roleRef cannot change: one that refers to another role is
// deleted and made again.
func applyProgressRoleBinding(ctx context.Context, c client.Client, machine string, labels map[string]string) error {
	ns := report.ConfigMapNamespace
	rb := rbacv1ac.RoleBinding(machine, ns).WithLabels(labels).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(machine)).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.GroupKind).WithAPIGroup(rbacv1.GroupName).WithName(report.TokenGroup(machine)))
	err := c.Apply(ctx, rb, fieldOwner, client.ForceOwnership)
	if apierrors.IsInvalid(err) {
		old := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: machine, Namespace: ns}}
		if err := c.Delete(ctx, old); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting RoleBinding %s/%s to bind it to Role %s again: %w", ns, machine, machine, err)
		}
		err = c.Apply(ctx, rb, fieldOwner, client.ForceOwnership)
	}
	if err != nil {
		return fmt.Errorf("applying RoleBinding %s/%s: %w", ns, machine, err)
	}
	return nil
}

// deleteProgressAccess deletes the Machine's progress ConfigMap, Role and
// RoleBinding; what is gone already is fine. The namespace stays: other
// nodes' objects live there.
func deleteProgressAccess(ctx context.Context, c client.Client, machine string) error {
	meta := metav1.ObjectMeta{Name: machine, Namespace: report.ConfigMapNamespace}
	for _, o := range []struct {
		kind string
		obj  client.Object
	}{
		{"RoleBinding", &rbacv1.RoleBinding{ObjectMeta: meta}},
		{"Role", &rbacv1.Role{ObjectMeta: meta}},
		{"ConfigMap", &corev1.ConfigMap{ObjectMeta: meta}},
	} {
		if err := c.Delete(ctx, o.obj); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s %s/%s: %w", o.kind, meta.Namespace, meta.Name, err)
		}
	}
	return nil
}
