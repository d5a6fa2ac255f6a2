package windows

// The parsing of this file makes no Windows call, so it builds, and is
// tested, on any OS.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/capwin/capwin/node-components/host"
)

// windowsApplicationID is the Software Licensing service's application ID
// of Windows itself (its products other than Windows, Office's for
// example, have others).
const windowsApplicationID = "55c92734-d682-4d71-983e-d6ec3f16059f"

// licenceScript prints, as one line of JSON, the licence of the Windows
// product that has a key installed.
const licenceScript = `$p = Get-CimInstance -ClassName SoftwareLicensingProduct -Filter "ApplicationID='` + windowsApplicationID + `' AND PartialProductKey IS NOT NULL" | Select-Object -First 1 -Property LicenseStatus, GracePeriodRemaining, Description
if ($null -eq $p) { throw 'no Windows product with a product key is installed' }
$p | ConvertTo-Json -Compress
`

// licenceStatuses are SoftwareLicensingProduct's LicenseStatus values.
var licenceStatuses = []host.LicenceStatus{
	host.LicenceUnlicensed, host.LicenceLicensed, host.LicenceOOBGrace, host.LicenceOOTGrace,
	host.LicenceNonGenuineGrace, host.LicenceNotification, host.LicenceExtendedGrace,
}

// channel is the licence channel in a product's description ("Windows(R)
// Operating System, VOLUME_KMSCLIENT channel").
var channel = regexp.MustCompile(`([A-Z_]+) channel`)

// parseLicence reads licenceScript's output, for the edition of the
// registry's EditionID. An evaluation is an edition whose ID holds Eval, or
// a licence of the TIMEBASED_EVAL channel.
func parseLicence(edition string, output []byte) (host.Licence, error) {
	var line []byte
	for _, l := range bytes.Split(output, []byte("\n")) {
		if l = bytes.TrimSpace(l); bytes.HasPrefix(l, []byte("{")) {
			line = l
		}
	}
	if line == nil {
		return host.Licence{}, fmt.Errorf("reading the Windows licence: no JSON in the Software Licensing service's answer")
	}
	var p struct {
		LicenseStatus        *int
		GracePeriodRemaining int64
		Description          string
	}
	if err := json.Unmarshal(line, &p); err != nil {
		return host.Licence{}, fmt.Errorf("reading the Windows licence: %w", err)
	}
	if p.LicenseStatus == nil || *p.LicenseStatus < 0 || *p.LicenseStatus >= len(licenceStatuses) {
		return host.Licence{}, fmt.Errorf("reading the Windows licence: LicenseStatus is missing or unknown")
	}
	l := host.Licence{
		Edition:          edition,
		Status:           licenceStatuses[*p.LicenseStatus],
		RemainingMinutes: max(p.GracePeriodRemaining, 0),
	}
	if m := channel.FindStringSubmatch(p.Description); m != nil {
		l.Channel = m[1]
	}
	// DISM's names for Server Core add Cor (ServerDatacenterEvalCor).
	l.Evaluation = strings.Contains(strings.ToLower(edition), "eval") || l.Channel == "TIMEBASED_EVAL"
	return l, nil
}
