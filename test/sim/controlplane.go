package sim

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

// Reasons of the conditions the stand-in writes on a KubeadmControlPlane.
const (
	standInAvailableReason    = "Available"
	standInNotAvailableReason = "NotAvailable"
	// standInReplicasReason: the stand-in runs one control-plane machine,
	// whatever spec.replicas asks.
	standInReplicasReason = "SimulationRunsOneMachine"
)

// playKubeadmControlPlanes stands in for the KubeadmControlPlane
// controller, for the KubeadmControlPlanes of clusters with a topology
// (Cluster API's topology controller creates one from the ClusterClass and
// points the Cluster at it; a cluster of a flavor without a class has its
// control plane as a stand-alone Machine instead: see controlPlane). It
// covers the part of Cluster API's contract for control-plane providers
// that a cluster's life here needs, with one control-plane machine, in the
// order KubeadmControlPlane works:
//
//   - nothing until its owner Cluster is set; its finalizer first, then
//     nothing while the KubeadmControlPlane or its Cluster is paused;
//   - once the Cluster's infrastructure is provisioned and its control-plane
//     endpoint set, a Machine (controlled by the KubeadmControlPlane, with
//     spec.machineTemplate.metadata's labels and annotations and those
//     KubeadmControlPlane adds) of spec.version,
//     with a HybridMachine cloned from
//     spec.machineTemplate.spec.infrastructureRef and Linux user data that
//     runs kubeadm init with spec.kubeadmConfigSpec's InitConfiguration
//     (initCloudConfig; KubeadmControlPlane has the kubeadm bootstrap
//     provider write it, with the rest of the configuration);
//   - status: initialization.controlPlaneInitialized once that machine's
//     Node is registered with its provider ID (KubeadmControlPlane reads
//     kubeadm's ConfigMap, which kubeadm init writes a little earlier);
//     replicas, readyReplicas and availableReplicas from its Machines'
//     conditions; upToDateReplicas, those of spec.version cloned from the
//     template spec.machineTemplate names now; versions and version;
//     selector; and the Available condition, True while the control plane
//     is initialised and its machine Ready (KubeadmControlPlane also checks
//     etcd's members through their Pods, which the simulation's nodes do
//     not run);
//   - on deletion, once the cluster's worker Machines are gone, its
//     Machines, and then its finalizer.
//
// It does not roll its machine out when the template or version change, nor
// set Machines' UpToDate condition, and runs one machine whatever
// spec.replicas asks (the Available condition's message says so when
// replicas is not 1).
func playKubeadmControlPlanes(ctx context.Context, mgmt, workload client.Client, log logr.Logger) {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		l := &controlplanev1.KubeadmControlPlaneList{}
		if err := mgmt.List(ctx, l); err != nil {
			return
		}
		for i := range l.Items {
			kcp := &l.Items[i]
			if err := reconcileKubeadmControlPlane(ctx, mgmt, workload, kcp, log); err != nil && ctx.Err() == nil {
				log.Info("The control plane's stand-in will try again", "namespace", kcp.Namespace, "kubeadmControlPlane", kcp.Name, "error", err.Error())
			}
		}
	}, 500*time.Millisecond)
}

func reconcileKubeadmControlPlane(ctx context.Context, c, workload client.Client, kcp *controlplanev1.KubeadmControlPlane, log logr.Logger) error {
	// In KubeadmControlPlane's order: its owner Cluster (the one Cluster
	// API's topology controller gives it; nothing without), its finalizer,
	// nothing while paused, then deletion.
	cluster, err := util.GetOwnerCluster(ctx, c, kcp.ObjectMeta)
	if err != nil || cluster == nil {
		return err
	}
	if kcp.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(kcp, controlplanev1.KubeadmControlPlaneFinalizer) {
		patch := client.MergeFromWithOptions(kcp.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(kcp, controlplanev1.KubeadmControlPlaneFinalizer)
		return c.Patch(ctx, kcp, patch)
	}
	if annotations.HasPaused(kcp) || ptr.Deref(cluster.Spec.Paused, false) {
		return nil
	}
	if !kcp.DeletionTimestamp.IsZero() {
		return deleteControlPlane(ctx, c, cluster, kcp)
	}
	machines, err := controlPlaneMachines(ctx, c, kcp)
	if err != nil {
		return err
	}
	// As KubeadmControlPlane, it waits for the cluster's infrastructure and
	// control-plane endpoint before it makes a machine.
	if len(machines) == 0 && ptr.Deref(cluster.Status.Initialization.InfrastructureProvisioned, false) && cluster.Spec.ControlPlaneEndpoint.IsValid() {
		if err := createControlPlaneMachine(ctx, c, cluster, kcp); err != nil {
			return fmt.Errorf("creating the control plane's machine: %w", err)
		}
		log.Info("Created the control plane's machine", "namespace", kcp.Namespace, "kubeadmControlPlane", kcp.Name)
		if machines, err = controlPlaneMachines(ctx, c, kcp); err != nil {
			return err
		}
	}
	return updateControlPlaneStatus(ctx, c, workload, cluster, kcp, machines)
}

// deleteControlPlane deletes kcp's machines once the cluster's workers are
// gone, as KubeadmControlPlane does, and then lets kcp go.
func deleteControlPlane(ctx context.Context, c client.Client, cluster *clusterv1.Cluster, kcp *controlplanev1.KubeadmControlPlane) error {
	if !controllerutil.ContainsFinalizer(kcp, controlplanev1.KubeadmControlPlaneFinalizer) {
		return nil
	}
	all := &clusterv1.MachineList{}
	if err := c.List(ctx, all, client.InNamespace(kcp.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster.Name}); err != nil {
		return err
	}
	for _, m := range all.Items {
		if _, cp := m.Labels[clusterv1.MachineControlPlaneLabel]; !cp {
			return nil // workers first
		}
	}
	machines, err := controlPlaneMachines(ctx, c, kcp)
	if err != nil {
		return err
	}
	for i := range machines {
		if err := client.IgnoreNotFound(c.Delete(ctx, &machines[i])); err != nil {
			return err
		}
	}
	if len(machines) > 0 {
		return nil
	}
	patch := client.MergeFromWithOptions(kcp.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(kcp, controlplanev1.KubeadmControlPlaneFinalizer)
	return c.Patch(ctx, kcp, patch)
}

// controlPlaneMachines are the Machines kcp controls.
func controlPlaneMachines(ctx context.Context, c client.Client, kcp *controlplanev1.KubeadmControlPlane) ([]clusterv1.Machine, error) {
	l := &clusterv1.MachineList{}
	if err := c.List(ctx, l, client.InNamespace(kcp.Namespace), client.MatchingLabels{clusterv1.MachineControlPlaneNameLabel: kcp.Name}); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(l.Items, func(m clusterv1.Machine) bool { return !metav1.IsControlledBy(&m, kcp) }), nil
}

// createControlPlaneMachine creates the control plane's machine: its
// bootstrap data, its HybridMachine and then the Machine, named after kcp
// (a second try after a crash finds what the first created).
func createControlPlaneMachine(ctx context.Context, c client.Client, cluster *clusterv1.Cluster, kcp *controlplanev1.KubeadmControlPlane) error {
	ref := kcp.Spec.MachineTemplate.Spec.InfrastructureRef
	if ref.APIGroup != infrav1.GroupVersion.Group || ref.Kind != "HybridMachineTemplate" {
		return fmt.Errorf("spec.machineTemplate.spec.infrastructureRef: the stand-in clones HybridMachineTemplates, not %s %s", ref.Kind, ref.APIGroup)
	}
	tmpl := &infrav1.HybridMachineTemplate{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: kcp.Namespace, Name: ref.Name}, tmpl); err != nil {
		return err
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(kcp)
	if err != nil {
		return err
	}
	userData, err := initCloudConfig(&unstructured.Unstructured{Object: u})
	if err != nil {
		return err
	}
	name := kcp.Name + "-0"
	// spec.machineTemplate.metadata's labels and annotations, with those
	// KubeadmControlPlane sets on its Machines.
	labels := maps.Clone(kcp.Spec.MachineTemplate.ObjectMeta.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[clusterv1.ClusterNameLabel] = cluster.Name
	labels[clusterv1.MachineControlPlaneLabel] = ""
	labels[clusterv1.MachineControlPlaneNameLabel] = kcp.Name
	machineAnnotations := maps.Clone(kcp.Spec.MachineTemplate.ObjectMeta.Annotations)
	infraAnnotations := maps.Clone(machineAnnotations)
	if infraAnnotations == nil {
		infraAnnotations = map[string]string{}
	}
	infraAnnotations[clusterv1.TemplateClonedFromNameAnnotation] = tmpl.Name
	infraAnnotations[clusterv1.TemplateClonedFromGroupKindAnnotation] = "HybridMachineTemplate." + infrav1.GroupVersion.Group
	owner := *metav1.NewControllerRef(kcp, controlplanev1.GroupVersion.WithKind("KubeadmControlPlane"))
	data := clusterSecret(ClusterOptions{Namespace: kcp.Namespace, Name: cluster.Name}, name+"-bootstrap", map[string][]byte{
		"value":  userData,
		"format": []byte("cloud-config"),
	})
	data.OwnerReferences = []metav1.OwnerReference{owner}
	hm := &infrav1.HybridMachine{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: kcp.Namespace, Labels: labels, Annotations: infraAnnotations,
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: tmpl.Spec.Template.Spec,
	}
	m := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: kcp.Namespace, Labels: labels, Annotations: machineAnnotations, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: clusterv1.MachineSpec{
			ClusterName:       cluster.Name,
			Version:           kcp.Spec.Version,
			Bootstrap:         clusterv1.Bootstrap{DataSecretName: ptr.To(data.Name)},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: "HybridMachine", Name: name},
		},
	}
	// A Secret left by an earlier machine of the name gets this one's data
	// and owner.
	if err := c.Create(ctx, data); apierrors.IsAlreadyExists(err) {
		old := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(data), old); err != nil {
			return err
		}
		old.Data, old.Labels, old.OwnerReferences = data.Data, data.Labels, data.OwnerReferences
		if err := c.Update(ctx, old); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	for _, o := range []client.Object{hm, m} {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// updateControlPlaneStatus writes kcp's status from its machines, as
// KubeadmControlPlane does (see playKubeadmControlPlanes).
func updateControlPlaneStatus(ctx context.Context, c, workload client.Client, cluster *clusterv1.Cluster, kcp *controlplanev1.KubeadmControlPlane, machines []clusterv1.Machine) error {
	before := kcp.DeepCopy()
	st := &kcp.Status
	var ready, available, upToDate int32
	var notReady []string
	versions := map[string]int32{}
	for i := range machines {
		m := &machines[i]
		if conditions.IsTrue(m, clusterv1.MachineReadyCondition) {
			ready++
		} else {
			notReady = append(notReady, m.Name)
		}
		if conditions.IsTrue(m, clusterv1.MachineAvailableCondition) {
			available++
		}
		// Up to date: of spec.version, and cloned from the template
		// spec.machineTemplate names now (KubeadmControlPlane also compares
		// the kubeadm configuration).
		hm := &infrav1.HybridMachine{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.InfrastructureRef.Name}, hm); client.IgnoreNotFound(err) != nil {
			return err
		}
		if m.Spec.Version == kcp.Spec.Version && hm.Annotations[clusterv1.TemplateClonedFromNameAnnotation] == kcp.Spec.MachineTemplate.Spec.InfrastructureRef.Name {
			upToDate++
		}
		versions[m.Spec.Version]++
	}
	if !ptr.Deref(st.Initialization.ControlPlaneInitialized, false) {
		initialised, err := nodeRegistered(ctx, workload, machines)
		if err != nil {
			return err
		}
		if initialised {
			st.Initialization.ControlPlaneInitialized = ptr.To(true)
		}
	}
	n := int32(len(machines))
	st.Replicas, st.ReadyReplicas, st.AvailableReplicas, st.UpToDateReplicas = &n, &ready, &available, &upToDate
	// Each version of the machines, with their number, lowest first; the
	// deprecated status.version is the lowest, as KubeadmControlPlane
	// writes them.
	st.Versions = nil
	for v, count := range versions {
		st.Versions = append(st.Versions, clusterv1.StatusVersion{Version: v, Replicas: count})
	}
	slices.SortFunc(st.Versions, func(a, b clusterv1.StatusVersion) int {
		x, errX := version.ParseGeneric(a.Version)
		y, errY := version.ParseGeneric(b.Version)
		if errX != nil || errY != nil {
			return strings.Compare(a.Version, b.Version)
		}
		switch {
		case x.LessThan(y):
			return -1
		case y.LessThan(x):
			return 1
		}
		return 0
	})
	if len(st.Versions) > 0 {
		st.Version = st.Versions[0].Version //nolint:staticcheck // written as KubeadmControlPlane writes it, for readers of the deprecated field
	}
	st.Selector = collections.ControlPlaneSelectorForCluster(cluster.Name).String()
	st.ObservedGeneration = kcp.Generation
	cond := metav1.Condition{Type: controlplanev1.KubeadmControlPlaneAvailableCondition, ObservedGeneration: kcp.Generation}
	switch {
	case !ptr.Deref(st.Initialization.ControlPlaneInitialized, false):
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, standInNotAvailableReason, "Control plane not yet initialized: no Node of its machine has its provider ID"
	case len(notReady) > 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, standInNotAvailableReason, fmt.Sprintf("Machine %s is not Ready", notReady[0])
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, standInAvailableReason
	}
	if r := ptr.Deref(kcp.Spec.Replicas, 1); r != 1 {
		cond.Reason = standInReplicasReason
		cond.Message = fmt.Sprintf("spec.replicas is %d: the simulation runs 1 control-plane machine. %s", r, cond.Message)
	}
	conditions.Set(kcp, cond)
	initCond := metav1.Condition{Type: controlplanev1.KubeadmControlPlaneInitializedCondition, ObservedGeneration: kcp.Generation,
		Status: metav1.ConditionFalse, Reason: controlplanev1.KubeadmControlPlaneNotInitializedReason}
	if ptr.Deref(st.Initialization.ControlPlaneInitialized, false) {
		initCond.Status, initCond.Reason = metav1.ConditionTrue, controlplanev1.KubeadmControlPlaneInitializedReason
	}
	conditions.Set(kcp, initCond)
	if equality.Semantic.DeepEqual(before.Status, kcp.Status) {
		return nil
	}
	return c.Status().Patch(ctx, kcp, client.MergeFrom(before))
}

// nodeRegistered is whether a Node of one of machines is registered in the
// workload cluster with the machine's provider ID.
func nodeRegistered(ctx context.Context, workload client.Client, machines []clusterv1.Machine) (bool, error) {
	nodes := &corev1.NodeList{}
	if err := workload.List(ctx, nodes); err != nil {
		return false, err
	}
	for _, m := range machines {
		if m.Spec.ProviderID != "" && slices.ContainsFunc(nodes.Items, func(n corev1.Node) bool { return n.Spec.ProviderID == m.Spec.ProviderID }) {
			return true, nil
		}
	}
	return false, nil
}
