// Package admission_test drives capwin's webhooks through a real API server's
// admission chain: defaulting, schema validation and validation.
package admission_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/test/envtest"
	"github.com/capwin/capwin/webhooks"
)

var env *envtest.Environment

func TestMain(m *testing.M) {
	os.Exit(envtest.Run(m, &env, envtest.Options{Webhooks: true}, func(mgr ctrl.Manager) error {
		return errors.Join(webhooks.SetupInfrastructure(mgr), webhooks.SetupBootstrap(mgr))
	}))
}

// TestExamplesDryRun server-side dry-runs every example in docs/examples
// through the real admission chain (defaulting webhook, schema, validating
// webhook), as `kubectl apply --dry-run=server` does.
func TestExamplesDryRun(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newNamespace(t)
	files, err := filepath.Glob(filepath.Join(envtest.RepoRoot(), "docs", "examples", "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).NotTo(BeEmpty())

	kinds := map[string]bool{}
	for _, f := range files {
		for _, obj := range readObjects(t, f) {
			if obj.GetNamespace() == "" && obj.GetKind() != "HybridClusterIdentity" {
				obj.SetNamespace(ns)
			}
			err := env.Client.Create(ctx, obj, client.DryRunAll)
			g.Expect(err).NotTo(HaveOccurred(), "%s: %s %s", filepath.Base(f), obj.GetKind(), obj.GetName())
			kinds[obj.GetKind()] = true
		}
	}
	// One valid example of every kind.
	g.Expect(kinds).To(HaveKey("HybridCluster"))
	g.Expect(kinds).To(HaveKey("HybridClusterTemplate"))
	g.Expect(kinds).To(HaveKey("HybridClusterIdentity"))
	g.Expect(kinds).To(HaveKey("HybridMachine"))
	g.Expect(kinds).To(HaveKey("HybridMachineTemplate"))
	g.Expect(kinds).To(HaveKey("WindowsKubeadmConfig"))
	g.Expect(kinds).To(HaveKey("WindowsKubeadmConfigTemplate"))
}

func TestDefaultsApplied(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newNamespace(t)

	m := windowsVSphereMachine(ns)
	g.Expect(env.Client.Create(ctx, m, client.DryRunAll)).To(Succeed())
	g.Expect(m.Spec.OS.WindowsBuild).To(Equal("10.0.20348"))
	g.Expect(m.Spec.VSphere.CloneMode).To(Equal(infrav1.FullClone))
	g.Expect(m.Labels).To(HaveKeyWithValue(infrav1.PlatformLabel, infrav1.PlatformVSphere))

	c := windowsConfig(ns)
	g.Expect(env.Client.Create(ctx, c, client.DryRunAll)).To(Succeed())
	g.Expect(c.Spec.Containerd.Runtime).To(Equal("containerd"))
	g.Expect(c.Spec.Network.CNI).To(Equal(bootstrapv1.Flannel))
	g.Expect(c.Spec.Network.Mode).To(Equal(bootstrapv1.Overlay))
	g.Expect(c.Spec.Network.VXLAN).To(Equal(bootstrapv1.VXLANSpec{VNI: 4096, Port: 4789}))
	g.Expect(c.Spec.KubeProxy.Mode).To(Equal(bootstrapv1.KernelspaceProxy))
	reserved := c.Spec.Kubelet.SystemReserved.Memory().DeepCopy()
	reserved.Add(*c.Spec.Kubelet.KubeReserved.Memory())
	g.Expect(reserved.Cmp(resource.MustParse("2Gi"))).To(BeNumerically(">=", 0), "default reservations total %s", reserved.String())
}

// badInput is an object that admission must refuse, naming field in a cause
// whose message contains want.
type badInput struct {
	name  string
	obj   func(ns string) client.Object
	field string
	want  string
}

func TestBadInputRejected(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t)

	// A Cluster with IPv6 pods, and one dual-stack, for the overlay rule.
	for name, pods := range map[string][]string{"v6": {"fd00:10:244::/56"}, "dual": {"10.244.0.0/16", "fd00:10:244::/56"}} {
		c := &clusterv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       clusterv1.ClusterSpec{ClusterNetwork: clusterv1.ClusterNetwork{Pods: clusterv1.NetworkRanges{CIDRBlocks: pods}}},
		}
		if err := env.Client.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	// An identity that allows another namespace only.
	identity := &infrav1.HybridClusterIdentity{
		ObjectMeta: metav1.ObjectMeta{Name: "only-team-b-" + ns},
		Spec: infrav1.HybridClusterIdentitySpec{
			SecretName:        "creds",
			AllowedNamespaces: &infrav1.AllowedNamespaces{NamespaceList: []string{"team-b"}},
		},
	}
	if err := env.Client.Create(ctx, identity); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), identity) })

	tests := []badInput{
		{"machine without platform", func(ns string) client.Object {
			m := windowsVSphereMachine(ns)
			m.Spec.VSphere = nil
			return m
		}, "spec", "exactly one of spec.vsphere or spec.azure"},
		{"machine with two platforms", func(ns string) client.Object {
			m := windowsVSphereMachine(ns)
			m.Spec.Azure = azureMachineSpec()
			return m
		}, "spec.azure", "exactly one of spec.vsphere or spec.azure"},
		{"cluster without platform", func(ns string) client.Object {
			c := vsphereCluster(ns)
			c.Spec.VSphere = nil
			return c
		}, "spec", "exactly one of spec.vsphere or spec.azure"},
		{"cluster with two platforms", func(ns string) client.Object {
			c := vsphereCluster(ns)
			c.Spec.Azure = azureClusterSpec()
			return c
		}, "spec.azure", "exactly one"},
		{"windows control-plane machine", func(ns string) client.Object {
			m := windowsVSphereMachine(ns)
			m.Labels = map[string]string{clusterv1.MachineControlPlaneLabel: ""}
			return m
		}, "spec.os.type", "the control plane is Linux only"},
		{"windows config for a control-plane machine", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Labels = map[string]string{clusterv1.MachineControlPlaneLabel: ""}
			return c
		}, "metadata.labels[cluster.x-k8s.io/control-plane]", "the control plane is Linux only"},
		{"unknown windows release", func(ns string) client.Object {
			m := windowsVSphereMachine(ns)
			m.Spec.OS.WindowsRelease = "ltsc2016"
			return m
		}, "spec.os.windowsRelease", `supported values: "ltsc2019", "ltsc2022", "ltsc2025"`},
		{"windows build of another release", func(ns string) client.Object {
			m := windowsVSphereMachine(ns)
			m.Spec.OS.WindowsBuild = "10.0.17763"
			return m
		}, "spec.os.windowsBuild", "build 10.0.20348"},
		{"windows release on a linux machine", func(ns string) client.Object {
			m := windowsVSphereMachine(ns)
			m.Spec.OS.Type = infrav1.OSLinux
			return m
		}, "spec.os.windowsRelease", "only a Windows machine"},
		{"docker runtime", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.Containerd.Runtime = "docker"
			return c
		}, "spec.containerd.runtime", "dockershim was removed"},
		{"SSH key that is not an authorized_keys line", func(ns string) client.Object {
			m := windowsVSphereMachine(ns)
			m.Spec.SSHAuthorizedKeys = []string{sshKey, "AAAAC3NzaC1lZDI1NTE5AAAAILkF1Ms6BeuCAVt6oFYilabd0bpA5fjYB3Op9jIsDcVi"}
			return m
		}, "spec.sshAuthorizedKeys[1]", "must be one authorized_keys line"},
		{"two SSH keys in one entry of a template", func(ns string) client.Object {
			t := machineTemplate(ns)
			t.Spec.Template.Spec.SSHAuthorizedKeys = []string{sshKey + "\n" + sshKey}
			return t
		}, "spec.template.spec.sshAuthorizedKeys[0]", "give each key its own entry"},
		{"Hyper-V isolation", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.Containerd.Isolation = bootstrapv1.HyperVIsolation
			return c
		}, "spec.containerd.isolation", "not supported on vSphere until capwin builds it end to end"},
		{"Hyper-V isolation in a template", func(ns string) client.Object {
			t := &bootstrapv1.WindowsKubeadmConfigTemplate{ObjectMeta: metav1.ObjectMeta{Name: "hyperv", Namespace: ns}}
			t.Spec.Template.Spec.Containerd.Isolation = bootstrapv1.HyperVIsolation
			return t
		}, "spec.template.spec.containerd.isolation", "not supported on vSphere until capwin builds it end to end"},
		{"overlay in an IPv6 cluster", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Labels = map[string]string{clusterv1.ClusterNameLabel: "v6"}
			return c
		}, "spec.network.mode", "IPv4 only"},
		{"overlay in a dual-stack cluster", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Labels = map[string]string{clusterv1.ClusterNameLabel: "dual"}
			return c
		}, "spec.network.mode", "dual-stack clusters need mode l2bridge"},
		{"overlay with an IPv6 node subnet", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.Network.NodeSubnet = "fd00:1::/64"
			return c
		}, "spec.network.nodeSubnet", "IPv4 only"},
		{"flannel VNI windows cannot use", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.Network.VXLAN.VNI = 1
			return c
		}, "spec.network.vxlan.vni", "only VNI 4096"},
		{"flannel VXLAN port windows cannot use", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.Network.VXLAN.Port = 8472
			return c
		}, "spec.network.vxlan.port", "only UDP port 4789"},
		{"CNI mode that does not exist", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.Network.Mode = "vxlan"
			return c
		}, "spec.network.mode", `supported values: "overlay", "l2bridge"`},
		{"CNI that does not exist", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.Network.CNI = "weave"
			return c
		}, "spec.network.cni", `supported values: "flannel", "calico"`},
		{"memory reservations below 2Gi", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.Kubelet.SystemReserved = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}
			c.Spec.Kubelet.KubeReserved = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}
			return c
		}, "spec.kubelet", "at least 2Gi"},
		{"kubelet flag windows does not implement", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.NodeRegistration.KubeletExtraArgs = []bootstrapv1.Arg{{Name: "enforce-node-allocatable", Value: ptr.To("pods")}}
			return c
		}, "spec.nodeRegistration.kubeletExtraArgs[0].name", "Windows does not implement it"},
		{"kubelet flag with a field of its own, spelled with underscores", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.NodeRegistration.KubeletExtraArgs = []bootstrapv1.Arg{{Name: "--system_reserved", Value: ptr.To("memory=1Gi")}}
			return c
		}, "spec.nodeRegistration.kubeletExtraArgs[0].name", "set spec.kubelet.systemReserved instead"},
		{"kubelet flag the node agent sets", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.NodeRegistration.KubeletExtraArgs = []bootstrapv1.Arg{{Name: "kubeconfig", Value: ptr.To(`C:\evil.conf`)}}
			return c
		}, "spec.nodeRegistration.kubeletExtraArgs[0].name", "set by capwin-node and cannot be overridden"},
		{"kube-proxy flag the node agent sets", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.KubeProxy.ExtraArgs = []bootstrapv1.Arg{{Name: "source-vip", Value: ptr.To("10.0.0.1")}}
			return c
		}, "spec.kubeProxy.extraArgs[0].name", "set by capwin-node and cannot be overridden"},
		{"node subnet that does not parse", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.Network.NodeSubnet = "10.0.0.0/33"
			return c
		}, "spec.network.nodeSubnet", "must be a CIDR"},
		{"azure network CIDR that does not parse", func(ns string) client.Object {
			c := vsphereCluster(ns)
			c.Spec.VSphere = nil
			c.Spec.Azure = azureClusterSpec()
			c.Spec.Azure.Network.CIDRBlocks = []string{"10.1.0.0"}
			return c
		}, "spec.azure.network.cidrBlocks[0]", "must be a CIDR"},
		{"static address that does not parse", func(ns string) client.Object {
			m := windowsVSphereMachine(ns)
			m.Spec.VSphere.Network[0] = infrav1.VSphereNetworkDevice{NetworkName: "VM Network", IPAddrs: []string{"10.0.0.300/24"}}
			return m
		}, "spec.vsphere.network[0].ipAddrs[0]", "must be a CIDR"},
		{"file path that is not absolute", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.Files = []bootstrapv1.File{{Path: `etc\app.conf`, Content: "x"}}
			return c
		}, "spec.files[0].path", "absolute Windows path"},
		{"file path that climbs out", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.Files = []bootstrapv1.File{{Path: `C:\etc\..\Windows\System32\drivers\etc\hosts`, Content: "x"}}
			return c
		}, "spec.files[0].path", `must not contain ".."`},
		{"identity that does not allow the namespace", func(ns string) client.Object {
			c := vsphereCluster(ns)
			c.Spec.VSphere.IdentityRef = infrav1.IdentityReference{Kind: infrav1.ClusterIdentity, Name: identity.Name}
			return c
		}, "spec.vsphere.identityRef.name", "does not allow namespace"},
		{"azure VM size empty", func(ns string) client.Object {
			m := windowsVSphereMachine(ns)
			m.Spec.VSphere = nil
			m.Spec.Azure = azureMachineSpec()
			m.Spec.Azure.VMSize = ""
			return m
		}, "spec.azure.vmSize", "Required value"},
		{"vSphere CPUs negative", func(ns string) client.Object {
			m := windowsVSphereMachine(ns)
			m.Spec.VSphere.NumCPUs = -2
			return m
		}, "spec.vsphere.numCPUs", "greater than or equal to 1"},
		{"vSphere memory zero", func(ns string) client.Object {
			m := windowsVSphereMachine(ns)
			m.Spec.VSphere.MemoryMiB = 0
			return m
		}, "spec.vsphere.memoryMiB", "Required value"},
		{"Windows computer name over 15 characters", func(ns string) client.Object {
			m := windowsVSphereMachine(ns)
			m.Spec.ComputerName = "win1-windows-pool-0"
			return m
		}, "spec.computerName", "at most 15 characters"},
		{"computer name in a template", func(ns string) client.Object {
			t := machineTemplate(ns)
			t.Spec.Template.Spec.ComputerName = "win1"
			return t
		}, "spec.template.spec.computerName", "every machine made from it would get the same one"},
		{"vCenter both pinned and insecure", func(ns string) client.Object {
			c := vsphereCluster(ns)
			c.Spec.VSphere.Insecure = ptr.To(true)
			return c
		}, "spec.vsphere.insecure", "cannot also be insecure"},
		{"upper-case computer name", func(ns string) client.Object {
			m := windowsVSphereMachine(ns)
			m.Spec.ComputerName = "WIN-NODE1"
			return m
		}, "spec.computerName", "lower-case"},
		{"static addresses in a template", func(ns string) client.Object {
			t := machineTemplate(ns)
			t.Spec.Template.Spec.VSphere.Network = []infrav1.VSphereNetworkDevice{{NetworkName: "VM Network", IPAddrs: []string{"10.0.0.10/24"}}}
			return t
		}, "spec.template.spec.vsphere.network[0].ipAddrs", "the same ones"},
		{"Linux machine with Azure Hybrid Benefit", func(ns string) client.Object {
			m := windowsVSphereMachine(ns)
			m.Spec.OS = infrav1.OSSpec{Type: infrav1.OSLinux}
			m.Spec.VSphere = nil
			m.Spec.Azure = azureMachineSpec()
			m.Spec.Azure.LicenseType = infrav1.LicenseWindowsServer
			return m
		}, "spec.azure.licenseType", "Windows machines only"},
		{"bootstrap payload over the user-data limit", func(ns string) client.Object {
			c := windowsConfig(ns)
			big := strings.Repeat("x", 30000)
			c.Spec.Files = []bootstrapv1.File{{Path: `C:\a.txt`, Content: big}, {Path: `C:\b.txt`, Content: big}}
			return c
		}, "spec.files", "over the 65535 byte user-data limit"},
		{"gMSA, which capwin does not implement yet", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.GMSA.Enabled = ptr.To(true)
			return c
		}, "spec.gmsa.enabled", "gMSA is not implemented yet"},

		// What the kubelet refuses in --node-labels, or lets replace the
		// host's own labels (issue 19).
		{"node label in the kubernetes.io namespace", func(ns string) client.Object {
			return configWithLabels(ns, map[string]string{"kubernetes.io/role": "worker"})
		}, "spec.nodeRegistration.labels[kubernetes.io/role]", "the kubelet refuses labels in the kubernetes.io and k8s.io namespaces"},
		{"node label in a k8s.io subdomain", func(ns string) client.Object {
			return configWithLabels(ns, map[string]string{"team.k8s.io/owner": "a"})
		}, "spec.nodeRegistration.labels[team.k8s.io/owner]", "except under kubelet.kubernetes.io or node.kubernetes.io"},
		{"node role label", func(ns string) client.Object {
			return configWithLabels(ns, map[string]string{"node-role.kubernetes.io/worker": ""})
		}, "spec.nodeRegistration.labels[node-role.kubernetes.io/worker]", "which Cluster API copies to the Node"},
		{"node role label in a template", func(ns string) client.Object {
			t := &bootstrapv1.WindowsKubeadmConfigTemplate{ObjectMeta: metav1.ObjectMeta{GenerateName: "role-", Namespace: ns}}
			t.Spec.Template.Spec.NodeRegistration.Labels = map[string]string{"node-role.kubernetes.io/windows": ""}
			return t
		}, "spec.template.spec.nodeRegistration.labels[node-role.kubernetes.io/windows]", "the kubelet refuses node-role.kubernetes.io/ labels"},
		{"node-restriction label", func(ns string) client.Object {
			return configWithLabels(ns, map[string]string{"node-restriction.kubernetes.io/pool": "gpu"})
		}, "spec.nodeRegistration.labels[node-restriction.kubernetes.io/pool]", "the NodeRestriction admission plugin refuses them from a node"},
		{"a Windows node labelled Linux", func(ns string) client.Object {
			return configWithLabels(ns, map[string]string{"kubernetes.io/os": "linux"})
		}, "spec.nodeRegistration.labels[kubernetes.io/os]", "a capwin Windows node's kubernetes.io/os is windows"},
		{"node label for another architecture", func(ns string) client.Object {
			return configWithLabels(ns, map[string]string{"kubernetes.io/arch": "arm64"})
		}, "spec.nodeRegistration.labels[kubernetes.io/arch]", "kubernetes.io/arch is amd64"},
		{"node label with the Windows build", func(ns string) client.Object {
			return configWithLabels(ns, map[string]string{"node.kubernetes.io/windows-build": "10.0.17763"})
		}, "spec.nodeRegistration.labels[node.kubernetes.io/windows-build]", "the kubelet sets node.kubernetes.io/windows-build from the host"},
		{"node label with the host name", func(ns string) client.Object {
			return configWithLabels(ns, map[string]string{"kubernetes.io/hostname": "win-1"})
		}, "spec.nodeRegistration.labels[kubernetes.io/hostname]", "the kubelet sets kubernetes.io/hostname from the host"},
		{"node label that is not a label", func(ns string) client.Object {
			return configWithLabels(ns, map[string]string{"example.com/pool": "a,b=c"})
		}, "spec.nodeRegistration.labels", "a valid label must be an empty string or consist of alphanumeric characters"},

		// What the API server refuses in the Node the kubelet registers.
		{"two taints of one key and effect", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.NodeRegistration.Taints = []corev1.Taint{
				{Key: "os", Value: "windows", Effect: corev1.TaintEffectNoSchedule},
				{Key: "os", Value: "win", Effect: corev1.TaintEffectNoSchedule},
			}
			return c
		}, "spec.nodeRegistration.taints[1]", "taints[0] has the same key and effect"},
		{"the taint the kubelet adds with an external cloud provider", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.NodeRegistration.KubeletExtraArgs = []bootstrapv1.Arg{{Name: "cloud-provider", Value: ptr.To("external")}}
			c.Spec.NodeRegistration.Taints = []corev1.Taint{{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
			return c
		}, "spec.nodeRegistration.taints[0]", "the kubelet adds this taint itself"},
		{"taint key that is not a qualified name", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.NodeRegistration.Taints = []corev1.Taint{{Key: "os windows", Effect: corev1.TaintEffectNoSchedule}}
			return c
		}, "spec.nodeRegistration.taints[0].key", "name part must consist of alphanumeric characters"},

		// Flags the kubelet or kube-proxy would exit on.
		{"kubelet flag in upper case", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.NodeRegistration.KubeletExtraArgs = []bootstrapv1.Arg{{Name: "Max-Pods", Value: ptr.To("50")}}
			return c
		}, "spec.nodeRegistration.kubeletExtraArgs[0].name", `kubelet would exit with "unknown flag: --Max-Pods"`},
		{"kube-proxy flag in upper case", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.KubeProxy.ExtraArgs = []bootstrapv1.Arg{{Name: "--V", Value: ptr.To("4")}}
			return c
		}, "spec.kubeProxy.extraArgs[0].name", "kube-proxy flags are lower case"},
		{"kubelet flag removed with dockershim", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.NodeRegistration.KubeletExtraArgs = []bootstrapv1.Arg{{Name: "network-plugin", Value: ptr.To("cni")}}
			return c
		}, "spec.nodeRegistration.kubeletExtraArgs[0].name", "removed from the kubelet with dockershim in Kubernetes 1.24"},
		{"kubelet flag removed in 1.35", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.NodeRegistration.KubeletExtraArgs = []bootstrapv1.Arg{{Name: "--pod-infra-container-image", Value: ptr.To("mcr.microsoft.com/oss/kubernetes/pause:3.10")}}
			return c
		}, "spec.nodeRegistration.kubeletExtraArgs[0].name", "set spec.containerd.pauseImage instead"},
		{"kubelet told not to register", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.NodeRegistration.KubeletExtraArgs = []bootstrapv1.Arg{{Name: "register-node", Value: ptr.To("false")}}
			return c
		}, "spec.nodeRegistration.kubeletExtraArgs[0].name", "the join never ends"},
		{"one kubelet flag twice, spelled two ways", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.NodeRegistration.KubeletExtraArgs = []bootstrapv1.Arg{{Name: "max-pods", Value: ptr.To("50")}, {Name: "--max_pods", Value: ptr.To("60")}}
			return c
		}, "spec.nodeRegistration.kubeletExtraArgs[1].name", "give it once (kubelet keeps only the last value"},
		{"kubelet flag name with a value in it", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.NodeRegistration.KubeletExtraArgs = []bootstrapv1.Arg{{Name: "v=4", Value: ptr.To("")}}
			return c
		}, "spec.nodeRegistration.kubeletExtraArgs[0].name", "is not a flag name"},
		{"kubelet flag name with a space", func(ns string) client.Object {
			c := windowsConfig(ns)
			c.Spec.NodeRegistration.KubeletExtraArgs = []bootstrapv1.Arg{{Name: "max pods", Value: ptr.To("50")}}
			return c
		}, "spec.nodeRegistration.kubeletExtraArgs[0].name", "is not a flag name"},

		// A Windows VM too small for what the node sets aside.
		{"Windows VM with the memory the node reserves", func(ns string) client.Object {
			m := windowsVSphereMachine(ns)
			m.Spec.VSphere.MemoryMiB = 2048
			return m
		}, "spec.vsphere.memoryMiB", "a Windows node needs at least 3572 MiB"},
		{"Windows template with too little memory", func(ns string) client.Object {
			t := machineTemplate(ns)
			t.Spec.Template.Spec.VSphere.MemoryMiB = 3072
			return t
		}, "spec.template.spec.vsphere.memoryMiB", "a Windows node needs at least 3572 MiB"},
		{"Windows VM with one CPU", func(ns string) client.Object {
			m := windowsVSphereMachine(ns)
			m.Spec.VSphere.NumCPUs = 1
			return m
		}, "spec.vsphere.numCPUs", "a Windows node needs at least 2 CPUs"},
		{"VM memory that is not a multiple of 4 MB", func(ns string) client.Object {
			m := windowsVSphereMachine(ns)
			m.Spec.OS = infrav1.OSSpec{Type: infrav1.OSLinux}
			m.Spec.VSphere.MemoryMiB = 4095
			return m
		}, "spec.vsphere.memoryMiB", "not a multiple of 4 MB"},

		// Static networks that cannot route, or that the guest cannot apply.
		{"gateway outside the device's subnets", func(ns string) client.Object {
			return staticMachine(ns, infrav1.VSphereNetworkDevice{IPAddrs: []string{"10.0.0.10/24"}, Gateway4: "10.0.1.1"})
		}, "spec.vsphere.network[0].gateway4", "is not inside the subnet of any of the device's IPv4 addresses (10.0.0.10/24)"},
		{"IPv4 gateway with IPv6 addresses only", func(ns string) client.Object {
			return staticMachine(ns, infrav1.VSphereNetworkDevice{IPAddrs: []string{"fd00:1::10/64"}, Gateway4: "10.0.0.1"})
		}, "spec.vsphere.network[0].gateway4", "the device has no static IPv4 address"},
		{"IPv6 address as gateway4", func(ns string) client.Object {
			return staticMachine(ns, infrav1.VSphereNetworkDevice{IPAddrs: []string{"10.0.0.10/24"}, Gateway4: "fd00:1::1"})
		}, "spec.vsphere.network[0].gateway4", "gateway4 is the IPv4 gateway"},
		{"gateway that is the node's own address", func(ns string) client.Object {
			return staticMachine(ns, infrav1.VSphereNetworkDevice{IPAddrs: []string{"10.0.0.10/24"}, Gateway4: "10.0.0.10"})
		}, "spec.vsphere.network[0].gateway4", "is the device's own address"},
		{"gateway that is the subnet's broadcast address", func(ns string) client.Object {
			return staticMachine(ns, infrav1.VSphereNetworkDevice{IPAddrs: []string{"10.0.0.10/24"}, Gateway4: "10.0.0.255"})
		}, "spec.vsphere.network[0].gateway4", "is the broadcast address of 10.0.0.0/24"},
		{"static address without a prefix length", func(ns string) client.Object {
			return staticMachine(ns, infrav1.VSphereNetworkDevice{IPAddrs: []string{"10.0.0.10"}})
		}, "spec.vsphere.network[0].ipAddrs[0]", "a static address needs its prefix length"},
		{"static address that is the subnet's network address", func(ns string) client.Object {
			return staticMachine(ns, infrav1.VSphereNetworkDevice{IPAddrs: []string{"10.0.0.0/24"}})
		}, "spec.vsphere.network[0].ipAddrs[0]", "is the network address of 10.0.0.0/24"},
		{"loopback static address", func(ns string) client.Object {
			return staticMachine(ns, infrav1.VSphereNetworkDevice{IPAddrs: []string{"127.0.0.2/8"}})
		}, "spec.vsphere.network[0].ipAddrs[0]", "must be a unicast address the node can be reached at"},
		{"one address on two devices", func(ns string) client.Object {
			m := staticMachine(ns, infrav1.VSphereNetworkDevice{IPAddrs: []string{"10.0.0.10/24"}})
			m.Spec.VSphere.Network = append(m.Spec.VSphere.Network, infrav1.VSphereNetworkDevice{NetworkName: "storage", IPAddrs: []string{"10.0.0.10/16"}})
			return m
		}, "spec.vsphere.network[1].ipAddrs[0]", "spec.vsphere.network[0].ipAddrs[0] names the address 10.0.0.10 already"},
		{"two IPv4 addresses on one Windows device", func(ns string) client.Object {
			return staticMachine(ns, infrav1.VSphereNetworkDevice{IPAddrs: []string{"10.0.0.10/24", "10.0.0.11/24"}})
		}, "spec.vsphere.network[0].ipAddrs", "only the last would remain"},
		{"DHCP and a static IPv4 address on one Windows device", func(ns string) client.Object {
			return staticMachine(ns, infrav1.VSphereNetworkDevice{DHCP4: ptr.To(true), IPAddrs: []string{"10.0.0.10/24"}})
		}, "spec.vsphere.network[0].dhcp4", "cloudbase-init turns DHCP off"},
		{"nameserver that is not an IP address", func(ns string) client.Object {
			return staticMachine(ns, infrav1.VSphereNetworkDevice{IPAddrs: []string{"10.0.0.10/24"}, Nameservers: []string{"dns.example.com"}})
		}, "spec.vsphere.network[0].nameservers[0]", "must be an IP address"},

		// What Azure refuses when the VM is created.
		{"Azure VM size without its tier", func(ns string) client.Object {
			m := windowsVSphereMachine(ns)
			m.Spec.VSphere = nil
			m.Spec.Azure = azureMachineSpec()
			m.Spec.Azure.VMSize = "D4s_v5"
			return m
		}, "spec.azure.vmSize", "Azure names a VM size Standard_<size> or Basic_<size>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectRejected(t, env.Client.Create(t.Context(), tt.obj(ns), client.DryRunAll), tt.field, tt.want)
		})
	}
}

// TestAcceptedInput: things a user writes that must be admitted.
func TestAcceptedInput(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newNamespace(t)

	// SSH keys, on a machine and in a template.
	m := windowsVSphereMachine(ns)
	m.Spec.SSHAuthorizedKeys = []string{sshKey, `from="10.0.0.0/8" ` + sshKey}
	g.Expect(env.Client.Create(ctx, m, client.DryRunAll)).To(Succeed())
	tmpl := machineTemplate(ns)
	tmpl.Spec.Template.Spec.SSHAuthorizedKeys = []string{sshKey}
	g.Expect(env.Client.Create(ctx, tmpl, client.DryRunAll)).To(Succeed())

	// Node labels the kubelet accepts, the taint os=windows, and kubelet
	// flags the flavors pass.
	cfg := configWithLabels(ns, map[string]string{
		"node.kubernetes.io/pool":     "win",
		"kubelet.kubernetes.io/tier":  "a",
		"topology.kubernetes.io/zone": "z1",
		"kubernetes.io/os":            "windows",
		"example.com/team":            "b",
	})
	cfg.Spec.NodeRegistration.Taints = []corev1.Taint{
		{Key: "os", Value: "windows", Effect: corev1.TaintEffectNoSchedule},
		{Key: "os", Value: "windows", Effect: corev1.TaintEffectNoExecute},
	}
	cfg.Spec.NodeRegistration.KubeletExtraArgs = []bootstrapv1.Arg{{Name: "cloud-provider", Value: ptr.To("external")}, {Name: "max-pods", Value: ptr.To("60")}}
	g.Expect(env.Client.Create(ctx, cfg, client.DryRunAll)).To(Succeed())

	// Static addresses: one IPv4 and one IPv6 on a Windows device, the
	// gateway in the IPv4 subnet; a Linux device may have more, and DHCP
	// besides.
	g.Expect(env.Client.Create(ctx, staticMachine(ns, infrav1.VSphereNetworkDevice{
		IPAddrs: []string{"10.0.0.10/24", "fd00:1::10/64"}, Gateway4: "10.0.0.1", Nameservers: []string{"10.0.0.2"},
	}), client.DryRunAll)).To(Succeed())
	linux := staticMachine(ns, infrav1.VSphereNetworkDevice{DHCP4: ptr.To(true), IPAddrs: []string{"10.0.0.10/24", "10.0.1.10/24"}, Gateway4: "10.0.1.1"})
	linux.Spec.OS = infrav1.OSSpec{Type: infrav1.OSLinux}
	linux.Spec.VSphere.NumCPUs, linux.Spec.VSphere.MemoryMiB = 1, 2048
	g.Expect(env.Client.Create(ctx, linux, client.DryRunAll)).To(Succeed())

	// The smallest Windows VM, and an Azure constrained-vCPU size.
	small := windowsVSphereMachine(ns)
	small.Spec.VSphere.NumCPUs, small.Spec.VSphere.MemoryMiB = 2, 3572
	g.Expect(env.Client.Create(ctx, small, client.DryRunAll)).To(Succeed())
	az := windowsVSphereMachine(ns)
	az.Spec.VSphere = nil
	az.Spec.Azure = azureMachineSpec()
	az.Spec.Azure.VMSize = "Standard_E4-2ds_v4"
	g.Expect(env.Client.Create(ctx, az, client.DryRunAll)).To(Succeed())

	// A vCenter with a CA-signed certificate and a port: no thumbprint needed.
	c := vsphereCluster(ns)
	c.Spec.VSphere.Server = "vcenter.example.com:8443"
	c.Spec.VSphere.Thumbprint = ""
	g.Expect(env.Client.Create(ctx, c, client.DryRunAll)).To(Succeed())

	// An identity that stops allowing the namespace does not block updates
	// (finalizers, labels) of a cluster that already uses it.
	identity := &infrav1.HybridClusterIdentity{
		ObjectMeta: metav1.ObjectMeta{Name: "open-" + ns},
		Spec:       infrav1.HybridClusterIdentitySpec{SecretName: "creds", AllowedNamespaces: &infrav1.AllowedNamespaces{NamespaceList: []string{ns}}},
	}
	g.Expect(env.Client.Create(ctx, identity)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), identity) })
	c = vsphereCluster(ns)
	c.Spec.VSphere.IdentityRef = infrav1.IdentityReference{Kind: infrav1.ClusterIdentity, Name: identity.Name}
	g.Expect(env.Client.Create(ctx, c)).To(Succeed())
	identity.Spec.AllowedNamespaces = &infrav1.AllowedNamespaces{NamespaceList: []string{"someone-else"}}
	g.Expect(env.Client.Update(ctx, identity)).To(Succeed())
	c.Labels = map[string]string{"touched": "yes"}
	g.Expect(env.Client.Update(ctx, c)).To(Succeed())
}

// TestSecretsNotEchoed: a refused proxy URL's password or a mirror URL's
// signed query is not repeated in the error the API server returns and logs.
func TestSecretsNotEchoed(t *testing.T) {
	ns := newNamespace(t)
	c := windowsConfig(ns)
	c.Spec.Proxy.HTTPSProxy = "ftp://alice:hunter2@proxy.example.com:3128"
	c.Spec.Containerd.RegistryMirrors = []bootstrapv1.RegistryMirror{{Registry: "docker.io", Endpoints: []string{"ftp://store.example.com/v2?sig=SECRETSIG"}}}
	err := env.Client.Create(t.Context(), c, client.DryRunAll)
	expectRejected(t, err, "spec.proxy.httpsProxy", "scheme must be")
	expectRejected(t, err, "spec.containerd.registryMirrors[0].endpoints[0]", "scheme must be")
	for _, secret := range []string{"hunter2", "SECRETSIG"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error repeats %q: %v", secret, err)
		}
	}
}

func TestImmutableFields(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newNamespace(t)

	m := windowsVSphereMachine(ns)
	g.Expect(env.Client.Create(ctx, m)).To(Succeed())
	// The controller sets providerID once: allowed.
	m.Spec.ProviderID = "vsphere://4231d1b4-0000-0000-0000-000000000001"
	g.Expect(env.Client.Update(ctx, m)).To(Succeed())

	changed := m.DeepCopy()
	changed.Spec.VSphere.NumCPUs = 8
	expectRejected(t, env.Client.Update(ctx, changed), "spec.vsphere", "immutable")
	changed = m.DeepCopy()
	changed.Spec.ProviderID = "vsphere://another"
	expectRejected(t, env.Client.Update(ctx, changed), "spec.providerID", "immutable")
	changed = m.DeepCopy()
	changed.Spec.SSHAuthorizedKeys = []string{sshKey}
	expectRejected(t, env.Client.Update(ctx, changed), "spec.sshAuthorizedKeys", "immutable")
	changed = m.DeepCopy()
	changed.Spec.OS.WindowsRelease = infrav1.WindowsServer2025
	changed.Spec.OS.WindowsBuild = ""
	expectRejected(t, env.Client.Update(ctx, changed), "spec.os", "immutable")

	c := vsphereCluster(ns)
	g.Expect(env.Client.Create(ctx, c)).To(Succeed())
	changedC := c.DeepCopy()
	changedC.Spec.VSphere.Server = "other.example.com"
	expectRejected(t, env.Client.Update(ctx, changedC), "spec.vsphere.server", "immutable")
	changedC = c.DeepCopy()
	changedC.Spec.ControlPlaneEndpoint.Host = "10.0.0.101"
	expectRejected(t, env.Client.Update(ctx, changedC), "spec.controlPlaneEndpoint", "immutable")

	// On Azure, capwin sets the endpoint of the load balancer it makes
	// once; whether it makes one does not change.
	a := vsphereCluster(ns)
	a.Name = "azure"
	a.Spec.VSphere = nil
	a.Spec.Azure = azureClusterSpec()
	a.Spec.ControlPlaneEndpoint = clusterv1.APIEndpoint{}
	g.Expect(env.Client.Create(ctx, a)).To(Succeed())
	a.Spec.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "20.0.0.1", Port: 6443}
	g.Expect(env.Client.Update(ctx, a)).To(Succeed())
	// Empty is Public: saying so is no change.
	a.Spec.Azure.APIServerLoadBalancer = infrav1.APIServerLoadBalancerPublic
	g.Expect(env.Client.Update(ctx, a)).To(Succeed())
	changedC = a.DeepCopy()
	changedC.Spec.Azure.APIServerLoadBalancer = infrav1.APIServerLoadBalancerNone
	expectRejected(t, env.Client.Update(ctx, changedC), "spec.azure.apiServerLoadBalancer", "immutable")
	changedC = a.DeepCopy()
	changedC.Spec.Azure.APIServerLoadBalancer = "Internal"
	expectRejected(t, env.Client.Update(ctx, changedC), "spec.azure.apiServerLoadBalancer", "Unsupported value")

	cfg := windowsConfig(ns)
	g.Expect(env.Client.Create(ctx, cfg)).To(Succeed())
	cfg.Spec.PreJoinCommands = []string{"Write-Output changed"}
	expectRejected(t, env.Client.Update(ctx, cfg), "spec", "immutable")
}

func TestTemplatesImmutableExceptTopologyDryRun(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newNamespace(t)

	tmpl := machineTemplate(ns)
	g.Expect(env.Client.Create(ctx, tmpl)).To(Succeed())
	tmpl.Spec.Template.Spec.VSphere.MemoryMiB = 16384
	expectRejected(t, env.Client.Update(ctx, tmpl.DeepCopy()), "spec.template.spec", "create a new one")

	// Cluster API's topology controller dry-runs server-side apply with its
	// annotation: the template webhook lets that through.
	dry := tmpl.DeepCopy()
	dry.Annotations = map[string]string{clusterv1.TopologyDryRunAnnotation: ""}
	g.Expect(env.Client.Update(ctx, dry, client.DryRunAll)).To(Succeed())

	cfgT := &bootstrapv1.WindowsKubeadmConfigTemplate{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: ns}}
	g.Expect(env.Client.Create(ctx, cfgT)).To(Succeed())
	cfgT.Spec.Template.Spec.Network.Mode = bootstrapv1.L2Bridge
	cfgT.Spec.Template.Spec.Network.VXLAN = bootstrapv1.VXLANSpec{}
	expectRejected(t, env.Client.Update(ctx, cfgT.DeepCopy()), "spec.template.spec", "immutable")
}

func expectRejected(t *testing.T, err error, field, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("admitted; want %s rejected with %q", field, want)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsInvalid(err) {
		t.Fatalf("want an Invalid error naming %s, got %v", field, err)
	}
	details := status.Status().Details
	if details != nil {
		for _, c := range details.Causes {
			if c.Field == field && strings.Contains(c.Message, want) {
				return
			}
		}
	}
	t.Fatalf("want a cause for field %s containing %q, got: %v", field, want, err)
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns, err := env.CreateNamespace(t.Context(), "webhooks")
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := envtest.DecodeObjects(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return objs
}

// sshKey is an authorized_keys line.
const sshKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILkF1Ms6BeuCAVt6oFYilabd0bpA5fjYB3Op9jIsDcVi alice@example.com"

func windowsVSphereMachine(ns string) *infrav1.HybridMachine {
	return &infrav1.HybridMachine{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "m-", Namespace: ns},
		Spec: infrav1.HybridMachineSpec{
			OS: infrav1.OSSpec{Type: infrav1.OSWindows, WindowsRelease: infrav1.WindowsServer2022},
			VSphere: &infrav1.VSphereMachineSpec{
				Template:  "windows-2022",
				NumCPUs:   4,
				MemoryMiB: 8192,
				Network:   []infrav1.VSphereNetworkDevice{{NetworkName: "VM Network", DHCP4: ptr.To(true)}},
			},
		},
	}
}

func azureMachineSpec() *infrav1.AzureMachineSpec {
	return &infrav1.AzureMachineSpec{
		VMSize: "Standard_D4s_v5",
		Image:  infrav1.AzureImage{Marketplace: &infrav1.AzureMarketplaceImage{Publisher: "p", Offer: "o", SKU: "s", Version: "1.0.0"}},
	}
}

func machineTemplate(ns string) *infrav1.HybridMachineTemplate {
	return &infrav1.HybridMachineTemplate{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "t-", Namespace: ns},
		Spec: infrav1.HybridMachineTemplateSpec{Template: infrav1.HybridMachineTemplateResource{
			Spec: windowsVSphereMachine(ns).Spec,
		}},
	}
}

func vsphereCluster(ns string) *infrav1.HybridCluster {
	return &infrav1.HybridCluster{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "c-", Namespace: ns},
		Spec: infrav1.HybridClusterSpec{
			ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "10.0.0.100", Port: 6443},
			VSphere: &infrav1.VSphereClusterSpec{
				Server:      "vcenter.example.com",
				Datacenter:  "dc0",
				Thumbprint:  "A1:B2:C3:D4:E5:F6:07:18:29:3A:4B:5C:6D:7E:8F:90:A1:B2:C3:D4",
				IdentityRef: infrav1.IdentityReference{Kind: infrav1.SecretIdentity, Name: "creds"},
			},
		},
	}
}

func azureClusterSpec() *infrav1.AzureClusterSpec {
	return &infrav1.AzureClusterSpec{
		SubscriptionID: "00000000-1111-2222-3333-444444444444",
		Location:       "westeurope",
		ResourceGroup:  "rg",
		Network: infrav1.AzureNetworkSpec{
			VNetName:   "vnet",
			CIDRBlocks: []string{"10.1.0.0/16"},
			Subnets: []infrav1.AzureSubnet{
				{Name: "cp", Role: infrav1.SubnetControlPlane, CIDRBlock: "10.1.0.0/24"},
				{Name: "nodes", Role: infrav1.SubnetNode, CIDRBlock: "10.1.1.0/24"},
			},
		},
		IdentityRef: infrav1.IdentityReference{Kind: infrav1.SecretIdentity, Name: "creds"},
	}
}

// configWithLabels is a WindowsKubeadmConfig whose nodes get labels.
func configWithLabels(ns string, labels map[string]string) *bootstrapv1.WindowsKubeadmConfig {
	c := windowsConfig(ns)
	c.Spec.NodeRegistration.Labels = labels
	return c
}

// staticMachine is a Windows vSphere machine with one network device d, on
// the VM Network.
func staticMachine(ns string, d infrav1.VSphereNetworkDevice) *infrav1.HybridMachine {
	m := windowsVSphereMachine(ns)
	d.NetworkName = "VM Network"
	m.Spec.VSphere.Network = []infrav1.VSphereNetworkDevice{d}
	return m
}

func windowsConfig(ns string) *bootstrapv1.WindowsKubeadmConfig {
	return &bootstrapv1.WindowsKubeadmConfig{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "cfg-", Namespace: ns},
	}
}
