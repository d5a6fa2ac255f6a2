package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	"github.com/capwin/capwin/platform/vsphere"
)

// platformRetry is how soon an unreachable or misconfigured platform is tried
// again: often enough to notice a fix, seldom enough never to storm vCenter.
const platformRetry = 30 * time.Second

// HybridClusterReconciler checks that a HybridCluster's platform can be used
// and marks its infrastructure provisioned.
type HybridClusterReconciler struct {
	Client   client.Client
	Sessions *vsphere.Sessions
	// ControllerNamespace holds the Secrets of HybridClusterIdentities.
	ControllerNamespace string
}

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=hybridclusters;hybridclusters/status;hybridclusters/finalizers,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=hybridclusteridentities,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// SetupWithManager registers the reconciler.
func (r *HybridClusterReconciler) SetupWithManager(mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil || r.Sessions == nil {
		return errors.New("the HybridCluster reconciler needs a Client and Sessions")
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

func (r *HybridClusterReconciler) reconcileNormal(ctx context.Context, hc *infrav1.HybridCluster) (ctrl.Result, error) {
	if hc.Spec.VSphere == nil {
		setPlatformCondition(hc, metav1.ConditionFalse, infrav1.HybridClusterPlatformNotSupportedReason,
			"This build of capwin has no Azure controller yet; spec.azure is accepted but not acted on")
		return ctrl.Result{}, nil
	}
	creds, err := vsphereCredentials(ctx, r.Client, r.ControllerNamespace, hc)
	if err != nil {
		switch {
		case errors.Is(err, errNotAllowed):
			setPlatformCondition(hc, metav1.ConditionFalse, infrav1.HybridClusterIdentityNotAllowedReason, err.Error())
		case errors.Is(err, errCredentials):
			setPlatformCondition(hc, metav1.ConditionFalse, infrav1.HybridClusterCredentialsNotFoundReason, err.Error())
		default:
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: platformRetry}, nil
	}
	s, err := r.Sessions.Get(ctx, creds)
	if err != nil {
		reason := infrav1.HybridClusterUnreachableReason
		if errors.Is(err, vsphere.ErrLogin) {
			reason = infrav1.HybridClusterBadCredentialsReason
		}
		setPlatformCondition(hc, metav1.ConditionFalse, reason, err.Error())
		return ctrl.Result{RequeueAfter: platformRetry}, nil
	}
	if err := s.CheckDatacenter(ctx, hc.Spec.VSphere.Datacenter); err != nil {
		if errors.Is(err, vsphere.ErrNotFound) {
			setPlatformCondition(hc, metav1.ConditionFalse, infrav1.HybridClusterDatacenterNotFoundReason,
				fmt.Sprintf("Datacenter %s does not exist on %s", hc.Spec.VSphere.Datacenter, hc.Spec.VSphere.Server))
			return ctrl.Result{RequeueAfter: platformRetry}, nil
		}
		if r.Sessions.Stale(err, s) {
			return ctrl.Result{RequeueAfter: time.Second}, nil // log in again
		}
		if errors.Is(err, vsphere.ErrTimeout) {
			setPlatformCondition(hc, metav1.ConditionFalse, infrav1.HybridClusterUnreachableReason, err.Error())
			return ctrl.Result{RequeueAfter: platformRetry}, nil
		}
		return ctrl.Result{}, err
	}
	setPlatformCondition(hc, metav1.ConditionTrue, infrav1.HybridClusterPlatformAvailableReason, "")
	hc.Status.Initialization.Provisioned = ptr.To(true)
	return ctrl.Result{}, nil
}

// reconcileDelete keeps the HybridCluster, and so the credentials its
// machines' VMs are deleted with, until the last HybridMachine is gone.
func (r *HybridClusterReconciler) reconcileDelete(ctx context.Context, hc *infrav1.HybridCluster, cluster *clusterv1.Cluster) (ctrl.Result, error) {
	machines := &infrav1.HybridMachineList{}
	if err := r.Client.List(ctx, machines, client.InNamespace(hc.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster.Name}); err != nil {
		return ctrl.Result{}, err
	}
	if n := len(machines.Items); n > 0 {
		setPlatformCondition(hc, metav1.ConditionFalse, infrav1.HybridClusterDeletingReason,
			fmt.Sprintf("Waiting for %d HybridMachines to delete their VMs", n))
		return ctrl.Result{RequeueAfter: taskPoll}, nil
	}
	controllerutil.RemoveFinalizer(hc, infrav1.ClusterFinalizer)
	return ctrl.Result{}, nil
}

func setPlatformCondition(hc *infrav1.HybridCluster, status metav1.ConditionStatus, reason, message string) {
	conditions.Set(hc, metav1.Condition{
		Type: infrav1.HybridClusterPlatformAvailableCondition, Status: status, Reason: reason, Message: message,
	})
}
