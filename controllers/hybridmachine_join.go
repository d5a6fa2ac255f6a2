package controllers

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	"github.com/capwin/capwin/node-components/discovery"
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

// progressReport reads the node's report from the ConfigMap named after
// the Machine in the workload cluster's progress namespace, with an
// uncached GET (a report just written is read as it is). It also watches that
// namespace's ConfigMaps there (and only those: see ClusterCacheOptions),
// so that each report wakes the node's HybridMachine; watched says the
// watch runs, and the caller polls when it does not. found is false while
// the cluster cannot be reached or holds no report.
func (r *HybridMachineReconciler) progressReport(ctx context.Context, s *machineScope) (data string, found, watched bool) {
	log := ctrl.LoggerFrom(ctx)
	key := util.ObjectKey(s.cluster)
	cm := &corev1.ConfigMap{}
	cmKey := client.ObjectKey{Namespace: discovery.ProgressNamespace, Name: s.machine.Name}
	watched = r.controller != nil && r.ClusterCache.Watch(ctx, key, r.progressWatcher(key)) == nil
	c, err := r.ClusterCache.GetUncachedClient(ctx, key)
	if err == nil {
		err = c.Get(ctx, cmKey, cm)
	}
	if err != nil {
		switch {
		case apierrors.IsNotFound(err):
		case errors.Is(err, clustercache.ErrClusterNotConnected):
			log.V(4).Info("Not reading the node's progress: no connection to the workload cluster", "reason", err.Error())
		default:
			log.V(2).Info("Reading the node's progress failed; trying again later", "error", err.Error())
			watched = false
		}
		return "", false, watched
	}
	data, found = cm.Data[discovery.ProgressKey]
	return data, found && data != "", watched
}

// progressWatcher watches a workload cluster's progress ConfigMaps: each
// report a node writes wakes the HybridMachine of the Machine it is named
// after. The ClusterCache adds it once per connection.
func (r *HybridMachineReconciler) progressWatcher(cluster client.ObjectKey) clustercache.Watcher {
	return clustercache.NewWatcher(clustercache.WatcherOptions{
		Name:    "hybridmachine-watch-node-progress",
		Watcher: r.controller,
		Kind:    &corev1.ConfigMap{},
		EventHandler: handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			if o.GetNamespace() != discovery.ProgressNamespace {
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
	o.ByObject[&corev1.ConfigMap{}] = cache.ByObject{Namespaces: map[string]cache.Config{discovery.ProgressNamespace: {}}}
	return o
}
