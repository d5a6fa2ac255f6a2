package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/vim25/mo"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
	}

	vc, err := govmomi.NewClient(ctx, s.VCenter.URL(), true)
	if err != nil {
		t.Fatal(err)
	}
	for name, windows := range map[string]bool{WindowsTemplate: true, LinuxTemplate: false} {
		vm, err := find.NewFinder(vc.Client, true).VirtualMachine(ctx, "/DC0/vm/"+name)
		if err != nil {
			t.Fatal(err)
		}
		var o mo.VirtualMachine
		if err := vm.Properties(ctx, vm.Reference(), []string{"config.guestId"}, &o); err != nil {
			t.Fatal(err)
		}
		if got := strings.HasPrefix(o.Config.GuestId, "windows"); got != windows {
			t.Errorf("%s has guest ID %s", name, o.Config.GuestId)
		}
	}
	_ = vc.Logout(context.Background())

	start = time.Now()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %s", time.Since(start))
	if err := s.Stop(); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
}
