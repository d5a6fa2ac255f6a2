package v1alpha1

const (
	// PlatformLabel is set by the defaulting webhook on every HybridMachine to
	// vsphere or azure, so machines can be listed and shown by platform.
	PlatformLabel = "infrastructure.capwin.io/platform"

	// PlatformVSphere is the PlatformLabel value of vSphere machines.
	PlatformVSphere = "vsphere"
	// PlatformAzure is the PlatformLabel value of Azure machines.
	PlatformAzure = "azure"
)

// platformOf is the PlatformLabel value of a spec with a vSphere or an
// Azure section (vSphere when, wrongly, both are set), or "" with neither.
func platformOf(vsphere, azure bool) string {
	switch {
	case vsphere:
		return PlatformVSphere
	case azure:
		return PlatformAzure
	}
	return ""
}
