package windows

// The checks and conversions of this file make no Windows call, so they
// build, and are tested, on any OS. Their errors name fields, never values:
// an environment value or an argument may be a secret.

import (
	"errors"
	"math"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf16"

	"github.com/capwin/capwin/node-components/host"
)

// multiSZ is ss as a Windows string list (lpDependencies): each string
// NUL-terminated, then one more NUL. An empty list is two NULs, which
// ChangeServiceConfig reads as "no dependencies" (a NULL pointer would mean
// "unchanged").
func multiSZ(ss []string) []uint16 {
	var out []uint16
	for _, s := range ss {
		out = append(out, utf16.Encode([]rune(s))...)
		out = append(out, 0)
	}
	if len(out) == 0 {
		out = append(out, 0)
	}
	return append(out, 0)
}

// scActionDelay is d as the service manager stores a recovery action's
// delay: whole milliseconds.
func scActionDelay(d time.Duration) time.Duration {
	return d.Truncate(time.Millisecond)
}

// resetPeriodSeconds is the failure-count reset period as the service
// manager stores it: seconds, rounded up so that a positive period does not
// become 0; periods beyond its range become INFINITE (never reset).
func resetPeriodSeconds(d time.Duration) uint32 {
	if d <= 0 {
		return 0
	}
	s := d / time.Second
	if d%time.Second != 0 {
		s++
	}
	if s >= math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(s)
}

// resetPeriodDuration is the inverse of resetPeriodSeconds.
func resetPeriodDuration(seconds uint32) time.Duration {
	return time.Duration(seconds) * time.Second
}

// serviceExitCode is the service-specific exit code the service host reports
// when its command exits by itself: the command's exit code, or 1 if that is
// 0 (or unknown), so that the service manager always counts it as a failure
// and its recovery actions restart the service.
func serviceExitCode(code int) uint32 {
	if code <= 0 || int64(code) > math.MaxUint32 {
		return 1
	}
	return uint32(code)
}

// failure is the exit code of a service host that could not start its
// command: the Win32 error if there is one (ERROR_FILE_NOT_FOUND for a
// missing executable), else service-specific 1.
func failure(err error) (bool, uint32) {
	var errno syscall.Errno
	if errors.As(err, &errno) && errno != 0 {
		return false, uint32(errno)
	}
	return true, 1
}

var guidPattern = regexp.MustCompile(`^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`)

// isGUID reports whether s is a GUID as HNS writes ids; no HNS object has
// any other id.
func isGUID(s string) bool {
	return guidPattern.MatchString(s)
}

// adapter is what PrimaryInterface reads of a network adapter.
type adapter struct {
	// Name is the adapter's friendly name (Ethernet0).
	Name     string
	Up       bool
	Loopback bool
	// Metric is the adapter's IPv4 interface metric: of two adapters with a
	// default gateway, Windows prefers the lower.
	Metric uint32
	// Gateways are its default gateways.
	Gateways []netip.Addr
	// Addresses are its unicast addresses that are in use, each with its
	// on-link prefix length.
	Addresses []netip.Prefix
}

// primaryInterface picks the adapter that carries the default route: up, not
// loopback, with an IPv4 default gateway and an IPv4 address that is not
// link-local; of several, the one with the lowest metric, then the first.
func primaryInterface(adapters []adapter) (host.Interface, error) {
	var (
		best    host.Interface
		metric  uint32
		matched bool
	)
	for _, a := range adapters {
		if !a.Up || a.Loopback || !slices.ContainsFunc(a.Gateways, usableGateway) {
			continue
		}
		i := slices.IndexFunc(a.Addresses, usableAddress)
		if i < 0 {
			continue
		}
		if matched && a.Metric >= metric {
			continue
		}
		addr := a.Addresses[i]
		best = host.Interface{Name: physicalAdapter(a.Name), IPv4: addr.Addr().String(), Subnet: addr.Masked().String()}
		metric, matched = a.Metric, true
	}
	if !matched {
		return host.Interface{}, errors.New("no network adapter is up with an IPv4 address and a default gateway")
	}
	return best, nil
}

// physicalAdapter names the adapter an HNS network attaches to. Once the
// host has an HNS network its address moves to the virtual adapter
// "vEthernet (Ethernet0)" that HNS put in front of Ethernet0; a second
// network must still name Ethernet0.
func physicalAdapter(name string) string {
	if inner, ok := strings.CutPrefix(name, "vEthernet ("); ok && strings.HasSuffix(inner, ")") {
		return strings.TrimSuffix(inner, ")")
	}
	return name
}

func usableGateway(a netip.Addr) bool {
	return a.Is4() && !a.IsUnspecified()
}

func usableAddress(p netip.Prefix) bool {
	a := p.Addr()
	return p.IsValid() && a.Is4() && !a.IsUnspecified() && !a.IsLinkLocalUnicast() && !a.IsLoopback()
}

// maxCommandLine is CreateProcess's limit on a command line, in UTF-16
// characters, without its terminating NUL.
const maxCommandLine = 32766

// commandLineTooLong reports whether cmdline exceeds what CreateProcess
// takes.
func commandLineTooLong(cmdline string) bool {
	return len(utf16.Encode([]rune(cmdline))) > maxCommandLine
}
