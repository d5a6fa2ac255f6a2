package vsphere

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// batchWindow is how long the first read asked for waits for others to
// join it. Reconciles run concurrently (ten per kind by default), and
// while machines are being made most of them read a task or a VM at about
// the same time; a reconcile waits this long once at most, against
// requeues of seconds.
const batchWindow = 50 * time.Millisecond

// batch gathers the reads of single objects that concurrent reconciles
// ask for (a task they wait on, a VM they observe) into one
// RetrievePropertiesEx: the reads asked for while one is under way go
// together in the next. An object vCenter does not find fails its own
// read only (ManagedObjectNotFound), as a read of it alone would.
type batch struct {
	mu sync.Mutex
	// next are the reads waiting for the next call, by object.
	next    map[types.ManagedObjectReference]*batchRead
	running bool
}

// batchRead is one object's read: its properties (those of every reconcile
// that asked for it in this batch), and its answer once done is closed.
type batchRead struct {
	props   map[string]bool
	done    chan struct{}
	content *types.ObjectContent // nil when vCenter did not find the object
	err     error
}

// read reads ps of obj into dst (a pointer to a mo type), in the session's
// next batch. It returns as a read of obj alone would: a fault that names
// no object but obj's fails only obj's read.
func (s *Session) read(ctx context.Context, obj types.ManagedObjectReference, ps []string, dst any) error {
	r := s.batch.add(obj, ps, s)
	select {
	case <-r.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if r.err != nil {
		return r.err
	}
	if r.content == nil {
		return soap.WrapVimFault(&types.ManagedObjectNotFound{Obj: obj})
	}
	return mo.LoadObjectContent([]types.ObjectContent{*r.content}, dst)
}

// add queues a read of obj's ps, and starts the batches when none runs.
func (b *batch) add(obj types.ManagedObjectReference, ps []string, s *Session) *batchRead {
	obj = ref(obj)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.next == nil {
		b.next = map[types.ManagedObjectReference]*batchRead{}
	}
	r, ok := b.next[obj]
	if !ok {
		r = &batchRead{props: map[string]bool{}, done: make(chan struct{})}
		b.next[obj] = r
	}
	for _, p := range ps {
		r.props[p] = true
	}
	if !b.running {
		b.running = true
		go b.run(s)
	}
	return r
}

// run makes one call for each batch until none is waiting. A call runs
// apart from the reconciles that wait for it (each waits on its own
// context), within the session's call bound.
func (b *batch) run(s *Session) {
	for {
		time.Sleep(batchWindow)
		b.mu.Lock()
		reads := b.next
		b.next = nil
		if len(reads) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		contents, failed, err := s.retrieve(context.Background(), reads)
		for obj, r := range reads {
			r.err = err
			if e, ok := failed[obj]; ok {
				r.err = e
			}
			if c, ok := contents[obj]; ok {
				r.content = &c
			}
			close(r.done)
		}
	}
}

// retrieve reads the objects' properties in one RetrievePropertiesEx
// (vCenter pages a long answer), objects read for the same properties in
// one filter spec, so that none is read for more than was asked of it
// (vcsim answers every object with every spec's properties, so its tests
// cannot show this). Objects
// vCenter does not find are reported as missing, not failing the call; a
// call that fails all the same for one object it names
// (ManagedObjectNotFound) fails that object's read, and is made again for
// the others.
func (s *Session) retrieve(ctx context.Context, reads map[types.ManagedObjectReference]*batchRead) (map[types.ManagedObjectReference]types.ObjectContent, map[types.ManagedObjectReference]error, error) {
	pending := maps.Clone(reads)
	failed := map[types.ManagedObjectReference]error{}
	for len(pending) > 0 {
		contents, err := s.retrieveOnce(ctx, pending)
		var nf *types.ManagedObjectNotFound
		if _, ok := fault.As(err, &nf); ok {
			if obj := ref(nf.Obj); pending[obj] != nil {
				failed[obj] = err
				delete(pending, obj)
				continue
			}
		}
		return contents, failed, err
	}
	return nil, failed, nil
}

func (s *Session) retrieveOnce(ctx context.Context, reads map[types.ManagedObjectReference]*batchRead) (map[types.ManagedObjectReference]types.ObjectContent, error) {
	// One filter spec per type and property list.
	groups := map[string]*types.PropertyFilterSpec{}
	for _, obj := range slices.SortedFunc(maps.Keys(reads), compareRefs) {
		paths := slices.Sorted(maps.Keys(reads[obj].props))
		key := obj.Type + "\x00" + strings.Join(paths, "\x00")
		g := groups[key]
		if g == nil {
			g = &types.PropertyFilterSpec{
				PropSet:                       []types.PropertySpec{{Type: obj.Type, PathSet: paths}},
				ReportMissingObjectsInResults: types.NewBool(true),
			}
			groups[key] = g
		}
		g.ObjectSet = append(g.ObjectSet, types.ObjectSpec{Obj: obj, Skip: types.NewBool(false)})
	}
	var specs []types.PropertyFilterSpec
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		specs = append(specs, *groups[key])
	}
	res, err := property.DefaultCollector(s.Client).RetrieveProperties(ctx, types.RetrieveProperties{SpecSet: specs})
	if err != nil {
		return nil, err
	}
	out := make(map[types.ManagedObjectReference]types.ObjectContent, len(res.Returnval))
	for _, c := range res.Returnval {
		out[ref(c.Obj)] = c
	}
	return out, nil
}

// ref is a reference by its type and value only: a task's, recorded in a
// status, carries no server GUID, and vCenter's answers may.
func ref(r types.ManagedObjectReference) types.ManagedObjectReference {
	return types.ManagedObjectReference{Type: r.Type, Value: r.Value}
}

func compareRefs(a, b types.ManagedObjectReference) int {
	if c := strings.Compare(a.Type, b.Type); c != 0 {
		return c
	}
	return strings.Compare(a.Value, b.Value)
}
