package windows

// The checks and conversions of this file make no Windows call, so they
// build, and are tested, on any OS. Their errors name fields, never values:
// an environment value or an argument may be a secret.

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/capwin/capwin/node-components/host"
)

// maxServiceNameLen is the service manager's limit on service and display
// names, in characters.
const maxServiceNameLen = 256

// checkServiceName rejects a name the service manager would refuse, or that
// would name another registry key than the service's own.
func checkServiceName(name string) error {
	switch {
	case name == "":
		return errors.New("the service name is empty")
	case len(utf16.Encode([]rune(name))) > maxServiceNameLen:
		return fmt.Errorf("the service name is longer than %d characters", maxServiceNameLen)
	case strings.ContainsAny(name, "/\\\x00"):
		return fmt.Errorf("the service name %q contains a slash, a backslash or a NUL", name)
	}
	return nil
}

var absoluteWindowsPath = regexp.MustCompile(`^[A-Za-z]:\\`)

// maxSCActionDelay is the longest restart delay the service manager stores:
// SC_ACTION.Delay is a DWORD of milliseconds.
const maxSCActionDelay = time.Duration(math.MaxUint32) * time.Millisecond

// checkServiceSpec rejects a spec the service manager would refuse, store
// differently from what it says, or refuse half-way through a Create.
func checkServiceSpec(spec host.ServiceSpec) error {
	if err := checkServiceName(spec.Name); err != nil {
		return err
	}
	if len(utf16.Encode([]rune(spec.DisplayName))) > maxServiceNameLen {
		return fmt.Errorf("the display name is longer than %d characters", maxServiceNameLen)
	}
	if strings.ContainsRune(spec.DisplayName, 0) || strings.ContainsRune(spec.Description, 0) {
		return errors.New("the display name or the description contains a NUL")
	}
	if len(spec.Command) == 0 {
		return errors.New("the command is empty")
	}
	if !absoluteWindowsPath.MatchString(spec.Command[0]) {
		return fmt.Errorf("the executable %q is not an absolute path (C:\\...)", spec.Command[0])
	}
	for i, a := range spec.Command {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("argument %d of the command contains a NUL", i)
		}
	}
	// What Get reads back must be what was written: CommandLine cannot
	// quote an executable path that itself holds a quote.
	if !slices.Equal(host.SplitCommandLine(host.CommandLine(spec.Command)), spec.Command) {
		return fmt.Errorf("the executable %q cannot be written as a Windows command line", spec.Command[0])
	}
	switch spec.StartType {
	case host.StartAutomatic, host.StartManual, host.StartDisabled:
	default:
		return fmt.Errorf("unknown start type %q", spec.StartType)
	}
	for i, d := range spec.Dependencies {
		if d == "" || strings.ContainsRune(d, 0) {
			return fmt.Errorf("dependency %d is empty or contains a NUL", i)
		}
	}
	if err := checkServiceEnvironment(spec.Environment); err != nil {
		return err
	}
	for i, d := range spec.RestartDelays {
		if d < 0 || d > maxSCActionDelay {
			return fmt.Errorf("restart delay %d (%s) is negative or longer than the service manager stores (%s)", i, d, maxSCActionDelay)
		}
	}
	if spec.ResetPeriod < 0 {
		return fmt.Errorf("the reset period %s is negative", spec.ResetPeriod)
	}
	return nil
}

// checkServiceEnvironment rejects entries the service manager would misread:
// each is NAME=value, NAME is not empty, and no NAME is set twice (Windows
// names are case-insensitive). An empty entry would end the REG_MULTI_SZ
// list early and silently drop every entry after it.
func checkServiceEnvironment(env []string) error {
	seen := make(map[string]bool, len(env))
	for i, e := range env {
		name, _, ok := strings.Cut(e, "=")
		if !ok || name == "" {
			return fmt.Errorf("environment entry %d is not NAME=value", i)
		}
		if strings.ContainsRune(e, 0) {
			return fmt.Errorf("environment variable %s contains a NUL", name)
		}
		key := strings.ToUpper(name)
		if seen[key] {
			return fmt.Errorf("environment variable %s is set twice", name)
		}
		seen[key] = true
	}
	return nil
}

// checkEnvironmentName rejects a machine environment variable name Windows
// cannot hold.
func checkEnvironmentName(name string) error {
	if name == "" || strings.ContainsAny(name, "=\x00") {
		return fmt.Errorf("%q is not an environment variable name", name)
	}
	return nil
}

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

// The virtual subnet IDs an overlay network may use: Hyper-V network
// virtualization reserves those below 4096 (flannel refuses a VNI below
// 4096 on Windows for the same reason), and a VXLAN VNI has 24 bits.
const (
	minVSID = 4096
	maxVSID = 1<<24 - 1
)

// checkNetwork checks a network to create and returns its subnet and
// gateway: an IPv4 subnet given by its network address, a gateway inside
// it that is not the network address, a VSID only (and always) for an
// overlay network.
func checkNetwork(n host.Network) (netip.Prefix, netip.Addr, error) {
	if n.Name == "" {
		return netip.Prefix{}, netip.Addr{}, errors.New("the network name is empty")
	}
	prefix, err := netip.ParsePrefix(n.AddressPrefix)
	if err != nil || !prefix.Addr().Is4() {
		return netip.Prefix{}, netip.Addr{}, fmt.Errorf("address prefix %q is not an IPv4 subnet", n.AddressPrefix)
	}
	if prefix != prefix.Masked() {
		return netip.Prefix{}, netip.Addr{}, fmt.Errorf("address prefix %s is not a subnet's network address (%s)", prefix, prefix.Masked())
	}
	gateway, err := netip.ParseAddr(n.Gateway)
	if err != nil || !gateway.Is4() {
		return netip.Prefix{}, netip.Addr{}, fmt.Errorf("gateway %q is not an IPv4 address", n.Gateway)
	}
	if !prefix.Contains(gateway) || gateway == prefix.Addr() {
		return netip.Prefix{}, netip.Addr{}, fmt.Errorf("gateway %s is not a host address of %s", gateway, prefix)
	}
	switch n.Type {
	case host.Overlay:
		if n.VSID < minVSID || n.VSID > maxVSID {
			return netip.Prefix{}, netip.Addr{}, fmt.Errorf("overlay VSID %d is outside %d-%d", n.VSID, minVSID, maxVSID)
		}
	case host.L2Bridge:
		if n.VSID != 0 {
			return netip.Prefix{}, netip.Addr{}, fmt.Errorf("an L2Bridge network has no VSID (got %d)", n.VSID)
		}
	default:
		return netip.Prefix{}, netip.Addr{}, fmt.Errorf("network type %q is not %s or %s", n.Type, host.Overlay, host.L2Bridge)
	}
	return prefix, gateway, nil
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
