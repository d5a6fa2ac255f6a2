package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// ConfigFinalizer lets the reconciler revoke the bootstrap token before the
// WindowsKubeadmConfig is removed. Like Cluster API's newer finalizers
// (cluster.x-k8s.io/machineset) it is the API group and the kind, which the
// API server does not warn about.
const ConfigFinalizer = "bootstrap.cluster.x-k8s.io/windowskubeadmconfig"

// LegacyConfigFinalizer is ConfigFinalizer's name before it had a path.
// The reconciler replaces it with ConfigFinalizer, and honours it on an
// object being deleted.
//
// Deprecated: use ConfigFinalizer; this name is kept only to migrate
// existing objects.
const LegacyConfigFinalizer = "windowskubeadmconfig.bootstrap.cluster.x-k8s.io"

// WindowsKubeadmConfigSpec is how a Windows Server worker joins (kubeadm's
// join, which the node agent performs itself: the node runs no kubeadm)
// and the node settings it boots with.
type WindowsKubeadmConfigSpec struct {
	// nodeRegistration is how the node registers with the cluster.
	// +optional
	NodeRegistration NodeRegistration `json:"nodeRegistration,omitempty,omitzero"`

	// kubelet holds the kubelet's resource reservations.
	// +optional
	Kubelet KubeletSpec `json:"kubelet,omitempty,omitzero"`

	// containerd configures the container runtime.
	// +optional
	Containerd ContainerdSpec `json:"containerd,omitempty,omitzero"`

	// network is the pod network on the node.
	// +optional
	Network NetworkSpec `json:"network,omitempty,omitzero"`

	// kubeProxy configures kube-proxy, which on Windows programs HNS.
	// +optional
	KubeProxy KubeProxySpec `json:"kubeProxy,omitempty,omitzero"`

	// csiProxy installs and starts csi-proxy, which CSI node plugins need on Windows.
	// +optional
	CSIProxy CSIProxySpec `json:"csiProxy,omitempty,omitzero"`

	// gmsa is for group Managed Service Accounts: not implemented yet, and
	// enabled is refused (see gmsa.enabled).
	// +optional
	GMSA GMSASpec `json:"gmsa,omitempty,omitzero"`

	// proxy sets the machine-wide HTTP proxy environment.
	// +optional
	Proxy ProxySpec `json:"proxy,omitempty,omitzero"`

	// files are written to the node before it joins.
	// +optional
	// +listType=map
	// +listMapKey=path
	// +kubebuilder:validation:MaxItems=64
	Files []File `json:"files,omitempty"`

	// preJoinCommands are PowerShell commands the node agent runs, in order,
	// before it joins.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=10240
	PreJoinCommands []string `json:"preJoinCommands,omitempty"`

	// postJoinCommands are PowerShell commands the node agent runs, in order,
	// after the node joined.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=10240
	PostJoinCommands []string `json:"postJoinCommands,omitempty"`
}

// Arg is one command-line flag, without its leading dashes.
type Arg struct {
	// name of the flag, for example node-labels.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name,omitempty"`

	// value of the flag.
	// +required
	// +kubebuilder:validation:MinLength=0
	// +kubebuilder:validation:MaxLength=1024
	Value *string `json:"value,omitempty"`
}

// NodeRegistration is how a Windows node registers with the cluster.
type NodeRegistration struct {
	// labels are added to the Node.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// taints are added to the Node. Add os=windows:NoSchedule to keep Linux
	// pods off Windows nodes.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Taints []corev1.Taint `json:"taints,omitempty"`

	// kubeletExtraArgs are extra kubelet flags.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	KubeletExtraArgs []Arg `json:"kubeletExtraArgs,omitempty"`
}

// KubeletSpec holds the kubelet's reservations. Windows has no OOM killer, so
// memory for the system and the kubelet must be set aside: system plus kube
// reserved memory is at least 2Gi, and below the machine's memory, which the
// node checks before it joins (a node that would have nothing left for pods
// does not join).
type KubeletSpec struct {
	// systemReserved is set aside for the operating system. Defaults to
	// memory 1536Mi and cpu 500m.
	// +optional
	SystemReserved corev1.ResourceList `json:"systemReserved,omitempty"`

	// kubeReserved is set aside for the kubelet and the container runtime.
	// Defaults to memory 512Mi and cpu 500m.
	// +optional
	KubeReserved corev1.ResourceList `json:"kubeReserved,omitempty"`
}

// Isolation is how Windows containers are isolated from the host.
// +kubebuilder:validation:Enum=Process;HyperV
type Isolation string

const (
	// ProcessIsolation shares the host kernel; the container's build must match the host's.
	ProcessIsolation Isolation = "Process"
	// HyperVIsolation adds containerd's Hyper-V handler, which runs each pod of
	// a RuntimeClass naming it in a utility VM; the image must have the
	// Hyper-V feature (the node agent checks it, it does not enable it).
	// Admission refuses it until capwin builds it end to end (see the
	// isolation field).
	HyperVIsolation Isolation = "HyperV"
)

// ContainerdRuntime is the one container runtime of Windows nodes.
const ContainerdRuntime = "containerd"

// ContainerdSpec configures containerd.
type ContainerdSpec struct {
	// runtime is the container runtime; containerd, the only one. Docker
	// (dockershim) was removed from Kubernetes in 1.24.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	Runtime string `json:"runtime,omitempty"`

	// pauseImage is the sandbox image; it must match the host build and
	// contain wincat for port forwarding. Defaults to the pinned image for the
	// node's Windows release.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	PauseImage string `json:"pauseImage,omitempty"`

	// isolation is Process, the default and the only value admission
	// accepts for now. HyperV (containerd's Hyper-V handler
	// runhcs-wcow-hypervisor, for pods whose RuntimeClass names it) is
	// refused until capwin builds it end to end: on vSphere capwin gives its
	// VMs no nested virtualization, on Azure it checks no VM size for it,
	// and the flavors ship no RuntimeClass for the handler. A bootstrap config
	// cannot see its machine's platform, so HyperV is refused on every
	// platform. A config or template that has it from before keeps being
	// updatable and deletable.
	// +optional
	Isolation Isolation `json:"isolation,omitempty"`

	// registryMirrors are pull-through mirrors per registry.
	// +optional
	// +listType=map
	// +listMapKey=registry
	// +kubebuilder:validation:MaxItems=32
	RegistryMirrors []RegistryMirror `json:"registryMirrors,omitempty"`
}

// RegistryMirror is the mirrors of one registry.
type RegistryMirror struct {
	// registry is the registry host, for example docker.io.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Registry string `json:"registry,omitempty"`

	// endpoints are the mirrors' URLs, tried in order.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	Endpoints []string `json:"endpoints,omitempty"`
}

// CNI is the pod network plugin.
// +kubebuilder:validation:Enum=flannel;calico
type CNI string

const (
	// Flannel uses the win-overlay or win-bridge CNI plugins with flanneld.
	Flannel CNI = "flannel"
	// Calico uses Calico for Windows.
	Calico CNI = "calico"
)

// NetworkMode is how pod traffic crosses between nodes.
// +kubebuilder:validation:Enum=overlay;l2bridge
type NetworkMode string

const (
	// Overlay encapsulates pod traffic in VXLAN. IPv4 only on Windows.
	Overlay NetworkMode = "overlay"
	// L2Bridge routes pod traffic on the node network; it needs routes to
	// each node's pod CIDR and, on vSphere, MAC spoofing allowed.
	L2Bridge NetworkMode = "l2bridge"
)

const (
	// WindowsVXLANVNI is the one VXLAN network identifier Windows overlay networking accepts.
	WindowsVXLANVNI = 4096
	// WindowsVXLANPort is the one VXLAN UDP port Windows overlay networking accepts.
	WindowsVXLANPort = 4789
)

// NetworkSpec is the pod network of a Windows node.
type NetworkSpec struct {
	// cni is flannel (default) or calico.
	// +optional
	CNI CNI `json:"cni,omitempty"`

	// mode is overlay (default, VXLAN) or l2bridge.
	// +optional
	Mode NetworkMode `json:"mode,omitempty"`

	// vxlan is the overlay's VXLAN identifier and port.
	// +optional
	VXLAN VXLANSpec `json:"vxlan,omitempty,omitzero"`

	// nodeSubnet is the CIDR of the network the node's address is in; it is
	// excluded from outbound NAT.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	NodeSubnet string `json:"nodeSubnet,omitempty"`

	// outboundNATExceptions are further CIDRs reached without outbound NAT,
	// in addition to the cluster's pod and service CIDRs and the node subnet.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=64
	OutboundNATExceptions []string `json:"outboundNATExceptions,omitempty"`
}

// VXLANSpec is a VXLAN network identifier and UDP port.
type VXLANSpec struct {
	// vni is the VXLAN network identifier; Windows accepts only 4096 (default).
	// +optional
	VNI int32 `json:"vni,omitempty"`

	// port is the VXLAN UDP port; Windows accepts only 4789 (default).
	// +optional
	Port int32 `json:"port,omitempty"`
}

// KubeProxyMode is kube-proxy's proxy mode. On Windows only kernelspace
// (the HNS proxy) remains.
// +kubebuilder:validation:Enum=kernelspace
type KubeProxyMode string

// KernelspaceProxy is the HNS-programming kube-proxy of Windows.
const KernelspaceProxy KubeProxyMode = "kernelspace"

// KubeProxySpec configures kube-proxy.
type KubeProxySpec struct {
	// mode is kernelspace, the default and only mode on Windows.
	// +optional
	Mode KubeProxyMode `json:"mode,omitempty"`

	// enableDSR turns on Direct Server Return for load-balanced traffic.
	// +optional
	EnableDSR *bool `json:"enableDSR,omitempty"`

	// extraArgs are extra kube-proxy flags.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	ExtraArgs []Arg `json:"extraArgs,omitempty"`
}

// CSIProxySpec installs csi-proxy.
type CSIProxySpec struct {
	// enabled installs csi-proxy as a service and starts it before the kubelet.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// GMSASpec is about group Managed Service Accounts on a node.
type GMSASpec struct {
	// enabled must be false or unset: capwin does not implement gMSA yet
	// (the cluster's credential-spec webhook, and a credential path on each
	// node), and refuses true rather than make a node that ignores it.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// ProxySpec is the HTTP proxy of a node behind one.
type ProxySpec struct {
	// httpProxy is the URL of the proxy for HTTP.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	HTTPProxy string `json:"httpProxy,omitempty"`

	// httpsProxy is the URL of the proxy for HTTPS.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	HTTPSProxy string `json:"httpsProxy,omitempty"`

	// noProxy are hosts, domains and CIDRs reached directly. The cluster's
	// pod and service CIDRs, the API endpoint and the node subnet are added.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	NoProxy []string `json:"noProxy,omitempty"`
}

// FileEncoding is how a file's content is encoded.
// +kubebuilder:validation:Enum=plain;base64
type FileEncoding string

// File is a file written to the node.
type File struct {
	// path is the absolute Windows path, for example C:\etc\app.conf.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=260
	Path string `json:"path,omitempty"`

	// content is the file's content. Exactly one of content and contentFrom is set.
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	Content string `json:"content,omitempty"`

	// contentFrom reads the content from a Secret in the config's namespace.
	// +optional
	ContentFrom *FileSource `json:"contentFrom,omitempty"`

	// encoding of content: plain (default) or base64.
	// +optional
	Encoding FileEncoding `json:"encoding,omitempty"`
}

// FileSource is a key of a Secret.
type FileSource struct {
	// secret is the Secret and key.
	// +required
	Secret SecretKeyReference `json:"secret,omitempty,omitzero"`
}

// SecretKeyReference is a key of a Secret in the same namespace.
type SecretKeyReference struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// key in the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Key string `json:"key,omitempty"`
}

// WindowsKubeadmConfigInitializationStatus is the initialization state that
// the Cluster API contract reads.
// +kubebuilder:validation:MinProperties=1
type WindowsKubeadmConfigInitializationStatus struct {
	// dataSecretCreated is true once the bootstrap data Secret exists.
	// +optional
	DataSecretCreated *bool `json:"dataSecretCreated,omitempty"`
}

// WindowsKubeadmConfigStatus is the observed state of a WindowsKubeadmConfig.
// +kubebuilder:validation:MinProperties=1
type WindowsKubeadmConfigStatus struct {
	// initialization is what the Cluster API contract reads to learn that the
	// bootstrap data is ready.
	// +optional
	Initialization WindowsKubeadmConfigInitializationStatus `json:"initialization,omitempty,omitzero"`

	// dataSecretName is the Secret holding the bootstrap data.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	DataSecretName string `json:"dataSecretName,omitempty"`

	// conditions are the config's current state.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=windowskubeadmconfigs,scope=Namespaced,categories=cluster-api,shortName=wkc
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']",description="Cluster to which this config belongs"
// +kubebuilder:printcolumn:name="CNI",type="string",JSONPath=".spec.network.cni"
// +kubebuilder:printcolumn:name="Mode",type="string",JSONPath=".spec.network.mode"
// +kubebuilder:printcolumn:name="Data Secret",type="string",JSONPath=".status.dataSecretName"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// WindowsKubeadmConfig is the bootstrap configuration of one Windows Server
// worker: its kubeadm join and everything the node sets up before it.
type WindowsKubeadmConfig struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the join request and node settings.
	// +optional
	Spec WindowsKubeadmConfigSpec `json:"spec,omitempty,omitzero"`

	// status is the observed state of the config.
	// +optional
	Status WindowsKubeadmConfigStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the config's conditions.
func (c *WindowsKubeadmConfig) GetConditions() []metav1.Condition { return c.Status.Conditions }

// SetConditions sets the config's conditions.
func (c *WindowsKubeadmConfig) SetConditions(conditions []metav1.Condition) {
	c.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// WindowsKubeadmConfigList is a list of WindowsKubeadmConfig.
type WindowsKubeadmConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WindowsKubeadmConfig `json:"items"`
}

// WindowsKubeadmConfigTemplateResource is the config a template stamps out.
type WindowsKubeadmConfigTemplateResource struct {
	// metadata is applied to the configs made from this template.
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`

	// spec is the configs' spec.
	// +optional
	Spec WindowsKubeadmConfigSpec `json:"spec,omitempty,omitzero"`
}

// WindowsKubeadmConfigTemplateSpec is the spec of a WindowsKubeadmConfigTemplate.
type WindowsKubeadmConfigTemplateSpec struct {
	// template is the WindowsKubeadmConfig to create.
	// +required
	Template WindowsKubeadmConfigTemplateResource `json:"template,omitempty,omitzero"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=windowskubeadmconfigtemplates,scope=Namespaced,categories=cluster-api,shortName=wkct
// +kubebuilder:storageversion
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// WindowsKubeadmConfigTemplate is the WindowsKubeadmConfig of a
// MachineDeployment or ClusterClass worker class.
type WindowsKubeadmConfigTemplate struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the template.
	// +required
	Spec WindowsKubeadmConfigTemplateSpec `json:"spec,omitempty,omitzero"`
}

// +kubebuilder:object:root=true

// WindowsKubeadmConfigTemplateList is a list of WindowsKubeadmConfigTemplate.
type WindowsKubeadmConfigTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WindowsKubeadmConfigTemplate `json:"items"`
}

func init() {
	objectTypes = append(objectTypes,
		&WindowsKubeadmConfig{}, &WindowsKubeadmConfigList{},
		&WindowsKubeadmConfigTemplate{}, &WindowsKubeadmConfigTemplateList{})
}
