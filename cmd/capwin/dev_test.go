package main

import (
	"bytes"
	"regexp"
	"testing"
	"time"
)

// TestDevOnce runs `capwin dev --once` as `make dev DEV_ARGS=--once` does:
// the cluster comes up on the simulators, the Windows MachineDeployment
// reaches 3 and then 1 Running machines, the tree is printed, everything is
// torn down.
func TestDevOnce(t *testing.T) {
	var out bytes.Buffer
	err := runDev(t.Context(), devOptions{once: true, name: "dev", namespace: "default", bootDelay: 0, timeout: 3 * time.Minute, dir: t.TempDir()}, &out)
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`Scaling MachineDeployment dev-windows 0 -> 3`,
		`(?m)^3 Windows machines Running \(`,
		`Scaling MachineDeployment dev-windows 3 -> 1`,
		`(?m)^1 Windows machine Running \(`,
		`(?m)^Cluster/dev\s`,
		`(?m)^\s*│\s+└─Machine/dev-windows-\S+\s+True\s+True\s+Ready`,
		`(?m)^└─ClusterInfrastructure - HybridCluster/dev\s+True`,
		`(?m)^Tearing down\.\.\. done`,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("the output lacks %s", want)
		}
	}
	if n := len(regexp.MustCompile(`─Machine/dev-windows-`).FindAllString(out.String(), -1)); n != 1 {
		t.Errorf("the tree shows %d Windows Machines, want 1", n)
	}
}
