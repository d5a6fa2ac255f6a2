package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/capwin/capwin/node-components/cni"
	"github.com/capwin/capwin/node-components/discovery"
	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/node-components/render"
)

// The join's phases, in order.
const (
	PhasePreflight        = "preflight"
	PhaseEnvironment      = "environment"
	PhaseFiles            = "files"
	PhasePreJoinCommands  = "pre-join-commands"
	PhaseContainerd       = "containerd"
	PhaseCNI              = "cni"
	PhaseHNS              = "hns-network"
	PhaseDiscovery        = "discovery"
	PhaseKubelet          = "kubelet"
	PhaseNodeRegistration = "node-registration"
	PhaseKubeProxy        = "kube-proxy"
	PhasePostJoinCommands = "post-join-commands"
	PhaseComplete         = "complete"
)

// joinPhase is one step of the join. run returns a message for the record;
// the time it spends waiting outside the host goes to join.waited.
type joinPhase struct {
	name string
	run  func(j *join, ctx context.Context) (message string, err error)
}

// Phases lists the join's phase names in order.
func Phases() []string {
	names := make([]string, len(joinPhases))
	for i, p := range joinPhases {
		names[i] = p.name
	}
	return names
}

var joinPhases = []joinPhase{
	{PhasePreflight, (*join).preflight},
	{PhaseEnvironment, (*join).environment},
	{PhaseFiles, (*join).files},
	{PhasePreJoinCommands, (*join).preJoinCommands},
	{PhaseContainerd, (*join).containerd},
	{PhaseCNI, (*join).cni},
	{PhaseHNS, (*join).hnsNetwork},
	{PhaseDiscovery, (*join).discovery},
	{PhaseKubelet, (*join).kubelet},
	{PhaseNodeRegistration, (*join).nodeRegistration},
	{PhaseKubeProxy, (*join).kubeProxy},
	{PhasePostJoinCommands, (*join).postJoinCommands},
	{PhaseComplete, (*join).complete},
}

// join is one run of Join.
type join struct {
	*Agent
	// cfg is the node configuration as this node applies it: its nodeName
	// is the resolved one (Agent.nodeName), never empty.
	cfg        *nodeconfig.Config
	configPath string
	state      *State
	// waited accumulates the current phase's time spent waiting outside
	// the host.
	waited time.Duration
	// cluster reports to the cluster once discovery made it possible.
	cluster Reporter
	// driver is the pod network's (cfg.Network.CNI).
	driver cni.Driver
}

// driverNode is what the CNI driver uses of the node during the join.
type driverNode struct{ j *join }

func (n driverNode) Host() host.Host { return n.j.Host }

func (n driverNode) Wait(ctx context.Context, what string, cond func(context.Context) (bool, error)) error {
	return n.j.wait(ctx, what, cond)
}

func (n driverNode) WriteIfChanged(path string, data []byte, private bool) error {
	return n.j.writeIfChanged(path, data, private)
}

// Join runs the join with the configuration in configPath (normally
// layout.NodeConfig). It continues after the phases an earlier run
// finished; a node that joined already returns at once.
func (a *Agent) Join(ctx context.Context, configPath string) error {
	unlock, err := a.lock()
	if err != nil {
		return &PhaseError{Phase: PhasePreflight, Err: err, Retryable: true}
	}
	defer unlock()
	fsys := a.Host.FS()
	state, err := LoadState(fsys)
	if err != nil {
		return &PhaseError{Phase: PhasePreflight, Err: err}
	}
	if state.Joined != nil {
		// The stub may have run again and written the configuration, token
		// and all: it must not stay on disk.
		if err := removeToken(fsys, configPath); err != nil {
			return &PhaseError{Phase: PhaseComplete, Err: err}
		}
		a.logf("The node joined at %s; nothing to do (capwin-node reset undoes a join)", state.Joined.Format(time.RFC3339))
		return nil
	}
	data, err := fsys.ReadFile(configPath)
	if err != nil {
		return &PhaseError{Phase: PhasePreflight, Err: fmt.Errorf("reading the node configuration %s: %w", configPath, err)}
	}
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	if done, err := a.finishedBeforeRecorded(ctx, data, state); done || err != nil {
		return err
	}
	cfg, err := nodeconfig.Parse(data)
	var driver cni.Driver
	if err == nil {
		driver, err = cni.For(cfg)
	}
	if err != nil {
		pe := &PhaseError{Phase: PhasePreflight, Err: err}
		a.report(ctx, Progress{Phase: PhasePreflight, State: ProgressFailed, Message: err.Error(), Time: a.now(), Phases: state.Phases})
		return pe
	}
	if state.ConfigHash != "" && state.ConfigHash != hash {
		if len(state.Phases) > 0 {
			a.logf("The node configuration changed since the last run; starting the phases over (commands that ran do not run again)")
			state.Phases = nil
		}
		// The new configuration may name the node otherwise.
		state.NodeName = ""
	}
	state.ConfigHash = hash
	name, err := a.nodeName(ctx, cfg, state)
	if err != nil {
		a.logf("Phase %s: failed: %v", PhasePreflight, err)
		j := &join{Agent: a, cfg: cfg, configPath: configPath, state: state, driver: driver}
		j.reportAll(ctx, j.progress(PhasePreflight, ProgressFailed, err.Error(), false))
		return &PhaseError{Phase: PhasePreflight, Err: err}
	}
	// From here on the configuration is the one this node applies: every
	// phase, flag and report uses the resolved name.
	cfg.NodeName, state.NodeName = name, name
	j := &join{Agent: a, cfg: cfg, configPath: configPath, state: state, driver: driver}
	a.logf("Joining node %s to %s (Kubernetes %s, %s %s); configuration sha256 %s", cfg.NodeName, cfg.Join.APIServerEndpoint, cfg.KubernetesVersion, cfg.Network.CNI, cfg.Network.Mode, hash[:12])
	for _, p := range joinPhases {
		if state.done(p.name) {
			continue
		}
		if err := j.runPhase(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

func (j *join) runPhase(ctx context.Context, p joinPhase) error {
	start := j.now()
	j.waited = 0
	j.logf("Phase %s: started", p.name)
	j.reportAll(ctx, j.progress(p.name, ProgressRunning, "", false))
	msg, err := p.run(j, ctx)
	if err == nil && j.afterPhase != nil {
		err = j.afterPhase(p.name)
	}
	if err != nil {
		pe := &PhaseError{Phase: p.name, Err: err, Retryable: isRetryable(err)}
		j.logf("Phase %s: failed after %s: %v", p.name, j.now().Sub(start).Round(time.Millisecond), err)
		j.reportAll(ctx, j.progress(p.name, ProgressFailed, err.Error(), pe.Retryable))
		return pe
	}
	end := j.now()
	rec := PhaseRecord{Name: p.name, Started: start, Finished: end, Duration: end.Sub(start), Waited: j.waited, Message: msg}
	j.state.Phases = append(j.state.Phases, rec)
	if p.name == PhaseComplete {
		j.state.Joined = &end
	}
	if err := saveState(j.Host.FS(), j.state); err != nil {
		return &PhaseError{Phase: p.name, Err: err}
	}
	if msg != "" {
		j.logf("Phase %s: done in %s: %s", p.name, rec.Duration.Round(time.Millisecond), msg)
	} else {
		j.logf("Phase %s: done in %s", p.name, rec.Duration.Round(time.Millisecond))
	}
	st := ProgressRunning
	if p.name == PhaseComplete {
		st = ProgressJoined
	}
	j.reportAll(ctx, j.progress(p.name, st, msg, false))
	return nil
}

// reportAll reports on the node and, once discovery has proved the control
// plane and written the bootstrap kubeconfig, to the cluster. The reporter
// keeps the token in memory, so the final report still goes out after the
// complete phase removed it from disk. A failure before discovery is
// reported too, after a discovery of its own (reporterBeforeDiscovery).
func (j *join) reportAll(ctx context.Context, p Progress) {
	j.report(ctx, p)
	if j.ClusterProgress == nil || j.cfg.Join.ProgressConfigMap == "" {
		return
	}
	if j.cluster == nil {
		kc, err := j.Host.FS().ReadFile(layout.BootstrapKubeconfig)
		if err == nil && !bytes.Contains(kc, []byte(j.cfg.Join.Token)) {
			// Written by a run with another token, since replaced:
			// discovery writes this configuration's.
			err = fs.ErrNotExist
		}
		switch {
		case err == nil:
		case p.State == ProgressFailed && beforeDiscovery(p.Phase):
			if kc, err = j.discoverToReport(ctx); err != nil {
				j.logf("The failure is not reported to the cluster: discovery, run only to report it, failed: %v", err)
				return
			}
		default:
			return // not discovered yet, or joined
		}
		if j.cluster, err = j.ClusterProgress(kc, j.cfg.Join.ProgressConfigMap); err != nil {
			j.logf("Reporting progress to the cluster is not possible: %v", err)
			return
		}
	}
	rctx, cancel := context.WithTimeout(ctx, reportTimeout)
	defer cancel()
	if err := j.cluster.Report(rctx, p); err != nil {
		j.logf("Reporting progress through %s failed: %v", j.cluster.Name(), err)
	}
}

// beforeDiscovery reports whether phase comes before the discovery phase
// (a failed discovery is not run again only to report itself).
func beforeDiscovery(phase string) bool {
	for _, p := range joinPhases {
		switch p.name {
		case PhaseDiscovery:
			return false
		case phase:
			return true
		}
	}
	return false
}

// discoverToReport runs discovery, for a join that failed before its
// discovery phase, only to get an authenticated channel to the cluster for
// the failure: it reads cluster-info anonymously, checks the token's
// signature and the CA pin, reads kubelet-config with the token, and
// writes nothing on the host. It returns a bootstrap kubeconfig (in
// memory) of the pinned CA and the token. Bounded by
// earlyDiscoveryTimeout: the join's own exit waits for it.
func (j *join) discoverToReport(ctx context.Context) ([]byte, error) {
	dctx, cancel := context.WithTimeout(ctx, earlyDiscoveryTimeout)
	defer cancel()
	d, err := j.ControlPlane.Discover(dctx, j.cfg.Join)
	if err != nil {
		return nil, err
	}
	kc, err := render.BootstrapKubeconfig(d.Server, d.CACert, j.cfg.Join.Token)
	if err != nil {
		return nil, err
	}
	return kc.Data, nil
}

// earlyDiscoveryTimeout bounds the discovery a failure before the
// discovery phase runs to report itself.
const earlyDiscoveryTimeout = time.Minute

// reporterForCAMismatch makes the cluster reporter for a discovery that
// failed because the CA in cluster-info is not the one pinned, when the
// token's signature on that cluster-info verified: the reporter speaks to
// the server cluster-info names, with the token, over TLS verified against
// the CA cluster-info holds, not the pinned one. That is safe: a valid
// signature proves the cluster-info came from someone who knows the
// token's secret; TLS verified against the CA inside it reaches only a
// server holding a key that CA certified; so the token goes only to a
// party that knew it already. A bad or missing signature, a token the API
// server refused, anything else: no reporter, nothing is sent. The pin is
// not weakened: the join fails all the same.
func (j *join) reporterForCAMismatch(err error) {
	if j.ClusterProgress == nil || j.cfg.Join.ProgressConfigMap == "" || j.cluster != nil {
		return
	}
	var de *discovery.Error
	if !errors.As(err, &de) {
		return
	}
	server, ca, ok := de.SignedClusterInfo()
	if !ok {
		return
	}
	kc, kerr := render.BootstrapKubeconfig(server, ca, j.cfg.Join.Token)
	if kerr == nil {
		j.cluster, kerr = j.ClusterProgress(kc.Data, j.cfg.Join.ProgressConfigMap)
	}
	if kerr != nil {
		j.logf("The CA mismatch is not reported to the cluster: %v", kerr)
	}
}

// reportTimeout bounds one report to the cluster: reporting never holds up
// the join for long.
const reportTimeout = 5 * time.Second

func (j *join) progress(phase string, st ProgressState, msg string, retry bool) Progress {
	return Progress{NodeName: j.cfg.NodeName, Phase: phase, State: st, Message: msg, Retryable: retry, Time: j.now(), Phases: append([]PhaseRecord(nil), j.state.Phases...)}
}

// wait polls cond until it is true, ctx ends or the node timeout passes,
// counting the time as waited.
func (j *join) wait(ctx context.Context, what string, cond func(context.Context) (bool, error)) error {
	start := j.now()
	defer func() { j.waited += j.now().Sub(start) }()
	ctx, cancel := context.WithTimeout(ctx, j.nodeTimeout())
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if ok && err == nil {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return Retryable(fmt.Errorf("%s: not within %s: %w", what, j.nodeTimeout(), last))
			}
			return Retryable(fmt.Errorf("%s: not within %s", what, j.nodeTimeout()))
		case <-time.After(j.pollInterval()):
		}
	}
}

// writeIfChanged writes a file unless it already holds data.
func (j *join) writeIfChanged(path string, data []byte, private bool) error {
	if old, err := j.Host.FS().ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	if err := j.Host.FS().WriteFile(path, data, private); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// finishedBeforeRecorded recognises a join whose complete phase did its
// work — the sentinel written, the token removed — but stopped before it was
// recorded, and records it: the configuration has no token to run with.
func (a *Agent) finishedBeforeRecorded(ctx context.Context, data []byte, state *State) (bool, error) {
	cfg, err := nodeconfig.Decode(bytes.NewReader(data))
	if err != nil || cfg.Join.Token != "" {
		return false, nil
	}
	if ok, _ := a.Host.FS().Exists(layout.SuccessSentinel); !ok {
		return false, nil
	}
	now := a.now()
	state.Phases = append(state.Phases, PhaseRecord{Name: PhaseComplete, Started: now, Finished: now, Message: "recorded after a restart: the sentinel was written and the token removed"})
	state.Joined = &now
	if err := saveState(a.Host.FS(), state); err != nil {
		return true, &PhaseError{Phase: PhaseComplete, Err: err}
	}
	a.logf("The join had finished before the agent stopped; recorded it")
	name := cfg.NodeName
	if name == "" {
		name = state.NodeName
	}
	a.report(ctx, Progress{NodeName: name, Phase: PhaseComplete, State: ProgressJoined, Time: now, Phases: state.Phases})
	return true, nil
}

// removeToken deletes the bootstrap kubeconfig and the token in the node
// configuration; what is gone already is fine. A configuration that
// cannot be read or decoded is an error: it may still hold the token.
func removeToken(fsys host.FS, configPath string) error {
	if err := fsys.Remove(layout.BootstrapKubeconfig); err != nil {
		return fmt.Errorf("removing %s: %w", layout.BootstrapKubeconfig, err)
	}
	data, err := fsys.ReadFile(configPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // nothing to scrub
	}
	if err != nil {
		return fmt.Errorf("reading %s to remove the token from it: %w", configPath, err)
	}
	cfg, err := nodeconfig.Decode(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("decoding %s to remove the token from it: %w", configPath, err)
	}
	if cfg.Join.Token == "" {
		return nil
	}
	cfg.Join.Token = ""
	scrubbed, err := marshalIndent(cfg)
	if err == nil {
		err = fsys.WriteFile(configPath, scrubbed, true)
	}
	if err != nil {
		return fmt.Errorf("removing the token from %s: %w", configPath, err)
	}
	return nil
}
