package agent

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/capwin/capwin/node-components/cni"
	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
)

// serviceNames are the node's services, dependencies first: the kubelet's,
// every CNI driver's (which depend on the kubelet), kube-proxy.
var serviceNames = func() []string {
	names := []string{layout.ServiceContainerd, layout.ServiceCSIProxy, layout.ServiceKubelet}
	for _, d := range cni.All() {
		for _, n := range d.ServiceNames() {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return append(names, layout.ServiceKubeProxy)
}()

// ensureService registers a service, or updates a registration that
// differs, and says whether it changed anything; a service is never
// registered twice.
func (a *Agent) ensureService(ctx context.Context, spec host.ServiceSpec) (bool, error) {
	svcs := a.Host.Services()
	got, _, err := svcs.Get(ctx, spec.Name)
	switch {
	case errors.Is(err, host.ErrNotExist):
		if err := svcs.Create(ctx, spec); err != nil {
			return false, fmt.Errorf("registering the %s service: %w", spec.Name, err)
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("reading the %s service: %w", spec.Name, err)
	case sameService(got, spec):
		return false, nil
	}
	if err := svcs.Update(ctx, spec); err != nil {
		return false, fmt.Errorf("updating the %s service: %w", spec.Name, err)
	}
	return true, nil
}

// applyService is ensureService for a join: a running service whose
// registration changed (a configuration that changed mid-join) is
// restarted, with the running services that depend on it, because the
// service manager hands a process its registration only when it starts.
func (a *Agent) applyService(ctx context.Context, spec host.ServiceSpec) error {
	changed, err := a.ensureService(ctx, spec)
	if err != nil || !changed {
		return err
	}
	if _, state, err := a.Host.Services().Get(ctx, spec.Name); err != nil || state != host.ServiceRunning {
		return err
	}
	return a.restart(ctx, spec.Name)
}

// restart stops a service after the running services that depend on it,
// and starts them again in the opposite order.
func (a *Agent) restart(ctx context.Context, name string) error {
	svcs := a.Host.Services()
	var stopped []string
	var stop func(string) error
	stop = func(n string) error {
		if slices.Contains(stopped, n) {
			return nil
		}
		for _, d := range serviceNames {
			spec, state, err := svcs.Get(ctx, d)
			if err != nil || state != host.ServiceRunning || !slices.Contains(spec.Dependencies, n) {
				continue
			}
			if err := stop(d); err != nil {
				return err
			}
		}
		if err := svcs.Stop(ctx, n); err != nil {
			return fmt.Errorf("restarting %s with its new registration: %w", name, err)
		}
		stopped = append(stopped, n)
		return nil
	}
	if err := stop(name); err != nil {
		return err
	}
	for i := len(stopped) - 1; i >= 0; i-- {
		if err := a.startService(ctx, stopped[i]); err != nil {
			return fmt.Errorf("restarting %s with its new registration: %w", name, err)
		}
	}
	a.logf("Restarted %v: their registration changed", stopped)
	return nil
}

// startService starts a service for the join. One that does not start
// fails the join retryably: the cause may be the machine's rather than the
// configuration's (the service manager timing out, a program that exits
// while the machine is still settling after its first boot), and the
// bootstrap stub bounds the runs when it is not.
func (a *Agent) startService(ctx context.Context, name string) error {
	if err := a.Host.Services().Start(ctx, name); err != nil {
		return Retryable(err)
	}
	return nil
}

func sameService(a, b host.ServiceSpec) bool {
	norm := func(s host.ServiceSpec) host.ServiceSpec {
		if len(s.Environment) == 0 {
			s.Environment = nil
		}
		if len(s.Dependencies) == 0 {
			s.Dependencies = nil
		}
		if len(s.RestartDelays) == 0 {
			s.RestartDelays = nil
		}
		return s
	}
	return reflect.DeepEqual(norm(a), norm(b))
}
