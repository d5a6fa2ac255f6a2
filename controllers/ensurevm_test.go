package controllers

import (
	"context"
	"testing"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

// endedThenFailed is a platform whose EnsureMachine says that the recorded
// operation ended and that the step after it failed.
type endedThenFailed struct {
	platform.Platform
	ended bool
}

func (p endedThenFailed) EnsureMachine(context.Context, *platform.Machine) (platform.MachineState, error) {
	return platform.MachineState{OperationEnded: p.ended}, platform.WithRetryAfter(platform.NewError(platform.ErrUnavailable, "throttled"), 0)
}

// TestEndedOperationIsClearedOnError: an operation the platform says has
// ended is cleared from the status even though EnsureMachine failed after
// it, so that the next reconcile does not follow it again; one the
// platform says nothing of is kept, to be polled again.
func TestEndedOperationIsClearedOnError(t *testing.T) {
	for _, ended := range []bool{true, false} {
		op := infrav1.MachineOperation{Type: infrav1.MachineOperationCreateNetworkInterface, ID: "token"}
		s := &machineScope{hm: &infrav1.HybridMachine{Status: infrav1.HybridMachineStatus{Operation: op}}, platform: endedThenFailed{ended: ended}}
		if _, next, _ := (&HybridMachineReconciler{}).ensureVM(t.Context(), s); next {
			t.Errorf("ended=%v: the reconcile went on after a failed EnsureMachine", ended)
		}
		if got := s.hm.Status.Operation.IsZero(); got != ended {
			t.Errorf("ended=%v: operation cleared %v, want %v", ended, got, ended)
		}
	}
}
