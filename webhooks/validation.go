package webhooks

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/capwin/capwin/node-components/nodeconfig"
)

// validateCIDR checks that value is a CIDR such as 10.0.0.0/16.
func validateCIDR(value string, path *field.Path) (netip.Prefix, *field.Error) {
	p, err := netip.ParsePrefix(value)
	if err != nil {
		return netip.Prefix{}, field.Invalid(path, value, "must be a CIDR such as 10.0.0.0/16")
	}
	return p, nil
}

// validateIP checks that value is an IP address.
func validateIP(value string, path *field.Path) *field.Error {
	if _, err := netip.ParseAddr(value); err != nil {
		return field.Invalid(path, value, "must be an IP address")
	}
	return nil
}

// validateHost checks that value is a DNS name or an IP address, with no
// scheme, port or path.
func validateHost(value string, path *field.Path) *field.Error {
	if _, err := netip.ParseAddr(value); err == nil {
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(strings.ToLower(value)); len(errs) > 0 {
		return field.Invalid(path, value, "must be a host name or IP address without scheme, port or path")
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
	return validateHost(host, path)
}

// validateURL checks that value is an absolute URL with one of the schemes.
// A proxy's password or a download's signed query never appears in the
// error, which the API server may log.
func validateURL(value string, path *field.Path, schemes ...string) *field.Error {
	u, err := url.Parse(value)
	if err != nil || u.Host == "" {
		return field.Invalid(path, nodeconfig.RedactURL(value), fmt.Sprintf("must be an absolute URL (%s)", strings.Join(schemes, " or ")))
	}
	for _, s := range schemes {
		if u.Scheme == s {
			return nil
		}
	}
	return field.Invalid(path, nodeconfig.RedactURL(value), fmt.Sprintf("the URL scheme must be %s", strings.Join(schemes, " or ")))
}

var (
	hexPairs       = regexp.MustCompile(`^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2})*$`)
	guid           = regexp.MustCompile(`^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`)
	sha256Hex      = regexp.MustCompile(`^[0-9A-Fa-f]{64}$`)
	windowsAbsPath = regexp.MustCompile(`^[A-Za-z]:\\`)
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

// validateWindowsPath checks an absolute Windows path that stays where it
// says: a drive letter, a backslash, and no "..".
func validateWindowsPath(value string, path *field.Path) *field.Error {
	if !windowsAbsPath.MatchString(value) {
		return field.Invalid(path, value, `must be an absolute Windows path such as C:\etc\file.conf`)
	}
	for _, part := range strings.FieldsFunc(value, func(r rune) bool { return r == '\\' || r == '/' }) {
		if part == ".." {
			return field.Invalid(path, value, `must not contain ".."`)
		}
	}
	if strings.ContainsAny(value[2:], `:*?"<>|`) || strings.ContainsRune(value, 0) {
		return field.Invalid(path, value, `must not contain any of : * ? " < > | after the drive`)
	}
	return nil
}

// immutable returns a Forbidden error for path when old and new differ.
func immutable(oldValue, newValue any, path *field.Path) field.ErrorList {
	if reflect.DeepEqual(oldValue, newValue) {
		return nil
	}
	return field.ErrorList{field.Forbidden(path, "field is immutable")}
}
