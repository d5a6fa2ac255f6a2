package controllers

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// written remembers, per object, the resourceVersion a reconcile last
// wrote, so that the next reconcile does not act on an older copy from the
// cache. A Machine event can wake the reconciler just after it recorded a
// clone's task and before the cache holds that record: acting on the older
// copy would ask vCenter for a second clone. Cluster API's controllers
// guard the same way (DeferNextReconcileUntilCacheUpToDate).
type written struct {
	m sync.Map // types.NamespacedName → writtenVersion
}

type writtenVersion struct {
	uid types.UID
	rv  string
}

// record remembers the object's resourceVersion after a write.
func (w *written) record(o client.Object) {
	if o.GetResourceVersion() == "" {
		return
	}
	w.m.Store(client.ObjectKeyFromObject(o), writtenVersion{uid: o.GetUID(), rv: o.GetResourceVersion()})
}

// stale reports whether o, as read from the cache, is older than what was
// last written of it. Once it is not, the record is dropped.
func (w *written) stale(o client.Object) bool {
	key := client.ObjectKeyFromObject(o)
	v, ok := w.m.Load(key)
	if !ok {
		return false
	}
	last := v.(writtenVersion)
	if last.uid == o.GetUID() {
		if cmp, err := resourceversion.CompareResourceVersion(o.GetResourceVersion(), last.rv); err == nil && cmp < 0 {
			return true
		}
	}
	// Caught up, a new object of the same name, or versions that do not compare.
	w.m.CompareAndDelete(key, last)
	return false
}

// forget drops what was remembered of an object that is gone.
func (w *written) forget(key types.NamespacedName) {
	w.m.Delete(key)
}

// recording returns a client whose successful writes w remembers: the
// patch helper writes copies of the object, so the object a reconcile holds
// does not carry the version it wrote.
func (w *written) recording(c client.Client) client.Client {
	return recordingClient{Client: c, w: w}
}

type recordingClient struct {
	client.Client
	w *written
}

func (c recordingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return c.w.after(obj, c.Client.Patch(ctx, obj, patch, opts...))
}

func (c recordingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.w.after(obj, c.Client.Update(ctx, obj, opts...))
}

func (c recordingClient) Status() client.SubResourceWriter {
	return recordingStatus{SubResourceWriter: c.Client.Status(), w: c.w}
}

type recordingStatus struct {
	client.SubResourceWriter
	w *written
}

func (s recordingStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return s.w.after(obj, s.SubResourceWriter.Patch(ctx, obj, patch, opts...))
}

func (s recordingStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return s.w.after(obj, s.SubResourceWriter.Update(ctx, obj, opts...))
}

// after records obj when the write that returned err succeeded, and
// returns err.
func (w *written) after(obj client.Object, err error) error {
	if err == nil {
		w.record(obj)
	}
	return err
}
