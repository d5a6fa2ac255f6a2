package nodeconfig

// SchemaVersion names this version of the format. A node refuses a
// configuration of another version rather than guess at its meaning.
const SchemaVersion = "capwin.io/node-config/v1"

// Config is everything a Windows node needs to configure itself and join.
type Config struct {
	// SchemaVersion is always SchemaVersion.
	SchemaVersion string `json:"schemaVersion"`

	// NodeName is the node's name. Empty, the node takes its own computer
	// name, lower case (the infrastructure provider set it); the bootstrap
	// provider leaves it empty. Either way it must pass CheckNodeName.
	NodeName string `json:"nodeName,omitempty"`
	// KubernetesVersion is the version of the kubelet and kube-proxy the
	// node must run, for example v1.36.3.
	KubernetesVersion string `json:"kubernetesVersion"`
	// WindowsBuild is the host build the node must have (for example
	// 10.0.20348); the node refuses another. The bootstrap provider leaves
	// it empty; capwin render sets it when asked to.
	WindowsBuild string `json:"windowsBuild,omitempty"`

	// Join is what kubeadm join needs.
	Join Join `json:"join"`

	// Labels are added to the Node.
	Labels map[string]string `json:"labels,omitempty"`
	// Taints are added to the Node.
	Taints []Taint `json:"taints,omitempty"`

	Kubelet    Kubelet    `json:"kubelet"`
	Containerd Containerd `json:"containerd"`
	Network    Network    `json:"network"`
	KubeProxy  KubeProxy  `json:"kubeProxy"`

	// CSIProxy installs and starts csi-proxy before the kubelet.
	CSIProxy bool `json:"csiProxy,omitempty"`
	// Proxy is the machine-wide HTTP proxy environment, if any.
	Proxy *Proxy `json:"proxy,omitempty"`

	// Files are written before the join.
	Files []File `json:"files,omitempty"`
	// PreJoinCommands and PostJoinCommands are PowerShell commands the agent
	// runs, in order, before and after kubeadm join.
	PreJoinCommands  []string `json:"preJoinCommands,omitempty"`
	PostJoinCommands []string `json:"postJoinCommands,omitempty"`
}

// Join is the kubeadm join discovery and credentials.
type Join struct {
	// APIServerEndpoint is host:port of the control plane.
	APIServerEndpoint string `json:"apiServerEndpoint"`
	// Token is the bootstrap token, [a-z0-9]{6}.[a-z0-9]{16}.
	Token string `json:"token"`
	// CACertHashes pin the cluster CA: sha256:<hex of the SubjectPublicKeyInfo>.
	CACertHashes []string `json:"caCertHashes"`
	// ProgressConfigMap is the name of the ConfigMap in the namespace
	// capwin-node-bootstrap (discovery.ProgressNamespace) the node writes
	// its join progress to, with its bootstrap token. The bootstrap
	// provider sets it to the Machine's name. Empty: the node reports its
	// progress only on its own disk.
	ProgressConfigMap string `json:"progressConfigMap,omitempty"`
}

// Taint is a Node taint.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// Arg is a command-line flag without its dashes.
type Arg struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Kubelet holds the kubelet's reservations and extra flags.
type Kubelet struct {
	// SystemReserved and KubeReserved map resource names to quantities
	// (memory: 1536Mi). The node refuses to join when their memory adds up
	// to its own memory or more.
	SystemReserved map[string]string `json:"systemReserved,omitempty"`
	KubeReserved   map[string]string `json:"kubeReserved,omitempty"`
	ExtraArgs      []Arg             `json:"extraArgs,omitempty"`
}

// Containerd configures the runtime.
type Containerd struct {
	// PauseImage is the sandbox image; the agent picks the pinned one for
	// the host build when empty.
	PauseImage string `json:"pauseImage,omitempty"`
	// Isolation is Process or HyperV; HyperV adds containerd's Hyper-V
	// handler and requires the Hyper-V feature.
	Isolation string `json:"isolation"`
	// RegistryMirrors maps registries to mirror endpoints.
	RegistryMirrors []RegistryMirror `json:"registryMirrors,omitempty"`
}

// RegistryMirror is the mirrors of one registry.
type RegistryMirror struct {
	Registry  string   `json:"registry"`
	Endpoints []string `json:"endpoints"`
}

// Network is the pod network.
type Network struct {
	// CNI is one of CNIs: flannel or calico.
	CNI string `json:"cni"`
	// Mode is overlay or l2bridge.
	Mode string `json:"mode"`
	// VXLANVNI and VXLANPort are set in overlay mode (4096 and 4789).
	VXLANVNI  int `json:"vxlanVNI,omitempty"`
	VXLANPort int `json:"vxlanPort,omitempty"`
	// PodCIDRs and ServiceCIDRs are the cluster's.
	PodCIDRs     []string `json:"podCIDRs"`
	ServiceCIDRs []string `json:"serviceCIDRs"`
	// NodeSubnet is the node network's CIDR, when known.
	NodeSubnet string `json:"nodeSubnet,omitempty"`
	// OutboundNATExceptions are reached without outbound NAT: the pod and
	// service CIDRs, the node subnet and any the user added.
	OutboundNATExceptions []string `json:"outboundNATExceptions"`
}

// KubeProxy configures the HNS kube-proxy.
type KubeProxy struct {
	EnableDSR bool  `json:"enableDSR,omitempty"`
	ExtraArgs []Arg `json:"extraArgs,omitempty"`
}

// Proxy is an HTTP proxy.
type Proxy struct {
	HTTPProxy  string   `json:"httpProxy,omitempty"`
	HTTPSProxy string   `json:"httpsProxy,omitempty"`
	NoProxy    []string `json:"noProxy,omitempty"`
}

// File is written to the node. Content is base64, so any bytes travel.
type File struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}
