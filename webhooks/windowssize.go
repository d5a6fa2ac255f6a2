package webhooks

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/bootstrap/validation"
)

// A Windows node sets memory and CPU aside for the system and the kubelet
// (the WindowsKubeadmConfig's spec.kubelet). A machine is admitted before
// its config is known, so a VM is measured against the least any config
// reserves: validation.MinReservedMemory of memory, which the bootstrap
// webhook enforces, and the default CPU.
const (
	// windowsEvictionMiB is the Windows kubelet's hard-eviction threshold
	// for memory.available (pkg/kubelet/eviction/defaults_windows.go),
	// which capwin leaves in place: node-components/render drops the
	// cluster's thresholds, tuned for Linux.
	windowsEvictionMiB = 500
	// minPodMemoryMiB is the least memory capwin wants left for pods.
	minPodMemoryMiB = 1024
)

// minWindowsMemoryMiB is the least memory of a Windows node.
func minWindowsMemoryMiB() int64 {
	return validation.MinReservedMemory.Value()>>20 + windowsEvictionMiB + minPodMemoryMiB
}

// defaultReservedCPU is the CPU a WindowsKubeadmConfig reserves by
// default, systemReserved plus kubeReserved.
func defaultReservedCPU() resource.Quantity {
	var s bootstrapv1.WindowsKubeadmConfigSpec
	s.Default()
	cpu := s.Kubelet.SystemReserved.Cpu().DeepCopy()
	cpu.Add(*s.Kubelet.KubeReserved.Cpu())
	return cpu
}

// validateWindowsSize refuses a vSphere VM too small to be a Windows node:
// with 2Gi of memory or less capwin-node refuses to join (its reservations
// would be all of it), and just above that the node joins with nothing
// allocatable.
func validateWindowsSize(v *infrav1.VSphereMachineSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if least := minWindowsMemoryMiB(); v.MemoryMiB > 0 && v.MemoryMiB < least {
		errs = append(errs, field.Invalid(path.Child("memoryMiB"), v.MemoryMiB, fmt.Sprintf(
			"a Windows node needs at least %d MiB: %d MiB it sets aside at least for the system and the kubelet (WindowsKubeadmConfig spec.kubelet systemReserved + kubeReserved memory), "+
				"%d MiB the Windows kubelet keeps free before it evicts pods, and %d MiB for pods; with %d MiB or less capwin-node refuses to join",
			least, validation.MinReservedMemory.Value()>>20, windowsEvictionMiB, minPodMemoryMiB, validation.MinReservedMemory.Value()>>20)))
	}
	reserved := defaultReservedCPU()
	if least := reserved.MilliValue()/1000 + 1; v.NumCPUs > 0 && int64(v.NumCPUs) < least {
		errs = append(errs, field.Invalid(path.Child("numCPUs"), v.NumCPUs, fmt.Sprintf(
			"a Windows node needs at least %d CPUs: the default reservations (WindowsKubeadmConfig spec.kubelet systemReserved + kubeReserved cpu) take %s, which would leave pods no CPU to request",
			least, reserved.String())))
	}
	return errs
}
