package host

import (
	"strings"
	"testing"
	"time"
)

func validSpec() ServiceSpec {
	return ServiceSpec{
		Name:        "kubelet",
		DisplayName: "Kubernetes kubelet",
		Command: []string{`C:\Program Files\capwin\capwin-node.exe`, "service", "run", "--name", "kubelet",
			"--", `C:\Program Files\capwin\bin\kubelet.exe`, `--config=C:\var\lib\kubelet\config.yaml`, `--node-labels=a="b c"`},
		Environment:   []string{"HTTPS_PROXY=http://user:secret@proxy:3128", "NO_PROXY=10.0.0.0/8"},
		Dependencies:  []string{"containerd"},
		StartType:     StartAutomatic,
		RestartDelays: []time.Duration{10 * time.Second, time.Minute},
		ResetPeriod:   24 * time.Hour,
	}
}

func TestCheckServiceSpec(t *testing.T) {
	if err := CheckServiceSpec(validSpec()); err != nil {
		t.Fatalf("valid spec rejected: %v", err)
	}
	for name, mutate := range map[string]func(*ServiceSpec){
		"empty name":           func(s *ServiceSpec) { s.Name = "" },
		"backslash in name":    func(s *ServiceSpec) { s.Name = `a\b` },
		"long name":            func(s *ServiceSpec) { s.Name = strings.Repeat("a", 257) },
		"long display name":    func(s *ServiceSpec) { s.DisplayName = strings.Repeat("a", 257) },
		"NUL in description":   func(s *ServiceSpec) { s.Description = "a\x00b" },
		"no command":           func(s *ServiceSpec) { s.Command = nil },
		"relative executable":  func(s *ServiceSpec) { s.Command[0] = `kubelet.exe` },
		"quote in executable":  func(s *ServiceSpec) { s.Command[0] = `C:\a"b.exe` },
		"NUL in argument":      func(s *ServiceSpec) { s.Command[2] = "a\x00b" },
		"unknown start type":   func(s *ServiceSpec) { s.StartType = "Boot" },
		"empty dependency":     func(s *ServiceSpec) { s.Dependencies = []string{""} },
		"env without =":        func(s *ServiceSpec) { s.Environment = []string{"FOO"} },
		"env without name":     func(s *ServiceSpec) { s.Environment = []string{"=C:"} },
		"empty env entry":      func(s *ServiceSpec) { s.Environment = []string{"A=1", "", "B=2"} },
		"env set twice":        func(s *ServiceSpec) { s.Environment = []string{"Path=a", "PATH=b"} },
		"negative delay":       func(s *ServiceSpec) { s.RestartDelays = []time.Duration{-time.Second} },
		"delay beyond a DWORD": func(s *ServiceSpec) { s.RestartDelays = []time.Duration{maxSCActionDelay + time.Millisecond} },
		"negative reset":       func(s *ServiceSpec) { s.ResetPeriod = -time.Second },
	} {
		t.Run(name, func(t *testing.T) {
			spec := validSpec()
			mutate(&spec)
			if err := CheckServiceSpec(spec); err == nil {
				t.Errorf("accepted %+v", spec)
			}
		})
	}
}

func TestCheckServiceSpecNeverQuotesAValue(t *testing.T) {
	spec := validSpec()
	spec.Environment = []string{"TOKEN=s3cr3t", "TOKEN=s3cr3t"}
	err := CheckServiceSpec(spec)
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("error %v quotes an environment value", err)
	}
	spec = validSpec()
	spec.Command[3] = "s3cr3t\x00"
	err = CheckServiceSpec(spec)
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("error %v quotes an argument", err)
	}
}

func TestCheckEnvironmentName(t *testing.T) {
	for _, ok := range []string{"PATH", "KUBECONFIG", "ProgramFiles(x86)"} {
		if err := CheckEnvironmentName(ok); err != nil {
			t.Errorf("%q rejected: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "A=B", "=C:", "A\x00"} {
		if err := CheckEnvironmentName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestCheckNetwork(t *testing.T) {
	external := Network{Name: "External", Type: Overlay, AddressPrefix: "192.168.255.0/30", Gateway: "192.168.255.1", VSID: 9999}
	prefix, gw, err := CheckNetwork(external)
	if err != nil || prefix.String() != "192.168.255.0/30" || gw.String() != "192.168.255.1" {
		t.Fatalf("CheckNetwork(External) = %s, %s, %v", prefix, gw, err)
	}
	bridge := Network{Name: "cbr0", Type: L2Bridge, AddressPrefix: "10.244.1.0/24", Gateway: "10.244.1.1", AdapterName: "Ethernet0"}
	if _, _, err := CheckNetwork(bridge); err != nil {
		t.Fatalf("CheckNetwork(cbr0): %v", err)
	}
	for name, n := range map[string]Network{
		"no name":              {Type: L2Bridge, AddressPrefix: "10.0.0.0/24", Gateway: "10.0.0.1"},
		"NAT":                  {Name: "nat", Type: "NAT", AddressPrefix: "10.0.0.0/24", Gateway: "10.0.0.1"},
		"IPv6":                 {Name: "a", Type: L2Bridge, AddressPrefix: "fd00::/64", Gateway: "fd00::1"},
		"host bits":            {Name: "a", Type: L2Bridge, AddressPrefix: "10.0.0.5/24", Gateway: "10.0.0.1"},
		"bad prefix":           {Name: "a", Type: L2Bridge, AddressPrefix: "10.0.0.0", Gateway: "10.0.0.1"},
		"gateway outside":      {Name: "a", Type: L2Bridge, AddressPrefix: "10.0.0.0/24", Gateway: "10.0.1.1"},
		"gateway is network":   {Name: "a", Type: L2Bridge, AddressPrefix: "10.0.0.0/24", Gateway: "10.0.0.0"},
		"no gateway":           {Name: "a", Type: L2Bridge, AddressPrefix: "10.0.0.0/24"},
		"overlay without VSID": {Name: "a", Type: Overlay, AddressPrefix: "10.0.0.0/24", Gateway: "10.0.0.1"},
		"reserved VSID":        {Name: "a", Type: Overlay, AddressPrefix: "10.0.0.0/24", Gateway: "10.0.0.1", VSID: 4095},
		"VSID over 24 bits":    {Name: "a", Type: Overlay, AddressPrefix: "10.0.0.0/24", Gateway: "10.0.0.1", VSID: 1 << 24},
		"bridge with VSID":     {Name: "a", Type: L2Bridge, AddressPrefix: "10.0.0.0/24", Gateway: "10.0.0.1", VSID: 4096},
	} {
		if _, _, err := CheckNetwork(n); err == nil {
			t.Errorf("%s: accepted %+v", name, n)
		}
	}
}
