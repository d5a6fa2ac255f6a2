package windows

import (
	"encoding/base64"
	"encoding/binary"
	"strings"
	"testing"
	"unicode/utf16"
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
