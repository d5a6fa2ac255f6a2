package hosttest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/capwin/capwin/node-components/host"
)

// The registrations of the rules that never start a service name programs
// that need not exist, in the shape the agent registers its own: capwin's
// service host running a program (render's hosted and service).
const (
	serviceHost = `C:\Program Files\capwin\capwin-node.exe`
	program     = `C:\Program Files\capwin\kubernetes\kubelet.exe`
)

// joined is a service as join registers it: started with Windows, restarted
// on failure, with its flags, its dependencies and its own environment.
func joined(name string, deps ...string) host.ServiceSpec {
	return host.ServiceSpec{
		Name:        name,
		DisplayName: "capwin conformance " + name,
		Description: "A service of capwin's host conformance suite; it is removed when the test ends.",
		Command: []string{serviceHost, "service", "run", "--name", name,
			"--log-file", `C:\ProgramData\capwin\logs\` + name + ".log", "--",
			program, `--config=C:\Program Files\capwin\a config.yaml`, "--node-labels=a=b,c=d",
			`--quoted="x y"`, `--trailing-backslash=C:\dir\`, ""},
		Environment:   []string{"HTTP_PROXY=http://user:p%40ss@proxy.example:3128", "NO_PROXY=10.0.0.0/8,.svc,.cluster.local"},
		Dependencies:  deps,
		StartType:     host.StartAutomatic,
		RestartDelays: []time.Duration{10 * time.Second, 30 * time.Second, time.Minute},
		ResetPeriod:   24 * time.Hour,
	}
}

// installed is a service as install registers it: disabled, its program
// without flags, no environment (agent.InstalledServices).
func installed(name string, deps ...string) host.ServiceSpec {
	s := joined(name, deps...)
	s.StartType = host.StartDisabled
	s.Command = s.Command[:9]
	s.Environment = nil
	return s
}

// equal compares registrations as the agent does (agent.sameService): an
// empty list is no list.
var equal = cmpopts.EquateEmpty()

// create registers spec and deletes it when the rule ends.
func create(t *testing.T, h host.Host, spec host.ServiceSpec) {
	t.Helper()
	if err := h.Services().Create(ctx(t), spec); err != nil {
		t.Fatalf("creating service %s: %v", spec.Name, err)
	}
	deleteAtEnd(t, h, spec.Name)
}

// deleteAtEnd deletes a service when the rule ends, after what the rule
// made later (t.Cleanup's order): dependents go first.
func deleteAtEnd(t *testing.T, h host.Host, name string) {
	t.Helper()
	t.Cleanup(func() {
		c, cancel := cleanupCtx()
		defer cancel()
		if err := h.Services().Delete(c, name); err != nil {
			t.Errorf("removing service %s after the rule: %v", name, err)
		}
	})
}

// get reads a service that must exist.
func get(t *testing.T, h host.Host, name string) (host.ServiceSpec, host.ServiceState) {
	t.Helper()
	spec, state, err := h.Services().Get(ctx(t), name)
	if err != nil {
		t.Fatalf("reading service %s: %v", name, err)
	}
	return spec, state
}

// wantState fails unless a service is in state.
func wantState(t *testing.T, h host.Host, name string, want host.ServiceState) {
	t.Helper()
	if _, state, err := h.Services().Get(ctx(t), name); err != nil || state != want {
		t.Errorf("service %s: %s, %v; want %s", name, state, err, want)
	}
}

// wantGone fails unless Get says a service does not exist.
func wantGone(t *testing.T, h host.Host, name string) {
	t.Helper()
	if _, _, err := h.Services().Get(ctx(t), name); !errors.Is(err, host.ErrNotExist) {
		t.Errorf("service %s: Get says %v, want host.ErrNotExist", name, err)
	}
}

// wantSpec fails unless a service reads back as want.
func wantSpec(t *testing.T, h host.Host, want host.ServiceSpec) {
	t.Helper()
	got, _ := get(t, h, want.Name)
	if d := cmp.Diff(want, got, equal); d != "" {
		t.Errorf("service %s reads back otherwise than registered (-registered +read):\n%s", want.Name, d)
	}
}

func (s suite) services(t *testing.T) {
	s.runAll(t, []rule{
		// ensureService registers a service only when Get says it does not
		// exist; reset, status and collect-logs skip one that does not.
		{"GetOfAMissingServiceIsErrNotExist", func(t *testing.T, h host.Host) {
			wantGone(t, h, unique("missing"))
		}},
		// ensureService compares what Get reads back with what it would
		// register (agent.sameService): a registration that read back
		// otherwise would be rewritten, and its service restarted, on
		// every run.
		{"JoinsRegistrationReadsBackAsRegistered", func(t *testing.T, h host.Host) {
			base := joined(unique("base"))
			spec := joined(unique("svc"), base.Name)
			create(t, h, base)
			create(t, h, spec)
			wantSpec(t, h, base)
			wantSpec(t, h, spec)
			wantState(t, h, spec.Name, host.ServiceStopped)
		}},
		{"InstallsRegistrationReadsBackAsRegistered", func(t *testing.T, h host.Host) {
			spec := installed(unique("svc"))
			create(t, h, spec)
			wantSpec(t, h, spec)
			wantState(t, h, spec.Name, host.ServiceStopped)
		}},
		// What host/windows writes when a field has no value of its own,
		// as the service manager then stores it: the name for an empty
		// display name, milliseconds for restart delays, whole seconds
		// (rounded up) for the reset period, and no reset period without
		// restart actions.
		{"RegistrationReadsBackAsTheServiceManagerStoresIt", func(t *testing.T, h host.Host) {
			spec := installed(unique("svc"))
			spec.DisplayName, spec.Description = "", ""
			spec.RestartDelays = []time.Duration{1500*time.Microsecond + 1, time.Second}
			spec.ResetPeriod = 90*time.Second + time.Millisecond
			create(t, h, spec)
			want := spec
			want.DisplayName = spec.Name
			want.RestartDelays = []time.Duration{time.Millisecond, time.Second}
			want.ResetPeriod = 91 * time.Second
			wantSpec(t, h, want)

			spec.RestartDelays = nil
			if err := h.Services().Update(ctx(t), spec); err != nil {
				t.Fatal(err)
			}
			want.RestartDelays, want.ResetPeriod = nil, 0
			wantSpec(t, h, want)
		}},
		// The service manager's names are case-insensitive: the agent's
		// names are lower case, an earlier install's may not be.
		{"NamesAreCaseInsensitive", func(t *testing.T, h host.Host) {
			spec := installed(unique("svc"))
			create(t, h, spec)
			if _, _, err := h.Services().Get(ctx(t), strings.ToUpper(spec.Name)); err != nil {
				t.Errorf("Get in upper case: %v", err)
			}
			upper := installed(strings.ToUpper(spec.Name))
			if err := h.Services().Create(ctx(t), upper); err == nil {
				deleteAtEnd(t, h, upper.Name)
				t.Errorf("Create of %s succeeded while %s exists", upper.Name, spec.Name)
			}
		}},
		// A service is never registered twice: ensureService relies on
		// Create refusing rather than replacing.
		{"CreateOfAnExistingServiceFails", func(t *testing.T, h host.Host) {
			spec := installed(unique("svc"))
			create(t, h, spec)
			other := joined(spec.Name)
			if err := h.Services().Create(ctx(t), other); err == nil {
				t.Error("a second Create of the same name succeeded")
			}
			wantSpec(t, h, spec)
		}},
		// join turns install's registration into its own, and reset turns
		// it back: what the new registration drops (flags, environment,
		// recovery actions, description) is gone.
		{"UpdateReplacesTheRegistration", func(t *testing.T, h host.Host) {
			base := installed(unique("base"))
			create(t, h, base)
			spec := installed(unique("svc"))
			create(t, h, spec)
			join := joined(spec.Name, base.Name)
			if err := h.Services().Update(ctx(t), join); err != nil {
				t.Fatal(err)
			}
			wantSpec(t, h, join)
			back := installed(spec.Name)
			back.Description, back.RestartDelays, back.ResetPeriod = "", nil, 0
			back.StartType = host.StartManual
			if err := h.Services().Update(ctx(t), back); err != nil {
				t.Fatal(err)
			}
			wantSpec(t, h, back)
		}},
		{"UpdateOfAMissingServiceIsErrNotExist", func(t *testing.T, h host.Host) {
			spec := installed(unique("missing"))
			if err := h.Services().Update(ctx(t), spec); !errors.Is(err, host.ErrNotExist) {
				if err == nil {
					deleteAtEnd(t, h, spec.Name)
				}
				t.Errorf("Update of a missing service: %v, want host.ErrNotExist", err)
			}
			wantGone(t, h, spec.Name)
		}},
		// reset and a join that starts over register a service again under
		// the name of one just deleted.
		{"DeleteRemovesTheServiceAndFreesItsName", func(t *testing.T, h host.Host) {
			spec := installed(unique("svc"))
			create(t, h, spec)
			if err := h.Services().Delete(ctx(t), spec.Name); err != nil {
				t.Fatal(err)
			}
			wantGone(t, h, spec.Name)
			if err := h.Services().Create(ctx(t), spec); err != nil {
				t.Fatalf("Create right after Delete: %v", err)
			}
			wantSpec(t, h, spec)
		}},
		{"DeleteOfAMissingServiceSucceeds", func(t *testing.T, h host.Host) {
			if err := h.Services().Delete(ctx(t), unique("missing")); err != nil {
				t.Error(err)
			}
		}},
		// host.CheckServiceSpec's refusals: what the service manager would
		// refuse or store otherwise than given. Nothing is left behind, so
		// that a corrected registration can be created.
		{"ARefusedRegistrationLeavesNothing", func(t *testing.T, h host.Host) {
			name := unique("refused")
			for what, change := range map[string]func(*host.ServiceSpec){
				"a relative executable":       func(s *host.ServiceSpec) { s.Command[0] = `capwin-node.exe` },
				"no command":                  func(s *host.ServiceSpec) { s.Command = nil },
				"an unknown start type":       func(s *host.ServiceSpec) { s.StartType = "Boot" },
				"an environment entry twice":  func(s *host.ServiceSpec) { s.Environment = []string{"A=1", "a=2"} },
				"an environment entry, empty": func(s *host.ServiceSpec) { s.Environment = []string{""} },
				"a negative reset period":     func(s *host.ServiceSpec) { s.ResetPeriod = -time.Second },
			} {
				spec := joined(name)
				change(&spec)
				if err := h.Services().Create(ctx(t), spec); err == nil {
					deleteAtEnd(t, h, name)
					t.Errorf("a registration with %s was created", what)
					return
				}
				wantGone(t, h, name)
			}
		}},
		// The service manager refuses a dependency loop, and the
		// registration it refused is not half-applied.
		{"ADependencyLoopIsRefused", func(t *testing.T, h host.Host) {
			a := installed(unique("a"))
			create(t, h, a)
			b := installed(unique("b"), a.Name)
			create(t, h, b)
			loop := a
			loop.Dependencies = []string{b.Name}
			loop.Description = "changed"
			if err := h.Services().Update(ctx(t), loop); err == nil {
				t.Error("an Update making a dependency loop succeeded")
			}
			wantSpec(t, h, a)
		}},
		{"StartAndStopOfAMissingServiceAreErrNotExist", func(t *testing.T, h host.Host) {
			name := unique("missing")
			if err := h.Services().Start(ctx(t), name); !errors.Is(err, host.ErrNotExist) {
				t.Errorf("Start: %v, want host.ErrNotExist", err)
			}
			if err := h.Services().Stop(ctx(t), name); !errors.Is(err, host.ErrNotExist) {
				t.Errorf("Stop: %v, want host.ErrNotExist", err)
			}
		}},
		// A service whose program is not there does not start, and the
		// join reports the failure.
		{"AServiceWhoseProgramIsMissingDoesNotStart", func(t *testing.T, h host.Host) {
			spec := installed(unique("svc"))
			spec.StartType = host.StartManual
			spec.Command = []string{`C:\` + unique("missing") + `\missing.exe`}
			spec.RestartDelays, spec.ResetPeriod = nil, 0
			create(t, h, spec)
			if err := h.Services().Start(ctx(t), spec.Name); err == nil {
				t.Error("Start succeeded")
			}
			wantState(t, h, spec.Name, host.ServiceStopped)
		}},
	})
	t.Run("Running", func(t *testing.T) {
		if s.ServiceCommand == nil {
			t.Skip("no service command to run (Options.ServiceCommand)")
		}
		s.running(t)
	})
}

// runnable is a registration whose service runs until it is stopped.
func (s suite) runnable(t *testing.T, h host.Host, name string, deps ...string) host.ServiceSpec {
	spec := joined(name, deps...)
	spec.Command = s.ServiceCommand(t, h, name)
	spec.StartType = host.StartManual
	// Without recovery actions, a service that fails is not started again
	// behind the rule's back.
	spec.RestartDelays, spec.ResetPeriod = nil, 0
	return spec
}

// start starts a service that must start.
func start(t *testing.T, h host.Host, name string) {
	t.Helper()
	if err := h.Services().Start(ctx(t), name); err != nil {
		t.Fatalf("starting service %s: %v", name, err)
	}
}

func (s suite) running(t *testing.T) {
	s.runAll(t, []rule{
		// The join starts each service and waits for it; a run that finds
		// it running starts it again, and reset stops what is stopped.
		{"StartRunsAndStopStopsBothTwice", func(t *testing.T, h host.Host) {
			spec := s.runnable(t, h, unique("svc"))
			create(t, h, spec)
			for range 2 {
				start(t, h, spec.Name)
				wantState(t, h, spec.Name, host.ServiceRunning)
			}
			for range 2 {
				if err := h.Services().Stop(ctx(t), spec.Name); err != nil {
					t.Fatal(err)
				}
				wantState(t, h, spec.Name, host.ServiceStopped)
			}
		}},
		// A reboot starts the node's services in their dependencies' order;
		// the join's restart relies on the service manager starting a
		// service's dependencies.
		{"StartStartsTheDependenciesFirst", func(t *testing.T, h host.Host) {
			base := s.runnable(t, h, unique("base"))
			create(t, h, base)
			spec := s.runnable(t, h, unique("svc"), base.Name)
			create(t, h, spec)
			start(t, h, spec.Name)
			wantState(t, h, base.Name, host.ServiceRunning)
			wantState(t, h, spec.Name, host.ServiceRunning)
			// The cleanups delete spec first, then base.
		}},
		// The agent stops dependents first (reset, restart): the service
		// manager refuses to stop a service a running one depends on.
		{"StopIsRefusedWhileADependentRuns", func(t *testing.T, h host.Host) {
			base := s.runnable(t, h, unique("base"))
			create(t, h, base)
			spec := s.runnable(t, h, unique("svc"), base.Name)
			create(t, h, spec)
			start(t, h, spec.Name)
			if err := h.Services().Stop(ctx(t), base.Name); err == nil {
				t.Error("Stop of a service a running one depends on succeeded")
			}
			wantState(t, h, spec.Name, host.ServiceRunning)
			if err := h.Services().Stop(ctx(t), spec.Name); err != nil {
				t.Fatal(err)
			}
			if err := h.Services().Stop(ctx(t), base.Name); err != nil {
				t.Errorf("Stop once the dependent stopped: %v", err)
			}
		}},
		// install registers the services disabled, so that nothing starts
		// them before join has configured them.
		{"ADisabledServiceDoesNotStart", func(t *testing.T, h host.Host) {
			spec := s.runnable(t, h, unique("svc"))
			spec.StartType = host.StartDisabled
			create(t, h, spec)
			if err := h.Services().Start(ctx(t), spec.Name); err == nil {
				t.Error("a disabled service started")
			}
			wantState(t, h, spec.Name, host.ServiceStopped)
		}},
		// The service manager hands a process its registration when it
		// starts: a join that changes a running service's registration
		// finds it still running and restarts it (agent.applyService).
		{"UpdateLeavesARunningServiceRunning", func(t *testing.T, h host.Host) {
			spec := s.runnable(t, h, unique("svc"))
			create(t, h, spec)
			start(t, h, spec.Name)
			spec.Description = "changed"
			spec.Environment = append(spec.Environment, "CAPWIN_CONFORMANCE=changed")
			if err := h.Services().Update(ctx(t), spec); err != nil {
				t.Fatal(err)
			}
			wantState(t, h, spec.Name, host.ServiceRunning)
			wantSpec(t, h, spec)
		}},
		// Delete stops a running service first, and the name is free once it
		// returns.
		{"DeleteStopsARunningService", func(t *testing.T, h host.Host) {
			spec := s.runnable(t, h, unique("svc"))
			create(t, h, spec)
			start(t, h, spec.Name)
			if err := h.Services().Delete(ctx(t), spec.Name); err != nil {
				t.Fatal(err)
			}
			wantGone(t, h, spec.Name)
			if err := h.Services().Create(ctx(t), spec); err != nil {
				t.Errorf("Create right after Delete: %v", err)
			}
		}},
	})
}
