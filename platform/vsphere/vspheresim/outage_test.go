package vspheresim

import (
	"net"
	"testing"

	"github.com/vmware/govmomi/find"
)

// TestSetReachable: an unreachable vCenter refuses connections and fails
// the calls of a client logged in before; back, it answers that client's
// session as before, on the same address.
func TestSetReachable(t *testing.T) {
	ctx := t.Context()
	v := StartT(t)
	c, err := v.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := find.NewFinder(c.Client).Datacenter(ctx, "DC0"); err != nil {
		t.Fatal(err)
	}
	if err := v.SetReachable(false); err != nil {
		t.Fatal(err)
	}
	if conn, err := net.Dial("tcp", v.Host); err == nil {
		_ = conn.Close()
		t.Fatalf("an unreachable vCenter accepted a connection on %s", v.Host)
	}
	if _, err := find.NewFinder(c.Client).Datacenter(ctx, "DC0"); err == nil {
		t.Fatal("a call to an unreachable vCenter was answered")
	}
	if err := v.SetReachable(true); err != nil {
		t.Fatal(err)
	}
	if _, err := find.NewFinder(c.Client).Datacenter(ctx, "DC0"); err != nil {
		t.Fatalf("the session logged in before the outage, after it: %v", err)
	}
}
