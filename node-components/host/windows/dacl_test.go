package windows

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestPrivateSDDL reads privateSDDL as Windows' SDDL grammar has it: a
// protected DACL (D:P, no inherited ACEs) of allow ACEs that give full
// file access (FA) to files and subdirectories (OICI), to SYSTEM and the
// Administrators only. Windows parses it (fs.go); this checks what it says.
func TestPrivateSDDL(t *testing.T) {
	flags, aces, ok := strings.Cut(strings.TrimPrefix(privateSDDL, "D:"), "(")
	if !strings.HasPrefix(privateSDDL, "D:") || !ok {
		t.Fatalf("%s is not a DACL with ACEs", privateSDDL)
	}
	if flags != "P" {
		t.Errorf("DACL flags %q, want P alone: protected from inheritance, nothing else", flags)
	}
	ace := regexp.MustCompile(`^\(([^;()]*);([^;()]*);([^;()]*);([^;()]*);([^;()]*);([^;()]*)\)`)
	var trustees []string
	for rest := "(" + aces; rest != ""; {
		m := ace.FindStringSubmatch(rest)
		if m == nil {
			t.Fatalf("%q is not a list of ACEs", rest)
		}
		rest = rest[len(m[0]):]
		if typ, inherit, rights, object, inheritObject := m[1], m[2], m[3], m[4], m[5]; typ != "A" || inherit != "OICI" || rights != "FA" || object != "" || inheritObject != "" {
			t.Errorf("ACE %s: want (A;OICI;FA;;;trustee)", m[0])
		}
		trustees = append(trustees, m[6])
	}
	slices.Sort(trustees)
	if !slices.Equal(trustees, []string{"BA", "SY"}) {
		t.Errorf("trustees %v, want SYSTEM (SY) and Administrators (BA) only", trustees)
	}
}
