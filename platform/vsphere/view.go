package vsphere

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/capwin/capwin/platform"
	"github.com/capwin/capwin/platform/sharedread"
)

// viewTTL is how long a read of the session's VMs answers the resyncs of
// running machines, from when it ended. The manager resyncs every machine
// at once (every ten minutes by default), so one read serves them all. A
// VM powered off or deleted outside capwin in the viewTTL before a resync
// is seen at the next one.
const viewTTL = 30 * time.Second

// viewReadTimeout bounds a read, which reconciles that did not start it
// wait for. It is longer than a call's own bound (DefaultCallTimeout), so
// that a vCenter that does not answer is told apart (ErrTimeout).
const viewReadTimeout = 2 * time.Minute

// viewProperties are what a read asks of each VM: the network devices'
// MACs are not among them (they are large, and change only with a
// reconfigure, which changes config.changeVersion); they come from the
// VM's own last read (known), as long as its changeVersion is the same.
var viewProperties = []string{"config.instanceUuid", "config.uuid", "config.changeVersion", "runtime.powerState", "runtime.connectionState", "guest.net"}

// vmsView is one read of the VMs capwin found in the session, by instance
// UUID.
type vmsView struct {
	vms map[string]vmFacts
}

// vmFacts are what a read says of a VM.
type vmFacts struct {
	ref       types.ManagedObjectReference
	biosUUID  string
	poweredOn bool
	connected bool
	// macs are the MACs of the VM's network devices, in device order, as
	// the VM's last own read found them.
	macs []string
	// nics are the guest's adapters on those devices, with their
	// addresses only.
	nics []types.GuestNicInfo
}

// listView is the session's view of the VMs it found: a vCenter ListView
// of them, read in one call (vCenter pages a long one).
type listView struct {
	// mu guards known, and is never held across a call to vCenter, so
	// that a VM's own read never waits for a shared one.
	mu sync.Mutex
	// known are the VMs the session's own reads found, with their
	// network devices' MACs.
	known map[types.ManagedObjectReference]devices
	// view and inView are the ListView and the VMs it holds; only the
	// shared read, one at a time, uses them.
	view   *view.ListView
	inView []types.ManagedObjectReference
}

// devices are a VM's network devices' MACs as its own read found them, at
// a configuration version.
type devices struct {
	macs          []string
	changeVersion string
}

func newViews() *sharedread.Reads[*vmsView] {
	return sharedread.New[*vmsView](viewTTL, viewReadTimeout)
}

// remember records a VM and its MACs from its own read, for the next
// shared read.
func (s *Session) remember(ref types.ManagedObjectReference, d devices) {
	s.list.mu.Lock()
	defer s.list.mu.Unlock()
	if s.list.known == nil {
		s.list.known = map[types.ManagedObjectReference]devices{}
	}
	s.list.known[ref] = d
}

// forgetRef drops a VM from the shared reads.
func (s *Session) forgetRef(ref types.ManagedObjectReference) {
	s.list.mu.Lock()
	defer s.list.mu.Unlock()
	delete(s.list.known, ref)
}

// readVMs reads every VM the session knows through its ListView, first
// making the view hold exactly them: one round trip when the set is
// unchanged (more for thousands of VMs, which vCenter pages), two when it
// changed, three the first time. A VM the read cannot describe (deleted,
// not complete) is left out, to be read on its own, and forgotten until
// then.
func (s *Session) readVMs(ctx context.Context) (*vmsView, error) {
	s.list.mu.Lock()
	known := maps.Clone(s.list.known)
	s.list.mu.Unlock()
	v := &vmsView{vms: map[string]vmFacts{}}
	if len(known) == 0 {
		return v, nil
	}
	refs := slices.SortedFunc(maps.Keys(known), func(a, b types.ManagedObjectReference) int { return strings.Compare(a.Value, b.Value) })
	contents, err := s.retrieveThrough(ctx, refs)
	if err != nil && s.list.view != nil && viewGone(err, s.list.view) {
		// vCenter dropped the view: make another.
		s.list.view, s.list.inView = nil, nil
		contents, err = s.retrieveThrough(ctx, refs)
	}
	if err != nil {
		switch {
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
			err = fmt.Errorf("%w: reading the VMs within %s", ErrTimeout, viewReadTimeout)
		case !soap.IsSoapFault(err) && !soap.IsVimFault(err) && !errors.Is(err, platform.ErrUnavailable):
			// No answer at all (refused, reset, TLS): as unreachable.
			err = fmt.Errorf("%w: %w", ErrConnect, err)
		}
		return nil, fmt.Errorf("reading the session's VMs: %w", err)
	}
	seen := map[types.ManagedObjectReference]bool{}
	for _, oc := range contents {
		var vm mo.VirtualMachine
		if err := mo.LoadObjectContent([]types.ObjectContent{oc}, &vm); err != nil {
			continue // deleted or not complete: read on its own
		}
		if vm.Config == nil || vm.Config.InstanceUuid == "" {
			continue
		}
		seen[vm.Reference()] = true
		d := known[vm.Reference()]
		if d.changeVersion != vm.Config.ChangeVersion {
			continue // reconfigured since its own read: read on its own
		}
		f := vmFacts{
			ref:       vm.Reference(),
			biosUUID:  vm.Config.Uuid,
			poweredOn: vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn,
			connected: vm.Runtime.ConnectionState == types.VirtualMachineConnectionStateConnected,
			macs:      d.macs,
		}
		if vm.Guest != nil {
			for _, nic := range vm.Guest.Net {
				if !hasMAC(f.macs, nic.MacAddress) {
					continue
				}
				slim := types.GuestNicInfo{MacAddress: nic.MacAddress, IpAddress: nic.IpAddress}
				if nic.IpConfig != nil {
					slim.IpConfig = &types.NetIpConfigInfo{IpAddress: nic.IpConfig.IpAddress}
				}
				f.nics = append(f.nics, slim)
			}
		}
		if _, dup := v.vms[vm.Config.InstanceUuid]; dup {
			// Two VMs with one instance UUID: neither is answered here.
			f = vmFacts{}
		}
		v.vms[vm.Config.InstanceUuid] = f
	}
	// VMs the read did not describe are forgotten until their own read
	// finds them again, so that deleted ones are not kept.
	s.list.mu.Lock()
	for ref, d := range known {
		if !seen[ref] && slices.Equal(s.list.known[ref].macs, d.macs) {
			delete(s.list.known, ref)
		}
	}
	s.list.mu.Unlock()
	return v, nil
}

// retrieveThrough makes the ListView hold refs and reads them. Only the
// shared read, one at a time, calls it.
func (s *Session) retrieveThrough(ctx context.Context, refs []types.ManagedObjectReference) ([]types.ObjectContent, error) {
	if s.list.view == nil {
		lv, err := view.NewManager(s.Client).CreateListView(ctx, nil)
		if err != nil {
			return nil, err
		}
		s.list.view = lv
	}
	if !slices.Equal(refs, s.list.inView) {
		// VMs vCenter does not find (deleted) are left out of the read,
		// and so forgotten by readVMs.
		if _, err := s.list.view.Reset(ctx, refs); err != nil {
			return nil, err
		}
		s.list.inView = refs
	}
	res, err := property.DefaultCollector(s.Client).RetrieveProperties(ctx, types.RetrieveProperties{
		SpecSet: []types.PropertyFilterSpec{{
			ObjectSet: []types.ObjectSpec{{
				Obj:       s.list.view.Reference(),
				Skip:      types.NewBool(true),
				SelectSet: []types.BaseSelectionSpec{&types.TraversalSpec{Type: "ListView", Path: "view"}},
			}},
			PropSet: []types.PropertySpec{{Type: "VirtualMachine", PathSet: viewProperties}},
		}},
	})
	if err != nil {
		return nil, err
	}
	return res.Returnval, nil
}

// viewGone reports whether err says lv itself no longer exists.
func viewGone(err error, lv *view.ListView) bool {
	var nf *types.ManagedObjectNotFound
	if _, ok := fault.As(err, &nf); ok && nf.Obj == lv.Reference() {
		return true
	}
	return false
}

// viewed reports a provisioned machine's state from the session's shared
// read when that read shows it well: its VM, the one the session found
// for the machine, there, connected and powered on, with an address on its
// own network devices. Anything else (not there or not known yet, off, no
// address yet) is not ok, and the VM is read on its own, so that nothing
// is done on an old read.
func (s *Session) viewed(ctx context.Context, m Machine) (State, bool, error) {
	uuid := InstanceUUID(m.Namespace, m.Name)
	found, ok := s.cache.Load("vm/" + uuid)
	if !ok {
		return State{}, false, nil
	}
	v, err := s.views.Get(ctx, "", s.readVMs)
	if ctx.Err() != nil {
		return State{}, false, ctx.Err()
	}
	if errors.Is(err, platform.ErrUnavailable) || isFault[*types.NotAuthenticated](err) {
		// vCenter is not answering, or the session ended: a read per
		// machine would only add to it, or fail the same way.
		return State{}, false, err
	}
	if err != nil {
		// A read vCenter refused: the machines' own reads answer.
		return State{}, false, nil
	}
	f, ok := v.vms[uuid]
	if !ok || f.ref != found.(types.ManagedObjectReference) || !f.poweredOn || !f.connected || f.biosUUID == "" {
		return State{}, false, nil
	}
	st := State{Exists: true, BIOSUUID: f.biosUUID, PoweredOn: true}
	st.guest(f.nics, f.macs, m)
	if len(st.Addresses) == 0 {
		return State{}, false, nil
	}
	return st, true, nil
}
