package windows

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/capwin/capwin/node-components/host"
)

func TestParseLicence(t *testing.T) {
	for _, tc := range []struct {
		name, edition, output string
		want                  host.Licence
		err                   string
	}{{
		name:    "a KMS client, activated",
		edition: "ServerDatacenter",
		output:  `{"LicenseStatus":1,"GracePeriodRemaining":259200,"Description":"Windows(R) Operating System, VOLUME_KMSCLIENT channel"}`,
		want:    host.Licence{Edition: "ServerDatacenter", Status: host.LicenceLicensed, RemainingMinutes: 259200, Channel: "VOLUME_KMSCLIENT"},
	}, {
		name:    "an evaluation in its period, with the prelude's output before",
		edition: "ServerDatacenterEval",
		output:  "some warning\r\n{\"LicenseStatus\":1,\"GracePeriodRemaining\":257039,\"Description\":\"Windows(R) Operating System, TIMEBASED_EVAL channel\"}\r\n",
		want:    host.Licence{Edition: "ServerDatacenterEval", Evaluation: true, Status: host.LicenceLicensed, RemainingMinutes: 257039, Channel: "TIMEBASED_EVAL"},
	}, {
		name:    "an evaluation that has ended",
		edition: "ServerStandardEval",
		output:  `{"LicenseStatus":0,"GracePeriodRemaining":0,"Description":"Windows(R) Operating System, TIMEBASED_EVAL channel"}`,
		want:    host.Licence{Edition: "ServerStandardEval", Evaluation: true, Status: host.LicenceUnlicensed, Channel: "TIMEBASED_EVAL"},
	}, {
		name:    "not activated yet",
		edition: "ServerDatacenter",
		output:  `{"LicenseStatus":5,"GracePeriodRemaining":0,"Description":"Windows(R) Operating System, RETAIL channel"}`,
		want:    host.Licence{Edition: "ServerDatacenter", Status: host.LicenceNotification, Channel: "RETAIL"},
	}, {
		name:    "no status",
		edition: "ServerDatacenter",
		output:  `{"GracePeriodRemaining":0}`,
		err:     "LicenseStatus is missing or unknown",
	}, {
		name:    "a status Windows does not document",
		edition: "ServerDatacenter",
		output:  `{"LicenseStatus":7}`,
		err:     "LicenseStatus is missing or unknown",
	}, {
		name:    "no JSON",
		edition: "ServerDatacenter",
		output:  "Get-CimInstance : Access denied",
		err:     "no JSON",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseLicence(tc.edition, []byte(tc.output))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Error(diff)
			}
		})
	}
}

// TestLicenceScriptAsksWhatParseLicenceReads: the script licence.go runs
// asks for Windows' own product, selects the properties parseLicence reads
// and prints them as one line of JSON, which parseLicence looks for.
func TestLicenceScriptAsksWhatParseLicenceReads(t *testing.T) {
	for _, want := range []string{
		"ApplicationID='" + windowsApplicationID + "'",
		"PartialProductKey IS NOT NULL",
		"-Property LicenseStatus, GracePeriodRemaining, Description",
		"ConvertTo-Json -Compress",
	} {
		if !strings.Contains(licenceScript, want) {
			t.Errorf("the licence script does not hold %q:\n%s", want, licenceScript)
		}
	}
}
