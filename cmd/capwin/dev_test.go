package main

import (
	"bytes"
	"cmp"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

// TestDevOnce runs `capwin dev --once` as `make dev DEV_ARGS=--once` does:
// the cluster comes up on the simulators, the Windows MachineDeployment
// reaches 3 and then 1 Running machines, the tree is printed, everything is
// torn down.
func TestDevOnce(t *testing.T) {
	var out bytes.Buffer
	err := runDev(t.Context(), devOptions{once: true, name: "dev", namespace: "default", bootDelay: 0, timeout: 3 * time.Minute, dir: t.TempDir()}, &out)
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`Scaling MachineDeployment dev-windows 0 -> 3`,
		// The nodes' own reports, read into HybridMachine status. A join
		// shows from its first report read until its Machine is Ready:
		// 0.6 to 1.6 s here, in lines printed every 250 ms.
		`(?m)^  \[\s*[0-9.]+m?s\] Windows machines: [^;\n]+; join: \d+ (waiting for report|[a-z-]+)`,
		`(?m)^3 Windows machines Running \(`,
		`Scaling MachineDeployment dev-windows 3 -> 1`,
		`(?m)^1 Windows machine Running \(`,
		`(?m)^Cluster/dev\s`,
		`(?m)^\s*│\s+└─Machine/dev-windows-\S+\s+True\s+True\s+Ready`,
		`(?m)^└─ClusterInfrastructure - HybridCluster/dev\s+True`,
		// Not Available only because the control plane is a stand-alone
		// Machine, said next to the tree.
		`(?m)^Cluster/dev's Available is Unknown only for its control plane: a stand-alone Machine here`,
		`(?m)^Tearing down\.\.\. done`,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("the output lacks %s", want)
		}
	}
	if n := len(regexp.MustCompile(`─Machine/dev-windows-`).FindAllString(out.String(), -1)); n != 1 {
		t.Errorf("the tree shows %d Windows Machines, want 1", n)
	}
}

// TestDevOnceClusterClass runs `make dev
// DEV_ARGS=--flavor=clusterclass-vsphere-windows`: Cluster API's topology
// controller makes the cluster from the ClusterClass, the Windows workers
// are scaled through the Cluster's topology, and the Cluster, whose control
// plane is the stand-in's KubeadmControlPlane, is Available.
func TestDevOnceClusterClass(t *testing.T) {
	var out bytes.Buffer
	err := runDev(t.Context(), devOptions{once: true, name: "dev", namespace: "default", platform: "vsphere", flavor: "clusterclass-vsphere-windows", timeout: 3 * time.Minute, dir: t.TempDir()}, &out)
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`from \S*templates/cluster-template-clusterclass-vsphere-windows\.yaml`,
		`1 ClusterClass`,
		`Scaling MachineDeployment dev-windows 0 -> 3 \(Cluster/dev's spec\.topology\.workers\.machineDeployments\[\d+\]\.replicas\)`,
		`(?m)^3 Windows machines Running \(`,
		`(?m)^1 Windows machine Running \(`,
		`(?m)^Cluster/dev\s+True\s+Available`,
		`(?m)^└─ControlPlane - KubeadmControlPlane/dev-control-plane\s+True\s+Available`,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("the output lacks %s", want)
		}
	}
	if strings.Contains(out.String(), "is not Available") || strings.Contains(out.String(), "Available is") {
		t.Error("the output says the Cluster is not Available")
	}
}

// TestDevFlavors: --flavor names a flavor of --platform that the
// simulation runs.
func TestDevFlavors(t *testing.T) {
	for _, c := range []struct {
		platform, flavor, err string
	}{
		{"vsphere", "", ""},
		{"", "", ""}, // as runDev's callers in tests leave it
		{"azure", "", ""},
		{"vsphere", "clusterclass-vsphere-windows", ""},
		{"vsphere", "azure-windows", "not a flavor of --platform=vsphere"},
		{"azure", "clusterclass-azure-windows", "with the vSphere ClusterClass only"},
		{"vsphere", "vsphere-linux", "no such file"},
	} {
		path, err := devTemplate(devOptions{platform: c.platform, flavor: c.flavor})
		switch {
		case c.err == "" && err != nil:
			t.Errorf("--platform=%s --flavor=%s: %v", c.platform, c.flavor, err)
		case c.err == "" && !strings.HasSuffix(path, "cluster-template-"+cmp.Or(c.flavor, cmp.Or(c.platform, "vsphere")+"-windows")+".yaml"):
			t.Errorf("--platform=%s --flavor=%s: %s", c.platform, c.flavor, path)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("--platform=%s --flavor=%s: error %v, want one saying %q", c.platform, c.flavor, err, c.err)
		}
	}
}

// TestJoinStep: what a progress line says of one Windows machine's join,
// from its HybridMachine's status.nodeBootstrap.
func TestJoinStep(t *testing.T) {
	provisioned := clusterv1.Machine{Status: clusterv1.MachineStatus{Initialization: clusterv1.MachineInitializationStatus{InfrastructureProvisioned: ptr.To(true)}}}
	deleting := provisioned
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	report := func(phase string, state infrav1.NodeBootstrapState) *infrav1.HybridMachine {
		return &infrav1.HybridMachine{Status: infrav1.HybridMachineStatus{NodeBootstrap: infrav1.NodeBootstrapStatus{Phase: phase, State: state}}}
	}
	for _, tc := range []struct {
		name  string
		m     clusterv1.Machine
		hm    *infrav1.HybridMachine
		ready bool
		want  string
	}{
		{"no HybridMachine yet", provisioned, nil, false, ""},
		{"VM not provisioned, no report", clusterv1.Machine{}, report("", ""), false, ""},
		{"VM provisioned, no report", provisioned, report("", ""), false, "waiting for report"},
		{"a phase runs", provisioned, report("discovery", infrav1.NodeBootstrapRunning), false, "discovery"},
		{"a phase failed", provisioned, report("discovery", infrav1.NodeBootstrapFailed), false, "discovery failed"},
		{"joined, Machine not Ready yet", provisioned, report("complete", infrav1.NodeBootstrapJoined), false, "complete"},
		{"Ready", provisioned, report("complete", infrav1.NodeBootstrapJoined), true, ""},
		{"being deleted", deleting, report("kubelet", infrav1.NodeBootstrapRunning), false, ""},
	} {
		if got := joinStep(&tc.m, tc.hm, tc.ready); got != tc.want {
			t.Errorf("%s: joinStep = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestJoinFailedEndsTheWait: a failure the stub will not run again ends
// make dev's wait with what the node said; one it will run again does not.
func TestJoinFailedEndsTheWait(t *testing.T) {
	hm := &infrav1.HybridMachine{ObjectMeta: metav1.ObjectMeta{Name: "dev-windows-a"}, Status: infrav1.HybridMachineStatus{NodeBootstrap: infrav1.NodeBootstrapStatus{
		Phase: "discovery", State: infrav1.NodeBootstrapFailed, Retryable: ptr.To(false),
		Message: "the cluster CA does not match any --discovery-token-ca-cert-hash",
	}}}
	m := &clusterv1.Machine{}
	err := joinFailed(m, hm, false)
	if err == nil {
		t.Fatal("a final join failure did not end the wait")
	}
	for _, want := range []string{"dev-windows-a", "discovery", "does not match"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q lacks %q", err, want)
		}
	}
	if err := joinFailed(m, hm, true); err != nil {
		t.Errorf("the failure of a Ready machine's node ended the wait: %v", err)
	}
	deleting := m.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	if err := joinFailed(deleting, hm, false); err != nil {
		t.Errorf("the failure of a machine being deleted ended the wait: %v", err)
	}
	hm.Status.NodeBootstrap.Retryable = ptr.To(true)
	if err := joinFailed(m, hm, false); err != nil {
		t.Errorf("a failure the stub runs again ended the wait: %v", err)
	}
	hm.Status.NodeBootstrap = infrav1.NodeBootstrapStatus{Phase: "kubelet", State: infrav1.NodeBootstrapRunning}
	if err := joinFailed(m, hm, false); err != nil {
		t.Errorf("a running join ended the wait: %v", err)
	}
}
