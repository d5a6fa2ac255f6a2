package render

import (
	"fmt"
	"net/netip"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
)

// cniConf is the flannel meta-plugin's configuration (flannel-io/cni-plugin
// flannel_windows.go). flannel fills in the delegate's name (the conf's
// name), its IPAM (host-local over the node's subnet from subnet.env) and
// ipMasq; it refuses a delegate that sets name or ipam itself.
type cniConf struct {
	CNIVersion   string          `json:"cniVersion"`
	Name         string          `json:"name"`
	Type         string          `json:"type"`
	SubnetFile   string          `json:"subnetFile"`
	Capabilities map[string]bool `json:"capabilities"`
	Delegate     cniDelegate     `json:"delegate"`
}

// cniDelegate is win-overlay's or win-bridge's configuration
// (containernetworking/plugins pkg/hns/netconf_windows.go).
type cniDelegate struct {
	Type string `json:"type"`
	// APIVersion 2 makes the plugin use the HCN API and attach the endpoint
	// to the pod's network namespace, which is what containerd hands it.
	// The HNS v1 path attaches endpoints to a container ID (dockershim's
	// model) and fails for containerd's namespaces (AddHnsEndpoint in
	// pkg/hns/endpoint_windows.go), so v1's ExceptionList/ROUTE policy
	// shapes are not used.
	APIVersion int `json:"apiVersion"`
	// LoopbackDSR lets a pod reach a service backed by itself when
	// kube-proxy uses DSR.
	LoopbackDSR bool        `json:"loopbackDSR,omitempty"`
	Policies    []hnsPolicy `json:"policies"`
}

// hnsPolicy is an HCN endpoint policy, as the plugins pass it through
// (hcn.EndpointPolicy: Type and Settings).
type hnsPolicy struct {
	Name  string         `json:"name"`
	Value hnsPolicyValue `json:"value"`
}

type hnsPolicyValue struct {
	Type     string `json:"Type"`
	Settings any    `json:"Settings"`
}

type outboundNATSettings struct {
	Exceptions []string `json:"Exceptions"`
}

type sdnRouteSettings struct {
	DestinationPrefix string `json:"DestinationPrefix"`
	NeedEncap         bool   `json:"NeedEncap"`
}

// netConf is flannel's net-conf.json.
type netConf struct {
	Network string         `json:"Network"`
	Backend netConfBackend `json:"Backend"`
}

type netConfBackend struct {
	Type string `json:"Type"`
	// Name is the HNS network flannel creates (on Windows only).
	Name string `json:"Name"`
	VNI  int    `json:"VNI,omitempty"`
	Port int    `json:"Port,omitempty"`
}

// FlannelNetworkName is the network flannel makes for the node, by mode:
// the name of the HNS network flanneld creates (net-conf.json's Backend
// Name), which kube-proxy's --network-name names, and the CNI
// configuration's "name", under which host-local IPAM keeps its
// allocations (CNIDataDir\<name>).
//
// It is both: flannel's CNI plugin gives the delegate the conf's name, and
// win-overlay and win-bridge look the HNS network up by that name
// (win-overlay_windows.go: GetHNSNetworkByName(n.Name)), so the conf must be
// named after the network flanneld creates — the sample confs name it
// vxlan0 and cbr0 (plugins/main/windows/win-overlay/sample.conf,
// win-bridge/sample-v1.conf). flanneld's own default name would be
// flannel.<VNI> (flannel Documentation/backends.md); net-conf.json names the
// network explicitly so that the layout's name holds everywhere.
func FlannelNetworkName(cfg *nodeconfig.Config) string {
	if cfg.Network.Mode == "l2bridge" {
		return layout.FlannelL2BridgeNetwork
	}
	return layout.FlannelOverlayNetwork
}

// ExternalNetwork is the HNS network the agent creates before the kubelet
// starts. Creating a host's first HNS network moves the adapter onto a
// virtual switch and drops its connectivity for a moment; doing it first,
// on a network nothing else uses, keeps that blip away from the kubelet and
// the CNI. The shape is the one sig-windows-tools' kubeadm scripts
// (kubeadm/KubeClusterHelper.psm1 CreateExternalNetwork) and Calico's
// node service use: a /30 of 192.168.255.0 that no pod ever uses, gateway
// .1, and for overlay the VSID 9999.
func ExternalNetwork(cfg *nodeconfig.Config, iface host.Interface) host.Network {
	n := host.Network{
		Name:          layout.ExternalNetwork,
		Type:          host.L2Bridge,
		AdapterName:   iface.Name,
		AddressPrefix: "192.168.255.0/30",
		Gateway:       "192.168.255.1",
	}
	if cfg.Network.Mode == "overlay" {
		n.Type = host.Overlay
		n.VSID = 9999
	}
	return n
}

// FlannelCNI returns flannel's CNI configuration and its net-conf.json.
func FlannelCNI(cfg *nodeconfig.Config, iface host.Interface) ([]File, error) {
	n := cfg.Network
	if len(n.PodCIDRs) == 0 {
		return nil, fmt.Errorf("rendering the CNI configuration: no pod CIDR")
	}
	for _, vs := range [][]string{n.PodCIDRs, n.ServiceCIDRs, n.OutboundNATExceptions, {iface.IPv4}} {
		if err := checkUTF8("rendering the CNI configuration", vs...); err != nil {
			return nil, err
		}
	}
	exceptions := append([]string{}, n.OutboundNATExceptions...)
	policies := []hnsPolicy{{
		Name:  "EndpointPolicy",
		Value: hnsPolicyValue{Type: "OutBoundNAT", Settings: outboundNATSettings{Exceptions: exceptions}},
	}}
	// Service traffic leaves the pod encapsulated so that kube-proxy's
	// load balancers on the host see it.
	for _, s := range n.ServiceCIDRs {
		policies = append(policies, sdnRoute(s))
	}
	var (
		delegate string
		backend  netConfBackend
	)
	switch n.Mode {
	case "overlay":
		// win-overlay adds the ProviderAddress policy (the host's address)
		// itself (ApplyDefaultPAPolicy), so it is not written here.
		delegate = "win-overlay"
		backend = netConfBackend{Type: "vxlan", Name: layout.FlannelOverlayNetwork, VNI: orDefault(n.VXLANVNI, 4096), Port: orDefault(n.VXLANPort, 4789)}
	case "l2bridge":
		if iface.IPv4 == "" {
			return nil, fmt.Errorf("rendering the CNI configuration: the node's interface has no IPv4 address")
		}
		// Traffic to the node's own address is encapsulated too, so that a
		// pod reaches its host through the host's endpoint
		// (win-bridge/sample-v2.conf).
		delegate = "win-bridge"
		policies = append(policies, sdnRoute(iface.IPv4+"/32"))
		backend = netConfBackend{Type: "host-gw", Name: layout.FlannelL2BridgeNetwork}
	default:
		return nil, fmt.Errorf("rendering the CNI configuration: mode %q is neither overlay nor l2bridge", n.Mode)
	}
	conf := cniConf{
		CNIVersion: "0.3.0",
		Name:       FlannelNetworkName(cfg),
		Type:       "flannel",
		SubnetFile: layout.FlannelSubnetEnv,
		// containerd passes the pod's DNS and host ports as runtimeConfig,
		// which flannel forwards to the delegate.
		Capabilities: map[string]bool{"dns": true, "portMappings": true},
		Delegate: cniDelegate{
			Type:        delegate,
			APIVersion:  2,
			LoopbackDSR: cfg.KubeProxy.EnableDSR,
			Policies:    policies,
		},
	}
	confData, err := marshalJSON(conf)
	if err != nil {
		return nil, fmt.Errorf("rendering the CNI configuration: %w", err)
	}
	// flannel's network is the cluster's pod network; flannel on Windows
	// is IPv4 only, so the first IPv4 pod CIDR.
	netData, err := marshalJSON(netConf{Network: firstIPv4(n.PodCIDRs), Backend: backend})
	if err != nil {
		return nil, fmt.Errorf("rendering flannel's net-conf.json: %w", err)
	}
	return []File{
		{Path: layout.FlannelCNIConf, Data: confData},
		{Path: layout.FlannelNetConf, Data: netData},
	}, nil
}

func sdnRoute(prefix string) hnsPolicy {
	return hnsPolicy{
		Name:  "EndpointPolicy",
		Value: hnsPolicyValue{Type: "SDNRoute", Settings: sdnRouteSettings{DestinationPrefix: prefix, NeedEncap: true}},
	}
}

// firstIPv4 is the first IPv4 CIDR of cidrs, or the first one when none
// parses as IPv4.
func firstIPv4(cidrs []string) string {
	for _, c := range cidrs {
		if p, err := netip.ParsePrefix(c); err == nil && p.Addr().Is4() {
			return c
		}
	}
	return cidrs[0]
}

func orDefault(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}
