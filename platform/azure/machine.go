package azure

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

const (
	// OwnerTag names, on each of a machine's resources, the HybridMachine
	// (namespace/name) it belongs to.
	OwnerTag = "capwin-hybridmachine"
	// ClusterTag names the Cluster (namespace/name) of a machine's resources.
	ClusterTag = "capwin-cluster"
	// AdminUsername is the VM's administrator. Its password is random,
	// made for each VM and kept nowhere; logins are by SSH key.
	AdminUsername = "capwin"
	// defaultDiskSizeGB is the OS disk size when the spec sets none.
	defaultDiskSizeGB = 128
)

// resourceNames are the names of a machine's Azure resources.
type resourceNames struct {
	vm, nic, disk string
}

// namesOf derives a machine's resource names from its computer name: the
// Azure cloud provider looks a node's VM up by the node name, which is the
// computer name in lower case.
func namesOf(computerName string) resourceNames {
	vm := strings.ToLower(computerName)
	return resourceNames{vm: vm, nic: vm + "-nic", disk: vm + "-osdisk"}
}

func owner(hm *infrav1.HybridMachine) string { return hm.Namespace + "/" + hm.Name }

// ownedBy reports whether a resource's tags name the HybridMachine; an
// error names the owner when another machine holds the name.
func ownedBy(kind, name string, tags map[string]*string, hm *infrav1.HybridMachine) error {
	got := ptr.Deref(tags[OwnerTag], "")
	if got == owner(hm) {
		return nil
	}
	if got == "" {
		got = "no capwin machine"
	}
	return fmt.Errorf("%w: %s %s exists and belongs to %s, not to HybridMachine %s: set spec.computerName to another name", platform.ErrInvalid, kind, name, got, owner(hm))
}

// EnsureMachine makes the machine's network interface, then its VM with the
// bootstrap data as customData, one operation at a time, and reports the
// VM's state: its provider ID and the NIC's private address once it runs.
func (p *Platform) EnsureMachine(ctx context.Context, m *platform.Machine) (platform.MachineState, error) {
	var resumed bool
	st, err := p.ensureMachine(ctx, m, &resumed)
	if resumed && st.Operation.IsZero() {
		st.OperationEnded = true
	}
	return st, err
}

// ensureMachine is EnsureMachine; it sets resumed once the recorded
// operation was looked at and has ended.
func (p *Platform) ensureMachine(ctx context.Context, m *platform.Machine, resumed *bool) (platform.MachineState, error) {
	hm := m.HybridMachine
	if hm.Spec.Azure == nil {
		return platform.MachineState{}, fmt.Errorf("%w: spec.azure must be set: a HybridMachine is on its HybridCluster's platform, Azure", platform.ErrInvalid)
	}
	n := namesOf(m.ComputerName)
	op := hm.Status.Operation
	var unanswered error
	if !op.IsZero() {
		done, seen, next, err := p.resume(ctx, n, op)
		if err != nil || !done {
			return platform.MachineState{Operation: next}, err
		}
		*resumed = true
		if seen && op.Type == infrav1.MachineOperationCreateNetworkInterface {
			// The NIC is made: the VM's create goes out without a look
			// for the VM, and If-None-Match keeps it from overwriting
			// one that is there.
			st, err := p.createVM(ctx, m, n)
			if err == nil {
				return st, nil
			}
			// Refused (412: a VM is there, say from a create whose
			// recording was lost, as the NIC's operation still answers
			// Succeeded; 404: the NIC is gone) or not answered: the VM
			// and the NIC are looked at below, as on any reconcile, and
			// the NIC's operation is not followed again (OperationEnded).
			if errors.Is(err, platform.ErrUnavailable) {
				unanswered = err
			}
		}
	} else if ptr.Deref(hm.Status.Initialization.Provisioned, false) {
		// A resync of a running machine: the resource group's shared
		// read says so without a read of its own.
		if st, ok, err := p.viewed(ctx, hm, n); err != nil || ok {
			return st, err
		}
	}

	vm, err := p.getVM(ctx, n)
	if err != nil {
		return platform.MachineState{}, err
	}
	if vm == nil {
		if ptr.Deref(hm.Status.Initialization.Provisioned, false) {
			return platform.MachineState{}, fmt.Errorf("%w: VM %s is gone from resource group %s", platform.ErrMachineGone, n.vm, p.group())
		}
		if unanswered != nil {
			// Throttled or failing: sent again on the next try, not now.
			return platform.MachineState{}, unanswered
		}
		return p.create(ctx, m, n)
	}
	if err := ownedBy("VM", n.vm, vm.Tags, hm); err != nil {
		return platform.MachineState{}, err
	}
	return p.observe(ctx, m, n, vm)
}

// create makes the NIC if it is missing, then the VM.
func (p *Platform) create(ctx context.Context, m *platform.Machine, n resourceNames) (platform.MachineState, error) {
	nic, err := p.getNIC(ctx, n)
	if err != nil {
		return platform.MachineState{}, err
	}
	if nic != nil {
		if err := ownedBy("Network interface", n.nic, nic.Tags, m.HybridMachine); err != nil {
			return platform.MachineState{}, err
		}
	}
	switch state := nicState(nic); {
	case nic == nil || state == "Failed":
		// A NIC whose create failed is sent again: ARM retries a PUT of
		// a failed resource.
		params, err := p.nicParams(m, n)
		if err != nil {
			return platform.MachineState{}, err
		}
		poller, err := p.clients.interfaces.BeginCreateOrUpdate(ctx, p.group(), n.nic, params, nil)
		if err != nil {
			return platform.MachineState{}, classify("creating network interface "+n.nic, err)
		}
		op, err := started(ctx, infrav1.MachineOperationCreateNetworkInterface, poller)
		if err != nil || !op.IsZero() {
			return platform.MachineState{Operation: op}, err
		}
	case state != "Succeeded":
		return platform.MachineState{}, waitFor("network interface", n.nic, state)
	}
	return p.createVM(ctx, m, n)
}

// createVM makes the VM on its NIC, which is there.
func (p *Platform) createVM(ctx context.Context, m *platform.Machine, n resourceNames) (platform.MachineState, error) {
	if len(m.BootstrapData) == 0 {
		return platform.MachineState{}, fmt.Errorf("%w: the Machine's bootstrap data is empty", platform.ErrInvalid)
	}
	params, err := p.vmParams(m, n)
	if err != nil {
		return platform.MachineState{}, err
	}
	// If-None-Match: a create never overwrites a VM that appeared since
	// the look above (a second machine with the same computer name).
	poller, err := p.clients.vms.BeginCreateOrUpdate(ctx, p.group(), n.vm, params, &armcompute.VirtualMachinesClientBeginCreateOrUpdateOptions{IfNoneMatch: ptr.To("*")})
	if err != nil {
		return platform.MachineState{}, classify("creating VM "+n.vm, err)
	}
	op, err := started(ctx, infrav1.MachineOperationCreate, poller)
	if err != nil || !op.IsZero() {
		return platform.MachineState{Operation: op}, err
	}
	vm, err := p.getVM(ctx, n)
	if err != nil || vm == nil {
		return platform.MachineState{}, errors.Join(err, fmt.Errorf("%w: VM %s is not there after its create ended", platform.ErrUnavailable, n.vm))
	}
	return p.observe(ctx, m, n, vm)
}

// observe reports a VM's state: a VM still being made is waited for, a
// stopped one started.
func (p *Platform) observe(ctx context.Context, m *platform.Machine, n resourceNames, vm *armcompute.VirtualMachine) (platform.MachineState, error) {
	props := vm.Properties
	state := ptr.Deref(props.ProvisioningState, "")
	provisioned := ptr.Deref(m.HybridMachine.Status.Initialization.Provisioned, false)
	switch {
	case state == "Succeeded":
	case provisioned && state != "Deleting":
		// A VM that Azure updates (maintenance, an extension), or whose
		// last update failed, is still the machine's VM: its state is
		// reported, not waited for.
	case state == "Failed" && provisioningTimedOut(props.InstanceView):
		// Azure stopped waiting for the guest to report ready, which
		// cloudbase-init does only once the bootstrap data (the join)
		// has run: the VM runs on, and its join, or a
		// MachineHealthCheck, says whether it became a node.
	case state == "Failed":
		return platform.MachineState{}, fmt.Errorf("%w: VM %s is in provisioning state Failed%s", platform.ErrOperationFailed, n.vm, statusMessage(props.InstanceView))
	default:
		// Made, changed or deleted by an operation capwin did not
		// record (a restart between starting it and writing the status):
		// Azure ends it by itself.
		return platform.MachineState{}, waitFor("VM", n.vm, state)
	}
	st := platform.MachineState{Exists: true, ProviderID: ProviderID(ptr.Deref(vm.ID, ""))}
	switch power := powerState(props.InstanceView); power {
	case "running":
		st.Running = true
	case "stopped", "deallocated":
		poller, err := p.clients.vms.BeginStart(ctx, p.group(), n.vm, nil)
		if err != nil {
			return platform.MachineState{}, classify("starting VM "+n.vm, err)
		}
		op, err := started(ctx, infrav1.MachineOperationPowerOn, poller)
		if err != nil || !op.IsZero() {
			return platform.MachineState{Operation: op}, err
		}
		st.Running = true
	}
	nic, err := p.getNIC(ctx, n)
	if err != nil {
		return platform.MachineState{}, err
	}
	if nic != nil {
		st.Addresses = nicAddresses(nic)
	}
	return st, nil
}

// ProviderID is a VM's provider ID as the Azure cloud provider sets it on
// the Node: azure:// and the VM's resource ID, its subscription and
// resource group in lower case (cloud-node-manager lowers both, and
// Cluster API compares provider IDs as strings).
func ProviderID(vmID string) string {
	if vmID == "" {
		return ""
	}
	parts := strings.Split(vmID, "/")
	for i := 0; i+1 < len(parts); i++ {
		if strings.EqualFold(parts[i], "subscriptions") || strings.EqualFold(parts[i], "resourceGroups") {
			parts[i+1] = strings.ToLower(parts[i+1])
		}
	}
	return "azure://" + strings.Join(parts, "/")
}

// waitFor is the error of a resource that an operation capwin did not
// record is still changing: looked at again soon.
func waitFor(kind, name, state string) error {
	return platform.WithRetryAfter(fmt.Errorf("%w: %s %s is in provisioning state %s; waiting for Azure to end that operation", platform.ErrUnavailable, kind, name, state), throttledRetry)
}

func (p *Platform) group() string { return p.cluster.Spec.Azure.ResourceGroup }

// subnet is the subnet the machine's NIC joins: spec.azure.subnetName, or
// the first subnet for its role.
func (p *Platform) subnet(hm *infrav1.HybridMachine) (string, error) {
	if name := hm.Spec.Azure.SubnetName; name != "" {
		return name, nil
	}
	role := infrav1.SubnetNode
	if isControlPlane(hm) {
		role = infrav1.SubnetControlPlane
	}
	for _, s := range p.cluster.Spec.Azure.Network.Subnets {
		if s.Role == role {
			return s.Name, nil
		}
	}
	return "", fmt.Errorf("%w: HybridCluster %s has no subnet with role %s in spec.azure.network.subnets, and spec.azure.subnetName is empty", platform.ErrInvalid, p.cluster.Name, role)
}

func isControlPlane(hm *infrav1.HybridMachine) bool {
	_, ok := hm.Labels[clusterv1.MachineControlPlaneLabel]
	return ok
}

func (p *Platform) tags(hm *infrav1.HybridMachine) map[string]*string {
	return map[string]*string{
		OwnerTag:   ptr.To(owner(hm)),
		ClusterTag: ptr.To(hm.Namespace + "/" + hm.Labels[clusterv1.ClusterNameLabel]),
	}
}

func (p *Platform) nicParams(m *platform.Machine, n resourceNames) (armnetwork.Interface, error) {
	hm := m.HybridMachine
	subnet, err := p.subnet(hm)
	if err != nil {
		return armnetwork.Interface{}, err
	}
	a := p.cluster.Spec.Azure
	subnetID := p.resourceID("virtualNetworks", a.Network.VNetName+"/subnets/"+subnet)
	ipc := &armnetwork.InterfaceIPConfigurationPropertiesFormat{
		Primary:                   ptr.To(true),
		PrivateIPAllocationMethod: ptr.To(armnetwork.IPAllocationMethodDynamic),
		Subnet:                    &armnetwork.Subnet{ID: ptr.To(subnetID)},
	}
	if isControlPlane(hm) && p.publicLB() {
		// Behind the API server's load balancer, which is also the
		// machine's way out.
		ipc.LoadBalancerBackendAddressPools = []*armnetwork.BackendAddressPool{{ID: ptr.To(p.backendPoolID())}}
	}
	return armnetwork.Interface{
		Location: ptr.To(a.Location),
		Tags:     p.tags(hm),
		Properties: &armnetwork.InterfacePropertiesFormat{
			EnableIPForwarding: ptr.To(ptr.Deref(hm.Spec.Azure.EnableIPForwarding, false)),
			IPConfigurations:   []*armnetwork.InterfaceIPConfiguration{{Name: ptr.To("ipconfig1"), Properties: ipc}},
		},
	}, nil
}

func (p *Platform) vmParams(m *platform.Machine, n resourceNames) (armcompute.VirtualMachine, error) {
	hm := m.HybridMachine
	spec := hm.Spec.Azure
	a := p.cluster.Spec.Azure
	image, err := imageReference(spec.Image, a)
	if err != nil {
		return armcompute.VirtualMachine{}, err
	}
	password, err := randomPassword()
	if err != nil {
		return armcompute.VirtualMachine{}, err
	}
	nicID := p.resourceID("networkInterfaces", n.nic)
	disk := &armcompute.OSDisk{
		Name:         ptr.To(n.disk),
		CreateOption: ptr.To(armcompute.DiskCreateOptionTypesFromImage),
		Caching:      ptr.To(armcompute.CachingTypesReadWrite),
		DeleteOption: ptr.To(armcompute.DiskDeleteOptionTypesDelete),
		DiskSizeGB:   ptr.To(int32(defaultDiskSizeGB)),
		ManagedDisk:  &armcompute.ManagedDiskParameters{StorageAccountType: ptr.To(armcompute.StorageAccountTypesPremiumLRS)},
	}
	if spec.OSDisk.DiskSizeGB != 0 {
		disk.DiskSizeGB = ptr.To(spec.OSDisk.DiskSizeGB)
	}
	if spec.OSDisk.StorageAccountType != "" {
		disk.ManagedDisk.StorageAccountType = ptr.To(armcompute.StorageAccountTypes(spec.OSDisk.StorageAccountType))
	}
	os := &armcompute.OSProfile{
		ComputerName:  ptr.To(m.ComputerName),
		AdminUsername: ptr.To(AdminUsername),
		AdminPassword: ptr.To(password),
		CustomData:    ptr.To(base64.StdEncoding.EncodeToString(m.BootstrapData)),
	}
	props := &armcompute.VirtualMachineProperties{
		HardwareProfile: &armcompute.HardwareProfile{VMSize: ptr.To(armcompute.VirtualMachineSizeTypes(spec.VMSize))},
		StorageProfile:  &armcompute.StorageProfile{ImageReference: image, OSDisk: disk},
		OSProfile:       os,
		NetworkProfile: &armcompute.NetworkProfile{NetworkInterfaces: []*armcompute.NetworkInterfaceReference{{
			ID:         ptr.To(nicID),
			Properties: &armcompute.NetworkInterfaceReferenceProperties{Primary: ptr.To(true), DeleteOption: ptr.To(armcompute.DeleteOptionsDelete)},
		}}},
		// The serial log and screenshot of a node that did not join.
		DiagnosticsProfile: &armcompute.DiagnosticsProfile{BootDiagnostics: &armcompute.BootDiagnostics{Enabled: ptr.To(true)}},
	}
	if hm.Spec.OS.Type == infrav1.OSWindows {
		os.WindowsConfiguration = &armcompute.WindowsConfiguration{
			ProvisionVMAgent:       ptr.To(true),
			EnableAutomaticUpdates: ptr.To(false),
		}
		if spec.LicenseType == infrav1.LicenseWindowsServer {
			props.LicenseType = ptr.To(string(infrav1.LicenseWindowsServer))
		}
	} else {
		os.LinuxConfiguration = &armcompute.LinuxConfiguration{ProvisionVMAgent: ptr.To(true)}
		if spec.SSHPublicKey != "" {
			os.AdminPassword = nil
			os.LinuxConfiguration.DisablePasswordAuthentication = ptr.To(true)
			os.LinuxConfiguration.SSH = &armcompute.SSHConfiguration{PublicKeys: []*armcompute.SSHPublicKey{{
				Path:    ptr.To("/home/" + AdminUsername + "/.ssh/authorized_keys"),
				KeyData: ptr.To(spec.SSHPublicKey),
			}}}
		}
	}
	vm := armcompute.VirtualMachine{Location: ptr.To(a.Location), Tags: p.tags(hm), Properties: props}
	if m.FailureDomain != "" {
		vm.Zones = []*string{ptr.To(m.FailureDomain)}
	}
	return vm, nil
}

// imageReference is the spec's image as ARM names it.
func imageReference(img infrav1.AzureImage, a *infrav1.AzureClusterSpec) (*armcompute.ImageReference, error) {
	switch {
	case img.ID != "":
		return &armcompute.ImageReference{ID: ptr.To(img.ID)}, nil
	case img.Marketplace != nil:
		mp := img.Marketplace
		return &armcompute.ImageReference{Publisher: ptr.To(mp.Publisher), Offer: ptr.To(mp.Offer), SKU: ptr.To(mp.SKU), Version: ptr.To(mp.Version)}, nil
	case img.ComputeGallery != nil:
		g := img.ComputeGallery
		group := g.ResourceGroup
		if group == "" {
			group = a.ResourceGroup
		}
		return &armcompute.ImageReference{ID: ptr.To(fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/galleries/%s/images/%s/versions/%s", a.SubscriptionID, group, g.Gallery, g.Name, g.Version))}, nil
	}
	return nil, fmt.Errorf("%w: spec.azure.image must set one of id, marketplace or computeGallery", platform.ErrInvalid)
}

// randomPassword is a 40-character password with upper and lower case
// letters, digits and symbols, as Azure requires of a Windows VM's
// administrator.
func randomPassword() (string, error) {
	const (
		lower   = "abcdefghijkmnopqrstuvwxyz"
		upper   = "ABCDEFGHJKLMNPQRSTUVWXYZ"
		digits  = "23456789"
		symbols = "!#%+-=?@^_"
	)
	classes := []string{lower, upper, digits, symbols}
	var b strings.Builder
	for i := 0; i < 40; i++ {
		set := classes[i%len(classes)]
		k, err := rand.Int(rand.Reader, big.NewInt(int64(len(set))))
		if err != nil {
			return "", fmt.Errorf("making the VM's administrator password: %w", err)
		}
		b.WriteByte(set[k.Int64()])
	}
	return b.String(), nil
}

func (p *Platform) getVM(ctx context.Context, n resourceNames) (*armcompute.VirtualMachine, error) {
	resp, err := p.clients.vms.Get(ctx, p.group(), n.vm, &armcompute.VirtualMachinesClientGetOptions{Expand: ptr.To(armcompute.InstanceViewTypesInstanceView)})
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, classify("reading VM "+n.vm, err)
	}
	if resp.Properties == nil {
		resp.Properties = &armcompute.VirtualMachineProperties{}
	}
	return &resp.VirtualMachine, nil
}

func (p *Platform) getNIC(ctx context.Context, n resourceNames) (*armnetwork.Interface, error) {
	resp, err := p.clients.interfaces.Get(ctx, p.group(), n.nic, nil)
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, classify("reading network interface "+n.nic, err)
	}
	return &resp.Interface, nil
}

func nicState(nic *armnetwork.Interface) string {
	if nic == nil || nic.Properties == nil || nic.Properties.ProvisioningState == nil {
		return ""
	}
	return string(*nic.Properties.ProvisioningState)
}

// nicAddresses are the NIC's private IP addresses.
func nicAddresses(nic *armnetwork.Interface) []string {
	var out []string
	if nic.Properties == nil {
		return nil
	}
	for _, c := range nic.Properties.IPConfigurations {
		if c != nil && c.Properties != nil && c.Properties.PrivateIPAddress != nil {
			out = append(out, *c.Properties.PrivateIPAddress)
		}
	}
	return out
}

// powerState is the VM's PowerState/ status code without its prefix.
func powerState(iv *armcompute.VirtualMachineInstanceView) string {
	if iv == nil {
		return ""
	}
	for _, s := range iv.Statuses {
		if s != nil && strings.HasPrefix(ptr.Deref(s.Code, ""), "PowerState/") {
			return strings.TrimPrefix(*s.Code, "PowerState/")
		}
	}
	return ""
}

// provisioningTimedOut reports whether a failed VM failed only because its
// guest did not report ready in time (OSProvisioningTimedOut), and runs.
func provisioningTimedOut(iv *armcompute.VirtualMachineInstanceView) bool {
	if iv == nil || powerState(iv) != "running" {
		return false
	}
	for _, s := range iv.Statuses {
		if s != nil && strings.EqualFold(ptr.Deref(s.Code, ""), "ProvisioningState/failed/OSProvisioningTimedOut") {
			return true
		}
	}
	return false
}

// statusMessage is ": " and the message of the VM's failed provisioning
// status, or "".
func statusMessage(iv *armcompute.VirtualMachineInstanceView) string {
	if iv == nil {
		return ""
	}
	for _, s := range iv.Statuses {
		if s != nil && strings.HasPrefix(ptr.Deref(s.Code, ""), "ProvisioningState/failed") && s.Message != nil {
			return ": " + *s.Message
		}
	}
	return ""
}
