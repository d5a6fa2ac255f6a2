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
		})
	}
}

// TestPreflightRefusesReservationsOverTheMemory: the kubelet's reserved
// memory must leave some for pods; the rule is checked on the node, against
// the memory Windows reports.
func TestPreflightRefusesReservationsOverTheMemory(t *testing.T) {
	// The fixture reserves 1536Mi + 512Mi = 2Gi.
	for _, tt := range []struct {
		name   string
		memory uint64
		refuse bool
	}{
		{"less memory than reserved", 1536 << 20, true},
		{"exactly the reserved memory", 2 << 30, true},
		{"more memory than reserved", 2<<30 + 1<<20, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t)
			n.host.SetMemory(tt.memory)
			err := n.join()
			if !tt.refuse {
				if err != nil {
					t.Fatalf("join: %v\n%s", err, n.log.String())
				}
				return
			}
			assertRefusedInPreflight(t, n, err)
			for _, want := range []string{
				"kubelet.systemReserved.memory 1536Mi", "kubelet.kubeReserved.memory 512Mi", "2Gi",
				mebibytes(tt.memory), "spec.kubelet.systemReserved / kubeReserved",
			} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not name %q: %v", want, err)
				}
			}
		})
	}

	// No memory reserved: nothing to refuse, however small the machine.
	n := newNode(t, func(c *nodeconfig.Config) { c.Kubelet = nodeconfig.Kubelet{} })
	n.host.SetMemory(512 << 20)
	if err := n.join(); err != nil {
		t.Fatalf("join without reservations: %v", err)
	}
}

func TestMebibytes(t *testing.T) {
	for b, want := range map[uint64]string{
		8 << 30:            "8Gi",
		1536 << 20:         "1536Mi",
		2<<30 - 1:          "2047Mi (2147483647 bytes)",
		uint64(2146959360): "2047Mi (2146959360 bytes)",
	} {
		if got := mebibytes(b); got != want {
			t.Errorf("mebibytes(%d) = %q, want %q", b, got, want)
		}
	}
}

// TestPreflightRecordsTheHost: preflight's record says what it found.
func TestPreflightRecordsTheHost(t *testing.T) {
	n := newNode(t)
	if err := n.join(); err != nil {
		t.Fatalf("join: %v", err)
	}
	st, _ := LoadState(n.host.FS())
	if len(st.Phases) == 0 || st.Phases[0].Name != PhasePreflight {
		t.Fatalf("phases: %+v", st.Phases)
	}
	if msg := st.Phases[0].Message; !strings.Contains(msg, "Windows build 10.0.20348, memory 8Gi") {
		t.Errorf("preflight's record: %q", msg)
	}
}
