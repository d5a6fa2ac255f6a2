package hosttest

import (
	"net/netip"
	"regexp"
	"slices"
	"testing"

	"github.com/capwin/capwin/node-components/host"
)

// build is the form of a Windows build, major.minor.build.
var build = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)

// uuid is the form of host.Hardware's UUID.
var uuid = regexp.MustCompile(`^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$`)

// licenceStates are the states host.Licence's Status takes.
var licenceStates = []host.LicenceStatus{
	host.LicenceUnlicensed, host.LicenceLicensed, host.LicenceOOBGrace, host.LicenceOOTGrace,
	host.LicenceNonGenuineGrace, host.LicenceNotification, host.LicenceExtendedGrace,
}

func (s suite) facts(t *testing.T) {
	s.runAll(t, []rule{
		// Preflight compares it with windowsBuild, and the pause image is
		// chosen by it.
		{"BuildIsMajorMinorBuild", func(t *testing.T, h host.Host) {
			b, err := h.Facts().Build(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			if !build.MatchString(b) {
				t.Errorf("Build is %q, not major.minor.build", b)
			}
		}},
		// Preflight settles the node's name from it.
		{"ComputerNameIsSet", func(t *testing.T, h host.Host) {
			n, err := h.Facts().ComputerName(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			if n == "" {
				t.Error("ComputerName is empty")
			}
		}},
		// Preflight checks the kubelet's reserved memory against it.
		{"TotalMemoryIsSet", func(t *testing.T, h host.Host) {
			m, err := h.Facts().TotalMemory(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			if m == 0 {
				t.Error("TotalMemory is 0")
			}
		}},
		// Preflight asks for the two features it knows; a name it does not
		// know is a mistake, not a missing feature.
		{"FeatureKnowsContainersAndHyperVOnly", func(t *testing.T, h host.Host) {
			for _, f := range []string{host.FeatureContainers, host.FeatureHyperV} {
				if _, err := h.Facts().Feature(ctx(t), f); err != nil {
					t.Errorf("Feature(%s): %v", f, err)
				}
			}
			if ok, err := h.Facts().Feature(ctx(t), "capwin-conformance-no-such-feature"); err == nil {
				t.Errorf("Feature of an unknown name: %v, no error", ok)
			}
		}},
		// The kubelet's node IP, flannel's public IP and the HNS network's
		// adapter come from it.
		{"PrimaryInterfaceHasAnIPv4AddressInItsSubnet", func(t *testing.T, h host.Host) {
			i, err := h.Facts().PrimaryInterface(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			if i.Name == "" {
				t.Errorf("the primary interface %+v has no name", i)
			}
			a, aerr := netip.ParseAddr(i.IPv4)
			p, perr := netip.ParsePrefix(i.Subnet)
			switch {
			case aerr != nil || !a.Is4():
				t.Errorf("the primary interface's IPv4 %q is not an IPv4 address", i.IPv4)
			case perr != nil || !p.Addr().Is4() || p != p.Masked():
				t.Errorf("the primary interface's subnet %q is not an IPv4 subnet", i.Subnet)
			case !p.Contains(a):
				t.Errorf("the primary interface's address %s is not in its subnet %s", a, p)
			}
		}},
		// status reports it, and an evaluation's remaining time.
		{"LicenceIsOneOfTheStates", func(t *testing.T, h host.Host) {
			l, err := h.Facts().Licence(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(licenceStates, l.Status) {
				t.Errorf("licence status %q is not one of %v", l.Status, licenceStates)
			}
			if l.Edition == "" {
				t.Errorf("the licence %+v has no edition", l)
			}
			if l.RemainingMinutes < 0 {
				t.Errorf("the licence has %d minutes left", l.RemainingMinutes)
			}
		}},
		// status names the platform the node runs on from the firmware's
		// manufacturer, product and asset tag (nodeplatform.Detect).
		{"HardwareNamesTheMachine", func(t *testing.T, h host.Host) {
			hw, err := h.Facts().Hardware(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			if hw.Manufacturer == "" || hw.Product == "" {
				t.Errorf("the hardware %+v has no manufacturer or product", hw)
			}
			if hw.UUID != "" && !uuid.MatchString(hw.UUID) {
				t.Errorf("the hardware's UUID %q is not an upper-case UUID", hw.UUID)
			}
		}},
	})
}
