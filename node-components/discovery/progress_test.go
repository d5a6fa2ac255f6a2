package discovery

import (
	"strings"
	"testing"

	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/capwin/capwin/node-components/nodeconfig"
)

// TestProgressGroup: every name nodeconfig accepts as join.progressConfigMap
// gives a group the API server accepts among a token's extra groups, dots
// become colons, and two names never share a group.
func TestProgressGroup(t *testing.T) {
	for name, want := range map[string]string{
		"win1-md-0-7f9c4-x2b8q": "system:bootstrappers:capwin:win1-md-0-7f9c4-x2b8q",
		"win1.md.0":             "system:bootstrappers:capwin:win1:md:0",
		"a":                     "system:bootstrappers:capwin:a",
	} {
		if got := ProgressGroup(name); got != want {
			t.Errorf("ProgressGroup(%q) = %q, want %q", name, got, want)
		}
	}
	// Injective: "win1.md" and "win1-md" differ, and no DNS name maps to
	// the group of another (':' is not in a DNS name, so the colons say
	// where the dots were).
	if ProgressGroup("win1.md") == ProgressGroup("win1-md") {
		t.Error("win1.md and win1-md share a group")
	}
	longest := strings.Repeat("a", 100) + "." + strings.Repeat("b", nodeconfig.MaxProgressConfigMap-101)
	for _, name := range []string{"win1-md-0-7f9c4-x2b8q", "win1.md.0", "0", longest} {
		if err := nodeconfig.CheckProgressConfigMap(name); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if err := bootstraputil.ValidateBootstrapGroupName(ProgressGroup(name)); err != nil {
			t.Errorf("ProgressGroup(%q): %v", name, err)
		}
	}
	// The rule leaves room for one character more than nodeconfig allows,
	// and no more.
	if err := bootstraputil.ValidateBootstrapGroupName(ProgressGroup(longest + "a")); err != nil {
		t.Errorf("%d characters: %v", len(longest)+1, err)
	}
	if err := bootstraputil.ValidateBootstrapGroupName(ProgressGroup(longest + "aa")); err == nil {
		t.Errorf("a name of %d characters fits the group rule", len(longest)+2)
	}
}
