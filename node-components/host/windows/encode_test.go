package windows

import (
	"encoding/base64"
	"encoding/binary"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/capwin/capwin/node-components/host"
)

func decodeCommand(t *testing.T, encoded string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		t.Fatalf("not base64: %v", err)
	}
	if len(b)%2 != 0 {
		t.Fatalf("odd number of bytes (%d): not UTF-16", len(b))
	}
	units := make([]uint16, len(b)/2)
	for i := range units {
		units[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return string(utf16.Decode(units))
}

func TestEncodeCommandRoundTrips(t *testing.T) {
	for name, script := range map[string]string{
		"empty":          "",
		"plain":          "Get-Service kubelet",
		"quotes":         `Write-Output "a ""quoted"" word" 'and ''single'' ones'`,
		"subexpressions": `Write-Output "$(Get-Date) $($env:PATH) ${env:ProgramFiles(x86)}"`,
		"newlines":       "$a = 1\r\n$b = 2\nif ($a -lt $b) {\n  'yes'\n}\n",
		"non-BMP":        "Write-Output '😀 𝄞 ünïcödé 漢字'",
		"metacharacters": "& | ; < > ^ % ! ` \\ \" \t -EncodedCommand x",
	} {
		t.Run(name, func(t *testing.T) {
			encoded := EncodeCommand(script)
			if got := decodeCommand(t, encoded); got != script {
				t.Errorf("decoded %q, want %q", got, script)
			}
			if strings.ContainsAny(encoded, " \t\"'\\&|;<>^%!`$\r\n") {
				t.Errorf("encoded form %q holds a character a command line would parse", encoded)
			}
		})
	}
}

func TestEncodeCommandIsUTF16LE(t *testing.T) {
	// The example of powershell.exe's own help: dir "c:\program files".
	if got, want := EncodeCommand(`dir "c:\program files" `), "ZABpAHIAIAAiAGMAOgBcAHAAcgBvAGcAcgBhAG0AIABmAGkAbABlAHMAIgAgAA=="; got != want {
		t.Errorf("EncodeCommand = %s, want %s", got, want)
	}
}

func TestWrapScriptKeepsLineNumbers(t *testing.T) {
	wrapped := wrapScript("one\ntwo")
	if !strings.HasPrefix(wrapped, "$ErrorActionPreference='Stop';") {
		t.Errorf("the script does not start with $ErrorActionPreference='Stop': %q", wrapped)
	}
	// The trap subtracts one line: the prelude must be exactly one.
	if n := strings.Count(scriptPrelude, "\n"); n != 1 || !strings.HasSuffix(scriptPrelude, "\n") {
		t.Errorf("the prelude spans %d lines, want one line ending in a newline", n)
	}
	if !strings.HasSuffix(wrapped, "\none\ntwo") {
		t.Errorf("the script is not kept as it is: %q", wrapped)
	}
}

func TestOutputTail(t *testing.T) {
	if got := outputTail([]byte("  short\r\n")); got != "short" {
		t.Errorf("outputTail = %q", got)
	}
	long := strings.Repeat("a", 5000) + strings.Repeat("b", outputTailSize)
	if got := outputTail([]byte(long)); got != strings.Repeat("b", outputTailSize) {
		t.Errorf("outputTail kept %d bytes, want the last %d", len(got), outputTailSize)
	}
	// OEM code page bytes are not UTF-8: the error must still be valid text.
	if got := outputTail([]byte{'x', 0x81, 'y'}); got != "x\uFFFDy" {
		t.Errorf("outputTail = %q", got)
	}
}

func TestPowershellCommandLine(t *testing.T) {
	const exe = `C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe`
	script := "Get-Service \"kubelet\"; Write-Output 'a b'\n"
	cmdline, err := powershellCommandLine(exe, script)
	if err != nil {
		t.Fatal(err)
	}
	argv := host.SplitCommandLine(cmdline)
	if want := []string{exe, "-NoLogo", "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-EncodedCommand"}; len(argv) != len(want)+1 || !slices.Equal(argv[:len(want)], want) {
		t.Fatalf("argv = %q, want %q and the encoded script", argv, want)
	}
	if got := decodeCommand(t, argv[len(argv)-1]); got != wrapScript(script) {
		t.Errorf("the encoded command is %q, want the script with its prelude", got)
	}

	// The longest script that fits (the encoded script is the only part
	// whose length varies: base64 of UTF-16), and one byte more, which is
	// refused without its text.
	fixed := len(utf16.Encode([]rune(host.CommandLine([]string{exe, "-NoLogo", "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-EncodedCommand", ""}))))
	encodedMax := maxCommandLine - fixed + len(`""`)
	scriptMax := encodedMax/4*3/2 - len(scriptPrelude)
	if _, err := powershellCommandLine(exe, strings.Repeat("s", scriptMax)); err != nil {
		t.Errorf("a script of %d bytes: %v", scriptMax, err)
	}
	_, err = powershellCommandLine(exe, strings.Repeat("s", scriptMax+1))
	if err == nil || strings.Contains(err.Error(), "sss") || !strings.Contains(err.Error(), "32766") {
		t.Errorf("a script of %d bytes: %v; want an error that names the limit, not the script", scriptMax+1, err)
	}
}
