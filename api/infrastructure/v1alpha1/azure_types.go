package v1alpha1

// AzureClusterSpec is the Azure subscription, region and network a
// HybridCluster's machines are created in.
type AzureClusterSpec struct {
	// subscriptionID is the Azure subscription (a GUID).
	// +required
	// +kubebuilder:validation:MinLength=36
	// +kubebuilder:validation:MaxLength=36
	SubscriptionID string `json:"subscriptionID,omitempty"`

	// location is the Azure region, for example westeurope.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Location string `json:"location,omitempty"`

	// resourceGroup holds the cluster's resources. capwin creates it when
	// it does not exist, and then deletes it, with everything in it, when
	// the cluster is deleted, unless it also holds another cluster's
	// resources; a resource group made beforehand is kept.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=90
	ResourceGroup string `json:"resourceGroup,omitempty"`

	// network is the virtual network and its subnets.
	// +required
	Network AzureNetworkSpec `json:"network,omitempty,omitzero"`

	// apiServerLoadBalancer is how the control plane's API servers are
	// reached. Public (when empty): capwin makes a Standard public IP
	// address and load balancer in front of port 6443 of the control-plane
	// machines, puts their network interfaces in its backend pool, and sets
	// spec.controlPlaneEndpoint to that address and port 6443 (an endpoint
	// set to anything else is refused). None:
	// spec.controlPlaneEndpoint names an endpoint made beforehand.
	// +optional
	APIServerLoadBalancer AzureAPIServerLoadBalancer `json:"apiServerLoadBalancer,omitempty"`

	// zones are the location's availability zones that machines are spread
	// over. Each becomes one of status.failureDomains, for control-plane
	// machines too: a KubeadmControlPlane spreads its machines over them,
	// and a MachineDeployment's failureDomain names one for its machines.
	// A Machine's failureDomain puts its VM in that zone. Empty: no failure
	// domains, and VMs are in no zone unless their Machine names one. Azure
	// says which zones a VM size has in a location (az vm list-skus); a
	// zone it lacks fails the VM's create.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=3
	// +kubebuilder:validation:items:Enum="1";"2";"3"
	Zones []string `json:"zones,omitempty"`

	// identityRef names the credentials: a Secret in the HybridCluster's
	// namespace, or a HybridClusterIdentity whose allowedNamespaces admit
	// this namespace. The Secret's key type is ServicePrincipal (the
	// default; keys tenantID, clientID, clientSecret), WorkloadIdentity
	// (tenantID, clientID; the manager's federated token) or
	// ManagedIdentity (clientID of a user-assigned identity).
	// +required
	IdentityRef IdentityReference `json:"identityRef,omitempty,omitzero"`
}

// AzureAPIServerLoadBalancer is how a cluster's API servers are reached on Azure.
// +kubebuilder:validation:Enum=Public;None
type AzureAPIServerLoadBalancer string

const (
	// APIServerLoadBalancerPublic makes a public load balancer in front of
	// the control plane.
	APIServerLoadBalancerPublic AzureAPIServerLoadBalancer = "Public"
	// APIServerLoadBalancerNone uses the spec.controlPlaneEndpoint given.
	APIServerLoadBalancerNone AzureAPIServerLoadBalancer = "None"
)

// AzureNetworkSpec is a virtual network and its subnets. When the virtual
// network does not exist, capwin creates it with the subnets, a network
// security group for each subnet role and a route table for the Node
// subnets, and deletes them with the cluster; a virtual network made
// beforehand is used as it is and must hold the subnets.
type AzureNetworkSpec struct {
	// vnetName is the virtual network's name.
	// +required
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=64
	VNetName string `json:"vnetName,omitempty"`

	// cidrBlocks are the virtual network's address spaces.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=64
	CIDRBlocks []string `json:"cidrBlocks,omitempty"`

	// subnets are the subnets machines attach to.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Subnets []AzureSubnet `json:"subnets,omitempty"`
}

// AzureSubnetRole is what a subnet is used for.
// +kubebuilder:validation:Enum=ControlPlane;Node
type AzureSubnetRole string

const (
	// SubnetControlPlane holds control-plane machines.
	SubnetControlPlane AzureSubnetRole = "ControlPlane"
	// SubnetNode holds worker machines.
	SubnetNode AzureSubnetRole = "Node"
)

// AzureSubnet is one subnet of the cluster's virtual network.
type AzureSubnet struct {
	// name is the subnet's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=80
	Name string `json:"name,omitempty"`

	// role is ControlPlane or Node.
	// +required
	Role AzureSubnetRole `json:"role,omitempty"`

	// cidrBlock is the subnet's address range; it must lie in the network's cidrBlocks.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	CIDRBlock string `json:"cidrBlock,omitempty"`
}

// AzureImage is the image a VM boots. Exactly one of id, marketplace or
// computeGallery is set.
type AzureImage struct {
	// id is the full resource ID of a managed image or gallery image version.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	ID string `json:"id,omitempty"`

	// marketplace is a Marketplace image.
	// +optional
	Marketplace *AzureMarketplaceImage `json:"marketplace,omitempty"`

	// computeGallery is an image in an Azure Compute Gallery.
	// +optional
	ComputeGallery *AzureComputeGalleryImage `json:"computeGallery,omitempty"`
}

// AzureMarketplaceImage is a Marketplace image reference.
type AzureMarketplaceImage struct {
	// publisher of the image.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Publisher string `json:"publisher,omitempty"`
	// offer of the image.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Offer string `json:"offer,omitempty"`
	// sku of the image.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	SKU string `json:"sku,omitempty"`
	// version of the image; a pinned version, not "latest", so that machines
	// of one template are alike.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version,omitempty"`
}

// AzureComputeGalleryImage is an image version in an Azure Compute Gallery.
type AzureComputeGalleryImage struct {
	// gallery is the gallery's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=80
	Gallery string `json:"gallery,omitempty"`
	// name is the image definition's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=80
	Name string `json:"name,omitempty"`
	// version is the image version.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version,omitempty"`
	// resourceGroup holds the gallery; the cluster's resource group when empty.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=90
	ResourceGroup string `json:"resourceGroup,omitempty"`
}

// AzureStorageAccountType is the managed disk's storage type.
// +kubebuilder:validation:Enum=Standard_LRS;StandardSSD_LRS;Premium_LRS;StandardSSD_ZRS;Premium_ZRS
type AzureStorageAccountType string

// AzureOSDisk is a VM's OS disk.
type AzureOSDisk struct {
	// diskSizeGB is the disk size. Defaults to 128.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4095
	DiskSizeGB int32 `json:"diskSizeGB,omitempty"`

	// storageAccountType defaults to Premium_LRS.
	// +optional
	StorageAccountType AzureStorageAccountType `json:"storageAccountType,omitempty"`
}

// AzureLicenseType is the license a Windows VM is billed with.
// +kubebuilder:validation:Enum=None;Windows_Server
type AzureLicenseType string

const (
	// LicenseNone bills the Windows license with the VM.
	LicenseNone AzureLicenseType = "None"
	// LicenseWindowsServer uses Azure Hybrid Benefit for Windows Server.
	LicenseWindowsServer AzureLicenseType = "Windows_Server"
)

// AzureMachineSpec is the VM a HybridMachine is on Azure.
type AzureMachineSpec struct {
	// vmSize is the Azure VM size, for example Standard_D4s_v5.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	VMSize string `json:"vmSize,omitempty"`

	// image is the image the VM boots.
	// +required
	Image AzureImage `json:"image,omitempty,omitzero"`

	// osDisk is the VM's OS disk.
	// +optional
	OSDisk AzureOSDisk `json:"osDisk,omitempty,omitzero"`

	// licenseType is Windows_Server to use Azure Hybrid Benefit; Windows
	// only (a Linux machine's VM gets no license type).
	// +optional
	LicenseType AzureLicenseType `json:"licenseType,omitempty"`

	// subnetName is the subnet of the cluster's network the VM's NIC joins;
	// the first subnet of the machine's role when empty.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=80
	SubnetName string `json:"subnetName,omitempty"`

	// enableIPForwarding lets the NIC forward traffic for addresses other than
	// its own, as l2bridge pod networking needs.
	// +optional
	EnableIPForwarding *bool `json:"enableIPForwarding,omitempty"`

	// sshPublicKey is the Azure VM's administrator SSH key; Linux only (a
	// Windows machine's logins are spec.sshAuthorizedKeys).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=8192
	SSHPublicKey string `json:"sshPublicKey,omitempty"`
}
