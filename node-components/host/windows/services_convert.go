package windows

// The conversions of this file, between a host.ServiceSpec and the service
// manager's values, make no Windows call, so they build, and are tested, on
// any OS. services.go passes them to and from golang.org/x/sys/windows/svc
// and svc/mgr, which build only for Windows; windows_test.go checks that
// the values named here are those packages'.

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/capwin/capwin/node-components/host"
)

// The service manager's start types (SERVICE_BOOT_START ...
// SERVICE_DISABLED; mgr.StartAutomatic, StartManual and StartDisabled are
// three of them).
const (
	scBootStart   = 0
	scSystemStart = 1
	scAutoStart   = 2
	scDemandStart = 3
	scDisabled    = 4
)

// The service manager's service states (SERVICE_STOPPED ...
// SERVICE_PAUSED, as svc.Stopped ... svc.Paused).
const (
	scStopped         = 1
	scStartPending    = 2
	scStopPending     = 3
	scRunning         = 4
	scContinuePending = 5
	scPausePending    = 6
	scPaused          = 7
)

// scActionRestart is SC_ACTION_RESTART (mgr.ServiceRestart).
const scActionRestart = 1

// errorServiceSpecificError is ERROR_SERVICE_SPECIFIC_ERROR: a service's
// Win32 exit code that says its service-specific one holds the code.
const errorServiceSpecificError = 1066

// startType maps the service manager's start type; those capwin never
// registers (boot and system start, for drivers) keep a name of their own,
// which no spec matches.
func startType(t uint32) host.StartType {
	switch t {
	case scAutoStart:
		return host.StartAutomatic
	case scDemandStart:
		return host.StartManual
	case scDisabled:
		return host.StartDisabled
	case scBootStart:
		return "Boot"
	case scSystemStart:
		return "System"
	}
	return host.StartType(fmt.Sprintf("StartType(%d)", t))
}

// scStartType is the service manager's start type for one host.CheckServiceSpec
// accepted.
func scStartType(t host.StartType) uint32 {
	switch t {
	case host.StartAutomatic:
		return scAutoStart
	case host.StartDisabled:
		return scDisabled
	}
	return scDemandStart
}

// serviceState maps a service's state (an svc.State); paused states, which
// no service capwin registers accepts, keep their Windows names.
func serviceState(s uint32) host.ServiceState {
	switch s {
	case scStopped:
		return host.ServiceStopped
	case scStartPending:
		return host.ServiceStarting
	case scRunning:
		return host.ServiceRunning
	case scStopPending:
		return host.ServiceStopping
	case scContinuePending:
		return "ContinuePending"
	case scPausePending:
		return "PausePending"
	case scPaused:
		return "Paused"
	}
	return host.ServiceState(fmt.Sprintf("State(%d)", s))
}

// recoveryAction is a service's recovery action with mgr.RecoveryAction's
// fields, so that either converts to the other.
type recoveryAction struct {
	Type  int
	Delay time.Duration
}

// restartDelays are the delays of a service's restart actions. Other actions
// (reboot, run a command, none), which capwin never registers, are left out.
func restartDelays(actions []recoveryAction) []time.Duration {
	var delays []time.Duration
	for _, a := range actions {
		if a.Type == scActionRestart {
			delays = append(delays, a.Delay)
		}
	}
	return delays
}

// recoveryActions are the service manager's restart actions for delays.
func recoveryActions(delays []time.Duration) []recoveryAction {
	actions := make([]recoveryAction, len(delays))
	for i, d := range delays {
		actions[i] = recoveryAction{Type: scActionRestart, Delay: scActionDelay(d)}
	}
	return actions
}

// exitError describes how a stopped service exited, from its status's
// Win32 and service-specific exit codes. A Win32 code is wrapped as the
// syscall.Errno it is (windows.Errno is the same type).
func exitError(win32ExitCode, serviceSpecificExitCode uint32) error {
	switch {
	case win32ExitCode == errorServiceSpecificError:
		return fmt.Errorf("service-specific exit code %d (0x%X)", serviceSpecificExitCode, serviceSpecificExitCode)
	case win32ExitCode != 0:
		return fmt.Errorf("Win32 exit code %d: %w", win32ExitCode, syscall.Errno(win32ExitCode))
	}
	return errors.New("exit code 0")
}

// serviceRecord is a service's registration as capwin writes it to, and
// reads it back from, the service manager (its configuration, description
// and recovery actions) and the service's registry key (its environment).
type serviceRecord struct {
	Name        string
	DisplayName string
	Description string
	// CommandLine is the command line the service manager starts the
	// service with (BinaryPathName).
	CommandLine  string
	Dependencies []string
	StartType    uint32
	Actions      []recoveryAction
	// ResetSeconds is the failure-count reset period, in seconds.
	ResetSeconds uint32
	Environment  []string
}

// newServiceRecord is what Create and Update write for a spec
// host.CheckServiceSpec accepted.
func newServiceRecord(spec host.ServiceSpec) serviceRecord {
	displayName := spec.DisplayName
	if displayName == "" {
		// The service manager would keep the old display name on an update
		// and use the name on a create: use the name in both.
		displayName = spec.Name
	}
	return serviceRecord{
		Name:        spec.Name,
		DisplayName: displayName,
		Description: spec.Description,
		// The service manager stores this string as it is: it is the
		// command line CreateProcess gets, quoted by host.CommandLine's
		// rules. mgr.CreateService would quote it once more.
		CommandLine:  host.CommandLine(spec.Command),
		Dependencies: spec.Dependencies,
		StartType:    scStartType(spec.StartType),
		Actions:      recoveryActions(spec.RestartDelays),
		ResetSeconds: resetPeriodSeconds(spec.ResetPeriod),
		Environment:  spec.Environment,
	}
}

// spec is the registration Get reports for a record read back.
func (r serviceRecord) spec() host.ServiceSpec {
	spec := host.ServiceSpec{
		Name:          r.Name,
		DisplayName:   r.DisplayName,
		Description:   r.Description,
		Command:       host.SplitCommandLine(r.CommandLine),
		Environment:   r.Environment,
		StartType:     startType(r.StartType),
		RestartDelays: restartDelays(r.Actions),
	}
	if len(r.Dependencies) > 0 {
		spec.Dependencies = r.Dependencies
	}
	if len(spec.RestartDelays) > 0 {
		spec.ResetPeriod = resetPeriodDuration(r.ResetSeconds)
	}
	return spec
}
