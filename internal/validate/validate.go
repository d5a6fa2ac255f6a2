package validate

import (
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CIDR checks that value is a CIDR such as 10.0.0.0/16.
func CIDR(value string, path *field.Path) (netip.Prefix, *field.Error) {
	p, err := netip.ParsePrefix(value)
	if err != nil {
		return netip.Prefix{}, field.Invalid(path, value, "must be a CIDR such as 10.0.0.0/16")
	}
	return p, nil
}

// Host checks that value is a DNS name or an IP address, with no scheme,
// port or path.
func Host(value string, path *field.Path) *field.Error {
	if _, err := netip.ParseAddr(value); err == nil {
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(strings.ToLower(value)); len(errs) > 0 {
		return field.Invalid(path, value, "must be a host name or IP address without scheme, port or path")
	}
	return nil
}
