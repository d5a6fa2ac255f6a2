package sim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/capwin/capwin/bootstrap/payload"
	"github.com/capwin/capwin/node-components/exitcode"
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
	// runs are the stub's exit codes, in order, by VM name; their number
	// is the stub's attempt count, which the real stub keeps on disk.
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

// errTokenExpired is checkToken's failure for an expired token.
var errTokenExpired = errors.New("expired")

// errUnreachable is the join's failure when SetAPIServerUnreachable says
// the API server does not answer.
var errUnreachable = errors.New("discovery: the API server did not answer (Unreachable)")

// runBootstrap is one run of the bootstrap stub by cloudbase-init, once the
// guest has booted: capwin-node join, which the checks of join stand for;
// the stub's exit code for the join's (payload.StubExitCode, which the
// stub's tests hold to the PowerShell); and what cloudbase-init does with
// that code. It returns whether the node joined. If not, cloudbase-init
// has rebooted the guest, which runs the stub again after another boot
// delay, or the guest is rejected.
func (g *Guests) runBootstrap(ctx context.Context, gs *guest, now time.Time) bool {
	g.bootstrap.mu.Lock()
	runs := g.bootstrap.runs[gs.vmName]
	g.bootstrap.mu.Unlock()
	if len(runs) > 0 && runs[len(runs)-1] == payload.StubExitJoined {
		return true // joined; registering the Node is what failed and is tried again
	}
	joinErr := g.join(ctx, gs)
	joinExit := exitcode.OK
	switch {
	case errors.Is(joinErr, errUnreachable), errors.Is(joinErr, errTokenExpired), apierrors.IsNotFound(joinErr):
		// The API server not answering; a token that is missing or
		// expired, which the bootstrap signer does not sign (discovery's
		// NoSignature). Discovery gives up on them after 5 minutes, which
		// the simulation does not wait.
		joinExit = exitcode.Retry
	case joinErr != nil:
		joinExit = exitcode.Failed
	}
	b := &g.bootstrap
	b.mu.Lock()
	if b.runs == nil {
		b.runs = map[string][]int{}
	}
	attempt := len(b.runs[gs.vmName]) + 1
	code := payload.StubExitCode(joinExit, attempt)
	b.runs[gs.vmName] = append(b.runs[gs.vmName], code)
	b.mu.Unlock()
	if joinErr == nil {
		return true
	}
	runAgain, reboot := cloudbaseInitResult(code)
	switch {
	case runAgain && reboot:
		g.mu.Lock()
		gs.readyAt = now.Add(g.bootDelay)
		g.mu.Unlock()
		g.log.Info("Guest's join failed; cloudbase-init reboots it to run the bootstrap again", "vm", gs.vmName, "attempt", attempt, "exitCode", code, "reason", joinErr.Error())
	case runAgain:
		g.reject(gs, fmt.Errorf("the bootstrap failed %d times, the last with %w; cloudbase-init runs it again only at the next boot, which nothing in the simulation causes", attempt, joinErr))
	default:
		g.reject(gs, joinErr)
	}
	return false
}

// join is what capwin-node join checks of the workload cluster once the
// guest has booted.
func (g *Guests) join(ctx context.Context, gs *guest) error {
	g.bootstrap.mu.Lock()
	unreachable := g.bootstrap.unreachable
	runs := len(g.bootstrap.runs[gs.vmName])
	g.bootstrap.mu.Unlock()
	if unreachable != nil && runs < unreachable(gs.kubelet.node.Name) {
		return errUnreachable
	}
	return g.checkToken(ctx, gs.token)
}
