package azure

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestViewsShareAReadUntilItIsOld: reconciles that ask at once share one
// read; a later one reuses it until it is older than maxAge; a failed read
// is not kept.
func TestViewsShareAReadUntilItIsOld(t *testing.T) {
	now := time.Unix(1000, 0)
	v := newViews()
	var mu sync.Mutex
	v.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	var reads atomic.Int32
	release := make(chan struct{})
	read := func(context.Context) (*groupView, error) {
		reads.Add(1)
		<-release
		return &groupView{}, nil
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if _, err := v.get(t.Context(), "RG", read); err != nil {
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
		t.Errorf("ten reconciles at once read the group %d times, want 1", n)
	}

	advance(viewTTL)
	if _, err := v.get(t.Context(), "rg", read); err != nil || reads.Load() != 1 {
		t.Errorf("a read %s old was not reused (reads %d, %v)", viewTTL, reads.Load(), err)
	}
	advance(time.Second)
	if _, err := v.get(t.Context(), "rg", read); err != nil || reads.Load() != 2 {
		t.Errorf("a read older than %s was reused (reads %d, %v)", viewTTL, reads.Load(), err)
	}

	failing := func(context.Context) (*groupView, error) { reads.Add(1); return nil, errors.New("throttled") }
	if _, err := v.get(t.Context(), "other", failing); err == nil {
		t.Error("a failed read returned no error")
	}
	if _, err := v.get(t.Context(), "other", read); err != nil || reads.Load() != 4 {
		t.Errorf("a failed read was kept (reads %d, %v)", reads.Load(), err)
	}
}
