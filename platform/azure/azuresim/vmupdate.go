package azuresim

import (
	"net/http"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
)

// keepOnUpdate fills an update PUT of a VM from the existing VM old where
// Azure keeps what is there (secrets GET never returns, read-only
// properties, the OS disk) and refuses the changes Azure refuses.
func keepOnUpdate(vm, old *armcompute.VirtualMachine) *armError {
	if vm.Properties == nil {
		vm.Properties = &armcompute.VirtualMachineProperties{}
	}
	np, op := vm.Properties, old.Properties
	if !strings.EqualFold(deref(vm.Location), deref(old.Location)) {
		return changeNotAllowed("location")
	}
	if !slices.Equal(derefAll(vm.Zones), derefAll(old.Zones)) {
		return changeNotAllowed("zones")
	}
	if np.OSProfile == nil {
		o := clone(*op.OSProfile)
		np.OSProfile = &o
	}
	no, oo := np.OSProfile, op.OSProfile
	for _, f := range []struct {
		name     string
		now, was **string
	}{
		{"computerName", &no.ComputerName, &oo.ComputerName},
		{"adminUsername", &no.AdminUsername, &oo.AdminUsername},
		{"adminPassword", &no.AdminPassword, &oo.AdminPassword},
		{"customData", &no.CustomData, &oo.CustomData},
	} {
		switch {
		case deref(*f.now) == "":
			*f.now = *f.was
		case deref(*f.now) != deref(*f.was):
			return changeNotAllowed(f.name)
		}
	}
	if np.StorageProfile == nil {
		np.StorageProfile = &armcompute.StorageProfile{}
	}
	if np.StorageProfile.ImageReference == nil {
		np.StorageProfile.ImageReference = op.StorageProfile.ImageReference
	} else if imageKey(np.StorageProfile.ImageReference) != imageKey(op.StorageProfile.ImageReference) {
		return changeNotAllowed("imageReference")
	}
	oldDisk := op.StorageProfile.OSDisk
	if d := np.StorageProfile.OSDisk; d != nil && deref(d.Name) != "" && !strings.EqualFold(deref(d.Name), deref(oldDisk.Name)) {
		return changeNotAllowed("osDisk.name")
	}
	disk := clone(*oldDisk)
	if d := np.StorageProfile.OSDisk; d != nil && d.DeleteOption != nil {
		disk.DeleteOption = d.DeleteOption
	}
	np.StorageProfile.OSDisk = &disk
	if np.NetworkProfile == nil || !slices.Equal(nicKeys(np.NetworkProfile), nicKeys(op.NetworkProfile)) {
		return errf(http.StatusConflict, "OperationNotAllowed", "networkProfile",
			"azuresim does not simulate adding or removing network interfaces of an existing VM (Azure requires the VM to be deallocated).")
	}
	np.VMID, np.TimeCreated = op.VMID, op.TimeCreated
	return nil
}

// changeNotAllowed is the 409 Azure answers to an update PUT changing a fixed property.
func changeNotAllowed(prop string) *armError {
	return errf(http.StatusConflict, "PropertyChangeNotAllowed", prop, "Changing property '%s' is not allowed.", prop)
}

// derefAll returns the strings a slice of pointers points to.
func derefAll(s []*string) []string {
	out := make([]string, 0, len(s))
	for _, p := range s {
		out = append(out, deref(p))
	}
	return out
}

// nicKeys returns the lower-cased NIC IDs of a network profile, sorted.
func nicKeys(np *armcompute.NetworkProfile) []string {
	var out []string
	if np == nil {
		return nil
	}
	for _, ref := range np.NetworkInterfaces {
		out = append(out, key(deref(ref.ID)))
	}
	slices.Sort(out)
	return out
}

// imageKey identifies an image reference for comparison.
func imageKey(r *armcompute.ImageReference) string {
	if r == nil {
		return ""
	}
	return strings.ToLower(strings.Join([]string{deref(r.ID), deref(r.SharedGalleryImageID), deref(r.CommunityGalleryImageID),
		deref(r.Publisher), deref(r.Offer), deref(r.SKU), deref(r.Version)}, "|"))
}
