package vsphere

import (
	"context"
	"testing"
	"time"

	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/vim25/mo"
)

// userSessions is how many sessions vCenter holds, seen from admin's.
func userSessions(t testing.TB, admin *Session) int {
	t.Helper()
	var sm mo.SessionManager
	m := session.NewManager(admin.Client)
	if err := property.DefaultCollector(admin.Client).RetrieveOne(t.Context(), m.Reference(), []string{"sessionList"}, &sm); err != nil {
		t.Fatal(err)
	}
	return len(sm.SessionList)
}

// twoSessions starts vcsim and logs in twice: admin, to look at vCenter's
// sessions, and s1 through sessions, the session cache under test.
func twoSessions(t *testing.T) (Credentials, *Session, *Sessions, *Session) {
	t.Helper()
	_, creds := vcsim(t)
	admin, err := NewSessions().Get(t.Context(), creds)
	if err != nil {
		t.Fatal(err)
	}
	sessions := NewSessions()
	s1, err := sessions.Get(t.Context(), creds)
	if err != nil {
		t.Fatal(err)
	}
	return creds, admin, sessions, s1
}

// TestIdleSessionsLoggedOut: a session no reconcile asked for (credentials
// rotated, cluster deleted) is logged out of vCenter, not kept alive
// forever; the next Get logs in again; stopping logs out of every session.
func TestIdleSessionsLoggedOut(t *testing.T) {
	ctx := t.Context()
	creds, admin, sessions, s1 := twoSessions(t)
	if n := userSessions(t, admin); n != 2 {
		t.Fatalf("%d sessions in vCenter, want 2", n)
	}
	if n, err := sessions.LogoutIdle(ctx, time.Hour); n != 0 || err != nil {
		t.Fatalf("a session used just now was logged out (%d, %v)", n, err)
	}
	time.Sleep(50 * time.Millisecond)
	if n, err := sessions.LogoutIdle(ctx, 20*time.Millisecond); n != 1 || err != nil {
		t.Fatalf("logged out %d idle sessions (%v), want 1", n, err)
	}
	if n := userSessions(t, admin); n != 1 {
		t.Fatalf("%d sessions in vCenter after the idle one was logged out, want 1 (admin's)", n)
	}
	if _, err := s1.Reconcile(ctx, machine("i1")); !sessions.Stale(err, s1) {
		t.Errorf("a logged-out session must read as stale, got %v", err)
	}
	if _, err := sessions.Get(ctx, creds); err != nil {
		t.Fatal(err)
	}
	if sessions.Opened() != 2 {
		t.Errorf("%d logins, want 2", sessions.Opened())
	}

	stop, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- sessions.Start(stop) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := userSessions(t, admin); n != 1 {
		t.Errorf("%d sessions in vCenter after Start returned, want 1 (admin's)", n)
	}
}

// TestStaleKeepsNewerSession: a reconcile that still held a logged-out
// session, reporting it stale after another reconcile logged in again,
// does not drop the new session, which would then be kept alive and never
// logged out.
func TestStaleKeepsNewerSession(t *testing.T) {
	ctx := t.Context()
	creds, admin, sessions, s1 := twoSessions(t)
	if _, err := sessions.LogoutIdle(ctx, 0); err != nil {
		t.Fatal(err)
	}
	s2, err := sessions.Get(ctx, creds)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s1.Reconcile(ctx, machine("k1")); !sessions.Stale(err, s1) {
		t.Fatalf("want the old session stale, got %v", err)
	}
	if got, err := sessions.Get(ctx, creds); err != nil || got != s2 {
		t.Fatalf("the newer session was dropped (%v)", err)
	}
	if n, err := sessions.LogoutIdle(ctx, 0); n != 1 || err != nil {
		t.Fatalf("logged out %d sessions (%v), want the newer one", n, err)
	}
	if n := userSessions(t, admin); n != 1 {
		t.Errorf("%d sessions in vCenter, want 1 (admin's)", n)
	}
}
