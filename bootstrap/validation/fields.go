package validation

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/capwin/capwin/node-components/nodeconfig"
)

var (
	windowsAbsPath = regexp.MustCompile(`^[A-Za-z]:\\`)
)

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
