package envtest_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capwin/capwin/test/envtest/apiserver"
)

// TestControlPlaneDiesWithItsTest: a test binary that times out (go test's
// -timeout panics it, and no cleanup runs) leaves no kube-apiserver or etcd
// behind, nor their data and certificate directories. It runs this test binary again as a helper that starts its
// environment (TestMain), lists the processes under it and waits for its
// 3 s timeout.
func TestControlPlaneDiesWithItsTest(t *testing.T) {
	if os.Getenv("CAPWIN_TIMEOUT_HELPER") != "" {
		for pid, name := range apiserver.Descendants(os.Getpid()) {
			fmt.Printf("process %d %s\n", pid, name)
		}
		fmt.Println("listed")
		time.Sleep(time.Hour)
		return
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to list processes with")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestControlPlaneDiesWithItsTest$", "-test.timeout=3s")
	cmd.Env = append(os.Environ(), "CAPWIN_TIMEOUT_HELPER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	var dirs []string
	names := map[string]bool{}
	listed := false
	s := bufio.NewScanner(out)
	for s.Scan() {
		var pid int
		var name string
		if n, _ := fmt.Sscanf(s.Text(), "process %d %s", &pid, &name); n == 2 && (name == "kube-apiserver" || name == "etcd") {
			pids = append(pids, pid)
			names[name] = true
			// The directories envtest made for it, while it runs.
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			for _, arg := range strings.Split(string(cmdline), "\x00") {
				if k, v, ok := strings.Cut(arg, "="); ok && (k == "--data-dir" || k == "--cert-dir") {
					dirs = append(dirs, v)
				}
			}
		}
		listed = listed || s.Text() == "listed"
	}
	err = cmd.Wait()
	// Whatever happens below, nothing of the helper's outlives this test.
	t.Cleanup(func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, d := range dirs {
			_ = os.RemoveAll(d)
		}
	})
	if !listed || !names["kube-apiserver"] || !names["etcd"] {
		t.Fatalf("the helper listed no kube-apiserver and etcd under it (%v, %v):\n%s", names, err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "test timed out after 3s") {
		t.Fatalf("the helper did not time out: %v\n%s", err, stderr.String())
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var alive []int
		for _, pid := range pids {
			if apiserver.Alive(pid) {
				alive = append(alive, pid)
			}
		}
		var left []string
		for _, d := range dirs {
			if _, err := os.Stat(d); err == nil {
				left = append(left, d)
			}
		}
		if len(alive) == 0 && len(left) == 0 {
			if len(dirs) < 2 {
				t.Fatalf("found %d data or certificate directories on the helper's command lines, want etcd's and kube-apiserver's", len(dirs))
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the timed-out test binary ended, its processes %v still run, its directories %v are still there", alive, left)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
