package vsphere

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
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
		// The first resync makes the session's list view, sets it to the
		// VMs, and reads it; the second is answered by that read.
		if n, most := sessions.RoundTrips()-start, int64(3-3*round); n > most {
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

	// The view gone (vCenter drops a session's views with it): made
	// again, and the resync still answered by one read.
	gone := s.list.view.Reference()
	if err := s.list.view.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	now = now.Add(viewTTL + time.Second)
	for round := range 2 {
		start := sessions.RoundTrips()
		for _, m := range ms[2:] {
			if st, err := s.Reconcile(ctx, m); err != nil || !st.PoweredOn || len(st.Addresses) != 1 {
				t.Errorf("resync of %s after its view went: %+v, %v", m.Name, st, err)
			}
		}
		// First the failed read, the new view, setting it, the read;
		// then nothing.
		if n, most := sessions.RoundTrips()-start, int64(4-4*round); n > most {
			t.Errorf("resync %d of %d machines after the view went took %d round trips, want at most %d", round+1, len(ms[2:]), n, most)
		}
	}
	if s.list.view == nil || s.list.view.Reference() == gone {
		t.Error("the view that went was not made again")
	}

	// Reconfigured outside capwin (its devices may have changed): read on
	// its own, which records the new configuration for later reads.
	vm3, _ := s.findVM(ctx, dc, ms[3])
	task, err = vm3.Reconfigure(ctx, types.VirtualMachineConfigSpec{Annotation: "edited"})
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	var o mo.VirtualMachine
	if err := vm3.Properties(ctx, vm3.Reference(), []string{"config.changeVersion"}, &o); err != nil {
		t.Fatal(err)
	}
	now = now.Add(viewTTL + time.Second)
	if _, err := s.Reconcile(ctx, ms[3]); err != nil {
		t.Fatal(err)
	}
	s.list.mu.Lock()
	got := s.list.known[vm3.Reference()].changeVersion
	s.list.mu.Unlock()
	if got != o.Config.ChangeVersion {
		t.Errorf("a VM reconfigured outside capwin was answered from the shared read (known version %q, VM's %q)", got, o.Config.ChangeVersion)
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

// TestResyncWhileVCenterDoesNotAnswer: a shared read vCenter does not
// answer fails the resync as unavailable, and no machine then reads its
// VM on its own.
func TestResyncWhileVCenterDoesNotAnswer(t *testing.T) {
	ctx := t.Context()
	v, creds := vcsim(t)
	sessions := NewSessions()
	sessions.CallTimeout = 500 * time.Millisecond
	hang := &hangReads{}
	sessions.Transport = func(rt soap.RoundTripper) soap.RoundTripper { hang.RoundTripper = rt; return hang }
	s, err := sessions.Get(ctx, creds)
	if err != nil {
		t.Fatal(err)
	}
	ms := provisionRunning(t, v, s, "h0", "h1", "h2")
	hang.hang.Store(true)
	for _, m := range ms {
		if _, err := s.Reconcile(ctx, m); !errors.Is(err, platform.ErrUnavailable) {
			t.Errorf("resync of %s while vCenter does not answer: %v, want ErrUnavailable", m.Name, err)
		}
	}
	// Each resync asks for the shared read again (one vCenter did not
	// answer is not kept), and none reads its VM on its own.
	if n := hang.shared.Load(); n != int64(len(ms)) {
		t.Errorf("%d shared reads for %d resyncs while vCenter does not answer, want one each", n, len(ms))
	}
	if n := hang.own.Load(); n != 0 {
		t.Errorf("%d reads of a machine's own VM while vCenter does not answer the shared one, want none", n)
	}
}

// hangReads holds property reads until their context ends while hang is
// set, as a vCenter that stopped answering does.
type hangReads struct {
	soap.RoundTripper
	hang        atomic.Bool
	shared, own atomic.Int64 // reads through the list view, of anything else
}

func (h *hangReads) RoundTrip(ctx context.Context, req, res soap.HasFault) error {
	if b, ok := req.(*methods.RetrievePropertiesExBody); ok && h.hang.Load() {
		if b.Req.SpecSet[0].ObjectSet[0].Obj.Type == "ListView" {
			h.shared.Add(1)
		} else {
			h.own.Add(1)
		}
		<-ctx.Done()
		return ctx.Err()
	}
	return h.RoundTripper.RoundTrip(ctx, req, res)
}

// TestCloneWhoseVMWasDeletedClonesAgain: a clone's task names its VM; when
// that VM was deleted before the machine looked, the machine is cloned
// again rather than sent to the deleted VM.
func TestCloneWhoseVMWasDeletedClonesAgain(t *testing.T) {
	ctx := t.Context()
	s, _ := newSession(t)
	m := machine("gone")
	st, err := s.Reconcile(ctx, m)
	if err != nil || st.Op.Type != infrav1.MachineOperationCreate {
		t.Fatalf("first reconcile: %+v, %v", st, err)
	}
	task := object.NewTask(s.Client, types.ManagedObjectReference{Type: "Task", Value: st.Op.ID})
	info, err := task.WaitForResult(ctx)
	if err != nil {
		t.Fatal(err)
	}
	made := object.NewVirtualMachine(s.Client, info.Result.(types.ManagedObjectReference))
	powerOff(t, made) // the clone powered it on
	destroy, err := made.Destroy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := destroy.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	m.Op = st.Op
	st, err = s.Reconcile(ctx, m)
	if err != nil || st.Op.Type != infrav1.MachineOperationCreate || st.Op.ID == m.Op.ID {
		t.Errorf("a machine whose cloned VM was deleted: %+v, %v; want a new clone", st, err)
	}
}
