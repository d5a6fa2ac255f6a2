package host

// The checks of this file are the rules of the Windows service manager, the
// machine environment and HNS that capwin relies on. host/windows runs them
// before each call, and host/sim runs the same ones, so that the simulation
// accepts nothing Windows would refuse. Their errors never quote an
// environment value or a service's arguments after its executable: either
// may be a secret.

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
)

// maxServiceNameLen is the service manager's limit on service and display
// names, in characters.
const maxServiceNameLen = 256

// CheckServiceName rejects a name the service manager would refuse, or that
// would name another registry key than the service's own.
func CheckServiceName(name string) error {
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

// CheckServiceSpec rejects a spec the service manager would refuse, store
// differently from what it says, or refuse half-way through a Create.
func CheckServiceSpec(spec ServiceSpec) error {
	if err := CheckServiceName(spec.Name); err != nil {
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
	if !slices.Equal(SplitCommandLine(CommandLine(spec.Command)), spec.Command) {
		return fmt.Errorf("the executable %q cannot be written as a Windows command line", spec.Command[0])
	}
	switch spec.StartType {
	case StartAutomatic, StartManual, StartDisabled:
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

// CheckEnvironmentName rejects a machine environment variable name Windows
// cannot hold.
func CheckEnvironmentName(name string) error {
	if name == "" || strings.ContainsAny(name, "=\x00") {
		return fmt.Errorf("%q is not an environment variable name", name)
	}
	return nil
}

// CheckEnvironment rejects a machine environment variable Windows cannot
// hold: a bad name, or a value with a NUL. The value is never quoted.
func CheckEnvironment(name, value string) error {
	if err := CheckEnvironmentName(name); err != nil {
		return err
	}
	if strings.ContainsRune(value, 0) {
		return fmt.Errorf("%s: the value contains a NUL", name)
	}
	return nil
}

// The virtual subnet IDs an overlay network may use: Hyper-V network
// virtualization reserves those below 4096 (flannel refuses a VNI below
// 4096 on Windows for the same reason), and a VXLAN VNI has 24 bits.
const (
	minVSID = 4096
	maxVSID = 1<<24 - 1
)

// CheckNetwork checks a network to create and returns its subnet and
// gateway: an IPv4 subnet given by its network address, a gateway inside
// it that is not the network address, a VSID only (and always) for an
// overlay network.
func CheckNetwork(n Network) (netip.Prefix, netip.Addr, error) {
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
	case Overlay:
		if n.VSID < minVSID || n.VSID > maxVSID {
			return netip.Prefix{}, netip.Addr{}, fmt.Errorf("overlay VSID %d is outside %d-%d", n.VSID, minVSID, maxVSID)
		}
	case L2Bridge:
		if n.VSID != 0 {
			return netip.Prefix{}, netip.Addr{}, fmt.Errorf("an L2Bridge network has no VSID (got %d)", n.VSID)
		}
	default:
		return netip.Prefix{}, netip.Addr{}, fmt.Errorf("network type %q is not %s or %s", n.Type, Overlay, L2Bridge)
	}
	return prefix, gateway, nil
}
