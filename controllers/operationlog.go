package controllers

import (
	"context"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

// The lines a person reads to follow what capwin asks of a cloud: each
// platform operation (a vCenter clone or delete task, an Azure VM create or
// delete, a cluster's network) logged once when it starts and once when it
// ends, on the reconciler's logger, which names the HybridMachine or
// HybridCluster (and the Machine and Cluster) as Cluster API's logging
// guide asks. Operations are told apart by their type (and a cluster's by
// the resource too), never by their ID: on Azure the ID is a poller's
// resume token, which changes as the operation goes on (its state is in
// it), and whose URLs say more than a log needs; it is never logged.

// logMachineOperation logs the change from the operation a machine had
// recorded to the one it records now. err is what the platform said as
// the prior operation ended, if it ended in an error.
func logMachineOperation(ctx context.Context, prior, next infrav1.MachineOperation, err error) {
	if prior.IsZero() == next.IsZero() && prior.Type == next.Type {
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
	if prior.IsZero() == next.IsZero() && prior.Type == next.Type && prior.Resource == next.Resource {
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

// logEnded says an operation is no longer the one recorded. With an
// error, whether the operation failed or ended and the step after it
// failed is the platform's to say (the condition's message): the line says
// only that the machine or cluster no longer follows it, and why.
func logEnded(log logr.Logger, operation, resource string, err error) {
	kv := []any{"operation", operation}
	if resource != "" {
		kv = append(kv, "resource", resource)
	}
	if err == nil {
		log.Info("Platform operation ended", kv...)
		return
	}
	log.Info("Platform operation no longer followed", append(kv, "reason", err.Error())...)
}
