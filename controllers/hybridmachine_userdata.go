package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

// The bootstrap provider replaces a token that went missing before the
// node joined and rewrites the data Secret; a VM cloned before that still
// holds the old data, which the guest reads again when it boots again to
// retry its join. So while the node has not joined, the VM's user data is
// kept the Machine's current data.

// readCurrentBootstrapData reads the data of a provisioned machine whose
// node has not joined (so the data is not cleared from the VM), and hands
// it to the platform to compare with the VM's only when it is not the data
// last seen on the VM. A Secret that is gone or unreadable, or in a format
// the OS does not run, leaves the VM's data alone and fails nothing.
func (r *HybridMachineReconciler) readCurrentBootstrapData(ctx context.Context, s *machineScope) (ctrl.Result, bool, error) {
	name := ptr.Deref(s.machine.Spec.Bootstrap.DataSecretName, "")
	if s.machine.Status.NodeRef.IsDefined() || name == "" {
		return ctrl.Result{}, true, nil
	}
	data := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.machine.Namespace, Name: name}, data); err != nil {
		ctrl.LoggerFrom(ctx).V(2).Info("Not comparing the VM's user data: the bootstrap data Secret cannot be read", "Secret", name, "error", err.Error())
		return ctrl.Result{}, true, nil
	}
	value := data.Data["value"]
	if len(value) == 0 || bootstrapDataFormatMismatch(name, data.Data, s.hm.Spec.OS.Type) != nil ||
		r.onVM.holds(client.ObjectKeyFromObject(s.hm), value) {
		return ctrl.Result{}, true, nil
	}
	s.vm.BootstrapData = value
	return ctrl.Result{}, true, nil
}

// writeBootstrapData rewrites the user data of a running VM whose node has
// not joined when it is not the Machine's current data, with one platform
// operation, recorded and looked at again shortly; it never waits.
func (r *HybridMachineReconciler) writeBootstrapData(ctx context.Context, s *machineScope) (ctrl.Result, bool, error) {
	data := s.vm.BootstrapData
	if !s.state.Running || len(data) == 0 || s.machine.Status.NodeRef.IsDefined() {
		return ctrl.Result{}, true, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("bytes", len(data), "sha256", dataHash(data))
	if !s.state.BootstrapDataStale {
		r.onVM.remember(client.ObjectKeyFromObject(s.hm), data)
		if s.hm.Status.Operation.Type == infrav1.MachineOperationWriteBootstrapData {
			logMachineOperation(ctx, s.hm.Status.Operation, infrav1.MachineOperation{}, nil)
			s.hm.Status.Operation = infrav1.MachineOperation{}
			log.Info("The VM's user data is the Machine's current bootstrap data")
		}
		return ctrl.Result{}, true, nil
	}
	op, err := s.platform.WriteBootstrapData(ctx, &s.vm)
	if errors.Is(err, platform.ErrOperationFailed) {
		// The next attempt starts a new task.
		s.hm.Status.Operation = infrav1.MachineOperation{}
		return ctrl.Result{}, false, err
	}
	if err != nil {
		return retryAfterProvisioned(err)
	}
	if s.hm.Status.Operation.Type != op.Type {
		// Once per rewrite, not per poll: on Azure the operation's ID
		// changes as it goes on, and it is not logged.
		log.Info("Rewriting the VM's user data: the Machine's bootstrap data changed after the VM was made")
	}
	logMachineOperation(ctx, s.hm.Status.Operation, op, nil)
	s.hm.Status.Operation = op
	return ctrl.Result{RequeueAfter: shortOperationPoll}, true, nil
}

// dataHash names data in a log line without showing it.
func dataHash(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:8])
}

// dataHashes remembers, per machine, the hash of the bootstrap data last
// seen on its VM. It is only a shortcut: a controller that restarts
// compares once more.
type dataHashes struct {
	mu sync.Mutex
	m  map[types.NamespacedName][sha256.Size]byte
}

func (d *dataHashes) holds(key types.NamespacedName, data []byte) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	h, ok := d.m[key]
	return ok && h == sha256.Sum256(data)
}

func (d *dataHashes) remember(key types.NamespacedName, data []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[types.NamespacedName][sha256.Size]byte{}
	}
	d.m[key] = sha256.Sum256(data)
}

func (d *dataHashes) forget(key types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.m, key)
}
