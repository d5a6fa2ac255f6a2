package sim

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwin/capwin/bootstrap/payload"
)

func TestCloudbaseInitResult(t *testing.T) {
	for code, want := range map[int][2]bool{
		0: {false, false}, 1: {false, false}, 3: {false, false}, 1000: {false, false},
		1001: {false, true}, 1002: {true, false}, 1003: {true, true}, 1004: {false, false},
	} {
		runAgain, reboot := cloudbaseInitResult(code)
		if runAgain != want[0] || reboot != want[1] {
			t.Errorf("exit code %d: run again %v, reboot %v; want %v, %v", code, runAgain, reboot, want[0], want[1])
		}
	}
}

// TestBootstrapRunsUnderCloudbaseInitRules: a Windows guest whose join
// fails in a way that may pass is rebooted and runs the bootstrap again,
// one boot delay later, until the stub's last automatic attempt, after
// which it waits for a boot that never comes; one whose join fails for
// good runs it once. (A join that passes on a later run is in test/e2e's
// TestScaleWindowsZeroToFiveToZero: it needs the workload cluster.)
func TestBootstrapRunsUnderCloudbaseInitRules(t *testing.T) {
	const bootDelay = time.Second
	boot := func(vm, token string) (*Guests, *guest) {
		g := &Guests{log: logr.Discard(), bootDelay: bootDelay, rejected: map[string]string{}}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: vm}}
		gs := &guest{vmName: vm, token: token, kubelet: &kubelet{node: node}, readyAt: time.Unix(0, 0)}
		return g, gs
	}
	// runs advances the guest every 100 ms over a minute and returns the
	// times the bootstrap ran.
	runs := func(g *Guests, gs *guest) []time.Duration {
		var at []time.Duration
		start := time.Unix(0, 0)
		for d := time.Duration(0); d < time.Minute && gs.state == booting; d += 100 * time.Millisecond {
			before := len(g.BootstrapRuns()[gs.vmName])
			if err := g.advance(t.Context(), gs, start.Add(d)); err != nil {
				t.Fatal(err)
			}
			if len(g.BootstrapRuns()[gs.vmName]) > before {
				at = append(at, d)
			}
		}
		return at
	}

	g, gs := boot("win-a", "abcdef.0123456789abcdef")
	g.SetAPIServerUnreachable(func(string) int { return 100 })
	at := runs(g, gs)
	want := slices.Repeat([]int{payload.StubExitRebootAndRunAgain}, payload.MaxAttempts-1)
	want = append(want, payload.StubExitRunAgainAtNextBoot)
	if got := g.BootstrapRuns()["win-a"]; !slices.Equal(got, want) {
		t.Errorf("an API server that never answers: the stub exited %v, want %v", got, want)
	}
	for i := range at {
		if want := time.Duration(i) * bootDelay; at[i] != want {
			t.Errorf("run %d at %s, want %s: a run follows the reboot's boot delay", i+1, at[i], want)
		}
	}
	if r := g.Rejected()["win-a"]; gs.state != rejected || !strings.Contains(r, "only at the next boot") || !strings.Contains(r, "did not answer") {
		t.Errorf("state %v, rejected because %q", gs.state, r)
	}

	g, gs = boot("win-b", "not-a-token")
	runs(g, gs)
	if got := g.BootstrapRuns()["win-b"]; !slices.Equal(got, []int{payload.StubExitFailed}) {
		t.Errorf("a join that fails for good: the stub exited %v, want once %d", got, payload.StubExitFailed)
	}
	if r := g.Rejected()["win-b"]; gs.state != rejected || !strings.Contains(r, "not id.secret") {
		t.Errorf("state %v, rejected because %q", gs.state, r)
	}
}
