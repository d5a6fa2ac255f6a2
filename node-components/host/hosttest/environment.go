package hosttest

import (
	"strings"
	"testing"

	"github.com/capwin/capwin/node-components/host"
)

// setEnv sets a machine environment variable and removes it when the rule
// ends.
func setEnv(t *testing.T, h host.Host, name, value string) {
	t.Helper()
	unsetAtEnd(t, h, name)
	if err := h.Environment().Set(ctx(t), name, value); err != nil {
		t.Fatalf("setting %s: %v", name, err)
	}
}

func unsetAtEnd(t *testing.T, h host.Host, name string) {
	t.Cleanup(func() {
		c, cancel := cleanupCtx()
		defer cancel()
		if err := h.Environment().Unset(c, name); err != nil {
			t.Errorf("removing machine environment variable %s after the rule: %v", name, err)
		}
	})
}

// wantEnv fails unless a variable is set to want (ok) or not set (!ok).
func wantEnv(t *testing.T, h host.Host, name, want string, wantOK bool) {
	t.Helper()
	v, ok, err := h.Environment().Get(ctx(t), name)
	switch {
	case err != nil:
		t.Errorf("Get(%s): %v", name, err)
	case ok != wantOK:
		t.Errorf("Get(%s): set %v, want %v", name, ok, wantOK)
	case v != want:
		// Values may be secrets elsewhere; these are the suite's own.
		t.Errorf("Get(%s) = %q, want %q", name, v, want)
	}
}

func (s suite) environment(t *testing.T) {
	s.runAll(t, []rule{
		// reset removes what join set; a variable join did not set (no
		// proxy) is simply not there.
		{"GetOfAMissingVariableIsNotSet", func(t *testing.T, h host.Host) {
			wantEnv(t, h, envName("missing"), "", false)
		}},
		// join sets the proxy variables machine-wide, as written: a proxy
		// URL's escapes and lists are not expanded or split.
		{"SetThenGetReadsBackTheValue", func(t *testing.T, h host.Host) {
			name := envName("var")
			for _, v := range []string{
				"http://user:p%40ss@proxy.example:3128",
				"10.0.0.0/8,.svc,.cluster.local,%SystemRoot%",
				"a value with spaces; and = signs",
				"",
			} {
				setEnv(t, h, name, v)
				wantEnv(t, h, name, v, true)
			}
		}},
		// Windows' names are case-insensitive: NO_PROXY and no_proxy are one
		// variable, which reset removes by the name join set.
		{"NamesAreCaseInsensitive", func(t *testing.T, h host.Host) {
			name := envName("var")
			lower := strings.ToLower(name)
			setEnv(t, h, name, "one")
			wantEnv(t, h, lower, "one", true)
			setEnv(t, h, lower, "two")
			wantEnv(t, h, name, "two", true)
			if err := h.Environment().Unset(ctx(t), lower); err != nil {
				t.Fatal(err)
			}
			wantEnv(t, h, name, "", false)
		}},
		// reset removes every variable its state names, set or not.
		{"UnsetRemovesAndAMissingOneIsFine", func(t *testing.T, h host.Host) {
			name := envName("var")
			setEnv(t, h, name, "v")
			for range 2 {
				if err := h.Environment().Unset(ctx(t), name); err != nil {
					t.Fatal(err)
				}
				wantEnv(t, h, name, "", false)
			}
		}},
		// host.CheckEnvironment's refusals: a name Windows cannot hold is an
		// error, never a variable under another name.
		{"InvalidNamesAndValuesAreRefused", func(t *testing.T, h host.Host) {
			name := envName("var")
			for _, bad := range []string{"", name + "=x", name + "\x00x"} {
				if _, _, err := h.Environment().Get(ctx(t), bad); err == nil {
					t.Errorf("Get(%q) succeeded", bad)
				}
				if err := h.Environment().Set(ctx(t), bad, "v"); err == nil {
					unsetAtEnd(t, h, bad)
					t.Errorf("Set(%q) succeeded", bad)
				}
				if err := h.Environment().Unset(ctx(t), bad); err == nil {
					t.Errorf("Unset(%q) succeeded", bad)
				}
			}
			if err := h.Environment().Set(ctx(t), name, "a\x00b"); err == nil {
				unsetAtEnd(t, h, name)
				t.Error("Set of a value with a NUL succeeded")
			}
			wantEnv(t, h, name, "", false)
		}},
	})
}
