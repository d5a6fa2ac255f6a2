package azuresim

import (
	"encoding/base64"
	"net/http"
	"strings"
	"unicode"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
)

// maxCustomData is the largest osProfile.customData (and userData) Azure
// accepts, in bytes once decoded from base64.
const maxCustomData = 65535

// windowsComputerNameForbidden holds the characters Azure refuses in a
// Windows computer name.
const windowsComputerNameForbidden = "` ~!@#$%^&*()=+_[]{}\\|;:.'\",<>/?"

// windowsUsernameForbidden holds the characters Windows refuses in a user name.
const windowsUsernameForbidden = "\\/\"[]:|<>+=;,?*@"

// disallowedUsernames are the admin user names Azure refuses, compared without case.
var disallowedUsernames = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`administrator admin user user1 test user2 test1 user3 admin1 1 123 a
		actuser adm admin2 aspnet backup console david guest john owner root server sql support
		support_388945a0 sys test2 test3 user4 user5`) {
		disallowedUsernames[n] = true
	}
}

// invalidParameter is the 400 InvalidParameter compute answers, naming the field.
func invalidParameter(target, format string, args ...any) *armError {
	return errf(http.StatusBadRequest, "InvalidParameter", target, format, args...)
}

// checkVM applies the rules that need nothing but the request body of a
// VM create or update; the NICs and the existing VM are checked elsewhere.
func checkVM(vm *armcompute.VirtualMachine) *armError {
	if deref(vm.Location) == "" {
		return locationRequired()
	}
	if len(vm.Zones) > 1 {
		return invalidParameter("zones", "A virtual machine can be placed in at most one availability zone; the request asks for %d.", len(vm.Zones))
	}
	for _, z := range vm.Zones {
		if z := deref(z); z != "1" && z != "2" && z != "3" {
			return invalidParameter("zones", "The value '%s' of parameter 'zones' is invalid: the zone must be 1, 2 or 3.", z)
		}
	}
	p := vm.Properties
	if p == nil {
		return invalidParameter("properties", "Required parameter 'properties' is missing (null).")
	}
	if p.HardwareProfile == nil || deref(p.HardwareProfile.VMSize) == "" {
		return invalidParameter("vmSize", "Required parameter 'hardwareProfile.vmSize' is missing (null).")
	}
	if e := checkImage(p.StorageProfile); e != nil {
		return e
	}
	if p.NetworkProfile == nil || len(p.NetworkProfile.NetworkInterfaces) == 0 {
		return invalidParameter("networkProfile", "Required parameter 'networkProfile.networkInterfaces' is missing: a virtual machine needs at least one network interface.")
	}
	if e := checkBase64("userData", deref(p.UserData)); e != nil {
		return e
	}
	os := p.OSProfile
	if os == nil {
		return invalidParameter("osProfile", "Required parameter 'osProfile' is missing (null).")
	}
	windows := isWindows(vm)
	if e := checkComputerName(deref(os.ComputerName), windows); e != nil {
		return e
	}
	if e := checkAdminUsername(deref(os.AdminUsername), windows); e != nil {
		return e
	}
	if windows {
		if e := checkAdminPassword(deref(os.AdminPassword)); e != nil {
			return e
		}
	}
	return checkBase64("customData", deref(os.CustomData))
}

// isWindows tells Windows VMs from Linux ones. Only an explicit Linux
// configuration or OS type makes a VM Linux, so that the stricter Windows
// rules apply whenever the request leaves it open.
func isWindows(vm *armcompute.VirtualMachine) bool {
	p := vm.Properties
	if p.OSProfile != nil && p.OSProfile.LinuxConfiguration != nil && p.OSProfile.WindowsConfiguration == nil {
		return false
	}
	if s := p.StorageProfile; s != nil && s.OSDisk != nil && deref(s.OSDisk.OSType) == armcompute.OperatingSystemTypesLinux {
		return false
	}
	return true
}

// checkImage requires an image: a resource ID (image or gallery image
// version), a shared or community gallery ID, or a full marketplace reference.
func checkImage(s *armcompute.StorageProfile) *armError {
	if s == nil || s.ImageReference == nil {
		return invalidParameter("imageReference", "Required parameter 'storageProfile.imageReference' is missing (null).")
	}
	r := s.ImageReference
	switch {
	case deref(r.ID) != "":
		id := strings.ToLower(deref(r.ID))
		if !strings.HasPrefix(id, "/subscriptions/") ||
			(!strings.Contains(id, "/providers/microsoft.compute/images/") && !strings.Contains(id, "/providers/microsoft.compute/galleries/")) {
			return invalidParameter("imageReference", "The value '%s' of parameter 'imageReference.id' is not the ID of an image or a gallery image version.", deref(r.ID))
		}
	case deref(r.SharedGalleryImageID) != "", deref(r.CommunityGalleryImageID) != "":
	default:
		if deref(r.Publisher) == "" || deref(r.Offer) == "" || deref(r.SKU) == "" || deref(r.Version) == "" {
			return invalidParameter("imageReference", "The image reference needs an id, or a publisher, offer, sku and version.")
		}
	}
	return nil
}

// checkComputerName applies Azure's rules for osProfile.computerName.
func checkComputerName(name string, windows bool) *armError {
	if name == "" {
		return invalidParameter("computerName", "Required parameter 'osProfile.computerName' is missing (null).")
	}
	if !windows {
		if len(name) > 64 {
			return invalidParameter("computerName", "Linux host name cannot exceed 64 characters in length.")
		}
		return nil
	}
	allDigits := strings.IndexFunc(name, func(r rune) bool { return !unicode.IsDigit(r) }) < 0
	if len(name) > 15 || allDigits || strings.ContainsAny(name, windowsComputerNameForbidden) {
		return invalidParameter("computerName", "Windows computer name cannot be more than 15 characters long, be entirely numeric, or contain the following characters: %s", windowsComputerNameForbidden)
	}
	return nil
}

// checkAdminUsername applies Azure's rules for osProfile.adminUsername.
func checkAdminUsername(u string, windows bool) *armError {
	if u == "" {
		return invalidParameter("adminUsername", "Required parameter 'osProfile.adminUsername' is missing (null).")
	}
	if disallowedUsernames[strings.ToLower(u)] || strings.HasSuffix(u, ".") {
		return invalidParameter("adminUsername", "The Admin Username specified is not allowed.")
	}
	if windows && (len(u) > 20 || strings.ContainsAny(u, windowsUsernameForbidden)) {
		return invalidParameter("adminUsername", "The Admin Username specified is not allowed: a Windows admin user name has at most 20 characters and none of %s.", windowsUsernameForbidden)
	}
	return nil
}

// checkAdminPassword applies Azure's rules for a Windows osProfile.adminPassword:
// 12 to 123 characters, with at least three of lower case, upper case,
// digit and special character.
func checkAdminPassword(p string) *armError {
	if p == "" {
		return invalidParameter("adminPassword", "Required parameter 'adminPassword' is missing (null).")
	}
	var lower, upper, digit, special int
	for _, r := range p {
		switch {
		case unicode.IsLower(r):
			lower = 1
		case unicode.IsUpper(r):
			upper = 1
		case unicode.IsDigit(r):
			digit = 1
		default:
			special = 1
		}
	}
	if n := len(p); n < 12 || n > 123 || lower+upper+digit+special < 3 {
		return invalidParameter("adminPassword", "The supplied password must be between 12-123 characters long and must satisfy at least 3 of password complexity requirements from the following: 1) Contains an uppercase character 2) Contains a lowercase character 3) Contains a numeric digit 4) Contains a special character 5) Control characters are not allowed")
	}
	return nil
}

// checkBase64 requires v, when set, to be base64 of at most maxCustomData bytes.
func checkBase64(field, v string) *armError {
	if v == "" {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(b) > maxCustomData {
		return invalidParameter(field, "The value of parameter '%s' must be in Base64 encoding and with a maximum length of 87380 characters (%d bytes decoded).", field, maxCustomData)
	}
	return nil
}
