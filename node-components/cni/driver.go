package cni

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/node-components/render"
)

// Driver is a pod network's part of a Windows node.
type Driver interface {
	// Name is the node configuration's network.cni that selects it.
	Name() string
	// BundleFiles are the bundle's files a node of cfg runs for its pod
	// network (the bundle's names: bin/flanneld.exe, cni/win-overlay.exe).
	BundleFiles(cfg *nodeconfig.Config) []string
	// Networks are the HNS networks the agent makes before the kubelet
	// starts, and makes again when a reboot removed them.
	Networks(cfg *nodeconfig.Config, iface host.Interface) []host.Network
	// Files are the configuration files the CNI needs on the node.
	Files(cfg *nodeconfig.Config, iface host.Interface) ([]render.File, error)
	// OwnFiles are every file Files may write, whatever the configuration:
	// a node that changes CNI loses the files of the other drivers.
	OwnFiles() []string
	// Services are the Windows services the pod network runs, registered
	// with the kubelet's and started, in order, once the Node is
	// registered.
	Services(cfg *nodeconfig.Config, iface host.Interface) []host.ServiceSpec
	// ServiceNames are every service Services may register.
	ServiceNames() []string
	// PodNetwork is the HNS network that the CNI makes for pods and
	// kube-proxy programs (--network-name).
	PodNetwork(cfg *nodeconfig.Config) string
	// SourceVIP returns kube-proxy's source VIP on the pod network nw,
	// which it makes sure no pod is given; "" when kube-proxy needs none
	// (no overlay).
	SourceVIP(ctx context.Context, node Node, cfg *nodeconfig.Config, nw host.Network) (string, error)
	// ResetNetworks and ResetPaths are the HNS networks and the files
	// and directories a join with this driver may leave, which reset
	// removes.
	ResetNetworks() []string
	ResetPaths() []string
}

// Node is what a driver uses of the node during a join.
type Node interface {
	Host() host.Host
	// Wait calls cond until it reports true, within the join's time for
	// waiting on the node, saying what it waits for; the time counts as
	// waited, not as the agent's own.
	Wait(ctx context.Context, what string, cond func(context.Context) (bool, error)) error
	// WriteIfChanged writes a file unless it holds data already.
	WriteIfChanged(path string, data []byte, private bool) error
}

// drivers are the CNIs this capwin-node runs.
var drivers = []Driver{flannel{}, calico{}}

// For returns the driver of the CNI cfg names.
func For(cfg *nodeconfig.Config) (Driver, error) {
	for _, d := range drivers {
		if d.Name() == cfg.Network.CNI {
			return d, nil
		}
	}
	return nil, fmt.Errorf("network.cni: this capwin-node runs no CNI %q (it runs %s)", cfg.Network.CNI, strings.Join(Names(), ", "))
}

// Names are the CNIs this capwin-node runs.
func Names() []string {
	var out []string
	for _, d := range drivers {
		out = append(out, d.Name())
	}
	return out
}

// All are the drivers, for what concerns any of them: install registers
// every driver's services, reset removes what any may have left, status
// lists their services.
func All() []Driver { return slices.Clone(drivers) }
