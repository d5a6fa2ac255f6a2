package sim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/capwin/capwin/bootstrap/payload"
	"github.com/capwin/capwin/node-components/agent"
)

// cloudbaseInitResult is what cloudbase-init's user data plugin does after
// a user-data script exited with code. From cloudbase-init's source
// (cloudbaseinit/plugins/common/execcmd.py, get_plugin_return_value, and
// cloudbaseinit/init.py, _exec_plugin): codes 1001 to 1003 are two flags,
// 1 to reboot now and 2 to leave the plugin to run again at the next boot;
// any other code marks the plugin done, and a plugin marked done never runs
// again on that instance.
func cloudbaseInitResult(code int) (runAgain, reboot bool) {
	switch code {
	case 1001:
		return false, true
	case 1002:
		return true, false
	case 1003:
		return true, true
	}
	return false, false
}

// bootstraps is what the Windows guests remember of their bootstrap runs
// across reboots, and the faults their joins meet.
type bootstraps struct {
	mu sync.Mutex
	// runs are the stub's exit codes, in order, by VM name (the attempt
	// count, which the real stub keeps on disk, is the guest's runs).
	runs map[string][]int
	// unreachable is how many runs of each node's join find the API
	// server not answering.
	unreachable func(nodeName string) int
}

// SetAPIServerUnreachable makes the first f(nodeName) runs of each node's
// capwin-node join find the workload API server not answering, a failure
// that may pass (discovery's Unreachable, exit 3), for the runs from now
// on; nil makes every join reach it.
func (g *Guests) SetAPIServerUnreachable(f func(nodeName string) int) {
	g.bootstrap.mu.Lock()
	defer g.bootstrap.mu.Unlock()
	g.bootstrap.unreachable = f
}

// BootstrapRuns returns, by VM name, the exit codes of each run of the
// Windows guests' bootstrap stub, in order (0 the node joined, 1 a failure
// that will not pass, 1003 reboot and run again, 1002 run again at the
// next boot).
func (g *Guests) BootstrapRuns() map[string][]int {
	g.bootstrap.mu.Lock()
	defer g.bootstrap.mu.Unlock()
	out := maps.Clone(g.bootstrap.runs)
	for vm, codes := range out {
		out[vm] = slices.Clone(codes)
	}
	return out
}

// StubCrashed stands in BootstrapRuns for a run the machine did not
// survive (CrashMidJoin): the stub exited with no code.
const StubCrashed = -1

// unreachableNow is whether the node's run-th run of the stub finds the API
// server not answering (SetAPIServerUnreachable).
func (g *Guests) unreachableNow(nodeName string, run int) bool {
	g.bootstrap.mu.Lock()
	defer g.bootstrap.mu.Unlock()
	return g.bootstrap.unreachable != nil && run <= g.bootstrap.unreachable(nodeName)
}

// afterRun is what follows one run of the bootstrap stub: the stub's exit
// code for the join's (payload.StubExitCode, which the stub's tests hold to
// the PowerShell) and what cloudbase-init does with that code. A joined
// node is registered; otherwise cloudbase-init reboots the machine, which
// runs the stub again after another boot delay with the user data it reads
// then, or the guest is rejected.
func (g *Guests) afterRun(ctx context.Context, gs *guest, joinErr error, now time.Time) {
	code := StubCrashed
	if !errors.Is(joinErr, errCrashed) {
		code = payload.StubExitCode(agent.ExitCode(joinErr), gs.runs)
	}
	b := &g.bootstrap
	b.mu.Lock()
	if b.runs == nil {
		b.runs = map[string][]int{}
	}
	b.runs[gs.vmName] = append(b.runs[gs.vmName], code)
	b.mu.Unlock()
	if code == payload.StubExitJoined {
		gs.state = registered
		g.mu.Lock()
		g.joined = append(g.joined, gs.nodeName)
		g.mu.Unlock()
		g.log.Info("Node joined", "node", gs.nodeName, "vm", gs.vmName, "runs", gs.runs)
		return
	}
	runAgain, reboot := cloudbaseInitResult(code)
	switch {
	case code == StubCrashed:
		g.log.Info("Guest went down during its join; cloudbase-init runs the bootstrap again at the next boot", "vm", gs.vmName, "attempt", gs.runs)
		g.reboot(ctx, gs, now)
	case runAgain && reboot:
		g.log.Info("Guest's join failed; cloudbase-init reboots it to run the bootstrap again", "vm", gs.vmName, "attempt", gs.runs, "exitCode", code, "reason", joinErr.Error())
		g.reboot(ctx, gs, now)
	case runAgain:
		g.reject(gs, fmt.Errorf("the bootstrap failed %d times, the last with %w; cloudbase-init runs it again only at the next boot, which nothing in the simulation causes", gs.runs, joinErr))
	default:
		g.reject(gs, joinErr)
	}
}

// reboot restarts a Windows guest's machine: its automatic services start
// again, and after the boot delay cloudbase-init runs the stub again.
func (g *Guests) reboot(ctx context.Context, gs *guest, now time.Time) {
	if err := gs.win.host.Reboot(ctx); err != nil {
		g.log.Info("Services failed to start at boot", "vm", gs.vmName, "err", err.Error())
	}
	g.mu.Lock()
	gs.readyAt = now.Add(g.bootDelay)
	g.mu.Unlock()
	gs.state = booting
}
