package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// MachineFinalizer keeps a HybridMachine until its VM is gone. Like Cluster
// API's newer finalizers (cluster.x-k8s.io/machineset) it is the API group
// and the kind, which the API server does not warn about.
const MachineFinalizer = "infrastructure.cluster.x-k8s.io/hybridmachine"

// LegacyMachineFinalizer is MachineFinalizer's name before it had a path.
// The reconciler replaces it with MachineFinalizer, and honours it on an
// object being deleted.
//
// Deprecated: use MachineFinalizer; this name is kept only to migrate
// existing objects.
const LegacyMachineFinalizer = "hybridmachine.infrastructure.cluster.x-k8s.io"

// HybridMachineSpec is the desired state of a HybridMachine. Exactly one of
// vsphere and azure is set, and it matches the HybridCluster's platform.
type HybridMachineSpec struct {
	// providerID is the ID of the VM as its Node reports it: vsphere://<BIOS
	// UUID> or azure://<VM resource ID>. Set by the controller.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ProviderID string `json:"providerID,omitempty"`

	// os is the machine's operating system. Windows machines are workers only.
	// +required
	OS OSSpec `json:"os,omitempty,omitzero"`

	// computerName overrides the machine's host name, which is otherwise
	// derived from the Machine's namespace and name. Windows computer names
	// are at most 15 characters. Not allowed in templates, where every
	// machine would get the same name.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	ComputerName string `json:"computerName,omitempty"`

	// sshAuthorizedKeys are the SSH public keys that may log in to the
	// machine, each one authorized_keys line (the contents of a .pub file,
	// such as "ssh-ed25519 AAAA... alice@example.com"; admission refuses an
	// entry that does not parse as one line and one key): the way to read
	// C:\ProgramData\capwin\bootstrap.log on a Windows node that did not
	// join. They sit here rather than under vsphere because who may log in
	// does not depend on the platform; each platform hands them to the
	// guest its own way. On vSphere they are the instance metadata's
	// public-keys-data, which cloudbase-init writes to the authorized_keys
	// of the user it is configured for (the image needs OpenSSH Server and
	// an sshd that reads that file; see docs/vsphere.md). cloud-init gives
	// them to its default user, which a cloud-config with its own users
	// list (as the kubeadm bootstrap provider writes) does not have: there
	// they go to root, which cloud-init refuses for logins, so a Linux
	// node's keys belong in its KubeadmConfig's users. On Azure they are
	// not delivered yet: Azure hands a Windows VM no SSH keys, and capwin
	// does not yet put them in the customData. Written to the VM when it
	// is created, so immutable.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=2048
	SSHAuthorizedKeys []string `json:"sshAuthorizedKeys,omitempty"`

	// vsphere makes the machine a vSphere VM.
	// +optional
	VSphere *VSphereMachineSpec `json:"vsphere,omitempty"`

	// azure makes the machine an Azure VM.
	// +optional
	Azure *AzureMachineSpec `json:"azure,omitempty"`
}

// HybridMachineInitializationStatus is the initialization state that the
// Cluster API contract reads.
// +kubebuilder:validation:MinProperties=1
type HybridMachineInitializationStatus struct {
	// provisioned is true once the VM exists, runs and has its provider ID.
	// +optional
	Provisioned *bool `json:"provisioned,omitempty"`
}

// MachineOperationType is what a long-running platform operation does.
// +kubebuilder:validation:Enum=Create;WaitForCreate;Configure;PowerOn;WriteBootstrapData;ClearBootstrapData;PowerOff;Delete;CreateNetworkInterface;DeleteNetworkInterface;DeleteDisk
type MachineOperationType string

const (
	// MachineOperationCreate makes the VM (a vSphere clone, an Azure VM).
	MachineOperationCreate MachineOperationType = "Create"
	// MachineOperationWaitForCreate waits, while a machine that was never
	// provisioned is deleted, for a create that may be the machine's own
	// and whose operation was never recorded (vSphere: a running clone of
	// the machine's template).
	MachineOperationWaitForCreate MachineOperationType = "WaitForCreate"
	// MachineOperationConfigure changes the VM's configuration before it
	// starts (vSphere: the network metadata with the NICs' MAC addresses).
	MachineOperationConfigure MachineOperationType = "Configure"
	// MachineOperationPowerOn starts the VM.
	MachineOperationPowerOn MachineOperationType = "PowerOn"
	// MachineOperationWriteBootstrapData replaces the bootstrap data of a
	// running VM whose node has not joined with the Machine's current data
	// (its bootstrap token was replaced after the VM was made).
	MachineOperationWriteBootstrapData MachineOperationType = "WriteBootstrapData"
	// MachineOperationClearBootstrapData removes the bootstrap data from the
	// VM once its node joined.
	MachineOperationClearBootstrapData MachineOperationType = "ClearBootstrapData"
	// MachineOperationPowerOff stops the VM before it is deleted.
	MachineOperationPowerOff MachineOperationType = "PowerOff"
	// MachineOperationDelete deletes the VM.
	MachineOperationDelete MachineOperationType = "Delete"
	// MachineOperationCreateNetworkInterface makes the VM's network
	// interface before the VM (Azure).
	MachineOperationCreateNetworkInterface MachineOperationType = "CreateNetworkInterface"
	// MachineOperationDeleteNetworkInterface deletes a network interface
	// that outlived its VM (Azure).
	MachineOperationDeleteNetworkInterface MachineOperationType = "DeleteNetworkInterface"
	// MachineOperationDeleteDisk deletes an OS disk that outlived its VM
	// (Azure).
	MachineOperationDeleteDisk MachineOperationType = "DeleteDisk"
)

// MachineOperation is a long-running operation the controller started on the
// machine's platform and looks at again on a later reconcile, instead of
// waiting for it.
type MachineOperation struct {
	// type is what the operation does.
	// +required
	Type MachineOperationType `json:"type,omitempty"`

	// id identifies the operation to its platform: on vSphere, the managed
	// object ID of a vCenter task (task-42); on Azure, the resume token of
	// the Azure SDK's poller for the long-running operation. The VM itself
	// is found by an ID or name derived from the HybridMachine, never by
	// this field.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=8192
	ID string `json:"id,omitempty"`
}

// IsZero reports whether no operation is recorded.
func (o MachineOperation) IsZero() bool { return o.ID == "" }

// HybridMachineStatus is the observed state of a HybridMachine.
// +kubebuilder:validation:MinProperties=1
type HybridMachineStatus struct {
	// initialization is what the Cluster API contract reads to learn that the
	// machine is provisioned.
	// +optional
	Initialization HybridMachineInitializationStatus `json:"initialization,omitempty,omitzero"`

	// addresses are the VM's host name and IP addresses.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Addresses []clusterv1.MachineAddress `json:"addresses,omitempty"`

	// failureDomain is where the VM was placed.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	FailureDomain string `json:"failureDomain,omitempty"`

	// operation is the platform operation in flight (a create, a power-on,
	// a delete), which the next reconcile looks at again. Empty when none
	// runs.
	// +optional
	Operation MachineOperation `json:"operation,omitempty,omitzero"`

	// nodeBootstrap is the join of a Windows machine's node as the node's
	// agent last reported it, read from the workload cluster while the node
	// joins. Empty on Linux machines, and until the first report arrives:
	// a node reports after discovery has proved the control plane (a failure
	// before it, such as preflight's, after a read-only discovery; a CA
	// mismatch under a valid token signature over the signed CA), so a
	// bad token, an unsigned cluster-info or a configuration that does not
	// parse is seen only on the node (capwin-node status,
	// C:\ProgramData\capwin\bootstrap.log).
	// +optional
	NodeBootstrap NodeBootstrapStatus `json:"nodeBootstrap,omitempty,omitzero"`

	// conditions are the HybridMachine's current state.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodeBootstrapState is a node's join state as its agent reports it.
// +kubebuilder:validation:Enum=Running;Failed;Joined
type NodeBootstrapState string

// The join states a node reports.
const (
	// NodeBootstrapRunning means a join phase runs.
	NodeBootstrapRunning NodeBootstrapState = "Running"
	// NodeBootstrapFailed means the phase failed.
	NodeBootstrapFailed NodeBootstrapState = "Failed"
	// NodeBootstrapJoined means the node joined.
	NodeBootstrapJoined NodeBootstrapState = "Joined"
)

// NodeBootstrapStatus is a node's join as its agent last reported it.
// +kubebuilder:validation:MinProperties=1
type NodeBootstrapStatus struct {
	// phase is the join phase that runs, failed or finished last, as the
	// node's agent names it (preflight, discovery, kubelet,
	// node-registration, ..., complete).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Phase string `json:"phase,omitempty"`

	// state is Running while a phase runs, Failed when it failed, Joined
	// once the node joined.
	// +optional
	State NodeBootstrapState `json:"state,omitempty"`

	// message is what the node said about the phase: why it failed, for
	// a failure. Cut to 4096 bytes.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`

	// retryable tells, for a failure, whether running the join again may
	// succeed (an expired token, an API server that did not answer): the
	// bootstrap stub then reboots the VM to run it again, up to its
	// attempt limit. False: it will not pass by itself.
	// +optional
	Retryable *bool `json:"retryable,omitempty"`

	// lastUpdateTime is when the node wrote the report, by the node's
	// clock.
	// +optional
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty,omitzero"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=hybridmachines,scope=Namespaced,categories=cluster-api,shortName=hm
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']",description="Cluster to which this HybridMachine belongs"
// +kubebuilder:printcolumn:name="Platform",type="string",JSONPath=".metadata.labels['infrastructure\\.capwin\\.io/platform']",description="vsphere or azure"
// +kubebuilder:printcolumn:name="OS",type="string",JSONPath=".spec.os.type"
// +kubebuilder:printcolumn:name="Release",type="string",JSONPath=".spec.os.windowsRelease",description="Windows Server release"
// +kubebuilder:printcolumn:name="ProviderID",type="string",JSONPath=".spec.providerID",priority=1
// +kubebuilder:printcolumn:name="Operation",type="string",JSONPath=".status.operation.type",description="The platform operation in flight"
// +kubebuilder:printcolumn:name="Join",type="string",JSONPath=".status.nodeBootstrap.phase",description="The join phase a Windows node reported last"
// +kubebuilder:printcolumn:name="Join State",type="string",JSONPath=".status.nodeBootstrap.state",description="Running, Failed or Joined"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// HybridMachine is one Linux or Windows Server VM of a Cluster API Machine.
type HybridMachine struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the HybridMachine.
	// +required
	Spec HybridMachineSpec `json:"spec,omitempty,omitzero"`

	// status is the observed state of the HybridMachine.
	// +optional
	Status HybridMachineStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the HybridMachine's conditions.
func (m *HybridMachine) GetConditions() []metav1.Condition { return m.Status.Conditions }

// SetConditions sets the HybridMachine's conditions.
func (m *HybridMachine) SetConditions(conditions []metav1.Condition) {
	m.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// HybridMachineList is a list of HybridMachine.
type HybridMachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HybridMachine `json:"items"`
}

// HybridMachineTemplateResource is the HybridMachine a template stamps out.
type HybridMachineTemplateResource struct {
	// metadata is applied to the HybridMachines made from this template.
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`

	// spec is the HybridMachines' spec.
	// +required
	Spec HybridMachineSpec `json:"spec,omitempty,omitzero"`
}

// HybridMachineTemplateSpec is the spec of a HybridMachineTemplate.
type HybridMachineTemplateSpec struct {
	// template is the HybridMachine to create.
	// +required
	Template HybridMachineTemplateResource `json:"template,omitempty,omitzero"`
}

// Architecture is a node's CPU architecture.
// +kubebuilder:validation:Enum=amd64;arm64
type Architecture string

// NodeInfo is what the cluster autoscaler needs to know about a template's
// nodes when it scales a MachineDeployment up from zero.
// +kubebuilder:validation:MinProperties=1
type NodeInfo struct {
	// architecture is the nodes' CPU architecture.
	// +optional
	Architecture Architecture `json:"architecture,omitempty"`

	// operatingSystem is linux or windows, as in the kubernetes.io/os label.
	// +optional
	// +kubebuilder:validation:Enum=linux;windows
	OperatingSystem string `json:"operatingSystem,omitempty"`
}

// HybridMachineTemplateStatus is what a template's machines offer, for the
// cluster autoscaler's scale from zero.
// +kubebuilder:validation:MinProperties=1
type HybridMachineTemplateStatus struct {
	// capacity is the CPU and memory of one machine.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`

	// nodeInfo is the nodes' architecture and operating system.
	// +optional
	NodeInfo NodeInfo `json:"nodeInfo,omitempty,omitzero"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=hybridmachinetemplates,scope=Namespaced,categories=cluster-api,shortName=hmt
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:printcolumn:name="OS",type="string",JSONPath=".spec.template.spec.os.type"
// +kubebuilder:printcolumn:name="Release",type="string",JSONPath=".spec.template.spec.os.windowsRelease"
// +kubebuilder:printcolumn:name="CPU",type="string",JSONPath=".status.capacity.cpu"
// +kubebuilder:printcolumn:name="Memory",type="string",JSONPath=".status.capacity.memory"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// HybridMachineTemplate is the HybridMachine of a MachineDeployment,
// KubeadmControlPlane or ClusterClass. It is immutable: make a new one to roll
// machines out.
type HybridMachineTemplate struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the template.
	// +required
	Spec HybridMachineTemplateSpec `json:"spec,omitempty,omitzero"`

	// status publishes the capacity of the template's machines.
	// +optional
	Status HybridMachineTemplateStatus `json:"status,omitempty,omitzero"`
}

// +kubebuilder:object:root=true

// HybridMachineTemplateList is a list of HybridMachineTemplate.
type HybridMachineTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HybridMachineTemplate `json:"items"`
}

func init() {
	objectTypes = append(objectTypes,
		&HybridMachine{}, &HybridMachineList{},
		&HybridMachineTemplate{}, &HybridMachineTemplateList{})
}

// Platform is the PlatformLabel value of the platform the spec is on
// (PlatformVSphere or PlatformAzure), or "" when it names none.
func (s *HybridMachineSpec) Platform() string {
	return platformOf(s.VSphere != nil, s.Azure != nil)
}
