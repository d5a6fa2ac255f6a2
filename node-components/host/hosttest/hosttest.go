// Package hosttest is the conformance suite of the host seam: the rules of
// host.Host that the agent relies on, which the in-memory host (host/sim)
// and the real one (host/windows) must both keep. host/sim's tests run it
// on every machine; host/windows' run it on Windows, against the machine
// itself, when asked to (see host/windows' conformance_windows_test.go).
//
// Every rule is a subtest named after what the agent relies on. A rule
// makes what it needs under names of its own (NamePrefix and a random
// suffix) and removes it when it ends, since on Windows it changes the
// machine it runs on.
package hosttest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/capwin/capwin/node-components/host"
)

// NamePrefix starts the name of every service, HNS network and directory
// the suite makes, so that one left behind by a run that was killed can be
// recognised (environment variables use it in upper case, with
// underscores).
const NamePrefix = "capwin-conformance-"

// timeout bounds each call a rule makes: the service manager waits up to 30
// seconds for a service to start or to be deleted.
const timeout = 2 * time.Minute

// Options are the host under test and what the suite may do on it.
type Options struct {
	// New returns the host a rule runs against: a fresh one for each rule
	// (host/sim), or the machine itself (host/windows).
	New func(t *testing.T) host.Host
	// Dir returns an empty directory, as an absolute Windows path, that a
	// file rule may write in; it is removed after the rule.
	Dir func(t *testing.T, h host.Host) string
	// CheckPrivate says why the file at osPath (FS.OSPath of a file
	// written private) could be read by others than SYSTEM and
	// Administrators, or nil when it cannot.
	CheckPrivate func(osPath string) error
	// ServiceCommand returns the command of a service name that, once the
	// service manager starts it, runs until it is stopped. Without it the
	// rules that start services are skipped.
	ServiceCommand func(t *testing.T, h host.Host, name string) []string
	// PowerShell says that Shell runs scripts with PowerShell (host/windows).
	// host/sim's shell runs no script: it answers what its test says.
	// Without it only the rules that hold for any shell run.
	PowerShell bool
	// HNS allows the rules of the Host Networking Service, which create HNS
	// networks. On a real machine the first network binds a virtual switch
	// to the adapter, which drops its connections for a few seconds.
	HNS bool
}

// Run runs every rule of the host seam against the hosts o.New returns.
func Run(t *testing.T, o Options) {
	t.Helper()
	if o.New == nil || o.Dir == nil || o.CheckPrivate == nil {
		t.Fatal("hosttest.Options needs New, Dir and CheckPrivate")
	}
	s := suite{o}
	t.Run("Facts", s.facts)
	t.Run("Services", s.services)
	t.Run("Environment", s.environment)
	t.Run("FS", s.fs)
	t.Run("Shell", s.shell)
	t.Run("HNS", func(t *testing.T) {
		if !o.HNS {
			t.Skip("the HNS rules create HNS networks; not asked to (Options.HNS)")
		}
		s.hns(t)
	})
}

type suite struct{ Options }

// rule is one rule: a subtest with the host it runs against.
type rule struct {
	name string
	run  func(t *testing.T, h host.Host)
}

func (s suite) runAll(t *testing.T, rules []rule) {
	t.Helper()
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			r.run(t, s.New(t))
		})
	}
}

// ctx is a context for one rule's calls, cancelled when the rule ends.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	return c
}

// cleanupCtx is a context for a cleanup, which runs after t.Context is
// done.
func cleanupCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), timeout)
}

// unique is a name of the suite's own: NamePrefix, what, and a random
// suffix.
func unique(what string) string {
	b := make([]byte, 5)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return NamePrefix + what + "-" + hex.EncodeToString(b)
}

// envName is a unique environment variable name.
func envName(what string) string {
	return strings.ToUpper(strings.ReplaceAll(unique(what), "-", "_"))
}
