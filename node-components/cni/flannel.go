package cni

import (
	"context"
	"encoding/json"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/node-components/render"
)

// flannel is flannel, overlay (VXLAN, win-overlay) or l2bridge (host-gw,
// win-bridge), with flanneld as a Windows service and host-local IPAM.
type flannel struct{}

func (flannel) Name() string { return "flannel" }

func (flannel) BundleFiles(cfg *nodeconfig.Config) []string {
	names := []string{"bin/flanneld.exe", "cni/flannel.exe", "cni/host-local.exe"}
	if cfg.Network.Mode == "overlay" {
		return append(names, "cni/win-overlay.exe")
	}
	return append(names, "cni/win-bridge.exe")
}

// Networks: the External network, made first so that the moment of lost
// connectivity a host's first HNS network costs passes before the kubelet
// and flanneld run (render.ExternalNetwork).
func (flannel) Networks(cfg *nodeconfig.Config, iface host.Interface) []host.Network {
	return []host.Network{render.ExternalNetwork(cfg, iface)}
}

func (flannel) Files(cfg *nodeconfig.Config, iface host.Interface) ([]render.File, error) {
	return render.FlannelCNI(cfg, iface)
}

func (flannel) OwnFiles() []string { return []string{layout.FlannelCNIConf, layout.FlannelNetConf} }

func (flannel) Services(cfg *nodeconfig.Config, iface host.Interface) []host.ServiceSpec {
	return []host.ServiceSpec{render.FlanneldService(cfg, iface)}
}

func (flannel) ServiceNames() []string { return []string{layout.ServiceFlanneld} }

func (flannel) PodNetwork(cfg *nodeconfig.Config) string { return render.FlannelNetworkName(cfg) }

// SourceVIP: on overlay, an address of the pod subnet reserved in
// host-local's store, so that no pod is given it, and recorded in
// layout.SourceVIP; on l2bridge, none, but the address of flannel's host
// endpoint (x.x.x.2) is reserved the same way (reserveBridgeEndpoint).
func (f flannel) SourceVIP(_ context.Context, node Node, cfg *nodeconfig.Config, nw host.Network) (string, error) {
	fsys := node.Host().FS()
	if cfg.Network.Mode != "overlay" {
		_, err := reserveBridgeEndpoint(fsys, f.PodNetwork(cfg), nw.AddressPrefix)
		return "", err
	}
	vip, err := reserveSourceVIP(fsys, f.PodNetwork(cfg), nw.AddressPrefix)
	if err != nil {
		return "", err
	}
	data, _ := json.Marshal(map[string]string{"ip": vip, "network": nw.Name, "subnet": nw.AddressPrefix})
	if err := node.WriteIfChanged(layout.SourceVIP, append(data, '\n'), false); err != nil {
		return "", err
	}
	return vip, nil
}

func (flannel) ResetNetworks() []string {
	return []string{layout.ExternalNetwork, layout.FlannelOverlayNetwork, layout.FlannelL2BridgeNetwork}
}

func (flannel) ResetPaths() []string {
	return []string{layout.CNIConfDir, layout.FlannelNetConf, layout.FlannelRunDir, layout.CNIDataDir, layout.SourceVIP}
}
