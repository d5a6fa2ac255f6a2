package sim

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/capwin/capwin/bootstrap/payload"
	nodesim "github.com/capwin/capwin/node-components/host/sim"
	"github.com/capwin/capwin/node-components/nodeconfig/nodeconfigtest"
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
// good runs it once. Each run is capwin-node's real join on the guest's
// machine. (A join that passes on a later run is in test/e2e's
// TestScaleWindowsZeroToFiveToZero: it needs the workload cluster.)
func TestBootstrapRunsUnderCloudbaseInitRules(t *testing.T) {
	const bootDelay = time.Second
	defer func(o time.Duration) { simDiscovery.Timeout = o }(simDiscovery.Timeout)
	simDiscovery.Timeout = 300 * time.Millisecond
	bundle := t.TempDir()
	if err := nodesim.WriteStandInBundle(bundle, KubernetesVersion); err != nil {
		t.Fatal(err)
	}
	boot := func(vm, token string) (*Guests, *guest) {
		g := &Guests{log: logr.Discard(), bootDelay: bootDelay, rejected: map[string]string{}, dir: t.TempDir(), bundleDir: bundle, apiServer: "127.0.0.1:1"}
		gs := &guest{vmID: vm, vmName: vm, nodeName: vm, ip: "10.0.0.5", readyAt: time.Unix(0, 0), kubeletVersion: KubernetesVersion}
		gs.ctx, gs.cancel = context.WithCancel(t.Context())
		gs.procs = &sync.WaitGroup{}
		t.Cleanup(gs.cancel)
		if err := g.bootWindows(gs, guestBuilds["windows2019srvNext_64Guest"], strings.ToUpper(vm), gs.ip, nodesim.VMwareVM); err != nil {
			t.Fatal(err)
		}
		cfg := nodeconfigtest.Worker()
		cfg.KubernetesVersion = KubernetesVersion
		cfg.Join.APIServerEndpoint, cfg.Join.Token = ControlPlaneEndpointIP+":6443", token
		data, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		script := strings.Replace(payload.Stub(), "__CAPWIN_NODE_CONFIG__", base64.StdEncoding.EncodeToString(data), 1)
		gs.extra = map[string]string{"guestinfo.userdata": script}
		return g, gs
	}
	// runs advances the guest every 100 ms of its clock over a minute,
	// letting each run of the stub finish, and returns when the runs
	// began.
	runs := func(g *Guests, gs *guest) []time.Duration {
		var at []time.Duration
		start := time.Unix(0, 0)
		for d := time.Duration(0); d < time.Minute && (gs.state == booting || gs.state == joining); d += 100 * time.Millisecond {
			if err := g.advance(t.Context(), gs, start.Add(d)); err != nil {
				t.Fatal(err)
			}
			if gs.state == joining {
				at = append(at, d)
				g.afterRun(t.Context(), gs, <-gs.done, start.Add(d))
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
	if r := g.Rejected()["win-a"]; gs.state != rejected || !strings.Contains(r, "only at the next boot") || !strings.Contains(r, "unreachable") {
		t.Errorf("state %v, rejected because %q", gs.state, r)
	}

	g, gs = boot("win-b", "not-a-token")
	runs(g, gs)
	if got := g.BootstrapRuns()["win-b"]; !slices.Equal(got, []int{payload.StubExitFailed}) {
		t.Errorf("a join that fails for good: the stub exited %v, want once %d", got, payload.StubExitFailed)
	}
	if r := g.Rejected()["win-b"]; gs.state != rejected || !strings.Contains(r, "phase preflight") || !strings.Contains(r, "token") {
		t.Errorf("state %v, rejected because %q", gs.state, r)
	}
}
