package names

import (
	"fmt"
	"regexp"
	"testing"
)

var valid = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,14}$`)

func TestWindowsComputerName(t *testing.T) {
	tests := []struct {
		namespace, name, want string
	}{
		{"default", "win1-md-0-7f9c4-x2b8q", ""},
		{"default", "a", ""},
		{"default", "---", ""},
		{"default", "1234567890123456789", ""},
		{"team-a", "Win1.Windows_Pool-abcdefghijklmnopqrstuvwxyz", ""},
	}
	for _, tt := range tests {
		got := WindowsComputerName(tt.namespace, tt.name)
		if !valid.MatchString(got) || len(got) > MaxWindowsComputerName || AllDigits(got) {
			t.Errorf("WindowsComputerName(%q, %q) = %q: not a valid Windows computer name", tt.namespace, tt.name, got)
		}
		if again := WindowsComputerName(tt.namespace, tt.name); again != got {
			t.Errorf("WindowsComputerName(%q, %q) is not stable: %q then %q", tt.namespace, tt.name, got, again)
		}
	}
	if got := WindowsComputerName("default", "win1-md-0-7f9c4-x2b8q"); got[:8] != "win1-md-" {
		t.Errorf("the name keeps a readable prefix of the Machine name: got %q", got)
	}
	if WindowsComputerName("a", "m1") == WindowsComputerName("b", "m1") {
		t.Error("the same Machine name in two namespaces must give two computer names")
	}
}

func TestWindowsComputerNameCollisions(t *testing.T) {
	// Machines of one MachineDeployment share a long common prefix, so only
	// the hash tells them apart: 5,000 of them must all differ.
	seen := map[string]string{}
	for i := range 5000 {
		name := fmt.Sprintf("win1-windows-md-0-%05d", i)
		cn := WindowsComputerName("default", name)
		if prev, ok := seen[cn]; ok {
			t.Fatalf("%s and %s both got computer name %s", prev, name, cn)
		}
		seen[cn] = name
	}
}

func TestAllDigits(t *testing.T) {
	for s, want := range map[string]bool{"123": true, "12a": false, "": false, "-1": false} {
		if got := AllDigits(s); got != want {
			t.Errorf("AllDigits(%q) = %v, want %v", s, got, want)
		}
	}
}
