package sharedread_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capwin/capwin/platform"
	"github.com/capwin/capwin/platform/sharedread"
)

type view struct{}

// TestReadsShareAReadUntilItIsOld: reconciles that ask at once share one
// read; a later one reuses it until it is older than MaxAge; a read the
// platform did not answer is not kept, one it refused is kept for MaxAge.
func TestReadsShareAReadUntilItIsOld(t *testing.T) {
	const maxAge = 30 * time.Second
	now := time.Unix(1000, 0)
	v := sharedread.New[*view](maxAge, time.Minute)
	var mu sync.Mutex
	v.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	var reads atomic.Int32
	release := make(chan struct{})
	read := func(context.Context) (*view, error) {
		reads.Add(1)
		<-release
		return &view{}, nil
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if _, err := v.Get(t.Context(), "rg", read); err != nil {
				t.Error(err)
			}
		})
	}
	// Let the ten ask before the read ends.
	for reads.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if n := reads.Load(); n != 1 {
		t.Errorf("ten reconciles at once read %d times, want 1", n)
	}

	advance(maxAge)
	if _, err := v.Get(t.Context(), "rg", read); err != nil || reads.Load() != 1 {
		t.Errorf("a read %s old was not reused (reads %d, %v)", maxAge, reads.Load(), err)
	}
	advance(time.Second)
	if _, err := v.Get(t.Context(), "rg", read); err != nil || reads.Load() != 2 {
		t.Errorf("a read older than %s was reused (reads %d, %v)", maxAge, reads.Load(), err)
	}

	unanswered := func(context.Context) (*view, error) {
		reads.Add(1)
		return nil, fmt.Errorf("%w: throttled", platform.ErrUnavailable)
	}
	if _, err := v.Get(t.Context(), "other", unanswered); err == nil {
		t.Error("a read the platform did not answer returned no error")
	}
	if _, err := v.Get(t.Context(), "other", read); err != nil || reads.Load() != 4 {
		t.Errorf("a read the platform did not answer was kept (reads %d, %v)", reads.Load(), err)
	}

	refused := func(context.Context) (*view, error) {
		reads.Add(1)
		return nil, errors.New("400: $expand needs $filter")
	}
	if _, err := v.Get(t.Context(), "third", refused); err == nil {
		t.Error("a refused read returned no error")
	}
	if _, err := v.Get(t.Context(), "third", read); err == nil || reads.Load() != 5 {
		t.Errorf("a refused read was not kept for %s (reads %d, %v)", maxAge, reads.Load(), err)
	}
	advance(maxAge + time.Second)
	if _, err := v.Get(t.Context(), "third", read); err != nil || reads.Load() != 6 {
		t.Errorf("a refused read was kept past %s (reads %d, %v)", maxAge, reads.Load(), err)
	}
}

// TestReadOutlivesTheReconcileThatStartedIt: a read goes on when the
// context of the reconcile that started it ends, for the others waiting on
// it, within Timeout; a panic is the read's error.
func TestReadOutlivesTheReconcileThatStartedIt(t *testing.T) {
	v := sharedread.New[*view](time.Minute, time.Minute)
	release := make(chan struct{})
	var sawCancel atomic.Bool
	read := func(ctx context.Context) (*view, error) {
		select {
		case <-release:
			return &view{}, nil
		case <-ctx.Done():
			sawCancel.Store(true)
			return nil, ctx.Err()
		}
	}
	first, cancel := context.WithCancel(t.Context())
	errFirst := make(chan error, 1)
	go func() {
		_, err := v.Get(first, "dc", read)
		errFirst <- err
	}()
	time.Sleep(10 * time.Millisecond)
	cancel()
	if err := <-errFirst; !errors.Is(err, context.Canceled) {
		t.Errorf("the starting reconcile's wait ended with %v, want its context's end", err)
	}
	close(release)
	if got, err := v.Get(t.Context(), "dc", read); err != nil || got == nil || sawCancel.Load() {
		t.Errorf("the read ended with the reconcile that started it: %v, %v", got, err)
	}

	short := sharedread.New[*view](time.Minute, 50*time.Millisecond)
	slow := func(ctx context.Context) (*view, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if _, err := short.Get(t.Context(), "slow", slow); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a read past Timeout ended with %v", err)
	}
	panics := func(context.Context) (*view, error) { panic("boom") }
	if _, err := v.Get(t.Context(), "panics", panics); err == nil {
		t.Error("a read that panicked returned no error")
	}
}

// TestSlowReadAnswersFromItsEnd: a read that took longer than MaxAge still
// answers the reconciles that come after it, for MaxAge from its end.
func TestSlowReadAnswersFromItsEnd(t *testing.T) {
	const maxAge = 30 * time.Second
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	v := sharedread.New[*view](maxAge, time.Minute)
	v.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	var reads atomic.Int32
	read := func(context.Context) (*view, error) {
		reads.Add(1)
		mu.Lock()
		now = now.Add(2 * maxAge) // the read takes a minute
		mu.Unlock()
		return &view{}, nil
	}
	if _, err := v.Get(t.Context(), "dc", read); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Get(t.Context(), "dc", read); err != nil || reads.Load() != 1 {
		t.Errorf("a read that took %s was not reused right after it ended (reads %d, %v)", 2*maxAge, reads.Load(), err)
	}
}
