package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Default fills in what a WindowsKubeadmConfig spec leaves out. It is
// idempotent; the webhooks, the renderer and `capwin render` all apply it.
func (s *WindowsKubeadmConfigSpec) Default() {
	if s.Containerd.Runtime == "" {
		s.Containerd.Runtime = ContainerdRuntime
	}
	if s.Containerd.Isolation == "" {
		s.Containerd.Isolation = ProcessIsolation
	}
	if s.Network.CNI == "" {
		s.Network.CNI = Flannel
	}
	if s.Network.Mode == "" {
		s.Network.Mode = Overlay
	}
	if s.Network.Mode == Overlay {
		if s.Network.VXLAN.VNI == 0 {
			s.Network.VXLAN.VNI = WindowsVXLANVNI
		}
		if s.Network.VXLAN.Port == 0 {
			s.Network.VXLAN.Port = WindowsVXLANPort
		}
	}
	if s.KubeProxy.Mode == "" {
		s.KubeProxy.Mode = KernelspaceProxy
	}
	s.Kubelet.SystemReserved = withDefaults(s.Kubelet.SystemReserved, "1536Mi", "500m")
	s.Kubelet.KubeReserved = withDefaults(s.Kubelet.KubeReserved, "512Mi", "500m")
	for i := range s.Files {
		if s.Files[i].Encoding == "" {
			s.Files[i].Encoding = "plain"
		}
	}
}

func withDefaults(l corev1.ResourceList, memory, cpu string) corev1.ResourceList {
	if l == nil {
		l = corev1.ResourceList{}
	}
	if _, ok := l[corev1.ResourceMemory]; !ok {
		l[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	if _, ok := l[corev1.ResourceCPU]; !ok {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	return l
}
