package vsphere

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

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
		contents, err := s.retrieve(context.Background(), reads)
		for obj, r := range reads {
			r.err = err
			if c, ok := contents[obj]; ok {
				r.content = &c
			}
			close(r.done)
		}
	}
}

// retrieve reads every object's properties in one RetrievePropertiesEx
// (vCenter pages a long answer), with one property list per type, the
// union of what was asked of its objects. Objects vCenter does not find
// are reported as missing, not failing the call.
func (s *Session) retrieve(ctx context.Context, reads map[types.ManagedObjectReference]*batchRead) (map[types.ManagedObjectReference]types.ObjectContent, error) {
	paths := map[string]map[string]bool{}
	var objects []types.ObjectSpec
	for _, obj := range slices.SortedFunc(maps.Keys(reads), compareRefs) {
		if paths[obj.Type] == nil {
			paths[obj.Type] = map[string]bool{}
		}
		maps.Copy(paths[obj.Type], reads[obj].props)
		objects = append(objects, types.ObjectSpec{Obj: obj, Skip: types.NewBool(false)})
	}
	var props []types.PropertySpec
	for _, kind := range slices.Sorted(maps.Keys(paths)) {
		props = append(props, types.PropertySpec{Type: kind, PathSet: slices.Sorted(maps.Keys(paths[kind]))})
	}
	res, err := property.DefaultCollector(s.Client).RetrieveProperties(ctx, types.RetrieveProperties{
		SpecSet: []types.PropertyFilterSpec{{ObjectSet: objects, PropSet: props, ReportMissingObjectsInResults: types.NewBool(true)}},
	})
	if err != nil {
		return nil, err
	}
	out := make(map[types.ManagedObjectReference]types.ObjectContent, len(res.Returnval))
	for _, c := range res.Returnval {
		out[c.Obj] = c
	}
	return out, nil
}

func compareRefs(a, b types.ManagedObjectReference) int {
	if c := strings.Compare(a.Type, b.Type); c != 0 {
		return c
	}
	return strings.Compare(a.Value, b.Value)
}
