package agent

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
)

// serviceArgs is a registered service's command and environment.
func serviceArgs(t *testing.T, n *node, name string) ([]string, []string) {
	t.Helper()
	spec, _, err := n.host.Services().Get(context.Background(), name)
	if err != nil {
		t.Fatalf("service %s: %v", name, err)
	}
	return spec.Command, spec.Environment
}

// assertRefusedInPreflight checks that err is a permanent preflight
// failure, reported as such, that left the host as it was.
func assertRefusedInPreflight(t *testing.T, n *node, err error) {
	t.Helper()
	var pe *PhaseError
	if !errors.As(err, &pe) || pe.Phase != PhasePreflight || pe.Retryable {
		t.Fatalf("got %v, want a permanent preflight failure", err)
	}
	if ExitCode(err) != ExitFailed {
		t.Errorf("exit code %d, want %d", ExitCode(err), ExitFailed)
	}
	p, _ := ReadProgress(n.host.FS())
	if p == nil || p.State != ProgressFailed || p.Phase != PhasePreflight {
		t.Errorf("progress: %+v", p)
	}
	if got := n.host.Events(); slices.ContainsFunc(got, func(e string) bool { return strings.HasPrefix(e, "start") || strings.HasPrefix(e, "create-network") }) {
		t.Errorf("a refused node changed the host: %q", got)
	}
}

// TestNodeTakesItsComputerName: a configuration without nodeName, as the
// bootstrap provider renders it, joins as the host's computer name in lower
// case. A run after a crash keeps the name the join started with, even when
// the computer name changed in between.
func TestNodeTakesItsComputerName(t *testing.T) {
	n := newNode(t)
	if n.cfg.NodeName != "" {
		t.Fatalf("the fixture has nodeName %q; this test needs none", n.cfg.NodeName)
	}
	n.host.SetComputerName("WIN-7Q2KX")
	if err := n.stopAfter(PhaseKubelet).Join(context.Background(), layout.NodeConfig); !errors.Is(err, errKilled) {
		t.Fatalf("first run: got %v, want the kill after %s", err, PhaseKubelet)
	}
	n.host.SetComputerName("WIN-RENAMED")
	if err := n.join(); err != nil {
		t.Fatalf("resumed run: %v\n%s", err, n.log.String())
	}

	const want = "win-7q2kx"
	for _, svc := range []string{layout.ServiceKubelet, layout.ServiceKubeProxy} {
		if cmd, _ := serviceArgs(t, n, svc); !slices.Contains(cmd, "--hostname-override="+want) {
			t.Errorf("%s does not run as %s: %q", svc, want, cmd)
		}
	}
	if _, env := serviceArgs(t, n, layout.ServiceFlanneld); !slices.Contains(env, "NODE_NAME="+want) {
		t.Errorf("flanneld's environment lacks NODE_NAME=%s: %q", want, env)
	}
	if p, err := ReadProgress(n.host.FS()); err != nil || p.NodeName != want || p.State != ProgressJoined {
		t.Errorf("progress: %+v, %v", p, err)
	}
	if st, err := LoadState(n.host.FS()); err != nil || st.NodeName != want {
		t.Errorf("the join state does not keep the node name %s: %+v, %v", want, st, err)
	}
	if !strings.Contains(n.log.String(), "Joining node "+want+" to") {
		t.Errorf("the log does not name the node %s:\n%s", want, n.log.String())
	}
}

// TestNodeNameInTheConfigurationWins: a configuration that names the node
// is obeyed whatever the computer name, and the difference is logged.
func TestNodeNameInTheConfigurationWins(t *testing.T) {
	n := newNode(t, func(c *nodeconfig.Config) { c.NodeName = "win1-named" })
	if err := n.join(); err != nil {
		t.Fatalf("join: %v\n%s", err, n.log.String())
	}
	if cmd, _ := serviceArgs(t, n, layout.ServiceKubelet); !slices.Contains(cmd, "--hostname-override=win1-named") {
		t.Errorf("the kubelet does not run as win1-named: %q", cmd)
	}
	if !strings.Contains(n.log.String(), "The computer name WIN1-MD-Q3ZK5A is not the node name win1-named") {
		t.Errorf("the log does not mention the differing computer name:\n%s", n.log.String())
	}
}

func TestPreflightRefusesAnInvalidComputerName(t *testing.T) {
	for _, computerName := range []string{"WINDOWS-WORKER-0042", "WIN_1"} {
		t.Run(computerName, func(t *testing.T) {
			n := newNode(t)
			n.host.SetComputerName(computerName)
			err := n.join()
			assertRefusedInPreflight(t, n, err)
			for _, want := range []string{`"` + computerName + `"`, nodeconfig.NodeNameRule, "nodeName"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not name %s: %v", want, err)
				}
			}
			if st, _ := LoadState(n.host.FS()); st.NodeName != "" {
				t.Errorf("a refused name was kept: %q", st.NodeName)
			}
		})
	}
}
