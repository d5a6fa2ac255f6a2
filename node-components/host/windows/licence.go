//go:build windows

package windows

import (
	"context"
	"fmt"

	"golang.org/x/sys/windows/registry"

	"github.com/capwin/capwin/node-components/host"
)

// Licence reads the edition from the registry and the licence state from
// the Software Licensing service, through its WMI class (PowerShell's
// Get-CimInstance): its own API (slc.dll) does not document the values a
// program would ask for.
func (facts) Licence(ctx context.Context) (host.Licence, error) {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, `SOFTWARE\Microsoft\Windows NT\CurrentVersion`, registry.QUERY_VALUE)
	if err != nil {
		return host.Licence{}, fmt.Errorf("reading the Windows edition: %w", err)
	}
	edition, _, err := k.GetStringValue("EditionID")
	k.Close() //nolint:errcheck // read only
	if err != nil {
		return host.Licence{}, fmt.Errorf("reading the Windows edition (EditionID): %w", err)
	}
	out, err := shell{}.Run(ctx, licenceScript)
	if err != nil {
		return host.Licence{}, fmt.Errorf("reading the Windows licence: %w", err)
	}
	return parseLicence(edition, out)
}
