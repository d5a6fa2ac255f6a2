package sim

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwin/capwin/test/envtest"
)

// TestStartStop starts the simulation, checks that the kubeconfigs it
// writes reach both API servers and that the Windows template looks like
// Windows to the guests, and stops it, twice.
func TestStartStop(t *testing.T) {
	ctx := t.Context()
	start := time.Now()
	s, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("started in %s", time.Since(start))

	mgmt, workload, err := s.WriteKubeconfigs(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{mgmt: ControllerNamespace, workload: "kube-system"} {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			t.Fatal(err)
		}
		c, err := client.New(cfg, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, client.ObjectKey{Name: want}, &corev1.Namespace{}); err != nil {
			t.Errorf("%s: namespace %s: %v", path, want, err)
		}
		// The kubectl `make dev` tells people to use reaches it too.
		kubectl, err := envtest.Kubectl(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", path, "get", "namespace", want, "-o", "name").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "namespace/"+want {
			t.Errorf("%s --kubeconfig %s get namespace %s: %q, %v", kubectl, path, want, out, err)
		}
	}

	vms, err := s.VCenter.VMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	guestIDs := map[string]string{}
	for _, vm := range vms {
		guestIDs[vm.Name] = vm.GuestID
	}
	// The templates' builds, as the guests read them from the guest ID.
	for name, build := range map[string]string{WindowsTemplate: "10.0.20348", Windows2025Template: "10.0.26100", LinuxTemplate: ""} {
		id, ok := guestIDs[name]
		if !ok {
			t.Fatalf("no VM %s", name)
		}
		if got := guestBuilds[id]; got != build || strings.HasPrefix(id, "windows") != (build != "") {
			t.Errorf("%s has guest ID %s, of build %q; want build %q", name, id, got, build)
		}
	}

	start = time.Now()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %s", time.Since(start))
	if err := s.Stop(); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
}
