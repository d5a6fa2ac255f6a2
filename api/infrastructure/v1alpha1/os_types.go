package v1alpha1

// OSType is the operating system of a machine.
// +kubebuilder:validation:Enum=Linux;Windows
type OSType string

const (
	// OSLinux is a Linux machine: control-plane nodes and Linux workers.
	OSLinux OSType = "Linux"
	// OSWindows is a Windows Server worker node.
	OSWindows OSType = "Windows"
)

// The bootstrap data formats, as the format key of a Machine's bootstrap
// data Secret names them.
const (
	// BootstrapFormatCloudConfig is cloud-init's cloud-config, what the
	// kubeadm bootstrap provider writes by default. A Secret without a
	// format key, or with an empty one, is taken to hold cloud-config, as
	// the vSphere provider takes it.
	BootstrapFormatCloudConfig = "cloud-config"
	// BootstrapFormatPowerShell is a PowerShell script for cloudbase-init,
	// what capwin's WindowsKubeadmConfig writes.
	BootstrapFormatPowerShell = "powershell"
)

// BootstrapFormat is the format of the bootstrap data a machine of this OS
// runs: cloud-config for Linux (cloud-init), powershell for Windows
// (cloudbase-init), "" for an OS capwin does not know.
func (t OSType) BootstrapFormat() string {
	switch t {
	case OSLinux:
		return BootstrapFormatCloudConfig
	case OSWindows:
		return BootstrapFormatPowerShell
	}
	return ""
}

// WindowsRelease is a Windows Server long-term servicing channel release.
// Windows containers run only on a host of the same build, so the release
// decides the pause image and the RuntimeClass a node is matched with.
type WindowsRelease string

const (
	// WindowsServer2019 is Windows Server 2019 (build 10.0.17763).
	WindowsServer2019 WindowsRelease = "ltsc2019"
	// WindowsServer2022 is Windows Server 2022 (build 10.0.20348).
	WindowsServer2022 WindowsRelease = "ltsc2022"
	// WindowsServer2025 is Windows Server 2025 (build 10.0.26100).
	WindowsServer2025 WindowsRelease = "ltsc2025"
)

// windowsBuilds maps each supported release to the build its nodes report in
// the node.kubernetes.io/windows-build label (major.minor.build).
var windowsBuilds = map[WindowsRelease]string{
	WindowsServer2019: "10.0.17763",
	WindowsServer2022: "10.0.20348",
	WindowsServer2025: "10.0.26100",
}

// WindowsReleases returns the supported Windows Server releases, oldest first.
func WindowsReleases() []WindowsRelease {
	return []WindowsRelease{WindowsServer2019, WindowsServer2022, WindowsServer2025}
}

// Build returns the build of a release in the form of the
// node.kubernetes.io/windows-build label, and whether the release is known.
func (r WindowsRelease) Build() (string, bool) {
	b, ok := windowsBuilds[r]
	return b, ok
}

// OSSpec says which operating system a machine runs.
type OSSpec struct {
	// type is the operating system: Linux or Windows. It decides the
	// bootstrap data the machine can run, by the format key of the
	// Machine's bootstrap data Secret: cloud-config for Linux (cloud-init;
	// a Secret without a format counts as cloud-config), powershell for
	// Windows (cloudbase-init; what a WindowsKubeadmConfig writes). A
	// machine given another format gets no VM and the condition
	// VMProvisioned False, reason BootstrapDataFormatMismatch.
	// +required
	Type OSType `json:"type,omitempty"`

	// windowsRelease is the Windows Server release of the image: ltsc2019,
	// ltsc2022 or ltsc2025. Required when type is Windows, forbidden otherwise.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	WindowsRelease WindowsRelease `json:"windowsRelease,omitempty"`

	// windowsBuild is the build of the release as the node reports it in the
	// node.kubernetes.io/windows-build label (for example 10.0.20348).
	// Defaulted from windowsRelease; when set it must match it.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	WindowsBuild string `json:"windowsBuild,omitempty"`
}
