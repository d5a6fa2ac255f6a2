package e2e

import (
	"testing"
)

func TestScaleWindowsZeroToFiveToZero(t *testing.T) {
	o := newCluster(t, 0)
	scale(t, o, 5)
	ms := waitRunning(t, o, 5)
	t.Log(describe(ms))
	noRejections(t)
}
