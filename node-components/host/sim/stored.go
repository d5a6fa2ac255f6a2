package sim

import (
	"math"
	"time"

	"github.com/capwin/capwin/node-components/host"
)

// stored is a registration as host/windows writes it and the service
// manager keeps it, which is what Get reads back: the name for an empty
// display name, restart delays in milliseconds, the reset period in whole
// seconds (rounded up, at most the service manager's INFINITE) and none
// without restart actions (host/windows' newServiceRecord and
// serviceRecord.spec; the conformance suite's
// RegistrationReadsBackAsTheServiceManagerStoresIt).
func stored(spec host.ServiceSpec) host.ServiceSpec {
	spec = clone(spec)
	if spec.DisplayName == "" {
		spec.DisplayName = spec.Name
	}
	for i, d := range spec.RestartDelays {
		spec.RestartDelays[i] = d.Truncate(time.Millisecond)
	}
	switch {
	case len(spec.RestartDelays) == 0:
		spec.ResetPeriod = 0
	case spec.ResetPeriod > 0:
		seconds := spec.ResetPeriod / time.Second
		if spec.ResetPeriod%time.Second != 0 {
			seconds++
		}
		if seconds >= math.MaxUint32 {
			seconds = math.MaxUint32
		}
		spec.ResetPeriod = seconds * time.Second
	}
	return spec
}
