package sim

import (
	"testing"
	"time"
)

func TestStartStop(t *testing.T) {
	start := time.Now()
	s, err := Start(t.Context(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("started in %s", time.Since(start))
	start = time.Now()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %s", time.Since(start))
}
