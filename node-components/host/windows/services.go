//go:build windows

package windows

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"

	"github.com/capwin/capwin/node-components/host"
)

const (
	// deleteWait bounds how long Delete waits for a service marked for
	// deletion to disappear: it does once the last handle to it closes.
	deleteWait = 30 * time.Second
	// localSystem is the account every service capwin registers runs as.
	localSystem = "LocalSystem"
	// servicesKey is where the service manager keeps each service's
	// registration, under the service's name.
	servicesKey = `SYSTEM\CurrentControlSet\Services\`
	// environmentValue is the REG_MULTI_SZ value of a service's key that the
	// service manager adds to the service process's environment.
	environmentValue = "Environment"
)

// services is the service control manager.
type services struct{}

var _ host.Services = services{}

func connectSCM() (*mgr.Mgr, error) {
	m, err := mgr.Connect()
	if err != nil {
		return nil, fmt.Errorf("connecting to the service control manager: %w", err)
	}
	return m, nil
}

// openService opens a service with all access; a missing one is
// host.ErrNotExist.
func openService(m *mgr.Mgr, name string) (*mgr.Service, error) {
	s, err := m.OpenService(name)
	if errors.Is(err, windows.ERROR_SERVICE_DOES_NOT_EXIST) {
		return nil, fmt.Errorf("service %s: %w", name, host.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("opening service %s: %w", name, err)
	}
	return s, nil
}

// withService runs f on an open service, connected to the service manager
// for that call only; a missing service is host.ErrNotExist.
func withService(name string, f func(s *mgr.Service) error) error {
	m, err := connectSCM()
	if err != nil {
		return err
	}
	defer m.Disconnect() //nolint:errcheck // nothing to do about it
	s, err := openService(m, name)
	if err != nil {
		return err
	}
	defer s.Close() //nolint:errcheck // nothing to do about it
	return f(s)
}

// Get reads a service's registration and state.
func (services) Get(_ context.Context, name string) (host.ServiceSpec, host.ServiceState, error) {
	if err := host.CheckServiceName(name); err != nil {
		return host.ServiceSpec{}, "", fmt.Errorf("reading service %s: %w", name, err)
	}
	var spec host.ServiceSpec
	var state host.ServiceState
	err := withService(name, func(s *mgr.Service) error {
		var err error
		if spec, err = readService(s); err != nil {
			return err
		}
		status, err := s.Query()
		if err != nil {
			return fmt.Errorf("querying the state of service %s: %w", name, err)
		}
		state = serviceState(uint32(status.State))
		return nil
	})
	if err != nil {
		return host.ServiceSpec{}, "", err
	}
	return spec, state, nil
}

func readService(s *mgr.Service) (host.ServiceSpec, error) {
	cfg, err := s.Config()
	if err != nil {
		return host.ServiceSpec{}, fmt.Errorf("reading the configuration of service %s: %w", s.Name, err)
	}
	actions, err := s.RecoveryActions()
	if err != nil {
		return host.ServiceSpec{}, fmt.Errorf("reading the recovery actions of service %s: %w", s.Name, err)
	}
	reset, err := s.ResetPeriod()
	if err != nil {
		return host.ServiceSpec{}, fmt.Errorf("reading the recovery reset period of service %s: %w", s.Name, err)
	}
	env, err := readServiceEnvironment(s.Name)
	if err != nil {
		return host.ServiceSpec{}, err
	}
	r := serviceRecord{
		Name:         s.Name,
		DisplayName:  cfg.DisplayName,
		Description:  cfg.Description,
		CommandLine:  cfg.BinaryPathName,
		Dependencies: cfg.Dependencies,
		StartType:    cfg.StartType,
		Actions:      recordActions(actions),
		ResetSeconds: reset,
		Environment:  env,
	}
	return r.spec(), nil
}

// scActions are recovery actions as the service manager takes them.
func scActions(actions []recoveryAction) []mgr.RecoveryAction {
	out := make([]mgr.RecoveryAction, len(actions))
	for i, a := range actions {
		out[i] = mgr.RecoveryAction(a)
	}
	return out
}

// recordActions are the service manager's recovery actions as a
// serviceRecord holds them.
func recordActions(actions []mgr.RecoveryAction) []recoveryAction {
	out := make([]recoveryAction, len(actions))
	for i, a := range actions {
		out[i] = recoveryAction(a)
	}
	return out
}

func readServiceEnvironment(name string) ([]string, error) {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, servicesKey+name, registry.QUERY_VALUE)
	if errors.Is(err, registry.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("opening the registry key of service %s: %w", name, err)
	}
	defer k.Close() //nolint:errcheck // read only
	env, _, err := k.GetStringsValue(environmentValue)
	switch {
	case errors.Is(err, registry.ErrNotExist):
		return nil, nil
	case errors.Is(err, registry.ErrUnexpectedType):
		return nil, fmt.Errorf("reading the environment of service %s: the %s value is not REG_MULTI_SZ", name, environmentValue)
	case err != nil:
		return nil, fmt.Errorf("reading the environment of service %s: %w", name, err)
	}
	var out []string
	for _, e := range env {
		if e != "" {
			out = append(out, e)
		}
	}
	return out, nil
}

func writeServiceEnvironment(name string, env []string) error {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, servicesKey+name, registry.SET_VALUE)
	if err != nil {
		return fmt.Errorf("opening the registry key of service %s: %w", name, err)
	}
	defer k.Close() //nolint:errcheck // the value is written when SetStringsValue returns
	if len(env) == 0 {
		if err := k.DeleteValue(environmentValue); err != nil && !errors.Is(err, registry.ErrNotExist) {
			return fmt.Errorf("removing the environment of service %s: %w", name, err)
		}
		return nil
	}
	if err := k.SetStringsValue(environmentValue, env); err != nil {
		return fmt.Errorf("writing the environment of service %s: %w", name, err)
	}
	return nil
}

// serviceConfig is a record as CreateService and ChangeServiceConfig take it.
type serviceConfig struct {
	name, displayName, commandLine *uint16
	account, password              *uint16
	dependencies                   *uint16
	startType                      uint32
}

func newServiceConfig(r serviceRecord) (serviceConfig, error) {
	var c serviceConfig
	var err error
	for _, f := range []struct {
		p **uint16
		s string
	}{
		{&c.name, r.Name},
		{&c.displayName, r.DisplayName},
		{&c.commandLine, r.CommandLine},
		{&c.account, localSystem},
		// LocalSystem has no password: an empty one, not NULL, which
		// ChangeServiceConfig reads as "unchanged".
		{&c.password, ""},
	} {
		if *f.p, err = windows.UTF16PtrFromString(f.s); err != nil {
			return serviceConfig{}, err
		}
	}
	c.dependencies = &multiSZ(r.Dependencies)[0]
	c.startType = r.StartType
	return c, nil
}

// Create registers a new service. If configuring it fails after the service
// manager created it, it is deleted again, so that Create can be retried.
func (services) Create(_ context.Context, spec host.ServiceSpec) error {
	if err := host.CheckServiceSpec(spec); err != nil {
		return fmt.Errorf("creating service %s: %w", spec.Name, err)
	}
	r := newServiceRecord(spec)
	c, err := newServiceConfig(r)
	if err != nil {
		return fmt.Errorf("creating service %s: %w", spec.Name, err)
	}
	m, err := connectSCM()
	if err != nil {
		return err
	}
	defer m.Disconnect() //nolint:errcheck // nothing to do about it
	h, err := windows.CreateService(m.Handle, c.name, c.displayName, windows.SERVICE_ALL_ACCESS,
		windows.SERVICE_WIN32_OWN_PROCESS, c.startType, windows.SERVICE_ERROR_NORMAL, c.commandLine,
		nil, nil, c.dependencies, c.account, c.password)
	if err != nil {
		return fmt.Errorf("creating service %s: %w", spec.Name, err)
	}
	s := &mgr.Service{Name: spec.Name, Handle: h}
	defer s.Close() //nolint:errcheck // nothing to do about it
	if err := configureService(s, r); err != nil {
		if derr := s.Delete(); derr != nil {
			return errors.Join(err, fmt.Errorf("deleting the half-created service %s: %w", spec.Name, derr))
		}
		return err
	}
	return nil
}

// Update changes an existing service's registration to spec. A running
// service keeps running as it was: the service manager applies the new
// registration the next time it starts the service.
func (services) Update(_ context.Context, spec host.ServiceSpec) error {
	if err := host.CheckServiceSpec(spec); err != nil {
		return fmt.Errorf("updating service %s: %w", spec.Name, err)
	}
	r := newServiceRecord(spec)
	c, err := newServiceConfig(r)
	if err != nil {
		return fmt.Errorf("updating service %s: %w", spec.Name, err)
	}
	return withService(spec.Name, func(s *mgr.Service) error {
		// A NULL load order group and tag leave them as they are; capwin
		// sets neither.
		err := windows.ChangeServiceConfig(s.Handle, windows.SERVICE_WIN32_OWN_PROCESS, c.startType,
			windows.SERVICE_ERROR_NORMAL, c.commandLine, nil, nil, c.dependencies, c.account, c.password,
			c.displayName)
		if err != nil {
			return fmt.Errorf("updating service %s: %w", spec.Name, err)
		}
		return configureService(s, r)
	})
}

// configureService writes what CreateService and ChangeServiceConfig do not
// take: the description, the recovery actions and the environment.
func configureService(s *mgr.Service, r serviceRecord) error {
	// An empty description, unlike a NULL one, removes the old one.
	desc, err := windows.UTF16PtrFromString(r.Description)
	if err != nil {
		return fmt.Errorf("setting the description of service %s: %w", r.Name, err)
	}
	sd := windows.SERVICE_DESCRIPTION{Description: desc}
	if err := windows.ChangeServiceConfig2(s.Handle, windows.SERVICE_CONFIG_DESCRIPTION, (*byte)(unsafe.Pointer(&sd))); err != nil {
		return fmt.Errorf("setting the description of service %s: %w", r.Name, err)
	}
	if len(r.Actions) == 0 {
		if err := s.ResetRecoveryActions(); err != nil {
			return fmt.Errorf("removing the recovery actions of service %s: %w", r.Name, err)
		}
	} else if err := s.SetRecoveryActions(scActions(r.Actions), r.ResetSeconds); err != nil {
		return fmt.Errorf("setting the recovery actions of service %s: %w", r.Name, err)
	}
	// Without this flag the service manager restarts only a service whose
	// process died without reporting Stopped; with it, also one that
	// reports Stopped with a non-zero exit code, as the service host does
	// when its command exits.
	if err := s.SetRecoveryActionsOnNonCrashFailures(true); err != nil {
		return fmt.Errorf("enabling the recovery actions of service %s on non-crash failures: %w", r.Name, err)
	}
	return writeServiceEnvironment(r.Name, r.Environment)
}

// Delete stops a service and removes it, and waits until the service manager
// has removed it, which it does once no process holds the service open any
// more; a missing service is not an error.
func (services) Delete(ctx context.Context, name string) error {
	if err := host.CheckServiceName(name); err != nil {
		return fmt.Errorf("deleting service %s: %w", name, err)
	}
	m, err := connectSCM()
	if err != nil {
		return err
	}
	defer m.Disconnect() //nolint:errcheck // nothing to do about it
	s, err := openService(m, name)
	if errors.Is(err, host.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = stopService(ctx, s)
	if err == nil {
		err = s.Delete()
		if errors.Is(err, windows.ERROR_SERVICE_MARKED_FOR_DELETE) {
			err = nil
		}
		if err != nil {
			err = fmt.Errorf("deleting service %s: %w", name, err)
		}
	}
	// Our own handle is one of those that keep a deleted service registered.
	s.Close() //nolint:errcheck // nothing to do about it
	if err != nil {
		return err
	}
	return waitGone(ctx, m, name)
}

// waitGone waits until a service marked for deletion is gone, so that a
// Create right after Delete does not fail with "marked for deletion".
func waitGone(ctx context.Context, m *mgr.Mgr, name string) error {
	ctx, cancel := context.WithTimeout(ctx, deleteWait)
	defer cancel()
	err := poll(ctx, func() (bool, error) {
		registered, err := serviceRegistered(m.Handle, name)
		if err != nil {
			return false, fmt.Errorf("checking whether service %s is gone: %w", name, err)
		}
		return !registered, nil
	})
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return fmt.Errorf("service %s is marked for deletion but still registered: a process (the Services console, sc.exe, a monitoring agent) holds it open: %w", name, err)
	}
	return err
}

// Start starts a service and waits until it runs. A service that stops
// instead is an error naming its exit code: the service host's log has the
// reason.
func (services) Start(ctx context.Context, name string) error {
	if err := host.CheckServiceName(name); err != nil {
		return fmt.Errorf("starting service %s: %w", name, err)
	}
	return withService(name, func(s *mgr.Service) error { return startService(ctx, s, name) })
}

// startService starts an open service and waits until it runs.
func startService(ctx context.Context, s *mgr.Service, name string) error {
	status, err := s.Query()
	if err != nil {
		return fmt.Errorf("querying the state of service %s: %w", name, err)
	}
	switch status.State {
	case svc.Running:
		return nil
	case svc.StopPending:
		// StartService fails on a service that is still stopping.
		if err := waitStopped(ctx, s); err != nil {
			return err
		}
	}
	if status.State != svc.StartPending {
		// StartService returns once the service process has connected to
		// the service manager, or after the service manager's own timeout
		// (30 s by default); it cannot be cancelled.
		if err := s.Start(); err != nil && !errors.Is(err, windows.ERROR_SERVICE_ALREADY_RUNNING) {
			return fmt.Errorf("starting service %s: %w", name, err)
		}
	}
	var last svc.Status
	err = poll(ctx, func() (bool, error) {
		st, err := s.Query()
		if err != nil {
			return false, fmt.Errorf("querying the state of service %s: %w", name, err)
		}
		last = st
		switch st.State {
		case svc.Running:
			return true, nil
		case svc.Stopped:
			return false, fmt.Errorf("service %s stopped instead of starting: %w", name, exitError(st.Win32ExitCode, st.ServiceSpecificExitCode))
		}
		return false, nil
	})
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return fmt.Errorf("waiting for service %s to start (it is %s): %w", name, serviceState(uint32(last.State)), err)
	}
	return err
}

// Stop stops a service and waits until it has stopped; a stopped service is
// fine. The service manager refuses to stop a service other running services
// depend on: the error names them.
func (services) Stop(ctx context.Context, name string) error {
	if err := host.CheckServiceName(name); err != nil {
		return fmt.Errorf("stopping service %s: %w", name, err)
	}
	return withService(name, func(s *mgr.Service) error { return stopService(ctx, s) })
}

// stopService sends a service the stop control until it is stopping, and
// waits until it has stopped. A service that is starting cannot take the
// control yet: it gets it once it runs.
func stopService(ctx context.Context, s *mgr.Service) error {
	var last svc.Status
	err := poll(ctx, func() (bool, error) {
		st, err := s.Query()
		if err != nil {
			return false, fmt.Errorf("querying the state of service %s: %w", s.Name, err)
		}
		last = st
		switch st.State {
		case svc.Stopped:
			return true, nil
		case svc.StopPending:
			return false, nil
		}
		_, err = s.Control(svc.Stop)
		switch {
		case err == nil,
			errors.Is(err, windows.ERROR_SERVICE_NOT_ACTIVE),
			errors.Is(err, windows.ERROR_SERVICE_CANNOT_ACCEPT_CTRL):
			return false, nil
		case errors.Is(err, windows.ERROR_DEPENDENT_SERVICES_RUNNING):
			dependents, derr := s.ListDependentServices(svc.Active)
			if derr != nil {
				return false, fmt.Errorf("stopping service %s: %w", s.Name, err)
			}
			return false, fmt.Errorf("stopping service %s: services that depend on it run (%s): %w", s.Name, strings.Join(dependents, ", "), err)
		}
		return false, fmt.Errorf("stopping service %s: %w", s.Name, err)
	})
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return fmt.Errorf("waiting for service %s to stop (it is %s): %w", s.Name, serviceState(uint32(last.State)), err)
	}
	return err
}

// waitStopped waits until a stopping service has stopped.
func waitStopped(ctx context.Context, s *mgr.Service) error {
	err := poll(ctx, func() (bool, error) {
		st, err := s.Query()
		if err != nil {
			return false, fmt.Errorf("querying the state of service %s: %w", s.Name, err)
		}
		return st.State == svc.Stopped, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for service %s to stop: %w", s.Name, err)
	}
	return nil
}
