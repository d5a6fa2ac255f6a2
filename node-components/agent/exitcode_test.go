package agent

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/capwin/capwin/node-components/discovery"
	"github.com/capwin/capwin/node-components/exitcode"
	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/host/sim"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
)

// TestJoinExitCodePerFailure: join's exit code for each kind of failure,
// the code the bootstrap stub decides on. What needs a change of the
// configuration, the image or the cluster is 1; what may pass by itself
// is 3, and the progress says so too.
func TestJoinExitCodePerFailure(t *testing.T) {
	serviceExits := func(name string) func(*node) {
		return func(n *node) {
			n.host.OnStart(name, func(context.Context, *sim.Host, host.ServiceSpec) error {
				return errors.New("the process exited with code 1")
			})
		}
	}
	doesNothing := func(context.Context, *sim.Host, host.ServiceSpec) error { return nil }
	type failure struct {
		name    string
		mutates func(*nodeconfig.Config)
		setup   func(*node)
		phase   string
		want    int
	}
	cases := []failure{
		{name: "configuration not JSON", phase: PhasePreflight, want: exitcode.Failed, setup: func(n *node) {
			if err := n.host.FS().WriteFile(layout.NodeConfig, []byte("{not json"), true); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "computer name not a node name", phase: PhasePreflight, want: exitcode.Failed, setup: func(n *node) { n.host.SetComputerName("WIN_1") }},
		{name: "another Windows build", phase: PhasePreflight, want: exitcode.Failed, mutates: func(c *nodeconfig.Config) { c.WindowsBuild = "10.0.17763" }},
		{name: "pre-join command fails", phase: PhasePreJoinCommands, want: exitcode.Failed, setup: func(n *node) {
			n.host.SetShell(func(string) ([]byte, error) { return nil, exitCode(1) })
		}},
		{name: "containerd does not start", phase: PhaseContainerd, want: exitcode.Retry, setup: serviceExits(layout.ServiceContainerd)},
		{name: "kubelet does not start", phase: PhaseKubelet, want: exitcode.Retry, setup: serviceExits(layout.ServiceKubelet)},
		{name: "kubelet never registers", phase: PhaseNodeRegistration, want: exitcode.Retry, setup: func(n *node) { n.host.OnStart(layout.ServiceKubelet, doesNothing) }},
		{name: "pod network never appears", phase: PhaseKubeProxy, want: exitcode.Retry, setup: func(n *node) { n.host.OnStart(layout.ServiceFlanneld, doesNothing) }},
		{name: "another capwin-node command holds the node", phase: PhasePreflight, want: exitcode.Retry, setup: func(n *node) {
			unlock, err := n.agent().lock()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(unlock)
		}},
	}
	// Discovery's failures, as its errors carry them (discovery.Error).
	for reason, want := range map[discovery.Reason]int{
		discovery.ReasonUnreachable:     exitcode.Retry,
		discovery.ReasonNoClusterInfo:   exitcode.Retry,
		discovery.ReasonNoSignature:     exitcode.Retry,
		discovery.ReasonInvalidJoin:     exitcode.Failed,
		discovery.ReasonBadSignature:    exitcode.Failed,
		discovery.ReasonBadClusterInfo:  exitcode.Failed,
		discovery.ReasonCAMismatch:      exitcode.Failed,
		discovery.ReasonUntrustedServer: exitcode.Failed,
		discovery.ReasonTokenRejected:   exitcode.Failed,
		discovery.ReasonNoKubeletConfig: exitcode.Failed,
	} {
		cases = append(cases, failure{name: "discovery " + string(reason), phase: PhaseDiscovery, want: want, setup: func(n *node) {
			n.cp.discoverFn = func() error {
				return fmt.Errorf("token discovery: %w", &discovery.Error{Reason: reason, Message: "discovery failed"})
			}
		}})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t)
			if tc.mutates != nil {
				n = newNode(t, tc.mutates)
			}
			if tc.setup != nil {
				tc.setup(n)
			}
			a := n.agent()
			a.NodeTimeout = 100 * time.Millisecond
			err := a.Join(context.Background(), layout.NodeConfig)
			if got := ExitCode(err); got != tc.want {
				t.Fatalf("exit code %d, want %d (%v)", got, tc.want, err)
			}
			var pe *PhaseError
			if !errors.As(err, &pe) || pe.Phase != tc.phase {
				t.Errorf("failed in %v, want phase %s", err, tc.phase)
			}
			p, rerr := ReadProgress(n.host.FS())
			if tc.name == "another capwin-node command holds the node" {
				return // it never gets to report: the other command does
			}
			if rerr != nil || p.State != ProgressFailed || p.Retryable != (tc.want == exitcode.Retry) {
				t.Errorf("progress %+v (%v): want Failed, retryable %v", p, rerr, tc.want == exitcode.Retry)
			}
		})
	}
}
