package host

import (
	"slices"
	"testing"
)

func TestCommandLineRoundTrip(t *testing.T) {
	for _, argv := range [][]string{
		{`C:\Program Files\capwin\capwin-node.exe`, "service", "run"},
		{`C:\k\kubelet.exe`, ""},
		{`C:\k\kubelet.exe`, `--node-labels=a=b,c="d e"`},
		{`C:\k\kubelet.exe`, `C:\path with space\`},
		{`C:\k\kubelet.exe`, `a\\"b`, `\`, `\\`, `"`, `""`, `\"`},
		{`C:\k\kubelet.exe`, "$(Remove-Item C:\\) `whoami`; & | ^ %PATH%", "new\nline", "tab\there", "ünï 😀"},
	} {
		line := CommandLine(argv)
		if got := SplitCommandLine(line); !slices.Equal(got, argv) {
			t.Errorf("%q\n  renders as %s\n  splits to  %q", argv, line, got)
		}
	}
}

// TestSplitCommandLineKnownCases checks the parser against the C runtime's
// documented examples ("Parsing C++ command-line arguments").
func TestSplitCommandLineKnownCases(t *testing.T) {
	for line, want := range map[string][]string{
		`prog "abc" d e`:             {"prog", "abc", "d", "e"},
		`prog a\\\b d"e f"g h`:       {"prog", `a\\\b`, "de fg", "h"},
		`prog a\\\"b c d`:            {"prog", `a\"b`, "c", "d"},
		`prog a\\\\"b c" d e`:        {"prog", `a\\b c`, "d", "e"},
		`prog a"b"" c d`:             {"prog", `ab" c d`},
		`"C:\Program Files\x.exe" a`: {`C:\Program Files\x.exe`, "a"},
	} {
		if got := SplitCommandLine(line); !slices.Equal(got, want) {
			t.Errorf("%s: got %q, want %q", line, got, want)
		}
	}
}

func FuzzCommandLine(f *testing.F) {
	f.Add("a", `b"c`, `d\`)
	f.Add(`\\"`, " ", "")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		argv := []string{`C:\bin\x.exe`, a, b, c}
		if got := SplitCommandLine(CommandLine(argv)); !slices.Equal(got, argv) {
			t.Errorf("%q splits back to %q", argv, got)
		}
	})
}

func TestDirFS(t *testing.T) {
	d := DirFS{Root: t.TempDir()}
	for _, bad := range []string{`etc\x`, `C:/x`, `C:\a\..\b`, `\\server\share\x`} {
		if _, err := d.OSPath(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
	if err := d.WriteFile(`C:\etc\a\b.txt`, []byte("x"), true); err != nil {
		t.Fatal(err)
	}
	if data, err := d.ReadFile(`c:\etc\a\b.txt`); err != nil || string(data) != "x" {
		t.Errorf("drive letters are case-insensitive: %q %v", data, err)
	}
	names, err := d.ReadDir(`C:\etc\a`)
	if err != nil || !slices.Equal(names, []string{"b.txt"}) {
		t.Errorf("ReadDir: %q %v (no temporary files may remain)", names, err)
	}
	if err := d.Remove(`C:\etc\missing`); err != nil {
		t.Errorf("removing a missing file: %v", err)
	}
	if got := Join(`C:\a\`, `\b`, "c"); got != `C:\a\b\c` {
		t.Errorf("Join: %s", got)
	}
}
