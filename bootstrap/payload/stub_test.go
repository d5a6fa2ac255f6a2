package payload

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	bootstrapv1 "github.com/capwin/capwin/api/bootstrap/v1alpha1"
	"github.com/capwin/capwin/node-components/exitcode"
)

func TestStubExitCode(t *testing.T) {
	cases := []struct {
		join, attempt, want int
	}{
		{exitcode.OK, 1, StubExitJoined},
		{exitcode.OK, MaxAttempts + 3, StubExitJoined},
		{exitcode.Failed, 1, StubExitFailed},
		{exitcode.Usage, 1, StubExitFailed},
		{-1073741819, 1, StubExitFailed}, // the agent crashed (0xC0000005)
		{exitcode.Retry, 1, StubExitRebootAndRunAgain},
		{exitcode.Retry, MaxAttempts - 1, StubExitRebootAndRunAgain},
		{exitcode.Retry, MaxAttempts, StubExitRunAgainAtNextBoot},
		{exitcode.Retry, MaxAttempts + 1, StubExitRunAgainAtNextBoot},
	}
	for _, c := range cases {
		if got := StubExitCode(c.join, c.attempt); got != c.want {
			t.Errorf("join exit %d, attempt %d: stub exit %d, want %d", c.join, c.attempt, got, c.want)
		}
	}
}

// TestStubDecidesAsStubExitCode reads the rendered stub's exit codes and
// its decision, and holds them to the Go side: the numbers to capwin-node's
// (node-components/exitcode) and this package's constants, the decision to
// StubExitCode, for every join exit code and attempt. PowerShell does not
// run here, so the decision is read from the script's text, whose shape the
// test knows; a change of that shape fails the test until the test and
// StubExitCode follow it.
func TestStubDecidesAsStubExitCode(t *testing.T) {
	p, err := Render(input(bootstrapv1.WindowsKubeadmConfigSpec{}))
	if err != nil {
		t.Fatal(err)
	}
	script := string(p.Script)

	consts := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^\$(\w+) = (-?\d+)\r?$`).FindAllStringSubmatch(script, -1) {
		consts[m[1]], _ = strconv.Atoi(m[2])
	}
	want := map[string]int{
		"JoinExitOK":             exitcode.OK,
		"JoinExitRetry":          exitcode.Retry,
		"ExitFailed":             StubExitFailed,
		"ExitRunAgainAtNextBoot": StubExitRunAgainAtNextBoot,
		"ExitRebootAndRunAgain":  StubExitRebootAndRunAgain,
		"MaxAttempts":            MaxAttempts,
	}
	for name, v := range want {
		if got, ok := consts[name]; !ok || got != v {
			t.Errorf("the stub's $%s is %d (set: %v), the Go side's %d", name, got, ok, v)
		}
	}

	// Every exit goes through a named code, but the success's.
	for _, m := range regexp.MustCompile(`(?m)^\s*exit\s+(\S+)\s*$`).FindAllStringSubmatch(script, -1) {
		switch m[1] {
		case "$ExitFailed", "$ExitRunAgainAtNextBoot", "$ExitRebootAndRunAgain", strconv.Itoa(StubExitJoined):
		default:
			t.Errorf("the stub exits with %s, not one of its named codes", m[1])
		}
	}

	// After the join: success exits 0; anything else goes to Exit-Failed,
	// retryable when join said so.
	for _, line := range []string{
		"if ($joinExitCode -eq $JoinExitOK) {",
		"    exit " + strconv.Itoa(StubExitJoined),
		"Exit-Failed ($joinExitCode -eq $JoinExitRetry) ",
	} {
		if !strings.Contains(script, "\n"+line) {
			t.Errorf("the stub has no line %q after the join", line)
		}
	}
	decide := exitFailed(t, script, consts)
	for join := -2; join <= 1004; join++ {
		if join > 5 && join < 1000 {
			continue
		}
		for attempt := 1; attempt <= MaxAttempts+2; attempt++ {
			stub := StubExitJoined
			if join != consts["JoinExitOK"] {
				stub = decide(join == consts["JoinExitRetry"], attempt)
			}
			if model := StubExitCode(join, attempt); stub != model {
				t.Errorf("join exit %d, attempt %d: the stub exits %d, StubExitCode says %d", join, attempt, stub, model)
			}
		}
	}
}

// exitFailed reads the stub's Exit-Failed function: a list of
// `if (condition) { ... exit $Code }` branches, then a last exit. It
// returns the function as Go, for the conditions it knows.
func exitFailed(t *testing.T, script string, consts map[string]int) func(retryable bool, attempt int) int {
	t.Helper()
	m := regexp.MustCompile(`(?s)\nfunction Exit-Failed\(\[bool\]\$Retryable, \[string\]\$Reason\) \{\n(.*?)\n\}\n`).FindStringSubmatch(script)
	if m == nil {
		t.Fatal("the stub has no function Exit-Failed([bool]$Retryable, [string]$Reason)")
	}
	type branch struct{ cond, code string }
	var branches []branch
	cond := ""
	for _, line := range strings.Split(m[1], "\n") {
		line = strings.TrimSpace(line)
		if c, ok := strings.CutPrefix(line, "if ("); ok {
			c, ok = strings.CutSuffix(c, ") {")
			if !ok {
				t.Fatalf("Exit-Failed: a condition this test cannot read: %q", line)
			}
			cond = c
		}
		if code, ok := strings.CutPrefix(line, "exit "); ok {
			branches = append(branches, branch{cond, code})
			cond = ""
		}
	}
	if len(branches) == 0 || branches[len(branches)-1].cond != "" {
		t.Fatalf("Exit-Failed does not end with an exit that applies to all: %+v", branches)
	}
	code := func(name string) int {
		v, ok := consts[strings.TrimPrefix(name, "$")]
		if !ok {
			t.Fatalf("Exit-Failed exits with %s, which the stub does not set", name)
		}
		return v
	}
	for _, b := range branches {
		switch b.cond {
		case "", "-not $Retryable", "$Attempt -lt $MaxAttempts":
		default:
			t.Fatalf("Exit-Failed has condition %q, which this test does not know: teach it, and StubExitCode", b.cond)
		}
		code(b.code)
	}
	return func(retryable bool, attempt int) int {
		for _, b := range branches {
			taken := true
			switch b.cond {
			case "-not $Retryable":
				taken = !retryable
			case "$Attempt -lt $MaxAttempts":
				taken = attempt < consts["MaxAttempts"]
			}
			if taken {
				return code(b.code)
			}
		}
		panic(fmt.Sprintf("no branch of %+v", branches))
	}
}

// TestStubWithoutTheAgentFailsForGood: on a machine whose image lacks
// capwin-node.exe the stub writes the node configuration, then fails for
// good (Exit-Failed $false: exit 1, no reboot), naming the missing agent,
// before it would run it. Read from the script's commands
// (hack/ps-syntax --commands), in the order PowerShell starts them.
func TestStubWithoutTheAgentFailsForGood(t *testing.T) {
	if os.Getenv("CAPWIN_SKIP_PS_SYNTAX") != "" {
		t.Skip("CAPWIN_SKIP_PS_SYNTAX is set: WHAT THE STUB DOES IS NOT CHECKED")
	}
	path := filepath.Join(t.TempDir(), "stub.ps1")
	if err := os.WriteFile(path, []byte(Stub()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join("..", "..", "hack", "ps-syntax", "run.sh"), "--commands", path).Output()
	if err != nil {
		t.Fatalf("listing the stub's commands: %v", err)
	}
	var r struct {
		Commands []struct{ Name, Text string }
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	steps := []struct{ name, has string }{
		{".WriteAllBytes", "$ConfigPath"},
		{"Test-Path", "-Path $Agent"},
		{"Exit-Failed", "$false"},
		{"$Agent", "join --config $ConfigPath"},
	}
	at := 0
	for _, s := range steps {
		found := false
		for ; at < len(r.Commands); at++ {
			c := r.Commands[at]
			if c.Name == s.name && strings.Contains(c.Text, s.has) {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("the stub does not run %s %q after the steps before it", s.name, s.has)
		}
		if s.name == "Exit-Failed" && !strings.Contains(r.Commands[at].Text, "is missing") {
			t.Errorf("the stub fails without the agent without saying it is missing: %s", r.Commands[at].Text)
		}
	}
}
