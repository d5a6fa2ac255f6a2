//go:build windows

package windows

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/windows"

	"github.com/capwin/capwin/node-components/host"
)

// shellWaitDelay bounds how long Run waits for the output of a script that
// was cancelled.
const shellWaitDelay = 10 * time.Second

// shell runs Windows PowerShell 5.1, which every Windows Server has.
type shell struct{}

var _ host.Shell = shell{}

// Run runs a script with powershell.exe -EncodedCommand (see EncodeCommand)
// and the prelude of wrapScript, in a job object: when ctx is done, the
// script and every process it started are killed, and so is any process it
// leaves running when it exits. Its output is stdout and stderr as they
// came, in the console's OEM code page.
func (shell) Run(ctx context.Context, script string) ([]byte, error) {
	system, err := windows.GetSystemDirectory()
	if err != nil {
		return nil, fmt.Errorf("running a PowerShell script: finding the system directory: %w", err)
	}
	exe := filepath.Join(system, "WindowsPowerShell", "v1.0", "powershell.exe")
	cmdline, err := powershellCommandLine(exe, script)
	if err != nil {
		return nil, fmt.Errorf("running a PowerShell script: %w", err)
	}
	j, err := newJob()
	if err != nil {
		return nil, fmt.Errorf("running a PowerShell script: %w", err)
	}
	defer j.close()

	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, exe)
	// One buffer for both: os/exec then copies them through one pipe, in
	// the order PowerShell wrote them.
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{CmdLine: cmdline, HideWindow: true, CreationFlags: windows.CREATE_NO_WINDOW}
	cmd.Cancel = j.terminate
	cmd.WaitDelay = shellWaitDelay
	if err := j.start(cmd); err != nil {
		return nil, fmt.Errorf("starting PowerShell: %w", err)
	}
	if ctx.Err() != nil {
		// Cancelled before the process was in the job, when Cancel found
		// nothing to kill.
		j.terminate() //nolint:errcheck // Wait's WaitDelay kills it otherwise
	}
	err = cmd.Wait()
	if ctxErr := ctx.Err(); ctxErr != nil {
		return out.Bytes(), fmt.Errorf("PowerShell script cancelled; its output ends with: %s: %w", outputTail(out.Bytes()), ctxErr)
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return out.Bytes(), fmt.Errorf("PowerShell script failed with exit code %d; its output ends with: %s: %w",
			uint32(exitErr.ExitCode()), outputTail(out.Bytes()), err)
	}
	if err != nil {
		return out.Bytes(), fmt.Errorf("running a PowerShell script: %w", err)
	}
	return out.Bytes(), nil
}
