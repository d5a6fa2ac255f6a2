package cpi

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/vmware/govmomi/find"
	corev1 "k8s.io/api/core/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/capwin/capwin/platform/vsphere/vspheresim"
)

func TestParseConfig(t *testing.T) {
	const good = `
global:
  port: 8443
  secretName: vsphere-cloud-secret
  secretNamespace: kube-system
vcenter:
  "vc.example.com":
    server: "vc.example.com"
    datacenters: ["dc0"]
    thumbprint: "AA:BB"
`
	vc, err := ParseConfig([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	want := VCenter{Server: "vc.example.com", Port: 8443, Datacenters: []string{"dc0"}, Thumbprint: "AA:BB", SecretName: "vsphere-cloud-secret", SecretNamespace: "kube-system"}
	if vc.Server != want.Server || vc.Port != want.Port || strings.Join(vc.Datacenters, ",") != "dc0" || vc.Thumbprint != want.Thumbprint ||
		vc.SecretName != want.SecretName || vc.SecretNamespace != want.SecretNamespace || vc.Insecure {
		t.Errorf("got %+v, want %+v", *vc, want)
	}
	for name, tc := range map[string]struct{ conf, want string }{
		"zones":          {good + "labels:\n  region: k8s-region\n  zone: k8s-zone\n", "labels"},
		"node selection": {good + "nodes:\n  internalNetworkSubnetCIDR: 10.0.0.0/8\n", "nodes"},
		"two vCenters":   {strings.Replace(good, "vcenter:\n", "vcenter:\n  other:\n    datacenters: [dc1]\n", 1), "2 vcenter entries"},
		"no trust":       {strings.Replace(good, `    thumbprint: "AA:BB"`, "", 1), "neither a thumbprint nor insecureFlag"},
		"no secret":      {strings.Replace(good, "  secretName: vsphere-cloud-secret\n", "", 1), "secretName and secretNamespace"},
		"no datacenter":  {strings.Replace(good, `    datacenters: ["dc0"]`, "", 1), "no datacenters"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.conf))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error about %q", err, tc.want)
			}
		})
	}
}

// TestFindsVMsAsTheCPIDoes runs the simulated CPI against vcsim: a VM is
// found only once VMware Tools reported it, by the host name it reports,
// exactly; adapters without a device are not its addresses; it exists
// while its BIOS UUID finds it.
func TestFindsVMsAsTheCPIDoes(t *testing.T) {
	ctx := t.Context()
	v := vspheresim.StartT(t)
	host, port, _ := strings.Cut(v.Host, ":")
	cfg, err := ParseConfig([]byte("global:\n  port: " + port + "\n  secretName: s\n  secretNamespace: kube-system\nvcenter:\n  \"" + host + "\":\n    datacenters: [DC0]\n    thumbprint: \"" + v.Thumbprint + "\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg, map[string][]byte{host + ".username": []byte(vspheresim.User)}); err == nil {
		t.Error("credentials without a password accepted")
	}
	cloud, err := New(cfg, map[string][]byte{host + ".username": []byte(vspheresim.User), host + ".password": []byte(vspheresim.Password)})
	if err != nil {
		t.Fatal(err)
	}
	defer cloud.Logout(context.Background())
	lower := poweredOnClone(t, v, "node-a")
	upper := poweredOnClone(t, v, "node-b")

	if _, err := cloud.InstanceID(ctx, "node-a"); err == nil {
		t.Fatal("a VM found before VMware Tools reported its host name")
	}
	if err := v.ReportGuest(lower.ID, "node-a", []vspheresim.GuestNIC{{IPs: []string{"fe80::1", "10.1.2.3"}}, {IPs: []string{"172.29.240.1"}, Virtual: true}}); err != nil {
		t.Fatal(err)
	}
	if err := v.ReportGuest(upper.ID, "NODE-B", []vspheresim.GuestNIC{{IPs: []string{"10.1.2.4"}}}); err != nil {
		t.Fatal(err)
	}

	id, err := cloud.InstanceID(ctx, "node-a")
	if err != nil {
		t.Fatal(err)
	}
	if id != strings.ToLower(lower.BIOSUUID) {
		t.Errorf("InstanceID %s, want the BIOS UUID %s", id, lower.BIOSUUID)
	}
	addrs, err := cloud.NodeAddressesByProviderID(ctx, ProviderName+"://"+id)
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "node-a"}, {Type: corev1.NodeInternalIP, Address: "10.1.2.3"}, {Type: corev1.NodeExternalIP, Address: "10.1.2.3"}}
	if len(addrs) != len(want) {
		t.Fatalf("addresses %v, want %v", addrs, want)
	}
	for i := range want {
		if addrs[i] != want[i] {
			t.Errorf("addresses %v, want %v", addrs, want)
		}
	}
	if typ, err := cloud.InstanceType(ctx, "node-a"); err != nil || !strings.HasPrefix(typ, "vsphere-vm.cpu-") {
		t.Errorf("InstanceType %q, %v", typ, err)
	}

	// The search is for the lower-cased name; the CPI's cache, keyed by
	// the reported host name, is read by the name as given: a VM found
	// is still no Node's when the two differ in case.
	if _, err := cloud.InstanceID(ctx, "Node-A"); !errors.Is(err, ErrNodeNotFound) {
		t.Errorf("Node-A, whose guest reports node-a: got %v, want ErrNodeNotFound", err)
	}
	// A guest that reports NODE-B is not node-b's either: vCenter's search
	// ignores case and the cache then refuses it (ErrNodeNotFound);
	// vcsim's search does not ignore case (ErrNoVMFound).
	if _, err := cloud.InstanceID(ctx, "node-b"); !errors.Is(err, ErrNodeNotFound) && !errors.Is(err, ErrNoVMFound) {
		t.Errorf("node-b, whose guest reports NODE-B: got %v, want it not found", err)
	}

	exists, err := cloud.InstanceExistsByProviderID(ctx, ProviderName+"://"+id)
	if err != nil || !exists {
		t.Errorf("InstanceExistsByProviderID: %t, %v", exists, err)
	}
	if shut, err := cloud.InstanceShutdownByProviderID(ctx, ProviderName+"://"+id); err != nil || shut {
		t.Errorf("InstanceShutdownByProviderID of a running VM: %t, %v", shut, err)
	}
	exists, err = cloud.InstanceExistsByProviderID(ctx, ProviderName+"://42000000-0000-0000-0000-000000000000")
	if err != nil || exists {
		t.Errorf("InstanceExistsByProviderID of no VM: %t, %v", exists, err)
	}
	if name, err := cloud.CurrentNodeName(ctx, "node-a"); err != nil || name != k8stypes.NodeName("node-a") {
		t.Errorf("CurrentNodeName: %s, %v", name, err)
	}
}

func poweredOnClone(t *testing.T, v *vspheresim.VCenter, name string) vspheresim.VM {
	t.Helper()
	ctx := t.Context()
	if err := v.CloneVM(ctx, "/DC0/vm/DC0_H0_VM0", "/DC0/vm", name); err != nil {
		t.Fatal(err)
	}
	c, err := v.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Logout(context.Background()) }()
	vm, err := find.NewFinder(c.Client, true).VirtualMachine(ctx, "/DC0/vm/"+name)
	if err != nil {
		t.Fatal(err)
	}
	task, err := vm.PowerOn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	all, err := v.VMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range all {
		if o.Name == name {
			return o
		}
	}
	t.Fatalf("no VM %s", name)
	return vspheresim.VM{}
}
