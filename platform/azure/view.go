package azure

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	"k8s.io/utils/ptr"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
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
// is none or the last one was not answered. The read runs apart from the
// context of the reconcile that starts it, which others may wait on, and
// whose end ends only its own wait.
func (v *views) get(ctx context.Context, group string, read func(context.Context) (*groupView, error)) (*groupView, error) {
	k := strings.ToLower(group)
	v.mu.Lock()
	now := v.now()
	for g, r := range v.reads {
		// Old reads are dropped, so that a group no longer used is
		// not kept, and so are reads Azure did not answer. A read it
		// refused is kept as long as an answer would be: the machines'
		// own reads stand in for it meanwhile.
		if r.ended() && (errors.Is(r.err, platform.ErrUnavailable) || now.Sub(r.at) > v.maxAge) {
			delete(v.reads, g)
		}
	}
	r := v.reads[k]
	if r == nil {
		r = &viewRead{done: make(chan struct{}), at: now}
		v.reads[k] = r
		go func() {
			r.view, r.err = readApart(ctx, read)
			close(r.done)
		}()
	}
	v.mu.Unlock()
	select {
	case <-r.done:
		return r.view, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// readApart runs read on a context that ctx's end does not cancel, within
// viewReadTimeout; a panic becomes its error.
func readApart(ctx context.Context, read func(context.Context) (*groupView, error)) (view *groupView, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), viewReadTimeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			view, err = nil, fmt.Errorf("reading the resource group: %v", p)
		}
	}()
	return read(ctx)
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
	view, err := p.clients.views.get(ctx, p.group(), p.readGroup)
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
