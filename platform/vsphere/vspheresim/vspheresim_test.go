package vspheresim

import (
	"crypto/tls"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

func TestVCenter(t *testing.T) {
	ctx := t.Context()
	v := StartT(t)

	// The thumbprint is the served certificate's, as vCenter shows it.
	conn, err := tls.Dial("tcp", v.Host, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the test checks the thumbprint itself
	if err != nil {
		t.Fatal(err)
	}
	cert := conn.ConnectionState().PeerCertificates[0]
	_ = conn.Close()
	if want := soap.ThumbprintSHA1(cert); v.Thumbprint != want {
		t.Errorf("thumbprint %q, want %q", v.Thumbprint, want)
	}

	if err := v.SetGuestID(ctx, "/DC0/vm/DC0_H0_VM1", "windows2019srvNext_64Guest"); err != nil {
		t.Fatal(err)
	}
	if err := v.CloneVM(ctx, "/DC0/vm/DC0_H0_VM1", "/DC0/vm", "copy"); err != nil {
		t.Fatal(err)
	}
	vms, err := v.VMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]VM{}
	for _, vm := range vms {
		byName[vm.Name] = vm
	}
	for _, name := range []string{"DC0_H0_VM1", "copy"} {
		vm := byName[name]
		if vm.GuestID != "windows2019srvNext_64Guest" || vm.InstanceUUID == "" || vm.NumCPUs == 0 {
			t.Errorf("VM %s: %+v", name, vm)
		}
	}
	if byName["DC0_H0_VM0"].GuestID == "windows2019srvNext_64Guest" {
		t.Errorf("another VM got the guest ID")
	}

	tasks, err := v.RecentTasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	clones := 0
	for _, task := range tasks {
		if strings.HasPrefix(task.DescriptionID, "VirtualMachine.clone") && task.State == "success" {
			clones++
		}
	}
	if clones != 1 {
		t.Errorf("%d successful clone tasks, want 1: %+v", clones, tasks)
	}
	if err := v.CloneVM(ctx, "/DC0/vm/DC0_H0_VM1", "/DC0/vm", "copy"); err == nil {
		t.Fatal("a second clone of the same name succeeded")
	}
	tasks, _ = v.RecentTasks(ctx)
	refused := 0
	for _, task := range tasks {
		if task.Fault == "DuplicateName" {
			refused++
		}
	}
	if refused != 1 {
		t.Errorf("%d tasks refused with DuplicateName, want 1: %+v", refused, tasks)
	}

	agents, err := v.SessionUserAgents(ctx)
	if err != nil || len(agents) != 1 {
		t.Errorf("want the call's own session only, got %v (%v)", agents, err)
	}
}

// TestWatcherSeesEveryChange checks that a Watcher, which reads a VM's
// configuration again only when its config.changeVersion moves, still
// sees each kind of change the simulated guests act on.
func TestWatcherSeesEveryChange(t *testing.T) {
	ctx := t.Context()
	v := StartT(t)
	w, err := v.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	byName := func() map[string]VM {
		t.Helper()
		vms, err := w.VMs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]VM{}
		for _, vm := range vms {
			m[vm.Name] = vm
		}
		return m
	}
	before := byName()["DC0_H0_VM1"]
	if before.InstanceUUID == "" || len(before.MACs) == 0 {
		t.Fatalf("the first read lacks the configuration: %+v", before)
	}

	// A reconfiguration.
	if err := v.SetGuestID(ctx, "/DC0/vm/DC0_H0_VM1", "windows2019srvNext_64Guest"); err != nil {
		t.Fatal(err)
	}
	if got := byName()["DC0_H0_VM1"].GuestID; got != "windows2019srvNext_64Guest" {
		t.Errorf("after a reconfiguration the guest ID is %q", got)
	}
	// A new VM.
	if err := v.CloneVM(ctx, "/DC0/vm/DC0_H0_VM1", "/DC0/vm", "copy"); err != nil {
		t.Fatal(err)
	}
	vms := byName()
	copied := vms["copy"]
	if copied.InstanceUUID == "" || copied.InstanceUUID == before.InstanceUUID || copied.GuestID != "windows2019srvNext_64Guest" {
		t.Errorf("the clone: %+v", copied)
	}
	// What the guest reports, which is not configuration.
	if err := v.ReportGuest(copied.ID, "copy-host", []GuestNIC{{IPs: []string{"10.0.0.9"}}}); err != nil {
		t.Fatal(err)
	}
	if got := byName()["copy"]; got.HostName != "copy-host" || !slices.Equal(got.IPs, []string{"10.0.0.9"}) {
		t.Errorf("after the guest reported: %q %v", got.HostName, got.IPs)
	}
	// A deleted VM.
	err = v.with(ctx, func(c *govmomi.Client) error {
		task, err := object.NewVirtualMachine(c.Client, types.ManagedObjectReference{Type: "VirtualMachine", Value: copied.ID}).Destroy(ctx)
		if err != nil {
			return err
		}
		return task.Wait(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := byName()["copy"]; ok {
		t.Error("a deleted VM is still listed")
	}
}
