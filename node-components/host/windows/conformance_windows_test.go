//go:build windows

package windows

// The host seam's conformance suite (host/hosttest) against this machine:
// it registers, starts and deletes services, sets machine environment
// variables and, when asked, creates HNS networks, so it runs only when
// asked to, on a machine that can be thrown away (the Windows workflow's
// runner).

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/windows"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/host/hosttest"
)

const (
	// conformanceEnv, set to 1, runs TestHostConformance.
	conformanceEnv = "CAPWIN_HOST_CONFORMANCE"
	// conformanceHNSEnv, set to 1 as well, runs its HNS rules, which
	// create HNS networks on the primary adapter: the first one resets the
	// adapter, which may cut the machine off for a few seconds.
	conformanceHNSEnv = "CAPWIN_HOST_CONFORMANCE_HNS"

	// The first argument after the test flags of the processes
	// TestConformanceServiceProcess is: the service host of a service,
	// and the program it runs.
	serviceHostArg = "capwin-conformance-service-host"
	sleeperArg     = "capwin-conformance-sleeper"
)

// TestHostConformance runs the host seam's conformance suite against this
// machine, as host/sim's TestHostConformance does against the in-memory
// host. Its services run this test binary: the service host (RunService)
// and, under it, a program that runs until it is killed
// (TestConformanceServiceProcess).
func TestHostConformance(t *testing.T) {
	if os.Getenv(conformanceEnv) != "1" {
		t.Skipf("it changes this machine (services, machine environment variables, HNS networks): set %s=1 to run it, on a machine that can be thrown away", conformanceEnv)
	}
	if !windows.GetCurrentProcessToken().IsElevated() {
		t.Fatal("the conformance suite registers services and writes the machine environment: it needs an elevated administrator")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	self := []string{exe, "-test.run=^TestConformanceServiceProcess$", "-test.timeout=0"}
	hosttest.Run(t, hosttest.Options{
		New:          func(*testing.T) host.Host { return New() },
		Dir:          func(t *testing.T, _ host.Host) string { return t.TempDir() },
		CheckPrivate: checkPrivate,
		ServiceCommand: func(t *testing.T, _ host.Host, name string) []string {
			log := filepath.Join(t.TempDir(), name+".log")
			cmd := append(append([]string{}, self...), serviceHostArg, name, log, "--")
			cmd = append(cmd, self...)
			return append(cmd, sleeperArg)
		},
		PowerShell: true,
		HNS:        os.Getenv(conformanceHNSEnv) == "1",
	})
}

// TestConformanceServiceProcess is what the conformance suite's services
// run: started by the service manager, this test binary is the service host
// of TestHostConformance's service (serviceHostArg NAME LOG -- ARGV...); run
// by the service host, it is the program, which sleeps until it is killed
// (sleeperArg). Run by go test, it has nothing to do.
func TestConformanceServiceProcess(t *testing.T) {
	args := flag.Args()
	switch {
	case len(args) >= 5 && args[0] == serviceHostArg && args[3] == "--":
		if err := RunService(args[1], args[2], args[4:]); err != nil {
			t.Fatal(err)
		}
	case len(args) == 1 && args[0] == sleeperArg:
		time.Sleep(math.MaxInt64)
	default:
		t.Skip("the process of TestHostConformance's services, which the service manager starts")
	}
}

// checkPrivate says why a file's DACL lets others than SYSTEM and
// Administrators in (privateDACLProblem).
func checkPrivate(path string) error {
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return fmt.Errorf("reading the DACL of %s: %w", path, err)
	}
	return privateDACLProblem(sd.String())
}
