package vspheresim

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// FailCalls makes the given fraction (0 to 1) of calls to each of the
// methods (CloneVM_Task, PowerOnVM_Task, ...) fail with a generic fault.
func (v *VCenter) FailCalls(probability float64, methods ...string) {
	for _, method := range methods {
		v.Model.Service.AddFaultRule(&simulator.FaultInjectionRule{
			MethodName: method, ObjectType: "*", ObjectName: "*",
			Probability: probability, FaultType: simulator.FaultTypeGeneric, Message: "injected fault", Enabled: true,
		})
	}
}

// DelayTasks makes vcsim's tasks take the given milliseconds, by task
// name (CloneVm, PowerOn, ...; and LockHandoff 0 to keep a delayed task
// from holding its object's lock, which vCenter does not). It applies to
// every simulator in the process. restore ends it; it also ends with the
// test.
func DelayTasks(t testing.TB, delays map[string]int) (restore func()) {
	simulator.TaskDelay.MethodDelay = delays
	restore = func() { simulator.TaskDelay.MethodDelay = nil }
	t.Cleanup(restore)
	return restore
}

// HoldCalls is a transport for capwin's vSphere sessions
// (vsphere.Sessions.Transport) that passes calls to vCenter except those to
// the given methods (CloneVM_Task, ...), which it holds until the caller
// gives up: a vCenter that stopped answering.
func HoldCalls(methods ...string) func(soap.RoundTripper) soap.RoundTripper {
	return func(rt soap.RoundTripper) soap.RoundTripper { return holdCalls{rt, methods} }
}

type holdCalls struct {
	soap.RoundTripper
	methods []string
}

func (h holdCalls) RoundTrip(ctx context.Context, req, res soap.HasFault) error {
	// A request is a *methods.<Method>Body.
	if slices.Contains(h.methods, strings.TrimSuffix(reflect.Indirect(reflect.ValueOf(req)).Type().Name(), "Body")) {
		<-ctx.Done()
		return ctx.Err()
	}
	return h.RoundTripper.RoundTrip(ctx, req, res)
}

// WaitTask waits for the task with the given ID (its managed object
// reference's value, as capwin records it) to end, and returns its error.
func (v *VCenter) WaitTask(ctx context.Context, id string) error {
	return v.with(ctx, func(c *govmomi.Client) error {
		return object.NewTask(c.Client, types.ManagedObjectReference{Type: "Task", Value: id}).Wait(ctx)
	})
}

// CloneVM clones the VM at the inventory path vm (/DC0/vm/DC0_H0_VM0) into
// the folder at the inventory path folder, as name, and waits for the
// clone: a VM capwin did not make.
func (v *VCenter) CloneVM(ctx context.Context, vm, folder, name string) error {
	return v.with(ctx, func(c *govmomi.Client) error {
		f := find.NewFinder(c.Client)
		src, err := f.VirtualMachine(ctx, vm)
		if err != nil {
			return err
		}
		dst, err := f.Folder(ctx, folder)
		if err != nil {
			return err
		}
		task, err := src.Clone(ctx, dst, name, types.VirtualMachineCloneSpec{})
		if err != nil {
			return err
		}
		return task.Wait(ctx)
	})
}

// SetGuestID gives the VM at the inventory path vm the guest ID, as the
// guest operating system of a template has one; its clones inherit it.
func (v *VCenter) SetGuestID(ctx context.Context, vm, guestID string) error {
	return v.with(ctx, func(c *govmomi.Client) error {
		o, err := find.NewFinder(c.Client, true).VirtualMachine(ctx, vm)
		if err != nil {
			return err
		}
		task, err := o.Reconfigure(ctx, types.VirtualMachineConfigSpec{GuestId: guestID})
		if err != nil {
			return err
		}
		return task.Wait(ctx)
	})
}
