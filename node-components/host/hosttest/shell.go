package hosttest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capwin/capwin/node-components/host"
)

// exitCoder is how the agent reads a failed command's exit code
// (agent.commandFailure).
type exitCoder interface{ ExitCode() int }

// wantExit fails unless err is a script's failure with exit code code, which
// its message names.
func wantExit(t *testing.T, err error, code int) {
	t.Helper()
	var exit exitCoder
	switch {
	case err == nil:
		t.Errorf("the script succeeded; want exit code %d", code)
	case !errors.As(err, &exit):
		t.Errorf("the error %q carries no exit code", err)
	case exit.ExitCode() != code:
		t.Errorf("exit code %d, want %d (%v)", exit.ExitCode(), code, err)
	case !strings.Contains(err.Error(), "exit code "+strconv.Itoa(code)):
		t.Errorf("the error %q does not name exit code %d", err, code)
	}
}

func (s suite) shell(t *testing.T) {
	s.runAll(t, []rule{
		// A command stopped by the join's deadline is reported as such.
		{"ACancelledRunIsTheContextsError", func(t *testing.T, h host.Host) {
			c, cancel := context.WithCancel(ctx(t))
			cancel()
			if _, err := h.Shell().Run(c, "Write-Output 'never'"); !errors.Is(err, context.Canceled) {
				t.Errorf("Run with a cancelled context: %v, want context.Canceled", err)
			}
		}},
	})
	t.Run("PowerShell", func(t *testing.T) {
		if !s.PowerShell {
			t.Skip("this host's shell runs no PowerShell (Options.PowerShell)")
		}
		s.powershell(t)
	})
}

func (s suite) powershell(t *testing.T) {
	s.runAll(t, []rule{
		// The agent keeps a command's output in commands.log.
		{"OutputIsStdoutAndStderr", func(t *testing.T, h host.Host) {
			out, err := h.Shell().Run(ctx(t), "Write-Output 'capwin-conformance-out'\n[Console]::Error.WriteLine('capwin-conformance-err')")
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"capwin-conformance-out", "capwin-conformance-err"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("the output %q lacks %q", out, want)
				}
			}
		}},
		// A pre- or post-join command's failure is reported by its exit
		// code alone.
		{"ANonZeroExitIsAnErrorWithItsCode", func(t *testing.T, h host.Host) {
			_, err := h.Shell().Run(ctx(t), "exit 3")
			wantExit(t, err, 3)
		}},
		// A failing cmdlet fails the script rather than being skipped, as
		// the firewall script and the users' commands expect.
		{"AFailingCommandFailsTheScript", func(t *testing.T, h host.Host) {
			out, err := h.Shell().Run(ctx(t), "Get-Item -Path 'C:\\"+unique("missing")+"'\nWrite-Output 'capwin-conformance-after'")
			wantExit(t, err, 1)
			if strings.Contains(string(out), "capwin-conformance-after") {
				t.Errorf("the script went on after the failing command: %q", out)
			}
		}},
		// The join's deadline stops a command that hangs, and what it
		// started.
		{"ADeadlineStopsTheScript", func(t *testing.T, h host.Host) {
			c, cancel := context.WithTimeout(ctx(t), 3*time.Second)
			defer cancel()
			begin := time.Now()
			_, err := h.Shell().Run(c, "Start-Sleep -Seconds 300")
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Run past its deadline: %v, want context.DeadlineExceeded", err)
			}
			if d := time.Since(begin); d > time.Minute {
				t.Errorf("Run returned %s after its deadline", d)
			}
		}},
	})
}
