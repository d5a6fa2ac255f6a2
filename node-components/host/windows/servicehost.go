//go:build windows

package windows

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"

	"github.com/capwin/capwin/node-components/host"
)

const (
	// stopWait bounds how long the service host waits for its command to
	// die once it killed it.
	stopWait = 20 * time.Second
	// startWaitHint is how long the service manager should expect the
	// service to take to start.
	startWaitHint = 10 * time.Second
)

// RunService runs argv as the Windows service name, for commands that
// cannot be one themselves: flanneld has no service-manager support, and
// kubelet and kube-proxy (Kubernetes ≥ 1.26) no longer write log files.
// It must be the service's process (capwin-node.exe service run --name NAME
// --log-file FILE -- EXE ARGS...), and returns when the service stops.
//
// The service host reports StartPending, starts argv in a job object with
// no console, its stdout and stderr appended to logFile (moved to
// logFile.1 first when over 100 MiB), and reports Running, accepting Stop
// and Shutdown. On Stop or Shutdown it kills argv and every process argv
// started, and reports Stopped with exit code 0. If argv exits by itself,
// it reports Stopped with a non-zero service-specific exit code, which the
// service manager's recovery actions (on non-crash failures) answer with a
// restart. Its own messages go to logFile too.
func RunService(name, logFile string, argv []string) error {
	switch {
	case name == "":
		return errors.New("service run: no service name")
	case len(argv) == 0 || argv[0] == "":
		return fmt.Errorf("service run %s: no command to run", name)
	case !filepath.IsAbs(logFile):
		// A service's working directory is System32.
		return fmt.Errorf("service run %s: the log file %q is not an absolute path", name, logFile)
	}
	isService, err := svc.IsWindowsService()
	if err != nil {
		return fmt.Errorf("service run %s: checking whether the service control manager started this process: %w", name, err)
	}
	if !isService {
		return fmt.Errorf("service run %s: this process was not started by the service control manager (start the service instead: sc.exe start %s)", name, name)
	}
	if err := svc.Run(name, &serviceHost{name: name, logFile: logFile, argv: argv}); err != nil {
		return fmt.Errorf("running as service %s: %w", name, err)
	}
	return nil
}

type serviceHost struct {
	name    string
	logFile string
	argv    []string
}

// Execute is svc.Handler's: it runs the service from StartPending to
// Stopped.
func (h *serviceHost) Execute(_ []string, requests <-chan svc.ChangeRequest, status chan<- svc.Status) (bool, uint32) {
	status <- svc.Status{State: svc.StartPending, WaitHint: uint32(startWaitHint.Milliseconds())}

	log, err := openServiceLog(h.logFile)
	if err != nil {
		// There is nowhere to say why but the exit code.
		return failure(err)
	}
	defer log.Close() //nolint:errcheck // appended to as it went
	say := func(format string, args ...any) {
		fmt.Fprintf(log, "%s capwin-node service %s: %s\n", time.Now().UTC().Format(time.RFC3339), h.name, fmt.Sprintf(format, args...))
	}

	j, err := newJob()
	if err != nil {
		say("%v", err)
		return failure(err)
	}
	// Kills what the command left running when it exited by itself.
	defer j.close()

	cmd := exec.Command(h.argv[0])
	// The command line the service manager would have given argv had it
	// been registered itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{CmdLine: host.CommandLine(h.argv), HideWindow: true, CreationFlags: windows.CREATE_NO_WINDOW}
	// A file, not a pipe: the command writes to it directly, and keeps
	// doing so however busy this process is.
	cmd.Stdout, cmd.Stderr = log, log
	if err := j.start(cmd); err != nil {
		// Only the executable: an argument may be a secret, and the log
		// need not repeat it.
		say("starting %s: %v", h.argv[0], err)
		return failure(err)
	}
	say("started %s (process %d)", h.argv[0], cmd.Process.Pid)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	status <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
	for {
		select {
		case err := <-exited:
			code := -1
			if cmd.ProcessState != nil {
				code = cmd.ProcessState.ExitCode()
			}
			say("%s exited by itself (%v); the service stops with exit code %d for the service manager to restart it", h.argv[0], err, serviceExitCode(code))
			return true, serviceExitCode(code)
		case r := <-requests:
			switch r.Cmd {
			case svc.Interrogate:
				status <- r.CurrentStatus
			case svc.Stop, svc.Shutdown:
				status <- svc.Status{State: svc.StopPending, WaitHint: uint32(stopWait.Milliseconds())}
				if err := j.terminate(); err != nil {
					say("%v; killing %s alone", err, h.argv[0])
					cmd.Process.Kill() //nolint:errcheck // reported by Wait
				}
				select {
				case err := <-exited:
					say("stopped %s (%v)", h.argv[0], err)
				case <-time.After(stopWait):
					say("%s did not exit within %s of being killed", h.argv[0], stopWait)
				}
				return false, 0
			}
		}
	}
}
