package render

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
)

// Recovery: the service manager restarts a failed service after 10 s, then
// 30 s, then every minute, and forgets the failures after a day of running.
// containerd registers itself with similar actions
// (cmd/containerd/command/service_windows.go: 15 s twice, reset after a
// day); the growing delay keeps a crash loop from hammering the API server.
var (
	restartDelays = []time.Duration{10 * time.Second, 30 * time.Second, time.Minute}
	resetPeriod   = 24 * time.Hour
)

// kubeletPriorityClass keeps pods from starving the kubelet of CPU: Windows
// cannot guarantee a process a minimum CPU share, and the Kubernetes
// documentation ("Resource management for Windows nodes") and CAPZ's
// Windows template run the kubelet above normal priority.
const kubeletPriorityClass = "ABOVE_NORMAL_PRIORITY_CLASS"

// extraArgs renders ExtraArgs as --name=value, in their order, after the
// agent's own flags. Later occurrences of a flag win, as the components'
// flag parsing keeps the last value: that is how a user changes --v or
// --windows-priorityclass.
func extraArgs(args []nodeconfig.Arg, reserved map[string]bool) []string {
	var out []string
	for _, a := range args {
		if argProblem(a, reserved) != "" {
			continue
		}
		out = append(out, "--"+a.Name+"="+a.Value)
	}
	return out
}

// nodeLabels renders --node-labels' value: key=value pairs, sorted. A pair
// that is not a valid label is left out (and reported by Check): a ',' or
// '=' in it would let it add labels of its own, and the kubelet refuses
// invalid labels anyway.
func nodeLabels(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k, v := range labels {
		if labelProblem(k, v) == "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	pairs := make([]string, len(keys))
	for i, k := range keys {
		pairs[i] = k + "=" + labels[k]
	}
	return strings.Join(pairs, ",")
}

func exe(name string) string { return layout.BinDir + `\` + name }

// ServiceLog is where a service's output goes.
func ServiceLog(name string) string { return layout.LogDir + `\` + name + ".log" }

// hosted runs argv under capwin's service host, which answers the service
// manager, writes the program's output to its log and stops it on request.
func hosted(name string, argv ...string) []string {
	return append([]string{layout.Agent, "service", "run", "--name", name, "--log-file", ServiceLog(name), "--"}, argv...)
}

// service is a service that starts with Windows and restarts on failure.
//
// The agent starts the services itself, in order, during the join, and
// could register them Manual for that. They are Automatic instead so that
// a node that reboots after a finished join comes back on its own: the
// service manager starts them at boot, and the dependencies give the order
// (containerd, csi-proxy, the kubelet, then flanneld and kube-proxy).
func service(name, display, description string, command []string, deps ...string) host.ServiceSpec {
	return host.ServiceSpec{
		Name:          name,
		DisplayName:   display,
		Description:   description,
		Command:       command,
		Dependencies:  deps,
		StartType:     host.StartAutomatic,
		RestartDelays: append([]time.Duration(nil), restartDelays...),
		ResetPeriod:   resetPeriod,
	}
}

// Services returns the node's Windows services in start order: containerd,
// csi-proxy when enabled, the kubelet. The pod network's services are its
// CNI driver's (node-components/cni); kube-proxy, which needs the pod
// network and its source VIP, comes from KubeProxyService.
func Services(cfg *nodeconfig.Config, iface host.Interface) []host.ServiceSpec {
	svcs := []host.ServiceSpec{containerdService()}
	kubeletDeps := []string{layout.ServiceContainerd}
	if cfg.CSIProxy {
		svcs = append(svcs, csiProxyService())
		kubeletDeps = append(kubeletDeps, layout.ServiceCSIProxy)
	}
	svcs = append(svcs, kubeletService(cfg, iface, kubeletDeps))
	for i := range svcs {
		svcs[i].Environment = append(svcs[i].Environment, ProxyEnvironment(cfg)...)
	}
	return svcs
}

// ProxyEnvironment is the HTTP proxy as environment variables. The agent
// sets them machine-wide too, but the service manager hands services the
// machine environment it read at boot: only a service's own environment
// reaches it before the next reboot, and containerd pulls through it.
func ProxyEnvironment(cfg *nodeconfig.Config) []string {
	p := cfg.Proxy
	if p == nil {
		return nil
	}
	var env []string
	for _, kv := range [][2]string{{"HTTP_PROXY", p.HTTPProxy}, {"HTTPS_PROXY", p.HTTPSProxy}, {"NO_PROXY", strings.Join(p.NoProxy, ",")}} {
		if kv[1] != "" {
			env = append(env, kv[0]+"="+kv[1])
		}
	}
	return env
}

// containerdService runs containerd as its own Windows service: with
// --run-service it answers the service manager itself, and --log-file
// takes the place of the console it does not have
// (cmd/containerd/command/service_windows.go). Its panics go to
// panic.log in its root.
func containerdService() host.ServiceSpec {
	return service(layout.ServiceContainerd, "containerd", "Container runtime (capwin).", []string{
		exe("containerd.exe"),
		"--config", layout.ContainerdConfig,
		"--run-service",
		"--service-name", layout.ServiceContainerd,
		"--log-file", ServiceLog(layout.ServiceContainerd),
	})
}

// csiProxyService runs csi-proxy v1, which CSI node plugins call for disk,
// volume, SMB and iSCSI operations on the host. Its flags are Go's flag
// package's (cmd/csi-proxy/main.go); --kubelet-path bounds the paths it
// will touch to the kubelet's directory.
func csiProxyService() host.ServiceSpec {
	return service(layout.ServiceCSIProxy, "CSI Proxy", "Host storage operations for CSI node plugins (capwin).", hosted(layout.ServiceCSIProxy,
		exe("csi-proxy.exe"),
		"--kubelet-path="+layout.KubeletDir,
		"--v=2",
	))
}

func kubeletService(cfg *nodeconfig.Config, iface host.Interface, deps []string) host.ServiceSpec {
	argv := []string{
		exe("kubelet.exe"),
		"--config=" + layout.KubeletConfig,
		"--bootstrap-kubeconfig=" + layout.BootstrapKubeconfig,
		"--kubeconfig=" + layout.KubeletKubeconfig,
		"--root-dir=" + layout.KubeletDir,
		"--cert-dir=" + layout.KubeletPKIDir,
		"--hostname-override=" + cfg.NodeName,
	}
	if iface.IPv4 != "" {
		argv = append(argv, "--node-ip="+iface.IPv4)
	}
	if l := nodeLabels(cfg.Labels); l != "" {
		argv = append(argv, "--node-labels="+l)
	}
	argv = append(argv, "--windows-priorityclass="+kubeletPriorityClass, "--v=2")
	argv = append(argv, extraArgs(cfg.Kubelet.ExtraArgs, kubeletReservedFlags)...)
	return service(layout.ServiceKubelet, "kubelet", "Kubernetes node agent (capwin).", hosted(layout.ServiceKubelet, argv...), deps...)
}

// FlanneldService runs flanneld outside a pod, as the upstream Windows
// scripts did before host-process containers: with the kube subnet manager,
// the node name from NODE_NAME (pkg/subnet/kube/kube.go reads it when
// POD_NAME and POD_NAMESPACE are unset), and the node's address as its
// interface. --ip-masq stays false: on Windows outbound NAT is the CNI's
// OutBoundNAT policy, and flannel's own masquerading is iptables only
// (pkg/trafficmngr/iptables/iptables_windows.go does nothing).
//
// flanneld runs with the kubelet's kubeconfig: its identity is the node's
// (system:node:<name>, group system:nodes), and client-go reloads the
// kubelet's rotated certificate from the files the kubeconfig names. The
// Node authorizer lets it get its own Node and patch its status; flannel's
// kube subnet manager also lists and watches every Node, which since
// Kubernetes 1.34 (AuthorizeNodeWithSelectors, locked on) only RBAC can
// grant a node: the flavors bind the ClusterRole capwin:flanneld to the
// group system:nodes (docs/node-identity.md). Without that grant flanneld
// gets no lease and the join waits for its network in vain.
func FlanneldService(cfg *nodeconfig.Config, iface host.Interface) host.ServiceSpec {
	s := service(layout.ServiceFlanneld, "flanneld", "flannel pod network (capwin).", hosted(layout.ServiceFlanneld,
		exe("flanneld.exe"),
		"--kube-subnet-mgr",
		"--kubeconfig-file="+layout.KubeletKubeconfig,
		"--net-config-path="+layout.FlannelNetConf,
		"--subnet-file="+layout.FlannelSubnetEnv,
		"--iface="+iface.IPv4,
		"--ip-masq=false",
	), layout.ServiceKubelet)
	s.Environment = append([]string{"NODE_NAME=" + cfg.NodeName}, ProxyEnvironment(cfg)...)
	return s
}

// KubeProxyService is kube-proxy in the Windows kernel (HNS) mode, on the
// HNS network network (the CNI driver's pod network).
//
// In overlay mode kube-proxy needs a source VIP on the node's pod subnet,
// which the CNI driver reserved; sourceVIP is empty otherwise. WinOverlay and WinDSR are GA and locked on since
// Kubernetes 1.34 (pkg/features/kube_features.go), so no feature gate is
// passed; only a kube-proxy older than 1.33, where WinDSR was off by
// default, gets --feature-gates=WinDSR=true with DSR.
//
// kube-proxy runs with the kubelet's kubeconfig, as flanneld does. The
// Node authorizer lets a node read Services and its own Node and write
// Events, not list EndpointSlices or ServiceCIDRs: the flavors bind
// kube-proxy's ClusterRole system:node-proxier to the group system:nodes
// (docs/node-identity.md). Without that grant kube-proxy programs no
// Service.
func KubeProxyService(cfg *nodeconfig.Config, iface host.Interface, network, sourceVIP string) host.ServiceSpec {
	argv := []string{
		exe("kube-proxy.exe"),
		"--proxy-mode=kernelspace",
		"--hostname-override=" + cfg.NodeName,
		"--kubeconfig=" + layout.KubeletKubeconfig,
		"--cluster-cidr=" + strings.Join(cfg.Network.PodCIDRs, ","),
		"--network-name=" + network,
	}
	if sourceVIP != "" {
		argv = append(argv, "--source-vip="+sourceVIP)
	}
	if cfg.KubeProxy.EnableDSR {
		if minorBefore(cfg.KubernetesVersion, 33) {
			argv = append(argv, "--feature-gates=WinDSR=true")
		}
		argv = append(argv, "--enable-dsr=true")
	}
	argv = append(argv, "--v=2")
	argv = append(argv, extraArgs(cfg.KubeProxy.ExtraArgs, kubeProxyReservedFlags)...)
	svc := service(layout.ServiceKubeProxy, "kube-proxy", "Kubernetes service proxy (capwin).", hosted(layout.ServiceKubeProxy, argv...), layout.ServiceKubelet)
	svc.Environment = append(svc.Environment, ProxyEnvironment(cfg)...)
	return svc
}

// minorBefore reports whether version (v1.32.4) is a 1.x release older than
// 1.minor. A version it cannot read counts as current.
func minorBefore(version string, minor int) bool {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 || parts[0] != "1" {
		return false
	}
	m, err := strconv.Atoi(parts[1])
	return err == nil && m < minor
}
