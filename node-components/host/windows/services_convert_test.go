package windows

import (
	"errors"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/capwin/capwin/node-components/host"
)

func TestStartTypes(t *testing.T) {
	for _, st := range []host.StartType{host.StartAutomatic, host.StartManual, host.StartDisabled} {
		if got := startType(scStartType(st)); got != st {
			t.Errorf("%s round-trips to %s", st, got)
		}
	}
	for _, driver := range []uint32{scBootStart, scSystemStart, 9} {
		if got := startType(driver); got == host.StartAutomatic || got == host.StartManual || got == host.StartDisabled {
			t.Errorf("start type %d reads as %s", driver, got)
		}
	}
}

func TestServiceState(t *testing.T) {
	for s, want := range map[uint32]host.ServiceState{
		scStopped: host.ServiceStopped, scStartPending: host.ServiceStarting,
		scRunning: host.ServiceRunning, scStopPending: host.ServiceStopping, scPaused: "Paused",
		scContinuePending: "ContinuePending", scPausePending: "PausePending", 42: "State(42)",
	} {
		if got := serviceState(s); got != want {
			t.Errorf("serviceState(%d) = %s, want %s", s, got, want)
		}
	}
}

func TestRecoveryActions(t *testing.T) {
	delays := []time.Duration{10 * time.Second, time.Minute}
	actions := recoveryActions(delays)
	if want := []recoveryAction{{Type: scActionRestart, Delay: 10 * time.Second}, {Type: scActionRestart, Delay: time.Minute}}; !slices.Equal(actions, want) {
		t.Errorf("recoveryActions = %+v", actions)
	}
	// A delay is stored in whole milliseconds.
	if got := recoveryActions([]time.Duration{1500 * time.Microsecond}); got[0].Delay != time.Millisecond {
		t.Errorf("recoveryActions(1.5ms) = %+v", got)
	}
	// Actions capwin never registers (none, reboot, run a command) are
	// not delays.
	actions = append(actions, recoveryAction{Type: 0}, recoveryAction{Type: 2, Delay: time.Hour}, recoveryAction{Type: 3, Delay: time.Hour})
	if got := restartDelays(actions); !slices.Equal(got, delays) {
		t.Errorf("restartDelays = %v", got)
	}
	if got := restartDelays(nil); got != nil {
		t.Errorf("restartDelays(nil) = %v", got)
	}
}

func TestExitError(t *testing.T) {
	err := exitError(errorServiceSpecificError, 3)
	if err.Error() != "service-specific exit code 3 (0x3)" {
		t.Errorf("exitError = %v", err)
	}
	// ERROR_FILE_NOT_FOUND: the Errno's text is the OS's, Windows' on
	// Windows.
	err = exitError(2, 0)
	if !errors.Is(err, syscall.Errno(2)) {
		t.Errorf("exitError = %v, does not wrap Errno 2 (ERROR_FILE_NOT_FOUND)", err)
	}
	if err := exitError(0, 7); err.Error() != "exit code 0" {
		t.Errorf("exitError(0) = %v", err)
	}
}

func TestServiceRecord(t *testing.T) {
	spec := host.ServiceSpec{
		Name: "kubelet", Description: "The Kubernetes node agent",
		Command:       []string{`C:\Program Files\capwin\bin\capwin-node.exe`, "service", "run", "--", `C:\k\kubelet.exe`, "--v=2"},
		Environment:   []string{"A=1"},
		Dependencies:  []string{"containerd"},
		StartType:     host.StartAutomatic,
		RestartDelays: []time.Duration{5 * time.Second, 1500 * time.Microsecond},
		ResetPeriod:   time.Hour + time.Millisecond,
	}
	r := newServiceRecord(spec)
	want := serviceRecord{
		Name: "kubelet", DisplayName: "kubelet", Description: "The Kubernetes node agent",
		CommandLine:  `"C:\Program Files\capwin\bin\capwin-node.exe" service run -- C:\k\kubelet.exe --v=2`,
		Dependencies: []string{"containerd"},
		StartType:    scAutoStart,
		Actions:      []recoveryAction{{Type: scActionRestart, Delay: 5 * time.Second}, {Type: scActionRestart, Delay: time.Millisecond}},
		ResetSeconds: 3601,
		Environment:  []string{"A=1"},
	}
	if d := cmp.Diff(want, r); d != "" {
		t.Errorf("newServiceRecord (-want +got):\n%s", d)
	}

	// What Get reads back is the spec as the service manager stores it:
	// the name for a missing display name, whole milliseconds and seconds.
	back := spec
	back.DisplayName = "kubelet"
	back.RestartDelays = []time.Duration{5 * time.Second, time.Millisecond}
	back.ResetPeriod = 3601 * time.Second
	if d := cmp.Diff(back, r.spec()); d != "" {
		t.Errorf("spec read back (-want +got):\n%s", d)
	}

	// Without restarts the reset period means nothing and is not read;
	// no dependencies read as none.
	plain := host.ServiceSpec{Name: "containerd", DisplayName: "containerd", Command: []string{`C:\bin\containerd.exe`},
		StartType: host.StartDisabled, Dependencies: []string{}, ResetPeriod: time.Hour}
	got := newServiceRecord(plain).spec()
	plain.Dependencies, plain.ResetPeriod = nil, 0
	if d := cmp.Diff(plain, got); d != "" {
		t.Errorf("spec without restarts read back (-want +got):\n%s", d)
	}
}
