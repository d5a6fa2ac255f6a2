package vsphere

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

// TestEveryCallIsDocumented: vcsim checks no privileges, so the calls
// capwin makes in a machine's whole life (clones powered on and left off,
// the metadata reconfigure, power-on, user data written and cleared,
// resyncs through the shared read, a clone waited for, power-off and
// destroy, logout) are checked against the calls docs/vsphere.md names in
// "vCenter privileges": each must be there.
func TestEveryCallIsDocumented(t *testing.T) {
	ctx := t.Context()
	v, sessions, s, calls := countedSession(t)
	dhcp := machine("priv-dhcp")
	static := machine("priv-static")
	static.Spec.Network = []infrav1.VSphereNetworkDevice{{NetworkName: "VM Network", IPAddrs: []string{"10.0.0.21/24"}, Gateway4: "10.0.0.1"}}
	static.Spec.DiskGiB = 20
	var running []Machine
	for _, m := range []Machine{dhcp, static} {
		provision(ctx, t, s, m, 10*time.Millisecond)
		m.Op = infrav1.MachineOperation{}
		m.UserData = []byte("#ps1_sysnative\n$NodeConfig = 'bmV3'\n")
		op, err := s.WriteUserData(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.WaitTask(ctx, op.ID); err != nil {
			t.Fatal(err)
		}
		op, err = s.ClearUserData(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.WaitTask(ctx, op.ID); err != nil {
			t.Fatal(err)
		}
		if cleared, err := s.UserDataCleared(ctx, m); err != nil || !cleared {
			t.Fatalf("user data not cleared: %v", err)
		}
		running = append(running, m)
	}
	provisionRunning(t, v, s, "priv-resync")
	for _, m := range running {
		m.Provisioned, m.UserData = true, nil
		if _, err := s.Reconcile(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	// A machine being deleted that never had a VM looks for clones that
	// may be its own.
	never := machine("priv-never")
	never.DeletingSince = time.Now()
	deleteAll(ctx, t, s, never)
	for _, m := range running {
		deleteAll(ctx, t, s, m)
	}
	if _, err := sessions.LogoutIdle(ctx, 0); err != nil {
		t.Fatal(err)
	}

	doc, err := os.ReadFile("../../docs/vsphere.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	start := strings.Index(section, "## vCenter privileges")
	if start < 0 {
		t.Fatal("docs/vsphere.md has no section vCenter privileges")
	}
	section = section[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`([A-Z][A-Za-z]+(?:_Task)?)`").FindAllStringSubmatch(section, -1) {
		documented[m[1]] = true
	}
	made := calls.reset()
	if len(made) < 10 {
		t.Fatalf("only %d methods recorded: %v", len(made), made)
	}
	for _, method := range slices.Sorted(maps.Keys(made)) {
		if !documented[method] {
			t.Errorf("capwin calls %s (%d times), which docs/vsphere.md's vCenter privileges does not name", method, made[method])
		}
	}
	t.Log(fmt.Sprint(made))
}
