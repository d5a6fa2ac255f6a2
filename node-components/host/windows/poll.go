package windows

// poll makes no Windows call, so it builds, and is tested, on any OS.

import (
	"context"
	"time"
)

// pollInterval is how often Start, Stop and Delete look at a service's
// state while they wait, and CreateNetwork at a new network.
const pollInterval = 250 * time.Millisecond

// poll calls f every pollInterval until it is done or fails, or ctx is done
// (then it returns ctx.Err()).
func poll(ctx context.Context, f func() (done bool, err error)) error {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		done, err := f()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
