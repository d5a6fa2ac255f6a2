package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"

	nodesim "github.com/capwin/capwin/node-components/host/sim"
	"github.com/capwin/capwin/platform/vsphere/vspheresim"
	"github.com/capwin/capwin/test/kubeadm"
)

// vcenterVMs is vCenter's VMs.
type vcenterVMs struct {
	w *vspheresim.Watcher
}

func (v vcenterVMs) VMs(ctx context.Context) ([]cloudVM, error) {
	vms, err := v.w.VMs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]cloudVM, len(vms))
	for i := range vms {
		out[i] = cloudVM{ID: vms[i].ID, Name: vms[i].Name, PoweredOn: vms[i].PoweredOn, vsphere: &vms[i]}
	}
	return out, nil
}

func (v vcenterVMs) Close() { v.w.Close(context.Background()) }

// newVCenterGuests are the guests of vCenter's VMs.
func newVCenterGuests(ctx context.Context, vc *vspheresim.VCenter, workload *kubeadm.Cluster, bootDelay time.Duration, log logr.Logger) (*Guests, error) {
	w, err := vc.Watch(ctx)
	if err != nil {
		return nil, fmt.Errorf("the guests watching vCenter's VMs: %w", err)
	}
	g, err := newGuests(vcenterVMs{w}, workload, bootDelay, log)
	if err != nil {
		return nil, err
	}
	g.vc = vc
	return g, nil
}

// bootVSphere reads guestinfo.metadata as cloudbase-init or cloud-init
// does, brings the network up and reports the host name and address to
// vCenter as VMware Tools does; nil for a VM without capwin's user data.
func (g *Guests) bootVSphere(vm *vspheresim.VM) (*firstBoot, error) {
	extra := vm.ExtraConfig
	if extra["guestinfo.userdata"] == "" {
		return nil, nil
	}
	meta, err := readMetadata(extra)
	if err != nil {
		return nil, err
	}
	ip, err := g.address(vm, meta)
	if err != nil {
		return nil, err
	}
	if err := g.reportTools(vm, meta.LocalHostname, ip); err != nil {
		return nil, fmt.Errorf("VMware Tools: %w", err)
	}
	if vm.BIOSUUID == "" {
		return nil, errors.New("the VM has no BIOS UUID")
	}
	// The VM's SMBIOS UUID is its BIOS UUID (config.uuid).
	hw := nodesim.VMwareVM
	hw.UUID = strings.ToUpper(vm.BIOSUUID)
	fb := &firstBoot{hostName: meta.LocalHostname, ip: ip, hardware: hw}
	if isWindows(vm) {
		build, ok := guestBuilds[vm.GuestID]
		if !ok {
			return nil, fmt.Errorf("guest OS %s: the simulation knows no Windows build for it", vm.GuestID)
		}
		fb.build = build
	}
	return fb, nil
}

// guestBuilds is the Windows build of each Windows guest OS the simulation's
// templates may declare. vSphere names each Windows Server release after the
// one before it: windows2019srvNext is Windows Server 2022.
var guestBuilds = map[string]string{
	"windows2019srv_64Guest":     "10.0.17763",
	"windows2019srvNext_64Guest": "10.0.20348",
	"windows2022srvNext_64Guest": "10.0.26100",
}

// reportTools does what VMware Tools does once the guest is up: it
// reports the host name and the addresses of its adapters to vCenter, with
// what a real guest's adapters carry besides their address (IPv6
// link-local addresses). A Windows node's pod network is an HNS switch with
// adapters of its own (vEthernet, with Hyper-V MAC addresses and an APIPA
// address on the one DHCP never answers); the host's address moves to the
// one bound to the VM's network device, and the others have no device
// behind them.
func (g *Guests) reportTools(vm *vspheresim.VM, hostName, ip string) error {
	nics := []vspheresim.GuestNIC{{IPs: []string{ip, "fe80::250:56ff:fe00:1"}}}
	if isWindows(vm) {
		nics = append(nics, vspheresim.GuestNIC{IPs: []string{"172.29.240.1", "169.254.112.5", "fe80::9d3c:1"}, Virtual: true, MAC: "00:15:5d:00:12:01"})
	}
	return g.vc.ReportGuest(vm.ID, hostName, nics)
}

func isWindows(vm *vspheresim.VM) bool {
	return strings.HasPrefix(strings.ToLower(vm.GuestID), "windows")
}
