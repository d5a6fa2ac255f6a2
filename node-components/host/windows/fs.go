//go:build windows

package windows

import (
	"fmt"
	"sync"

	"golang.org/x/sys/windows"
)

var privateDACL = sync.OnceValues(func() (*windows.ACL, error) {
	sd, err := windows.SecurityDescriptorFromString(privateSDDL)
	if err != nil {
		return nil, fmt.Errorf("parsing the security descriptor %s: %w", privateSDDL, err)
	}
	// The DACL points into sd, which lives on the Go heap for as long as
	// the DACL is referenced.
	dacl, _, err := sd.DACL()
	if err != nil {
		return nil, fmt.Errorf("reading the DACL of %s: %w", privateSDDL, err)
	}
	return dacl, nil
})

// protect replaces the DACL of the file or directory at path with
// privateSDDL's: host.DirFS calls it on a private file before writing a byte
// into it.
func protect(path string) error {
	dacl, err := privateDACL()
	if err != nil {
		return err
	}
	err = windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION,
		nil, nil, dacl, nil)
	if err != nil {
		return fmt.Errorf("restricting %s to SYSTEM and Administrators: %w", path, err)
	}
	return nil
}
