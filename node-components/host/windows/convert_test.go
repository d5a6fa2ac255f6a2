package windows

import (
	"math"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capwin/capwin/node-components/host"
)

func validSpec() host.ServiceSpec {
	return host.ServiceSpec{
		Name:        "kubelet",
		DisplayName: "Kubernetes kubelet",
		Command: []string{`C:\Program Files\capwin\capwin-node.exe`, "service", "run", "--name", "kubelet",
			"--", `C:\Program Files\capwin\bin\kubelet.exe`, `--config=C:\var\lib\kubelet\config.yaml`, `--node-labels=a="b c"`},
		Environment:   []string{"HTTPS_PROXY=http://user:secret@proxy:3128", "NO_PROXY=10.0.0.0/8"},
		Dependencies:  []string{"containerd"},
		StartType:     host.StartAutomatic,
		RestartDelays: []time.Duration{10 * time.Second, time.Minute},
		ResetPeriod:   24 * time.Hour,
	}
}

func TestCheckServiceSpec(t *testing.T) {
	if err := checkServiceSpec(validSpec()); err != nil {
		t.Fatalf("valid spec rejected: %v", err)
	}
	for name, mutate := range map[string]func(*host.ServiceSpec){
		"empty name":           func(s *host.ServiceSpec) { s.Name = "" },
		"backslash in name":    func(s *host.ServiceSpec) { s.Name = `a\b` },
		"long name":            func(s *host.ServiceSpec) { s.Name = strings.Repeat("a", 257) },
		"long display name":    func(s *host.ServiceSpec) { s.DisplayName = strings.Repeat("a", 257) },
		"NUL in description":   func(s *host.ServiceSpec) { s.Description = "a\x00b" },
		"no command":           func(s *host.ServiceSpec) { s.Command = nil },
		"relative executable":  func(s *host.ServiceSpec) { s.Command[0] = `kubelet.exe` },
		"quote in executable":  func(s *host.ServiceSpec) { s.Command[0] = `C:\a"b.exe` },
		"NUL in argument":      func(s *host.ServiceSpec) { s.Command[2] = "a\x00b" },
		"unknown start type":   func(s *host.ServiceSpec) { s.StartType = "Boot" },
		"empty dependency":     func(s *host.ServiceSpec) { s.Dependencies = []string{""} },
		"env without =":        func(s *host.ServiceSpec) { s.Environment = []string{"FOO"} },
		"env without name":     func(s *host.ServiceSpec) { s.Environment = []string{"=C:"} },
		"empty env entry":      func(s *host.ServiceSpec) { s.Environment = []string{"A=1", "", "B=2"} },
		"env set twice":        func(s *host.ServiceSpec) { s.Environment = []string{"Path=a", "PATH=b"} },
		"negative delay":       func(s *host.ServiceSpec) { s.RestartDelays = []time.Duration{-time.Second} },
		"delay beyond a DWORD": func(s *host.ServiceSpec) { s.RestartDelays = []time.Duration{maxSCActionDelay + time.Millisecond} },
		"negative reset":       func(s *host.ServiceSpec) { s.ResetPeriod = -time.Second },
	} {
		t.Run(name, func(t *testing.T) {
			spec := validSpec()
			mutate(&spec)
			if err := checkServiceSpec(spec); err == nil {
				t.Errorf("accepted %+v", spec)
			}
		})
	}
}

func TestCheckServiceSpecNeverQuotesAValue(t *testing.T) {
	spec := validSpec()
	spec.Environment = []string{"TOKEN=s3cr3t", "TOKEN=s3cr3t"}
	err := checkServiceSpec(spec)
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("error %v quotes an environment value", err)
	}
	spec = validSpec()
	spec.Command[3] = "s3cr3t\x00"
	err = checkServiceSpec(spec)
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("error %v quotes an argument", err)
	}
}

func TestCheckEnvironmentName(t *testing.T) {
	for _, ok := range []string{"PATH", "KUBECONFIG", "ProgramFiles(x86)"} {
		if err := checkEnvironmentName(ok); err != nil {
			t.Errorf("%q rejected: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "A=B", "=C:", "A\x00"} {
		if err := checkEnvironmentName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

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

func TestCheckNetwork(t *testing.T) {
	external := host.Network{Name: "External", Type: host.Overlay, AddressPrefix: "192.168.255.0/30", Gateway: "192.168.255.1", VSID: 9999}
	prefix, gw, err := checkNetwork(external)
	if err != nil || prefix.String() != "192.168.255.0/30" || gw.String() != "192.168.255.1" {
		t.Fatalf("checkNetwork(External) = %s, %s, %v", prefix, gw, err)
	}
	bridge := host.Network{Name: "cbr0", Type: host.L2Bridge, AddressPrefix: "10.244.1.0/24", Gateway: "10.244.1.1", AdapterName: "Ethernet0"}
	if _, _, err := checkNetwork(bridge); err != nil {
		t.Fatalf("checkNetwork(cbr0): %v", err)
	}
	for name, n := range map[string]host.Network{
		"no name":              {Type: host.L2Bridge, AddressPrefix: "10.0.0.0/24", Gateway: "10.0.0.1"},
		"NAT":                  {Name: "nat", Type: "NAT", AddressPrefix: "10.0.0.0/24", Gateway: "10.0.0.1"},
		"IPv6":                 {Name: "a", Type: host.L2Bridge, AddressPrefix: "fd00::/64", Gateway: "fd00::1"},
		"host bits":            {Name: "a", Type: host.L2Bridge, AddressPrefix: "10.0.0.5/24", Gateway: "10.0.0.1"},
		"bad prefix":           {Name: "a", Type: host.L2Bridge, AddressPrefix: "10.0.0.0", Gateway: "10.0.0.1"},
		"gateway outside":      {Name: "a", Type: host.L2Bridge, AddressPrefix: "10.0.0.0/24", Gateway: "10.0.1.1"},
		"gateway is network":   {Name: "a", Type: host.L2Bridge, AddressPrefix: "10.0.0.0/24", Gateway: "10.0.0.0"},
		"no gateway":           {Name: "a", Type: host.L2Bridge, AddressPrefix: "10.0.0.0/24"},
		"overlay without VSID": {Name: "a", Type: host.Overlay, AddressPrefix: "10.0.0.0/24", Gateway: "10.0.0.1"},
		"reserved VSID":        {Name: "a", Type: host.Overlay, AddressPrefix: "10.0.0.0/24", Gateway: "10.0.0.1", VSID: 4095},
		"VSID over 24 bits":    {Name: "a", Type: host.Overlay, AddressPrefix: "10.0.0.0/24", Gateway: "10.0.0.1", VSID: 1 << 24},
		"bridge with VSID":     {Name: "a", Type: host.L2Bridge, AddressPrefix: "10.0.0.0/24", Gateway: "10.0.0.1", VSID: 4096},
	} {
		if _, _, err := checkNetwork(n); err == nil {
			t.Errorf("%s: accepted %+v", name, n)
		}
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
