package controllers

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

func TestVMProvisioned(t *testing.T) {
	tests := []struct {
		name    string
		st      platform.MachineState
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{"running", platform.MachineState{Exists: true, Running: true, ProviderID: "vsphere://x"}, metav1.ConditionTrue, infrav1.HybridMachineVMProvisionedReason, ""},
		{"create runs", platform.MachineState{Operation: infrav1.MachineOperation{Type: infrav1.MachineOperationCreate, ID: "task-1"}},
			metav1.ConditionFalse, infrav1.HybridMachineCreatingReason, "operation Create (task-1)"},
		{"power-on runs", platform.MachineState{Exists: true, Operation: infrav1.MachineOperation{Type: infrav1.MachineOperationPowerOn, ID: "task-2"}},
			metav1.ConditionFalse, infrav1.HybridMachineStartingReason, "operation PowerOn (task-2)"},
		{"configure runs", platform.MachineState{Exists: true, Operation: infrav1.MachineOperation{Type: infrav1.MachineOperationConfigure, ID: "task-3"}},
			metav1.ConditionFalse, infrav1.HybridMachineStartingReason, "operation Configure (task-3)"},
		{"running without its static address", platform.MachineState{Exists: true, Running: true, ProviderID: "vsphere://x", NetworkNotApplied: "VMware Tools reports 192.168.0.9"},
			metav1.ConditionTrue, infrav1.HybridMachineNetworkNotAppliedReason, "VMware Tools reports 192.168.0.9"},
		{"a long ID is left out", platform.MachineState{Operation: infrav1.MachineOperation{Type: infrav1.MachineOperationCreate, ID: strings.Repeat("t", 65)}},
			metav1.ConditionFalse, infrav1.HybridMachineCreatingReason, "operation Create"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := vmProvisioned(tt.st)
			if c.Status != tt.status || c.Reason != tt.reason || c.Message != tt.message {
				t.Errorf("got %s %s %q, want %s %s %q", c.Status, c.Reason, c.Message, tt.status, tt.reason, tt.message)
			}
		})
	}
}

func TestBootstrapDataFormatMismatch(t *testing.T) {
	data := func(format ...string) map[string][]byte {
		d := map[string][]byte{"value": []byte("x")}
		for _, f := range format {
			d["format"] = []byte(f)
		}
		return d
	}
	tests := []struct {
		name    string
		data    map[string][]byte
		os      infrav1.OSType
		message string // "" for data the machine runs
	}{
		{"Windows runs capwin's payload", data("powershell"), infrav1.OSWindows, ""},
		{"Linux runs cloud-config", data("cloud-config"), infrav1.OSLinux, ""},
		{"Linux runs a Secret without a format key", data(), infrav1.OSLinux, ""},
		{"Windows refuses cloud-config", data("cloud-config"), infrav1.OSWindows,
			`Bootstrap data Secret m1-bootstrap has format "cloud-config"; a Windows machine runs format "powershell" (a PowerShell script for cloudbase-init, as a WindowsKubeadmConfig writes it): no VM is made`},
		{"Windows refuses a Secret without a format key", data(), infrav1.OSWindows,
			`Bootstrap data Secret m1-bootstrap has no format, which means "cloud-config"; a Windows machine runs format "powershell" (a PowerShell script for cloudbase-init, as a WindowsKubeadmConfig writes it): no VM is made`},
		{"Windows refuses ignition", data("ignition"), infrav1.OSWindows,
			`Bootstrap data Secret m1-bootstrap has format "ignition"; a Windows machine runs format "powershell" (a PowerShell script for cloudbase-init, as a WindowsKubeadmConfig writes it): no VM is made`},
		{"Linux refuses capwin's payload", data("powershell"), infrav1.OSLinux,
			`Bootstrap data Secret m1-bootstrap has format "powershell"; a Linux machine runs format "cloud-config" (cloud-init's, as the kubeadm bootstrap provider writes it): no VM is made`},
		{"Linux refuses ignition", data("ignition"), infrav1.OSLinux,
			`Bootstrap data Secret m1-bootstrap has format "ignition"; a Linux machine runs format "cloud-config" (cloud-init's, as the kubeadm bootstrap provider writes it): no VM is made`},
		{"Linux runs a Secret with an empty format", data(""), infrav1.OSLinux, ""},
		{"an unknown OS runs nothing", data("cloud-config"), "Plan9",
			`Bootstrap data Secret m1-bootstrap has format "cloud-config"; capwin knows no bootstrap data format for OS "Plan9": no VM is made`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := bootstrapDataFormatMismatch("m1-bootstrap", tt.data, tt.os)
			switch {
			case tt.message == "" && c != nil:
				t.Errorf("refused with %q, want accepted", c.Message)
			case tt.message != "" && c == nil:
				t.Errorf("accepted, want refused with %q", tt.message)
			case c != nil && (c.Status != metav1.ConditionFalse || c.Reason != infrav1.HybridMachineBootstrapDataFormatMismatchReason || c.Message != tt.message):
				t.Errorf("got %s %s %q, want False %s %q", c.Status, c.Reason, c.Message, infrav1.HybridMachineBootstrapDataFormatMismatchReason, tt.message)
			}
		})
	}
}

func TestMachineErrorOutcome(t *testing.T) {
	taskFailed := platform.NewError(platform.ErrOperationFailed, "vCenter task failed")
	tests := []struct {
		name           string
		err            error
		reason         string // "" for no condition
		requeue        time.Duration
		returned       bool
		clearOperation bool
	}{
		{"session expired: quiet, soon", platform.WithRetryAfter(fmt.Errorf("%w: NotAuthenticated", platform.ErrSessionExpired), time.Second), "", time.Second, false, false},
		{"VM gone: wait for the user", platform.ErrMachineGone, infrav1.HybridMachineVMGoneReason, 0, false, false},
		{"operation failed: backoff, forget it", fmt.Errorf("%w: VirtualMachine.clone: DuplicateName", taskFailed), infrav1.HybridMachineOperationFailedReason, 0, true, true},
		{"no capacity: its own reason", fmt.Errorf("%w (%w): VirtualMachine.clone", taskFailed, platform.ErrInsufficientCapacity), infrav1.HybridMachineInsufficientCapacityReason, 0, true, true},
		{"not found: retried", fmt.Errorf("%w: template w2022", platform.NewError(platform.ErrNotFound, "not found in vCenter")), infrav1.HybridMachineNotFoundReason, platform.DefaultRetry, false, false},
		{"invalid: waits for a change", fmt.Errorf("%w: spec.vsphere must be set", platform.ErrInvalid), infrav1.HybridMachineInvalidReason, 0, false, false},
		{"not supported: waits for a change", platform.NewError(platform.ErrNotSupported, "no Azure"), infrav1.HybridMachineInvalidReason, 0, false, false},
		{"unavailable: retried", platform.NewError(platform.ErrUnavailable, "vCenter did not answer"), infrav1.HybridMachinePlatformUnavailableReason, platform.DefaultRetry, false, false},
		{"unavailable, told when", platform.WithRetryAfter(platform.ErrUnavailable, time.Minute), infrav1.HybridMachinePlatformUnavailableReason, time.Minute, false, false},
		{"bad credentials", platform.NewError(platform.ErrAuthentication, "vCenter login failed"), infrav1.HybridMachinePlatformUnavailableReason, platform.DefaultRetry, false, false},
		{"no credentials", fmt.Errorf("%w: Secret x", platform.ErrCredentialsNotFound), infrav1.HybridMachinePlatformUnavailableReason, platform.DefaultRetry, false, false},
		{"identity not allowed", fmt.Errorf("%w: x", platform.ErrIdentityNotAllowed), infrav1.HybridMachinePlatformUnavailableReason, platform.DefaultRetry, false, false},
		{"anything else: backoff, no condition", errors.New("boom"), "", 0, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := machineErrorOutcome(tt.err)
			switch {
			case tt.reason == "" && o.condition != nil:
				t.Errorf("set condition %s, want none", o.condition.Reason)
			case tt.reason != "" && (o.condition == nil || o.condition.Reason != tt.reason):
				t.Errorf("condition %+v, want reason %s", o.condition, tt.reason)
			case tt.reason != "" && tt.reason != infrav1.HybridMachineVMGoneReason && o.condition.Message != tt.err.Error():
				t.Errorf("message %q, want the platform's %q", o.condition.Message, tt.err.Error())
			}
			if o.result.RequeueAfter != tt.requeue {
				t.Errorf("requeue after %v, want %v", o.result.RequeueAfter, tt.requeue)
			}
			if (o.err != nil) != tt.returned {
				t.Errorf("returned error %v, want returned=%v", o.err, tt.returned)
			}
			if o.clearOperation != tt.clearOperation {
				t.Errorf("clearOperation %v, want %v", o.clearOperation, tt.clearOperation)
			}
		})
	}
}

func TestConnectError(t *testing.T) {
	unreadable := connectError(errors.New("reading Secret ns/vc-creds: etcdserver: request timed out"))
	if o := machineErrorOutcome(unreadable); o.condition == nil || o.condition.Reason != infrav1.HybridMachinePlatformUnavailableReason ||
		o.result.RequeueAfter != platform.DefaultRetry || o.err != nil {
		t.Errorf("unreadable credentials: %+v", o)
	}
	refused := platform.NewError(platform.ErrAuthentication, "vCenter login failed")
	if got := connectError(refused); errors.Is(got, platform.ErrUnavailable) || got.Error() != refused.Error() {
		t.Errorf("a classified error was rewrapped: %v", got)
	}
}

func TestDeleting(t *testing.T) {
	if c := deleting(infrav1.MachineOperation{}); c.Reason != infrav1.HybridMachineDeletingReason || c.Message != "" {
		t.Errorf("no operation: %+v", c)
	}
	c := deleting(infrav1.MachineOperation{Type: infrav1.MachineOperationPowerOff, ID: "task-7"})
	if c.Reason != infrav1.HybridMachineDeletingReason || c.Message != "Waiting for operation PowerOff (task-7)" {
		t.Errorf("power-off: %+v", c)
	}
	if o := deleteErrorOutcome(platform.WithRetryAfter(platform.ErrSessionExpired, time.Second)); o.condition != nil || o.result.RequeueAfter != time.Second || o.err != nil {
		t.Errorf("an expired session while deleting: %+v", o)
	}
	if o := deleteErrorOutcome(errors.New("destroy failed")); o.condition == nil || o.condition.Message != "destroy failed" || o.err == nil {
		t.Errorf("a failed delete is reported and retried with backoff: %+v", o)
	}
}

func TestMachineAddresses(t *testing.T) {
	got := machineAddresses("w1", []string{"10.0.0.5", "fe80::1"})
	want := []clusterv1.MachineAddress{
		{Type: clusterv1.MachineHostName, Address: "w1"},
		{Type: clusterv1.MachineInternalIP, Address: "10.0.0.5"},
		{Type: clusterv1.MachineInternalIP, Address: "fe80::1"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestConditionsCarryTheGeneration: a condition says which spec it judged.
func TestConditionsCarryTheGeneration(t *testing.T) {
	hm := &infrav1.HybridMachine{ObjectMeta: metav1.ObjectMeta{Generation: 7}}
	setVMProvisioned(hm, waitingForBootstrapData())
	if c := conditions.Get(hm, infrav1.HybridMachineVMProvisionedCondition); c == nil || c.ObservedGeneration != 7 {
		t.Errorf("condition %+v, want observedGeneration 7", c)
	}
}

func TestPollFor(t *testing.T) {
	for op, want := range map[infrav1.MachineOperationType]time.Duration{
		infrav1.MachineOperationCreate:    operationPoll,
		infrav1.MachineOperationConfigure: shortOperationPoll,
		infrav1.MachineOperationPowerOn:   shortOperationPoll,
		infrav1.MachineOperationPowerOff:  operationPoll,
		infrav1.MachineOperationDelete:    operationPoll,
	} {
		if got := pollFor(infrav1.MachineOperation{Type: op, ID: "task-1"}); got != want {
			t.Errorf("%s: looked at again after %s, want %s", op, got, want)
		}
	}
}
