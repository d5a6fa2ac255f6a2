// Package e2e drives whole clusters through the simulation (test/sim): the
// real Cluster API core controllers, capwin's controllers and webhooks,
// vcsim and the guest simulator, from `clusterctl generate cluster`'s output
// to Nodes in the workload cluster.
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/capwin/capwin/test/sim"
)

var (
	s *sim.Sim
	// log receives the simulations' logs: recorded while a test records
	// them (logs), printed when E2E_LOG is set, discarded otherwise.
	log = logr.New(logs.sink())
)

// bootDelay is the guests' boot delay unless a test changes it.
const bootDelay = 200 * time.Millisecond

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run starts the simulation the tests share and runs them. Most run one
// after another: they stop capwin's controllers, inject faults into the
// shared guests, count the vCenter's tasks and sessions, or record every
// simulation's log (the secret scans, TestNoSecretInAnyOutput and
// TestAzureWindowsCluster). Those marked t.Parallel run together once all
// of those have ended, GOMAXPROCS at a time (go test's -parallel; two on 2
// CPUs): each has a simulation of its own, or uses the shared one for a
// cluster of its own and its VMs (and, for the resilience test, labels the
// shared management cluster's CRDs as clusterctl does, which changes
// nothing the others read).
func run(m *testing.M) int {
	ctx := context.Background()
	if os.Getenv("E2E_LOG") != "" {
		printer := funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, time.Now().Format("15:04:05.000"), prefix, args) }, funcr.Options{Verbosity: 2})
		log = logr.New(teeSink{logs.sink(), printer.GetSink()})
	}
	var err error
	s, err = sim.Start(ctx, sim.Options{BootDelay: bootDelay, Log: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the simulation:", err)
		return 1
	}
	code := m.Run()
	if err := s.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the simulation:", err)
	}
	return code
}
