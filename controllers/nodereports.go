package controllers

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/controllers/clustercache"

	"github.com/capwin/capwin/node-components/report"
)

// NodeReports is where the HybridMachine reconciler reads a joining Windows
// node's progress: the report its agent writes, whose wire format is
// node-components/report (the JSON of report.Progress). The controllers
// read it only through this source, never through the agent's packages.
// Today the one source is the workload cluster's ConfigMap
// (ConfigMapReports).
type NodeReports interface {
	// Latest returns the latest report of the node of Machine machine in
	// Cluster cluster, as the node wrote it. found is false while the
	// source holds none or cannot be reached for now: the node may not
	// have reported yet, the workload cluster may not be up; neither is an
	// error, and the caller keeps the last report it had. An error says
	// reading failed otherwise, and the caller looks again later.
	Latest(ctx context.Context, cluster client.ObjectKey, machine string) (data string, found bool, err error)
}

// ConfigMapReports reads a node's report from the ConfigMap named after
// its Machine in the workload cluster's report.ConfigMapNamespace, key
// report.ConfigMapKey, with an uncached GET through the ClusterCache (a
// report just written is read as it is). The HybridMachine reconciler
// watches those ConfigMaps (progressWatcher), so that each report wakes
// the node's machine.
type ConfigMapReports struct {
	ClusterCache clustercache.ClusterCache
}

// Latest reads the report; a cluster the ClusterCache is not connected to,
// a missing ConfigMap and one without the key are no report yet.
func (c ConfigMapReports) Latest(ctx context.Context, cluster client.ObjectKey, machine string) (string, bool, error) {
	cm := &corev1.ConfigMap{}
	remote, err := c.ClusterCache.GetUncachedClient(ctx, cluster)
	if err == nil {
		err = remote.Get(ctx, client.ObjectKey{Namespace: report.ConfigMapNamespace, Name: machine}, cm)
	}
	switch {
	case err == nil:
	case apierrors.IsNotFound(err):
		return "", false, nil
	case errors.Is(err, clustercache.ErrClusterNotConnected):
		ctrl.LoggerFrom(ctx).V(4).Info("Not reading the node's progress: no connection to the workload cluster", "reason", err.Error())
		return "", false, nil
	default:
		return "", false, err
	}
	data, found := cm.Data[report.ConfigMapKey]
	return data, found && data != "", nil
}
