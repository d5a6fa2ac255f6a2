package azure

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capwin/capwin/platform"
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

	unanswered := func(context.Context) (*groupView, error) {
		reads.Add(1)
		return nil, fmt.Errorf("%w: throttled", platform.ErrUnavailable)
	}
	if _, err := v.get(t.Context(), "other", unanswered); err == nil {
		t.Error("a read Azure did not answer returned no error")
	}
	if _, err := v.get(t.Context(), "other", read); err != nil || reads.Load() != 4 {
		t.Errorf("a read Azure did not answer was kept (reads %d, %v)", reads.Load(), err)
	}

	refused := func(context.Context) (*groupView, error) {
		reads.Add(1)
		return nil, errors.New("400: $expand needs $filter")
	}
	if _, err := v.get(t.Context(), "third", refused); err == nil {
		t.Error("a refused read returned no error")
	}
	if _, err := v.get(t.Context(), "third", read); err == nil || reads.Load() != 5 {
		t.Errorf("a refused read was not kept for %s (reads %d, %v)", viewTTL, reads.Load(), err)
	}
	advance(viewTTL + time.Second)
	if _, err := v.get(t.Context(), "third", read); err != nil || reads.Load() != 6 {
		t.Errorf("a refused read was kept past %s (reads %d, %v)", viewTTL, reads.Load(), err)
	}
}
