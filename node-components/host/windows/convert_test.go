package windows

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capwin/capwin/node-components/host"
)

func TestMultiSZ(t *testing.T) {
	if got := multiSZ(nil); !slices.Equal(got, []uint16{0, 0}) {
		t.Errorf("multiSZ(nil) = %v, want two NULs", got)
	}
	if got, want := multiSZ([]string{"ab", "😀"}), []uint16{'a', 'b', 0, 0xD83D, 0xDE00, 0, 0}; !slices.Equal(got, want) {
		t.Errorf("multiSZ = %v, want %v", got, want)
	}
}

func TestRecoveryConversions(t *testing.T) {
	if got := scActionDelay(1500*time.Microsecond + 10*time.Second); got != 10*time.Second+time.Millisecond {
		t.Errorf("scActionDelay = %s", got)
	}
	for d, want := range map[time.Duration]uint32{
		0:                          0,
		-time.Second:               0,
		time.Millisecond:           1,
		24 * time.Hour:             86400,
		24*time.Hour + time.Second: 86401,
		math.MaxInt64:              math.MaxUint32,
	} {
		if got := resetPeriodSeconds(d); got != want {
			t.Errorf("resetPeriodSeconds(%s) = %d, want %d", d, got, want)
		}
	}
	if got := resetPeriodDuration(resetPeriodSeconds(24 * time.Hour)); got != 24*time.Hour {
		t.Errorf("reset period does not round-trip: %s", got)
	}
}

func TestServiceExitCode(t *testing.T) {
	for code, want := range map[int]uint32{0: 1, -1: 1, 1: 1, 2: 2, 0xC0000005: 0xC0000005} {
		if got := serviceExitCode(code); got != want {
			t.Errorf("serviceExitCode(%d) = %d, want %d", code, got, want)
		}
	}
}

func TestFailure(t *testing.T) {
	// ERROR_FILE_NOT_FOUND, as exec reports a missing executable: wrapped.
	if ssec, code := failure(fmt.Errorf("starting: %w", syscall.Errno(2))); ssec || code != 2 {
		t.Errorf("failure of a Win32 error = %v, %d; want the Win32 code 2", ssec, code)
	}
	if ssec, code := failure(errors.New("no")); !ssec || code != 1 {
		t.Errorf("failure without an Errno = %v, %d; want service-specific 1", ssec, code)
	}
	if ssec, code := failure(syscall.Errno(0)); !ssec || code != 1 {
		t.Errorf("failure of Errno 0 = %v, %d; want service-specific 1", ssec, code)
	}
}

func TestIsGUID(t *testing.T) {
	for s, want := range map[string]bool{
		"B6A7D0C8-1A2B-4C3D-8E9F-0123456789AB":   true,
		"b6a7d0c8-1a2b-4c3d-8e9f-0123456789ab":   true,
		"{B6A7D0C8-1A2B-4C3D-8E9F-0123456789AB}": false,
		"External":                               false,
		"":                                       false,
	} {
		if got := isGUID(s); got != want {
			t.Errorf("isGUID(%q) = %v", s, got)
		}
	}
}

func TestPrimaryInterface(t *testing.T) {
	gw := []netip.Addr{netip.MustParseAddr("10.0.0.1")}
	addr := []netip.Prefix{netip.MustParsePrefix("10.0.0.17/24")}
	for name, tc := range map[string]struct {
		adapters []adapter
		want     host.Interface
	}{
		"the one with a gateway": {
			adapters: []adapter{
				{Name: "Loopback Pseudo-Interface 1", Up: true, Loopback: true, Gateways: gw, Addresses: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/8")}},
				{Name: "Ethernet1", Up: true, Addresses: []netip.Prefix{netip.MustParsePrefix("192.168.1.5/24")}},
				{Name: "Ethernet0", Up: true, Gateways: gw, Addresses: addr},
			},
			want: host.Interface{Name: "Ethernet0", IPv4: "10.0.0.17", Subnet: "10.0.0.0/24"},
		},
		"down adapters and unusable addresses are skipped": {
			adapters: []adapter{
				{Name: "down", Gateways: gw, Addresses: addr},
				{Name: "unspecified gateway", Up: true, Gateways: []netip.Addr{netip.MustParseAddr("0.0.0.0")}, Addresses: addr},
				{Name: "vEthernet (Ethernet0)", Up: true, Gateways: gw, Addresses: []netip.Prefix{
					netip.MustParsePrefix("169.254.3.4/16"), netip.MustParsePrefix("10.1.2.3/16"),
				}},
			},
			// HNS's virtual adapter stands for the physical one.
			want: host.Interface{Name: "Ethernet0", IPv4: "10.1.2.3", Subnet: "10.1.0.0/16"},
		},
		"the lowest metric wins, then the first": {
			adapters: []adapter{
				{Name: "a", Up: true, Metric: 25, Gateways: gw, Addresses: addr},
				{Name: "b", Up: true, Metric: 15, Gateways: gw, Addresses: []netip.Prefix{netip.MustParsePrefix("10.9.8.7/20")}},
				{Name: "c", Up: true, Metric: 15, Gateways: gw, Addresses: addr},
			},
			want: host.Interface{Name: "b", IPv4: "10.9.8.7", Subnet: "10.9.0.0/20"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := primaryInterface(tc.adapters)
			if err != nil || got != tc.want {
				t.Errorf("primaryInterface = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	if got, err := primaryInterface([]adapter{{Name: "Ethernet1", Up: true, Addresses: addr}}); err == nil {
		t.Errorf("primaryInterface without a gateway = %+v", got)
	}
}

func TestCommandLineTooLong(t *testing.T) {
	if commandLineTooLong(strings.Repeat("a", maxCommandLine)) {
		t.Error("a command line of the maximum length is too long")
	}
	if !commandLineTooLong(strings.Repeat("a", maxCommandLine+1)) {
		t.Error("a command line over the maximum is accepted")
	}
	// A non-BMP character is two UTF-16 characters.
	if !commandLineTooLong(strings.Repeat("a", maxCommandLine-1) + "😀") {
		t.Error("UTF-16 length not counted")
	}
}
