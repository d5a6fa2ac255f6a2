package noderules

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/capwin/capwin/node-components/nodeconfig"
)

// registryName is a registry host namespace as containerd looks it up: a
// host name or IPv4 address with an optional port. It becomes a directory
// name (render.RegistryHosts), so nothing else may pass.
var registryName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?(:[0-9]{1,5})?$`)

// CheckRegistryMirrors says why registry mirrors cannot become containerd
// hosts files (render.RegistryHosts, which refuses them with the same
// error): a registry that is neither "_default" nor a host name with an
// optional port, a registry listed twice, one without endpoints, an
// endpoint listed twice or one that is not valid UTF-8 (a TOML document
// is UTF-8). The first problem is the error, in the order of the list.
func CheckRegistryMirrors(mirrors []nodeconfig.RegistryMirror) error {
	// Two names of one registry share a hosts directory, which Windows
	// names without regard to case; host:port becomes host_port_ there,
	// which no valid name collides with ('_' is not in a host name).
	seen := map[string]bool{}
	for _, m := range mirrors {
		if m.Registry != "_default" && !registryName.MatchString(m.Registry) {
			return fmt.Errorf("rendering registry mirrors: %q is not a registry host name with an optional port", m.Registry)
		}
		if seen[strings.ToLower(m.Registry)] {
			return fmt.Errorf("rendering registry mirrors: registry %q is listed twice", m.Registry)
		}
		seen[strings.ToLower(m.Registry)] = true
		if len(m.Endpoints) == 0 {
			return fmt.Errorf("rendering registry mirrors: registry %q has no mirror endpoints", m.Registry)
		}
		hosts := map[string]bool{}
		for _, e := range m.Endpoints {
			if hosts[e] {
				return fmt.Errorf("rendering the mirrors of %q: endpoint %q is listed twice", m.Registry, nodeconfig.RedactURL(e))
			}
			hosts[e] = true
			if !utf8.ValidString(e) {
				// The value is not echoed: it may be a URL with credentials.
				return fmt.Errorf("rendering the mirrors of %q: a value is not valid UTF-8", m.Registry)
			}
		}
	}
	return nil
}
