package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/paused"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/internal/clusterwatch"
	"github.com/capwin/capwin/internal/deleted"
	"github.com/capwin/capwin/internal/names"
	"github.com/capwin/capwin/platform"
)

const (
	// operationPoll is how soon a running platform operation (a clone,
	// power-on or delete task) is looked at again.
	operationPoll = 5 * time.Second
	// shortOperationPoll is how soon a short one (writing the network
	// metadata, a power-on: a second or two in vCenter) is looked at
	// again, so that the steps of a machine's start do not each wait a
	// full operationPoll.
	shortOperationPoll = time.Second
	// addressPoll is how soon a running VM without guest addresses is looked at again.
	addressPoll = 15 * time.Second
	// staleCacheRetry is how soon a reconcile that read an object older
	// than what it last wrote tries again.
	staleCacheRetry = 100 * time.Millisecond
)

// HybridMachineReconciler makes a HybridMachine's VM: it waits for the
// cluster and the bootstrap data, then drives the VM one step per reconcile
// through the HybridCluster's platform.
type HybridMachineReconciler struct {
	Client client.Client
	// Platforms gives each HybridCluster its platform.
	Platforms platform.Factory
	// ClusterCache reaches the workload clusters, where joining Windows
	// nodes report their progress.
	ClusterCache clustercache.ClusterCache
	// NodeReports is where a joining Windows node's reports are read; nil
	// reads their ConfigMaps in the workload cluster through ClusterCache
	// (ConfigMapReports), which the reconciler also watches.
	NodeReports NodeReports
	// ProgressPoll is how often a joining Windows node's report is read
	// while its workload cluster's progress ConfigMaps cannot be watched;
	// progressPoll when zero.
	ProgressPoll time.Duration

	// written keeps a reconcile from acting on a copy older than what the
	// last one wrote.
	written written
	// onVM remembers, per machine, the hash of the bootstrap data last
	// seen on its VM, so that the VM's user data is read again only when
	// the Machine's data changed.
	onVM dataHashes
	// controller is this reconciler's controller, to which watches in
	// workload clusters (the nodes' progress reports) deliver events.
	controller controller.Controller
}

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=hybridmachines;hybridmachines/status;hybridmachines/finalizers,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters;clusters/status;machines;machines/status,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// SetupWithManager registers the reconciler, watching Machines for their
// bootstrap data and nodeRef.
func (r *HybridMachineReconciler) SetupWithManager(mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil || r.Platforms == nil || r.ClusterCache == nil {
		return errors.New("the HybridMachine reconciler needs a Client, Platforms and a ClusterCache")
	}
	// A Secret event finds its Machine through this index, not by listing
	// the namespace's Machines: a scale-up of N writes N data Secrets.
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &clusterv1.Machine{}, machineDataSecretField, machineDataSecret); err != nil {
		return fmt.Errorf("indexing Machines by their bootstrap data Secret: %w", err)
	}
	c, err := ctrl.NewControllerManagedBy(mgr).
		For(&infrav1.HybridMachine{}).
		WithOptions(options).
		Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(machineToHybridMachine)).
		// Not on every Cluster status change: only on what machines wait on.
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.clusterToHybridMachines),
			builder.WithPredicates(clusterwatch.WhatMachinesWaitOn())).
		// A HybridCluster's spec changed (a setting its machines found
		// invalid, fixed) wakes its machines: they wait on it, not on a
		// requeue.
		Watches(&infrav1.HybridCluster{}, handler.EnqueueRequestsFromMapFunc(r.hybridClusterToHybridMachines),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A bootstrap data Secret replaced before the node joined (a new
		// token) is written to the VM's user data.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.dataSecretToHybridMachines),
			builder.WithPredicates(predicate.NewPredicateFuncs(hasClusterLabel))).
		// A connection to a workload cluster wakes its machines, which
		// then watch their nodes' progress reports there.
		WatchesRawSource(r.ClusterCache.GetClusterSource("hybridmachine", r.clusterToHybridMachines)).
		Build(r)
	if err != nil {
		return err
	}
	r.controller = c
	return nil
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

// hybridClusterToHybridMachines wakes the machines of the HybridCluster's
// Cluster, its owner.
func (r *HybridMachineReconciler) hybridClusterToHybridMachines(ctx context.Context, o client.Object) []reconcile.Request {
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind == "Cluster" && strings.HasPrefix(ref.APIVersion, clusterv1.GroupVersion.Group+"/") {
			return r.clusterToHybridMachines(ctx, &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: o.GetNamespace(), Name: ref.Name}})
		}
	}
	return nil
}

// hasClusterLabel is whether a Secret may be a Machine's bootstrap data
// that the manager sees change: it caches only Secrets labelled with their
// cluster, as bootstrap providers label their data Secrets.
func hasClusterLabel(o client.Object) bool {
	return o.GetLabels()[clusterv1.ClusterNameLabel] != ""
}

// dataSecretToHybridMachines wakes the machines of the Secret's cluster
// whose Machine takes its bootstrap data from the Secret.
func (r *HybridMachineReconciler) dataSecretToHybridMachines(ctx context.Context, o client.Object) []reconcile.Request {
	list := &clusterv1.MachineList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{machineDataSecretField: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the Machines of a bootstrap data Secret", "Secret", klog.KObj(o))
		return nil
	}
	cluster := o.GetLabels()[clusterv1.ClusterNameLabel]
	var reqs []reconcile.Request
	for i := range list.Items {
		if m := &list.Items[i]; m.Spec.ClusterName == cluster {
			reqs = append(reqs, machineToHybridMachine(ctx, m)...)
		}
	}
	return reqs
}

// machineDataSecretField indexes Machines by spec.bootstrap.dataSecretName.
const machineDataSecretField = "spec.bootstrap.dataSecretName"

func machineDataSecret(o client.Object) []string {
	m, ok := o.(*clusterv1.Machine)
	if !ok || ptr.Deref(m.Spec.Bootstrap.DataSecretName, "") == "" {
		return nil
	}
	return []string{*m.Spec.Bootstrap.DataSecretName}
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

// machineScope is what one reconcile of a HybridMachine works on.
type machineScope struct {
	hm      *infrav1.HybridMachine
	machine *clusterv1.Machine
	cluster *clusterv1.Cluster
	// hc is the Cluster's HybridCluster, nil while it has none.
	hc *infrav1.HybridCluster
	// platform is the HybridCluster's platform, once connect found it.
	platform platform.Platform
	// vm is the machine as the platform sees it.
	vm platform.Machine
	// state is what EnsureMachine found.
	state platform.MachineState
}

// machinePhase is one step of a reconcile; next says whether the steps
// after it run.
type machinePhase func(ctx context.Context, s *machineScope) (res ctrl.Result, next bool, err error)

// Reconcile follows Cluster API's order: object, owner, finalizer, patch
// helper, paused, deferred status patch, then delete or normal.
func (r *HybridMachineReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	hm := &infrav1.HybridMachine{}
	if err := r.Client.Get(ctx, req.NamespacedName, hm); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.forget(req.NamespacedName)
			r.onVM.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.written.stale(hm) {
		// The operation the last reconcile recorded (a clone's task) is
		// not in this copy: acting on it could start a second one.
		return ctrl.Result{RequeueAfter: staleCacheRetry}, nil
	}
	c := r.written.recording(r.Client)
	s, err := r.scope(ctx, hm)
	if err != nil || s == nil {
		return ctrl.Result{}, err
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("Machine", klog.KObj(s.machine), "Cluster", klog.KObj(s.cluster)))

	if patched, err := ensureMachineFinalizer(ctx, c, hm); err != nil || patched {
		return ctrl.Result{}, err
	}
	helper, err := patch.NewHelper(hm, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	if isPaused, requeue, err := paused.EnsurePausedCondition(ctx, c, s.cluster, hm); err != nil || isPaused || requeue {
		return ctrl.Result{}, err
	}
	defer func() {
		if err := r.patch(ctx, helper, hm); err != nil {
			retErr = kerrors.NewAggregate([]error{retErr, err})
		}
	}()

	if !hm.DeletionTimestamp.IsZero() {
		return r.run(ctx, s, r.deletePhases())
	}
	return r.run(ctx, s, r.normalPhases())
}

// scope reads the HybridMachine's Machine, Cluster and HybridCluster; nil
// while no Machine owns it.
func (r *HybridMachineReconciler) scope(ctx context.Context, hm *infrav1.HybridMachine) (*machineScope, error) {
	machine, err := util.GetOwnerMachine(ctx, r.Client, hm.ObjectMeta)
	if err != nil {
		return nil, fmt.Errorf("getting the owner Machine: %w", err)
	}
	if machine == nil {
		ctrl.LoggerFrom(ctx).V(2).Info("Waiting for a Machine to own the HybridMachine")
		return nil, nil
	}
	cluster, err := util.GetClusterByName(ctx, r.Client, machine.Namespace, machine.Spec.ClusterName)
	if err != nil {
		return nil, fmt.Errorf("getting Cluster %s: %w", machine.Spec.ClusterName, err)
	}
	hc, err := r.hybridCluster(ctx, cluster)
	if err != nil {
		return nil, err
	}
	s := &machineScope{hm: hm, machine: machine, cluster: cluster, hc: hc}
	s.vm = platform.Machine{HybridMachine: hm, ComputerName: computerName(hm, machine), FailureDomain: machine.Spec.FailureDomain}
	return s, nil
}

// patch writes the HybridMachine's status and conditions, its Ready
// condition summing up the others.
func (r *HybridMachineReconciler) patch(ctx context.Context, helper *patch.Helper, hm *infrav1.HybridMachine) error {
	setReady(hm)
	err := helper.Patch(ctx, hm, patch.WithOwnedConditions{Conditions: []string{
		clusterv1.PausedCondition, infrav1.HybridMachineReadyCondition,
		infrav1.HybridMachineVMProvisionedCondition, infrav1.HybridMachineBootstrapDataClearedCondition,
		infrav1.HybridMachineNodeJoinedCondition,
	}})
	return deleted.IgnoreGone(hm, err)
}

// run runs phases in order until one returns an error or next false,
// and asks to be run again after the shortest requeue any phase asked for.
func (r *HybridMachineReconciler) run(ctx context.Context, s *machineScope, phases []machinePhase) (ctrl.Result, error) {
	var result ctrl.Result
	for _, phase := range phases {
		res, next, err := phase(ctx, s)
		result = shorter(result, res)
		if err != nil || !next {
			return result, err
		}
	}
	return result, nil
}

// shorter is the result that runs again sooner; a zero one asks nothing.
func shorter(a, b ctrl.Result) ctrl.Result {
	if a.IsZero() || (!b.IsZero() && b.RequeueAfter < a.RequeueAfter) {
		return b
	}
	return a
}

func (r *HybridMachineReconciler) normalPhases() []machinePhase {
	return []machinePhase{
		r.waitForNodeReport,
		r.waitForClusterInfrastructure,
		r.readBootstrapData,
		r.connect,
		r.ensureVM,
		r.writeBootstrapData,
		r.clearBootstrapData,
		r.readNodeProgress,
		r.waitForAddresses,
	}
}

func (r *HybridMachineReconciler) deletePhases() []machinePhase {
	return []machinePhase{r.connectForDelete, r.deleteVM}
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

// computerName is the guest's host name: spec.computerName, else the
// Machine's name (shortened for Windows' 15 characters).
func computerName(hm *infrav1.HybridMachine, machine *clusterv1.Machine) string {
	if hm.Spec.ComputerName != "" {
		return hm.Spec.ComputerName
	}
	if hm.Spec.OS.Type == infrav1.OSWindows {
		return names.WindowsComputerName(machine.Namespace, machine.Name)
	}
	return machine.Name
}

func (r *HybridMachineReconciler) waitForClusterInfrastructure(_ context.Context, s *machineScope) (ctrl.Result, bool, error) {
	if s.hc == nil || !ptr.Deref(s.cluster.Status.Initialization.InfrastructureProvisioned, false) {
		setVMProvisioned(s.hm, waitingForClusterInfrastructure())
		return ctrl.Result{}, false, nil
	}
	return ctrl.Result{}, true, nil
}

// readBootstrapData reads the Machine's bootstrap data, and refuses data
// in a format the machine's OS cannot run. Once the VM is provisioned the
// data is read while the node has not joined, for writeBootstrapData.
func (r *HybridMachineReconciler) readBootstrapData(ctx context.Context, s *machineScope) (ctrl.Result, bool, error) {
	if ptr.Deref(s.hm.Status.Initialization.Provisioned, false) {
		return r.readCurrentBootstrapData(ctx, s)
	}
	name := ptr.Deref(s.machine.Spec.Bootstrap.DataSecretName, "")
	if name == "" {
		setVMProvisioned(s.hm, waitingForBootstrapData())
		return ctrl.Result{}, false, nil
	}
	data := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.machine.Namespace, Name: name}, data); err != nil {
		return ctrl.Result{}, false, fmt.Errorf("reading bootstrap data Secret %s: %w", name, err)
	}
	if c := bootstrapDataFormatMismatch(name, data.Data, s.hm.Spec.OS.Type); c != nil {
		// Data Secrets labelled with their cluster are watched; an
		// unlabelled one is seen on a later look.
		setVMProvisioned(s.hm, *c)
		return ctrl.Result{RequeueAfter: platform.DefaultRetry}, false, nil
	}
	s.vm.BootstrapData = data.Data["value"]
	return ctrl.Result{}, true, nil
}

// connect finds the HybridCluster's platform, logged in.
func (r *HybridMachineReconciler) connect(ctx context.Context, s *machineScope) (ctrl.Result, bool, error) {
	p, err := r.Platforms.For(ctx, s.hc)
	if err != nil {
		return r.platformError(s, connectError(err))
	}
	s.platform = p
	return ctrl.Result{}, true, nil
}

// ensureVM drives the VM one step and, once it runs, records its provider
// ID and addresses.
func (r *HybridMachineReconciler) ensureVM(ctx context.Context, s *machineScope) (ctrl.Result, bool, error) {
	prior := s.hm.Status.Operation
	st, err := s.platform.EnsureMachine(ctx, &s.vm)
	if err != nil {
		if st.OperationEnded {
			// Not followed again: the next reconcile looks at the VM.
			s.hm.Status.Operation = infrav1.MachineOperation{}
		}
		result, done, err2 := r.platformError(s, err)
		logMachineOperation(ctx, prior, s.hm.Status.Operation, err)
		return result, done, err2
	}
	s.state = st
	s.hm.Status.Operation = st.Operation
	if st.Operation.IsZero() && (prior.Type == infrav1.MachineOperationClearBootstrapData || prior.Type == infrav1.MachineOperationWriteBootstrapData) {
		// EnsureMachine does not look at these reconfigures' tasks;
		// writeBootstrapData and clearBootstrapData do.
		s.hm.Status.Operation = prior
	}
	logMachineOperation(ctx, prior, s.hm.Status.Operation, nil)
	if !st.Operation.IsZero() {
		setVMProvisioned(s.hm, vmProvisioned(st))
		return ctrl.Result{RequeueAfter: pollFor(st.Operation)}, false, nil
	}
	if !st.Exists || st.ProviderID == "" {
		return ctrl.Result{}, false, fmt.Errorf("the platform reported no VM and no operation for %s", s.hm.Name)
	}
	setVMProvisioned(s.hm, vmProvisioned(st))
	if s.hm.Spec.ProviderID == "" {
		ctrl.LoggerFrom(ctx).Info("The VM runs", "providerID", st.ProviderID)
	}
	s.hm.Spec.ProviderID = st.ProviderID
	s.hm.Status.Addresses = machineAddresses(s.vm.ComputerName, st.Addresses)
	s.hm.Status.Initialization.Provisioned = ptr.To(true)
	return ctrl.Result{}, true, nil
}

// pollFor is how soon a running operation is looked at again.
func pollFor(op infrav1.MachineOperation) time.Duration {
	switch op.Type {
	case infrav1.MachineOperationConfigure, infrav1.MachineOperationPowerOn:
		return shortOperationPoll
	}
	return operationPoll
}

// clearBootstrapData removes the bootstrap data, and its token, from the
// VM once the node joined. The condition turns true only when the VM
// shows it.
func (r *HybridMachineReconciler) clearBootstrapData(ctx context.Context, s *machineScope) (ctrl.Result, bool, error) {
	if !s.machine.Status.NodeRef.IsDefined() {
		setBootstrapDataCleared(s.hm, waitingForNode())
		return ctrl.Result{}, true, nil
	}
	if s.hm.Status.Operation.Type == infrav1.MachineOperationWriteBootstrapData {
		// A rewrite that runs still ends before the clearing, which
		// vCenter queues after it on the same VM.
		logMachineOperation(ctx, s.hm.Status.Operation, infrav1.MachineOperation{}, nil)
		s.hm.Status.Operation = infrav1.MachineOperation{}
	}
	if conditions.IsTrue(s.hm, infrav1.HybridMachineBootstrapDataClearedCondition) {
		return ctrl.Result{}, true, nil
	}
	cleared, err := s.platform.BootstrapDataCleared(ctx, &s.vm)
	if err != nil {
		return retryAfterProvisioned(err)
	}
	if cleared {
		if k, ok := s.platform.(platform.BootstrapDataKeeper); ok {
			setBootstrapDataCleared(s.hm, bootstrapDataKept(k.KeptBootstrapData()))
			return ctrl.Result{}, true, nil
		}
		setBootstrapDataCleared(s.hm, bootstrapDataCleared())
		if s.hm.Status.Operation.Type == infrav1.MachineOperationClearBootstrapData {
			logMachineOperation(ctx, s.hm.Status.Operation, infrav1.MachineOperation{}, nil)
			s.hm.Status.Operation = infrav1.MachineOperation{}
		}
		ctrl.LoggerFrom(ctx).Info("The bootstrap data is cleared from the VM")
		return ctrl.Result{}, true, nil
	}
	prior := s.hm.Status.Operation
	op, err := s.platform.ClearBootstrapData(ctx, &s.vm)
	if errors.Is(err, platform.ErrOperationFailed) {
		// The next attempt starts a new task.
		s.hm.Status.Operation = infrav1.MachineOperation{}
		setBootstrapDataCleared(s.hm, notYet(infrav1.HybridMachineOperationFailedReason, err.Error()))
		return ctrl.Result{}, false, err
	}
	if err != nil {
		return retryAfterProvisioned(err)
	}
	s.hm.Status.Operation = op
	logMachineOperation(ctx, prior, op, nil)
	setBootstrapDataCleared(s.hm, notYet(infrav1.HybridMachineClearingReason, "Removing the bootstrap data from the VM"))
	return ctrl.Result{RequeueAfter: operationPoll}, false, nil
}

// waitForAddresses looks again later at a VM whose guest reports no
// address yet, or not its static one (a DHCP lease can come before the
// guest software applies the static address).
func (r *HybridMachineReconciler) waitForAddresses(_ context.Context, s *machineScope) (ctrl.Result, bool, error) {
	if len(s.state.Addresses) == 0 || s.state.NetworkNotApplied != "" {
		return ctrl.Result{RequeueAfter: addressPoll}, false, nil
	}
	return ctrl.Result{}, true, nil
}

// platformError records what a platform error means for the machine.
func (r *HybridMachineReconciler) platformError(s *machineScope, err error) (ctrl.Result, bool, error) {
	o := machineErrorOutcome(err)
	if o.clearOperation {
		s.hm.Status.Operation = infrav1.MachineOperation{}
	}
	if o.condition != nil {
		setVMProvisioned(s.hm, *o.condition)
	}
	return o.result, false, o.err
}

// retryAfterProvisioned retries an error met after the VM is provisioned, which
// leaves VMProvisioned alone: a new session soon, anything else with the
// controller's backoff.
func retryAfterProvisioned(err error) (ctrl.Result, bool, error) {
	if o, ok := sessionExpired(err); ok {
		return o.result, false, nil
	}
	return ctrl.Result{}, false, err
}

// connectForDelete finds the platform the VM is deleted on. A machine on a
// platform this build does not implement never had a VM.
func (r *HybridMachineReconciler) connectForDelete(ctx context.Context, s *machineScope) (ctrl.Result, bool, error) {
	setVMProvisioned(s.hm, deleting(infrav1.MachineOperation{}))
	if !r.Platforms.Supports(s.hm.Spec.Platform()) {
		removeMachineFinalizer(s.hm)
		return ctrl.Result{}, false, nil
	}
	if s.hc == nil || s.hc.Spec.Platform() != s.hm.Spec.Platform() {
		// The HybridCluster keeps its finalizer while machines remain, so
		// this is a cluster being created or moved: wait for it.
		setVMProvisioned(s.hm, waitingForClusterToDelete())
		return ctrl.Result{RequeueAfter: platform.DefaultRetry}, false, nil
	}
	return r.connect(ctx, s)
}

// deleteVM drives the VM's deletion one step, and removes the finalizer
// once nothing of it is left.
func (r *HybridMachineReconciler) deleteVM(ctx context.Context, s *machineScope) (ctrl.Result, bool, error) {
	prior := s.hm.Status.Operation
	gone, op, err := s.platform.DeleteMachine(ctx, &s.vm)
	if err != nil {
		o := deleteErrorOutcome(err)
		if o.condition != nil {
			s.hm.Status.Operation = op
			setVMProvisioned(s.hm, *o.condition)
		}
		logMachineOperation(ctx, prior, s.hm.Status.Operation, err)
		return o.result, false, o.err
	}
	s.hm.Status.Operation = op
	logMachineOperation(ctx, prior, op, nil)
	if !gone {
		setVMProvisioned(s.hm, deleting(op))
		return ctrl.Result{RequeueAfter: operationPoll}, false, nil
	}
	ctrl.LoggerFrom(ctx).Info("Deleted the VM")
	removeMachineFinalizer(s.hm)
	return ctrl.Result{}, false, nil
}
