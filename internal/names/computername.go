package names

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"
)

// MaxWindowsComputerName is the longest Windows computer name (the NetBIOS
// name limit).
const MaxWindowsComputerName = 15

// hashLen characters of base32 carry 30 bits: among 10,000 machines of one
// prefix the chance of any collision is under 5 %, and among the hundreds a
// cluster holds it is well under 0.1 %.
const hashLen = 6

// lower-case base32 without padding: letters and the digits 2-7, all valid
// in computer names.
var encoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// WindowsComputerName returns the computer name of the Machine namespace/name:
// at most 15 characters, letters, digits and hyphens, never only digits. It
// depends only on the namespace and name, so it survives controller
// restarts and `clusterctl move`, and a re-created VM gets the same name.
//
// The name is a readable prefix of the Machine's name and a hash of the
// namespace and name: "win1-md-0-7f9c4-x2b8q" becomes "win1-md-q3zk5a".
func WindowsComputerName(namespace, name string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	hash := encoding.EncodeToString(sum[:])[:hashLen]

	prefix := sanitize(name)
	maxPrefix := MaxWindowsComputerName - hashLen - 1
	if len(prefix) > maxPrefix {
		prefix = prefix[:maxPrefix]
	}
	prefix = strings.TrimRight(prefix, "-")
	if prefix == "" {
		return "w" + hash
	}
	return prefix + "-" + hash
}

// sanitize keeps the letters, digits and hyphens of s, lower-cased, without
// leading hyphens.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '-' || r == '.' || r == '_':
			if b.Len() > 0 {
				b.WriteByte('-')
			}
		}
	}
	return b.String()
}

// AllDigits reports whether s is made of digits only, which Windows refuses
// as a computer name.
func AllDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
