package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
)

func clusterWithPods(cidrs ...string) *clusterv1.Cluster {
	c := &clusterv1.Cluster{}
	c.Name = "c1"
	c.Spec.ClusterNetwork.Pods.CIDRBlocks = cidrs
	return c
}

// TestValidateConfig pins the field path and the gist of the message of a
// rule from each part of the config, as the webhooks report them.
func TestValidateConfig(t *testing.T) {
	for _, tt := range []struct {
		name    string
		edit    func(*bootstrapv1.WindowsKubeadmConfig)
		cluster *clusterv1.Cluster
		field   string // empty: valid
		want    string
	}{
		{"defaults", func(*bootstrapv1.WindowsKubeadmConfig) {}, nil, "", ""},
		{"defaults in an IPv4 cluster", func(*bootstrapv1.WindowsKubeadmConfig) {}, clusterWithPods("10.244.0.0/16"), "", ""},
		{"control-plane machine", func(c *bootstrapv1.WindowsKubeadmConfig) {
			c.Labels = map[string]string{clusterv1.MachineControlPlaneLabel: ""}
		}, nil, "metadata.labels[cluster.x-k8s.io/control-plane]", "the control plane is Linux only"},
		{"overlay in a dual-stack cluster", func(*bootstrapv1.WindowsKubeadmConfig) {},
			clusterWithPods("10.244.0.0/16", "fd00:10:244::/56"), "spec.network.mode", "dual-stack clusters need mode l2bridge"},
		{"l2bridge in an IPv6 cluster", func(c *bootstrapv1.WindowsKubeadmConfig) { c.Spec.Network.Mode = bootstrapv1.L2Bridge },
			clusterWithPods("fd00:10:244::/56"), "", ""},
		{"memory reservations below 2Gi", func(c *bootstrapv1.WindowsKubeadmConfig) {
			c.Spec.Kubelet.SystemReserved = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}
			c.Spec.Kubelet.KubeReserved = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}
		}, nil, "spec.kubelet", "at least 2Gi"},
		{"kubelet flag with a field of its own, spelled with underscores", func(c *bootstrapv1.WindowsKubeadmConfig) {
			c.Spec.NodeRegistration.KubeletExtraArgs = []bootstrapv1.Arg{{Name: "--system_reserved"}}
		}, nil, "spec.nodeRegistration.kubeletExtraArgs[0].name", "set spec.kubelet.systemReserved instead"},
		{"node label the kubelet allows", func(c *bootstrapv1.WindowsKubeadmConfig) {
			c.Spec.NodeRegistration.Labels = map[string]string{"node.kubernetes.io/pool": "win", "sub.kubelet.kubernetes.io/x": "", "example.com/team": "a"}
		}, nil, "", ""},
		{"node label the kubelet refuses", func(c *bootstrapv1.WindowsKubeadmConfig) {
			c.Spec.NodeRegistration.Labels = map[string]string{"node-role.kubernetes.io/worker": ""}
		}, nil, "spec.nodeRegistration.labels[node-role.kubernetes.io/worker]", "which Cluster API copies to the Node"},
		{"node label replacing the host's OS", func(c *bootstrapv1.WindowsKubeadmConfig) {
			c.Spec.NodeRegistration.Labels = map[string]string{"beta.kubernetes.io/os": "linux"}
		}, nil, "spec.nodeRegistration.labels[beta.kubernetes.io/os]", "beta.kubernetes.io/os is windows"},
		{"taints not unique by key and effect", func(c *bootstrapv1.WindowsKubeadmConfig) {
			c.Spec.NodeRegistration.Taints = []corev1.Taint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}, {Key: "b", Effect: corev1.TaintEffectNoSchedule}, {Key: "a", Value: "x", Effect: corev1.TaintEffectNoSchedule}}
		}, nil, "spec.nodeRegistration.taints[2]", "taints[0] has the same key and effect"},
		{"the uninitialized taint without an external cloud provider", func(c *bootstrapv1.WindowsKubeadmConfig) {
			c.Spec.NodeRegistration.KubeletExtraArgs = []bootstrapv1.Arg{{Name: "cloud-provider", Value: ptr.To("")}}
			c.Spec.NodeRegistration.Taints = []corev1.Taint{{Key: "node.cloudprovider.kubernetes.io/uninitialized", Effect: corev1.TaintEffectNoSchedule}}
		}, nil, "", ""},
		{"kubelet flag in upper case", func(c *bootstrapv1.WindowsKubeadmConfig) {
			c.Spec.NodeRegistration.KubeletExtraArgs = []bootstrapv1.Arg{{Name: "--Max-Pods", Value: ptr.To("50")}}
		}, nil, "spec.nodeRegistration.kubeletExtraArgs[0].name", `unknown flag: --Max-Pods`},
		{"kubelet flag removed in 1.27", func(c *bootstrapv1.WindowsKubeadmConfig) {
			c.Spec.NodeRegistration.KubeletExtraArgs = []bootstrapv1.Arg{{Name: "container-runtime", Value: ptr.To("remote")}}
		}, nil, "spec.nodeRegistration.kubeletExtraArgs[0].name", "removed from the kubelet in Kubernetes 1.27"},
		{"Hyper-V isolation", func(c *bootstrapv1.WindowsKubeadmConfig) { c.Spec.Containerd.Isolation = bootstrapv1.HyperVIsolation },
			nil, "spec.containerd.isolation", "Hyper-V isolation is not supported on vSphere until capwin builds it end to end"},
		{"process isolation", func(c *bootstrapv1.WindowsKubeadmConfig) { c.Spec.Containerd.Isolation = bootstrapv1.ProcessIsolation },
			nil, "", ""},
		{"registry mirror endpoint without a scheme", func(c *bootstrapv1.WindowsKubeadmConfig) {
			c.Spec.Containerd.RegistryMirrors = []bootstrapv1.RegistryMirror{{Registry: "docker.io", Endpoints: []string{"mirror.example"}}}
		}, nil, "spec.containerd.registryMirrors[0].endpoints[0]", "must be an absolute URL"},
		{"node subnet that does not parse", func(c *bootstrapv1.WindowsKubeadmConfig) { c.Spec.Network.NodeSubnet = "10.0.0.0/33" },
			nil, "spec.network.nodeSubnet", "must be a CIDR"},
		{"file path that climbs out", func(c *bootstrapv1.WindowsKubeadmConfig) {
			c.Spec.Files = []bootstrapv1.File{{Path: `C:\etc\..\hosts`, Content: "x"}}
		}, nil, "spec.files[0].path", `must not contain ".."`},
		{"proxy password not echoed", func(c *bootstrapv1.WindowsKubeadmConfig) { c.Spec.Proxy.HTTPProxy = "ftp://u:secret@proxy:3128" },
			nil, "spec.proxy.httpProxy", "the URL scheme must be http or https"},
		{"bootstrap payload over the user-data limit", func(c *bootstrapv1.WindowsKubeadmConfig) {
			big := strings.Repeat("x", 30000)
			c.Spec.Files = []bootstrapv1.File{{Path: `C:\a.txt`, Content: big}, {Path: `C:\b.txt`, Content: big}}
		}, nil, "spec.files", "over the 65535 byte user-data limit"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Edited, then defaulted, as admission does.
			c := &bootstrapv1.WindowsKubeadmConfig{}
			tt.edit(c)
			c.Spec.Default()
			errs := ValidateConfig(c, tt.cluster)
			if tt.field == "" {
				if len(errs) > 0 {
					t.Fatalf("want valid, got %v", errs)
				}
				return
			}
			expectError(t, errs, tt.field, tt.want)
			if strings.Contains(errs.ToAggregate().Error(), "secret") {
				t.Errorf("an error echoes a secret: %v", errs)
			}
		})
	}
}

func TestValidateConfigTemplate(t *testing.T) {
	tmpl := &bootstrapv1.WindowsKubeadmConfigTemplate{}
	tmpl.Spec.Template.Spec.Default()
	if errs := ValidateConfigTemplate(tmpl); len(errs) > 0 {
		t.Fatalf("want valid, got %v", errs)
	}
	tmpl.Spec.Template.Spec.Containerd.Runtime = "docker"
	expectError(t, ValidateConfigTemplate(tmpl), "spec.template.spec.containerd.runtime", "dockershim was removed")
}

// TestRatchetUpdate: Hyper-V isolation is refused on a new object and on
// one that did not have it, not on one admitted with it before.
func TestRatchetUpdate(t *testing.T) {
	spec := func(i bootstrapv1.Isolation) *bootstrapv1.WindowsKubeadmConfigSpec {
		s := &bootstrapv1.WindowsKubeadmConfigSpec{Containerd: bootstrapv1.ContainerdSpec{Isolation: i}}
		s.Default()
		return s
	}
	path := field.NewPath("spec", "template", "spec")
	hyperV := ValidateConfigSpec(spec(bootstrapv1.HyperVIsolation), path)
	expectError(t, hyperV, "spec.template.spec.containerd.isolation", "not supported")
	if errs := RatchetUpdate(hyperV, spec(bootstrapv1.HyperVIsolation), path); len(errs) > 0 {
		t.Errorf("an object admitted with HyperV is refused its updates: %v", errs)
	}
	expectError(t, RatchetUpdate(hyperV, spec(bootstrapv1.ProcessIsolation), path), "spec.template.spec.containerd.isolation", "not supported")

	// Other errors stay.
	bad := spec(bootstrapv1.HyperVIsolation)
	bad.Containerd.Runtime = "docker"
	expectError(t, RatchetUpdate(ValidateConfigSpec(bad, path), spec(bootstrapv1.HyperVIsolation), path),
		"spec.template.spec.containerd.runtime", "dockershim was removed")
}

func expectError(t *testing.T, errs field.ErrorList, path, want string) {
	t.Helper()
	for _, e := range errs {
		if e.Field == path && strings.Contains(e.Error(), want) {
			return
		}
	}
	t.Fatalf("want an error for %s containing %q, got %v", path, want, errs)
}
