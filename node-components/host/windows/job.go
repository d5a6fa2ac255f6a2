//go:build windows

package windows

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// job is a Windows job object that kills every process in it when it is
// closed, or when the process that holds it dies: a command started in it
// and all the processes that command starts die with it.
type job struct {
	h windows.Handle
}

func newJob() (*job, error) {
	h, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("creating a job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	if _, err := windows.SetInformationJobObject(h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(h) //nolint:errcheck // nothing to do about it
		return nil, fmt.Errorf("making a job object kill its processes on close: %w", err)
	}
	return &job{h: h}, nil
}

// start starts cmd in the job. The process is created suspended and resumed
// only once it is in the job, so that nothing it starts can escape the job.
func (j *job) start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_SUSPENDED
	if err := cmd.Start(); err != nil {
		return err
	}
	if err := j.adopt(uint32(cmd.Process.Pid)); err != nil {
		cmd.Process.Kill() //nolint:errcheck // it never ran
		cmd.Wait()         //nolint:errcheck // reaps it and its output copiers
		return err
	}
	return nil
}

// adopt puts the suspended process pid into the job and resumes it.
func (j *job) adopt(pid uint32) error {
	p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, pid)
	if err != nil {
		return fmt.Errorf("opening process %d: %w", pid, err)
	}
	defer windows.CloseHandle(p) //nolint:errcheck // nothing to do about it
	if err := windows.AssignProcessToJobObject(j.h, p); err != nil {
		return fmt.Errorf("putting process %d into a job object: %w", pid, err)
	}
	return resumeProcess(pid)
}

// resumeProcess resumes the threads of a process created suspended: its
// main thread, the only one it has. Go's os/exec does not hand out the
// thread handle CreateProcess returned, so the thread is found by a
// snapshot.
func resumeProcess(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("listing the threads of process %d: %w", pid, err)
	}
	defer windows.CloseHandle(snap) //nolint:errcheck // nothing to do about it
	entry := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &entry); err == nil; err = windows.Thread32Next(snap, &entry) {
		if entry.OwnerProcessID != pid {
			continue
		}
		t, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, entry.ThreadID)
		if err != nil {
			return fmt.Errorf("opening thread %d of process %d: %w", entry.ThreadID, pid, err)
		}
		_, err = windows.ResumeThread(t)
		windows.CloseHandle(t) //nolint:errcheck // nothing to do about it
		if err != nil {
			return fmt.Errorf("resuming thread %d of process %d: %w", entry.ThreadID, pid, err)
		}
		resumed++
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return fmt.Errorf("listing the threads of process %d: %w", pid, err)
	}
	if resumed == 0 {
		return fmt.Errorf("process %d has no thread to resume", pid)
	}
	return nil
}

// terminate kills every process in the job.
func (j *job) terminate() error {
	if err := windows.TerminateJobObject(j.h, 1); err != nil {
		return fmt.Errorf("killing the processes of a job object: %w", err)
	}
	return nil
}

// close closes the job, which kills every process still in it.
func (j *job) close() {
	windows.CloseHandle(j.h) //nolint:errcheck // nothing to do about it
}
