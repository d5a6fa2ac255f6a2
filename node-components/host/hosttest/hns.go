package hosttest

import (
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/capwin/capwin/node-components/host"
)

// guid is a random HNS id, which no object has.
func guid() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// testNetwork is a network of the suite's own on the primary adapter, in
// 198.18.0.0/15 (set aside for tests, RFC 2544), away from the pod
// networks and the External network's 192.168.255.0/30.
func testNetwork(t *testing.T, h host.Host, typ host.NetworkType) host.Network {
	t.Helper()
	iface, err := h.Facts().PrimaryInterface(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	n := host.Network{
		Name:          unique("net"),
		Type:          typ,
		AdapterName:   iface.Name,
		AddressPrefix: fmt.Sprintf("198.%d.%d.0/24", 18+b[0]%2, b[1]),
		Gateway:       fmt.Sprintf("198.%d.%d.1", 18+b[0]%2, b[1]),
	}
	if typ == host.Overlay {
		n.VSID = 4096 + uint32(b[1])
		// As flannel makes its own: gone after a reboot, should the rule
		// not get to delete it.
		n.NonPersistent = true
	}
	return n
}

// createNetwork creates a network and deletes it when the rule ends.
func createNetwork(t *testing.T, h host.Host, n host.Network) host.Network {
	t.Helper()
	got, err := h.HNS().CreateNetwork(ctx(t), n)
	if err != nil {
		t.Fatalf("creating HNS network %s: %v", n.Name, err)
	}
	t.Cleanup(func() {
		c, cancel := cleanupCtx()
		defer cancel()
		if err := h.HNS().DeleteNetwork(c, got.ID); err != nil && !errors.Is(err, host.ErrNotExist) {
			t.Errorf("removing HNS network %s (%s) after the rule: %v", n.Name, got.ID, err)
		}
	})
	return got
}

// sameNetwork compares networks but for the host's address on them, which
// HNS fills in a moment after it made the network.
var sameNetwork = cmpopts.IgnoreFields(host.Network{}, "ManagementIP")

func (s suite) hns(t *testing.T) {
	networkRule := func(typ host.NetworkType) func(t *testing.T, h host.Host) {
		return func(t *testing.T, h host.Host) {
			want := testNetwork(t, h, typ)
			got := createNetwork(t, h, want)
			if got.ID == "" {
				t.Error("CreateNetwork reports no ID")
			}
			want.ID = got.ID
			if d := cmp.Diff(want, got, sameNetwork); d != "" {
				t.Errorf("CreateNetwork reports otherwise than asked (-asked +reported):\n%s", d)
			}
			nets, err := h.HNS().Networks(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(nets, func(n host.Network) bool { return n.ID == got.ID })
			if i < 0 {
				t.Fatalf("Networks does not list %s (%s): %+v", got.Name, got.ID, nets)
			}
			if d := cmp.Diff(want, nets[i], sameNetwork); d != "" {
				t.Errorf("Networks lists otherwise than asked (-asked +listed):\n%s", d)
			}
			if err := h.HNS().DeleteNetwork(ctx(t), got.ID); err != nil {
				t.Fatal(err)
			}
			nets, err = h.HNS().Networks(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(nets, func(n host.Network) bool { return n.ID == got.ID }) {
				t.Errorf("Networks lists %s after DeleteNetwork", got.ID)
			}
			if err := h.HNS().DeleteNetwork(ctx(t), got.ID); !errors.Is(err, host.ErrNotExist) {
				t.Errorf("DeleteNetwork again: %v, want host.ErrNotExist", err)
			}
		}
	}
	s.runAll(t, []rule{
		// status, collect-logs and the join's wait for the pod network
		// list them.
		{"NetworksAndEndpointsList", func(t *testing.T, h host.Host) {
			if _, err := h.HNS().Networks(ctx(t)); err != nil {
				t.Error(err)
			}
			if _, err := h.HNS().Endpoints(ctx(t)); err != nil {
				t.Error(err)
			}
		}},
		// reset deletes what it listed, and takes ErrNotExist for an object
		// gone in between (flannel's network after a restart).
		{"DeletingAMissingNetworkOrEndpointIsErrNotExist", func(t *testing.T, h host.Host) {
			for _, id := range []string{guid(), "not-an-hns-id"} {
				if err := h.HNS().DeleteNetwork(ctx(t), id); !errors.Is(err, host.ErrNotExist) {
					t.Errorf("DeleteNetwork(%s): %v, want host.ErrNotExist", id, err)
				}
				if err := h.HNS().DeleteEndpoint(ctx(t), id); !errors.Is(err, host.ErrNotExist) {
					t.Errorf("DeleteEndpoint(%s): %v, want host.ErrNotExist", id, err)
				}
			}
		}},
		// The join creates the External network and finds it (and
		// flannel's) by name in Networks, with the subnet and VSID asked
		// for; reset deletes them.
		{"AnOverlayNetworkIsListedAsCreatedUntilDeleted", networkRule(host.Overlay)},
		{"AnL2BridgeNetworkIsListedAsCreatedUntilDeleted", networkRule(host.L2Bridge)},
		// host.CheckNetwork's refusals, and nothing is made.
		{"ARefusedNetworkIsNotMade", func(t *testing.T, h host.Host) {
			for what, change := range map[string]func(*host.Network){
				"an overlay without a VSID":      func(n *host.Network) { n.VSID = 0 },
				"a gateway outside its subnet":   func(n *host.Network) { n.Gateway = "10.255.255.1" },
				"a prefix that is not a subnet":  func(n *host.Network) { n.AddressPrefix = n.Gateway + "/24" },
				"an unknown type":                func(n *host.Network) { n.Type = "ICS" },
				"no name":                        func(n *host.Network) { n.Name = "" },
				"an adapter that does not exist": func(n *host.Network) { n.AdapterName = unique("adapter") },
			} {
				n := testNetwork(t, h, host.Overlay)
				change(&n)
				if got, err := h.HNS().CreateNetwork(ctx(t), n); err == nil {
					t.Errorf("a network with %s was created", what)
					c, cancel := cleanupCtx()
					_ = h.HNS().DeleteNetwork(c, got.ID)
					cancel()
				}
				nets, err := h.HNS().Networks(ctx(t))
				if err != nil {
					t.Fatal(err)
				}
				if slices.ContainsFunc(nets, func(x host.Network) bool { return x.Name == n.Name && n.Name != "" }) {
					t.Errorf("a network with %s is listed", what)
				}
			}
		}},
	})
}
