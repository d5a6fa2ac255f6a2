package v1alpha1

// VSphereClusterSpec is the vCenter a HybridCluster's machines are created in.
type VSphereClusterSpec struct {
	// server is the vCenter host name or IP address, with an optional port
	// (no scheme, no path).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Server string `json:"server,omitempty"`

	// datacenter is the name or inventory path of the vSphere datacenter.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	Datacenter string `json:"datacenter,omitempty"`

	// thumbprint is the SHA-1 or SHA-256 fingerprint of the vCenter's TLS
	// certificate, as colon-separated hex. Without it (and without insecure)
	// the certificate must be signed by a CA the system trusts.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Thumbprint string `json:"thumbprint,omitempty"`

	// insecure skips the verification of the vCenter's certificate. Meant for
	// labs and simulators only.
	// +optional
	Insecure *bool `json:"insecure,omitempty"`

	// identityRef names the credentials for this vCenter: a Secret in the
	// HybridCluster's namespace (keys username and password), or a
	// HybridClusterIdentity whose allowedNamespaces admit this namespace.
	// +required
	IdentityRef IdentityReference `json:"identityRef,omitempty,omitzero"`
}

// VSphereCloneMode is how a VM is cloned from its template.
// +kubebuilder:validation:Enum=FullClone;LinkedClone
type VSphereCloneMode string

const (
	// FullClone copies the template's disks.
	FullClone VSphereCloneMode = "FullClone"
	// LinkedClone shares the disks of a template snapshot; fast, but the
	// template must have a snapshot and the disk cannot be resized.
	LinkedClone VSphereCloneMode = "LinkedClone"
)

// VSphereMachineSpec is the VM a HybridMachine is on vSphere.
type VSphereMachineSpec struct {
	// template is the name or inventory path of the VM template to clone.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	Template string `json:"template,omitempty"`

	// cloneMode is FullClone (default) or LinkedClone.
	// +optional
	CloneMode VSphereCloneMode `json:"cloneMode,omitempty"`

	// snapshot is the template snapshot a LinkedClone is made from; the
	// template's current snapshot when empty.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Snapshot string `json:"snapshot,omitempty"`

	// numCPUs is the number of virtual CPUs; at least 2 for a Windows
	// machine, whose node's default reservations take one.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=768
	NumCPUs int32 `json:"numCPUs,omitempty"`

	// memoryMiB is the memory in MiB, a multiple of 4 as vSphere requires.
	// Windows nodes set at least 2 GiB of it aside for the system and the
	// kubelet (WindowsKubeadmConfig spec.kubelet) and the kubelet keeps
	// 500 MiB free, so a Windows machine needs at least 3572 (1 GiB for pods).
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=25165824
	MemoryMiB int64 `json:"memoryMiB,omitempty"`

	// diskGiB is the size of the first disk in GiB; the template's size when
	// unset. It may only grow the disk, and is not allowed with LinkedClone.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	DiskGiB int32 `json:"diskGiB,omitempty"`

	// network lists the VM's network devices, in order.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	Network []VSphereNetworkDevice `json:"network,omitempty"`

	// folder is the VM folder the VM is created in; the datacenter's VM folder when empty.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	Folder string `json:"folder,omitempty"`

	// resourcePool is the resource pool the VM runs in; the default pool when empty.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	ResourcePool string `json:"resourcePool,omitempty"`

	// datastore holds the VM's files; the template's datastore when empty.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	Datastore string `json:"datastore,omitempty"`
}

// VSphereNetworkDevice is one network interface of a vSphere VM.
type VSphereNetworkDevice struct {
	// networkName is the port group or network the device connects to.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	NetworkName string `json:"networkName,omitempty"`

	// dhcp4 asks for an IPv4 address by DHCP. On Windows not with a static
	// IPv4 address, which turns DHCP off on the device.
	// +optional
	DHCP4 *bool `json:"dhcp4,omitempty"`

	// ipAddrs are static addresses with their prefix length (for example
	// 10.0.0.10/24), each on one device only. A Windows device takes one
	// IPv4 and one IPv6 address: cloudbase-init keeps only the last of a
	// family.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=64
	IPAddrs []string `json:"ipAddrs,omitempty"`

	// gateway4 is the IPv4 default gateway for static addresses, inside the
	// subnet of one of the device's IPv4 addresses.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Gateway4 string `json:"gateway4,omitempty"`

	// nameservers are DNS servers for static addresses.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=64
	Nameservers []string `json:"nameservers,omitempty"`
}
