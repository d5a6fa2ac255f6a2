package vsphere

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/vmware/govmomi/object"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform/vsphere/vspheresim"
)

// provisionRunning provisions the named machines, has each guest report an
// address as VMware Tools would (10.0.0.10, .11, ...), and returns them as
// the controller then passes them: provisioned, with no operation and, the
// node joined, no bootstrap data.
func provisionRunning(t testing.TB, v *vspheresim.VCenter, s *Session, names ...string) []Machine {
	t.Helper()
	ctx := t.Context()
	dc := mustDC(ctx, t, s)
	var out []Machine
	for i, name := range names {
		m := machine(name)
		provision(ctx, t, s, m, 0)
		vm, err := s.findVM(ctx, dc, m)
		if err != nil || vm == nil {
			t.Fatalf("no VM for %s: %v", name, err)
		}
		if err := v.ReportGuest(vm.Reference().Value, m.ComputerName, []vspheresim.GuestNIC{{IPs: []string{fmt.Sprintf("10.0.0.%d", 10+i)}, Network: "VM Network"}}); err != nil {
			t.Fatal(err)
		}
		m.Provisioned, m.UserData = true, nil
		out = append(out, m)
	}
	return out
}

// TestResyncOfRunningMachinesSharesOneRead: the resync of running machines
// is answered by one read of their datacenter, with the same state their
// own reads give; a VM powered off or deleted outside capwin is seen, by
// its own read, once that read is older than viewTTL; a machine with
// bootstrap data to compare is read on its own.
func TestResyncOfRunningMachinesSharesOneRead(t *testing.T) {
	ctx := t.Context()
	v, creds := vcsim(t)
	sessions := NewSessions()
	s, err := sessions.Get(ctx, creds)
	if err != nil {
		t.Fatal(err)
	}
	ms := provisionRunning(t, v, s, "r0", "r1", "r2", "r3", "r4")
	now := time.Now()
	s.views.Now = func() time.Time { return now }

	// Each machine's own read, for comparison.
	own := map[string]State{}
	for _, m := range ms {
		vm, err := s.findVM(ctx, mustDC(ctx, t, s), m)
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.observe(ctx, vm, m)
		if err != nil {
			t.Fatal(err)
		}
		own[m.Name] = st
	}

	for round := range 2 {
		start := sessions.RoundTrips()
		for i, m := range ms {
			st, err := s.Reconcile(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			want := own[m.Name]
			if st.BIOSUUID != want.BIOSUUID || !st.PoweredOn || !st.Exists || !st.Op.IsZero() ||
				fmt.Sprint(st.Addresses) != fmt.Sprint(want.Addresses) || st.NetworkNotApplied != want.NetworkNotApplied {
				t.Errorf("resync of %s gave %+v; its own read %+v", m.Name, st, want)
			}
			if got := fmt.Sprint(st.Addresses); got != fmt.Sprintf("[10.0.0.%d]", 10+i) {
				t.Errorf("resync of %s gave addresses %s", m.Name, got)
			}
		}
		// The first resync makes the session's container view and reads
		// it; the second is answered by that read.
		if n, most := sessions.RoundTrips()-start, int64(2-2*round); n > most {
			t.Errorf("resync %d of %d running machines took %d round trips, want at most %d", round+1, len(ms), n, most)
		}
	}

	// Powered off outside capwin: seen once the read is old, and powered on.
	dc := mustDC(ctx, t, s)
	vm0, _ := s.findVM(ctx, dc, ms[0])
	powerOff(t, vm0)
	now = now.Add(viewTTL + time.Second)
	st, err := s.Reconcile(ctx, ms[0])
	if err != nil {
		t.Fatal(err)
	}
	if st.Op.Type != infrav1.MachineOperationPowerOn {
		t.Errorf("a VM powered off outside capwin was not powered on: %+v", st)
	}

	// Deleted outside capwin: once the read is old, its own read finds it
	// gone.
	vm1, _ := s.findVM(ctx, dc, ms[1])
	powerOff(t, vm1)
	task, err := vm1.Destroy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	now = now.Add(viewTTL + time.Second)
	if _, err := s.Reconcile(ctx, ms[1]); !errors.Is(err, ErrVMGone) {
		t.Errorf("a VM deleted outside capwin: %v, want ErrVMGone", err)
	}

	// Bootstrap data to compare with guestinfo: the machine's own read,
	// which sees it differs.
	m2 := ms[2]
	m2.UserData = []byte("#ps1_sysnative\n# other\n")
	if st, err := s.Reconcile(ctx, m2); err != nil || !st.UserDataStale {
		t.Errorf("a machine with other bootstrap data: stale %v, %v", st.UserDataStale, err)
	}
}

func powerOff(t testing.TB, vm *object.VirtualMachine) {
	t.Helper()
	task, err := vm.PowerOff(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
}
