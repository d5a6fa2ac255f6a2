// Package sharedread shares one read of a platform's state, such as every
// VM of an Azure resource group or every VM a vCenter session found, among the reconciles that need it
// within a short time: the manager resyncs every machine at once, and one
// read then answers them all instead of a read per machine.
package sharedread

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/capwin/capwin/platform"
)

// Reads are the recent reads of one client, by key (a resource group; one
// key for a vCenter session). Reconciles that ask for a key at the same time share one
// read; later ones reuse it until it is older than MaxAge.
type Reads[T any] struct {
	mu    sync.Mutex
	reads map[string]*read[T]
	// Now is the clock; tests replace it.
	Now func() time.Time
	// MaxAge is how long a read answers, from when it ended (what it
	// shows is then at most MaxAge plus the read's time old). A read the
	// platform refused (an error other than platform.ErrUnavailable) is
	// kept as long, so that it is not asked for again at every reconcile;
	// one the platform did not answer is dropped at once.
	MaxAge time.Duration
	// Timeout bounds a read, which reconciles that did not start it wait
	// for.
	Timeout time.Duration
}

// New returns Reads whose reads answer for maxAge and take at most timeout.
func New[T any](maxAge, timeout time.Duration) *Reads[T] {
	return &Reads[T]{reads: map[string]*read[T]{}, Now: time.Now, MaxAge: maxAge, Timeout: timeout}
}

// read is one read, in flight until done is closed; at is when it ended.
type read[T any] struct {
	done chan struct{}
	at   time.Time
	val  T
	err  error
}

// ended reports whether the read is done; its fields are then set.
func (r *read[T]) ended() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// Get returns a read of key no older than MaxAge, made with do when there
// is none. The read runs apart from the context of the reconcile that
// starts it, which others may wait on, and whose end ends only its own
// wait; a panic in do becomes the read's error.
func (v *Reads[T]) Get(ctx context.Context, key string, do func(context.Context) (T, error)) (T, error) {
	v.mu.Lock()
	now := v.Now()
	for k, r := range v.reads {
		// Old reads are dropped, so that a key no longer used is not
		// kept, and so are reads the platform did not answer.
		if r.ended() && (errors.Is(r.err, platform.ErrUnavailable) || now.Sub(r.at) > v.MaxAge) {
			delete(v.reads, k)
		}
	}
	r := v.reads[key]
	if r == nil {
		r = &read[T]{done: make(chan struct{})}
		v.reads[key] = r
		go func() {
			r.val, r.err = v.apart(ctx, do)
			// Stamped when it ends, so that a read that took long still
			// answers the reconciles that come after it.
			r.at = v.Now()
			close(r.done)
		}()
	}
	v.mu.Unlock()
	select {
	case <-r.done:
		return r.val, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// apart runs do on a context that ctx's end does not cancel, within
// Timeout.
func (v *Reads[T]) apart(ctx context.Context, do func(context.Context) (T, error)) (val T, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), v.Timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			var zero T
			val, err = zero, fmt.Errorf("shared read panicked: %v", p)
		}
	}()
	return do(ctx)
}
