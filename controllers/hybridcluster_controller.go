package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/paused"
	"sigs.k8s.io/cluster-api/util/predicates"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

// HybridClusterReconciler makes what a HybridCluster's machines need on its
// platform (nothing on vSphere; the network and API server load balancer
// on Azure), marks its infrastructure provisioned, and deletes what it
// made once the machines are gone.
type HybridClusterReconciler struct {
	Client client.Client
	// Platforms gives each HybridCluster its platform.
	Platforms platform.Factory
	// OperationPoll is how soon a cluster whose platform operation runs
	// is looked at again; 5 s when zero.
	OperationPoll time.Duration

	// written keeps a reconcile from acting on a copy older than what the
	// last one wrote: one without the operation it recorded would start
	// another, or drop that one's resume token.
	written written
}

func (r *HybridClusterReconciler) operationPoll() time.Duration {
	if r.OperationPoll > 0 {
		return r.OperationPoll
	}
	return operationPoll
}

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=hybridclusters;hybridclusters/status;hybridclusters/finalizers,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=hybridclusteridentities,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// SetupWithManager registers the reconciler.
func (r *HybridClusterReconciler) SetupWithManager(mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil || r.Platforms == nil {
		return errors.New("the HybridCluster reconciler needs a Client and Platforms")
	}
	// A HybridCluster whose Cluster was paused when it was last reconciled
	// (as clusterctl move creates it in the target management cluster)
	// changes no more when the Cluster is unpaused: the Cluster's change
	// wakes it, as Cluster API's contract asks of infrastructure providers.
	ctx := context.Background()
	return ctrl.NewControllerManagedBy(mgr).
		For(&infrav1.HybridCluster{}).
		Watches(&clusterv1.Cluster{},
			handler.EnqueueRequestsFromMapFunc(util.ClusterToInfrastructureMapFunc(ctx, infrav1.GroupVersion.WithKind("HybridCluster"), mgr.GetClient(), &infrav1.HybridCluster{})),
			builder.WithPredicates(predicates.ClusterPausedTransitions(mgr.GetScheme(), mgr.GetLogger().WithName("hybridcluster")))).
		WithOptions(options).
		Complete(r)
}

// Reconcile follows Cluster API's order: object, owner, finalizer, patch
// helper, paused, deferred status patch, then delete or normal.
func (r *HybridClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	hc := &infrav1.HybridCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, hc); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.written.stale(hc) {
		return ctrl.Result{RequeueAfter: staleCacheRetry}, nil
	}
	c := r.written.recording(r.Client)
	cluster, err := util.GetOwnerCluster(ctx, r.Client, hc.ObjectMeta)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("getting the owner Cluster: %w", err)
	}
	if cluster == nil {
		ctrl.LoggerFrom(ctx).V(2).Info("Waiting for a Cluster to own the HybridCluster")
		return ctrl.Result{}, nil
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("Cluster", klog.KObj(cluster)))

	if patched, err := ensureClusterFinalizer(ctx, c, hc); err != nil || patched {
		return ctrl.Result{}, err
	}
	helper, err := patch.NewHelper(hc, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	if isPaused, requeue, err := paused.EnsurePausedCondition(ctx, c, cluster, hc); err != nil || isPaused || requeue {
		return ctrl.Result{}, err
	}
	defer func() {
		_ = conditions.SetSummaryCondition(hc, hc, infrav1.HybridClusterReadyCondition,
			conditions.ForConditionTypes{infrav1.HybridClusterPlatformAvailableCondition, infrav1.HybridClusterInfrastructureProvisionedCondition},
			conditions.IgnoreTypesIfMissing{infrav1.HybridClusterInfrastructureProvisionedCondition})
		if err := helper.Patch(ctx, hc, patch.WithOwnedConditions{Conditions: []string{
			clusterv1.PausedCondition, infrav1.HybridClusterReadyCondition, infrav1.HybridClusterPlatformAvailableCondition,
			infrav1.HybridClusterInfrastructureProvisionedCondition,
		}}); err != nil {
			retErr = kerrors.NewAggregate([]error{retErr, err})
		}
	}()

	if !hc.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, hc, cluster)
	}
	return r.reconcileNormal(ctx, hc)
}

// reconcileNormal drives the cluster's shared infrastructure one step
// towards ready, records an operation still running, sets the control
// plane endpoint the platform made, and marks the infrastructure
// provisioned once machines can be made.
func (r *HybridClusterReconciler) reconcileNormal(ctx context.Context, hc *infrav1.HybridCluster) (ctrl.Result, error) {
	p, err := r.Platforms.For(ctx, hc)
	var st platform.ClusterState
	if err == nil {
		prior := hc.Status.Operation
		st, err = p.EnsureCluster(ctx)
		// Recorded even with an error: a poll Azure did not answer keeps
		// its operation.
		hc.Status.Operation = st.Operation
		logClusterOperation(ctx, prior, st.Operation, err)
	}
	if errors.Is(err, platform.ErrOperationFailed) {
		// The platform answered; what it was asked to make failed, and
		// is asked for again.
		setPlatformAvailable(hc, metav1.Condition{Status: metav1.ConditionTrue, Reason: infrav1.HybridClusterPlatformAvailableReason})
		setInfrastructureProvisioned(hc, notYet(infrav1.HybridClusterOperationFailedReason, err.Error()))
		return ctrl.Result{RequeueAfter: platform.RetryAfter(err)}, nil
	}
	o := clusterErrorOutcome(err)
	if o.condition != nil {
		setPlatformAvailable(hc, *o.condition)
	}
	if err != nil {
		return o.result, o.err
	}
	if ep := st.ControlPlaneEndpoint; ep.IsValid() && !hc.Spec.ControlPlaneEndpoint.IsValid() {
		hc.Spec.ControlPlaneEndpoint = ep
	}
	if !st.Ready() {
		setInfrastructureProvisioned(hc, notYet(infrav1.HybridClusterProvisioningReason, st.Waiting))
		return ctrl.Result{RequeueAfter: r.operationPoll()}, nil
	}
	setInfrastructureProvisioned(hc, metav1.Condition{Status: metav1.ConditionTrue, Reason: infrav1.HybridClusterInfrastructureProvisionedReason})
	hc.Status.FailureDomains = st.FailureDomains
	hc.Status.Initialization.Provisioned = ptr.To(true)
	return ctrl.Result{}, nil
}

// reconcileDelete keeps the HybridCluster, and so the credentials its
// machines' VMs are deleted with, until the last HybridMachine is gone;
// then it deletes what the platform made for the cluster.
func (r *HybridClusterReconciler) reconcileDelete(ctx context.Context, hc *infrav1.HybridCluster, cluster *clusterv1.Cluster) (ctrl.Result, error) {
	machines := &infrav1.HybridMachineList{}
	if err := r.Client.List(ctx, machines, client.InNamespace(hc.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster.Name}); err != nil {
		return ctrl.Result{}, err
	}
	if n := len(machines.Items); n > 0 {
		setPlatformAvailable(hc, waitingForMachines(n))
		return ctrl.Result{RequeueAfter: operationPoll}, nil
	}
	if r.Platforms.MakesClusterResources(hc) {
		// A cluster of a platform that made nothing of its own (vSphere)
		// is let go even when its credentials are gone.
		p, err := r.Platforms.For(ctx, hc)
		gone, op := false, infrav1.ClusterOperation{}
		if err == nil {
			prior := hc.Status.Operation
			gone, op, err = p.DeleteCluster(ctx)
			hc.Status.Operation = op
			logClusterOperation(ctx, prior, op, err)
		}
		if err != nil {
			// Always tried again: what blocks the delete (a login, a
			// resource Azure says is in use) is fixed outside
			// Kubernetes, and no event would say so.
			retry := ctrl.Result{RequeueAfter: platform.RetryAfter(err)}
			if errors.Is(err, platform.ErrOperationFailed) || errors.Is(err, platform.ErrInvalid) {
				setInfrastructureProvisioned(hc, notYet(infrav1.HybridClusterDeletingReason, err.Error()))
				return retry, nil
			}
			o := clusterErrorOutcome(err)
			if o.condition != nil {
				setPlatformAvailable(hc, *o.condition)
			}
			if o.err != nil {
				return ctrl.Result{}, o.err
			}
			return retry, nil
		}
		if !gone {
			msg := "Deleting the cluster's network"
			switch {
			case op.Type == infrav1.ClusterOperationCreate:
				msg = fmt.Sprintf("Waiting for the create of %s to end, to delete it", op.Resource)
			case !op.IsZero():
				msg = fmt.Sprintf("Deleting %s", op.Resource)
			}
			setInfrastructureProvisioned(hc, notYet(infrav1.HybridClusterDeletingReason, msg))
			return ctrl.Result{RequeueAfter: r.operationPoll()}, nil
		}
	}
	removeClusterFinalizer(hc)
	return ctrl.Result{}, nil
}
