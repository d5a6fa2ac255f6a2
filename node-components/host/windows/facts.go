//go:build windows

package windows

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/capwin/capwin/node-components/host"
)

// facts reads the machine itself.
type facts struct{}

var _ host.Facts = facts{}

// Build is the Windows build from RtlGetVersion, which, unlike
// GetVersionEx, does not depend on the caller's compatibility manifest.
func (facts) Build(context.Context) (string, error) {
	v := windows.RtlGetVersion()
	return fmt.Sprintf("%d.%d.%d", v.MajorVersion, v.MinorVersion, v.BuildNumber), nil
}

// ComputerName is the machine's DNS host name as Windows keeps it
// (GetComputerNameEx(ComputerNamePhysicalDnsHostname), through os.Hostname),
// which is what the kubelet reads for its node name; the NetBIOS name
// (GetComputerName) would be upper-case and cut to 15 characters.
func (facts) ComputerName(context.Context) (string, error) {
	name, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("reading the computer name: %w", err)
	}
	return name, nil
}

var (
	kernel32                 = windows.NewLazySystemDLL("kernel32.dll")
	procGlobalMemoryStatusEx = kernel32.NewProc("GlobalMemoryStatusEx")
)

// memoryStatusEx is MEMORYSTATUSEX.
type memoryStatusEx struct {
	length               uint32
	memoryLoad           uint32
	totalPhys            uint64
	availPhys            uint64
	totalPageFile        uint64
	availPageFile        uint64
	totalVirtual         uint64
	availVirtual         uint64
	availExtendedVirtual uint64
}

// TotalMemory is GlobalMemoryStatusEx's total physical memory: the memory
// the operating system can use, which is what the kubelet reports as the
// Node's capacity (pkg/kubelet/winstats, which prefers it to
// GetPhysicallyInstalledSystemMemory because some VMs' firmware tables
// cannot be read). golang.org/x/sys/windows does not wrap the call.
func (facts) TotalMemory(context.Context) (uint64, error) {
	var m memoryStatusEx
	m.length = uint32(unsafe.Sizeof(m))
	r, _, err := procGlobalMemoryStatusEx.Call(uintptr(unsafe.Pointer(&m)))
	if r == 0 {
		return 0, fmt.Errorf("reading the machine's memory (GlobalMemoryStatusEx): %w", err)
	}
	return m.totalPhys, nil
}

// featureServices names, for each feature Feature knows, the service the
// feature installs. That the service is registered is the observable effect
// of the feature being installed; it is read instead of the feature state
// because asking DISM (or WMI's Win32_OptionalFeature) needs COM.
var featureServices = map[string]string{
	// The Host Compute Service, which containerd's runhcs shim drives.
	host.FeatureContainers: "vmcompute",
	// The Hyper-V Virtual Machine Management service.
	host.FeatureHyperV: "vmms",
}

// Feature reports whether a Windows feature is installed, by its service.
func (facts) Feature(_ context.Context, name string) (bool, error) {
	service, ok := featureServices[name]
	if !ok {
		return false, fmt.Errorf("unknown Windows feature %q", name)
	}
	ok, err := serviceExists(service)
	if err != nil {
		return false, fmt.Errorf("checking whether Windows feature %s is installed: %w", name, err)
	}
	return ok, nil
}

// serviceExists reports whether a service is registered.
func serviceExists(name string) (bool, error) {
	scm, err := windows.OpenSCManager(nil, nil, windows.SC_MANAGER_CONNECT)
	if err != nil {
		return false, fmt.Errorf("connecting to the service control manager: %w", err)
	}
	defer windows.CloseServiceHandle(scm) //nolint:errcheck // nothing to do about it
	return serviceRegistered(scm, name)
}

// serviceRegistered reports whether the service manager scm has a service
// name. It opens the service with the least access there is and closes it
// at once: the handle must not itself keep a service marked for deletion
// registered.
func serviceRegistered(scm windows.Handle, name string) (bool, error) {
	name16, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return false, err
	}
	h, err := windows.OpenService(scm, name16, windows.SERVICE_QUERY_STATUS)
	if errors.Is(err, windows.ERROR_SERVICE_DOES_NOT_EXIST) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("opening service %s: %w", name, err)
	}
	windows.CloseServiceHandle(h) //nolint:errcheck // nothing to do about it
	return true, nil
}

// PrimaryInterface is the adapter that carries the default route (see
// primaryInterface).
func (facts) PrimaryInterface(context.Context) (host.Interface, error) {
	adapters, err := ipv4Adapters()
	if err != nil {
		return host.Interface{}, err
	}
	return primaryInterface(adapters)
}

// ipv4Adapters reads the machine's network adapters with their IPv4
// addresses and gateways.
func ipv4Adapters() ([]adapter, error) {
	const flags = windows.GAA_FLAG_INCLUDE_GATEWAYS | windows.GAA_FLAG_SKIP_ANYCAST |
		windows.GAA_FLAG_SKIP_MULTICAST | windows.GAA_FLAG_SKIP_DNS_SERVER
	size := uint32(15000) // the size Microsoft recommends to start with
	var buf []byte
	for {
		buf = make([]byte, size)
		err := windows.GetAdaptersAddresses(windows.AF_INET, flags, 0, (*windows.IpAdapterAddresses)(unsafe.Pointer(&buf[0])), &size)
		if err == nil {
			break
		}
		if errors.Is(err, windows.ERROR_NO_DATA) {
			return nil, nil
		}
		// The adapters may change between two calls: try again with the
		// size asked for, as long as it grows.
		if !errors.Is(err, windows.ERROR_BUFFER_OVERFLOW) || size <= uint32(len(buf)) {
			return nil, fmt.Errorf("listing network adapters: %w", err)
		}
	}
	if size == 0 {
		return nil, nil
	}
	var out []adapter
	for aa := (*windows.IpAdapterAddresses)(unsafe.Pointer(&buf[0])); aa != nil; aa = aa.Next {
		a := adapter{
			Name:     windows.UTF16PtrToString(aa.FriendlyName),
			Up:       aa.OperStatus == windows.IfOperStatusUp,
			Loopback: aa.IfType == windows.IF_TYPE_SOFTWARE_LOOPBACK,
			Metric:   aa.Ipv4Metric,
		}
		for g := aa.FirstGatewayAddress; g != nil; g = g.Next {
			if ip, ok := socketAddr(&g.Address); ok {
				a.Gateways = append(a.Gateways, ip)
			}
		}
		for u := aa.FirstUnicastAddress; u != nil; u = u.Next {
			// A tentative or duplicate address is not in use (yet).
			if u.DadState != windows.IpDadStatePreferred && u.DadState != windows.IpDadStateDeprecated {
				continue
			}
			ip, ok := socketAddr(&u.Address)
			if !ok {
				continue
			}
			if p := netip.PrefixFrom(ip, int(u.OnLinkPrefixLength)); p.IsValid() {
				a.Addresses = append(a.Addresses, p)
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// socketAddr is a SOCKET_ADDRESS's IP address; IPv4 addresses come out as
// IPv4, not IPv4-mapped IPv6.
func socketAddr(sa *windows.SocketAddress) (netip.Addr, bool) {
	ip := sa.IP()
	if ip == nil {
		return netip.Addr{}, false
	}
	addr, ok := netip.AddrFromSlice(ip)
	return addr.Unmap(), ok
}
