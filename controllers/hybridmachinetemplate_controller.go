package controllers

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

// HybridMachineTemplateReconciler publishes in a template's status what one
// of its machines offers, for the cluster autoscaler's scale from zero.
type HybridMachineTemplateReconciler struct {
	Client client.Client
}

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=hybridmachinetemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=hybridmachinetemplates/status,verbs=get;update;patch

// SetupWithManager registers the reconciler.
func (r *HybridMachineTemplateReconciler) SetupWithManager(mgr ctrl.Manager, options controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&infrav1.HybridMachineTemplate{}).
		WithOptions(options).
		Complete(r)
}

// Reconcile sets status.capacity and status.nodeInfo from the template's spec.
func (r *HybridMachineTemplateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	t := &infrav1.HybridMachineTemplate{}
	if err := r.Client.Get(ctx, req.NamespacedName, t); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	capacity, nodeInfo := TemplateCapacity(&t.Spec.Template.Spec)
	if equality.Semantic.DeepEqual(t.Status.Capacity, capacity) && t.Status.NodeInfo == nodeInfo {
		return ctrl.Result{}, nil
	}
	base := t.DeepCopy()
	t.Status.Capacity, t.Status.NodeInfo = capacity, nodeInfo
	if err := r.Client.Status().Patch(ctx, t, client.MergeFrom(base)); err != nil {
		return ctrl.Result{}, fmt.Errorf("patching the status of HybridMachineTemplate %s: %w", req.Name, err)
	}
	return ctrl.Result{}, nil
}

// TemplateCapacity is what a machine of spec offers. A vSphere machine's CPU
// and memory are in its spec; an Azure VM size's are not known without the
// SKU catalogue, so only nodeInfo is set for it.
func TemplateCapacity(spec *infrav1.HybridMachineSpec) (corev1.ResourceList, infrav1.NodeInfo) {
	info := infrav1.NodeInfo{Architecture: "amd64", OperatingSystem: strings.ToLower(string(spec.OS.Type))}
	if v := spec.VSphere; v != nil && v.NumCPUs > 0 && v.MemoryMiB > 0 {
		return corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(int64(v.NumCPUs), resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(v.MemoryMiB*1024*1024, resource.BinarySI),
		}, info
	}
	return nil, info
}
