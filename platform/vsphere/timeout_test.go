package vsphere

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
	"github.com/capwin/capwin/platform/vsphere/vspheresim"
)

// TestLoginTimeout: a server that takes connections and never answers gives
// a clear error within the call timeout, not a reconcile held forever.
func TestLoginTimeout(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer srv.Close()
	defer close(stop)
	sessions := NewSessions()
	sessions.CallTimeout = 200 * time.Millisecond
	start := time.Now()
	_, err := sessions.Get(t.Context(), Credentials{Server: srv.Listener.Addr().String(), Username: "u", Password: "p", Insecure: true})
	if !errors.Is(err, ErrConnect) || !errors.Is(err, ErrTimeout) {
		t.Fatalf("want ErrConnect and ErrTimeout, got %v", err)
	}
	if !strings.Contains(err.Error(), "vCenter did not answer RetrieveServiceContent within 200ms") {
		t.Errorf("the error must name the call and the timeout: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the login gave up after %s", d)
	}
}

// hangAfter passes calls to vCenter; while hang is set, it withholds the
// answer to a CloneVM_Task until the caller gives up, as a vCenter does
// that accepted the request and then stopped answering.
type hangAfter struct {
	soap.RoundTripper
	hang *atomic.Bool
}

func (h *hangAfter) RoundTrip(ctx context.Context, req, res soap.HasFault) error {
	err := h.RoundTripper.RoundTrip(ctx, req, res)
	if _, clone := req.(*methods.CloneVM_TaskBody); clone && h.hang.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

// hangingSession logs in to a fresh vcsim through hangAfter, with the given
// call timeout; hang starts false. The timeout holds for every call, not
// only the withheld one: half a second lets a busy machine answer the
// others, and is still well within the 2 s of slowClones.
func hangingSession(t *testing.T, timeout time.Duration) (*Sessions, *Session, *atomic.Bool) {
	t.Helper()
	_, creds := vcsim(t)
	hang := new(atomic.Bool)
	sessions := NewSessions()
	sessions.CallTimeout = timeout
	sessions.Transport = func(rt soap.RoundTripper) soap.RoundTripper { return &hangAfter{RoundTripper: rt, hang: hang} }
	s, err := sessions.Get(t.Context(), creds)
	if err != nil {
		t.Fatal(err)
	}
	return sessions, s, hang
}

// TestCallTimeoutMidClone: vCenter starts a clone but its answer never
// comes. The call fails in the timeout with an error naming it, and the
// machine still ends with exactly one VM.
func TestCallTimeoutMidClone(t *testing.T) {
	ctx := t.Context()
	sessions, s, hang := hangingSession(t, 500*time.Millisecond)
	hang.Store(true)
	m := machine("t1")
	_, err := s.Reconcile(ctx, m)
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "CloneVM_Task within 500ms") {
		t.Fatalf("want ErrTimeout naming CloneVM_Task, got %v", err)
	}
	if sessions.Stale(err, s) {
		t.Errorf("a timeout is not a lost session")
	}

	hang.Store(false)
	provision(ctx, t, s, m, 50*time.Millisecond)
	if n := vmsWithUUID(ctx, t, s, InstanceUUID("default", "t1")); n != 1 {
		t.Fatalf("%d VMs for one machine after a clone whose answer was lost, want 1", n)
	}
}

// TestCallerDeadlineIsNotTimeout: a caller's own deadline, shorter than
// the call timeout, is reported as the caller's, not as vCenter failing to
// answer.
func TestCallerDeadlineIsNotTimeout(t *testing.T) {
	_, s, hang := hangingSession(t, 10*time.Second)
	hang.Store(true)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := s.Reconcile(ctx, machine("c1"))
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrTimeout) {
		t.Fatalf("want the caller's context.DeadlineExceeded and not ErrTimeout, got %v", err)
	}
}

// slowClones makes vcsim's clones take two seconds for the test. vcsim
// delays a task by its info.name; without LockHandoff 0 it would also block
// every read of the template while a clone waits, which vCenter does not.
func slowClones(t *testing.T) {
	vspheresim.DelayTasks(t, map[string]int{"CloneVm": 2000, "LockHandoff": 0})
}

// TestDeleteDuringLostClone: a machine whose clone's answer was lost is
// deleted while that clone still runs and vCenter does not list its VM.
// The delete waits for the clone and destroys its VM: none is left behind.
func TestDeleteDuringLostClone(t *testing.T) {
	ctx := t.Context()
	slowClones(t)
	_, s, hang := hangingSession(t, 500*time.Millisecond)
	hang.Store(true)
	m := machine("d1")
	if _, err := s.Reconcile(ctx, m); !errors.Is(err, ErrTimeout) {
		t.Fatalf("want the clone's answer lost, got %v", err)
	}
	hang.Store(false)
	if n := vmsWithUUID(ctx, t, s, InstanceUUID("default", "d1")); n != 0 {
		t.Fatalf("vCenter lists the VM while its clone runs (%d): this test needs it not to", n)
	}

	m.DeletingSince = time.Now()
	deleteAll(ctx, t, s, m)
	waitClonesEnded(ctx, t, s) // whatever the delete did
	if n := vmsWithUUID(ctx, t, s, InstanceUUID("default", "d1")); n != 0 {
		t.Fatalf("%d VMs left behind by the lost clone, want 0", n)
	}
}

// TestDeleteWaitsOnlyForClonesItMayOwn: a machine being deleted without a
// VM waits for no clone when vCenter never logged a clone to its name, and
// none queued after its deletion began.
func TestDeleteWaitsOnlyForClonesItMayOwn(t *testing.T) {
	ctx := t.Context()
	slowClones(t)
	_, s, hang := hangingSession(t, 500*time.Millisecond)
	t.Cleanup(func() { waitClonesEnded(context.Background(), t, s) })

	other := machine("o1")
	if st, err := s.Reconcile(ctx, other); err != nil || st.Op.IsZero() {
		t.Fatalf("want o1's clone running, got %+v, %v", st, err)
	}
	never := machine("n1") // its clone was never asked for
	never.DeletingSince = time.Now()
	if gone, op, err := s.Delete(ctx, never); !gone || !op.IsZero() || err != nil {
		t.Fatalf("another machine's clone held the delete: gone=%v op=%+v err=%v", gone, op, err)
	}

	hang.Store(true)
	lost := machine("l1")
	if _, err := s.Reconcile(ctx, lost); !errors.Is(err, ErrTimeout) {
		t.Fatalf("want l1's clone's answer lost, got %v", err)
	}
	hang.Store(false)
	lost.DeletingSince = time.Now().Add(-time.Hour) // before the clones, beyond the clock-skew margin
	if gone, op, err := s.Delete(ctx, lost); !gone || !op.IsZero() || err != nil {
		t.Fatalf("a clone queued after the deletion held it: gone=%v op=%+v err=%v", gone, op, err)
	}
	lost.DeletingSince = time.Now()
	if gone, op, err := s.Delete(ctx, lost); gone || op.Type != infrav1.MachineOperationWaitForCreate || err != nil {
		t.Fatalf("want the delete to wait for l1's own clone, got gone=%v op=%+v err=%v", gone, op, err)
	}
}

// waitClonesEnded waits until no clone of the test template runs: a clone
// that outlives its test would race the next one's vcsim settings.
func waitClonesEnded(ctx context.Context, t *testing.T, s *Session) {
	t.Helper()
	dc := mustDC(ctx, t, s)
	m := machine("any")
	for range 500 {
		tmpl, err := find.NewFinder(s.Client).SetDatacenter(dc).VirtualMachine(ctx, m.Spec.Template)
		if err != nil {
			t.Fatal(err)
		}
		var o mo.VirtualMachine
		if err := tmpl.Properties(ctx, tmpl.Reference(), []string{"recentTask"}, &o); err != nil {
			t.Fatal(err)
		}
		var tasks []mo.Task
		if len(o.RecentTask) > 0 {
			if err := property.DefaultCollector(s.Client).Retrieve(ctx, o.RecentTask, []string{"info.state"}, &tasks); err != nil {
				t.Fatal(err)
			}
		}
		running := false
		for _, task := range tasks {
			running = running || task.Info.State == types.TaskInfoStateRunning || task.Info.State == types.TaskInfoStateQueued
		}
		if !running {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the template's clones did not end in 10s")
}

// TestDeleteWithAmbiguousTemplate: a template name that matches two VMs
// (the clone then fails, so there is no VM) does not block the delete.
func TestDeleteWithAmbiguousTemplate(t *testing.T) {
	ctx := t.Context()
	s, _ := newSession(t)
	root, err := find.NewFinder(s.Client).Folder(ctx, "/DC0/vm")
	if err != nil {
		t.Fatal(err)
	}
	other, err := root.CreateFolder(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := find.NewFinder(s.Client).VirtualMachine(ctx, "/DC0/vm/DC0_H0_VM0")
	if err != nil {
		t.Fatal(err)
	}
	task, err := tmpl.Clone(ctx, other, "DC0_H0_VM0", types.VirtualMachineCloneSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	m := machine("a1")
	if _, err := s.Reconcile(ctx, m); err == nil || !strings.Contains(err.Error(), "multiple") {
		t.Fatalf("want the clone refused for an ambiguous template name, got %v", err)
	}
	m.DeletingSince = time.Now()
	if gone, op, err := s.Delete(ctx, m); !gone || !op.IsZero() || err != nil {
		t.Fatalf("gone=%v op=%+v err=%v, want gone", gone, op, err)
	}
}

// TestLostCloneIsWaitedFor: a clone whose answer was lost still runs when
// the machine is reconciled again. The machine's second clone finds the
// name taken (in vcsim its task fails so, after the first ends); the
// machine goes on with the first clone's VM, found by instance UUID, with
// no error on the way and one VM in the end.
func TestLostCloneIsWaitedFor(t *testing.T) {
	ctx := t.Context()
	slowClones(t)
	_, s, hang := hangingSession(t, 500*time.Millisecond)
	hang.Store(true)
	m := machine("lost")
	if _, err := s.Reconcile(ctx, m); !errors.Is(err, ErrTimeout) {
		t.Fatalf("want the clone's answer lost, got %v", err)
	}
	hang.Store(false)
	st, errs := provision(ctx, t, s, m, 20*time.Millisecond)
	if errs != 0 || !st.PoweredOn {
		t.Errorf("the machine met %d errors while its lost clone ran, want none (%+v)", errs, st)
	}
	if n := vmsWithUUID(ctx, t, s, InstanceUUID("default", "lost")); n != 1 {
		t.Fatalf("%d VMs for the machine, want 1", n)
	}
}

// TestFoundVMWaitsForARunningClone: a machine with no clone known to have
// ended whose VM is found powered off, while a clone of its template to
// its name still runs (vCenter may list a clone's VM before the clone
// ends), waits for that clone before it writes the VM's metadata or powers
// it on. Once no such clone runs, it goes on.
func TestFoundVMWaitsForARunningClone(t *testing.T) {
	ctx := t.Context()
	v, creds := vcsim(t)
	s, err := NewSessions().Get(ctx, creds)
	if err != nil {
		t.Fatal(err)
	}
	m := machine("found")
	// A static address: the clone leaves the VM off.
	m.Spec.Network = []infrav1.VSphereNetworkDevice{{NetworkName: "VM Network", IPAddrs: []string{"10.0.0.21/24"}, Gateway4: "10.0.0.1"}}
	st, err := s.Reconcile(ctx, m)
	if err != nil || st.Op.Type != infrav1.MachineOperationCreate {
		t.Fatalf("want a clone, got %+v, %v", st, err)
	}
	waitTask(ctx, t, s, st.Op.ID)

	// A slow clone of the template to the machine's name, in another folder.
	dc := mustDC(ctx, t, s)
	folders, err := dc.Folders(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := folders.VmFolder.CreateFolder(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	slowClones(t)
	var otherErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		otherErr = v.CloneVM(ctx, "/DC0/vm/DC0_H0_VM0", "/DC0/vm/other", "found")
	}()
	t.Cleanup(func() { <-done })
	var waited infrav1.MachineOperation
	for range 100 {
		// No operation recorded: the answer of the clone was lost.
		st, err := s.Reconcile(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if st.Op.Type == infrav1.MachineOperationWaitForCreate {
			waited = st.Op
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if waited.IsZero() {
		t.Fatalf("the machine did not wait for the running clone to its name")
	}
	if o := vmConfig(ctx, t, s, m); o.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOff {
		t.Errorf("the VM was powered on while a clone that may have made it ran")
	}
	<-done
	if otherErr != nil {
		t.Fatal(otherErr)
	}
	m.Op = waited
	if st, errs := provision(ctx, t, s, m, 10*time.Millisecond); errs != 0 || !st.PoweredOn {
		t.Errorf("after the clone ended: %+v, %d errors", st, errs)
	}
}

// TestUnreachable: an error of a call that did not reach vCenter, or
// whose connection was cut, is told apart (and made ErrConnect, so
// PlatformUnavailable); a fault vCenter answered with, a timeout, or a
// caller's cancellation is not.
func TestUnreachable(t *testing.T) {
	ctx := t.Context()
	v, creds := vcsim(t)
	s, err := NewSessions().Get(ctx, creds)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.SetReachable(false); err != nil {
		t.Fatal(err)
	}
	_, refused := s.Reconcile(ctx, machine("down"))
	if err := v.SetReachable(true); err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, byCaller := s.Reconcile(canceled, machine("canceled"))
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", refused, true},
		{"connection cut", fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), true},
		{"a fault vCenter answered", soap.WrapVimFault(&types.ManagedObjectNotFound{}), false},
		{"a timeout", fmt.Errorf("%w CloneVM_Task within 1m0s: %w", ErrTimeout, context.DeadlineExceeded), false},
		{"the caller's cancellation", byCaller, false},
		{"none", nil, false},
	} {
		if got := unreachable(tt.err); got != tt.want {
			t.Errorf("%s (%v): unreachable %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

// TestNameTakenByAnotherVMFailsAtOnce: a VM that is not the machine's
// holds its name in the folder. The machine's clone is refused for it, and
// the machine fails at once, naming that VM, even while clones of its
// template for other machines run: it neither waits for them nor clones
// again.
func TestNameTakenByAnotherVMFailsAtOnce(t *testing.T) {
	ctx := t.Context()
	v, _, s, calls := countedSession(t)
	if err := v.CloneVM(ctx, "/DC0/vm/DC0_H0_VM0", "/DC0/vm", "taken"); err != nil {
		t.Fatal(err)
	}
	slowClones(t)
	other := machine("other")
	if st, err := s.Reconcile(ctx, other); err != nil || st.Op.Type != infrav1.MachineOperationCreate {
		t.Fatalf("another machine's clone: %+v, %v", st, err)
	}
	calls.reset()
	m := machine("taken")
	var err error
	for range 200 {
		var st State
		st, err = s.Reconcile(ctx, m)
		if err != nil {
			break
		}
		m.Op = st.Op
		time.Sleep(20 * time.Millisecond)
	}
	if !errors.Is(err, platform.ErrOperationFailed) || !strings.Contains(err.Error(), "has the name taken and instance UUID") {
		t.Fatalf("want OperationFailed naming the VM that has the name, got %v", err)
	}
	// The controller's retries (the operation cleared) read the name
	// instead of cloning again while the other VM has it.
	for range 3 {
		m.Op = infrav1.MachineOperation{}
		if _, err := s.Reconcile(ctx, m); !errors.Is(err, platform.ErrOperationFailed) {
			t.Fatalf("a retry: %v", err)
		}
	}
	if n := calls.reset()["CloneVM_Task"]; n != 1 {
		t.Errorf("%d clones asked for a machine whose name another VM has, want 1", n)
	}
}

// TestWaitedForCloneThatFailedIsNotTheMachines: a machine that waited for
// a clone that might have been its own (WaitForCreate) goes on when that
// clone fails, without taking its error for its own: it clones.
func TestWaitedForCloneThatFailedIsNotTheMachines(t *testing.T) {
	ctx := t.Context()
	v, _, s, _ := countedSession(t)
	failed := failedClone(ctx, t, v, s, "dup")
	m := machine("victim")
	m.Op = infrav1.MachineOperation{Type: infrav1.MachineOperationWaitForCreate, ID: failed.Reference().Value}
	st, err := s.Reconcile(ctx, m)
	if err != nil {
		t.Fatalf("a machine whose waited-for clone failed: %v", err)
	}
	if st.Op.Type != infrav1.MachineOperationCreate {
		t.Errorf("a machine with no VM after the clone it waited for: %+v, want its own clone", st)
	}
}

// failedClone clones the test template to name twice and returns the
// second clone's task, which failed on the taken name.
func failedClone(ctx context.Context, t *testing.T, v *vspheresim.VCenter, s *Session, name string) *object.Task {
	t.Helper()
	if err := v.CloneVM(ctx, "/DC0/vm/DC0_H0_VM0", "/DC0/vm", name); err != nil {
		t.Fatal(err)
	}
	tmpl, err := find.NewFinder(s.Client).VirtualMachine(ctx, "/DC0/vm/DC0_H0_VM0")
	if err != nil {
		t.Fatal(err)
	}
	folders, err := mustDC(ctx, t, s).Folders(ctx)
	if err != nil {
		t.Fatal(err)
	}
	task, err := tmpl.Clone(ctx, folders.VmFolder, name, types.VirtualMachineCloneSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx); err == nil {
		t.Fatal("a second clone to a taken name succeeded")
	}
	return task
}

// slowCalls delays every call after it is switched on.
type slowCalls struct {
	soap.RoundTripper
	on    *atomic.Bool
	delay time.Duration
}

func (c slowCalls) RoundTrip(ctx context.Context, req, res soap.HasFault) error {
	if c.on.Load() {
		time.Sleep(c.delay)
	}
	return c.RoundTripper.RoundTrip(ctx, req, res)
}

// TestSharedLookupIsNotTheFirstCallers: reconciles that need the same
// inventory lookup share one; the reconcile that started it ending (its
// context cancelled) fails no other, and one whose own deadline comes
// first stops waiting then.
func TestSharedLookupIsNotTheFirstCallers(t *testing.T) {
	ctx := t.Context()
	_, creds := vcsim(t)
	on := new(atomic.Bool)
	sessions := NewSessions()
	sessions.Transport = func(rt soap.RoundTripper) soap.RoundTripper {
		return slowCalls{RoundTripper: rt, on: on, delay: time.Second}
	}
	s, err := sessions.Get(ctx, creds)
	if err != nil {
		t.Fatal(err)
	}
	on.Store(true)
	first, cancel := context.WithCancel(ctx)
	firstErr := make(chan error, 1)
	go func() {
		_, err := s.datacenter(first, "DC0")
		firstErr <- err
	}()
	time.Sleep(50 * time.Millisecond)
	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancelShort()
	start := time.Now()
	// The lookup takes a second at least: a waiter back well before then
	// stopped at its deadline, however slow the machine is to wake it.
	if _, err := s.datacenter(short, "DC0"); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 600*time.Millisecond {
		t.Errorf("a waiter with a 100ms deadline returned after %s with %v", time.Since(start), err)
	}
	on.Store(false)
	cancel()
	if err := <-firstErr; !errors.Is(err, context.Canceled) {
		t.Errorf("the first caller, cancelled: %v", err)
	}
	if dc, err := s.datacenter(ctx, "DC0"); err != nil || dc == nil {
		t.Errorf("a caller that shares the lookup the cancelled one started: %v", err)
	}
}

// failTaskReads fails every read of a Task while on is set, as a vCenter
// that cannot be asked about a task (a session to renew, a dropped
// connection) does; other calls pass.
type failTaskReads struct {
	soap.RoundTripper
	on *atomic.Bool
}

func (f failTaskReads) RoundTrip(ctx context.Context, req, res soap.HasFault) error {
	if b, ok := req.(*methods.RetrievePropertiesExBody); ok && f.on.Load() {
		for _, spec := range b.Req.SpecSet {
			for _, o := range spec.ObjectSet {
				if o.Obj.Type == "Task" {
					return errors.New("connection reset by peer")
				}
			}
		}
	}
	return f.RoundTripper.RoundTrip(ctx, req, res)
}

// TestWaitedForCloneUnreadableIsTheMachines: a machine waiting for a clone
// that may be its own, whose task cannot be read, reports that error and
// does nothing else: it neither takes the clone as ended nor clones.
func TestWaitedForCloneUnreadableIsTheMachines(t *testing.T) {
	ctx := t.Context()
	v, creds := vcsim(t)
	on := new(atomic.Bool)
	sessions := NewSessions()
	sessions.Transport = func(rt soap.RoundTripper) soap.RoundTripper { return failTaskReads{RoundTripper: rt, on: on} }
	s, err := sessions.Get(ctx, creds)
	if err != nil {
		t.Fatal(err)
	}
	task := failedClone(ctx, t, v, s, "other")
	m := machine("unread")
	m.Op = infrav1.MachineOperation{Type: infrav1.MachineOperationWaitForCreate, ID: task.Reference().Value}
	on.Store(true)
	st, err := s.Reconcile(ctx, m)
	on.Store(false)
	if err == nil || !strings.Contains(err.Error(), "connection reset by peer") {
		t.Errorf("a machine whose waited-for clone's task cannot be read: %v, want that error", err)
	}
	if st.Op.Type == infrav1.MachineOperationCreate {
		t.Errorf("the machine cloned while it could not read the clone it waited for: %+v", st)
	}
	if n := vmsWithUUID(ctx, t, s, InstanceUUID("default", "unread")); n != 0 {
		t.Errorf("%d VMs for the machine, want none", n)
	}
}
