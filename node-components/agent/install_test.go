package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/host/sim"
	"github.com/capwin/capwin/node-components/layout"
)

func TestInstall(t *testing.T) {
	ctx := context.Background()
	h := sim.New(sim.Options{Root: t.TempDir()})
	var log strings.Builder
	a := &Agent{Host: h, Log: &log}
	dir := writeBundle(t, "v1.36.3")
	if err := a.Install(ctx, InstallOptions{Bundle: dir}); err != nil {
		t.Fatal(err)
	}
	for _, spec := range InstalledServices() {
		got, state, err := h.Services().Get(ctx, spec.Name)
		if err != nil || state != host.ServiceStopped || got.StartType != host.StartDisabled || len(got.RestartDelays) == 0 {
			t.Errorf("%s after install: %+v %s %v", spec.Name, got, state, err)
		}
	}
	if ok, _ := h.FS().Exists(layout.BinDir + `\kubelet.exe`); !ok {
		t.Error("kubelet.exe was not installed")
	}
	if ok, _ := h.FS().Exists(layout.CNIBinDir + `\win-overlay.exe`); !ok {
		t.Error("win-overlay.exe was not installed")
	}
	if got := h.Scripts(); len(got) != 1 || got[0] != FirewallScript {
		t.Errorf("install ran %d scripts; want the firewall rules once", len(got))
	}
	for _, port := range []string{"10250", "10256"} {
		if !strings.Contains(FirewallScript, "Port = "+port) {
			t.Errorf("the firewall script does not open TCP %s", port)
		}
	}
	// A second run copies nothing and changes no service.
	events := len(h.Events())
	if err := a.Install(ctx, InstallOptions{Bundle: dir}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "(0 copied, all verified)") || len(h.Events()) != events {
		t.Errorf("a second install acted: %q\n%s", h.Events()[events:], log.String())
	}
}

func TestInstallRefusals(t *testing.T) {
	ctx := context.Background()
	dir := writeBundle(t, "v1.36.3")
	// A file changed after the manifest was written.
	if err := os.WriteFile(filepath.Join(dir, "bin", "kubelet.exe"), []byte("MZ tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &Agent{Host: sim.New(sim.Options{Root: t.TempDir()}), Log: &strings.Builder{}}
	if err := a.Install(ctx, InstallOptions{Bundle: dir}); err == nil || !strings.Contains(err.Error(), "bin/kubelet.exe does not match the bundle manifest") {
		t.Errorf("a tampered file: %v", err)
	}
	a = &Agent{Host: sim.New(sim.Options{Root: t.TempDir(), Features: []string{}}), Log: &strings.Builder{}}
	if err := a.Install(ctx, InstallOptions{Bundle: writeBundle(t, "v1.36.3")}); err == nil || !strings.Contains(err.Error(), "Containers is not installed") {
		t.Errorf("no Containers feature: %v", err)
	}
	a = &Agent{Host: sim.New(sim.Options{Root: t.TempDir()}), Log: &strings.Builder{}}
	if err := a.Install(ctx, InstallOptions{Bundle: writeBundle(t, "v1.36.3"), HyperV: true}); err == nil || !strings.Contains(err.Error(), host.FeatureHyperV) {
		t.Errorf("--hyperv without Hyper-V: %v", err)
	}
	if err := a.Install(ctx, InstallOptions{Bundle: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "has no manifest.json") {
		t.Errorf("no manifest: %v", err)
	}
}
