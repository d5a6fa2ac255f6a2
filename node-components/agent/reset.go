package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/capwin/capwin/node-components/cni"
	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
)

// resetNetworks are the HNS networks a join makes: those of every CNI
// driver (the External network, and the pod networks flannel and Calico
// create for the node), whichever the node used.
var resetNetworks = func() []string {
	var out []string
	for _, d := range cni.All() {
		for _, n := range d.ResetNetworks() {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}()

// resetPaths are the files and directories a join leaves: the kubelet's,
// containerd's hosts files, the join's records, and every CNI driver's.
var resetPaths = func() []string {
	out := []string{
		layout.KubeletDir, layout.KubeletKubeconfig, layout.BootstrapKubeconfig, layout.ContainerdCertsDir,
		layout.CACert, layout.SuccessSentinel, layout.JoinState, layout.Status,
	}
	for _, d := range cni.All() {
		for _, p := range d.ResetPaths() {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}()

// Reset undoes a join so that the machine can join again: the services are
// stopped and put back as install left them, the HNS networks and their
// endpoints are removed, the proxy variables the join set are unset, and
// the kubelet's directory (certificates and state), the registry hosts
// files, the CNI and source VIP records (flannel's stale SourceVip files
// among them) and the join's state are deleted. The bundle, containerd's
// images, the configuration's files and the logs stay.
func (a *Agent) Reset(ctx context.Context) error {
	unlock, err := a.lock()
	if err != nil {
		return err
	}
	defer unlock()
	var errs []error
	svcs := a.Host.Services()
	// Dependents first: the service manager refuses to stop a service
	// that a running one depends on.
	order := slices.Clone(serviceNames)
	slices.Reverse(order)
	for _, name := range order {
		if _, _, err := svcs.Get(ctx, name); errors.Is(err, host.ErrNotExist) {
			continue
		}
		if err := svcs.Stop(ctx, name); err != nil {
			errs = append(errs, fmt.Errorf("stopping %s: %w", name, err))
		}
	}
	for _, spec := range InstalledServices() {
		if _, err := a.ensureService(ctx, spec); err != nil {
			errs = append(errs, err)
		}
	}
	removed, err := a.removeNetworks(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	if st, err := LoadState(a.Host.FS()); err == nil {
		for _, name := range st.Environment {
			if err := a.Host.Environment().Unset(ctx, name); err != nil {
				errs = append(errs, fmt.Errorf("removing the machine environment variable %s: %w", name, err))
			}
		}
	}
	fsys := a.Host.FS()
	for _, p := range append(resetPaths, layout.LegacySourceVIPFiles...) {
		if err := fsys.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", p, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		a.logf("Reset incomplete: %v", err)
		return err
	}
	a.logf("Reset: services stopped and disabled, HNS networks removed (%s), kubelet and CNI state deleted", strings.Join(removed, ", "))
	return nil
}

func (a *Agent) removeNetworks(ctx context.Context) ([]string, error) {
	hns := a.Host.HNS()
	nets, err := hns.Networks(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing HNS networks: %w", err)
	}
	eps, err := hns.Endpoints(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing HNS endpoints: %w", err)
	}
	var removed []string
	var errs []error
	for _, n := range nets {
		if !isResetNetwork(n.Name) {
			continue
		}
		for _, e := range eps {
			if strings.EqualFold(e.NetworkID, n.ID) {
				if err := hns.DeleteEndpoint(ctx, e.ID); err != nil && !errors.Is(err, host.ErrNotExist) {
					errs = append(errs, fmt.Errorf("deleting HNS endpoint %s (%s): %w", e.Name, e.IPAddress, err))
				}
			}
		}
		if err := hns.DeleteNetwork(ctx, n.ID); err != nil && !errors.Is(err, host.ErrNotExist) {
			errs = append(errs, fmt.Errorf("deleting HNS network %s: %w", n.Name, err))
			continue
		}
		removed = append(removed, n.Name)
	}
	return removed, errors.Join(errs...)
}

func isResetNetwork(name string) bool {
	for _, n := range resetNetworks {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}
