package cni

import (
	"context"
	"strings"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/node-components/render"
)

// calicoEndpoint is the host endpoint Calico's Windows node creates on its
// VXLAN network; its address is kube-proxy's source VIP.
const calicoEndpoint = "Calico_ep"

// calico is what capwin-node does for Calico today: it writes no CNI
// configuration and runs no service (Calico's own Windows node does both,
// and makes the network Calico), and waits for Calico's network and host
// endpoint. Nothing installs Calico's Windows node yet (the CNI choice
// issue), so a node with it does not finish joining.
type calico struct{}

func (calico) Name() string { return "calico" }

func (calico) BundleFiles(*nodeconfig.Config) []string { return nil }

func (calico) Networks(cfg *nodeconfig.Config, iface host.Interface) []host.Network {
	return []host.Network{render.ExternalNetwork(cfg, iface)}
}

// Files: none. calico-node's Windows service writes its own CNI
// configuration (with its IPAM and the Calico network), and a flannel file
// in the same directory would shadow or contradict it.
func (calico) Files(*nodeconfig.Config, host.Interface) ([]render.File, error) { return nil, nil }

func (calico) OwnFiles() []string { return nil }

func (calico) Services(*nodeconfig.Config, host.Interface) []host.ServiceSpec { return nil }

func (calico) ServiceNames() []string { return nil }

// PodNetwork: Calico (the name sig-windows-tools' Calico kube-proxy waits
// for).
func (calico) PodNetwork(*nodeconfig.Config) string { return layout.CalicoNetwork }

// SourceVIP: on overlay, the address of the host endpoint Calico's node
// makes on its network; none on l2bridge.
func (calico) SourceVIP(ctx context.Context, node Node, cfg *nodeconfig.Config, nw host.Network) (string, error) {
	if cfg.Network.Mode != "overlay" {
		return "", nil
	}
	var vip string
	err := node.Wait(ctx, "Calico's host endpoint "+calicoEndpoint, func(ctx context.Context) (bool, error) {
		eps, err := node.Host().HNS().Endpoints(ctx)
		if err != nil {
			return false, err
		}
		for _, e := range eps {
			if strings.EqualFold(e.Name, calicoEndpoint) && strings.EqualFold(e.NetworkID, nw.ID) {
				vip = e.IPAddress
				return true, nil
			}
		}
		return false, nil
	})
	return vip, err
}

func (calico) ResetNetworks() []string { return []string{layout.ExternalNetwork, layout.CalicoNetwork} }

func (calico) ResetPaths() []string { return []string{layout.CNIConfDir} }
