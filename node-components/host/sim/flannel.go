package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
)

// Flanneld is what flanneld does on a Windows node once the node has its pod
// subnet: it reads net-conf.json as flanneld does, creates the backend's
// HNS network with the node's pod subnet (vxlan: an Overlay network whose
// VSID is the VNI; host-gw: an L2Bridge network) on the primary adapter,
// and writes its lease to subnet.env. A net-conf.json it cannot use makes
// the process exit, as flanneld's would.
func Flanneld(podSubnet string) Behaviour {
	return func(ctx context.Context, h *Host, _ host.ServiceSpec) error {
		data, err := h.FS().ReadFile(layout.FlannelNetConf)
		if err != nil {
			return fmt.Errorf("flanneld: reading %s: %w", layout.FlannelNetConf, err)
		}
		var conf struct {
			Network string
			Backend struct {
				Type string
				Name string
				VNI  uint32
				Port int
			}
		}
		if err := json.Unmarshal(data, &conf); err != nil {
			return fmt.Errorf("flanneld: %s: %w", layout.FlannelNetConf, err)
		}
		network, err := netip.ParsePrefix(conf.Network)
		if err != nil {
			return fmt.Errorf("flanneld: %s: Network %q: %w", layout.FlannelNetConf, conf.Network, err)
		}
		subnet, err := netip.ParsePrefix(podSubnet)
		if err != nil || !network.Contains(subnet.Addr()) {
			return fmt.Errorf("flanneld: the node's pod subnet %s is not in the cluster network %s", podSubnet, network)
		}
		// flanneld makes its network non-persistent (pkg/backend/vxlan
		// device_windows.go): after a reboot it makes it again.
		nw := host.Network{Name: conf.Backend.Name, AdapterName: h.iface.Name, AddressPrefix: subnet.String(), Gateway: subnet.Addr().Next().String(), NonPersistent: true}
		switch strings.ToLower(conf.Backend.Type) {
		case "vxlan":
			if conf.Backend.VNI != 4096 || (conf.Backend.Port != 0 && conf.Backend.Port != 4789) {
				return fmt.Errorf("flanneld: Windows VXLAN needs VNI 4096 and port 4789, net-conf.json has %d and %d", conf.Backend.VNI, conf.Backend.Port)
			}
			nw.Type, nw.VSID = host.Overlay, conf.Backend.VNI
			if nw.Name == "" {
				nw.Name = layout.FlannelOverlayNetwork
			}
		case "host-gw":
			nw.Type = host.L2Bridge
			if nw.Name == "" {
				nw.Name = layout.FlannelL2BridgeNetwork
			}
		default:
			return fmt.Errorf("flanneld: backend %q is not supported on Windows", conf.Backend.Type)
		}
		nets, _ := h.HNS().Networks(ctx)
		exists := false
		for _, n := range nets {
			exists = exists || strings.EqualFold(n.Name, nw.Name)
		}
		if !exists {
			if _, err := h.HNS().CreateNetwork(ctx, nw); err != nil {
				return fmt.Errorf("flanneld: %w", err)
			}
		}
		env := fmt.Sprintf("FLANNEL_NETWORK=%s\r\nFLANNEL_SUBNET=%s/%d\r\nFLANNEL_MTU=1450\r\nFLANNEL_IPMASQ=false\r\n", network, nw.Gateway, subnet.Bits())
		return h.FS().WriteFile(layout.FlannelSubnetEnv, []byte(env), false)
	}
}
