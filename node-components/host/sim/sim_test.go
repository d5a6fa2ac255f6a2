package sim

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
)

func newHost(t *testing.T) *Host {
	t.Helper()
	h := New(Options{Root: t.TempDir()})
	for _, exe := range []string{`C:\bin\a.exe`, `C:\bin\b.exe`} {
		if err := h.FS().WriteFile(exe, []byte("MZ"), false); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func spec(name string, deps ...string) host.ServiceSpec {
	return host.ServiceSpec{Name: name, DisplayName: name, Command: []string{`C:\bin\a.exe`, "--flag"}, Dependencies: deps,
		StartType: host.StartAutomatic, RestartDelays: []time.Duration{10 * time.Second}}
}

func TestServiceManagerRules(t *testing.T) {
	ctx := context.Background()
	h := newHost(t)
	s := h.Services()
	if err := s.Create(ctx, spec("base")); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, spec("BASE")); !errors.Is(err, ErrServiceExists) {
		t.Errorf("a second service of the same name (case aside): %v", err)
	}
	// The checks host/windows makes before it calls the service manager.
	relative := spec("relative")
	relative.Command = []string{`a.exe`}
	if err := s.Create(ctx, relative); err == nil {
		t.Error("a service with a relative executable was accepted")
	}
	if err := h.Environment().Set(ctx, "A=B", "x"); err == nil {
		t.Error("an environment variable name with = was accepted")
	}
	if err := s.Create(ctx, spec("top", "base")); err != nil {
		t.Fatal(err)
	}
	// Starting a service starts its dependencies first.
	if err := s.Start(ctx, "top"); err != nil {
		t.Fatal(err)
	}
	if got := h.Events(); got[len(got)-2] != "start base" || got[len(got)-1] != "start top" {
		t.Errorf("start order: %q", got)
	}
	if err := s.Stop(ctx, "base"); !errors.Is(err, ErrDependentsRunning) {
		t.Errorf("stopping a service others depend on: %v", err)
	}
	if err := s.Update(ctx, spec("base", "top")); !errors.Is(err, ErrCircularDependencies) {
		t.Errorf("a dependency loop: %v", err)
	}
	off := spec("off")
	off.StartType = host.StartDisabled
	if err := s.Create(ctx, off); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx, "off"); !errors.Is(err, ErrServiceDisabled) {
		t.Errorf("starting a disabled service: %v", err)
	}
	if err := s.Create(ctx, spec("needs-off", "off")); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx, "needs-off"); !errors.Is(err, ErrDependencyFailed) {
		t.Errorf("a disabled dependency: %v", err)
	}
	missing := spec("missing")
	missing.Command = []string{`C:\bin\a.exe`, "service", "run", "--", `C:\bin\nope.exe`}
	if err := s.Create(ctx, missing); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx, "missing"); !errors.Is(err, ErrExecutableNotFound) {
		t.Errorf("a service host whose program is missing: %v", err)
	}
}

func TestCrashRestartsOnlyWithRecoveryActions(t *testing.T) {
	ctx := context.Background()
	h := newHost(t)
	noRestart := spec("fragile")
	noRestart.RestartDelays = nil
	for _, sp := range []host.ServiceSpec{spec("sturdy"), noRestart} {
		if err := h.Services().Create(ctx, sp); err != nil {
			t.Fatal(err)
		}
		if err := h.Services().Start(ctx, sp.Name); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := h.Crash(ctx, "sturdy"); !ok || err != nil {
		t.Errorf("sturdy: restarted %v, %v", ok, err)
	}
	if ok, err := h.Crash(ctx, "fragile"); ok || err != nil {
		t.Errorf("fragile: restarted %v, %v", ok, err)
	}
	if _, st, _ := h.Services().Get(ctx, "fragile"); st != host.ServiceStopped {
		t.Errorf("fragile after a crash: %s", st)
	}
}

func TestHNSRules(t *testing.T) {
	ctx := context.Background()
	h := newHost(t)
	n := h.HNS()
	if _, err := n.CreateNetwork(ctx, host.Network{Name: "x", Type: host.Overlay, AddressPrefix: "10.0.1.0/24", Gateway: "10.0.1.1"}); err == nil {
		t.Error("an overlay network without a VSID was accepted")
	}
	// The checks host/windows makes before it calls HNS.
	if _, err := n.CreateNetwork(ctx, host.Network{Name: "x", Type: host.Overlay, VSID: 4095, AddressPrefix: "10.0.1.0/24", Gateway: "10.0.1.1"}); err == nil {
		t.Error("an overlay network with a reserved VSID was accepted")
	}
	if _, err := n.CreateNetwork(ctx, host.Network{Name: "x", Type: host.L2Bridge, AdapterName: "Ethernet9", AddressPrefix: "10.0.1.0/24", Gateway: "10.0.1.1"}); err == nil {
		t.Error("a network on a missing adapter was accepted")
	}
	if _, err := h.CreateEndpoint(host.Endpoint{Name: "pod", NetworkID: "vxlan0", IPAddress: "10.244.1.5"}); !errors.Is(err, host.ErrNotExist) {
		t.Errorf("a pod networked before its HNS network exists: %v", err)
	}
	nw, err := n.CreateNetwork(ctx, host.Network{Name: "vxlan0", Type: host.Overlay, VSID: 4096, AdapterName: "Ethernet0", AddressPrefix: "10.244.1.0/24", Gateway: "10.244.1.1", NonPersistent: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.CreateNetwork(ctx, host.Network{Name: "other", Type: host.L2Bridge, AddressPrefix: "10.0.2.0/24", Gateway: "10.0.2.1"}); err != nil {
		t.Fatal(err)
	}
	if h.AdapterResets() != 1 {
		t.Errorf("adapter resets: %d, want 1 (the first network only)", h.AdapterResets())
	}
	ep, err := h.CreateEndpoint(host.Endpoint{Name: "pod", NetworkID: nw.ID, IPAddress: "10.244.1.5"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.CreateEndpoint(host.Endpoint{Name: "pod2", NetworkID: nw.ID, IPAddress: "10.244.1.5"}); err == nil {
		t.Error("two endpoints with one address")
	}
	if err := n.DeleteNetwork(ctx, nw.ID); err == nil {
		t.Error("a network with an endpoint was deleted")
	}
	if err := n.DeleteEndpoint(ctx, ep.ID); err != nil {
		t.Fatal(err)
	}
	if err := h.Reboot(ctx); err != nil {
		t.Fatal(err)
	}
	if nets, _ := n.Networks(ctx); len(nets) != 1 || nets[0].Name != "other" {
		t.Errorf("after a reboot want only the persistent network, got %+v", nets)
	}
}

func TestRebootStartsAutomaticServicesInOrder(t *testing.T) {
	ctx := context.Background()
	h := newHost(t)
	manual := spec("manual")
	manual.StartType = host.StartManual
	for _, sp := range []host.ServiceSpec{spec("a-top", "z-base"), spec("z-base"), manual} {
		if err := h.Services().Create(ctx, sp); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Reboot(ctx); err != nil {
		t.Fatal(err)
	}
	ev := h.Events()
	if ev[len(ev)-2] != "start z-base" || ev[len(ev)-1] != "start a-top" {
		t.Errorf("boot order: %q", ev)
	}
	if _, st, _ := h.Services().Get(ctx, "manual"); st != host.ServiceStopped {
		t.Errorf("a manual service started at boot")
	}
}

func TestFlanneldRefusesWhatWindowsRefuses(t *testing.T) {
	ctx := context.Background()
	for conf, want := range map[string]string{
		`{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":1,"Port":8472}}`:    "VNI 4096 and port 4789",
		`{"Network":"10.244.0.0/16","Backend":{"Type":"wireguard"}}`:                    "not supported on Windows",
		`{"Network":"10.245.0.0/16","Backend":{"Type":"vxlan","VNI":4096,"Port":4789}}`: "not in the cluster network",
		`{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":4096,"Port":4789}}`: "",
	} {
		h := newHost(t)
		if err := h.FS().WriteFile(layout.FlannelNetConf, []byte(conf), false); err != nil {
			t.Fatal(err)
		}
		err := Flanneld("10.244.3.0/24")(ctx, h, host.ServiceSpec{})
		if want == "" {
			nets, _ := h.HNS().Networks(ctx)
			if err != nil || len(nets) != 1 || !nets[0].NonPersistent || nets[0].VSID != 4096 {
				t.Errorf("%s: %v, %+v", conf, err, nets)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", conf, err, want)
		}
	}
}
