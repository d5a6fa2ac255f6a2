package webhooks

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
)

// HybridMachine defaults and validates HybridMachines.
// +kubebuilder:object:generate=false
type HybridMachine struct{}

// SetupWebhookWithManager registers the webhook with mgr's webhook server.
func (w *HybridMachine) SetupWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &infrav1.HybridMachine{}).
		WithDefaulter(w).
		WithValidator(w).
		Complete()
}

var (
	_ admission.Defaulter[*infrav1.HybridMachine] = &HybridMachine{}
	_ admission.Validator[*infrav1.HybridMachine] = &HybridMachine{}
)

// Default fills in the Windows build and platform defaults, and labels the
// machine with its platform.
func (w *HybridMachine) Default(_ context.Context, m *infrav1.HybridMachine) error {
	defaultMachineSpec(&m.Spec)
	platform := ""
	switch {
	case m.Spec.VSphere != nil && m.Spec.Azure == nil:
		platform = infrav1.PlatformVSphere
	case m.Spec.Azure != nil && m.Spec.VSphere == nil:
		platform = infrav1.PlatformAzure
	}
	if platform != "" {
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels[infrav1.PlatformLabel] = platform
	}
	return nil
}

// ValidateCreate checks a new HybridMachine.
func (w *HybridMachine) ValidateCreate(_ context.Context, m *infrav1.HybridMachine) (admission.Warnings, error) {
	return nil, invalid(m, validateHybridMachine(m))
}

// ValidateUpdate checks a changed HybridMachine: its spec is immutable but
// for providerID, which the controller sets once.
func (w *HybridMachine) ValidateUpdate(_ context.Context, oldM, newM *infrav1.HybridMachine) (admission.Warnings, error) {
	errs := admittedBefore(validateHybridMachine(newM), validateHybridMachine(oldM))
	spec := field.NewPath("spec")
	if oldM.Spec.ProviderID != "" && newM.Spec.ProviderID != oldM.Spec.ProviderID {
		errs = append(errs, field.Forbidden(spec.Child("providerID"), "field is immutable once set"))
	}
	errs = append(errs, immutable(oldM.Spec.OS, newM.Spec.OS, spec.Child("os"))...)
	errs = append(errs, immutable(oldM.Spec.ComputerName, newM.Spec.ComputerName, spec.Child("computerName"))...)
	errs = append(errs, immutable(oldM.Spec.SSHAuthorizedKeys, newM.Spec.SSHAuthorizedKeys, spec.Child("sshAuthorizedKeys"))...)
	errs = append(errs, immutable(oldM.Spec.VSphere, newM.Spec.VSphere, spec.Child("vsphere"))...)
	errs = append(errs, immutable(oldM.Spec.Azure, newM.Spec.Azure, spec.Child("azure"))...)
	return nil, invalid(newM, errs)
}

// ValidateDelete allows every deletion.
func (w *HybridMachine) ValidateDelete(context.Context, *infrav1.HybridMachine) (admission.Warnings, error) {
	return nil, nil
}

func validateHybridMachine(m *infrav1.HybridMachine) field.ErrorList {
	spec := field.NewPath("spec")
	errs := validateMachineSpec(&m.Spec, spec, false)
	if _, cp := m.Labels[clusterv1.MachineControlPlaneLabel]; cp && m.Spec.OS.Type == infrav1.OSWindows {
		errs = append(errs, field.Forbidden(spec.Child("os", "type"),
			"the control plane is Linux only: a HybridMachine of a control-plane Machine (label cluster.x-k8s.io/control-plane) must have os.type Linux"))
	}
	return errs
}

// defaultMachineSpec fills in what a machine spec leaves out. It is shared by
// HybridMachine and HybridMachineTemplate and must be idempotent.
func defaultMachineSpec(s *infrav1.HybridMachineSpec) {
	if s.OS.Type == infrav1.OSWindows && s.OS.WindowsBuild == "" {
		if b, ok := s.OS.WindowsRelease.Build(); ok {
			s.OS.WindowsBuild = b
		}
	}
	if v := s.VSphere; v != nil && v.CloneMode == "" {
		v.CloneMode = infrav1.FullClone
	}
	if a := s.Azure; a != nil {
		if a.OSDisk.DiskSizeGB == 0 {
			a.OSDisk.DiskSizeGB = 128
		}
		if a.OSDisk.StorageAccountType == "" {
			a.OSDisk.StorageAccountType = "Premium_LRS"
		}
	}
}

// validateMachineSpec checks a machine spec; template says whether it is the
// spec of a HybridMachineTemplate, where per-machine fields are not allowed.
func validateMachineSpec(s *infrav1.HybridMachineSpec, path *field.Path, template bool) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateOS(s.OS, path.Child("os"))...)

	if template && s.ProviderID != "" {
		errs = append(errs, field.Forbidden(path.Child("providerID"), "a template cannot set a provider ID: each machine gets its own"))
	}
	if s.ComputerName != "" {
		if template {
			errs = append(errs, field.Forbidden(path.Child("computerName"), "a template cannot set a computer name: every machine made from it would get the same one"))
		} else {
			errs = append(errs, validateComputerName(s.ComputerName, s.OS.Type, path.Child("computerName"))...)
		}
	}

	errs = append(errs, validateSSHAuthorizedKeys(s.SSHAuthorizedKeys, path.Child("sshAuthorizedKeys"))...)

	switch {
	case s.VSphere == nil && s.Azure == nil:
		errs = append(errs, field.Required(path, "exactly one of spec.vsphere or spec.azure must be set"))
	case s.VSphere != nil && s.Azure != nil:
		errs = append(errs, field.Forbidden(path.Child("azure"), "spec.vsphere is set too: a machine is on one platform, set exactly one of spec.vsphere or spec.azure"))
	case s.VSphere != nil:
		errs = append(errs, validateVSphereMachine(s.VSphere, s.OS.Type, path.Child("vsphere"), template)...)
	default:
		errs = append(errs, validateAzureMachine(s.Azure, s.OS.Type, path.Child("azure"))...)
	}
	return errs
}

func validateOS(os infrav1.OSSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch os.Type {
	case infrav1.OSWindows:
		if os.WindowsRelease == "" {
			errs = append(errs, field.Required(path.Child("windowsRelease"), "a Windows machine names its Windows Server release: "+releaseList()))
			break
		}
		build, ok := os.WindowsRelease.Build()
		if !ok {
			errs = append(errs, field.NotSupported(path.Child("windowsRelease"), os.WindowsRelease, infrav1.WindowsReleases()))
			break
		}
		if os.WindowsBuild != "" && os.WindowsBuild != build {
			errs = append(errs, field.Invalid(path.Child("windowsBuild"), os.WindowsBuild,
				fmt.Sprintf("Windows Server %s is build %s; containers run only on a host of their own build", os.WindowsRelease, build)))
		}
	case infrav1.OSLinux:
		if os.WindowsRelease != "" {
			errs = append(errs, field.Forbidden(path.Child("windowsRelease"), "only a Windows machine has a Windows release"))
		}
		if os.WindowsBuild != "" {
			errs = append(errs, field.Forbidden(path.Child("windowsBuild"), "only a Windows machine has a Windows build"))
		}
	case "":
		errs = append(errs, field.Required(path.Child("type"), "Linux or Windows"))
	default:
		errs = append(errs, field.NotSupported(path.Child("type"), os.Type, []infrav1.OSType{infrav1.OSLinux, infrav1.OSWindows}))
	}
	return errs
}

func releaseList() string {
	var rs []string
	for _, r := range infrav1.WindowsReleases() {
		rs = append(rs, string(r))
	}
	return strings.Join(rs, ", ")
}

func validateVSphereMachine(v *infrav1.VSphereMachineSpec, os infrav1.OSType, path *field.Path, template bool) field.ErrorList {
	var errs field.ErrorList
	if v.Template == "" {
		errs = append(errs, field.Required(path.Child("template"), "the VM template to clone"))
	}
	if v.NumCPUs <= 0 {
		errs = append(errs, field.Invalid(path.Child("numCPUs"), v.NumCPUs, "must be at least 1"))
	}
	if v.MemoryMiB <= 0 {
		errs = append(errs, field.Invalid(path.Child("memoryMiB"), v.MemoryMiB, "must be at least 1"))
	} else if v.MemoryMiB%4 != 0 {
		errs = append(errs, field.Invalid(path.Child("memoryMiB"), v.MemoryMiB,
			"vSphere refuses a VM whose memory is not a multiple of 4 MB"))
	}
	if os == infrav1.OSWindows {
		errs = append(errs, validateWindowsSize(v, path)...)
	}
	if v.DiskGiB < 0 {
		errs = append(errs, field.Invalid(path.Child("diskGiB"), v.DiskGiB, "must be at least 1"))
	}
	switch v.CloneMode {
	case "", infrav1.FullClone:
		if v.Snapshot != "" {
			errs = append(errs, field.Forbidden(path.Child("snapshot"), "a snapshot is used by a LinkedClone only"))
		}
	case infrav1.LinkedClone:
		if v.DiskGiB != 0 {
			errs = append(errs, field.Forbidden(path.Child("diskGiB"), "a LinkedClone shares the template's disk and cannot resize it; use FullClone"))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("cloneMode"), v.CloneMode, []infrav1.VSphereCloneMode{infrav1.FullClone, infrav1.LinkedClone}))
	}
	if len(v.Network) == 0 {
		errs = append(errs, field.Required(path.Child("network"), "at least one network device"))
	}
	return append(errs, validateVSphereNetwork(v.Network, os, path.Child("network"), template)...)
}

// azureVMSize is the form of an Azure VM size name: its tier, Standard or
// Basic, and the size, such as D4s_v5 or the constrained-vCPU E4-2ds_v4.
// Azure compares sizes without regard to case.
var azureVMSize = regexp.MustCompile(`^(?i:standard|basic)_[A-Za-z0-9]+[A-Za-z0-9_-]*$`)

func validateAzureMachine(a *infrav1.AzureMachineSpec, os infrav1.OSType, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.TrimSpace(a.VMSize) == "" {
		errs = append(errs, field.Required(path.Child("vmSize"), "an Azure VM size such as Standard_D4s_v5"))
	} else if !azureVMSize.MatchString(a.VMSize) {
		errs = append(errs, field.Invalid(path.Child("vmSize"), a.VMSize,
			"Azure names a VM size Standard_<size> or Basic_<size>, as `az vm list-sizes` lists them (for example Standard_D4s_v5); Azure refuses any other name when the VM is created"))
	}
	img := path.Child("image")
	set := 0
	if a.Image.ID != "" {
		set++
		if !strings.HasPrefix(strings.ToLower(a.Image.ID), "/subscriptions/") {
			errs = append(errs, field.Invalid(img.Child("id"), a.Image.ID, "must be a full resource ID starting with /subscriptions/"))
		}
	}
	if m := a.Image.Marketplace; m != nil {
		set++
		if strings.EqualFold(m.Version, "latest") {
			errs = append(errs, field.Invalid(img.Child("marketplace", "version"), m.Version,
				"pin an image version: with latest, machines of one template could boot different images"))
		}
	}
	if a.Image.ComputeGallery != nil {
		set++
	}
	if set != 1 {
		errs = append(errs, field.Invalid(img, set, "exactly one of id, marketplace or computeGallery must be set"))
	}
	if a.OSDisk.DiskSizeGB < 0 {
		errs = append(errs, field.Invalid(path.Child("osDisk", "diskSizeGB"), a.OSDisk.DiskSizeGB, "must be at least 1"))
	}
	if a.LicenseType == infrav1.LicenseWindowsServer && os != infrav1.OSWindows {
		errs = append(errs, field.Forbidden(path.Child("licenseType"), "Azure Hybrid Benefit (Windows_Server) applies to Windows machines only"))
	}
	if a.SSHPublicKey != "" && os == infrav1.OSWindows {
		errs = append(errs, field.Forbidden(path.Child("sshPublicKey"), "the Azure VM's administrator key is for Linux machines; keys for a Windows machine go in spec.sshAuthorizedKeys, which capwin writes on vSphere only so far"))
	}
	return errs
}

// invalid turns a list of field errors into the API error the webhook returns.
func invalid(obj interface {
	GetName() string
}, errs field.ErrorList,
) error {
	if len(errs) == 0 {
		return nil
	}
	gk := kindOf(obj)
	return apierrors.NewInvalid(gk, obj.GetName(), errs)
}
