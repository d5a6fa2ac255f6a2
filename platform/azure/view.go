package azure

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"
	"k8s.io/utils/ptr"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

// viewTTL is how long a read of a resource group's VMs and network
// interfaces answers the resyncs of its running machines. The manager
// resyncs every machine at once (every ten minutes by default), so one
// read serves them all; a VM stopped or deleted outside capwin is seen
// this much later at most.
const viewTTL = 30 * time.Second

// groupView is one read of a resource group's VMs, with their instance
// views, and network interfaces, by lower-case name.
type groupView struct {
	vms  map[string]*armcompute.VirtualMachine
	nics map[string]*armnetwork.Interface
}

// viewRead is a read of a resource group, in flight until done is closed.
type viewRead struct {
	done chan struct{}
	at   time.Time
	view *groupView
	err  error
}

// views are the recent reads of the resource groups of one client set;
// reconciles that ask at the same time share one read.
type views struct {
	mu     sync.Mutex
	reads  map[string]*viewRead // by lower-case resource group
	now    func() time.Time
	maxAge time.Duration
}

func newViews() *views {
	return &views{reads: map[string]*viewRead{}, now: time.Now, maxAge: viewTTL}
}

// get returns a read of group no older than maxAge, from read when there
// is none or the last one failed.
func (v *views) get(ctx context.Context, group string, read func(context.Context) (*groupView, error)) (*groupView, error) {
	k := strings.ToLower(group)
	v.mu.Lock()
	r := v.reads[k]
	if r != nil && r.ended() && (r.err != nil || v.now().Sub(r.at) > v.maxAge) {
		r = nil
	}
	if r == nil {
		r = &viewRead{done: make(chan struct{})}
		v.reads[k] = r
		v.mu.Unlock()
		r.view, r.err = read(ctx)
		r.at = v.now()
		close(r.done)
		return r.view, r.err
	}
	v.mu.Unlock()
	select {
	case <-r.done:
		return r.view, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ended reports whether the read is done; its fields are then set.
func (r *viewRead) ended() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// readGroup lists the resource group's VMs, with instance views, and its
// network interfaces.
func (p *Platform) readGroup(ctx context.Context) (*groupView, error) {
	view := &groupView{vms: map[string]*armcompute.VirtualMachine{}, nics: map[string]*armnetwork.Interface{}}
	vms := p.clients.vms.NewListPager(p.group(), &armcompute.VirtualMachinesClientListOptions{Expand: ptr.To(armcompute.ExpandTypeForListVMsInstanceView)})
	for vms.More() {
		page, err := vms.NextPage(ctx)
		if err != nil {
			return nil, classify("listing the VMs of resource group "+p.group(), err)
		}
		for _, vm := range page.Value {
			if vm != nil && vm.Name != nil {
				view.vms[strings.ToLower(*vm.Name)] = vm
			}
		}
	}
	nics := p.clients.interfaces.NewListPager(p.group(), nil)
	for nics.More() {
		page, err := nics.NextPage(ctx)
		if err != nil {
			return nil, classify("listing the network interfaces of resource group "+p.group(), err)
		}
		for _, nic := range page.Value {
			if nic != nil && nic.Name != nil {
				view.nics[strings.ToLower(*nic.Name)] = nic
			}
		}
	}
	return view, nil
}

// viewed reports a provisioned machine's state from the resource group's
// shared read when that read shows it well: its VM made, owned by the
// machine and running, and its NIC with an address. Anything else (not
// there, stopped, changing, a list without instance views) is not ok, and
// the machine's own resources are read instead, so that nothing is done on
// an old read.
func (p *Platform) viewed(ctx context.Context, hm *infrav1.HybridMachine, n resourceNames) (platform.MachineState, bool, error) {
	view, err := p.clients.views.get(ctx, p.group(), p.readGroup)
	if err != nil {
		return platform.MachineState{}, false, err
	}
	vm, nic := view.vms[n.vm], view.nics[n.nic]
	if vm == nil || vm.Properties == nil || nic == nil {
		return platform.MachineState{}, false, nil
	}
	if ptr.Deref(vm.Properties.ProvisioningState, "") != "Succeeded" || powerState(vm.Properties.InstanceView) != "running" {
		return platform.MachineState{}, false, nil
	}
	if ownedBy("VM", n.vm, vm.Tags, hm) != nil || ownedBy("Network interface", n.nic, nic.Tags, hm) != nil {
		return platform.MachineState{}, false, nil
	}
	addresses := nicAddresses(nic)
	if len(addresses) == 0 {
		return platform.MachineState{}, false, nil
	}
	return platform.MachineState{Exists: true, Running: true, ProviderID: ProviderID(ptr.Deref(vm.ID, "")), Addresses: addresses}, true, nil
}
