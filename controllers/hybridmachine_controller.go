package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/finalizers"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/paused"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/internal/deleted"
	"github.com/capwin/capwin/internal/names"
	"github.com/capwin/capwin/platform/vsphere"
)

const (
	// taskPoll is how soon a running clone, power-on or delete task is looked at again.
	taskPoll = 5 * time.Second
	// addressPoll is how soon a running VM without guest addresses is looked at again.
	addressPoll = 15 * time.Second
)

// HybridMachineReconciler makes a HybridMachine's VM: it waits for the
// cluster and the bootstrap data, then drives the VM one step per reconcile.
type HybridMachineReconciler struct {
	Client   client.Client
	Sessions *vsphere.Sessions
	// ControllerNamespace holds the Secrets of HybridClusterIdentities.
	ControllerNamespace string
}

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=hybridmachines;hybridmachines/status;hybridmachines/finalizers,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters;clusters/status;machines;machines/status,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// SetupWithManager registers the reconciler, watching Machines for their
// bootstrap data and nodeRef.
func (r *HybridMachineReconciler) SetupWithManager(mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil || r.Sessions == nil {
		return errors.New("the HybridMachine reconciler needs a Client and Sessions")
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&infrav1.HybridMachine{}).
		WithOptions(options).
		Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(machineToHybridMachine)).
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.clusterToHybridMachines)).
		Complete(r)
}

// clusterToHybridMachines wakes a cluster's machines, which wait for its
// infrastructure and follow its pause.
func (r *HybridMachineReconciler) clusterToHybridMachines(ctx context.Context, o client.Object) []reconcile.Request {
	list := &infrav1.HybridMachineList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingLabels{clusterv1.ClusterNameLabel: o.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

func machineToHybridMachine(_ context.Context, o client.Object) []reconcile.Request {
	m, ok := o.(*clusterv1.Machine)
	if !ok {
		return nil
	}
	ref := m.Spec.InfrastructureRef
	if ref.APIGroup != infrav1.GroupVersion.Group || ref.Kind != "HybridMachine" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: m.Namespace, Name: ref.Name}}}
}

// Reconcile follows Cluster API's order: object, owner, finalizer, patch
// helper, paused, deferred status patch, then delete or normal.
func (r *HybridMachineReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	hm := &infrav1.HybridMachine{}
	if err := r.Client.Get(ctx, req.NamespacedName, hm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	machine, err := util.GetOwnerMachine(ctx, r.Client, hm.ObjectMeta)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("getting the owner Machine: %w", err)
	}
	if machine == nil {
		ctrl.LoggerFrom(ctx).V(2).Info("Waiting for a Machine to own the HybridMachine")
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("Machine", klog.KObj(machine), "Cluster", klog.KRef(machine.Namespace, machine.Spec.ClusterName))
	ctx = ctrl.LoggerInto(ctx, log)
	cluster, err := util.GetClusterByName(ctx, r.Client, machine.Namespace, machine.Spec.ClusterName)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("getting Cluster %s: %w", machine.Spec.ClusterName, err)
	}

	if added, err := finalizers.EnsureFinalizer(ctx, r.Client, hm, infrav1.MachineFinalizer); err != nil || added {
		return ctrl.Result{}, err
	}
	helper, err := patch.NewHelper(hm, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	if isPaused, requeue, err := paused.EnsurePausedCondition(ctx, r.Client, cluster, hm); err != nil || isPaused || requeue {
		return ctrl.Result{}, err
	}
	defer func() {
		_ = conditions.SetSummaryCondition(hm, hm, infrav1.HybridMachineReadyCondition,
			conditions.ForConditionTypes{infrav1.HybridMachineVMProvisionedCondition})
		err := helper.Patch(ctx, hm, patch.WithOwnedConditions{Conditions: []string{
			clusterv1.PausedCondition, infrav1.HybridMachineReadyCondition,
			infrav1.HybridMachineVMProvisionedCondition, infrav1.HybridMachineBootstrapDataClearedCondition,
		}})
		if err := deleted.IgnoreGone(hm, err); err != nil {
			retErr = kerrors.NewAggregate([]error{retErr, err})
		}
	}()

	hc, err := r.hybridCluster(ctx, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !hm.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, hm, machine, hc)
	}
	return r.reconcileNormal(ctx, hm, machine, cluster, hc)
}

// hybridCluster returns the Cluster's HybridCluster, or nil while the
// Cluster has none.
func (r *HybridMachineReconciler) hybridCluster(ctx context.Context, cluster *clusterv1.Cluster) (*infrav1.HybridCluster, error) {
	ref := cluster.Spec.InfrastructureRef
	if ref.Kind != "HybridCluster" || ref.Name == "" {
		return nil, nil
	}
	hc := &infrav1.HybridCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: ref.Name}, hc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting HybridCluster %s: %w", ref.Name, err)
	}
	return hc, nil
}

// session returns the vCenter session of the machine's cluster.
func (r *HybridMachineReconciler) session(ctx context.Context, hc *infrav1.HybridCluster) (*vsphere.Session, error) {
	creds, err := vsphereCredentials(ctx, r.Client, r.ControllerNamespace, hc)
	if err != nil {
		return nil, err
	}
	return r.Sessions.Get(ctx, creds)
}

func (r *HybridMachineReconciler) vmOf(hm *infrav1.HybridMachine, machine *clusterv1.Machine, hc *infrav1.HybridCluster) vsphere.Machine {
	name := hm.Spec.ComputerName
	if name == "" {
		name = machine.Name
		if hm.Spec.OS.Type == infrav1.OSWindows {
			name = names.WindowsComputerName(machine.Namespace, machine.Name)
		}
	}
	m := vsphere.Machine{
		Namespace:    hm.Namespace,
		Name:         hm.Name,
		Datacenter:   hc.Spec.VSphere.Datacenter,
		Spec:         hm.Spec.VSphere,
		OS:           hm.Spec.OS.Type,
		ComputerName: name,
		TaskRef:      hm.Status.VSphere.TaskRef,
		Provisioned:  ptr.Deref(hm.Status.Initialization.Provisioned, false),
	}
	if hm.DeletionTimestamp != nil {
		m.DeletingSince = hm.DeletionTimestamp.Time
	}
	return m
}

func (r *HybridMachineReconciler) reconcileNormal(ctx context.Context, hm *infrav1.HybridMachine, machine *clusterv1.Machine, cluster *clusterv1.Cluster, hc *infrav1.HybridCluster) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if hc == nil || !ptr.Deref(cluster.Status.Initialization.InfrastructureProvisioned, false) {
		setVMCondition(hm, metav1.ConditionFalse, infrav1.HybridMachineWaitingForClusterInfrastructureReason, "Waiting for the HybridCluster to be provisioned")
		return ctrl.Result{}, nil
	}
	if hm.Spec.VSphere == nil || hc.Spec.VSphere == nil {
		setVMCondition(hm, metav1.ConditionFalse, infrav1.HybridMachineInvalidReason,
			"The machine and its HybridCluster must both be on vSphere: this build of capwin has no Azure controller yet")
		return ctrl.Result{}, nil
	}

	vm := r.vmOf(hm, machine, hc)
	if !ptr.Deref(hm.Status.Initialization.Provisioned, false) {
		// The user data is needed only to create the VM.
		name := ptr.Deref(machine.Spec.Bootstrap.DataSecretName, "")
		if name == "" {
			setVMCondition(hm, metav1.ConditionFalse, infrav1.HybridMachineWaitingForBootstrapDataReason, "Waiting for the Machine's bootstrap data Secret")
			return ctrl.Result{}, nil
		}
		data := &corev1.Secret{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: machine.Namespace, Name: name}, data); err != nil {
			return ctrl.Result{}, fmt.Errorf("reading bootstrap data Secret %s: %w", name, err)
		}
		vm.UserData = data.Data["value"]
	}

	s, err := r.session(ctx, hc)
	if err != nil {
		setVMCondition(hm, metav1.ConditionFalse, infrav1.HybridMachinePlatformUnavailableReason, err.Error())
		return ctrl.Result{RequeueAfter: platformRetry}, nil
	}
	st, err := s.Reconcile(ctx, vm)
	if err != nil {
		// The recorded task is kept unless it failed: forgetting a clone in
		// flight could start a second one.
		switch {
		case errors.Is(err, vsphere.ErrNotFound):
			setVMCondition(hm, metav1.ConditionFalse, infrav1.HybridMachineNotFoundReason, err.Error())
			return ctrl.Result{RequeueAfter: platformRetry}, nil
		case errors.Is(err, vsphere.ErrVMGone):
			setVMCondition(hm, metav1.ConditionFalse, infrav1.HybridMachineVMGoneReason,
				"The VM was deleted outside capwin and is not re-created (its provider ID would change): delete the Machine to replace it, as a MachineHealthCheck does")
			return ctrl.Result{}, nil
		case errors.Is(err, vsphere.ErrTaskFailed):
			// Retried with the controller's exponential backoff, so a task
			// that keeps failing does not keep vCenter busy.
			hm.Status.VSphere.TaskRef = ""
			setVMCondition(hm, metav1.ConditionFalse, infrav1.HybridMachineTaskFailedReason, err.Error())
			return ctrl.Result{}, err
		case r.Sessions.Stale(err, s):
			return ctrl.Result{RequeueAfter: time.Second}, nil // log in again
		case errors.Is(err, vsphere.ErrTimeout):
			// A clone vCenter started without answering is not cloned
			// twice: vCenter refuses the name until that clone ends, and
			// its VM is then found by its instance UUID.
			setVMCondition(hm, metav1.ConditionFalse, infrav1.HybridMachinePlatformUnavailableReason, err.Error())
			return ctrl.Result{RequeueAfter: platformRetry}, nil
		}
		return ctrl.Result{}, err
	}
	hm.Status.VSphere.TaskRef = st.TaskRef
	if st.TaskRef != "" {
		reason := infrav1.HybridMachineCloningReason
		if st.Exists {
			reason = infrav1.HybridMachinePoweringOnReason
		}
		setVMCondition(hm, metav1.ConditionFalse, reason, "")
		return ctrl.Result{RequeueAfter: taskPoll}, nil
	}

	if !st.Exists || st.ProviderID() == "" {
		return ctrl.Result{}, fmt.Errorf("vCenter reported no VM and no task for %s", hm.Name)
	}
	hm.Spec.ProviderID = st.ProviderID()
	hm.Status.Addresses = []clusterv1.MachineAddress{{Type: clusterv1.MachineHostName, Address: vm.ComputerName}}
	for _, ip := range st.Addresses {
		hm.Status.Addresses = append(hm.Status.Addresses, clusterv1.MachineAddress{Type: clusterv1.MachineInternalIP, Address: ip})
	}
	hm.Status.Initialization.Provisioned = ptr.To(true)
	setVMCondition(hm, metav1.ConditionTrue, infrav1.HybridMachineVMProvisionedReason, "")

	// Once the node joined, its bootstrap token must not stay readable in the
	// VM's guestinfo. The condition turns true only when the VM shows it.
	switch {
	case !machine.Status.NodeRef.IsDefined():
		conditions.Set(hm, metav1.Condition{Type: infrav1.HybridMachineBootstrapDataClearedCondition,
			Status: metav1.ConditionFalse, Reason: infrav1.HybridMachineWaitingForNodeReason})
	case !conditions.IsTrue(hm, infrav1.HybridMachineBootstrapDataClearedCondition):
		cleared, err := s.UserDataCleared(ctx, vm)
		if err != nil {
			return ctrl.Result{}, err
		}
		if cleared {
			conditions.Set(hm, metav1.Condition{Type: infrav1.HybridMachineBootstrapDataClearedCondition,
				Status: metav1.ConditionTrue, Reason: infrav1.HybridMachineBootstrapDataClearedReason})
			log.Info("The bootstrap data is cleared from the VM's guestinfo")
			break
		}
		task, err := s.ClearUserData(ctx, vm)
		if err != nil {
			return ctrl.Result{}, err
		}
		hm.Status.VSphere.TaskRef = task
		return ctrl.Result{RequeueAfter: taskPoll}, nil
	}
	if len(st.Addresses) == 0 {
		return ctrl.Result{RequeueAfter: addressPoll}, nil
	}
	return ctrl.Result{}, nil
}

func (r *HybridMachineReconciler) reconcileDelete(ctx context.Context, hm *infrav1.HybridMachine, machine *clusterv1.Machine, hc *infrav1.HybridCluster) (ctrl.Result, error) {
	setVMCondition(hm, metav1.ConditionFalse, infrav1.HybridMachineDeletingReason, "")
	if hm.Spec.VSphere == nil {
		// Nothing was ever created for it on vSphere.
		controllerutil.RemoveFinalizer(hm, infrav1.MachineFinalizer)
		return ctrl.Result{}, nil
	}
	if hc == nil || hc.Spec.VSphere == nil {
		// The HybridCluster keeps its finalizer while machines remain, so
		// this is a cluster being created or moved: wait for it.
		setVMCondition(hm, metav1.ConditionFalse, infrav1.HybridMachineDeletingReason,
			"Waiting for the HybridCluster, whose credentials the VM is deleted with")
		return ctrl.Result{RequeueAfter: platformRetry}, nil
	}
	s, err := r.session(ctx, hc)
	if err != nil {
		setVMCondition(hm, metav1.ConditionFalse, infrav1.HybridMachinePlatformUnavailableReason, err.Error())
		return ctrl.Result{RequeueAfter: platformRetry}, nil
	}
	gone, task, err := s.Delete(ctx, r.vmOf(hm, machine, hc))
	if err != nil {
		if r.Sessions.Stale(err, s) {
			return ctrl.Result{RequeueAfter: time.Second}, nil // log in again
		}
		// A failed power-off or destroy is reported and retried with backoff.
		hm.Status.VSphere.TaskRef = task
		setVMCondition(hm, metav1.ConditionFalse, infrav1.HybridMachineDeletingReason, err.Error())
		return ctrl.Result{}, err
	}
	hm.Status.VSphere.TaskRef = task
	if !gone {
		if task != "" {
			setVMCondition(hm, metav1.ConditionFalse, infrav1.HybridMachineDeletingReason, "Waiting for vCenter task "+task)
		}
		return ctrl.Result{RequeueAfter: taskPoll}, nil
	}
	ctrl.LoggerFrom(ctx).Info("Deleted the VM")
	controllerutil.RemoveFinalizer(hm, infrav1.MachineFinalizer)
	return ctrl.Result{}, nil
}

func setVMCondition(hm *infrav1.HybridMachine, status metav1.ConditionStatus, reason, message string) {
	conditions.Set(hm, metav1.Condition{
		Type: infrav1.HybridMachineVMProvisionedCondition, Status: status, Reason: reason, Message: message,
	})
}
