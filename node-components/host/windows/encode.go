package windows

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf16"

	"github.com/capwin/capwin/node-components/host"
)

// EncodeCommand encodes a PowerShell script for powershell.exe's
// -EncodedCommand: the script's UTF-16LE bytes in standard base64. The
// result is letters, digits, +, / and =, so no byte of the script is ever
// parsed as a command-line argument. Invalid UTF-8 in script becomes
// U+FFFD.
func EncodeCommand(script string) string {
	units := utf16.Encode([]rune(script))
	b := make([]byte, 2*len(units))
	for i, u := range units {
		binary.LittleEndian.PutUint16(b[2*i:], u)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// scriptPrelude is put in front of every script Shell runs, on one line so
// the script's own line numbers are the prelude's plus one:
//   - $ErrorActionPreference='Stop' turns every error into a terminating
//     one, so a failing cmdlet fails the script instead of being skipped;
//   - $ProgressPreference='SilentlyContinue': with its output redirected,
//     powershell.exe writes progress records to stderr as CLIXML (and
//     Invoke-WebRequest crawls while it renders them);
//   - the trap writes a terminating error as one plain line and exits 1.
//     Without it powershell.exe -EncodedCommand writes the error record to a
//     redirected stderr as CLIXML, whatever -OutputFormat says, and that
//     record quotes the failing source line, which may hold a value the
//     caller considers secret. The line number is the caller's script's.
const scriptPrelude = `$ErrorActionPreference='Stop'; $ProgressPreference='SilentlyContinue'; ` +
	`trap { $l = '?'; if ($_.InvocationInfo) { $l = $_.InvocationInfo.ScriptLineNumber - 1 }; ` +
	`[Console]::Error.WriteLine(('{0} (script line {1})' -f $_.Exception.Message, $l)); exit 1 }` + "\n"

// wrapScript returns script with the prelude Shell runs it with.
func wrapScript(script string) string {
	return scriptPrelude + script
}

// powershellCommandLine is the command line Shell runs a script with:
// powershell.exe at exe, without a profile or prompts, the execution policy
// bypassed for this process, and the script with wrapScript's prelude as
// -EncodedCommand. A script whose command line CreateProcess would refuse
// is an error that gives its size, never its text.
func powershellCommandLine(exe, script string) (string, error) {
	argv := []string{exe, "-NoLogo", "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass",
		"-EncodedCommand", EncodeCommand(wrapScript(script))}
	cmdline := host.CommandLine(argv)
	if commandLineTooLong(cmdline) {
		return "", fmt.Errorf("the script (%d bytes) encodes into a command line over Windows' %d characters", len(script), maxCommandLine)
	}
	return cmdline, nil
}

// outputTailSize is how much of a failed script's output its error quotes.
const outputTailSize = 2 << 10

// outputTail returns the last outputTailSize bytes of a command's output, as
// valid UTF-8 and without surrounding blank space.
func outputTail(out []byte) string {
	if len(out) > outputTailSize {
		out = out[len(out)-outputTailSize:]
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(out), "\uFFFD"))
}
