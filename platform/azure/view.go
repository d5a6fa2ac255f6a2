package azure

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	"k8s.io/utils/ptr"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
	"github.com/capwin/capwin/platform/sharedread"
)

// viewTTL is how long a read of a resource group's VMs and network
// interfaces answers the resyncs of its running machines. The manager
// resyncs every machine at once (every ten minutes by default), so one
// read serves them all. A VM stopped or deleted outside capwin in the
// viewTTL before a resync is seen at the next one.
const viewTTL = 30 * time.Second

// viewReadTimeout bounds a read of a resource group, which reconciles that
// did not start it wait for.
const viewReadTimeout = time.Minute

// groupView is one read of a resource group: what viewed needs of its VMs
// and network interfaces, by lower-case name.
type groupView struct {
	vms  map[string]vmFacts
	nics map[string]nicFacts
}

// vmFacts are what a list says of a VM.
type vmFacts struct {
	id, state, power, owner string
}

// nicFacts are what a list says of a network interface.
type nicFacts struct {
	owner     string
	addresses []string
}

// newViews returns the shared reads of one client set's resource groups.
func newViews() *sharedread.Reads[*groupView] {
	return sharedread.New[*groupView](viewTTL, viewReadTimeout)
}

// readGroup lists the resource group's VMs, with instance views, and its
// network interfaces.
func (p *Platform) readGroup(ctx context.Context) (*groupView, error) {
	view := &groupView{vms: map[string]vmFacts{}, nics: map[string]nicFacts{}}
	vms := p.clients.vms.NewListPager(p.group(), &armcompute.VirtualMachinesClientListOptions{Expand: ptr.To(armcompute.ExpandTypeForListVMsInstanceView)})
	for vms.More() {
		page, err := vms.NextPage(ctx)
		if err != nil {
			return nil, classify("listing the VMs of resource group "+p.group(), err)
		}
		for _, vm := range page.Value {
			if vm == nil || vm.Name == nil || vm.Properties == nil {
				continue
			}
			view.vms[strings.ToLower(*vm.Name)] = vmFacts{
				id:    ptr.Deref(vm.ID, ""),
				state: ptr.Deref(vm.Properties.ProvisioningState, ""),
				power: powerState(vm.Properties.InstanceView),
				owner: ptr.Deref(vm.Tags[OwnerTag], ""),
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
				view.nics[strings.ToLower(*nic.Name)] = nicFacts{owner: ptr.Deref(nic.Tags[OwnerTag], ""), addresses: nicAddresses(nic)}
			}
		}
	}
	return view, nil
}

// viewed reports a provisioned machine's state from the resource group's
// shared read when that read shows it well: its VM made, owned by the
// machine and running, and its NIC owned by it with an address. Anything
// else (not there, stopped, changing, a list without instance views) is
// not ok, and the machine's own resources are read instead, so that
// nothing is done on an old read.
func (p *Platform) viewed(ctx context.Context, hm *infrav1.HybridMachine, n resourceNames) (platform.MachineState, bool, error) {
	view, err := p.clients.views.Get(ctx, strings.ToLower(p.group()), p.readGroup)
	if errors.Is(err, platform.ErrUnavailable) {
		// Throttled or failing: a read per machine would only add to it.
		return platform.MachineState{}, false, err
	}
	if err != nil {
		// A list Azure refuses ($expand=instanceView without a
		// $filter, which its API reference does not promise): the
		// machine's own reads answer instead.
		return platform.MachineState{}, false, nil
	}
	vm, okVM := view.vms[n.vm]
	nic, okNIC := view.nics[n.nic]
	if !okVM || !okNIC || vm.state != "Succeeded" || vm.power != "running" ||
		vm.owner != owner(hm) || nic.owner != owner(hm) || len(nic.addresses) == 0 {
		return platform.MachineState{}, false, nil
	}
	return platform.MachineState{Exists: true, Running: true, ProviderID: ProviderID(vm.id), Addresses: nic.addresses}, true, nil
}
