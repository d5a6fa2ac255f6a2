package report_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/node-components/report"
)

// TestTokenGroup: every name nodeconfig accepts as join.progressConfigMap
// gives a group the API server accepts among a token's extra groups, dots
// become colons, and two names never share a group.
func TestTokenGroup(t *testing.T) {
	for name, want := range map[string]string{
		"win1-md-0-7f9c4-x2b8q": "system:bootstrappers:capwin:win1-md-0-7f9c4-x2b8q",
		"win1.md.0":             "system:bootstrappers:capwin:win1:md:0",
		"a":                     "system:bootstrappers:capwin:a",
	} {
		if got := report.TokenGroup(name); got != want {
			t.Errorf("TokenGroup(%q) = %q, want %q", name, got, want)
		}
	}
	// Injective: "win1.md" and "win1-md" differ, and no DNS name maps to
	// the group of another (':' is not in a DNS name, so the colons say
	// where the dots were).
	if report.TokenGroup("win1.md") == report.TokenGroup("win1-md") {
		t.Error("win1.md and win1-md share a group")
	}
	longest := strings.Repeat("a", 100) + "." + strings.Repeat("b", nodeconfig.MaxProgressConfigMap-101)
	for _, name := range []string{"win1-md-0-7f9c4-x2b8q", "win1.md.0", "0", longest} {
		if err := nodeconfig.CheckProgressConfigMap(name); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if err := bootstraputil.ValidateBootstrapGroupName(report.TokenGroup(name)); err != nil {
			t.Errorf("TokenGroup(%q): %v", name, err)
		}
	}
	// The rule leaves room for one character more than nodeconfig allows,
	// and no more.
	if err := bootstraputil.ValidateBootstrapGroupName(report.TokenGroup(longest + "a")); err != nil {
		t.Errorf("%d characters: %v", len(longest)+1, err)
	}
	if err := bootstraputil.ValidateBootstrapGroupName(report.TokenGroup(longest + "aa")); err == nil {
		t.Errorf("a name of %d characters fits the group rule", len(longest)+2)
	}
}

// TestWireFormat pins the report's JSON: agents and managers of different
// versions read each other's, so a field is never renamed.
func TestWireFormat(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	p := report.Progress{
		NodeName: "win-abc", Phase: "kubelet", State: report.ProgressFailed, Message: "m", Retryable: true, Time: at,
		Phases: []report.PhaseRecord{{Name: "preflight", Started: at, Finished: at.Add(time.Second), Duration: time.Second, Waited: time.Millisecond, Message: "ok"}},
	}
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"nodeName":"win-abc","phase":"kubelet","state":"Failed","message":"m","retryable":true,"time":"2025-01-02T03:04:05Z",` +
		`"phases":[{"name":"preflight","started":"2025-01-02T03:04:05Z","finished":"2025-01-02T03:04:06Z","duration":1000000000,"waited":1000000,"message":"ok"}]}`
	if string(data) != want {
		t.Errorf("Progress as JSON:\n got %s\nwant %s", data, want)
	}
	data, err = json.Marshal(report.Progress{Phase: "discovery", State: report.ProgressRunning, Time: at})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"nodeName":"","phase":"discovery","state":"Running","time":"2025-01-02T03:04:05Z","phases":null}`; string(data) != want {
		t.Errorf("a report without the optional fields:\n got %s\nwant %s", data, want)
	}
	for s, want := range map[report.ProgressState]string{report.ProgressRunning: "Running", report.ProgressFailed: "Failed", report.ProgressJoined: "Joined"} {
		if string(s) != want {
			t.Errorf("state %q, want %q", s, want)
		}
	}
	if report.ConfigMapNamespace != "capwin-node-bootstrap" || report.ConfigMapKey != "progress" {
		t.Errorf("the report's ConfigMap moved: namespace %q, key %q", report.ConfigMapNamespace, report.ConfigMapKey)
	}
}
