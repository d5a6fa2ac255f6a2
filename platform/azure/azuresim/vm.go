package azuresim

import (
	"context"
	"net/http"
	"regexp"
	"strings"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	computefake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"
	"k8s.io/utils/ptr"
)

// The administrator names Azure refuses for a Windows VM.
var reservedAdmins = map[string]bool{}

func init() {
	for _, n := range strings.Fields("administrator admin user user1 test user2 test1 user3 admin1 1 123 a actuser adm admin2 aspnet backup console david guest john owner root server sql support support_388945a0 sys test2 test3 user4 user5") {
		reservedAdmins[n] = true
	}
}

var (
	nicID       = regexp.MustCompile(`(?i)^/subscriptions/[^/]+/resourceGroups/([^/]+)/providers/Microsoft\.Network/networkInterfaces/([^/]+)$`)
	computerBad = regexp.MustCompile("[ ~!@#$%^&*()=+_\\[\\]{}\\\\|;:.'\",<>/?]")
	onlyDigits  = regexp.MustCompile(`^[0-9]+$`)
)

// validateWindows applies Azure's rules for a Windows VM's osProfile; it
// returns the parameter at fault and why, or "".
func validateWindows(os *armcompute.OSProfile) (string, string) {
	name := ptr.Deref(os.ComputerName, "")
	switch {
	case len(name) == 0 || len(name) > 15:
		return "computerName", "Windows computer name cannot be more than 15 characters long, be entirely numeric, or contain the following characters: ` ~ ! @ # $ % ^ & * ( ) = + _ [ ] { } \\ | ; : . ' \" , < > / ?."
	case onlyDigits.MatchString(name) || computerBad.MatchString(name):
		return "computerName", "Windows computer name cannot be more than 15 characters long, be entirely numeric, or contain the following characters: ` ~ ! @ # $ % ^ & * ( ) = + _ [ ] { } \\ | ; : . ' \" , < > / ?."
	}
	user := ptr.Deref(os.AdminUsername, "")
	if user == "" || len(user) > 20 || strings.HasSuffix(user, ".") || reservedAdmins[strings.ToLower(user)] {
		return "adminUsername", "The Admin Username specified is not allowed."
	}
	pw := ptr.Deref(os.AdminPassword, "")
	classes := 0
	for _, in := range []func(rune) bool{
		func(r rune) bool { return r >= 'a' && r <= 'z' },
		func(r rune) bool { return r >= 'A' && r <= 'Z' },
		func(r rune) bool { return r >= '0' && r <= '9' },
		func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') },
	} {
		if strings.IndexFunc(pw, in) >= 0 {
			classes++
		}
	}
	if len(pw) < 12 || len(pw) > 123 || classes < 3 {
		return "adminPassword", "The supplied password must be between 12-123 characters long and must satisfy at least 3 of password complexity requirements."
	}
	return "", ""
}

func (c *Cloud) vmServer() computefake.VirtualMachinesServer {
	return computefake.VirtualMachinesServer{
		BeginCreateOrUpdate: c.createVM,
		Get: func(ctx context.Context, group, name string, o *armcompute.VirtualMachinesClientGetOptions) (resp azfake.Responder[armcompute.VirtualMachinesClientGetResponse], errResp azfake.ErrorResponder) {
			c.mu.Lock()
			defer c.mu.Unlock()
			vm := c.vms[key(group, name)]
			if vm == nil {
				errResp = fail(ctx, http.StatusNotFound, "ResourceNotFound", "The Resource 'Microsoft.Compute/virtualMachines/%s' under resource group '%s' was not found.", name, group)
				return
			}
			out := clone(vm)
			// ARM never returns customData or the administrator password.
			out.Properties.OSProfile.CustomData = nil
			out.Properties.OSProfile.AdminPassword = nil
			if o != nil && o.Expand != nil && *o.Expand == armcompute.InstanceViewTypesInstanceView {
				state := strings.ToLower(ptr.Deref(vm.Properties.ProvisioningState, ""))
				statuses := []*armcompute.InstanceViewStatus{{Code: ptr.To("ProvisioningState/" + state)}}
				if state == "succeeded" {
					statuses = append(statuses, &armcompute.InstanceViewStatus{Code: ptr.To("PowerState/running")})
				}
				out.Properties.InstanceView = &armcompute.VirtualMachineInstanceView{Statuses: statuses}
			}
			resp.SetResponse(http.StatusOK, armcompute.VirtualMachinesClientGetResponse{VirtualMachine: out}, nil)
			return
		},
		BeginDelete: c.deleteVM,
	}
}

func (c *Cloud) createVM(ctx context.Context, group, name string, vm armcompute.VirtualMachine, _ *armcompute.VirtualMachinesClientBeginCreateOrUpdateOptions) (resp azfake.PollerResponder[armcompute.VirtualMachinesClientCreateOrUpdateResponse], errResp azfake.ErrorResponder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	bad := func(status int, code, format string, args ...any) {
		errResp = fail(ctx, status, code, format, args...)
	}
	if !c.groupExists(group) {
		bad(http.StatusNotFound, "ResourceGroupNotFound", "Resource group '%s' could not be found.", group)
		return
	}
	p := vm.Properties
	if p == nil || p.OSProfile == nil || p.StorageProfile == nil || p.StorageProfile.ImageReference == nil || p.NetworkProfile == nil || len(p.NetworkProfile.NetworkInterfaces) == 0 {
		bad(http.StatusBadRequest, "InvalidParameter", "A VM needs an osProfile, an image reference and a network interface.")
		return
	}
	id := c.id(group, "Microsoft.Compute", "virtualMachines", name)
	if old := c.vms[key(group, name)]; old != nil {
		// An update: what Azure does not let change.
		for field, changed := range map[string]bool{
			"customData":    ptr.Deref(old.Properties.OSProfile.CustomData, "") != ptr.Deref(p.OSProfile.CustomData, ""),
			"computerName":  ptr.Deref(old.Properties.OSProfile.ComputerName, "") != ptr.Deref(p.OSProfile.ComputerName, ""),
			"adminUsername": ptr.Deref(old.Properties.OSProfile.AdminUsername, "") != ptr.Deref(p.OSProfile.AdminUsername, ""),
		} {
			if changed {
				bad(http.StatusConflict, "PropertyChangeNotAllowed", "Changing property '%s' is not allowed.", field)
				return
			}
		}
	}
	if p.OSProfile.WindowsConfiguration != nil {
		if field, why := validateWindows(p.OSProfile); field != "" {
			bad(http.StatusBadRequest, "InvalidParameter", "%s Target: '%s'", why, field)
			return
		}
	}
	if cd := ptr.Deref(p.OSProfile.CustomData, ""); cd != "" {
		if n, err := decodedLen(cd); err != nil || n > 65535 {
			bad(http.StatusBadRequest, "InvalidParameter", "Custom data must be in Base64 and at most 65535 bytes once decoded. Target: 'customData'")
			return
		}
	}
	for _, z := range vm.Zones {
		if len(vm.Zones) > 1 || (ptr.Deref(z, "") != "1" && ptr.Deref(z, "") != "2" && ptr.Deref(z, "") != "3") {
			bad(http.StatusBadRequest, "InvalidParameter", "The zones of a VM must be one of 1, 2 or 3. Target: 'zones'")
			return
		}
	}
	var nicKeys []string
	for _, ref := range p.NetworkProfile.NetworkInterfaces {
		m := nicID.FindStringSubmatch(ptr.Deref(ref.ID, ""))
		if m == nil || c.nics[key(m[1], m[2])] == nil {
			bad(http.StatusBadRequest, "InvalidResourceReference", "Resource %s referenced by resource %s was not found.", ptr.Deref(ref.ID, ""), id)
			return
		}
		nic := c.nics[key(m[1], m[2])]
		if user := nic.Properties.VirtualMachine; user != nil && !strings.EqualFold(ptr.Deref(user.ID, ""), id) {
			bad(http.StatusBadRequest, "NicInUse", "Network Interface %s is used by existing resource %s.", ptr.Deref(ref.ID, ""), ptr.Deref(user.ID, ""))
			return
		}
		nicKeys = append(nicKeys, key(m[1], m[2]))
	}
	vm.ID, vm.Name = ptr.To(id), ptr.To(name)
	p.VMID = ptr.To(guid())
	osDisk := p.StorageProfile.OSDisk
	if osDisk == nil {
		osDisk = &armcompute.OSDisk{}
		p.StorageProfile.OSDisk = osDisk
	}
	if osDisk.Name == nil {
		osDisk.Name = ptr.To(name + "_OsDisk_1_" + randomHex(16))
	}
	diskKey := key(group, *osDisk.Name)
	if c.disks[diskKey] == nil {
		size := ptr.Deref(osDisk.DiskSizeGB, 127)
		sku := armcompute.DiskStorageAccountTypesPremiumLRS
		if osDisk.ManagedDisk != nil && osDisk.ManagedDisk.StorageAccountType != nil {
			sku = armcompute.DiskStorageAccountTypes(*osDisk.ManagedDisk.StorageAccountType)
		}
		c.disks[diskKey] = &armcompute.Disk{
			ID: ptr.To(c.id(group, "Microsoft.Compute", "disks", *osDisk.Name)), Name: osDisk.Name, Location: vm.Location,
			SKU: &armcompute.DiskSKU{Name: ptr.To(sku)}, ManagedBy: ptr.To(id),
			Properties: &armcompute.DiskProperties{DiskSizeGB: ptr.To(size)},
		}
	}
	for _, k := range nicKeys {
		c.nics[k].Properties.VirtualMachine = &armnetwork.SubResource{ID: ptr.To(id)}
	}
	p.ProvisioningState = ptr.To("Creating")
	c.vms[key(group, name)] = &vm
	done := clone(&vm)
	done.Properties.ProvisioningState = ptr.To("Succeeded")
	done.Properties.OSProfile.CustomData, done.Properties.OSProfile.AdminPassword = nil, nil
	resp = lro(c, id, http.StatusOK, armcompute.VirtualMachinesClientCreateOrUpdateResponse{VirtualMachine: done}, func() {
		c.mu.Lock()
		v := c.vms[key(group, name)]
		var created armcompute.VirtualMachine
		var hooks []func(armcompute.VirtualMachine)
		if v != nil && ptr.Deref(v.Properties.ProvisioningState, "") == "Creating" {
			v.Properties.ProvisioningState = ptr.To("Succeeded")
			created = clone(v)
			hooks = append(hooks, c.onVM...)
		}
		c.mu.Unlock()
		for _, f := range hooks {
			go f(created)
		}
	})
	return
}

func (c *Cloud) deleteVM(_ context.Context, group, name string, _ *armcompute.VirtualMachinesClientBeginDeleteOptions) (resp azfake.PollerResponder[armcompute.VirtualMachinesClientDeleteResponse], errResp azfake.ErrorResponder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	vm := c.vms[key(group, name)]
	if vm == nil {
		var r azfake.PollerResponder[armcompute.VirtualMachinesClientDeleteResponse]
		r.SetTerminalResponse(http.StatusNoContent, armcompute.VirtualMachinesClientDeleteResponse{}, nil)
		return r, errResp
	}
	vm.Properties.ProvisioningState = ptr.To("Deleting")
	resp = lro(c, ptr.Deref(vm.ID, ""), http.StatusOK, armcompute.VirtualMachinesClientDeleteResponse{}, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		vm := c.vms[key(group, name)]
		if vm == nil {
			return
		}
		delete(c.vms, key(group, name))
		// What the VM's delete options say goes with it; the rest stays.
		if d := vm.Properties.StorageProfile.OSDisk; d != nil && d.Name != nil {
			if disk := c.disks[key(group, *d.Name)]; disk != nil {
				disk.ManagedBy = nil
				if ptr.Deref(d.DeleteOption, "") == armcompute.DiskDeleteOptionTypesDelete {
					delete(c.disks, key(group, *d.Name))
				}
			}
		}
		for _, ref := range vm.Properties.NetworkProfile.NetworkInterfaces {
			m := nicID.FindStringSubmatch(ptr.Deref(ref.ID, ""))
			if m == nil || c.nics[key(m[1], m[2])] == nil {
				continue
			}
			c.nics[key(m[1], m[2])].Properties.VirtualMachine = nil
			if ref.Properties != nil && ptr.Deref(ref.Properties.DeleteOption, "") == armcompute.DeleteOptionsDelete {
				delete(c.nics, key(m[1], m[2]))
			}
		}
	})
	return
}

// VirtualMachines are the VMs, with their customData, as the guest sees it.
func (c *Cloud) VirtualMachines() []armcompute.VirtualMachine {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sorted(c.vms, clone[armcompute.VirtualMachine])
}
