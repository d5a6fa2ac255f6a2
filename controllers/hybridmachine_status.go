package controllers

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

// The HybridMachine's conditions as small pure functions of what a
// reconcile found; conditions.Set stamps each with the observed generation.

func setVMProvisioned(hm *infrav1.HybridMachine, c metav1.Condition) {
	c.Type = infrav1.HybridMachineVMProvisionedCondition
	conditions.Set(hm, c)
}

func setBootstrapDataCleared(hm *infrav1.HybridMachine, c metav1.Condition) {
	c.Type = infrav1.HybridMachineBootstrapDataClearedCondition
	conditions.Set(hm, c)
}

func notYet(reason, message string) metav1.Condition {
	return metav1.Condition{Status: metav1.ConditionFalse, Reason: reason, Message: message}
}

func waitingForClusterInfrastructure() metav1.Condition {
	return notYet(infrav1.HybridMachineWaitingForClusterInfrastructureReason, "Waiting for the HybridCluster to be provisioned")
}

func waitingForBootstrapData() metav1.Condition {
	return notYet(infrav1.HybridMachineWaitingForBootstrapDataReason, "Waiting for the Machine's bootstrap data Secret")
}

func waitingForClusterToDelete() metav1.Condition {
	return notYet(infrav1.HybridMachineDeletingReason, "Waiting for the HybridCluster, whose credentials the VM is deleted with")
}

func waitingForNode() metav1.Condition {
	return notYet(infrav1.HybridMachineWaitingForNodeReason, "")
}

// bootstrapFormatHints say what writes the data a machine of each OS runs.
var bootstrapFormatHints = map[infrav1.OSType]string{
	infrav1.OSLinux:   "cloud-init's, as the kubeadm bootstrap provider writes it",
	infrav1.OSWindows: "a PowerShell script for cloudbase-init, as a WindowsKubeadmConfig writes it",
}

// bootstrapDataFormatMismatch is the VMProvisioned condition of bootstrap
// data that a machine of OS os cannot run, nil when it can run it. The
// format is the Secret's format key; a Secret without one (or with an
// empty one) is cloud-config, as the vSphere provider reads it. A VM given
// data in another format would boot and never join: cloud-init ignores
// capwin's PowerShell, and capwin's Windows images are prepared for
// capwin's payload, not for a kubeadm cloud-config.
func bootstrapDataFormatMismatch(secret string, data map[string][]byte, os infrav1.OSType) *metav1.Condition {
	want := os.BootstrapFormat()
	got := string(data["format"])
	has := fmt.Sprintf("Bootstrap data Secret %s has format %q", secret, got)
	if got == "" {
		got = infrav1.BootstrapFormatCloudConfig
		has = fmt.Sprintf("Bootstrap data Secret %s has no format, which means %q", secret, got)
	}
	if got == want && want != "" {
		return nil
	}
	needs := fmt.Sprintf("capwin knows no bootstrap data format for OS %q", os)
	if want != "" {
		needs = fmt.Sprintf("a %s machine runs format %q (%s)", os, want, bootstrapFormatHints[os])
	}
	c := notYet(infrav1.HybridMachineBootstrapDataFormatMismatchReason, has+"; "+needs+": no VM is made")
	return &c
}

func bootstrapDataCleared() metav1.Condition {
	return metav1.Condition{Status: metav1.ConditionTrue, Reason: infrav1.HybridMachineBootstrapDataClearedReason}
}

// bootstrapDataKept is the BootstrapDataCleared condition on a platform
// that keeps the data where capwin cannot remove it: true, as nothing is
// left to do, with the platform's words on where it stays.
func bootstrapDataKept(where string) metav1.Condition {
	return metav1.Condition{Status: metav1.ConditionTrue, Reason: infrav1.HybridMachineBootstrapDataKeptReason, Message: where}
}

// vmProvisioned is the VMProvisioned condition of an EnsureMachine state:
// creating or starting while an operation runs, true once none does (with
// reason NetworkNotApplied when the guest did not take its static address).
func vmProvisioned(st platform.MachineState) metav1.Condition {
	switch st.Operation.Type {
	case "":
		if st.NetworkNotApplied != "" {
			return metav1.Condition{Status: metav1.ConditionTrue, Reason: infrav1.HybridMachineNetworkNotAppliedReason, Message: st.NetworkNotApplied}
		}
		return metav1.Condition{Status: metav1.ConditionTrue, Reason: infrav1.HybridMachineVMProvisionedReason}
	case infrav1.MachineOperationCreate, infrav1.MachineOperationWaitForCreate:
		return notYet(infrav1.HybridMachineCreatingReason, operationMessage(st.Operation))
	}
	return notYet(infrav1.HybridMachineStartingReason, operationMessage(st.Operation))
}

// deleting is the VMProvisioned condition while the VM is deleted.
func deleting(op infrav1.MachineOperation) metav1.Condition {
	if op.IsZero() {
		return notYet(infrav1.HybridMachineDeletingReason, "")
	}
	return notYet(infrav1.HybridMachineDeletingReason, "Waiting for "+operationMessage(op))
}

// operationMessage names an operation for a condition's message; an ID
// too long to read (an Azure resume token) is left out.
func operationMessage(op infrav1.MachineOperation) string {
	if len(op.ID) > 64 {
		return fmt.Sprintf("operation %s", op.Type)
	}
	return fmt.Sprintf("operation %s (%s)", op.Type, op.ID)
}

// machineAddresses are the VM's host name and IP addresses.
func machineAddresses(computerName string, ips []string) []clusterv1.MachineAddress {
	addrs := []clusterv1.MachineAddress{{Type: clusterv1.MachineHostName, Address: computerName}}
	for _, ip := range ips {
		addrs = append(addrs, clusterv1.MachineAddress{Type: clusterv1.MachineInternalIP, Address: ip})
	}
	return addrs
}

// errorOutcome is what a platform error does to a reconcile: the condition
// it sets (nil: none), when it is tried again, the error returned to the
// controller (retried with backoff), and whether the recorded operation is
// forgotten.
type errorOutcome struct {
	condition      *metav1.Condition
	result         ctrl.Result
	err            error
	clearOperation bool
}

// vmGoneMessage tells the user what to do about a VM deleted behind
// capwin's back.
const vmGoneMessage = "The VM was deleted outside capwin and is not re-created (its provider ID would change): delete the Machine to replace it, as a MachineHealthCheck does"

// machineErrorOutcome maps a platform error met while making a machine. A
// recorded operation is kept unless it failed: forgetting a create in
// flight could start a second one.
func machineErrorOutcome(err error) errorOutcome {
	retry := ctrl.Result{RequeueAfter: platform.RetryAfter(err)}
	c := func(reason, message string) *metav1.Condition {
		cond := notYet(reason, message)
		return &cond
	}
	if o, ok := sessionExpired(err); ok {
		return o
	}
	switch {
	case errors.Is(err, platform.ErrMachineGone):
		return errorOutcome{condition: c(infrav1.HybridMachineVMGoneReason, vmGoneMessage)}
	case errors.Is(err, platform.ErrInsufficientCapacity):
		// Retried with the controller's backoff, so that an operation that
		// keeps failing does not keep the platform busy.
		return errorOutcome{condition: c(infrav1.HybridMachineInsufficientCapacityReason, err.Error()), err: err, clearOperation: true}
	case errors.Is(err, platform.ErrOperationFailed):
		return errorOutcome{condition: c(infrav1.HybridMachineOperationFailedReason, err.Error()), err: err, clearOperation: true}
	case errors.Is(err, platform.ErrNotFound):
		return errorOutcome{condition: c(infrav1.HybridMachineNotFoundReason, err.Error()), result: retry}
	case errors.Is(err, platform.ErrInvalid), errors.Is(err, platform.ErrNotSupported):
		// Waits for a change to the spec.
		return errorOutcome{condition: c(infrav1.HybridMachineInvalidReason, err.Error())}
	case errors.Is(err, platform.ErrUnavailable), errors.Is(err, platform.ErrAuthentication),
		errors.Is(err, platform.ErrCredentialsNotFound), errors.Is(err, platform.ErrIdentityNotAllowed):
		// A create the platform started without answering is not made
		// twice: the VM is found again by its ID derived from the machine.
		return errorOutcome{condition: c(infrav1.HybridMachinePlatformUnavailableReason, err.Error()), result: retry}
	}
	return errorOutcome{err: err}
}

// connectError is an error of finding the cluster's platform as the
// machine sees it: credentials that could not be read now (an API error, a
// bad namespace selector) make the platform unavailable to it, as a
// platform that does not answer does.
func connectError(err error) error {
	if machineErrorOutcome(err).condition == nil {
		return fmt.Errorf("%w: %w", platform.ErrUnavailable, err)
	}
	return err
}

// sessionExpired is the outcome of an expired platform session, on any
// object and in any phase: log in again soon, without a word.
func sessionExpired(err error) (errorOutcome, bool) {
	if !errors.Is(err, platform.ErrSessionExpired) {
		return errorOutcome{}, false
	}
	return errorOutcome{result: ctrl.Result{RequeueAfter: platform.RetryAfter(err)}}, true
}

// deleteErrorOutcome maps a platform error met while deleting a machine: a
// platform that is unavailable (throttled, unreachable) is tried again
// after its RetryAfter; a failed power-off or delete is reported and
// retried with backoff.
func deleteErrorOutcome(err error) errorOutcome {
	if o, ok := sessionExpired(err); ok {
		return o
	}
	c := notYet(infrav1.HybridMachineDeletingReason, err.Error())
	if errors.Is(err, platform.ErrUnavailable) {
		// Throttled or unreachable: tried again when the platform asked.
		return errorOutcome{condition: &c, result: ctrl.Result{RequeueAfter: platform.RetryAfter(err)}}
	}
	return errorOutcome{condition: &c, err: err}
}
