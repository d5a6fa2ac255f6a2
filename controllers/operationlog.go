package controllers

import (
	"context"
	"errors"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

// The lines a person reads to follow what capwin asks of a cloud: each
// platform operation (a vCenter clone or delete task, an Azure VM create or
// delete, a cluster's network) logged once when it starts and once when it
// ends, on the reconciler's logger, which names the HybridMachine or
// HybridCluster (and the Machine and Cluster) as Cluster API's logging
// guide asks. An operation's ID is never logged: on Azure it is a poller's
// resume token, whose URLs say more than a log needs.

// logMachineOperation logs the change from the operation a machine had
// recorded to the one it records now. err is what the platform said as
// the prior operation ended, if it ended in an error.
func logMachineOperation(ctx context.Context, prior, next infrav1.MachineOperation, err error) {
	if prior == next {
		return
	}
	log := ctrl.LoggerFrom(ctx)
	if !prior.IsZero() {
		logEnded(log, string(prior.Type), "", err)
	}
	if !next.IsZero() {
		log.Info("Platform operation started", "operation", string(next.Type))
	}
}

// logClusterOperation is logMachineOperation's for a cluster's operations,
// which also name the resource they act on.
func logClusterOperation(ctx context.Context, prior, next infrav1.ClusterOperation, err error) {
	if prior == next {
		return
	}
	log := ctrl.LoggerFrom(ctx)
	if !prior.IsZero() {
		logEnded(log, string(prior.Type), prior.Resource, err)
	}
	if !next.IsZero() {
		log.Info("Platform operation started", "operation", string(next.Type), "resource", next.Resource)
	}
}

func logEnded(log logr.Logger, operation, resource string, err error) {
	kv := []any{"operation", operation}
	if resource != "" {
		kv = append(kv, "resource", resource)
	}
	switch {
	case err == nil:
		log.Info("Platform operation ended", kv...)
	case errors.Is(err, platform.ErrOperationFailed), errors.Is(err, platform.ErrInsufficientCapacity), errors.Is(err, platform.ErrMachineGone):
		log.Info("Platform operation failed", append(kv, "reason", err.Error())...)
	default:
		// Not followed any more (the platform could not be asked): the
		// next reconcile looks at the resource itself.
		log.Info("Platform operation no longer followed", append(kv, "reason", err.Error())...)
	}
}
