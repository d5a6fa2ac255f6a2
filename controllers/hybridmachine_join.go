package controllers

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/util"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/node-components/discovery"
)

// progressPoll is how often a joining Windows node's report is read from
// the workload cluster: one uncached GET of one ConfigMap there, and one
// reconcile (one vCenter round trip), per joining machine each time.
const progressPoll = 5 * time.Second

// waitForNodeReport marks a Windows machine as waiting for its node's
// report until the node reports; a Linux machine (kubeadm joins it,
// without capwin's agent) gets no NodeJoined condition.
func (r *HybridMachineReconciler) waitForNodeReport(_ context.Context, s *machineScope) (ctrl.Result, bool, error) {
	if s.hm.Spec.OS.Type == infrav1.OSWindows && s.hm.Status.NodeBootstrap.State == "" && !s.machine.Status.NodeRef.IsDefined() {
		setNodeJoined(s.hm, nodeJoined(false, infrav1.NodeBootstrapStatus{}, ""))
	}
	return ctrl.Result{}, true, nil
}

// readNodeProgress reads a joining Windows node's report into
// status.nodeBootstrap and NodeJoined, and looks again every progressPoll
// until the node reported Joined. Once the Machine has a nodeRef the
// kubelet has registered while the agent still runs its last phases: the
// report is read on while it says a phase runs and is recent (the agent's
// waits end within its node timeout), so the status ends with the join's
// outcome rather than the phase the Node appeared in. A workload cluster
// that cannot be reached, or no report yet, leaves the last one as it is:
// neither fails the reconcile.
func (r *HybridMachineReconciler) readNodeProgress(ctx context.Context, s *machineScope) (ctrl.Result, bool, error) {
	if s.hm.Spec.OS.Type != infrav1.OSWindows {
		return ctrl.Result{}, true, nil
	}
	nodeRef := s.machine.Status.NodeRef.IsDefined()
	if s.hm.Status.NodeBootstrap.State == infrav1.NodeBootstrapJoined || (nodeRef && !stillRunning(s.hm.Status.NodeBootstrap, time.Now())) {
		setNodeJoined(s.hm, nodeJoined(nodeRef, s.hm.Status.NodeBootstrap, ""))
		return ctrl.Result{}, true, nil
	}
	data, found := r.progressReport(ctx, s)
	unreadable := ""
	if found {
		st, err := parseProgress(data)
		if err != nil {
			unreadable = err.Error()
		} else {
			s.hm.Status.NodeBootstrap = st
		}
	}
	setNodeJoined(s.hm, nodeJoined(nodeRef, s.hm.Status.NodeBootstrap, unreadable))
	if s.hm.Status.NodeBootstrap.State == infrav1.NodeBootstrapJoined || (nodeRef && !stillRunning(s.hm.Status.NodeBootstrap, time.Now())) {
		return ctrl.Result{}, true, nil
	}
	return ctrl.Result{RequeueAfter: progressPoll}, true, nil
}

// agentNodeTimeout is how long a node's agent waits for the kubelet and the
// pod network at most (its DefaultNodeTimeout): a Running report older
// than that will not change.
const agentNodeTimeout = 10 * time.Minute

// stillRunning is whether a report says a phase runs and was written
// within agentNodeTimeout of now.
func stillRunning(st infrav1.NodeBootstrapStatus, now time.Time) bool {
	return st.State == infrav1.NodeBootstrapRunning && !st.LastUpdateTime.IsZero() && now.Sub(st.LastUpdateTime.Time) < agentNodeTimeout
}

// progressReport reads the node's report from the ConfigMap named after
// the Machine in the workload cluster, uncached: a cached read would watch
// every ConfigMap of the workload cluster. found is false while the
// cluster cannot be reached or holds no report.
func (r *HybridMachineReconciler) progressReport(ctx context.Context, s *machineScope) (data string, found bool) {
	log := ctrl.LoggerFrom(ctx)
	c, err := r.ClusterCache.GetUncachedClient(ctx, util.ObjectKey(s.cluster))
	if err != nil {
		log.V(4).Info("Not reading the node's progress: no connection to the workload cluster", "reason", err.Error())
		return "", false
	}
	cm := &corev1.ConfigMap{}
	err = c.Get(ctx, client.ObjectKey{Namespace: discovery.ProgressNamespace, Name: s.machine.Name}, cm)
	if err != nil {
		if !apierrors.IsNotFound(err) {
			log.V(2).Info("Reading the node's progress failed; trying again later", "error", err.Error())
		}
		return "", false
	}
	data, found = cm.Data[discovery.ProgressKey]
	return data, found && data != ""
}
