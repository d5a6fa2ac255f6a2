package vsphere

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

func (s *Session) datacenter(ctx context.Context, path string) (*object.Datacenter, error) {
	key := "dc/" + path
	if v, ok := s.cache.Load(key); ok {
		return v.(*object.Datacenter), nil
	}
	return lookupOnce(ctx, s, key, func(ctx context.Context) (*object.Datacenter, error) {
		dc, err := find.NewFinder(s.Client).Datacenter(ctx, path)
		if err != nil {
			return nil, notFound(err, "datacenter %s", path)
		}
		return dc, nil
	})
}

// lookupOnce runs an inventory lookup not yet cached, and caches what it
// found under key: the reconciles that need it at the same time (every
// machine of a new MachineSet) share one lookup instead of each making it.
// The lookup runs apart from the context of the reconcile that starts it,
// within lookupTimeout, and each waits on its own context.
func lookupOnce[T any](ctx context.Context, s *Session, key string, lookup func(context.Context) (T, error)) (T, error) {
	ch := s.lookups.DoChan(key, func() (any, error) {
		if v, ok := s.cache.Load(key); ok {
			return v, nil
		}
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
		defer cancel()
		v, err := lookup(lctx)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && lctx.Err() != nil {
				err = fmt.Errorf("%w: an inventory lookup within %s: %w", ErrTimeout, lookupTimeout, err)
			}
			return nil, err
		}
		s.cache.Store(key, v)
		return v, nil
	})
	var zero T
	select {
	case r := <-ch:
		if r.Err != nil {
			return zero, r.Err
		}
		return r.Val.(T), nil
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// lookupTimeout bounds a shared inventory lookup, of a few calls each
// bounded by the sessions' CallTimeout.
const lookupTimeout = 2 * time.Minute

func (s *Session) findVM(ctx context.Context, dc *object.Datacenter, m Machine) (*object.VirtualMachine, error) {
	uuid := InstanceUUID(m.Namespace, m.Name)
	// The VM's reference is remembered, so that a resync costs one round
	// trip; a reference that went stale is forgotten and looked up again.
	if ref, ok := s.cache.Load("vm/" + uuid); ok {
		return object.NewVirtualMachine(s.Client, ref.(types.ManagedObjectReference)), nil
	}
	ref, err := object.NewSearchIndex(s.Client).FindByUuid(ctx, dc, uuid, true, types.NewBool(true))
	if err != nil {
		return nil, fmt.Errorf("looking up the VM of %s/%s: %w", m.Namespace, m.Name, err)
	}
	if ref == nil {
		return nil, nil
	}
	s.cache.Store("vm/"+uuid, ref.Reference())
	return object.NewVirtualMachine(s.Client, ref.Reference()), nil
}

func (s *Session) forgetVM(m Machine) {
	if ref, ok := s.cache.LoadAndDelete("vm/" + InstanceUUID(m.Namespace, m.Name)); ok {
		s.forgetRef(ref.(types.ManagedObjectReference))
	}
}

// stale reports whether err says a remembered VM reference no longer
// exists; the VM is then forgotten and looked up again.
func (s *Session) stale(err error, m Machine) bool {
	if isFault[*types.ManagedObjectNotFound](err) {
		s.forgetVM(m)
		return true
	}
	return false
}

// retryStale runs f, and once more when it failed on a remembered VM
// reference that went stale (which stale then forgot), so that a VM
// replaced behind the cache is looked up again in the same reconcile.
func retryStale[T any](s *Session, m Machine, f func() (T, error)) (T, error) {
	v, err := f()
	if err != nil && s.stale(err, m) {
		return f()
	}
	return v, err
}

// inventory is what a clone needs, found once per datacenter and spec paths.
type inventory struct {
	template  types.ManagedObjectReference
	snapshot  *types.ManagedObjectReference
	devices   object.VirtualDeviceList
	folder    types.ManagedObjectReference
	pool      types.ManagedObjectReference
	datastore *types.ManagedObjectReference
	networks  []types.BaseVirtualDeviceBackingInfo
	// at is when it was looked up.
	at time.Time
}

func inventoryKey(dc *object.Datacenter, spec *infrav1.VSphereMachineSpec) string {
	return strings.Join(append([]string{"inv", dc.Reference().Value, spec.Template, spec.Snapshot, spec.Folder, spec.ResourcePool, spec.Datastore}, networkNames(spec)...), "\x00")
}

func (s *Session) forgetInventory(dc *object.Datacenter, spec *infrav1.VSphereMachineSpec) {
	s.cache.Delete(inventoryKey(dc, spec))
}

// inventoryMaxAge is how long a lookup of a clone's inventory is used: a
// template changed in place (a NIC added, a disk grown) is seen within it.
const inventoryMaxAge = 5 * time.Minute

func (s *Session) inventory(ctx context.Context, dc *object.Datacenter, spec *infrav1.VSphereMachineSpec) (*inventory, error) {
	key := inventoryKey(dc, spec)
	if v, ok := s.cache.Load(key); ok {
		if inv := v.(*inventory); time.Since(inv.at) < inventoryMaxAge {
			return inv, nil
		}
		s.cache.CompareAndDelete(key, v)
	}
	return lookupOnce(ctx, s, key, func(ctx context.Context) (*inventory, error) { return s.lookupInventory(ctx, dc, spec) })
}

func (s *Session) lookupInventory(ctx context.Context, dc *object.Datacenter, spec *infrav1.VSphereMachineSpec) (*inventory, error) {
	f := find.NewFinder(s.Client).SetDatacenter(dc)
	inv := &inventory{at: time.Now()}
	tmpl, err := f.VirtualMachine(ctx, spec.Template)
	if err != nil {
		return nil, notFound(err, "template %s", spec.Template)
	}
	inv.template = tmpl.Reference()
	var o mo.VirtualMachine
	if err := tmpl.Properties(ctx, tmpl.Reference(), []string{"config.hardware.device", "snapshot"}, &o); err != nil {
		return nil, fmt.Errorf("reading template %s: %w", spec.Template, err)
	}
	inv.devices = object.VirtualDeviceList(o.Config.Hardware.Device)
	if o.Snapshot != nil && o.Snapshot.CurrentSnapshot != nil {
		inv.snapshot = o.Snapshot.CurrentSnapshot
		if spec.Snapshot != "" {
			snap, err := tmpl.FindSnapshot(ctx, spec.Snapshot)
			if err != nil {
				return nil, notFound(err, "snapshot %s of template %s", spec.Snapshot, spec.Template)
			}
			inv.snapshot = snap
		}
	}
	folder, err := f.FolderOrDefault(ctx, spec.Folder)
	if err != nil {
		return nil, notFound(err, "folder %s", spec.Folder)
	}
	inv.folder = folder.Reference()
	pool, err := f.ResourcePoolOrDefault(ctx, spec.ResourcePool)
	if err != nil {
		return nil, notFound(err, "resource pool %s", spec.ResourcePool)
	}
	inv.pool = pool.Reference()
	if spec.Datastore != "" {
		ds, err := f.Datastore(ctx, spec.Datastore)
		if err != nil {
			return nil, notFound(err, "datastore %s", spec.Datastore)
		}
		r := ds.Reference()
		inv.datastore = &r
	}
	for _, d := range spec.Network {
		n, err := f.Network(ctx, d.NetworkName)
		if err != nil {
			return nil, notFound(err, "network %s", d.NetworkName)
		}
		backing, err := n.EthernetCardBackingInfo(ctx)
		if err != nil {
			return nil, fmt.Errorf("network %s: %w", d.NetworkName, err)
		}
		inv.networks = append(inv.networks, backing)
	}
	return inv, nil
}

func networkNames(spec *infrav1.VSphereMachineSpec) []string {
	var names []string
	for _, d := range spec.Network {
		names = append(names, d.NetworkName)
	}
	return names
}

func notFound(err error, format string, args ...any) error {
	var nf *find.NotFoundError
	if errors.As(err, &nf) {
		return fmt.Errorf("%w: %s", ErrNotFound, fmt.Sprintf(format, args...))
	}
	return fmt.Errorf("finding %s: %w", fmt.Sprintf(format, args...), err)
}
