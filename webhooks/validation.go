package webhooks

import (
	"fmt"
	"net"
	"net/netip"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/capwin/capwin/internal/validate"
)

// validateIP checks that value is an IP address.
func validateIP(value string, path *field.Path) *field.Error {
	if _, err := netip.ParseAddr(value); err != nil {
		return field.Invalid(path, value, "must be an IP address")
	}
	return nil
}

// validateHostPort checks a host with an optional port (vcenter:443).
func validateHostPort(value string, path *field.Path) *field.Error {
	host := value
	if h, port, err := net.SplitHostPort(value); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return field.Invalid(path, value, "the port must be 1 to 65535")
		}
		host = h
	}
	return validate.Host(host, path)
}

var (
	hexPairs = regexp.MustCompile(`^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2})*$`)
	guid     = regexp.MustCompile(`^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`)
)

// validateThumbprint checks a colon-separated SHA-1 (20 bytes) or SHA-256
// (32 bytes) certificate fingerprint.
func validateThumbprint(value string, path *field.Path) *field.Error {
	if !hexPairs.MatchString(value) {
		return field.Invalid(path, value, "must be colon-separated hex bytes, for example AB:CD:...")
	}
	if n := strings.Count(value, ":") + 1; n != 20 && n != 32 {
		return field.Invalid(path, value, fmt.Sprintf("must be a SHA-1 (20 bytes) or SHA-256 (32 bytes) fingerprint, got %d bytes", n))
	}
	return nil
}

// admittedBefore drops from errs, an updated object's, the errors its old
// version has too: an object admitted before a rule was added (or
// tightened) keeps getting its metadata updated (finalizers, owner
// references, labels: its deletion, clusterctl move), and only what the
// update changes is checked against the rules of today.
func admittedBefore(errs, old field.ErrorList) field.ErrorList {
	had := map[string]bool{}
	for _, e := range old {
		had[errorKey(e)] = true
	}
	var out field.ErrorList
	for _, e := range errs {
		if !had[errorKey(e)] {
			out = append(out, e)
		}
	}
	return out
}

func errorKey(e *field.Error) string {
	return fmt.Sprintf("%s\x00%s\x00%v\x00%s", e.Type, e.Field, e.BadValue, e.Detail)
}

// immutable returns a Forbidden error for path when old and new differ.
func immutable(oldValue, newValue any, path *field.Path) field.ErrorList {
	if reflect.DeepEqual(oldValue, newValue) {
		return nil
	}
	return field.ErrorList{field.Forbidden(path, "field is immutable")}
}
