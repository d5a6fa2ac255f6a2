package controllers

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	capisetup "sigs.k8s.io/cluster-api/core/setup"
	"sigs.k8s.io/cluster-api/util"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/node-components/report"
)

// progressPoll is how often a joining Windows node's report is read from
// the workload cluster while its progress namespace cannot be watched
// there: one reconcile per joining machine each time. Once the watch
// runs, each report the node writes wakes its HybridMachine instead, and
// a connection to the cluster wakes its machines.
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
// status.nodeBootstrap and NodeJoined until the node reported Joined: the
// watch on the reports wakes it, or, while there is none, it looks again
// every ProgressPoll. Once the Machine has a nodeRef the
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
	data, found, watched := r.progressReport(ctx, s)
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
	if s.hm.Status.NodeBootstrap.State == infrav1.NodeBootstrapJoined || (nodeRef && !stillRunning(s.hm.Status.NodeBootstrap, time.Now())) || watched {
		return ctrl.Result{}, true, nil
	}
	poll := r.ProgressPoll
	if poll == 0 {
		poll = progressPoll
	}
	return ctrl.Result{RequeueAfter: poll}, true, nil
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

// progressReport reads the node's report from the reconciler's
// NodeReports. It also watches the workload cluster's progress ConfigMaps
// (and only those: see ClusterCacheOptions), so that each report wakes the
// node's HybridMachine; watched says the watch runs, and the caller polls
// when it does not, or when reading the report failed. found is false
// while the source holds no report or cannot be reached.
func (r *HybridMachineReconciler) progressReport(ctx context.Context, s *machineScope) (data string, found, watched bool) {
	key := util.ObjectKey(s.cluster)
	watched = r.controller != nil && r.ClusterCache.Watch(ctx, key, r.progressWatcher(key)) == nil
	data, found, err := r.nodeReports().Latest(ctx, key, s.machine.Name)
	if err != nil {
		ctrl.LoggerFrom(ctx).V(2).Info("Reading the node's progress failed; trying again later", "error", err.Error())
		return "", false, false
	}
	return data, found, watched
}

// nodeReports is NodeReports, or by default the ConfigMaps in the workload
// clusters through ClusterCache.
func (r *HybridMachineReconciler) nodeReports() NodeReports {
	if r.NodeReports != nil {
		return r.NodeReports
	}
	return ConfigMapReports{ClusterCache: r.ClusterCache}
}

// progressWatcher watches a workload cluster's progress ConfigMaps (the
// source ConfigMapReports reads): each report a node writes wakes the
// HybridMachine of the Machine it is named after. The ClusterCache adds it
// once per connection.
func (r *HybridMachineReconciler) progressWatcher(cluster client.ObjectKey) clustercache.Watcher {
	return clustercache.NewWatcher(clustercache.WatcherOptions{
		Name:    "hybridmachine-watch-node-progress",
		Watcher: r.controller,
		Kind:    &corev1.ConfigMap{},
		EventHandler: handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			if o.GetNamespace() != report.ConfigMapNamespace {
				return nil
			}
			m := &clusterv1.Machine{}
			if err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: o.GetName()}, m); err != nil {
				return nil
			}
			if m.Spec.ClusterName != cluster.Name {
				return nil
			}
			return machineToHybridMachine(ctx, m)
		}),
	})
}

// ClusterCacheOptions are the cache options of the ClusterCache the
// providers share: Cluster API's, plus ConfigMaps cached only from the
// progress namespace, the one place a workload cluster's ConfigMaps are
// watched (progressReport).
func ClusterCacheOptions() clustercache.CacheOptions {
	o := capisetup.ClusterCacheCacheOptions()
	if o.ByObject == nil {
		o.ByObject = map[client.Object]cache.ByObject{}
	}
	o.ByObject[&corev1.ConfigMap{}] = cache.ByObject{Namespaces: map[string]cache.Config{report.ConfigMapNamespace: {}}}
	return o
}
