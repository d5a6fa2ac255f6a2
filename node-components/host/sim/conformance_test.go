package sim_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/host/hosttest"
	"github.com/capwin/capwin/node-components/host/sim"
)

// TestHostConformance runs the host seam's conformance suite against the
// in-memory host, a fresh one for each rule: the rules host/windows keeps on
// a real machine (its conformance_windows_test.go).
func TestHostConformance(t *testing.T) {
	hosttest.Run(t, hosttest.Options{
		New: func(t *testing.T) host.Host { return sim.New(sim.Options{Root: t.TempDir()}) },
		Dir: func(t *testing.T, h host.Host) string {
			dir := `C:\capwin-conformance`
			if err := h.FS().MkdirAll(dir); err != nil {
				t.Fatal(err)
			}
			return dir
		},
		// The in-memory host's private files are the owner's only (0600).
		CheckPrivate: func(osPath string) error {
			fi, err := os.Stat(osPath)
			if err != nil {
				return err
			}
			if m := fi.Mode().Perm(); m != 0o600 {
				return fmt.Errorf("mode %v, want 0600", m)
			}
			return nil
		},
		// capwin's service host and a program, as the agent registers its
		// services: the in-memory service manager starts a service whose
		// executables exist.
		ServiceCommand: func(t *testing.T, h host.Host, name string) []string {
			exe, prog := `C:\capwin-conformance\bin\capwin-node.exe`, `C:\capwin-conformance\bin\program.exe`
			for _, p := range []string{exe, prog} {
				if err := h.FS().WriteFile(p, []byte("MZ"), false); err != nil {
					t.Fatal(err)
				}
			}
			return []string{exe, "service", "run", "--name", name, "--log-file", `C:\capwin-conformance\logs\` + name + ".log", "--", prog}
		},
		HNS: true,
	})
}
