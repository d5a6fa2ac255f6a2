package webhooks

import (
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation/field"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/internal/names"
)

var netbiosName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*$`)

// validateComputerName checks an explicit computer name against the rules of
// the machine's operating system.
func validateComputerName(name string, os infrav1.OSType, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if os == infrav1.OSWindows {
		if len(name) > names.MaxWindowsComputerName {
			errs = append(errs, field.Invalid(path, name, fmt.Sprintf(
				"a Windows computer name is at most %d characters (the NetBIOS limit), this one has %d; leave computerName empty to get a short name derived from the Machine",
				names.MaxWindowsComputerName, len(name))))
		}
		if !netbiosName.MatchString(name) {
			errs = append(errs, field.Invalid(path, name, "a Windows computer name has only letters, digits and hyphens and starts with a letter or digit"))
		} else if names.AllDigits(name) {
			errs = append(errs, field.Invalid(path, name, "a Windows computer name cannot be only digits"))
		}
		return errs
	}
	if !netbiosName.MatchString(name) || len(name) > 63 {
		errs = append(errs, field.Invalid(path, name, "a host name has at most 63 letters, digits and hyphens and starts with a letter or digit"))
	}
	return errs
}
