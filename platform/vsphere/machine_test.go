package vsphere

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
	"k8s.io/utils/ptr"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
	"github.com/capwin/capwin/platform/vsphere/vspheresim"

	"github.com/capwin/capwin/internal/userdata"
)

// vcsim starts an in-process vCenter simulator (one datacenter DC0, a
// cluster DC0_C0, template-able VMs) and returns it and its credentials.
func vcsim(t testing.TB) (*vspheresim.VCenter, Credentials) {
	t.Helper()
	v := vspheresim.StartT(t)
	return v, Credentials{Server: v.Host, Username: vspheresim.User, Password: vspheresim.Password, Insecure: true}
}

// newSession starts vcsim and logs in to it.
func newSession(t testing.TB) (*Session, Credentials) {
	t.Helper()
	_, creds := vcsim(t)
	s, err := NewSessions().Get(t.Context(), creds)
	if err != nil {
		t.Fatal(err)
	}
	return s, creds
}

func machine(name string) Machine {
	return Machine{
		Namespace:    "default",
		Name:         name,
		Datacenter:   "DC0",
		OS:           infrav1.OSWindows,
		ComputerName: "win-" + name,
		UserData:     []byte("#ps1_sysnative\n$NodeConfig = 'e30='\n"),
		Spec: &infrav1.VSphereMachineSpec{
			Template:     "DC0_H0_VM0",
			NumCPUs:      4,
			MemoryMiB:    8192,
			ResourcePool: "/DC0/host/DC0_C0/Resources",
			Network:      []infrav1.VSphereNetworkDevice{{NetworkName: "VM Network", DHCP4: ptr.To(true)}},
		},
	}
}

// provision reconciles m until its VM runs, as the controller would across
// requeues, recording the task reference it is handed. requeue is how long
// it waits while a task runs, as the controller's requeue does.
func provision(ctx context.Context, t testing.TB, s *Session, m Machine, requeue time.Duration) (State, int) {
	t.Helper()
	var errs int
	for range 1000 {
		st, err := s.Reconcile(ctx, m)
		if err != nil {
			errs++
			m.Op = infrav1.MachineOperation{}
			continue
		}
		m.Op = st.Op
		if st.Exists && st.PoweredOn && st.Op.IsZero() {
			return st, errs
		}
		time.Sleep(requeue)
	}
	t.Fatalf("machine %s did not reach a running VM", m.Name)
	return State{}, errs
}

func vmsWithUUID(ctx context.Context, t testing.TB, s *Session, uuid string) int {
	t.Helper()
	vms, err := find.NewFinder(s.Client).VirtualMachineList(ctx, "/DC0/vm/...")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, vm := range vms {
		var o mo.VirtualMachine
		if err := vm.Properties(ctx, vm.Reference(), []string{"config.instanceUuid"}, &o); err != nil {
			t.Fatal(err)
		}
		if o.Config != nil && o.Config.InstanceUuid == uuid {
			n++
		}
	}
	return n
}

func TestCreateObserveDelete(t *testing.T) {
	ctx := t.Context()
	_, creds := vcsim(t)
	sessions := NewSessions()
	s, err := sessions.Get(ctx, creds)
	if err != nil {
		t.Fatal(err)
	}
	m := machine("m1")
	st, _ := provision(ctx, t, s, m, 0)
	if st.BIOSUUID == "" || !strings.HasPrefix(st.ProviderID(), "vsphere://") {
		t.Errorf("no provider ID: %+v", st)
	}
	if n := vmsWithUUID(ctx, t, s, InstanceUUID("default", "m1")); n != 1 {
		t.Fatalf("%d VMs carry the machine's instance UUID, want 1", n)
	}

	// The VM carries its configuration and guestinfo.
	vm, _ := s.findVM(ctx, mustDC(ctx, t, s), m)
	var o mo.VirtualMachine
	if err := vm.Properties(ctx, vm.Reference(), []string{"config"}, &o); err != nil {
		t.Fatal(err)
	}
	if o.Config.Hardware.NumCPU != 4 || o.Config.Hardware.MemoryMB != 8192 {
		t.Errorf("VM has %d CPUs and %d MB, want 4 and 8192", o.Config.Hardware.NumCPU, o.Config.Hardware.MemoryMB)
	}
	extra := map[string]string{}
	for _, v := range o.Config.ExtraConfig {
		extra[v.GetOptionValue().Key] = fmt.Sprint(v.GetOptionValue().Value)
	}
	if extra["guestinfo.userdata.encoding"] != "gzip+base64" || decode(t, extra["guestinfo.userdata"]) != string(m.UserData) {
		t.Errorf("guestinfo.userdata does not carry the bootstrap script")
	}
	if meta := decode(t, extra["guestinfo.metadata"]); !strings.Contains(meta, "local-hostname: win-m1") {
		t.Errorf("guestinfo.metadata lacks the host name:\n%s", meta)
	}

	// Once the node joined, the user data goes.
	op, err := s.ClearUserData(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if op.Type != infrav1.MachineOperationClearBootstrapData {
		t.Fatalf("clearing the user data started %+v", op)
	}
	if err := object.NewTask(s.Client, types.ManagedObjectReference{Type: "Task", Value: op.ID}).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if cleared, err := s.UserDataCleared(ctx, m); err != nil || !cleared {
		t.Fatalf("user data not cleared (%v)", err)
	}

	// Delete: power off, destroy, gone; and gone again is fine.
	deleteAll(ctx, t, s, m)
	if n := vmsWithUUID(ctx, t, s, InstanceUUID("default", "m1")); n != 0 {
		t.Fatalf("%d VMs left after delete", n)
	}
	if gone, _, err := s.Delete(ctx, m); !gone || err != nil {
		t.Fatalf("deleting an already deleted VM: gone=%v err=%v", gone, err)
	}
}

// deleteAll calls Delete as the controller's requeues would, for up to ten
// seconds, until the VM is gone.
func deleteAll(ctx context.Context, t testing.TB, s *Session, m Machine) {
	t.Helper()
	for range 500 {
		gone, op, err := s.Delete(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if gone {
			return
		}
		m.Op = op
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("VM of %s not deleted in 10s", m.Name)
}

// TestRestartMidCloneMakesNoDuplicate: a controller that restarts after
// starting a clone, with or without the task reference it recorded, finds
// the VM by its instance UUID and never clones twice.
func TestRestartMidCloneMakesNoDuplicate(t *testing.T) {
	ctx := t.Context()
	s, creds := newSession(t)
	m := machine("m2")
	st, err := s.Reconcile(ctx, m)
	if err != nil || st.Op.IsZero() {
		t.Fatalf("want a clone task in flight, got %+v, %v", st, err)
	}

	// A new controller: new sessions, and the task reference lost.
	s2, err := NewSessions().Get(ctx, creds)
	if err != nil {
		t.Fatal(err)
	}
	provision(ctx, t, s2, m, 0)
	if n := vmsWithUUID(ctx, t, s2, InstanceUUID("default", "m2")); n != 1 {
		t.Fatalf("%d VMs for one machine after a restart mid-clone, want 1", n)
	}
}

func TestBadInputs(t *testing.T) {
	ctx := t.Context()
	s, creds := newSession(t)
	for name, change := range map[string]func(*Machine){
		"template":   func(m *Machine) { m.Spec.Template = "no-such-template" },
		"datastore":  func(m *Machine) { m.Spec.Datastore = "no-such-datastore" },
		"network":    func(m *Machine) { m.Spec.Network[0].NetworkName = "no-such-network" },
		"datacenter": func(m *Machine) { m.Datacenter = "DC9" },
	} {
		m := machine("bad-" + name)
		change(&m)
		_, err := s.Reconcile(ctx, m)
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "no-such-"+name) && name != "datacenter" {
			t.Errorf("%s: want ErrNotFound naming it, got %v", name, err)
		}
	}

	bad := creds
	bad.Password = "wrong"
	if _, err := NewSessions().Get(ctx, bad); !errors.Is(err, ErrLogin) {
		t.Errorf("bad password: want ErrLogin, got %v", err)
	}
}

func TestThumbprint(t *testing.T) {
	ctx := t.Context()
	v, creds := vcsim(t)
	creds.Insecure = false
	creds.Thumbprint = v.Thumbprint
	if _, err := NewSessions().Get(ctx, creds); err != nil {
		t.Fatalf("the right thumbprint must connect: %v", err)
	}
	creds.Thumbprint = strings.Repeat("AB:", 19) + "AB"
	if _, err := NewSessions().Get(ctx, creds); !errors.Is(err, ErrConnect) {
		t.Fatalf("a wrong thumbprint must not connect, got %v", err)
	}
}

// TestFaultInjection: with 5 % of clones and power-ons failing, 50 machines
// all end running, each with exactly one VM, through one session.
func TestFaultInjection(t *testing.T) {
	ctx := t.Context()
	v, creds := vcsim(t)
	v.FailCalls(0.05, "VirtualMachine.clone", "PowerOnVM_Task")
	sessions := NewSessions()
	var failures int
	for i := range 50 {
		s, err := sessions.Get(ctx, creds)
		if err != nil {
			t.Fatal(err)
		}
		_, errs := provision(ctx, t, s, machine(fmt.Sprintf("f%02d", i)), 0)
		failures += errs
	}
	s, _ := sessions.Get(ctx, creds)
	for i := range 50 {
		if n := vmsWithUUID(ctx, t, s, InstanceUUID("default", fmt.Sprintf("f%02d", i))); n != 1 {
			t.Errorf("machine f%02d has %d VMs, want 1", i, n)
		}
	}
	vms, _ := find.NewFinder(s.Client).VirtualMachineList(ctx, "/DC0/vm/f*")
	if len(vms) != 50 {
		t.Errorf("%d VMs named f*, want 50: none orphaned, none duplicated", len(vms))
	}
	if sessions.Opened() != 1 {
		t.Errorf("%d sessions opened for 50 machines, want 1", sessions.Opened())
	}
	t.Logf("%d injected faults retried", failures)
}

func mustDC(ctx context.Context, t testing.TB, s *Session) *object.Datacenter {
	dc, err := s.datacenter(ctx, "DC0")
	if err != nil {
		t.Fatal(err)
	}
	return dc
}

func decode(t testing.TB, s string) string {
	t.Helper()
	out, err := userdata.DecodeGzipBase64(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestSessionReestablished: when vCenter ends the session, the error says so,
// the session is forgotten, and the next Get logs in again.
func TestSessionReestablished(t *testing.T) {
	ctx := t.Context()
	_, creds := vcsim(t)
	sessions := NewSessions()
	s, err := sessions.Get(ctx, creds)
	if err != nil {
		t.Fatal(err)
	}
	provision(ctx, t, s, machine("s1"), 0)
	us, err := session.NewManager(s.Client).UserSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := NewSessions().Get(ctx, creds)
	if err != nil {
		t.Fatal(err)
	}
	if err := session.NewManager(admin.Client).TerminateSession(ctx, []string{us.Key}); err != nil {
		t.Fatal(err)
	}

	_, err = s.Reconcile(ctx, machine("s2"))
	if !sessions.Stale(err, s) {
		t.Fatalf("an ended session must be reported stale, got %v", err)
	}
	s, err = sessions.Get(ctx, creds)
	if err != nil {
		t.Fatal(err)
	}
	provision(ctx, t, s, machine("s2"), 0)
	if sessions.Opened() != 2 {
		t.Errorf("%d sessions opened, want 2 (one re-established)", sessions.Opened())
	}
}

// TestNetworkMetadataByMAC: every NIC's entry, static or DHCP, matches the
// MAC address vCenter gave it (an entry without a match names an interface
// id0, which no guest has), and the VM is powered on only after.
func TestNetworkMetadataByMAC(t *testing.T) {
	dhcp := infrav1.VSphereNetworkDevice{NetworkName: "VM Network", DHCP4: ptr.To(true)}
	for name, network := range map[string][]infrav1.VSphereNetworkDevice{
		// A Linux machine: its one DHCP device gets an entry too, which
		// names it eth0 (a Windows one gets none: TestDefaultNetworkBootsWithTheClone).
		"dhcp":   {dhcp},
		"static": {{NetworkName: "VM Network", IPAddrs: []string{"10.0.0.21/24"}, Gateway4: "10.0.0.1", Nameservers: []string{"10.0.0.2"}}},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			s, _ := newSession(t)
			m := machine(name)
			m.OS = infrav1.OSLinux
			m.Spec.Network = network
			// The rewritten metadata keeps the SSH keys (else it would never
			// match what it should be, and be rewritten again and again).
			m.SSHAuthorizedKeys = []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILkF1Ms6BeuCAVt6oFYilabd0bpA5fjYB3Op9jIsDcVi alice1@example.com"}
			// The clone comes up off: nothing may boot before the metadata is right.
			st, err := s.Reconcile(ctx, m)
			if err != nil || st.Op.Type != infrav1.MachineOperationCreate {
				t.Fatalf("want a clone, got %+v, %v", st, err)
			}
			waitTask(ctx, t, s, st.Op.ID)
			if o := vmConfig(ctx, t, s, m); o.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOff {
				t.Fatalf("the clone is %s before its network metadata is written", o.Runtime.PowerState)
			}
			m.Op = st.Op
			provision(ctx, t, s, m, 0)

			o := vmConfig(ctx, t, s, m)
			nic := object.VirtualDeviceList(o.Config.Hardware.Device).SelectByType((*types.VirtualEthernetCard)(nil))[0]
			mac := nic.(types.BaseVirtualEthernetCard).GetVirtualEthernetCard().MacAddress
			var meta string
			for _, v := range o.Config.ExtraConfig {
				if ov := v.GetOptionValue(); ov.Key == "guestinfo.metadata" {
					meta = decode(t, fmt.Sprint(ov.Value))
				}
			}
			want := []string{"macaddress: " + mac, "set-name: eth0", "public-keys-data: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILkF1Ms6BeuCAVt6oFYilabd0bpA5fjYB3Op9jIsDcVi"}
			if name == "static" {
				want = append(want, "10.0.0.21/24", "gateway4: 10.0.0.1")
			} else {
				want = append(want, "dhcp4: true")
			}
			for _, w := range want {
				if !strings.Contains(meta, w) {
					t.Errorf("metadata lacks %q:\n%s", w, meta)
				}
			}
		})
	}
}

// TestCloneSpecFlags: the clone asks for disk UUIDs (the vSphere CSI
// driver needs them) and drops the template's vApp configuration (whose
// OVF properties cloud-init would read instead of guestinfo). vcsim does
// not keep either in the VM, so the request itself is looked at.
func TestCloneSpecFlags(t *testing.T) {
	ctx := t.Context()
	_, creds := vcsim(t)
	sessions := NewSessions()
	var clones []*types.CloneVM_Task
	sessions.Transport = func(rt soap.RoundTripper) soap.RoundTripper {
		return recordClones{RoundTripper: rt, clones: &clones}
	}
	s, err := sessions.Get(ctx, creds)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reconcile(ctx, machine("flags")); err != nil {
		t.Fatal(err)
	}
	if len(clones) != 1 {
		t.Fatalf("%d clone requests, want 1", len(clones))
	}
	config := clones[0].Spec.Config
	if config == nil || config.Flags == nil || !ptr.Deref(config.Flags.DiskUuidEnabled, false) {
		t.Errorf("the clone does not enable disk UUIDs: %+v", config)
	}
	if config == nil || !ptr.Deref(config.VAppConfigRemoved, false) {
		t.Errorf("the clone keeps the template's vApp configuration")
	}
	if !clones[0].Spec.PowerOn {
		t.Errorf("the clone of a machine on its guest's default network (one DHCP NIC) does not power it on")
	}
	static := machine("static")
	static.Spec.Network = []infrav1.VSphereNetworkDevice{{NetworkName: "VM Network", IPAddrs: []string{"10.0.0.21/24"}, Gateway4: "10.0.0.1"}}
	if _, err := s.Reconcile(ctx, static); err != nil {
		t.Fatal(err)
	}
	if len(clones) != 2 || clones[1].Spec.PowerOn {
		t.Errorf("the clone of a machine with a static address powers on before its network metadata names its NICs")
	}
}

// TestDefaultNetworkBootsWithTheClone: a machine with one DHCP network
// device is cloned with metadata that has no network entry and powered on
// by the clone: no reconfigure, no power-on of its own, and it runs.
func TestDefaultNetworkBootsWithTheClone(t *testing.T) {
	ctx := t.Context()
	_, _, s, calls := countedSession(t)
	m := machine("default")
	calls.reset()
	st, _ := provision(ctx, t, s, m, 10*time.Millisecond)
	if st.BIOSUUID == "" || !st.PoweredOn {
		t.Fatalf("not running: %+v", st)
	}
	got := calls.reset()
	for _, method := range []string{"ReconfigVM_Task", "PowerOnVM_Task"} {
		if got[method] != 0 {
			t.Errorf("%s called %d times, want none: %v", method, got[method], got)
		}
	}
	o := vmConfig(ctx, t, s, m)
	for _, v := range o.Config.ExtraConfig {
		if ov := v.GetOptionValue(); ov.Key == "guestinfo.metadata" {
			if meta := decode(t, fmt.Sprint(ov.Value)); strings.Contains(meta, "network") || !strings.Contains(meta, "local-hostname: win-default") {
				t.Errorf("want metadata with the host name and no network entry:\n%s", meta)
			}
		}
	}
}

type recordClones struct {
	soap.RoundTripper
	clones *[]*types.CloneVM_Task
}

func (r recordClones) RoundTrip(ctx context.Context, req, res soap.HasFault) error {
	if body, ok := req.(*methods.CloneVM_TaskBody); ok {
		*r.clones = append(*r.clones, body.Req)
	}
	return r.RoundTripper.RoundTrip(ctx, req, res)
}

func waitTask(ctx context.Context, t testing.TB, s *Session, id string) {
	t.Helper()
	if err := object.NewTask(s.Client, types.ManagedObjectReference{Type: "Task", Value: id}).Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

func vmConfig(ctx context.Context, t testing.TB, s *Session, m Machine) mo.VirtualMachine {
	t.Helper()
	vm, err := s.findVM(ctx, mustDC(ctx, t, s), m)
	if err != nil || vm == nil {
		t.Fatalf("VM not found: %v", err)
	}
	var o mo.VirtualMachine
	if err := vm.Properties(ctx, vm.Reference(), []string{"config", "runtime.powerState"}, &o); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestLinkedClone clones from the template's snapshot; without a snapshot a
// LinkedClone is refused by name.
func TestLinkedClone(t *testing.T) {
	ctx := t.Context()
	s, _ := newSession(t)
	m := machine("linked")
	m.Spec.CloneMode = infrav1.LinkedClone
	if _, err := s.Reconcile(ctx, m); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "no snapshot") {
		t.Fatalf("a LinkedClone of a template without snapshot: want ErrNotFound, got %v", err)
	}

	// An administrator snapshots the template; the same session sees it.
	tmpl, err := find.NewFinder(s.Client).VirtualMachine(ctx, "/DC0/vm/DC0_H0_VM0")
	if err != nil {
		t.Fatal(err)
	}
	task, err := tmpl.CreateSnapshot(ctx, "base", "", false, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	provision(ctx, t, s, m, 0)
	if n := vmsWithUUID(ctx, t, s, InstanceUUID("default", "linked")); n != 1 {
		t.Fatalf("%d VMs, want 1", n)
	}
}

// TestTaskError: a failed task says vCenter's fault and words, and a lack of
// room is also told apart as insufficient capacity.
func TestTaskError(t *testing.T) {
	tests := []struct {
		name     string
		fault    *types.LocalizedMethodFault
		text     string
		capacity bool
	}{
		{"no detail", nil, "vCenter task failed: VirtualMachine.clone: unknown error", false},
		{"duplicate name", &types.LocalizedMethodFault{Fault: &types.DuplicateName{}, LocalizedMessage: "name taken"},
			"vCenter task failed (the VM's name is taken): VirtualMachine.clone: DuplicateName: name taken", false},
		{"no message", &types.LocalizedMethodFault{Fault: &types.DuplicateName{}}, "vCenter task failed (the VM's name is taken): VirtualMachine.clone: DuplicateName", false},
		{"memory", &types.LocalizedMethodFault{Fault: &types.InsufficientMemoryResourcesFault{}, LocalizedMessage: "no memory"},
			"vCenter task failed (insufficient capacity): VirtualMachine.clone: InsufficientMemoryResourcesFault: no memory", true},
		{"disk", &types.LocalizedMethodFault{Fault: &types.NoDiskSpace{}, LocalizedMessage: "full"},
			"vCenter task failed (insufficient capacity): VirtualMachine.clone: NoDiskSpace: full", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := taskError("VirtualMachine.clone", tt.fault)
			if err.Error() != tt.text {
				t.Errorf("text %q, want %q", err, tt.text)
			}
			if !errors.Is(err, platform.ErrOperationFailed) || !errors.Is(err, ErrTaskFailed) {
				t.Errorf("%v is not an operation failure", err)
			}
			if errors.Is(err, platform.ErrInsufficientCapacity) != tt.capacity {
				t.Errorf("capacity %v, want %v", !tt.capacity, tt.capacity)
			}
		})
	}
}

// TestClearUserDataWaitsForItsTask: clearing again while the recorded
// reconfigure runs starts no second one.
func TestClearUserDataWaitsForItsTask(t *testing.T) {
	ctx := t.Context()
	v, creds := vcsim(t)
	s, err := NewSessions().Get(ctx, creds)
	if err != nil {
		t.Fatal(err)
	}
	m := machine("m1")
	provision(ctx, t, s, m, 0)
	vspheresim.DelayTasks(t, map[string]int{"ReconfigVm": 1500, "LockHandoff": 0})
	first, err := s.ClearUserData(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	m.Op = first
	again, err := s.ClearUserData(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Errorf("clearing again while %s runs gave %+v", first.ID, again)
	}
	if err := v.WaitTask(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	if cleared, err := s.UserDataCleared(ctx, m); err != nil || !cleared {
		t.Fatalf("user data not cleared (%v)", err)
	}
}
