package vsphere

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	"sigs.k8s.io/yaml"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/internal/userdata"
	"github.com/capwin/capwin/platform"
)

// GuestInfo is the extraConfig that hands the machine its metadata and user
// data: cloudbase-init (Windows) and cloud-init (Linux) read the same
// guestinfo keys. Both are gzip+base64 encoded. macs are the NICs' MAC
// addresses once vCenter has given them, nil before; nics is how many
// network devices the VM has (see guestDefaultNetwork).
func GuestInfo(m Machine, macs []string, nics int) ([]types.BaseOptionValue, error) {
	meta, err := metadata(m, macs, nics)
	if err != nil {
		return nil, err
	}
	metaEnc, err := userdata.GzipBase64(meta)
	if err != nil {
		return nil, err
	}
	values := []types.BaseOptionValue{
		&types.OptionValue{Key: "guestinfo.metadata", Value: metaEnc},
		&types.OptionValue{Key: "guestinfo.metadata.encoding", Value: "gzip+base64"},
	}
	if len(m.UserData) > 0 {
		user, err := userDataValues(m.UserData)
		if err != nil {
			return nil, err
		}
		values = append(values, user...)
	}
	return values, nil
}

// userDataValues are the extraConfig values that hand the guest data as
// its user data.
func userDataValues(data []byte) ([]types.BaseOptionValue, error) {
	enc, err := userdata.GzipBase64(data)
	if err != nil {
		return nil, err
	}
	return []types.BaseOptionValue{
		&types.OptionValue{Key: "guestinfo.userdata", Value: enc},
		&types.OptionValue{Key: "guestinfo.userdata.encoding", Value: "gzip+base64"},
	}, nil
}

// guestInfoHolds reports whether the extraConfig's key holds want
// (gzip+base64 encoded, as capwin writes it).
func guestInfoHolds(extraConfig []types.BaseOptionValue, key string, want []byte) bool {
	for _, v := range extraConfig {
		if ov := v.GetOptionValue(); ov.Key == key {
			have, err := userdata.DecodeGzipBase64(fmt.Sprint(ov.Value))
			return err == nil && bytes.Equal(have, want)
		}
	}
	return false
}

// guestDefaultNetwork reports whether a Windows guest's own default
// network configuration is the one the spec asks for, so that the metadata
// need carry none: one network device on the VM (nics), asking for DHCP and
// nothing else. cloudbase-init configures nothing without an entry, so
// Windows keeps DHCP on the adapter, as the entry matched by MAC asked
// for; the adapter keeps its own name (Ethernet0), which nothing in capwin
// depends on. Such a VM needs no MAC address in its metadata, so it is
// cloned with its metadata and powered on by the clone itself.
//
// Linux guests always get entries matched by MAC: cloud-init's fallback
// would also give DHCP on the one NIC, but would leave it its kernel name
// (ens192 rather than the eth0 set-name gives, which configurations such as
// kube-vip's vip_interface name), apply network configuration left in the
// template, and, from cloud-init 24.1, ask for DHCPv6 too.
func guestDefaultNetwork(m Machine, nics int) bool {
	if m.OS != infrav1.OSWindows || nics != 1 || len(m.Spec.Network) != 1 {
		return false
	}
	d := m.Spec.Network[0]
	return d.DHCP4 != nil && *d.DHCP4 && len(d.IPAddrs) == 0 && d.Gateway4 == "" && len(d.Nameservers) == 0
}

// metadata is the instance metadata: the host name, the network and the
// SSH keys. A NIC is matched by its MAC address, and named eth0, eth1, ...,
// once vCenter has given it one; before, the VM is off and nothing reads
// the entry. A Windows VM whose guest's default network is the spec's
// (guestDefaultNetwork) gets no network entry.
func metadata(m Machine, macs []string, nics int) ([]byte, error) {
	type ethernet struct {
		Match       map[string]string   `json:"match,omitempty"`
		SetName     string              `json:"set-name,omitempty"`
		DHCP4       bool                `json:"dhcp4,omitempty"`
		Addresses   []string            `json:"addresses,omitempty"`
		Gateway4    string              `json:"gateway4,omitempty"`
		Nameservers map[string][]string `json:"nameservers,omitempty"`
	}
	ethernets := map[string]ethernet{}
	for i, d := range m.Spec.Network {
		e := ethernet{DHCP4: d.DHCP4 != nil && *d.DHCP4, Addresses: d.IPAddrs, Gateway4: d.Gateway4}
		if len(d.Nameservers) > 0 {
			e.Nameservers = map[string][]string{"addresses": d.Nameservers}
		}
		if i < len(macs) && macs[i] != "" {
			e.Match = map[string]string{"macaddress": macs[i]}
			e.SetName = fmt.Sprintf("eth%d", i)
		}
		ethernets[fmt.Sprintf("id%d", i)] = e
	}
	meta := map[string]any{
		"instance-id":    InstanceUUID(m.Namespace, m.Name),
		"local-hostname": m.ComputerName,
	}
	if !guestDefaultNetwork(m, nics) {
		meta["network"] = map[string]any{"version": 2, "ethernets": ethernets}
	}
	if len(m.SSHAuthorizedKeys) > 0 {
		// One string, a key a line: cloudbase-init splits it into lines and
		// reads nothing else; cloud-init takes a string or a list.
		meta["public-keys-data"] = strings.Join(m.SSHAuthorizedKeys, "\n")
	}
	return yaml.Marshal(meta)
}

// nicMACs are the MAC addresses of the VM's network devices, in device order.
func nicMACs(devices []types.BaseVirtualDevice) []string {
	var macs []string
	for _, d := range object.VirtualDeviceList(devices).SelectByType((*types.VirtualEthernetCard)(nil)) {
		macs = append(macs, d.(types.BaseVirtualEthernetCard).GetVirtualEthernetCard().MacAddress)
	}
	return macs
}

// writeNetworkMetadata rewrites guestinfo.metadata with the NICs' MAC
// addresses, which the guest matches its network configuration on: an
// entry cloud-init or cloudbase-init cannot match to a NIC configures
// nothing. guestinfo.userdata is written with it when it is not the
// Machine's current bootstrap data (its token was replaced after the
// clone), so that the first boot runs the newest. It returns the
// reconfigure task, or nothing when both are already right.
func (s *Session) writeNetworkMetadata(ctx context.Context, vm *object.VirtualMachine, config *types.VirtualMachineConfigInfo, macs []string, m Machine) (string, error) {
	if len(macs) < len(m.Spec.Network) {
		return "", fmt.Errorf("%w: VM %s has %d network devices, and spec.vsphere.network names %d", platform.ErrInvalid, vm.Reference().Value, len(macs), len(m.Spec.Network))
	}
	for i := range m.Spec.Network {
		if macs[i] == "" && !guestDefaultNetwork(m, len(macs)) {
			// vCenter gives a clone's NICs their MAC addresses; one
			// without would boot with an entry that matches nothing.
			return "", fmt.Errorf("%w: VM %s: network device %d has no MAC address, which its network metadata must name before it powers on", platform.ErrInvalid, vm.Reference().Value, i)
		}
	}
	want, err := metadata(m, macs, len(macs))
	if err != nil {
		return "", err
	}
	if guestInfoHolds(config.ExtraConfig, "guestinfo.metadata", want) &&
		(len(m.UserData) == 0 || guestInfoHolds(config.ExtraConfig, "guestinfo.userdata", m.UserData)) {
		return "", nil
	}
	values, err := GuestInfo(m, macs, len(macs))
	if err != nil {
		return "", err
	}
	task, err := vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{ExtraConfig: values})
	if err != nil {
		return "", fmt.Errorf("writing the network metadata of VM %s: %w", vm.Reference().Value, err)
	}
	return task.Reference().Value, nil
}

// WriteUserData replaces guestinfo.userdata with m.UserData, with one
// reconfigure task: the node of a running VM has not joined and the
// Machine's bootstrap data changed (the guest reads guestinfo again when
// it boots again to retry its join). A write recorded in m.Op that still
// runs is returned, not doubled.
func (s *Session) WriteUserData(ctx context.Context, m Machine) (infrav1.MachineOperation, error) {
	task, err := retryStale(s, m, func() (string, error) { return s.writeUserData(ctx, m) })
	if task == "" {
		return infrav1.MachineOperation{}, err
	}
	return infrav1.MachineOperation{Type: infrav1.MachineOperationWriteBootstrapData, ID: task}, err
}

func (s *Session) writeUserData(ctx context.Context, m Machine) (string, error) {
	if len(m.UserData) == 0 {
		return "", fmt.Errorf("%w: no user data to write to the VM of %s", platform.ErrInvalid, m.Name)
	}
	values, err := userDataValues(m.UserData)
	if err != nil {
		return "", err
	}
	return s.reconfigureUserData(ctx, m, infrav1.MachineOperationWriteBootstrapData, values, "writing")
}

// reconfigureUserData sets the VM's guestinfo.userdata keys to values with
// a reconfigure task, and returns the task. The task of that kind recorded
// last is looked at first: one still running is waited for, not doubled;
// one that failed says why.
func (s *Session) reconfigureUserData(ctx context.Context, m Machine, op infrav1.MachineOperationType, values []types.BaseOptionValue, doing string) (string, error) {
	if m.Op.Type == op {
		st, err := s.checkTask(ctx, m.Op)
		if err != nil {
			return "", err
		}
		if !st.Op.IsZero() {
			return st.Op.ID, nil
		}
	}
	dc, err := s.datacenter(ctx, m.Datacenter)
	if err != nil {
		return "", err
	}
	vm, err := s.findVM(ctx, dc, m)
	if err != nil || vm == nil {
		return "", err
	}
	task, err := vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{ExtraConfig: values})
	if err != nil {
		return "", fmt.Errorf("%s the user data of VM %s: %w", doing, vm.Reference().Value, err)
	}
	return task.Reference().Value, nil
}

// ClearUserData removes guestinfo.userdata from the VM once the node has
// joined: the bootstrap token in it must not stay readable to anyone with
// read access to the VM.
func (s *Session) ClearUserData(ctx context.Context, m Machine) (infrav1.MachineOperation, error) {
	task, err := retryStale(s, m, func() (string, error) { return s.clearUserData(ctx, m) })
	if task == "" {
		return infrav1.MachineOperation{}, err
	}
	return infrav1.MachineOperation{Type: infrav1.MachineOperationClearBootstrapData, ID: task}, err
}

func (s *Session) clearUserData(ctx context.Context, m Machine) (string, error) {
	// Whether it worked is seen through UserDataCleared on a later reconcile.
	return s.reconfigureUserData(ctx, m, infrav1.MachineOperationClearBootstrapData, []types.BaseOptionValue{
		&types.OptionValue{Key: "guestinfo.userdata", Value: ""},
		&types.OptionValue{Key: "guestinfo.userdata.encoding", Value: ""},
	}, "clearing")
}

// UserDataCleared reports whether the VM no longer carries user data.
func (s *Session) UserDataCleared(ctx context.Context, m Machine) (bool, error) {
	return retryStale(s, m, func() (bool, error) { return s.userDataCleared(ctx, m) })
}

func (s *Session) userDataCleared(ctx context.Context, m Machine) (bool, error) {
	dc, err := s.datacenter(ctx, m.Datacenter)
	if err != nil {
		return false, err
	}
	vm, err := s.findVM(ctx, dc, m)
	if err != nil || vm == nil {
		return vm == nil && err == nil, err
	}
	var o mo.VirtualMachine
	if err := vm.Properties(ctx, vm.Reference(), []string{"config.extraConfig"}, &o); err != nil {
		return false, err
	}
	for _, v := range o.Config.ExtraConfig {
		if ov := v.GetOptionValue(); ov.Key == "guestinfo.userdata" && ov.Value != "" {
			return false, nil
		}
	}
	return true, nil
}
