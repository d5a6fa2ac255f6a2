package platform

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestNewErrorKeepsItsWordsAndKind(t *testing.T) {
	err := fmt.Errorf("%w: template w2022", NewError(ErrNotFound, "not found in vCenter"))
	if err.Error() != "not found in vCenter: template w2022" {
		t.Errorf("text %q", err)
	}
	if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrUnavailable) {
		t.Errorf("kind lost: %v", err)
	}
}

func TestRetryAfter(t *testing.T) {
	if d := RetryAfter(errors.New("x")); d != DefaultRetry {
		t.Errorf("no hint: %v, want %v", d, DefaultRetry)
	}
	err := fmt.Errorf("checking: %w", WithRetryAfter(ErrUnavailable, 90*time.Second))
	if d := RetryAfter(err); d != 90*time.Second {
		t.Errorf("hint: %v", d)
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("the hint hides the kind")
	}
}
