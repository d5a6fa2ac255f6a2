// Package layout names the files and directories of a capwin Windows node:
// where the bundle is installed, where each component's configuration,
// state and logs live. The agent and the renderers read these names from
// here, and docs/node-agent.md repeats them.
package layout

// Directories.
const (
	// InstallDir holds capwin-node.exe and the bundle manifest.
	InstallDir = `C:\Program Files\capwin`
	// BinDir holds the bundle's binaries: kubelet, kube-proxy, containerd,
	// the runhcs shim, flanneld, csi-proxy.
	BinDir = `C:\Program Files\capwin\bin`
	// CNIBinDir and CNIConfDir are where containerd looks for CNI plugins
	// and their configuration (the directories Calico's and flannel's
	// Windows installs use too).
	CNIBinDir  = `C:\opt\cni\bin`
	CNIConfDir = `C:\etc\cni\net.d`
	// StateDir is the agent's own: the node configuration the stub wrote,
	// the join state, the status report and the agent's log.
	StateDir = `C:\ProgramData\capwin`
	// LogDir holds each service's log.
	LogDir = `C:\var\log\capwin`
	// KubeletDir is the kubelet's root directory; its certificates are in
	// KubeletPKIDir.
	KubeletDir    = `C:\var\lib\kubelet`
	KubeletPKIDir = `C:\var\lib\kubelet\pki`
	// KubernetesDir holds kubeconfigs and the cluster CA.
	KubernetesDir = `C:\etc\kubernetes`
	// ContainerdDir holds containerd's configuration; its registry hosts
	// files are under ContainerdCertsDir.
	ContainerdDir      = `C:\etc\containerd`
	ContainerdCertsDir = `C:\etc\containerd\certs.d`
	ContainerdRoot     = `C:\ProgramData\containerd\root`
	ContainerdState    = `C:\ProgramData\containerd\state`
	// FlannelDir holds flannel's net-conf.json; flannel writes its lease
	// to FlannelRunDir.
	FlannelDir    = `C:\etc\kube-flannel`
	FlannelRunDir = `C:\run\flannel`
	// CNIDataDir is host-local IPAM's store; kube-proxy's source VIP is
	// reserved there too, so no pod is ever given it.
	CNIDataDir = `C:\var\lib\cni\networks`
	// KubeProxyDir holds kube-proxy's source VIP record.
	KubeProxyDir = `C:\var\lib\kube-proxy`
)

// Files.
const (
	Agent      = InstallDir + `\capwin-node.exe`
	Manifest   = InstallDir + `\manifest.json`
	NodeConfig = StateDir + `\node-config.json`
	JoinState  = StateDir + `\join-state.json`
	Status     = StateDir + `\status.json`
	AgentLog   = StateDir + `\agent.log`
	// AgentLock is the lock one join, install or reset holds at a time.
	AgentLock = StateDir + `\agent.lock`
	// CommandsLog holds the output of the pre- and post-join commands. It
	// may hold anything, so collect-logs leaves it out.
	CommandsLog         = StateDir + `\commands.log`
	BootstrapLog        = StateDir + `\bootstrap.log`
	CACert              = KubernetesDir + `\pki\ca.crt`
	BootstrapKubeconfig = KubernetesDir + `\bootstrap-kubelet.conf`
	KubeletKubeconfig   = KubernetesDir + `\kubelet.conf`
	KubeletConfig       = KubeletDir + `\config.yaml`
	KubeletClientCert   = KubeletPKIDir + `\kubelet-client-current.pem`
	ContainerdConfig    = ContainerdDir + `\config.toml`
	FlannelNetConf      = FlannelDir + `\net-conf.json`
	FlannelSubnetEnv    = FlannelRunDir + `\subnet.env`
	SourceVIP           = KubeProxyDir + `\sourceVip.json`
	// FlannelCNIConf is the flannel CNI configuration, the only file in
	// CNIConfDir on a flannel node.
	FlannelCNIConf = CNIConfDir + `\10-flannel.conf`
	// SuccessSentinel is Cluster API's: written once the node joined.
	SuccessSentinel = `C:\run\cluster-api\bootstrap-success.complete`
)

// LegacySourceVIPFiles are where flannel's and sig-windows-tools' scripts
// kept kube-proxy's source VIP. A stale one from an earlier join holds an
// address of the old pod subnet and breaks the next join; the agent removes
// them.
var LegacySourceVIPFiles = []string{
	`C:\k\sourceVip.json`,
	`C:\k\sourceVipRequest.json`,
	KubeProxyDir + `\sourceVipRequest.json`,
}

// Service names.
const (
	ServiceContainerd = "containerd"
	ServiceKubelet    = "kubelet"
	ServiceKubeProxy  = "kube-proxy"
	ServiceFlanneld   = "flanneld"
	ServiceCSIProxy   = "csi-proxy"
)

// ExternalNetwork is the HNS network the agent creates before anything
// else: creating a host's first HNS network resets its adapter for a few
// seconds, which must happen before the kubelet and the CNI depend on it.
const ExternalNetwork = "External"

// The HNS networks flannel creates, by backend, and Calico's.
const (
	FlannelOverlayNetwork  = "vxlan0"
	FlannelL2BridgeNetwork = "cbr0"
	CalicoNetwork          = "Calico"
)
