package sim

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// collectedKinds are the management cluster's kinds whose objects the
// garbage collector deletes once their owners are gone: those a cluster of
// capwin is made of.
var collectedKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "Secret"},
	{Version: "v1", Kind: "ConfigMap"},
	{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "MachineSet"},
	{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Machine"},
	{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "MachineHealthCheck"},
	{Group: "addons.cluster.x-k8s.io", Version: "v1beta2", Kind: "ClusterResourceSetBinding"},
	{Group: "infrastructure.cluster.x-k8s.io", Version: "v1alpha1", Kind: "HybridMachine"},
	{Group: "infrastructure.cluster.x-k8s.io", Version: "v1alpha1", Kind: "HybridMachineTemplate"},
	{Group: "bootstrap.cluster.x-k8s.io", Version: "v1alpha1", Kind: "WindowsKubeadmConfig"},
	{Group: "bootstrap.cluster.x-k8s.io", Version: "v1alpha1", Kind: "WindowsKubeadmConfigTemplate"},
	{Group: "bootstrap.cluster.x-k8s.io", Version: "v1beta2", Kind: "KubeadmConfigTemplate"},
}

// collectGarbage plays kube-controller-manager's garbage collector, which
// envtest does not run: an object whose owners are all gone is deleted
// (background propagation), as the bootstrap data Secret owned by its
// WindowsKubeadmConfig is in a real management cluster.
func collectGarbage(ctx context.Context, c client.Client, log logr.Logger) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, gvk := range collectedKinds {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := c.List(ctx, l); err != nil {
				continue
			}
			for i := range l.Items {
				o := &l.Items[i]
				if len(o.GetOwnerReferences()) == 0 || o.GetDeletionTimestamp() != nil || ownerExists(ctx, c, o) {
					continue
				}
				bg := metav1.DeletePropagationBackground
				if err := c.Delete(ctx, o, &client.DeleteOptions{PropagationPolicy: &bg}); client.IgnoreNotFound(err) == nil {
					log.V(2).Info("Collected an object whose owners are gone", "kind", gvk.Kind, "namespace", o.GetNamespace(), "name", o.GetName())
				}
			}
		}
	}
}

// ownerExists is whether any owner of o still exists with the UID o names.
// When an owner cannot be looked up the object is kept.
func ownerExists(ctx context.Context, c client.Client, o *unstructured.Unstructured) bool {
	for _, ref := range o.GetOwnerReferences() {
		owner := &unstructured.Unstructured{}
		owner.SetAPIVersion(ref.APIVersion)
		owner.SetKind(ref.Kind)
		err := c.Get(ctx, client.ObjectKey{Namespace: o.GetNamespace(), Name: ref.Name}, owner)
		if client.IgnoreNotFound(err) != nil {
			return true
		}
		if err == nil && owner.GetUID() == ref.UID {
			return true
		}
	}
	return false
}
