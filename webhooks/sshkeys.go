package webhooks

import (
	"strings"

	"golang.org/x/crypto/ssh"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// authorizedKeyRule is what every entry of sshAuthorizedKeys must be.
const authorizedKeyRule = `must be one authorized_keys line, [options] type base64-key [comment], ` +
	`such as "ssh-ed25519 AAAA... alice@example.com" (the contents of a .pub file)`

// validateSSHAuthorizedKeys checks that each key is one authorized_keys
// line that OpenSSH reads. A key goes into the metadata a line each, so a
// line break would smuggle in another key, unchecked.
func validateSSHAuthorizedKeys(keys []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, k := range keys {
		p := path.Index(i)
		switch {
		case strings.Contains(k, "PRIVATE KEY"):
			// Never echoed: the API server may log the error.
			errs = append(errs, field.Invalid(p, "(not shown)", "is a private key: give the public key instead; each entry "+authorizedKeyRule))
		case strings.ContainsAny(k, "\r\n"):
			// Not echoed either: the lines may hold a private key.
			errs = append(errs, field.Invalid(p, "(not shown)", "holds a line break: give each key its own entry, which "+authorizedKeyRule))
		default:
			if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(k)); err != nil {
				// Not echoed: what does not parse as a public key may be
				// a private one pasted without its armour.
				errs = append(errs, field.Invalid(p, "(not shown)", authorizedKeyRule))
			}
		}
	}
	return errs
}
