package windows

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	calls := 0
	if err := poll(context.Background(), func() (bool, error) { calls++; return calls == 3, nil }); err != nil || calls != 3 {
		t.Errorf("poll until done = %v after %d calls, want nil after 3", err, calls)
	}

	boom := errors.New("boom")
	calls = 0
	if err := poll(context.Background(), func() (bool, error) { calls++; return false, boom }); !errors.Is(err, boom) || calls != 1 {
		t.Errorf("poll of a failing f = %v after %d calls, want boom after 1", err, calls)
	}

	// A context that ends stops the wait between two calls.
	ctx, cancel := context.WithTimeout(context.Background(), pollInterval/2)
	defer cancel()
	start := time.Now()
	calls = 0
	if err := poll(ctx, func() (bool, error) { calls++; return false, nil }); !errors.Is(err, context.DeadlineExceeded) || calls != 1 {
		t.Errorf("poll past its deadline = %v after %d calls, want DeadlineExceeded after 1", err, calls)
	}
	if waited := time.Since(start); waited >= 10*pollInterval {
		t.Errorf("poll returned %s after its deadline of %s", waited, pollInterval/2)
	}
}
