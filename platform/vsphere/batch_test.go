package vsphere

import (
	"fmt"
	"sync"
	"testing"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// TestConcurrentReadsShareOneCall: reads asked for at the same time go to
// vCenter in one call, each gets its own object's properties, and an
// object vCenter does not find fails only its own read, with the fault a
// read of it alone gets (which the stale-reference retry looks for).
func TestConcurrentReadsShareOneCall(t *testing.T) {
	ctx := t.Context()
	_, _, s, calls := countedSession(t)
	vms, err := find.NewFinder(s.Client).VirtualMachineList(ctx, "/DC0/vm/*")
	if err != nil || len(vms) < 2 {
		t.Fatalf("want vcsim's VMs, got %d: %v", len(vms), err)
	}
	refs := []types.ManagedObjectReference{vms[0].Reference(), vms[1].Reference(), {Type: "VirtualMachine", Value: "vm-deleted"}, {Type: "Task", Value: "task-forgotten"}}
	calls.reset()
	got := make([]mo.VirtualMachine, len(refs))
	errs := make([]error, len(refs))
	var wg sync.WaitGroup
	for i, ref := range refs {
		wg.Go(func() {
			props := []string{"config.uuid"}
			if i == 1 {
				props = []string{"config.uuid", "runtime.powerState"}
			}
			errs[i] = s.read(ctx, ref, props, &got[i])
		})
	}
	wg.Wait()
	if n := calls.reset()["RetrievePropertiesEx"]; n != 1 {
		t.Errorf("%d reads of %d objects asked at once took %d calls, want 1", len(refs), len(refs), n)
	}
	for i, vm := range vms[:2] {
		if errs[i] != nil {
			t.Fatalf("read of %s: %v", vm.Reference().Value, errs[i])
		}
		var want mo.VirtualMachine
		if err := vm.Properties(ctx, vm.Reference(), []string{"config.uuid"}, &want); err != nil {
			t.Fatal(err)
		}
		if got[i].Reference() != vm.Reference() || got[i].Config == nil || got[i].Config.Uuid != want.Config.Uuid {
			t.Errorf("read of %s answered %+v, want BIOS UUID %s", vm.Reference().Value, got[i].Config, want.Config.Uuid)
		}
	}
	if got[1].Runtime.PowerState == "" {
		t.Errorf("the read that asked for runtime.powerState did not get it")
	}
	// That the first read is not sent runtime.powerState, which only the
	// second asked for, cannot be checked here: vcsim answers each object
	// with the property lists of every filter spec of a call.
	for i := 2; i < len(refs); i++ {
		if !isFault[*types.ManagedObjectNotFound](errs[i]) {
			t.Errorf("read of %s, which vCenter does not find: %v, want ManagedObjectNotFound", refs[i].Value, errs[i])
		}
	}

	// One at a time, each read is its own call.
	calls.reset()
	for i := range 3 {
		var vm mo.VirtualMachine
		if err := s.read(ctx, vms[0].Reference(), []string{"config.uuid"}, &vm); err != nil {
			t.Fatal(fmt.Errorf("read %d: %w", i, err))
		}
	}
	if n := calls.reset()["RetrievePropertiesEx"]; n != 3 {
		t.Errorf("3 reads one after another took %d calls, want 3", n)
	}
}
