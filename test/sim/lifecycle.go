package sim

import (
	"context"
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

func (g *Guests) run(ctx context.Context) {
	t := time.NewTimer(pollInterval)
	defer t.Stop()
	for {
		start := time.Now()
		if err := g.step(ctx); err != nil && ctx.Err() == nil {
			g.log.Error(err, "Guest step failed")
		}
		// At least pollInterval apart, and idle four times as long as a
		// step took: the guests of hundreds of VMs would otherwise take
		// most of a core from the controllers they are there to exercise.
		t.Reset(max(pollInterval, 4*time.Since(start)))
		select {
		case <-ctx.Done():
			g.cloud.Close()
			g.mu.Lock()
			guests := slices.Collect(maps.Values(g.guests))
			g.mu.Unlock()
			for _, gs := range guests {
				gs.cancel()
			}
			for _, gs := range guests {
				gs.procs.Wait()
			}
			g.procs.Wait()
			_ = os.RemoveAll(g.dir)
			return
		case <-t.C:
		}
	}
}

// step looks at every VM once and moves each guest on.
func (g *Guests) step(ctx context.Context) error {
	vms, err := g.cloud.VMs(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	seen := map[string]bool{}
	var errs []error
	for i := range vms {
		vm := &vms[i]
		id := vm.ID
		seen[id] = true
		g.mu.Lock()
		gs := g.guests[id]
		g.mu.Unlock()
		if gs == nil {
			if !vm.PoweredOn {
				continue
			}
			gs = g.boot(ctx, vm, now)
			g.mu.Lock()
			g.guests[id] = gs
			g.mu.Unlock()
		}
		if vm.vsphere != nil {
			gs.extra = vm.vsphere.ExtraConfig
		}
		if err := g.advance(ctx, gs, now); err != nil {
			errs = append(errs, err) // the next step tries again
		}
	}
	g.mu.Lock()
	var gone []*guest
	for id, gs := range g.guests {
		if !seen[id] {
			gone = append(gone, gs)
			delete(g.guests, id) // the VM was destroyed: its OS with it
			if g.nodeVMs[gs.nodeName] == id {
				delete(g.nodeVMs, gs.nodeName)
			}
		}
	}
	g.mu.Unlock()
	for _, gs := range gone {
		gs.cancel()
		if gs.win != nil {
			g.procs.Go(func() {
				gs.procs.Wait() // the agent may write its status as it stops
				_ = os.RemoveAll(gs.win.host.Root())
			})
		}
		if gs.state == registered {
			// Its kubelet is gone: the node lifecycle controller of
			// kube-controller-manager marks the Node, if Cluster API has
			// not deleted it yet, not Ready.
			errs = append(errs, g.kubeletStopped(ctx, gs.nodeName))
		}
	}
	return errors.Join(errs...)
}

// boot is a guest's first look at its VM: it reads its host name and
// brings its network up as its cloud's guest software does (bootVSphere,
// bootAzure); a Linux guest reads its user data, a Windows guest's machine
// comes up with its bundle installed.
func (g *Guests) boot(ctx context.Context, vm *cloudVM, now time.Time) *guest {
	gs := &guest{vmID: vm.ID, vmName: vm.Name, poweredOn: now, kubeletVersion: KubernetesVersion}
	gs.ctx, gs.cancel = context.WithCancel(context.WithoutCancel(ctx))
	gs.procs = &sync.WaitGroup{}
	var fb *firstBoot
	var err error
	if vm.vsphere != nil {
		fb, err = g.bootVSphere(vm.vsphere)
	} else {
		fb, err = g.bootAzure(gs, vm.azure)
	}
	switch {
	case err != nil:
		g.reject(gs, err)
		return gs
	case fb == nil:
		gs.state = ignored // not a machine of capwin's: the inventory's own VMs
		return gs
	}
	gs.ip = fb.ip
	gs.nodeName = strings.ToLower(fb.hostName)
	if fb.build != "" {
		if err := g.bootWindows(gs, fb.build, fb.hostName, gs.ip, fb.hardware); err != nil {
			g.reject(gs, err)
			return gs
		}
	} else {
		if vm.vsphere != nil {
			gs.extra = vm.vsphere.ExtraConfig
		}
		userData, err := gs.userData()
		if err == nil {
			gs.kubelet, err = linuxKubelet(linuxNode(fb.hostName), userData, fb.hostName, gs.ip)
		}
		if err != nil {
			g.reject(gs, err)
			return gs
		}
		gs.nodeName = gs.kubelet.node.Name
	}
	g.mu.Lock()
	g.nodeVMs[gs.nodeName] = gs.vmID
	gs.failure = g.failure(gs.nodeName)
	if gs.win != nil {
		gs.fault = g.fault(gs.nodeName)
	}
	gs.readyAt = now.Add(g.bootDelay)
	g.mu.Unlock()
	return gs
}

func (g *Guests) reject(gs *guest, err error) {
	gs.state = rejected
	g.mu.Lock()
	g.rejected[gs.vmName] = err.Error()
	g.mu.Unlock()
	g.log.Info("Guest refused its user data or failed to join", "vm", gs.vmName, "reason", err.Error())
}

// advance runs the bootstrap once booted (Windows) or starts the kubelet
// (Linux), and acts on a finished run.
func (g *Guests) advance(ctx context.Context, gs *guest, now time.Time) error {
	switch gs.state {
	case booting:
		if now.Before(gs.readyAt) {
			return nil
		}
		if gs.win == nil {
			return g.startLinuxKubelet(gs)
		}
		// cloudbase-init reads the user data now, at this boot.
		userData, err := gs.userData()
		if err != nil {
			g.reject(gs, err)
			return nil
		}
		gs.runs++
		gs.done = make(chan error, 1)
		gs.state = joining
		run := gs.runs
		gs.procs.Go(func() { gs.done <- g.stubRun(gs.ctx, gs, userData, run) })
	case joining:
		select {
		case err := <-gs.done:
			g.afterRun(ctx, gs, err, now)
		default:
		}
	}
	return nil
}
