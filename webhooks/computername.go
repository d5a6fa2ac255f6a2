package webhooks

import (
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation/field"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/internal/names"
)

// hostLabel is a lower-case DNS label: what a Node name, and so the computer
// name the node registers with, must be.
var hostLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

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
		if !hostLabel.MatchString(name) {
			errs = append(errs, field.Invalid(path, name, "a computer name has only lower-case letters, digits and inner hyphens (it becomes the Node name)"))
		} else if names.AllDigits(name) {
			errs = append(errs, field.Invalid(path, name, "a Windows computer name cannot be only digits"))
		}
		return errs
	}
	if !hostLabel.MatchString(name) || len(name) > 63 {
		errs = append(errs, field.Invalid(path, name, "a host name has at most 63 lower-case letters, digits and inner hyphens (it becomes the Node name)"))
	}
	return errs
}
