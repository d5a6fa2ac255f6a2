package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/capwin/capwin/node-components/host"
)

// The service manager's refusals, with the Win32 error each stands for.
var (
	ErrServiceExists        = errors.New("the specified service already exists (ERROR_SERVICE_EXISTS)")
	ErrServiceDisabled      = errors.New("the service cannot be started because it is disabled (ERROR_SERVICE_DISABLED)")
	ErrDependencyFailed     = errors.New("a dependency service failed to start (ERROR_SERVICE_DEPENDENCY_FAIL)")
	ErrDependentsRunning    = errors.New("a stop control has been sent to a service that other running services depend on (ERROR_DEPENDENT_SERVICES_RUNNING)")
	ErrExecutableNotFound   = errors.New("the system cannot find the file specified (ERROR_FILE_NOT_FOUND)")
	ErrCircularDependencies = errors.New("circular service dependency was specified (ERROR_CIRCULAR_DEPENDENCY)")
)

type services struct{ h *Host }

// Service names are case-insensitive, as the service manager's are.
func key(name string) string { return strings.ToLower(name) }

func (s services) Get(_ context.Context, name string) (host.ServiceSpec, host.ServiceState, error) {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	svc, ok := s.h.services[key(name)]
	if !ok {
		return host.ServiceSpec{}, "", fmt.Errorf("service %s: %w", name, host.ErrNotExist)
	}
	return clone(svc.spec), svc.state, nil
}

func clone(spec host.ServiceSpec) host.ServiceSpec {
	spec.Command = slices.Clone(spec.Command)
	spec.Environment = slices.Clone(spec.Environment)
	spec.Dependencies = slices.Clone(spec.Dependencies)
	spec.RestartDelays = slices.Clone(spec.RestartDelays)
	return spec
}

func (s services) Create(_ context.Context, spec host.ServiceSpec) error {
	if err := check("creating", spec); err != nil {
		return err
	}
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if _, ok := s.h.services[key(spec.Name)]; ok {
		return fmt.Errorf("creating service %s: %w", spec.Name, ErrServiceExists)
	}
	s.h.services[key(spec.Name)] = &service{spec: stored(spec), state: host.ServiceStopped}
	if err := s.h.cycle(spec.Name); err != nil {
		delete(s.h.services, key(spec.Name))
		return fmt.Errorf("creating service %s: %w", spec.Name, err)
	}
	s.h.event("create-service %s", spec.Name)
	return nil
}

// check refuses what the service manager (or host/windows, before it
// calls it) would refuse.
func check(op string, spec host.ServiceSpec) error {
	if err := host.CheckServiceSpec(spec); err != nil {
		return fmt.Errorf("%s service %s: %w", op, spec.Name, err)
	}
	return nil
}

func (s services) Update(_ context.Context, spec host.ServiceSpec) error {
	if err := check("updating", spec); err != nil {
		return err
	}
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	svc, ok := s.h.services[key(spec.Name)]
	if !ok {
		return fmt.Errorf("updating service %s: %w", spec.Name, host.ErrNotExist)
	}
	old := svc.spec
	svc.spec = stored(spec)
	if err := s.h.cycle(spec.Name); err != nil {
		svc.spec = old
		return fmt.Errorf("updating service %s: %w", spec.Name, err)
	}
	s.h.event("update-service %s", spec.Name)
	return nil
}

// cycle refuses a dependency loop through name.
func (h *Host) cycle(name string) error {
	seen := map[string]bool{}
	var visit func(n string) error
	visit = func(n string) error {
		if seen[key(n)] {
			return ErrCircularDependencies
		}
		seen[key(n)] = true
		defer delete(seen, key(n))
		if svc, ok := h.services[key(n)]; ok {
			for _, d := range svc.spec.Dependencies {
				if err := visit(d); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return visit(name)
}

func (s services) Delete(_ context.Context, name string) error {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	svc, ok := s.h.services[key(name)]
	if !ok {
		return nil
	}
	if svc.state == host.ServiceRunning {
		if err := s.h.stop(name); err != nil {
			return fmt.Errorf("deleting service %s: %w", name, err)
		}
	}
	delete(s.h.services, key(name))
	s.h.event("delete-service %s", name)
	return nil
}

func (s services) Start(ctx context.Context, name string) error {
	return s.h.start(ctx, name, map[string]bool{})
}

// start starts name after its dependencies, as the service manager does.
func (h *Host) start(ctx context.Context, name string, visiting map[string]bool) error {
	h.mu.Lock()
	svc, ok := h.services[key(name)]
	if !ok {
		h.mu.Unlock()
		return fmt.Errorf("starting service %s: %w", name, host.ErrNotExist)
	}
	if svc.state == host.ServiceRunning {
		h.mu.Unlock()
		return nil
	}
	if svc.spec.StartType == host.StartDisabled {
		h.mu.Unlock()
		return fmt.Errorf("starting service %s: %w", name, ErrServiceDisabled)
	}
	deps := slices.Clone(svc.spec.Dependencies)
	h.mu.Unlock()
	if visiting[key(name)] {
		return fmt.Errorf("starting service %s: %w", name, ErrCircularDependencies)
	}
	visiting[key(name)] = true
	for _, d := range deps {
		if err := h.start(ctx, d, visiting); err != nil {
			return fmt.Errorf("starting service %s: dependency %s: %w: %w", name, d, ErrDependencyFailed, err)
		}
	}
	return h.run(ctx, name)
}

// run starts the process of a service whose dependencies run.
func (h *Host) run(ctx context.Context, name string) error {
	h.mu.Lock()
	svc, ok := h.services[key(name)]
	if !ok {
		h.mu.Unlock()
		return fmt.Errorf("starting service %s: %w", name, host.ErrNotExist)
	}
	spec := clone(svc.spec)
	b := h.behaviours[key(name)]
	h.mu.Unlock()
	for _, exe := range executables(spec.Command) {
		if ok, err := h.fs.Exists(exe); err != nil || !ok {
			return fmt.Errorf("starting service %s: %s: %w", name, exe, ErrExecutableNotFound)
		}
	}
	h.mu.Lock()
	svc.state = host.ServiceStarting
	h.mu.Unlock()
	var err error
	if b != nil {
		err = b(ctx, h, spec)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		svc.state = host.ServiceStopped
		h.event("start-failed %s", name)
		return fmt.Errorf("starting service %s: the process exited: %w", name, err)
	}
	svc.state = host.ServiceRunning
	svc.running = spec
	svc.starts++
	h.event("start %s", name)
	return nil
}

// executables are the programs a command runs: the service binary and,
// for capwin's service host, the program after "--".
func executables(cmd []string) []string {
	exes := []string{cmd[0]}
	if i := slices.Index(cmd, "--"); i >= 0 && i+1 < len(cmd) {
		exes = append(exes, cmd[i+1])
	}
	return exes
}

func (s services) Stop(_ context.Context, name string) error {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if _, ok := s.h.services[key(name)]; !ok {
		return fmt.Errorf("stopping service %s: %w", name, host.ErrNotExist)
	}
	return s.h.stop(name)
}

func (h *Host) stop(name string) error {
	svc := h.services[key(name)]
	if svc.state == host.ServiceStopped {
		return nil
	}
	for n, o := range h.services {
		if o.state == host.ServiceRunning && slices.ContainsFunc(o.spec.Dependencies, func(d string) bool { return key(d) == key(name) }) {
			return fmt.Errorf("stopping service %s: %s depends on it: %w", name, n, ErrDependentsRunning)
		}
	}
	svc.state = host.ServiceStopped
	h.event("stop %s", name)
	return nil
}

// Crash ends a running service's process with a failure. The service
// manager restarts it when it has recovery actions (the delay is not
// simulated) and leaves it stopped otherwise. It returns whether the
// service was restarted.
func (h *Host) Crash(ctx context.Context, name string) (bool, error) {
	h.mu.Lock()
	svc, ok := h.services[key(name)]
	if !ok || svc.state != host.ServiceRunning {
		h.mu.Unlock()
		return false, fmt.Errorf("crashing service %s: it is not running", name)
	}
	svc.state = host.ServiceStopped
	h.event("crash %s", name)
	restart := len(svc.spec.RestartDelays) > 0
	h.mu.Unlock()
	if !restart {
		return false, nil
	}
	if err := h.run(ctx, name); err != nil {
		return false, err
	}
	return true, nil
}

// Reboot restarts the machine: every service stops, the non-persistent HNS
// networks (flannel's) and every endpoint are gone, and the automatic
// services start again in dependency order.
func (h *Host) Reboot(ctx context.Context) error {
	h.mu.Lock()
	var auto []string
	for n, svc := range h.services {
		svc.state = host.ServiceStopped
		if svc.spec.StartType == host.StartAutomatic {
			auto = append(auto, n)
		}
	}
	h.networks = slices.DeleteFunc(h.networks, func(n host.Network) bool { return n.NonPersistent })
	h.endpoints = nil
	h.event("reboot")
	h.mu.Unlock()
	slices.Sort(auto)
	var errs []error
	for _, n := range auto {
		if err := h.start(ctx, n, map[string]bool{}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
