package controllers

import (
	"context"
	"errors"
	"fmt"

	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/finalizers"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/paused"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

// HybridClusterReconciler checks that a HybridCluster's platform can be used
// and marks its infrastructure provisioned.
type HybridClusterReconciler struct {
	Client client.Client
	// Platforms gives each HybridCluster its platform.
	Platforms platform.Factory
}

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=hybridclusters;hybridclusters/status;hybridclusters/finalizers,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=hybridclusteridentities,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// SetupWithManager registers the reconciler.
func (r *HybridClusterReconciler) SetupWithManager(mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil || r.Platforms == nil {
		return errors.New("the HybridCluster reconciler needs a Client and Platforms")
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&infrav1.HybridCluster{}).
		WithOptions(options).
		Complete(r)
}

// Reconcile follows Cluster API's order: object, owner, finalizer, patch
// helper, paused, deferred status patch, then delete or normal.
func (r *HybridClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	hc := &infrav1.HybridCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, hc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cluster, err := util.GetOwnerCluster(ctx, r.Client, hc.ObjectMeta)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("getting the owner Cluster: %w", err)
	}
	if cluster == nil {
		ctrl.LoggerFrom(ctx).V(2).Info("Waiting for a Cluster to own the HybridCluster")
		return ctrl.Result{}, nil
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("Cluster", klog.KObj(cluster)))

	if added, err := finalizers.EnsureFinalizer(ctx, r.Client, hc, infrav1.ClusterFinalizer); err != nil || added {
		return ctrl.Result{}, err
	}
	helper, err := patch.NewHelper(hc, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	if isPaused, requeue, err := paused.EnsurePausedCondition(ctx, r.Client, cluster, hc); err != nil || isPaused || requeue {
		return ctrl.Result{}, err
	}
	defer func() {
		_ = conditions.SetSummaryCondition(hc, hc, infrav1.HybridClusterReadyCondition,
			conditions.ForConditionTypes{infrav1.HybridClusterPlatformAvailableCondition})
		if err := helper.Patch(ctx, hc, patch.WithOwnedConditions{Conditions: []string{
			clusterv1.PausedCondition, infrav1.HybridClusterReadyCondition, infrav1.HybridClusterPlatformAvailableCondition,
		}}); err != nil {
			retErr = kerrors.NewAggregate([]error{retErr, err})
		}
	}()

	if !hc.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, hc, cluster)
	}
	return r.reconcileNormal(ctx, hc)
}

// reconcileNormal marks the infrastructure provisioned once the platform
// answers and machines can be made.
func (r *HybridClusterReconciler) reconcileNormal(ctx context.Context, hc *infrav1.HybridCluster) (ctrl.Result, error) {
	p, err := r.Platforms.For(ctx, hc)
	if err == nil {
		err = p.CheckCluster(ctx)
	}
	o := clusterErrorOutcome(err)
	if o.condition != nil {
		setPlatformAvailable(hc, *o.condition)
	}
	if err == nil {
		hc.Status.Initialization.Provisioned = ptr.To(true)
	}
	return o.result, o.err
}

// reconcileDelete keeps the HybridCluster, and so the credentials its
// machines' VMs are deleted with, until the last HybridMachine is gone.
func (r *HybridClusterReconciler) reconcileDelete(ctx context.Context, hc *infrav1.HybridCluster, cluster *clusterv1.Cluster) (ctrl.Result, error) {
	machines := &infrav1.HybridMachineList{}
	if err := r.Client.List(ctx, machines, client.InNamespace(hc.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster.Name}); err != nil {
		return ctrl.Result{}, err
	}
	if n := len(machines.Items); n > 0 {
		setPlatformAvailable(hc, waitingForMachines(n))
		return ctrl.Result{RequeueAfter: operationPoll}, nil
	}
	controllerutil.RemoveFinalizer(hc, infrav1.ClusterFinalizer)
	return ctrl.Result{}, nil
}
