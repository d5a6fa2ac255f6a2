package windows

import (
	"fmt"
	"strings"
	"testing"
)

// privateDACLProblem says why a security descriptor, as SDDL, lets others
// than SYSTEM and Administrators at a file: its DACL must be protected from
// its directory's ACEs and allow SYSTEM and Administrators only
// (privateSDDL, in whatever order and with whatever inheritance flags
// Windows keeps it). The conformance suite checks private files with it on
// Windows (conformance_windows_test.go).
func privateDACLProblem(sddl string) error {
	dacl, ok := strings.CutPrefix(sddl, "D:")
	i := strings.Index(dacl, "(")
	if !ok || i < 0 {
		return fmt.Errorf("the security descriptor %s has no DACL with entries", sddl)
	}
	if !strings.Contains(dacl[:i], "P") {
		return fmt.Errorf("the DACL %s is not protected from the directory's ACEs", sddl)
	}
	for _, ace := range strings.Split(strings.TrimSuffix(dacl[i+1:], ")"), ")(") {
		f := strings.Split(ace, ";")
		if len(f) < 6 || f[0] != "A" || (f[5] != "SY" && f[5] != "BA") {
			return fmt.Errorf("the DACL %s has an entry other than allowing SYSTEM or Administrators: (%s)", sddl, ace)
		}
	}
	return nil
}

func TestPrivateDACLProblem(t *testing.T) {
	for sddl, private := range map[string]bool{
		privateSDDL:                               true,
		"D:P(A;;FA;;;SY)(A;;FA;;;BA)":             true,
		"D:PAI(A;;FA;;;BA)(A;ID;FA;;;SY)":         true,
		"D:AI(A;;FA;;;SY)(A;;FA;;;BA)":            false, // not protected
		"D:P(A;;FA;;;SY)(A;;FA;;;BA)(A;;FR;;;BU)": false,
		"D:P(A;;FA;;;SY)(D;;FA;;;BA)":             false,
		"D:P":                                     false,
		"D:NO_ACCESS_CONTROL":                     false,
		"O:BAG:SY":                                false,
	} {
		if err := privateDACLProblem(sddl); (err == nil) != private {
			t.Errorf("%s: %v, want private %v", sddl, err, private)
		}
	}
}
